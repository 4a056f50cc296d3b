//! What changed between two documents of the same kind: throughput, retransmits, placement and
//! verdict of tests; the median and modes of repeats; best and worst pairs of sweeps; latency
//! figures; findings added and gone of doctor reports.
//!
//! Two tests also get what changed in their setup ([`Diff::setup`]: protocol, direction, `-P`,
//! `-l`, `-t`, `-b`, `-w`, `-M`, congestion control, send and receive paths, CPUs, the program at
//! each end) and a note that one run each is noise ([`Diff::note`]: compare `--repeat`s).
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
    /// Tests: the settings that differ between the two runs (never gated).
    pub setup: Vec<Change>,
    /// Tests: one run each is noise; say so, and what to compare instead.
    pub note: Option<String>,
}

/// [`Diff::note`] of two single tests.
pub const ONE_RUN_EACH: &str = "one run each: a single test's throughput moves by several percent \
     from run to run on the same setup, so this difference may be noise; compare two client --repeat N -J \
     results (their medians and spreads) before trusting it";

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
    pub fn render_text<W: io::Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        if !self.comparable() {
            return writeln!(
                w,
                "different kinds of document: {} and {}",
                self.kinds.0, self.kinds.1
            );
        }
        // Every string here came from a file: escaped for the terminal.
        use wirespeed_model::text::terminal as t;
        if matches!(self.kinds.0, Kind::Test) {
            if self.setup.is_empty() {
                writeln!(w, "setup: the same (protocol, direction, -P, -l, -t, -b, -w, -M, congestion control, send and receive paths, CPUs)")?;
            }
            for c in &self.setup {
                let (what, before, after) = (t(&c.what), t(&c.before), t(&c.after));
                writeln!(w, "setup: {what}: {before} -> {after}")?;
            }
        }
        if self.changes.is_empty() && self.added.is_empty() && self.gone.is_empty() {
            writeln!(w, "no difference")?;
        }
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
        if let Some(n) = &self.note {
            writeln!(w, "note: {n}")?;
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
            .map(|v| v.id)
    };
    if id(a) != id(b) {
        text(out, "verdict", va, vb);
    }
}

/// A size as iperf3 prints one (`128 KBytes`): the unit `-l`, `-w` and `-n` are given in.
fn size(b: u64) -> String {
    crate::units::format_bytes(b as f64).trim().to_string()
}

/// The settings of two tests that differ, each as the user set it (`-P`, `-l`, ...).
fn setup(out: &mut Vec<Change>, a: &TestResult, b: &TestResult) {
    type Get = fn(&TestResult) -> Option<String>;
    fn ts<T>(t: &TestResult, f: impl Fn(&crate::model::TestStart) -> T) -> Option<T> {
        t.start.test_start.as_ref().map(f)
    }
    let fields: [(&str, Get); 14] = [
        ("protocol", |t| ts(t, |s| s.protocol.clone())),
        ("direction", |t| {
            ts(t, |s| {
                if s.bidir == Some(1) {
                    "both (--bidir)".to_string()
                } else if s.reverse != 0 {
                    "server sends (-R)".to_string()
                } else {
                    "client sends".to_string()
                }
            })
        }),
        ("streams (-P)", |t| ts(t, |s| s.num_streams.to_string())),
        ("block size (-l)", |t| ts(t, |s| size(s.blksize))),
        ("duration (-t)", |t| {
            ts(t, |s| match (s.bytes, s.blocks) {
                (0, 0) => format!("{} s", s.duration),
                (0, k) => format!("{k} blocks (-k)"),
                (n, _) => format!("{} (-n)", size(n)),
            })
        }),
        ("omitted (-O)", |t| ts(t, |s| format!("{} s", s.omit))),
        ("bitrate (-b)", |t| {
            ts(t, |s| match s.target_bitrate {
                0 => "unlimited".to_string(),
                r => rate(r as f64),
            })
        }),
        ("socket buffer (-w)", |t| {
            Some(match t.start.sock_bufsize {
                None | Some(0) => "the kernel's".to_string(),
                Some(b) => size(b),
            })
        }),
        ("MSS (-M)", |t| {
            Some(match t.start.tcp_mss {
                None | Some(0) => "the kernel's".to_string(),
                Some(m) => format!("{m} B"),
            })
        }),
        ("congestion control (-C)", |t| {
            let e = &t.end;
            match (&e.sender_tcp_congestion, &e.receiver_tcp_congestion) {
                (Some(s), Some(r)) if s != r => Some(format!("{s} (sender), {r} (receiver)")),
                (Some(s), _) => Some(s.clone()),
                (None, r) => r.clone(),
            }
        }),
        ("send path", |t| {
            let w = t.wirespeed.as_ref()?;
            match (&w.send_path, &w.remote_send_path) {
                (Some(l), Some(r)) if l != r => Some(format!("{l} (here), {r} (peer)")),
                (l, r) => l.clone().or_else(|| r.clone()),
            }
        }),
        ("receive path", |t| {
            let w = t.wirespeed.as_ref()?;
            match (&w.recv_path, &w.remote_recv_path) {
                (Some(l), Some(r)) if l != r => Some(format!("{l} (here), {r} (peer)")),
                (l, r) => l.clone().or_else(|| r.clone()),
            }
        }),
        ("CPUs", placement),
        ("program", |t| {
            (!t.start.version.is_empty()).then(|| t.start.version.clone())
        }),
    ];
    for (what, get) in fields {
        text(out, what, get(a), get(b));
    }
}

