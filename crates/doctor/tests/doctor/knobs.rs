//! The knobs the write-ups turn (TCP options, IOMMU, txqueuelen, rings, PCIe payload and read
//! request, BIG TCP, aRFS, C-states, coalescing, flow control), the rate used when a NIC reports
//! no speed, and vectors no driver requested: each on a small host tree written to a temporary
//! directory and read through `collect`, present and absent. Every case starts from a host that
//! has none of the findings, so each assertion that a finding is present fails without its check.

use std::fs;
use std::path::Path;
use wirespeed_doctor::{diagnose, ids, notes, Finding, Options, Severity};
use wirespeed_host::{collect, CpuSet, HostFacts, Root};

const DEV: &str = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
const PORT: &str = "/sys/devices/pci0000:00/0000:00:01.0";
const NET: &str = "/sys/class/net/eth0";

/// A healthy 4-CPU host with one 100G mlx5 NIC (eth0), queue IRQs on CPUs 2-3, app on CPU 1.
struct Host {
    dir: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        let h = Host {
            dir: tempfile::tempdir().unwrap(),
        };
        h.file("/sys/devices/system/cpu/online", "0-3");
        h.file("/sys/devices/system/cpu/possible", "0-3");
        h.file("/sys/devices/system/node/node0/cpulist", "0-3");
        h.file("/proc/sys/kernel/osrelease", "6.8.0-51-generic");
        h.file("/proc/sys/kernel/hostname", "synthetic");
        h.file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro quiet");
        for (k, v) in [
            ("net/ipv4/tcp_timestamps", "1"),
            ("net/ipv4/tcp_sack", "1"),
            ("net/ipv4/tcp_window_scaling", "1"),
            ("net/ipv4/tcp_rmem", "4096 131072 2147483647"),
            ("net/ipv4/tcp_wmem", "4096 16384 2147483647"),
            ("net/core/rmem_max", "2147483647"),
            ("net/core/wmem_max", "2147483647"),
            ("net/core/default_qdisc", "fq"),
            ("net/ipv4/tcp_congestion_control", "bbr"),
        ] {
            h.file(&format!("/proc/sys/{k}"), v);
        }
        fs::create_dir_all(h.path(&format!("{DEV}/net/eth0"))).unwrap();
        fs::create_dir_all(h.path("/sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0",
            h.path(NET),
        )
        .unwrap();
        let net = format!("{DEV}/net/eth0");
        h.file(&format!("{net}/speed"), "100000");
        h.file(&format!("{net}/mtu"), "9000");
        h.file(&format!("{net}/operstate"), "up");
        h.file(&format!("{net}/tx_queue_len"), "1000");
        for q in 0..4 {
            h.file(&format!("{net}/queues/rx-{q}/rps_flow_cnt"), "0");
        }
        h.file(&format!("{DEV}/numa_node"), "-1");
        h.file(&format!("{DEV}/current_link_speed"), "8.0 GT/s PCIe");
        h.file(&format!("{DEV}/max_link_speed"), "8.0 GT/s PCIe");
        h.file(&format!("{DEV}/current_link_width"), "16");
        h.file(&format!("{DEV}/max_link_width"), "16");
        h.file(&format!("{PORT}/max_link_speed"), "8.0 GT/s PCIe");
        h.file(&format!("{PORT}/max_link_width"), "16");
        let mut ints = String::from("       CPU0       CPU1       CPU2       CPU3\n");
        for (irq, action, cpu) in [
            (50, "mlx5_async0@pci:0000:01:00.0", "0"),
            (51, "mlx5_comp0@pci:0000:01:00.0", "2"),
            (52, "mlx5_comp1@pci:0000:01:00.0", "3"),
        ] {
            h.file(&format!("{DEV}/msi_irqs/{irq}"), "msix");
            h.file(&format!("/proc/irq/{irq}/smp_affinity_list"), cpu);
            h.file(&format!("/proc/irq/{irq}/effective_affinity_list"), cpu);
            ints.push_str(&format!(
                " {irq}:          0          0        100        100  IR-PCI-MSIX-0000:01:00.0  {irq}-edge  {action}\n"
            ));
        }
        h.file("/proc/interrupts", &ints);
        h
    }

