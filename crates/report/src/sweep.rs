//! A sweep's text: the shaded heatmap of a matrix of medians and the summary under it (`sweep`
//! and `sweep --irq-cpus`). The matrix and its summary are the model's ([`wirespeed_model::doc`]);
//! explain fills them.

use std::io::{self, Write};

use wirespeed_model::doc::{scale_range, IrqSweepReport, Matrix, Summary, SCALE_FLOOR};

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
/// legend gives the scale's span, which reaches down to at least half the best cell
/// ([`scale_range`]), so a 1 % difference is never darkest against brightest. With `color`,
/// cells also get an ANSI 256-colour background from red (slowest) to green (fastest).
pub fn write_heatmap<W: Write + ?Sized>(w: &mut W, m: &Matrix, color: bool) -> io::Result<()> {
    let meds: Vec<f64> = m.cells.iter().flatten().filter_map(|c| c.median).collect();
    let lo = meds.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = meds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo_cells, hi_cells) = (lo, hi);
    let (lo, hi) = scale_range(lo, hi);
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
                    // two decimals: cells a fraction of a percent apart are told apart
                    let text = format!("{s}{s}{:>6.2}", v / 1e9);
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
            "shades: '{}' {:.2} … '{}' {:.2} Gbit/s (cells {:.2}–{:.2}, a spread of {:.1} %; the scale reaches down to at least {:.0} % of the best)",
            SHADES[0],
            lo / 1e9,
            SHADES[SHADES.len() - 1],
            hi / 1e9,
            lo_cells / 1e9,
            hi_cells / 1e9,
            if hi_cells > 0.0 {
                (1.0 - lo_cells / hi_cells) * 100.0
            } else {
                0.0
            },
            SCALE_FLOOR * 100.0
        )?;
    }
    Ok(())
}

/// The text summary under the heatmap.
pub fn write_summary<W: Write + ?Sized>(w: &mut W, m: &Matrix, s: &Summary) -> io::Result<()> {
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
    if let Some(n) = &s.noise {
        writeln!(
            w,
            "noise: each cell's spread (standard deviation of its {}) is {:.1}–{:.1} % of its median; {} of {} pairs cannot be told from the best",
            n.best_spread.from.words(),
            n.spread_pct.0,
            n.spread_pct.1,
            n.tied.len(),
            m.pairs().count()
        )?;
    }
    let label = match &s.noise {
        Some(n) if !n.beyond => "no recommendation",
        _ => "recommended",
    };
    writeln!(w, "{label}: {}", s.recommendation)
}

/// A CPU-pair sweep as text: the heatmap, its summary when there is one, and a line when the
/// sweep was interrupted (the matrix is partial).
pub fn write_sweep<W: Write + ?Sized>(
    out: &mut W,
    m: &Matrix,
    summary: Option<&Summary>,
    interrupted: bool,
    color: bool,
) -> io::Result<()> {
    write_heatmap(out, m, color)?;
    if let Some(s) = summary {
        write_summary(out, m, s)?;
    }
    if interrupted {
        writeln!(out, "(interrupted: the matrix is partial)")?;
    }
    Ok(())
}

/// An IRQ sweep as text: the heatmap and its summary, the IRQs the kernel kept in place, the
/// steps whose move did not take effect (`ineffective` of them, left out of the summary), and
/// the count of steps with where their journals were reverted (`on_server`: the sweep moved
/// the server's IRQs).
pub fn write_irq_sweep<W: Write + ?Sized>(
    out: &mut W,
    report: &IrqSweepReport,
    summary: Option<&Summary>,
    ineffective: usize,
    on_server: bool,
    color: bool,
) -> io::Result<()> {
    write_heatmap(out, &report.matrix, color)?;
    if let Some(s) = summary {
        write_summary(out, &report.matrix, s)?;
    }
    for s in &report.steps {
        if !s.outcome.not_movable.is_empty() {
            writeln!(
                out,
                "IRQ CPU {}: IRQs {:?} are managed by the kernel and stayed put",
                s.irq_cpu, s.outcome.not_movable
            )?;
        }
    }
    if ineffective > 0 {
        let example = report
            .steps
            .iter()
            .find_map(|s| {
                s.outcome
                    .elsewhere
                    .first()
                    .map(|(irq, e)| (s.irq_cpu, *irq, e))
            })
            .map_or(String::new(), |(cpu, irq, e)| {
                format!(" (e.g. IRQ {irq}, moved to CPU {cpu}, ran on CPU {e})")
            });
        writeln!(
            out,
            "{ineffective} of {} step(s) did not take effect{example}: left out of the summary",
            report.steps.len()
        )?;
    }
    writeln!(
        out,
        "{} step(s), every journal reverted{}{}",
        report.steps.len(),
        if on_server { " on the server" } else { "" },
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::doc::{Axes, StepOutcome};
    use wirespeed_model::CpuSet;
    use wirespeed_model::MoveOutcome;

    #[test]
    fn an_irq_sweep_says_what_stayed_put_what_did_not_take_effect_and_where_it_reverted() {
        let matrix = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0]),
            CpuSet::from_cpus([1, 2]),
        );
        let step = |irq_cpu, elsewhere: Vec<(u32, CpuSet)>| StepOutcome {
            irq_cpu,
            outcome: MoveOutcome {
                journal: "/j".into(),
                moved: vec![40],
                not_movable: if irq_cpu == 1 { vec![41] } else { Vec::new() },
                failed: Vec::new(),
                elsewhere,
                reverted: true,
            },
        };
        let report = IrqSweepReport {
            iface: "eth0".into(),
            irqs: Vec::new(),
            matrix,
            steps: vec![
                step(1, Vec::new()),
                step(2, vec![(40, CpuSet::from_cpus([3]))]),
            ],
            interrupted: true,
        };
        let mut out = Vec::new();
        write_irq_sweep(&mut out, &report, None, 1, true, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        assert_eq!(
            tail,
            [
                "2 step(s), every journal reverted on the server (interrupted)",
                "1 of 2 step(s) did not take effect (e.g. IRQ 40, moved to CPU 2, ran on CPU 3): left out of the summary",
                "IRQ CPU 1: IRQs [41] are managed by the kernel and stayed put",
            ],
            "{text}"
        );
        let mut out = Vec::new();
        write_irq_sweep(&mut out, &report, None, 0, false, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("\n2 step(s), every journal reverted (interrupted)\n"),
            "{text}"
        );
    }

    #[test]
    fn an_interrupted_sweep_says_its_matrix_is_partial() {
        let m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0]),
            CpuSet::from_cpus([1]),
        );
        let mut whole = Vec::new();
        write_sweep(&mut whole, &m, None, false, false).unwrap();
        let mut heatmap = Vec::new();
        write_heatmap(&mut heatmap, &m, false).unwrap();
        assert_eq!(whole, heatmap);
        let mut cut = Vec::new();
        write_sweep(&mut cut, &m, None, true, false).unwrap();
        let text = String::from_utf8(cut).unwrap();
        assert!(
            text.ends_with("\n(interrupted: the matrix is partial)\n"),
            "{text}"
        );
    }
}
