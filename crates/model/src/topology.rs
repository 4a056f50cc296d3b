//! Where CPUs sit relative to each other: NUMA nodes, L3 groups (CCD/CCX boundaries), SMT
//! siblings; and the relation of two CPUs, the unit of every placement statement.
//!
//! A [`Topology`] is plain data (serialisable, so an observation carries the topology of the host
//! it was taken on and a verdict can be computed anywhere). `wirespeed_observe::topology::read` builds one
//! from the host crate's CPU facts (`cache/index*` of level 3, `nodeN/cpulist`,
//! `thread_siblings_list`).

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// How a CPU is placed relative to another CPU (or to the nearest of a set of CPUs), from the
/// closest to the farthest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relation {
    /// The very same logical CPU.
    SameCpu,
    /// Another hardware thread of the same physical core.
    SmtSibling,
    /// Another core sharing the L3 cache (same CCX/CCD on AMD, same socket on most Intel parts).
    SameL3,
    /// Same NUMA node, another L3 group (the other CCD of a Ryzen).
    OtherL3,
    /// Another NUMA node.
    OtherNode,
    /// The topology does not tell.
    Unknown,
}

impl Relation {
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::SameCpu => "same-cpu",
            Relation::SmtSibling => "smt-sibling",
            Relation::SameL3 => "same-l3",
            Relation::OtherL3 => "other-l3",
            Relation::OtherNode => "other-node",
            Relation::Unknown => "unknown",
        }
    }

    /// A noun phrase for a sentence: "the app's own CPU", "a different L3 group".
    pub fn describe(self) -> &'static str {
        match self {
            Relation::SameCpu => "the app's own CPU",
            Relation::SmtSibling => "an SMT sibling of the app's core",
            Relation::SameL3 => "another core of the app's L3 group",
            Relation::OtherL3 => "a different L3 group of the same node",
            Relation::OtherNode => "another NUMA node",
            Relation::Unknown => "a CPU at an unknown distance",
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The CPU topology of one host: NUMA nodes, L3 groups and SMT cores, each a list of CPU sets.
/// Groups are numbered by position (ascending by lowest CPU).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// CPUs of each NUMA node (index = node number as the kernel numbers it, when read).
    #[serde(default)]
    pub nodes: Vec<CpuSet>,
    /// CPUs sharing one L3 cache.
    #[serde(default)]
    pub l3_groups: Vec<CpuSet>,
    /// CPUs of one physical core, listed only for cores with more than one thread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub smt_cores: Vec<CpuSet>,
}

fn find(groups: &[CpuSet], cpu: u32) -> Option<usize> {
    groups.iter().position(|g| g.contains(cpu))
}

fn dedup_sorted(mut groups: Vec<CpuSet>) -> Vec<CpuSet> {
    groups.retain(|g| !g.is_empty());
    groups.sort_by_key(|g| g.first());
    groups.dedup();
    groups
}

impl Topology {
    /// A topology from its groups (tests, or facts gathered elsewhere).
    pub fn from_groups(nodes: Vec<CpuSet>, l3_groups: Vec<CpuSet>, smt_cores: Vec<CpuSet>) -> Self {
        Topology {
            nodes,
            l3_groups: dedup_sorted(l3_groups),
            smt_cores: dedup_sorted(smt_cores.into_iter().filter(|c| c.len() > 1).collect()),
        }
    }

    /// The NUMA node of a CPU, when known.
    pub fn node_of(&self, cpu: u32) -> Option<usize> {
        find(&self.nodes, cpu)
    }

    /// The L3 group (index into [`Topology::l3_groups`]) of a CPU, when known.
    pub fn l3_of(&self, cpu: u32) -> Option<usize> {
        find(&self.l3_groups, cpu)
    }

    /// The CPUs of the L3 group holding `cpu`.
    pub fn l3_cpus(&self, cpu: u32) -> Option<&CpuSet> {
        self.l3_of(cpu).map(|i| &self.l3_groups[i])
    }

    /// The CPUs of the physical core holding `cpu` (itself alone without SMT).
    pub fn core_cpus(&self, cpu: u32) -> CpuSet {
        match find(&self.smt_cores, cpu) {
            Some(i) => self.smt_cores[i].clone(),
            None => CpuSet::from_cpus([cpu]),
        }
    }

    /// How `cpu` is placed relative to `app`.
    pub fn relation(&self, app: u32, cpu: u32) -> Relation {
        if app == cpu {
            return Relation::SameCpu;
        }
        if find(&self.smt_cores, app).is_some_and(|i| self.smt_cores[i].contains(cpu)) {
            return Relation::SmtSibling;
        }
        if let (Some(a), Some(b)) = (self.node_of(app), self.node_of(cpu)) {
            if a != b {
                return Relation::OtherNode;
            }
        }
        match (self.l3_of(app), self.l3_of(cpu)) {
            (Some(a), Some(b)) if a == b => Relation::SameL3,
            (Some(_), Some(_)) => Relation::OtherL3,
            _ => Relation::Unknown,
        }
    }

    /// How `cpu` is placed relative to the nearest of the `app` CPUs; `Unknown` when `app` is
    /// empty.
    pub fn relation_to_set(&self, app: &CpuSet, cpu: u32) -> Relation {
        let mut best = Relation::Unknown;
        for a in app.iter() {
            let r = self.relation(a, cpu);
            // Unknown sorts last, so the minimum is the nearest known relation.
            if r < best {
                best = r;
            }
        }
        best
    }

    /// The CPUs that share the L3 group of the `app` CPUs without being one of them or an SMT
    /// sibling of one: where the write-up's author put the NIC's interrupts.
    pub fn same_l3_other_cores(&self, app: &CpuSet) -> CpuSet {
        let mut out = CpuSet::new();
        for a in app.iter() {
            if let Some(g) = self.l3_cpus(a) {
                out = out.union(g);
            }
        }
        for a in app.iter() {
            out = out.difference(&self.core_cpus(a));
        }
        out
    }

    /// A short description: `node 0: L3 0-5 | L3 6-11`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.nodes.iter().filter(|n| !n.is_empty()).count() > 0 {
            for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
                let l3: Vec<String> = self
                    .l3_groups
                    .iter()
                    .filter(|g| g.is_subset(n))
                    .map(|g| format!("L3 {g}"))
                    .collect();
                parts.push(format!("node {i}: {}", l3.join(" | ")));
            }
        } else {
            parts.push(
                self.l3_groups
                    .iter()
                    .map(|g| format!("L3 {g}"))
                    .collect::<Vec<_>>()
                    .join(" | "),
            );
        }
        parts.join("; ")
    }
}

/// Counts per relation class, e.g. where a NIC's interrupts ran relative to the app CPUs.
pub type RelationCounts = BTreeMap<Relation, u64>;
