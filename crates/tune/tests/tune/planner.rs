//! The planner's rules on hand-built host views: IRQ policies and refusals, socket buffers,
//! congestion control, governors, irqbalance, persistence.

use std::collections::BTreeMap;

use wirespeed_doctor::rate::Basis;
use wirespeed_doctor::target::RateTarget;
use wirespeed_host::CpuSet;
use wirespeed_model::units::Rate;
use wirespeed_tune::plan::{Change, Plan};
use wirespeed_tune::planner::{self, buffer_target, IrqPolicy, PlanError, PlanOptions};
use wirespeed_tune::view::{
    CpuLayout, FindingView, GovernorView, HostView, IrqView, NicView, StackView, VectorKind,
};

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn irq(n: u32, name: &str, kind: VectorKind, req: &str, eff: &str) -> IrqView {
    IrqView {
        irq: n,
        name: Some(name.into()),
        kind,
        requested: set(req),
        effective: set(eff),
    }
}

/// A 12-CPU, two-L3 desktop like the captured Ryzen, with its IRQ layout.
fn ryzen() -> HostView {
    let mut governors = BTreeMap::new();
    for c in 0..12 {
        governors.insert(
            c,
            GovernorView {
                path: format!("/sys/devices/system/cpu/cpufreq/policy{c}/scaling_governor"),
                current: "powersave".into(),
                available: vec!["performance".into(), "powersave".into()],
            },
        );
    }
    let mut irqs = vec![irq(
        98,
        "mlx5_async0@pci:0000:01:00.0",
        VectorKind::Control,
        "0-11",
        "10",
    )];
    let cpus = [7, 8, 9, 3, 11, 7, 8, 9, 10, 11, 7, 8];
    for (i, n) in [99, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119]
        .into_iter()
        .enumerate()
    {
        let c = cpus[i].to_string();
        irqs.push(irq(
            n,
            &format!("mlx5_comp{i}@pci:0000:01:00.0"),
            VectorKind::Queue,
            &c,
            &c,
        ));
    }
    HostView {
        nic_choice: None,
        cstates: vec![],
        hostname: Some("crow".into()),
        live: false,
        layout: CpuLayout {
            online: set("0-11"),
            numa_nodes: [(0, set("0-11"))].into_iter().collect(),
            l3_groups: vec![set("0-5"), set("6-11")],
            siblings: BTreeMap::new(),
        },
        governors,
        stack: StackView {
            rmem_max: Some(212_992),
            wmem_max: Some(212_992),
            tcp_rmem: Some([4096, 131_072, 6_291_456]),
            tcp_wmem: Some([4096, 16_384, 4_194_304]),
            congestion_control: Some("cubic".into()),
            available_congestion_control: vec!["reno".into(), "cubic".into()],
            loadable_congestion_control: None,
            default_qdisc: Some("fq_codel".into()),
            tcp_mtu_probing: Some(0),
            netdev_max_backlog: Some(1000),
            netdev_budget: Some(300),
            softnet_dropped: Some(0),
            softnet_time_squeeze: Some(0),
        },
        irqbalance_running: Some(false),
        nic: Some(NicView {
            name: "enp1s0f0np0".into(),
            driver: Some("mlx5_core".into()),
            speed_mbps: Some(100_000),
            mtu: Some(9000),
            txqueuelen: Some(1000),
            numa_node: None,
            local_cpus: Some(set("0-11")),
            irqs,
            ring: None,
            coalesce: None,
            sizes: None,
            pause: None,
            ntuple: None,
        }),
        findings: vec![],
    }
}

fn finding(id: &str) -> FindingView {
    FindingView {
        id: id.into(),
        summary: format!("{id} summary"),
        fix: vec![],
        writes: vec![],
    }
}

/// The rate a target resolved and where it came from (`mbps`, by `basis`).
fn rate(basis: Basis) -> Option<RateTarget> {
    Some(RateTarget {
        rate: Rate::from_mbps(basis.mbps()).unwrap(),
        basis,
    })
}

