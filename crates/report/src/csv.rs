//! CSV for spreadsheets and plotting tools: a test (one row per interval and stream, plus the
//! interval's sum as stream `sum`), a `--repeat` (one row per run), a sweep (one row per cell).
//! The header names carry the units (`_s`, `_bytes`, `_bits_per_second`, `_us`).

use std::io;

use crate::doc::{headline_throughput, Document, Kind, RepeatDoc, SweepDoc};
use crate::model::{IntervalStats, TestResult};

/// Why a document has no CSV form.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("a {0} document has no CSV form here (tests, repeats and sweeps do; latency --csv writes its own)")]
    Unsupported(Kind),
    #[error(transparent)]
    Csv(#[from] csv::Error),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Write `doc` as CSV to `w`.
pub fn render(doc: &Document, w: &mut dyn io::Write) -> Result<(), CsvError> {
    match doc {
        Document::Test(t) => test(t, w),
        Document::Repeat(r) => repeat(r, w),
        Document::Sweep(s) => sweep(s, w),
        other => Err(CsvError::Unsupported(other.kind())),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
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
pub fn test(t: &TestResult, w: &mut dyn io::Write) -> Result<(), CsvError> {
    let mut c = csv::Writer::from_writer(w);
    c.write_record([
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
    ])?;
    let row = |c: &mut csv::Writer<&mut dyn io::Write>, id: String, s: &IntervalStats| {
        c.write_record([
            id,
            f(s.start),
            f(s.end),
            s.bytes.to_string(),
            f(s.bits_per_second),
            opt(s.retransmits),
            opt(s.snd_cwnd),
            opt(s.rtt),
            opt(s.rttvar),
            opt(s.lost_packets),
            s.jitter_ms.map(f).unwrap_or_default(),
            s.omitted.to_string(),
            s.sender.to_string(),
        ])
    };
    for iv in &t.intervals {
        for s in &iv.streams {
            row(&mut c, opt(s.socket), s)?;
        }
        row(&mut c, "sum".into(), &iv.sum)?;
        if let Some(r) = &iv.sum_bidir_reverse {
            row(&mut c, "sum_reverse".into(), r)?;
        }
    }
    c.flush()?;
    Ok(())
}

/// One row per run.
pub fn repeat(r: &RepeatDoc, w: &mut dyn io::Write) -> Result<(), CsvError> {
    let mut c = csv::Writer::from_writer(w);
    c.write_record([
        "run",
        "bits_per_second",
        "retransmits",
        "mode",
        "mode_median_bits_per_second",
        "verdict",
        "placement",
    ])?;
    for (i, t) in r.runs.iter().enumerate() {
        let run = i + 1;
        let mode = r.mode_of(run);
        c.write_record([
            run.to_string(),
            headline_throughput(t).map(f).unwrap_or_default(),
            opt(t.end.sum_sent.as_ref().and_then(|s| s.retransmits)),
            opt(mode.map(|m| m + 1)),
            opt(mode.map(|m| f(r.repeat.modes[m].stats.median.0))),
            opt(t
                .wirespeed
                .as_ref()
                .and_then(|w| w.verdict.as_ref())
                .map(|v| v.id.to_string())),
            opt(crate::diff::placement(t)),
        ])?;
    }
    c.flush()?;
    Ok(())
}

/// One row per cell.
pub fn sweep(s: &SweepDoc, w: &mut dyn io::Write) -> Result<(), CsvError> {
    let mut c = csv::Writer::from_writer(w);
    let (rl, cl) = s.matrix.axes.labels();
    let rl = rl.replace(' ', "_").to_lowercase();
    let cl = cl.replace(' ', "_").to_lowercase();
    c.write_record([
        rl.as_str(),
        cl.as_str(),
        "median_bits_per_second",
        "runs",
        "run_bits_per_second",
        "error",
    ])?;
    for (i, r) in s.matrix.rows.iter().enumerate() {
        for (j, col) in s.matrix.cols.iter().enumerate() {
            let cell = s.matrix.cells.get(i).and_then(|x| x.get(j));
            c.write_record([
                r.to_string(),
                col.to_string(),
                opt(cell.and_then(|x| x.median).map(f)),
                cell.map(|x| x.runs.len()).unwrap_or(0).to_string(),
                cell.map(|x| x.runs.iter().map(|v| f(*v)).collect::<Vec<_>>().join(";"))
                    .unwrap_or_default(),
                opt(cell.and_then(|x| x.error.clone())),
            ])?;
        }
    }
    c.flush()?;
    Ok(())
}