    fn path(&self, host: &str) -> std::path::PathBuf {
        self.dir.path().join(host.trim_start_matches('/'))
    }

    fn file(&self, host: &str, text: &str) -> &Host {
        let p = self.path(host);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, format!("{text}\n")).unwrap();
        self
    }

    fn bytes(&self, host: &str, b: &[u8]) -> &Host {
        let p = self.path(host);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, b).unwrap();
        self
    }

    fn ethtool(&self, part: &str, json: &str) -> &Host {
        self.file(&format!("/wirespeed/ethtool/eth0/{part}.json"), json)
    }

    fn facts(&self) -> HostFacts {
        collect(&Root::new(self.dir.path()))
    }

    fn run(&self, app: Option<&str>, rate: Option<u64>) -> Vec<Finding> {
        diagnose(&self.facts(), &opts(app, rate)).unwrap()
    }
}

fn opts(app: Option<&str>, rate: Option<u64>) -> Options {
    Options {
        iface: Some("eth0".into()),
        app_cpus: app.map(|a| CpuSet::parse_nonempty(a).unwrap()),
        rate_mbps: rate,
        ..Options::default()
    }
}

fn find<'a>(f: &'a [Finding], id: &str) -> Option<&'a Finding> {
    f.iter().find(|x| x.id == id)
}

fn get<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
    find(f, id).unwrap_or_else(|| panic!("{id} not in {f:#?}"))
}

fn ids(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|x| x.id.as_str()).collect()
}

#[test]
fn the_base_host_has_no_finding() {
    let h = Host::new();
    assert_eq!(ids(&h.run(Some("1"), None)), Vec::<&str>::new());
}

#[test]
fn tcp_options_off() {
    let h = Host::new();
    h.file("/proc/sys/net/ipv4/tcp_timestamps", "0");
    let f = h.run(None, None);
    let t = get(&f, ids::TCP_OPTIONS_OFF);
    assert_eq!(t.severity, Severity::Info);
    assert_eq!(t.evidence[0].source, "/proc/sys/net/ipv4/tcp_timestamps");
    assert_eq!(t.writes[0].value, "1");
    h.file("/proc/sys/net/ipv4/tcp_sack", "0");
    assert_eq!(
        get(&h.run(None, None), ids::TCP_OPTIONS_OFF).severity,
        Severity::Warning
    );
    h.file("/proc/sys/net/ipv4/tcp_window_scaling", "0");
    let f = h.run(None, None);
    let t = get(&f, ids::TCP_OPTIONS_OFF);
    assert_eq!(t.severity, Severity::Critical);
    assert!(t
        .fix
        .contains(&"sysctl -w net.ipv4.tcp_window_scaling=1".to_string()));
    assert_eq!(t.writes.len(), 3);
    // unknown (no file) is not off
    let h = Host::new();
    fs::remove_file(h.path("/proc/sys/net/ipv4/tcp_sack")).unwrap();
    assert!(find(&h.run(None, None), ids::TCP_OPTIONS_OFF).is_none());
}

fn iommu_group(h: &Host, kind: Option<&str>) {
    fs::create_dir_all(h.path("/sys/kernel/iommu_groups/12/devices")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../kernel/iommu_groups/12",
        h.path(&format!("{DEV}/iommu_group")),
    )
    .unwrap();
    if let Some(k) = kind {
        h.file("/sys/kernel/iommu_groups/12/type", k);
    }
}

