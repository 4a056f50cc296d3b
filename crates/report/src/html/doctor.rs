//! Doctor: the findings worst first, and the host drawn — NUMA nodes, their L3 groups and CPUs,
//! each NIC on its node, where its queue interrupts land, the application's CPUs marked.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wirespeed_doctor::report::Report;
use wirespeed_doctor::Severity;
use wirespeed_host::interrupts::IrqKind;
use wirespeed_host::NicFacts;
use wirespeed_model::CpuSet;

use super::esc;

pub(super) fn doctor(h: &mut String, r: &Report) {
    h.push_str("<div class=\"facts\">");
    for (k, v) in [
        ("host", r.host.hostname.clone()),
        ("kernel", r.host.kernel.clone()),
        (
            "read from",
            Some(match &r.host.path {
                Some(p) => format!("{} {p}", r.host.source),
                None => r.host.source.clone(),
            }),
        ),
        ("CPU", r.facts.cpu.model.clone()),
        ("application CPUs", r.options.app_cpus.clone()),
    ] {
        if let Some(v) = v {
            let _ = write!(h, "<div><span>{k}</span>{}</div>", esc(&v));
        }
    }
    let _ = writeln!(
        h,
        "<div><span>findings</span>{} critical, {} warning, {} info</div></div>",
        r.counts.critical, r.counts.warning, r.counts.info
    );
    topology(h, r);
    let mut findings: Vec<_> = r.findings.iter().collect();
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    if findings.is_empty() {
        h.push_str("<div class=\"verdict\"><b>no findings</b></div>");
    }
    for f in findings {
        let sev = match f.severity {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let _ = write!(
            h,
            "<div class=\"finding {sev}\"><span class=\"sev {sev}\">{sev}</span> <code>{}</code>{}<div><b>{}</b></div>",
            esc(&f.id),
            f.iface
                .as_deref()
                .map(|i| format!(" <span class=\"mute\">{}</span>", esc(i)))
                .unwrap_or_default(),
            esc(&f.summary)
        );
        if !f.evidence.is_empty() {
            h.push_str("<table><tbody>");
            for e in &f.evidence {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td><b>{}</b></td><td class=\"mute\"><code>{}</code></td></tr>",
                    esc(&e.what),
                    esc(&e.value),
                    esc(&e.source)
                );
            }
            h.push_str("</tbody></table>");
        }
        if !f.fix.is_empty() {
            let _ = write!(h, "<pre>{}</pre>", esc(&f.fix.join("\n")));
        }
        h.push_str("</div>\n");
    }
}

const CPU_W: f64 = 38.0;
const CPU_H: f64 = 34.0;
const GAP: f64 = 4.0;
const PAD: f64 = 8.0;
const PER_ROW: usize = 8;
const MAX_W: f64 = 1100.0;
const NIC_W: f64 = 250.0;
const NIC_H: f64 = 44.0;

/// Queue-interrupt count per CPU for one NIC (effective affinity; each IRQ counted on every CPU
/// it may land on).
fn irq_cpus(n: &NicFacts) -> BTreeMap<u32, Vec<u32>> {
    let mut m: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for irq in n.irqs.iter().filter(|i| i.kind == IrqKind::Queue) {
        if let Some(set) = irq.effective.as_ref().or(irq.requested.as_ref()) {
            for c in set.iter() {
                m.entry(c).or_default().push(irq.irq);
            }
        }
    }
    m
}

struct Group {
    label: String,
    cpus: Vec<u32>,
    w: f64,
    h: f64,
}

fn group(label: String, cpus: Vec<u32>) -> Group {
    let cols = cpus.len().clamp(1, PER_ROW);
    let rows = cpus.len().div_ceil(PER_ROW).max(1);
    Group {
        label,
        w: PAD * 2.0 + cols as f64 * (CPU_W + GAP) - GAP,
        h: PAD * 2.0 + 16.0 + rows as f64 * (CPU_H + GAP) - GAP,
        cpus,
    }
}

