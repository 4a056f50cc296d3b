//! Child processes with timeouts, optionally inside a network namespace.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A started child whose output goes to temp files (no pipe can fill up).
pub struct Proc {
    pub label: String,
    child: Option<Child>,
    out: std::fs::File,
    err: std::fs::File,
}

/// The command line, prefixed with `ip netns exec NS` when `ns` is given.
pub fn command_line(args: &[String], ns: Option<&str>) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(ns) = ns {
        v.extend(["ip", "netns", "exec", ns].map(String::from));
    }
    v.extend(args.iter().cloned());
    v
}

impl Proc {
    pub fn spawn(args: &[String], ns: Option<&str>) -> Result<Proc, String> {
        let full = command_line(args, ns);
        let label = full.join(" ");
        let out = tempfile::tempfile().map_err(|e| format!("tempfile: {e}"))?;
        let err = tempfile::tempfile().map_err(|e| format!("tempfile: {e}"))?;
        // starts: ip iperf3 sleep taskset wirespeed (ip netns exec; taskset pins the peers without
        // their own pinning; the other contenders by path)
        let child = Command::new(&full[0])
            .args(&full[1..])
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(|e| format!("dup: {e}"))?)
            .stderr(err.try_clone().map_err(|e| format!("dup: {e}"))?)
            .spawn()
            .map_err(|e| format!("cannot start {label}: {e}"))?;
        Ok(Proc {
            label,
            child: Some(child),
            out,
            err,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// True while the process runs.
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Wait up to `t`; kill (this child only, by its handle) if it is still running.
    /// Returns (exited cleanly in time, exit status text).
    pub fn wait_or_kill(&mut self, t: Duration, interrupted: &AtomicBool) -> (bool, String) {
        let Some(c) = self.child.as_mut() else {
            return (false, "not started".into());
        };
        let t0 = Instant::now();
        loop {
            match c.try_wait() {
                Ok(Some(st)) => return (st.success(), st.to_string()),
                Ok(None) => {}
                Err(e) => return (false, format!("wait: {e}")),
            }
            if t0.elapsed() > t || interrupted.load(Ordering::Relaxed) {
                let _ = c.kill();
                let _ = c.wait();
                return (
                    false,
                    format!("killed after {:.1} s", t0.elapsed().as_secs_f64()),
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stdout(&mut self) -> String {
        read_all(&mut self.out)
    }
    pub fn stderr(&mut self) -> String {
        read_all(&mut self.err)
    }
    /// "`command`: what happened; stderr: ..." for error lines.
    pub fn failure(&mut self, what: &str) -> String {
        let err = self.stderr();
        let err = err.trim();
        if err.is_empty() {
            format!("`{}`: {what}", self.label)
        } else {
            format!("`{}`: {what}; stderr: {err}", self.label)
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

fn read_all(f: &mut std::fs::File) -> String {
    use std::io::Seek;
    let mut s = String::new();
    let _ = f.seek(std::io::SeekFrom::Start(0));
    let _ = f.read_to_string(&mut s);
    s
}

/// Whether `pid` has a TCP socket listening on `port` (read from the process's
/// own view of /proc/PID/net/tcp{,6}, so it works inside namespaces too).
pub fn listening(pid: u32, port: u16) -> bool {
    ["tcp", "tcp6"].iter().any(|f| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{f}"))
            .map(|t| has_listener(&t, port))
            .unwrap_or(false)
    })
}

/// Parse /proc/net/tcp text: a LISTEN (0A) row whose local port is `port`.
pub fn has_listener(text: &str, port: u16) -> bool {
    text.lines().skip(1).any(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        cols.len() > 3
            && cols[3] == "0A"
            && cols[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port)
    })
}

/// Whether the process's view of /proc/PID/net/tcp{,6} exists at all (a sandbox with its own
/// network stack may not provide it).
fn listener_table(pid: u32) -> bool {
    ["tcp", "tcp6"]
        .iter()
        .any(|f| std::fs::metadata(format!("/proc/{pid}/net/{f}")).is_ok())
}

/// Wait until the process listens on `port` (or exits, or `t` passes). Where the kernel shows
/// no listener table at all, a server still running after a second counts as listening (said
/// once on stderr): the run then fails in the client if it was not.
pub fn wait_listening(p: &mut Proc, port: u16, t: Duration) -> bool {
    static NO_TABLE: std::sync::Once = std::sync::Once::new();
    let t0 = Instant::now();
    while t0.elapsed() < t {
        let Some(pid) = p.pid() else { return false };
        if !p.running() {
            return false;
        }
        if listening(pid, port) {
            return true;
        }
        if t0.elapsed() >= Duration::from_secs(1) && !listener_table(pid) {
            NO_TABLE.call_once(|| {
                eprintln!(
                    "  (no /proc/PID/net/tcp here: a server running after 1 s counts as listening)"
                )
            });
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A TCP port free on 127.0.0.1 right now.
pub fn free_port() -> Result<u16, String> {
    let l =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind 127.0.0.1:0: {e}"))?;
    let port = l
        .local_addr()
        .map_err(|e| format!("local_addr: {e}"))?
        .port();
    // UDP tests use the same number for their data socket.
    Ok(port)
}

/// Ctrl-C / SIGTERM flag.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let f = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&f));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_rows() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n   1: 0100007F:1452 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1\n";
        assert!(has_listener(t, 5201));
        assert!(!has_listener(t, 5202), "established, not listening");
        assert!(!has_listener(t, 80));
        let t6 = "  sl  local_address                         remote_address                        st\n   0: 00000000000000000000000000000000:1451 00000000000000000000000000000000:0000 0A 0\n";
        assert!(has_listener(t6, 5201));
    }

    #[test]
    fn netns_prefix() {
        let a = vec!["iperf3".to_string(), "-s".to_string()];
        assert_eq!(command_line(&a, None), a);
        assert_eq!(
            command_line(&a, Some("n1")).join(" "),
            "ip netns exec n1 iperf3 -s"
        );
    }

    #[test]
    fn child_output_and_timeout() {
        let flag = AtomicBool::new(false);
        let mut p = Proc::spawn(
            &["sh".into(), "-c".into(), "echo hi; echo err >&2".into()],
            None,
        )
        .expect("spawn");
        let (ok, _) = p.wait_or_kill(Duration::from_secs(5), &flag);
        assert!(ok);
        assert_eq!(p.stdout(), "hi\n");
        assert_eq!(p.stderr(), "err\n");
        let mut p = Proc::spawn(&["sleep".into(), "10".into()], None).expect("spawn");
        let t = Instant::now();
        let (ok, why) = p.wait_or_kill(Duration::from_millis(100), &flag);
        assert!(!ok && why.contains("killed"));
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
