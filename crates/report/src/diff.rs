//! What changed between two documents of the same kind: throughput, retransmits, placement and
//! verdict of tests; the median and modes of repeats; best and worst pairs of sweeps; latency
//! figures; findings added and gone of doctor reports.
//!
//! [`Diff::exceeds`] is the gate `wirespeed diff --threshold` exits on: a *gated* figure (the
//! headline throughput of a test, a repeat's median, a sweep's best pair, a latency matrix's
//! mean) moved by more than the threshold in either direction, or a doctor report gained a
//! finding.

use std::collections::BTreeSet;
use std::io;

use crate::doc::{Document, Kind};
use crate::model::TestResult;
use wirespeed_model::units::rate;

/// One difference.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub what: String,
    pub before: String,
    pub after: String,
    /// Relative change in percent, for numbers (None when the first value is zero or for text).
    pub pct: Option<f64>,
    pub higher_is_better: bool,
    /// Counts against the threshold.
    pub gated: bool,
}

/// Every difference found, in a fixed order.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub kinds: (Kind, Kind),
    pub changes: Vec<Change>,
    /// Doctor: finding ids (with their interface) only in the second document.
    pub added: Vec<String>,
    /// Doctor: finding ids only in the first document.
    pub gone: Vec<String>,
}

impl Diff {
    /// Whether the documents are of one kind (only then are figures compared).
    pub fn comparable(&self) -> bool {
        self.kinds.0 == self.kinds.1
    }

    /// Whether a gated figure moved by more than `threshold_pct` percent, or a finding appeared.
    pub fn exceeds(&self, threshold_pct: f64) -> bool {
        !self.added.is_empty()
            || self
                .changes
                .iter()
                .any(|c| c.gated && c.pct.is_some_and(|p| p.abs() > threshold_pct))
    }

    /// The changes as text, one per line.
    pub fn render_text(&self, w: &mut dyn io::Write) -> io::Result<()> {
        if !self.comparable() {
            return writeln!(
                w,
                "different kinds of document: {} and {}",
                self.kinds.0, self.kinds.1
            );
        }
        if self.changes.is_empty() && self.added.is_empty() && self.gone.is_empty() {
            return writeln!(w, "no difference");
        }
        // Every string here came from a file: escaped for the terminal.
        use wirespeed_model::text::terminal as t;
        for c in &self.changes {
            let (what, before, after) = (t(&c.what), t(&c.before), t(&c.after));
            match c.pct {
                Some(p) => writeln!(w, "{what}: {before} -> {after} ({p:+.1} %)")?,
                None => writeln!(w, "{what}: {before} -> {after}")?,
            }
        }
        for a in &self.added {
            writeln!(w, "finding added: {}", t(a))?;
        }
        for g in &self.gone {
            writeln!(w, "finding gone: {}", t(g))?;
        }
        Ok(())
    }
}

fn pct(a: f64, b: f64) -> Option<f64> {
    (a.is_finite() && b.is_finite() && a != 0.0).then(|| (b - a) / a.abs() * 100.0)
}

fn num(
    out: &mut Vec<Change>,
    what: &str,
    a: Option<f64>,
    b: Option<f64>,
    show: &dyn Fn(f64) -> String,
    higher_is_better: bool,
    gated: bool,
) {
    let (Some(a), Some(b)) = (a, b) else {
        if a.is_some() != b.is_some() {
            out.push(Change {
                what: what.into(),
                before: a.map(show).unwrap_or("–".into()),
                after: b.map(show).unwrap_or("–".into()),
                pct: None,
                higher_is_better,
                gated: false,
            });
        }
        return;
    };
    if show(a) == show(b) && !gated {
        return;
    }
    out.push(Change {
        what: what.into(),
        before: show(a),
        after: show(b),
        pct: pct(a, b),
        higher_is_better,
        gated,
    });
}

fn text(out: &mut Vec<Change>, what: &str, a: Option<String>, b: Option<String>) {
    if a != b {
        out.push(Change {
            what: what.into(),
            before: a.unwrap_or("–".into()),
            after: b.unwrap_or("–".into()),
            pct: None,
            higher_is_better: true,
            gated: false,
        });
    }
}

