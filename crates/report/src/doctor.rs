//! Doctor's documents as text: the findings report (`wirespeed doctor`) and the topology
//! (`wirespeed topo`). Their JSON is the documents' own serde form; their HTML is [`crate::html`].

use std::collections::BTreeMap;
use std::io::{self, Write};

use wirespeed_doctor::report::Report;
use wirespeed_doctor::topo::{Topo, TopoNic};
use wirespeed_doctor::Severity;
use wirespeed_host::interrupts::IrqKind;
use wirespeed_host::text::terminal as t;

/// Doctor's report as text: the host and options read, then each finding worst first with
/// its evidence and fix, then the notes. Every string that came from a file or a snapshot is
/// written through the terminal filter, the fix lines people paste into a shell too.
pub fn write_report<W: Write + ?Sized>(w: &mut W, r: &Report) -> io::Result<()> {
    let h = &r.host;
    let what = match (&h.source[..], &h.path) {
        ("live", _) => "this host".to_string(),
        (s, Some(p)) => format!("{s} {p}"),
        (s, None) => s.to_string(),
    };
    writeln!(
        w,
        "wirespeed doctor: {} ({}{})",
        t(h.hostname.as_deref().unwrap_or("unknown host")),
        t(&what),
        t(&h.kernel
            .as_deref()
            .map(|k| format!(", kernel {k}"))
            .unwrap_or_default())
    )?;
    let o = &r.options;
    writeln!(
        w,
        "  interface: {}   app CPUs: {}   RTT: {} ms{}",
        o.iface.as_deref().unwrap_or("all PCI NICs"),
        o.app_cpus.as_deref().unwrap_or("not given"),
        o.rtt_ms,
        o.rate_mbps
            .and_then(wirespeed_model::units::Rate::from_mbps)
            .map(|r| format!("   rate: {}", r.from_source("--rate")))
            .unwrap_or_default()
    )?;
    if let Some(line) = &o.target {
        writeln!(w, "  {}", t(line))?;
    }
    writeln!(w)?;
    if r.findings.is_empty() {
        writeln!(w, "No findings.")?;
        return write_notes(w, r);
    }
    let c = &r.counts;
    writeln!(
        w,
        "{} finding{}: {} critical, {} warning, {} info ({})",
        r.findings.len(),
        if r.findings.len() == 1 { "" } else { "s" },
        c.critical,
        c.warning,
        c.info,
        rtt_words(r)
    )?;
    for f in &r.findings {
        writeln!(w)?;
        let tag = match f.severity {
            Severity::Critical => "CRITICAL",
            Severity::Warning => "WARNING ",
            Severity::Info => "INFO    ",
        };
        writeln!(w, "{tag} {}", t(&f.id))?;
        writeln!(w, "  {}", t(&f.summary))?;
        if !f.evidence.is_empty() {
            writeln!(w, "  evidence:")?;
            // values line up after the labels of up to 40 characters; a longer label
            // (an IRQ with its full action name) runs past them
            let width = f
                .evidence
                .iter()
                .map(|e| e.what.chars().count())
                .filter(|&n| n <= 40)
                .max()
                .unwrap_or(0);
            for e in &f.evidence {
                writeln!(
                    w,
                    "    {:<width$}  {}",
                    format!("{}:", t(&e.what)),
                    t(&e.value),
                    width = width + 1
                )?;
                writeln!(w, "      from {}", t(&e.source))?;
            }
        }
        if !f.fix.is_empty() {
            writeln!(w, "  fix:")?;
            for line in &f.fix {
                // a fix is copied into a shell: never raw escapes from a file
                let line = t(line);
                if line.starts_with('#') {
                    writeln!(w, "    {line}")?;
                } else {
                    writeln!(w, "    $ {line}")?;
                }
            }
        }
    }
    write_notes(w, r)
}

fn write_notes<W: Write + ?Sized>(w: &mut W, r: &Report) -> io::Result<()> {
    if r.notes.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(w, "notes:")?;
    for n in &r.notes {
        writeln!(w, "  {}", t(n))?;
    }
    Ok(())
}

