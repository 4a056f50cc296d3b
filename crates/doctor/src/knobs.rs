//! Checks for the knobs the host-tuning write-ups turn beyond placement and buffers: TCP options,
//! the IOMMU mode, the transmit queue, NIC rings, PCIe payload and read-request sizes, BIG TCP,
//! accelerated RFS, C-states, interrupt coalescing and flow control. Each is a pure function of
//! the facts, each says why it fires, and each uses `info` for what is a consideration rather
//! than a defect. Where a file write fixes a finding, the finding carries it
//! ([`Finding::writes`]) and `wirespeed tune` applies exactly that write.

use crate::rate::{self, Basis};
use crate::sizing;
use crate::{ids, Evidence, FileWrite, Finding, Options, Severity};
use wirespeed_host::facts::{cmdline_value, platform_paths};
use wirespeed_host::nic::NicFacts;
use wirespeed_host::stack::paths;
use wirespeed_host::{CpuSet, HostFacts};

/// Run the checks of this module.
pub fn run_all(facts: &HostFacts, nics: &[&NicFacts], opts: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(tcp_options_off(facts));
    for nic in nics {
        let basis = rate::basis(facts, nic, opts).ok();
        out.extend(iommu_translated(facts, nic));
        out.extend(txqueuelen_short(facts, nic, basis.as_ref()));
        out.extend(ring_below_max(nic, basis.as_ref()));
        out.extend(pcie_mps_small(nic));
        out.extend(pcie_maxreadreq_small(nic, basis.as_ref()));
        out.extend(big_tcp_off(facts, nic));
        out.extend(arfs_off(facts, nic, opts));
        out.extend(coalescing(nic, basis.as_ref()));
        out.extend(pause_frames_off(nic));
        out.extend(header_split_off(nic));
    }
    out.extend(cstates_deep(facts, nics, opts));
    out
}

