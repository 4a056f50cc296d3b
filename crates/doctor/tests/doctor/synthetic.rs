//! Each check's edge cases on small synthetic host trees written to a temporary directory:
//! the checks must be right for their reasons on hosts that are not the fixtures.

use std::fs;
use std::path::Path;
use wirespeed_doctor::{diagnose, ids, DoctorError, Finding, Options, Severity};
use wirespeed_host::{collect, CpuSet, HostFacts, Root};

struct Irq {
    irq: u32,
    action: String,
    smp: Option<String>,
    eff: Option<String>,
}

struct Nic {
    name: &'static str,
    pci: &'static str,
    port: &'static str,
    speed: Option<&'static str>,
    mtu: u32,
    numa: i32,
    /// current speed, current width, max speed, max width
    link: Option<(&'static str, u32, &'static str, u32)>,
    port_max: Option<(&'static str, u32)>,
    irqs: Vec<Irq>,
    temp: Option<(i64, Option<i64>)>,
}

impl Nic {
    fn new(name: &'static str) -> Nic {
        Nic {
            name,
            pci: "0000:01:00.0",
            port: "0000:00:01.0",
            speed: Some("100000"),
            mtu: 9000,
            numa: -1,
            link: Some(("8.0 GT/s PCIe", 16, "8.0 GT/s PCIe", 16)),
            port_max: Some(("8.0 GT/s PCIe", 16)),
            irqs: Vec::new(),
            temp: None,
        }
    }

    fn irq(mut self, irq: u32, action: &str, smp: &str, eff: Option<&str>) -> Nic {
        self.irqs.push(Irq {
            irq,
            action: action.to_string(),
            smp: Some(smp.to_string()),
            eff: eff.map(str::to_string),
        });
        self
    }
}

struct Host {
    dir: tempfile::TempDir,
    ncpu: u32,
    irq_rows: Vec<(u32, String)>,
}

impl Host {
    /// `nodes`: CPU list per node (empty = no NUMA information); `l3`: CPU list per L3 group.
    fn new(ncpu: u32, nodes: &[&str], l3: &[&str]) -> Host {
        let h = Host {
            dir: tempfile::tempdir().unwrap(),
            ncpu,
            irq_rows: Vec::new(),
        };
        let all = format!("0-{}", ncpu - 1);
        h.file("/sys/devices/system/cpu/online", &all);
        h.file("/sys/devices/system/cpu/possible", &all);
        for c in 0..ncpu {
            let t = format!("/sys/devices/system/cpu/cpu{c}/topology");
            h.file(&format!("{t}/physical_package_id"), "0");
            h.file(&format!("{t}/core_id"), &c.to_string());
            h.file(&format!("{t}/thread_siblings_list"), &c.to_string());
        }
        for (n, cpus) in nodes.iter().enumerate() {
            h.file(&format!("/sys/devices/system/node/node{n}/cpulist"), cpus);
        }
        for (g, cpus) in l3.iter().enumerate() {
            for c in CpuSet::parse_list(cpus).unwrap().iter() {
                let d = format!("/sys/devices/system/cpu/cpu{c}/cache/index3");
                h.file(&format!("{d}/level"), "3");
                h.file(&format!("{d}/type"), "Unified");
                h.file(&format!("{d}/id"), &g.to_string());
                h.file(&format!("{d}/shared_cpu_list"), cpus);
            }
        }
        h.sysctl("net/ipv4/tcp_rmem", "4096 131072 2147483647");
        h.sysctl("net/ipv4/tcp_wmem", "4096 16384 2147483647");
        h.sysctl("net/ipv4/tcp_congestion_control", "bbr");
        h.sysctl(
            "net/ipv4/tcp_available_congestion_control",
            "reno cubic bbr",
        );
        h.file("/proc/1/comm", "systemd");
        h
    }

    fn file(&self, host_path: &str, content: &str) {
        let p = self.dir.path().join(host_path.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, format!("{content}\n")).unwrap();
    }

