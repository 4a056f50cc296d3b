//! Helpers for the measuring tests: run wirespeed and iperf3 (servers on free ports, clients
//! against them, one-off tests between any two ends), exit checks, JSON totals.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn wirespeed() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wirespeed"))
}

/// Which program runs one end of a test.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    Wirespeed,
    /// Debian's iperf3 (3.12: one thread for every stream).
    Iperf3,
    /// iperf3 3.21, the static build in `tests/peers` (a thread per stream, since 3.16).
    Iperf3Latest,
}

impl Side {
    /// The program, without arguments.
    pub fn command(self) -> Command {
        match self {
            Side::Wirespeed => Command::new(wirespeed()),
            Side::Iperf3 => Command::new("iperf3"),
            // starts: by path (the repository's iperf3 3.21, tests/peers)
            Side::Iperf3Latest => Command::new(iperf3_latest()),
        }
    }

    /// Whether this end counts as iperf3 does (either version).
    pub fn is_iperf3(self) -> bool {
        self != Side::Wirespeed
    }
}

/// iperf3 3.21's static build, in the repository (`tests/peers/README.md`).
pub fn iperf3_latest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/iperf3-3.21")
}

/// Held by every test whose checks read how this host's CPUs were shared while it ran (the
/// verdict tables, the receiver-interval comparisons with iperf3), so that no two of them load
/// the machine for each other: each still runs beside the suite's light tests, and the verdict
/// tables measure and say the host's load before each run. A test that failed while holding it
/// does not stop the others (the lock guards nothing but the time).
pub fn measuring() -> std::sync::MutexGuard<'static, ()> {
    static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    MEASURING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How many CPUs are online here (0 when unknown).
pub fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| wirespeed_host::CpuSet::parse_list(&s).ok())
        .map_or(0, |s| s.len())
}

/// `true` if Debian's iperf3 runs here; otherwise the caller skips, saying so, or fails under
/// CI ([`crate::need::iperf3`]).
pub fn have_iperf3(test: &str) -> bool {
    crate::need::iperf3(test)
}

/// How long a wait for something that must happen gives up: a hang detector, not a
/// performance bound. An idle machine needs a fraction of a second; a loaded 2-vCPU CI machine
/// with up to 50 % steal may need many seconds, so the bound is minutes: only a real hang
/// reaches it. Speed is the benchmark's job (`bench/`).
pub const HANG: Duration = Duration::from_secs(300);

/// Poll `cond` until it holds; fail naming `what` if it still does not after [`HANG`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < HANG, "{what}: still not after {HANG:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The TCP sockets of this host in state `state` (hex, as the kernel prints it: `0A` LISTEN,
/// `01` ESTABLISHED) whose local (`remote == false`) or remote port is `port`, from the kernel's
/// socket tables (no probe connection, which a one-off server would take for a client).
fn sockets_on(port: u16, remote: bool, state: &str) -> usize {
    let needle = format!(":{port:04X}");
    let field = if remote { 2 } else { 1 };
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(t).ok())
        .map(|text| {
            text.lines()
                .skip(1)
                .filter(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() > 3 && f[field].ends_with(&needle) && f[3] == state
                })
                .count()
        })
        .sum()
}

/// Wait until `n` client connections to the server on `port` are established (a test is
/// running once its control connection and its streams are): the readiness wait for "while a
/// test runs".
pub fn wait_connected(port: u16, n: usize) {
    wait_until(&format!("{n} connections to port {port}"), || {
        sockets_on(port, true, "01") >= n
    });
}

/// Wait until a connection to `port` is in SYN-SENT: its SYN went out and nothing answered.
pub fn wait_syn_sent(port: u16) {
    wait_until(
        &format!("a connection to port {port} waiting for its SYN's answer"),
        || sockets_on(port, true, "02") > 0,
    );
}

/// Send `sig` (`-INT`, `-TERM`) to `pid` with kill(1).
pub fn signal(pid: u32, sig: &str) {
    let s = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(s.success(), "kill {sig} {pid}");
}

/// Wait until the file holds `needle` (a process's `--logfile`: readiness from its output).
pub fn wait_for_text(path: &std::path::Path, needle: &str) {
    wait_until(&format!("{} to contain {needle:?}", path.display()), || {
        std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle))
    });
}

/// A port free right now (TCP and UDP) for a server to listen on: one of
/// [`ports_below_ephemeral`], never one a connection could take as its source port meanwhile.
pub fn free_port() -> u16 {
    ports_below_ephemeral(1)
}

/// How far this test process has handed out ports (each call starts past the last, so tests
/// running at once are never handed the same port).
static HANDED: AtomicU32 = AtomicU32::new(0);

