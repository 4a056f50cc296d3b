//! The checks. Each is a pure function from facts and options to zero or more findings, and
//! each says why it fires in its own documentation.

use crate::placement::{self, PlacementError};
use crate::sizing;
use crate::{ids, Evidence, FileWrite, Finding, Options, Severity};
use wirespeed_host::nic::{NicFacts, NicIrq};
use wirespeed_host::pci::encoding;
use wirespeed_host::stack::paths;
use wirespeed_host::{CpuSet, HostFacts};

/// Run every check.
pub fn run_all(
    facts: &HostFacts,
    opts: &Options,
    sized_for: Option<(&crate::rate::Basis, &NicFacts)>,
) -> Vec<Finding> {
    let nics = target_nics(facts, opts);
    let mut out = Vec::new();
    for nic in &nics {
        out.extend(pcie_link_downgraded(nic));
        out.extend(pcie_bandwidth_below_line_rate(nic));
        out.extend(irq_numa_remote(facts, nic, opts));
        out.extend(app_numa_remote(facts, nic, opts));
        out.extend(irq_on_app_core(facts, nic, opts));
        out.extend(irq_cross_l3(facts, nic, opts));
        out.extend(mtu_below_jumbo(nic));
        out.extend(nic_temperature_high(nic));
    }
    out.extend(socket_buffers_small(facts, sized_for, opts));
    out.extend(congestion_control_loss_based(facts));
    out.extend(default_qdisc_not_fq(facts, &nics));
    out.extend(tcp_mtu_probing_off(facts, &nics));
    out.extend(cpu_governor_not_performance(facts, &nics, opts));
    out.extend(irqbalance_running(facts));
    out.extend(softnet_drops(facts));
    out.extend(crate::knobs::run_all(facts, &nics, opts));
    out
}

/// The NICs to check: `--iface` (an upper device's PCI NICs beneath it), else every PCI NIC.
pub fn target_nics<'a>(facts: &'a HostFacts, opts: &Options) -> Vec<&'a NicFacts> {
    match &opts.iface {
        Some(name) => match (facts.nic(name), facts.upper(name)) {
            (Some(n), _) => vec![n],
            (None, Some(u)) => u
                .leaves()
                .iter()
                .filter_map(|l| facts.nic(&l.name))
                .collect(),
            (None, None) => Vec::new(),
        },
        None => facts.nics.iter().collect(),
    }
}

/// `1 queue IRQ`, `3 queue IRQs`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The verb for a subject of `n` things: `runs` or `run`.
fn verb(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// `CPU 8`, `CPUs 6-7`.
fn cpus_word(set: &CpuSet) -> String {
    set.words()
}

/// `dir/{a,b}`: two files of one directory, shell brace style.
fn two_files(dir: &str, a: &str, b: &str) -> String {
    format!("{dir}/{{{a},{b}}}")
}

/// `8.0 GT/s x4` from the sysfs speed text and width.
fn link_str(speed: Option<&str>, width: Option<u32>) -> String {
    format!(
        "{} x{}",
        speed.map_or("?", |s| s.trim_end_matches(" PCIe")),
        width.map_or("?".into(), |w| w.to_string())
    )
}

fn irq_label(i: &NicIrq) -> String {
    match i.actions.first() {
        Some(a) => format!("IRQ {} ({a})", i.irq),
        None => format!("IRQ {}", i.irq),
    }
}

fn irq_source(i: &NicIrq) -> String {
    i.effective_source
        .clone()
        .unwrap_or_else(|| format!("/proc/irq/{}/smp_affinity_list", i.irq))
}

fn l3_source() -> &'static str {
    "/sys/devices/system/cpu/cpu*/cache/index*/shared_cpu_list (level 3)"
}

fn node_source(n: u32) -> String {
    format!("/sys/devices/system/node/node{n}/cpulist")
}

/// The NIC's link speed and its file.
fn speed_evidence(nic: &NicFacts, speed: u64) -> Evidence {
    Evidence::new(
        "link speed",
        wirespeed_model::units::speed_mbps(speed),
        format!("{}/speed", nic.sysfs),
    )
}

/// The NIC's NUMA node and that node's CPUs, with their files.
fn node_evidence(nic: &NicFacts, node: u32, node_cpus: &CpuSet) -> [Evidence; 2] {
    [
        Evidence::new(
            "NIC NUMA node",
            node,
            format!("{}/numa_node", nic.device_path),
        ),
        Evidence::new(format!("node {node} CPUs"), node_cpus, node_source(node)),
    ]
}

fn app_evidence(app: &CpuSet) -> Evidence {
    Evidence::new("application CPUs", app, "--app-cpus")
}

/// The command that shows the PCIe link as the card and the slot report it.
fn lspci_link(nic: &NicFacts) -> String {
    format!(
        "lspci -s {} -vv | grep -E 'LnkCap:|LnkSta:'",
        nic.pci_address
    )
}

/// `echo CPUS > /proc/irq/N/smp_affinity_list` for each of `irqs`: the CPUs `wirespeed tune`
/// gives that vector when no policy is named ([`placement::auto_place`]), so doctor's fix and
/// tune's plan never disagree. Then the tune command that does the same with a journal. When no
/// CPU is left for the IRQs, one comment line says why.
fn pin_commands(
    facts: &HostFacts,
    nic: &NicFacts,
    app: Option<&CpuSet>,
    irqs: &[&NicIrq],
) -> Vec<String> {
    let p = match placement::auto_place(facts, nic, app) {
        Ok(p) => p,
        Err(PlacementError::NoIrqCpus { why, .. }) => {
            return vec![format!(
                "# no CPU is left for these IRQs ({why}): choose some with wirespeed tune --irq-cpus LIST"
            )]
        }
        Err(e) => return vec![format!("# {e}")],
    };
    let mut out: Vec<String> = irqs
        .iter()
        .filter_map(|i| {
            let cpus = p.wanted.get(&i.irq)?;
            Some(format!(
                "echo {cpus} > /proc/irq/{}/smp_affinity_list",
                i.irq
            ))
        })
        .collect();
    if let Some(policy) = p.policy.name() {
        let app = app.map(|a| format!(" --app-cpus {a}")).unwrap_or_default();
        out.push(format!(
            "# or: wirespeed tune --iface {}{app} --irq-policy {policy} --apply   # IRQs on {}",
            nic.name,
            cpus_word(&p.irq_cpus.cpus)
        ));
    }
    out
}

