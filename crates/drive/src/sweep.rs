//! `sweep`: one-stream tests over a grid of CPU placements — client CPU × server CPU, or (with
//! `--irq-cpus`) receiver CPU × NIC-interrupt CPU — as a matrix of medians, the best and worst
//! pairs and a recommended placement. The shaded heatmap and the summary's text are
//! `wirespeed_report::sweep`'s.
//!
//! Everything here is pure; the driver that runs the tests lives with the command.

use std::collections::BTreeMap;

use crate::modes::median;
pub use wirespeed_model::doc::{
    scale_range, Axes, Cell, Matrix, Noise, Pair, Spread, SpreadFrom, Summary, SCALE_FLOOR,
};
use wirespeed_model::observation::BitsPerSecond;
use wirespeed_model::units::rate;
use wirespeed_model::VerdictId;
use wirespeed_observe::topology::{Relation, Topology};

/// Pairs within this fraction of the best are "as good".
pub const NEAR_BEST: f64 = 0.02;

/// A sweep's summary, computed here (the matrix is the model's data).
pub trait Summarize {
    /// Best, worst, near-best and a recommendation; `None` when no cell has a result.
    /// `topo`: the host of both row and column CPUs, when they share one.
    fn summary(&self, topo: Option<&Topology>) -> Option<Summary>;
}

impl Summarize for Matrix {
    fn summary(&self, topo: Option<&Topology>) -> Option<Summary> {
        let all: Vec<Pair> = self.pairs().collect();
        let best = *all
            .iter()
            .max_by(|a, b| a.median.0.total_cmp(&b.median.0))?;
        let worst = *all
            .iter()
            .min_by(|a, b| a.median.0.total_cmp(&b.median.0))?;
        let near_best: Vec<Pair> = all
            .iter()
            .copied()
            .filter(|p| p.median.0 >= best.median.0 * (1.0 - NEAR_BEST))
            .collect();
        let mut by_relation = Vec::new();
        if let Some(t) = topo {
            let mut classes: BTreeMap<Relation, Vec<f64>> = BTreeMap::new();
            for p in &all {
                classes
                    .entry(t.relation(p.row, p.col))
                    .or_default()
                    .push(p.median.0);
            }
            for (r, v) in classes {
                if let Some(m) = median(&v) {
                    by_relation.push((r, BitsPerSecond(m)));
                }
            }
        }
        let (rl, cl) = self.axes.labels();
        let loss = if best.median.0 > 0.0 {
            (1.0 - worst.median.0 / best.median.0) * 100.0
        } else {
            0.0
        };
        let noise = self.noise(&all);
        let verdict = self.shared_verdict();
        let tied = noise.as_ref().is_some_and(|n| !n.beyond);
        let mut recommendation = if let Some(n) = noise.as_ref().filter(|n| !n.beyond) {
            // two decimals: the cells differ in the second
            let pm = |p: &Pair, s: &Spread| format!("{} ± {}", rate(p.median.0), rate(s.sd));
            let diff = if n.next.median.0 > 0.0 {
                (best.median.0 / n.next.median.0 - 1.0) * 100.0
            } else {
                0.0
            };
            format!(
                "no pair is better beyond the noise: the best ({rl} {}, {cl} {}: {}) exceeds the next ({rl} {}, {cl} {}: {}) by {diff:.1} %, less than their spread ({}); {} of {} pairs cannot be told from the best",
                best.row,
                best.col,
                pm(&best, &n.best_spread),
                n.next.row,
                n.next.col,
                pm(&n.next, &n.next_spread),
                n.best_spread.from.words(),
                n.tied.len(),
                all.len(),
            )
        } else {
            match self.axes {
                Axes::ClientServer => format!(
                    "run the client on CPU {} and the server on CPU {} ({}); the worst pair ({rl} {}, {cl} {}) loses {:.0} %",
                    best.row, best.col, best.median, worst.row, worst.col, loss
                ),
                Axes::AppIrq => format!(
                    "with the receiver on CPU {}, put the NIC's queue IRQs on CPU {} ({}); the worst pair ({rl} {}, {cl} {}) loses {:.0} %",
                    best.row, best.col, best.median, worst.row, worst.col, loss
                ),
            }
        };
        if let (Some(t), false) = (topo, tied) {
            let rel = t.relation(best.row, best.col);
            if rel != Relation::Unknown {
                recommendation.push_str(&format!("; best pair: {}", self.axes.relation_words(rel)));
            }
        }
        if near_best.len() > 1 && !tied {
            recommendation.push_str(&format!(
                "; {} pairs are within {:.0} % of the best",
                near_best.len(),
                NEAR_BEST * 100.0
            ));
        }
        match &noise {
            Some(n) if n.beyond => recommendation.push_str(&format!(
                "; better than the next pair ({rl} {}, {cl} {}: {}) beyond both cells' spread ({} ± {}, ± {})",
                n.next.row,
                n.next.col,
                n.next.median,
                n.best_spread.from.words(),
                BitsPerSecond(n.best_spread.sd),
                BitsPerSecond(n.next_spread.sd)
            )),
            None if all.len() > 1 => recommendation.push_str(
                "; the cells' noise is unknown (one run of one interval each): rerun with --repeat 3 to tell a difference from noise",
            ),
            _ => {}
        }
        if let Some(v) = verdict {
            recommendation.push_str(&format!("; every cell's verdict is {v}"));
            if let Some(what) = limit_outside_cpus(v) {
                recommendation.push_str(&format!(": {what}, not the CPU pair, was the limit"));
            }
        } else {
            // The cells differ; what bound the best of them (those the noise cannot tell from
            // the best, else the best alone) is what a user who takes the recommendation meets.
            let leaders = match &noise {
                Some(n) if !n.beyond => n.tied.clone(),
                _ => vec![best],
            };
            if let Some(v) = self.common_verdict(&leaders) {
                if let Some(what) = limit_outside_cpus(v) {
                    let whose = match leaders.len() {
                        1 => "the best cell's verdict is".to_string(),
                        k => format!("the {k} best cells' verdict is"),
                    };
                    recommendation.push_str(&format!(
                        "; {whose} {v}: {what}, not the CPU pair, was the limit there"
                    ));
                }
            }
            if let Some(t) = self.verdict_tally() {
                recommendation.push_str(&format!("; the cells' verdicts: {t}"));
            }
        }
        Some(Summary {
            best,
            worst,
            near_best,
            by_relation,
            recommendation,
            noise,
            verdict,
        })
    }
}