    fn link(&self, host_path: &str, target: &str) {
        let p = self.dir.path().join(host_path.trim_start_matches('/'));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    fn sysctl(&self, name: &str, v: &str) {
        self.file(&format!("/proc/sys/{name}"), v);
    }

    fn governor(&self, cpus: &str, g: &str) {
        for c in CpuSet::parse_list(cpus).unwrap().iter() {
            self.file(
                &format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"),
                g,
            );
        }
    }

    fn other_irq(&mut self, irq: u32, action: &str, eff: &str) {
        self.irq_rows.push((
            irq,
            format!("IR-PCI-MSIX-0000:04:00.0   {irq}-edge      {action}"),
        ));
        self.file(&format!("/proc/irq/{irq}/smp_affinity_list"), eff);
        self.file(&format!("/proc/irq/{irq}/effective_affinity_list"), eff);
    }

    fn nic(&mut self, n: Nic) {
        let dev = format!("/sys/devices/pci0000:00/{}/{}", n.port, n.pci);
        let net = format!("{dev}/net/{}", n.name);
        self.link(
            &format!("/sys/class/net/{}", n.name),
            &format!(
                "../../devices/pci0000:00/{}/{}/net/{}",
                n.port, n.pci, n.name
            ),
        );
        if let Some(s) = n.speed {
            self.file(&format!("{net}/speed"), s);
        }
        self.file(&format!("{net}/mtu"), &n.mtu.to_string());
        self.file(
            &format!("{net}/operstate"),
            if n.speed.is_some() { "up" } else { "down" },
        );
        self.file(&format!("{dev}/numa_node"), &n.numa.to_string());
        self.file(&format!("{dev}/vendor"), "0x15b3");
        self.file(&format!("{dev}/device"), "0x1017");
        if let Some((cs, cw, ms, mw)) = n.link {
            self.file(&format!("{dev}/current_link_speed"), cs);
            self.file(&format!("{dev}/current_link_width"), &cw.to_string());
            self.file(&format!("{dev}/max_link_speed"), ms);
            self.file(&format!("{dev}/max_link_width"), &mw.to_string());
        }
        if let Some((ms, mw)) = n.port_max {
            let port = format!("/sys/devices/pci0000:00/{}", n.port);
            self.file(&format!("{port}/max_link_speed"), ms);
            self.file(&format!("{port}/max_link_width"), &mw.to_string());
        }
        for i in &n.irqs {
            self.file(&format!("{dev}/msi_irqs/{}", i.irq), "msix");
            self.irq_rows.push((
                i.irq,
                format!("IR-PCI-MSIX-{}   {}-edge      {}", n.pci, i.irq, i.action),
            ));
            if let Some(s) = &i.smp {
                self.file(&format!("/proc/irq/{}/smp_affinity_list", i.irq), s);
            }
            if let Some(e) = &i.eff {
                self.file(&format!("/proc/irq/{}/effective_affinity_list", i.irq), e);
            }
        }
        if let Some((t, crit)) = n.temp {
            let h = format!("{dev}/hwmon/hwmon3");
            self.file(&format!("{h}/name"), "nic");
            self.file(&format!("{h}/temp1_input"), &t.to_string());
            if let Some(c) = crit {
                self.file(&format!("{h}/temp1_crit"), &c.to_string());
            }
        }
    }

    fn facts(&self) -> HostFacts {
        let mut text: String = (0..self.ncpu).map(|c| format!("       CPU{c}")).collect();
        text.push('\n');
        for (irq, tail) in &self.irq_rows {
            let counts: String = (0..self.ncpu).map(|_| "          0".to_string()).collect();
            text.push_str(&format!("{irq:>4}:{counts}  {tail}\n"));
        }
        self.file("/proc/interrupts", &text);
        collect(&Root::new(self.dir.path()))
    }
}

fn run(facts: &HostFacts, iface: Option<&str>, app: Option<&str>) -> Vec<Finding> {
    run_rtt(facts, iface, app, 10.0)
}

fn run_rtt(facts: &HostFacts, iface: Option<&str>, app: Option<&str>, rtt: f64) -> Vec<Finding> {
    diagnose(
        facts,
        &Options {
            iface: iface.map(str::to_string),
            app_cpus: app.map(|a| CpuSet::parse_nonempty(a).unwrap()),
            rtt_ms: rtt,
            rate_mbps: None,
        },
    )
    .unwrap()
}

fn has(f: &[Finding], id: &str) -> bool {
    f.iter().any(|x| x.id == id)
}

fn get<'a>(f: &'a [Finding], id: &str) -> &'a Finding {
    f.iter()
        .find(|x| x.id == id)
        .unwrap_or_else(|| panic!("{id} not in {f:#?}"))
}

