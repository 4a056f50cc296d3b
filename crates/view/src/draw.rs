//! What both views draw alike: a rate's history as a sparkline (its samples, its scale from
//! zero, its width), a CPU as a coloured bar, the busiest CPU in words, the quit keys.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Sparkline};
use wirespeed_model::observation::CpuUse;
use wirespeed_report::html::rate;

/// How many samples each sparkline keeps (the live view's and top's).
pub(crate) const HISTORY: usize = 240;

/// One more sample of a sparkline, in Mbit/s; the oldest goes past [`HISTORY`].
pub(crate) fn push(h: &mut Vec<u64>, bps: f64) {
    h.push((bps / 1e6) as u64);
    if h.len() > HISTORY {
        h.remove(0);
    }
}

/// A boxed sparkline titled `title`: `hist` fitted to `width` columns (borders included),
/// drawn from zero to `max`, in `colour`.
pub(crate) fn sparkline(
    title: String,
    hist: &[u64],
    width: u16,
    max: u64,
    colour: Color,
) -> Sparkline<'static> {
    let data = fit(hist, width.saturating_sub(2));
    Sparkline::default()
        .block(Block::default().borders(Borders::ALL).title(title))
        .data(&data)
        .max(max)
        .style(Style::default().fg(colour))
}

/// `q`, `Esc` or Ctrl-C pressed: the views end.
pub(crate) fn quits(k: &KeyEvent) -> bool {
    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
    k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc))
}

/// The top of a sparkline's scale (Mbit/s, as the history keeps rates): the bars start at
/// zero and reach this, the next step of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10ⁿ at or
/// above the highest sample plus 5 %, so a flat rate draws as what it is (a bar 95 % up, say)
/// and not as a box filled to the top; the box's title says the span ([`scale_words`]).
pub(crate) fn scale_top(v: &[u64]) -> u64 {
    const STEPS: [f64; 10] = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0];
    let peak = v.iter().copied().max().unwrap_or(0) as f64 * 1.05;
    if peak < 1.0 {
        return 1;
    }
    let mut decade = 10f64.powi(peak.log10().floor() as i32);
    loop {
        for s in STEPS {
            let top = s * decade;
            if top >= peak {
                return top.round() as u64;
            }
        }
        decade *= 10.0;
    }
}

/// The span a sparkline's bars are drawn on: `scale 0–5 Gbit/s`.
pub(crate) fn scale_words(top_mbps: u64) -> String {
    format!("scale 0–{}", rate(top_mbps as f64 * 1e6))
}

pub(crate) fn sum_now(sum: &[u64]) -> f64 {
    sum.last().map(|v| *v as f64 * 1e6).unwrap_or(0.0)
}

/// `v`'s last `n` samples, or — fewer than `n` — each sample repeated so that they fill `n`
/// columns: a sparkline as wide as its box from the first interval on.
pub(crate) fn fit(v: &[u64], n: u16) -> Vec<u64> {
    let n = usize::from(n).max(1);
    if v.len() >= n || v.is_empty() {
        return v[v.len().saturating_sub(n)..].to_vec();
    }
    (0..n).map(|i| v[i * v.len() / n]).collect()
}

/// The kinds of work a CPU bar shows, in order, and their colours.
pub(crate) const WORK: [(&str, Color); 5] = [
    ("user", Color::Blue),
    ("system", Color::Yellow),
    ("irq", Color::Red),
    ("softirq", Color::Green),
    ("steal", Color::Magenta),
];
/// A stream's sparkline.
pub(crate) const STREAM: Color = Color::Cyan;
/// The sum's sparkline.
pub(crate) const SUM: Color = Color::Green;

/// `CPU   3 ████████▒▒▒     | 72.0% busy  NIC irqs 1234`, coloured by kind of work
/// ([`WORK`]), the bars `width` columns; `compact`: `CPU   3 ████▒▒  |  72% irqs 1234`.
pub(crate) fn cpu_line(c: &CpuUse, width: usize, compact: bool) -> Line<'static> {
    let parts = [
        c.user.get(),
        c.system.get(),
        c.irq.get(),
        c.softirq.get(),
        c.steal.get(),
    ];
    let mut spans = vec![Span::raw(format!("CPU {:>3} ", c.cpu))];
    let mut used = 0;
    for (pct, (_, colour)) in parts.into_iter().zip(WORK) {
        let n = ((pct.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
        let n = n.min(width - used);
        used += n;
        spans.push(Span::styled("█".repeat(n), Style::default().fg(colour)));
    }
    let pad = " ".repeat(width - used);
    spans.push(Span::raw(if compact {
        format!("{pad}| {:>3.0}% irqs {}", c.busy().get(), c.nic_irqs)
    } else {
        format!(
            "{pad}| {:>5.1}% busy  NIC irqs {}",
            c.busy().get(),
            c.nic_irqs
        )
    }));
    Line::from(spans)
}

/// ` busiest CPU so far: 3 at 72 % (softirq 60 %)`, or nothing without CPUs.
pub(crate) fn busiest(cpus: &[CpuUse]) -> String {
    match cpus
        .iter()
        .max_by(|a, b| a.busy().get().total_cmp(&b.busy().get()))
    {
        Some(c) => {
            let (what, p) = c.dominant();
            format!(
                " busiest CPU so far: {} at {:.0} % ({} {:.0} %)",
                c.cpu,
                c.busy().get(),
                what,
                p.get()
            )
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scale's top is the next round step above the peak (5 % headroom), from zero.
    #[test]
    fn the_scale_starts_at_zero_and_tops_a_round_step_above_the_peak() {
        assert_eq!(scale_top(&[4750, 4710, 4740]), 5000);
        assert_eq!(scale_top(&[5000]), 6000);
        assert_eq!(scale_top(&[990]), 1200);
        assert_eq!(scale_top(&[26_500]), 30_000);
        assert_eq!(scale_top(&[]), 1);
        assert_eq!(scale_top(&[0, 0]), 1);
        assert_eq!(scale_words(5000), "scale 0–5.00 Gbit/s");
    }

    /// Fewer samples than columns are stretched to fill them; more keep the latest.
    #[test]
    fn sparkline_data_fills_its_width() {
        assert_eq!(fit(&[1, 2], 6), vec![1, 1, 1, 2, 2, 2]);
        assert_eq!(fit(&[1, 2, 3, 4], 2), vec![3, 4]);
        assert_eq!(fit(&[], 5), Vec::<u64>::new());
        assert_eq!(fit(&[7], 3), vec![7, 7, 7]);
    }
}
