use super::loss::with_sender_tcp;
use super::*;
use wirespeed_host::CpuSet;
use wirespeed_model::observation::LinkKind;
use wirespeed_model::observation::{CpuUse, EndObservation};
use wirespeed_model::observation::{
    IntervalObservation, Percent, RxDrops, SoftnetUse, TcpLimits, TcpRxDrops, UdpRx, WorkerRun,
};
use wirespeed_model::topology::Topology;
use wirespeed_model::verdict::{End, PeerSilent, SilentPhase, VerdictEnd};
use wirespeed_model::{AlsoKind, Bound, LoadedEnd};

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// (cpu, system, softirq, idle, nic_irqs, net_rx)
type Row = (u32, f64, f64, f64, u64, u64);

fn end(role: Role, topo: Topology, app: u32, rows: &[Row]) -> EndObservation {
    let cpus = rows
        .iter()
        .map(|&(cpu, sys, sirq, idle, irq, rx)| CpuUse {
            cpu,
            system: Percent::new(sys),
            softirq: Percent::new(sirq),
            idle: Percent::new(idle),
            user: Percent::new(100.0 - sys - sirq - idle),
            nic_irqs: irq,
            net_rx: rx,
            ..Default::default()
        })
        .collect();
    EndObservation {
        role,
        host: None,
        iface: Some("eth1".into()),
        iface_mtu: Some(9000),
        iface_speed_mbps: Some(100_000),
        nic_numa_node: None,
        nic_irqs: vec![100, 101],
        topology: topo,
        intervals: vec![],
        total: IntervalObservation {
            cpus,
            workers: vec![WorkerRun {
                worker: 0,
                cpu_requested: Some(app),
                cpus_seen: CpuSet::from_cpus([app]),
                streams: vec![5],
                tid: None,
            }],
            ..Default::default()
        },
        notes: vec![],
        cpu_quota: None,
        iface_link: None,
        iface_stack: None,
    }
}

fn ryzen() -> Topology {
    Topology::from_groups(vec![set("0-11")], vec![set("0-5"), set("6-11")], vec![])
}

fn xeon() -> Topology {
    Topology::from_groups(
        vec![set("0-7"), set("8-15")],
        vec![set("0-7"), set("8-15")],
        vec![],
    )
}

fn test(sender: EndObservation, receiver: EndObservation) -> TestObservation {
    TestObservation {
        local: sender,
        remote: Some(receiver),
        remote_absent: None,
    }
}

fn idle_sender() -> EndObservation {
    end(Role::Sender, ryzen(), 6, &[(6, 60.0, 5.0, 30.0, 10, 100)])
}

/// The verdict on a receiver with its app on `app` (and an idle sender), at `gbps`.
fn receiver_verdict(topo: Topology, app: u32, rows: &[Row], gbps: Option<f64>) -> Verdict {
    let r = end(Role::Receiver, topo, app, rows);
    verdict(&test(idle_sender(), r), gbps.map(BitsPerSecond::from_gbps))
}

#[test]
fn sender_cpu_bound() {
    let s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
    let r = end(
        Role::Receiver,
        ryzen(),
        6,
        &[(6, 70.0, 0.0, 30.0, 0, 0), (8, 0.0, 20.0, 80.0, 500, 500)],
    );
    let v = verdict(&test(s, r), Some(BitsPerSecond::from_gbps(40.0)));
    assert_eq!(v.id, VerdictId::SenderCpuBound);
    assert_eq!(v.line, "sender CPU-bound (CPU 3, 99 % system)");
    assert!(v.also.is_empty(), "{:?}", v.also);
}

/// A sender whose CPU 3 is saturated at 3.2 Gbit/s over a 30 µs RTT, the window held it
/// back `rwnd_us` of its 1 s busy time, and the receiver advertised `wnd` bytes at most.
fn small_window_sender(wnd: Option<u64>, rwnd_us: u64) -> Verdict {
    let mut s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
    s.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        rwnd_limited_us: rwnd_us,
        srtt_us: Some(30),
        snd_wnd: wnd,
        ..Default::default()
    });
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 40.0, 0.0, 60.0, 0, 0)]);
    verdict(&test(s, r), Some(BitsPerSecond::from_gbps(3.2)))
}

#[test]
fn a_window_the_data_fills_is_the_limit_though_the_sender_waited_little_on_it() {
    // the verdict matrix's `tcp_rmem` max 16 KiB at a -R receiver, as CI measured it: the
    // sender's CPU saturated by the per-segment work of a small window, tcpi_rwnd_limited
    // under its threshold — but 3.2 Gbit/s over 30 µs is the 12 KiB the receiver advertised
    let v = small_window_sender(Some(12 * 1024), 200_000);
    assert_eq!(v.id, VerdictId::WindowLimited);
    assert_eq!(v.end, Some(VerdictEnd::Sender));
    assert_eq!(
        v.line,
        "window-limited: the receiver's window ran full: the bandwidth-delay product (3.2 Gbit/s × 30 µs mean RTT = 11.7 KiB) is 97.7 % of the largest window advertised (12.0 KiB), and held the sender back 20 % of its busy time (raise tcp_rmem's maximum, or -w)"
    );
    assert_eq!(
        v.also,
        vec!["sender CPU-bound (CPU 3, 99 % system)".to_string()]
    );
    // a whole-test reading: the intervals' share would disagree with it
    let e = v.evidence.unwrap();
    assert_eq!(e.confidence, wirespeed_model::Confidence::WholeTest);
    assert!(
        e.counters.iter().any(|c| c.contains("tcpi_snd_wnd")),
        "{e:?}"
    );
    // a product over the window (the RTT samples carry delayed ACKs and late reads)
    let v = small_window_sender(Some(8 * 1024), 0);
    assert!(
        v.line
            .contains("(3.2 Gbit/s × 30 µs mean RTT = 11.7 KiB) is 1.5× the largest window advertised (8.0 KiB)"),
        "{}",
        v.line
    );
    // three quarters of the window is full
    assert_eq!(
        small_window_sender(Some(15 * 1024), 0).id,
        VerdictId::WindowLimited
    );
    // the same rate in a window autotuning grew to 6 MiB (0.2 % of it in flight): the CPU
    assert_eq!(
        small_window_sender(Some(6 << 20), 200_000).id,
        VerdictId::SenderCpuBound
    );
    // a window autotuning keeps ahead of the product is not full
    assert_eq!(
        small_window_sender(Some(16 * 1024), 0).id,
        VerdictId::SenderCpuBound
    );
    // without the advertised window (kernels before 6.2), or a closed one, only the
    // share decides
    assert_eq!(
        small_window_sender(None, 200_000).id,
        VerdictId::SenderCpuBound
    );
    assert_eq!(
        small_window_sender(Some(0), 200_000).id,
        VerdictId::SenderCpuBound
    );
    let v = small_window_sender(None, 300_000);
    assert_eq!(
        v.line,
        "window-limited: the receiver's window held the sender back 30 % of its busy time (raise tcp_rmem's maximum, or -w)"
    );
}

#[test]
fn a_window_found_full_under_its_share_threshold_gives_way_to_contention() {
    // a receiver kept off its CPU stops reading, and the window it advertises fills: the
    // contention is the cause
    let mut s = idle_sender();
    s.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        rwnd_limited_us: 100_000,
        srtt_us: Some(100),
        snd_wnd: Some(64 * 1024),
        ..Default::default()
    });
    let v = verdict(
        &test(s, contended_receiver()),
        Some(BitsPerSecond::from_gbps(4.0)),
    );
    assert_eq!(v.id, VerdictId::CpuContended, "{v:?}");
    assert!(
        v.also
            .iter()
            .any(|a| a.starts_with("window-limited: the receiver's window ran full")),
        "{:?}",
        v.also
    );
}

#[test]
fn ends_whose_mtus_differ_are_an_mtu_mismatch_before_the_cpu_it_costs() {
    // the issue's case: sender MTU 9000, receiver 1500, the sender's CPU saturated by
    // the per-packet work of 1448-byte segments
    let mk = |smtu, rmtu| {
        let mut s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
        s.iface = Some("ws0".into());
        s.iface_mtu = Some(smtu);
        let mut r = end(Role::Receiver, ryzen(), 6, &[(6, 70.0, 0.0, 30.0, 0, 0)]);
        r.iface = Some("eth1".into());
        r.iface_mtu = Some(rmtu);
        test(s, r)
    };
    let v = verdict(&mk(9000, 1500), Some(BitsPerSecond::from_gbps(40.0)));
    assert_eq!(v.id, VerdictId::MtuMismatch, "{v:?}");
    assert_eq!(v.end.map(VerdictEnd::word), Some("receiver"));
    assert!(
        v.line.starts_with(
            "MTU mismatch: the sender's interface MTU is 9000 (ws0), the receiver's 1500 (eth1)"
        ) && v.line.contains("set the receiver's MTU to 9000"),
        "{}",
        v.line
    );
    assert_eq!(v.also, ["sender CPU-bound (CPU 3, 99 % system)"]);
    // the other way round names the sender
    let v = verdict(&mk(1500, 9000), Some(BitsPerSecond::from_gbps(40.0)));
    assert_eq!(
        (v.id, v.end.map(VerdictEnd::word)),
        (VerdictId::MtuMismatch, Some("sender"))
    );
    // equal, or within the 10 % left for tunnel overhead: nothing
    for (a, b) in [(9000, 9000), (9000, 8950), (1500, 1450)] {
        let v = verdict(&mk(a, b), Some(BitsPerSecond::from_gbps(40.0)));
        assert_eq!(v.id, VerdictId::SenderCpuBound, "{a} {b}: {v:?}");
    }
    // the peer not observed: no claim
    let t = TestObservation::local_only(mk(9000, 1500).local, "iperf3");
    assert_ne!(verdict(&t, None).id, VerdictId::MtuMismatch);
}

#[test]
fn receiver_shares_its_cpu_with_rx_softirq() {
    let v = receiver_verdict(
        ryzen(),
        6,
        &[
            (6, 52.0, 46.0, 2.0, 9700, 90000),
            (8, 0.0, 1.0, 99.0, 300, 100),
        ],
        Some(64.6),
    );
    assert_eq!(v.id, VerdictId::ReceiverSharesCpuWithSoftirq);
    assert_eq!(
        v.line,
        "receiver shares CPU 6 with RX softirq (CPU 6: 52 % system, 46 % softirq; 97 % of the NIC's interrupts)"
    );
    assert_eq!(v.end.map(VerdictEnd::word), Some("receiver"));
}

#[test]
fn irqs_on_the_other_l3_group() {
    let v = receiver_verdict(
        ryzen(),
        6,
        &[
            (6, 97.0, 2.0, 1.0, 0, 100),
            (3, 0.0, 60.0, 40.0, 9000, 9000),
        ],
        Some(84.9),
    );
    assert_eq!(v.id, VerdictId::IrqCrossL3);
    assert_eq!(
        v.line,
        "IRQs on a different L3 group than the receiver: NIC interrupts on CPU 3 (L3 0-5), receiver on CPU 6 (L3 6-11, 97 % system)"
    );
}

#[test]
fn remote_numa_node_for_irqs_and_for_the_app() {
    let v = receiver_verdict(
        xeon(),
        9,
        &[(9, 98.0, 0.0, 2.0, 0, 10), (2, 0.0, 70.0, 30.0, 5000, 5000)],
        None,
    );
    assert_eq!(v.id, VerdictId::IrqNumaRemote);
    assert!(
        v.line
            .contains("NIC interrupts on CPU 2 (node 0), receiver on CPU 9 (node 1"),
        "{}",
        v.line
    );

    let mut r = end(
        Role::Receiver,
        xeon(),
        1,
        &[(1, 98.0, 0.0, 2.0, 0, 10), (2, 0.0, 70.0, 30.0, 5000, 5000)],
    );
    r.nic_numa_node = Some(1);
    let v = verdict(&test(idle_sender(), r), None);
    assert_eq!(v.id, VerdictId::AppNumaRemote);
    assert_eq!(
        v.line,
        "receiver on a remote NUMA node: CPU 1 is on node 0, the NIC eth1 on node 1 (98 % busy)"
    );
}

#[test]
fn receiver_cpu_bound_when_placement_is_right() {
    let v = receiver_verdict(
        ryzen(),
        6,
        &[(6, 95.0, 3.0, 2.0, 0, 10), (8, 0.0, 50.0, 50.0, 9000, 9000)],
        Some(90.0),
    );
    assert_eq!(v.id, VerdictId::ReceiverCpuBound);
    assert_eq!(v.line, "receiver CPU-bound (CPU 6, 95 % system)");
}

#[test]
fn line_rate_wins_and_keeps_the_rest_as_also() {
    let v = receiver_verdict(
        ryzen(),
        6,
        &[(6, 95.0, 3.0, 2.0, 0, 10), (8, 0.0, 50.0, 50.0, 9000, 9000)],
        Some(98.8),
    );
    assert_eq!(v.id, VerdictId::LineRate);
    assert_eq!(
        v.line,
        "at line rate: 98.8 Gbit/s of a 100.0 Gbit/s link (eth1)"
    );
    assert_eq!(
        v.also,
        vec!["receiver CPU-bound (CPU 6, 95 % system)".to_string()]
    );
}

#[test]
fn softirq_cpu_saturated() {
    let v = receiver_verdict(
        ryzen(),
        6,
        &[(6, 60.0, 0.0, 40.0, 0, 0), (8, 2.0, 95.0, 3.0, 9000, 9000)],
        None,
    );
    assert_eq!(v.id, VerdictId::SoftirqCpuBound);
    assert!(
        v.line
            .starts_with("receiver's softirq CPU 8 saturated (95 % softirq)"),
        "{}",
        v.line
    );
}

#[test]
fn tcp_limits_and_pmtu() {
    let mut s = idle_sender();
    s.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        rwnd_limited_us: 600_000,
        sndbuf_limited_us: 0,
        pmtu: Some(9000),
        dsack_dups: 0,
        ..Default::default()
    });
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let v = verdict(
        &test(s.clone(), r.clone()),
        Some(BitsPerSecond::from_gbps(10.0)),
    );
    assert_eq!(v.id, VerdictId::WindowLimited);
    assert!(v.line.contains("60 %"), "{}", v.line);

    s.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        rwnd_limited_us: 0,
        sndbuf_limited_us: 300_000,
        pmtu: Some(1500),
        dsack_dups: 0,
        ..Default::default()
    });
    let v = verdict(
        &test(s.clone(), r.clone()),
        Some(BitsPerSecond::from_gbps(10.0)),
    );
    // a path MTU below the interface's is a fact about the setup: with no CPU paying for the
    // smaller frames it never outranks the limit that bound (the send buffer)
    assert_eq!(v.id, VerdictId::SndbufLimited, "{v:?}");
    assert_eq!(v.also.len(), 1);
    assert_eq!(v.also[0].id, Some(VerdictId::PmtuBelowMtu));
    assert_eq!(v.also[0].standing.bound, Some(Bound::Fact));
    assert_eq!(
        v.also[0].line,
        "path MTU 1500 below the interface MTU 9000 of eth1: jumbo frames are not passed end to end (a switch or the peer)"
    );
    // with a CPU saturated paying the per-packet work of the smaller frames, it bound
    let mut hot = r;
    hot.total.cpus = vec![cpu_row(6, 5.0, 80.0, 13.0, 0.0, 2.0)];
    let v = verdict(&test(s, hot), Some(BitsPerSecond::from_gbps(10.0)));
    assert_eq!(v.id, VerdictId::PmtuBelowMtu, "{v:?}");
    assert_eq!(v.standing.bound, Some(Bound::Binding));
}

#[test]
fn loopback_pmtu_is_not_flagged_and_nothing_saturated() {
    let mut s = end(Role::Sender, ryzen(), 1, &[(1, 40.0, 10.0, 50.0, 0, 10)]);
    s.iface_mtu = Some(65536);
    s.iface_speed_mbps = None;
    s.total.tcp = Some(TcpLimits {
        busy_us: 10,
        rwnd_limited_us: 0,
        sndbuf_limited_us: 0,
        pmtu: Some(65535),
        dsack_dups: 0,
        ..Default::default()
    });
    let v = verdict(
        &TestObservation::local_only(s, "peer is iperf3"),
        Some(BitsPerSecond::from_gbps(20.0)),
    );
    assert_eq!(v.id, VerdictId::NoCpuSaturated);
    // the peer was not observed: it is never described as idle
    assert_eq!(
        v.line,
        "no CPU saturated (busiest: sender's CPU 1 at 50 %) at this end; the peer was not observed (peer is iperf3), so its CPUs could not be seen: the limit is the path or the peer"
    );
}

#[test]
fn busiest_end_decides_and_a_receiver_wins_ties() {
    let s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
    let r = end(
        Role::Receiver,
        ryzen(),
        6,
        &[(6, 99.0, 0.0, 1.0, 0, 0), (8, 0.0, 20.0, 80.0, 500, 500)],
    );
    let v = verdict(&test(s, r), None);
    assert_eq!(v.id, VerdictId::ReceiverCpuBound);
    assert_eq!(
        v.also,
        vec!["sender CPU-bound (CPU 3, 99 % system)".to_string()]
    );
}

#[test]
fn verdict_serialises() {
    let v = verdict(&test(idle_sender(), idle_sender()), None);
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["id"], "no-cpu-saturated");
    assert!(j.get("also").is_none());
}

/// A CPU row with steal: (cpu, user, system, softirq, steal, idle).
fn cpu_row(cpu: u32, user: f64, sys: f64, sirq: f64, steal: f64, idle: f64) -> CpuUse {
    CpuUse {
        cpu,
        user: Percent::new(user),
        system: Percent::new(sys),
        softirq: Percent::new(sirq),
        steal: Percent::new(steal),
        idle: Percent::new(idle),
        ..Default::default()
    }
}

fn interval(cpus: Vec<CpuUse>) -> IntervalObservation {
    IntervalObservation {
        cpus,
        ..Default::default()
    }
}

