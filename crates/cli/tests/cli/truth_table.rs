//! The truth table: each scenario induces one limit in a `wirespeed lab` (or on loopback) and
//! asserts the verdict id `wirespeed client -J` prints. Needs root and iproute2; says `SKIP:`
//! without them, and fails instead when the environment variable `CI` is set.
//!
//! Scenarios whose verdict needs data the engine does not pass to the verdict yet are listed
//! with what they need and not run (`PENDING:` lines), so the table shows what is covered.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use wirespeed_lab::{check_can_run, unique_name, Lab, Side, Spec};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// Where a scenario runs.
enum Place {
    /// A lab built from this spec (name filled in), client pinned to CPU 0, server to CPU 1.
    Lab(fn(Spec) -> Spec),
    /// Loopback, unpinned.
    Loopback,
}

struct Scenario {
    name: &'static str,
    place: Place,
    /// Extra client arguments.
    args: &'static [&'static str],
    want: &'static str,
    /// `None`: runs today; `Some(why)`: what the verdict still needs.
    pending: Option<&'static str>,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "path MTU 1500 between MTU-9000 ends",
        place: Place::Lab(|s| Spec {
            mtu: Some(9000),
            path_mtu: Some(1500),
            ..s
        }),
        args: &[],
        want: "pmtu-below-mtu",
        pending: None,
    },
    Scenario {
        name: "loopback, unpinned",
        place: Place::Loopback,
        args: &[],
        want: "same-host",
        pending: None,
    },
    Scenario {
        name: "rate limit 2 Gbit/s",
        place: Place::Lab(|s| Spec {
            rate_bps: Some(2_000_000_000),
            ..s
        }),
        args: &[],
        want: "path-limited",
        pending: None,
    },
    Scenario {
        name: "random loss 0.5 %",
        place: Place::Lab(|s| Spec {
            loss: Some(0.005),
            ..s
        }),
        args: &[],
        want: "loss-limited",
        pending: None,
    },
    Scenario {
        name: "receiver -w 16K",
        place: Place::Lab(|s| s),
        args: &["-w", "16K"],
        want: "window-limited",
        pending: Some("a quiet host: on a shared one other processes saturate the app CPUs first (cpu-contended needs each worker's own CPU time)"),
    },
    Scenario {
        name: "RPS steering the receive softirq onto the receiver's app CPU",
        place: Place::Lab(|s| Spec {
            rps_cpus: Some(wirespeed_host::CpuSet::from_cpus([1])),
            ..s
        }),
        args: &[],
        want: "receiver-shares-cpu-with-softirq",
        pending: Some("a quiet host (as above)"),
    },
    Scenario {
        name: "a busy loop on the receiver's app CPU",
        place: Place::Lab(|s| s),
        args: &[],
        want: "cpu-contended",
        pending: Some("each worker's own CPU time in the observation"),
    },
    Scenario {
        name: "UDP above what the receiver can take",
        place: Place::Lab(|s| s),
        args: &["-u", "-b", "0"],
        want: "udp-receiver-cpu-bound",
        pending: None,
    },
    Scenario {
        name: "a link whose ends disagree on MTU (9000 into 1500)",
        place: Place::Lab(|s| Spec {
            mtu: Some(9000),
            path_mtu: Some(1500),
            blackhole: true,
            ..s
        }),
        args: &[],
        want: "mtu-blackhole",
        pending: Some("black-hole detection in the engine (today the client times out waiting for the results)"),
    },
];

/// A server that is listening (it printed its banner), killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `wirespeed ARGS`, or `ip netns exec NS wirespeed ARGS` in a lab's side.
fn ws(lab: Option<(&Lab, Side)>) -> Command {
    match lab {
        Some((lab, side)) => lab.command(side, bin()),
        None => Command::new(bin()),
    }
}

fn start_server(mut cmd: Command, port: u16) -> Server {
    let mut child = cmd
        .args(["server", "-1", "-p", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the server");
    let out = child.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    // readiness: the banner comes after the listening socket is bound
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("Server listening") => break,
            Some(Ok(_)) => continue,
            _ => panic!("the server ended before listening"),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Server(child)
}

/// The verdict `wirespeed client -J` printed: (id, line).
fn client_verdict(mut cmd: Command, host: &str, port: u16, args: &[&str]) -> (String, String) {
    let out = cmd
        .args(["client", host, "-p", &port.to_string(), "-t", "3", "-J"])
        .args(args)
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("-J output");
    let v = &j["wirespeed"]["verdict"];
    (
        v["id"].as_str().unwrap_or_default().to_string(),
        v["line"].as_str().unwrap_or_default().to_string(),
    )
}

fn port() -> u16 {
    // inside a lab the namespace's ports are its own; on loopback, a port from the pid
    20_000 + (std::process::id() % 20_000) as u16
}

fn run(s: &Scenario) -> (String, String) {
    match s.place {
        Place::Loopback => {
            let p = port() + 1;
            let _server = start_server(ws(None), p);
            client_verdict(ws(None), "127.0.0.1", p, s.args)
        }
        Place::Lab(make) => {
            let lab = Lab::up(make(Spec::new(unique_name("wstt")))).expect("lab up");
            let to = lab.addr(Side::Server).unwrap().to_string();
            let _server = start_server(ws(Some((&lab, Side::Server))), port());
            // client on CPU 0, server on CPU 1: the ends do not compete
            let mut args = vec!["-A", "0,1"];
            args.extend_from_slice(s.args);
            client_verdict(ws(Some((&lab, Side::Client))), &to, port(), &args)
        }
    }
}

#[test]
fn each_induced_limit_gets_its_verdict() {
    if let Err(e) = check_can_run(false) {
        if std::env::var_os("CI").is_some() {
            panic!("CI: the truth table cannot run: {e}");
        }
        eprintln!("SKIP: each_induced_limit_gets_its_verdict because {e}");
        return;
    }
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if wirespeed_host::CpuSet::parse_list(cpus.trim()).map_or(0, |c| c.len()) < 2 {
        eprintln!("SKIP: each_induced_limit_gets_its_verdict because fewer than 2 CPUs are online");
        return;
    }
    let mut failed = Vec::new();
    for s in SCENARIOS {
        if let Some(why) = s.pending {
            eprintln!("PENDING: {} → {}: needs {why}", s.name, s.want);
            continue;
        }
        let (id, line) = run(s);
        eprintln!("{} → {id}: {line}", s.name);
        if id != s.want {
            failed.push(format!("{}: want {}, got {id} ({line})", s.name, s.want));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
