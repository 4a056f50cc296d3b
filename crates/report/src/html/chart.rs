//! SVG chart primitives, each appending one `<figure>` to a string. Hover values are SVG
//! `<title>` elements; colours are CSS classes (see the page's style) except heatmap cells,
//! whose fill is computed from the value.

use std::fmt::Write as _;

use wirespeed_model::observation::{CpuUse, Percent};
use wirespeed_model::{CpuSet, Topology};

use super::esc;
use crate::doc::group_order;

/// One line of a line chart: a value per interval (start s, end s, value), drawn as steps.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    /// Drawn thick in the foreground colour (the sum).
    pub sum: bool,
}

/// One axis: where it ends and the step between its ticks (1, 2 or 5 × a power of ten).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub max: f64,
    pub step: f64,
}

/// The nice step (1, 2 or 5 × a power of ten) that cuts `0..max` into at most about `parts`
/// parts: 3 s in 5 parts → 1 s, 10 s → 2 s, 0.6 → 0.2.
pub fn nice_step(max: f64, parts: u32) -> f64 {
    if !(max.is_finite() && max > 0.0) || parts == 0 {
        return 1.0;
    }
    let raw = max / f64::from(parts);
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0] {
        // a hair of slack: 0.6 / 3 is 0.19999999999999998
        if m * p >= raw * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

impl Axis {
    /// A value axis for values up to `max`: it ends at the first tick at or above `max`
    /// (35.2 → 0, 10, 20, 30, 40).
    pub fn values(max: f64) -> Axis {
        let step = nice_step(max, 4);
        let max = if max.is_finite() && max > 0.0 {
            (max / step * (1.0 - 1e-9)).ceil().max(1.0) * step
        } else {
            step
        };
        Axis { max, step }
    }

    /// A time axis that ends where the test ended (`end` seconds), ticks at nice steps within
    /// it (a 3 s test: 0, 1, 2, 3).
    pub fn time(end: f64) -> Axis {
        let max = if end.is_finite() && end > 0.0 {
            end
        } else {
            1.0
        };
        Axis {
            max,
            step: nice_step(max, 5),
        }
    }

    /// The tick values: 0, step, 2 × step, … up to the end.
    pub fn ticks(&self) -> Vec<f64> {
        let n = (self.max / self.step * (1.0 + 1e-9)).floor() as usize;
        (0..=n.min(100)).map(|i| i as f64 * self.step).collect()
    }

    /// A tick's label, with as many decimals as the step needs (0.5 → "0.5", 2 → "2").
    pub fn label(&self, v: f64) -> String {
        let decimals = (-self.step.log10().floor()).clamp(0.0, 6.0) as usize;
        format!("{v:.decimals$}")
    }
}

/// A y-axis maximum that is a round number at or above `max`.
pub fn nice_max(max: f64) -> f64 {
    Axis::values(max).max
}

fn tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

const W: f64 = 640.0;
const H: f64 = 230.0;
const L: f64 = 58.0;
const R: f64 = 14.0;
const T: f64 = 12.0;
const B: f64 = 38.0;

fn axes(h: &mut String, x: Axis, y: Axis, x_label: &str, y_label: &str) {
    let pw = W - L - R;
    let ph = H - T - B;
    for v in y.ticks() {
        let py = T + ph - ph * v / y.max;
        let _ = write!(
            h,
            "<line class=\"gr\" x1=\"{L}\" x2=\"{:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\"/>\
             <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            L + pw,
            L - 6.0,
            py + 4.0,
            y.label(v)
        );
    }
    for v in x.ticks() {
        let px = L + pw * v / x.max;
        let _ = write!(
            h,
            "<text class=\"m\" x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            T + ph + 15.0,
            x.label(v)
        );
    }
    let _ = write!(
        h,
        "<line class=\"ax\" x1=\"{L}\" x2=\"{L}\" y1=\"{T}\" y2=\"{:.1}\"/>\
         <line class=\"ax\" x1=\"{L}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>\
         <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
         <text class=\"m\" transform=\"translate(13 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        T + ph,
        L + pw,
        T + ph,
        T + ph,
        L + pw / 2.0,
        H - 4.0,
        esc(x_label),
        T + ph / 2.0,
        esc(y_label)
    );
}

/// The plot of a chart over time ([`line_chart`], [`bar_chart`]): x in seconds, y in the
/// chart's unit.
struct TimePlot {
    x_max: f64,
    y_max: f64,
}

impl TimePlot {
    /// Opens the figure with its caption and draws the axes, reaching `x_max` seconds and
    /// `y_max` in `unit` (each rounded up to a tick).
    fn open(h: &mut String, caption: &str, unit: &str, x_max: f64, y_max: f64) -> TimePlot {
        let (xa, ya) = (Axis::time(x_max), Axis::values(y_max));
        let _ = write!(
            h,
            "<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {W} {H}\" style=\"max-width:820px\" role=\"img\" aria-label=\"{}\">",
            esc(caption),
            esc(caption)
        );
        axes(h, xa, ya, "seconds", unit);
        TimePlot {
            x_max: xa.max,
            y_max: ya.max,
        }
    }

    fn x(&self, v: f64) -> f64 {
        L + (W - L - R) * v / self.x_max
    }

    fn y(&self, v: f64) -> f64 {
        let ph = H - T - B;
        T + ph - ph * v / self.y_max
    }
}

/// The largest value of `series` (what their y axis must reach).
pub fn series_max(series: &[Series]) -> f64 {
    series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.2))
        .fold(0.0, f64::max)
}