/// An unpinned worker that ran on CPUs 0 and 1 and moved between them: each interval one of
/// them is saturated, the whole-test averages are not.
fn migrating(role: Role, steal: f64) -> EndObservation {
    let mut e = end(Role::Receiver, ryzen(), 0, &[]);
    e.role = role;
    e.iface = Some("eth0".into());
    e.iface_speed_mbps = None;
    e.total.workers = vec![WorkerRun {
        worker: 0,
        cpu_requested: None,
        cpus_seen: set("0-1"),
        streams: vec![5],
        tid: None,
    }];
    let hot = |cpu| cpu_row(cpu, 50.0, 45.0 - steal, 0.0, steal, 5.0);
    let cold = |cpu| cpu_row(cpu, 20.0, 20.0, 0.0, 0.0, 60.0);
    e.intervals = vec![
        interval(vec![hot(0), cold(1)]),
        interval(vec![cold(0), hot(1)]),
        interval(vec![hot(0), cold(1)]),
        interval(vec![cold(0), hot(1)]),
        interval(vec![]), // the tail: no CPU did work
    ];
    e.total.cpus = vec![
        cpu_row(0, 35.0, 32.5 - steal / 2.0, 0.0, steal / 2.0, 32.5),
        cpu_row(1, 35.0, 32.5 - steal / 2.0, 0.0, steal / 2.0, 32.5),
    ];
    e
}

#[test]
fn a_migrating_worker_is_followed_through_the_intervals() {
    let r = migrating(Role::Receiver, 0.0);
    // the averages (67.5 % busy) say nothing is saturated ...
    assert!(r.total.cpus.iter().all(|c| c.busy().get() < 90.0));
    let s = end(Role::Sender, xeon(), 9, &[(9, 20.0, 0.0, 80.0, 0, 0)]);
    let v = verdict(&test(s, r), Some(BitsPerSecond::from_gbps(5.0)));
    // ... the intervals do
    assert_eq!(v.id, VerdictId::ReceiverCpuBound);
    assert_eq!(
        v.line,
        "receiver CPU-bound (CPU 0, 50 % user, 45 % system) in 4 of 4 intervals (worker 0 followed over CPUs 0-1)"
    );
}

#[test]
fn steal_on_a_saturated_cpu_is_named_first() {
    // the 2-vCPU VM of the issue: 35-49 % steal, intervals at 95 % busy
    let r = migrating(Role::Receiver, 40.0);
    let s = end(Role::Sender, xeon(), 9, &[(9, 20.0, 0.0, 80.0, 0, 0)]);
    let v = verdict(&test(s, r), Some(BitsPerSecond::from_gbps(5.0)));
    assert_eq!(v.id, VerdictId::CpuSteal);
    assert_eq!(v.end.map(VerdictEnd::word), Some("receiver"));
    assert!(
        v.line.starts_with(
            "receiver's CPU 0 saturated with 40 % of it stolen by the hypervisor (steal)"
        ),
        "{}",
        v.line
    );
    assert!(
        v.also[0].starts_with("receiver CPU-bound (CPU 0"),
        "{:?}",
        v.also
    );
}

#[test]
fn steal_without_saturation_replaces_no_cpu_saturated() {
    let mut s = end(Role::Sender, ryzen(), 3, &[]);
    s.total.cpus = vec![cpu_row(3, 30.0, 10.0, 0.0, 35.0, 25.0)];
    s.intervals = vec![interval(vec![cpu_row(3, 30.0, 10.0, 0.0, 49.0, 11.0)])];
    let v = verdict(&TestObservation::local_only(s, "peer is iperf3"), None);
    assert_eq!(v.id, VerdictId::CpuSteal);
    assert_eq!(
        v.line,
        "the hypervisor took 35 % of sender's CPU 3 (steal; up to 49 % in an interval): a VM's CPU is not all its own"
    );
}

/// A quota's account as an end observes it.
fn quota(periods: u64, throttled: u64) -> wirespeed_model::observation::CpuQuota {
    wirespeed_model::observation::CpuQuota {
        cgroup: "/pods/a".into(),
        quota_us: 50_000,
        period_us: 100_000,
        periods: Some(periods),
        throttled_periods: Some(throttled),
        throttled_s: Some(1.25),
    }
}

#[test]
fn a_cgroup_out_of_its_cpu_quota_is_named_before_the_host_and_the_path() {
    // recorded in a cgroup allowed 0.5 CPU: before this check, `same-host` and "a rate
    // limit on the path" (the quota held the rate flat and the RTT grew 0.12 -> 5.16 ms)
    let (obs, doc) = recorded("loopback-cpu-quota-2cpu.json");
    assert_eq!(doc["verdict_when_recorded"]["id"], "same-host");
    let f = |k: &str| doc[k].as_f64().unwrap();
    let rtt: Vec<u64> = serde_json::from_value(doc["rtt_us"].clone()).unwrap();
    let m = Measured {
        throughput: Some(BitsPerSecond(f("receiver_bps"))),
        interval_bps: serde_json::from_value(doc["interval_bps"].clone()).unwrap(),
        retransmits: doc["retransmits"].as_u64(),
        rtt_us: Some((rtt[0], rtt[1], rtt[2])),
        ..Default::default()
    };
    let v = verdict_of(&obs, &m);
    assert_eq!(v.id, VerdictId::CpuQuota, "{} / {:?}", v.line, v.also);
    assert_eq!(v.end, None);
    assert_eq!(
        v.line,
        "CPU quota: both ends' cgroup /wstest may use 0.5 CPU (50000 µs of every 100000 µs) and ran out of it in 31 of 31 periods (2.30 s held back): the test ran out of CPU time, not of CPUs, which look idle while its threads wait for the next period — raise the cgroup's limit (cpu.max; cpu.cfs_quota_us on cgroup v1) or run outside it"
    );
    assert!(
        v.also[0].starts_with("both ends on one host"),
        "{:?}",
        v.also
    );
    assert!(
        !v.also.iter().any(|a| a.starts_with("path-limited")),
        "a quota is no shaper: {:?}",
        v.also
    );
    // the same run without the quota's counters: what it said before
    let mut plain = obs.clone();
    plain.local.cpu_quota = None;
    plain.remote.as_mut().unwrap().cpu_quota = None;
    let v = verdict_of(&plain, &m);
    // without the quota's counters the flat rate and the queue that grew are all there is:
    // something held the rate over lo (said as such), both ends on one host a fact
    assert_eq!(v.id, VerdictId::PathLimited, "{v:?}");
    assert!(v.line.contains("over lo there is no path"), "{}", v.line);
    assert!(
        v.also.iter().any(|a| a.id == Some(VerdictId::SameHost)),
        "{:?}",
        v.also
    );
}

#[test]
fn a_host_whose_cpus_are_all_full_is_said_so_not_one_cpu() {
    // -P 4 on four CPUs, each worker's CPU at 97-99 %: one line, and the other three
    let mut r = end(
        Role::Receiver,
        ryzen(),
        0,
        &[
            (0, 80.0, 5.0, 1.0, 0, 0),
            (1, 80.0, 5.0, 2.0, 0, 0),
            (2, 80.0, 5.0, 3.0, 0, 0),
            (3, 80.0, 5.0, 3.0, 0, 0),
        ],
    );
    r.total.workers = (0..4)
        .map(|c| WorkerRun {
            worker: c,
            cpu_requested: Some(c),
            cpus_seen: CpuSet::from_cpus([c]),
            streams: vec![c as i32],
            tid: None,
        })
        .collect();
    let v = verdict(&test(idle_sender(), r), Some(BitsPerSecond::from_gbps(9.0)));
    assert_eq!(v.id, VerdictId::ReceiverCpuBound, "{}", v.line);
    assert!(
        v.line.starts_with("receiver CPU-bound (CPU 0, 80 % system")
            && v.line
                .ends_with("; 3 more of the receiver's CPUs saturated too (1-3)"),
        "{}",
        v.line
    );
    // one CPU full: nothing more to say
    let one = receiver_verdict(ryzen(), 6, &[(6, 90.0, 5.0, 2.0, 0, 0)], Some(9.0));
    assert!(!one.line.contains("more of the"), "{}", one.line);
}

#[test]
fn a_flat_rate_over_lo_is_a_limit_only_when_the_workers_sat_idle() {
    // one host over lo, pinned apart, nothing saturated, the rate flat
    let m = Measured {
        throughput: Some(BitsPerSecond::from_gbps(1.0)),
        interval_bps: vec![0.9e9, 1.0e9, 1.0e9, 1.0e9],
        retransmits: Some(0),
        ..Default::default()
    };
    let on_lo = |run: f64| {
        let mut s = end(Role::Sender, ryzen(), 0, &[(0, 40.0, 0.0, 60.0, 0, 0)]);
        let mut r = end(Role::Receiver, ryzen(), 1, &[(1, 40.0, 0.0, 60.0, 0, 0)]);
        for e in [&mut s, &mut r] {
            e.iface = Some("lo".into());
            e.iface_speed_mbps = None;
            e.host = Some("h".into());
        }
        let (sc, rc) = (0, 1);
        let s = with_threads(s, &[(sc, run, 1.0); 4]);
        let r = with_threads(r, &[(rc, run, 1.0); 4]);
        let v = verdict_of(&test(s, r), &m);
        std::iter::once(v.line.clone())
            .chain(v.also.iter().map(|a| a.line.clone()))
            .find(|l| l.starts_with("path-limited"))
    };
    // workers at 3 %: something on lo held the rate (a tbf on lo read `same-host` alone)
    let line = on_lo(3.0).expect("a limit on lo is said");
    assert!(
        line.ends_with("— over lo there is no path: a qdisc on lo (tc qdisc show dev lo) or something pacing the sockets holds the rate"),
        "{line}"
    );
    // workers busy at a flat rate: the CPUs' speed, no limit on a path lo does not have
    assert_eq!(on_lo(80.0), None);
}

#[test]
fn a_flat_rate_between_namespaces_of_one_host_is_a_limit_only_when_the_workers_sat_idle() {
    // two namespaces over a bare veth, pinned apart, nothing saturated (the sender's CPU 85 %
    // busy, BBR pacing), the rate flat and the RTT a few tens of microseconds more
    let m = Measured {
        throughput: Some(BitsPerSecond::from_gbps(35.0)),
        interval_bps: vec![34.0e9, 35.0e9, 35.0e9, 35.0e9],
        retransmits: Some(0),
        rtt_us: Some((30, 40, 130)),
        ..Default::default()
    };
    let over_veth = |run: f64, host_b: &str| {
        let mut s = end(Role::Sender, ryzen(), 0, &[(0, 85.0, 0.0, 15.0, 0, 0)]);
        let mut r = end(Role::Receiver, ryzen(), 1, &[(1, 20.0, 0.0, 80.0, 0, 0)]);
        s.host = Some("h".into());
        r.host = Some(host_b.into());
        for e in [&mut s, &mut r] {
            e.iface = Some("veth0".into());
            e.iface_speed_mbps = None;
        }
        let s = with_threads(s, &[(0, run, 1.0)]);
        let r = with_threads(r, &[(1, run.min(20.0), 1.0)]);
        let v = verdict_of(&test(s, r), &m);
        std::iter::once(v.line.clone())
            .chain(v.also.iter().map(|a| a.line.clone()))
            .find(|l| l.starts_with("path-limited"))
    };
    // busy workers on one host: the CPUs' speed, not a shaper
    assert_eq!(over_veth(85.0, "h"), None);
    // idle workers on one host: something on the veth holds the rate
    let line = over_veth(3.0, "h").expect("a limit on the veth is said");
    assert!(line.ends_with("a rate limit on the path (a shaper, a policer, a slower link)"));
    // two hosts: a flat rate below the link with nothing else is the path, busy or not
    assert!(over_veth(85.0, "other").is_some());
}

#[test]
fn a_quota_binds_only_when_it_held_the_end_back() {
    let on_two_hosts = |sq: Option<_>, rq: Option<_>| {
        let mut s = end(Role::Sender, ryzen(), 3, &[(3, 40.0, 0.0, 60.0, 0, 0)]);
        let mut r = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
        s.cpu_quota = sq;
        r.cpu_quota = rq;
        verdict(&test(s, r), Some(BitsPerSecond::from_gbps(4.0)))
    };
    // the sender's cgroup throttled in 27 of 31 periods: named, and its end; the receiver's
    // limit, never reached, is not
    let v = on_two_hosts(Some(quota(31, 27)), Some(quota(31, 0)));
    assert_eq!(v.id, VerdictId::CpuQuota, "{}", v.line);
    assert_eq!(v.end, Some(VerdictEnd::Sender));
    assert!(
        v.line
            .starts_with("CPU quota: the sender's cgroup /pods/a may use 0.5 CPU (50000 µs of every 100000 µs) and ran out of it in 27 of 31 periods (1.25 s held back)"),
        "{}",
        v.line
    );
    assert!(
        !v.also.iter().any(|a| a.starts_with("CPU quota")),
        "{:?}",
        v.also
    );
    // both throttled on two hosts: each end its line, the more throttled first
    let v = on_two_hosts(Some(quota(31, 10)), Some(quota(31, 30)));
    assert_eq!(v.end, Some(VerdictEnd::Receiver));
    assert!(
        v.also[0].starts_with("CPU quota: the sender's"),
        "{:?}",
        v.also
    );
    // under the thresholds: a fifth of the periods, and five of them
    for q in [quota(31, 6), quota(4, 4), quota(0, 0)] {
        let v = on_two_hosts(Some(q.clone()), None);
        assert_ne!(v.id, VerdictId::CpuQuota, "{q:?}: {}", v.line);
    }
    assert_eq!(
        on_two_hosts(Some(quota(30, 6)), None).id,
        VerdictId::CpuQuota
    );
    // a peer's account that makes no sense is not believed: no period, no counters;
    // more throttled periods than periods counts as all of them
    let mut no_period = quota(31, 31);
    no_period.period_us = 0;
    let mut no_quota = quota(31, 31);
    no_quota.quota_us = 0;
    let mut unread = quota(31, 31);
    (unread.periods, unread.throttled_periods, unread.throttled_s) = (None, None, None);
    for q in [no_period, no_quota, unread] {
        assert_ne!(on_two_hosts(Some(q), None).id, VerdictId::CpuQuota);
    }
    let v = on_two_hosts(Some(quota(31, 9_999)), None);
    assert!(
        v.line.contains("ran out of it in 31 of 31 periods"),
        "{}",
        v.line
    );
    assert_eq!(v.id, VerdictId::CpuQuota);
}

#[test]
fn bidir_same_host_names_each_end_once() {
    let (mut obs, _) = recorded("loopback-unpinned-2cpu.json");
    obs.local.role = Role::Both;
    if let Some(r) = obs.remote.as_mut() {
        r.role = Role::Both;
    }
    let v = verdict(&obs, None);
    assert_eq!(v.id, VerdictId::SameHost);
    assert!(
        v.line.contains(
            "(this end (sending and receiving) on CPUs 0-1, unpinned; the peer (sending and \
             receiving) on CPUs 0-1, unpinned)"
        ),
        "{}",
        v.line
    );
}

fn recorded(name: &str) -> (TestObservation, serde_json::Value) {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let obs = serde_json::from_value(doc["observation"].clone()).unwrap();
    (obs, doc)
}

#[test]
fn recorded_unpinned_loopback_is_same_host() {
    let (obs, doc) = recorded("loopback-unpinned-2cpu.json");
    // when recorded the verdict blamed the receiver's CPU sharing with softirq
    assert_eq!(
        doc["verdict_when_recorded"]["id"],
        "receiver-shares-cpu-with-softirq"
    );
    let bps = doc["receiver_bps"].as_f64().map(BitsPerSecond);
    let v = verdict(&obs, bps);
    assert_eq!(v.id, VerdictId::SameHost);
    assert_eq!(
        v.line,
        "both ends on one host (vm, over lo): they compete for the same CPUs (sender on CPUs 0-1, unpinned; receiver on CPUs 0-1, unpinned); this measures the host, not a path"
    );
    // the CPU findings stay, under it
    assert!(
        v.also.iter().any(|l| l.contains("CPU-bound")),
        "{:?}",
        v.also
    );
}

#[test]
fn a_virtual_link_s_nominal_speed_is_never_line_rate() {
    // two namespaces over veth (10000 Mbit/s nominal), recorded; at 9.8 Gbit/s the old
    // verdict said line-rate
    let (mut obs, _) = recorded("veth-lab-unpinned-2cpu.json");
    assert_eq!(obs.local.iface_speed_mbps, Some(10_000));
    // the recorded run predates the typed link kind: the observer types it now
    for e in [&mut obs.local, obs.remote.as_mut().unwrap()] {
        e.iface_link = Some(LinkKind::Virtual);
    }
    assert!(is_virtual(&obs.local));
    let v = verdict(&obs, Some(BitsPerSecond::from_gbps(9.8)));
    assert_ne!(v.id, VerdictId::LineRate);
    assert!(
        !v.also.iter().any(|l| l.contains("line rate")),
        "{:?}",
        v.also
    );
    // both namespaces are one host: same host name and topology, workers unpinned
    assert!(
        std::iter::once(v.id)
            .chain(v.also.iter().filter_map(|a| a.id))
            .any(|id| id == VerdictId::SameHost),
        "{v:?}"
    );
    // a peer's words are never read for logic: the note alone makes no link virtual
    let mut worded = obs.clone();
    for e in [&mut worded.local, worded.remote.as_mut().unwrap()] {
        e.iface_link = Some(LinkKind::Nic);
        e.iface = Some("eth1".into());
    }
    assert!(worded.local.notes.iter().any(|n| n.contains("virtual")));
    assert!(!is_virtual(&worded.local));
    // the same figures on a real 10G NIC are line rate
    for e in [&mut obs.local, obs.remote.as_mut().unwrap()] {
        e.notes.clear();
        e.iface_link = Some(LinkKind::Nic);
        e.iface = Some("eth1".into());
    }
    let v = verdict(&obs, Some(BitsPerSecond::from_gbps(9.8)));
    assert_eq!(v.id, VerdictId::LineRate);
}

