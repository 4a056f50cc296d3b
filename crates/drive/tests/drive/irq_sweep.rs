//! The IRQ-moving sweep on a copy of the Ryzen fixture, with the kernel emulated the way tune's
//! tests do it (the effective affinity follows writes to `smp_affinity_list`), and a model of the
//! test whose throughput depends on where the queue IRQs really are: 64.6 Gbit/s on the app's
//! own CPU, 84.9 on the other L3 group, 98.8 on another core of the app's L3 group.

// The tree helpers of tune's tests (captured hosts, copying a tree with its links).
use crate::common;
use wirespeed_drive::sweep::Summarize;

use common::{copy_tree, fixtures};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use wirespeed_drive::irq_sweep::{
    apply_irq_move, queue_irqs, run_irq_sweep, IrqSweepSpec, MoveReport,
};
use wirespeed_host::{CpuSet, Root};
use wirespeed_model::observation::BitsPerSecond;
use wirespeed_observe::topology::{Relation, Topology};
use wirespeed_tune::journal::{JournalFile, State};
use wirespeed_tune::ApplyOptions;

/// The fixture with the files the sweep writes copied — `/proc/irq/N` of the NIC's vectors —
/// and everything else, which it only reads, linked (thousands of small files take seconds to
/// copy on a loaded machine). Nothing is written through the links: the sweep writes only the
/// affinity files of the IRQs it moves, and its journal goes to a new `/var/lib/wirespeed`.
fn fixture_copy() -> tempfile::TempDir {
    let src = fixtures().join("crow-9900x-cx5-x4").canonicalize().unwrap();
    let t = tempfile::tempdir().unwrap();
    let link = |from: &Path, to: &Path| std::os::unix::fs::symlink(from, to).unwrap();
    link(&src.join("sys"), &t.path().join("sys"));
    std::fs::create_dir_all(t.path().join("proc/irq")).unwrap();
    for e in std::fs::read_dir(src.join("proc")).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "irq" {
            link(&e.path(), &t.path().join("proc").join(e.file_name()));
        }
    }
    for e in std::fs::read_dir(src.join("proc/irq")).unwrap() {
        let e = e.unwrap();
        let to = t.path().join("proc/irq").join(e.file_name());
        let n: u32 = e.file_name().to_string_lossy().parse().unwrap_or(0);
        // Only the NIC's vectors: nothing else below /proc/irq is read or written.
        if (98..=119).contains(&n) {
            copy_tree(&e.path(), &to);
        }
    }
    t
}

/// The kernel, emulated: every IRQ's effective affinity (list and mask) is the first CPU of its
/// requested list, as x86 vector allocation does for a single-CPU request.
fn emulate_kernel(root: &Root) {
    for name in root.list_opt("/proc/irq") {
        let Ok(irq) = name.parse::<u32>() else {
            continue;
        };
        assert!(
            !root.path(&format!("/proc/irq/{irq}")).unwrap().is_symlink(),
            "never write through a link into the fixture"
        );
        let Some(req) = root.read_opt(&format!("/proc/irq/{irq}/smp_affinity_list")) else {
            continue;
        };
        let Some(first) = CpuSet::parse_list(&req).ok().and_then(|s| s.first()) else {
            continue;
        };
        let eff = CpuSet::from_cpus([first]);
        root.write(
            &format!("/proc/irq/{irq}/effective_affinity_list"),
            &format!("{eff}\n"),
        )
        .unwrap();
        root.write(
            &format!("/proc/irq/{irq}/effective_affinity"),
            &format!("{}\n", eff.to_mask(12)),
        )
        .unwrap();
    }
}

fn affinity_files(root: &Root) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for name in root.list_opt("/proc/irq") {
        for f in ["smp_affinity_list", "smp_affinity"] {
            let p = format!("/proc/irq/{name}/{f}");
            if let Ok(v) = root.read(&p) {
                m.insert(p, v);
            }
        }
    }
    m
}

/// A test whose throughput follows the relation between the app CPU and the CPU that really
/// takes the queue IRQs (read from the tree, as a test on the live host would feel it).
fn model(root: &Root, topo: &Topology, irqs: &[u32], app: u32) -> BitsPerSecond {
    let cpu = root
        .read_opt(&format!("/proc/irq/{}/effective_affinity_list", irqs[0]))
        .and_then(|s| CpuSet::parse_list(&s).ok())
        .and_then(|s| s.first())
        .unwrap();
    BitsPerSecond::from_gbps(match topo.relation(app, cpu) {
        Relation::SameCpu => 64.6,
        Relation::OtherL3 => 84.9,
        _ => 98.8,
    })
}

