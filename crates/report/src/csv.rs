//! CSV for spreadsheets and plotting tools: a test (one row per interval and stream, plus the
//! interval's sum as stream `sum`), a `--repeat` (one row per run), a sweep (one row per cell),
//! a latency matrix (one row per measured pair). A doctor report has no CSV form.
//! The header names carry the units (`_s`, `_bytes`, `_bits_per_second`, `_us`).
//!
//! Every CSV wirespeed writes goes through [`write_record`], so one rule keeps text a peer or a
//! file controls (a sweep cell's `error`, and any text column) from running in a spreadsheet:
//! [`text_cell`]. Numbers are [`Cell`]s of their own, written as they are (a negative number
//! stays a number); only text cells are neutralised.

use std::borrow::Cow;
use std::io;

use crate::doc::{headline_throughput, Document, Kind, RepeatDoc, SweepDoc};
use crate::model::{IntervalStats, TestResult};
use wirespeed_model::doc::LatencyMatrix;

/// Why a document has no CSV form.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("a {0} document has no CSV form (tests, repeats, sweeps and latency matrices do)")]
    Unsupported(Kind),
    #[error(transparent)]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The first characters that make a spreadsheet read a cell as a formula (OWASP's list for
/// CSV injection): `=`, `+`, `-`, `@`, a tab and a carriage return.
pub const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A text cell as OWASP recommends against CSV injection: one that starts with a character of
/// [`FORMULA_STARTS`] gets a single quote in front (`=HYPERLINK(…)` → `'=HYPERLINK(…)`), which
/// spreadsheets show as text and never evaluate; every other text is unchanged. This is the
/// rule's only place: every CSV writer passes its text cells through it (by [`Cell::text`]),
/// and never its numbers.
pub fn text_cell(s: &str) -> Cow<'_, str> {
    if s.starts_with(FORMULA_STARTS) {
        Cow::Owned(format!("'{s}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// One cell of a record: a number (written as it is) or text (neutralised by [`text_cell`]
/// and quoted where it must be).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Digits as formatted from a number (empty for a missing value).
    Number(String),
    Text(String),
}

/// Integer types a [`Cell::number`] takes: only numbers reach a cell unneutralised.
pub trait Integer: std::fmt::Display {}
macro_rules! integers { ($($t:ty),*) => { $(impl Integer for $t {})* } }
integers!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    pub fn number(n: impl Integer) -> Cell {
        Cell::Number(n.to_string())
    }
    /// A float with at most six decimals, trailing zeros dropped; empty when not finite.
    pub fn float(v: f64) -> Cell {
        Cell::Number(f(v))
    }
    /// A float with exactly `decimals` decimals; empty when not finite.
    pub fn fixed(v: f64, decimals: usize) -> Cell {
        Cell::Number(if v.is_finite() {
            format!("{v:.decimals$}")
        } else {
            String::new()
        })
    }
    /// A missing value: an empty cell.
    pub fn empty() -> Cell {
        Cell::Number(String::new())
    }
    /// `Some` number or an empty cell.
    pub fn opt_number(n: Option<impl Integer>) -> Cell {
        n.map_or_else(Cell::empty, Cell::number)
    }
    pub fn opt_text(s: Option<impl Into<String>>) -> Cell {
        s.map_or_else(Cell::empty, Cell::text)
    }
}

/// Write one record: cells joined by commas, a newline after. A text cell is [`text_cell`]'s
/// form, in double quotes (its own doubled) when it was neutralised or holds a quote, a comma
/// or a line break; a number is written bare.
pub fn write_record<W: io::Write + ?Sized>(w: &mut W, cells: &[Cell]) -> io::Result<()> {
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        match c {
            Cell::Number(n) => line.push_str(n),
            Cell::Text(t) => {
                let safe = text_cell(t);
                let neutralised = matches!(safe, Cow::Owned(_));
                if neutralised || safe.contains(['"', ',', '\r', '\n']) {
                    line.push('"');
                    line.push_str(&safe.replace('"', "\"\""));
                    line.push('"');
                } else {
                    line.push_str(&safe);
                }
            }
        }
    }
    line.push('\n');
    w.write_all(line.as_bytes())
}

