//! `wirespeed sweep` end to end on loopback against a wirespeed server started here.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// A wirespeed server on a free loopback port; killed (by its own pid) when dropped.
struct ServerProc {
    child: Child,
    port: u16,
}

impl ServerProc {
    fn start() -> ServerProc {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin())
            .args(["server", "-B", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        ServerProc { child, port }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn online() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| wirespeed_host::CpuSet::parse_list(&s).ok())
        .map_or(0, |s| s.len())
}

#[test]
fn a_two_by_two_sweep_completes() {
    if online() < 2 {
        eprintln!("SKIP: a_two_by_two_sweep_completes because fewer than 2 CPUs are online");
        return;
    }
    let srv = ServerProc::start();
    let out = Command::new(bin())
        .args([
            "sweep",
            "127.0.0.1",
            "-p",
            &srv.port.to_string(),
            "--cpus",
            "0,1",
            "--server-cpus",
            "0,1",
            "-t",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["tests_run"], 4);
    assert_eq!(j["matrix"]["rows"], serde_json::json!([0, 1]));
    assert_eq!(j["matrix"]["cols"], serde_json::json!([0, 1]));
    for r in 0..2 {
        for c in 0..2 {
            let cell = &j["matrix"]["cells"][r][c];
            assert_eq!(cell["runs"].as_array().unwrap().len(), 1, "{cell}");
            assert!(cell["median"].as_f64().unwrap() > 0.0, "{cell}");
        }
    }
    let best = &j["summary"]["best"];
    assert!(best["median"].as_f64().unwrap() > 0.0);
    assert!(j["summary"]["recommendation"]
        .as_str()
        .unwrap()
        .starts_with("run the client on CPU"));
    // Loopback: both ends on this host, so the cells are grouped by relation.
    assert!(!j["summary"]["by_relation"].as_array().unwrap().is_empty());
}

#[test]
fn irq_sweep_refusals_are_clear() {
    let run = |args: &[&str]| Command::new(bin()).args(args).output().unwrap();
    // Without -R the server's IRQs move (tests/server_tune.rs): this host sends from one CPU.
    let out = run(&[
        "sweep",
        "127.0.0.1",
        "-p",
        "9",
        "--cpus",
        "0,1",
        "--server-cpus",
        "0",
        "--irq-cpus",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("give one --cpus CPU"), "{err}");
    // With -R to a loopback address there is no NIC to move.
    let out = run(&[
        "sweep",
        "127.0.0.1",
        "-p",
        "9",
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "--irq-cpus",
        "1",
        "-R",
    ]);
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("through lo"));
    // Bad values.
    let out = run(&[
        "sweep",
        "127.0.0.1",
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "-t",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["sweep", "127.0.0.1", "--cpus", "x", "--server-cpus", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_sweep_against_no_server_fails_with_the_connect_code() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again: nothing listens there
    let out = Command::new(bin())
        .args([
            "sweep",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--cpus",
            "0",
            "--server-cpus",
            "0",
            "-t",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.lines().last().unwrap().contains("every test failed"),
        "{err}"
    );
}