fn topology(h: &mut String, r: &Report) {
    let cpu = &r.facts.cpu;
    let all: Vec<u32> = cpu.cpus.iter().map(|c| c.cpu).collect();
    if all.is_empty() {
        return;
    }
    let app = r
        .options
        .app_cpus
        .as_deref()
        .and_then(|s| CpuSet::parse_list(s).ok())
        .unwrap_or_default();
    let nics: Vec<&NicFacts> = r
        .facts
        .nics
        .iter()
        .filter(|n| r.options.iface.as_deref().is_none_or(|i| i == n.name))
        .take(8)
        .collect();
    let irqs: Vec<BTreeMap<u32, Vec<u32>>> = nics.iter().map(|n| irq_cpus(n)).collect();

    // Nodes (or one unnamed node when the host reports none).
    let mut nodes: Vec<(Option<u32>, Vec<u32>)> = cpu
        .numa_nodes
        .iter()
        .map(|(n, set)| (Some(*n), set.iter().filter(|c| all.contains(c)).collect()))
        .collect();
    if nodes.is_empty() {
        nodes.push((None, all.clone()));
    }
    // Layout: each node a row of its L3 groups (wrapped at MAX_W), its NICs below.
    struct NodeLayout {
        label: String,
        groups: Vec<(Group, f64, f64)>, // group, x, y (relative to the node)
        nics: Vec<usize>,
        w: f64,
        h: f64,
    }
    let mut layouts = Vec::new();
    for (node, cpus) in &nodes {
        let mut groups = Vec::new();
        let mut seen = CpuSet::new();
        for (gi, g) in cpu.l3_groups.iter().enumerate() {
            let members: Vec<u32> = cpus
                .iter()
                .copied()
                .filter(|c| g.cpus.contains(*c))
                .collect();
            if members.is_empty() {
                continue;
            }
            for c in &members {
                seen.insert(*c);
            }
            groups.push(group(
                format!(
                    "L3 group {gi} · CPUs {}{}",
                    g.cpus,
                    g.size
                        .as_deref()
                        .map(|s| format!(" · {s}"))
                        .unwrap_or_default()
                ),
                members,
            ));
        }
        let rest: Vec<u32> = cpus
            .iter()
            .copied()
            .filter(|c| !seen.contains(*c))
            .collect();
        if !rest.is_empty() {
            groups.push(group("no L3 information".into(), rest));
        }
        let mut placed = Vec::new();
        let (mut x, mut y, mut row_h, mut w) = (PAD, 24.0, 0.0f64, 0.0f64);
        for g in groups {
            if x > PAD && x + g.w > MAX_W {
                x = PAD;
                y += row_h + PAD;
                row_h = 0.0;
            }
            row_h = row_h.max(g.h);
            w = w.max(x + g.w + PAD);
            let gw = g.w;
            placed.push((g, x, y));
            x += gw + PAD;
        }
        let node_nics: Vec<usize> = nics
            .iter()
            .enumerate()
            .filter(|(_, n)| n.node().is_some() && n.node() == *node)
            .map(|(i, _)| i)
            .collect();
        let nic_rows = if node_nics.is_empty() {
            0.0
        } else {
            node_nics.len().div_ceil(per_row(w.max(NIC_W + 2.0 * PAD))) as f64 * (NIC_H + PAD)
        };
        let w = w.max(if node_nics.is_empty() {
            0.0
        } else {
            NIC_W + 2.0 * PAD
        });
        layouts.push(NodeLayout {
            label: match node {
                Some(n) => format!(
                    "NUMA node {n} · CPUs {}",
                    CpuSet::from_cpus(cpus.iter().copied())
                ),
                None => "CPUs (no NUMA information)".into(),
            },
            groups: placed,
            nics: node_nics,
            w,
            h: y + row_h + PAD + nic_rows,
        });
    }
    let placed_nics: Vec<usize> = layouts.iter().flat_map(|l| l.nics.clone()).collect();
    let orphans: Vec<usize> = (0..nics.len())
        .filter(|i| !placed_nics.contains(i))
        .collect();
    let width = layouts
        .iter()
        .map(|l| l.w)
        .fold(NIC_W + 2.0 * PAD, f64::max)
        + 2.0;
    let orphan_h = if orphans.is_empty() {
        0.0
    } else {
        let per = ((width - PAD) / (NIC_W + PAD)).floor().max(1.0) as usize;
        22.0 + orphans.len().div_ceil(per) as f64 * (NIC_H + PAD)
    };
    let height = layouts.iter().map(|l| l.h + PAD).sum::<f64>() + orphan_h + 2.0;
    let _ = write!(
        h,
        "<figure><figcaption>Topology: NUMA nodes → L3 groups → CPUs; NICs on their node; queue interrupts on their CPUs</figcaption>\
         <svg viewBox=\"0 0 {width:.0} {height:.0}\" style=\"max-width:{:.0}px\" role=\"img\" aria-label=\"topology\">",
        width * 1.2
    );
    let mut y0 = 1.0;
    for l in &layouts {
        let _ = write!(
            h,
            "<rect class=\"nbox\" x=\"1\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"8\"/><text x=\"{PAD}\" y=\"{:.1}\" font-weight=\"700\">{}</text>",
            width - 2.0,
            l.h,
            y0 + 16.0,
            esc(&l.label)
        );
        for (g, gx, gy) in &l.groups {
            let (gx, gy) = (*gx, y0 + gy);
            let _ = write!(
                h,
                "<rect class=\"gbox\" x=\"{gx:.1}\" y=\"{gy:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"6\"/><text class=\"m\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                g.w,
                g.h,
                gx + PAD,
                gy + PAD + 9.0,
                esc(&g.label)
            );
            for (k, c) in g.cpus.iter().enumerate() {
                let cx = gx + PAD + (k % PER_ROW) as f64 * (CPU_W + GAP);
                let cy = gy + PAD + 16.0 + (k / PER_ROW) as f64 * (CPU_H + GAP);
                let is_app = app.contains(*c);
                let mut tip = format!("CPU {c}");
                if is_app {
                    tip.push_str(": application CPU");
                }
                for (ni, m) in irqs.iter().enumerate() {
                    if let Some(list) = m.get(c) {
                        let ids: Vec<String> = list.iter().map(|i| i.to_string()).collect();
                        let _ = write!(
                            tip,
                            "\n{} queue IRQs of {}: {}",
                            list.len(),
                            nics[ni].name,
                            ids.join(", ")
                        );
                    }
                }
                let _ = write!(
                    h,
                    "<g><title>{}</title><rect class=\"cpu{}\" x=\"{cx:.1}\" y=\"{cy:.1}\" width=\"{CPU_W}\" height=\"{CPU_H}\" rx=\"4\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\"{}>{c}</text>",
                    esc(&tip),
                    if is_app { " app" } else { "" },
                    cx + CPU_W / 2.0,
                    cy + 13.0,
                    if is_app { " font-weight=\"700\"" } else { "" }
                );
                let mut dx = 0.0;
                for (ni, m) in irqs.iter().enumerate() {
                    if let Some(list) = m.get(c) {
                        let _ = write!(
                            h,
                            "<rect class=\"s{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"17\" height=\"12\" rx=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"fill:#fff;font-size:9px;font-weight:700\">{}</text>",
                            ni % 8,
                            cx + 2.0 + dx,
                            cy + CPU_H - 14.0,
                            cx + 10.5 + dx,
                            cy + CPU_H - 5.0,
                            list.len()
                        );
                        dx += 18.0;
                    }
                }
                h.push_str("</g>");
            }
        }
        let nic_y = y0 + l.h - (l.nics.len().div_ceil(per_row(l.w)) as f64) * (NIC_H + PAD);
        nic_boxes(h, &nics, &irqs, &l.nics, PAD, nic_y, l.w);
        y0 += l.h + PAD;
    }
    if !orphans.is_empty() {
        let _ = write!(
            h,
            "<text class=\"m\" x=\"{PAD}\" y=\"{:.1}\">NICs without a NUMA node (numa_node -1: firmware does not say)</text>",
            y0 + 14.0
        );
        nic_boxes(h, &nics, &irqs, &orphans, PAD, y0 + 22.0, width);
    }
    h.push_str("</svg><div class=\"legend\"><span><i style=\"background:var(--app)\"></i>application CPU</span>");
    for (i, n) in nics.iter().enumerate() {
        let _ = write!(
            h,
            "<span><i style=\"background:var(--s{})\"></i>{}: queue IRQs on that CPU</span>",
            i % 8,
            esc(&n.name)
        );
    }
    h.push_str("</div></figure>\n");
}