/// The first of `n` consecutive ports free now (TCP and UDP) and below the kernel's ephemeral
/// range, for a server's port or a `--cport`: no other test of this run is handed one of them
/// meanwhile (theirs come from this cursor, or from that range: a bind to port 0, or a
/// connect). A port taken from a bind to port 0 and released could become another test's
/// connection's source port before the server bound it: an iperf3 server then failed to
/// listen, and its test waited out the hang detector.
pub fn ports_below_ephemeral(n: u16) -> u16 {
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let first = low.saturating_sub(4000).max(1024);
    let span = u32::from(low.saturating_sub(n).saturating_sub(first)).max(1);
    let free = |p: u16| {
        TcpListener::bind(("0.0.0.0", p)).is_ok()
            && std::net::UdpSocket::bind(("0.0.0.0", p)).is_ok()
    };
    (0..span)
        .map(|_| {
            let at = std::process::id() % 2000 + HANDED.fetch_add(u32::from(n), Ordering::Relaxed);
            first + (at % span) as u16
        })
        .find(|&p| (0..n).all(|k| free(p + k)))
        .expect("free ports below the ephemeral range")
}

/// Wait until a socket listens on the port, without connecting to it (a probe connection
/// would count as a failed test for `iperf3 -s -1`): read the kernel's socket tables.
pub fn wait_listening(port: u16) {
    wait_until(&format!("something listens on port {port}"), || {
        sockets_on(port, false, "0A") > 0
    });
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
    /// Whether the child has ended (without waiting).
    pub fn has_exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().is_ok_and(|s| s.is_some()))
    }

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

/// `wirespeed <args>` to completion ([`HANG`] detects a hang).
pub fn ws(args: &[&str]) -> Output {
    run(Command::new(wirespeed()).args(args), HANG)
}

/// `<side> -c 127.0.0.1 -p <port> <args>`; `port` may be a list (`5201,5202`) for wirespeed.
pub fn client_cmd(side: Side, port: impl std::fmt::Display, args: &[&str]) -> Command {
    let mut c = side.command();
    c.args(["-c", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    c
}

/// `wirespeed server -p <port> <args>` on a free port, already listening: the process (killed
/// when dropped) and its port.
pub fn start_server(args: &[&str]) -> (Proc, u16) {
    spawn_listening(|port| {
        let mut c = Command::new(wirespeed());
        c.args(["server", "-p", &port.to_string()]).args(args);
        c
    })
}

/// A server made by `make(port)` on a free port, already listening: the process and its port.
/// The port is free when picked but another process (other tests run in parallel) may take it
/// before the server binds it; a server that ends before it listens is started again on another
/// port (up to 8 times), instead of being waited for until the hang bound.
pub fn spawn_listening(make: impl Fn(u16) -> Command) -> (Proc, u16) {
    let mut last = String::new();
    for _ in 0..8 {
        let port = free_port();
        let mut srv = spawn(&mut make(port));
        let t0 = Instant::now();
        loop {
            if sockets_on(port, false, "0A") > 0 {
                return (srv, port);
            }
            if srv.has_exited() {
                last = text_of(&srv.wait_output(Duration::from_secs(5)));
                break;
            }
            assert!(
                t0.elapsed() < HANG,
                "something listens on port {port}: still not after {HANG:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    panic!("a server on a free port ended before listening, 8 times; the last said: {last}")
}

/// A process's stdout and stderr, as text.
pub fn text_of(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Fail, naming `what` and showing the output, unless the process exited with 0.
pub fn assert_success(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({}): {}",
        o.status,
        text_of(o)
    );
}

/// One test between a one-off server (`-s -1 -J`) and a client with `args` (nothing added),
/// run within 30 s: both outputs, after checking that the client succeeded.
pub fn one_off(client: Side, server: Side, args: &[&str], what: &str) -> (Output, Output) {
    let (srv, port) = spawn_listening(|port| {
        let mut c = server.command();
        c.args(["-s", "-1", "-J", "-p", &port.to_string()]);
        c
    });
    let out = run(&mut client_cmd(client, port, args), Duration::from_secs(30));
    let sout = srv.wait_output(Duration::from_secs(15));
    assert_success(&out, what);
    (out, sout)
}

/// [`one_off`] with `-J` first: the client's and the server's JSON documents.
pub fn one_off_json(client: Side, server: Side, args: &[&str], what: &str) -> (Value, Value) {
    let mut a = vec!["-J"];
    a.extend_from_slice(args);
    let (c, s) = one_off(client, server, &a, what);
    (json_of(&c.stdout, "client"), json_of(&s.stdout, "server"))
}

/// Neither end's JSON document reports an error.
pub fn assert_no_error(client: &Value, server: &Value, what: &str) {
    assert!(
        client.get("error").is_none(),
        "{what}: client error {}",
        client["error"]
    );
    assert!(
        server.get("error").is_none(),
        "{what}: server error {}",
        server["error"]
    );
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