#[test]
fn iommu_translated() {
    let h = Host::new();
    iommu_group(&h, Some("DMA-FQ"));
    let f = h.run(None, None);
    let i = get(&f, ids::IOMMU_TRANSLATED);
    assert_eq!(i.severity, Severity::Info);
    assert_eq!(i.evidence[0].value, "DMA-FQ");
    assert_eq!(i.evidence[0].source, "/sys/kernel/iommu_groups/12/type");
    h.file("/sys/kernel/iommu_groups/12/type", "DMA");
    assert_eq!(
        get(&h.run(None, None), ids::IOMMU_TRANSLATED).severity,
        Severity::Warning
    );
    h.file("/sys/kernel/iommu_groups/12/type", "identity");
    assert!(find(&h.run(None, None), ids::IOMMU_TRANSLATED).is_none());
    // no type file (older kernel): iommu=pt on the command line decides
    let h = Host::new();
    iommu_group(&h, None);
    assert!(find(&h.run(None, None), ids::IOMMU_TRANSLATED).is_some());
    h.file("/proc/cmdline", "ro intel_iommu=on iommu=pt");
    assert!(find(&h.run(None, None), ids::IOMMU_TRANSLATED).is_none());
    // no IOMMU group at all
    assert!(find(&Host::new().run(None, None), ids::IOMMU_TRANSLATED).is_none());
}

#[test]
fn txqueuelen_short_only_under_a_qdisc_it_sizes() {
    let h = Host::new();
    // fq keeps its own limits: 1000 is no finding
    assert!(find(&h.run(None, None), ids::TXQUEUELEN_SHORT).is_none());
    h.file("/proc/sys/net/core/default_qdisc", "pfifo_fast");
    let f = h.run(None, None);
    let t = get(&f, ids::TXQUEUELEN_SHORT);
    assert_eq!(t.severity, Severity::Info);
    assert_eq!(t.evidence[0].value, "1000");
    assert_eq!(t.evidence[0].source, "/sys/class/net/eth0/tx_queue_len");
    assert_eq!(t.writes[0].path, "/sys/class/net/eth0/tx_queue_len");
    assert_eq!(t.writes[0].value, "10000");
    h.file(&format!("{DEV}/net/eth0/tx_queue_len"), "10000");
    assert!(find(&h.run(None, None), ids::TXQUEUELEN_SHORT).is_none());
    // a 1G link is not a 10G+ link
    h.file(&format!("{DEV}/net/eth0/tx_queue_len"), "1000");
    h.file(&format!("{DEV}/net/eth0/speed"), "1000");
    assert!(find(&h.run(None, None), ids::TXQUEUELEN_SHORT).is_none());
}

const RING: &str = r#"{"rx":1024,"rx_max":8192,"rx_mini":0,"rx_mini_max":0,"rx_jumbo":0,"rx_jumbo_max":0,"tx":1024,"tx_max":8192}"#;

#[test]
fn ring_below_max() {
    let h = Host::new();
    h.ethtool("ring", RING);
    let f = h.run(None, None);
    let r = get(&f, ids::RING_BELOW_MAX);
    assert_eq!(r.severity, Severity::Info);
    assert_eq!(r.evidence[0].value, "1024 / 8192");
    assert!(
        r.fix[0].contains("ethtool -G eth0 rx 8192 tx 8192"),
        "{:?}",
        r.fix
    );
    // at the maximum; or above the cap of 8192 of a 16K-ring driver
    h.ethtool("ring", &RING.replace("1024", "8192"));
    assert!(find(&h.run(None, None), ids::RING_BELOW_MAX).is_none());
    h.ethtool(
        "ring",
        &RING
            .replace("1024", "8192")
            .replace(":8192,\"rx_mini\"", ":16384,\"rx_mini\""),
    );
    assert!(find(&h.run(None, None), ids::RING_BELOW_MAX).is_none());
}

