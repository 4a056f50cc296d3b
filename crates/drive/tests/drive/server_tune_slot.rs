//! A server's tune change (the engine's slot with this crate's `IrqTune` hook), without the
//! network: applied to a copy of the Ryzen fixture (whose
//! ConnectX-5 has 12 queue IRQs), one at a time, reverted on release, on a panic in the test's
//! thread and when the server closes the slot. Nothing plays the kernel here: tune writes only
//! `smp_affinity_list`, and the whole tree must come back byte for byte.

use std::net::IpAddr;

use wirespeed_drive::hooks::IrqTune;
use wirespeed_engine::tune::{self, TuneConfig, TuneSlot};
use wirespeed_host::{CpuSet, Root};
use wirespeed_report::where_ran::describe_move;

use crate::common as tree;

const IFACE: &str = "enp1s0f0np0";

fn crow() -> (tempfile::TempDir, std::path::PathBuf) {
    tree::temp_copy(&tree::fixtures().join("crow-9900x-cx5-x4"))
}

fn config(dir: &std::path::Path, iface: Option<&str>) -> TuneConfig {
    let mut c = IrqTune::new(Root::new(dir));
    c.iface = iface.map(str::to_string);
    TuneConfig::new(c)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn affinity(dir: &std::path::Path, irq: u32) -> String {
    std::fs::read_to_string(dir.join(format!("proc/irq/{irq}/smp_affinity_list")))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_change_moves_the_queue_irqs_and_release_puts_them_back() {
    let (_t, dir) = crow();
    let before = tree::snapshot(&dir);
    let cfg = config(&dir, Some(IFACE));
    let slot = TuneSlot::default();
    let mut held = tune::apply(
        &slot,
        &cfg,
        1,
        &CpuSet::from_cpus([3]),
        ip("192.0.2.7"),
        None,
    )
    .unwrap();
    let r = held.report().clone();
    assert_eq!(r.iface, IFACE);
    assert_eq!(r.outcome.moved.len(), 12, "{r:?}");
    assert_eq!(affinity(&dir, 109), "3");
    assert_eq!(affinity(&dir, 99), "3");
    assert_eq!(slot.holder(), Some(1));
    let after = held.release().clone();
    assert!(after.outcome.reverted);
    assert_eq!(slot.holder(), None);
    assert!(
        tree::diff(&before, &tree::snapshot(&dir)).is_empty(),
        "{:?}",
        tree::diff(&before, &tree::snapshot(&dir))
    );
    // The journal stays, as the record.
    let journals = std::fs::read_dir(dir.join("var/lib/wirespeed"))
        .unwrap()
        .count();
    assert_eq!(journals, 1);
    assert!(
        describe_move(&after).ends_with(", reverted"),
        "{}",
        describe_move(&after)
    );
}

#[test]
fn one_change_at_a_time() {
    let (_t, dir) = crow();
    let cfg = config(&dir, Some(IFACE));
    let slot = TuneSlot::default();
    let held = tune::apply(
        &slot,
        &cfg,
        4,
        &CpuSet::from_cpus([8]),
        ip("192.0.2.7"),
        None,
    )
    .unwrap();
    let e = tune::apply(
        &slot,
        &cfg,
        5,
        &CpuSet::from_cpus([9]),
        ip("192.0.2.7"),
        None,
    )
    .err()
    .unwrap();
    assert!(e.0.contains("another test (#4)"), "{}", e.0);
    assert_eq!(affinity(&dir, 111), "8");
    drop(held);
    assert_eq!(affinity(&dir, 111), "3");
    let mut again = tune::apply(
        &slot,
        &cfg,
        6,
        &CpuSet::from_cpus([9]),
        ip("192.0.2.7"),
        None,
    )
    .unwrap();
    assert_eq!(affinity(&dir, 111), "9");
    again.release();
}

#[test]
fn a_panic_in_the_tests_thread_reverts_the_change() {
    let (_t, dir) = crow();
    let before = tree::snapshot(&dir);
    let cfg = config(&dir, Some(IFACE));
    let slot = TuneSlot::default();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            let _held = tune::apply(
                &slot,
                &cfg,
                1,
                &CpuSet::from_cpus([6]),
                ip("192.0.2.7"),
                None,
            )
            .unwrap();
            assert_eq!(affinity(&dir, 111), "6");
            panic!("a bug in the middle of the test");
        })
        .join()
    });
    assert!(r.is_err());
    assert!(tree::diff(&before, &tree::snapshot(&dir)).is_empty());
    assert_eq!(slot.holder(), None);
}

