//! One self-contained HTML page from one or more documents ([`crate::doc::Document`]).
//!
//! Everything is inline: CSS in a `<style>` element, charts as inline SVG, hover values as SVG
//! `<title>` elements (no script at all). A Content-Security-Policy meta tag forbids every fetch
//! (`default-src 'none'`), so the page cannot reach the network when it is viewed. Colours come
//! from CSS variables with a dark set under `prefers-color-scheme: dark` and a plain set for
//! print. Several documents render side by side, with a comparison table against the first one
//! (built by [`crate::diff`]).
//!
//! Submodules: [`chart`] (SVG primitives: line and bar charts, stacked per-CPU bars, heatmaps),
//! `test` (a test and a `--repeat`), `matrix` (sweep and latency heatmaps), `doctor`
//! (findings), [`topology`] (the host drawn: nodes, L3 groups, CPUs, NICs; the doctor page's and
//! the test report's).

use std::fmt::Write as _;
use std::io;

use crate::doc::Document;

pub mod chart;
mod doctor;
mod matrix;
mod test;
pub mod topology;

/// One document to render and the name it is shown under (its file name).
pub struct Input<'a> {
    pub name: &'a str,
    pub doc: &'a Document,
}

/// The page's Content-Security-Policy: nothing may be fetched, inline styles only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// Render the page for `inputs` (in order) to `w`.
pub fn render<W: io::Write + ?Sized>(
    inputs: &[Input<'_>],
    title: &str,
    w: &mut W,
) -> io::Result<()> {
    let mut h = String::with_capacity(64 << 10);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"wirespeed {}\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title),
        CSS
    );
    let _ = write!(h, "<header><h1>{}</h1>", esc(title));
    for i in inputs {
        let _ = write!(h, "<p class=\"mute\">{} ({})", esc(i.name), i.doc.kind());
        if let Document::Test(t) = i.doc {
            // What was run, in one line: the end and its target or peer, the time, the versions.
            let ran = test::what_ran(t);
            let get = |k: &str| {
                ran.iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.as_str())
            };
            let mut parts = Vec::new();
            match (get("end"), get("target"), get("port"), get("client")) {
                (Some(e), Some(host), Some(port), _) => {
                    parts.push(format!("{e} of {host} port {port}"))
                }
                (Some(e), _, Some(port), Some(c)) => {
                    parts.push(format!("{e} on port {port}, client {c}"))
                }
                _ => {}
            }
            parts.extend(
                ["time", "version"]
                    .iter()
                    .filter_map(|k| get(k))
                    .map(String::from),
            );
            if let Some(p) = get("peer version") {
                parts.push(format!("peer {p}"));
            }
            if !parts.is_empty() {
                let _ = write!(h, ": {}", esc(&parts.join(" · ")));
            }
            if let Some(c) = get("command") {
                let _ = write!(h, "<br><code>{}</code>", esc(c));
            }
        }
        h.push_str("</p>");
    }
    h.push_str("</header>\n");
    if inputs.len() > 1 {
        compare(&mut h, inputs);
    }
    let cls = if inputs.len() > 1 {
        "docs multi"
    } else {
        "docs"
    };
    let _ = writeln!(h, "<main class=\"{cls}\">");
    // side by side, the same quantity on one y scale
    let scales = if inputs.len() > 1 {
        let docs: Vec<&Document> = inputs.iter().map(|i| i.doc).collect();
        test::Scales::of(&docs)
    } else {
        test::Scales::default()
    };
    for (i, input) in inputs.iter().enumerate() {
        let _ = writeln!(
            h,
            "<section class=\"doc\" id=\"doc{i}\">\n<h2>{} <span class=\"kind\">{}</span></h2>",
            esc(input.name),
            input.doc.kind()
        );
        match input.doc {
            Document::Test(t) => test::test(&mut h, t, &scales),
            Document::Repeat(r) => test::repeat(&mut h, r, &scales),
            Document::Sweep(s) => matrix::sweep(&mut h, s),
            Document::Latency(l) => matrix::latency(&mut h, l),
            Document::Doctor(d) => doctor::doctor(&mut h, d),
        }
        h.push_str("</section>\n");
    }
    h.push_str("</main>\n</body>\n</html>\n");
    w.write_all(h.as_bytes())
}