/// Compare two documents.
pub fn diff(a: &Document, b: &Document) -> Diff {
    let mut d = Diff {
        kinds: (a.kind(), b.kind()),
        changes: Vec::new(),
        added: Vec::new(),
        gone: Vec::new(),
        setup: Vec::new(),
        note: None,
    };
    let out = &mut d.changes;
    match (a, b) {
        (Document::Test(a), Document::Test(b)) => {
            test(out, a, b);
            setup(&mut d.setup, a, b);
            d.note = Some(ONE_RUN_EACH.to_string());
        }
        (Document::Repeat(a), Document::Repeat(b)) => {
            let (sa, sb) = (&a.repeat.stats, &b.repeat.stats);
            num(
                out,
                "median throughput",
                Some(sa.median.0),
                Some(sb.median.0),
                &rate,
                true,
                true,
            );
            num(
                out,
                "min",
                Some(sa.min.0),
                Some(sb.min.0),
                &rate,
                true,
                false,
            );
            num(
                out,
                "max",
                Some(sa.max.0),
                Some(sb.max.0),
                &rate,
                true,
                false,
            );
            num(
                out,
                "spread (% of median)",
                Some(sa.spread.get()),
                Some(sb.spread.get()),
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
            let best = |s: &crate::doc::SweepDoc| s.summary.as_ref().map(|x| x.best);
            let worst = |s: &crate::doc::SweepDoc| s.summary.as_ref().map(|x| x.worst);
            num(
                out,
                "best pair's throughput",
                best(a).map(|p| p.median.0),
                best(b).map(|p| p.median.0),
                &rate,
                true,
                true,
            );
            num(
                out,
                "worst pair's throughput",
                worst(a).map(|p| p.median.0),
                worst(b).map(|p| p.median.0),
                &rate,
                true,
                false,
            );
            let (rl, cl) = a.matrix.axes.labels();
            let pair = |p: Option<wirespeed_model::doc::Pair>| {
                p.map(|p| format!("{rl} {}, {cl} {}", p.row, p.col))
            };
            text(out, "best pair", pair(best(a)), pair(best(b)));
            text(out, "worst pair", pair(worst(a)), pair(worst(b)));
        }
        (Document::Latency(a), Document::Latency(b)) => {
            let ns = |v: f64| format!("{v:.0} ns");
            num(
                out,
                "mean latency",
                a.matrix.mean_ns,
                b.matrix.mean_ns,
                &ns,
                false,
                true,
            );
            num(
                out,
                "fastest pair",
                a.matrix.min.map(|p| p.mean_ns),
                b.matrix.min.map(|p| p.mean_ns),
                &ns,
                false,
                false,
            );
            num(
                out,
                "slowest pair",
                a.matrix.max.map(|p| p.mean_ns),
                b.matrix.max.map(|p| p.mean_ns),
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

    /// A run whose verdict has id `verdict` (as a file spells it: an id this build does not
    /// know reads as `unknown`) and the line `verdict` with spaces for dashes.
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
                ..Worker::default()
            }],
            verdict: Some(Verdict::new(
                serde_json::from_value(verdict.into()).unwrap(),
                None,
                verdict.replace('-', " "),
            )),
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
            out.contains("setup: CPUs: local CPU 0 (ran on 0) -> local CPU 1 (ran on 1)"),
            "{out}"
        );
        assert!(out.contains("note: one run each"), "{out}");
        assert!(out.contains("verdict: sender-cpu-bound"), "{out}");
        // a verdict from a file cannot drive the terminal: an id this build does not know reads
        // as `unknown`, and the line is escaped
        let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let e = diff(&run(9e9, 1, "sender-cpu-bound"), &run(9e9, 1, evil));
        let mut raw = Vec::new();
        e.render_text(&mut raw).unwrap();
        let out = String::from_utf8(raw).unwrap();
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.contains("x\\u{1b}]0;pwned"), "{out}");
        assert!(out.contains("-> unknown (x\\u{1b}]0;pwned"), "{out}");
        assert!(d.exceeds(10.0));
        assert!(!d.exceeds(25.0));
    }

    fn with_setup(d: Document, f: impl FnOnce(&mut TestResult)) -> Document {
        let Document::Test(mut t) = d else {
            unreachable!()
        };
        f(&mut t);
        Document::Test(t)
    }

    #[test]
    fn the_setup_that_changed_is_named() {
        let start = |p: u32, l: u64| crate::model::TestStart {
            protocol: "TCP".into(),
            num_streams: p,
            blksize: l,
            duration: 3,
            ..Default::default()
        };
        let a = with_setup(run(10e9, 0, "x"), |t| {
            t.start.test_start = Some(start(1, 131072));
            t.end.sender_tcp_congestion = Some("cubic".into());
            t.wirespeed.as_mut().unwrap().send_path = Some("copy".into());
        });
        let b = with_setup(run(10e9, 0, "x"), |t| {
            t.start.test_start = Some(start(4, 1 << 20));
            t.end.sender_tcp_congestion = Some("bbr".into());
            t.wirespeed.as_mut().unwrap().send_path = Some("sendfile".into());
        });
        let d = diff(&a, &b);
        let whats: Vec<&str> = d.setup.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "streams (-P)",
                "block size (-l)",
                "congestion control (-C)",
                "send path"
            ]
        );
        let mut out = Vec::new();
        d.render_text(&mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("setup: send path: copy -> sendfile"), "{out}");
        assert!(out.contains("setup: streams (-P): 1 -> 4"), "{out}");
        assert!(
            out.contains("setup: congestion control (-C): cubic -> bbr"),
            "{out}"
        );
        assert!(
            out.contains("setup: block size (-l): 128 KBytes -> 1.00 MBytes"),
            "{out}"
        );
        // setup is never gated
        assert!(!d.exceeds(0.0));

        // the same setup says so
        let same = diff(&a, &a);
        let mut out = Vec::new();
        same.render_text(&mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("setup: the same"), "{out}");
        assert!(out.contains("note: one run each"), "{out}");
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
        let (lat, _) = crate::doc::tests::written_samples().pop().unwrap();
        let lat = Document::from(lat);
        let d = diff(&run(1e9, 0, "x"), &lat);
        assert!(!d.comparable());
        assert!(!d.exceeds(0.0));
    }
}
