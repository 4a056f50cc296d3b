//! BIG TCP (GSO/GRO sizes, rtnetlink) and flow control (ethtool pause) through the tune
//! engine on a captured tree, with an in-memory NIC standing in for the kernel (the live path
//! is tested in the CLI's `tune_live` on a veth): plan from doctor's finding, apply journals the
//! old sizes first, revert puts them back and leaves the tree byte-identical; a driver without
//! flow control makes its step "not supported" and the plan goes on. `arfs-off`'s ntuple step
//! (`ETHTOOL_SFEATURES`) the same way: only that feature's bit changes, and back.

use crate::common::{put, snapshot};

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;

use wirespeed_doctor::FileWrite;
use wirespeed_host::ethtool::{Feature, Pause, PauseSet, NTUPLE};
use wirespeed_host::link::{LinkSizes, SizesSet};
use wirespeed_host::Root;
use wirespeed_tune::engine::{self, LinkDevice, RevertStatus, StepStatus};
use wirespeed_tune::journal::{JournalFile, Outcome, Undo};
use wirespeed_tune::plan::{command_for, Change, Plan, Step};
use wirespeed_tune::planner::{self, PlanOptions};
use wirespeed_tune::view::{FindingView, HostView, NicView};
use wirespeed_tune::{ApplyOptions, Form};

/// A NIC in memory: what `RTM_NEWLINK` and `ETHTOOL_SPAUSEPARAM` do to a driver that takes them
/// (sizes up to its `tso_max_size`), or one without flow control (`pause` `None`: EOPNOTSUPP).
struct FakeNic {
    sizes: RefCell<LinkSizes>,
    pause: RefCell<Option<Pause>>,
    /// Named features as `ETHTOOL_GFEATURES` lists them; a name not listed is EOPNOTSUPP.
    features: RefCell<BTreeMap<String, Feature>>,
}

impl FakeNic {
    fn new(ipv4: bool, pause: Option<Pause>) -> FakeNic {
        FakeNic {
            sizes: RefCell::new(LinkSizes {
                sizes: SizesSet {
                    gso_max_size: Some(65_536),
                    gro_max_size: Some(65_536),
                    gso_ipv4_max_size: ipv4.then_some(65_536),
                    gro_ipv4_max_size: ipv4.then_some(65_536),
                },
                tso_max_size: Some(524_280),
            }),
            pause: RefCell::new(pause),
            features: RefCell::new(BTreeMap::new()),
        }
    }

    /// With ntuple as given, beside two other features that must not move.
    fn with_ntuple(ntuple: Feature) -> FakeNic {
        let nic = FakeNic::new(true, None);
        let feat = |active, changeable| Feature { active, changeable };
        *nic.features.borrow_mut() = [
            ("rx-gro-hw".to_string(), feat(false, true)),
            (NTUPLE.to_string(), ntuple),
            ("tx-checksum-ipv4".to_string(), feat(true, true)),
        ]
        .into_iter()
        .collect();
        nic
    }

    fn ntuple(&self) -> Feature {
        self.features.borrow()[NTUPLE]
    }
}