fn irqbalance_note(facts: &HostFacts) -> Option<String> {
    (facts.stack.irqbalance_running == Some(true))
        .then(|| "systemctl stop irqbalance   # else it moves the IRQs back".to_string())
}

/// **pcie-link-downgraded**: the NIC function trained below its own maximum speed or width (a
/// half-seated card, a riser, a slot wired narrower than it looks, BIOS bifurcation). Compares
/// the function's current link with the function's own maximum, so a Gen3 card in a Gen5 slot
/// running Gen3 is not reported. A link that is down (`Unknown` speed) only compares what is known.
pub fn pcie_link_downgraded(nic: &NicFacts) -> Option<Finding> {
    let p = nic.pcie.as_ref()?;
    if p.downgraded != Some(true) {
        return None;
    }
    let f = &p.function;
    let cur = link_str(f.current_speed.as_deref(), f.current_width);
    let max = link_str(f.max_speed.as_deref(), f.max_width);
    let mut evidence = vec![
        Evidence::new(
            "current link (function)",
            &cur,
            two_files(&f.path, "current_link_speed", "current_link_width"),
        ),
        Evidence::new(
            "maximum link (function)",
            &max,
            two_files(&f.path, "max_link_speed", "max_link_width"),
        ),
    ];
    if let (Some(a), Some(c)) = (p.available_mbps, p.capable_mbps) {
        evidence.push(Evidence::new(
            "usable PCIe bandwidth now / at maximum",
            format!(
                "{} / {}",
                wirespeed_model::units::speed_mbps(a),
                wirespeed_model::units::speed_mbps(c)
            ),
            "computed: GT/s × lanes × line code",
        ));
    }
    let mut slot_limits = false;
    if let Some(u) = &p.upstream {
        evidence.push(Evidence::new(
            format!("upstream port {} maximum", u.address),
            link_str(u.max_speed.as_deref(), u.max_width),
            two_files(&u.path, "max_link_speed", "max_link_width"),
        ));
        let narrower = matches!((u.max_width, f.max_width), (Some(a), Some(b)) if a < b);
        let slower = matches!((u.max_rate, f.max_rate), (Some(a), Some(b)) if a < b);
        slot_limits = narrower || slower;
    }
    let hurts = matches!((p.available_mbps, nic.speed_mbps), (Some(a), Some(s)) if a < s);
    let mut fix = vec![lspci_link(nic)];
    if slot_limits {
        fix.push(format!(
            "# the slot's port ({}) cannot train wider/faster than it does: move the card to a slot wired for {max}",
            p.upstream.as_ref().map_or("?", |u| u.address.as_str())
        ));
    } else {
        fix.push(
            "# power off and reseat the card (fully, in a slot wired for its full width); check risers and the BIOS PCIe bifurcation/link-speed settings"
                .to_string(),
        );
    }
    fix.push(format!(
        "cat {}   # after the fix: {max}",
        two_files(&f.path, "current_link_speed", "current_link_width")
    ));
    Some(Finding {
        writes: Vec::new(),
        id: ids::PCIE_LINK_DOWNGRADED.into(),
        severity: if hurts {
            Severity::Critical
        } else {
            Severity::Warning
        },
        iface: Some(nic.name.clone()),
        summary: format!(
            "{} ({}) trained its PCIe link at {cur}, below its maximum {max}",
            nic.name, nic.pci_address
        ),
        evidence,
        fix,
    })
}

/// **pcie-bandwidth-below-line-rate**: the usable bandwidth of the NIC function's PCIe link as
/// trained (transfer rate × lanes × line code: 8b/10b at 2.5 and 5 GT/s, 128b/130b from 8 GT/s)
/// is below the port's link speed, so the port can never run at line rate. Needs both the link
/// speed (a down or unknown-speed port is skipped) and the PCIe link attributes.
pub fn pcie_bandwidth_below_line_rate(nic: &NicFacts) -> Option<Finding> {
    let p = nic.pcie.as_ref()?;
    let speed = nic.speed_mbps?;
    let avail = p.available_mbps?;
    if avail >= speed {
        return None;
    }
    let f = &p.function;
    let rate = f.current_rate?;
    let width = f.current_width?;
    let (num, den) = encoding(rate);
    let mut evidence = vec![
        speed_evidence(nic, speed),
        Evidence::new(
            "PCIe link as trained",
            link_str(f.current_speed.as_deref(), Some(width)),
            two_files(&f.path, "current_link_speed", "current_link_width"),
        ),
        Evidence::new(
            "usable PCIe bandwidth",
            format!(
                "{} ({rate} × {width} × {num}/{den})",
                wirespeed_model::units::speed_mbps(avail)
            ),
            "computed",
        ),
    ];
    let capable_ok = p.capable_mbps.is_some_and(|c| c >= speed);
    if let Some(c) = p.capable_mbps {
        evidence.push(Evidence::new(
            "usable at the function's maximum",
            wirespeed_model::units::speed_mbps(c),
            two_files(&f.path, "max_link_speed", "max_link_width"),
        ));
    }
    let fix = if capable_ok {
        vec![
            lspci_link(nic),
            "# restore the full link (see pcie-link-downgraded): reseat the card in a slot wired for its full width and speed".to_string(),
        ]
    } else {
        vec![
            lspci_link(nic),
            format!(
                "# this card's PCIe interface cannot carry {}: expect at most ~{}; use a card/slot of a newer PCIe generation or more lanes",
                wirespeed_model::units::speed_mbps(speed),
                wirespeed_model::units::speed_mbps(p.capable_mbps.unwrap_or(avail))
            ),
        ]
    };
    Some(Finding {
        writes: Vec::new(),
        id: ids::PCIE_BANDWIDTH_BELOW_LINE_RATE.into(),
        severity: Severity::Critical,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: PCIe {rate} x{width} carries at most {}, below the {} link",
            nic.name,
            wirespeed_model::units::speed_mbps(avail),
            wirespeed_model::units::speed_mbps(speed)
        ),
        evidence,
        fix,
    })
}