/// The RTT behind the buffer advice, as the summary line says it.
fn rtt_words(r: &Report) -> String {
    let rtt = r.options.rtt_ms;
    if rtt == wirespeed_doctor::DEFAULT_RTT_MS {
        format!("buffer advice for an RTT of {rtt} ms, the default: --rtt MS for your paths")
    } else {
        format!("buffer advice for an RTT of {rtt} ms")
    }
}

fn kind_mark(k: IrqKind) -> &'static str {
    match k {
        IrqKind::Queue => "",
        IrqKind::Control => "c",
        IrqKind::OtherInterface => "o",
        IrqKind::Unknown => "?",
        IrqKind::Unrequested => "-",
    }
}

fn kind_meaning(k: IrqKind) -> &'static str {
    match k {
        IrqKind::Queue => "queue vector",
        IrqKind::Control => "control vector",
        IrqKind::OtherInterface => "another port's vector",
        IrqKind::Unknown => "unnamed vector",
        IrqKind::Unrequested => "never requested by a driver",
    }
}

fn node_name(n: Option<u32>) -> String {
    n.map_or("node ?".into(), |n| format!("node {n}"))
}

/// `wirespeed topo` as text: nodes, L3 groups and CPUs, then each NIC with its link, PCIe
/// link, node and where its interrupts land.
pub fn write_topo<W: Write + ?Sized>(w: &mut W, topo: &Topo) -> io::Result<()> {
    let mut head = vec![topo
        .hostname
        .clone()
        .unwrap_or_else(|| "unknown host".into())];
    if let Some(k) = &topo.kernel {
        head.push(format!("kernel {k}"));
    }
    if let Some(m) = &topo.cpu_model {
        head.push(m.clone());
    }
    writeln!(w, "{}", head.join(" | "))?;
    let mut line = vec![format!(
        "{} online ({})",
        wirespeed_model::units::cpu_count(topo.online.len()),
        topo.online
    )];
    if topo.packages > 0 {
        line.push(format!(
            "{} package{}",
            topo.packages,
            if topo.packages == 1 { "" } else { "s" }
        ));
    }
    if let Some(c) = topo.cores {
        line.push(format!("{c} cores"));
    }
    match topo.smt_active {
        Some(true) => line.push("SMT on".into()),
        Some(false) => line.push("SMT off".into()),
        None => {}
    }
    if !topo.governors.is_empty() {
        let g: Vec<String> = topo
            .governors
            .iter()
            .map(|(g, s)| {
                if *s == topo.online {
                    g.clone()
                } else {
                    format!("{g} on {s}")
                }
            })
            .collect();
        line.push(format!(
            "governor {}{}",
            g.join(", "),
            topo.cpufreq_driver
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ));
    } else {
        line.push("no cpufreq".into());
    }
    writeln!(w, "{}", line.join(" | "))?;
    writeln!(w)?;

    for n in &topo.nodes {
        writeln!(w, "{:<8} {}", node_name(n.node), n.cpus.words())?;
        if n.l3_groups.is_empty() {
            writeln!(w, "  (no L3 cache information)")?;
        }
        let last = n.l3_groups.len().saturating_sub(1);
        for (k, g) in n.l3_groups.iter().enumerate() {
            writeln!(
                w,
                "  {} L3 #{:<3} {:>8}  {}{}",
                if k == last { "`-" } else { "|-" },
                g.id,
                g.size.as_deref().unwrap_or(""),
                g.cpus.words(),
                if g.spans_nodes {
                    "  (group spans nodes)"
                } else {
                    ""
                }
            )?;
        }
    }

    for nic in &topo.nics {
        writeln!(w)?;
        let mut head = vec![nic.name.clone(), nic.pci_address.clone()];
        if let Some(d) = &nic.driver {
            head.push(d.clone());
        }
        if let Some(m) = &nic.model {
            head.push(m.clone());
        }
        writeln!(w, "{}", head.join("  "))?;
        let mut link = vec![nic.operstate.clone().unwrap_or_else(|| "state ?".into())];
        link.push(
            nic.speed_mbps
                .map_or("speed unknown".into(), wirespeed_model::units::speed_mbps),
        );
        if let Some(m) = nic.mtu {
            link.push(format!("MTU {m}"));
        }
        writeln!(w, "  link   {}", link.join(", "))?;
        match (&nic.pcie_current, &nic.pcie_max) {
            (None, None) => writeln!(
                w,
                "  PCIe   no link attributes (virtual function or virtio)"
            )?,
            (cur, max) => {
                let mut s = format!(
                    "  PCIe   {} (max {})",
                    cur.as_deref().unwrap_or("?"),
                    max.as_deref().unwrap_or("?")
                );
                if let Some(a) = nic.pcie_available_mbps {
                    s.push_str(&format!(
                        " = {} usable",
                        wirespeed_model::units::speed_mbps(a)
                    ));
                }
                if nic.pcie_downgraded == Some(true) {
                    s.push_str("  DOWNGRADED");
                }
                if let (Some(a), Some(sp)) = (nic.pcie_available_mbps, nic.speed_mbps) {
                    if a < sp {
                        s.push_str("  BELOW LINK SPEED");
                    }
                }
                writeln!(w, "{s}")?;
                if let Some(u) = &nic.upstream_port {
                    writeln!(
                        w,
                        "         upstream port {u} (max {})",
                        nic.upstream_max.as_deref().unwrap_or("?")
                    )?;
                }
            }
        }
        let node = match nic.numa_node {
            Some(n) if n >= 0 => format!("node {n}"),
            Some(n) => format!("node unknown (numa_node {n})"),
            None => "node unknown".into(),
        };
        writeln!(
            w,
            "  NUMA   {node}{}",
            nic.local_cpus
                .as_ref()
                .map(|c| format!(", local {}", wirespeed_model::units::cpu_list(c)))
                .unwrap_or_default()
        )?;
        if let Some(t) = nic.temp_celsius {
            writeln!(
                w,
                "  temp   {t:.1} °C{}",
                nic.temp_crit_celsius
                    .map(|c| format!(" (critical {c:.1} °C)"))
                    .unwrap_or_default()
            )?;
        }
        write_irqs(w, topo, nic)?;
    }
    Ok(())
}