#[test]
fn same_host_pinned_apart_is_only_the_fallback() {
    let (mut obs, _) = recorded("loopback-unpinned-2cpu.json");
    for (e, cpu) in [(&mut obs.local, 0), (obs.remote.as_mut().unwrap(), 1)] {
        e.total.workers = vec![WorkerRun {
            worker: 0,
            cpu_requested: Some(cpu),
            cpus_seen: CpuSet::from_cpus([cpu]),
            streams: vec![5],
            tid: None,
        }];
        e.total.cpus = vec![cpu_row(cpu, 30.0, 20.0, 0.0, 0.0, 50.0)];
        e.total.tcp = None;
        e.intervals.clear();
    }
    let v = verdict(&obs, None);
    // both ends on one host, pinned apart and nothing saturated: a fact, not the headline
    assert_eq!(v.id, VerdictId::NoCpuSaturated, "{v:?}");
    assert!(
        v.line.contains("both ends on one host and no limit found"),
        "{}",
        v.line
    );
    let same = v
        .also
        .iter()
        .find(|a| a.id == Some(VerdictId::SameHost))
        .expect("same-host under also");
    assert_eq!(same.standing.bound, Some(Bound::Fact));
    assert!(same.line.starts_with("both ends on one host (vm, over lo, sender on CPU 0; receiver on CPU 1): the figure is this host's"), "{}", same.line);
    let mut r = end(Role::Receiver, ryzen(), 6, &[(6, 99.0, 0.0, 1.0, 0, 0)]);
    r.host = Some("vm".into());
    r.iface = Some("lo".into());
    let s = end(Role::Sender, ryzen(), 3, &[(3, 60.0, 5.0, 30.0, 0, 0)]);
    let v = verdict(&test(s, r), None);
    assert_eq!(v.id, VerdictId::ReceiverCpuBound, "{v:?}");
    assert!(
        v.also.last().unwrap().starts_with("both ends on one host"),
        "{:?}",
        v.also
    );
}

#[test]
fn a_shaper_between_unpinned_ends_of_one_host_leads_over_same_host() {
    // two namespaces of one host, both ends unpinned, a 200 Mbit/s tbf between them: the
    // rate is flat, nothing saturated
    let unpinned = |role| {
        let mut e = end(role, ryzen(), 6, &[(6, 10.0, 2.0, 88.0, 0, 0)]);
        e.host = Some("vm".into());
        e.iface = Some("ws0".into());
        e.iface_speed_mbps = Some(10_000);
        e.notes = vec!["(virtual interface)".into()];
        e.total.workers[0].cpu_requested = None;
        // its worker mostly blocked on the socket, as behind a 200 Mbit/s shaper
        with_threads(e, &[(6, 5.0, 0.5)])
    };
    let m = Measured {
        throughput: Some(BitsPerSecond(191e6)),
        interval_bps: vec![150e6, 191e6, 191.5e6, 190.8e6],
        retransmits: Some(0),
        ..Default::default()
    };
    let t = test(unpinned(Role::Sender), unpinned(Role::Receiver));
    let v = verdict_of(&t, &m);
    // the limit that bound leads; both ends on one host is a fact (no CPU saturated)
    assert_eq!(v.id, VerdictId::PathLimited, "{} / {:?}", v.line, v.also);
    assert!(v.line.starts_with("path-limited: 191"), "{}", v.line);
    let same = v
        .also
        .iter()
        .find(|a| a.id == Some(VerdictId::SameHost))
        .expect("same-host under also");
    assert_eq!(same.standing.bound, Some(Bound::Fact));
    // over lo there is no path: the limit is said as one on lo itself
    let mut lo = t.clone();
    for e in [&mut lo.local, lo.remote.as_mut().unwrap()] {
        e.iface = Some("lo".into());
    }
    let v = verdict_of(&lo, &m);
    assert_eq!(v.id, VerdictId::PathLimited, "{v:?}");
    assert!(
        v.line.ends_with("— over lo there is no path: a qdisc on lo (tc qdisc show dev lo) or something pacing the sockets holds the rate"),
        "{}",
        v.line
    );
    // with no worker threads observed (how busy they were unknown), nothing is said of a
    // path between two ends of one host
    let mut blind = t.clone();
    for e in [&mut blind.local, blind.remote.as_mut().unwrap()] {
        e.intervals.iter_mut().for_each(|i| i.threads.clear());
        e.total.threads.clear();
    }
    let v = verdict_of(&blind, &m);
    assert!(
        v.id != VerdictId::PathLimited && !v.also.iter().any(|a| a.starts_with("path-limited")),
        "{v:?}"
    );
}

#[test]
fn rtt_growth_beside_a_full_cpu_is_no_shapers_queue() {
    // a flat rate, no retransmits, the RTT grown 0.24 -> 1.26 ms: a queue — unless a CPU the
    // test needed was full, whose backlog grows the RTT at the host (a 16-CPU loopback run
    // at -P 32 read exactly this, every CPU busy, and was told "a rate limit on the path")
    let m = Measured {
        throughput: Some(BitsPerSecond(28.17e9)),
        interval_bps: vec![25.0e9, 28.1e9, 28.25e9],
        retransmits: Some(0),
        rtt_us: Some((240, 600, 1260)),
        ..Default::default()
    };
    let shaped = |v: &Verdict| {
        std::iter::once(&v.line)
            .chain(v.also.iter().map(|a| &a.line))
            .any(|l| l.starts_with("path-limited"))
    };
    let full = end(Role::Receiver, ryzen(), 6, &[(6, 99.0, 0.0, 1.0, 0, 0)]);
    let v = verdict_of(&test(idle_sender(), full), &m);
    assert!(!shaped(&v), "{} / {:?}", v.line, v.also);
    assert_eq!(
        v.id,
        VerdictId::ReceiverCpuBound,
        "{} / {:?}",
        v.line,
        v.also
    );
    // the same reading with the CPUs to spare is a queue on the path
    let spare = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let v = verdict_of(&test(idle_sender(), spare), &m);
    assert!(shaped(&v), "{} / {:?}", v.line, v.also);
}

fn udp(lost: u64) -> Measured {
    Measured {
        throughput: Some(BitsPerSecond::from_gbps(3.0)),
        udp: true,
        udp_lost: Some((lost, 1_000_000)),
        ..Default::default()
    }
}

#[test]
fn sequence_numbers_past_what_the_sender_sent_are_not_the_paths_loss() {
    // 4 forged datagrams with sequence 2^32 - 1 after a real test of 1000 datagrams
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 40.0, 0.0, 60.0, 0, 0)]);
    let forged = Measured {
        udp_lost: Some((4_294_966_295, 4_294_967_295)),
        udp_sent: Some(1000),
        ..udp(0)
    };
    let v = verdict_of(&test(idle_sender(), r.clone()), &forged);
    assert_eq!(v.id, VerdictId::UdpForeignDatagrams);
    assert!(
        v.line
            .contains("up to 4294967295, but the sender sent 1000"),
        "{}",
        v.line
    );
    // a real loss with the sender's count known is still the path's
    let real = Measured {
        udp_sent: Some(1_000_000),
        ..udp(250_000)
    };
    assert_eq!(
        verdict_of(&test(idle_sender(), r), &real).id,
        VerdictId::UdpPathLoss
    );
}

#[test]
fn udp_loss_is_explained_by_the_receiver_or_the_path() {
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 99.0, 0.0, 1.0, 0, 0)]);
    let v = verdict_of(&test(idle_sender(), r), &udp(250_000));
    assert_eq!(v.id, VerdictId::UdpReceiverCpuBound);
    assert_eq!(
        v.line,
        "UDP lost 25 % of the datagrams because the receiver could not keep up: receiver CPU-bound (CPU 6, 99 % system)"
    );
    // the CPU line it quotes is not said again under `also`
    assert!(
        !v.also.iter().any(|a| v.line.contains(a.as_str())),
        "{:?}",
        v.also
    );
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 40.0, 0.0, 60.0, 0, 0)]);
    let v = verdict_of(&test(idle_sender(), r.clone()), &udp(250_000));
    assert_eq!(v.id, VerdictId::UdpPathLoss);
    assert!(
        v.line.starts_with(
            "UDP lost 25 % of the datagrams (250000 of 1000000) with no receiver CPU saturated"
        ),
        "{}",
        v.line
    );
    // below 1 %: nothing to explain
    let v = verdict_of(&test(idle_sender(), r), &udp(5_000));
    assert_eq!(v.id, VerdictId::NoCpuSaturated);
}

#[test]
fn loss_limited_tcp_names_its_mathis_ceiling() {
    let quiet = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    // ESnet's example: 1 loss in 22,000 at 90 ms, MSS 8948: ceiling ~144 Mbit/s
    let segments = 22_000_000u64;
    let m = Measured {
        throughput: Some(BitsPerSecond(140e6)),
        retransmits: Some(1000),
        bytes_sent: Some(segments * 8948),
        mss: Some(8948),
        rtt_us: Some((90_000, 90_000, 91_000)),
        ..Default::default()
    };
    let v = verdict_of(&test(idle_sender(), quiet.clone()), &m);
    assert_eq!(v.id, VerdictId::LossLimited);
    assert!(v.line.contains("allows about 143.9 Mbit/s"), "{}", v.line);
    assert!(v.line.contains("1000 segments"), "{}", v.line);
    // far above the ceiling, the loss does not explain the figure
    let fast = Measured {
        throughput: Some(BitsPerSecond(2e9)),
        ..m.clone()
    };
    assert_ne!(
        verdict_of(&test(idle_sender(), quiet.clone()), &fast).id,
        VerdictId::LossLimited
    );
    // far below it, something else held the rate lower
    let slow = Measured {
        throughput: Some(BitsPerSecond(10e6)),
        ..m.clone()
    };
    assert_ne!(
        verdict_of(&test(idle_sender(), quiet), &slow).id,
        VerdictId::LossLimited
    );
    // the model's ceiling beside the measurement, as the client prints it
    let c = ceiling(&m).expect("retransmits, RTT and MSS are known");
    assert_eq!((c.mss, c.retransmits, c.rtt_ms), (8948, 1000, 90.0));
    assert!((c.mathis_bps / 1e6 - 143.9).abs() < 0.1, "{}", c.mathis_bps);
    assert_eq!(c.measured_bps, Some(140e6));
    assert_eq!(
        wirespeed_report::where_ran::ceiling_line(&c),
        "Path model: 0.00 % loss (1000 retransmits) at 90.00 ms RTT, MSS 8948: Mathis ceiling 143.9 Mbit/s for loss-based TCP (measured 140.0 Mbit/s)"
    );
    // without RTT there is no ceiling
    assert_eq!(
        Measured {
            rtt_us: None,
            ..m.clone()
        }
        .tcp_loss(),
        Some(1000.0 / 22_000_000.0)
    );
    assert!(ceiling(&Measured { rtt_us: None, ..m }).is_none());
}

#[test]
fn a_reverse_clients_loss_model_reads_the_senders_rtt_and_mss_from_its_observation() {
    // -R: the client receives; iperf3's results gave its report the server's retransmits
    // but RTTs of 0 and no MSS. The server's observation carries its own TCP_INFO.
    let mut sender = idle_sender();
    sender.total.tcp = Some(TcpLimits {
        busy_us: 4_000_000,
        mss: Some(8948),
        srtt_us: Some(90_000),
        ..Default::default()
    });
    let receiver = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let m = Measured {
        throughput: Some(BitsPerSecond(140e6)),
        retransmits: Some(1000),
        bytes_sent: Some(22_000_000 * 8948),
        rtt_us: Some((0, 0, 0)),
        congestion: Some("cubic".into()),
        ..Default::default()
    };
    let reverse = TestObservation {
        local: receiver.clone(),
        remote: Some(sender.clone()),
        remote_absent: None,
    };
    let v = verdict_of(&reverse, &m);
    assert_eq!(v.id, VerdictId::LossLimited, "{} / {:?}", v.line, v.also);
    assert!(v.line.contains("at 90.00 ms RTT"), "{}", v.line);
    assert!(v.line.contains("MSS 8948"), "{}", v.line);
    let c = ceiling_for(&reverse, &m).expect("the sender's RTT and MSS are known");
    assert_eq!((c.mss, c.rtt_ms), (8948, 90.0));
    // the sender's report's samples, where it sent them, before its last smoothed RTT
    let mut sampled = reverse.clone();
    if let Some(t) = sampled.remote.as_mut().and_then(|r| r.total.tcp.as_mut()) {
        t.rtt_us = Some((88_000, 90_000, 95_000));
    }
    assert_eq!(
        with_sender_tcp(&sampled, &m).rtt_us,
        Some((88_000, 90_000, 95_000))
    );
    // the report's own RTT and MSS, where it has them, stand
    let own = Measured {
        rtt_us: Some((45_000, 45_000, 46_000)),
        mss: Some(1448),
        ..m.clone()
    };
    assert_eq!(with_sender_tcp(&reverse, &own).rtt_us, own.rtt_us);
    assert_eq!(with_sender_tcp(&reverse, &own).mss, Some(1448));
    // without the sender's observation there is nothing to judge loss by
    let alone = TestObservation {
        local: receiver,
        remote: None,
        remote_absent: Some("the peer is iperf3".into()),
    };
    let v = verdict_of(&alone, &m);
    assert!(
        v.id != VerdictId::LossLimited && !v.also.iter().any(|a| a.contains("loss")),
        "{} / {:?}",
        v.line,
        v.also
    );
}

/// `Measured` from a recorded file's report fields.
fn measured_of(doc: &serde_json::Value) -> Measured {
    let u = |k: &str| doc[k].as_u64();
    let rtt: Vec<u64> = doc["rtt_us"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
        .unwrap_or_default();
    Measured {
        throughput: doc["receiver_bps"].as_f64().map(BitsPerSecond),
        interval_bps: doc["interval_bps"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .unwrap_or_default(),
        retransmits: u("retransmits"),
        bytes_sent: u("bytes_sent"),
        mss: u("mss").map(|m| m as u32),
        rtt_us: (rtt.len() == 3).then(|| (rtt[0], rtt[1], rtt[2])),
        ..Default::default()
    }
}

#[test]
fn recorded_half_percent_loss_in_the_lab_is_loss_limited() {
    let (obs, doc) = recorded("lab-loss-half-percent-2cpu.json");
    let m = measured_of(&doc);
    // the retransmits overstate the loss the lab's nftables counters saw (814 of 162167)
    let p = m.tcp_loss().unwrap();
    assert!(p > 0.005 * 2.0 && p < 0.005 * 3.0, "{p}");
    let v = verdict_of(&obs, &m);
    assert_eq!(v.id, VerdictId::LossLimited, "{v:?}");
    // 307 Mbit/s against 149.6: 2.1x, within the factor 3 (the retransmits overstate the
    // drops 2.6x); the Path model line goes with it
    assert!(ceiling_for(&obs, &m).is_some());
    assert!(
        v.line.starts_with("loss-limited: 1.3 % retransmitted (2081 segments) at 0.83 ms RTT allows about 149.6 Mbit/s"),
        "{}",
        v.line
    );
    // with the throughput alone (what the engine passes today) it was a CPU verdict
    assert_eq!(
        verdict(&obs, m.throughput).id.as_str(),
        doc["verdict_when_recorded"]["id"]
    );
}

fn with_threads(mut e: EndObservation, per_interval: &[(u32, f64, f64)]) -> EndObservation {
    use wirespeed_model::observation::ThreadUse;
    e.intervals = per_interval
        .iter()
        .map(|&(cpu, run, wait)| IntervalObservation {
            cpus: e.total.cpus.clone(),
            threads: vec![ThreadUse {
                tid: 42,
                name: format!("ws-dp-cpu{cpu}"),
                cpu: Some(cpu),
                run: Percent::new(run),
                wait: Percent::new(wait),
                role: None,
            }],
            ..Default::default()
        })
        .collect();
    e
}

#[test]
fn a_stalled_control_connection_is_an_mtu_blackhole() {
    let quiet = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let m = Measured {
        control_stall: Some(wirespeed_model::ControlStall {
            seconds: 4.1,
            unacked: 1,
            retransmits: 5,
            mss: 8948,
            pmtu: 9000,
        }),
        ..Default::default()
    };
    let v = verdict_of(&test(idle_sender(), quiet), &m);
    assert_eq!(v.id, VerdictId::MtuBlackhole);
    let e = v.evidence.clone().unwrap();
    assert_eq!(e.counters.len(), 1);
    assert!(e.counters[0].contains("tcpi_snd_mss"), "{e:?}");
    assert!(
        v.line.starts_with("MTU black hole: the control connection's results message (1 un-acked segment(s) of MSS 8948, path MTU 9000) got no acknowledgement in 4.1 s and 5 retransmits"),
        "{}",
        v.line
    );
}

/// The client of the issue's black hole toward the client (MTU-9000 ends, a 1500 link
/// between whose router's ICMP never reaches the server), as it recorded it: data flowed
/// (3.77 GBytes sent), its own results acknowledged, the server's never came in 8 s; the
/// server's MSS 8948 at connect, the client's path MTU 1500 at the end.
fn silent_server(peer_mss: Option<u32>, pmtu: Option<u32>) -> Measured {
    Measured {
        peer_silent: Some(PeerSilent {
            peer: End::Server,
            phase: SilentPhase::Results,
            seconds: 8.0,
            bytes_sent: 4_048_551_936,
            bytes_received: 0,
            peer_mss,
            pmtu,
            own_acked: true,
        }),
        ..Default::default()
    }
}

#[test]
fn a_silent_server_whose_segments_exceed_the_path_mtu_is_an_mtu_blackhole_toward_the_client() {
    let quiet = end(Role::Sender, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let v = verdict_of(
        &TestObservation::local_only(quiet.clone(), "its results never arrived"),
        &silent_server(Some(8948), Some(1500)),
    );
    assert_eq!(v.id, VerdictId::MtuBlackhole);
    for want in [
        "MTU black hole toward the client: the server's results message never came in 8.0 s",
        "3.77 GBytes sent",
        "the client's own results acknowledged",
        "8988-byte frames (MSS 8948)",
        "carries 1500",
        "`ip link` MTU on the server's side",
        "net.ipv4.tcp_mtu_probing=1 on the server",
    ] {
        assert!(v.line.contains(want), "{want}: {}", v.line);
    }
    // the same silence with segments that fit the path (MSS 1448 + 40 = 1488 ≤ 1500), or
    // without a known MSS or path MTU, is not called a black hole: only named
    for (mss, pmtu) in [
        (Some(1448), Some(1500)),
        (None, Some(1500)),
        (Some(8948), None),
    ] {
        let v = verdict_of(
            &TestObservation::local_only(quiet.clone(), "its results never arrived"),
            &silent_server(mss, pmtu),
        );
        assert_eq!(v.id, VerdictId::PeerSilent, "{mss:?} {pmtu:?}: {v:?}");
        assert!(
            v.line
                .starts_with("the server went silent: its results message never came in 8.0 s"),
            "{}",
            v.line
        );
    }
    // a silent client in the data phase, as the server would see it
    let mut m = silent_server(Some(8948), Some(1500));
    if let Some(s) = m.peer_silent.as_mut() {
        s.peer = End::Client;
        s.phase = SilentPhase::Data;
    }
    let v = verdict_of(&TestObservation::local_only(quiet, "absent"), &m);
    assert!(
        v.line
            .starts_with("MTU black hole toward the server: the client's data stopped for 8.0 s"),
        "{}",
        v.line
    );
}

/// A receiver on CPU 6, busy 99 %, whose worker ran 20–22 % and waited 58–60 % for the CPU:
/// another process held it (`cpu-contended`).
fn contended_receiver() -> EndObservation {
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 20.0, 0.0, 1.0, 0, 0)]);
    with_threads(r, &[(6, 20.0, 60.0), (6, 22.0, 58.0)])
}