/// **irq-numa-remote**: on a host with more than one NUMA node holding CPUs, an IRQ of the NIC is
/// served (effective affinity) by CPUs outside the NIC's node: every packet's completion crosses
/// the inter-socket link. Needs the NIC's node (`numa_node` ≥ 0).
pub fn irq_numa_remote(facts: &HostFacts, nic: &NicFacts, opts: &Options) -> Option<Finding> {
    if !facts.cpu.is_multi_node() {
        return None;
    }
    let node = nic.node()?;
    let node_cpus = facts.cpu.numa_nodes.get(&node).filter(|c| !c.is_empty())?;
    let remote: Vec<&NicIrq> = nic
        .own_irqs()
        .filter(|i| {
            i.effective
                .as_ref()
                .is_some_and(|e| !e.is_empty() && !e.is_subset(node_cpus))
        })
        .collect();
    if remote.is_empty() {
        return None;
    }
    let mut evidence = node_evidence(nic, node, node_cpus).to_vec();
    let rows: Vec<(&NicIrq, String)> = remote
        .iter()
        .map(|i| {
            let e = i.effective.clone().unwrap_or_default();
            let nodes = facts.cpu.nodes_of(&e);
            (*i, format!("{e} (node {})", join(&nodes)))
        })
        .collect();
    evidence.extend(irq_rows(&rows));
    let mut fix: Vec<String> = irqbalance_note(facts).into_iter().collect();
    fix.extend(pin_commands(facts, nic, opts.app_cpus.as_ref(), &remote));
    Some(Finding {
        writes: Vec::new(),
        id: ids::IRQ_NUMA_REMOTE.into(),
        severity: Severity::Warning,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: {} of its {} IRQs run on CPUs outside its NUMA node {node} ({})",
            nic.name,
            remote.len(),
            nic.own_irqs().count(),
            wirespeed_model::units::cpu_list(node_cpus)
        ),
        evidence,
        fix,
    })
}

/// Most IRQ rows one finding lists before summing up the rest in one row.
const MAX_IRQ_ROWS: usize = 8;

/// Evidence rows for offending vectors: one per IRQ up to [`MAX_IRQ_ROWS`], then one row naming
/// the rest.
fn irq_rows(irqs: &[(&NicIrq, String)]) -> Vec<Evidence> {
    let mut out: Vec<Evidence> = irqs
        .iter()
        .take(MAX_IRQ_ROWS)
        .map(|(i, v)| Evidence::new(format!("{} effective CPUs", irq_label(i)), v, irq_source(i)))
        .collect();
    if irqs.len() > MAX_IRQ_ROWS {
        let rest = &irqs[MAX_IRQ_ROWS..];
        out.push(Evidence::new(
            format!("{} more IRQs", rest.len()),
            rest.iter()
                .map(|(i, v)| format!("{}→{v}", i.irq))
                .collect::<Vec<_>>()
                .join(" "),
            "/proc/irq/*/effective_affinity_list",
        ));
    }
    out
}

/// `7` or `{3,6,7}`: numbers in shell brace form.
fn braces(v: impl Iterator<Item = u32>) -> String {
    let v: Vec<String> = v.map(|n| n.to_string()).collect();
    if v.len() == 1 {
        v[0].clone()
    } else {
        format!("{{{}}}", v.join(","))
    }
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// **app-numa-remote**: an application CPU lies outside the NIC's NUMA node, so its socket
/// buffers and the NIC's DMA live on different sockets. Needs `--app-cpus` and the NIC's node.
pub fn app_numa_remote(facts: &HostFacts, nic: &NicFacts, opts: &Options) -> Option<Finding> {
    let app = opts.app_cpus.as_ref()?;
    let node = nic.node()?;
    let node_cpus = facts.cpu.numa_nodes.get(&node).filter(|c| !c.is_empty())?;
    let remote = app.difference(node_cpus);
    if remote.is_empty() {
        return None;
    }
    let app_nodes = facts.cpu.nodes_of(&remote);
    Some(Finding {
        writes: Vec::new(),
        id: ids::APP_NUMA_REMOTE.into(),
        severity: Severity::Warning,
        iface: Some(nic.name.clone()),
        summary: format!(
            "application {} {} on node {} but {} is on node {node}",
            cpus_word(&remote),
            verb(remote.len(), "is", "are"),
            join(&app_nodes),
            nic.name
        ),
        evidence: [
            node_evidence(nic, node, node_cpus).as_slice(),
            &[app_evidence(app)],
        ]
        .concat(),
        fix: vec![
            format!("numactl --cpunodebind={node} --membind={node} -- <application>"),
            format!(
                "wirespeed -c <host> -A {}   # or iperf3 -A with a CPU of node {node}",
                node_cpus.first().unwrap_or(0)
            ),
        ],
    })
}

/// **irq-on-app-core**: a queue (completion) vector of the NIC is served by an application CPU,
/// so the application and the NIC's softirq work share that core (the 65 Gbit/s case). Control
/// vectors (async/admin) carry no packet work and other devices' IRQs are not the NIC's: neither
/// counts.
pub fn irq_on_app_core(facts: &HostFacts, nic: &NicFacts, opts: &Options) -> Option<Finding> {
    let app = opts.app_cpus.as_ref()?;
    let hits: Vec<&NicIrq> = nic
        .queue_irqs()
        .into_iter()
        .filter(|i| i.effective.as_ref().is_some_and(|e| e.intersects(app)))
        .collect();
    if hits.is_empty() {
        return None;
    }
    let mut evidence = vec![app_evidence(app)];
    let rows: Vec<(&NicIrq, String)> = hits
        .iter()
        .map(|i| (*i, i.effective.clone().unwrap_or_default().to_string()))
        .collect();
    evidence.extend(irq_rows(&rows));
    let mut fix: Vec<String> = irqbalance_note(facts).into_iter().collect();
    fix.extend(pin_commands(facts, nic, Some(app), &hits));
    let on: CpuSet = hits
        .iter()
        .filter_map(|i| i.effective.as_ref())
        .fold(CpuSet::new(), |a, e| a.union(&e.intersection(app)));
    Some(Finding {
        writes: Vec::new(),
        id: ids::IRQ_ON_APP_CORE.into(),
        severity: Severity::Warning,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: {} {} on application {}, so the application shares its core with the NIC's interrupt and softirq work",
            nic.name,
            count(hits.len(), "queue IRQ"),
            verb(hits.len(), "runs", "run"),
            cpus_word(&on)
        ),
        evidence,
        fix,
    })
}

