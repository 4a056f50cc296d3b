//! `client --live` in a pseudo-terminal (a tmux session per test, named after the pid and a
//! counter, killed on drop): a 10 s loopback test whose last live screen seen shows the per-CPU
//! bars of both ends (the peer's from its live frames), the verdict so far and the sum, then the
//! usual summary; and `q` or Ctrl-C ending a test early with the
//! normal end summary (verdict included) of what was measured so far.
//!
//! Without tmux the tests say `SKIP:`; with the environment variable `CI` set they fail.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub(crate) struct Session(String);

impl Session {
    pub(crate) fn start(cmd: &str) -> Option<Session> {
        if !Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            assert!(
                std::env::var_os("CI").is_none(),
                "tmux is not installed (CI installs it)"
            );
            eprintln!("SKIP: --live and top tests need tmux (apt-get install tmux)");
            return None;
        }
        let name = format!(
            "wslive{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let full = format!("{cmd}; echo EXIT=$?; sleep 600");
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "120",
                "-y",
                "40",
                &full,
            ])
            .status()
            .expect("tmux new-session");
        assert!(ok.success());
        Some(Session(name))
    }

    pub(crate) fn screen(&self) -> String {
        let o = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.0])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The first screen that satisfies `want` (a guard against a hang, not a timing check).
    pub(crate) fn wait_for(&self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let s = self.screen();
            if want(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "never saw {what}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn keys(&self, k: &str) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.0, k])
            .status()
            .expect("tmux send-keys");
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn wirespeed() -> &'static str {
    env!("CARGO_BIN_EXE_wirespeed")
}

#[test]
fn a_ten_second_test_shows_cpu_bars_and_the_sum_then_the_summary() {
    let Some(s) = Session::start(&format!("{} client --loopback -t 10 --live", wirespeed())) else {
        return;
    };
    // Every live frame until the process ends; the last one is the final screen.
    let mut last_frame = None;
    let mut saw_so_far = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let t = s.screen();
        if t.contains("EXIT=") {
            break;
        }
        if t.contains("q: quit") {
            saw_so_far |= t.contains("verdict so far: ");
            last_frame = Some(t);
        }
        assert!(Instant::now() < deadline, "the test never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    let last = last_frame.expect("at least one live frame");
    assert!(last.contains("wirespeed --live 127.0.0.1:"), "{last}");
    assert!(last.contains("/10 s"), "{last}");
    assert!(last.contains("sum: "), "{last}");
    assert!(last.contains("stream 1: "), "{last}");
    let bars = last
        .lines()
        .filter(|l| l.contains("CPU ") && l.contains('█') && l.contains("% busy"))
        .count();
    assert!(bars >= 1, "per-CPU bars in the final screen: {last}");
    // The peer is wirespeed (the loopback server): its CPUs arrive each interval, and the
    // verdict so far is shown until the end-of-test verdict replaces it.
    assert!(last.contains("CPUs of the peer at "), "{last}");
    let peer_bars = last
        .lines()
        .filter(|l| l.matches("% busy").count() == 2)
        .count();
    assert!(peer_bars >= 1, "both panes have CPU lines: {last}");
    assert!(saw_so_far, "a running verdict while the test ran");
    // The frame drawn at the end (with the end-of-test verdict in place of the one so far)
    // shows only for a moment before the terminal is restored: checked when it was caught
    // here, and always in the unit test of the render function.
    if last.contains(" verdict: ") {
        assert!(!last.contains("verdict so far"), "{last}");
    }
    let end = s.wait_for("the summary", |t| t.contains("EXIT="));
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(end.contains("sender"), "the usual summary: {end}");
    assert!(end.contains("Verdict:"), "{end}");
    assert!(!end.contains("q: quit"), "the terminal is restored: {end}");
}

/// `key` ends a long test early: the terminal is restored, then the normal end summary of
/// what was measured by then (intervals, the sender's sum line, where the work ran, the
/// verdict) and iperf3's interrupt exit status.
fn quit_with(key: &str) {
    let Some(s) = Session::start(&format!("{} client --loopback -t 60 --live", wirespeed())) else {
        return;
    };
    s.wait_for("the first interval", |t| t.contains("stream 1: "));
    s.keys(key);
    let end = s.wait_for("the exit", |t| t.contains("EXIT="));
    assert!(end.contains("EXIT=130"), "{end}");
    // The first interval (it may end at 1.01 s on a busy host).
    assert!(end.contains("0.00-1."), "the intervals so far: {end}");
    assert!(
        end.lines()
            .any(|l| l.contains("sec") && l.contains("sender")),
        "the end summary: {end}"
    );
    assert!(end.contains("Where the work ran"), "{end}");
    assert!(end.contains("Verdict:"), "the verdict: {end}");
    assert!(end.contains("interrupt"), "{end}");
    assert!(
        end.contains("interrupted before the peer's results came"),
        "the peer is wirespeed, its results just never came: {end}"
    );
    assert!(!end.contains("q: quit"), "the terminal is restored: {end}");
}

#[test]
fn q_ends_the_test_with_the_summary_so_far() {
    quit_with("q");
}

#[test]
fn ctrl_c_ends_the_test_with_the_summary_so_far() {
    quit_with("C-c");
}

#[test]
fn live_without_a_terminal_is_a_usage_error() {
    let o = Command::new(wirespeed())
        .args(["client", "--loopback", "-t", "1", "--live"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
