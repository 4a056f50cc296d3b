//! Where a NIC's interrupt vectors should go: the one rule behind doctor's fix commands and
//! tune's plan, so that the two never disagree.
//!
//! - [`irq_cpus`]: the CPUs that serve the NIC's IRQs under a policy: `--irq-cpus LIST`, `node`
//!   (the NIC's NUMA node) or `l3` (the application CPUs' L3 group(s), on a multi-node host only
//!   the part on the NIC's node). The application CPUs and their SMT siblings are left out; the
//!   siblings come back only when nothing else is left. [`auto_policy`] is the choice made when
//!   the user names none: `l3` when it leaves a CPU that is neither an app CPU nor its sibling,
//!   else `node`.
//! - [`place`]: each vector's wanted CPUs. Queue vectors spread evenly over the IRQ CPUs with as
//!   few moves as possible ([`spread_queues`]); a control vector moves (to the whole set) only
//!   when it sits on an app CPU or outside the set.
//!
//! Both work on a [`CpuLayout`] and a list of [`Vector`]s, which tune builds from its host view
//! and doctor from [`HostFacts`] ([`CpuLayout::from_facts`], [`vectors`]) the same way.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use wirespeed_host::interrupts::IrqKind;
use wirespeed_host::nic::NicFacts;
use wirespeed_host::{CpuSet, HostFacts};

/// The CPU layout placement needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuLayout {
    /// Online CPUs; empty when unknown.
    pub online: CpuSet,
    /// NUMA node → CPUs (nodes with CPUs only).
    pub numa_nodes: BTreeMap<u32, CpuSet>,
    /// L3 groups (CPU sets sharing one L3), in order of their first CPU.
    pub l3_groups: Vec<CpuSet>,
    /// SMT siblings of each CPU, including itself.
    pub siblings: BTreeMap<u32, CpuSet>,
}

impl CpuLayout {
    pub fn from_facts(facts: &HostFacts) -> CpuLayout {
        let c = &facts.cpu;
        CpuLayout {
            online: c.online_set(),
            numa_nodes: c.nodes_with_cpus().map(|(n, s)| (n, s.clone())).collect(),
            l3_groups: c.l3_groups.iter().map(|g| g.cpus.clone()).collect(),
            siblings: c
                .cpus
                .iter()
                .filter_map(|t| Some((t.cpu, t.thread_siblings.clone()?)))
                .collect(),
        }
    }

    /// The L3 group holding `cpu`.
    pub fn l3_of(&self, cpu: u32) -> Option<&CpuSet> {
        self.l3_groups.iter().find(|g| g.contains(cpu))
    }

    /// The union of the L3 groups of `cpus`.
    pub fn l3_union(&self, cpus: &CpuSet) -> CpuSet {
        cpus.iter()
            .filter_map(|c| self.l3_of(c))
            .fold(CpuSet::new(), |acc, g| acc.union(g))
    }

    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.numa_nodes
            .iter()
            .find(|(_, s)| s.contains(cpu))
            .map(|(n, _)| *n)
    }

    pub fn multi_node(&self) -> bool {
        self.numa_nodes.len() > 1
    }

    /// SMT siblings of a set of CPUs (the set itself included).
    pub fn with_siblings(&self, cpus: &CpuSet) -> CpuSet {
        cpus.iter()
            .fold(cpus.clone(), |acc, c| match self.siblings.get(&c) {
                Some(s) => acc.union(s),
                None => acc,
            })
    }

    /// On a multi-node host, the NIC's node and its CPUs (when the node is known).
    fn nic_node(&self, nic: &NicLocality<'_>) -> Option<(u32, &CpuSet)> {
        if !self.multi_node() {
            return None;
        }
        let n = nic.node?;
        self.numa_nodes.get(&n).map(|c| (n, c))
    }
}

/// Where the NIC sits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicLocality<'a> {
    /// NUMA node of the PCI function; `None` for -1 or unknown.
    pub node: Option<u32>,
    /// CPUs local to the PCI function (`local_cpulist`).
    pub local_cpus: Option<&'a CpuSet>,
}