/// The options for the ryzen view: the rate its target resolves without `--rate` (the NIC's
/// link speed, 100 Gbit/s), the app CPUs and the IRQ policy.
fn opts(app: Option<&str>, irq: Option<IrqPolicy>) -> PlanOptions {
    let mut o = PlanOptions::new("test");
    o.app_cpus = app.map(set);
    o.irq = irq;
    o.rate = rate(Basis::Link(100_000));
    o
}

fn irq_moves(p: &Plan) -> Vec<(u32, String)> {
    p.steps
        .iter()
        .filter_map(|s| match &s.change {
            Change::IrqAffinity { irq, cpus, .. } => Some((*irq, cpus.to_string())),
            _ => None,
        })
        .collect()
}

fn step_value(p: &Plan, setting: &str) -> Option<String> {
    p.steps
        .iter()
        .find(|s| s.setting == setting)
        .map(|s| s.new.clone())
}

#[test]
fn l3_policy_moves_only_the_stray_irq_and_never_onto_the_app_cpu() {
    let p = planner::plan(&ryzen(), &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    assert_eq!(p.irq_cpus.as_ref().unwrap().to_string(), "7-11");
    assert_eq!(irq_moves(&p), vec![(111, "10".to_string())]);
    assert_eq!(p.steps[0].finding, "irq-cross-l3");
    // the boot state holds the whole layout: every queue IRQ on one of 7-11
    let boot: Vec<_> = p
        .boot
        .iter()
        .filter_map(|s| match &s.change {
            Change::IrqAffinity { cpus, .. } => Some(cpus.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(boot.len(), 12);
    assert!(boot.iter().all(|c| c.is_subset(&set("7-11"))));
}

#[test]
fn an_app_cpu_that_holds_irqs_loses_them_with_as_few_moves_as_possible() {
    let p = planner::plan(&ryzen(), &opts(Some("8"), Some(IrqPolicy::L3))).unwrap();
    assert_eq!(p.irq_cpus.as_ref().unwrap().to_string(), "6-7,9-11");
    let moves = irq_moves(&p);
    // IRQs 109, 114, 119 sat on CPU 8 and 111 on CPU 3: exactly those move
    let moved: Vec<u32> = moves.iter().map(|m| m.0).collect();
    assert_eq!(moved, vec![109, 111, 114, 119]);
    assert!(moves.iter().all(|(_, c)| c != "8"));
    let finding_of = |irq: u32| {
        p.steps
            .iter()
            .find(|s| matches!(s.change, Change::IrqAffinity { irq: i, .. } if i == irq))
            .unwrap()
            .finding
            .clone()
    };
    assert_eq!(finding_of(109), "irq-on-app-core");
    assert_eq!(finding_of(111), "irq-cross-l3");
    // balanced: no CPU gets more than ceil(12 / 5) = 3 queue IRQs
    let mut load: BTreeMap<String, usize> = BTreeMap::new();
    for s in &p.boot {
        if let Change::IrqAffinity { cpus, .. } = &s.change {
            *load.entry(cpus.to_string()).or_default() += 1;
        }
    }
    assert!(load.values().all(|&n| n <= 3), "{load:?}");
}

#[test]
fn irq_cpus_list_is_round_robin_and_refuses_app_overlap_unless_allowed() {
    // nothing pinned yet (every IRQ on all CPUs): a plain round-robin
    let mut v = ryzen();
    for i in v.nic.as_mut().unwrap().irqs.iter_mut() {
        i.requested = set("0-11");
    }
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::Cpus(set("7-11"))))).unwrap();
    let cpus: Vec<String> = irq_moves(&p)
        .into_iter()
        .filter(|(irq, _)| *irq != 98)
        .map(|m| m.1)
        .collect();
    assert_eq!(
        cpus,
        ["7", "8", "9", "10", "11", "7", "8", "9", "10", "11", "7", "8"]
    );
    let err = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::Cpus(set("6-8"))))).unwrap_err();
    assert!(matches!(err, PlanError::Overlap { .. }), "{err}");
    assert!(err.to_string().contains("--allow-irq-on-app-cpus"));
    let mut o = opts(Some("6"), Some(IrqPolicy::Cpus(set("6-8"))));
    o.allow_irq_on_app_cpus = true;
    assert!(planner::plan(&v, &o).is_ok());
}

