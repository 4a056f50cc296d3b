//! Tune on an upper device: the 2 × 100G LACP bond of the captured `bond-cx6-lacp` host. The
//! plan moves each member's IRQs, writes the bond's hash policy as a journaled step, and revert
//! puts the tree back byte for byte — the hash policy as the kernel printed it (`layer2 0`).

use crate::common::{self, diff, snapshot, temp_copy};

use wirespeed_host::{CpuSet, Root};
use wirespeed_tune::collect;
use wirespeed_tune::engine::{self, StepStatus};
use wirespeed_tune::plan::Change;
use wirespeed_tune::planner::{self, PlanOptions};
use wirespeed_tune::{ApplyOptions, Form};

const HASH: &str = "/sys/class/net/bond0/bonding/xmit_hash_policy";

#[test]
fn a_bond_is_planned_member_by_member_with_its_hash_policy_and_reverted_exactly() {
    let host = common::fixtures().join("bond-cx6-lacp");
    let (_t, tree) = temp_copy(&host);
    let root = Root::new(&tree);
    let original = snapshot(&tree);
    let app = CpuSet::parse_list("20").unwrap();
    // through the VLAN on the bond: the same members, the same bond
    let sv = collect::stack_views(&root, "bond0.100", Some(&app), 10.0, None)
        .unwrap()
        .expect("bond0.100 is an upper device with NICs beneath it");
    let names: Vec<&str> = sv
        .members
        .iter()
        .map(|v| v.nic.as_ref().unwrap().name.as_str())
        .collect();
    assert_eq!(names, ["ens1f0np0", "ens1f1np1"]);
    let mut opts = PlanOptions::new("test");
    opts.app_cpus = Some(app.clone());
    opts.persist = true;
    let plan = planner::plan_stack(&sv, &opts).unwrap();
    // one set of persistence files, holding both members' IRQs and the hash policy
    let creates: Vec<(&str, &str)> = plan
        .steps
        .iter()
        .filter_map(|s| match &s.change {
            Change::Create { path, contents, .. } => Some((path.as_str(), contents.as_str())),
            _ => None,
        })
        .collect();
    let mut paths: Vec<&str> = creates.iter().map(|c| c.0).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(
        paths.len(),
        creates.len(),
        "a file written twice: {paths:?}"
    );
    let boot: String = creates.iter().map(|c| c.1).collect();
    for want in [
        "set_irq mlx5_async0@pci:0000:b1:00.0 120 ",
        "set_irq mlx5_comp7@pci:0000:b1:00.1 148 ",
        "layer3+4 > /sys/class/net/bond0/bonding/xmit_hash_policy",
    ] {
        assert!(boot.contains(want), "{want} not persisted: {boot}");
    }
    assert_eq!(plan.iface.as_deref(), Some("bond0.100"));
    assert!(
        plan.context[0].contains("vlan on bond on 2 pci"),
        "{:?}",
        plan.context
    );

    // each member's 9 vectors move off node 0, to node 1 and away from the app's CPU
    let node1 = CpuSet::parse_list("16-31").unwrap();
    let mut moved: Vec<u32> = Vec::new();
    for s in &plan.steps {
        if let Change::IrqAffinity { irq, cpus, .. } = &s.change {
            assert!(cpus.is_subset(&node1) && !cpus.intersects(&app), "{s:?}");
            moved.push(*irq);
        }
    }
    moved.sort_unstable();
    let want: Vec<u32> = (120..129).chain(140..149).collect();
    assert_eq!(moved, want);
    // the hash policy: one step, compared by its name, fixing doctor's finding
    let hash: Vec<_> = plan
        .steps
        .iter()
        .filter(|s| s.change.path().as_deref() == Some(HASH))
        .collect();
    assert_eq!(hash.len(), 1, "{:#?}", plan.steps);
    assert_eq!(hash[0].finding, "bond-hash-policy");
    assert_eq!(
        (hash[0].current.as_str(), hash[0].new.as_str()),
        ("layer2", "layer3+4")
    );
    assert_eq!(
        hash[0].change,
        Change::Write {
            path: HASH.into(),
            form: Form::Named,
            value: "layer3+4".into()
        }
    );
    // host-wide steps the two members share appear once
    let mut settings: Vec<&str> = plan.steps.iter().map(|s| s.setting.as_str()).collect();
    let all = settings.len();
    settings.sort_unstable();
    settings.dedup();
    assert_eq!(settings.len(), all, "a step twice: {:#?}", plan.steps);
    // what no file write fixes is a note: the LACP rate (the bond must be down to change it)
    assert!(
        plan.notes
            .iter()
            .any(|n| n.finding.as_deref() == Some("bond-lacp-rate-slow")),
        "{:#?}",
        plan.notes
    );

    let report = engine::apply(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(report.count(StepStatus::Failed), 0, "{report:#?}");
    assert_eq!(
        std::fs::read_to_string(tree.join(&HASH[1..])).unwrap(),
        "layer3+4\n"
    );
    // doctor no longer reports the hash policy
    let facts = wirespeed_host::collect(&root);
    let after = wirespeed_doctor::diagnose(
        &facts,
        &wirespeed_doctor::Options {
            iface: Some("bond0".into()),
            app_cpus: Some(app),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        !after.iter().any(|f| f.id == "bond-hash-policy"),
        "{after:#?}"
    );

    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete(), "{r:#?}");
    let now = snapshot(&tree);
    assert!(
        now == original,
        "not byte-identical: {:#?}",
        diff(&original, &now)
    );
    assert_eq!(
        std::fs::read_to_string(tree.join(&HASH[1..])).unwrap(),
        "layer2 0\n"
    );
}

#[test]
fn the_kernel_s_echo_of_the_hash_policy_is_the_value_written() {
    // the kernel prints `layer3+4 1` after `layer3+4` is written: apply must not call that a
    // mismatch, and revert must not call it someone else's change
    let host = common::fixtures().join("bond-cx6-lacp");
    let (_t, tree) = temp_copy(&host);
    let root = Root::new(&tree);
    let sv = collect::stack_views(&root, "bond0", None, 10.0, None)
        .unwrap()
        .unwrap();
    let mut opts = PlanOptions::new("test");
    opts.only = [planner::Category::Link].into_iter().collect();
    let plan = planner::plan_stack(&sv, &opts).unwrap();
    let report = engine::apply(&root, &plan, &ApplyOptions::default(), &mut |_, _| {}).unwrap();
    let step = report
        .steps
        .iter()
        .zip(&plan.steps)
        .find(|(_, s)| s.change.path().as_deref() == Some(HASH))
        .unwrap();
    assert_eq!(step.0.status, StepStatus::Applied, "{report:#?}");
    std::fs::write(tree.join(&HASH[1..]), "layer3+4 1\n").unwrap();
    let r = engine::revert(&root, &report.journal, false).unwrap();
    assert!(r.complete(), "{r:#?}");
    assert_eq!(
        std::fs::read_to_string(tree.join(&HASH[1..])).unwrap(),
        "layer2 0\n"
    );
}