#[test]
fn pcie_payload_and_read_request() {
    use wirespeed_host::pci::config_image;
    let h = Host::new();
    h.bytes(&format!("{DEV}/config"), &config_image(128, 512, 512));
    h.bytes(&format!("{PORT}/config"), &config_image(256, 256, 128));
    let f = h.run(None, None);
    let m = get(&f, ids::PCIE_MPS_SMALL);
    assert_eq!(m.severity, Severity::Info);
    assert!(
        m.summary.contains("128 bytes, below the 256"),
        "{}",
        m.summary
    );
    let r = get(&f, ids::PCIE_MAXREADREQ_SMALL);
    assert_eq!(r.severity, Severity::Info);
    assert!(r.fix[0].starts_with("setpci -s 0000:01:00.0 CAP_EXP+8.w=5000:7000"));
    // payload at what both ends support, read request at 4096
    h.bytes(&format!("{DEV}/config"), &config_image(256, 512, 4096));
    let f = h.run(None, None);
    assert!(find(&f, ids::PCIE_MPS_SMALL).is_none());
    assert!(find(&f, ids::PCIE_MAXREADREQ_SMALL).is_none());
    // a 25G port does not need the larger read request
    h.bytes(&format!("{DEV}/config"), &config_image(256, 512, 512));
    h.file(&format!("{DEV}/net/eth0/speed"), "25000");
    assert!(find(&h.run(None, None), ids::PCIE_MAXREADREQ_SMALL).is_none());
    // an unprivileged read gives the 64-byte header only: unknown
    h.file(&format!("{DEV}/net/eth0/speed"), "100000");
    h.bytes(&format!("{DEV}/config"), &config_image(128, 512, 512)[..64]);
    let f = h.run(None, None);
    assert!(find(&f, ids::PCIE_MPS_SMALL).is_none());
    assert!(find(&f, ids::PCIE_MAXREADREQ_SMALL).is_none());
}

#[test]
fn big_tcp_off() {
    let h = Host::new();
    let net = format!("{DEV}/net/eth0");
    h.file(&format!("{net}/tso_max_size"), "524280");
    h.file(&format!("{net}/gso_max_size"), "65536");
    h.file(&format!("{net}/gro_max_size"), "65536");
    let f = h.run(None, None);
    let b = get(&f, ids::BIG_TCP_OFF);
    assert_eq!(b.severity, Severity::Info);
    assert!(b.fix[0].contains("gso_max_size 185000 gro_max_size 185000"));
    assert!(b.evidence[0].source.contains("IFLA_GSO_MAX_SIZE"), "{b:?}");
    // on
    h.file(&format!("{net}/gso_max_size"), "185000");
    h.file(&format!("{net}/gro_max_size"), "185000");
    assert!(find(&h.run(None, None), ids::BIG_TCP_OFF).is_none());
    // on for IPv6 only: the IPv4 sizes (6.3+) still at 64 KiB
    h.file(&format!("{net}/gso_ipv4_max_size"), "65536");
    h.file(&format!("{net}/gro_ipv4_max_size"), "185000");
    let f = h.run(None, None);
    let b = get(&f, ids::BIG_TCP_OFF);
    assert!(
        b.evidence
            .iter()
            .any(|e| e.what == "gso_ipv4_max_size" && e.value == "65536"),
        "{b:?}"
    );
    h.file(&format!("{net}/gso_ipv4_max_size"), "185000");
    assert!(find(&h.run(None, None), ids::BIG_TCP_OFF).is_none());
    // a kernel before 6.3, a driver without large TSO, a 25G link: none
    h.file(&format!("{net}/gso_max_size"), "65536");
    h.file("/proc/sys/kernel/osrelease", "5.15.0-91-generic");
    assert!(find(&h.run(None, None), ids::BIG_TCP_OFF).is_none());
    h.file("/proc/sys/kernel/osrelease", "6.8.0");
    h.file(&format!("{net}/tso_max_size"), "65536");
    assert!(find(&h.run(None, None), ids::BIG_TCP_OFF).is_none());
    h.file(&format!("{net}/tso_max_size"), "524280");
    h.file(&format!("{net}/speed"), "25000");
    assert!(find(&h.run(None, None), ids::BIG_TCP_OFF).is_none());
}