impl<'a> NicLocality<'a> {
    pub fn of(nic: &'a NicFacts) -> NicLocality<'a> {
        NicLocality {
            node: nic.node(),
            local_cpus: nic.local_cpus.as_ref(),
        }
    }
}

/// Where the NIC's queue IRQs go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IrqPolicy {
    /// Round-robin over these CPUs (the caller has checked them against the host).
    Cpus(CpuSet),
    /// The NIC's NUMA node (its local CPUs).
    Node,
    /// The app CPUs' L3 group(s), minus the app CPUs.
    L3,
}

impl IrqPolicy {
    /// The `--irq-policy` value naming this policy (`None` for a CPU list).
    pub fn name(&self) -> Option<&'static str> {
        match self {
            IrqPolicy::Cpus(_) => None,
            IrqPolicy::Node => Some("node"),
            IrqPolicy::L3 => Some("l3"),
        }
    }
}

/// The IRQ CPUs of a policy and the rule that chose them, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqCpus {
    pub cpus: CpuSet,
    pub rule: String,
}

/// A policy that leaves no CPU for the IRQs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("--irq-policy l3 needs --app-cpus (the policy places IRQs next to the app)")]
    PolicyNeedsApp,
    #[error("--irq-policy {policy}: no CPU left for IRQs ({why}); choose them with --irq-cpus")]
    NoIrqCpus { policy: String, why: String },
    #[error("the plan needs a NIC but none was found; pass --iface")]
    NoNic,
}

fn no_cpus(policy: &str, why: String) -> PlacementError {
    PlacementError::NoIrqCpus {
        policy: policy.into(),
        why,
    }
}

/// The IRQ CPUs under `policy` for a NIC (`None`: no NIC) and the application CPUs `app`
/// (empty: none given).
pub fn irq_cpus(
    layout: &CpuLayout,
    nic: Option<NicLocality<'_>>,
    app: &CpuSet,
    policy: &IrqPolicy,
) -> Result<IrqCpus, PlacementError> {
    let app_and_siblings = layout.with_siblings(app);
    match policy {
        IrqPolicy::Cpus(cpus) => Ok(IrqCpus {
            cpus: cpus.clone(),
            rule: format!("--irq-cpus {cpus}"),
        }),
        IrqPolicy::L3 => {
            if app.is_empty() {
                return Err(PlacementError::PolicyNeedsApp);
            }
            let group = layout.l3_union(app);
            if group.is_empty() {
                return Err(no_cpus("l3", "the host's L3 groups are unknown".into()));
            }
            // On a multi-node host only the part of the group on the NIC's node: the rest
            // would make the IRQs NUMA-remote.
            let (group, what) = match nic.as_ref().and_then(|n| layout.nic_node(n)) {
                Some((nic_node, node_cpus)) if !group.intersects(node_cpus) => {
                    let node = group.iter().find_map(|c| layout.node_of(c)).unwrap_or(0);
                    return Err(no_cpus("l3", format!(
                        "the app CPUs' L3 group {group} is on NUMA node {node} and the NIC on node {nic_node}, so IRQs there would be NUMA-remote; run the app on node {nic_node}"
                    )));
                }
                Some((nic_node, node_cpus)) if !group.is_subset(node_cpus) => {
                    let here = group.intersection(node_cpus);
                    let what = format!("{here} (its CPUs on the NIC's NUMA node {nic_node})");
                    (here, what)
                }
                _ => {
                    let what = group.to_string();
                    (group, what)
                }
            };
            let mut cpus = group.difference(&app_and_siblings);
            let mut rule = format!("l3: the app CPUs' L3 group {what} without the app CPUs");
            if app_and_siblings != *app {
                rule.push_str(" and their SMT siblings");
            }
            if cpus.is_empty() {
                cpus = group.difference(app);
                rule = format!("l3: the app CPUs' L3 group {what} without the app CPUs (their SMT siblings included: nothing else is left)");
            }
            if cpus.is_empty() {
                return Err(no_cpus(
                    "l3",
                    format!("the app CPUs {app} fill their L3 group {what}"),
                ));
            }
            Ok(IrqCpus { cpus, rule })
        }
        IrqPolicy::Node => {
            let nic = nic.ok_or(PlacementError::NoNic)?;
            let (node_cpus, what) = nic_node_cpus(layout, nic);
            let cpus = away_from(layout, &node_cpus, app);
            if cpus.is_empty() {
                return Err(no_cpus("node", format!("the app CPUs {app} fill {what}")));
            }
            let rule = if app.is_empty() {
                format!("node: {what}")
            } else {
                format!("node: {what} without the app CPUs")
            };
            Ok(IrqCpus { cpus, rule })
        }
    }
}