#[test]
fn each_verdict_carries_its_evidence_and_how_many_intervals_agreed() {
    use wirespeed_model::{Agreement, Confidence};
    // contention in both intervals: clear
    let r = contended_receiver();
    let v = verdict(&test(idle_sender(), r), Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::CpuContended);
    let e = v.evidence.expect("every verdict carries its evidence");
    assert_eq!(e.intervals, Some(Agreement { agreed: 2, of: 2 }));
    assert_eq!(e.confidence, Confidence::Clear);
    assert!(e.counters.iter().any(|c| c.contains("schedstat")), "{e:?}");
    // the wait in one interval of four: marginal
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 20.0, 0.0, 1.0, 0, 0)]);
    let r = with_threads(
        r,
        &[
            (6, 20.0, 60.0),
            (6, 22.0, 2.0),
            (6, 22.0, 3.0),
            (6, 22.0, 1.0),
        ],
    );
    let v = verdict(&test(idle_sender(), r), Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::CpuContended, "{v:?}");
    let e = v.evidence.unwrap();
    assert_eq!(e.intervals, Some(Agreement { agreed: 1, of: 4 }));
    assert_eq!(e.confidence, Confidence::Marginal);
    // a CPU verdict counts the intervals a CPU of the named end was saturated in
    let s = end(Role::Sender, ryzen(), 3, &[(3, 99.0, 0.0, 1.0, 0, 0)]);
    let s = with_threads(s, &[(3, 99.0, 0.0), (3, 99.0, 0.0), (3, 99.0, 0.0)]);
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 70.0, 0.0, 30.0, 0, 0)]);
    let v = verdict(&test(s, r), Some(BitsPerSecond::from_gbps(40.0)));
    assert_eq!(v.id, VerdictId::SenderCpuBound);
    let e = v.evidence.unwrap();
    assert_eq!(
        (e.intervals, e.confidence),
        (Some(Agreement { agreed: 3, of: 3 }), Confidence::Clear)
    );
    // a check on whole-test counters says so
    let m = silent_server(Some(8948), Some(1500));
    let quiet = end(Role::Sender, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let v = verdict_of(&TestObservation::local_only(quiet, "absent"), &m);
    let e = v.evidence.clone().unwrap();
    assert_eq!((e.intervals, e.confidence), (None, Confidence::WholeTest));
    assert!(e.counters[1].contains("tcpi_pmtu"), "{e:?}");
    assert_eq!(
        wirespeed_report::where_ran::evidence_line(&e),
        "evidence: whole-test counters (no per-interval reading); read: the peer's message never arriving (the wait), the control connection's TCP_INFO (tcpi_pmtu, tcpi_unacked), the peer's MSS at connect, bytes sent and received before the silence"
    );
    // the verdict's JSON carries it under `evidence`
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["evidence"]["confidence"], "whole-test");
}

#[test]
fn a_worker_waiting_for_its_cpu_is_contended() {
    // CPU 6 saturated, but the receiver's worker ran 20 % and waited 60 %: someone else ran
    let r = contended_receiver();
    let v = verdict(&test(idle_sender(), r), Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::CpuContended);
    assert_eq!(v.end.map(VerdictEnd::word), Some("receiver"));
    assert!(
        v.line
            .contains("waited 59 % of the test for its CPU and ran 21 %"),
        "{}",
        v.line
    );
    assert!(
        v.also.iter().any(|a| a.contains("CPU-bound")),
        "{:?}",
        v.also
    );
    // a worker that ran more than the other tasks took is not contended: the CPU verdict
    // stands
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 99.0, 0.0, 1.0, 0, 0)]);
    let r = with_threads(r, &[(6, 70.0, 28.0), (6, 72.0, 26.0)]);
    let v = verdict(&test(idle_sender(), r), Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::ReceiverCpuBound);
}

#[test]
fn the_other_end_on_one_host_is_not_another_process() {
    // CPU 6 full; the receiver's worker ran 21 % and waited 59 % there, and the sender's
    // worker ran 70 % on the same CPU in the same intervals
    let pair = |iface: &str| {
        let mut r = contended_receiver();
        let s = end(Role::Sender, ryzen(), 6, &[(6, 20.0, 0.0, 1.0, 0, 0)]);
        let mut s = with_threads(s, &[(6, 70.0, 25.0), (6, 70.0, 25.0)]);
        for e in [&mut r, &mut s] {
            e.iface = Some(iface.into());
        }
        test(s, r)
    };
    // on one host (lo) that is the test's own other end — same-host's "they compete for
    // the same CPUs" — not another process (the 16-CPU loopback run at -P 16 said
    // "another process runs there" of its own peer)
    let v = verdict(&pair("lo"), Some(BitsPerSecond::from_gbps(1.0)));
    assert_ne!(v.id, VerdictId::CpuContended, "{} / {:?}", v.line, v.also);
    assert!(
        !v.also.iter().any(|a| a.starts_with("CPU contended")),
        "{:?}",
        v.also
    );
    assert!(
        std::iter::once(&v.line)
            .chain(v.also.iter().map(|a| &a.line))
            .any(|l| l.starts_with("both ends on one host")),
        "{} / {:?}",
        v.line,
        v.also
    );
    // on two hosts the same figures are another task on the receiver's CPU
    let v = verdict(&pair("eth1"), Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::CpuContended, "{} / {:?}", v.line, v.also);
    assert_eq!(v.end.map(VerdictEnd::word), Some("receiver"));
}

/// A worker thread's scheduling in one interval.
fn worker(tid: u32, cpu: u32, run: f64, wait: f64) -> wirespeed_model::observation::ThreadUse {
    worker_of(tid, cpu, run, wait, None)
}

/// [`worker`] whose streams carried data the way `role` says (`None`: not told).
fn worker_of(
    tid: u32,
    cpu: u32,
    run: f64,
    wait: f64,
    role: Option<Role>,
) -> wirespeed_model::observation::ThreadUse {
    wirespeed_model::observation::ThreadUse {
        tid,
        name: "ws-dp".into(),
        cpu: Some(cpu),
        run: Percent::new(run),
        wait: Percent::new(wait),
        role,
    }
}

/// A `--bidir` verdict's own findings under `also` (the other direction's lines carry theirs).
fn own_findings(v: &Verdict) -> Vec<&str> {
    v.also
        .iter()
        .filter(|a| a.direction.is_none() && a.id.is_some())
        .map(|a| a.line.as_str())
        .collect()
}

/// An unpinned end over `lo` on a host whose CPUs 0 and 1 are both 99 % busy, with these
/// workers in each interval.
fn lo_end_on_two_full_cpus(
    role: Role,
    per_interval: Vec<Vec<wirespeed_model::observation::ThreadUse>>,
) -> EndObservation {
    let mut e = end(
        role,
        ryzen(),
        1,
        &[(0, 99.0, 0.0, 1.0, 0, 0), (1, 99.0, 0.0, 1.0, 0, 0)],
    );
    e.iface = Some("lo".into());
    e.total.workers[0].cpu_requested = None;
    e.intervals = per_interval
        .into_iter()
        .map(|threads| IntervalObservation {
            cpus: e.total.cpus.clone(),
            threads,
            ..Default::default()
        })
        .collect();
    e
}

#[test]
fn a_worker_that_moved_is_not_another_task() {
    use wirespeed_model::observation::ThreadUse;
    // one host, unpinned, both CPUs full; the receiver's worker ended the intervals on
    // CPU 1 (ran 45 %, waited 40 %), both sender workers on CPU 0 — one of them had run
    // on CPU 1 before it moved. CPU 1 by itself shows 54 % "other tasks", the host 3 %:
    // it was the test's own work (a 16-CPU loopback run at -P 32 named such a CPU
    // "another process" at 25.7 %)
    let with = |role, threads: Vec<ThreadUse>, other_task: f64| {
        // a real other task takes `other_task` % of the host from the workers on CPU 0
        let threads: Vec<ThreadUse> = threads
            .into_iter()
            .map(|mut t| {
                if t.cpu == Some(0) {
                    t.run = Percent::new(t.run.get() - other_task / 2.0);
                }
                t
            })
            .collect();
        lo_end_on_two_full_cpus(role, vec![threads; 3])
    };
    let pair = |other_task| {
        let r = with(Role::Receiver, vec![worker(1, 1, 45.0, 40.0)], 0.0);
        let s = with(
            Role::Sender,
            vec![worker(2, 0, 90.0, 5.0), worker(3, 0, 60.0, 30.0)],
            other_task,
        );
        test(s, r)
    };
    let said = |v: &Verdict| {
        std::iter::once(&v.line)
            .chain(v.also.iter().map(|a| &a.line))
            .any(|l| l.starts_with("CPU contended: the receiver's"))
    };
    let v = verdict(&pair(0.0), Some(BitsPerSecond::from_gbps(30.0)));
    assert!(!said(&v), "{} / {:?}", v.line, v.also);
    // the same host with another task that really took 50 % of a CPU: named
    let v = verdict(&pair(50.0), Some(BitsPerSecond::from_gbps(30.0)));
    assert!(said(&v), "{} / {:?}", v.line, v.also);
}

#[test]
fn an_interval_without_the_peers_workers_is_left_out() {
    use wirespeed_model::observation::ThreadUse;
    // one host, both CPUs full; the sender's workers were read in the first interval and
    // not in the last (they had ended before its reading, as a 16-CPU -P 32 run's client
    // recorded): there CPU 1 would show the sender's whole run as other tasks (54 %)
    let r = lo_end_on_two_full_cpus(
        Role::Receiver,
        vec![
            vec![worker(1, 1, 45.0, 40.0)],
            vec![worker(1, 1, 45.0, 40.0)],
        ],
    );
    let sender = |last: Vec<ThreadUse>| {
        lo_end_on_two_full_cpus(
            Role::Sender,
            vec![
                vec![worker(2, 0, 90.0, 5.0), worker(3, 0, 60.0, 30.0)],
                last,
            ],
        )
    };
    let said = |v: &Verdict| {
        std::iter::once(&v.line)
            .chain(v.also.iter().map(|a| &a.line))
            .any(|l| l.starts_with("CPU contended: the receiver's"))
    };
    let v = verdict(
        &test(sender(vec![]), r.clone()),
        Some(BitsPerSecond::from_gbps(30.0)),
    );
    assert!(!said(&v), "{} / {:?}", v.line, v.also);
    // read in both intervals, with a real other task that took 50 % of the host in the
    // second: named
    let v = verdict(
        &test(
            sender(vec![worker(2, 0, 65.0, 5.0), worker(3, 0, 35.0, 30.0)]),
            r.clone(),
        ),
        Some(BitsPerSecond::from_gbps(30.0)),
    );
    assert!(said(&v), "{} / {:?}", v.line, v.also);
}

#[test]
fn a_busy_loop_beside_a_loopback_sender_is_named_when_its_run_holds_softirq() {
    use wirespeed_model::observation::ThreadUse;
    // the verdict matrix's busy loop on the sender's CPU 0, as a 2-CPU kernel without
    // CONFIG_IRQ_TIME_ACCOUNTING reports it: CPU 0 55.7 % user (the loop), 20 % system,
    // 24 % softirq — the loopback receive the sender ran in its own context, so its run
    // (44 %) holds that softirq too; CPU 1 the receiver, 50 % system, 20 % softirq, run 70 %
    let cpu = |cpu, user: f64, sys, sirq| CpuUse {
        cpu,
        user: Percent::new(user),
        system: Percent::new(sys),
        softirq: Percent::new(sirq),
        idle: Percent::new(100.0 - user - sys - sirq),
        ..Default::default()
    };
    let cpus = vec![cpu(0, 55.7, 20.0, 24.0), cpu(1, 0.0, 50.0, 20.0)];
    let with = |role, app, run, wait| {
        let mut e = end(role, ryzen(), app, &[]);
        e.iface = Some("lo".into());
        e.total.cpus = cpus.clone();
        e.intervals = (0..4)
            .map(|_| IntervalObservation {
                cpus: cpus.clone(),
                threads: vec![ThreadUse {
                    tid: 10 + app,
                    name: format!("ws-dp-cpu{app}"),
                    cpu: Some(app),
                    run: Percent::new(run),
                    wait: Percent::new(wait),
                    role: None,
                }],
                ..Default::default()
            })
            .collect();
        e
    };
    let t = test(
        with(Role::Sender, 0, 44.0, 40.0),
        with(Role::Receiver, 1, 70.0, 2.0),
    );
    let v = verdict(&t, Some(BitsPerSecond::from_gbps(15.5)));
    assert_eq!(v.id, VerdictId::CpuContended, "{} / {:?}", v.line, v.also);
    assert_eq!(v.end.map(VerdictEnd::word), Some("sender"));
}

/// The busy-loop scenario as measured in the lab (`lab up`, client on CPU 0, server on
/// CPU 1, `taskset -c 1 sh -c 'while :; do :; done'`): the receiver's CPU 1 full (69 % user
/// of the loop), its worker ran 31 % and waited 21 %; 18916 retransmits of which the
/// receiver reported 18446 as duplicates (D-SACK), no drop in softnet_stat or TcpExt.
fn busy_loop_lab() -> (TestObservation, Measured) {
    let mut s = end(Role::Sender, ryzen(), 0, &[(0, 45.0, 30.0, 20.0, 0, 0)]);
    s.iface_speed_mbps = None;
    s.total.tcp = Some(TcpLimits {
        busy_us: 4_000_000,
        dsack_dups: 18446,
        ..Default::default()
    });
    let s = with_threads(s, &[(0, 70.0, 5.0), (0, 72.0, 6.0), (0, 71.0, 3.0)]);
    let r = end(Role::Receiver, ryzen(), 1, &[(1, 27.0, 3.0, 0.0, 0, 0)]);
    let mut r = with_threads(r, &[(1, 30.7, 25.5), (1, 33.2, 16.1), (1, 30.6, 21.3)]);
    r.iface_speed_mbps = None;
    r.total.rx_drops = Some(RxDrops {
        cpus: vec![],
        tcp: Some(TcpRxDrops::default()),
        udp: None,
    });
    let m = Measured {
        throughput: Some(BitsPerSecond(15.9e9)),
        interval_bps: vec![15.0e9, 16.2e9, 15.8e9, 16.1e9],
        retransmits: Some(18916),
        bytes_sent: Some(8_031_501_807),
        mss: Some(1448),
        rtt_us: Some((20, 200, 520)),
        ..Default::default()
    };
    (test(s, r), m)
}

#[test]
fn spurious_retransmits_of_a_starved_receiver_are_not_path_loss() {
    let (t, m) = busy_loop_lab();
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::CpuContended, "{} / {:?}", v.line, v.also);
    assert_eq!(v.end.map(VerdictEnd::word), Some("receiver"));
    assert!(
        v.line
            .contains("waited 21 % of the test for its CPU and ran 31.5 %")
            && v.line.contains("other tasks took 65.5 %")
            && v.line
                .contains("18446 of the 18916 retransmits were spurious"),
        "{}",
        v.line
    );
    assert!(
        !v.also.iter().any(|a| a.starts_with("loss-limited")),
        "{:?}",
        v.also
    );
    // without the receiver's D-SACK account the same retransmits read as path loss
    let mut t2 = t.clone();
    t2.local.total.tcp.as_mut().unwrap().dsack_dups = 0;
    assert_eq!(verdict_of(&t2, &m).id, VerdictId::LossLimited);
}

/// A loss run recorded on this project's 2-vCPU machine: a veth pair between two
/// namespaces, nft dropping 1 in 200 of the packets into the server's port at its input
/// (`numgen random mod 1000 < 5 drop`), `wirespeed client 10.79.0.2 -t 4 -A 0,1 -C ALGO -J`.
fn rx_drop_run(bbr: bool) -> Measured {
    if bbr {
        // -C bbr: 3.80 Gbit/s, 10678 retransmits of 1912209408 bytes, MSS 1448, RTT
        // 288/524/665 µs (3633 of them D-SACKed: 34 %, not most)
        Measured {
            throughput: Some(BitsPerSecond(3_803_399_792.0)),
            retransmits: Some(10678),
            bytes_sent: Some(1_912_209_408),
            mss: Some(1448),
            rtt_us: Some((288, 524, 665)),
            congestion: Some("bbr".into()),
            ..Default::default()
        }
    } else {
        // -C cubic: 5.75 Gbit/s, 9166 retransmits of 2894069760 bytes, RTT 32/101/215 µs
        Measured {
            throughput: Some(BitsPerSecond(5_752_395_430.0)),
            retransmits: Some(9166),
            bytes_sent: Some(2_894_069_760),
            mss: Some(1448),
            rtt_us: Some((32, 101, 215)),
            congestion: Some("cubic".into()),
            ..Default::default()
        }
    }
}

