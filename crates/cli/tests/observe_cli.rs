//! Observation in every test, end to end on loopback: where the workers ran on both ends, the
//! verdict, `--repeat` grouping, and the absent remote end with an iperf3 server.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

fn online() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| wirespeed_host::CpuSet::parse_list(&s).ok())
        .map_or(0, |s| s.len())
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const VERDICTS: &[&str] = &[
    "line-rate",
    "pmtu-below-mtu",
    "receiver-shares-cpu-with-softirq",
    "irq-numa-remote",
    "app-numa-remote",
    "irq-cross-l3",
    "receiver-cpu-bound",
    "sender-cpu-bound",
    "softirq-cpu-bound",
    "window-limited",
    "sndbuf-limited",
    "no-cpu-saturated",
];

#[test]
fn pinned_workers_are_seen_on_both_ends() {
    if online() < 2 {
        eprintln!(
            "SKIP: pinned_workers_are_seen_on_both_ends because fewer than 2 CPUs are online"
        );
        return;
    }
    let j = json_of(&["client", "--loopback", "-t", "1", "-A", "0,1", "-J"]);
    let obs = &j["wirespeed"]["observation"];
    let local = &obs["local"];
    let remote = &obs["remote"];
    assert_eq!(local["role"], "sender");
    assert_eq!(remote["role"], "receiver");
    assert_eq!(local["iface"], "lo");
    assert_eq!(local["total"]["workers"][0]["cpus_seen"], "0");
    assert_eq!(remote["total"]["workers"][0]["cpus_seen"], "1");
    // The CPUs that did work include both workers' CPUs, with shares that add up.
    for end in [local, remote] {
        let cpus = end["total"]["cpus"].as_array().unwrap();
        for want in [0, 1] {
            let c = cpus
                .iter()
                .find(|c| c["cpu"] == want)
                .expect("worker CPU listed");
            let sum: f64 = ["user", "system", "irq", "softirq", "steal", "idle"]
                .iter()
                .map(|k| c[*k].as_f64().unwrap())
                .sum();
            assert!((99.0..=101.0).contains(&sum), "{c}");
        }
        assert!(!end["intervals"].as_array().unwrap().is_empty());
    }
    assert!(local["total"]["tcp"]["busy_us"].as_u64().unwrap() > 0);
    let v = &j["wirespeed"]["verdict"];
    assert!(VERDICTS.contains(&v["id"].as_str().unwrap()), "{v}");
    assert!(!v["line"].as_str().unwrap().is_empty());
}

#[test]
fn reverse_swaps_the_roles() {
    let j = json_of(&["client", "--loopback", "-t", "1", "-R", "-J"]);
    let obs = &j["wirespeed"]["observation"];
    assert_eq!(obs["local"]["role"], "receiver");
    assert_eq!(obs["remote"]["role"], "sender");
}

#[test]
fn text_output_shows_where_the_work_ran() {
    let out = Command::new(bin())
        .args(["client", "--loopback", "-t", "1", "-A", "0"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    let at = t.find("Where the work ran:").expect(&t);
    let tail = &t[at..];
    assert!(
        tail.contains("\nsender ") && tail.contains(" via lo: CPUs that did work\n"),
        "{tail}"
    );
    assert!(tail.contains("\nreceiver "), "{tail}");
    assert!(tail.contains("worker 0"), "{tail}");
    assert!(tail.contains("\nVerdict: "), "{tail}");
}

#[test]
fn repeat_groups_the_runs() {
    let j = json_of(&["client", "--loopback", "-t", "1", "--repeat", "3", "-J"]);
    assert_eq!(j["runs"].as_array().unwrap().len(), 3);
    let a = &j["repeat"];
    assert_eq!(a["stats"]["runs"], 3);
    let modes = a["modes"].as_array().unwrap();
    assert!(!modes.is_empty());
    let grouped: usize = modes
        .iter()
        .map(|m| m["runs"].as_array().unwrap().len())
        .sum();
    assert_eq!(grouped, 3);
    for m in modes {
        // Every run was observed, so every mode has a placement signature.
        assert!(m["signature"].is_object(), "{m}");
        assert!(m["agreeing"].as_u64().unwrap() >= 1);
    }
    assert!(a["method"].as_str().unwrap().contains("10 % of the median"));

    let out = Command::new(bin())
        .args(["client", "--loopback", "-t", "1", "--repeat", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("run 1/2: ") && t.contains("run 2/2: "), "{t}");
    assert!(t.contains("2 runs: min "), "{t}");

    let out = Command::new(bin())
        .args(["client", "--loopback", "-t", "1", "--repeat", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_iperf3_server_leaves_the_remote_end_absent() {
    let Ok(status) = Command::new("iperf3")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
    else {
        eprintln!(
            "SKIP: an_iperf3_server_leaves_the_remote_end_absent because iperf3 is not installed"
        );
        return;
    };
    assert!(status.success());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Not `-1`: the readiness probe below would be its one test.
    let mut srv = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "iperf3 did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = Command::new(bin())
        .args([
            "client",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-J",
        ])
        .output()
        .unwrap();
    let _ = srv.kill();
    let _ = srv.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let obs = &j["wirespeed"]["observation"];
    assert_eq!(obs["local"]["role"], "sender");
    assert!(obs["remote"].is_null());
    assert!(
        obs["remote_absent"].as_str().unwrap().contains("iperf3"),
        "{obs}"
    );
    assert!(j["wirespeed"]["verdict"]["line"].is_string());
}
