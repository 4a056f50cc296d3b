//! Doctor: pure checks from [`HostFacts`] to [`Finding`]s.
//!
//! Architecture: `wirespeed-host` reads a host (live, a root directory or a snapshot) into
//! facts; this crate never touches the file system. [`diagnose`] runs every check of
//! [`checks`] over the facts with the user's [`Options`] (interface, application CPUs, RTT) and
//! returns the findings sorted worst first. Each finding has a stable id (the contract in [`ids`]),
//! a severity, a one-line summary, the evidence (values and the host file each came from) and the
//! fix as shell commands; where a fix moves IRQs or sizes buffers, the values come from
//! [`placement`] and [`sizing`], the rules `wirespeed tune` plans with, so the two agree. [`report`] renders the findings as text or as
//! the versioned JSON document described in `docs/doctor.md`; [`topo`] renders the
//! CPU/NUMA/L3/NIC-IRQ topology.
//!
//! Rules every check follows: a fact that is unknown (`None`) never produces a finding; checks
//! about placement use the NIC's queue (completion) vectors, never another device's IRQs; numbers
//! are computed from the facts the way the kernel and the PCIe specification define them, not
//! tuned to particular hosts.

pub mod checks;
pub mod path_model;
pub mod placement;
pub mod report;
pub mod sizing;
pub mod topo;

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
    pub const CPU_GOVERNOR_NOT_PERFORMANCE: &str = "cpu-governor-not-performance";
    pub const NIC_TEMPERATURE_HIGH: &str = "nic-temperature-high";
    pub const IRQBALANCE_RUNNING: &str = "irqbalance-running";
    pub const SOFTNET_DROPS: &str = "softnet-drops";

    /// Every id, in the order of the documentation table.
    pub const ALL: [&str; 13] = [
        PCIE_LINK_DOWNGRADED,
        PCIE_BANDWIDTH_BELOW_LINE_RATE,
        IRQ_NUMA_REMOTE,
        APP_NUMA_REMOTE,
        IRQ_ON_APP_CORE,
        IRQ_CROSS_L3,
        MTU_BELOW_JUMBO,
        SOCKET_BUFFERS_SMALL,
        CONGESTION_CONTROL_LOSS_BASED,
        CPU_GOVERNOR_NOT_PERFORMANCE,
        NIC_TEMPERATURE_HIGH,
        IRQBALANCE_RUNNING,
        SOFTNET_DROPS,
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
}

/// What the user asked doctor to consider.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Only this interface (else every PCI NIC).
    pub iface: Option<String>,
    /// CPUs the application (iperf3, wirespeed, a data mover) runs on.
    pub app_cpus: Option<CpuSet>,
    /// Round-trip time of the paths to serve, ms (bandwidth-delay product).
    pub rtt_ms: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            iface: None,
            app_cpus: None,
            rtt_ms: DEFAULT_RTT_MS,
        }
    }
}

/// RTT assumed when none is given.
pub const DEFAULT_RTT_MS: f64 = 10.0;

/// Options that do not fit the host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DoctorError {
    #[error("no PCI network interface named {name:?} on this host (PCI interfaces: {known})")]
    UnknownInterface { name: String, known: String },
    #[error("--app-cpus {cpus}: CPU(s) {offline} are not online (online: {online})")]
    OfflineCpus {
        cpus: String,
        offline: String,
        online: String,
    },
    #[error("--rtt {0}: expected a positive number of milliseconds")]
    BadRtt(f64),
}

/// Run every check. Findings come sorted worst first (severity, then the order of [`ids::ALL`],
/// then interface name).
pub fn diagnose(facts: &HostFacts, opts: &Options) -> Result<Vec<Finding>, DoctorError> {
    validate(facts, opts)?;
    let mut findings = checks::run_all(facts, opts);
    sort_findings(&mut findings);
    Ok(findings)
}

/// Check the options against the host.
pub fn validate(facts: &HostFacts, opts: &Options) -> Result<(), DoctorError> {
    if !(opts.rtt_ms.is_finite() && opts.rtt_ms > 0.0) {
        return Err(DoctorError::BadRtt(opts.rtt_ms));
    }
    if let Some(name) = &opts.iface {
        if facts.nic(name).is_none() {
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
    if let Some(app) = &opts.app_cpus {
        let online = facts.cpu.online_set();
        if !online.is_empty() {
            let offline = app.difference(&online);
            if !offline.is_empty() {
                return Err(DoctorError::OfflineCpus {
                    cpus: app.to_string(),
                    offline: offline.to_string(),
                    online: online.to_string(),
                });
            }
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