#[test]
fn loss_binds_only_near_the_mathis_ceiling_and_says_why_when_not() {
    let quiet = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let t = test(idle_sender(), quiet.clone());
    // cubic, the drops at the receiver's input: 5.75 Gbit/s against a ceiling of 6.5,
    // 0.9x — binds, and the Path model line is printed beside it
    let m = rx_drop_run(false);
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::LossLimited, "{v:?}");
    assert!(v.line.contains("0.9x the ceiling (within 3x"), "{}", v.line);
    let c = ceiling_for(&t, &m).expect("binding loss prints the path model");
    assert!((c.mathis_bps / 1e9 - 6.5).abs() < 0.1, "{}", c.mathis_bps);

    // the same drops with BBR: loss seen, did not bind, no Path model line (its ceiling
    // of 0.55 Gbit/s sat 7x under the 3.8 measured)
    let m = rx_drop_run(true);
    let v = verdict_of(&t, &m);
    assert_ne!(v.id, VerdictId::LossLimited, "{v:?}");
    let line = v
        .also
        .iter()
        .find(|a| a.starts_with("loss seen but did not bind"))
        .unwrap_or_else(|| panic!("{v:?}"));
    assert!(
        line.contains("the sender ran bbr") && line.contains("does not apply"),
        "{line}"
    );
    assert!(ceiling_for(&t, &m).is_none());

    // BBR's counters as a loss-based sender's: 7x above the ceiling at 0.29 ms RTT, the
    // model does not describe the flow (RTT under 1 ms)
    let m = Measured {
        congestion: Some("cubic".into()),
        ..rx_drop_run(true)
    };
    let v = verdict_of(&t, &m);
    assert_ne!(v.id, VerdictId::LossLimited, "{v:?}");
    let line = v
        .also
        .iter()
        .find(|a| a.starts_with("loss seen but did not bind"))
        .unwrap_or_else(|| panic!("{v:?}"));
    assert!(
        line.contains("7.0x above it (over 3x)") && line.contains("at an RTT under 1 ms"),
        "{line}"
    );
    assert!(ceiling_for(&t, &m).is_none());

    // ESnet's example far below its ceiling: the losses allowed more
    let segments = 22_000_000u64;
    let m = Measured {
        throughput: Some(BitsPerSecond(10e6)),
        retransmits: Some(1000),
        bytes_sent: Some(segments * 8948),
        mss: Some(8948),
        rtt_us: Some((90_000, 90_000, 91_000)),
        ..Default::default()
    };
    let v = verdict_of(&t, &m);
    // "something else" is named, or nothing else is said to have been found
    assert!(
        v.also.iter().any(|a| a.kind == AlsoKind::Loss
            && a.contains("14.4x below it")
            && a.contains("nothing else was found")),
        "{v:?}"
    );
    assert!(ceiling_for(&t, &m).is_none());
}

#[test]
fn spurious_retransmits_and_loopback_print_no_path_model() {
    // the busy loop's retransmits, 18446 of 18916 D-SACKed: loss seen, the host's own
    let (t, m) = busy_loop_lab();
    let v = verdict_of(&t, &m);
    assert!(
        v.also
            .iter()
            .any(|a| a.starts_with("loss seen but did not bind")
                && a.contains("18446 of the 18916 retransmits were spurious")),
        "{:?}",
        v.also
    );
    assert!(ceiling_for(&t, &m).is_none());
    // recorded loopback run: 16.6 Gbit/s, 23 retransmits at 21 µs (bytes from its rate
    // over its 5 s, lo's MSS 65483): no path, no model
    let (obs, doc) = recorded("loopback-unpinned-2cpu.json");
    let bps = doc["receiver_bps"].as_f64().unwrap();
    let m = Measured {
        throughput: Some(BitsPerSecond(bps)),
        retransmits: Some(23),
        bytes_sent: Some((bps / 8.0 * 5.0) as u64),
        mss: Some(65483),
        rtt_us: Some((21, 86, 251)),
        ..Default::default()
    };
    assert!(ceiling(&m).is_some(), "the raw model has a figure");
    assert!(ceiling_for(&obs, &m).is_none());
    let v = verdict_of(&obs, &m);
    assert!(
        v.id != VerdictId::LossLimited && !v.also.iter().any(|a| a.contains("loss")),
        "{v:?}"
    );
}

#[test]
fn rtt_growth_beside_a_contended_worker_is_no_shaper() {
    // the busy loop with two more on the host (truth table, measured): 3.0 Gbit/s within
    // 9.6 %, RTT from 0.04 to 1.39 ms, the receiver's worker contended — its late
    // acknowledgements, not a queue on the path
    let (t, mut m) = busy_loop_lab();
    m.throughput = Some(BitsPerSecond(3.0e9));
    m.interval_bps = vec![2.0e9, 3.2e9, 2.7e9, 3.1e9];
    m.rtt_us = Some((40, 600, 1390));
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::CpuContended, "{}", v.line);
    // the same flat rate and RTT growth with the workers unhindered: a shaper's queue
    let mut quiet = t.clone();
    for e in [&mut quiet.local, quiet.remote.as_mut().unwrap()] {
        for i in &mut e.intervals {
            for th in &mut i.threads {
                th.wait = Percent::new(1.0);
            }
        }
    }
    m.retransmits = Some(0);
    assert_eq!(verdict_of(&quiet, &m).id, VerdictId::PathLimited);
}

#[test]
fn a_test_held_at_its_own_b_target_is_at_target_rate() {
    // lab, TCP -b 8G with RPS on the receiver's CPU (measured): 7.9 Gbit/s flat within
    // 0.5 %, which read as path-limited before the target was known
    let (t, mut m) = busy_loop_lab();
    m.throughput = Some(BitsPerSecond(7.902e9));
    m.interval_bps = vec![7.88e9, 7.93e9, 7.9e9];
    m.retransmits = Some(0);
    let mut quiet = t.clone();
    for e in [&mut quiet.local, quiet.remote.as_mut().unwrap()] {
        for i in &mut e.intervals {
            for th in &mut i.threads {
                th.wait = Percent::new(1.0);
            }
        }
    }
    assert_eq!(
        verdict_of(&quiet, &m).id,
        VerdictId::PathLimited,
        "target unknown"
    );
    m.target_bps = Some(8e9);
    let v = verdict_of(&quiet, &m);
    assert_eq!(v.id, VerdictId::AtTargetRate, "{}", v.line);
    assert!(v.line.contains("8.0 Gbit/s asked for"), "{}", v.line);
    // well below the target: the test's pacing did not set the figure
    m.target_bps = Some(20e9);
    assert_ne!(verdict_of(&quiet, &m).id, VerdictId::AtTargetRate);
}

#[test]
fn udp_loss_at_the_receivers_full_socket_buffer_is_the_receivers() {
    // lab, UDP -b 0 with RPS on the receiver's CPU (measured): 33 % lost, RcvbufErrors
    // 53714 beside 109071 delivered (GRO: one count per merged packet), and on a loaded
    // host no receiver CPU at 90 %
    let s = end(Role::Sender, ryzen(), 0, &[(0, 30.0, 10.0, 40.0, 0, 0)]);
    let mut r = end(
        Role::Receiver,
        ryzen(),
        1,
        &[(1, 30.0, 40.0, 20.0, 0, 9000)],
    );
    r.total.rx_drops = Some(RxDrops {
        udp: Some(UdpRx {
            delivered: 109071,
            rcvbuf_errors: 53714,
        }),
        ..Default::default()
    });
    let m = Measured {
        throughput: Some(BitsPerSecond(13.8e9)),
        udp: true,
        udp_lost: Some((2_363_416, 7_162_496)),
        ..Default::default()
    };
    let v = verdict_of(&test(s.clone(), r.clone()), &m);
    assert_eq!(v.id, VerdictId::UdpReceiverCpuBound, "{}", v.line);
    assert!(
        v.line.contains("receive buffer was full for 33 %"),
        "{}",
        v.line
    );
    // no socket-buffer drops: the path's
    r.total.rx_drops = None;
    assert_eq!(verdict_of(&test(s, r), &m).id, VerdictId::UdpPathLoss);
}

#[test]
fn both_ends_contended_are_both_named() {
    // the busy loop on the receiver's CPU, and unrelated work on the sender's CPU that
    // made its worker wait longer: the sender's first, the receiver's under `also`
    let (mut t, m) = busy_loop_lab();
    t.local = with_threads(
        end(Role::Sender, ryzen(), 0, &[(0, 30.0, 10.0, 2.0, 0, 0)]),
        &[(0, 7.0, 57.0), (0, 8.0, 55.0), (0, 6.0, 60.0)],
    );
    t.local.total.tcp = Some(TcpLimits {
        busy_us: 4_000_000,
        dsack_dups: 18446,
        ..Default::default()
    });
    let v = verdict_of(&t, &m);
    assert_eq!(
        (v.id, v.end.map(VerdictEnd::word)),
        (VerdictId::CpuContended, Some("sender"))
    );
    assert!(
        v.also
            .iter()
            .any(|a| a.starts_with("CPU contended: the receiver's worker (ws-dp-cpu1)")),
        "{:?}",
        v.also
    );
}

#[test]
fn the_receivers_own_drops_are_not_path_loss() {
    // the same test, but the retransmits are real: the receiving host dropped them itself
    // (its CPU 1's backlog and TCP's receive queue)
    let (mut t, mut m) = busy_loop_lab();
    t.local.total.tcp.as_mut().unwrap().dsack_dups = 0;
    m.retransmits = Some(900);
    m.interval_bps = vec![9.0e9, 12.0e9, 9.5e9, 11.7e9];
    m.throughput = Some(BitsPerSecond(11.0e9));
    t.remote.as_mut().unwrap().total.rx_drops = Some(RxDrops {
        cpus: vec![SoftnetUse {
            cpu: 1,
            dropped: 500,
            time_squeeze: 12,
        }],
        tcp: Some(TcpRxDrops {
            backlog: 300,
            ..Default::default()
        }),
        udp: None,
    });
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::CpuContended, "{}", v.line);
    assert!(
        v.line
            .contains("the receiving host dropped 800 segments itself"),
        "{}",
        v.line
    );
    // a path that drops more than the host explains stays loss-limited
    m.retransmits = Some(5000);
    assert_eq!(verdict_of(&t, &m).id, VerdictId::LossLimited);
}

#[test]
fn softirq_on_the_receivers_app_cpu_comes_before_contention() {
    // RPS steering the receive softirq onto the receiver's CPU 1 (lab, measured): CPU 1
    // 98 % busy, 44 % softirq, 50 % system; the receiver's worker ran 21 % and waited 25 %
    // (its wait is for the softirq: other tasks took 33 %). The sender's CPU 0 is as busy.
    let s = end(Role::Sender, ryzen(), 0, &[(0, 57.0, 35.0, 3.0, 0, 0)]);
    let s = with_threads(s, &[(0, 17.2, 63.6), (0, 55.2, 41.3), (0, 65.8, 20.9)]);
    let r = end(Role::Receiver, ryzen(), 1, &[(1, 50.0, 44.0, 2.0, 0, 5000)]);
    let r = with_threads(r, &[(1, 9.4, 29.2), (1, 23.6, 16.6), (1, 28.9, 29.6)]);
    let v = verdict(&test(s, r.clone()), Some(BitsPerSecond::from_gbps(13.6)));
    assert_eq!(v.id, VerdictId::ReceiverSharesCpuWithSoftirq, "{}", v.line);
    assert!(
        !v.also.iter().any(|a| a.contains("CPU contended")),
        "{:?}",
        v.also
    );
    // on a loaded host (measured): the same CPU 1 with 35 % softirq but 53 % other tasks'
    // user time, the worker ran 22 % and waited 19 %: other tasks took more than the
    // softirq, contention is named
    let r2 = with_threads(
        end(Role::Receiver, ryzen(), 1, &[(1, 20.0, 35.0, 2.0, 0, 5000)]),
        &[(1, 16.9, 13.7), (1, 23.5, 22.2), (1, 25.0, 22.6)],
    );
    let v = verdict(
        &test(idle_sender(), r2),
        Some(BitsPerSecond::from_gbps(13.6)),
    );
    assert_eq!(v.id, VerdictId::CpuContended, "{}", v.line);
    // a shaped 1 Gbit/s on a loaded host: the receiver's CPU full of other tasks and some
    // forwarding softirq, but its worker needed a CPU 8 % of the time: not its limit
    let r3 = with_threads(
        end(Role::Receiver, ryzen(), 1, &[(1, 30.0, 28.0, 1.0, 0, 5000)]),
        &[(1, 3.2, 7.2), (1, 3.0, 1.2), (1, 2.9, 11.9)],
    );
    let v = verdict(
        &test(idle_sender(), r3),
        Some(BitsPerSecond::from_gbps(0.95)),
    );
    assert_ne!(v.id, VerdictId::ReceiverSharesCpuWithSoftirq, "{}", v.line);
}

#[test]
fn a_busy_app_cpu_with_an_idle_worker_is_not_its_limit() {
    // CPU 6 saturated by other work; the worker ran 10 % and waited 5 %: blocked on the
    // network, the busy CPU is not what held it
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 20.0, 0.0, 1.0, 0, 0)]);
    let r = with_threads(r, &[(6, 10.0, 5.0), (6, 10.0, 5.0)]);
    let m = Measured {
        throughput: Some(BitsPerSecond(3e8)),
        interval_bps: vec![2e8, 3e8, 3.01e8, 2.99e8],
        rtt_us: Some((300, 2_000, 9_000)),
        ..Default::default()
    };
    let v = verdict_of(&test(idle_sender(), r), &m);
    // flat with RTT growth and no CPU limit: a shaper's queue
    assert_eq!(v.id, VerdictId::PathLimited, "{}", v.line);
    assert!(
        v.line.contains("RTT grew from 0.30 to 9.00 ms"),
        "{}",
        v.line
    );
}

#[test]
fn a_migrating_worker_is_followed_by_its_thread() {
    // unpinned: the worker alternates between CPUs 6 and 8, each saturated while it is there
    let mut r = end(
        Role::Receiver,
        ryzen(),
        6,
        &[(6, 50.0, 0.0, 50.0, 0, 0), (8, 50.0, 0.0, 50.0, 0, 0)],
    );
    r.total.workers[0].cpus_seen = CpuSet::from_cpus([6, 8]);
    let r = with_threads(r, &[(6, 90.0, 5.0), (8, 90.0, 5.0), (6, 90.0, 5.0)]);
    let hot = |cpu: u32| CpuUse {
        cpu,
        system: Percent::new(97.0),
        idle: Percent::new(3.0),
        ..Default::default()
    };
    let cold = |cpu: u32| CpuUse {
        cpu,
        system: Percent::new(3.0),
        idle: Percent::new(97.0),
        ..Default::default()
    };
    let mut r = r;
    for (i, cpu) in [6u32, 8, 6].into_iter().enumerate() {
        let other = if cpu == 6 { 8 } else { 6 };
        r.intervals[i].cpus = vec![hot(cpu), cold(other)];
    }
    let v = verdict(&test(idle_sender(), r), None);
    assert_eq!(v.id, VerdictId::ReceiverCpuBound);
    assert!(
        v.line
            .contains("in 3 of 3 intervals (worker 0 followed over CPUs 6,8)"),
        "{}",
        v.line
    );
}

#[test]
fn flat_throughput_below_the_link_is_path_limited() {
    let quiet = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let m = Measured {
        throughput: Some(BitsPerSecond::from_gbps(1.9)),
        interval_bps: vec![1.2e9, 1.91e9, 1.89e9, 1.9e9, 1.92e9],
        rtt_us: Some((200, 9_000, 20_000)),
        retransmits: Some(310),
        ..Default::default()
    };
    let v = verdict_of(&test(idle_sender(), quiet.clone()), &m);
    assert_eq!(v.id, VerdictId::PathLimited);
    assert_eq!(
        v.line,
        "path-limited: 1.9 Gbit/s flat over 4 intervals (±0.7 %), below the 100.0 Gbit/s link, RTT grew from 0.20 to 20.00 ms (a queue filling), 310 retransmits (drops), with no CPU, window or buffer limit — a rate limit on the path (a shaper, a policer, a slower link)"
    );
    // swinging throughput is not a fixed limit
    let swing = Measured {
        interval_bps: vec![1e9, 3e9, 1e9, 3e9],
        ..m.clone()
    };
    assert_eq!(
        verdict_of(&test(idle_sender(), quiet.clone()), &swing).id,
        VerdictId::NoCpuSaturated
    );
    // a rate held within 10 % while the path dropped a few segments is a shaper, even beside a busy CPU
    let busy = end(Role::Receiver, ryzen(), 6, &[(6, 99.0, 0.0, 1.0, 0, 0)]);
    assert_eq!(
        verdict_of(&test(idle_sender(), busy.clone()), &m).id,
        VerdictId::PathLimited
    );
    // without drops or a queue a saturated CPU comes first
    let no_drops = Measured {
        retransmits: None,
        rtt_us: Some((200, 250, 300)),
        ..m.clone()
    };
    assert_eq!(
        verdict_of(&test(idle_sender(), busy), &no_drops).id,
        VerdictId::ReceiverCpuBound
    );
}

#[test]
fn a_queue_that_stood_from_the_first_interval_is_a_shapers() {
    // a 200 Mbit/s tbf with a 50 ms queue on a veth pair: the queue fills in slow start, so
    // every interval's RTT is 5.0-5.4 ms (no growth to see) over a path of 0.03 ms, and a
    // loss-based sender that never overflowed it retransmitted nothing
    let with_base = |e: EndObservation, base: Option<u32>| {
        let mut e = e;
        e.total.tcp = Some(TcpLimits {
            busy_us: 4_000_000,
            min_rtt_us: base,
            ..Default::default()
        });
        e
    };
    let quiet = end(Role::Receiver, ryzen(), 6, &[(6, 3.0, 2.0, 95.0, 0, 0)]);
    let m = Measured {
        throughput: Some(BitsPerSecond(1.88e8)),
        interval_bps: vec![1.9e8, 1.88e8, 1.87e8, 1.89e8],
        rtt_us: Some((5_000, 5_200, 5_400)),
        retransmits: Some(0),
        ..Default::default()
    };
    // the verdict over the path's own RTT `base` with the senders' smoothed RTTs `rtt`
    let over = |base: u32, rtt: (u64, u64, u64)| {
        let m = Measured {
            rtt_us: Some(rtt),
            ..m.clone()
        };
        verdict_of(
            &test(with_base(idle_sender(), Some(base)), quiet.clone()),
            &m,
        )
    };
    let v = over(30, (5_000, 5_200, 5_400));
    assert_eq!(
        (v.id, v.standing.bound),
        (VerdictId::PathLimited, Some(Bound::Binding)),
        "{}",
        v.line
    );
    assert!(
        v.line
            .contains("RTT at least 5.00 ms over a 0.030 ms path (a queue standing)"),
        "{}",
        v.line
    );
    // a queue that also grew is told once, by its growth
    let v = over(30, (5_000, 8_000, 12_000));
    assert!(
        v.line.contains("RTT grew from 5.00 to 12.00 ms") && !v.line.contains("standing"),
        "{}",
        v.line
    );
    // tens of microseconds doubling on a veth are no queue, in the line as in the rule
    let v = over(20, (30, 45, 70));
    assert!(
        v.line.starts_with("path-limited") && !v.line.contains("RTT"),
        "{}",
        v.line
    );
    // without the path's base RTT (a peer that does not say), or over a path that long
    // itself (no queue on it), the flat rate alone is only consistent with a shaper
    for base in [None, Some(4_900)] {
        let v = verdict_of(&test(with_base(idle_sender(), base), quiet.clone()), &m);
        assert_eq!(
            (v.id, v.standing.bound),
            (VerdictId::PathLimited, Some(Bound::Consistent)),
            "{base:?}: {}",
            v.line
        );
        assert!(!v.line.contains("standing"), "{}", v.line);
    }
    // a queue at the host is no shaper's: beside a saturated receiver CPU its backlog grows
    // the RTT as much, and the CPU is named
    let busy = end(Role::Receiver, ryzen(), 6, &[(6, 99.0, 0.0, 1.0, 0, 0)]);
    let v = verdict_of(&test(with_base(idle_sender(), Some(30)), busy), &m);
    assert_eq!(v.id, VerdictId::ReceiverCpuBound, "{}", v.line);
}