/// The CPUs of the NIC's NUMA node (else its local CPUs, else every online CPU), online ones
/// only, and their description.
fn nic_node_cpus(layout: &CpuLayout, nic: NicLocality<'_>) -> (CpuSet, String) {
    let online = &layout.online;
    let (node_cpus, what) = match nic
        .node
        .and_then(|n| layout.numa_nodes.get(&n).map(|c| (n, c)))
    {
        Some((n, c)) => (c.clone(), format!("NUMA node {n} ({c})")),
        None => match nic.local_cpus {
            Some(l) => (l.clone(), format!("the NIC's local CPUs {l}")),
            None => (online.clone(), format!("all online CPUs {online}")),
        },
    };
    let node_cpus = if online.is_empty() {
        node_cpus
    } else {
        node_cpus.intersection(online)
    };
    (node_cpus, what)
}

/// `cpus` without `avoid` and its SMT siblings; without `avoid` alone when the siblings leave
/// nothing. The one rule that keeps the IRQs off the app CPUs and the app off the IRQ CPUs.
fn away_from(layout: &CpuLayout, cpus: &CpuSet, avoid: &CpuSet) -> CpuSet {
    let apart = cpus.difference(&layout.with_siblings(avoid));
    if apart.is_empty() {
        cpus.difference(avoid)
    } else {
        apart
    }
}

/// Where the application's workers should run for a NIC whose IRQs are served by `irq`: the
/// same rule as [`IrqPolicy::Node`] seen from the other side — the NIC's node, without the IRQ
/// CPUs and their SMT siblings (the siblings come back when nothing else is left; the IRQ CPUs
/// themselves when the node has nothing else). `nic` `None`: no NIC (loopback), every online
/// CPU. Ascending; the caller takes as many as it needs.
pub fn app_cpus(layout: &CpuLayout, nic: Option<NicLocality<'_>>, irq: &CpuSet) -> IrqCpus {
    let (node_cpus, what) = nic_node_cpus(layout, nic.unwrap_or_default());
    let mut cpus = away_from(layout, &node_cpus, irq);
    let rule = if cpus.is_empty() {
        cpus = node_cpus;
        format!("{what}: the IRQ CPUs fill it")
    } else if irq.is_empty() {
        what
    } else {
        format!("{what} without the NIC's IRQ CPUs {irq}")
    };
    IrqCpus { cpus, rule }
}

/// The policy when the user names none: `l3` when the app CPUs' L3 group (on the NIC's node)
/// has a CPU that is neither an app CPU nor an SMT sibling of one, else `node`.
pub fn auto_policy(layout: &CpuLayout, nic: Option<NicLocality<'_>>, app: &CpuSet) -> IrqPolicy {
    match irq_cpus(layout, nic, app, &IrqPolicy::L3) {
        Ok(t) if !t.cpus.intersects(&layout.with_siblings(app)) => IrqPolicy::L3,
        _ => IrqPolicy::Node,
    }
}

/// What a NIC vector carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VectorKind {
    /// Packet work: a queue / completion vector.
    Queue,
    /// Control, async, admin: little traffic.
    Control,
}

/// One vector of the NIC, as placement sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vector {
    pub irq: u32,
    pub kind: VectorKind,
    /// `smp_affinity_list`.
    pub requested: CpuSet,
    /// `effective_affinity_list` where the kernel has it, else `requested`.
    pub effective: CpuSet,
}

/// The NIC's own vectors with a known requested affinity, in IRQ order: queue vectors as the
/// host crate counts them ([`NicFacts::queue_irqs`]), everything else control.
pub fn vectors(nic: &NicFacts) -> Vec<Vector> {
    let queue: Vec<u32> = nic.queue_irqs().iter().map(|i| i.irq).collect();
    let mut out: Vec<Vector> = nic
        .own_irqs()
        .filter_map(|i| {
            let requested = i.requested.clone()?;
            Some(Vector {
                irq: i.irq,
                kind: if queue.contains(&i.irq) && i.kind != IrqKind::Control {
                    VectorKind::Queue
                } else {
                    VectorKind::Control
                },
                effective: i.effective.clone().unwrap_or_else(|| requested.clone()),
                requested,
            })
        })
        .collect();
    out.sort_by_key(|v| v.irq);
    out
}

