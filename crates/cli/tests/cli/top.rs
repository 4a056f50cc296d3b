//! `wirespeed top` against a running server: the server serves its stats socket (in a
//! temporary directory), top runs in a tmux session (see [`crate::live::Session`]), a 5 s
//! client test runs, and top's screen shows the test's stream line, the sum, the client's CPUs
//! and the verdict so far while it runs, this host's CPU bars and the test's end; `q` quits with status 0 and the terminal restored.
//!
//! Without tmux the test says `SKIP:`; with the environment variable `CI` set it fails.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::live::Session;

fn wirespeed() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

/// The server, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server on an ephemeral port with its stats socket at `sock`; its port once it listens.
fn server(sock: &std::path::Path) -> (Server, u16) {
    let mut child = Command::new(wirespeed())
        .args(["server", "-p", "0"])
        .arg(format!("--stats-socket={}", sock.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let out = child.stdout.take().expect("stdout");
    let server = Server(child);
    let mut lines = BufReader::new(out).lines();
    let mut port = None;
    for line in lines.by_ref() {
        let line = line.expect("server output");
        if let Some(p) = line
            .strip_prefix("Server listening on ")
            .and_then(|r| r.split_whitespace().next())
        {
            port = p.parse().ok();
            break;
        }
    }
    // Keep reading, so the server's report never meets a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (server, port.expect("the server's listening line"))
}

#[test]
fn top_shows_a_running_test_of_the_server_then_quits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("stats.sock");
    let (_server, port) = server(&sock);
    // The socket is opened just after the listening line: wait for it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "the stats socket never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the server's user reads the feed");
    let Some(s) = Session::start(&format!("{} top --socket {}", wirespeed(), sock.display()))
    else {
        return;
    };
    s.wait_for("top's header", |t| {
        t.contains("wirespeed top") && t.contains("q: quit")
    });
    let client = Command::new(wirespeed())
        .args(["client", "127.0.0.1", "-p", &port.to_string(), "-t", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the client");
    // While it runs: the client's CPUs (a wirespeed client sends them each interval) and the
    // verdict so far.
    let running = s.wait_for("the client's CPUs and the verdict so far", |t| {
        t.contains("test 1: CPUs of the client") && t.contains("verdict so far: ")
    });
    assert!(
        running
            .lines()
            .skip_while(|l| !l.contains("CPUs of the client"))
            .nth(1)
            .is_some_and(|l| l.contains("CPU ") && l.contains("% busy")),
        "a CPU line of the client: {running}"
    );
    let client = client.wait_with_output().expect("the client's end");
    assert!(
        client.status.success(),
        "{}",
        String::from_utf8_lossy(&client.stderr)
    );
    let screen = s.wait_for("the test's stream, sum and end", |t| {
        t.contains("test 1 stream 1: ") && t.contains("test 1 sum: ") && t.contains("· done")
    });
    assert!(screen.contains("test 1 from "), "{screen}");
    assert!(screen.contains("/5 s"), "{screen}");
    let bars = screen
        .lines()
        .filter(|l| l.contains("CPU ") && l.contains("% busy") && l.contains("NIC irqs"))
        .count();
    assert!(bars >= 1, "per-CPU bars: {screen}");
    s.keys("q");
    let end = s.wait_for("top's exit", |t| t.contains("EXIT="));
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(!end.contains("q: quit"), "the terminal is restored: {end}");
}

#[test]
fn top_without_a_server_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let Some(s) = Session::start(&format!("{} top --socket {}", wirespeed(), sock.display()))
    else {
        return;
    };
    let end = s.wait_for("top's exit", |t| t.contains("EXIT="));
    assert!(end.contains("EXIT=7"), "{end}");
    assert!(end.contains("--stats-socket"), "{end}");
}

#[test]
fn top_without_a_terminal_is_a_usage_error() {
    let o = Command::new(wirespeed()).args(["top"]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
