//! Where the NIC's interrupts and the network softirqs ran relative to the application CPUs
//! (the CPUs the test's workers ran on): the placement signature of a test.
//!
//! For each CPU that took events, the relation of that CPU to the nearest app CPU
//! ([`Topology::relation_to_set`]); events are summed per relation, and the relation with the
//! most events is the dominant one. The signature of an end is the pair (dominant relation of the
//! NIC's interrupts, dominant relation of `NET_RX` softirqs).

use std::collections::BTreeMap;
use wirespeed_host::CpuSet;

use crate::topology::{Relation, Topology};
pub use wirespeed_model::doc::{IrqPlacement, Share, Signature};
use wirespeed_model::observation::{EndObservation, IntervalObservation, Percent};

/// A CPU must carry at least this share of the events to be named among a relation's CPUs.
pub const NAMED_CPU_MIN_SHARE: f64 = 5.0;

fn share_of(
    topo: &Topology,
    app: &CpuSet,
    counts: impl Iterator<Item = (u32, u64)>,
) -> Option<Share> {
    let counts: Vec<(u32, u64)> = counts.filter(|&(_, n)| n > 0).collect();
    let total: u64 = counts.iter().map(|&(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let mut by_rel: BTreeMap<Relation, u64> = BTreeMap::new();
    for &(cpu, n) in &counts {
        *by_rel.entry(topo.relation_to_set(app, cpu)).or_default() += n;
    }
    // Largest sum; on a tie the nearer relation (BTreeMap order) wins.
    let (&relation, &n) = by_rel
        .iter()
        .fold(None, |best: Option<(&Relation, &u64)>, cur| match best {
            Some(b) if b.1 >= cur.1 => Some(b),
            _ => Some(cur),
        })?;
    let cpus = counts
        .iter()
        .filter(|&&(cpu, c)| {
            topo.relation_to_set(app, cpu) == relation
                && c as f64 * 100.0 / total as f64 >= NAMED_CPU_MIN_SHARE
        })
        .map(|&(cpu, _)| cpu)
        .collect();
    Some(Share {
        relation,
        share: Percent::of(n, total),
        cpus,
        events: total,
    })
}

/// Where an end's work ran, computed from its observation (the type is the model's).
pub trait IrqPlacementOf {
    /// The placement of one interval (or test) on a host of topology `topo`.
    fn of(obs: &IntervalObservation, topo: &Topology) -> IrqPlacement;
    /// The placement of an end over the whole test.
    fn of_end(end: &EndObservation) -> IrqPlacement;
}

impl IrqPlacementOf for IrqPlacement {
    /// The placement of one interval (or test) on a host of topology `topo`.
    fn of(obs: &IntervalObservation, topo: &Topology) -> IrqPlacement {
        let app = obs.app_cpus();
        IrqPlacement {
            irq: share_of(topo, &app, obs.cpus.iter().map(|c| (c.cpu, c.nic_irqs))),
            softirq: share_of(topo, &app, obs.cpus.iter().map(|c| (c.cpu, c.net_rx))),
            app_cpus: app,
        }
    }

    /// The placement of an end over the whole test.
    fn of_end(end: &EndObservation) -> IrqPlacement {
        IrqPlacement::of(&end.total, &end.topology)
    }
}

/// `CPU 3`, `CPUs 7-11`, `no CPU`.
pub fn cpus_words(s: &CpuSet) -> String {
    s.words()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::observation::{CpuUse, WorkerRun};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn ryzen() -> Topology {
        Topology::from_groups(vec![set("0-11")], vec![set("0-5"), set("6-11")], vec![])
    }

    fn obs(app: u32, counts: &[(u32, u64, u64)]) -> IntervalObservation {
        IntervalObservation {
            cpus: counts
                .iter()
                .map(|&(cpu, irq, rx)| CpuUse {
                    cpu,
                    nic_irqs: irq,
                    net_rx: rx,
                    ..Default::default()
                })
                .collect(),
            workers: vec![WorkerRun {
                worker: 0,
                cpu_requested: Some(app),
                cpus_seen: CpuSet::from_cpus([app]),
                streams: vec![],
                tid: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn dominant_relation_and_named_cpus() {
        let p = IrqPlacement::of(
            &obs(6, &[(6, 0, 10), (3, 9000, 9000), (8, 100, 500), (0, 2, 0)]),
            &ryzen(),
        );
        let irq = p.irq.as_ref().unwrap();
        assert_eq!(irq.relation, Relation::OtherL3);
        assert_eq!(irq.cpus, set("3"), "CPU 0's 2 interrupts are noise");
        assert_eq!(irq.share.get(), 98.9);
        assert_eq!(p.signature().softirq, Some(Relation::OtherL3));
        assert!(
            p.describe().contains(
                "NIC interrupts on CPU 3, a different L3 group of the same node (98.9 % of them)"
            ),
            "{}",
            p.describe()
        );
    }

    #[test]
    fn same_cpu_and_nothing_counted() {
        let p = IrqPlacement::of(&obs(6, &[(6, 500, 800), (8, 10, 20)]), &ryzen());
        assert_eq!(
            p.signature(),
            Signature {
                irq: Some(Relation::SameCpu),
                softirq: Some(Relation::SameCpu)
            }
        );
        let p = IrqPlacement::of(&obs(6, &[(6, 0, 0)]), &ryzen());
        assert_eq!(
            p.signature(),
            Signature {
                irq: None,
                softirq: None
            }
        );
        assert_eq!(p.signature().to_string(), "irq=none softirq=none");
        assert_eq!(
            p.signature().words(),
            "no NIC interrupts counted, no RX softirq counted"
        );
    }

    #[test]
    fn unknown_app_cpus_give_unknown_relations() {
        let mut o = obs(6, &[(8, 10, 10)]);
        o.workers.clear();
        let p = IrqPlacement::of(&o, &ryzen());
        assert_eq!(p.irq.unwrap().relation, Relation::Unknown);
    }
}
