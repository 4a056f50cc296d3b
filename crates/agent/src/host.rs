//! Host findings and the facts that matter, as metrics. [`write_host`] is pure (facts and
//! findings in); [`read_host`] reads the facts through a [`Root`] and runs doctor on them, so a
//! captured tree passed as `--root` injects its findings.

use wirespeed_doctor::{diagnose, Finding, Options, Severity};
use wirespeed_host::{collect, HostFacts, Root};

use crate::expo::{Exposition, Kind};

/// Facts and doctor's findings of one host, read now.
#[derive(Debug, Clone)]
pub struct HostView {
    pub facts: HostFacts,
    /// `Err` holds doctor's one-line complaint (options that do not fit the host).
    pub findings: Result<Vec<Finding>, String>,
}

/// Read facts through `root` and diagnose them with doctor's default options.
pub fn read_host(root: &Root) -> HostView {
    let facts = collect(root);
    let findings = diagnose(&facts, &Options::default()).map_err(|e| e.to_string());
    HostView { facts, findings }
}

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Critical];

/// Write the host families: findings, per-severity counts, and per-NIC facts.
pub fn write_host(e: &mut Exposition, v: &HostView) {
    let findings: &[Finding] = v.findings.as_deref().unwrap_or(&[]);
    {
        let mut f = e.family(
            "wirespeed_host_finding",
            Kind::Gauge,
            "A doctor finding that holds now (1); id is doctor's stable id, device the interface or empty for host-wide findings.",
        );
        for x in findings {
            f.sample(
                &[
                    ("id", &x.id),
                    ("device", x.iface.as_deref().unwrap_or("")),
                    ("severity", x.severity.as_str()),
                ],
                1.0,
            );
        }
    }
    {
        let mut f = e.family(
            "wirespeed_host_findings",
            Kind::Gauge,
            "Number of doctor findings that hold now, by severity.",
        );
        for s in SEVERITIES {
            let n = findings.iter().filter(|x| x.severity == s).count();
            f.sample(&[("severity", s.as_str())], n as f64);
        }
    }
    e.family(
        "wirespeed_host_diagnosis_ok",
        Kind::Gauge,
        "1 when doctor could diagnose the host's facts, 0 when it refused (see the agent's log).",
    )
    .sample(&[], if v.findings.is_ok() { 1.0 } else { 0.0 });

    let nics = &v.facts.nics;
    nic_family(
        e,
        "wirespeed_nic_up",
        "1 when the interface's link is up.",
        nics,
        |n| Some(if n.is_up() { 1.0 } else { 0.0 }),
    );
    nic_family(
        e,
        "wirespeed_nic_link_speed_bytes_per_second",
        "Negotiated link speed of the interface (bytes/s, Prometheus' base unit; x8 for bits/s).",
        nics,
        |n| n.speed_mbps.map(|m| m as f64 * 1e6 / 8.0),
    );
    nic_family(
        e,
        "wirespeed_nic_mtu_bytes",
        "MTU of the interface.",
        nics,
        |n| n.mtu.map(f64::from),
    );
    nic_family(
        e,
        "wirespeed_nic_pcie_link_width_lanes",
        "PCIe link width the function trained to.",
        nics,
        |n| n.pcie.as_ref()?.function.current_width.map(f64::from),
    );
    nic_family(
        e,
        "wirespeed_nic_pcie_link_max_width_lanes",
        "Widest PCIe link the function supports.",
        nics,
        |n| n.pcie.as_ref()?.function.max_width.map(f64::from),
    );
    nic_family(
        e,
        "wirespeed_nic_pcie_link_speed_transfers_per_second",
        "PCIe link speed (per lane) the function trained to.",
        nics,
        |n| {
            n.pcie
                .as_ref()?
                .function
                .current_rate
                .map(|r| f64::from(r.0) * 1e6)
        },
    );
    nic_family(
        e,
        "wirespeed_nic_pcie_link_max_speed_transfers_per_second",
        "Fastest PCIe link speed (per lane) the function supports.",
        nics,
        |n| {
            n.pcie
                .as_ref()?
                .function
                .max_rate
                .map(|r| f64::from(r.0) * 1e6)
        },
    );
    nic_family(
        e,
        "wirespeed_nic_pcie_bandwidth_bytes_per_second",
        "Usable PCIe bandwidth as trained now (speed x width x line code), bytes/s.",
        nics,
        |n| {
            n.pcie
                .as_ref()?
                .available_mbps
                .map(|m| m as f64 * 1e6 / 8.0)
        },
    );
    nic_family(
        e,
        "wirespeed_nic_pcie_downgraded",
        "1 when the function's PCIe speed or width is below its own maximum.",
        nics,
        |n| {
            n.pcie
                .as_ref()?
                .downgraded
                .map(|d| if d { 1.0 } else { 0.0 })
        },
    );
    nic_family(
        e,
        "wirespeed_nic_temperature_celsius",
        "Hottest temperature sensor of the NIC.",
        nics,
        |n| {
            n.hwmon
                .as_ref()?
                .hottest()
                .map(|s| s.input_millicelsius as f64 / 1000.0)
        },
    );
    nic_family(
        e,
        "wirespeed_nic_temperature_critical_celsius",
        "Critical temperature of the NIC's hottest sensor, when the driver reports one.",
        nics,
        |n| {
            n.hwmon
                .as_ref()?
                .hottest()?
                .crit_millicelsius
                .map(|c| c as f64 / 1000.0)
        },
    );
    nic_family(
        e,
        "wirespeed_nic_irqs",
        "Interrupt vectors of the interface.",
        nics,
        |n| Some(n.own_irqs().count() as f64),
    );
    nic_family(
        e,
        "wirespeed_nic_irq_cpus",
        "Distinct CPUs the interface's interrupt vectors are delivered to.",
        nics,
        |n| Some(n.irq_cpus().len() as f64),
    );
}

fn nic_family(
    e: &mut Exposition,
    name: &'static str,
    help: &str,
    nics: &[wirespeed_host::nic::NicFacts],
    value: impl Fn(&wirespeed_host::nic::NicFacts) -> Option<f64>,
) {
    let mut f = e.family(name, Kind::Gauge, help);
    for n in nics {
        if let Some(v) = value(n) {
            f.sample(&[("device", &n.name)], v);
        }
    }
}