/// Spread the queue vectors evenly over `targets` with as few moves as possible: a vector
/// already pinned to one target CPU stays while that CPU holds no more than its share (n / k
/// rounded up); every other one goes, in IRQ order, to the least-loaded target CPU (the lowest
/// on a tie). On a host where nothing is pinned yet, that is a plain round-robin. Returns
/// `(irq, cpu)` for every queue vector.
pub fn spread_queues(vectors: &[Vector], targets: &[u32]) -> Vec<(u32, u32)> {
    if targets.is_empty() {
        return Vec::new();
    }
    let queues: Vec<&Vector> = vectors
        .iter()
        .filter(|v| v.kind == VectorKind::Queue)
        .collect();
    let share = queues.len().div_ceil(targets.len());
    let mut load: Vec<usize> = vec![0; targets.len()];
    let kept: Vec<Option<usize>> = queues
        .iter()
        .map(|q| {
            let p = match (q.requested.len(), q.requested.first()) {
                (1, Some(c)) => targets.iter().position(|t| *t == c),
                _ => None,
            }
            .filter(|&p| load[p] < share)?;
            load[p] += 1;
            Some(p)
        })
        .collect();
    queues
        .iter()
        .zip(kept)
        .map(|(q, kept)| {
            let p = kept.unwrap_or_else(|| {
                let p = (0..targets.len())
                    .min_by_key(|&p| (load[p], p))
                    .unwrap_or(0);
                load[p] += 1;
                p
            });
            (q.irq, targets[p])
        })
        .collect()
}

/// The wanted CPUs of each vector the layout sets: every queue vector (one CPU of `targets`,
/// [`spread_queues`]) and each control vector that sits on an app CPU or outside `targets` (all
/// of `targets`). Control vectors left where they are do not appear.
pub fn place(vectors: &[Vector], targets: &CpuSet, app: &CpuSet) -> BTreeMap<u32, CpuSet> {
    let list: Vec<u32> = targets.iter().collect();
    let mut out: BTreeMap<u32, CpuSet> = spread_queues(vectors, &list)
        .into_iter()
        .map(|(irq, cpu)| (irq, CpuSet::from_cpus([cpu])))
        .collect();
    if targets.is_empty() {
        return out;
    }
    for v in vectors.iter().filter(|v| v.kind == VectorKind::Control) {
        if v.effective.intersects(app) || !v.effective.is_subset(targets) {
            out.insert(v.irq, targets.clone());
        }
    }
    out
}

/// Where a NIC's queue IRQs should go under the policy tune picks when none is named (a plan,
/// not an observation: where they did run is `wirespeed_model::doc::IrqPlacement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqAssignment {
    pub policy: IrqPolicy,
    pub irq_cpus: IrqCpus,
    /// The wanted CPUs of each vector the layout sets ([`place`]).
    pub wanted: BTreeMap<u32, CpuSet>,
}