/// The comparison table: each later document against the first.
fn compare(h: &mut String, inputs: &[Input<'_>]) {
    let first = &inputs[0];
    h.push_str("<section class=\"compare\"><h2>Compared with the first document</h2>\n");
    for other in &inputs[1..] {
        let d = crate::diff::diff(first.doc, other.doc);
        let _ = writeln!(h, "<h3>{} → {}</h3>", esc(first.name), esc(other.name));
        if !d.comparable() {
            let _ = writeln!(
                h,
                "<p class=\"mute\">a {} and a {}: shown side by side, not compared</p>",
                d.kinds.0, d.kinds.1
            );
            continue;
        }
        if !d.setup.is_empty() {
            h.push_str("<p><b>setup changed</b></p><table class=\"cmp\"><thead><tr><th>setting</th><th>before</th><th>after</th></tr></thead><tbody>\n");
            for c in &d.setup {
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&c.what),
                    esc(&c.before),
                    esc(&c.after)
                );
            }
            h.push_str("</tbody></table>\n");
        }
        if let Some(n) = &d.note {
            let _ = writeln!(h, "<p class=\"mute\">note: {}</p>", esc(n));
        }
        for (word, ids) in [("added", &d.added), ("gone", &d.gone)] {
            if !ids.is_empty() {
                let _ = writeln!(h, "<p>findings {word}: {}</p>", esc(&ids.join(", ")));
            }
        }
        if d.changes.is_empty() {
            if d.added.is_empty() && d.gone.is_empty() {
                h.push_str("<p class=\"mute\">no difference found</p>\n");
            }
            continue;
        }
        h.push_str("<table class=\"cmp\"><thead><tr><th>what</th><th>before</th><th>after</th><th>change</th></tr></thead><tbody>\n");
        for c in &d.changes {
            let cls = match c.pct {
                Some(p) if p > 0.0 && c.higher_is_better => "good",
                Some(p) if p < 0.0 && !c.higher_is_better => "good",
                Some(p) if p != 0.0 => "bad",
                _ => "",
            };
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{cls}\">{}</td></tr>",
                esc(&c.what),
                esc(&c.before),
                esc(&c.after),
                esc(&c.pct.map(|p| format!("{p:+.1} %")).unwrap_or_default())
            );
        }
        h.push_str("</tbody></table>\n");
    }
    h.push_str("</section>\n");
}

/// HTML/XML text and attribute escaping.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

pub use wirespeed_model::units::rate;