/// A sweep of the fixture NIC's queue IRQs: every app CPU × IRQ CPU, `repeat` tests a cell.
fn nic_sweep(root: &Root, app_cpus: Vec<u32>, irq_cpus: Vec<u32>, repeat: u32) -> IrqSweepSpec {
    IrqSweepSpec {
        iface: "enp1s0f0np0".into(),
        irqs: queue_irqs(root, "enp1s0f0np0").unwrap(),
        app_cpus: app_cpus.into_iter().collect(),
        irq_cpus: irq_cpus.into_iter().collect(),
        repeat,
    }
}

#[test]
fn sweep_moves_the_irqs_finds_the_best_core_and_reverts() {
    let t = fixture_copy();
    let root = Root::unconfined(t.path()); // links into the fixture, on purpose
    let before = affinity_files(&root);
    let topo = wirespeed_observe::topology::read(&root);
    let spec = nic_sweep(&root, vec![6], vec![3, 6, 8], 2);
    let numbers: Vec<u32> = spec.irqs.iter().map(|q| q.irq).collect();
    let stop = AtomicBool::new(false);
    let mut calls = Vec::new();
    let report = run_irq_sweep(
        &root,
        &spec,
        &ApplyOptions::default(),
        &stop,
        &mut emulate_kernel,
        &mut |app, irq_cpu| {
            calls.push((app, irq_cpu));
            Ok(model(&root, &topo, &numbers, app))
        },
    )
    .unwrap();
    assert_eq!(calls, vec![(6, 3), (6, 3), (6, 6), (6, 6), (6, 8), (6, 8)]);
    assert!(!report.interrupted);
    assert_eq!(report.steps.len(), 3);
    for s in report.steps.iter().map(|s| &s.outcome) {
        assert_eq!(s.moved.len(), 12, "{s:?}");
        assert!(
            s.not_movable.is_empty() && s.failed.is_empty() && s.elsewhere.is_empty(),
            "{s:?}"
        );
        assert!(s.reverted);
        let jf = JournalFile::read(&root, &s.journal).unwrap();
        assert_eq!(jf.state(), State::Reverted);
    }
    let m = &report.matrix;
    assert_eq!(m.median(6, 3), Some(BitsPerSecond::from_gbps(84.9).0));
    assert_eq!(m.median(6, 6), Some(BitsPerSecond::from_gbps(64.6).0));
    assert_eq!(m.median(6, 8), Some(BitsPerSecond::from_gbps(98.8).0));
    let s = m.summary(Some(&topo)).unwrap();
    assert_eq!((s.best.row, s.best.col), (6, 8));
    assert!(
        s.recommendation
            .contains("another core of the app's L3 group"),
        "{}",
        s.recommendation
    );
    // Every requested affinity is back, byte for byte.
    assert_eq!(affinity_files(&root), before);
}

#[test]
fn ctrl_c_mid_sweep_reverts_and_stops() {
    let t = fixture_copy();
    let root = Root::unconfined(t.path()); // links into the fixture, on purpose
    let before = affinity_files(&root);
    let spec = nic_sweep(&root, vec![6, 7], vec![8, 9, 10], 1);
    let stop = AtomicBool::new(false);
    let mut n = 0;
    let report = run_irq_sweep(
        &root,
        &spec,
        &ApplyOptions::default(),
        &stop,
        &mut emulate_kernel,
        &mut |_, irq_cpu| {
            n += 1;
            // While the first test of the second step runs, IRQ 111 sits on CPU 9.
            if n == 3 {
                assert_eq!(
                    root.read_trim("/proc/irq/111/smp_affinity_list").unwrap(),
                    irq_cpu.to_string()
                );
                stop.store(true, Ordering::SeqCst); // what the SIGINT handler does
            }
            Ok(BitsPerSecond::from_gbps(50.0))
        },
    )
    .unwrap();
    assert!(report.interrupted);
    assert_eq!(n, 3);
    assert_eq!(report.steps.len(), 2);
    assert!(report.steps.iter().all(|s| s.outcome.reverted));
    assert_eq!(affinity_files(&root), before);
    assert_eq!(report.matrix.median(6, 9), Some(50e9));
    assert_eq!(report.matrix.median(7, 9), None);
    assert_eq!(report.matrix.median(6, 10), None);
}

