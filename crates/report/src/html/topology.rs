//! The host drawn: NUMA nodes, their L3 groups and CPUs, each NIC on its node, a badge on every
//! CPU per NIC (its queue interrupts for doctor, the interrupts it served for a test), the
//! application's CPUs marked. One renderer for the doctor page and the test report: each builds
//! a [`Picture`] from its own data.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wirespeed_model::CpuSet;

use super::esc;

/// What the topology drawing shows.
#[derive(Debug, Clone, Default)]
pub struct Picture {
    pub caption: String,
    /// NUMA nodes (number, CPUs); one unnamed node when the host reports none.
    pub nodes: Vec<(Option<u32>, Vec<u32>)>,
    /// L3 groups: their label and CPUs.
    pub l3: Vec<(String, CpuSet)>,
    /// The CPUs drawn highlighted, and what that means ("application CPU").
    pub marked: CpuSet,
    pub marked_word: String,
    pub nics: Vec<Nic>,
    /// Said above the NICs that sit on no node.
    pub orphan_note: String,
}

/// One NIC: its box and its badges on the CPUs.
#[derive(Debug, Clone, Default)]
pub struct Nic {
    pub name: String,
    pub node: Option<u32>,
    /// Hover text of the box.
    pub title: String,
    /// Two lines under the name.
    pub lines: [String; 2],
    /// Per CPU: the badge's text and a line for the CPU's hover text.
    pub per_cpu: BTreeMap<u32, (String, String)>,
    /// The legend's words for the badge.
    pub legend: String,
}

const CPU_W: f64 = 38.0;
const CPU_H: f64 = 34.0;
const GAP: f64 = 4.0;
const PAD: f64 = 8.0;
const PER_ROW: usize = 8;
const MAX_W: f64 = 1100.0;
const NIC_W: f64 = 250.0;
const NIC_H: f64 = 44.0;

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