impl LinkDevice for FakeNic {
    fn sizes(&self, _iface: &str) -> io::Result<LinkSizes> {
        Ok(*self.sizes.borrow())
    }
    fn set_sizes(&self, _iface: &str, set: &SizesSet) -> io::Result<()> {
        let mut s = self.sizes.borrow_mut();
        let limit = s.tso_max_size.unwrap_or(65_536);
        let all = [
            set.gso_max_size,
            set.gro_max_size,
            set.gso_ipv4_max_size,
            set.gro_ipv4_max_size,
        ];
        if all.iter().flatten().any(|v| *v > limit) {
            return Err(io::Error::from_raw_os_error(libc_einval()));
        }
        if let Some(v) = set.gso_max_size {
            s.sizes.gso_max_size = Some(v);
        }
        if let Some(v) = set.gro_max_size {
            s.sizes.gro_max_size = Some(v);
        }
        if let Some(v) = set.gso_ipv4_max_size {
            s.sizes.gso_ipv4_max_size = Some(v);
        }
        if let Some(v) = set.gro_ipv4_max_size {
            s.sizes.gro_ipv4_max_size = Some(v);
        }
        Ok(())
    }
    fn pause(&self, _iface: &str) -> io::Result<Pause> {
        (*self.pause.borrow()).ok_or_else(|| io::Error::from_raw_os_error(EOPNOTSUPP))
    }
    fn set_pause(&self, _iface: &str, set: &PauseSet) -> io::Result<()> {
        let mut p = self.pause.borrow_mut();
        let Some(cur) = p.as_mut() else {
            return Err(io::Error::from_raw_os_error(EOPNOTSUPP));
        };
        cur.rx = set.rx.unwrap_or(cur.rx);
        cur.tx = set.tx.unwrap_or(cur.tx);
        Ok(())
    }
    fn feature(&self, _iface: &str, name: &str) -> io::Result<Feature> {
        self.features
            .borrow()
            .get(name)
            .copied()
            .ok_or_else(|| io::Error::from_raw_os_error(EOPNOTSUPP))
    }
    fn set_feature(&self, _iface: &str, name: &str, on: bool) -> io::Result<()> {
        let mut f = self.features.borrow_mut();
        match f.get_mut(name) {
            Some(cur) if cur.changeable => {
                cur.active = on;
                Ok(())
            }
            _ => Err(io::Error::from_raw_os_error(EOPNOTSUPP)),
        }
    }
}

/// Linux's errno values the kernel answers with.
const EOPNOTSUPP: i32 = 95;
fn libc_einval() -> i32 {
    22
}

fn off() -> Pause {
    Pause {
        autoneg: true,
        rx: false,
        tx: false,
    }
}

/// A 100G NIC with BIG TCP off, as doctor reports it.
fn view(sizes: LinkSizes, pause: Option<Pause>) -> HostView {
    HostView {
        live: false,
        nic: Some(NicView {
            name: "ens5f0np0".into(),
            driver: Some("ice".into()),
            speed_mbps: Some(100_000),
            mtu: Some(9000),
            txqueuelen: Some(10_000),
            numa_node: None,
            local_cpus: None,
            irqs: Vec::new(),
            ring: None,
            coalesce: None,
            sizes: Some(sizes),
            pause,
            ntuple: None,
        }),
        findings: vec![FindingView {
            id: "big-tcp-off".into(),
            summary: "ens5f0np0: BIG TCP is off".into(),
            fix: vec!["ip link set dev ens5f0np0 gso_max_size 185000 gro_max_size 185000".into()],
            writes: vec![],
        }],
        ..HostView::default()
    }
}

fn link_steps(p: &Plan) -> Vec<&Step> {
    p.steps
        .iter()
        .filter(|s| {
            matches!(
                s.change,
                Change::LinkSizes { .. } | Change::Pause { .. } | Change::Feature { .. }
            )
        })
        .collect()
}

