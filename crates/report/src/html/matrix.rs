//! Sweep and latency heatmaps.

use std::fmt::Write as _;

use super::chart::{self, Heatmap};
use super::{esc, rate};
use crate::doc::{LatencyDoc, SweepDoc};

pub(super) fn sweep(h: &mut String, s: &SweepDoc) {
    let m = &s.matrix;
    let (rl, cl) = m.axes.labels();
    let (rows, cols): (Vec<u32>, Vec<u32>) = (m.rows.iter().collect(), m.cols.iter().collect());
    let summary = s.summary.as_ref();
    if let Some(rec) = summary.map(|x| &x.recommendation).filter(|r| !r.is_empty()) {
        let _ = write!(h, "<div class=\"verdict\"><b>{}</b></div>", esc(rec));
    }
    if s.interrupted {
        h.push_str("<p class=\"mute\">the sweep was interrupted: some cells are empty</p>");
    }
    if let Some(n) = summary.and_then(|x| x.noise.as_ref()) {
        let _ = write!(
            h,
            "<p class=\"mute\">noise: each cell's spread (standard deviation of its {}) is {:.1}–{:.1} % of its median; {} of {} cells cannot be told from the best{}</p>",
            esc(n.best_spread.from.words()),
            n.spread_pct.0,
            n.spread_pct.1,
            n.tied.len(),
            m.pairs().count(),
            if n.beyond { "" } else { ": no pair is better beyond the noise" }
        );
    }
    let value = |r: u32, c: u32| m.median(r, c);
    let fmt = rate;
    let detail = |r: u32, c: u32| {
        let cell = m.cell(r, c)?;
        let mut d = Vec::new();
        if let Some(sp) = cell.spread() {
            d.push(format!(
                "± {} (standard deviation of {} {})",
                rate(sp.sd),
                sp.samples,
                sp.from.words()
            ));
        }
        if let Some(v) = cell.verdict() {
            d.push(format!("verdict: {v}"));
        }
        (!d.is_empty()).then(|| d.join("\n"))
    };
    let meds: Vec<f64> = m.pairs().map(|p| p.median.0).collect();
    let range = (!meds.is_empty()).then(|| {
        wirespeed_model::doc::scale_range(
            meds.iter().copied().fold(f64::INFINITY, f64::min),
            meds.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        )
    });
    // The scale reaches down to half the best cell at least: a 1 % spread is 2 % of it.
    let caption = format!(
        "Throughput (median Gbit/s) by {rl} × {cl}; colours from {:.0} % of the best up",
        wirespeed_model::doc::SCALE_FLOOR * 100.0
    );
    chart::heatmap(
        h,
        &Heatmap {
            caption: &caption,
            row_label: rl,
            col_label: cl,
            rows: &rows,
            cols: &cols,
            times: None,
            value: &value,
            fmt: &fmt,
            detail: Some(&detail),
            row_name: None,
            range,
            bright: None,
            higher_is_better: true,
            best: summary.map(|x| (x.best.row, x.best.col)),
            worst: summary.map(|x| (x.worst.row, x.worst.col)),
            topo: s.topology.as_ref(),
        },
    );
    if let Some(sum) = summary {
        h.push_str("<div class=\"facts\">");
        {
            let b = sum.best;
            let _ = write!(
                h,
                "<div><span>best</span>{} {}, {} {}: {}</div>",
                rl,
                b.row,
                cl,
                b.col,
                esc(&rate(b.median.0))
            );
        }
        {
            let w = sum.worst;
            let _ = write!(
                h,
                "<div><span>worst</span>{} {}, {} {}: {}</div>",
                rl,
                w.row,
                cl,
                w.col,
                esc(&rate(w.median.0))
            );
        }
        h.push_str("</div>\n");
    }
    let errors: Vec<String> = m
        .cells
        .iter()
        .flatten()
        .filter_map(|c| c.error.clone())
        .collect();
    if !errors.is_empty() {
        let _ = write!(
            h,
            "<p class=\"mute\">{} cells failed, e.g.: {}</p>",
            errors.len(),
            esc(&errors[0])
        );
    }
}

pub(super) fn latency(h: &mut String, doc: &LatencyDoc) {
    let l = &doc.matrix;
    let cpus: Vec<u32> = l.cpus.iter().collect();
    h.push_str("<div class=\"facts\">");
    if let Some(m) = l.mean_ns {
        let _ = write!(h, "<div><span>mean</span>{m:.0} ns</div>");
    }
    if let Some(p) = l.min {
        let _ = write!(
            h,
            "<div><span>fastest pair</span>CPU {} ↔ {}: {:.0} ns</div>",
            p.a, p.b, p.mean_ns
        );
    }
    if let Some(p) = l.max {
        let _ = write!(
            h,
            "<div><span>slowest pair</span>CPU {} ↔ {}: {:.0} ns</div>",
            p.a, p.b, p.mean_ns
        );
    }
    let _ = writeln!(
        h,
        "<div><span>samples × round trips</span>{} × {}</div></div>",
        l.samples, l.round_trips
    );
    let value = |a: u32, b: u32| {
        let i = cpus.iter().position(|&x| x == a)?;
        let j = cpus.iter().position(|&x| x == b)?;
        l.matrix
            .get(i)?
            .get(j)
            .copied()
            .flatten()
            .map(|p| p.mean_ns)
    };
    let fmt = |v: f64| format!("{v:.0} ns");
    chart::heatmap(
        h,
        &Heatmap {
            caption: "Core-to-core round trip (mean ns; one cache line bounced between two pinned threads)",
            row_label: "CPU",
            col_label: "CPU",
            rows: &cpus,
            cols: &cpus,
            times: None,
            value: &value,
            fmt: &fmt,
            detail: None,
            row_name: None,
            range: None,
            bright: None,
            higher_is_better: false,
            best: l.min.map(|p| (p.a, p.b)),
            worst: l.max.map(|p| (p.a, p.b)),
            topo: doc.topology.as_ref(),
        },
    );
    if !l.by_relation.is_empty() {
        h.push_str("<table><thead><tr><th>pairs</th><th class=\"num\">count</th><th class=\"num\">mean</th></tr></thead><tbody>");
        for r in &l.by_relation {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0} ns</td></tr>",
                esc(r.relation.as_str()),
                r.pairs,
                r.mean_ns
            );
        }
        h.push_str("</tbody></table>\n");
    }
}