fn one_nic(n: Nic) -> HostFacts {
    let mut h = Host::new(4, &["0-3"], &["0-3"]);
    h.nic(n);
    h.facts()
}

#[test]
fn pcie_downgrade_is_the_function_against_itself() {
    // x8 of x16: downgraded, and 8 GT/s x8 (63 Gbit/s) is below 100G → both, critical.
    let mut n = Nic::new("eth0");
    n.link = Some(("8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 16));
    let f = run(&one_nic(n), Some("eth0"), None);
    assert_eq!(
        get(&f, ids::PCIE_LINK_DOWNGRADED).severity,
        Severity::Critical
    );
    assert!(has(&f, ids::PCIE_BANDWIDTH_BELOW_LINE_RATE));

    // Gen3 x16 card in a Gen5 slot, running Gen3 x16: nothing to report.
    let mut n = Nic::new("eth0");
    n.port_max = Some(("32.0 GT/s PCIe", 16));
    let f = run(&one_nic(n), Some("eth0"), None);
    assert!(!has(&f, ids::PCIE_LINK_DOWNGRADED) && !has(&f, ids::PCIE_BANDWIDTH_BELOW_LINE_RATE));

    // Gen4 card trained at Gen3 x16: downgraded in speed, but 126 Gbit/s still carries 100G.
    let mut n = Nic::new("eth0");
    n.link = Some(("8.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16));
    let f = run(&one_nic(n), Some("eth0"), None);
    assert_eq!(
        get(&f, ids::PCIE_LINK_DOWNGRADED).severity,
        Severity::Warning
    );
    assert!(!has(&f, ids::PCIE_BANDWIDTH_BELOW_LINE_RATE));

    // A slot wired x8 under an x16 card: downgraded, and the fix says the slot is the limit.
    let mut n = Nic::new("eth0");
    n.link = Some(("8.0 GT/s PCIe", 8, "8.0 GT/s PCIe", 16));
    n.port_max = Some(("8.0 GT/s PCIe", 8));
    let f = run(&one_nic(n), Some("eth0"), None);
    assert!(get(&f, ids::PCIE_LINK_DOWNGRADED)
        .fix
        .iter()
        .any(|l| l.contains("slot")));

    // Link down: speed `Unknown`, width 0 → nothing known to compare, nothing reported.
    let mut n = Nic::new("eth0");
    n.speed = None;
    n.link = Some(("Unknown", 0, "8.0 GT/s PCIe", 16));
    let f = run(&one_nic(n), Some("eth0"), None);
    assert!(!has(&f, ids::PCIE_LINK_DOWNGRADED) && !has(&f, ids::PCIE_BANDWIDTH_BELOW_LINE_RATE));

    // No link attributes (virtio, VFs): unknown, never a finding.
    let mut n = Nic::new("eth0");
    n.link = None;
    n.port_max = None;
    let f = run(&one_nic(n), Some("eth0"), None);
    assert!(!has(&f, ids::PCIE_LINK_DOWNGRADED) && !has(&f, ids::PCIE_BANDWIDTH_BELOW_LINE_RATE));
}

#[test]
fn pcie_bandwidth_uses_each_generations_line_code() {
    let case = |speed: &'static str, cur: &'static str, w: u32| {
        let mut n = Nic::new("eth0");
        n.speed = Some(speed);
        n.link = Some((cur, w, cur, w));
        has(
            &run(&one_nic(n), Some("eth0"), None),
            ids::PCIE_BANDWIDTH_BELOW_LINE_RATE,
        )
    };
    // 40G card on PCIe 2.0 x8: 5 GT/s × 8 × 8/10 = 32 Gbit/s < 40 → fires, not downgraded.
    assert!(case("40000", "5.0 GT/s PCIe", 8));
    // 2.0 x8 carries a 25G port (32 ≥ 25).
    assert!(!case("25000", "5 GT/s", 8));
    // 100G at Gen3 x16: 126 Gbit/s ≥ 100.
    assert!(!case("100000", "8.0 GT/s PCIe", 16));
    // 100G at Gen3 x8: 63 Gbit/s.
    assert!(case("100000", "8.0 GT/s PCIe", 8));
    // 200G at Gen4 x16 (252) fine; 400G at Gen4 x16 not; 400G at Gen5 x16 (504) fine.
    assert!(!case("200000", "16.0 GT/s PCIe", 16));
    assert!(case("400000", "16.0 GT/s PCIe", 16));
    assert!(!case("400000", "32.0 GT/s PCIe", 16));
    // 1G on 2.5 GT/s x1: 2 Gbit/s.
    assert!(!case("1000", "2.5 GT/s PCIe", 1));
    // 10G on 2.5 GT/s x4 (8 Gbit/s) is below.
    assert!(case("10000", "2.5 GT/s", 4));
    // Down link with no speed: skipped.
    let mut n = Nic::new("eth0");
    n.speed = None;
    n.link = Some(("8.0 GT/s PCIe", 4, "8.0 GT/s PCIe", 4));
    assert!(!has(
        &run(&one_nic(n), Some("eth0"), None),
        ids::PCIE_BANDWIDTH_BELOW_LINE_RATE
    ));
    // Unknown speed (-1, e.g. virtio): skipped.
    let mut n = Nic::new("eth0");
    n.speed = Some("-1");
    n.link = Some(("2.5 GT/s PCIe", 1, "2.5 GT/s PCIe", 1));
    assert!(!has(
        &run(&one_nic(n), Some("eth0"), None),
        ids::PCIE_BANDWIDTH_BELOW_LINE_RATE
    ));
}

fn two_node_host(nic: Nic) -> HostFacts {
    let mut h = Host::new(8, &["0-3", "4-7"], &["0-3", "4-7"]);
    h.nic(nic);
    h.facts()
}

#[test]
fn numa_checks_need_a_known_node_on_a_multi_node_host() {
    // NIC on node 1, a queue IRQ on CPU 1 (node 0): remote.
    let mut n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "1", Some("1")).irq(
        51,
        "eth0-TxRx-1",
        "5",
        Some("5"),
    );
    n.numa = 1;
    let facts = two_node_host(n);
    let f = run(&facts, Some("eth0"), Some("5"));
    let r = get(&f, ids::IRQ_NUMA_REMOTE);
    assert!(r
        .fix
        .iter()
        .any(|l| l.contains("/proc/irq/50/") && !l.contains("> 5 ")));
    assert!(!r.fix.iter().any(|l| l.contains("/proc/irq/51/")));
    assert!(!has(&f, ids::APP_NUMA_REMOTE));
    // The app on node 0 is remote from the NIC.
    let f = run(&facts, Some("eth0"), Some("2"));
    assert!(has(&f, ids::APP_NUMA_REMOTE));

    // Requested "all CPUs" but effective on node 1: the effective affinity decides → quiet.
    let mut n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "0-7", Some("6"));
    n.numa = 1;
    assert!(!has(
        &run(&two_node_host(n), Some("eth0"), None),
        ids::IRQ_NUMA_REMOTE
    ));

    // No effective_affinity_list (old kernel): the requested mask is what is known → remote.
    let mut n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "0-7", None);
    n.numa = 1;
    assert!(has(
        &run(&two_node_host(n), Some("eth0"), None),
        ids::IRQ_NUMA_REMOTE
    ));

    // numa_node -1: the node is unknown → neither NUMA check.
    let n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "1", Some("1"));
    let f = run(&two_node_host(n), Some("eth0"), Some("2"));
    assert!(!has(&f, ids::IRQ_NUMA_REMOTE) && !has(&f, ids::APP_NUMA_REMOTE));

    // App on node 0, NIC and its queue IRQs on node 1: cross-L3 too, but the fix moves the
    // application, never the IRQs away from the NIC's node.
    let mut n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "5", Some("5"));
    n.numa = 1;
    let f = run(&two_node_host(n), Some("eth0"), Some("1"));
    let x = get(&f, ids::IRQ_CROSS_L3);
    assert!(x.fix.iter().any(|l| l.contains("numactl --cpunodebind=1")));
    assert!(!x.fix.iter().any(|l| l.starts_with("echo ")), "{:?}", x.fix);
    assert!(has(&f, ids::APP_NUMA_REMOTE));
    assert!(!has(&f, ids::IRQ_NUMA_REMOTE));

    // Single node: never remote.
    let mut n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "1", Some("1"));
    n.numa = 0;
    let f = run(&one_nic(n), Some("eth0"), Some("2"));
    assert!(!has(&f, ids::IRQ_NUMA_REMOTE) && !has(&f, ids::APP_NUMA_REMOTE));
}