/// A line chart of `series` over x (seconds, the axis ending where the last interval ends); the
/// y values are already in `unit`, the y axis reaches `y_max` (at least the series' largest
/// value: side-by-side documents pass the largest of them all, so their charts share one scale).
pub fn line_chart(h: &mut String, caption: &str, unit: &str, series: &[Series], y_max: f64) {
    let x_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let plot = TimePlot::open(h, caption, unit, x_max, series_max(series).max(y_max));
    let (x, y) = (|v| plot.x(v), |v| plot.y(v));
    let mut colour = 0;
    let mut legend = String::new();
    for s in series {
        let cls = if s.sum {
            "sum".to_string()
        } else {
            let c = format!("s{}", colour % 8);
            colour += 1;
            c
        };
        let d: Vec<String> = s
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "{}{:.1},{:.1}H{:.1}",
                    if i == 0 { 'M' } else { 'L' },
                    x(p.0),
                    y(p.2),
                    x(p.1)
                )
            })
            .collect();
        let _ = write!(h, "<path class=\"ln {cls}\" d=\"{}\"/>", d.join(""));
        for p in &s.points {
            let _ = write!(
                h,
                "<circle class=\"pt {cls}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"><title>{}, {}–{} s: {} {}</title></circle>",
                x((p.0 + p.1) / 2.0),
                y(p.2),
                esc(&s.name),
                tick(p.0),
                tick(p.1),
                tick(p.2),
                esc(unit)
            );
        }
        let swatch = if s.sum {
            "var(--fg)".to_string()
        } else {
            format!("var(--{cls})")
        };
        let _ = write!(
            legend,
            "<span><i style=\"background:{swatch}\"></i>{}</span>",
            esc(&s.name)
        );
    }
    let _ = writeln!(h, "</svg><div class=\"legend\">{legend}</div></figure>");
}

/// A chart's place kept where a document lacks what a document beside it draws (a `-R`
/// test's client received: the sender's retransmits, cwnd and RTT are the peer's), as tall as
/// [`line_chart`]'s, so the charts after it stay level with their neighbours.
pub fn placeholder(h: &mut String, caption: &str, why: &str) {
    let _ = writeln!(
        h,
        "<figure class=\"placeholder\"><figcaption>{}</figcaption><svg viewBox=\"0 0 {W} {H}\" style=\"max-width:820px\" role=\"img\" aria-label=\"{}: not in this document\">\
         <text class=\"m\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text></svg><div class=\"legend\"><span>&#160;</span></div></figure>",
        esc(caption),
        esc(caption),
        W / 2.0,
        H / 2.0,
        esc(why)
    );
}

/// Bars, one per x value (e.g. retransmits per interval); the y axis reaches `y_max` at least
/// (as [`line_chart`]).
pub fn bar_chart(h: &mut String, caption: &str, unit: &str, bars: &[(f64, f64, f64)], y_max: f64) {
    // (start, end, value)
    let x_max = bars.iter().map(|b| b.1).fold(0.0, f64::max);
    let plot = TimePlot::open(
        h,
        caption,
        unit,
        x_max,
        bars.iter().map(|b| b.2).fold(y_max, f64::max),
    );
    let (x, y) = (|v| plot.x(v), |v| plot.y(v));
    for &(s, e, v) in bars {
        let w = (x(e) - x(s) - 2.0).max(1.0);
        let _ = write!(
            h,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\"><title>{}–{} s: {} {}</title></rect>",
            x(s) + 1.0,
            y(v),
            (plot.y(0.0) - y(v)).max(0.0),
            tick(s),
            tick(e),
            tick(v),
            esc(unit)
        );
    }
    h.push_str("</svg></figure>\n");
}

/// Under a CPU axis: a bracket and a label for each L3 group (and node) of `order`.
fn group_brackets(
    h: &mut String,
    order: &[u32],
    topo: Option<&Topology>,
    x0: f64,
    step: f64,
    y: f64,
) {
    let Some(topo) = topo else { return };
    for (label, groups, dy) in [("L3 ", &topo.l3_groups, 0.0), ("node ", &topo.nodes, 18.0)] {
        if groups.len() < 2 && label == "node " {
            continue;
        }
        for (gi, g) in groups.iter().enumerate() {
            let idx: Vec<usize> = order
                .iter()
                .enumerate()
                .filter(|(_, c)| g.contains(**c))
                .map(|(i, _)| i)
                .collect();
            let (Some(&a), Some(&b)) = (idx.first(), idx.last()) else {
                continue;
            };
            let xa = x0 + step * a as f64 + 2.0;
            let xb = x0 + step * (b + 1) as f64 - 2.0;
            let yy = y + dy;
            let _ = write!(
                h,
                "<path class=\"ln ax\" d=\"M{xa:.1},{:.1}V{yy:.1}H{xb:.1}V{:.1}\"/>\
                 <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}{gi} ({})</text>",
                yy - 4.0,
                yy - 4.0,
                (xa + xb) / 2.0,
                yy + 12.0,
                g
            );
        }
    }
}