const CSS: &str = r#"
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1b1f24;--mute:#5b6470;--grid:#d5dae0;--panel:#f4f6f8;--line:#aab3bd;
--s0:#1f77b4;--s1:#d62728;--s2:#2ca02c;--s3:#9467bd;--s4:#8c564b;--s5:#e377c2;--s6:#17becf;--s7:#bcbd22;
--u:#4e79a7;--sy:#f28e2b;--irq:#e15759;--si:#59a14f;--st:#b07aa1;--nic:#7f3c8d;
--crit:#c62828;--warn:#a35f00;--info:#1565c0;--app:#ffe082;--good:#2e7d32;--bad:#c62828}
@media (prefers-color-scheme:dark){:root{--bg:#14171b;--fg:#e4e7eb;--mute:#9aa4af;--grid:#343b44;--panel:#1d2126;--line:#59626d;
--s0:#5fa8e8;--s1:#ff6b6b;--s2:#5ed35e;--s3:#c39bf0;--s4:#d19a7a;--s5:#ff9fdc;--s6:#4fd6e6;--s7:#e0e05a;
--u:#6f9bd1;--sy:#ffa552;--irq:#ff7b7d;--si:#7fcf72;--st:#d09cc4;--nic:#c586e0;
--crit:#ff6b6b;--warn:#ffb74d;--info:#64b5f6;--app:#6b5a12;--good:#6fd672;--bad:#ff6b6b}}
@media print{:root{--bg:#fff;--fg:#000;--mute:#444;--grid:#ccc;--panel:#fff;--line:#888;--app:#ffe082}
body{margin:0}.docs.multi,.charts{display:block}section.doc,figure,.finding{break-inside:avoid}}
*{box-sizing:border-box}
body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;padding:16px 20px;max-width:1800px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:8px 0}h3{font-size:15px;margin:14px 0 6px}
.mute{color:var(--mute)}.kind{font-size:12px;font-weight:normal;color:var(--mute);border:1px solid var(--line);border-radius:8px;padding:1px 7px;vertical-align:middle}
.docs{display:grid;grid-template-columns:1fr;gap:20px}
.docs.multi{grid-template-columns:repeat(auto-fit,minmax(520px,1fr))}
section.doc{min-width:0}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:0 14px}
/* side by side, each document's blocks (facts, verdict, every chart) are rows shared with its
   neighbours (a subgrid), so the same chart starts at the same height in every column */
.docs.multi{row-gap:0;column-gap:20px}.docs.multi>section.doc{display:grid;grid-template-rows:subgrid;grid-row:span 120;align-content:start}
.docs.multi .charts{display:contents}
figure{margin:10px 0 16px;background:var(--panel);border:1px solid var(--grid);border-radius:6px;padding:8px 10px}
figcaption{font-weight:600;margin-bottom:4px}
svg{display:block;width:100%;height:auto;max-width:100%}
svg text{fill:var(--fg);font:11px system-ui,sans-serif}
svg .m{fill:var(--mute)}svg .ax{stroke:var(--line);stroke-width:1}svg .gr{stroke:var(--grid);stroke-width:1}
svg .ln{fill:none;stroke-width:1.6}svg .ln.sum{stroke:var(--fg);stroke-width:2.6}
svg .pt{stroke:none}svg .pt.sum{fill:var(--fg)}
svg .s0{stroke:var(--s0);fill:var(--s0)}svg .s1{stroke:var(--s1);fill:var(--s1)}svg .s2{stroke:var(--s2);fill:var(--s2)}svg .s3{stroke:var(--s3);fill:var(--s3)}
svg .s4{stroke:var(--s4);fill:var(--s4)}svg .s5{stroke:var(--s5);fill:var(--s5)}svg .s6{stroke:var(--s6);fill:var(--s6)}svg .s7{stroke:var(--s7);fill:var(--s7)}
svg path.ln.s0,svg path.ln.s1,svg path.ln.s2,svg path.ln.s3,svg path.ln.s4,svg path.ln.s5,svg path.ln.s6,svg path.ln.s7{fill:none}
svg .u{fill:var(--u)}svg .sy{fill:var(--sy)}svg .irq{fill:var(--irq)}svg .si{fill:var(--si)}svg .st{fill:var(--st)}svg .nic{fill:var(--nic)}
svg .bar{fill:var(--s1)}svg .appmark{fill:var(--app);stroke:var(--fg);stroke-width:.6}
svg .l3{fill:none;stroke:var(--fg);stroke-width:2}svg .node{fill:none;stroke:var(--fg);stroke-width:3.5}
svg .halo{fill:none;stroke:#fff;stroke-width:5}svg .best{fill:none;stroke:#000;stroke-width:2.5}svg .worst{fill:none;stroke:#000;stroke-width:2.5;stroke-dasharray:4 3}
svg .cpu{fill:var(--bg);stroke:var(--line)}svg .cpu.app{fill:var(--app);stroke:var(--fg)}
svg .gbox{fill:none;stroke:var(--line);stroke-width:1.5;stroke-dasharray:5 3}svg .nbox{fill:var(--panel);stroke:var(--fg);stroke-width:1.5}
svg .nicbox{fill:var(--bg);stroke:var(--nic);stroke-width:2}svg .irqdot{fill:var(--nic)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--mute);margin-top:4px}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.verdict{border-left:5px solid var(--info);background:var(--panel);padding:8px 12px;margin:8px 0;border-radius:4px}
.verdict b{font-size:15px}
.facts{display:flex;flex-wrap:wrap;gap:6px 22px;margin:6px 0}.facts div span{color:var(--mute);margin-right:4px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border-bottom:1px solid var(--grid);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;white-space:nowrap}table.cmp td:last-child{white-space:nowrap}.good{color:var(--good)}.bad{color:var(--bad)}
.finding{border:1px solid var(--grid);border-left:6px solid var(--info);border-radius:4px;padding:6px 10px;margin:8px 0;background:var(--panel)}
.finding.critical{border-left-color:var(--crit)}.finding.warning{border-left-color:var(--warn)}
.sev{font-size:11px;font-weight:700;text-transform:uppercase;letter-spacing:.04em}
.sev.critical{color:var(--crit)}.sev.warning{color:var(--warn)}.sev.info{color:var(--info)}
code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}pre{background:var(--bg);border:1px solid var(--grid);padding:6px 8px;overflow-x:auto;white-space:pre-wrap;margin:4px 0}
.compare{margin-bottom:18px}
.facts.run .cmd{flex-basis:100%;min-width:0}.facts.run code,header code{overflow-wrap:anywhere}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_controls() {
        assert_eq!(
            esc("<a href=\"x\">&'\u{7}"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\u{fffd}"
        );
    }
}