fn ethtool_source(nic: &NicFacts, query: &str, part: &str) -> String {
    format!(
        "{query} (ethtool; in a snapshot {}/{part}.json)",
        wirespeed_host::ethtool::snapshot_dir(&nic.name)
    )
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// **tcp-options-off**: TCP window scaling, SACK or timestamps is switched off. Without window
/// scaling a connection's window stops at 64 KiB (≈ 52 Mbit/s at 10 ms): critical. Without SACK
/// every loss costs a window of retransmissions: warning. Without timestamps RTT measurement and
/// PAWS on fast paths suffer: info. The fix turns them on (the kernel's defaults).
pub fn tcp_options_off(facts: &HostFacts) -> Option<Finding> {
    let st = &facts.stack;
    let opts = [
        (
            "tcp_window_scaling",
            st.tcp_window_scaling,
            paths::TCP_WINDOW_SCALING,
            Severity::Critical,
        ),
        ("tcp_sack", st.tcp_sack, paths::TCP_SACK, Severity::Warning),
        (
            "tcp_timestamps",
            st.tcp_timestamps,
            paths::TCP_TIMESTAMPS,
            Severity::Info,
        ),
    ];
    let off: Vec<_> = opts.iter().filter(|o| o.1 == Some(0)).collect();
    if off.is_empty() {
        return None;
    }
    let severity = off.iter().map(|o| o.3).max().unwrap_or(Severity::Info);
    Some(Finding {
        id: ids::TCP_OPTIONS_OFF.into(),
        severity,
        iface: None,
        summary: format!(
            "TCP {} off: {}",
            off.iter().map(|o| o.0).collect::<Vec<_>>().join(", "),
            if off.iter().any(|o| o.0 == "tcp_window_scaling") {
                "no window beyond 64 KiB, so one connection cannot fill even a 100 Mbit/s path at 10 ms"
            } else {
                "loss recovery and RTT measurement fall back to their slow forms"
            }
        ),
        evidence: off.iter().map(|o| Evidence::new(o.0, 0, o.2)).collect(),
        fix: off
            .iter()
            .map(|o| format!("sysctl -w net.ipv4.{}=1", o.0))
            .collect(),
        writes: off
            .iter()
            .map(|o| FileWrite {
                path: o.2.to_string(),
                current: "0".into(),
                value: "1".into(),
                what: format!("turn {} on", o.0),
            })
            .collect(),
    })
}

/// **iommu-translated**: the NIC's IOMMU group translates DMA addresses (`type` `DMA` or
/// `DMA-FQ`) rather than passing them through (`identity`): every mapping and unmapping of a
/// receive or transmit buffer costs IOTLB work. Strict invalidation (`DMA`) is a warning; lazy
/// (`DMA-FQ`) is info. Kernels without the group `type` file: an IOMMU with groups and no
/// `iommu=pt` on the command line counts as lazy translation (info).
pub fn iommu_translated(facts: &HostFacts, nic: &NicFacts) -> Option<Finding> {
    let g = nic.iommu_group.as_ref()?;
    let cmdline = facts.platform.cmdline.as_deref().unwrap_or("");
    let pt = cmdline_value(cmdline, "iommu") == Some("pt");
    let group_dir = format!("/sys/kernel/iommu_groups/{}", g.group);
    let (severity, mode, ev) = match g.domain_type.as_deref() {
        Some("identity") => return None,
        Some(t @ "DMA") => (
            Severity::Warning,
            "strict invalidation",
            Evidence::new("IOMMU group type", t, format!("{group_dir}/type")),
        ),
        Some(t @ "DMA-FQ") => (
            Severity::Info,
            "lazy invalidation",
            Evidence::new("IOMMU group type", t, format!("{group_dir}/type")),
        ),
        Some(_) => return None,
        None if pt || facts.platform.cmdline.is_none() => return None,
        None => (
            Severity::Info,
            "no iommu=pt on the command line",
            Evidence::new(
                "IOMMU group",
                &g.group,
                format!("{}/iommu_group", nic.device_path),
            ),
        ),
    };
    let mut evidence = vec![ev];
    if facts.platform.cmdline.is_some() {
        evidence.push(Evidence::new(
            "kernel command line",
            if cmdline.chars().count() > 120 {
                format!("{}…", cmdline.chars().take(120).collect::<String>())
            } else {
                cmdline.to_string()
            },
            platform_paths::CMDLINE,
        ));
    }
    Some(Finding {
        id: ids::IOMMU_TRANSLATED.into(),
        severity,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: the IOMMU translates every DMA buffer address ({mode}); pass-through (iommu=pt) removes that cost for the host's own drivers",
            nic.name
        ),
        evidence,
        fix: vec![
            "grubby --update-kernel=ALL --args=iommu=pt   # or add iommu=pt to GRUB_CMDLINE_LINUX and update-grub".into(),
            "# then reboot; keep translation if the host passes devices to VMs that need isolation".into(),
        ],
        writes: Vec::new(),
    })
}

/// The transmit queue length ESnet's host tuning gives for links of 10 Gbit/s and faster.
pub const ESNET_TXQUEUELEN: u32 = 10_000;