#[test]
fn a_panicking_test_still_reverts() {
    let t = fixture_copy();
    let root = Root::unconfined(t.path()); // links into the fixture, on purpose
    let before = affinity_files(&root);
    let spec = nic_sweep(&root, vec![6], vec![9], 1);
    let stop = AtomicBool::new(false);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_irq_sweep(
            &root,
            &spec,
            &ApplyOptions::default(),
            &stop,
            &mut |_| {},
            &mut |_, _| panic!("engine bug"),
        )
    }));
    assert!(r.is_err());
    assert_eq!(affinity_files(&root), before);
}

#[test]
fn failed_tests_mark_their_cells() {
    let t = fixture_copy();
    let root = Root::unconfined(t.path()); // links into the fixture, on purpose
    let spec = nic_sweep(&root, vec![6], vec![7], 1);
    let report = run_irq_sweep(
        &root,
        &spec,
        &ApplyOptions::default(),
        &AtomicBool::new(false),
        &mut emulate_kernel,
        &mut |_, _| Err("connection refused".into()),
    )
    .unwrap();
    assert_eq!(
        report.matrix.cells[0][0].error.as_deref(),
        Some("connection refused")
    );
    assert!(report.matrix.summary(None).is_none());
}

#[test]
fn one_move_spreads_the_irqs_in_turn_and_reverts() {
    let t = fixture_copy();
    let root = Root::unconfined(t.path()); // links into the fixture, on purpose
    let before = affinity_files(&root);
    let irqs = queue_irqs(&root, "enp1s0f0np0").unwrap();
    let mut mv = apply_irq_move(
        &root,
        "enp1s0f0np0",
        &irqs,
        &CpuSet::from_cpus([9, 10]),
        &ApplyOptions::default(),
        &mut emulate_kernel,
    )
    .unwrap();
    let r = mv.report().clone();
    assert_eq!(r.outcome.moved.len(), 12);
    assert!(r.outcome.elsewhere.is_empty(), "{r:?}");
    for (k, q) in irqs.iter().enumerate() {
        let want = if k % 2 == 0 { "9" } else { "10" };
        assert_eq!(
            root.read_trim(&format!("/proc/irq/{}/smp_affinity_list", q.irq))
                .unwrap(),
            want
        );
    }
    // The report travels as JSON (a server sends it to its client).
    let back: MoveReport = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    assert!(mv.revert().unwrap());
    assert!(mv.report().outcome.reverted);
    assert_eq!(affinity_files(&root), before);
    // Reverting again changes nothing.
    assert!(mv.revert().unwrap());
    assert!(apply_irq_move(
        &root,
        "enp1s0f0np0",
        &irqs,
        &CpuSet::from_cpus([]),
        &ApplyOptions::default(),
        &mut emulate_kernel
    )
    .is_err());
}

#[test]
fn a_move_dropped_in_a_panic_is_reverted_and_a_disarmed_one_is_not() {
    let t = fixture_copy();
    let root = Root::unconfined(t.path()); // links into the fixture, on purpose
    let before = affinity_files(&root);
    let irqs = queue_irqs(&root, "enp1s0f0np0").unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _mv = apply_irq_move(
            &root,
            "enp1s0f0np0",
            &irqs,
            &CpuSet::from_cpus([6]),
            &ApplyOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            root.read_trim("/proc/irq/111/smp_affinity_list").unwrap(),
            "6"
        );
        panic!("a bug while the IRQs are moved");
    }));
    assert!(r.is_err());
    assert_eq!(affinity_files(&root), before);

    let mut mv = apply_irq_move(
        &root,
        "enp1s0f0np0",
        &irqs,
        &CpuSet::from_cpus([6]),
        &ApplyOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let journal = mv.journal().to_string();
    mv.disarm();
    drop(mv);
    assert_eq!(
        root.read_trim("/proc/irq/111/smp_affinity_list").unwrap(),
        "6"
    );
    // Whoever disarmed it reverts the journal instead.
    wirespeed_tune::engine::revert(&root, &journal, false).unwrap();
    assert_eq!(affinity_files(&root), before);
}