#[test]
fn refusals_name_the_flag() {
    // CPUs that are not online are the target's refusal (`wirespeed_doctor::target`, tested
    // there), before a plan
    let v = ryzen();
    let e = planner::plan(&v, &opts(None, Some(IrqPolicy::L3))).unwrap_err();
    assert_eq!(
        e,
        PlanError::Placement(wirespeed_doctor::placement::PlacementError::PolicyNeedsApp)
    );
    let e = planner::plan(&v, &opts(Some("6-11"), Some(IrqPolicy::L3))).unwrap_err();
    assert!(e.to_string().contains("fill their L3 group 6-11"), "{e}");
    let mut o = opts(None, None);
    o.mtu = Some(40);
    assert!(planner::plan(&v, &o).is_err());
    // an RTT out of its bounds is the target's refusal too
}

#[test]
fn smt_siblings_of_the_app_cpu_are_kept_free() {
    let mut v = ryzen();
    // pretend SMT: 6 and 7 are siblings
    v.layout.siblings.insert(6, set("6-7"));
    v.layout.siblings.insert(7, set("6-7"));
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    assert_eq!(p.irq_cpus.unwrap().to_string(), "8-11");
}

#[test]
fn without_a_policy_irqs_move_only_when_doctor_reports_placement() {
    let v = ryzen();
    let p = planner::plan(&v, &opts(Some("6"), None)).unwrap();
    assert!(irq_moves(&p).is_empty());
    assert!(p.irq_cpus.is_none());
    let mut v = ryzen();
    v.findings.push(finding("irq-cross-l3"));
    let p = planner::plan(&v, &opts(Some("6"), None)).unwrap();
    assert_eq!(irq_moves(&p), vec![(111, "10".to_string())]);
    assert!(p
        .irq_rule
        .unwrap()
        .contains("chosen because doctor reports"));
}

#[test]
fn node_policy_on_a_two_node_host_and_l3_refused_off_node() {
    let mut v = ryzen();
    v.layout.numa_nodes = [(0, set("0-5")), (1, set("6-11"))].into_iter().collect();
    let nic = v.nic.as_mut().unwrap();
    nic.numa_node = Some(1);
    // an IRQ on node 0
    nic.irqs[1].requested = set("2");
    nic.irqs[1].effective = set("2");
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::Node))).unwrap();
    assert_eq!(p.irq_cpus.as_ref().unwrap().to_string(), "7-11");
    let s = p
        .steps
        .iter()
        .find(|s| matches!(s.change, Change::IrqAffinity { irq: 99, .. }))
        .unwrap();
    assert_eq!(s.finding, "irq-numa-remote");
    // the app on node 0, the NIC on node 1: no dead end. The plan's first line says where to
    // run the app (the NIC's node), and l3 places the IRQs next to that CPU on the NIC's node.
    let p = planner::plan(&v, &opts(Some("1"), Some(IrqPolicy::L3))).unwrap();
    let first = format!("FIRST: {}", p.run_app.as_deref().unwrap());
    assert!(
        first.starts_with("FIRST: run the application on"),
        "{first}"
    );
    assert!(
        first.contains("NUMA node 1 (CPUs 6-11)") && first.contains("--app-cpus 6"),
        "{first}"
    );
    assert!(first.contains("-A 6"), "{first}");
    assert_eq!(p.app_cpus.as_ref().unwrap().to_string(), "6");
    assert_eq!(p.irq_cpus.as_ref().unwrap().to_string(), "7-11");
    // two app CPUs: two CPUs of the NIC's node, one per core
    v.layout.siblings = [(6, set("6-7")), (7, set("6-7"))].into_iter().collect();
    let p = planner::plan(&v, &opts(Some("0-1"), Some(IrqPolicy::Node))).unwrap();
    assert_eq!(p.app_cpus.as_ref().unwrap().to_string(), "6,8");
    assert!(p.irq_cpus.as_ref().unwrap().is_subset(&set("6-11")));
    // the app already on the NIC's node: no such line
    let p = planner::plan(&v, &opts(Some("8"), Some(IrqPolicy::L3))).unwrap();
    assert!(p.run_app.is_none());
}