#[test]
fn big_tcp_is_planned_from_doctors_finding_up_to_the_driver_limit() {
    let nic = FakeNic::new(true, None);
    let cur = *nic.sizes.borrow();
    let p = planner::plan(&view(cur, None), &PlanOptions::new("test")).unwrap();
    let steps = link_steps(&p);
    assert_eq!(steps.len(), 1, "{p:#?}");
    let s = steps[0];
    assert_eq!(s.finding, "big-tcp-off");
    assert_eq!(
        s.new,
        "gso_max_size 185000 gro_max_size 185000 gso_ipv4_max_size 185000 gro_ipv4_max_size 185000"
    );
    assert_eq!(s.current.matches("65536").count(), 4, "{s:?}");
    assert_eq!(
        s.command,
        format!("ip link set dev ens5f0np0 {}", s.new),
        "the command is what `ip` takes"
    );
    assert!(!p
        .notes
        .iter()
        .any(|n| n.finding.as_deref() == Some("big-tcp-off")));

    // a kernel without the IPv4 sizes (before 6.3): only the two it has
    let old_kernel = LinkSizes {
        sizes: SizesSet {
            gso_ipv4_max_size: None,
            gro_ipv4_max_size: None,
            ..cur.sizes
        },
        ..cur
    };
    let p = planner::plan(&view(old_kernel, None), &PlanOptions::new("test")).unwrap();
    assert_eq!(
        link_steps(&p)[0].new,
        "gso_max_size 185000 gro_max_size 185000"
    );

    // a driver that takes at most 131072 bytes: that size
    let small = LinkSizes {
        tso_max_size: Some(131_072),
        ..old_kernel
    };
    let p = planner::plan(&view(small, None), &PlanOptions::new("test")).unwrap();
    assert_eq!(
        link_steps(&p)[0].new,
        "gso_max_size 131072 gro_max_size 131072"
    );

    // no finding, no step; `--only stack` leaves it out and says so in a note
    let mut v = view(cur, None);
    v.findings.clear();
    assert!(link_steps(&planner::plan(&v, &PlanOptions::new("test")).unwrap()).is_empty());
    let mut o = PlanOptions::new("test");
    o.only = [planner::Category::Stack].into_iter().collect();
    let p = planner::plan(&view(cur, None), &o).unwrap();
    assert!(link_steps(&p).is_empty());
    assert!(p
        .notes
        .iter()
        .any(|n| n.finding.as_deref() == Some("big-tcp-off")));
}

/// The small tree of a captured host: a sysctl the plan also writes, so the tree part of the
/// apply is journaled and reverted beside the NIC part.
fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "proc/sys/net/core/rmem_max", "212992\n");
    t
}

fn plan_with(changes: Vec<Change>) -> Plan {
    let mut p = Plan::new("test");
    for change in changes {
        p.steps.push(Step {
            finding: "requested".into(),
            summary: "test".into(),
            setting: change.path().unwrap_or_default(),
            current: String::new(),
            new: String::new(),
            command: command_for(&change),
            change,
        });
    }
    p
}

fn rmem() -> Change {
    Change::Write {
        path: "/proc/sys/net/core/rmem_max".into(),
        form: Form::Words,
        value: "268435456".into(),
    }
}