/// Per-CPU work as stacked bars (user/system/IRQ/softirq/steal), the application's CPUs
/// marked, and under them where the NIC's interrupts landed.
pub fn cpu_bars(
    h: &mut String,
    caption: &str,
    cpus: &[CpuUse],
    app: &CpuSet,
    topo: Option<&Topology>,
    show_irqs: bool,
) {
    let ids: Vec<u32> = cpus.iter().map(|c| c.cpu).collect();
    let order = group_order(&ids, topo);
    let n = order.len().max(1) as f64;
    let step = ((W - L - R) / n).min(48.0);
    let bw = (step * 0.7).max(2.0);
    let ph = 150.0;
    let irq_h = if show_irqs { 46.0 } else { 0.0 };
    let brackets = match topo {
        Some(t) if t.nodes.len() > 1 => 40.0,
        Some(_) => 22.0,
        None => 0.0,
    };
    let height = T + ph + 34.0 + irq_h + brackets + 6.0;
    let _ = write!(
        h,
        "<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {W} {height:.0}\" style=\"max-width:820px\" role=\"img\" aria-label=\"{}\">",
        esc(caption),
        esc(caption)
    );
    for i in 0..=4 {
        let y = T + ph - ph * f64::from(i) / 4.0;
        let _ = write!(
            h,
            "<line class=\"gr\" x1=\"{L}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}%</text>",
            L + step * n,
            L - 6.0,
            y + 4.0,
            25 * i
        );
    }
    let max_irq = cpus.iter().map(|c| c.nic_irqs).max().unwrap_or(0);
    for (i, cpu) in order.iter().enumerate() {
        let Some(c) = cpus.iter().find(|c| c.cpu == *cpu) else {
            continue;
        };
        let x = L + step * i as f64 + (step - bw) / 2.0;
        let mut top = T + ph;
        let tip = format!(
            "CPU {}: {}; NIC interrupts {}",
            c.cpu,
            shares_text(&c.shares()),
            c.nic_irqs
        );
        // The bar stacks the busy shares (idle, the last, is the gap above them).
        for ((name, v), cls) in c.shares().into_iter().zip(["u", "sy", "irq", "si", "st"]) {
            let v = v.get().clamp(0.0, 100.0);
            if v <= 0.0 {
                continue;
            }
            let hh = ph * v / 100.0;
            top -= hh;
            let _ = write!(
                h,
                "<rect class=\"{cls}\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{bw:.1}\" height=\"{hh:.1}\"><title>CPU {}: {name} {v:.1} %\n{tip}</title></rect>",
                c.cpu
            );
        }
        let is_app = app.contains(c.cpu);
        let ly = T + ph + 14.0;
        if is_app {
            let _ = write!(
                h,
                "<rect class=\"appmark\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"15\" rx=\"3\"><title>CPU {} runs the application (a worker)</title></rect>",
                L + step * i as f64 + 1.0,
                ly - 11.0,
                step - 2.0,
                c.cpu
            );
        }
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{ly:.1}\" text-anchor=\"middle\"{}>{}<title>{tip}</title></text>",
            L + step * (i as f64 + 0.5),
            if is_app { " font-weight=\"700\"" } else { "" },
            c.cpu
        );
        if show_irqs {
            let base = T + ph + 30.0 + irq_h - 14.0;
            let hh = if max_irq == 0 {
                0.0
            } else {
                (irq_h - 18.0) * c.nic_irqs as f64 / max_irq as f64
            };
            let _ = write!(
                h,
                "<rect class=\"nic\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{hh:.1}\"><title>CPU {}: {} NIC interrupts</title></rect>\
                 <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                base - hh,
                c.cpu,
                c.nic_irqs,
                L + step * (i as f64 + 0.5),
                base + 11.0,
                short_count(c.nic_irqs)
            );
        }
    }
    let _ = write!(
        h,
        "<text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">CPU</text>",
        L - 6.0,
        T + ph + 14.0
    );
    if show_irqs {
        let _ = write!(
            h,
            "<text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">NIC irqs</text>",
            L - 6.0,
            T + ph + 30.0 + irq_h - 3.0
        );
    }
    group_brackets(h, &order, topo, L, step, T + ph + 34.0 + irq_h + 8.0);
    h.push_str("</svg><div class=\"legend\">");
    for (cls, name) in [
        ("u", "user"),
        ("sy", "system"),
        ("irq", "IRQ"),
        ("si", "softirq"),
        ("st", "steal"),
    ] {
        let _ = write!(
            h,
            "<span><i style=\"background:var(--{cls})\"></i>{name}</span>"
        );
    }
    h.push_str("<span><i style=\"background:var(--app)\"></i>application CPU</span>");
    if show_irqs {
        h.push_str("<span><i style=\"background:var(--nic)\"></i>NIC interrupts</span>");
    }
    h.push_str("</div></figure>\n");
}