#[test]
fn arfs_off() {
    let h = Host::new();
    h.ethtool(
        "features",
        r#"{"rx-ntuple-filter":{"active":false,"changeable":true}}"#,
    );
    // only with the app pinned
    assert!(find(&h.run(None, None), ids::ARFS_OFF).is_none());
    let f = h.run(Some("1"), None);
    let a = get(&f, ids::ARFS_OFF);
    assert_eq!(a.severity, Severity::Info);
    assert!(a.fix.contains(&"ethtool -K eth0 ntuple on".to_string()));
    assert!(a.writes.is_empty());
    // ntuple on, the RFS table 0: the sysctl and the per-queue counts are the writes
    h.ethtool(
        "features",
        r#"{"rx-ntuple-filter":{"active":true,"changeable":true}}"#,
    );
    h.file("/proc/sys/net/core/rps_sock_flow_entries", "0");
    let f = h.run(Some("1"), None);
    let a = get(&f, ids::ARFS_OFF);
    assert_eq!(a.writes[0].path, "/proc/sys/net/core/rps_sock_flow_entries");
    assert_eq!(a.writes[0].value, "32768");
    assert_eq!(a.writes.len(), 5);
    assert_eq!(
        a.writes[1].path,
        "/sys/class/net/eth0/queues/rx-0/rps_flow_cnt"
    );
    assert_eq!(a.writes[1].value, "8192");
    h.file("/proc/sys/net/core/rps_sock_flow_entries", "32768");
    assert!(find(&h.run(Some("1"), None), ids::ARFS_OFF).is_none());
    // ntuple fixed off (the NIC has no filters): no aRFS to turn on, whatever the RFS table
    h.ethtool(
        "features",
        r#"{"rx-ntuple-filter":{"active":false,"changeable":false}}"#,
    );
    assert!(find(&h.run(Some("1"), None), ids::ARFS_OFF).is_none());
    h.file("/proc/sys/net/core/rps_sock_flow_entries", "0");
    assert!(find(&h.run(Some("1"), None), ids::ARFS_OFF).is_none());
}

fn cstate(h: &Host, cpu: u32, k: u32, name: &str, lat: u32, disabled: bool) {
    let s = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}");
    h.file(&format!("{s}/name"), name);
    h.file(&format!("{s}/latency"), &lat.to_string());
    h.file(&format!("{s}/disable"), if disabled { "1" } else { "0" });
}

#[test]
fn cstates_deep() {
    let h = Host::new();
    for c in 0..4 {
        cstate(&h, c, 0, "POLL", 0, false);
        cstate(&h, c, 1, "C1", 2, false);
    }
    // shallow states only
    assert!(find(&h.run(Some("1"), None), ids::CSTATES_DEEP).is_none());
    for c in 0..4 {
        cstate(&h, c, 2, "C6", 100, false);
    }
    let f = h.run(Some("1"), None);
    let d = get(&f, ids::CSTATES_DEEP);
    assert_eq!(d.severity, Severity::Info);
    // the app CPU 1 and the queue IRQ CPUs 2-3, not CPU 0 (only the control vector)
    assert!(
        d.summary.contains("C6 (100 µs)") && d.summary.contains("CPUs 1-3"),
        "{}",
        d.summary
    );
    let paths: Vec<&str> = d.writes.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/sys/devices/system/cpu/cpu1/cpuidle/state2/disable",
            "/sys/devices/system/cpu/cpu2/cpuidle/state2/disable",
            "/sys/devices/system/cpu/cpu3/cpuidle/state2/disable"
        ]
    );
    // disabled where it matters
    for c in 1..4 {
        cstate(&h, c, 2, "C6", 100, true);
    }
    assert!(find(&h.run(Some("1"), None), ids::CSTATES_DEEP).is_none());
}

const COALESCE: &str = r#"{"rx_usecs":0,"rx_max_frames":1,"tx_usecs":0,"tx_max_frames":1,"adaptive_rx":false,"adaptive_tx":false,"rx_usecs_irq":0,"tx_usecs_irq":0,"pkt_rate_low":0,"pkt_rate_high":0,"rate_sample_interval":0}"#;

#[test]
fn coalescing_is_info_and_only_when_interrupting_per_packet() {
    let h = Host::new();
    h.ethtool("coalesce", COALESCE);
    let f = h.run(None, None);
    let c = get(&f, ids::COALESCING);
    assert_eq!(c.severity, Severity::Info);
    assert!(c.writes.is_empty(), "tune does not guess coalescing");
    h.ethtool(
        "coalesce",
        &COALESCE.replace("\"rx_usecs\":0", "\"rx_usecs\":100"),
    );
    assert!(find(&h.run(None, None), ids::COALESCING).is_none());
    h.ethtool(
        "coalesce",
        &COALESCE.replace("\"adaptive_rx\":false", "\"adaptive_rx\":true"),
    );
    assert!(find(&h.run(None, None), ids::COALESCING).is_none());
}