/// What limited a test whose verdict is `v`, when it is something other than the CPUs the
/// sweep moves the work between.
pub fn limit_outside_cpus(v: VerdictId) -> Option<&'static str> {
    Some(match v {
        VerdictId::PathLimited => "the path",
        VerdictId::LineRate => "the link's line rate",
        VerdictId::BondMemberLimited => "one bond member's line rate",
        VerdictId::AtTargetRate => "the target rate (-b)",
        VerdictId::LossLimited | VerdictId::UdpPathLoss => "loss on the path",
        VerdictId::WindowLimited => "the TCP window",
        VerdictId::SndbufLimited => "the send buffer",
        VerdictId::CpuQuota => "a CPU quota",
        VerdictId::PmtuBelowMtu | VerdictId::MtuMismatch | VerdictId::MtuBlackhole => {
            "the path's MTU"
        }
        _ => return None,
    })
}

/// Cells whose medians are `a` and `b` differ beyond their noise when the higher exceeds the
/// lower by more than the sum of their spreads (their ±1 standard deviation bands do not
/// overlap).
pub fn beyond_noise(a: f64, sa: f64, b: f64, sb: f64) -> bool {
    (a - b).abs() > sa + sb
}

impl MatrixNoise for Matrix {
    fn noise(&self, all: &[Pair]) -> Option<Noise> {
        let spread = |p: &Pair| self.cell(p.row, p.col).and_then(Cell::spread);
        let mut by_rate: Vec<Pair> = all.to_vec();
        by_rate.sort_by(|a, b| b.median.0.total_cmp(&a.median.0));
        let best = *by_rate.first()?;
        let next = *by_rate.get(1)?;
        let spreads: Vec<Spread> = by_rate.iter().map(spread).collect::<Option<_>>()?;
        let (bs, ns) = (spreads[0], spreads[1]);
        let tied = by_rate
            .iter()
            .zip(&spreads)
            .filter(|(p, s)| !beyond_noise(best.median.0, bs.sd, p.median.0, s.sd))
            .map(|(p, _)| *p)
            .collect();
        let pct = by_rate
            .iter()
            .zip(&spreads)
            .filter(|(p, _)| p.median.0 > 0.0)
            .map(|(p, s)| s.sd / p.median.0 * 100.0);
        let spread_pct = pct.fold((f64::INFINITY, 0.0_f64), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        Some(Noise {
            best_spread: bs,
            next,
            next_spread: ns,
            beyond: beyond_noise(best.median.0, bs.sd, next.median.0, ns.sd),
            tied,
            spread_pct,
        })
    }

    fn verdict_tally(&self) -> Option<String> {
        let mut n: BTreeMap<&'static str, usize> = BTreeMap::new();
        for c in self.cells.iter().flatten() {
            if let Some(v) = c.verdict() {
                *n.entry(v.as_str()).or_default() += 1;
            }
        }
        if n.len() < 2 {
            return None;
        }
        let mut v: Vec<(&str, usize)> = n.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let words: Vec<String> = v
            .iter()
            .map(|(id, k)| format!("{id} in {k} {}", if *k == 1 { "cell" } else { "cells" }))
            .collect();
        Some(words.join(", "))
    }

    fn common_verdict(&self, pairs: &[Pair]) -> Option<VerdictId> {
        let mut v = pairs
            .iter()
            .map(|p| self.cell(p.row, p.col).and_then(Cell::verdict));
        let first = v.next()??;
        v.all(|x| x == Some(first)).then_some(first)
    }

    fn shared_verdict(&self) -> Option<VerdictId> {
        let mut cells = self.cells.iter().flatten().filter(|c| !c.runs.is_empty());
        let first = cells.next()?.verdict()?;
        cells.all(|c| c.verdict() == Some(first)).then_some(first)
    }
}

/// The noise rule over a matrix's cells.
trait MatrixNoise {
    /// The best cell against the next; `None` with fewer than two cells, or when a cell's
    /// spread is unknown.
    fn noise(&self, all: &[Pair]) -> Option<Noise>;
    /// The verdict of the cells at these pairs, when they all have the same one.
    fn common_verdict(&self, pairs: &[Pair]) -> Option<VerdictId>;
    /// The verdict of every cell with runs, when they all agree.
    fn shared_verdict(&self) -> Option<VerdictId>;
    /// `path-limited in 2 cells, same-host in 2 cells`, most first, when the cells' verdicts
    /// differ.
    fn verdict_tally(&self) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::CpuSet;
    use wirespeed_report::sweep::{shade_level, write_heatmap, write_summary};

