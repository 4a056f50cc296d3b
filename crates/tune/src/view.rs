//! What the planner needs to know about a host: a narrow view, filled from the host crate's
//! facts (see [`crate::collect`]) or built by hand in tests.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use wirespeed_doctor::placement::{NicLocality, Vector};
use wirespeed_host::CpuSet;

pub use wirespeed_doctor::placement::{CpuLayout, VectorKind};

/// One IRQ of the NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqView {
    pub irq: u32,
    /// The action name in `/proc/interrupts` (`mlx5_comp3@pci:0000:01:00.0`).
    pub name: Option<String>,
    pub kind: VectorKind,
    /// `smp_affinity_list`.
    pub requested: CpuSet,
    /// `effective_affinity_list` where the kernel has it, else `requested`.
    pub effective: CpuSet,
}

impl IrqView {
    /// The vector as the shared placement rule sees it.
    pub fn vector(&self) -> Vector {
        Vector {
            irq: self.irq,
            kind: self.kind,
            requested: self.requested.clone(),
            effective: self.effective.clone(),
        }
    }
}

/// Ring sizes as the ethtool interface reports them (live hosts only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingView {
    pub rx: u32,
    pub rx_max: u32,
    pub tx: u32,
    pub tx_max: u32,
}

/// The NIC being tuned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicView {
    pub name: String,
    pub driver: Option<String>,
    /// Link speed in Mbit/s; `None` when the link is down or the driver does not say.
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u32>,
    pub txqueuelen: Option<u32>,
    /// NUMA node of the PCI function; `None` for -1 (a single-node board) or unknown.
    pub numa_node: Option<u32>,
    /// CPUs local to the PCI function (`local_cpulist`).
    pub local_cpus: Option<CpuSet>,
    /// The NIC's IRQs (queue and control), in IRQ number order.
    pub irqs: Vec<IrqView>,
    pub ring: Option<RingView>,
    /// Interrupt coalescing as the NIC answered `ETHTOOL_GCOALESCE` (live, or the answer a
    /// snapshot carries); `None` when it did not answer.
    #[serde(default)]
    pub coalesce: Option<wirespeed_host::ethtool::Coalesce>,
    /// GSO/GRO sizes (rtnetlink on a live host, the tree's files or answer in a capture).
    #[serde(default)]
    pub sizes: Option<wirespeed_host::link::LinkSizes>,
    /// Flow control as the NIC answered `ETHTOOL_GPAUSEPARAM`; `None` when it did not answer.
    #[serde(default)]
    pub pause: Option<wirespeed_host::ethtool::Pause>,
    /// The `rx-ntuple-filter` feature (`ethtool -k`: ntuple) as the NIC answered
    /// `ETHTOOL_GFEATURES`; `None` when it did not answer or does not list it.
    #[serde(default)]
    pub ntuple: Option<wirespeed_host::ethtool::Feature>,
}

impl NicView {
    pub fn locality(&self) -> NicLocality<'_> {
        NicLocality {
            node: self.numa_node,
            local_cpus: self.local_cpus.as_ref(),
        }
    }
}

/// A CPU's frequency governor and where to set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GovernorView {
    /// The `scaling_governor` file that controls this CPU (its cpufreq policy's).
    pub path: String,
    pub current: String,
    /// `scaling_available_governors`; empty when unknown.
    pub available: Vec<String>,
}

/// Stack sysctls (values as the kernel prints them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackView {
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    pub tcp_rmem: Option<[u64; 3]>,
    pub tcp_wmem: Option<[u64; 3]>,
    pub congestion_control: Option<String>,
    pub available_congestion_control: Vec<String>,
    /// Congestion-control modules the kernel ships but has not loaded (from
    /// `/lib/modules/RELEASE/modules.dep` / `modules.builtin`); writing the sysctl loads them.
    /// `None`: the module list could not be read (unknown, not "none").
    pub loadable_congestion_control: Option<Vec<String>>,
    pub default_qdisc: Option<String>,
    pub tcp_mtu_probing: Option<u32>,
    pub netdev_max_backlog: Option<u64>,
    pub netdev_budget: Option<u64>,
    pub softnet_dropped: Option<u64>,
    pub softnet_time_squeeze: Option<u64>,
}

/// A doctor finding, reduced to what a plan note needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingView {
    pub id: String,
    pub summary: String,
    /// The fix as doctor gives it (commands or advice).
    pub fix: Vec<String>,
    /// The kernel files doctor's fix writes (tune applies exactly these).
    #[serde(default)]
    pub writes: Vec<wirespeed_doctor::FileWrite>,
}

/// Everything the planner reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostView {
    pub hostname: Option<String>,
    /// True for the running host (services and ethtool are reachable).
    pub live: bool,
    /// Online CPUs, NUMA nodes, L3 groups, SMT siblings.
    #[serde(flatten)]
    pub layout: CpuLayout,
    pub governors: BTreeMap<u32, GovernorView>,
    pub stack: StackView,
    pub irqbalance_running: Option<bool>,
    pub nic: Option<NicView>,
    /// How the interface was chosen when no `--iface` named it and NICs as fast were up
    /// ([`wirespeed_doctor::target::NicChoice::words`]).
    #[serde(default)]
    pub nic_choice: Option<String>,
    /// The doctor's findings for this host with the same interface, app CPUs and RTT.
    pub findings: Vec<FindingView>,
    /// The CPUs' idle states (`cpuidle/stateK`), for `cstates-deep`.
    #[serde(default)]
    pub cstates: Vec<wirespeed_host::cpu::CState>,
}

impl HostView {
    pub fn finding(&self, id: &str) -> Option<&FindingView> {
        self.findings.iter().find(|f| f.id == id)
    }

    pub fn has(&self, id: &str) -> bool {
        self.finding(id).is_some()
    }
}