/// The placement `wirespeed tune` makes for a NIC of `facts` when no policy is named: the
/// [`auto_policy`]'s IRQ CPUs and the wanted CPUs of each vector ([`place`]).
pub fn auto_place(
    facts: &HostFacts,
    nic: &NicFacts,
    app: Option<&CpuSet>,
) -> Result<IrqAssignment, PlacementError> {
    let layout = CpuLayout::from_facts(facts);
    let app = app.cloned().unwrap_or_default();
    let here = NicLocality::of(nic);
    let policy = auto_policy(&layout, Some(here), &app);
    let irq_cpus = irq_cpus(&layout, Some(here), &app, &policy)?;
    let wanted = place(&vectors(nic), &irq_cpus.cpus, &app);
    Ok(IrqAssignment {
        policy,
        irq_cpus,
        wanted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn v(irq: u32, kind: VectorKind, cpus: &str) -> Vector {
        Vector {
            irq,
            kind,
            requested: set(cpus),
            effective: set(cpus),
        }
    }

    #[test]
    fn spreading_fills_the_least_loaded_cpus_and_keeps_what_is_in_place() {
        let q = VectorKind::Queue;
        let vs = vec![
            v(1, q, "7"),
            v(2, q, "7"),
            v(3, q, "8"),
            v(4, VectorKind::Control, "9"),
            v(5, q, "3"),
            v(6, q, "3"),
        ];
        // 9 has no queue vector (4 is control), then 8 has one, 7 two.
        assert_eq!(
            spread_queues(&vs, &[7, 8, 9]),
            [(1, 7), (2, 7), (3, 8), (5, 9), (6, 8)]
        );
        assert!(spread_queues(&vs, &[]).is_empty());
        // the control vector stays inside the targets, and moves when it is on an app CPU
        let p = place(&vs, &set("7-9"), &CpuSet::new());
        assert!(!p.contains_key(&4));
        let p = place(&vs, &set("7-9"), &set("9"));
        assert_eq!(p[&4].to_string(), "7-9");
    }

    fn two_nodes() -> CpuLayout {
        CpuLayout {
            online: set("0-7"),
            numa_nodes: [(0, set("0-3")), (1, set("4-7"))].into_iter().collect(),
            // one L3 spanning both nodes (sub-NUMA clustering) and one per node
            l3_groups: vec![set("0-5"), set("6-7")],
            siblings: BTreeMap::new(),
        }
    }

    #[test]
    fn l3_stays_on_the_nics_node() {
        let l = two_nodes();
        let nic = Some(NicLocality {
            node: Some(1),
            local_cpus: None,
        });
        let t = irq_cpus(&l, nic, &set("4"), &IrqPolicy::L3).unwrap();
        assert_eq!(t.cpus.to_string(), "5");
        assert!(t.rule.contains("NUMA node 1"), "{}", t.rule);
        let e = irq_cpus(&l, nic, &set("1"), &IrqPolicy::L3);
        assert!(e.is_ok(), "group 0-5 reaches node 1: {e:?}");
        let nic0 = Some(NicLocality {
            node: Some(0),
            local_cpus: None,
        });
        let e = irq_cpus(&l, nic0, &set("6"), &IrqPolicy::L3).unwrap_err();
        assert!(e.to_string().contains("NUMA-remote"), "{e}");
        assert_eq!(auto_policy(&l, nic0, &set("6")), IrqPolicy::Node);
        assert_eq!(
            irq_cpus(&l, nic0, &set("6"), &IrqPolicy::Node)
                .unwrap()
                .cpus
                .to_string(),
            "0-3"
        );
        assert_eq!(
            irq_cpus(&l, None, &set("6"), &IrqPolicy::Node),
            Err(PlacementError::NoNic)
        );
    }

    #[test]
    fn app_cpus_are_the_nics_node_away_from_its_irq_cpus() {
        let mut l = two_nodes();
        l.siblings = [(4, set("4,6")), (6, set("4,6"))].into_iter().collect();
        let nic1 = Some(NicLocality {
            node: Some(1),
            local_cpus: None,
        });
        // the IRQs on CPU 4: its SMT sibling 6 is left out too
        let a = app_cpus(&l, nic1, &set("4"));
        assert_eq!(a.cpus.to_string(), "5,7");
        assert!(a.rule.contains("NUMA node 1"), "{}", a.rule);
        assert!(a.rule.contains("IRQ CPUs 4"), "{}", a.rule);
        // the IRQs fill the node but for a sibling: the sibling comes back
        assert_eq!(app_cpus(&l, nic1, &set("4-5,7")).cpus.to_string(), "6");
        // the IRQs fill the node: the node it is
        assert_eq!(app_cpus(&l, nic1, &set("4-7")).cpus.to_string(), "4-7");
        // no NIC (loopback): every online CPU
        assert_eq!(app_cpus(&l, None, &CpuSet::new()).cpus.to_string(), "0-7");
        // the same rule as the IRQs' node policy, from the other side
        let irq = irq_cpus(&l, nic1, &set("5"), &IrqPolicy::Node)
            .unwrap()
            .cpus;
        assert_eq!(app_cpus(&l, nic1, &irq).cpus.to_string(), "5");
    }
}
