//! Where CPUs sit relative to each other: the [`Topology`] and [`Relation`] types live in
//! `wirespeed-model` (an observation carries its host's topology); this module reads one from
//! the host crate's CPU facts (`cache/index*` of level 3, `nodeN/cpulist`,
//! `thread_siblings_list`).

use wirespeed_host::cpu::{collect_cpus, CpuFacts};
use wirespeed_host::{CpuSet, Root};

pub use wirespeed_model::topology::{Relation, RelationCounts, Topology};

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
    from_cpu_facts(&collect_cpus(root))
}

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
        let t = read(&fixture("crow-9900x-cx5-x4"));
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
        let t = read(&fixture("sl-w9-x3650-cx3"));
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
        let t = read(&fixture("crow-9900x-cx5-x4"));
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, r#"{"nodes":["0-11"],"l3_groups":["0-5","6-11"]}"#);
        assert_eq!(serde_json::from_str::<Topology>(&j).unwrap(), t);
    }
}
