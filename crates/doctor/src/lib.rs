//! Doctor: pure checks from [`HostFacts`] to [`Finding`]s.
//!
//! Architecture: `wirespeed-host` reads a host (live, a root directory or a snapshot) into
//! facts; this crate never touches the file system. [`diagnose`] runs every check of
//! [`checks`] over the facts with the user's [`Options`] (interface, application CPUs, RTT) and
//! returns the findings sorted worst first. Each finding has a stable id (the contract in [`ids`]),
//! a severity, a one-line summary, the evidence (values and the host file each came from) and the
//! fix as shell commands; where a fix moves IRQs or sizes buffers, the values come from
//! [`placement`] and [`sizing`], the rules `wirespeed tune` plans with, so the two agree; where a
//! file write fixes a finding, the finding carries it ([`Finding::writes`]) and tune applies it.
//! [`knobs`] holds the checks of the knobs the host-tuning write-ups turn; [`rate`] the rate a
//! check sizes for when the link reports no speed, and [`notes`] says what was not checked.
//! [`report`] holds the findings as the versioned JSON document described in `docs/doctor.md`;
//! [`topo`] the CPU/NUMA/L3/NIC-IRQ topology. Their text is drawn by `wirespeed_report::doctor`
//! with every other renderer.
//!
//! Rules every check follows: a fact that is unknown (`None`) never produces a finding; checks
//! about placement use the NIC's queue (completion) vectors, never another device's IRQs; numbers
//! are computed from the facts the way the kernel and the PCIe specification define them, not
//! tuned to particular hosts.

pub mod checks;
pub mod knobs;
pub mod path_model;
pub mod placement;
pub mod rate;
pub mod report;
pub mod sizing;
pub mod target;
pub mod topo;
pub mod upper;

use serde::{Deserialize, Serialize};
use wirespeed_host::{CpuSet, HostFacts};

/// The finding ids. They are a contract: scripts match on them.
pub mod ids {
    pub const PCIE_LINK_DOWNGRADED: &str = "pcie-link-downgraded";
    pub const PCIE_BANDWIDTH_BELOW_LINE_RATE: &str = "pcie-bandwidth-below-line-rate";
    pub const IRQ_NUMA_REMOTE: &str = "irq-numa-remote";
    pub const APP_NUMA_REMOTE: &str = "app-numa-remote";
    pub const IRQ_ON_APP_CORE: &str = "irq-on-app-core";
    pub const IRQ_CROSS_L3: &str = "irq-cross-l3";
    pub const MTU_BELOW_JUMBO: &str = "mtu-below-jumbo";
    pub const SOCKET_BUFFERS_SMALL: &str = "socket-buffers-small";
    pub const CONGESTION_CONTROL_LOSS_BASED: &str = "congestion-control-loss-based";
    pub const DEFAULT_QDISC_NOT_FQ: &str = "default-qdisc-not-fq";
    pub const TCP_MTU_PROBING_OFF: &str = "tcp-mtu-probing-off";
    pub const CPU_GOVERNOR_NOT_PERFORMANCE: &str = "cpu-governor-not-performance";
    pub const NIC_TEMPERATURE_HIGH: &str = "nic-temperature-high";
    pub const IRQBALANCE_RUNNING: &str = "irqbalance-running";
    pub const SOFTNET_DROPS: &str = "softnet-drops";
    pub const TCP_OPTIONS_OFF: &str = "tcp-options-off";
    pub const IOMMU_TRANSLATED: &str = "iommu-translated";
    pub const TXQUEUELEN_SHORT: &str = "txqueuelen-short";
    pub const RING_BELOW_MAX: &str = "ring-below-max";
    pub const PCIE_MPS_SMALL: &str = "pcie-mps-small";
    pub const PCIE_MAXREADREQ_SMALL: &str = "pcie-maxreadreq-small";
    pub const BIG_TCP_OFF: &str = "big-tcp-off";
    pub const ARFS_OFF: &str = "arfs-off";
    pub const CSTATES_DEEP: &str = "cstates-deep";
    pub const COALESCING: &str = "coalescing";
    pub const PAUSE_FRAMES_OFF: &str = "pause-frames-off";
    pub const HEADER_SPLIT_OFF: &str = "header-split-off";
    pub const BOND_HASH_POLICY: &str = "bond-hash-policy";
    pub const BOND_MEMBER_DOWN: &str = "bond-member-down";
    pub const BOND_MEMBER_SPEED_MISMATCH: &str = "bond-member-speed-mismatch";
    pub const BOND_MEMBER_NUMA_SPLIT: &str = "bond-member-numa-split";
    pub const BOND_LACP_RATE_SLOW: &str = "bond-lacp-rate-slow";
    pub const BOND_MIIMON_OFF: &str = "bond-miimon-off";
    pub const STACK_MTU_MISMATCH: &str = "stack-mtu-mismatch";
    pub const BRIDGE_NETFILTER: &str = "bridge-netfilter";