fn ryzen(nic: Nic, other: Option<(u32, &str, &str)>) -> HostFacts {
    let mut h = Host::new(12, &["0-11"], &["0-5", "6-11"]);
    h.nic(nic);
    if let Some((irq, a, e)) = other {
        h.other_irq(irq, a, e);
    }
    h.facts()
}

#[test]
fn placement_checks_count_queue_vectors_only() {
    let nic = || {
        Nic::new("enp1s0f0np0")
            .irq(98, "mlx5_async0@pci:0000:01:00.0", "0-11", Some("6"))
            .irq(99, "mlx5_comp0@pci:0000:01:00.0", "7", Some("7"))
            .irq(100, "mlx5_comp1@pci:0000:01:00.0", "8", Some("8"))
    };
    // The control vector and another device's IRQ on the app CPU: neither is a queue vector.
    let f = run(
        &ryzen(nic(), Some((68, "nvme0q7", "6"))),
        Some("enp1s0f0np0"),
        Some("6"),
    );
    assert!(!has(&f, ids::IRQ_ON_APP_CORE), "{f:#?}");
    assert!(!has(&f, ids::IRQ_CROSS_L3));

    // A completion vector on the app CPU.
    let f = run(&ryzen(nic(), None), Some("enp1s0f0np0"), Some("8"));
    let hit = get(&f, ids::IRQ_ON_APP_CORE);
    assert!(hit.evidence.iter().any(|e| e.what.contains("IRQ 100")));
    // the fix moves it within the app's L3 group, never onto the app CPU
    assert!(hit.fix.iter().any(|l| l.contains("/proc/irq/100/")));
    assert!(!hit.fix.iter().any(|l| l.starts_with("echo 8 ")));

    // A completion vector in the other L3 group.
    let n = nic().irq(101, "mlx5_comp2@pci:0000:01:00.0", "3", Some("3"));
    let f = run(&ryzen(n, None), Some("enp1s0f0np0"), Some("6"));
    let x = get(&f, ids::IRQ_CROSS_L3);
    assert!(x.evidence.iter().any(|e| e.what.contains("IRQ 101")));
    assert!(!x.evidence.iter().any(|e| e.what.contains("IRQ 98")));
    let target: Vec<&String> = x
        .fix
        .iter()
        .filter(|l| l.contains("/proc/irq/101/"))
        .collect();
    let cpu: u32 = target[0]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!((7..=11).contains(&cpu), "{target:?}");

    // The control vector in the other L3 group does not count.
    let n = Nic::new("enp1s0f0np0")
        .irq(98, "mlx5_async0@pci:0000:01:00.0", "0-11", Some("2"))
        .irq(99, "mlx5_comp0@pci:0000:01:00.0", "7", Some("7"));
    assert!(!has(
        &run(&ryzen(n, None), Some("enp1s0f0np0"), Some("6")),
        ids::IRQ_CROSS_L3
    ));

    // One L3 group: cross-L3 cannot happen.
    let n = Nic::new("eth0").irq(50, "eth0-TxRx-0", "3", Some("3"));
    assert!(!has(
        &run(&one_nic(n), Some("eth0"), Some("1")),
        ids::IRQ_CROSS_L3
    ));

    // A device with a single vector named after the interface does its packet work on it.
    let n = Nic::new("eth0").irq(50, "eth0", "1", Some("1"));
    assert!(has(
        &run(&one_nic(n), Some("eth0"), Some("1")),
        ids::IRQ_ON_APP_CORE
    ));
    // ... but next to queue vectors, that vector is the link/"other causes" one.
    let n = Nic::new("eth0")
        .irq(50, "eth0", "1", Some("1"))
        .irq(51, "eth0-TxRx-0", "2", Some("2"));
    assert!(!has(
        &run(&one_nic(n), Some("eth0"), Some("1")),
        ids::IRQ_ON_APP_CORE
    ));

    // Without --app-cpus, the app checks are silent.
    let f = run(&ryzen(nic(), None), Some("enp1s0f0np0"), None);
    assert!(!has(&f, ids::IRQ_ON_APP_CORE) && !has(&f, ids::IRQ_CROSS_L3));
}