/// A sender held by the receiver's window `rwnd` ‰ of its busy time, on CPU 0 at `busy` %
/// (10 % system, 5 % softirq) with its worker running 20 % and waiting 4 %: what is left
/// of `busy` is other tasks'.
fn window_sender(rwnd_permille: u64, busy: f64) -> EndObservation {
    let s = end(
        Role::Sender,
        ryzen(),
        0,
        &[(0, 10.0, 5.0, 100.0 - busy, 0, 0)],
    );
    let mut s = with_threads(s, &[(0, 20.0, 4.0), (0, 20.0, 4.0), (0, 20.0, 4.0)]);
    s.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        rwnd_limited_us: rwnd_permille * 1000,
        ..Default::default()
    });
    s
}

/// A receiver on CPU 1 at `busy` % with its worker running 15 % and waiting 3 %.
fn busy_receiver(busy: f64) -> EndObservation {
    let r = end(
        Role::Receiver,
        ryzen(),
        1,
        &[(1, 10.0, 5.0, 100.0 - busy, 0, 0)],
    );
    with_threads(r, &[(1, 15.0, 3.0), (1, 15.0, 3.0), (1, 15.0, 3.0)])
}

#[test]
fn a_busy_host_is_said_beside_the_verdict_it_may_have_caused() {
    // the issue's case: a host 100 % busy with other processes, window-limited at 25.6 %
    // of busy time, just over the threshold
    let quiet_rx = busy_receiver(25.0);
    let t = test(window_sender(256, 85.0), quiet_rx.clone());
    let v = verdict(&t, Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::WindowLimited, "{v:?}");
    assert_eq!(
        v.also.first().map(Also::as_str),
        Some(
            "host busy: other tasks took 60 % of the sender's CPU 0 (a worker's CPU in 3 intervals) during the test; this verdict may be a consequence of that load — window-limited at 25.6 % of busy time is within 10 points of its 25 % threshold: marginal under load"
        ),
        "{:?}",
        v.also
    );
    let load = v.host_load.expect("typed host load");
    assert!(load.marginal);
    assert_eq!(load.cpus.len(), 1);
    assert_eq!(
        (load.cpus[0].end, load.cpus[0].cpu, load.cpus[0].intervals),
        (LoadedEnd::Sender, 0, 3)
    );
    assert!((load.cpus[0].others_pct - 60.0).abs() < 1e-9);

    // well over the threshold: the host is still said busy, the reading is not marginal
    let v = verdict(
        &test(window_sender(600, 85.0), quiet_rx),
        Some(BitsPerSecond::from_gbps(1.0)),
    );
    assert_eq!(v.id, VerdictId::WindowLimited);
    assert!(v.also[0].starts_with("host busy: "), "{:?}", v.also);
    assert!(!v.also[0].contains("marginal"), "{}", v.also[0]);
    assert!(!v.host_load.unwrap().marginal);

    // both ends busy: both named, the busiest first
    let v = verdict(
        &test(window_sender(256, 85.0), busy_receiver(97.0)),
        Some(BitsPerSecond::from_gbps(1.0)),
    );
    assert_eq!(v.id, VerdictId::WindowLimited, "{v:?}");
    assert!(
        v.also[0].starts_with(
            "host busy: other tasks took 77 % of the receiver's CPU 1 (a worker's CPU in 3 intervals) and 60 % of the sender's CPU 0"
        ),
        "{:?}",
        v.also
    );
    let ends: Vec<_> = v
        .host_load
        .unwrap()
        .cpus
        .into_iter()
        .map(|c| c.end)
        .collect();
    assert_eq!(ends, [LoadedEnd::Receiver, LoadedEnd::Sender]);
}

#[test]
fn a_quiet_host_says_nothing_of_load() {
    // the workers' own run and interrupt work fill their CPUs: no other tasks
    let t = test(window_sender(600, 35.0), busy_receiver(30.0));
    let v = verdict(&t, Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::WindowLimited);
    assert_eq!(v.host_load, None);
    assert!(
        !v.also.iter().any(|a| a.starts_with("host busy")),
        "{:?}",
        v.also
    );
    // just under the threshold: still quiet (24 % others)
    let v = verdict(
        &test(window_sender(600, 49.0), busy_receiver(30.0)),
        Some(BitsPerSecond::from_gbps(1.0)),
    );
    assert_eq!(v.host_load, None, "{:?}", v.also);
    // a `--bidir` end's two workers on one CPU are not each other's other tasks (with one
    // worker, 59 % busy would leave 34 % to others)
    let mut s = window_sender(600, 59.0);
    for i in &mut s.intervals {
        let mut other = i.threads[0].clone();
        other.tid = 43;
        i.threads.push(other);
    }
    let v = verdict(
        &test(s, busy_receiver(30.0)),
        Some(BitsPerSecond::from_gbps(1.0)),
    );
    assert_eq!(v.host_load, None, "{:?}", v.also);
}

#[test]
fn a_marginal_tcp_limit_beside_contention_names_the_contention_first() {
    // the sender's worker waited 60 % of the test for CPU 0 while other tasks held it,
    // and the window held it back 28 % of its busy time: the contention is the cause
    let contended_sender = |rwnd_permille: u64| {
        let s = end(Role::Sender, ryzen(), 0, &[(0, 20.0, 0.0, 1.0, 0, 0)]);
        let mut s = with_threads(s, &[(0, 20.0, 60.0), (0, 22.0, 58.0)]);
        s.total.tcp = Some(TcpLimits {
            busy_us: 1_000_000,
            rwnd_limited_us: rwnd_permille * 1000,
            ..Default::default()
        });
        s
    };
    let quiet_rx = busy_receiver(25.0);
    let v = verdict(
        &test(contended_sender(280), quiet_rx.clone()),
        Some(BitsPerSecond::from_gbps(1.0)),
    );
    assert_eq!(v.id, VerdictId::CpuContended, "{} / {:?}", v.line, v.also);
    assert!(
        v.also.iter().any(|a| a.starts_with("window-limited: ")),
        "{:?}",
        v.also
    );
    // a window limit far over its threshold binds on a quiet host too: it stays first,
    // with the contention under `also`
    let v = verdict(
        &test(contended_sender(700), quiet_rx),
        Some(BitsPerSecond::from_gbps(1.0)),
    );
    assert_eq!(v.id, VerdictId::WindowLimited, "{} / {:?}", v.line, v.also);
    assert!(
        v.also.iter().any(|a| a.starts_with("CPU contended")),
        "{:?}",
        v.also
    );
}

/// Its own line says other tasks took the worker's CPU: no busy-host line, but the load typed.
#[test]
fn a_contended_verdict_does_not_say_the_host_was_busy_twice() {
    let r = contended_receiver();
    let v = verdict(&test(idle_sender(), r), Some(BitsPerSecond::from_gbps(1.0)));
    assert_eq!(v.id, VerdictId::CpuContended);
    let load = v.host_load.as_ref().expect("the load typed");
    assert!(!load.marginal);
    assert!(
        load.cpus
            .iter()
            .any(|c| c.end == wirespeed_model::LoadedEnd::Receiver && c.others_pct >= 25.0),
        "{load:?}"
    );
    assert!(
        !v.also.iter().any(|a| a.starts_with("host busy")),
        "{:?}",
        v.also
    );
}

/// A `--bidir` test: both ends send and receive, quiet, the server's sending streams
/// window-limited `server_rwnd` ‰ of their busy time.
fn bidir_test(server_rwnd_permille: u64) -> TestObservation {
    let mut c = end(Role::Both, ryzen(), 6, &[(6, 20.0, 5.0, 70.0, 0, 0)]);
    let mut s = end(Role::Both, ryzen(), 6, &[(6, 20.0, 5.0, 70.0, 0, 0)]);
    c.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        ..Default::default()
    });
    s.total.tcp = Some(TcpLimits {
        busy_us: 1_000_000,
        rwnd_limited_us: server_rwnd_permille * 1000,
        ..Default::default()
    });
    test(c, s)
}

fn shaped_200() -> Measured {
    Measured {
        throughput: Some(BitsPerSecond(200e6)),
        interval_bps: vec![150e6, 199e6, 201e6, 200e6, 200e6],
        rtt_us: Some((300, 8_000, 16_000)),
        retransmits: Some(40),
        bytes_sent: Some(125_000_000),
        mss: Some(1448),
        ..Default::default()
    }
}

/// `--bidir` read from `local`: client → server through the 200 Mbit/s shaper, server → client
/// fast.
fn shaped_client_to_server(local: End) -> Measured {
    Measured {
        reverse: Some(Box::new(fast())),
        local: Some(local),
        ..shaped_200()
    }
}

fn fast() -> Measured {
    Measured {
        throughput: Some(BitsPerSecond::from_gbps(9.0)),
        interval_bps: vec![5e9, 12e9, 6e9, 11e9, 7e9],
        ..Default::default()
    }
}

/// `--bidir` through a shaper on the client's egress alone: client → server's data fill its
/// queue, and server → client's ACKs wait in it, so both directions' RTTs stand at its delay from
/// the first interval — server → client's own data unshaped.
#[test]
fn bidir_counts_no_standing_queue_its_acks_may_have_waited_in() {
    let mut t = bidir_test(0);
    for e in [&mut t.local, t.remote.as_mut().expect("server")] {
        if let Some(tcp) = e.total.tcp.as_mut() {
            tcp.min_rtt_us = Some(10);
        }
    }
    let queued = |gbps: f64| Measured {
        throughput: Some(BitsPerSecond::from_gbps(gbps)),
        interval_bps: vec![gbps * 0.8e9, gbps * 1e9, gbps * 1.01e9, gbps * 0.99e9],
        rtt_us: Some((4_000, 4_200, 4_400)),
        retransmits: Some(0),
        ..Default::default()
    };
    let m = Measured {
        reverse: Some(Box::new(queued(3.9))),
        local: Some(End::Client),
        ..queued(0.19)
    };
    let v = verdict_of(&t, &m);
    let other = v.other_direction.as_deref().expect("the other direction");
    for d in [&v, other] {
        assert!(
            d.id != VerdictId::PathLimited || d.standing.bound == Some(Bound::Consistent),
            "{}",
            d.line
        );
        assert!(!d.line.contains("standing"), "{}", d.line);
    }
    // the same figures of one direction: its standing queue is its own path's
    let mut one = bidir_test(0);
    one.local.role = Role::Sender;
    one.remote.as_mut().expect("server").role = Role::Receiver;
    one.local.total.tcp.as_mut().expect("tcp").min_rtt_us = Some(10);
    let v = verdict_of(&one, &queued(0.19));
    assert_eq!(
        (v.id, v.standing.bound),
        (VerdictId::PathLimited, Some(Bound::Binding)),
        "{}",
        v.line
    );
}

#[test]
fn bidir_judges_each_direction_the_slower_first() {
    let t = bidir_test(0);
    // the server → client direction shaped (tbf on the server's egress)
    let m = Measured {
        reverse: Some(Box::new(shaped_200())),
        local: Some(End::Client),
        ..fast()
    };
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::PathLimited, "{v:?}");
    assert_eq!(v.direction, Some(Flow::ServerToClient));
    assert!(
        v.line
            .starts_with("server → client: path-limited: 200.0 Mbit/s flat"),
        "{}",
        v.line
    );
    assert_eq!(
        v.also[0],
        "client → server: no CPU saturated (busiest: receiver's CPU 6 at 30 %): the limit is the path or the peer"
    );
    let other = v.other_direction.as_deref().expect("the other direction");
    assert_eq!(
        (other.id, other.direction),
        (VerdictId::NoCpuSaturated, Some(Flow::ClientToServer))
    );

    // the client → server direction shaped, judged on the server's report
    let m = shaped_client_to_server(End::Server);
    let v = verdict_of(&t, &m);
    assert_eq!(
        (v.id, v.direction),
        (VerdictId::PathLimited, Some(Flow::ClientToServer)),
        "{v:?}"
    );
    assert!(
        v.line.starts_with("client → server: path-limited"),
        "{}",
        v.line
    );
    assert!(
        v.also[0].starts_with("server → client: no CPU saturated"),
        "{:?}",
        v.also
    );

    // a peer gone silent is the whole test's: one verdict
    let m = Measured {
        peer_silent: Some(PeerSilent {
            peer: End::Server,
            phase: SilentPhase::Data,
            seconds: 1.0,
            bytes_sent: 1000,
            bytes_received: 1000,
            peer_mss: None,
            pmtu: None,
            own_acked: true,
        }),
        ..m
    };
    let v = verdict_of(&t, &m);
    assert_eq!((v.id, v.direction), (VerdictId::PeerSilent, None), "{v:?}");
    assert_eq!(v.other_direction, None);

    // without the reverse direction's figures: one verdict, as before
    let v = verdict_of(&t, &shaped_200());
    assert_eq!((v.id, v.direction), (VerdictId::PathLimited, None));
    assert_eq!(v.other_direction, None);
}

#[test]
fn bidir_reads_each_ends_tcp_limits_for_the_direction_it_sends() {
    // the server's sending streams window-limited: server → client is, client → server not
    // (both at the same rate: the client → server direction comes first on equal rates)
    for local in [End::Client, End::Server] {
        let mut t = bidir_test(600);
        if local == End::Server {
            let remote = t.remote.take().unwrap();
            t.remote = Some(std::mem::replace(&mut t.local, remote));
        }
        let m = Measured {
            reverse: Some(Box::new(fast())),
            local: Some(local),
            ..fast()
        };
        let v = verdict_of(&t, &m);
        assert_eq!(v.direction, Some(Flow::ClientToServer), "{local:?}");
        assert_eq!(v.id, VerdictId::NoCpuSaturated, "{local:?} {v:?}");
        let other = v.other_direction.unwrap();
        assert_eq!(
            (other.id, other.end.map(VerdictEnd::word)),
            (VerdictId::WindowLimited, Some("sender")),
            "{local:?}"
        );
        assert_eq!(
            v.also[0],
            "server → client: window-limited: the receiver's window held the sender back 60 % of its busy time (raise tcp_rmem's maximum, or -w)"
        );
    }
}

#[test]
fn bidir_shows_the_other_directions_also_lines_naming_it() {
    // client → server shaped (the verdict); the server's sends window- and
    // send-buffer-limited: server → client's verdict with one line under its own `also`
    let mut t = bidir_test(600);
    if let Some(tcp) = t.remote.as_mut().and_then(|r| r.total.tcp.as_mut()) {
        tcp.sndbuf_limited_us = 400_000;
    }
    let m = shaped_client_to_server(End::Client);
    let v = verdict_of(&t, &m);
    assert_eq!(
        (v.id, v.direction),
        (VerdictId::PathLimited, Some(Flow::ClientToServer)),
        "{v:?}"
    );
    let other = v.other_direction.as_deref().unwrap();
    assert_eq!(other.id, VerdictId::WindowLimited);
    assert_eq!(other.also.len(), 1, "{:?}", other.also);
    assert!(
        other.also[0].starts_with("send-buffer-limited"),
        "{:?}",
        other.also
    );
    assert!(
        v.also[0].starts_with("server → client: window-limited: "),
        "{:?}",
        v.also
    );
    assert_eq!(v.also[1], format!("server → client: {}", other.also[0]));
}

#[test]
fn bidir_says_a_busy_host_once() {
    // both ends on one host's CPU 6, other tasks on it: each direction's verdict sees
    // the same CPU; the other direction's busy-host line is not repeated
    let mut t = bidir_test(0);
    // CPU 6 90 % busy: 10 % system, 5 % softirq, the rest other tasks' but the workers' run
    let busy = |e: &mut EndObservation| {
        let mut b = end(Role::Both, ryzen(), 6, &[(6, 10.0, 5.0, 10.0, 0, 0)]);
        b = with_threads(b, &[(6, 10.0, 2.0), (6, 10.0, 2.0), (6, 10.0, 2.0)]);
        e.intervals = b.intervals;
    };
    busy(&mut t.local);
    busy(t.remote.as_mut().unwrap());
    let m = Measured {
        reverse: Some(Box::new(shaped_200())),
        local: Some(End::Client),
        ..fast()
    };
    let v = verdict_of(&t, &m);
    assert!(v.host_load.is_some(), "{v:?}");
    let other = v.other_direction.as_deref().unwrap();
    assert!(other.host_load.is_some(), "{other:?}");
    let busy_lines = v.also.iter().filter(|a| a.contains("host busy: ")).count();
    assert_eq!(busy_lines, 1, "{:?}", v.also);
}