    /// Every id, in the order of the documentation table.
    pub const ALL: [&str; 35] = [
        PCIE_LINK_DOWNGRADED,
        PCIE_BANDWIDTH_BELOW_LINE_RATE,
        IRQ_NUMA_REMOTE,
        APP_NUMA_REMOTE,
        IRQ_ON_APP_CORE,
        IRQ_CROSS_L3,
        MTU_BELOW_JUMBO,
        SOCKET_BUFFERS_SMALL,
        CONGESTION_CONTROL_LOSS_BASED,
        DEFAULT_QDISC_NOT_FQ,
        TCP_MTU_PROBING_OFF,
        CPU_GOVERNOR_NOT_PERFORMANCE,
        NIC_TEMPERATURE_HIGH,
        IRQBALANCE_RUNNING,
        SOFTNET_DROPS,
        TCP_OPTIONS_OFF,
        IOMMU_TRANSLATED,
        TXQUEUELEN_SHORT,
        RING_BELOW_MAX,
        PCIE_MPS_SMALL,
        PCIE_MAXREADREQ_SMALL,
        BIG_TCP_OFF,
        ARFS_OFF,
        CSTATES_DEEP,
        COALESCING,
        PAUSE_FRAMES_OFF,
        HEADER_SPLIT_OFF,
        BOND_HASH_POLICY,
        BOND_MEMBER_DOWN,
        BOND_MEMBER_SPEED_MISMATCH,
        BOND_MEMBER_NUMA_SPLIT,
        BOND_LACP_RATE_SLOW,
        BOND_MIIMON_OFF,
        STACK_MTU_MISMATCH,
        BRIDGE_NETFILTER,
    ];
}

/// How bad a finding is. Ordered: `Info < Warning < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; may matter on long or lossy paths.
    Info,
    /// Costs throughput or stability under load.
    Warning,
    /// Caps throughput well below the link's rate, or risks the hardware.
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// One value a finding rests on, and the host file it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the value is (`current link width`).
    pub what: String,
    /// The value as read or computed (`4`, `31504 Mbit/s`).
    pub value: String,
    /// Host path(s) it came from, or `computed` for derived values.
    pub source: String,
}

impl Evidence {
    pub fn new(
        what: impl Into<String>,
        value: impl ToString,
        source: impl Into<String>,
    ) -> Evidence {
        Evidence {
            what: what.into(),
            value: value.to_string(),
            source: source.into(),
        }
    }
}

/// One thing that holds the host back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id from [`ids`].
    pub id: String,
    pub severity: Severity,
    /// The interface it concerns, for per-NIC findings.
    pub iface: Option<String>,
    /// One line: what is wrong and what it costs.
    pub summary: String,
    pub evidence: Vec<Evidence>,
    /// Shell commands that fix or verify it; lines starting with `#` are instructions for steps
    /// no command can do (reseat a card, add a fan).
    pub fix: Vec<String>,
    /// The kernel files the fix writes, with the values: what `wirespeed tune` journals and
    /// applies for findings that a file write fixes. Empty when no file write fixes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<FileWrite>,
}

/// One kernel file a fix writes (a sysctl, a sysfs attribute).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileWrite {
    /// Host path (`/proc/sys/net/ipv4/tcp_sack`, `/sys/class/net/IF/tx_queue_len`).
    pub path: String,
    /// The value now, as read.
    pub current: String,
    /// The value the fix writes.
    pub value: String,
    /// What the write does, in a few words.
    pub what: String,
}

/// What the user asked doctor to consider.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Only this interface (else every PCI NIC): a PCI NIC, or an upper device (bond, VLAN,
    /// bridge, macvlan), whose PCI members are checked each on its own and whose stack is
    /// checked as a whole ([`upper`]).
    pub iface: Option<String>,
    /// CPUs the application (iperf3, wirespeed, a data mover) runs on.
    pub app_cpus: Option<CpuSet>,
    /// Round-trip time of the paths to serve, ms (bandwidth-delay product).
    pub rtt_ms: f64,
    /// The rate the user wants from the path, Mbit/s (`--rate`); else the link speed, else the
    /// instance type's ([`rate`]).
    pub rate_mbps: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            iface: None,
            app_cpus: None,
            rtt_ms: DEFAULT_RTT_MS,
            rate_mbps: None,
        }
    }
}

impl Options {
    /// The target these options resolve to on `facts` ([`target::resolve`] for doctor; the
    /// CPUs this process may run on are not known from facts alone).
    pub fn target(&self, facts: &HostFacts) -> Result<target::HostTarget, DoctorError> {
        let rate = match self.rate_mbps {
            None => None,
            Some(m) => Some(wirespeed_model::units::Rate::from_mbps(m).ok_or_else(|| {
                target::TargetError::Unit(wirespeed_model::units::UnitError::Rate {
                    flag: "--rate".into(),
                    text: m.to_string(),
                })
            })?),
        };
        let ask = target::Ask {
            iface: self.iface.clone(),
            rate,
            rtt_ms: Some(self.rtt_ms),
            ..target::Ask::default()
        }
        .with_cpus("--app-cpus", self.app_cpus.as_ref());
        let host = target::Host {
            facts,
            allowed: None,
        };
        Ok(target::resolve(target::Command::Doctor, Some(host), &ask)?)
    }
}