fn per_row(width: f64) -> usize {
    ((width - PAD) / (NIC_W + PAD)).floor().max(1.0) as usize
}

fn nic_boxes(
    h: &mut String,
    nics: &[&NicFacts],
    irqs: &[BTreeMap<u32, Vec<u32>>],
    which: &[usize],
    x0: f64,
    y0: f64,
    width: f64,
) {
    let per = per_row(width);
    for (k, &i) in which.iter().enumerate() {
        let n = nics[i];
        let x = x0 + (k % per) as f64 * (NIC_W + PAD);
        let y = y0 + (k / per) as f64 * (NIC_H + PAD);
        let queue = n.irqs.iter().filter(|q| q.kind == IrqKind::Queue).count();
        let cpus = CpuSet::from_cpus(irqs[i].keys().copied());
        let speed = n
            .speed_mbps
            .map(wirespeed_model::units::speed_mbps)
            .unwrap_or_else(|| "speed ?".into());
        let pcie = n
            .pcie
            .as_ref()
            .map(|p| {
                format!(
                    " · PCIe {} x{}",
                    p.function
                        .current_speed
                        .as_deref()
                        .unwrap_or("?")
                        .replace(" PCIe", ""),
                    p.function
                        .current_width
                        .map(|w| w.to_string())
                        .unwrap_or("?".into())
                )
            })
            .unwrap_or_default();
        let _ = write!(
            h,
            "<g><title>{} ({}): {queue} queue IRQs on CPUs {}; local CPUs {}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{NIC_W}\" height=\"{NIC_H}\" rx=\"5\" style=\"fill:var(--bg);stroke:var(--s{});stroke-width:2.5\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"700\">{}</text><text class=\"m\" x=\"{:.1}\" y=\"{:.1}\">{} · {speed}{}</text>\
             <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\">{queue} queue IRQs → CPUs {}</text></g>",
            esc(&n.name),
            esc(&n.pci_address),
            if cpus.is_empty() { "?".to_string() } else { cpus.to_string() },
            n.local_cpus.as_ref().map(|c| c.to_string()).unwrap_or("?".into()),
            i % 8,
            x + 8.0,
            y + 14.0,
            esc(&n.name),
            x + 8.0,
            y + 27.0,
            esc(n.driver.as_deref().unwrap_or("?")),
            esc(&pcie),
            x + 8.0,
            y + 39.0,
            if cpus.is_empty() { "none".to_string() } else { cpus.to_string() },
        );
    }
}