/// Append the drawing of `p` as one `<figure>` (nothing when it has no CPUs).
pub fn topology(h: &mut String, p: &Picture) {
    if p.nodes.iter().all(|(_, c)| c.is_empty()) {
        return;
    }
    let nics: Vec<&Nic> = p.nics.iter().take(8).collect();
    let nic_w = nic_width(&nics);
    // Layout: each node a row of its L3 groups (wrapped at MAX_W), its NICs below.
    struct NodeLayout {
        label: String,
        groups: Vec<(Group, f64, f64)>, // group, x, y (relative to the node)
        nics: Vec<usize>,
        w: f64,
        h: f64,
    }
    let mut layouts = Vec::new();
    for (node, cpus) in &p.nodes {
        let mut groups = Vec::new();
        let mut seen = CpuSet::new();
        for (label, g) in &p.l3 {
            let members: Vec<u32> = cpus.iter().copied().filter(|c| g.contains(*c)).collect();
            if members.is_empty() {
                continue;
            }
            for c in &members {
                seen.insert(*c);
            }
            groups.push(group(label.clone(), members));
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
            .filter(|(_, n)| n.node.is_some() && n.node == *node)
            .map(|(i, _)| i)
            .collect();
        let nic_rows = if node_nics.is_empty() {
            0.0
        } else {
            node_nics
                .len()
                .div_ceil(per_row(w.max(nic_w + 2.0 * PAD), nic_w)) as f64
                * (NIC_H + PAD)
        };
        let w = w.max(if node_nics.is_empty() {
            0.0
        } else {
            nic_w + 2.0 * PAD
        });
        layouts.push(NodeLayout {
            label: match node {
                Some(n) => format!(
                    "NUMA node {n} · {}",
                    CpuSet::from_cpus(cpus.iter().copied()).words()
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
    let mut width = layouts
        .iter()
        .map(|l| l.w)
        .fold(nic_w + 2.0 * PAD, f64::max)
        + 2.0;
    if !orphans.is_empty() {
        // The note above them fits.
        width = width.max(2.0 * PAD + 6.5 * p.orphan_note.chars().count() as f64);
    }
    let orphan_h = if orphans.is_empty() {
        0.0
    } else {
        22.0 + orphans.len().div_ceil(per_row(width, nic_w)) as f64 * (NIC_H + PAD)
    };
    let height = layouts.iter().map(|l| l.h + PAD).sum::<f64>() + orphan_h + 2.0;
    let _ = write!(
        h,
        "<figure><figcaption>{}</figcaption>\
         <svg viewBox=\"0 0 {width:.0} {height:.0}\" style=\"max-width:{:.0}px\" role=\"img\" aria-label=\"topology\">",
        esc(&p.caption),
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
                cpu_box(
                    h,
                    p,
                    &nics,
                    *c,
                    gx + PAD + (k % PER_ROW) as f64 * (CPU_W + GAP),
                    gy + PAD + 16.0 + (k / PER_ROW) as f64 * (CPU_H + GAP),
                );
            }
        }
        let nic_y = y0 + l.h - (l.nics.len().div_ceil(per_row(l.w, nic_w)) as f64) * (NIC_H + PAD);
        nic_boxes(h, &nics, &l.nics, PAD, nic_y, l.w, nic_w);
        y0 += l.h + PAD;
    }
    if !orphans.is_empty() {
        let _ = write!(
            h,
            "<text class=\"m\" x=\"{PAD}\" y=\"{:.1}\">{}</text>",
            y0 + 14.0,
            esc(&p.orphan_note)
        );
        nic_boxes(h, &nics, &orphans, PAD, y0 + 22.0, width, nic_w);
    }
    let _ = write!(
        h,
        "</svg><div class=\"legend\"><span><i style=\"background:var(--app)\"></i>{}</span>",
        esc(&p.marked_word)
    );
    for (i, n) in nics.iter().enumerate() {
        let _ = write!(
            h,
            "<span><i style=\"background:var(--s{})\"></i>{}</span>",
            i % 8,
            esc(&n.legend)
        );
    }
    h.push_str("</div></figure>\n");
}

/// One CPU: its box (marked or not), its number and a badge per NIC that has one on it.
fn cpu_box(h: &mut String, p: &Picture, nics: &[&Nic], c: u32, cx: f64, cy: f64) {
    let is_marked = p.marked.contains(c);
    let mut tip = format!("CPU {c}");
    if is_marked {
        let _ = write!(tip, ": {}", p.marked_word);
    }
    for n in nics {
        if let Some((_, line)) = n.per_cpu.get(&c) {
            tip.push('\n');
            tip.push_str(line);
        }
    }
    let _ = write!(
        h,
        "<g><title>{}</title><rect class=\"cpu{}\" x=\"{cx:.1}\" y=\"{cy:.1}\" width=\"{CPU_W}\" height=\"{CPU_H}\" rx=\"4\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\"{}>{c}</text>",
        esc(&tip),
        if is_marked { " app" } else { "" },
        cx + CPU_W / 2.0,
        cy + 13.0,
        if is_marked { " font-weight=\"700\"" } else { "" }
    );
    let mut dx = 0.0;
    for (ni, n) in nics.iter().enumerate() {
        if let Some((badge, _)) = n.per_cpu.get(&c) {
            let bw = (6.0 * badge.chars().count() as f64 + 5.0).max(17.0);
            let _ = write!(
                h,
                "<rect class=\"s{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.0}\" height=\"12\" rx=\"3\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" style=\"fill:#fff;font-size:9px;font-weight:700\">{}</text>",
                ni % 8,
                cx + 2.0 + dx,
                cy + CPU_H - 14.0,
                cx + 2.0 + dx + bw / 2.0,
                cy + CPU_H - 5.0,
                esc(badge)
            );
            dx += bw + 1.0;
        }
    }
    h.push_str("</g>");
}

fn per_row(width: f64, nic_w: f64) -> usize {
    ((width - PAD) / (nic_w + PAD)).floor().max(1.0) as usize
}

/// The width of the NIC boxes: [`NIC_W`], or wider where a NIC's name or a line under it
/// needs it (11 px text, about 6.6 px a character; the bold name about 7.4), so no text is
/// clipped by its box.
fn nic_width(nics: &[&Nic]) -> f64 {
    nics.iter()
        .map(|n| {
            let name = 7.4 * n.name.chars().count() as f64;
            let lines = n
                .lines
                .iter()
                .map(|l| 6.6 * l.chars().count() as f64)
                .fold(0.0, f64::max);
            16.0 + name.max(lines)
        })
        .fold(NIC_W, f64::max)
}

fn nic_boxes(
    h: &mut String,
    nics: &[&Nic],
    which: &[usize],
    x0: f64,
    y0: f64,
    width: f64,
    nic_w: f64,
) {
    let per = per_row(width, nic_w);
    for (k, &i) in which.iter().enumerate() {
        let n = nics[i];
        let x = x0 + (k % per) as f64 * (nic_w + PAD);
        let y = y0 + (k / per) as f64 * (NIC_H + PAD);
        let _ = write!(
            h,
            "<g><title>{}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{nic_w:.1}\" height=\"{NIC_H}\" rx=\"5\" style=\"fill:var(--bg);stroke:var(--s{});stroke-width:2.5\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"700\">{}</text><text class=\"m\" x=\"{:.1}\" y=\"{:.1}\">{}</text>\
             <text class=\"m\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            esc(&n.title),
            i % 8,
            x + 8.0,
            y + 14.0,
            esc(&n.name),
            x + 8.0,
            y + 27.0,
            esc(&n.lines[0]),
            x + 8.0,
            y + 39.0,
            esc(&n.lines[1]),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture() -> Picture {
        Picture {
            caption: "Topology".into(),
            nodes: vec![(Some(0), vec![0, 1, 2, 3]), (Some(1), vec![4, 5, 6, 7])],
            l3: vec![
                ("L3 group 0".into(), CpuSet::from_cpus(0..4)),
                ("L3 group 1".into(), CpuSet::from_cpus(4..8)),
            ],
            marked: CpuSet::from_cpus([2]),
            marked_word: "ran the workers".into(),
            nics: vec![Nic {
                name: "eth0".into(),
                node: Some(1),
                title: "eth0 <tip>".into(),
                lines: ["a".into(), "b".into()],
                per_cpu: BTreeMap::from([(5, ("12k".into(), "12345 interrupts".into()))]),
                legend: "eth0: interrupts served".into(),
            }],
            orphan_note: "no node".into(),
        }
    }

    #[test]
    fn nodes_groups_cpus_badges_and_the_nic_are_drawn() {
        let mut h = String::new();
        topology(&mut h, &picture());
        assert!(h.contains("NUMA node 0 · CPUs 0-3"), "{h}");
        assert!(h.contains("NUMA node 1 · CPUs 4-7"), "{h}");
        assert!(h.contains(">L3 group 1</text>"), "{h}");
        assert_eq!(h.matches("<rect class=\"cpu").count(), 8);
        assert_eq!(h.matches("<rect class=\"cpu app\"").count(), 1);
        assert!(h.contains("CPU 5\n12345 interrupts"), "{h}");
        assert!(h.contains(">12k</text>"), "{h}");
        assert!(h.contains("eth0 &lt;tip&gt;"), "escaped: {h}");
        assert!(h.contains("ran the workers</span>"), "{h}");
        assert!(h.contains("eth0: interrupts served</span>"), "{h}");
        assert!(!h.contains("no node"), "the NIC sits on node 1: {h}");
    }

    #[test]
    fn a_nic_on_no_node_is_drawn_below_with_the_note() {
        let mut p = picture();
        p.nics[0].node = None;
        let mut h = String::new();
        topology(&mut h, &p);
        assert!(h.contains(">no node</text>"), "{h}");
    }

    #[test]
    fn nothing_without_cpus() {
        let mut h = String::new();
        topology(&mut h, &Picture::default());
        assert!(h.is_empty());
    }

    /// A NIC line longer than the default box ("NUMA node unknown" after the MTU and speed)
    /// widens the box and the picture rather than running past the box's edge.
    #[test]
    fn a_long_nic_line_widens_its_box() {
        let mut p = picture();
        p.nics[0].node = None;
        p.nics[0].lines[0] = "MTU 9000 · 100 Gbit/s · NUMA node unknown · PCIe 0000:41:00.0".into();
        let mut h = String::new();
        topology(&mut h, &p);
        let nic = |h: &str| -> f64 {
            let at = h.find("rx=\"5\"").unwrap();
            let rect = &h[h[..at].rfind("<rect").unwrap()..at];
            let w = rect.split("width=\"").nth(1).unwrap();
            w[..w.find('"').unwrap()].parse().unwrap()
        };
        let w = nic(&h);
        let need = 16.0 + 6.6 * p.nics[0].lines[0].chars().count() as f64;
        assert!(w >= need && w > NIC_W, "box {w}, text {need}: {h}");
        let vb = h.split("viewBox=\"0 0 ").nth(1).unwrap();
        let width: f64 = vb.split(' ').next().unwrap().parse().unwrap();
        assert!(width >= w + 2.0 * PAD, "{width} {w}");
        // short lines keep the default
        let mut h = String::new();
        topology(&mut h, &picture());
        assert_eq!(nic(&h), NIC_W);
    }
}