#[test]
fn mtu_needs_a_fast_known_link() {
    let case = |speed: Option<&'static str>, mtu: u32| {
        let mut n = Nic::new("eth0");
        n.speed = speed;
        n.mtu = mtu;
        n.link = None;
        has(&run(&one_nic(n), Some("eth0"), None), ids::MTU_BELOW_JUMBO)
    };
    assert!(case(Some("10000"), 1500));
    assert!(case(Some("100000"), 4000));
    assert!(!case(Some("100000"), 9000));
    assert!(!case(Some("1000"), 1500));
    assert!(!case(Some("-1"), 1500));
    assert!(!case(None, 1500));
}

#[test]
fn socket_buffers_against_the_bandwidth_delay_product() {
    let mut h = Host::new(4, &["0-3"], &["0-3"]);
    h.sysctl("net/ipv4/tcp_rmem", "4096 131072 6291456");
    h.nic(Nic::new("eth0"));
    let facts = h.facts();
    // 100 Gbit/s × 10 ms = 125 MB > 6 MB.
    let f = run(&facts, Some("eth0"), None);
    let s = get(&f, ids::SOCKET_BUFFERS_SMALL);
    assert!(s.evidence.iter().any(|e| e.value.starts_with("125000000")));
    assert!(s.fix.iter().any(|l| l.contains("tcp_rmem")));
    assert!(!s.fix.iter().any(|l| l.contains("tcp_wmem")));
    // At 0.1 ms the BDP is 1.25 MB: 6 MB is enough.
    assert!(!has(
        &run_rtt(&facts, Some("eth0"), None, 0.1),
        ids::SOCKET_BUFFERS_SMALL
    ));
    // Unknown speed → no BDP → no finding.
    let mut h = Host::new(4, &["0-3"], &["0-3"]);
    h.sysctl("net/ipv4/tcp_rmem", "4096 131072 6291456");
    let mut n = Nic::new("eth0");
    n.speed = Some("-1");
    h.nic(n);
    assert!(!has(
        &run(&h.facts(), None, None),
        ids::SOCKET_BUFFERS_SMALL
    ));
}