#[test]
fn bidir_path_model_is_the_direction_whose_loss_binds() {
    let quiet = |role| end(role, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let t = test(quiet(Role::Both), quiet(Role::Both));
    // server → client lossy (cubic, the loss binds), client → server clean and faster
    let clean = Measured {
        throughput: Some(BitsPerSecond::from_gbps(9.0)),
        retransmits: Some(0),
        bytes_sent: Some(4_000_000_000),
        mss: Some(1448),
        rtt_us: Some((30, 60, 90)),
        congestion: Some("cubic".into()),
        ..Default::default()
    };
    for local in [End::Client, End::Server] {
        let m = Measured {
            reverse: Some(Box::new(rx_drop_run(false))),
            local: Some(local),
            ..clean.clone()
        };
        let c = ceiling_for(&t, &m).expect("the lossy direction's model binds");
        assert_eq!(c.direction, Some(Flow::ServerToClient), "{local:?}");
        assert_eq!(c.retransmits, 9166);
        let v = verdict_of(&t, &m);
        assert_eq!(
            (v.id, v.direction),
            (VerdictId::LossLimited, Some(Flow::ServerToClient)),
            "{v:?}"
        );
        // the same figures the other way round: client → server's model
        let m = Measured {
            reverse: Some(Box::new(clean.clone())),
            local: Some(local),
            ..rx_drop_run(false)
        };
        let c = ceiling_for(&t, &m).expect("the lossy direction's model binds");
        assert_eq!(c.direction, Some(Flow::ClientToServer), "{local:?}");
    }
    // both clean: no model; not --bidir: no direction
    let m = Measured {
        reverse: Some(Box::new(clean.clone())),
        local: Some(End::Client),
        ..clean
    };
    assert_eq!(ceiling_for(&t, &m), None);
    let one = test(idle_sender(), quiet(Role::Receiver));
    let c = ceiling_for(&one, &rx_drop_run(false)).unwrap();
    assert_eq!(c.direction, None);
}

#[test]
fn bidir_path_model_is_each_direction_whose_loss_binds() {
    let quiet = |role| end(role, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let t = test(quiet(Role::Both), quiet(Role::Both));
    // both directions lossy (cubic, the loss binds each): client → server the lossier and
    // slower (twice the retransmits, 1/√2 of the rate: at its own Mathis ceiling)
    let lossy = rx_drop_run(false);
    let lossier = Measured {
        throughput: Some(BitsPerSecond(5_752_395_430.0 / 2f64.sqrt())),
        retransmits: Some(2 * 9166),
        ..lossy.clone()
    };
    for local in [End::Client, End::Server] {
        let m = Measured {
            reverse: Some(Box::new(lossy.clone())),
            local: Some(local),
            ..lossier.clone()
        };
        let c = ceiling_for(&t, &m).expect("both directions' models bind");
        // the verdict's (slower) direction first, the other's under it
        assert_eq!(
            (c.direction, c.retransmits),
            (Some(Flow::ClientToServer), 2 * 9166),
            "{local:?}"
        );
        let other = c.other_direction.as_deref().expect("the other binds too");
        assert_eq!(
            (other.direction, other.retransmits),
            (Some(Flow::ServerToClient), 9166),
            "{local:?}"
        );
        assert!(other.other_direction.is_none());
        let v = verdict_of(&t, &m);
        assert_eq!(
            (v.id, v.direction),
            (VerdictId::LossLimited, Some(Flow::ClientToServer)),
            "{v:?}"
        );
        let o = v.other_direction.as_deref().unwrap();
        assert_eq!(
            (o.id, o.direction),
            (VerdictId::LossLimited, Some(Flow::ServerToClient)),
            "{o:?}"
        );
    }
    // one direction binding (as before): one model, no other
    let m = Measured {
        reverse: Some(Box::new(lossy)),
        local: Some(End::Client),
        ..Measured {
            throughput: Some(BitsPerSecond::from_gbps(9.0)),
            retransmits: Some(0),
            bytes_sent: Some(4_000_000_000),
            mss: Some(1448),
            rtt_us: Some((30, 60, 90)),
            congestion: Some("cubic".into()),
            ..Default::default()
        }
    };
    let c = ceiling_for(&t, &m).unwrap();
    assert_eq!(c.direction, Some(Flow::ServerToClient));
    assert!(c.other_direction.is_none());
    // not --bidir: no direction, no other
    let one = test(idle_sender(), quiet(Role::Receiver));
    let c = ceiling_for(&one, &rx_drop_run(false)).unwrap();
    assert_eq!((c.direction, c.other_direction), (None, None));
}

/// A BBR sender at 200 Mbit/s, flat, with `rtt` (min, mean, max µs) and 3 % of its
/// segments retransmitted (a tbf's drops of BBR's probing, as in the lab: 2-4 %).
fn bbr_flat(bps: f64, rtt: (u64, u64, u64)) -> Measured {
    let bytes = (bps * 5.0 / 8.0) as u64;
    Measured {
        throughput: Some(BitsPerSecond(bps)),
        interval_bps: vec![bps * 0.7, bps, bps * 1.01, bps * 0.99, bps],
        rtt_us: Some(rtt),
        retransmits: Some(bytes / 1448 * 3 / 100),
        bytes_sent: Some(bytes),
        mss: Some(1448),
        congestion: Some("bbr".into()),
        ..Default::default()
    }
}

#[test]
fn bbr_behind_a_shaper_is_path_limited_despite_its_drops() {
    // quiet ends, the RTT grown by the shaper's queue: 0.06 → 45 ms; 3 % of the segments
    // retransmitted, over the shaped check's 0.3 %
    let quiet_rx = end(Role::Receiver, ryzen(), 6, &[(6, 10.0, 5.0, 85.0, 0, 0)]);
    let t = test(idle_sender(), quiet_rx.clone());
    let m = bbr_flat(200e6, (60, 20_000, 45_000));
    assert!(m.tcp_loss().unwrap() > 0.02, "{:?}", m.tcp_loss());
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::PathLimited, "{v:?}");
    assert!(v.line.contains("RTT grew"), "{}", v.line);
    assert_eq!(ceiling_for(&t, &m), None);
    // the shaped check (step 2e) does not hold at 3 %: the flat rate with nothing else
    // holding it (step 6) names the path, and BBR's loss is said not to bind
    assert!(
        v.also.iter().any(|a| a.contains("the sender ran bbr")),
        "{:?}",
        v.also
    );
}

#[test]
fn bbr_under_random_loss_on_a_saturated_cpu_is_not_path_limited() {
    // BBR ignores the nft drops (1 in 200) and runs at the receiver's CPU's speed, flat,
    // its backlog growing the RTT: 0.29 → 1.9 ms
    let r = end(Role::Receiver, ryzen(), 6, &[(6, 95.0, 3.0, 2.0, 0, 10)]);
    let r = with_threads(r, &[(6, 90.0, 5.0), (6, 91.0, 4.0), (6, 90.0, 5.0)]);
    let t = test(idle_sender(), r);
    let m = Measured {
        retransmits: Some(10678),
        bytes_sent: Some(1_912_209_408),
        ..bbr_flat(3.8e9, (288, 900, 1900))
    };
    let v = verdict_of(&t, &m);
    assert_eq!(v.id, VerdictId::ReceiverCpuBound, "{v:?}");
    assert!(
        !v.also.iter().any(|a| a.starts_with("path-limited")),
        "{:?}",
        v.also
    );
}

#[test]
fn every_id_is_documented() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/explain.md"
    ))
    .unwrap();
    for id in VerdictId::ALL {
        assert!(
            doc.contains(&format!("| `{id}` |")),
            "{id} is not in docs/explain.md's table"
        );
    }
}

/// docs/explain.md's precedence table is the model's (`WIRESPEED_UPDATE_SNAPSHOTS=1` writes
/// it between its markers).
#[test]
fn the_docs_precedence_table_is_the_models() {
    let path = format!("{}/../../docs/explain.md", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("docs/explain.md");
    let (begin, end) = ("<!-- precedence:begin -->\n", "<!-- precedence:end -->");
    let a = text.find(begin).expect("the begin marker") + begin.len();
    let b = text.find(end).expect("the end marker");
    let want = wirespeed_model::precedence::markdown();
    if std::env::var_os("WIRESPEED_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &text[..a], &text[b..])).unwrap();
        return;
    }
    assert_eq!(
        &text[a..b],
        want,
        "docs/explain.md's precedence table is stale"
    );
}

/// Every rule's findings have ids the rule declares and rows that list their id; every id but
/// `unknown` has a rule (or the decision's fallback); every row's ids differ in position from
/// every other row's: any two findings that fire together have a precedence (bound, then the
/// row, then strength), and the table has no two rows at one position.
#[test]
fn every_rule_has_its_rows_and_every_pair_a_precedence() {
    use wirespeed_model::precedence::{position, PRECEDENCE};
    let mut covered: Vec<VerdictId> = vec![VerdictId::NoCpuSaturated];
    for r in super::rules::RULES {
        for id in r.ids {
            assert!(
                PRECEDENCE.iter().any(|row| row.ids.contains(id)),
                "{}: {id} has no row",
                r.name
            );
            covered.push(*id);
        }
    }
    for id in VerdictId::ALL {
        assert!(covered.contains(&id), "{id} has no rule");
    }
    let positions: std::collections::BTreeSet<usize> =
        PRECEDENCE.iter().map(|r| position(r.rank)).collect();
    assert_eq!(positions.len(), PRECEDENCE.len());
    // every pair of rows is ordered one way
    for a in PRECEDENCE {
        for b in PRECEDENCE {
            if a.rank != b.rank {
                assert_ne!(position(a.rank), position(b.rank));
            }
        }
    }
}

/// A small deterministic generator (xorshift) for the property test: the same cases every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() % 10_000) as f64 / 10_000.0 * (hi - lo)
    }
    fn coin(&mut self) -> bool {
        self.next() % 2 == 0
    }
}

/// Property: over many generated tests mixing facts about the setup (one host, pinned or not;
/// MTUs that differ; a path MTU below the interface's) with limits that bound or not (CPUs
/// busy or saturated, a flat shaped rate with drops, a window, UDP loss), a fact never leads
/// without its own evidence, and the headline is never less bound than a finding under it.
#[test]
fn a_setup_fact_without_its_evidence_never_leads_over_a_limit_that_bound() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let facts = [
        VerdictId::SameHost,
        VerdictId::MtuMismatch,
        VerdictId::PmtuBelowMtu,
    ];
    let mut led_by_fact_with_evidence = 0;
    let mut limits_over_facts = 0;
    for case in 0..600 {
        let one_host = g.coin();
        let pinned = g.coin();
        let udp = g.next() % 4 == 0;
        let busy = |g: &mut Gen| {
            if g.next() % 3 == 0 {
                g.f(91.0, 100.0)
            } else {
                g.f(5.0, 80.0)
            }
        };
        let mk = |g: &mut Gen, role: Role, cpu: u32, mtu: u32| {
            let b = busy(g);
            let sys = b * 0.6;
            let sirq = b * 0.1;
            let mut e = end(role, ryzen(), cpu, &[(cpu, sys, sirq, 100.0 - b, 0, 10)]);
            e.iface_mtu = Some(mtu);
            e.iface_speed_mbps = Some(100_000);
            e.iface_link = Some(LinkKind::Nic);
            if one_host {
                e.host = Some("vm".into());
            }
            if !pinned {
                e.total.workers[0].cpu_requested = None;
            }
            let run = g.f(1.0, 60.0);
            with_threads(e, &[(cpu, run, 1.0), (cpu, run, 1.0), (cpu, run, 1.0)])
        };
        let (smtu, rmtu) = if g.coin() { (9000, 1500) } else { (9000, 9000) };
        let scpu = 6;
        let rcpu = if pinned { 7 } else { 6 };
        let mut s = mk(&mut g, Role::Sender, scpu, smtu);
        let r = mk(&mut g, Role::Receiver, rcpu, rmtu);
        if !udp {
            let rwnd = if g.next() % 4 == 0 { 400_000 } else { 10_000 };
            s.total.tcp = Some(TcpLimits {
                busy_us: 1_000_000,
                rwnd_limited_us: rwnd,
                pmtu: Some(if g.coin() { 1500 } else { smtu }),
                ..Default::default()
            });
        }
        let flat = g.coin();
        let rate = g.f(0.2e9, 5e9);
        let intervals: Vec<f64> = (0..5)
            .map(|i| {
                if flat || i == 0 {
                    rate * g.f(0.99, 1.01)
                } else {
                    rate * g.f(0.3, 1.7)
                }
            })
            .collect();
        let bytes = (rate / 8.0 * 5.0) as u64;
        let m = Measured {
            throughput: Some(BitsPerSecond(rate)),
            interval_bps: intervals,
            udp,
            retransmits: (!udp).then_some(bytes / 1448 / 2000),
            bytes_sent: Some(bytes),
            mss: (!udp).then_some(1448),
            rtt_us: (!udp).then_some((200, 400, 3000)),
            udp_lost: udp.then(|| {
                let sent = bytes / 1400;
                (sent * (g.next() % 50) / 100, sent)
            }),
            congestion: Some("cubic".into()),
            ..Default::default()
        };
        let v = verdict_of(&test(s, r), &m);
        let head_bound = v.standing.bound.expect("a decided verdict has its bound");
        for a in v.also_findings() {
            assert!(
                a.standing.bound.is_none_or(|b| head_bound <= b),
                "case {case}: {} ({head_bound:?}) leads a more bound {:?}: {v:?}",
                v.id,
                a
            );
        }
        if facts.contains(&v.id) {
            assert_eq!(
                head_bound,
                Bound::Binding,
                "case {case}: a fact led without its evidence: {v:?}"
            );
            led_by_fact_with_evidence += 1;
        }
        if v.also_findings().any(|a| {
            a.id.is_some_and(|id| facts.contains(&id)) && a.standing.bound == Some(Bound::Fact)
        }) && head_bound == Bound::Binding
        {
            limits_over_facts += 1;
        }
    }
    // the generator reaches both sides: facts that led with their evidence, limits over facts
    assert!(
        led_by_fact_with_evidence > 0,
        "no fact led with its evidence"
    );
    assert!(limits_over_facts > 0, "no limit led over a fact");
}

/// The running verdict (`--live`, `top`: the intervals' sums so far, no RTT samples or MSS from
/// the report) and the final one agree on the same recorded runs: they are one function.
#[test]
fn the_running_and_the_final_verdict_agree_on_a_recorded_run() {
    for name in [
        "loopback-unpinned-2cpu.json",
        "veth-lab-unpinned-2cpu.json",
        "lab-loss-half-percent-2cpu.json",
    ] {
        let (mut obs, doc) = recorded(name);
        let full = measured_of(&doc);
        // the recordings predate the sender's MSS in its observation (tcpi_snd_mss, which the
        // observer records now): the running verdict reads it there
        if let Some(t) = obs
            .local
            .total
            .tcp
            .as_mut()
            .filter(|_| obs.local.role.sends())
        {
            t.mss = t.mss.or(full.mss);
        }
        // what engine::live::SoFar gives: throughput, interval rates, retransmits,
        // bytes; the MSS and the RTT come from the sender's own TCP_INFO in the observation
        // (with_sender_tcp), as they do for a -R client's final verdict
        let so_far = Measured {
            throughput: full.throughput,
            interval_bps: full.interval_bps.clone(),
            udp: full.udp,
            retransmits: full.retransmits,
            bytes_sent: full.bytes_sent,
            rtt_us: full.rtt_us,
            ..Default::default()
        };
        let (running, fin) = (verdict_of(&obs, &so_far), verdict_of(&obs, &full));
        assert_eq!(running.id, fin.id, "{name}: {running:?} / {fin:?}");
    }
}

/// A bond of two 100G members hashing `layer2`: a flat 94 Gbit/s is one member's line (the
/// per-host-pair limit), named first with the fix; 60 Gbit/s is not held at a member; two
/// members' worth is not one member's either.
#[test]
fn a_rate_at_one_bond_members_speed_is_that_members_line() {
    use wirespeed_model::observation::{IfaceStack, StackBond, StackMember};
    let bond = |policy: &str| IfaceStack {
        iface: "bond0".into(),
        layers: vec!["bond".into()],
        bond: Some(StackBond {
            name: "bond0".into(),
            mode: Some("802.3ad".into()),
            xmit_hash_policy: Some(policy.into()),
        }),
        members: (0..2)
            .map(|i| StackMember {
                name: format!("ens1f{i}np{i}"),
                speed_mbps: Some(100_000),
                up: true,
                nic: true,
                numa_node: Some(0),
                irqs: vec![],
            })
            .collect(),
    };
    let mk = |policy: &str| {
        let mut s = idle_sender();
        s.iface = Some("bond0".into());
        s.iface_speed_mbps = Some(200_000);
        s.iface_link = Some(LinkKind::Nic);
        s.iface_stack = Some(bond(policy));
        let mut r = end(Role::Receiver, ryzen(), 7, &[(7, 40.0, 10.0, 50.0, 0, 10)]);
        r.iface_speed_mbps = Some(200_000);
        test(s, r)
    };
    let at = |gbps: f64| Measured {
        throughput: Some(BitsPerSecond::from_gbps(gbps)),
        interval_bps: vec![gbps * 0.9e9, gbps * 1e9, gbps * 1e9, gbps * 1.001e9],
        ..Default::default()
    };
    let v = verdict_of(&mk("layer2"), &at(94.0));
    assert_eq!(v.id, VerdictId::BondMemberLimited, "{v:?}");
    assert_eq!(v.standing.bound, Some(Bound::Binding));
    assert!(v.line.contains("xmit_hash_policy layer2"), "{}", v.line);
    assert!(
        v.line.contains("layer3+4 (wirespeed tune --iface bond0)"),
        "{}",
        v.line
    );
    assert!(v.line.contains("pair of hosts"), "{}", v.line);
    // below the member's speed: not held at it
    let v = verdict_of(&mk("layer2"), &at(60.0));
    assert!(
        v.id != VerdictId::BondMemberLimited
            && !v
                .also_findings()
                .any(|a| a.id == Some(VerdictId::BondMemberLimited)),
        "{v:?}"
    );
    // above one member's speed: more than one member carried it
    let v = verdict_of(&mk("layer3+4"), &at(150.0));
    assert_ne!(v.id, VerdictId::BondMemberLimited, "{v:?}");
    // an active-backup bond hashes nothing: one member is all it has by design
    let mut ab = mk("layer2");
    ab.local
        .iface_stack
        .as_mut()
        .unwrap()
        .bond
        .as_mut()
        .unwrap()
        .mode = Some("active-backup".into());
    assert_ne!(verdict_of(&ab, &at(94.0)).id, VerdictId::BondMemberLimited);
}

