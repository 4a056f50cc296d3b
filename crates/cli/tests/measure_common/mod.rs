//! Helpers for the measuring tests: run wirespeed and iperf3, free ports, JSON totals.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn wirespeed() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wirespeed"))
}

/// `true` if Debian's iperf3 runs here; otherwise prints why the caller skips.
pub fn have_iperf3(test: &str) -> bool {
    match Command::new("iperf3").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            eprintln!("SKIP: {test} because iperf3 is not installed (apt-get install iperf3)");
            false
        }
    }
}

/// A port free right now on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// Wait until a socket listens on the port, without connecting to it (a probe connection
/// would count as a failed test for `iperf3 -s -1`): read the kernel's socket tables.
pub fn wait_listening(port: u16) {
    let t0 = Instant::now();
    let needle = format!(":{port:04X} ");
    while t0.elapsed() < Duration::from_secs(10) {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Ok(text) = std::fs::read_to_string(table) {
                // Field 2 is local address:port (hex), field 4 the state (0A = LISTEN).
                if text.lines().skip(1).any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 3 && format!("{} ", f[1]).ends_with(&needle) && f[3] == "0A"
                }) {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on port {port} after 10 s");
}

/// A child process whose output is collected as it is written (a full pipe would block it),
/// killed when dropped.
pub struct Proc {
    child: Option<Child>,
    out: Option<std::thread::JoinHandle<Vec<u8>>>,
    err: Option<std::thread::JoinHandle<Vec<u8>>>,
}

fn collect(
    r: Option<impl std::io::Read + Send + 'static>,
) -> Option<std::thread::JoinHandle<Vec<u8>>> {
    r.map(|mut r| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    })
}

impl Proc {
    /// The child's process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub fn wait_output(mut self, within: Duration) -> Output {
        let mut child = self.child.take().expect("child");
        let t0 = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if t0.elapsed() < within => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = child.kill();
                    break;
                }
            }
        }
        let status = child.wait().expect("wait");
        let stdout = self
            .out
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let stderr = self
            .err
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn spawn(cmd: &mut Command) -> Proc {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = collect(child.stdout.take());
    let err = collect(child.stderr.take());
    Proc {
        child: Some(child),
        out,
        err,
    }
}

/// Run to completion with a hard time limit (a hang fails the test).
pub fn run(cmd: &mut Command, within: Duration) -> Output {
    spawn(cmd).wait_output(within)
}

pub fn json_of(out: &[u8], who: &str) -> Value {
    serde_json::from_slice(out).unwrap_or_else(|e| {
        panic!(
            "{who} did not print valid JSON ({e}): {}",
            String::from_utf8_lossy(out)
        )
    })
}

/// `end.<key>.bytes`, or None.
pub fn bytes(j: &Value, key: &str) -> Option<u64> {
    j["end"][key]["bytes"].as_u64()
}

/// The four directional totals iperf3's JSON has: (sent, received, sent_rev, received_rev).
pub fn totals(j: &Value) -> [Option<u64>; 4] {
    [
        bytes(j, "sum_sent"),
        bytes(j, "sum_received"),
        bytes(j, "sum_sent_bidir_reverse"),
        bytes(j, "sum_received_bidir_reverse"),
    ]
}