/// Where a test's work ran, as one line per end: `local 0 (asked 0); peer 1 (asked 1)`.
pub fn placement(t: &TestResult) -> Option<String> {
    let w = t.wirespeed.as_ref()?;
    let side = |ws: &[wirespeed_model::Worker]| -> Option<String> {
        if ws.is_empty() {
            return None;
        }
        let parts: Vec<String> = ws
            .iter()
            .map(|k| match k.cpu_requested {
                Some(c) => format!("CPU {c} (ran on {})", k.cpus_seen),
                None => format!("unpinned (ran on {})", k.cpus_seen),
            })
            .collect();
        Some(parts.join(", "))
    };
    let mut s = Vec::new();
    if let Some(l) = side(&w.workers) {
        s.push(format!("local {l}"));
    }
    if let Some(r) = side(&w.remote_workers) {
        s.push(format!("peer {r}"));
    }
    (!s.is_empty()).then(|| s.join("; "))
}

fn retransmits(t: &TestResult) -> Option<f64> {
    t.end
        .sum_sent
        .as_ref()
        .and_then(|s| s.retransmits)
        .map(|r| r as f64)
}

fn count(v: f64) -> String {
    format!("{v:.0}")
}

fn test(out: &mut Vec<Change>, a: &TestResult, b: &TestResult) {
    let tp = crate::doc::headline_throughput;
    num(out, "throughput", tp(a), tp(b), &rate, true, true);
    num(
        out,
        "retransmits",
        retransmits(a),
        retransmits(b),
        &count,
        false,
        false,
    );
    let streams = |t: &TestResult| {
        t.start
            .test_start
            .as_ref()
            .map(|s| s.num_streams.to_string())
    };
    text(out, "streams", streams(a), streams(b));
    text(out, "placement", placement(a), placement(b));
    let verdict = |t: &TestResult| {
        t.wirespeed
            .as_ref()
            .and_then(|w| w.verdict.as_ref())
            .map(|v| format!("{} ({})", v.id, v.line))
    };
    let (va, vb) = (verdict(a), verdict(b));
    let id = |t: &TestResult| {
        t.wirespeed
            .as_ref()
            .and_then(|w| w.verdict.as_ref())
            .map(|v| v.id.clone())
    };
    if id(a) != id(b) {
        text(out, "verdict", va, vb);
    }
}