/// A CPU's shares in words, as its tooltips write them: `user 1.0 %, system 2.5 %, ...`.
pub(super) fn shares_text(shares: &[(&str, Percent)]) -> String {
    let words: Vec<String> = shares
        .iter()
        .map(|(name, v)| format!("{name} {:.1} %", v.get()))
        .collect();
    words.join(", ")
}

pub(super) fn short_count(n: u64) -> String {
    if n >= 10_000_000 {
        format!("{}M", n / 1_000_000)
    } else if n >= 10_000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// A colour for `t` in 0..=1 on a perceptually even scale (viridis), and the text colour that
/// reads on it.
pub fn scale(t: f64) -> (String, &'static str) {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let p = t * 4.0;
    let i = (p.floor() as usize).min(3);
    let f = p - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let c = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    (
        format!("#{:02x}{:02x}{:02x}", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2)),
        if t > 0.55 { "#111" } else { "#fff" },
    )
}

/// The most rows (and columns) a heatmap draws.
pub const MAX_AXIS: usize = 512;

/// What a heatmap shows.
pub struct Heatmap<'a> {
    pub caption: &'a str,
    pub row_label: &'a str,
    pub col_label: &'a str,
    pub rows: &'a [u32],
    /// CPUs, or with `times` the interval indices into it.
    pub cols: &'a [u32],
    /// Columns are time: interval `i` spans `times[i]` (seconds), drawn in order and labelled by
    /// time; the topology then orders and outlines the rows only.
    pub times: Option<&'a [(f64, f64)]>,
    /// Cell value, or `None` for an empty cell.
    pub value: &'a dyn Fn(u32, u32) -> Option<f64>,
    /// The value as written in a cell and its hover text.
    pub fmt: &'a dyn Fn(f64) -> String,
    /// More hover text for a cell (row, column).
    pub detail: Option<&'a dyn Fn(u32, u32) -> Option<String>>,
    /// A row's name (default: its number).
    pub row_name: Option<&'a dyn Fn(u32) -> String>,
    /// The colour scale's ends (default: the lowest and highest value).
    pub range: Option<(f64, f64)>,
    /// Bright means high; with `higher_is_better` false the legend says so.
    pub higher_is_better: bool,
    /// What bright means, instead of "bright = better/worse".
    pub bright: Option<&'a str>,
    pub best: Option<(u32, u32)>,
    pub worst: Option<(u32, u32)>,
    pub topo: Option<&'a Topology>,
}