#[test]
fn control_vectors_move_only_off_app_cpus_or_outside_the_irq_cpus() {
    let mut v = ryzen();
    v.nic.as_mut().unwrap().irqs[0].effective = set("6"); // async on the app CPU
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    let s = p
        .steps
        .iter()
        .find(|s| matches!(s.change, Change::IrqAffinity { irq: 98, .. }))
        .unwrap();
    assert_eq!(s.new, "7-11");
    assert_eq!(s.finding, "irq-on-app-core");
}

#[test]
fn buffers_from_speed_and_rtt_never_lowered() {
    assert_eq!(buffer_target(100_000, 10.0), 268_435_456); // 2 x 125 MB -> 256 MiB
    assert_eq!(buffer_target(40_000, 10.0), 134_217_728); // 2 x 50 MB -> 128 MiB
    assert_eq!(buffer_target(100_000, 100.0), 2_147_483_647); // capped at the kernel's int
    assert_eq!(buffer_target(10_000, 0.1), 262_144);
    let p = planner::plan(&ryzen(), &opts(Some("6"), None)).unwrap();
    assert_eq!(
        step_value(&p, "net.core.rmem_max").as_deref(),
        Some("268435456")
    );
    assert_eq!(
        step_value(&p, "net.ipv4.tcp_wmem").as_deref(),
        Some("4096 16384 268435456")
    );
    assert!(p
        .steps
        .iter()
        .all(|s| s.finding != "socket-buffers-small" || s.summary.contains("119.2 MiB")));
    let mut v = ryzen();
    v.stack.rmem_max = Some(2_147_483_647);
    v.stack.tcp_rmem = Some([4096, 87_380, 2_147_483_647]);
    let p = planner::plan(&v, &opts(Some("6"), None)).unwrap();
    assert_eq!(step_value(&p, "net.core.rmem_max"), None);
    assert_eq!(step_value(&p, "net.ipv4.tcp_rmem"), None);
    // still part of the boot state, at its larger value
    assert!(p
        .boot
        .iter()
        .any(|s| s.setting == "net.core.rmem_max" && s.new == "2147483647"));
    // no rate from the target (no --rate, no link speed, no known instance type): no buffer
    // step, a note
    let mut o = opts(Some("6"), None);
    o.rate = None;
    let p = planner::plan(&ryzen(), &o).unwrap();
    assert_eq!(step_value(&p, "net.core.rmem_max"), None);
    assert!(p
        .notes
        .iter()
        .any(|n| n.text.contains("link speed is unknown")));
}

#[test]
fn congestion_control_bbr_else_htcp_else_unchanged() {
    let mut v = ryzen();
    let p = planner::plan(&v, &opts(None, None)).unwrap();
    assert_eq!(step_value(&p, "net.ipv4.tcp_congestion_control"), None);
    assert!(p.notes.iter().any(
        |n| n.finding.as_deref() == Some("congestion-control-loss-based")
            && n.text.contains("reno cubic")
    ));
    v.stack.available_congestion_control.push("htcp".into());
    let p = planner::plan(&v, &opts(None, None)).unwrap();
    assert_eq!(
        step_value(&p, "net.ipv4.tcp_congestion_control").as_deref(),
        Some("htcp")
    );
    v.stack.loadable_congestion_control = Some(vec!["bbr".into()]);
    let p = planner::plan(&v, &opts(None, None)).unwrap();
    let s = p
        .steps
        .iter()
        .find(|s| s.setting == "net.ipv4.tcp_congestion_control")
        .unwrap();
    assert_eq!(s.new, "bbr");
    assert!(s.summary.contains("module"));
    // a deliberate non-loss-based choice stays
    v.stack.congestion_control = Some("dctcp".into());
    let p = planner::plan(&v, &opts(None, None)).unwrap();
    assert_eq!(step_value(&p, "net.ipv4.tcp_congestion_control"), None);
}

