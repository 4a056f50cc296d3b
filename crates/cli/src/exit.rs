//! Exit codes, one per kind of failure, and the one-line error report.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (doctor: no finding at or above `--fail-on`, default warning) |
//! | 1 | doctor: a finding at or above `--fail-on` (info, warning, critical; default warning); tune revert: values left alone because someone changed them, or journal lines it could not read |
//! | 2 | bad command line or flag value |
//! | 3 | could not reach the peer: unreachable, refused, connect timeout |
//! | 4 | the server refused the test (busy, over a limit, access denied) |
//! | 5 | the peer vanished or broke the protocol during a test |
//! | 6 | host state forbids it: offline CPU, unknown interface, no privilege to write, another tune run holds the root |
//! | 7 | local I/O: a file, snapshot or journal could not be read or written |
//! | 8 | a document (JSON result given to `report` or `diff`) is not one wirespeed reads: not JSON, unknown kind, too large, or two kinds `diff` cannot compare |
//! | 9 | `diff --threshold`: the results differ by more than the threshold |
//! | 70 | internal error (a bug) |
//! | 130 | client interrupted (SIGINT/SIGTERM), as a shell reports a process ended by SIGINT; a server stopped by a signal exits 0 |
//!
//! [`engine_code`] is the one mapping of the engine's errors onto this table.
//!
//! A client or server writing JSON (`-J`, `--json-stream`) follows iperf3 instead: every
//! failure exits 1 and nothing goes to stderr (the document's `error` key carries the
//! message, so `... -J 2>&1 | jq` keeps working). See [`Style`].

use std::fmt;

use wirespeed_engine::EngineError;

pub const OK: u8 = 0;
pub const FINDINGS: u8 = 1;
pub const USAGE: u8 = 2;
pub const CONNECT: u8 = 3;
pub const REFUSED: u8 = 4;
pub const PEER: u8 = 5;
pub const HOST: u8 = 6;
pub const IO: u8 = 7;
pub const DOCUMENT: u8 = 8;
pub const CHANGED: u8 = 9;
pub const INTERNAL: u8 = 70;
pub const INTERRUPTED: u8 = 130;

/// What each exit status means: the README's table and the man pages' EXIT STATUS.
pub const MEANINGS: &[(u8, &str)] = &[
    (OK, "success (doctor: nothing at or above --fail-on)"),
    (
        FINDINGS,
        "doctor: findings at or above --fail-on (default warning); tune revert: values left alone because someone else changed them, or journal lines it could not read",
    ),
    (USAGE, "bad command line or flag value"),
    (CONNECT, "could not reach the peer: unreachable, refused, connect timeout"),
    (REFUSED, "the server refused the test (busy, over a limit, access denied)"),
    (PEER, "the peer vanished or broke the protocol during a test"),
    (
        HOST,
        "host state forbids it: offline CPU, unknown interface, no privilege to write, another tune run holds the root",
    ),
    (IO, "local I/O: a file, snapshot or journal could not be read or written"),
    (
        DOCUMENT,
        "a JSON document given to report or diff is not one wirespeed reads (not JSON, unknown kind, too large), or diff got two kinds",
    ),
    (
        CHANGED,
        "diff --threshold: a headline figure moved past the threshold, or a doctor finding appeared",
    ),
    (INTERNAL, "an internal error: a bug in wirespeed (please report it)"),
    (
        INTERRUPTED,
        "client interrupted (SIGINT/SIGTERM; it prints the partial summary first); a server stopped by SIGINT/SIGTERM exits 0",
    ),
];

/// How a client or server writing JSON exits instead.
pub const JSON_EXIT: &str = "A client or server writing JSON (-J, --json-stream) exits as iperf3 does instead: 1 on any failure, with nothing on stderr (the document's error key says why).";

/// iperf3's exit status for every failure.
pub const IPERF3_FAILURE: u8 = 1;

/// How a failure is reported when the command ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `wirespeed: message` on stderr, the code from the table above.
    Wirespeed,
    /// JSON output: exit 1; the message goes into the document (a minimal one is printed on
    /// stdout when the failure came before the report's own document), nothing on stderr.
    Iperf3Json,
    /// Strict iperf3 mode, text output: `iperf3: error - message` on stderr, exit 1.
    Iperf3Text,
}