/// **irq-cross-l3**: on a host with more than one L3 group, a queue vector of the NIC is served
/// by CPUs of an L3 group other than the application's (the other CCD of a Ryzen, the other
/// socket): each packet's data crosses the fabric (the 83 Gbit/s case). Control vectors do not
/// count.
pub fn irq_cross_l3(facts: &HostFacts, nic: &NicFacts, opts: &Options) -> Option<Finding> {
    let app = opts.app_cpus.as_ref()?;
    if facts.cpu.l3_groups.len() < 2 {
        return None;
    }
    let app_l3 = facts.cpu.l3_ids_of(app);
    if app_l3.is_empty() {
        return None;
    }
    let mut hits: Vec<(&NicIrq, Vec<u32>)> = Vec::new();
    for i in nic.queue_irqs() {
        let Some(e) = &i.effective else { continue };
        let groups = facts.cpu.l3_ids_of(e);
        if groups.iter().any(|g| !app_l3.contains(g)) {
            hits.push((i, groups));
        }
    }
    if hits.is_empty() {
        return None;
    }
    let mut evidence = vec![
        app_evidence(app),
        Evidence::new(
            if app_l3.len() == 1 {
                "application L3 group"
            } else {
                "application L3 groups"
            },
            app_l3
                .iter()
                .filter_map(|id| facts.cpu.l3_groups.iter().find(|g| g.id == *id))
                .map(|g| format!("#{} ({})", g.id, wirespeed_model::units::cpu_list(&g.cpus)))
                .collect::<Vec<_>>()
                .join(", "),
            l3_source(),
        ),
    ];
    let rows: Vec<(&NicIrq, String)> = hits
        .iter()
        .map(|(i, groups)| {
            (
                *i,
                format!(
                    "{} (L3 #{})",
                    i.effective.clone().unwrap_or_default(),
                    join(groups)
                ),
            )
        })
        .collect();
    evidence.extend(irq_rows(&rows));
    let irqs: Vec<&NicIrq> = hits.iter().map(|h| h.0).collect();
    let app_l3_cpus: CpuSet = app_l3
        .iter()
        .filter_map(|id| facts.cpu.l3_groups.iter().find(|g| g.id == *id))
        .fold(CpuSet::new(), |a, g| a.union(&g.cpus));
    let nic_node_cpus = nic
        .node()
        .filter(|_| facts.cpu.is_multi_node())
        .and_then(|n| facts.cpu.numa_nodes.get(&n).map(|c| (n, c.clone())))
        .filter(|(_, c)| !c.is_empty());
    let mut fix: Vec<String> = Vec::new();
    match nic_node_cpus {
        // The application's cache is on another node than the NIC: moving the IRQs there would
        // make them NUMA-remote; move the application to the NIC's node instead.
        Some((node, cpus)) if !app_l3_cpus.intersects(&cpus) => {
            fix.push(format!(
                "# the application's L3 group is on another NUMA node than {} (node {node}): run the application on the NIC's node rather than moving the IRQs away from it",
                nic.name
            ));
            fix.push(format!(
                "numactl --cpunodebind={node} --membind={node} -- <application>   # e.g. wirespeed -A {}",
                cpus.first().unwrap_or(0)
            ));
        }
        _ => {
            fix.extend(irqbalance_note(facts));
            fix.extend(pin_commands(facts, nic, Some(app), &irqs));
        }
    }
    Some(Finding {
        writes: Vec::new(),
        id: ids::IRQ_CROSS_L3.into(),
        severity: Severity::Warning,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: {} {} in another L3 group than the application's (L3 #{}), so received data crosses between caches",
            nic.name,
            count(hits.len(), "queue IRQ"),
            verb(hits.len(), "runs", "run"),
            join(&app_l3)
        ),
        evidence,
        fix,
    })
}

/// **mtu-below-jumbo**: a link of 10 Gbit/s or more with an MTU below 9000: six times the packets
/// per byte, and the per-packet CPU cost caps single-stream throughput.
pub fn mtu_below_jumbo(nic: &NicFacts) -> Option<Finding> {
    let speed = nic.speed_mbps?;
    let mtu = nic.mtu?;
    if speed < 10_000 || mtu >= 9000 {
        return None;
    }
    Some(Finding {
        writes: Vec::new(),
        id: ids::MTU_BELOW_JUMBO.into(),
        severity: Severity::Warning,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: MTU {mtu} on a {} link; jumbo frames (9000) cut the per-packet CPU cost",
            nic.name,
            wirespeed_model::units::speed_mbps(speed)
        ),
        evidence: vec![
            Evidence::new("MTU", mtu, format!("{}/mtu", nic.sysfs)),
            speed_evidence(nic, speed),
        ],
        fix: vec![
            format!("ip link set dev {} mtu 9000", nic.name),
            "sysctl -w net.ipv4.tcp_mtu_probing=1".into(),
            "# the peer and every switch port on the path must carry 9000-byte frames too".into(),
        ],
    })
}