/// A header: every name a text cell.
fn header<W: io::Write + ?Sized>(w: &mut W, names: &[&str]) -> io::Result<()> {
    let cells: Vec<Cell> = names.iter().map(|n| Cell::text(*n)).collect();
    write_record(w, &cells)
}

/// Write `doc` as CSV to `w`.
pub fn render<W: io::Write + ?Sized>(doc: &Document, w: &mut W) -> Result<(), CsvError> {
    match doc {
        Document::Test(t) => test(t, w),
        Document::Repeat(r) => repeat(r, w),
        Document::Sweep(s) => sweep(s, w),
        Document::Latency(l) => Ok(latency(&l.matrix, w)?),
        other => Err(CsvError::Unsupported(other.kind())),
    }
}

/// A latency matrix: one line per measured pair (lower triangle); `samples` is the pair's own count (every
/// round's), `noisy` whether its standard error stayed above the threshold.
pub fn latency<W: io::Write + ?Sized>(m: &LatencyMatrix, w: &mut W) -> io::Result<()> {
    let header = [
        "cpu_a",
        "cpu_b",
        "mean_ns",
        "stderr_ns",
        "samples",
        "round_trips",
        "noisy",
    ];
    write_record(w, &header.map(Cell::text))?;
    for (i, ci) in m.cpus.iter().enumerate() {
        for (j, cj) in m.cpus.iter().enumerate().take(i) {
            if let Some(p) = m.matrix[i][j] {
                write_record(
                    w,
                    &[
                        Cell::number(ci),
                        Cell::number(cj),
                        Cell::fixed(p.mean_ns, 2),
                        Cell::fixed(p.stderr_ns, 2),
                        Cell::number(p.samples),
                        Cell::number(m.round_trips),
                        Cell::text(p.noisy.to_string()),
                    ],
                )?;
            }
        }
    }
    Ok(())
}

fn f(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s.is_empty() || s == "-" {
            "0".into()
        } else {
            s.to_string()
        }
    } else {
        String::new()
    }
}

/// One row per interval and stream, then the interval's sum.
pub fn test<W: io::Write + ?Sized>(t: &TestResult, w: &mut W) -> Result<(), CsvError> {
    let mut w = io::BufWriter::new(w);
    header(
        &mut w,
        &[
            "stream",
            "start_s",
            "end_s",
            "bytes",
            "bits_per_second",
            "retransmits",
            "snd_cwnd_bytes",
            "rtt_us",
            "rttvar_us",
            "lost_packets",
            "jitter_ms",
            "omitted",
            "sender",
        ],
    )?;
    let row = |w: &mut dyn io::Write, id: Cell, s: &IntervalStats| {
        write_record(
            w,
            &[
                id,
                Cell::float(s.start),
                Cell::float(s.end),
                Cell::number(s.bytes),
                Cell::float(s.bits_per_second),
                Cell::opt_number(s.retransmits),
                Cell::opt_number(s.snd_cwnd),
                Cell::opt_number(s.rtt),
                Cell::opt_number(s.rttvar),
                Cell::opt_number(s.lost_packets),
                s.jitter_ms.map_or_else(Cell::empty, Cell::float),
                Cell::text(s.omitted.to_string()),
                Cell::text(s.sender.to_string()),
            ],
        )
    };
    for iv in &t.intervals {
        for s in &iv.streams {
            row(&mut w, Cell::opt_number(s.socket), s)?;
        }
        row(&mut w, Cell::text("sum"), &iv.sum)?;
        if let Some(r) = &iv.sum_bidir_reverse {
            row(&mut w, Cell::text("sum_reverse"), r)?;
        }
    }
    io::Write::flush(&mut w)?;
    Ok(())
}