/// Compare two documents.
pub fn diff(a: &Document, b: &Document) -> Diff {
    let mut d = Diff {
        kinds: (a.kind(), b.kind()),
        changes: Vec::new(),
        added: Vec::new(),
        gone: Vec::new(),
    };
    let out = &mut d.changes;
    match (a, b) {
        (Document::Test(a), Document::Test(b)) => test(out, a, b),
        (Document::Repeat(a), Document::Repeat(b)) => {
            let (sa, sb) = (&a.repeat.stats, &b.repeat.stats);
            num(
                out,
                "median throughput",
                Some(sa.median),
                Some(sb.median),
                &rate,
                true,
                true,
            );
            num(out, "min", Some(sa.min), Some(sb.min), &rate, true, false);
            num(out, "max", Some(sa.max), Some(sb.max), &rate, true, false);
            num(
                out,
                "spread (% of median)",
                Some(sa.spread),
                Some(sb.spread),
                &|v| format!("{v:.1}"),
                false,
                false,
            );
            text(
                out,
                "modes",
                Some(a.repeat.modes.len().to_string()),
                Some(b.repeat.modes.len().to_string()),
            );
            let mode0 = |r: &crate::doc::RepeatDoc| {
                r.repeat
                    .modes
                    .iter()
                    .max_by_key(|m| m.runs.len())
                    .map(|m| m.description.clone())
            };
            text(out, "largest mode", mode0(a), mode0(b));
        }
        (Document::Sweep(a), Document::Sweep(b)) => {
            let best = |s: &crate::doc::SweepDoc| s.summary.as_ref().and_then(|x| x.best);
            let worst = |s: &crate::doc::SweepDoc| s.summary.as_ref().and_then(|x| x.worst);
            num(
                out,
                "best pair's throughput",
                best(a).map(|p| p.median),
                best(b).map(|p| p.median),
                &rate,
                true,
                true,
            );
            num(
                out,
                "worst pair's throughput",
                worst(a).map(|p| p.median),
                worst(b).map(|p| p.median),
                &rate,
                true,
                false,
            );
            let (rl, cl) = a.matrix.labels();
            let pair = |p: Option<crate::doc::SweepPair>| {
                p.map(|p| format!("{rl} {}, {cl} {}", p.row, p.col))
            };
            text(out, "best pair", pair(best(a)), pair(best(b)));
            text(out, "worst pair", pair(worst(a)), pair(worst(b)));
        }
        (Document::Latency(a), Document::Latency(b)) => {
            let ns = |v: f64| format!("{v:.0} ns");
            num(out, "mean latency", a.mean_ns, b.mean_ns, &ns, false, true);
            num(
                out,
                "fastest pair",
                a.min.map(|p| p.mean_ns),
                b.min.map(|p| p.mean_ns),
                &ns,
                false,
                false,
            );
            num(
                out,
                "slowest pair",
                a.max.map(|p| p.mean_ns),
                b.max.map(|p| p.mean_ns),
                &ns,
                false,
                false,
            );
        }
        (Document::Doctor(a), Document::Doctor(b)) => {
            let ids = |r: &wirespeed_doctor::report::Report| -> BTreeSet<String> {
                r.findings
                    .iter()
                    .map(|f| match &f.iface {
                        Some(i) => format!("{} ({i})", f.id),
                        None => f.id.clone(),
                    })
                    .collect()
            };
            let (ia, ib) = (ids(a), ids(b));
            d.added = ib.difference(&ia).cloned().collect();
            d.gone = ia.difference(&ib).cloned().collect();
            for (what, x, y) in [
                ("critical findings", a.counts.critical, b.counts.critical),
                ("warnings", a.counts.warning, b.counts.warning),
                ("info findings", a.counts.info, b.counts.info),
            ] {
                if x != y {
                    d.changes.push(Change {
                        what: what.into(),
                        before: x.to_string(),
                        after: y.to_string(),
                        pct: None,
                        higher_is_better: false,
                        gated: false,
                    });
                }
            }
        }
        _ => {}
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Summary, WirespeedExt};
    use wirespeed_model::{CpuSet, Verdict, Worker};

    fn run(bps: f64, cpu: u32, verdict: &str) -> Document {
        let mut t = TestResult::default();
        t.end.sum_received = Some(Summary {
            bits_per_second: bps,
            ..Default::default()
        });
        t.wirespeed = Some(WirespeedExt {
            workers: vec![Worker {
                cpu_requested: Some(cpu),
                cpus_seen: CpuSet::from_cpus([cpu]),
                streams: vec![1],
                rx_zerocopy: None,
            }],
            verdict: Some(Verdict {
                id: verdict.into(),
                end: None,
                line: verdict.replace('-', " "),
                also: vec![],
                evidence: None,
            }),
            ..Default::default()
        });
        Document::Test(Box::new(t))
    }

    #[test]
    fn test_diff_names_throughput_placement_and_verdict() {
        let d = diff(
            &run(10e9, 0, "sender-cpu-bound"),
            &run(8e9, 1, "receiver-cpu-bound"),
        );
        let mut out = Vec::new();
        d.render_text(&mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains("throughput: 10.00 Gbit/s -> 8.00 Gbit/s (-20.0 %)"),
            "{out}"
        );
        assert!(
            out.contains("placement: local CPU 0 (ran on 0) -> local CPU 1 (ran on 1)"),
            "{out}"
        );
        assert!(out.contains("verdict: sender-cpu-bound"), "{out}");
        // a verdict id from a file cannot drive the terminal
        let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let e = diff(&run(9e9, 1, "sender-cpu-bound"), &run(9e9, 1, evil));
        let mut raw = Vec::new();
        e.render_text(&mut raw).unwrap();
        let out = String::from_utf8(raw).unwrap();
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.contains("x\\u{1b}]0;pwned"), "{out}");
        assert!(d.exceeds(10.0));
        assert!(!d.exceeds(25.0));
    }

    #[test]
    fn identical_runs_do_not_exceed_any_threshold() {
        let d = diff(&run(10e9, 0, "x"), &run(10e9, 0, "x"));
        assert!(!d.exceeds(0.0));
        assert_eq!(d.changes.len(), 1, "{:?}", d.changes);
        assert_eq!(d.changes[0].pct, Some(0.0));
    }

    #[test]
    fn different_kinds_are_not_comparable() {
        let lat = Document::parse(br#"{"cpus":[0],"matrix":[[null]]}"#).unwrap();
        let d = diff(&run(1e9, 0, "x"), &lat);
        assert!(!d.comparable());
        assert!(!d.exceeds(0.0));
    }
}
