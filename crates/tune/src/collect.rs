//! Fill a [`HostView`] from the host crate's facts, plus the few things only tune needs (which
//! cpufreq policy file governs a CPU, which congestion-control modules the kernel ships).

use wirespeed_doctor::placement::{vectors, CpuLayout};
use wirespeed_host::ethtool::NTUPLE;
use wirespeed_host::nic::LinkState;
use wirespeed_host::{CpuSet, HostFacts, Root};

use crate::view::{FindingView, GovernorView, HostView, IrqView, NicView, RingView, StackView};

/// The interface to tune could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectError {
    #[error("unknown interface {name:?} (interfaces: {known})")]
    UnknownInterface { name: String, known: String },
}

/// The `scaling_governor` file that controls `cpu`: its cpufreq policy's, resolved through the
/// `cpuN/cpufreq` link where the kernel has one, so CPUs sharing a policy share the path.
pub fn governor_path(root: &Root, cpu: u32) -> Option<String> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
    let dir = match root.resolve_link(&dir) {
        Ok(resolved) => resolved,
        Err(_) => dir,
    };
    let path = format!("{dir}/scaling_governor");
    root.exists(&path).then_some(path)
}

/// A view of an interface the host facts do not list (not PCI-backed: veth, bridges, bonds):
/// link values only, no IRQs.
fn plain_interface(root: &Root, name: &str) -> Option<NicView> {
    if !root.exists(&format!("/sys/class/net/{name}")) {
        return None;
    }
    let link = LinkState::read(root, name);
    let ethtool = wirespeed_host::ethtool::collect_ethtool(root, name);
    Some(NicView {
        name: name.to_string(),
        driver: None,
        speed_mbps: link.speed_mbps,
        mtu: link.mtu,
        txqueuelen: link.tx_queue_len,
        numa_node: None,
        local_cpus: None,
        irqs: Vec::new(),
        ring: None,
        coalesce: ethtool.as_ref().and_then(|e| e.coalesce),
        sizes: wirespeed_host::link::collect_sizes(root, name),
        pause: ethtool.as_ref().and_then(|e| e.pause),
        ntuple: ethtool
            .as_ref()
            .and_then(|e| e.features.as_ref()?.get(NTUPLE).copied()),
    })
}

