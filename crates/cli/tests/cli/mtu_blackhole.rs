//! MTU black holes built by hand, as a user meets them: two MTU-9000 ends, two routers and a
//! 1500 link between them, and a firewall on one router that drops the ICMP "fragmentation
//! needed" it sends toward one end (plain `ip` and `nft` in network namespaces, not
//! `wirespeed lab`). That end never learns the path MTU, so its large frames vanish; the other
//! end learns it and its data flows.
//!
//! - toward the client (the server's router drops the ICMP to the server): the client's data
//!   flows, the server's results message vanishes. The client ends with its own report and the
//!   verdict `mtu-blackhole` (it knows the server's MSS and its own path MTU), exit 5 (text) or
//!   1 (`-J`, iperf3's); the server sees its results stall and names `mtu-blackhole` too.
//! - toward the server (the client's router drops the ICMP to the client): the client's
//!   results message vanishes and the client names `mtu-blackhole` from its own stalled
//!   control connection; the server, waiting for them in vain, ends with its report and
//!   `mtu-blackhole` toward the server where its data taught it the path MTU (`-R`), else
//!   `peer-silent`.
//!
//! Each case in forward and reverse (`-R`) direction. The client's wait for the server's results
//! is bounded by `--rcv-timeout 8000` on both ends (not the default 20 s): long enough for the
//! server's own stall check (4 s with 3 retransmits), short enough for a quick test.
//!
//! Beside them, ends whose MTUs differ (one veth, 9000 on the client's side, 1500 on the
//! server's): `mtu-mismatch` naming the end with the smaller MTU, forward and `-R`.
//!
//! Needs root, `ip` and `nft`: `SKIP:` without them, a failure under `CI`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::need;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// The end toward which large frames vanish: its peer never learns the path MTU (the router
/// in front of the 1500 link on the peer's side drops its own ICMP "fragmentation needed").
#[derive(Clone, Copy, Debug, PartialEq)]
enum Toward {
    Client,
    Server,
}

/// Four namespaces (`-a` client, `-r1`, `-r2`, `-b` server), deleted on drop.
struct Net {
    name: String,
}

impl Net {
    fn ns(&self, side: &str) -> String {
        format!("{}-{side}", self.name)
    }

    fn up(toward: Toward) -> Net {
        let net = Net {
            name: wirespeed_lab::unique_name("wsbh"),
        };
        let (a, r1, r2, b) = (net.ns("a"), net.ns("r1"), net.ns("r2"), net.ns("b"));
        let run = |args: &[&str]| {
            // starts: ip nft (ip netns exec NS nft: the black hole's rule)
            // starts: ip (ip netns exec NS sysctl and nft are read where they are written)
            let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        for n in [&a, &r1, &r2, &b] {
            run(&["ip", "netns", "add", n]);
            run(&["ip", "-n", n, "link", "set", "lo", "up"]);
        }
        // ends and their links at 9000, the middle link at 1500 on both sides
        run(&[
            "ip", "-n", &a, "link", "add", "ws0", "mtu", "9000", "type", "veth", "peer", "name",
            "wsa", "mtu", "9000", "netns", &r1,
        ]);
        run(&[
            "ip", "-n", &r1, "link", "add", "wsb", "mtu", "1500", "type", "veth", "peer", "name",
            "wsa", "mtu", "1500", "netns", &r2,
        ]);
        run(&[
            "ip", "-n", &r2, "link", "add", "wsb", "mtu", "9000", "type", "veth", "peer", "name",
            "ws0", "mtu", "9000", "netns", &b,
        ]);
        for (n, dev, cidr) in [
            (&a, "ws0", "10.78.1.1/24"),
            (&r1, "wsa", "10.78.1.254/24"),
            (&r1, "wsb", "10.78.2.1/24"),
            (&r2, "wsa", "10.78.2.2/24"),
            (&r2, "wsb", "10.78.3.254/24"),
            (&b, "ws0", "10.78.3.2/24"),
        ] {
            run(&["ip", "-n", n, "addr", "add", cidr, "dev", dev]);
            run(&["ip", "-n", n, "link", "set", dev, "up"]);
        }
        for (n, route, via) in [
            (&a, "default", "10.78.1.254"),
            (&b, "default", "10.78.3.254"),
            (&r1, "10.78.3.0/24", "10.78.2.2"),
            (&r2, "10.78.1.0/24", "10.78.2.1"),
        ] {
            run(&["ip", "-n", n, "route", "add", route, "via", via]);
        }
        for n in [&r1, &r2] {
            run(&[
                "ip",
                "netns",
                "exec",
                n,
                "sysctl",
                "-q",
                "-w",
                "net.ipv4.ip_forward=1",
            ]);
        }
        // the router in front of the 1500 link, on the side whose end must not learn the MTU:
        // its own ICMP "fragmentation needed" goes nowhere
        let router = match toward {
            Toward::Client => &r2,
            Toward::Server => &r1,
        };
        let nft = |rest: &[&str]| {
            let mut v = vec!["ip", "netns", "exec", router.as_str(), "nft"];
            v.extend_from_slice(rest);
            run(&v);
        };
        nft(&["add", "table", "ip", "wsbh"]);
        nft(&[
            "add",
            "chain",
            "ip",
            "wsbh",
            "out",
            "{ type filter hook output priority 0; }",
        ]);
        nft(&[
            "add",
            "rule",
            "ip",
            "wsbh",
            "out",
            "icmp",
            "type",
            "destination-unreachable",
            "icmp",
            "code",
            "frag-needed",
            "drop",
        ]);
        net
    }

    fn exec(&self, side: &str) -> Command {
        exec_in(&self.ns(side))
    }
}

/// `wirespeed` in namespace `ns`.
fn exec_in(ns: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, bin()]);
    c
}