#[test]
fn big_tcp_applies_journaled_first_and_reverts_exactly() {
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let nic = FakeNic::new(true, None);
    let cur = *nic.sizes.borrow();
    let mut plan = planner::plan(&view(cur, None), &PlanOptions::new("test")).unwrap();
    plan.steps
        .retain(|s| matches!(s.change, Change::LinkSizes { .. }));
    plan.steps.extend(plan_with(vec![rmem()]).steps);

    // without a NIC to talk to (a captured tree), the step is skipped and nothing journaled
    let r = engine::apply(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::Skipped, "{r:#?}");
    assert!(r.steps[0].detail.as_deref().unwrap().contains("live host"));
    let jf = JournalFile::read(&root, &r.journal).unwrap();
    assert_eq!(
        jf.entries().len(),
        1,
        "only the sysctl: {:#?}",
        jf.entries()
    );
    assert!(engine::revert(&root, &r.journal, false).unwrap().complete());
    assert_eq!(snapshot(t.path()), before);

    // with the stand-in: journaled, set, read back
    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::Applied, "{r:#?}");
    assert!(r.steps[0]
        .detail
        .as_deref()
        .unwrap()
        .contains("kernel reports gso_max_size 185000 gro_max_size 185000"));
    let now = *nic.sizes.borrow();
    assert_eq!(
        (now.sizes.gso_max_size, now.sizes.gro_ipv4_max_size),
        (Some(185_000), Some(185_000))
    );
    let jf = JournalFile::read(&root, &r.journal).unwrap();
    let e = &jf.entries()[0];
    assert_eq!(e.outcome, Some(Outcome::Applied));
    let Undo::LinkSizes { iface, old, new } = &e.undo else {
        panic!("{e:#?}");
    };
    assert_eq!(iface, "ens5f0np0");
    assert_eq!(*old, SizesSet::all(65_536));
    assert_eq!(*new, SizesSet::all(185_000));
    // applying again: already set, nothing journaled
    let again =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(again.steps[0].status, StepStatus::AlreadySet);
    assert!(engine::revert_with(&root, &again.journal, false, &nic)
        .unwrap()
        .complete());

    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert!(rv.complete(), "{rv:#?}");
    assert_eq!(rv.count(RevertStatus::Restored), 2);
    assert_eq!(*nic.sizes.borrow(), cur);
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn sizes_changed_since_are_left_alone_unless_forced_and_refusals_write_nothing() {
    let t = tree();
    let root = Root::new(t.path());
    let nic = FakeNic::new(false, None);
    let cur = *nic.sizes.borrow();
    let plan = plan_with(vec![Change::LinkSizes {
        iface: "ens5f0np0".into(),
        set: SizesSet::all(185_000),
    }]);
    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::Applied, "{r:#?}");
    // the IPv4 sizes this kernel lacks were not asked of it
    assert_eq!(nic.sizes.borrow().sizes.gso_ipv4_max_size, None);
    nic.sizes.borrow_mut().sizes.gso_max_size = Some(100_000);
    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert_eq!(rv.items[0].status, RevertStatus::LeftChanged, "{rv:#?}");
    assert!(rv.items[0]
        .detail
        .as_deref()
        .unwrap()
        .contains("now gso_max_size 100000"));
    let rv = engine::revert_with(&root, &r.journal, true, &nic).unwrap();
    assert_eq!(rv.items[0].status, RevertStatus::Restored);
    assert_eq!(*nic.sizes.borrow(), cur);

    // above the driver's limit: the kernel refuses (EINVAL), the step is not supported
    let plan = plan_with(vec![
        Change::LinkSizes {
            iface: "ens5f0np0".into(),
            set: SizesSet::all(1_000_000),
        },
        rmem(),
    ]);
    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::NotSupported, "{r:#?}");
    assert_eq!(r.steps[1].status, StepStatus::Applied);
    assert_eq!(*nic.sizes.borrow(), cur);
    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert!(rv.complete());
    assert_eq!(rv.items[1].status, RevertStatus::NothingWritten, "{rv:#?}");
}

#[test]
fn pause_is_planned_only_when_asked_and_reverts() {
    // without a flag: no step, doctor's finding stays a note naming the switch
    let mut v = view(FakeNic::new(true, None).sizes.into_inner(), Some(off()));
    v.findings = vec![FindingView {
        id: "pause-frames-off".into(),
        summary: "ens5f0np0: flow control rx off tx off".into(),
        fix: vec!["ethtool -A ens5f0np0 rx on tx on".into()],
        writes: vec![],
    }];
    let p = planner::plan(&v, &PlanOptions::new("test")).unwrap();
    assert!(link_steps(&p).is_empty());
    let note = p
        .notes
        .iter()
        .find(|n| n.finding.as_deref() == Some("pause-frames-off"))
        .expect("a note");
    assert!(
        note.text.contains("switch port") && note.text.contains("--pause both"),
        "{note:?}"
    );

    let mut o = PlanOptions::new("test");
    o.pause = PauseSet {
        rx: Some(true),
        tx: None,
    };
    let p = planner::plan(&v, &o).unwrap();
    let steps = link_steps(&p);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].finding, "pause-frames-off");
    assert_eq!(
        (steps[0].current.as_str(), steps[0].new.as_str()),
        ("rx off", "rx on")
    );
    assert_eq!(steps[0].command, "ethtool -A ens5f0np0 rx on");

    // a NIC that did not answer: a note, no step
    v.nic.as_mut().unwrap().pause = None;
    let p = planner::plan(&v, &o).unwrap();
    assert!(link_steps(&p).is_empty());
    assert!(p
        .notes
        .iter()
        .any(|n| n.text.contains("ETHTOOL_GPAUSEPARAM")));

    // apply and revert through the stand-in: only the asked direction changes
    let t = tree();
    let root = Root::new(t.path());
    let nic = FakeNic::new(true, Some(off()));
    let plan = plan_with(vec![Change::Pause {
        iface: "ens5f0np0".into(),
        set: o.pause,
    }]);
    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::Applied, "{r:#?}");
    assert_eq!(*nic.pause.borrow(), Some(Pause { rx: true, ..off() }));
    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert!(rv.complete(), "{rv:#?}");
    assert_eq!(*nic.pause.borrow(), Some(off()));
}