/// One row per run.
pub fn repeat<W: io::Write + ?Sized>(r: &RepeatDoc, w: &mut W) -> Result<(), CsvError> {
    let mut w = io::BufWriter::new(w);
    header(
        &mut w,
        &[
            "run",
            "bits_per_second",
            "retransmits",
            "mode",
            "mode_median_bits_per_second",
            "verdict",
            "placement",
        ],
    )?;
    for (i, t) in r.runs.iter().enumerate() {
        let run = i + 1;
        let mode = r.mode_of(run);
        write_record(
            &mut w,
            &[
                Cell::number(run),
                headline_throughput(t).map_or_else(Cell::empty, Cell::float),
                Cell::opt_number(t.end.sum_sent.as_ref().and_then(|s| s.retransmits)),
                Cell::opt_number(mode.map(|m| m + 1)),
                mode.map_or_else(Cell::empty, |m| {
                    Cell::float(r.repeat.modes[m].stats.median.0)
                }),
                Cell::opt_text(
                    t.wirespeed
                        .as_ref()
                        .and_then(|w| w.verdict.as_ref())
                        .map(|v| v.id.to_string()),
                ),
                Cell::opt_text(crate::diff::placement(t)),
            ],
        )?;
    }
    io::Write::flush(&mut w)?;
    Ok(())
}

/// One row per cell.
pub fn sweep<W: io::Write + ?Sized>(s: &SweepDoc, w: &mut W) -> Result<(), CsvError> {
    let mut w = io::BufWriter::new(w);
    let (rl, cl) = s.matrix.axes.labels();
    let rl = rl.replace(' ', "_").to_lowercase();
    let cl = cl.replace(' ', "_").to_lowercase();
    header(
        &mut w,
        &[
            rl.as_str(),
            cl.as_str(),
            "median_bits_per_second",
            "runs",
            "run_bits_per_second",
            "error",
        ],
    )?;
    for (i, r) in s.matrix.rows.iter().enumerate() {
        for (j, col) in s.matrix.cols.iter().enumerate() {
            let cell = s.matrix.cells.get(i).and_then(|x| x.get(j));
            let runs = cell.map(|x| x.runs.as_slice()).unwrap_or_default();
            // One run is a number; several are a list (`1;2;3`), a text cell.
            let run_cell = match runs {
                [] => Cell::empty(),
                [one] => Cell::float(*one),
                many => Cell::text(many.iter().map(|v| f(*v)).collect::<Vec<_>>().join(";")),
            };
            write_record(
                &mut w,
                &[
                    Cell::number(r),
                    Cell::number(col),
                    cell.and_then(|x| x.median)
                        .map_or_else(Cell::empty, Cell::float),
                    Cell::number(cell.map(|x| x.runs.len()).unwrap_or(0)),
                    run_cell,
                    Cell::opt_text(cell.and_then(|x| x.error.clone())),
                ],
            )?;
        }
    }
    io::Write::flush(&mut w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cells: &[Cell]) -> String {
        let mut out = Vec::new();
        write_record(&mut out, cells).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_that_starts_a_formula_is_neutralised_and_quoted() {
        for (planted, written) in [
            (
                "=HYPERLINK(\"http://x\",\"y\")",
                "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"",
            ),
            ("-1+cmd|' /C calc'!A0", "\"'-1+cmd|' /C calc'!A0\""),
            ("@SUM(1)", "\"'@SUM(1)\""),
            ("+1", "\"'+1\""),
            ("\t=1", "\"'\t=1\""),
            ("\r=1", "\"'\r=1\""),
        ] {
            assert_eq!(line(&[Cell::text(planted)]), format!("{written}\n"));
        }
        // text that starts otherwise is unchanged, quoted only where CSV needs it
        assert_eq!(
            line(&[Cell::text("sum"), Cell::text("a,b")]),
            "sum,\"a,b\"\n"
        );
        assert_eq!(line(&[Cell::text("a=1")]), "a=1\n");
        assert_eq!(text_cell("x"), "x");
    }

    #[test]
    fn numbers_stay_numbers() {
        assert_eq!(
            line(&[
                Cell::number(-5i64),
                Cell::float(-1.5),
                Cell::fixed(-2.0, 2),
                Cell::empty(),
                Cell::float(f64::NAN),
            ]),
            "-5,-1.5,-2.00,,\n"
        );
    }
}
