//! `topo`: NUMA nodes → L3 groups → CPUs, and for each NIC its PCI address, driver, link,
//! PCIe link, NUMA node, and which nodes / L3 groups / CPUs its interrupts land on.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};
use wirespeed_host::interrupts::IrqKind;
use wirespeed_host::nic::NicFacts;
use wirespeed_host::{CpuSet, HostFacts};

/// An L3 group as seen from one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopoL3 {
    pub id: u32,
    /// The group's CPUs on this node.
    pub cpus: CpuSet,
    pub size: Option<String>,
    /// True when the group also has CPUs on other nodes (sub-NUMA clustering).
    pub spans_nodes: bool,
}

/// A NUMA node (or, when the kernel shows none, all online CPUs as node `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopoNode {
    pub node: Option<u32>,
    pub cpus: CpuSet,
    pub l3_groups: Vec<TopoL3>,
}

/// Where one vector lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopoIrq {
    pub irq: u32,
    pub kind: IrqKind,
    pub action: Option<String>,
    /// Effective CPUs (unknown → empty).
    pub cpus: CpuSet,
    pub nodes: Vec<u32>,
    pub l3_groups: Vec<u32>,
}

/// One NIC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopoNic {
    pub name: String,
    pub pci_address: String,
    pub driver: Option<String>,
    pub model: Option<String>,
    pub operstate: Option<String>,
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u32>,
    pub pcie_current: Option<String>,
    pub pcie_max: Option<String>,
    pub pcie_available_mbps: Option<u64>,
    pub pcie_downgraded: Option<bool>,
    pub upstream_port: Option<String>,
    pub upstream_max: Option<String>,
    pub numa_node: Option<i32>,
    pub local_cpus: Option<CpuSet>,
    pub temp_celsius: Option<f64>,
    pub temp_crit_celsius: Option<f64>,
    pub irqs: Vec<TopoIrq>,
    /// Union over the interface's vectors.
    pub irq_cpus: CpuSet,
    pub irq_nodes: Vec<u32>,
    pub irq_l3_groups: Vec<u32>,
}

/// The whole picture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topo {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    pub online: CpuSet,
    pub packages: usize,
    pub cores: Option<usize>,
    pub smt_active: Option<bool>,
    pub cpufreq_driver: Option<String>,
    pub governors: BTreeMap<String, CpuSet>,
    pub nodes: Vec<TopoNode>,
    pub nics: Vec<TopoNic>,
}

fn link_text(speed: &Option<String>, width: Option<u32>) -> Option<String> {
    let s = speed.as_deref()?;
    let s = s.trim_end_matches(" PCIe");
    Some(match width {
        Some(w) => format!("{s} x{w}"),
        None => s.to_string(),
    })
}

fn nic_topo(facts: &HostFacts, n: &NicFacts) -> TopoNic {
    let irqs: Vec<TopoIrq> = n
        .irqs
        .iter()
        .map(|i| {
            let cpus = i.effective.clone().unwrap_or_default();
            TopoIrq {
                irq: i.irq,
                kind: i.kind,
                action: i.actions.first().cloned(),
                nodes: facts.cpu.nodes_of(&cpus),
                l3_groups: facts.cpu.l3_ids_of(&cpus),
                cpus,
            }
        })
        .collect();
    let irq_cpus = n.irq_cpus();
    let p = n.pcie.as_ref();
    let hottest = n.hwmon.as_ref().and_then(|h| h.hottest());
    TopoNic {
        name: n.name.clone(),
        pci_address: n.pci_address.clone(),
        driver: n.driver.clone(),
        model: n.device_name.clone(),
        operstate: n.operstate.clone(),
        speed_mbps: n.speed_mbps,
        mtu: n.mtu,
        pcie_current: p
            .and_then(|p| link_text(&p.function.current_speed, p.function.current_width)),
        pcie_max: p.and_then(|p| link_text(&p.function.max_speed, p.function.max_width)),
        pcie_available_mbps: p.and_then(|p| p.available_mbps),
        pcie_downgraded: p.and_then(|p| p.downgraded),
        upstream_port: p.and_then(|p| p.upstream.as_ref().map(|u| u.address.clone())),
        upstream_max: p.and_then(|p| {
            p.upstream
                .as_ref()
                .and_then(|u| link_text(&u.max_speed, u.max_width))
        }),
        numa_node: n.numa_node,
        local_cpus: n.local_cpus.clone(),
        temp_celsius: hottest.map(|s| s.input_millicelsius as f64 / 1000.0),
        temp_crit_celsius: hottest.and_then(|s| s.crit_millicelsius.map(|c| c as f64 / 1000.0)),
        irqs,
        irq_nodes: facts.cpu.nodes_of(&irq_cpus),
        irq_l3_groups: facts.cpu.l3_ids_of(&irq_cpus),
        irq_cpus,
    }
}