impl Style {
    /// The style of a client or server: JSON output (`-J`, `--json-stream`) fails as iperf3
    /// does whatever the mode; text in strict iperf3 mode in iperf3's words; else wirespeed's.
    pub fn of_output(json: bool, strict: bool) -> Style {
        if json {
            Style::Iperf3Json
        } else if strict {
            Style::Iperf3Text
        } else {
            Style::Wirespeed
        }
    }
}

/// An error that knows its exit code. Wrap a failure in it (`Fail::new(exit::HOST, ...)` or
/// `.context(...)` over it) where the code matters; anything else exits with `INTERNAL`.
#[derive(Debug)]
pub struct Fail {
    pub code: u8,
    pub message: String,
    /// The failure is already in the printed report (its `error` key).
    pub reported: bool,
}

impl Fail {
    pub fn new(code: u8, message: impl Into<String>) -> Fail {
        Fail {
            code,
            message: message.into(),
            reported: false,
        }
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}

/// Shorthand: `return Err(fail(exit::USAGE, "..."))`.
pub fn fail(code: u8, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Fail::new(code, message))
}

/// The exit code of an engine error.
pub fn engine_code(e: &EngineError) -> u8 {
    match e {
        EngineError::Config(_) => USAGE,
        EngineError::Host(_) | EngineError::Listen { .. } => HOST,
        EngineError::Connect { .. } => CONNECT,
        EngineError::Refused(_) => REFUSED,
        EngineError::Peer(_) => PEER,
        EngineError::Interrupted => INTERRUPTED,
        EngineError::Io { .. } => IO,
    }
}

/// An engine error as a [`Fail`] with its exit code and message.
pub fn engine_fail(e: EngineError) -> anyhow::Error {
    fail(engine_code(&e), e.to_string())
}

/// A failure whose report (with the error in it) was already printed.
pub fn reported(code: u8, message: impl Into<String>) -> anyhow::Error {
    let mut f = Fail::new(code, message);
    f.reported = true;
    anyhow::Error::new(f)
}

/// An engine error whose report (with the error in it) was already printed.
pub fn engine_reported(e: EngineError) -> anyhow::Error {
    reported(engine_code(&e), e.to_string())
}

/// Whether the report already carries the failure.
pub fn was_reported(e: &anyhow::Error) -> bool {
    e.chain()
        .find_map(|c| c.downcast_ref::<Fail>().map(|f| f.reported))
        .unwrap_or(false)
}

/// The exit code carried by the first `Fail` in the error's chain.
pub fn code_of(e: &anyhow::Error) -> u8 {
    e.chain()
        .find_map(|c| c.downcast_ref::<Fail>().map(|f| f.code))
        .unwrap_or(INTERNAL)
}

/// The whole chain on one line: `context: cause: root cause`.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.ends_with(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// What writing to stdout came to: done, or a reader that went away (`| head`: not an error,
/// as for iperf3 and coreutils), or a failure (`IO`).
pub fn stdout_written(r: std::io::Result<()>) -> anyhow::Result<()> {
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(fail(IO, format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_failure_style_follows_the_output_and_the_mode() {
        assert_eq!(Style::of_output(false, false), Style::Wirespeed);
        assert_eq!(Style::of_output(false, true), Style::Iperf3Text);
        assert_eq!(Style::of_output(true, false), Style::Iperf3Json);
        assert_eq!(Style::of_output(true, true), Style::Iperf3Json);
    }

    #[test]
    fn code_survives_context_and_message_is_one_line() {
        let e: anyhow::Result<()> = Err(fail(HOST, "CPU 7 is offline"));
        let e = e.context("pinning worker").unwrap_err();
        assert_eq!(code_of(&e), HOST);
        assert_eq!(one_line(&e), "pinning worker: CPU 7 is offline");
        assert_eq!(code_of(&anyhow::anyhow!("x\ny")), INTERNAL);
        assert_eq!(one_line(&anyhow::anyhow!("x\ny")), "x y");
    }
}
