//! Feed one hostile results message (as big as the cap allows) to the decoder, so that the
//! peak memory it costs can be measured from outside, e.g.:
//!
//! ```text
//! cargo build --release -p wirespeed-protocol --example results_rss
//! /usr/bin/time -v target/release/examples/results_rss array   # or: objects, nested
//! ```
//!
//! Kinds: `array` (`server_output_json` holding millions of zeros), `objects` (millions of
//! one-key objects), `nested` (deep nesting), `at-cap` (as many one-key objects as the
//! value cap lets through, then one long string up to the byte cap: the most memory an
//! accepted message can cost). It prints what the decoder answered.
//!
//! A second argument `server` decodes as a server reads a client's results (with the
//! client-results caps) instead of as a client reads a server's.

use wirespeed_protocol::frame::{
    LEN_PREFIX, MAX_CLIENT_RESULTS_LEN, MAX_CLIENT_RESULTS_TOKENS, MAX_JSON_TOKENS, MAX_RESULTS_LEN,
};
use wirespeed_protocol::TestResults;

fn main() {
    let kind = std::env::args().nth(1).unwrap_or_else(|| "array".into());
    let server = std::env::args().nth(2).as_deref() == Some("server");
    let (cap, tokens) = if server && kind == "at-cap" {
        (MAX_CLIENT_RESULTS_LEN as usize, MAX_CLIENT_RESULTS_TOKENS)
    } else {
        (MAX_RESULTS_LEN as usize, MAX_JSON_TOKENS)
    };
    let head = br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[],"server_output_json":{"x":["#;
    // One buffer, as the receiver holds it: the length prefix, then the JSON.
    let mut frame = vec![0u8; LEN_PREFIX];
    frame.extend_from_slice(head);
    let (unit, tail): (&[u8], &[u8]) = match kind.as_str() {
        "objects" => (b"{\"a\":0},", b"{}]}}"),
        "nested" => (b"[", b""),
        _ => (b"0,", b"0]}}"),
    };
    frame.reserve_exact(cap + LEN_PREFIX - frame.len());
    if kind == "at-cap" {
        for _ in 0..(tokens / 3 - 16) {
            frame.extend_from_slice(b"{\"a\":0},");
        }
        frame.push(b'"');
        frame.resize(cap + LEN_PREFIX - 8, b'y');
        frame.extend_from_slice(b"\"]}}");
    } else {
        while frame.len() + unit.len() + tail.len() + 64 < cap {
            frame.extend_from_slice(unit);
        }
        frame.extend_from_slice(tail);
    }
    let len = (frame.len() - LEN_PREFIX) as u32;
    frame[..LEN_PREFIX].copy_from_slice(&len.to_be_bytes());
    let decoded = if server {
        TestResults::decode_client_frame(&frame)
    } else {
        TestResults::decode_frame(&frame)
    };
    match decoded {
        Ok((r, n)) => println!("{kind}: accepted {n} bytes ({} streams)", r.streams.len()),
        Err(e) => println!("{kind}: refused: {e}"),
    }
}
