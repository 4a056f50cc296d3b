//! A sweep's text: the shaded heatmap of a matrix of medians and the summary under it (`sweep`
//! and `sweep --irq-cpus`). The matrix and its summary are the model's ([`wirespeed_model::doc`]);
//! explain fills them.

use std::io::{self, Write};

use wirespeed_model::doc::{scale_range, Matrix, Summary, SCALE_FLOOR};

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