/// Build the picture from facts.
pub fn build(facts: &HostFacts) -> Topo {
    let c = &facts.cpu;
    let online = c.online_set();
    let mut nodes: Vec<TopoNode> = Vec::new();
    let node_list: Vec<(Option<u32>, CpuSet)> = if c.numa_nodes.values().any(|s| !s.is_empty()) {
        c.nodes_with_cpus()
            .map(|(n, s)| (Some(n), s.intersection(&online)))
            .collect()
    } else {
        vec![(None, online.clone())]
    };
    for (node, cpus) in node_list {
        let l3_groups = c
            .l3_groups
            .iter()
            .filter(|g| g.cpus.intersects(&cpus))
            .map(|g| TopoL3 {
                id: g.id,
                cpus: g.cpus.intersection(&cpus),
                size: g.size.clone(),
                spans_nodes: !g.cpus.is_subset(&cpus),
            })
            .collect();
        nodes.push(TopoNode {
            node,
            cpus,
            l3_groups,
        });
    }
    Topo {
        hostname: facts.hostname.clone(),
        kernel: facts.kernel.clone(),
        cpu_model: c.model.clone(),
        online,
        packages: c.packages.len(),
        cores: c.cores,
        smt_active: c.smt_active,
        cpufreq_driver: c.cpufreq_driver.clone(),
        governors: c.governors.clone(),
        nodes,
        nics: facts.nics.iter().map(|n| nic_topo(facts, n)).collect(),
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

impl Topo {
    /// The JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The terminal rendering.
    pub fn render_text(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut head = vec![self
            .hostname
            .clone()
            .unwrap_or_else(|| "unknown host".into())];
        if let Some(k) = &self.kernel {
            head.push(format!("kernel {k}"));
        }
        if let Some(m) = &self.cpu_model {
            head.push(m.clone());
        }
        writeln!(w, "{}", head.join(" | "))?;
        let mut line = vec![format!(
            "{} CPUs online ({})",
            self.online.len(),
            self.online
        )];
        if self.packages > 0 {
            line.push(format!(
                "{} package{}",
                self.packages,
                if self.packages == 1 { "" } else { "s" }
            ));
        }
        if let Some(c) = self.cores {
            line.push(format!("{c} cores"));
        }
        match self.smt_active {
            Some(true) => line.push("SMT on".into()),
            Some(false) => line.push("SMT off".into()),
            None => {}
        }
        if !self.governors.is_empty() {
            let g: Vec<String> = self
                .governors
                .iter()
                .map(|(g, s)| {
                    if *s == self.online {
                        g.clone()
                    } else {
                        format!("{g} on {s}")
                    }
                })
                .collect();
            line.push(format!(
                "governor {}{}",
                g.join(", "),
                self.cpufreq_driver
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
        } else {
            line.push("no cpufreq".into());
        }
        writeln!(w, "{}", line.join(" | "))?;
        writeln!(w)?;

        for n in &self.nodes {
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

        for nic in &self.nics {
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
                    .map(|c| format!(", local CPUs {c}"))
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
            self.render_irqs(w, nic)?;
        }
        Ok(())
    }

    fn render_irqs(&self, w: &mut dyn Write, nic: &TopoNic) -> io::Result<()> {
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
            let node = self
                .nodes
                .iter()
                .find(|n| n.cpus.contains(*cpu))
                .and_then(|n| n.node);
            let l3 = self
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
                format!("CPUs {cpus}"),
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
}
