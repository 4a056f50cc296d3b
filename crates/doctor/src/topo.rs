//! `topo`: NUMA nodes → L3 groups → CPUs, and for each NIC its PCI address, driver, link,
//! PCIe link, NUMA node, and which nodes / L3 groups / CPUs its interrupts land on.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

impl Topo {
    /// The JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