#[test]
fn congestion_control_info_only_for_loss_based() {
    for (cc, avail, fires, fix) in [
        ("cubic", "reno cubic bbr", true, "bbr"),
        ("reno", "reno cubic htcp", true, "htcp"),
        // No module list (no /lib/modules): whether it ships bbr is not known, and says so.
        ("cubic", "reno cubic", true, "not known here"),
        ("bbr", "reno cubic bbr", false, ""),
        ("htcp", "cubic reno htcp", false, ""),
    ] {
        let h = Host::new(2, &["0-1"], &["0-1"]);
        h.sysctl("net/ipv4/tcp_congestion_control", cc);
        h.sysctl("net/ipv4/tcp_available_congestion_control", avail);
        let f = run(&h.facts(), None, None);
        assert_eq!(has(&f, ids::CONGESTION_CONTROL_LOSS_BASED), fires, "{cc}");
        if fires {
            let x = get(&f, ids::CONGESTION_CONTROL_LOSS_BASED);
            assert_eq!(x.severity, Severity::Info);
            assert!(x.fix.iter().any(|l| l.contains(fix)), "{cc}: {:?}", x.fix);
        }
    }
    // With the kernel's module list: modprobe only for a module it ships.
    for (modules, fix, never) in [
        (
            "kernel/net/ipv4/tcp_bbr.ko.zst: \nkernel/net/ipv4/tcp_htcp.ko.zst:\n",
            "modprobe tcp_bbr",
            "ships neither",
        ),
        (
            "kernel/net/ipv4/tcp_htcp.ko:\n",
            "modprobe tcp_htcp",
            "tcp_bbr",
        ),
        (
            "kernel/net/ipv4/tcp_diag.ko:\n",
            "ships neither",
            "modprobe",
        ),
    ] {
        let h = Host::new(2, &["0-1"], &["0-1"]);
        h.sysctl("net/ipv4/tcp_congestion_control", "cubic");
        h.sysctl("net/ipv4/tcp_available_congestion_control", "reno cubic");
        h.sysctl("kernel/osrelease", "6.1.0-test");
        h.file("/lib/modules/6.1.0-test/modules.dep", modules);
        let f = run(&h.facts(), None, None);
        let x = get(&f, ids::CONGESTION_CONTROL_LOSS_BASED);
        let fixes = x.fix.join("\n");
        assert!(fixes.contains(fix), "{modules}: {fixes}");
        assert!(!fixes.contains(never), "{modules}: {fixes}");
    }
}