/// Doctor's options from a resolved target: the interface `--iface` named (else every NIC), the
/// application CPUs, the RTT and the rate `--rate` gave (each NIC's own rate otherwise).
impl From<&target::HostTarget> for Options {
    fn from(t: &target::HostTarget) -> Options {
        Options {
            iface: t.named_iface().map(str::to_string),
            app_cpus: t.cpus("--app-cpus").cloned(),
            rtt_ms: t.rtt_ms(),
            rate_mbps: t.requested_mbps(),
        }
    }
}

/// RTT assumed when none is given (one default for every command).
pub use wirespeed_model::units::DEFAULT_RTT_MS;

/// Options that do not fit the host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DoctorError {
    #[error("no PCI network interface or upper device (bond, VLAN, bridge, macvlan) named {name:?} on this host (PCI interfaces: {known})")]
    UnknownInterface { name: String, known: String },
    /// The RTT, the rate or the CPUs ([`target::resolve`]).
    #[error(transparent)]
    Target(#[from] target::TargetError),
}

/// What doctor could not check, and why (a NIC with no speed and no `--rate`), and the vectors it
/// listed but did not judge (never requested by a driver): lines the report prints under the
/// findings.
pub fn notes(facts: &HostFacts, opts: &Options) -> Vec<String> {
    let mut out = upper::notes(facts, opts);
    // which NIC the buffer sizing is for, when the rule broke a tie
    if opts.iface.is_none() {
        if let Some(c) = target::fastest_up(facts).filter(|c| c.is_tie()) {
            out.push(format!("socket buffers sized for {}", c.words()));
        }
    }
    for nic in checks::target_nics(facts, opts) {
        let up_or_named = opts.iface.is_some() || nic.is_up();
        if up_or_named {
            match rate::basis(facts, nic, opts) {
                Ok(rate::Basis::Instance { mbps, product }) => out.push(format!(
                    "{}: the driver reports no link speed; sizing for {} from the instance type {product}",
                    nic.name,
                    wirespeed_model::units::speed_mbps(mbps)
                )),
                Ok(_) => {}
                Err(why) => out.push(format!("not checked: {why}")),
            }
        }
        let unreq: Vec<String> = nic.unrequested_irqs().map(|i| i.irq.to_string()).collect();
        if !unreq.is_empty() {
            out.push(format!(
                "{}: IRQ{} {} of {} {} never requested by a driver (no handler, no interrupt, no effective CPU): listed, not judged or moved",
                nic.name,
                if unreq.len() == 1 { "" } else { "s" },
                unreq.join(","),
                nic.pci_address,
                if unreq.len() == 1 { "was" } else { "were" }
            ));
        }
    }
    out
}

/// Run every check. Findings come sorted worst first (severity, then the order of [`ids::ALL`],
/// then interface name). The options are resolved into a target first ([`target::resolve`]);
/// a command that resolved its target already calls [`diagnose_target`].
pub fn diagnose(facts: &HostFacts, opts: &Options) -> Result<Vec<Finding>, DoctorError> {
    let t = opts.target(facts)?;
    diagnose_target(facts, &t)
}

/// [`diagnose`] for a resolved target: nothing in it is checked again.
pub fn diagnose_target(
    facts: &HostFacts,
    t: &target::HostTarget,
) -> Result<Vec<Finding>, DoctorError> {
    let opts = Options::from(t);
    check_iface(facts, &opts)?;
    let mut findings = checks::run_all(facts, &opts, t.sized_for(facts));
    findings.extend(upper::run_all(facts, &opts));
    upper::label_members(facts, &opts, &mut findings);
    sort_findings(&mut findings);
    Ok(findings)
}

/// Check the options against the host: the target they resolve to, and an interface doctor
/// can check.
pub fn validate(facts: &HostFacts, opts: &Options) -> Result<(), DoctorError> {
    opts.target(facts)?;
    check_iface(facts, opts)
}

/// A named interface doctor checks: a PCI NIC or an upper device over some.
fn check_iface(facts: &HostFacts, opts: &Options) -> Result<(), DoctorError> {
    if let Some(name) = &opts.iface {
        if facts.nic(name).is_none() && facts.upper(name).is_none() {
            let known: Vec<&str> = facts.nics.iter().map(|n| n.name.as_str()).collect();
            return Err(DoctorError::UnknownInterface {
                name: name.clone(),
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// Sort worst first, then by id order, then interface.
pub fn sort_findings(findings: &mut [Finding]) {
    let rank = |id: &str| {
        ids::ALL
            .iter()
            .position(|i| *i == id)
            .unwrap_or(ids::ALL.len())
    };
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(rank(&a.id).cmp(&rank(&b.id)))
            .then(a.iface.cmp(&b.iface))
    });
}