/// **txqueuelen-short**: on a 10 Gbit/s-or-faster NIC whose queues use a qdisc sized by the
/// interface's `tx_queue_len` (`pfifo_fast`, `pfifo`: the `default_qdisc`), the length is below
/// ESnet's 10000 packets, so bursts from fast senders are dropped at the host. fq and fq_codel
/// keep their own limits, so with them there is nothing to report. Info.
pub fn txqueuelen_short(
    facts: &HostFacts,
    nic: &NicFacts,
    basis: Option<&Basis>,
) -> Option<Finding> {
    let basis = basis?;
    let len = nic.tx_queue_len?;
    let qdisc = facts.stack.default_qdisc.as_deref()?;
    if basis.mbps() < 10_000 || len >= ESNET_TXQUEUELEN || !matches!(qdisc, "pfifo_fast" | "pfifo")
    {
        return None;
    }
    let path = format!("{}/tx_queue_len", nic.sysfs);
    Some(Finding {
        id: ids::TXQUEUELEN_SHORT.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: transmit queue of {len} packets under {qdisc} at {}; ESnet's figure for 10G+ is {ESNET_TXQUEUELEN}",
            nic.name,
            wirespeed_model::units::speed_mbps(basis.mbps())
        ),
        evidence: vec![
            Evidence::new("tx_queue_len", len, &path),
            Evidence::new("default_qdisc", qdisc, paths::DEFAULT_QDISC),
            Evidence::new(basis.what(), basis.value(), basis.source(nic)),
        ],
        fix: vec![
            format!("ip link set dev {} txqueuelen {ESNET_TXQUEUELEN}", nic.name),
            "# or: sysctl -w net.core.default_qdisc=fq (fq keeps its own per-flow limits)".into(),
        ],
        writes: vec![FileWrite {
            path,
            current: len.to_string(),
            value: ESNET_TXQUEUELEN.to_string(),
            what: format!("transmit queue of {} to ESnet's length", nic.name),
        }],
    })
}

/// **ring-below-max**: on a link of 10 Gbit/s or more, an RX or TX descriptor ring is smaller
/// than the size [`sizing::ring_target`] gives (the driver's maximum, up to 8192): a burst longer
/// than the ring is dropped by the NIC before the host sees it. Info: small rings are also a
/// latency choice; drops in `ethtool -S` settle it.
pub fn ring_below_max(nic: &NicFacts, basis: Option<&Basis>) -> Option<Finding> {
    let r = nic.ethtool.as_ref()?.ring?;
    if basis.is_some_and(|b| b.mbps() < 10_000) {
        return None;
    }
    let (rx, tx) = (
        sizing::ring_target(r.rx, r.rx_max),
        sizing::ring_target(r.tx, r.tx_max),
    );
    if rx == r.rx && tx == r.tx {
        return None;
    }
    let src = ethtool_source(nic, "ETHTOOL_GRINGPARAM", "ring");
    Some(Finding {
        id: ids::RING_BELOW_MAX.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: rings rx {} tx {} of at most rx {} tx {}; deeper rings absorb bursts",
            nic.name, r.rx, r.tx, r.rx_max, r.tx_max
        ),
        evidence: vec![
            Evidence::new(
                "RX ring / maximum",
                format!("{} / {}", r.rx, r.rx_max),
                &src,
            ),
            Evidence::new(
                "TX ring / maximum",
                format!("{} / {}", r.tx, r.tx_max),
                &src,
            ),
        ],
        fix: vec![
            format!("ethtool -G {} rx {rx} tx {tx}", nic.name),
            format!(
                "ethtool -S {} | grep -iE 'discard|miss|drop'   # drops that should stop",
                nic.name
            ),
        ],
        writes: Vec::new(),
    })
}

/// **pcie-mps-small**: the PCIe Max_Payload_Size in force on the NIC function is below what the
/// function and its upstream port both support: each TLP carries less data than the link could
/// (firmware or `pci=pcie_bus_safe` chose the smallest). Info.
pub fn pcie_mps_small(nic: &NicFacts) -> Option<Finding> {
    let p = nic.pcie.as_ref()?;
    let d = p.devctl?;
    let up = p.upstream_devctl.map(|u| u.mps_supported);
    let could = up.map_or(d.mps_supported, |u| u.min(d.mps_supported));
    if d.mps >= could {
        return None;
    }
    let mut evidence = vec![
        Evidence::new(
            "MaxPayload in force",
            format!("{} bytes", d.mps),
            format!("{}/config (DevCtl)", p.function.path),
        ),
        Evidence::new(
            "MaxPayload the function supports",
            format!("{} bytes", d.mps_supported),
            format!("{}/config (DevCap)", p.function.path),
        ),
    ];
    if let (Some(u), Some(port)) = (up, &p.upstream) {
        evidence.push(Evidence::new(
            format!("MaxPayload port {} supports", port.address),
            format!("{u} bytes"),
            format!("{}/config (DevCap)", port.path),
        ));
    }
    Some(Finding {
        id: ids::PCIE_MPS_SMALL.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: PCIe MaxPayload {} bytes, below the {could} bytes both ends support",
            nic.name, d.mps
        ),
        evidence,
        fix: vec![
            format!("lspci -s {} -vv | grep -E 'DevCap:|DevCtl:|MaxPayload'", nic.pci_address),
            "# boot with pci=pcie_bus_perf (or set MaxPayload in the firmware setup); the payload in force is the smallest on the path".into(),
        ],
        writes: Vec::new(),
    })
}