/// Build the planner's view. `iface` names the interface (else the fastest PCI NIC that is up,
/// by [`wirespeed_doctor::target::fastest_up`]).
pub fn view(root: &Root, facts: &HostFacts, iface: Option<&str>) -> Result<HostView, CollectError> {
    let mut v = HostView {
        hostname: facts.hostname.clone(),
        live: root.is_live(),
        layout: CpuLayout::from_facts(facts),
        cstates: facts.cpu.cstates.clone(),
        ..HostView::default()
    };
    for c in &facts.cpu.cpus {
        if let Some(path) = governor_path(root, c.cpu) {
            let current = root.read_opt(&path).or_else(|| c.governor.clone());
            if let Some(current) = current {
                let avail_path = path.replace("scaling_governor", "scaling_available_governors");
                let available = root
                    .read_opt(&avail_path)
                    .map(|s| s.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default();
                v.governors.insert(
                    c.cpu,
                    GovernorView {
                        path,
                        current,
                        available,
                    },
                );
            }
        }
    }
    let s = &facts.stack;
    v.stack = StackView {
        rmem_max: s.rmem_max,
        wmem_max: s.wmem_max,
        tcp_rmem: s.tcp_rmem,
        tcp_wmem: s.tcp_wmem,
        congestion_control: s.tcp_congestion_control.clone(),
        available_congestion_control: s
            .tcp_available_congestion_control
            .clone()
            .unwrap_or_default(),
        loadable_congestion_control: s.tcp_loadable_congestion_control.clone(),
        default_qdisc: s.default_qdisc.clone(),
        tcp_mtu_probing: s.tcp_mtu_probing,
        netdev_max_backlog: s.netdev_max_backlog,
        netdev_budget: s.netdev_budget,
        softnet_dropped: s.softnet_dropped_total(),
        softnet_time_squeeze: s.softnet_time_squeeze_total(),
    };
    v.irqbalance_running = s.irqbalance_running;

    let nic = match iface {
        Some(name) => match facts.nic(name) {
            Some(n) => Some(n),
            None => {
                v.nic = plain_interface(root, name);
                if v.nic.is_none() {
                    let mut known: Vec<String> = root
                        .list_opt("/sys/class/net")
                        .into_iter()
                        .filter(|n| n != "lo")
                        .collect();
                    known.sort();
                    return Err(CollectError::UnknownInterface {
                        name: name.to_string(),
                        known: if known.is_empty() {
                            "none".into()
                        } else {
                            known.join(", ")
                        },
                    });
                }
                return Ok(v);
            }
        },
        // the one rule doctor uses too; a tie it broke is said in the plan's context
        None => wirespeed_doctor::target::fastest_up(facts).map(|c| {
            v.nic_choice = c.is_tie().then(|| c.words());
            c.nic
        }),
    };
    if let Some(n) = nic {
        let irqs: Vec<IrqView> = vectors(n)
            .into_iter()
            .map(|vec| IrqView {
                irq: vec.irq,
                name: n
                    .irqs
                    .iter()
                    .find(|i| i.irq == vec.irq)
                    .and_then(|i| i.actions.first().cloned()),
                kind: vec.kind,
                requested: vec.requested,
                effective: vec.effective,
            })
            .collect();
        v.nic = Some(NicView {
            name: n.name.clone(),
            driver: n.driver.clone(),
            speed_mbps: n.speed_mbps,
            mtu: n.mtu,
            txqueuelen: n.tx_queue_len,
            numa_node: n.node(),
            local_cpus: n.local_cpus.clone(),
            irqs,
            ring: n
                .ethtool
                .as_ref()
                .and_then(|e| e.ring)
                .filter(|_| root.is_live())
                .map(|r| RingView {
                    rx: r.rx,
                    rx_max: r.rx_max,
                    tx: r.tx,
                    tx_max: r.tx_max,
                }),
            coalesce: n.ethtool.as_ref().and_then(|e| e.coalesce),
            sizes: wirespeed_host::link::collect_sizes(root, &n.name),
            pause: n.ethtool.as_ref().and_then(|e| e.pause),
            ntuple: n
                .ethtool
                .as_ref()
                .and_then(|e| e.features.as_ref()?.get(NTUPLE).copied()),
        });
    }
    Ok(v)
}

/// What a plan is made from: the host's view (of `iface`, or the one interface that carries
/// traffic) with doctor's findings for it, read through `root`.
pub fn host_view(
    root: &Root,
    iface: Option<&str>,
    app_cpus: Option<&CpuSet>,
    rtt_ms: f64,
    rate_mbps: Option<u64>,
) -> Result<HostView, CollectError> {
    let facts = wirespeed_host::collect(root);
    let mut v = view(root, &facts, iface)?;
    let nic = v.nic.as_ref().map(|n| n.name.clone());
    v.findings = findings(&facts, nic.as_deref(), app_cpus, rtt_ms, rate_mbps);
    Ok(v)
}

/// Doctor's findings for the same interface, app CPUs and RTT. An interface that is not a PCI
/// NIC (veth, bridge) gets the host-wide findings only.
pub fn findings(
    facts: &HostFacts,
    iface: Option<&str>,
    app_cpus: Option<&CpuSet>,
    rtt_ms: f64,
    rate_mbps: Option<u64>,
) -> Vec<FindingView> {
    let pci = iface.is_none_or(|i| facts.nic(i).is_some());
    let opts = wirespeed_doctor::Options {
        iface: if pci { iface.map(str::to_string) } else { None },
        app_cpus: app_cpus.cloned(),
        rtt_ms,
        rate_mbps,
    };
    match wirespeed_doctor::diagnose(facts, &opts) {
        Ok(list) => list
            .into_iter()
            .filter(|f| pci || f.iface.is_none())
            .map(|f| FindingView {
                id: f.id,
                summary: f.summary,
                fix: f.fix,
                writes: f.writes,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What a plan for an upper device (a bond, a VLAN, a bridge) is made from: the device resolved
/// down to its members, one view per PCI NIC beneath it (each with doctor's findings for that
/// NIC), and doctor's findings for the stack itself (`bond-hash-policy`, `bond-miimon-off`…).
#[derive(Debug, Clone)]
pub struct StackViews {
    pub stack: wirespeed_host::UpperStack,
    pub members: Vec<HostView>,
    pub findings: Vec<wirespeed_doctor::Finding>,
}

/// The views of `iface` when it is an upper device with at least one PCI NIC beneath it;
/// `None` for a PCI NIC or an interface with nothing beneath it (planned as before).
pub fn stack_views(
    root: &Root,
    iface: &str,
    app_cpus: Option<&CpuSet>,
    rtt_ms: f64,
    rate_mbps: Option<u64>,
) -> Result<Option<StackViews>, CollectError> {
    let facts = wirespeed_host::collect(root);
    stack_views_of(root, &facts, iface, app_cpus, rtt_ms, rate_mbps)
}

/// [`stack_views`] from facts already collected through `root`.
pub fn stack_views_of(
    root: &Root,
    facts: &HostFacts,
    iface: &str,
    app_cpus: Option<&CpuSet>,
    rtt_ms: f64,
    rate_mbps: Option<u64>,
) -> Result<Option<StackViews>, CollectError> {
    if facts.nic(iface).is_some() {
        return Ok(None);
    }
    let Some(stack) = facts.upper(iface).cloned() else {
        return Ok(None);
    };
    let mut members = Vec::new();
    for leaf in stack.leaves() {
        if facts.nic(&leaf.name).is_none() {
            continue;
        }
        let mut v = view(root, facts, Some(&leaf.name))?;
        v.findings = findings(facts, Some(&leaf.name), app_cpus, rtt_ms, rate_mbps);
        members.push(v);
    }
    if members.is_empty() {
        return Ok(None);
    }
    let opts = wirespeed_doctor::Options {
        iface: Some(iface.to_string()),
        app_cpus: app_cpus.cloned(),
        rtt_ms,
        rate_mbps,
    };
    let findings = wirespeed_doctor::upper::run_all(facts, &opts);
    Ok(Some(StackViews {
        stack,
        members,
        findings,
    }))
}
