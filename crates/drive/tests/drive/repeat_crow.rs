//! The 65 / 83 / 99 Gbit/s case: nine recorded runs (tests/data/README.md) must come out as
//! three modes tied to where the receiver's NIC interrupts ran, with the write-up author's
//! conclusion: worst on the receiver's own CPU 6, middle on the other CCD (0-5), best on another
//! core of the receiver's CCD, so pin the NIC's IRQs to CPUs 7-11.

use std::path::PathBuf;
use wirespeed_drive::modes::{analyze, Run};
use wirespeed_host::Root;
use wirespeed_model::observation::BitsPerSecond;
use wirespeed_observe::placement::Signature;
use wirespeed_observe::topology::Relation;
use wirespeed_verdict::{verdict, VerdictId};

#[derive(serde::Deserialize)]
struct Recorded {
    runs: Vec<Run>,
}

fn load() -> Vec<Run> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/crow-repeat-65-83-99.json");
    let text = std::fs::read_to_string(&p).unwrap();
    serde_json::from_str::<Recorded>(&text).unwrap().runs
}

#[test]
fn the_recorded_topology_is_the_fixtures() {
    let fixture = wirespeed_observe::topology::read(&Root::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hosts/crow-9900x-cx5-x4"),
    ));
    for r in load() {
        for e in r.observation.as_ref().unwrap().ends() {
            assert_eq!(e.topology, fixture);
        }
    }
}

#[test]
fn three_modes_tied_to_where_the_interrupts_ran() {
    let runs = load();
    let a = analyze(&runs).unwrap();
    assert_eq!(a.stats.runs, 9);
    assert_eq!(format!("{}", a.stats.min), "64.1 Gbit/s");
    assert_eq!(format!("{}", a.stats.median), "84.9 Gbit/s");
    assert_eq!(format!("{}", a.stats.max), "99.1 Gbit/s");
    assert_eq!(a.modes.len(), 3);

    let sig = |r| {
        Some(Signature {
            irq: Some(r),
            softirq: Some(r),
        })
    };
    let (worst, middle, best) = (&a.modes[0], &a.modes[1], &a.modes[2]);
    assert_eq!(worst.runs, vec![2, 5, 7]);
    assert_eq!(middle.runs, vec![1, 4, 8]);
    assert_eq!(best.runs, vec![3, 6, 9]);
    assert_eq!(worst.signature, sig(Relation::SameCpu));
    assert_eq!(middle.signature, sig(Relation::OtherL3));
    assert_eq!(best.signature, sig(Relation::SameL3));
    assert!(a.modes.iter().all(|m| m.agreeing == 3));

    assert_eq!(
        worst.description,
        "64.6 Gbit/s (runs 2, 5, 7; 64.1–65.3 Gbit/s): NIC interrupts and RX softirq on CPU 6 (the app's own CPU; app on CPU 6)"
    );
    assert_eq!(
        middle.description,
        "84.9 Gbit/s (runs 1, 4, 8; 83.2–85.6 Gbit/s): NIC interrupts and RX softirq on CPU 3 (a different L3 group of the same node; app on CPU 6)"
    );
    assert_eq!(
        best.description,
        "98.8 Gbit/s (runs 3, 6, 9; 98.4–99.1 Gbit/s): NIC interrupts and RX softirq on CPU 8 (another core of the app's L3 group; app on CPU 6)"
    );
    assert_eq!(
        a.conclusion.as_deref(),
        Some("throughput follows where the receiver's NIC interrupts and RX softirq ran: 98.8 Gbit/s with them on another core of the app's L3 group; 84.9 Gbit/s with them on a different L3 group of the same node; 64.6 Gbit/s with them on the app's own CPU")
    );
    assert_eq!(
        a.recommendation.as_deref(),
        Some("pin enp1s0f0np0's queue IRQs to CPUs 7-11 (the L3 group of the receiver's CPU 6 without that core) and keep irqbalance from moving them; the receiver stays on CPU 6")
    );

    let mut out = Vec::new();
    wirespeed_report::repeat::write_text(&mut out, &a).unwrap();
    let text = String::from_utf8(out).unwrap();
    eprintln!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("3 modes (sorted throughputs split"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("  98.8 Gbit/s"),
        "best mode first: {text}"
    );
    assert!(lines
        .last()
        .unwrap()
        .starts_with("recommendation: pin enp1s0f0np0's queue IRQs to CPUs 7-11"));
}

#[test]
fn each_run_gets_the_verdict_the_author_reached() {
    for r in load() {
        let v = verdict(r.observation.as_ref().unwrap(), Some(r.bits_per_second));
        let g = r.bits_per_second.gbps();
        let expect = if g < 70.0 {
            VerdictId::ReceiverSharesCpuWithSoftirq
        } else if g < 90.0 {
            VerdictId::IrqCrossL3
        } else {
            VerdictId::LineRate
        };
        assert_eq!(v.id, expect, "{g} Gbit/s: {}", v.line);
        if g < 70.0 {
            assert!(
                v.line.starts_with("receiver shares CPU 6 with RX softirq"),
                "{}",
                v.line
            );
        } else if g < 90.0 {
            assert!(
                v.line.starts_with("IRQs on a different L3 group than the receiver: NIC interrupts on CPU 3 (L3 0-5), receiver on CPU 6 (L3 6-11"),
                "{}",
                v.line
            );
        }
    }
    let _ = BitsPerSecond(0.0);
}

#[test]
fn the_per_cpu_table_of_a_middle_run() {
    let runs = load();
    let r = runs[0]
        .observation
        .as_ref()
        .unwrap()
        .remote
        .as_ref()
        .unwrap();
    let mut out = Vec::new();
    wirespeed_report::where_ran::write_end(&mut out, r).unwrap();
    let t = String::from_utf8(out).unwrap();
    eprintln!("{t}");
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[0],
        "receiver crow via enp1s0f0np0 (13 NIC IRQs): CPUs that did work"
    );
    let cpus: Vec<&str> = lines[2..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(cpus, ["0", "3", "4", "6", "8"]);
    assert!(lines[5].ends_with("worker 0"));
}

#[test]
fn the_where_block_of_a_worst_run() {
    let runs = load();
    let run = &runs[1];
    let obs = run.observation.as_ref().unwrap();
    let v = verdict(obs, Some(run.bits_per_second));
    let mut out = Vec::new();
    wirespeed_report::where_ran::write_test(&mut out, obs, Some(&v)).unwrap();
    let t = String::from_utf8(out).unwrap();
    eprintln!("{t}");
    assert!(
        t.starts_with("Where the work ran:\nsender vulture via enp1s0f0np0"),
        "{t}"
    );
    assert!(t.contains("\nreceiver crow via enp1s0f0np0 (13 NIC IRQs): CPUs that did work\n"));
    assert!(t.contains("  TCP_INFO: receive-window-limited 0 %"), "{t}");
    assert!(t.contains(
        "\nVerdict: receiver shares CPU 6 with RX softirq (CPU 6: 51 % system, 46 % softirq; 100 % of the NIC's interrupts)\n  evidence: "
    ), "{t}");
}