/// The read-request size mlnx_tune and the NIC vendors recommend for 40 Gbit/s-and-faster NICs.
pub const MRRS_RECOMMENDED: u32 = 4096;

/// **pcie-maxreadreq-small**: the NIC function's PCIe Max_Read_Request_Size is below 4096 bytes
/// on a 40 Gbit/s-or-faster link: transmit DMA reads host memory in more, smaller requests.
/// Info. The fix is a configuration-space write (`setpci`), which does not survive a reboot.
pub fn pcie_maxreadreq_small(nic: &NicFacts, basis: Option<&Basis>) -> Option<Finding> {
    let p = nic.pcie.as_ref()?;
    let d = p.devctl?;
    let basis = basis?;
    if basis.mbps() < 40_000 || d.mrrs >= MRRS_RECOMMENDED {
        return None;
    }
    Some(Finding {
        id: ids::PCIE_MAXREADREQ_SMALL.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: PCIe MaxReadReq {} bytes at {}; {MRRS_RECOMMENDED} bytes lets transmit DMA read in fewer requests",
            nic.name,
            d.mrrs,
            wirespeed_model::units::speed_mbps(basis.mbps())
        ),
        evidence: vec![
            Evidence::new(
                "MaxReadReq in force",
                format!("{} bytes", d.mrrs),
                format!("{}/config (DevCtl)", p.function.path),
            ),
            Evidence::new(basis.what(), basis.value(), basis.source(nic)),
        ],
        fix: vec![
            format!(
                "setpci -s {} CAP_EXP+8.w=5000:7000   # MaxReadReq 4096; not kept across reboots",
                nic.pci_address
            ),
            format!("lspci -s {} -vv | grep MaxReadReq", nic.pci_address),
        ],
        writes: Vec::new(),
    })
}

/// GSO/GRO size the BIG TCP write-ups use for IPv6 (above 64 KiB, below the driver limit).
pub const BIG_TCP_SIZE: u32 = 185_000;

