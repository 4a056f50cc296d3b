//! A `--repeat` series as text: the statistics, the modes and what they mean.

use std::io::{self, Write};

use wirespeed_model::doc::RepeatAnalysis;

/// The text report of a `--repeat` series.
pub fn write_text<W: Write + ?Sized>(w: &mut W, a: &RepeatAnalysis) -> io::Result<()> {
    let s = &a.stats;
    writeln!(
        w,
        "{} runs: min {}  median {}  max {}  spread {}",
        s.runs, s.min, s.median, s.max, s.spread
    )?;
    writeln!(
        w,
        "{} mode{} ({}):",
        a.modes.len(),
        if a.modes.len() == 1 { "" } else { "s" },
        a.method
    )?;
    for m in a.modes.iter().rev() {
        writeln!(w, "  {}", m.description)?;
    }
    if let Some(c) = &a.conclusion {
        writeln!(w, "{c}")?;
    }
    if let Some(r) = &a.recommendation {
        writeln!(w, "recommendation: {r}")?;
    }
    Ok(())
}
