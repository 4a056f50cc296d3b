//! Where CPUs sit relative to each other: NUMA nodes, L3 groups (CCD/CCX boundaries), SMT
//! siblings; and the relation of two CPUs, the unit of every placement statement.
//!
//! A [`Topology`] is plain data (serialisable, so an observation carries the topology of the host
//! it was taken on and a verdict can be computed anywhere). [`Topology::read`] builds one from
//! the host crate's CPU facts (`cache/index*` of level 3, `nodeN/cpulist`,
//! `thread_siblings_list`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use wirespeed_host::cpu::{collect_cpus, CpuFacts};
use wirespeed_host::{CpuSet, Root};

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

    /// The topology in the host crate's CPU facts.
    pub fn from_cpu_facts(f: &CpuFacts) -> Topology {
        let mut nodes = Vec::new();
        for (&id, cpus) in &f.numa_nodes {
            while nodes.len() < id as usize {
                nodes.push(CpuSet::new());
            }
            nodes.push(cpus.clone());
        }
        Topology::from_groups(
            nodes,
            f.l3_groups.iter().map(|g| g.cpus.clone()).collect(),
            f.cpus
                .iter()
                .filter_map(|c| c.thread_siblings.clone())
                .collect(),
        )
    }

    /// Read the topology of the host under `root` (through the host crate's CPU facts). Missing
    /// files leave the matching groups empty (relations then read [`Relation::Unknown`]); this
    /// never fails.
    pub fn read(root: &Root) -> Topology {
        Topology::from_cpu_facts(&collect_cpus(root))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn fixture(name: &str) -> Root {
        Root::new(format!(
            "{}/../../tests/fixtures/hosts/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
    }

    #[test]
    fn reads_the_ryzen_fixture() {
        let t = Topology::read(&fixture("crow-9900x-cx5-x4"));
        assert_eq!(t.nodes, vec![set("0-11")]);
        assert_eq!(t.l3_groups, vec![set("0-5"), set("6-11")]);
        assert!(t.smt_cores.is_empty());
        assert_eq!(t.relation(6, 6), Relation::SameCpu);
        assert_eq!(t.relation(6, 8), Relation::SameL3);
        assert_eq!(t.relation(6, 3), Relation::OtherL3);
        assert_eq!(t.same_l3_other_cores(&set("6")), set("7-11"));
        assert_eq!(t.summary(), "node 0: L3 0-5 | L3 6-11");
    }

    #[test]
    fn reads_the_two_node_xeon_fixture() {
        let t = Topology::read(&fixture("sl-w9-x3650-cx3"));
        assert_eq!(t.nodes, vec![set("0-7"), set("8-15")]);
        assert_eq!(t.l3_groups, vec![set("0-7"), set("8-15")]);
        assert_eq!(t.relation(9, 1), Relation::OtherNode);
        assert_eq!(t.relation(9, 12), Relation::SameL3);
        assert_eq!(t.node_of(12), Some(1));
    }

    #[test]
    fn smt_siblings_and_sets() {
        let t = Topology::from_groups(
            vec![set("0-7")],
            vec![set("0-7")],
            vec![set("0,4"), set("1,5"), set("2"), set("3,7")],
        );
        assert_eq!(t.smt_cores.len(), 3);
        assert_eq!(t.relation(0, 4), Relation::SmtSibling);
        assert_eq!(t.relation(0, 1), Relation::SameL3);
        assert_eq!(t.relation_to_set(&set("1,4"), 0), Relation::SmtSibling);
        assert_eq!(t.relation_to_set(&set(""), 0), Relation::Unknown);
        assert_eq!(t.same_l3_other_cores(&set("0")), set("1-3,5-7"));
        let bare = Topology::default();
        assert_eq!(bare.relation(0, 1), Relation::Unknown);
        assert_eq!(bare.relation(1, 1), Relation::SameCpu);
    }

    #[test]
    fn serde_round_trip() {
        let t = Topology::read(&fixture("crow-9900x-cx5-x4"));
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, r#"{"nodes":["0-11"],"l3_groups":["0-5","6-11"]}"#);
        assert_eq!(serde_json::from_str::<Topology>(&j).unwrap(), t);
    }
}