#[test]
fn qdisc_and_mtu_probing_are_findings_with_the_writes_tune_applies() {
    let mut h = Host::new(2, &["0-1"], &["0-1"]);
    h.sysctl("net/core/default_qdisc", "fq_codel");
    h.sysctl("net/ipv4/tcp_mtu_probing", "0");
    let mut n = Nic::new("eth0");
    n.mtu = 9000;
    h.nic(n);
    let f = run(&h.facts(), None, None);
    let q = get(&f, ids::DEFAULT_QDISC_NOT_FQ);
    assert_eq!(q.severity, Severity::Info);
    assert_eq!(q.writes[0].path, "/proc/sys/net/core/default_qdisc");
    assert_eq!(q.writes[0].value, "fq");
    let m = get(&f, ids::TCP_MTU_PROBING_OFF);
    assert_eq!(m.writes[0].value, "1");
    assert!(m.summary.contains("MTU 9000"), "{}", m.summary);
    // fq already, or a 1500-byte MTU: nothing.
    let mut h = Host::new(2, &["0-1"], &["0-1"]);
    h.sysctl("net/core/default_qdisc", "fq");
    h.sysctl("net/ipv4/tcp_mtu_probing", "0");
    let mut n = Nic::new("eth0");
    n.mtu = 1500;
    h.nic(n);
    let f = run(&h.facts(), None, None);
    assert!(!has(&f, ids::DEFAULT_QDISC_NOT_FQ));
    assert!(!has(&f, ids::TCP_MTU_PROBING_OFF));
}

#[test]
fn governor_of_the_cpus_that_matter() {
    let mk = |gov_cpus: &str| {
        let mut h = Host::new(8, &["0-7"], &["0-7"]);
        h.governor("0-7", "performance");
        if !gov_cpus.is_empty() {
            h.governor(gov_cpus, "powersave");
        }
        h.nic(Nic::new("eth0").irq(50, "eth0-TxRx-0", "2", Some("2")));
        h.facts()
    };
    // The queue IRQ's CPU is slow.
    assert!(has(
        &run(&mk("2"), Some("eth0"), Some("5")),
        ids::CPU_GOVERNOR_NOT_PERFORMANCE
    ));
    // The app CPU is slow.
    assert!(has(
        &run(&mk("5"), Some("eth0"), Some("5")),
        ids::CPU_GOVERNOR_NOT_PERFORMANCE
    ));
    // Only unrelated CPUs are slow.
    assert!(!has(
        &run(&mk("6-7"), Some("eth0"), Some("5")),
        ids::CPU_GOVERNOR_NOT_PERFORMANCE
    ));
    // No cpufreq at all (a VM): unknown.
    let mut h = Host::new(2, &["0-1"], &["0-1"]);
    h.nic(Nic::new("eth0").irq(50, "eth0-TxRx-0", "1", Some("1")));
    assert!(!has(
        &run(&h.facts(), Some("eth0"), Some("0")),
        ids::CPU_GOVERNOR_NOT_PERFORMANCE
    ));
}

#[test]
fn temperature_absolute_and_relative_to_critical() {
    let case = |t: i64, crit: Option<i64>| {
        let mut n = Nic::new("eth0");
        n.temp = Some((t, crit));
        run(&one_nic(n), Some("eth0"), None)
            .into_iter()
            .find(|f| f.id == ids::NIC_TEMPERATURE_HIGH)
            .map(|f| f.severity)
    };
    assert_eq!(case(74_000, Some(105_000)), Some(Severity::Warning));
    assert_eq!(case(70_000, None), Some(Severity::Warning));
    assert_eq!(case(45_000, Some(105_000)), None);
    assert_eq!(case(69_000, None), None);
    assert_eq!(case(60_000, Some(75_000)), Some(Severity::Warning)); // within 20 °C of critical
    assert_eq!(case(101_000, Some(105_000)), Some(Severity::Critical));
    assert_eq!(case(-5, Some(105_000)), None);
    // no hwmon: no input, no finding
    assert!(!has(
        &run(&one_nic(Nic::new("eth0")), Some("eth0"), None),
        ids::NIC_TEMPERATURE_HIGH
    ));
}