/// **socket-buffers-small**: the TCP autotuning maximum (`tcp_rmem`/`tcp_wmem` third value) is
/// below one bandwidth-delay product (rate × `--rtt`), so one TCP stream cannot keep the link
/// full at that RTT. The rate is the target's and the NIC whose link it stands for
/// ([`crate::target::HostTarget::sized_for`]: `--rate`, else the link speed of `--iface` — of
/// the fastest NIC beneath an upper device — or of the NIC [`crate::target::fastest_up`] chooses,
/// else the instance type's); no rate → no finding.
pub fn socket_buffers_small(
    facts: &HostFacts,
    sized_for: Option<(&crate::rate::Basis, &NicFacts)>,
    opts: &Options,
) -> Option<Finding> {
    let st = &facts.stack;
    let (basis, nic) = sized_for?;
    let speed = basis.mbps();
    let bdp = sizing::bdp_bytes(speed, opts.rtt_ms);
    let rmax = st.tcp_rmem.map(|t| t[2]);
    let wmax = st.tcp_wmem.map(|t| t[2]);
    let small_r = rmax.is_some_and(|r| r < bdp);
    let small_w = wmax.is_some_and(|w| w < bdp);
    if !small_r && !small_w {
        return None;
    }
    let target = sizing::buffer_target(speed, opts.rtt_ms);
    let mut evidence = vec![
        Evidence::new(basis.what(), basis.value(), basis.source(nic)),
        Evidence::new(
            "RTT",
            format!("{} ms", opts.rtt_ms),
            format!("--rtt (default {} ms)", crate::DEFAULT_RTT_MS),
        ),
        Evidence::new(
            "bandwidth-delay product",
            wirespeed_model::units::bytes_exact(bdp),
            "computed: speed × RTT",
        ),
    ];
    let autotuning = [
        ("tcp_rmem", st.tcp_rmem, paths::TCP_RMEM, small_r),
        ("tcp_wmem", st.tcp_wmem, paths::TCP_WMEM, small_w),
    ];
    let ceilings = [
        ("rmem_max", st.rmem_max, paths::RMEM_MAX),
        ("wmem_max", st.wmem_max, paths::WMEM_MAX),
    ];
    for (name, t, path, _) in autotuning {
        if let Some([min, def, max]) = t {
            evidence.push(Evidence::new(name, format!("{min} {def} {max}"), path));
        }
    }
    for (name, v, path) in ceilings {
        if let Some(v) = v {
            evidence.push(Evidence::new(
                name,
                wirespeed_model::units::bytes_exact(v),
                path,
            ));
        }
    }
    // the ceilings an application may request, raised when lower (never lowered), then the
    // autotuning maxima that are too small
    let mut fix: Vec<String> = ceilings
        .into_iter()
        .filter(|(_, cur, _)| cur.is_none_or(|c| c < target))
        .map(|(name, _, _)| format!("sysctl -w net.core.{name}={target}"))
        .collect();
    for (name, t, _, small) in autotuning {
        if let (true, Some([min, def, _])) = (small, t) {
            fix.push(format!("sysctl -w net.ipv4.{name}='{min} {def} {target}'"));
        }
    }
    let which = match (small_r, small_w) {
        (true, true) => "tcp_rmem and tcp_wmem maxima",
        (true, false) => "tcp_rmem maximum",
        _ => "tcp_wmem maximum",
    };
    Some(Finding {
        writes: Vec::new(),
        id: ids::SOCKET_BUFFERS_SMALL.into(),
        severity: Severity::Warning,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{which} below the bandwidth-delay product {} of {} × {} ms: one stream cannot fill the link",
            wirespeed_model::units::bytes_exact(bdp),
            wirespeed_model::units::speed_mbps(speed),
            opts.rtt_ms
        ),
        evidence,
        fix,
    })
}