/// A heatmap: rows and columns ordered by node and L3 group, a line at every L3 boundary (a
/// thicker one at every node boundary), the blocks where row and column share an L3 group
/// outlined, the best cell boxed and the worst dashed.
pub fn heatmap(h: &mut String, m: &Heatmap<'_>) {
    let mut rows = group_order(m.rows, m.topo);
    let mut cols = match m.times {
        Some(_) => m.cols.to_vec(),
        None => group_order(m.cols, m.topo),
    };
    let cut = rows.len() > MAX_AXIS || cols.len() > MAX_AXIS;
    rows.truncate(MAX_AXIS);
    cols.truncate(MAX_AXIS);
    // Square cells for CPU × CPU; over time each axis gets its own size.
    let (cw, ch) = match m.times {
        Some(_) => (
            (640.0 / cols.len().max(1) as f64).clamp(6.0, 64.0),
            (420.0 / rows.len().max(1) as f64).clamp(12.0, 30.0),
        ),
        None => {
            let n = rows.len().max(cols.len()).max(1) as f64;
            let cell = (560.0 / n).clamp(12.0, 56.0);
            (cell, cell)
        }
    };
    let row_name = |r: u32| m.row_name.map_or_else(|| r.to_string(), |f| f(r));
    let longest = rows
        .iter()
        .map(|&r| row_name(r).chars().count())
        .max()
        .unwrap_or(0);
    let left = (28.0 + 7.0 * longest as f64).max(92.0);
    let top = 52.0;
    let gw = cw * cols.len() as f64;
    let gh = ch * rows.len() as f64;
    let col_x = column_edges(&cols, m.times, left, cw);
    let bright = m.bright.unwrap_or(if m.higher_is_better {
        "bright = better"
    } else {
        "bright = worse"
    });
    let width = (left + gw + 16.0)
        .max(left + 260.0 + 110.0)
        .max(left + 260.0 + 8.0 + 6.5 * bright.chars().count() as f64);
    let height = top + gh + 64.0;
    let values: Vec<f64> = rows
        .iter()
        .flat_map(|&r| cols.iter().map(move |&c| (r, c)))
        .filter_map(|(r, c)| (m.value)(r, c))
        .filter(|v| v.is_finite())
        .collect();
    let (lo, hi) = m.range.unwrap_or((
        values.iter().copied().fold(f64::INFINITY, f64::min),
        values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    ));
    let norm = |v: f64| {
        if hi > lo {
            (v - lo) / (hi - lo)
        } else {
            0.5
        }
    };
    let _ = write!(
        h,
        "<figure><figcaption>{}</figcaption><svg viewBox=\"0 0 {width:.0} {height:.0}\" style=\"max-width:{:.0}px\" role=\"img\" aria-label=\"{}\">",
        esc(m.caption),
        (width * 1.25).max(420.0),
        esc(m.caption)
    );
    let _ = write!(
        h,
        "<text class=\"m\" x=\"{:.1}\" y=\"14\" text-anchor=\"middle\">{} →</text>\
         <text class=\"m\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">← {}</text>",
        left + gw / 2.0,
        esc(m.col_label),
        top + gh / 2.0,
        esc(m.row_label)
    );
    let font = (cw.min(ch) * 0.32).clamp(7.0, 12.0);
    let col_name = |c: u32| match m.times.and_then(|t| t.get(c as usize)) {
        Some((a, b)) => format!("{}–{} s", secs(*a), secs(*b)),
        None => c.to_string(),
    };
    match m.times {
        Some(times) => time_labels(h, &cols, times, &col_x, top),
        None => {
            for (j, c) in cols.iter().enumerate() {
                let _ = write!(
                    h,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"font-size:{font:.0}px\">{c}</text>",
                    left + cw * (j as f64 + 0.5),
                    top - 6.0
                );
            }
        }
    }
    let col_word = if m.times.is_some() { "" } else { m.col_label };
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" style=\"font-size:{:.0}px\">{}</text>",
            left - 6.0,
            top + ch * (i as f64 + 0.5) + font.max(10.0) / 3.0,
            if m.times.is_some() { font.max(10.0) } else { font },
            esc(&row_name(*r))
        );
        for (j, c) in cols.iter().enumerate() {
            let (x, cw) = col_x[j];
            let y = top + ch * i as f64;
            let what = format!(
                "{} {r}, {}{}",
                m.row_label,
                if col_word.is_empty() {
                    String::new()
                } else {
                    format!("{col_word} ")
                },
                col_name(*c)
            );
            match (m.value)(*r, *c).filter(|v| v.is_finite()) {
                Some(v) => {
                    let (fill, ink) = scale(norm(v));
                    let text = (m.fmt)(v);
                    let more = m
                        .detail
                        .and_then(|d| d(*r, *c))
                        .map(|d| format!("\n{d}"))
                        .unwrap_or_default();
                    let _ = write!(
                        h,
                        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cw:.1}\" height=\"{ch:.1}\" fill=\"{fill}\"><title>{}: {}{}</title></rect>",
                        esc(&what),
                        esc(&text),
                        esc(&more)
                    );
                    if cw >= 26.0 && ch >= 14.0 {
                        let _ = write!(
                            h,
                            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"fill:{ink};font-size:{:.0}px;pointer-events:none\">{}</text>",
                            x + cw / 2.0,
                            y + ch / 2.0 + font / 3.0,
                            font * 0.95,
                            esc(&short_value(&text))
                        );
                    }
                }
                None => {
                    let _ = write!(
                        h,
                        "<rect class=\"gr\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cw:.1}\" height=\"{ch:.1}\" style=\"fill:var(--panel)\"><title>{}: no value</title></rect>",
                        esc(&what)
                    );
                }
            }
        }
    }
    if let Some(topo) = m.topo {
        let col_cpus: &[u32] = if m.times.is_some() { &[] } else { &cols };
        boundaries(h, &rows, col_cpus, topo, (left, top), (cw, ch), gw);
    }
    let worst = m.worst.filter(|w| Some(*w) != m.best);
    for (pair, cls, word) in [(m.best, "best", "best"), (worst, "worst", "worst")] {
        let Some((r, c)) = pair else { continue };
        let (Some(i), Some(j)) = (
            rows.iter().position(|&x| x == r),
            cols.iter().position(|&x| x == c),
        ) else {
            continue;
        };
        // A white halo under the mark keeps it visible on dark and bright cells alike.
        let (x, y, sw, sh) = (
            col_x[j].0 + 2.5,
            top + ch * i as f64 + 2.5,
            cw - 5.0,
            ch - 5.0,
        );
        let sw = sw.min(col_x[j].1 - 5.0);
        let _ = write!(
            h,
            "<rect class=\"halo\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{sw:.1}\" height=\"{sh:.1}\"/>\
             <rect class=\"{cls}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{sw:.1}\" height=\"{sh:.1}\"><title>{word}: {} {r}, {} {c}</title></rect>",
            esc(m.row_label),
            esc(m.col_label)
        );
    }
    // Legend: the scale from low to high.
    let ly = top + gh + 22.0;
    let lw = 260.0;
    for k in 0..20 {
        let (fill, _) = scale(f64::from(k) / 19.0);
        let _ = write!(
            h,
            "<rect x=\"{:.1}\" y=\"{ly:.1}\" width=\"{:.1}\" height=\"10\" fill=\"{fill}\"/>",
            left + lw * f64::from(k) / 20.0,
            lw / 20.0 + 0.5
        );
    }
    if values.is_empty() {
        let _ = write!(
            h,
            "<text class=\"m\" x=\"{left}\" y=\"{:.1}\">no values</text>",
            ly + 24.0
        );
    } else {
        let _ = write!(
            h,
            "<text class=\"m\" x=\"{left}\" y=\"{:.1}\">{}</text>\
             <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            ly + 24.0,
            esc(&(m.fmt)(lo)),
            left + lw,
            ly + 24.0,
            esc(&(m.fmt)(hi)),
            left + lw + 8.0,
            ly + 9.0,
            esc(bright)
        );
    }
    h.push_str("</svg><div class=\"legend\">");
    if m.best.is_some() || m.worst.is_some() {
        h.push_str("<span>solid box: best</span><span>dashed box: worst</span>");
    }
    if cut {
        let _ = write!(
            h,
            "<span>only the first {MAX_AXIS} rows and columns are drawn</span>"
        );
    }
    match (m.topo, m.times) {
        (Some(_), None) => h.push_str(
            "<span>thin line: L3 group boundary; thick line: NUMA node boundary; outlined blocks: same L3 group</span>",
        ),
        (Some(t), Some(_)) => {
            if t.l3_groups.len() > 1 || t.nodes.len() > 1 {
                h.push_str(
                    "<span>thin line: L3 group boundary; thick line: NUMA node boundary</span>",
                );
            }
        }
        (None, _) => h.push_str("<span>no topology in the document: L3 groups not drawn</span>"),
    }
    h.push_str("</div></figure>\n");
}

