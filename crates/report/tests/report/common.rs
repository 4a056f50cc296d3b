//! Helpers shared by the report crate's integration tests: the recorded iperf3 output in
//! tests/data and the layout comparison of rendered text with it.

#![allow(dead_code)]

use std::path::PathBuf;

use wirespeed_report::text::{render_text, TextOptions};
use wirespeed_report::TestResult;

/// A file of tests/data (recorded iperf3 output, see tests/data/README.md).
pub fn data(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "data", name]
        .iter()
        .collect();
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `result` rendered as iperf3-style text with the default options.
pub fn text(result: &TestResult) -> String {
    let mut out = Vec::new();
    render_text(&mut out, result, TextOptions::default()).unwrap();
    String::from_utf8(out).unwrap()
}

/// A line's labels and where they end: the columns of iperf3's layout.
/// Numbers are left out (they differ between two runs), unit prefixes are
/// folded (`KBytes`/`MBytes` → `Bytes`), and ports are not compared.
pub fn skeleton(line: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut col = 0;
    for tok in line.split_inclusive(' ') {
        let word = tok.trim_end_matches(' ');
        let end = col + word.len();
        col += tok.len();
        if word.is_empty() || word.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let folded = word.trim_start_matches(['K', 'M', 'G', 'T']);
        out.push((
            if folded.is_empty() { word } else { folded }.to_string(),
            end,
        ));
    }
    out
}

/// `ours` has the lines of `real` in the same order, every label ending in the same column and
/// every line as wide.
pub fn assert_same_layout(name: &str, real: &str, ours: &str) {
    let a: Vec<&str> = real.lines().collect();
    let b: Vec<&str> = ours.lines().collect();
    assert_eq!(
        a.len(),
        b.len(),
        "{name}: line count\nreal:\n{real}\nours:\n{ours}"
    );
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            skeleton(x),
            skeleton(y),
            "{name} line {}:\nreal: {x:?}\nours: {y:?}\n--- ours:\n{ours}",
            i + 1
        );
        assert_eq!(
            x.len(),
            y.len(),
            "{name} line {} width:\n{x:?}\n{y:?}",
            i + 1
        );
    }
}
