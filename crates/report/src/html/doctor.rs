//! Doctor: the findings worst first, and the host drawn — NUMA nodes, their L3 groups and CPUs,
//! each NIC on its node, where its queue interrupts land, the application's CPUs marked.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wirespeed_doctor::report::Report;
use wirespeed_doctor::Severity;
use wirespeed_host::interrupts::IrqKind;
use wirespeed_host::NicFacts;
use wirespeed_model::{units, CpuSet};

use super::esc;
use super::topology::{topology, Nic, Picture};

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
    topology(h, &picture(r));
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

/// The host's topology as the doctor read it, with the queue interrupts of each NIC (the one
/// `--iface` names, else all).
fn picture(r: &Report) -> Picture {
    let cpu = &r.facts.cpu;
    let all: Vec<u32> = cpu.cpus.iter().map(|c| c.cpu).collect();
    let mut nodes: Vec<(Option<u32>, Vec<u32>)> = cpu
        .numa_nodes
        .iter()
        .map(|(n, set)| (Some(*n), set.iter().filter(|c| all.contains(c)).collect()))
        .collect();
    if nodes.is_empty() && !all.is_empty() {
        nodes.push((None, all.clone()));
    }
    let l3 = cpu
        .l3_groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            (
                format!(
                    "L3 group {gi} · {}{}",
                    wirespeed_model::units::cpu_list(&g.cpus),
                    g.size
                        .as_deref()
                        .map(|s| format!(" · {s}"))
                        .unwrap_or_default()
                ),
                g.cpus.clone(),
            )
        })
        .collect();
    let nics = r
        .facts
        .nics
        .iter()
        .filter(|n| r.options.iface.as_deref().is_none_or(|i| i == n.name))
        .take(8)
        .map(nic)
        .collect();
    Picture {
        caption: "Topology: NUMA nodes → L3 groups → CPUs; NICs on their node; queue interrupts on their CPUs".into(),
        nodes,
        l3,
        marked: r
            .options
            .app_cpus
            .as_deref()
            .and_then(|s| CpuSet::parse_list(s).ok())
            .unwrap_or_default(),
        marked_word: "application CPU".into(),
        nics,
        orphan_note: "NICs without a NUMA node (numa_node -1: firmware does not say)".into(),
    }
}

fn nic(n: &NicFacts) -> Nic {
    let irqs = irq_cpus(n);
    let queue = n.irqs.iter().filter(|q| q.kind == IrqKind::Queue).count();
    let cpus = CpuSet::from_cpus(irqs.keys().copied());
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
    Nic {
        name: n.name.clone(),
        node: n.node(),
        title: format!(
            "{} ({}): {} on {}; local {}",
            n.name,
            n.pci_address,
            units::count(queue, "queue IRQ"),
            if cpus.is_empty() {
                "CPUs ?".to_string()
            } else {
                cpus.words()
            },
            n.local_cpus
                .as_ref()
                .map_or("CPUs ?".into(), wirespeed_model::units::cpu_list)
        ),
        lines: [
            format!("{} · {speed}{pcie}", n.driver.as_deref().unwrap_or("?")),
            format!("{} → {}", units::count(queue, "queue IRQ"), cpus.words()),
        ],
        per_cpu: irqs
            .iter()
            .map(|(c, list)| {
                let ids: Vec<String> = list.iter().map(|i| i.to_string()).collect();
                (
                    *c,
                    (
                        list.len().to_string(),
                        format!(
                            "{} of {}: {}",
                            units::count(list.len(), "queue IRQ"),
                            n.name,
                            ids.join(", ")
                        ),
                    ),
                )
            })
            .collect(),
        legend: format!("{}: queue IRQs on that CPU", n.name),
    }
}