/// Seconds to at most two decimals, without trailing zeros (`1`, `2.5`, `3.01`).
fn secs(v: f64) -> String {
    let t = format!("{v:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Each column's left edge and width: CPUs `cw` wide each; over time, a share of the grid's
/// width (`cw` × columns) proportional to the column's interval, so a last interval of 0.03 s
/// is 3 % as wide as a whole second.
fn column_edges(cols: &[u32], times: Option<&[(f64, f64)]>, left: f64, cw: f64) -> Vec<(f64, f64)> {
    let uniform = || {
        (0..cols.len())
            .map(|j| (left + cw * j as f64, cw))
            .collect::<Vec<_>>()
    };
    let Some(times) = times else {
        return uniform();
    };
    let lengths: Vec<f64> = cols
        .iter()
        .map(|&c| times.get(c as usize).map_or(0.0, |(a, b)| (b - a).max(0.0)))
        .collect();
    let total: f64 = lengths.iter().sum();
    if !total.is_finite() || total <= 0.0 {
        return uniform();
    }
    let gw = cw * cols.len() as f64;
    let mut x = left;
    lengths
        .iter()
        .map(|l| {
            let w = gw * l / total;
            let edge = (x, w);
            x += w;
            edge
        })
        .collect()
}

/// Time along the top of a heatmap: each column's start where it has room, and the last end.
fn time_labels(h: &mut String, cols: &[u32], times: &[(f64, f64)], col_x: &[(f64, f64)], top: f64) {
    let mut last_label = f64::NEG_INFINITY;
    let tick = |h: &mut String, x: f64, t: f64| {
        let _ = write!(
            h,
            "<line class=\"ax\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{top:.1}\"/><text class=\"m\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top - 4.0,
            top - 8.0,
            secs(t),
        );
    };
    let end = cols
        .last()
        .zip(col_x.last())
        .and_then(|(c, &(x, w))| times.get(*c as usize).map(|t| (x + w, t.1)));
    for (j, c) in cols.iter().enumerate() {
        let (Some((a, _)), Some(&(x, _))) = (times.get(*c as usize), col_x.get(j)) else {
            continue;
        };
        // Starts at least 36 px apart and from the end, which is always labelled.
        let room_to_end = end.is_none_or(|(ex, _)| ex - x >= 36.0);
        if x - last_label >= 36.0 && room_to_end {
            tick(h, x, *a);
            last_label = x;
        }
    }
    if let Some((x, t)) = end {
        tick(h, x, t);
    }
}

fn short_value(s: &str) -> String {
    // "20.97 Gbit/s" → "20.97"; "123 ns" → "123"
    s.split_whitespace().next().unwrap_or("").to_string()
}

/// Group index (by `groups`) of each CPU in `order`.
fn group_of(order: &[u32], groups: &[CpuSet]) -> Vec<Option<usize>> {
    order
        .iter()
        .map(|c| groups.iter().position(|g| g.contains(*c)))
        .collect()
}

/// Runs of equal group index: (group, first position, one past the last).
fn runs(ids: &[Option<usize>]) -> Vec<(Option<usize>, usize, usize)> {
    let mut out: Vec<(Option<usize>, usize, usize)> = Vec::new();
    for (i, g) in ids.iter().enumerate() {
        match out.last_mut() {
            Some(last) if last.0 == *g => last.2 = i + 1,
            _ => out.push((*g, i, i + 1)),
        }
    }
    out
}

fn boundaries(
    h: &mut String,
    rows: &[u32],
    cols: &[u32],
    topo: &Topology,
    (left, top): (f64, f64),
    (cw, ch): (f64, f64),
    gw: f64,
) {
    let gh = ch * rows.len() as f64;
    for (groups, cls) in [(&topo.l3_groups, "l3"), (&topo.nodes, "node")] {
        let rr = runs(&group_of(rows, groups));
        let cr = runs(&group_of(cols, groups));
        for (k, &(_, a, _)) in rr.iter().enumerate() {
            if k > 0 {
                let y = top + ch * a as f64;
                let _ = write!(
                    h,
                    "<line class=\"{cls}\" x1=\"{left:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" style=\"stroke-opacity:.55\"/>",
                    left + gw
                );
            }
        }
        for (k, &(_, a, _)) in cr.iter().enumerate() {
            if k > 0 {
                let x = left + cw * a as f64;
                let _ = write!(
                    h,
                    "<line class=\"{cls}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top:.1}\" y2=\"{:.1}\" style=\"stroke-opacity:.55\"/>",
                    top + gh
                );
            }
        }
        if cls == "l3" {
            for &(g, ra, rb) in &rr {
                let Some(g) = g else { continue };
                for &(g2, ca, cb) in &cr {
                    if g2 == Some(g) {
                        let _ = write!(
                            h,
                            "<rect class=\"l3\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>L3 group {g} ({})</title></rect>",
                            left + cw * ca as f64,
                            top + ch * ra as f64,
                            cw * (cb - ca) as f64,
                            ch * (rb - ra) as f64,
                            topo.l3_groups[g]
                        );
                    }
                }
            }
            // Group names along the top.
            for &(g, ca, cb) in &cr {
                let Some(g) = g else { continue };
                let _ = write!(
                    h,
                    "<text class=\"m\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">L3 {g}</text>",
                    left + cw * (ca + cb) as f64 / 2.0,
                    top - 22.0
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_bar_stacks_its_busy_shares_and_its_tooltip_names_every_share() {
        let c = CpuUse {
            cpu: 3,
            user: Percent::new(10.0),
            softirq: Percent::new(30.0),
            idle: Percent::new(60.0),
            nic_irqs: 20000,
            ..Default::default()
        };
        let mut h = String::new();
        cpu_bars(&mut h, "CPUs", &[c], &CpuSet::default(), None, true);
        let tip = "CPU 3: user 10.0 %, system 0.0 %, irq 0.0 %, softirq 30.0 %, steal 0.0 %, \
                   idle 60.0 %; NIC interrupts 20000";
        assert!(
            h.contains(&format!("<title>CPU 3: user 10.0 %\n{tip}</title>")),
            "{h}"
        );
        assert!(
            h.contains(&format!("<title>CPU 3: softirq 30.0 %\n{tip}</title>")),
            "{h}"
        );
        assert!(
            h.contains("<rect class=\"u\" ") && h.contains("<rect class=\"si\" "),
            "{h}"
        );
        // a share of zero has no rect, and idle is the gap above the stack
        assert!(
            !h.contains("<rect class=\"sy\" ") && !h.contains(": idle 60.0 %\n"),
            "{h}"
        );
    }

    #[test]
    fn nice_maxima() {
        assert_eq!(nice_max(8.94), 10.0);
        assert_eq!(nice_max(21.0), 30.0);
        assert_eq!(nice_max(35.2), 40.0);
        assert_eq!(nice_max(40.0), 40.0);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
    }

    /// CPUs × time: columns in time order labelled by seconds, rows by their names, the fixed
    /// range on the legend, the detail in the hover text, no best/worst legend.
    #[test]
    fn heatmap_over_time() {
        let times = [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)];
        let value = |r: u32, c: u32| (r != 5 || c != 2).then(|| f64::from(r * 10 + c));
        let fmt = |v: f64| format!("{v:.0} %");
        let detail = |r: u32, _c: u32| Some(format!("softirq of {r}"));
        let name = |r: u32| format!("app · CPU {r}");
        let mut h = String::new();
        heatmap(
            &mut h,
            &Heatmap {
                caption: "busy",
                row_label: "CPU",
                col_label: "time (s)",
                rows: &[5, 4],
                cols: &[0, 1, 2],
                times: Some(&times),
                value: &value,
                fmt: &fmt,
                detail: Some(&detail),
                row_name: Some(&name),
                range: Some((0.0, 100.0)),
                higher_is_better: false,
                bright: Some("bright = busier"),
                best: None,
                worst: None,
                topo: None,
            },
        );
        assert!(h.contains(">app · CPU 4</text>"), "{h}");
        assert!(
            h.contains("<title>CPU 4, 1–2 s: 41 %\nsoftirq of 4</title>"),
            "{h}"
        );
        assert!(h.contains("<title>CPU 5, 2–3 s: no value</title>"), "{h}");
        assert!(
            h.contains(">0 %</text>") && h.contains(">100 %</text>"),
            "{h}"
        );
        assert!(h.contains("bright = busier"), "{h}");
        assert!(!h.contains("best"), "{h}");
        // Rows in CPU order; the time labels 0 … 3.
        assert!(h.find("CPU 4</text>") < h.find("CPU 5</text>"), "{h}");
        for t in ["0", "1", "2", "3"] {
            assert!(
                h.contains(&format!("text-anchor=\"middle\">{t}</text>")),
                "{t}: {h}"
            );
        }
    }

    /// Over time a column is as wide as its interval: three seconds and a last 0.03 s give the
    /// last column 1 % of the grid, not a quarter of it; CPUs stay equal.
    #[test]
    fn columns_over_time_are_as_wide_as_their_intervals() {
        let times = [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 3.03)];
        let e = column_edges(&[0, 1, 2, 3], Some(&times), 100.0, 50.0);
        let total: f64 = e.iter().map(|c| c.1).sum();
        assert!((total - 200.0).abs() < 1e-9, "{e:?}");
        for (k, (a, b)) in times.iter().enumerate() {
            let share = e[k].1 / total;
            assert!((share - (b - a) / 3.03).abs() < 1e-9, "{k}: {e:?}");
        }
        // contiguous from the left edge
        assert_eq!(e[0].0, 100.0);
        for k in 1..4 {
            assert!((e[k].0 - (e[k - 1].0 + e[k - 1].1)).abs() < 1e-9);
        }
        assert!(e[3].1 < 0.011 * total);
        assert_eq!(
            column_edges(&[7, 9], None, 10.0, 20.0),
            vec![(10.0, 20.0), (30.0, 20.0)]
        );
        // no lengths to go by: equal columns
        assert_eq!(
            column_edges(&[0, 1], Some(&[(1.0, 1.0), (1.0, 1.0)]), 0.0, 5.0),
            vec![(0.0, 5.0), (5.0, 5.0)]
        );
        // drawn: the sliver's rect is a sliver, and the test's end is labelled
        let value = |_: u32, c: u32| Some(f64::from(c));
        let fmt = |v: f64| format!("{v:.0} %");
        let mut h = String::new();
        heatmap(
            &mut h,
            &Heatmap {
                caption: "busy",
                row_label: "CPU",
                col_label: "time (s)",
                rows: &[0],
                cols: &[0, 1, 2, 3],
                times: Some(&times),
                value: &value,
                fmt: &fmt,
                detail: None,
                row_name: None,
                range: Some((0.0, 100.0)),
                higher_is_better: false,
                bright: None,
                best: None,
                worst: None,
                topo: None,
            },
        );
        let widths: Vec<f64> = h
            .split("<rect x=")
            .skip(1)
            .filter(|r| r.contains("<title>CPU 0,"))
            .map(|r| {
                let w = r.split("width=\"").nth(1).unwrap();
                w[..w.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(widths.len(), 4, "{h}");
        assert!(
            (widths[0] / widths[3] - 1.0 / 0.03).abs() < 1.0,
            "{widths:?}"
        );
        assert!(h.contains("text-anchor=\"middle\">3.03</text>"), "{h}");
    }

    fn labels(a: Axis) -> Vec<String> {
        a.ticks().iter().map(|&v| a.label(v)).collect()
    }

    #[test]
    fn steps_are_one_two_five() {
        assert_eq!(nice_step(3.0, 5), 1.0);
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(30.0, 5), 10.0);
        assert_eq!(nice_step(0.6, 3), 0.2);
        assert_eq!(nice_step(2.4, 5), 0.5);
        assert_eq!(nice_step(1000.0, 4), 500.0);
        assert_eq!(nice_step(0.0, 5), 1.0);
        assert_eq!(nice_step(f64::INFINITY, 5), 1.0);
        for max in [0.37, 1.0, 2.9, 3.0, 7.5, 12.0, 60.0, 86_400.0] {
            let s = nice_step(max, 5);
            let m = s / 10f64.powf(s.log10().floor());
            assert!(
                [1.0, 2.0, 5.0].iter().any(|x| (m - x).abs() < 1e-9),
                "{max}: {s}"
            );
            assert!(max / s <= 5.0 + 1e-9 && max / s > 1.0, "{max}: {s}");
        }
    }

    #[test]
    fn seconds_are_short() {
        assert_eq!(secs(1.000_03), "1");
        assert_eq!(secs(0.0), "0");
        assert_eq!(secs(2.5), "2.5");
        assert_eq!(secs(3.012), "3.01");
        assert_eq!(secs(10.0), "10");
    }

    #[test]
    fn a_three_second_test_has_whole_second_ticks_and_ends_at_three() {
        // was 0, 0.80, 1.60, 2.40, 3.20, 4.00
        let a = Axis::time(3.0);
        assert_eq!(a.max, 3.0);
        assert_eq!(labels(a), ["0", "1", "2", "3"]);
        // the last interval ends a hair after 3 s: the same ticks
        assert_eq!(labels(Axis::time(3.000_2)), ["0", "1", "2", "3"]);
        assert_eq!(labels(Axis::time(10.0)), ["0", "2", "4", "6", "8", "10"]);
        assert_eq!(
            labels(Axis::time(2.5)),
            ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]
        );
        assert_eq!(labels(Axis::time(7.0)), ["0", "2", "4", "6"]);
    }

    #[test]
    fn value_axes_end_on_a_tick() {
        let a = Axis::values(35.2);
        assert_eq!((a.max, a.step), (40.0, 10.0));
        assert_eq!(labels(a), ["0", "10", "20", "30", "40"]);
        assert_eq!(labels(Axis::values(0.3)), ["0.0", "0.1", "0.2", "0.3"]);
        assert_eq!(labels(Axis::values(0.0)), ["0", "1"]);
        assert_eq!(labels(Axis::values(f64::NAN)), ["0", "1"]);
    }

    #[test]
    fn scale_ends() {
        assert_eq!(scale(0.0).0, "#440154");
        assert_eq!(scale(1.0).0, "#fde725");
        assert_eq!(scale(f64::NAN).0, "#440154");
    }
}