fn write_irqs<W: Write + ?Sized>(w: &mut W, topo: &Topo, nic: &TopoNic) -> io::Result<()> {
    if nic.irqs.is_empty() {
        return writeln!(w, "  IRQs   none");
    }
    let count = |k: IrqKind| nic.irqs.iter().filter(|i| i.kind == k).count();
    let mut kinds = vec![];
    for (k, name) in [
        (IrqKind::Queue, "queue"),
        (IrqKind::Control, "control"),
        (IrqKind::OtherInterface, "other port"),
        (IrqKind::Unknown, "unnamed"),
        (IrqKind::Unrequested, "never requested"),
    ] {
        let n = count(k);
        if n > 0 {
            kinds.push(format!("{n} {name}"));
        }
    }
    let mut lands: Vec<String> = Vec::new();
    if nic.irq_cpus.is_empty() {
        lands.push("affinity unknown".into());
    } else {
        if nic.irq_nodes.is_empty() {
            lands.push("node ?".into());
        } else {
            lands.extend(nic.irq_nodes.iter().map(|n| format!("node {n}")));
        }
        if !nic.irq_l3_groups.is_empty() {
            lands.push(format!(
                "L3 {}",
                nic.irq_l3_groups
                    .iter()
                    .map(|g| format!("#{g}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        lands.push(format!(
            "{} {}",
            if nic.irq_cpus.len() == 1 {
                "CPU"
            } else {
                "CPUs"
            },
            nic.irq_cpus
        ));
    }
    writeln!(
        w,
        "  IRQs   {} ({}) -> {}",
        nic.irqs.len(),
        kinds.join(", "),
        lands.join(", ")
    )?;
    // Single-CPU vectors grouped by node/L3; multi-CPU vectors listed as spread.
    let mut per_cpu: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut spread: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut unrequested = Vec::new();
    for i in &nic.irqs {
        let label = format!("{}{}", i.irq, kind_mark(i.kind));
        if i.kind == IrqKind::Unrequested {
            unrequested.push(i.irq.to_string());
            continue;
        }
        match i.cpus.len() {
            0 => unknown.push(label),
            1 => per_cpu
                .entry(i.cpus.first().unwrap_or(0))
                .or_default()
                .push(label),
            _ => spread.entry(i.cpus.to_string()).or_default().push(label),
        }
    }
    let mut rows: BTreeMap<(Option<u32>, Option<u32>), Vec<String>> = BTreeMap::new();
    for (cpu, irqs) in &per_cpu {
        let node = topo
            .nodes
            .iter()
            .find(|n| n.cpus.contains(*cpu))
            .and_then(|n| n.node);
        let l3 = topo
            .nodes
            .iter()
            .flat_map(|n| n.l3_groups.iter())
            .find(|g| g.cpus.contains(*cpu))
            .map(|g| g.id);
        rows.entry((node, l3))
            .or_default()
            .push(format!("CPU {cpu}: {}", irqs.join(" ")));
    }
    for ((node, l3), cells) in rows {
        let place = format!(
            "{}{}",
            node_name(node),
            l3.map(|g| format!(" / L3 #{g}")).unwrap_or_default()
        );
        // Wrap the CPU cells at about 100 columns.
        let mut lines: Vec<String> = vec![String::new()];
        for cell in cells {
            let cur = lines.last_mut().map(|l| l.len()).unwrap_or(0);
            if cur > 0 && cur + cell.len() + 3 > 74 {
                lines.push(String::new());
            }
            if let Some(l) = lines.last_mut() {
                if !l.is_empty() {
                    l.push_str(" | ");
                }
                l.push_str(&cell);
            }
        }
        for (k, l) in lines.iter().enumerate() {
            let p = if k == 0 { place.as_str() } else { "" };
            writeln!(w, "         {p:<16} {l}")?;
        }
    }
    for (cpus, irqs) in spread {
        writeln!(
            w,
            "         {:<16} {}",
            wirespeed_model::units::cpu_list(&cpus),
            irqs.join(" ")
        )?;
    }
    if !unknown.is_empty() {
        writeln!(
            w,
            "         {:<16} {}",
            "affinity unknown",
            unknown.join(" ")
        )?;
    }
    if !unrequested.is_empty() {
        writeln!(
            w,
            "         {:<16} {}",
            "never requested",
            unrequested.join(" ")
        )?;
    }
    // the marks this NIC's rows use
    let legend: Vec<String> = [IrqKind::Control, IrqKind::OtherInterface, IrqKind::Unknown]
        .into_iter()
        .filter(|k| nic.irqs.iter().any(|i| i.kind == *k))
        .map(|k| format!("{} = {}", kind_mark(k), kind_meaning(k)))
        .collect();
    if !legend.is_empty() {
        writeln!(w, "         ({})", legend.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_doctor::report::HostInfo;
    use wirespeed_doctor::{Evidence, Finding, Options, Severity};
    use wirespeed_host::HostFacts;

    /// Issue 22, item 9: every string of the text report came from the host or a snapshot;
    /// a file's terminal escapes (a title change, a screen clear) are written as text, in
    /// the fix lines people paste into a shell too.
    #[test]
    fn text_report_escapes_what_came_from_files() {
        let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let finding = Finding {
            id: "pcie-downtrained".into(),
            severity: Severity::Warning,
            iface: Some(evil.into()),
            summary: format!("link of {evil}"),
            evidence: vec![Evidence {
                what: "speed".into(),
                value: evil.into(),
                source: format!("/sys/{evil}"),
            }],
            fix: vec![format!("ethtool -L {evil} combined 8")],
            writes: vec![],
        };
        let host = HostInfo {
            hostname: Some(evil.into()),
            kernel: Some(evil.into()),
            source: "snapshot".into(),
            path: None,
        };
        let r = Report::new(
            "wirespeed test",
            host,
            &Options::default(),
            vec![finding],
            HostFacts::default(),
        );
        let mut out = Vec::new();
        write_report(&mut out, &r).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.contains("$ ethtool -L x\\u{1b}]0;pwned"), "{out}");
    }
}