/// What a host whose congestion control is loss-based can switch to: one rule for doctor's
/// fix and tune's step. bbr, then htcp: loaded (`tcp_available_congestion_control`) or shipped
/// as a module (writing the sysctl loads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcChoice {
    /// Loaded: write the sysctl.
    Available(&'static str),
    /// Shipped as a module, not loaded: the sysctl write (or `modprobe tcp_NAME`) loads it.
    Module(&'static str),
    /// Neither is loaded; `known`: the kernel's module list was read and ships neither (else
    /// what it ships is not known, e.g. a captured tree without `/lib/modules`).
    Neither { known: bool },
}

/// The choice for this kernel ([`CcChoice`]).
pub fn cc_choice(available: &[String], loadable: Option<&[String]>) -> CcChoice {
    for cc in ["bbr", "htcp"] {
        if available.iter().any(|a| a == cc) {
            return CcChoice::Available(cc);
        }
        if loadable.is_some_and(|l| l.iter().any(|a| a == cc)) {
            return CcChoice::Module(cc);
        }
    }
    CcChoice::Neither {
        known: loadable.is_some(),
    }
}

/// Why nothing is switched ([`CcChoice::Neither`]), in the words doctor's fix and tune's note
/// share.
pub fn cc_neither_words(available: &[String], known: bool) -> String {
    let offered = if available.is_empty() {
        "an unknown set".to_string()
    } else {
        available.join(" ")
    };
    if known {
        format!(
            "this kernel offers only {offered} and ships neither tcp_bbr nor tcp_htcp as a \
             module: keep it, or boot a kernel built with CONFIG_TCP_CONG_BBR"
        )
    } else {
        format!(
            "this kernel offers only {offered} (neither bbr nor htcp is loaded); whether it \
             ships them as modules is not known here (no /lib/modules): if it does, \
             `modprobe tcp_bbr`, then set bbr"
        )
    }
}

/// **congestion-control-loss-based**: reno or cubic backs off on every loss; on long fat paths a
/// model-based (bbr) or faster-recovering (htcp) algorithm holds the rate. Info. The fix is
/// what this kernel offers ([`cc_choice`]).
pub fn congestion_control_loss_based(facts: &HostFacts) -> Option<Finding> {
    let cc = facts.stack.tcp_congestion_control.as_deref()?;
    if cc != "reno" && cc != "cubic" {
        return None;
    }
    let avail = facts
        .stack
        .tcp_available_congestion_control
        .clone()
        .unwrap_or_default();
    let loadable = facts.stack.tcp_loadable_congestion_control.as_deref();
    let mut evidence = vec![Evidence::new("tcp_congestion_control", cc, paths::TCP_CC)];
    if !avail.is_empty() {
        evidence.push(Evidence::new(
            "available",
            avail.join(" "),
            paths::TCP_CC_AVAILABLE,
        ));
    }
    if let (Some(l), Some(k)) = (loadable, facts.kernel.as_deref()) {
        evidence.push(Evidence::new(
            "shipped as modules",
            if l.is_empty() {
                "none".to_string()
            } else {
                l.join(" ")
            },
            format!("/lib/modules/{k}/modules.dep, modules.builtin"),
        ));
    }
    let set = |to: &str| {
        let mut v = Vec::new();
        if to == "bbr" {
            v.push("sysctl -w net.core.default_qdisc=fq".to_string());
        }
        v.push(format!("sysctl -w net.ipv4.tcp_congestion_control={to}"));
        v
    };
    let fix = match cc_choice(&avail, loadable) {
        CcChoice::Available(to) => set(to),
        CcChoice::Module(to) => {
            let mut v = vec![format!(
                "modprobe tcp_{to}   # this kernel ships it as a module, not loaded yet"
            )];
            v.extend(set(to));
            v
        }
        CcChoice::Neither { known } => vec![format!("# {}", cc_neither_words(&avail, known))],
    };
    Some(Finding {
        writes: Vec::new(),
        id: ids::CONGESTION_CONTROL_LOSS_BASED.into(),
        severity: Severity::Info,
        iface: None,
        summary: format!(
            "TCP congestion control is {cc} (loss-based); prefer bbr or htcp on long paths"
        ),
        evidence,
        fix,
    })
}

/// **default-qdisc-not-fq**: `net.core.default_qdisc` is not `fq`, so new queues do not pace
/// flows (what bbr relies on, and what keeps many flows fair at line rate). Info. The write
/// applies to qdiscs created afterwards.
pub fn default_qdisc_not_fq(facts: &HostFacts, nics: &[&NicFacts]) -> Option<Finding> {
    let q = facts.stack.default_qdisc.as_deref()?;
    if q == "fq" {
        return None;
    }
    let iface = nics.first().map_or("IF", |n| n.name.as_str());
    Some(Finding {
        id: ids::DEFAULT_QDISC_NOT_FQ.into(),
        severity: Severity::Info,
        iface: None,
        summary: format!(
            "default qdisc is {q}, not fq: flows are not paced (bbr expects fq) and are less fair \
             to each other"
        ),
        evidence: vec![Evidence::new("default_qdisc", q, paths::DEFAULT_QDISC)],
        fix: vec![
            "sysctl -w net.core.default_qdisc=fq".to_string(),
            format!(
                "tc qdisc replace dev {iface} root mq   # the running interface's queues get fq \
                 (or a link down/up)"
            ),
        ],
        writes: vec![FileWrite {
            path: paths::DEFAULT_QDISC.to_string(),
            current: q.to_string(),
            value: "fq".into(),
            what: format!(
                "fq paces flows and keeps them fair; it applies to qdiscs created from now on: \
                 `tc qdisc replace dev {iface} root mq` (or a link down/up) gives the running \
                 interface's queues fq"
            ),
        }],
    })
}

/// **tcp-mtu-probing-off**: a NIC runs a jumbo MTU (9000 or more) and `tcp_mtu_probing` is 0:
/// a path with a smaller MTU whose ICMP "fragmentation needed" is filtered black-holes full
/// segments instead of shrinking them. Info.
pub fn tcp_mtu_probing_off(facts: &HostFacts, nics: &[&NicFacts]) -> Option<Finding> {
    let probing = facts.stack.tcp_mtu_probing?;
    if probing != 0 {
        return None;
    }
    let jumbo: Vec<&NicFacts> = nics
        .iter()
        .copied()
        .filter(|n| n.mtu.is_some_and(|m| m >= 9000))
        .collect();
    let first = jumbo.first()?;
    let mtu = first.mtu.unwrap_or(9000);
    let mut evidence = vec![Evidence::new("tcp_mtu_probing", 0, paths::TCP_MTU_PROBING)];
    for n in &jumbo {
        evidence.push(Evidence::new(
            format!("{} MTU", n.name),
            n.mtu.unwrap_or_default(),
            format!("/sys/class/net/{}/mtu", n.name),
        ));
    }
    Some(Finding {
        id: ids::TCP_MTU_PROBING_OFF.into(),
        severity: Severity::Info,
        iface: None,
        summary: format!(
            "{} runs MTU {mtu} with tcp_mtu_probing off: a path with a smaller MTU that filters \
             ICMP black-holes full segments",
            first.name
        ),
        evidence,
        fix: vec!["sysctl -w net.ipv4.tcp_mtu_probing=1".to_string()],
        writes: vec![FileWrite {
            path: paths::TCP_MTU_PROBING.to_string(),
            current: "0".into(),
            value: "1".into(),
            what: format!("MTU {mtu}: probe the path MTU when ICMP is filtered"),
        }],
    })
}

/// **cpu-governor-not-performance**: a CPU that serves the NIC's queue IRQs or runs the
/// application is under a cpufreq governor other than `performance`, so it ramps its clock after
/// the load arrives. NICs considered: `--iface`, else those that are up at 10 Gbit/s or more (or
/// of unknown speed). No cpufreq (a VM) → no finding.
pub fn cpu_governor_not_performance(
    facts: &HostFacts,
    nics: &[&NicFacts],
    opts: &Options,
) -> Option<Finding> {
    let relevant: Vec<&NicFacts> = nics
        .iter()
        .copied()
        .filter(|n| opts.iface.is_some() || (n.is_up() && n.speed_mbps.is_none_or(|s| s >= 10_000)))
        .collect();
    let mut cpus = opts.app_cpus.clone().unwrap_or_default();
    for n in &relevant {
        cpus = cpus.union(&n.queue_irq_cpus());
    }
    let mut slow: Vec<(u32, String)> = Vec::new();
    for c in cpus.iter() {
        if let Some(g) = facts.cpu.cpu(c).and_then(|t| t.governor.clone()) {
            if g != "performance" {
                slow.push((c, g));
            }
        }
    }
    if slow.is_empty() {
        return None;
    }
    let set: CpuSet = slow.iter().map(|s| s.0).collect();
    let mut by_gov: std::collections::BTreeMap<&str, CpuSet> = Default::default();
    for (c, g) in &slow {
        by_gov.entry(g.as_str()).or_default().insert(*c);
    }
    let mut evidence: Vec<Evidence> = by_gov
        .iter()
        .map(|(g, s)| {
            Evidence::new(
                format!("governor of {}", s.words()),
                g,
                format!(
                    "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor",
                    braces(s.iter())
                ),
            )
        })
        .collect();
    if let Some(d) = &facts.cpu.cpufreq_driver {
        evidence.push(Evidence::new(
            "cpufreq driver",
            d,
            "/sys/devices/system/cpu/cpu*/cpufreq/scaling_driver",
        ));
    }
    let irq_nums: Vec<u32> = relevant
        .iter()
        .flat_map(|n| n.queue_irqs().into_iter().map(|i| i.irq))
        .collect();
    let mut src = Vec::new();
    if opts.app_cpus.is_some() {
        src.push("--app-cpus".to_string());
    }
    if !irq_nums.is_empty() {
        src.push(format!(
            "/proc/irq/{}/effective_affinity_list",
            braces(irq_nums.into_iter())
        ));
    }
    evidence.push(Evidence::new(
        "CPUs serving the NIC queue IRQs or the application",
        &cpus,
        src.join(", "),
    ));
    Some(Finding {
        writes: Vec::new(),
        id: ids::CPU_GOVERNOR_NOT_PERFORMANCE.into(),
        severity: Severity::Warning,
        iface: opts.iface.clone(),
        summary: format!(
            "{} serving the NIC or the application {} governor {}, not performance",
            cpus_word(&set),
            verb(set.len(), "runs", "run"),
            by_gov.keys().copied().collect::<Vec<_>>().join("/")
        ),
        evidence,
        fix: vec![
            format!(
                "for c in {}; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done",
                set.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ")
            ),
            format!("# or: cpupower -c {set} frequency-set -g performance"),
        ],
    })
}

/// **nic-temperature-high**: a NIC sensor reads 70 °C or more, or is within 20 °C of its
/// critical temperature: the card throttles or fails (no airflow over its heat sink). Critical
/// within 5 °C of the critical value.
pub fn nic_temperature_high(nic: &NicFacts) -> Option<Finding> {
    let h = nic.hwmon.as_ref()?;
    let hot: Vec<_> = h
        .sensors
        .iter()
        .filter(|s| {
            let t = s.input_millicelsius;
            t > 0
                && (t >= 70_000
                    || s.crit_millicelsius
                        .is_some_and(|c| c > 20_000 && t >= c - 20_000))
        })
        .collect();
    if hot.is_empty() {
        return None;
    }
    let critical = hot.iter().any(|s| {
        s.crit_millicelsius
            .is_some_and(|c| c > 20_000 && s.input_millicelsius >= c - 5_000)
    });
    let c = |mc: i64| format!("{:.1} °C", mc as f64 / 1000.0);
    let mut evidence = Vec::new();
    for s in &hot {
        let name = match &s.label {
            Some(l) => format!("{} ({l})", s.sensor),
            None => s.sensor.clone(),
        };
        evidence.push(Evidence::new(
            format!(
                "{} {name} temperature",
                h.name.as_deref().unwrap_or(&h.hwmon)
            ),
            c(s.input_millicelsius),
            format!("{}/{}_input", h.path, s.sensor),
        ));
        if let Some(cr) = s.crit_millicelsius {
            evidence.push(Evidence::new(
                format!("{name} critical"),
                c(cr),
                format!("{}/{}_crit", h.path, s.sensor),
            ));
        }
    }
    let hottest = hot.iter().map(|s| s.input_millicelsius).max().unwrap_or(0);
    Some(Finding {
        writes: Vec::new(),
        id: ids::NIC_TEMPERATURE_HIGH.into(),
        severity: if critical {
            Severity::Critical
        } else {
            Severity::Warning
        },
        iface: Some(nic.name.clone()),
        summary: format!(
            "{} runs at {}: the card needs airflow over its heat sink",
            nic.name,
            c(hottest)
        ),
        evidence,
        fix: vec![
            "# give the card airflow: a fan on its heat sink, case fans that move air across the PCIe slots".into(),
            format!(
                "watch -n 5 cat {}/{}_input   # should settle well below 70000",
                h.path,
                hot[0].sensor
            ),
        ],
    })
}

/// **irqbalance-running**: irqbalance periodically rewrites IRQ affinities, undoing any manual
/// pinning (and its placement ignores the application's CPUs).
pub fn irqbalance_running(facts: &HostFacts) -> Option<Finding> {
    if facts.stack.irqbalance_running != Some(true) {
        return None;
    }
    let pids = &facts.stack.irqbalance_pids;
    Some(Finding {
        writes: Vec::new(),
        id: ids::IRQBALANCE_RUNNING.into(),
        severity: Severity::Warning,
        iface: None,
        summary: "irqbalance is running: it moves IRQs that you pin".into(),
        evidence: pids
            .iter()
            .map(|p| Evidence::new("process irqbalance", format!("pid {p}"), format!("/proc/{p}/comm")))
            .collect(),
        fix: vec![
            "systemctl stop irqbalance".into(),
            "systemctl disable irqbalance   # or ban the NIC's IRQs: IRQBALANCE_BANNED_CPULIST / --banirq".into(),
        ],
    })
}

/// **softnet-drops**: `/proc/net/softnet_stat` shows packets dropped because a CPU's backlog was
/// full (`netdev_max_backlog`), or time squeezes (the softirq ran out of budget with work left).
/// Counters are since boot. Drops → warning; squeezes alone → info.
pub fn softnet_drops(facts: &HostFacts) -> Option<Finding> {
    let rows = facts.stack.softnet.as_ref()?;
    let dropped: u64 = rows.iter().map(|r| r.dropped).sum();
    let squeezed: u64 = rows.iter().map(|r| r.time_squeeze).sum();
    if dropped == 0 && squeezed == 0 {
        return None;
    }
    let mut evidence = vec![
        Evidence::new(
            "dropped (all CPUs, since boot)",
            dropped,
            paths::SOFTNET_STAT,
        ),
        Evidence::new(
            "time_squeeze (all CPUs, since boot)",
            squeezed,
            paths::SOFTNET_STAT,
        ),
    ];
    for (k, r) in rows.iter().enumerate() {
        if r.dropped > 0 || r.time_squeeze > 0 {
            let cpu = r.cpu.map_or(format!("row {k}"), |c| format!("CPU {c}"));
            evidence.push(Evidence::new(
                format!("{cpu} dropped / time_squeeze"),
                format!("{} / {}", r.dropped, r.time_squeeze),
                paths::SOFTNET_STAT,
            ));
        }
    }
    let st = &facts.stack;
    if let Some(b) = st.netdev_max_backlog {
        evidence.push(Evidence::new(
            "netdev_max_backlog",
            b,
            paths::NETDEV_MAX_BACKLOG,
        ));
    }
    if let Some(b) = st.netdev_budget {
        evidence.push(Evidence::new("netdev_budget", b, paths::NETDEV_BUDGET));
    }
    if let Some(b) = st.netdev_budget_usecs {
        evidence.push(Evidence::new(
            "netdev_budget_usecs",
            b,
            paths::NETDEV_BUDGET_USECS,
        ));
    }
    // the values tune sets (sizing), raised when lower, never lowered
    let below = |cur: Option<u64>, want: u64| cur.is_none_or(|c| c < want);
    let mut fix = Vec::new();
    if dropped > 0 && below(st.netdev_max_backlog, sizing::NETDEV_MAX_BACKLOG) {
        fix.push(format!(
            "sysctl -w net.core.netdev_max_backlog={}",
            sizing::NETDEV_MAX_BACKLOG
        ));
    }
    if squeezed > 0 {
        if below(st.netdev_budget, sizing::NETDEV_BUDGET) {
            fix.push(format!(
                "sysctl -w net.core.netdev_budget={}",
                sizing::NETDEV_BUDGET
            ));
        }
        if below(st.netdev_budget_usecs, sizing::NETDEV_BUDGET_USECS) {
            fix.push(format!(
                "sysctl -w net.core.netdev_budget_usecs={}",
                sizing::NETDEV_BUDGET_USECS
            ));
        }
    }
    if fix.is_empty() {
        fix.push(
            "# the backlog and budget are already large: look at the load of the CPUs that serve the NIC's IRQs (spread them: wirespeed tune)"
                .into(),
        );
    }
    fix.push(
        "cat /proc/net/softnet_stat   # columns 2 and 3 (hex) should stop growing under load"
            .into(),
    );
    Some(Finding {
        writes: Vec::new(),
        id: ids::SOFTNET_DROPS.into(),
        severity: if dropped > 0 {
            Severity::Warning
        } else {
            Severity::Info
        },
        iface: None,
        summary: format!(
            "softnet_stat shows {} and {} since boot",
            count(dropped as usize, "backlog drop"),
            count(squeezed as usize, "time squeeze")
        ),
        evidence,
        fix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::interrupts::IrqKind;

    #[test]
    fn formatting() {
        assert_eq!(wirespeed_model::units::speed_mbps(100_000), "100 Gbit/s");
        assert_eq!(wirespeed_model::units::speed_mbps(31_504), "31.5 Gbit/s");
        assert_eq!(wirespeed_model::units::speed_mbps(126_016), "126 Gbit/s");
        assert_eq!(wirespeed_model::units::speed_mbps(800), "800 Mbit/s");
        assert_eq!(braces([7].into_iter()), "7");
        assert_eq!(braces([3, 6, 7].into_iter()), "{3,6,7}");
        assert_eq!(two_files("/d", "a", "b"), "/d/{a,b}");
        assert_eq!(link_str(Some("8.0 GT/s PCIe"), Some(4)), "8.0 GT/s x4");
        assert_eq!(link_str(None, None), "? x?");
    }

    fn irq(n: u32, kind: IrqKind, cpu: &str) -> NicIrq {
        NicIrq {
            irq: n,
            actions: vec![format!("x-{n}")],
            kind,
            requested: CpuSet::parse_list(cpu).ok(),
            effective: CpuSet::parse_list(cpu).ok(),
            effective_source: None,
            affinity_hint: None,
            node: None,
        }
    }

    #[test]
    fn pinning_fills_the_least_loaded_cpus() {
        let mut facts = HostFacts::default();
        facts.cpu.online = CpuSet::parse_list("0-11").ok();
        for (id, cpus) in [(0, "0-5"), (1, "6-11")] {
            facts.cpu.l3_groups.push(wirespeed_host::L3Group {
                id,
                cpus: CpuSet::parse_list(cpus).unwrap(),
                size: None,
            });
        }
        let mut nic: NicFacts = serde_json::from_value(serde_json::json!({
            "name": "eth0", "sysfs": "/sys/class/net/eth0", "pci_address": "0000:01:00.0",
            "device_path": "/sys/devices/pci0000:00/0000:01:00.0", "virtio": null, "driver": null,
            "pci_driver": null, "vendor_id": null, "device_id": null, "subsystem_vendor_id": null,
            "subsystem_device_id": null, "vendor_name": null, "device_name": null,
            "subsystem_name": null, "speed_mbps": null, "mtu": null, "tx_queue_len": null,
            "operstate": null, "carrier": null, "duplex": null, "pcie": null, "numa_node": null,
            "local_cpus": null, "irqs": [], "hwmon": null, "rx_queues": [], "tx_queues": [],
            "siblings": [], "ethtool": null
        }))
        .unwrap();
        nic.irqs = vec![
            irq(1, IrqKind::Queue, "7"),
            irq(2, IrqKind::Queue, "7"),
            irq(3, IrqKind::Queue, "8"),
            irq(4, IrqKind::Control, "9"),
            irq(5, IrqKind::Queue, "3"),
            irq(6, IrqKind::Queue, "3"),
        ];
        facts.nics = vec![nic.clone()];
        let moving: Vec<&NicIrq> = nic.irqs[4..].iter().collect();
        // the app on 6 and 10-11: its L3 group leaves 7-9 for the IRQs
        let app = CpuSet::parse_list("6,10-11").unwrap();
        let cmds = pin_commands(&facts, &nic, Some(&app), &moving);
        // 9 has no queue vector (4 is control), then 8 has one, 7 two.
        assert_eq!(
            cmds[..2],
            [
                "echo 9 > /proc/irq/5/smp_affinity_list",
                "echo 8 > /proc/irq/6/smp_affinity_list"
            ]
        );
        assert!(cmds[2].contains("--irq-policy l3"), "{cmds:?}");
        // every CPU taken by the app: no CPU left, said in one comment
        let app = CpuSet::parse_list("0-11").unwrap();
        let cmds = pin_commands(&facts, &nic, Some(&app), &moving);
        assert!(cmds.iter().all(|c| !c.starts_with("echo ")), "{cmds:?}");
    }
}