impl Drop for Net {
    fn drop(&mut self) {
        for s in ["a", "r1", "r2", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(s)])
                .status();
        }
    }
}

/// A one-test server in the `-b` namespace; its stdout lines arrive on the channel.
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Server {
    /// In namespace `ns`, with `--rcv-timeout 8000` (its wait for the client's results too).
    fn start(ns: &str) -> Server {
        let mut child = exec_in(ns)
            .args(["server", "-1", "-p", "5301", "--rcv-timeout", "8000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        // readiness: the banner comes after the listening socket is bound
        let bound = Duration::from_secs(300);
        loop {
            match rx.recv_timeout(bound) {
                Ok(l) if l.contains("Server listening") => break,
                Ok(_) => continue,
                Err(e) => panic!("the server did not listen: {e}"),
            }
        }
        Server { child, lines: rx }
    }

    /// Its output until it printed a verdict (or ended, or the hang bound).
    fn verdict(&self) -> String {
        let mut got = String::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(300)) {
            let done = l.starts_with("Verdict:");
            got.push_str(&l);
            got.push('\n');
            if done {
                break;
            }
        }
        got
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(net: &Net, args: &[&str]) -> Output {
    net.exec("a")
        .args([
            "client",
            "10.78.3.2",
            "-p",
            "5301",
            "-t",
            "2",
            "--rcv-timeout",
            "8000",
        ])
        .args(args)
        .output()
        .expect("run the client")
}

fn can_run(test: &str) -> bool {
    need::root(test)
        && need::tool(test, "ip", "-V", "iproute2")
        && need::tool(test, "nft", "--version", "nftables")
}

/// The `-J` report: intact (start, intervals, end) with its verdict id.
fn json_verdict(o: &Output) -> (serde_json::Value, String) {
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "-J output is not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    });
    assert!(
        j["start"]["connected"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
            && j["intervals"].as_array().is_some_and(|a| !a.is_empty())
            && j["end"]["sum_sent"].is_object(),
        "the report is not intact: {j}"
    );
    let id = j["wirespeed"]["verdict"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (j, id)
}

#[test]
fn the_servers_results_lost_toward_the_client_are_an_mtu_blackhole_not_a_bare_timeout() {
    let test = "the_servers_results_lost_toward_the_client_are_an_mtu_blackhole_not_a_bare_timeout";
    if !can_run(test) {
        return;
    }
    // forward, text: the client's intervals, its summary, the verdict, then one error line
    // naming it, exit 5
    {
        let net = Net::up(Toward::Client);
        let srv = Server::start(&net.ns("b"));
        let o = client(&net, &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        eprintln!("forward, text:\n{out}{err}");
        assert_eq!(o.status.code(), Some(5), "{out}{err}");
        assert!(out.contains("sender"), "no summary: {out}");
        let verdict = out
            .lines()
            .find(|l| l.starts_with("Verdict:"))
            .unwrap_or_else(|| panic!("no verdict: {out}"));
        assert!(
            verdict.starts_with("Verdict: MTU black hole toward the client: the server's results message never came"),
            "{verdict}"
        );
        assert!(
            verdict.contains("the path toward it carries 1500"),
            "{verdict}"
        );
        assert!(
            err.contains("while waiting for the server's results: mtu-blackhole"),
            "{err}"
        );
        // the server saw its own results stall and names it too
        let s = srv.verdict();
        eprintln!("server:\n{s}");
        assert!(s.contains("Verdict: MTU black hole"), "{s}");
    }
    // reverse and both directions, -J: the document is intact and its verdict names it; its
    // error keeps iperf3's words
    for dir in ["-R", "--bidir"] {
        let net = Net::up(Toward::Client);
        let _srv = Server::start(&net.ns("b"));
        let o = client(&net, &[dir, "-J"]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{dir}: iperf3's JSON failure code"
        );
        let (j, id) = json_verdict(&o);
        eprintln!("{dir} -J: {}\n{}", j["error"], j["wirespeed"]["verdict"]);
        assert_eq!(id, "mtu-blackhole", "{}", j["wirespeed"]["verdict"]);
        assert!(
            j["error"]
                .as_str()
                .is_some_and(|e| e.ends_with("while waiting for the server's results")),
            "{}",
            j["error"]
        );
    }
}

#[test]
fn the_clients_results_lost_toward_the_server_are_an_mtu_blackhole() {
    let test = "the_clients_results_lost_toward_the_server_are_an_mtu_blackhole";
    if !can_run(test) {
        return;
    }
    // the server waits for the client's results in vain: with -R its data taught it the path
    // MTU toward the client (1500) while the client's segments are 8948 bytes, evidence of
    // the black hole; forward it sent nothing large and has no such evidence: peer-silent
    for (args, server_says) in [
        (
            &["-J"][..],
            "Verdict: the client went silent: its results message never came",
        ),
        (
            &["-R", "-J"][..],
            "Verdict: MTU black hole toward the server: the client's results message never came",
        ),
    ] {
        let net = Net::up(Toward::Server);
        let srv = Server::start(&net.ns("b"));
        let o = client(&net, args);
        let (j, id) = json_verdict(&o);
        eprintln!("{args:?}: {}", j["wirespeed"]["verdict"]);
        assert!(o.status.success(), "{args:?}: {j}");
        assert_eq!(
            id, "mtu-blackhole",
            "{args:?}: {}",
            j["wirespeed"]["verdict"]
        );
        let s = srv.verdict();
        eprintln!("server: {s}");
        assert!(s.contains(server_says), "{args:?}: {s}");
        assert!(
            s.contains("sender") || s.contains("receiver"),
            "no summary: {s}"
        );
    }
}

/// Two namespaces joined by one veth whose ends disagree: the client's side MTU 9000, the
/// server's 1500 (plain `ip`), deleted on drop.
struct Pair {
    name: String,
}

impl Pair {
    fn up() -> Pair {
        let p = Pair {
            name: wirespeed_lab::unique_name("wsmm"),
        };
        let (a, b) = (format!("{}-a", p.name), format!("{}-b", p.name));
        let run = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().unwrap();
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        run(&["netns", "add", &a]);
        run(&["netns", "add", &b]);
        run(&[
            "-n", &a, "link", "add", "ws0", "mtu", "9000", "type", "veth", "peer", "name", "ws0",
            "mtu", "1500", "netns", &b,
        ]);
        for (n, cidr) in [(&a, "10.79.0.1/24"), (&b, "10.79.0.2/24")] {
            run(&["-n", n, "addr", "add", cidr, "dev", "ws0"]);
            run(&["-n", n, "link", "set", "ws0", "up"]);
            run(&["-n", n, "link", "set", "lo", "up"]);
        }
        p
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for s in ["a", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &format!("{}-{s}", self.name)])
                .status();
        }
    }
}

#[test]
fn ends_whose_mtus_differ_are_named_an_mtu_mismatch_in_both_directions() {
    let test = "ends_whose_mtus_differ_are_named_an_mtu_mismatch_in_both_directions";
    if !can_run(test) {
        return;
    }
    // the server's end has the smaller MTU: it receives in the forward test, sends with -R
    for (args, small) in [(&["-J"][..], "receiver"), (&["-R", "-J"][..], "sender")] {
        let pair = Pair::up();
        let _srv = Server::start(&format!("{}-b", pair.name));
        let o = exec_in(&format!("{}-a", pair.name))
            .args(["client", "10.79.0.2", "-p", "5301", "-t", "2", "-A", "0,1"])
            .args(args)
            .output()
            .expect("run the client");
        assert!(o.status.success(), "{args:?}");
        let (j, id) = json_verdict(&o);
        let v = &j["wirespeed"]["verdict"];
        eprintln!("{args:?}: {v}");
        let line = if id == "mtu-mismatch" {
            assert_eq!(v["end"], small, "{v}");
            v["line"].as_str().unwrap_or_default().to_string()
        } else {
            // another limit first: the mismatch is under `also`
            v["also"]
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .filter_map(|x| x["line"].as_str())
                        .find(|x| x.starts_with("MTU mismatch"))
                })
                .unwrap_or_else(|| panic!("no mtu-mismatch in {v}"))
                .to_string()
        };
        assert!(
            line.contains(&format!("the {small}'s 1500")),
            "{args:?}: {line}"
        );
    }
}