/// `major.minor` of a kernel release (`6.8.0-51-generic` → (6, 8)).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(['.', '-']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// **big-tcp-off**: a link of 100 Gbit/s or more on a kernel of 6.3 or later (BIG TCP for IPv4
/// and IPv6) whose driver accepts packets above 64 KiB (`tso_max_size`), with `gso_max_size`,
/// `gro_max_size` or (where the kernel reports them) their IPv4 twins still at 64 KiB: each
/// packet through the stack carries at most 64 KiB where it could carry ~185 KB, so the
/// per-packet cost stays. Info.
pub fn big_tcp_off(facts: &HostFacts, nic: &NicFacts) -> Option<Finding> {
    const LIMIT: u32 = 65_536;
    let speed = nic.speed_mbps?;
    let release = facts.kernel.as_deref()?;
    let tso = nic.tso_max_size?;
    let gso = nic.gso_max_size?;
    if speed < 100_000 || kernel_version(release)? < (6, 3) || tso <= LIMIT {
        return None;
    }
    let gro = nic.gro_max_size;
    let v4 = [nic.gso_ipv4_max_size, nic.gro_ipv4_max_size];
    if gso > LIMIT && gro.is_none_or(|g| g > LIMIT) && v4.iter().flatten().all(|s| *s > LIMIT) {
        return None;
    }
    let size = BIG_TCP_SIZE.min(tso);
    let src = |attr: &str, file: &str| {
        format!(
            "{attr} (rtnetlink, ip -d link show {}; in a capture {}/{file} or {})",
            nic.name,
            nic.sysfs,
            wirespeed_host::link::snapshot_path(&nic.name)
        )
    };
    let mut evidence = vec![
        Evidence::new(
            "gso_max_size",
            gso,
            src("IFLA_GSO_MAX_SIZE", "gso_max_size"),
        ),
        Evidence::new(
            "tso_max_size (driver limit)",
            tso,
            src("IFLA_TSO_MAX_SIZE", "tso_max_size"),
        ),
        Evidence::new("kernel", release, "/proc/sys/kernel/osrelease"),
        Evidence::new(
            "link speed",
            wirespeed_model::units::speed_mbps(speed),
            format!("{}/speed", nic.sysfs),
        ),
    ];
    if let Some(g) = gro {
        evidence.insert(
            1,
            Evidence::new("gro_max_size", g, src("IFLA_GRO_MAX_SIZE", "gro_max_size")),
        );
    }
    for (i, (name, attr, v)) in [
        (
            "gso_ipv4_max_size",
            "IFLA_GSO_IPV4_MAX_SIZE",
            nic.gso_ipv4_max_size,
        ),
        (
            "gro_ipv4_max_size",
            "IFLA_GRO_IPV4_MAX_SIZE",
            nic.gro_ipv4_max_size,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(v) = v {
            evidence.insert(2 + i, Evidence::new(name, v, src(attr, name)));
        }
    }
    Some(Finding {
        id: ids::BIG_TCP_OFF.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: BIG TCP is off (GSO/GRO at 64 KiB on a {} link whose driver takes {tso}-byte packets)",
            nic.name,
            wirespeed_model::units::speed_mbps(speed)
        ),
        evidence,
        fix: vec![
            format!(
                "ip link set dev {} gso_max_size {size} gro_max_size {size}   # IPv6",
                nic.name
            ),
            format!(
                "ip link set dev {} gso_ipv4_max_size {size} gro_ipv4_max_size {size}   # IPv4, kernel 6.3+",
                nic.name
            ),
        ],
        writes: Vec::new(),
    })
}

/// RFS flow-table size Red Hat's and the kernel's scaling documentation suggest.
pub const RPS_SOCK_FLOW_ENTRIES: u64 = 32_768;

