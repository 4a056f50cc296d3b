//! The core-to-core latency matrix as text: the lower triangle of `mean±se` in ns, the
//! extremes and the means by relation. Its CSV is [`crate::csv`]'s, like every CSV.

use std::io::{self, Write};

use wirespeed_model::doc::LatencyMatrix;

/// The lower-triangle table: `mean±se` in ns, then min / max / mean with their pairs.
pub fn write_table<W: Write + ?Sized>(w: &mut W, m: &LatencyMatrix) -> io::Result<()> {
    writeln!(
        w,
        "one-way core-to-core latency, ns (mean ± standard error; {} samples of {} round trips per pair)",
        m.samples, m.round_trips
    )?;
    let width = 13;
    write!(w, "{:>5}", "CPU")?;
    for c in m.cpus.iter().take(m.cpus.len().saturating_sub(1)) {
        write!(w, " {c:>width$}")?;
    }
    writeln!(w)?;
    for (i, ci) in m.cpus.iter().enumerate().skip(1) {
        write!(w, "{ci:>5}")?;
        for j in 0..i {
            let cell = m.matrix[i][j].map_or_else(
                || "-".to_string(),
                |p| {
                    let mark = if p.noisy { "*" } else { "" };
                    format!("{:.1}±{:.1}{mark}", p.mean_ns, p.stderr_ns)
                },
            );
            write!(w, " {cell:>width$}")?;
        }
        writeln!(w)?;
    }
    if let (Some(lo), Some(hi), Some(mean)) = (m.min, m.max, m.mean_ns) {
        writeln!(
            w,
            "min {:.1} ns (CPUs {},{})  max {:.1} ns (CPUs {},{})  mean {:.1} ns",
            lo.mean_ns, lo.a, lo.b, hi.mean_ns, hi.a, hi.b, mean
        )?;
    }
    for c in &m.by_relation {
        writeln!(
            w,
            "  {:<12} {:>4} pair{} mean {:.1} ns",
            c.relation.as_str(),
            c.pairs,
            if c.pairs == 1 { " " } else { "s" },
            c.mean_ns
        )?;
    }
    if let Some(warning) = m.noise_warning() {
        writeln!(w, "{warning}")?;
    }
    Ok(())
}