/// Loss far below the Mathis ceiling at a short RTT: with the connection's own timeouts
/// (tcpi_total_rto) Padhye's timeout-aware ceiling binds; with none counted nothing explains the
/// gap and the note says nothing else was found; a kernel without the counters gets a
/// consistent, not a binding, loss finding.
#[test]
fn loss_far_below_mathis_is_judged_with_the_connections_timeouts() {
    let quiet = end(Role::Receiver, ryzen(), 6, &[(6, 30.0, 0.0, 70.0, 0, 0)]);
    let with_rto = |rto: Option<(u64, u64)>| {
        let mut s = idle_sender();
        s.total.tcp = Some(TcpLimits {
            busy_us: 4_000_000,
            rto_timeouts: rto.map(|r| r.0),
            rto_time_ms: rto.map(|r| r.1),
            ..Default::default()
        });
        test(s, quiet.clone())
    };
    // 2 % of 1448-byte segments lost at 0.5 ms: Mathis allows about 200 Mbit/s, Padhye with a
    // 200 ms timeout about 10; 12 Mbit/s measured, flat
    let segments = 2_000_000u64;
    let m = Measured {
        throughput: Some(BitsPerSecond(12e6)),
        interval_bps: vec![11e6, 12e6, 9e6, 15e6, 12e6],
        retransmits: Some(segments / 50),
        bytes_sent: Some(segments * 1448),
        mss: Some(1448),
        rtt_us: Some((500, 600, 900)),
        congestion: Some("cubic".into()),
        ..Default::default()
    };
    let v = verdict_of(&with_rto(Some((120, 24_000))), &m);
    assert_eq!(v.id, VerdictId::LossLimited, "{v:?}");
    assert_eq!(v.standing.bound, Some(Bound::Binding));
    assert!(
        v.line
            .starts_with("loss-limited by retransmission timeouts"),
        "{}",
        v.line
    );
    // no timeouts came: nothing explains the gap, and the note says nothing else was found
    let v = verdict_of(&with_rto(Some((0, 0))), &m);
    assert_ne!(v.id, VerdictId::LossLimited, "{v:?}");
    assert!(
        v.also.iter().any(|a| a.kind == AlsoKind::Loss
            && a.contains("no retransmission timeouts came")
            && a.contains("nothing else was found")),
        "{v:?}"
    );
    // a kernel that does not count them: consistent, not shown
    let v = verdict_of(&with_rto(None), &m);
    let loss = std::iter::once((v.id, v.standing.bound))
        .chain(v.also_findings().map(|a| (a.id.unwrap(), a.standing.bound)))
        .find(|(id, _)| *id == VerdictId::LossLimited);
    assert_eq!(
        loss,
        Some((VerdictId::LossLimited, Some(Bound::Consistent))),
        "{v:?}"
    );
}

#[test]
fn bidir_keeps_the_other_directions_busy_line_beside_a_contended_verdict() {
    // one host's CPU 6 busy with other tasks; the client's workers wait for it (40 % of the
    // test), the server's hardly; the server's sends window-limited (the rates equal, so
    // client → server is the verdict's direction)
    let mut t = bidir_test(600);
    let busy = |e: &mut EndObservation, run: f64, wait: f64| {
        let b = end(Role::Both, ryzen(), 6, &[(6, 10.0, 5.0, 10.0, 0, 0)]);
        e.intervals = with_threads(b, &[(6, run, wait), (6, run, wait), (6, run, wait)]).intervals;
    };
    busy(&mut t.local, 30.0, 40.0);
    busy(t.remote.as_mut().unwrap(), 10.0, 2.0);
    let busy_lines = |v: &Verdict| -> Vec<String> {
        v.also
            .iter()
            .filter(|a| a.kind == AlsoKind::HostLoad)
            .map(|a| a.line.clone())
            .collect()
    };
    let m = |local| Measured {
        reverse: Some(Box::new(fast())),
        local: Some(local),
        ..fast()
    };
    // read from the client: client → server contended, which carries the load typed but says
    // it in its own line; server → client window-limited, with its busy-host line, kept
    let v = verdict_of(&t, &m(End::Client));
    assert_eq!(
        (v.id, v.direction),
        (VerdictId::CpuContended, Some(Flow::ClientToServer)),
        "{v:?}"
    );
    assert!(v.host_load.is_some(), "{v:?}");
    let other = v.other_direction.as_deref().unwrap();
    assert_eq!(other.id, VerdictId::WindowLimited, "{other:?}");
    let lines = busy_lines(&v);
    assert_eq!(lines.len(), 1, "{:?}", v.also);
    assert!(
        lines[0].starts_with("server → client: host busy: other tasks took "),
        "{lines:?}"
    );
    // read from the server (the waiting worker now the server's): client → server
    // window-limited says the busy host; server → client contended has no such line to drop
    let v = verdict_of(&t, &m(End::Server));
    assert_eq!(
        (v.id, v.direction),
        (VerdictId::WindowLimited, Some(Flow::ClientToServer)),
        "{v:?}"
    );
    assert_eq!(
        v.other_direction.as_deref().map(|o| o.id),
        Some(VerdictId::CpuContended)
    );
    let lines = busy_lines(&v);
    assert_eq!(lines.len(), 1, "{:?}", v.also);
    assert!(lines[0].starts_with("host busy: "), "{lines:?}");
}

#[test]
fn a_flat_rate_with_drops_is_no_shaper_where_the_host_held_a_worker() {
    // An end of one worker on `cpu`: the CPU's system, softirq and idle shares (the rest
    // user), and the worker's run and wait in each of three intervals.
    type Worker = (u32, (f64, f64, f64), [(f64, f64); 3]);
    let at = |role, (cpu, (sys, sirq, idle), runs): Worker| {
        with_threads(
            end(role, ryzen(), cpu, &[(cpu, sys, sirq, idle, 0, 0)]),
            &runs.map(|(run, wait)| (cpu, run, wait)),
        )
    };
    // a veth pair, no shaper: the sender's CPU 0 full of its own work, its worker running 97 %
    let tx_full: Worker = (
        0,
        (81.0, 16.5, 1.5),
        [(97.0, 1.0), (98.0, 1.0), (97.0, 1.0)],
    );
    // the same rate with the sender's CPU to spare
    let tx_spare: Worker = (
        0,
        (30.0, 10.0, 60.0),
        [(30.0, 0.0), (31.0, 0.0), (30.0, 0.0)],
    );
    // a sender with room, running 85-91 %
    let tx_room: Worker = (
        0,
        (59.0, 29.0, 12.0),
        [(91.0, 1.0), (87.0, 1.0), (85.0, 1.0)],
    );
    // the receiver's CPU full of a busy loop, its worker mostly waiting for data
    let rx_idle: Worker = (1, (14.0, 0.0, 0.0), [(14.0, 3.0), (14.0, 2.0), (14.0, 2.0)]);
    // the receiver's worker held off its CPU by the loop, waiting 10-14 % of each interval
    let rx_held: Worker = (
        1,
        (31.0, 3.0, 0.0),
        [(39.0, 14.0), (37.0, 10.0), (37.0, 13.0)],
    );
    // both ends' CPUs to spare
    let rx_spare: Worker = (
        1,
        (20.0, 5.0, 75.0),
        [(25.0, 0.0), (25.0, 0.0), (25.0, 0.0)],
    );
    // cubic over a 30 µs path, flat after the first interval: one retransmit at 15.5 Gbit/s,
    // two at 37.3
    let one_drop = Measured {
        throughput: Some(BitsPerSecond(15.5e9)),
        interval_bps: vec![26.5e9, 15.4e9, 15.51e9, 15.48e9],
        retransmits: Some(1),
        bytes_sent: Some(7_750_000_000),
        mss: Some(1448),
        rtt_us: Some((30, 45, 60)),
        congestion: Some("cubic".into()),
        ..Default::default()
    };
    let two_drops = Measured {
        throughput: Some(BitsPerSecond(37.3e9)),
        interval_bps: vec![37.57e9, 36.61e9, 36.84e9, 38.52e9],
        retransmits: Some(2),
        bytes_sent: Some(18_650_000_000),
        ..one_drop.clone()
    };
    for (sender, receiver, m, want) in [
        (tx_full, rx_idle, &one_drop, VerdictId::SenderCpuBound),
        (tx_spare, rx_idle, &one_drop, VerdictId::PathLimited),
        (tx_room, rx_held, &two_drops, VerdictId::CpuContended),
        (tx_spare, rx_spare, &two_drops, VerdictId::PathLimited),
    ] {
        let v = verdict_of(
            &test(at(Role::Sender, sender), at(Role::Receiver, receiver)),
            m,
        );
        assert_eq!(v.id, want, "{} / {:?}", v.line, v.also);
        // where the host held a worker, no `path-limited` under `also` either
        let path_said = std::iter::once(&v.line)
            .chain(v.also.iter().map(|a| &a.line))
            .any(|l| l.starts_with("path-limited"));
        assert_eq!(path_said, want == VerdictId::PathLimited, "{:?}", v.also);
    }
}

#[test]
fn a_bidir_direction_is_not_contended_for_the_other_directions_held_worker() {
    // client → server through a 200 Mbit/s shaper; server → client free. At the client
    // another task fills CPU 6, where its server → client worker (the receiver) waited 40 %
    // of the test; its client → server worker ran on CPU 7, free
    let thread = worker_of;
    for told in [true, false] {
        let mut t = bidir_test(0);
        let b = end(
            Role::Both,
            ryzen(),
            6,
            &[(6, 20.0, 5.0, 0.0, 0, 0), (7, 20.0, 5.0, 70.0, 0, 0)],
        );
        t.local.total.cpus = b.total.cpus.clone();
        t.local.intervals = (0..3)
            .map(|_| IntervalObservation {
                cpus: b.total.cpus.clone(),
                threads: vec![
                    thread(42, 7, 25.0, 0.5, told.then_some(Role::Sender)),
                    thread(43, 6, 30.0, 40.0, told.then_some(Role::Receiver)),
                ],
                ..Default::default()
            })
            .collect();
        let v = verdict_of(&t, &shaped_client_to_server(End::Client));
        let other = v.other_direction.as_deref().expect("the other direction");
        assert_eq!(
            (v.direction, other.direction),
            (Some(Flow::ClientToServer), Some(Flow::ServerToClient))
        );
        // the held worker is server → client's: its verdict; client → server's shaper stands
        assert_eq!(other.id, VerdictId::CpuContended, "{told}: {}", other.line);
        assert_eq!(
            v.id,
            VerdictId::PathLimited,
            "{told}: {} / {:?}",
            v.line,
            v.also
        );
        // client → server's own findings name CPU 6's contention and saturation (as the
        // sender's) only where the threads do not say whose worker waited there
        let own = own_findings(&v);
        assert_eq!(
            own.iter().any(|l| l.contains("CPU 6")),
            !told,
            "{told}: {own:?}"
        );
    }
}

#[test]
fn a_bidir_direction_is_judged_on_its_own_workers_where_the_threads_say_whose() {
    // client → server through a 200 Mbit/s shaper (flat, 40 drops); server → client free. At
    // each end CPU 6 is full of work, and of the end's two workers on it (one per direction)
    // one ran 97 % of the test, the other 20 %
    let thread = |tid, run, role| worker_of(tid, 6, run, 1.0, role);
    // (the busy worker is client → server's, the threads carry their roles, path-limited)
    for (busy_c2s, told, shaped) in [
        // the other direction's busy worker says nothing of this one's path: its drops are
        // a shaper's
        (false, true, true),
        // this direction's own workers never blocked: the host held the rate, as in a
        // one-way test
        (true, true, false),
        // threads that do not say whose (a peer that does not tell): the drops count as
        // they did, whichever worker was busy
        (true, false, true),
        (false, false, true),
    ] {
        let mut t = bidir_test(0);
        for (e, client) in [(&mut t.local, true), (t.remote.as_mut().unwrap(), false)] {
            let (c2s, s2c) = if client {
                (Role::Sender, Role::Receiver)
            } else {
                (Role::Receiver, Role::Sender)
            };
            let (c2s_run, s2c_run) = if busy_c2s { (97.0, 20.0) } else { (20.0, 97.0) };
            let b = end(Role::Both, ryzen(), 6, &[(6, 60.0, 30.0, 5.0, 0, 0)]);
            e.total.cpus = b.total.cpus.clone();
            e.intervals = (0..3)
                .map(|_| IntervalObservation {
                    cpus: b.total.cpus.clone(),
                    threads: vec![
                        thread(42, c2s_run, told.then_some(c2s)),
                        thread(43, s2c_run, told.then_some(s2c)),
                    ],
                    ..Default::default()
                })
                .collect();
        }
        let v = verdict_of(&t, &shaped_client_to_server(End::Client));
        assert_eq!(
            v.direction,
            Some(Flow::ClientToServer),
            "{busy_c2s} {told}: {}",
            v.line
        );
        assert_eq!(
            v.id == VerdictId::PathLimited,
            shaped,
            "{busy_c2s} {told}: {} / {:?}",
            v.line,
            v.also
        );
        // judged as a whole (no direction's own figures), the workers of both directions are
        // one end's: a held one may be the other direction's, and the drops count
        let whole = verdict_of(&t, &shaped_200());
        assert_eq!(
            (whole.id, whole.direction),
            (VerdictId::PathLimited, None),
            "{busy_c2s} {told}: {} / {:?}",
            whole.line,
            whole.also
        );
    }
}

/// A worker is followed on its own thread: the one of its id where the end said it. An end
/// lists its workers as they ended (senders first) while its threads started receivers first,
/// so in `--bidir` the order matched a sender to a receiver's thread; an end that did not say
/// is still read by order.
#[test]
fn a_worker_is_followed_on_the_thread_of_its_id() {
    use super::cpu::IntervalThreads;
    let thread = |tid, cpu, role| worker_of(tid, cpu, 50.0, 0.0, Some(role));
    let worker = |n, tid| WorkerRun {
        worker: n,
        tid,
        ..Default::default()
    };
    let mut e = end(Role::Both, ryzen(), 6, &[(6, 20.0, 5.0, 70.0, 0, 0)]);
    // the receiver started first (the lower id), on CPU 6; the sender on CPU 7
    let i = IntervalObservation {
        threads: vec![thread(10, 6, Role::Receiver), thread(20, 7, Role::Sender)],
        ..Default::default()
    };
    e.total.workers = vec![worker(0, Some(20)), worker(1, Some(10))];
    let cpu_of = |e: &EndObservation, w: &WorkerRun| {
        IntervalThreads::of(e, &i).of_worker(w).and_then(|t| t.cpu)
    };
    assert_eq!(cpu_of(&e, &e.total.workers[0]), Some(7));
    assert_eq!(cpu_of(&e, &e.total.workers[1]), Some(6));
    // a thread of that id not in the interval: not another one's
    assert_eq!(cpu_of(&e, &worker(0, Some(30))), None);
    // an end that did not say: by order
    e.total.workers = vec![worker(0, None), worker(1, None)];
    assert_eq!(cpu_of(&e, &e.total.workers[0]), Some(6));
}

/// `--bidir`: a CPU only the other direction's worker ran on is not this direction's. At the
/// client, the server → client receiver filled CPU 6 with its own work while the client →
/// server sender ran 60 % of the test on CPU 7, which had room, through a 200 Mbit/s shaper:
/// client → server is the shaper's, with no CPU 6 among its own findings (it read "sender
/// CPU-bound (CPU 6 ...)" there before), and CPU 6 is server → client's.
#[test]
fn a_bidir_direction_leaves_out_the_cpus_of_the_other_directions_workers() {
    let mut t = bidir_test(0);
    let c = end(
        Role::Both,
        ryzen(),
        6,
        &[(6, 60.0, 35.0, 2.0, 0, 0), (7, 15.0, 5.0, 78.0, 0, 0)],
    );
    let thread = |tid, cpu, run, role| worker_of(tid, cpu, run, 1.0, Some(role));
    let workers = vec![
        WorkerRun {
            worker: 0,
            cpu_requested: Some(7),
            cpus_seen: CpuSet::from_cpus([7]),
            streams: vec![5],
            tid: Some(20),
        },
        WorkerRun {
            worker: 1,
            cpu_requested: Some(6),
            cpus_seen: CpuSet::from_cpus([6]),
            streams: vec![7],
            tid: Some(10),
        },
    ];
    t.local.total.cpus = c.total.cpus.clone();
    t.local.total.workers = workers.clone();
    t.local.intervals = (0..3)
        .map(|_| IntervalObservation {
            cpus: c.total.cpus.clone(),
            workers: workers.clone(),
            threads: vec![
                thread(10, 6, 95.0, Role::Receiver),
                thread(20, 7, 60.0, Role::Sender),
            ],
            ..Default::default()
        })
        .collect();
    let v = verdict_of(&t, &shaped_client_to_server(End::Client));
    assert_eq!(
        (v.id, v.direction),
        (VerdictId::PathLimited, Some(Flow::ClientToServer)),
        "{} / {:?}",
        v.line,
        v.also
    );
    let own = own_findings(&v);
    assert!(!own.iter().any(|l| l.contains("CPU 6")), "{own:?}");
    let other = v.other_direction.as_deref().expect("the other direction");
    assert!(other.line.contains("CPU 6"), "{}", other.line);
}

/// An interval's CPUs are found by id whatever their order (a peer's list need not be
/// ascending), the first of an id as a scan finds it, and an absent one is none.
#[test]
fn an_intervals_cpus_are_found_by_id_in_any_order() {
    use super::cpu::CpusById;
    let i = IntervalObservation {
        cpus: vec![
            cpu_row(7, 10.0, 0.0, 0.0, 0.0, 90.0),
            cpu_row(2, 20.0, 0.0, 0.0, 0.0, 80.0),
            cpu_row(7, 30.0, 0.0, 0.0, 0.0, 70.0),
            cpu_row(0, 40.0, 0.0, 0.0, 0.0, 60.0),
        ],
        ..Default::default()
    };
    let by_id = CpusById::of(&i);
    for cpu in [0, 2, 7, 5, 9] {
        assert_eq!(by_id.get(cpu), i.cpu(cpu), "CPU {cpu}");
    }
    assert_eq!(by_id.get(7).map(|c| c.user), Some(Percent::new(10.0)));
}
