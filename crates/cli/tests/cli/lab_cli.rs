//! `wirespeed lab` with `--delay` on a kernel without netem: the delay line's relay is a process
//! of its own that outlives `lab up`, delays for real, and ends with `lab down`. Needs root and
//! iproute2 (skips without, fails under CI).

use std::process::Command;

use crate::measure_common::wait_until;
use crate::need;

fn ws() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wirespeed"))
}

/// Removes the lab if the test ends early.
struct Down(String);

impl Drop for Down {
    fn drop(&mut self) {
        wirespeed_lab::remove(&self.0);
    }
}

/// A process that ended: gone, or a zombie its new parent has not reaped yet.
fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            == Some("Z")
    })
}

#[test]
fn a_delayed_lab_keeps_its_relay_until_lab_down() {
    let me = "a_delayed_lab_keeps_its_relay_until_lab_down";
    if let Err(e) = wirespeed_lab::check_can_run(false) {
        need::unavailable(me, &e.to_string());
        return;
    }
    let name = wirespeed_lab::unique_name("wslc");
    let _down = Down(name.clone());
    let up = ws()
        .args(["lab", "up", "--name", &name, "--delay", "20"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&up.stdout).into_owned();
    assert!(
        up.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&up.stderr)
    );
    if text.contains("(netem)") {
        eprintln!("SKIP: {me} because this kernel has netem (netem delays, no relay)");
        return;
    }
    // "... where relay process PID holds each packet 10 ms"
    let pid: u32 = text
        .split("relay process ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no relay pid in: {text}"));
    assert!(!ended(pid), "the relay ended with `lab up`: {text}");
    let status = ws()
        .args(["lab", "status", "--name", &name])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("delay line: a relay is attached"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    let ping = ws()
        .args(["lab", "exec", "--name", &name, "client", "--"])
        .args(["ping", "-c3", "-i0.2", "-W2", "10.77.3.2"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&ping.stdout);
    assert!(ping.status.success(), "{out}");
    // `rtt min/avg/max/mdev = 20.3/...`: nothing comes back before 10 ms each way
    let min: f64 = out
        .lines()
        .find(|l| l.contains("min/avg/max"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().split('/').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no rtt line: {out}"));
    assert!(min >= 20.0, "{min} ms through a 20 ms delay line: {out}");
    let down = ws()
        .args(["lab", "down", "--name", &name])
        .output()
        .unwrap();
    assert!(down.status.success());
    wait_until("the relay ends after lab down", || ended(pid));
    assert!(wirespeed_lab::existing(&name).is_empty());
}

#[test]
fn a_relay_without_its_lab_is_refused_with_one_line() {
    let me = "a_relay_without_its_lab_is_refused_with_one_line";
    if let Err(e) = wirespeed_lab::check_can_run(false) {
        need::unavailable(me, &e.to_string());
        return;
    }
    let name = wirespeed_lab::unique_name("wslr");
    let out = ws()
        .args(["lab", "relay", "--name", &name, "--delay", "20"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("no namespace '{name}-r1'")), "{err}");
}