#[test]
fn irqbalance_by_process_name() {
    let h = Host::new(2, &["0-1"], &["0-1"]);
    assert!(!has(&run(&h.facts(), None, None), ids::IRQBALANCE_RUNNING));
    h.file("/proc/812/comm", "irqbalance");
    let f = run(&h.facts(), None, None);
    assert!(get(&f, ids::IRQBALANCE_RUNNING).evidence[0]
        .source
        .contains("/proc/812/comm"));
    // a process whose name merely contains it does not count
    let h = Host::new(2, &["0-1"], &["0-1"]);
    h.file("/proc/9/comm", "irqbalance-ui");
    assert!(!has(&run(&h.facts(), None, None), ids::IRQBALANCE_RUNNING));
}

#[test]
fn softnet_drops_and_squeezes() {
    let case = |rows: &str| {
        let h = Host::new(2, &["0-1"], &["0-1"]);
        h.file("/proc/net/softnet_stat", rows);
        run(&h.facts(), None, None)
            .into_iter()
            .find(|f| f.id == ids::SOFTNET_DROPS)
    };
    let z = "00000000";
    let row = |p: &str, d: &str, s: &str, cpu: &str| {
        format!("{p} {d} {s} {z} {z} {z} {z} {z} {z} {z} {z} {z} {cpu}")
    };
    assert!(case(&format!(
        "{}\n{}",
        row("0000ffff", z, z, "00000000"),
        row("0000ffff", z, z, "00000001")
    ))
    .is_none());
    let f = case(&format!(
        "{}\n{}",
        row("0000ffff", z, z, "00000000"),
        row("0000ffff", "0000000a", z, "00000001")
    ))
    .unwrap();
    assert_eq!(f.severity, Severity::Warning);
    assert!(f
        .evidence
        .iter()
        .any(|e| e.what.starts_with("CPU 1") && e.value == "10 / 0"));
    assert!(f.fix.iter().any(|l| l.contains("netdev_max_backlog")));
    let f = case(&row("0000ffff", z, "00000003", "00000000")).unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.fix.iter().any(|l| l.contains("netdev_budget")));
}

#[test]
fn bad_options_are_errors_not_findings() {
    use wirespeed_doctor::target::TargetError;
    let facts = one_nic(Nic::new("eth0"));
    let opts = |iface: Option<&str>, app: Option<&str>, rtt: f64| Options {
        iface: iface.map(str::to_string),
        app_cpus: app.map(|a| CpuSet::parse_nonempty(a).unwrap()),
        rtt_ms: rtt,
        rate_mbps: None,
    };
    assert!(matches!(
        diagnose(&facts, &opts(Some("eth9"), None, 10.0)),
        Err(DoctorError::UnknownInterface { .. })
    ));
    assert!(matches!(
        diagnose(&facts, &opts(None, Some("2,9"), 10.0)),
        Err(DoctorError::Target(TargetError::Cpus(_)))
    ));
    assert!(matches!(
        diagnose(&facts, &opts(None, None, 0.0)),
        Err(DoctorError::Target(TargetError::Unit(_)))
    ));
    assert!(matches!(
        diagnose(&facts, &opts(None, None, f64::NAN)),
        Err(DoctorError::Target(TargetError::Unit(_)))
    ));
}

#[test]
fn findings_come_worst_first() {
    let mut h = Host::new(4, &["0-3"], &["0-3"]);
    h.sysctl("net/ipv4/tcp_congestion_control", "cubic");
    let mut n = Nic::new("eth0");
    n.link = Some(("8.0 GT/s PCIe", 4, "8.0 GT/s PCIe", 16));
    n.mtu = 1500;
    h.nic(n);
    let f = run(&h.facts(), None, None);
    let sev: Vec<Severity> = f.iter().map(|x| x.severity).collect();
    let mut sorted = sev.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(sev, sorted);
    assert_eq!(f[0].severity, Severity::Critical);
    assert_eq!(f.last().unwrap().id, ids::CONGESTION_CONTROL_LOSS_BASED);
}

#[test]
fn empty_tree_has_no_findings_and_no_errors() {
    let t = tempfile::tempdir().unwrap();
    let facts = collect(&Root::new(t.path()));
    assert!(facts.nics.is_empty());
    assert!(run(&facts, None, None).is_empty());
    assert!(Path::new(t.path()).exists());
}
