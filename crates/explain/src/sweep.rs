//! `sweep`: one-stream tests over a grid of CPU placements — client CPU × server CPU, or (with
//! `--irq-cpus`) receiver CPU × NIC-interrupt CPU — as a matrix of medians, a shaded terminal
//! heatmap, the best and worst pairs and a recommended placement.
//!
//! Everything here is pure; the driver that runs the tests lives with the command.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::model::BitsPerSecond;
use crate::modes::median;
use crate::topology::{Relation, Topology};
pub use wirespeed_model::doc::{Axes, Cell, Matrix, Pair, Summary};

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
        let mut recommendation = match self.axes {
            Axes::ClientServer => format!(
                "run the client on CPU {} and the server on CPU {} ({}); the worst pair ({rl} {}, {cl} {}) loses {:.0} %",
                best.row, best.col, best.median, worst.row, worst.col, loss
            ),
            Axes::AppIrq => format!(
                "with the receiver on CPU {}, put the NIC's queue IRQs on CPU {} ({}); the worst pair ({rl} {}, {cl} {}) loses {:.0} %",
                best.row, best.col, best.median, worst.row, worst.col, loss
            ),
        };
        if let Some(t) = topo {
            let rel = t.relation(best.row, best.col);
            if rel != Relation::Unknown {
                recommendation.push_str(&format!("; best pair: {}", self.axes.relation_words(rel)));
            }
        }
        if near_best.len() > 1 {
            recommendation.push_str(&format!(
                "; {} pairs are within {:.0} % of the best",
                near_best.len(),
                NEAR_BEST * 100.0
            ));
        }
        Some(Summary {
            best,
            worst,
            near_best,
            by_relation,
            recommendation,
        })
    }
}

const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];

/// The shade of a value between `lo` and `hi`: 0 (lowest) to 4 (highest).
pub fn shade_level(v: f64, lo: f64, hi: f64) -> usize {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return SHADES.len() - 1;
    }
    let f = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
    ((f * (SHADES.len() - 1) as f64).round() as usize).min(SHADES.len() - 1)
}

/// The heatmap: each cell is its shade (darker = faster) twice and its median in Gbit/s; a
/// legend gives the range. With `color`, cells also get an ANSI 256-colour background from red
/// (slowest) to green (fastest).
pub fn write_heatmap(w: &mut dyn Write, m: &Matrix, color: bool) -> io::Result<()> {
    let meds: Vec<f64> = m.cells.iter().flatten().filter_map(|c| c.median).collect();
    let lo = meds.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = meds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (rl, cl) = m.axes.labels();
    writeln!(w, "median Gbit/s, rows: {rl}, columns: {cl}")?;
    write!(w, "{:>6} ", "")?;
    for c in m.cols.iter() {
        write!(w, " {c:>8}")?;
    }
    writeln!(w)?;
    // Red → yellow → green in the 256-colour cube.
    const COLORS: [u8; 5] = [160, 166, 178, 142, 70];
    for (ri, r) in m.rows.iter().enumerate() {
        write!(w, "{r:>6} ")?;
        for cell in &m.cells[ri] {
            match cell.median {
                Some(v) => {
                    let lvl = shade_level(v, lo, hi);
                    let s = SHADES[lvl];
                    let text = format!("{s}{s}{:>6.1}", v / 1e9);
                    if color {
                        write!(w, " \x1b[48;5;{}m{text}\x1b[0m", COLORS[lvl])?;
                    } else {
                        write!(w, " {text}")?;
                    }
                }
                None if cell.error.is_some() => write!(w, " {:>8}", "error")?,
                None => write!(w, " {:>8}", "-")?,
            }
        }
        writeln!(w)?;
    }
    if lo.is_finite() {
        writeln!(
            w,
            "shades: '{}' {:.1} … '{}' {:.1} Gbit/s",
            SHADES[0],
            lo / 1e9,
            SHADES[SHADES.len() - 1],
            hi / 1e9
        )?;
    }
    Ok(())
}

/// The text summary under the heatmap.
pub fn write_summary(w: &mut dyn Write, m: &Matrix, s: &Summary) -> io::Result<()> {
    let (rl, cl) = m.axes.labels();
    writeln!(
        w,
        "best:  {rl} {}, {cl} {}: {}",
        s.best.row, s.best.col, s.best.median
    )?;
    writeln!(
        w,
        "worst: {rl} {}, {cl} {}: {}",
        s.worst.row, s.worst.col, s.worst.median
    )?;
    for (r, v) in &s.by_relation {
        writeln!(w, "  {:<12} median {}", r.as_str(), v)?;
    }
    writeln!(w, "recommended: {}", s.recommendation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::CpuSet;

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
            "run the client on CPU 1 and the server on CPU 0 (25.0 Gbit/s); the worst pair (client CPU 1, server CPU 1) loses 80 %"
        );
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
        assert_eq!(lines[2], "     0      10.0 ▒▒  20.0");
        assert_eq!(lines[3], "     1  ██  30.0    error");
        assert_eq!(lines[4], "shades: ' ' 10.0 … '█' 30.0 Gbit/s");
        let mut out = Vec::new();
        write_heatmap(&mut out, &m, true).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("\x1b[48;5;70m██  30.0\x1b[0m"));
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(j["axes"], "client-server");
        assert_eq!(j["cells"][1][1]["error"], "refused");
    }
}