    fn g(x: f64) -> BitsPerSecond {
        BitsPerSecond::from_gbps(x)
    }

    #[test]
    fn medians_best_worst_and_recommendation() {
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([0, 1]),
        );
        for v in [10.0, 30.0, 20.0] {
            assert!(m.record(0, 1, g(v)));
        }
        m.record(1, 0, g(25.0));
        m.record(1, 1, g(5.0));
        m.record(1, 1, g(f64::NAN));
        assert!(!m.record(2, 0, g(1.0)));
        m.record_error(0, 0, "connection refused");
        assert_eq!(m.median(0, 1), Some(20e9));
        assert_eq!(m.median(0, 0), None);
        // the axes are written as arrays of CPU numbers, as before they were sets
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(j["rows"], serde_json::json!([0, 1]));
        assert_eq!(j["cols"], serde_json::json!([0, 1]));
        let s = m.summary(None).unwrap();
        assert_eq!((s.best.row, s.best.col), (1, 0));
        assert_eq!((s.worst.row, s.worst.col), (1, 1));
        assert_eq!(s.near_best.len(), 1);
        assert_eq!(
            s.recommendation,
            "run the client on CPU 1 and the server on CPU 0 (25.0 Gbit/s); the worst pair (client CPU 1, server CPU 1) loses 80 %; the cells' noise is unknown (one run of one interval each): rerun with --repeat 3 to tell a difference from noise"
        );
        assert_eq!(s.noise, None);
        assert_eq!(s.verdict, None);
        assert!(Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0]),
            CpuSet::from_cpus([0])
        )
        .summary(None)
        .is_none());
    }

    #[test]
    fn irq_sweep_on_the_ryzen_ties_cells_to_relations() {
        let t = Topology::from_groups(
            vec![CpuSet::parse_list("0-11").unwrap()],
            vec![
                CpuSet::parse_list("0-5").unwrap(),
                CpuSet::parse_list("6-11").unwrap(),
            ],
            vec![],
        );
        let mut m = Matrix::new(
            Axes::AppIrq,
            CpuSet::from_cpus([6]),
            CpuSet::from_cpus([3, 6, 8]),
        );
        m.record(6, 3, g(84.9));
        m.record(6, 6, g(64.6));
        m.record(6, 8, g(98.8));
        let s = m.summary(Some(&t)).unwrap();
        assert_eq!(s.best.col, 8);
        assert_eq!(
            s.by_relation,
            vec![
                (Relation::SameCpu, g(64.6)),
                (Relation::SameL3, g(98.8)),
                (Relation::OtherL3, g(84.9))
            ]
        );
        assert!(s.recommendation.starts_with(
            "with the receiver on CPU 6, put the NIC's queue IRQs on CPU 8 (98.8 Gbit/s); the worst pair (app CPU 6, IRQ CPU 6) loses 35 %; best pair: another core of the app's L3 group"
        ), "{}", s.recommendation);
    }

    #[test]
    fn shades_and_heatmap() {
        assert_eq!(shade_level(0.0, 0.0, 4.0), 0);
        assert_eq!(shade_level(4.0, 0.0, 4.0), 4);
        assert_eq!(shade_level(2.0, 0.0, 4.0), 2);
        assert_eq!(shade_level(9.0, 3.0, 3.0), 4);
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([0, 1]),
        );
        m.record(0, 0, g(10.0));
        m.record(0, 1, g(20.0));
        m.record(1, 0, g(30.0));
        m.record_error(1, 1, "refused");
        let mut out = Vec::new();
        write_heatmap(&mut out, &m, false).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "median Gbit/s, rows: client CPU, columns: server CPU"
        );
        assert_eq!(lines[2], "     0     10.00 ▒▒ 20.00");
        assert_eq!(lines[3], "     1  ██ 30.00    error");
        assert_eq!(
            lines[4],
            "shades: ' ' 10.00 … '█' 30.00 Gbit/s (cells 10.00–30.00, a spread of 66.7 %; the scale reaches down to at least 50 % of the best)"
        );
        let mut out = Vec::new();
        write_heatmap(&mut out, &m, true).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("\x1b[48;5;70m██ 30.00\x1b[0m"));
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(j["axes"], "client-server");
        assert_eq!(j["cells"][1][1]["error"], "refused");
    }

    /// Intervals around `mean` (Gbit/s), `sd` apart: mean − sd, mean, mean + sd, mean.
    fn wobble(mean: f64, sd: f64) -> Vec<f64> {
        [mean - sd, mean, mean + sd, mean]
            .iter()
            .map(|v| v * 1e9)
            .collect()
    }

    fn path_limited_sweep() -> Matrix {
        // Recorded shape: one-stream tests through a 5 Gbit/s tbf between two namespaces,
        // 4.71–4.75 Gbit/s, each run's 1-second intervals moving by about 0.03 Gbit/s.
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([0, 1]),
        );
        for (r, c, v) in [(0, 0, 4.71), (0, 1, 4.73), (1, 0, 4.72), (1, 1, 4.75)] {
            assert!(m.record_run(r, c, g(v), wobble(v, 0.03), Some(VerdictId::PathLimited)));
        }
        m
    }

    /// Cells 0.8 % apart whose intervals move by more: no pair is recommended, every cell is
    /// tied with the best, the shared verdict names the path, and the shades are one.
    #[test]
    fn cells_within_their_noise_recommend_no_pair_and_name_the_path() {
        let m = path_limited_sweep();
        let s = m.summary(None).unwrap();
        let n = s.noise.as_ref().unwrap();
        assert!(!n.beyond);
        assert_eq!(n.best_spread.from, SpreadFrom::Intervals);
        assert_eq!(n.best_spread.samples, 4);
        assert_eq!((n.next.row, n.next.col), (0, 1));
        assert_eq!(n.tied.len(), 4, "{n:?}");
        assert_eq!(s.verdict, Some(VerdictId::PathLimited));
        assert!(
            s.recommendation.starts_with(
                "no pair is better beyond the noise: the best (client CPU 1, server CPU 1: 4.75 Gbit/s ± 24.5 Mbit/s) exceeds the next (client CPU 0, server CPU 1: 4.73 Gbit/s ± 24.5 Mbit/s) by 0.4 %, less than their spread (per-interval rates); 4 of 4 pairs cannot be told from the best"
            ),
            "{}",
            s.recommendation
        );
        assert!(
            s.recommendation.ends_with(
                "; every cell's verdict is path-limited: the path, not the CPU pair, was the limit"
            ),
            "{}",
            s.recommendation
        );
        assert!(!s.recommendation.contains("run the client on"));
        let mut out = Vec::new();
        write_summary(&mut out, &m, &s).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("\nno recommendation: no pair is better"), "{t}");
        assert!(t.contains("noise: each cell's spread (standard deviation of its per-interval rates) is 0.5–0.5 % of its median; 4 of 4 pairs cannot be told from the best"), "{t}");
        // A 0.8 % spread is one shade, not darkest against brightest.
        let mut out = Vec::new();
        write_heatmap(&mut out, &m, false).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert_eq!(t.matches('█').count(), 2 * 4 + 1, "{t}");
        assert!(t.contains("(cells 4.71–4.75, a spread of 0.8 %; the scale reaches down to at least 50 % of the best)"), "{t}");
    }

    /// Cells whose verdicts differ (the shape of a release sweep through a 5 Gbit/s tbf: the
    /// pair sharing one CPU bound by that CPU, the others by the path): the cells the noise
    /// cannot tell from the best were all path-limited, and the summary says so before the
    /// tally; when the best cells disagree, nothing is said of them.
    #[test]
    fn the_best_cells_verdict_is_named_when_the_cells_differ() {
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([0, 1]),
        );
        let cells = [
            (0, 0, 4.54, VerdictId::SameHost),
            (0, 1, 4.70, VerdictId::PathLimited),
            (1, 0, 4.69, VerdictId::PathLimited),
            (1, 1, 4.71, VerdictId::PathLimited),
        ];
        for (r, c, v, id) in cells {
            assert!(m.record_run(r, c, g(v), wobble(v, 0.02), Some(id)));
        }
        let s = m.summary(None).unwrap();
        assert_eq!(s.verdict, None);
        assert_eq!(s.noise.as_ref().unwrap().tied.len(), 3, "{:?}", s.noise);
        assert!(
            s.recommendation.ends_with(
                "; the 3 best cells' verdict is path-limited: the path, not the CPU pair, was the limit there; the cells' verdicts: path-limited in 3 cells, same-host in 1 cell"
            ),
            "{}",
            s.recommendation
        );

        // The same rates with the best cell the one that shared a CPU: no common verdict.
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([0, 1]),
        );
        for (r, c, v, id) in cells {
            let id = if (r, c) == (1, 1) {
                VerdictId::SameHost
            } else {
                id
            };
            assert!(m.record_run(r, c, g(v), wobble(v, 0.02), Some(id)));
        }
        let s = m.summary(None).unwrap();
        assert!(
            !s.recommendation.contains("was the limit there"),
            "{}",
            s.recommendation
        );
        assert!(
            s.recommendation.contains("; the cells' verdicts: "),
            "{}",
            s.recommendation
        );
    }

    /// The same cells measured steadier: the best is better than the next beyond both spreads,
    /// so it is recommended, and the verdicts that disagree are not carried.
    #[test]
    fn a_best_beyond_the_noise_is_recommended() {
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([0, 1]),
        );
        for (r, c, v, id) in [
            (0, 0, 20.0, VerdictId::ReceiverCpuBound),
            (0, 1, 30.0, VerdictId::ReceiverCpuBound),
            (1, 0, 25.0, VerdictId::SenderCpuBound),
            (1, 1, 10.0, VerdictId::ReceiverCpuBound),
        ] {
            m.record_run(r, c, g(v), wobble(v, 0.2), Some(id));
        }
        let s = m.summary(None).unwrap();
        let n = s.noise.as_ref().unwrap();
        assert!(n.beyond);
        assert_eq!(n.tied.len(), 1);
        assert_eq!(s.verdict, None);
        assert!(
            s.recommendation.starts_with(
                "run the client on CPU 0 and the server on CPU 1 (30.0 Gbit/s); the worst pair (client CPU 1, server CPU 1) loses 67 %; better than the next pair (client CPU 1, server CPU 0: 25.0 Gbit/s) beyond both cells' spread (per-interval rates ± 163.3 Mbit/s, ± 163.3 Mbit/s)"
            ),
            "{}",
            s.recommendation
        );
        assert!(
            s.recommendation.ends_with(
                "; the cells' verdicts: receiver-cpu-bound in 3 cells, sender-cpu-bound in 1 cell"
            ),
            "{}",
            s.recommendation
        );
    }

    /// With --repeat the spread is the runs': runs that scatter more than the cells differ tie
    /// the cells, whatever their intervals say.
    #[test]
    fn repeats_give_the_spread_when_there_are_several() {
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0]),
            CpuSet::from_cpus([0, 1]),
        );
        for v in [9.0, 10.0, 11.0] {
            m.record_run(0, 0, g(v), wobble(v, 0.01), None);
        }
        for v in [9.5, 10.5, 11.5] {
            m.record_run(0, 1, g(v), wobble(v, 0.01), None);
        }
        let cell = m.cell(0, 1).unwrap();
        let sp = cell.spread().unwrap();
        assert_eq!((sp.from, sp.samples), (SpreadFrom::Runs, 3));
        assert!((sp.sd - 1e9).abs() < 1.0, "{sp:?}");
        let s = m.summary(None).unwrap();
        assert!(!s.noise.unwrap().beyond);
        assert!(
            s.recommendation
                .contains("less than their spread (repeated runs)"),
            "{}",
            s.recommendation
        );
        // the JSON keeps each run's intervals; an earlier document without them still reads
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(j["cells"][0][1]["intervals"].as_array().unwrap().len(), 3);
        let old: Matrix = serde_json::from_str(
            r#"{"axes":"client-server","rows":[0],"cols":[0],"cells":[[{"runs":[1e9],"median":1e9}]]}"#,
        )
        .unwrap();
        assert_eq!(old.cells[0][0].spread(), None);
        assert_eq!(old.cells[0][0].verdict(), None);
    }

    #[test]
    fn the_noise_rule_and_the_scale() {
        assert!(!beyond_noise(4.75, 0.03, 4.73, 0.03));
        assert!(beyond_noise(4.75, 0.003, 4.73, 0.003));
        assert!(beyond_noise(4.73, 0.003, 4.75, 0.003));
        assert_eq!(scale_range(4.71, 4.75), (2.375, 4.75));
        assert_eq!(scale_range(1.0, 30.0), (1.0, 30.0));
        // one shade for a 1 % spread at most
        let (lo, hi) = scale_range(99.0, 100.0);
        assert!(shade_level(100.0, lo, hi) - shade_level(99.0, lo, hi) <= 1);
        assert_eq!(limit_outside_cpus(VerdictId::PathLimited), Some("the path"));
        assert_eq!(limit_outside_cpus(VerdictId::ReceiverCpuBound), None);
    }
}