#[test]
fn pause_frames_off_is_a_consideration() {
    let h = Host::new();
    h.ethtool("pause", r#"{"autoneg":false,"rx":false,"tx":false}"#);
    let f = h.run(None, None);
    let p = get(&f, ids::PAUSE_FRAMES_OFF);
    assert_eq!(p.severity, Severity::Info);
    assert!(p.summary.contains("switch"));
    assert!(p.fix.iter().any(|l| l.contains("switch port")));
    assert!(p.evidence[0].source.contains("pause.json"));
    h.ethtool("pause", r#"{"autoneg":false,"rx":true,"tx":true}"#);
    assert!(find(&h.run(None, None), ids::PAUSE_FRAMES_OFF).is_none());
}

#[test]
fn header_split_off_says_zero_copy_receive_needs_it() {
    let h = Host::new();
    // not reported (an older kernel, a driver that does not say): no finding
    assert!(find(&h.run(None, None), ids::HEADER_SPLIT_OFF).is_none());
    h.ethtool("tcp_data_split", r#""off""#);
    let f = h.run(None, None);
    let p = get(&f, ids::HEADER_SPLIT_OFF);
    assert_eq!(p.severity, Severity::Info);
    assert!(p.summary.contains("--zerocopy-rx"), "{}", p.summary);
    assert!(p.summary.contains("tcp-data-split off"), "{}", p.summary);
    assert_eq!(p.evidence[0].value, "off");
    assert!(p.evidence[0].source.contains("tcp_data_split.json"));
    assert!(p.fix.iter().any(|l| l.contains("tcp-data-split on")));
    h.ethtool("tcp_data_split", r#""unknown""#);
    let f = h.run(None, None);
    assert!(get(&f, ids::HEADER_SPLIT_OFF).summary.contains("unknown"));
    h.ethtool("tcp_data_split", r#""on""#);
    assert!(find(&h.run(None, None), ids::HEADER_SPLIT_OFF).is_none());
}

#[test]
fn unknown_speed_uses_rate_then_instance_type_else_says_so() {
    let h = Host::new();
    h.file(&format!("{DEV}/net/eth0/speed"), "-1");
    h.file("/proc/sys/net/ipv4/tcp_rmem", "4096 131072 6291456");
    h.file("/proc/sys/net/ipv4/tcp_wmem", "4096 16384 4194304");
    let facts = h.facts();
    // no speed, no --rate, no instance type: no buffer finding, and a note that says why
    let f = diagnose(&facts, &opts(None, None)).unwrap();
    assert!(find(&f, ids::SOCKET_BUFFERS_SMALL).is_none());
    let n = notes(&facts, &opts(None, None));
    assert!(
        n.iter().any(
            |l| l.starts_with("not checked: eth0: the driver reports no link speed")
                && l.contains("--rate")
        ),
        "{n:?}"
    );
    // --rate 50G: the buffers are checked against it
    let f = diagnose(&facts, &opts(None, Some(50_000))).unwrap();
    let s = get(&f, ids::SOCKET_BUFFERS_SMALL);
    assert_eq!(s.evidence[0].source, "--rate");
    assert_eq!(s.evidence[0].value, "50 Gbit/s");
    assert!(notes(&facts, &opts(None, Some(50_000))).is_empty());
    // an instance type the table knows
    h.file("/sys/class/dmi/id/product_name", "c5n.18xlarge");
    let facts = h.facts();
    let f = diagnose(&facts, &opts(None, None)).unwrap();
    let s = get(&f, ids::SOCKET_BUFFERS_SMALL);
    assert_eq!(s.evidence[0].value, "100 Gbit/s (c5n.18xlarge)");
    assert!(s.evidence[0]
        .source
        .starts_with("/sys/class/dmi/id/product_name"));
    let n = notes(&facts, &opts(None, None));
    assert!(
        n[0].contains("from the instance type c5n.18xlarge"),
        "{n:?}"
    );
    // one it does not: said so, with the name
    h.file("/sys/class/dmi/id/product_name", "t3.micro");
    let facts = h.facts();
    assert!(find(
        &diagnose(&facts, &opts(None, None)).unwrap(),
        ids::SOCKET_BUFFERS_SMALL
    )
    .is_none());
    assert!(notes(&facts, &opts(None, None))[0].contains("\"t3.micro\" is not in doctor's table"));
}

#[test]
fn vectors_no_driver_requested_never_drive_placement_findings() {
    // two nodes; the NIC on node 1 with its queue IRQs on node 1, and two vectors an RDMA
    // driver never requested: smp_affinity_list every CPU, effective empty, no row
    let h = Host::new();
    h.file("/sys/devices/system/cpu/online", "0-7");
    h.file("/sys/devices/system/cpu/possible", "0-7");
    h.file("/sys/devices/system/node/node0/cpulist", "0-3");
    h.file("/sys/devices/system/node/node1/cpulist", "4-7");
    h.file(&format!("{DEV}/numa_node"), "1");
    let mut ints = String::new();
    for c in 0..8 {
        ints.push_str(&format!("       CPU{c}"));
    }
    ints.push('\n');
    for (irq, action, cpu) in [
        (50, "mlx5_async0@pci:0000:01:00.0", "4"),
        (51, "mlx5_comp0@pci:0000:01:00.0", "5"),
        (52, "mlx5_comp1@pci:0000:01:00.0", "6"),
    ] {
        h.file(&format!("/proc/irq/{irq}/smp_affinity_list"), cpu);
        h.file(&format!("/proc/irq/{irq}/effective_affinity_list"), cpu);
        ints.push_str(&format!(
            " {irq}: 0 0 0 0 0 0 9 9  IR-PCI-MSIX-0000:01:00.0  {irq}-edge  {action}\n"
        ));
    }
    h.file("/proc/interrupts", &ints);
    let facts = h.facts();
    assert!(find(
        &diagnose(&facts, &opts(Some("7"), None)).unwrap(),
        ids::IRQ_NUMA_REMOTE
    )
    .is_none());
    for irq in [53, 54] {
        h.file(&format!("{DEV}/msi_irqs/{irq}"), "msix");
        h.file(&format!("/proc/irq/{irq}/smp_affinity_list"), "0-7");
        h.file(&format!("/proc/irq/{irq}/effective_affinity_list"), "");
    }
    let facts = h.facts();
    let f = diagnose(&facts, &opts(Some("7"), None)).unwrap();
    assert!(find(&f, ids::IRQ_NUMA_REMOTE).is_none(), "{f:#?}");
    let n = notes(&facts, &opts(Some("7"), None));
    assert!(
        n.iter()
            .any(|l| l.contains("IRQs 53,54") && l.contains("never requested")),
        "{n:?}"
    );
    // the same two vectors, once requested and served on node 0, are NUMA-remote
    for irq in [53, 54] {
        h.file(&format!("/proc/irq/{irq}/effective_affinity_list"), "0");
    }
    let mut t = fs::read_to_string(h.path("/proc/interrupts")).unwrap();
    t.push_str(
        " 53: 5 0 0 0 0 0 0 0  IR-PCI-MSIX-0000:01:00.0  53-edge  mlx5_comp2@pci:0000:01:00.0\n",
    );
    t.push_str(
        " 54: 5 0 0 0 0 0 0 0  IR-PCI-MSIX-0000:01:00.0  54-edge  mlx5_comp3@pci:0000:01:00.0\n",
    );
    h.file("/proc/interrupts", &t);
    let f = diagnose(&h.facts(), &opts(Some("7"), None)).unwrap();
    assert!(find(&f, ids::IRQ_NUMA_REMOTE).is_some());
    assert!(Path::new(&h.path("/proc/irq/53")).is_dir());
}