#[test]
fn governors_one_write_per_policy_for_app_and_irq_cpus() {
    let mut v = ryzen();
    // CPUs 6 and 7 share a policy
    v.governors.get_mut(&7).unwrap().path = v.governors[&6].path.clone();
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    let gov: Vec<&str> = p
        .steps
        .iter()
        .filter(|s| s.finding == "cpu-governor-not-performance")
        .map(|s| s.setting.as_str())
        .collect();
    assert_eq!(gov.len(), 5, "{gov:?}"); // policies of 6(+7), 8, 9, 10, 11
    assert!(!gov
        .iter()
        .any(|g| g.contains("policy0/") || g.contains("policy3/")));
}

#[test]
fn irqbalance_is_stopped_only_when_asked() {
    let mut v = ryzen();
    v.irqbalance_running = Some(true);
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    assert!(p
        .steps
        .iter()
        .all(|s| !matches!(s.change, Change::Service { .. })));
    assert!(p
        .notes
        .iter()
        .any(|n| n.finding.as_deref() == Some("irqbalance-running") && n.text.contains("undo")));
    let mut o = opts(Some("6"), Some(IrqPolicy::L3));
    o.stop_irqbalance = true;
    o.persist = true;
    let p = planner::plan(&v, &o).unwrap();
    // first, before any IRQ is pinned; disabled too, since the plan persists
    assert_eq!(
        p.steps[0].change,
        Change::Service {
            unit: "irqbalance.service".into(),
            stop: true,
            disable: true
        }
    );
}

#[test]
fn persist_writes_the_whole_wanted_state() {
    let mut o = opts(Some("6"), Some(IrqPolicy::L3));
    o.persist = true;
    let p = planner::plan(&ryzen(), &o).unwrap();
    let created = |path: &str| {
        p.steps.iter().find_map(|s| match &s.change {
            Change::Create {
                path: p2, contents, ..
            } if p2 == path => Some(contents.clone()),
            _ => None,
        })
    };
    let conf = created("/etc/sysctl.d/99-wirespeed.conf").unwrap();
    assert!(conf.contains("net.core.rmem_max = 268435456\n"));
    assert!(conf.contains("net.ipv4.tcp_rmem = 4096 131072 268435456\n"));
    let script = created("/etc/wirespeed/tune.sh").unwrap();
    // all 12 queue IRQs, by name, not just the one that moves now
    assert_eq!(
        script.matches("\nset_irq mlx5_comp").count(),
        12,
        "{script}"
    );
    assert!(script.contains("set_irq mlx5_comp3@pci:0000:01:00.0 111 10\n"));
    assert!(!script.contains("sysctl -w"));
    let unit = created("/etc/systemd/system/wirespeed-tune.service").unwrap();
    assert!(unit.contains("ExecStart=/bin/sh /etc/wirespeed/tune.sh"));
    assert!(p.steps.iter().any(|s| matches!(&s.change, Change::Link { target, .. } if target == "../wirespeed-tune.service")));
}

#[test]
fn hardware_findings_become_notes_first() {
    let mut v = ryzen();
    v.findings = vec![
        finding("congestion-control-loss-based"),
        finding("nic-temperature-high"),
        finding("pcie-link-downgraded"),
        finding("socket-buffers-small"),
    ];
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    let notes: Vec<&str> = p
        .notes
        .iter()
        .filter_map(|n| n.finding.as_deref())
        .collect();
    assert_eq!(
        notes,
        vec![
            "nic-temperature-high",
            "pcie-link-downgraded",
            "congestion-control-loss-based"
        ]
    );
    assert!(p.notes[0].text.contains("airflow"));
    assert!(p.notes[1].text.contains("reseat"));
}