#[test]
fn closing_the_slot_reverts_what_a_running_test_holds() {
    let (_t, dir) = crow();
    let before = tree::snapshot(&dir);
    let cfg = config(&dir, Some(IFACE));
    let slot = TuneSlot::default();
    let mut held = tune::apply(
        &slot,
        &cfg,
        2,
        &CpuSet::from_cpus([10, 11]),
        ip("192.0.2.7"),
        None,
    )
    .unwrap();
    assert_eq!(affinity(&dir, 99), "10");
    assert_eq!(affinity(&dir, 109), "11");
    // The server stops while the test still runs.
    assert!(slot.close(Some(&cfg)).is_some());
    assert!(tree::diff(&before, &tree::snapshot(&dir)).is_empty());
    // The test ends later and finds its change gone: nothing more is written.
    held.release();
    assert!(tree::diff(&before, &tree::snapshot(&dir)).is_empty());
    let e = tune::apply(
        &slot,
        &cfg,
        3,
        &CpuSet::from_cpus([9]),
        ip("192.0.2.7"),
        None,
    )
    .err()
    .unwrap();
    assert!(e.0.contains("shutting down"), "{}", e.0);
}

#[test]
fn refusals_say_why() {
    let (_t, dir) = crow();
    let before = tree::snapshot(&dir);
    let slot = TuneSlot::default();
    let routed = config(&dir, None);
    // A loopback peer: the test runs over lo.
    let e = tune::apply(
        &slot,
        &routed,
        1,
        &CpuSet::from_cpus([3]),
        ip("127.0.0.1"),
        None,
    )
    .err()
    .unwrap();
    assert!(e.0.contains("lo, which has no NIC interrupts"), "{}", e.0);
    // The fixture has no routing table: which NIC carries the test is unknown.
    let e = tune::apply(
        &slot,
        &routed,
        1,
        &CpuSet::from_cpus([3]),
        ip("192.0.2.7"),
        None,
    )
    .err()
    .unwrap();
    assert!(e.0.contains("--tune-iface"), "{}", e.0);
    let fixed = config(&dir, Some(IFACE));
    let e = tune::apply(
        &slot,
        &fixed,
        1,
        &CpuSet::from_cpus([12]),
        ip("192.0.2.7"),
        None,
    )
    .err()
    .unwrap();
    assert!(e.0.contains("CPU 12: not online"), "{}", e.0);
    let e = tune::apply(&slot, &fixed, 1, &CpuSet::new(), ip("192.0.2.7"), None)
        .err()
        .unwrap();
    assert!(e.0.contains("no CPU"), "{}", e.0);
    let other = config(&dir, Some("enp1s0f1np1x"));
    let e = tune::apply(
        &slot,
        &other,
        1,
        &CpuSet::from_cpus([3]),
        ip("192.0.2.7"),
        None,
    )
    .err()
    .unwrap();
    assert!(e.0.contains("not a PCI network interface"), "{}", e.0);
    assert!(tune::not_allowed(&CpuSet::from_cpus([3]))
        .0
        .contains("--allow-tune"));
    // Nothing was written, not even a journal.
    assert!(tree::diff(&before, &tree::snapshot(&dir)).is_empty());
    assert!(!dir.join("var/lib/wirespeed").exists());
}
