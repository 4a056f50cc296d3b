//! Helpers for the agent's tests: start `wirespeed agent` (optionally inside a network
//! namespace) and wait for its ready line, plain HTTP/1.0 GETs, the fixture root.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

pub use crate::measure_common::wirespeed;

pub fn fixture(name: &str) -> PathBuf {
    crate::host_common::fixtures().join(name)
}

/// A running agent, killed when dropped.
pub struct AgentProc {
    child: Child,
    /// The HTTP endpoint.
    pub web: SocketAddr,
    /// The test server's port, when it runs one.
    pub test_port: Option<u16>,
    /// What the agent logged (stderr) after its ready line, so far.
    pub log: Arc<Mutex<Vec<String>>>,
}

impl AgentProc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `wirespeed agent ARGS`, prefixed by `prefix` (e.g. `ip netns exec NS`), and wait for
/// its ready line (`wirespeed agent: http://ADDR/metrics, tests on ADDR`).
pub fn start_agent(prefix: &[&str], args: &[&str]) -> AgentProc {
    let mut cmd = match prefix.split_first() {
        Some((p, rest)) => {
            // starts: ip (ip netns exec NS, the callers' prefix)
            let mut c = Command::new(p);
            c.args(rest).arg(wirespeed());
            c
        }
        None => Command::new(wirespeed()),
    };
    cmd.arg("agent").args(args);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wirespeed agent");
    let err = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = Arc::clone(&log);
    std::thread::spawn(move || {
        let mut lines = BufReader::new(err).lines();
        if let Some(Ok(l)) = lines.next() {
            let _ = tx.send(l);
        }
        for l in lines.map_while(Result::ok) {
            eprintln!("agent: {l}");
            log2.lock().unwrap().push(l);
        }
    });
    let line = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(l) => l,
        Err(_) => {
            let _ = child.kill();
            let st = child.wait();
            panic!("agent {args:?} printed no ready line ({st:?})");
        }
    };
    let web: SocketAddr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let test_port = line
        .rsplit_once("tests on ")
        .and_then(|(_, a)| a.parse::<SocketAddr>().ok())
        .map(|a| a.port());
    AgentProc {
        child,
        web,
        test_port,
        log,
    }
}

/// Send `request` as is and read the whole answer: (status, body).
pub fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    raw_within(addr, request, Duration::from_secs(120))
}

/// [`raw`], giving up reading after `limit` (for requests the agent may leave unanswered).
pub fn raw_within(addr: SocketAddr, request: &[u8], limit: Duration) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the agent");
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(request).expect("send the request");
    read_answer(&mut s)
}

/// Read an HTTP answer to its end: (status, body); status 0 when there was none.
pub fn read_answer(s: &mut impl Read) -> (u16, String) {
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// `GET path` over HTTP/1.0: (status, body).
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    raw(
        addr,
        format!("GET {path} HTTP/1.0\r\nHost: agent\r\n\r\n").as_bytes(),
    )
}

/// `promtool check metrics` on `text`: Some(lint output) when it complains, None when clean;
/// panics when promtool is missing under CI, returns None (after a SKIP line) otherwise.
pub fn promtool_complaints(text: &str) -> Option<String> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool missing under CI"
        );
        eprintln!("SKIP: promtool not installed (apt-get install prometheus)");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (!out.status.success()).then(|| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `/metrics` once `series` reads at least `want` (bounded by [`crate::measure_common::HANG`]):
/// a server counts a test when its session has ended, which can be just after the client or the
/// probe that ran it has returned. The counters only rise, so the caller asserts the exact value
/// on the text returned.
pub fn metrics_reaching(addr: SocketAddr, series: &str, want: f64) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let (code, text) = get(addr, "/metrics");
        let reached = code == 200 && value(&text, series).is_some_and(|v| v >= want);
        if reached || t0.elapsed() >= crate::measure_common::HANG {
            return text;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The value of the first sample line starting with `series ` in `text`.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