fn coalesce_answer() -> wirespeed_host::ethtool::Coalesce {
    wirespeed_host::ethtool::Coalesce {
        rx_usecs: 8,
        rx_max_frames: 128,
        tx_usecs: 16,
        tx_max_frames: 128,
        adaptive_rx: true,
        adaptive_tx: true,
        rx_usecs_irq: 0,
        tx_usecs_irq: 0,
        pkt_rate_low: 0,
        pkt_rate_high: 0,
        rate_sample_interval: 0,
    }
}

fn coalesce_steps(p: &Plan) -> Vec<&wirespeed_tune::plan::Step> {
    p.steps
        .iter()
        .filter(|s| matches!(s.change, Change::Coalesce { .. }))
        .collect()
}

#[test]
fn coalescing_is_planned_only_when_asked_and_only_the_asked_fields() {
    let mut v = ryzen();
    v.nic.as_mut().unwrap().coalesce = Some(coalesce_answer());
    // without the flags: nothing, and no note either
    let p = planner::plan(&v, &opts(None, None)).unwrap();
    assert!(coalesce_steps(&p).is_empty());
    assert!(!p.notes.iter().any(|n| n.text.contains("coalesc")));

    let mut o = opts(None, None);
    o.coalesce.adaptive_rx = Some(false);
    o.coalesce.rx_usecs = Some(64);
    let p = planner::plan(&v, &o).unwrap();
    let steps = coalesce_steps(&p);
    assert_eq!(steps.len(), 1);
    let s = steps[0];
    assert_eq!(s.finding, "requested");
    assert_eq!(s.setting, "ethtool -C enp1s0f0np0");
    assert_eq!(s.current, "adaptive-rx on rx-usecs 8");
    assert_eq!(s.new, "adaptive-rx off rx-usecs 64");
    assert_eq!(
        s.command,
        "ethtool -C enp1s0f0np0 adaptive-rx off rx-usecs 64"
    );
    // the boot script and --persist's script set it again
    assert!(p
        .render_script()
        .contains("\nethtool -C enp1s0f0np0 adaptive-rx off rx-usecs 64\n"));
    o.persist = true;
    let p = planner::plan(&v, &o).unwrap();
    let script = p
        .steps
        .iter()
        .find_map(|s| match &s.change {
            Change::Create { path, contents, .. } if path == "/etc/wirespeed/tune.sh" => {
                Some(contents.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(script.contains("ethtool -C enp1s0f0np0 adaptive-rx off rx-usecs 64\n"));

    // tx only
    let mut o = opts(None, None);
    o.coalesce.tx_usecs = Some(32);
    let p = planner::plan(&v, &o).unwrap();
    assert_eq!(coalesce_steps(&p)[0].current, "tx-usecs 16");
    assert_eq!(
        coalesce_steps(&p)[0].command,
        "ethtool -C enp1s0f0np0 tx-usecs 32"
    );

    // already holding: no step, but the boot state keeps it
    let mut o = opts(None, None);
    o.coalesce.rx_usecs = Some(8);
    o.coalesce.adaptive_rx = Some(true);
    let p = planner::plan(&v, &o).unwrap();
    assert!(coalesce_steps(&p).is_empty());
    assert!(p
        .boot
        .iter()
        .any(|s| matches!(s.change, Change::Coalesce { .. })));

    // --only without coalesce: not planned
    let mut o = opts(None, None);
    o.coalesce.rx_usecs = Some(64);
    o.only = [planner::Category::Link].into_iter().collect();
    assert!(coalesce_steps(&planner::plan(&v, &o).unwrap()).is_empty());
}

#[test]
fn coalescing_unknown_when_the_nic_did_not_answer() {
    let v = ryzen(); // no GCOALESCE answer
    let mut o = opts(None, None);
    o.coalesce.rx_usecs = Some(64);
    let p = planner::plan(&v, &o).unwrap();
    assert!(coalesce_steps(&p).is_empty());
    let note = p
        .notes
        .iter()
        .find(|n| n.text.contains("coalescing"))
        .expect("a note");
    assert!(note.text.contains("unknown"), "{}", note.text);
    assert!(note.text.contains("ethtool -c"), "{}", note.text);
    // the rest of the plan is still there
    assert!(!p.steps.is_empty());
}

#[test]
fn coalescing_times_are_bounded() {
    let mut v = ryzen();
    v.nic.as_mut().unwrap().coalesce = Some(coalesce_answer());
    let mut o = opts(None, None);
    o.coalesce.rx_usecs = Some(1_000_000);
    match planner::plan(&v, &o) {
        Err(PlanError::BadValue { flag, .. }) => assert_eq!(flag, "--rx-usecs"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn coalescing_from_a_snapshots_ethtool_answer() {
    // A captured tree carries the NIC's ethtool answers as files; coalescing is read from
    // there (and would be skipped at apply: nothing in a tree plays the NIC).
    use wirespeed_host::Root;
    let t = tempfile::tempdir().unwrap();
    let net = t.path().join("sys/class/net/ethx");
    std::fs::create_dir_all(&net).unwrap();
    std::fs::write(net.join("mtu"), "1500\n").unwrap();
    std::fs::write(net.join("tx_queue_len"), "1000\n").unwrap();
    std::fs::write(net.join("operstate"), "up\n").unwrap();
    let root = Root::new(t.path());
    let facts = wirespeed_host::collect(&root);
    let mut o = opts(None, None);
    o.coalesce.rx_usecs = Some(64);
    o.only = [planner::Category::Coalesce].into_iter().collect();

    let v = wirespeed_tune::collect::view(&root, &facts, Some("ethx")).unwrap();
    let p = planner::plan(&v, &o).unwrap();
    assert!(p.steps.is_empty());
    assert!(p.notes.iter().any(|n| n.text.contains("unknown")));

    let d = t.path().join("wirespeed/ethtool/ethx");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("coalesce.json"),
        serde_json::to_string(&coalesce_answer()).unwrap(),
    )
    .unwrap();
    let v = wirespeed_tune::collect::view(&root, &facts, Some("ethx")).unwrap();
    let p = planner::plan(&v, &o).unwrap();
    assert_eq!(p.steps.len(), 1, "{p:?}");
    assert_eq!(p.steps[0].current, "rx-usecs 8");
    assert_eq!(p.steps[0].command, "ethtool -C ethx rx-usecs 64");
}

#[test]
fn doctors_file_writes_become_journaled_steps_once() {
    let mut v = ryzen();
    let mut f = finding("tcp-options-off");
    f.writes = vec![wirespeed_doctor::FileWrite {
        path: "/proc/sys/net/ipv4/tcp_sack".into(),
        current: "0".into(),
        value: "1".into(),
        what: "turn tcp_sack on".into(),
    }];
    v.findings.push(f);
    let mut f = finding("txqueuelen-short");
    f.writes = vec![wirespeed_doctor::FileWrite {
        path: "/sys/class/net/enp1s0f0np0/tx_queue_len".into(),
        current: "1000".into(),
        value: "10000".into(),
        what: "transmit queue".into(),
    }];
    v.findings.push(f);
    let p = planner::plan(&v, &opts(Some("6"), None)).unwrap();
    let s = p
        .steps
        .iter()
        .find(|s| s.finding == "tcp-options-off")
        .unwrap();
    assert_eq!(s.setting, "net.ipv4.tcp_sack");
    assert!(matches!(&s.change, Change::Write { path, value, .. }
        if path == "/proc/sys/net/ipv4/tcp_sack" && value == "1"));
    let s = p
        .steps
        .iter()
        .find(|s| s.finding == "txqueuelen-short")
        .unwrap();
    assert_eq!((s.current.as_str(), s.new.as_str()), ("1000", "10000"));
    // --txqueuelen names the value: one step for the file, the user's
    let mut o = opts(Some("6"), None);
    o.txqueuelen = Some(5000);
    let p = planner::plan(&v, &o).unwrap();
    let q: Vec<_> = p
        .steps
        .iter()
        .filter(|s| s.change.path().as_deref() == Some("/sys/class/net/enp1s0f0np0/tx_queue_len"))
        .collect();
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].new, "5000");
    // --only irq leaves them out
    let mut o = opts(Some("6"), None);
    o.only = [planner::Category::Irq].into_iter().collect();
    let p = planner::plan(&v, &o).unwrap();
    assert!(p.steps.iter().all(|s| s.finding != "tcp-options-off"));
}

#[test]
fn deep_cstates_off_on_the_cpus_that_serve_the_nic_after_the_moves() {
    let mut v = ryzen();
    v.cstates = vec![wirespeed_host::cpu::CState {
        index: 3,
        name: "C6".into(),
        desc: None,
        latency_us: Some(170),
        cpus: set("0-11"),
        disabled_cpus: set("0"),
    }];
    // no finding: nothing
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    assert!(p.steps.iter().all(|s| s.finding != "cstates-deep"));
    v.findings.push(finding("cstates-deep"));
    let p = planner::plan(&v, &opts(Some("6"), Some(IrqPolicy::L3))).unwrap();
    let cpus: Vec<&str> = p
        .steps
        .iter()
        .filter(|s| s.finding == "cstates-deep")
        .map(|s| s.setting.as_str())
        .collect();
    // the app CPU 6 and the IRQ CPUs 7-11 (CPU 3's stray IRQ moved away)
    assert_eq!(
        cpus,
        (6..12)
            .map(|c| format!("/sys/devices/system/cpu/cpu{c}/cpuidle/state3/disable"))
            .collect::<Vec<_>>()
    );
}

/// The planner sizes socket buffers for the rate it is given (the target's: `--rate`, the link
/// speed, the instance type's) and chooses none itself: not from the view's link speed, not
/// from an instance type.
#[test]
fn buffers_are_sized_for_the_target_s_rate_and_no_other() {
    let v = ryzen();
    // the view's NIC runs at 100 Gbit/s; the target gave no rate: nothing sized, and why
    let mut o = opts(Some("6"), None);
    o.rate = None;
    let p = planner::plan(&v, &o).unwrap();
    assert!(step_value(&p, "net.core.rmem_max").is_none());
    let note = p
        .notes
        .iter()
        .find(|n| n.finding.as_deref() == Some("socket-buffers-small"))
        .unwrap();
    assert!(note.text.contains("--rate"), "{}", note.text);
    // each basis the target resolves: its rate sizes the buffers, its words say where from
    for (basis, rmem, words) in [
        (Basis::Requested(50_000), "134217728", "50 Gbit/s (--rate)"),
        (Basis::Link(100_000), "268435456", "100 Gbit/s (link speed)"),
        (
            Basis::Instance {
                mbps: 25_000,
                product: "c5n.4xlarge".into(),
            },
            "67108864",
            "25 Gbit/s (instance type c5n.4xlarge: no link speed)",
        ),
    ] {
        o.rate = rate(basis);
        let p = planner::plan(&v, &o).unwrap();
        assert_eq!(
            step_value(&p, "net.core.rmem_max").as_deref(),
            Some(rmem),
            "{words}"
        );
        let ctx = p.context.join("\n");
        assert!(
            ctx.contains(&format!("sized for RTT 10 ms and {words}")),
            "{ctx}"
        );
    }
    // doctor's checks are given the rate only when --rate asked for it
    o.rate = rate(Basis::Requested(50_000));
    assert_eq!(o.requested_mbps(), Some(50_000));
    o.rate = rate(Basis::Link(100_000));
    assert_eq!(o.requested_mbps(), None);
}

#[test]
fn only_names_categories_or_says_which_word_is_not_one() {
    use wirespeed_tune::planner::Category;
    assert_eq!(
        Category::parse_only(&[]).unwrap().len(),
        Category::ALL.len()
    );
    let some = Category::parse_only(&[" irq".into(), "ring".into()]).unwrap();
    assert_eq!(
        some.into_iter().collect::<Vec<_>>(),
        [Category::Irq, Category::Ring]
    );
    assert_eq!(
        Category::parse_only(&["irq".into(), "nope".into()]).unwrap_err(),
        "--only nope: not one of irq, stack, link, governor, ring, coalesce, pause, irqbalance"
    );
}
