//! Text from a peer or a file, made safe for a terminal.
//!
//! Every string that came from the network, a result file or a snapshot and is printed to a
//! terminal (stdout, stderr, a log line) goes through [`terminal`] (or [`terminal_short`] where
//! it may be long, such as a name from an archive; [`terminal_lines`] for text of several lines): control characters — terminal escapes
//! (`ESC`, `CSI`), carriage returns, bell, NUL, line ends — are written as Rust escapes
//! (`\u{1b}`) so that the text cannot retitle the window, clear the screen or forge a line.
//! The HTML page has its own escaping (`wirespeed_report::html::esc`); Prometheus labels
//! theirs (the agent's `expo`). One function per kind of sink, used everywhere.

use std::borrow::Cow;

/// `s` with control characters (terminal escapes, newlines, NUL) written as Rust escapes
/// (`\u{1b}`), everything else as is. Borrowed when there is nothing to escape.
pub fn terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`terminal`] for text of several lines (a server's `--get-server-output` text): line
/// feeds and tabs stay, every other control character (a carriage return too, which could
/// overwrite a line) is escaped.
pub fn terminal_lines(s: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`terminal`] of at most the first `max` characters of `s`; a longer `s` ends in
/// `…(N bytes)` with its whole length, so that a name of a gigabyte prints as one short line.
pub fn terminal_short(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => terminal(s).into_owned(),
        Some((cut, _)) => format!("{}…({} bytes)", terminal(&s[..cut]), s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_shortens() {
        assert_eq!(terminal("a\tb\nc"), "a\\tb\\nc");
        assert_eq!(terminal("\u{1b}]0;x\u{7}"), "\\u{1b}]0;x\\u{7}");
        assert_eq!(terminal("\u{9b}2J"), "\\u{9b}2J");
        assert!(matches!(terminal("plain"), Cow::Borrowed("plain")));
        assert_eq!(terminal_lines("a\tb\nc\r\u{1b}[2J"), "a\tb\nc\\r\\u{1b}[2J");
        assert_eq!(terminal_short("abc", 3), "abc");
        assert_eq!(terminal_short("abcdef", 3), "abc…(6 bytes)");
        assert_eq!(terminal_short("\u{1b}bcdef", 2), "\\u{1b}b…(6 bytes)");
        assert_eq!(terminal_short("ééé", 1), "é…(6 bytes)");
    }
}
