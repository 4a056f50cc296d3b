//! What a test needs from this machine beyond the binary: a peer (Debian's iperf3), a privilege
//! (root, network namespaces) or a tool (iproute2, setpriv). One rule for all of them: when it is
//! missing the test prints `SKIP: <test> because <why>` (and adds it to the list scripts/test
//! prints at the end) and passes, except under CI (the `CI` environment variable is set), where
//! `.ci/run` has installed everything and runs as root, so a missing peer or privilege is a
//! failure of the CI machine, never a silent pass.
//!
//! Skips for what no machine can be asked for (a second CPU, a kernel-managed IRQ) are plain
//! `SKIP:` lines in the tests themselves.

#![allow(dead_code)]

use std::process::Command;

/// `true` when the `CI` environment variable is set (to anything but an empty string).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// The one place a test gives up for lack of a peer, privilege or tool: panics under CI,
/// otherwise prints `SKIP: <test> because <why>` (shown with `--nocapture`).
pub fn unavailable(test: &str, why: &str) {
    if in_ci() {
        panic!("{test} cannot run because {why}, and under CI (CI is set) every test must run");
    }
    eprintln!("SKIP: {test} because {why}");
    // The test harness captures stderr of passing tests; scripts/test names a file here and
    // lists its lines after the run, so skips are seen without --nocapture.
    if let Some(path) = std::env::var_os("WIRESPEED_TEST_SKIPS") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(path) {
            let _ = writeln!(f, "{test}: {why}");
        }
    }
}

/// `true` if Debian's iperf3 runs here; otherwise [`unavailable`] (skip, or fail under CI).
pub fn iperf3(test: &str) -> bool {
    match Command::new("iperf3").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            unavailable(test, "iperf3 is not installed (apt-get install iperf3)");
            false
        }
    }
}

/// `true` if the repository's iperf3 3.21 (`tests/peers`) runs here; otherwise [`unavailable`].
pub fn iperf3_latest(test: &str) -> bool {
    let path = crate::measure_common::iperf3_latest();
    // starts: by path (the repository's iperf3 3.21, tests/peers)
    match Command::new(&path).arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            unavailable(test, &format!("{} does not run here", path.display()));
            false
        }
    }
}

/// `true` when this process runs as root; otherwise [`unavailable`].
pub fn root(test: &str) -> bool {
    let uid = Command::new("id").arg("-u").output();
    if uid.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0") {
        return true;
    }
    unavailable(test, "it needs root");
    false
}

/// `true` when `program` runs here (`program <version_arg>` starts); otherwise [`unavailable`].
pub fn tool(test: &str, program: &str, version_arg: &str, package: &str) -> bool {
    // starts: by path (its callers name the program, and the setup test reads them there)
    if Command::new(program).arg(version_arg).output().is_ok() {
        return true;
    }
    unavailable(
        test,
        &format!("`{program}` is missing (apt-get install {package})"),
    );
    false
}