/// **arfs-off**: the application is pinned (`--app-cpus`) and the NIC has several receive
/// queues, but accelerated RFS cannot steer its flows to the queue whose IRQ serves the
/// application's CPU: `ntuple` filters are off, or RFS's flow table (`rps_sock_flow_entries`)
/// is 0. A NIC whose ntuple filters are fixed off has no aRFS: nothing to report. Info: it is
/// the alternative to pinning IRQs next to the application, which is what
/// `wirespeed tune` does.
pub fn arfs_off(facts: &HostFacts, nic: &NicFacts, opts: &Options) -> Option<Finding> {
    opts.app_cpus.as_ref()?;
    let queues = nic.rx_queues.len().max(nic.queue_irqs().len());
    if queues < 2 {
        return None;
    }
    let ntuple = nic
        .ethtool
        .as_ref()
        .and_then(|e| e.features.as_ref())
        .and_then(|f| f.get("rx-ntuple-filter").copied());
    let entries = facts.stack.rps_sock_flow_entries;
    // a NIC without ntuple filters (fixed off) has no accelerated RFS to turn on
    if ntuple.is_some_and(|f| !f.active && !f.changeable) {
        return None;
    }
    let ntuple_off = ntuple.is_some_and(|f| !f.active && f.changeable);
    let table_off = entries == Some(0);
    if !ntuple_off && !table_off {
        return None;
    }
    let mut evidence = Vec::new();
    let mut fix = Vec::new();
    let mut writes = Vec::new();
    if let Some(f) = ntuple {
        evidence.push(Evidence::new(
            "rx-ntuple-filter",
            on_off(f.active),
            ethtool_source(nic, "ETHTOOL_GFEATURES", "features"),
        ));
    }
    if ntuple_off {
        fix.push(format!("ethtool -K {} ntuple on", nic.name));
    }
    if let Some(e) = entries {
        evidence.push(Evidence::new(
            "rps_sock_flow_entries",
            e,
            paths::RPS_SOCK_FLOW_ENTRIES,
        ));
    }
    let per_queue = RPS_SOCK_FLOW_ENTRIES / nic.rx_queues.len().max(1) as u64;
    if table_off {
        fix.push(format!(
            "sysctl -w net.core.rps_sock_flow_entries={RPS_SOCK_FLOW_ENTRIES}"
        ));
        writes.push(FileWrite {
            path: paths::RPS_SOCK_FLOW_ENTRIES.into(),
            current: "0".into(),
            value: RPS_SOCK_FLOW_ENTRIES.to_string(),
            what: "RFS flow table".into(),
        });
        for q in &nic.rx_queues {
            if q.rps_flow_cnt.is_some_and(|c| c < per_queue) {
                writes.push(FileWrite {
                    path: format!("{}/queues/{}/rps_flow_cnt", nic.sysfs, q.name),
                    current: q.rps_flow_cnt.unwrap_or(0).to_string(),
                    value: per_queue.to_string(),
                    what: format!("RFS flows of {} {}", nic.name, q.name),
                });
            }
        }
        if !nic.rx_queues.is_empty() {
            fix.push(format!(
                "for f in {}/queues/rx-*/rps_flow_cnt; do echo {per_queue} > $f; done",
                nic.sysfs
            ));
        }
    }
    evidence.push(Evidence::new(
        "receive queues",
        queues,
        format!("{}/queues/rx-*", nic.sysfs),
    ));
    Some(Finding {
        id: ids::ARFS_OFF.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: accelerated RFS is off ({}), so the NIC cannot steer each flow to the queue of the CPU its application reads on",
            nic.name,
            [
                ntuple_off.then_some("ntuple filters off"),
                table_off.then_some("rps_sock_flow_entries 0"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
        ),
        evidence,
        fix,
        writes,
    })
}

/// Exit latency (µs) from which a C-state counts as deep: waking from it costs more than a
/// packet's worth of time at 10 Gbit/s and above.
pub const DEEP_CSTATE_LATENCY_US: u64 = 20;

/// **cstates-deep**: idle states with an exit latency above [`DEEP_CSTATE_LATENCY_US`] are
/// enabled on CPUs that serve the NIC's queue IRQs or run the application: a CPU that went deep
/// between bursts answers the next interrupt late, and on 100G links the ring fills meanwhile.
/// Info: disabling them costs power. The fix disables those states on those CPUs only.
pub fn cstates_deep(facts: &HostFacts, nics: &[&NicFacts], opts: &Options) -> Option<Finding> {
    let mut cpus = opts.app_cpus.clone().unwrap_or_default();
    for n in nics
        .iter()
        .filter(|n| opts.iface.is_some() || (n.is_up() && n.speed_mbps.is_none_or(|s| s >= 10_000)))
    {
        cpus = cpus.union(&n.queue_irq_cpus());
    }
    if cpus.is_empty() {
        return None;
    }
    let mut evidence = Vec::new();
    let writes = cstate_writes(&facts.cpu.cstates, &cpus);
    let mut names = Vec::new();
    let mut all = CpuSet::new();
    for s in &facts.cpu.cstates {
        let Some(lat) = s.latency_us.filter(|l| *l > DEEP_CSTATE_LATENCY_US) else {
            continue;
        };
        let on = s.cpus.intersection(&cpus).difference(&s.disabled_cpus);
        if on.is_empty() {
            continue;
        }
        names.push(format!("{} ({lat} µs)", s.name));
        all = all.union(&on);
        let braces = if on.len() == 1 {
            on.to_string()
        } else {
            format!(
                "{{{}}}",
                on.iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        evidence.push(Evidence::new(
            format!(
                "state{} {} exit latency, enabled on {}",
                s.index,
                s.name,
                on.words()
            ),
            format!("{lat} µs"),
            format!(
                "/sys/devices/system/cpu/cpu{braces}/cpuidle/state{}/{{latency,disable}}",
                s.index
            ),
        ));
    }
    if writes.is_empty() {
        return None;
    }
    if let Some(d) = &facts.cpu.cpuidle_driver {
        evidence.push(Evidence::new(
            "cpuidle driver",
            d,
            "/sys/devices/system/cpu/cpuidle/current_driver",
        ));
    }
    Some(Finding {
        id: ids::CSTATES_DEEP.into(),
        severity: Severity::Info,
        iface: opts.iface.clone(),
        summary: format!(
            "deep C-states {} are enabled on {}, which serve the NIC or the application",
            names.join(", "),
            wirespeed_model::units::cpu_list(&all)
        ),
        evidence,
        fix: vec![
            format!("cpupower -c {all} idle-set -D {DEEP_CSTATE_LATENCY_US}   # disables states with a longer exit latency"),
            "# or per state: echo 1 > /sys/devices/system/cpu/cpuN/cpuidle/stateK/disable".into(),
        ],
        writes,
    })
}

/// The writes that disable the idle states deeper than [`DEEP_CSTATE_LATENCY_US`] on `cpus`
/// where they are enabled: doctor's fix, and what tune applies on the CPUs that serve the NIC
/// after its IRQ moves.
pub fn cstate_writes(cstates: &[wirespeed_host::cpu::CState], cpus: &CpuSet) -> Vec<FileWrite> {
    let mut writes = Vec::new();
    for s in cstates {
        if s.latency_us.is_none_or(|l| l <= DEEP_CSTATE_LATENCY_US) {
            continue;
        }
        for c in s
            .cpus
            .intersection(cpus)
            .difference(&s.disabled_cpus)
            .iter()
        {
            writes.push(FileWrite {
                path: format!(
                    "/sys/devices/system/cpu/cpu{c}/cpuidle/state{}/disable",
                    s.index
                ),
                current: "0".into(),
                value: "1".into(),
                what: format!("no {} on CPU {c}", s.name),
            });
        }
    }
    writes
}

/// `rx-usecs` below which, with adaptive coalescing off, the NIC interrupts for nearly every
/// packet.
pub const LOW_RX_USECS: u32 = 8;

/// **coalescing**: on a link of 25 Gbit/s or more, adaptive RX coalescing is off and `rx-usecs`
/// is below [`LOW_RX_USECS`]: the NIC raises an interrupt for almost every packet, which costs
/// throughput where the goal is throughput. Info only: it is also what a latency-tuned host
/// wants, and `wirespeed tune` changes coalescing only when asked.
pub fn coalescing(nic: &NicFacts, basis: Option<&Basis>) -> Option<Finding> {
    let c = nic.ethtool.as_ref()?.coalesce?;
    let basis = basis?;
    if basis.mbps() < 25_000 || c.adaptive_rx || c.rx_usecs >= LOW_RX_USECS {
        return None;
    }
    let src = ethtool_source(nic, "ETHTOOL_GCOALESCE", "coalesce");
    Some(Finding {
        id: ids::COALESCING.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: adaptive-rx off with rx-usecs {} at {}: an interrupt for nearly every packet (right for latency, costly for throughput)",
            nic.name,
            c.rx_usecs,
            wirespeed_model::units::speed_mbps(basis.mbps())
        ),
        evidence: vec![
            Evidence::new("adaptive-rx", on_off(c.adaptive_rx), &src),
            Evidence::new("rx-usecs", c.rx_usecs, &src),
            Evidence::new(basis.what(), basis.value(), basis.source(nic)),
        ],
        fix: vec![
            format!(
                "wirespeed tune --iface {} --adaptive-rx on --apply   # or a fixed --rx-usecs 64 (ESnet/ExoGENI used 100)",
                nic.name
            ),
            format!("ethtool -C {} adaptive-rx on", nic.name),
        ],
        writes: Vec::new(),
    })
}

/// **pause-frames-off**: Ethernet flow control is off in a direction (`ethtool -a`): with RX
/// pause off the NIC ignores a congested switch's pause frames; with TX pause off it drops when
/// its own buffers fill instead of asking the switch to wait. A consideration (info): flow
/// control only works when the switch port is configured for it too, and on shared fabrics it
/// can spread congestion.
pub fn pause_frames_off(nic: &NicFacts) -> Option<Finding> {
    let p = nic.ethtool.as_ref()?.pause?;
    if p.rx && p.tx {
        return None;
    }
    let src = ethtool_source(nic, "ETHTOOL_GPAUSEPARAM", "pause");
    Some(Finding {
        id: ids::PAUSE_FRAMES_OFF.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: flow control rx {} tx {}; the switch port is the other half of it",
            nic.name,
            on_off(p.rx),
            on_off(p.tx)
        ),
        evidence: vec![
            Evidence::new("RX pause", on_off(p.rx), &src),
            Evidence::new("TX pause", on_off(p.tx), &src),
            Evidence::new("pause autonegotiation", on_off(p.autoneg), &src),
        ],
        fix: vec![
            format!("ethtool -A {} rx on tx on", nic.name),
            "# and turn on flow control (receive, or both) on the switch port; leave it off on fabrics that use PFC or where pauses would spread congestion".into(),
        ],
        writes: Vec::new(),
    })
}

/// **header-split-off**: the NIC does not say it splits TCP headers from payload (ethtool's
/// ring parameter `tcp-data-split`, `ethtool -g`). Zero-copy receive (`--zerocopy-rx`,
/// `TCP_ZEROCOPY_RECEIVE`) maps only payload that arrives in whole pages, which off loopback
/// takes a NIC that writes headers and payload to separate buffers; without it the receiver
/// copies everything. Info: it matters only to a receiver that wants to skip the copy. No
/// finding where the kernel or driver does not report the parameter at all.
pub fn header_split_off(nic: &NicFacts) -> Option<Finding> {
    use wirespeed_host::ethtool::TcpDataSplit;
    let split = nic.ethtool.as_ref()?.tcp_data_split?;
    let why = match split {
        TcpDataSplit::On => return None,
        TcpDataSplit::Off => "does not split TCP headers from payload (tcp-data-split off)",
        TcpDataSplit::Unknown => {
            "does not say whether it splits TCP headers from payload (tcp-data-split unknown)"
        }
    };
    let src = ethtool_source(nic, "ETHTOOL_MSG_RINGS_GET", "tcp_data_split");
    Some(Finding {
        id: ids::HEADER_SPLIT_OFF.into(),
        severity: Severity::Info,
        iface: Some(nic.name.clone()),
        summary: format!(
            "{}: {why}: zero-copy receive (--zerocopy-rx) maps payload only when it arrives in \
             whole pages, so here the receiver copies every byte",
            nic.name
        ),
        evidence: vec![Evidence::new("tcp-data-split", split.as_str(), &src)],
        fix: vec![
            format!(
                "ethtool -G {} tcp-data-split on   # where the driver supports it",
                nic.name
            ),
            "# and an MTU whose TCP payload is a multiple of the page size (e.g. 4096 B of payload per segment), so each segment fills whole pages".into(),
        ],
        writes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions() {
        assert_eq!(kernel_version("6.8.0-51-generic"), Some((6, 8)));
        assert_eq!(kernel_version("2.6.32-431.el6.x86_64"), Some((2, 6)));
        assert_eq!(kernel_version("6.10"), Some((6, 10)));
        assert!(kernel_version("6.10").unwrap() > (6, 3));
        assert_eq!(kernel_version("garbage"), None);
    }
}