#[test]
fn a_nic_without_flow_control_is_not_supported_and_the_plan_goes_on() {
    let t = tree();
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let nic = FakeNic::new(true, None);
    let plan = plan_with(vec![
        Change::Pause {
            iface: "veth0".into(),
            set: PauseSet {
                rx: Some(true),
                tx: Some(true),
            },
        },
        rmem(),
    ]);
    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::NotSupported, "{r:#?}");
    assert!(r.steps[0]
        .detail
        .as_deref()
        .unwrap()
        .contains("ethtool -a veth0"));
    assert_eq!(r.steps[1].status, StepStatus::Applied);
    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert!(rv.complete());
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn firmware_and_boot_findings_say_exactly_what_to_do() {
    let mut v = view(FakeNic::new(true, None).sizes.into_inner(), None);
    v.findings = [
        "iommu-translated",
        "pcie-mps-small",
        "pcie-maxreadreq-small",
    ]
    .iter()
    .map(|id| FindingView {
        id: (*id).into(),
        summary: format!("{id} summary"),
        fix: if *id == "pcie-maxreadreq-small" {
            vec!["setpci -s 0000:17:00.0 CAP_EXP+8.w=5000:7000   # MaxReadReq 4096".into()]
        } else {
            vec![]
        },
        writes: vec![],
    })
    .collect();
    let p = planner::plan(&v, &PlanOptions::new("test")).unwrap();
    let note = |id: &str| {
        p.notes
            .iter()
            .find(|n| n.finding.as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no note for {id}: {p:#?}"))
            .text
            .clone()
    };
    let iommu = note("iommu-translated");
    for want in [
        "not changed by this plan",
        "iommu=pt",
        "intel_iommu=on iommu=pt",
        "GRUB_CMDLINE_LINUX",
        "reboot",
        "Risk",
    ] {
        assert!(iommu.contains(want), "{want}: {iommu}");
    }
    let mps = note("pcie-mps-small");
    assert!(
        mps.contains("pci=pcie_bus_perf") && mps.contains("Risk"),
        "{mps}"
    );
    let mrrs = note("pcie-maxreadreq-small");
    for want in [
        "setpci -s 0000:17:00.0 CAP_EXP+8.w=5000:7000",
        "offset 8",
        "lspci -s 0000:17:00.0",
        "Risk",
    ] {
        assert!(mrrs.contains(want), "{want}: {mrrs}");
    }
    assert!(p
        .steps
        .iter()
        .all(|s| !s.finding.starts_with("pcie") && s.finding != "iommu-translated"));
}

fn feat(active: bool, changeable: bool) -> Feature {
    Feature { active, changeable }
}

/// A pinned application on a multi-queue NIC with ntuple as given and RFS's table at 0, as
/// doctor reports `arfs-off` (its writes for the table).
fn arfs_view(ntuple: Option<Feature>) -> HostView {
    let mut v = view(FakeNic::new(true, None).sizes.into_inner(), None);
    v.nic.as_mut().unwrap().ntuple = ntuple;
    v.findings = vec![FindingView {
        id: "arfs-off".into(),
        summary: "ens5f0np0: accelerated RFS is off".into(),
        fix: vec![
            "ethtool -K ens5f0np0 ntuple on".into(),
            "sysctl -w net.core.rps_sock_flow_entries=32768".into(),
        ],
        writes: vec![FileWrite {
            path: "/proc/sys/net/core/rps_sock_flow_entries".into(),
            current: "0".into(),
            value: "32768".into(),
            what: "RFS flow table".into(),
        }],
    }];
    v
}

#[test]
fn arfs_off_plans_ntuple_on_only_when_the_nic_can_change_it() {
    let p = planner::plan(
        &arfs_view(Some(feat(false, true))),
        &PlanOptions::new("test"),
    )
    .unwrap();
    let steps = link_steps(&p);
    assert_eq!(steps.len(), 1, "{p:#?}");
    let s = steps[0];
    assert_eq!(s.finding, "arfs-off");
    assert_eq!((s.current.as_str(), s.new.as_str()), ("off", "on"));
    assert_eq!(s.command, "ethtool -K ens5f0np0 ntuple on");
    assert_eq!(
        s.change,
        Change::Feature {
            iface: "ens5f0np0".into(),
            feature: "rx-ntuple-filter".into(),
            on: true
        }
    );
    // the RFS table write is planned beside it
    assert!(p
        .steps
        .iter()
        .any(|s| s.setting == "net.core.rps_sock_flow_entries"));

    // on already, fixed off, or not answered: no ntuple step (the table write stays)
    for ntuple in [Some(feat(true, true)), Some(feat(false, false)), None] {
        let p = planner::plan(&arfs_view(ntuple), &PlanOptions::new("test")).unwrap();
        assert!(link_steps(&p).is_empty(), "{ntuple:?}: {p:#?}");
        assert!(p.steps.iter().any(|s| s.finding == "arfs-off"), "{p:#?}");
    }
    // `--only irq` leaves the finding out
    let mut o = PlanOptions::new("test");
    o.only = [planner::Category::Irq].into_iter().collect();
    let p = planner::plan(&arfs_view(Some(feat(false, true))), &o).unwrap();
    assert!(link_steps(&p).is_empty());
}

#[test]
fn ntuple_applies_journaled_first_and_reverts_exactly() {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "proc/sys/net/core/rps_sock_flow_entries", "0\n");
    let root = Root::new(t.path());
    let before = snapshot(t.path());
    let nic = FakeNic::with_ntuple(feat(false, true));
    let features_before = nic.features.borrow().clone();
    let plan = planner::plan(&arfs_view(Some(nic.ntuple())), &PlanOptions::new("test")).unwrap();
    let at = plan
        .steps
        .iter()
        .position(|s| matches!(s.change, Change::Feature { .. }))
        .expect("the ntuple step");

    // a captured tree: the step is skipped, nothing journaled for it
    let r = engine::apply(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(r.steps[at].status, StepStatus::Skipped, "{r:#?}");
    assert!(r.steps[at].detail.as_deref().unwrap().contains("live host"));
    assert!(engine::revert(&root, &r.journal, false).unwrap().complete());
    assert_eq!(snapshot(t.path()), before);

    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[at].status, StepStatus::Applied, "{r:#?}");
    assert!(
        r.steps.iter().all(|s| s.status == StepStatus::Applied),
        "{r:#?}"
    );
    assert_eq!(nic.ntuple(), feat(true, true));
    // only the ntuple bit moved
    let mut want = features_before.clone();
    want.insert(NTUPLE.into(), feat(true, true));
    assert_eq!(*nic.features.borrow(), want);
    let jf = JournalFile::read(&root, &r.journal).unwrap();
    let entries = jf.entries();
    let e = entries
        .iter()
        .find(|e| matches!(e.undo, Undo::Feature { .. }))
        .expect("journaled");
    assert_eq!(e.outcome, Some(Outcome::Applied));
    assert_eq!(
        e.undo,
        Undo::Feature {
            iface: "ens5f0np0".into(),
            feature: NTUPLE.into(),
            old: false,
            new: true
        }
    );
    assert_eq!(e.undo.setting(), "ethtool -K ens5f0np0 ntuple");
    // again: already set, nothing journaled
    let again =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(again.steps[at].status, StepStatus::AlreadySet);
    assert!(engine::revert_with(&root, &again.journal, false, &nic)
        .unwrap()
        .complete());

    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert!(rv.complete(), "{rv:#?}");
    assert_eq!(rv.count(RevertStatus::Restored), 2, "{rv:#?}");
    assert_eq!(*nic.features.borrow(), features_before);
    assert_eq!(snapshot(t.path()), before);
}

#[test]
fn ntuple_changed_since_is_left_alone_and_a_fixed_one_is_not_supported() {
    let t = tree();
    let root = Root::new(t.path());
    let nic = FakeNic::with_ntuple(feat(false, true));
    let step = Change::Feature {
        iface: "ens5f0np0".into(),
        feature: NTUPLE.into(),
        on: true,
    };
    let plan = plan_with(vec![step.clone()]);
    let r =
        engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic).unwrap();
    assert_eq!(r.steps[0].status, StepStatus::Applied, "{r:#?}");
    // someone turned it off again since: revert writes nothing (a feature has no third state,
    // so what changed since is already the original) and leaves the other features alone
    nic.features
        .borrow_mut()
        .insert(NTUPLE.into(), feat(false, true));
    nic.features
        .borrow_mut()
        .insert("rx-gro-hw".into(), feat(true, true));
    let after = nic.features.borrow().clone();
    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert_eq!(rv.items[0].status, RevertStatus::AlreadyOriginal, "{rv:#?}");
    assert_eq!(*nic.features.borrow(), after);

    // the other way: a step that turned it off reverts to on
    let nic = FakeNic::with_ntuple(feat(true, true));
    let plan_off = plan_with(vec![Change::Feature {
        iface: "ens5f0np0".into(),
        feature: NTUPLE.into(),
        on: false,
    }]);
    assert_eq!(plan_off.steps[0].command, "ethtool -K ens5f0np0 ntuple off");
    let r = engine::apply_with(
        &root,
        &plan_off,
        &ApplyOptions::default(),
        &mut |_, _| {},
        &nic,
    )
    .unwrap();
    assert_eq!(r.steps[0].status, StepStatus::Applied);
    assert_eq!(nic.ntuple(), feat(false, true));
    let rv = engine::revert_with(&root, &r.journal, false, &nic).unwrap();
    assert_eq!(rv.items[0].status, RevertStatus::Restored, "{rv:#?}");
    assert_eq!(nic.ntuple(), feat(true, true));

    // fixed off (veth, lo) and not listed at all: not supported, nothing journaled, the plan
    // goes on
    for nic in [
        FakeNic::with_ntuple(feat(false, false)),
        FakeNic::new(true, None),
    ] {
        let before = snapshot(t.path());
        let plan = plan_with(vec![step.clone(), rmem()]);
        let r = engine::apply_with(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}, &nic)
            .unwrap();
        assert_eq!(r.steps[0].status, StepStatus::NotSupported, "{r:#?}");
        assert!(r.steps[0].detail.as_deref().unwrap().contains("ntuple"));
        assert_eq!(r.steps[1].status, StepStatus::Applied);
        let jf = JournalFile::read(&root, &r.journal).unwrap();
        assert_eq!(
            jf.entries().len(),
            1,
            "only the sysctl: {:#?}",
            jf.entries()
        );
        assert!(engine::revert_with(&root, &r.journal, false, &nic)
            .unwrap()
            .complete());
        assert_eq!(snapshot(t.path()), before);
    }
}
