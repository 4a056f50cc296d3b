//! CPU facts: online/possible CPUs, packages, cores, SMT siblings, NUMA nodes, L3 groups (the
//! CCD/CCX boundaries of AMD parts, one per socket on most Intel parts), cpufreq governor, driver
//! and frequencies, C-states, and the model name from `/proc/cpuinfo`.
//!
//! Sources (host paths):
//! - `/sys/devices/system/cpu/{online,possible}`, `cpuN/topology/*`, `cpuN/cache/index*/{level,type,id,shared_cpu_list,size}`
//! - `/sys/devices/system/node/nodeN/cpulist`
//! - `/sys/devices/system/cpu/cpuN/cpufreq/{scaling_governor,scaling_driver,cpuinfo_max_freq,scaling_max_freq,energy_performance_preference}`
//! - `/sys/devices/system/cpu/cpuN/cpuidle/stateK/{name,desc,latency,disable}`, `/sys/devices/system/cpu/cpuidle/current_driver`
//! - `/proc/cpuinfo` (model name; `cpu MHz` for [`current_freq`] where cpufreq is absent)
//! - `/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq` ([`current_freq`])
//!
//! Every source may be missing (a VM without cpufreq, a kernel without NUMA or cache ids); the
//! fact is then `None` or empty, never an error.

use crate::{CpuSet, Root};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Topology and frequency facts of one online CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTopo {
    pub cpu: u32,
    /// `topology/physical_package_id`.
    pub package: Option<u32>,
    /// `topology/die_id`.
    pub die: Option<u32>,
    /// `topology/core_id` (unique within a package only).
    pub core_id: Option<u32>,
    /// SMT siblings including the CPU itself (`topology/thread_siblings_list`).
    pub thread_siblings: Option<CpuSet>,
    /// NUMA node holding the CPU.
    pub node: Option<u32>,
    /// L3 group id (see [`L3Group`]).
    pub l3: Option<u32>,
    /// cpufreq governor (`scaling_governor`).
    pub governor: Option<String>,
    /// Hardware maximum frequency, kHz (`cpuinfo_max_freq`).
    pub max_freq_khz: Option<u64>,
    /// Policy maximum frequency, kHz (`scaling_max_freq`).
    pub scaling_max_freq_khz: Option<u64>,
    /// Energy/performance preference (`energy_performance_preference`; intel_pstate, amd-pstate-epp).
    pub epp: Option<String>,
}

/// CPUs that share one last-level (L3) cache: a CCD/CCX on AMD, usually a socket on Intel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct L3Group {
    /// The cache `id` when the kernel gives one (unique per level), else the group's index in
    /// order of its first CPU.
    pub id: u32,
    pub cpus: CpuSet,
    /// Size as the kernel prints it (`32768K`).
    pub size: Option<String>,
}

/// One idle state (`cpuidle/stateK`), merged over the CPUs that have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CState {
    /// K of `stateK`.
    pub index: u32,
    pub name: String,
    pub desc: Option<String>,
    /// Exit latency, µs.
    pub latency_us: Option<u64>,
    /// CPUs that have this state.
    pub cpus: CpuSet,
    /// CPUs where it is disabled (`disable` = 1).
    pub disabled_cpus: CpuSet,
}

/// Everything about the CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuFacts {
    /// `model name` of `/proc/cpuinfo` (or the closest field on other architectures).
    pub model: Option<String>,
    pub online: Option<CpuSet>,
    pub possible: Option<CpuSet>,
    /// `/sys/devices/system/cpu/smt/active`.
    pub smt_active: Option<bool>,
    /// One entry per online CPU, in order.
    pub cpus: Vec<CpuTopo>,
    /// Package id → its CPUs.
    pub packages: BTreeMap<u32, CpuSet>,
    /// Physical cores (distinct package/die/core ids; SMT siblings count once), when known.
    pub cores: Option<usize>,
    /// NUMA node → its CPUs (`nodeN/cpulist`); empty when the kernel shows no nodes. Nodes without
    /// CPUs (memory-only) are kept with an empty set.
    pub numa_nodes: BTreeMap<u32, CpuSet>,
    /// L3 groups in order of their first CPU.
    pub l3_groups: Vec<L3Group>,
    /// cpufreq driver (`scaling_driver`), when cpufreq exists.
    pub cpufreq_driver: Option<String>,
    /// Governor → CPUs running it.
    pub governors: BTreeMap<String, CpuSet>,
    /// `cpuidle/current_driver`.
    pub cpuidle_driver: Option<String>,
    pub cstates: Vec<CState>,
}

impl CpuFacts {
    /// The facts of one CPU.
    pub fn cpu(&self, cpu: u32) -> Option<&CpuTopo> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }

    /// NUMA nodes that have CPUs.
    pub fn nodes_with_cpus(&self) -> impl Iterator<Item = (u32, &CpuSet)> {
        self.numa_nodes
            .iter()
            .filter(|(_, c)| !c.is_empty())
            .map(|(n, c)| (*n, c))
    }

    /// True when more than one NUMA node has CPUs.
    pub fn is_multi_node(&self) -> bool {
        self.nodes_with_cpus().count() > 1
    }

    /// The NUMA node of a CPU.
    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.numa_nodes
            .iter()
            .find(|(_, c)| c.contains(cpu))
            .map(|(n, _)| *n)
    }

    /// The L3 group of a CPU.
    pub fn l3_of(&self, cpu: u32) -> Option<&L3Group> {
        self.l3_groups.iter().find(|g| g.cpus.contains(cpu))
    }

    /// Distinct NUMA nodes of a set of CPUs (CPUs with no known node are left out).
    pub fn nodes_of(&self, cpus: &CpuSet) -> Vec<u32> {
        let mut v: Vec<u32> = cpus.iter().filter_map(|c| self.node_of(c)).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Distinct L3 group ids of a set of CPUs.
    pub fn l3_ids_of(&self, cpus: &CpuSet) -> Vec<u32> {
        let mut v: Vec<u32> = cpus
            .iter()
            .filter_map(|c| self.l3_of(c).map(|g| g.id))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The CPUs the kernel has online (from `online`, else the CPUs listed).
    pub fn online_set(&self) -> CpuSet {
        match &self.online {
            Some(s) => s.clone(),
            None => self.cpus.iter().map(|c| c.cpu).collect(),
        }
    }
}

/// The model name from `/proc/cpuinfo` text: `model name` (x86), else `Processor`/`cpu model`/
/// `Hardware` (some ARM and MIPS kernels), first occurrence.
pub fn parse_cpuinfo_model(text: &str) -> Option<String> {
    // Exact keys: x86's per-CPU `processor : 0` must not pass for ARM's `Processor : ARMv7 ...`.
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    };
    field("model name")
        .or_else(|| field("cpu model"))
        .or_else(|| field("Processor"))
        .or_else(|| field("Hardware"))
}

/// `cpu MHz` of each `processor` in `/proc/cpuinfo` text (x86; other architectures print none).
pub fn parse_cpuinfo_mhz(text: &str) -> BTreeMap<u32, f64> {
    let mut out = BTreeMap::new();
    let mut cpu: Option<u32> = None;
    for l in text.lines() {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => cpu = v.trim().parse().ok(),
            "cpu MHz" => {
                if let (Some(c), Ok(mhz)) = (cpu, v.trim().parse::<f64>()) {
                    if mhz.is_finite() && mhz > 0.0 {
                        out.insert(c, mhz);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The current frequency of `cpus` (all online CPUs when empty), mean over those read: cpufreq's
/// `scaling_cur_freq` where the kernel has it, else `/proc/cpuinfo`'s `cpu MHz` (a VM without
/// cpufreq). `None` when neither says.
pub fn current_freq(root: &Root, cpus: &CpuSet) -> Option<wirespeed_model::CpuFreq> {
    const CPU: &str = "/sys/devices/system/cpu";
    let cpus = if cpus.is_empty() {
        root.cpu_list_opt(&format!("{CPU}/online"))?
    } else {
        cpus.clone()
    };
    let mean = |v: &[(u32, f64)]| {
        (!v.is_empty()).then(|| {
            (
                v.iter().map(|(_, m)| m).sum::<f64>() / v.len() as f64,
                v.iter().map(|(c, _)| *c).collect::<CpuSet>(),
            )
        })
    };
    let cur: Vec<(u32, f64)> = cpus
        .iter()
        .filter_map(|c| {
            let khz: u64 = root.parse_opt(&format!("{CPU}/cpu{c}/cpufreq/scaling_cur_freq"))?;
            (khz > 0).then_some((c, khz as f64 / 1000.0))
        })
        .collect();
    if let Some((mhz, read)) = mean(&cur) {
        return Some(wirespeed_model::CpuFreq {
            mhz,
            source: "cpufreq scaling_cur_freq".into(),
            cpus: read,
        });
    }
    let info = parse_cpuinfo_mhz(&root.read_opt("/proc/cpuinfo")?);
    let cur: Vec<(u32, f64)> = cpus
        .iter()
        .filter_map(|c| Some((c, *info.get(&c)?)))
        .collect();
    let (mhz, read) = mean(&cur)?;
    Some(wirespeed_model::CpuFreq {
        mhz,
        source: "/proc/cpuinfo cpu MHz".into(),
        cpus: read,
    })
}

/// Numbered entries `prefixN` of a directory, sorted by N.
pub(crate) fn numbered(root: &Root, dir: &str, prefix: &str) -> Vec<u32> {
    let mut v: Vec<u32> = root
        .list_opt(dir)
        .iter()
        .filter_map(|n| n.strip_prefix(prefix)?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// The NUMA nodes and their CPUs.
fn collect_numa_nodes(root: &Root) -> BTreeMap<u32, CpuSet> {
    let mut numa_nodes = BTreeMap::new();
    for n in numbered(root, "/sys/devices/system/node", "node") {
        let cpus = root
            .cpu_list_opt(&format!("/sys/devices/system/node/node{n}/cpulist"))
            .unwrap_or_default();
        numa_nodes.insert(n, cpus);
    }
    numa_nodes
}

/// Only what a CPU list a person named is checked against and said with: the online CPUs and
/// the NUMA nodes (a few files whatever the number of CPUs, for a client before its test); the
/// rest of [`collect_cpus`] unknown.
pub fn collect_online(root: &Root) -> CpuFacts {
    CpuFacts {
        online: root.cpu_list_opt("/sys/devices/system/cpu/online"),
        numa_nodes: collect_numa_nodes(root),
        ..CpuFacts::default()
    }
}

/// Read the CPU facts through `root`.
pub fn collect_cpus(root: &Root) -> CpuFacts {
    const CPU: &str = "/sys/devices/system/cpu";
    let online = root.cpu_list_opt(&format!("{CPU}/online"));
    let possible = root.cpu_list_opt(&format!("{CPU}/possible"));
    let cpu_ids: CpuSet = match &online {
        Some(s) => s.clone(),
        None => numbered(root, CPU, "cpu").into_iter().collect(),
    };
    let smt_active = root
        .read_opt(&format!("{CPU}/smt/active"))
        .map(|v| v == "1");

    let numa_nodes = collect_numa_nodes(root);

    // L3 groups: distinct shared_cpu_list of the level-3 data/unified cache.
    let mut l3_by_cpu: BTreeMap<u32, (CpuSet, Option<u32>, Option<String>)> = BTreeMap::new();
    for c in cpu_ids.iter() {
        let cache = format!("{CPU}/cpu{c}/cache");
        for idx in numbered(root, &cache, "index") {
            let d = format!("{cache}/index{idx}");
            if root.read_opt(&format!("{d}/level")).as_deref() != Some("3") {
                continue;
            }
            if root.read_opt(&format!("{d}/type")).as_deref() == Some("Instruction") {
                continue;
            }
            if let Some(shared) = root.cpu_list_opt(&format!("{d}/shared_cpu_list")) {
                let id = root.parse_opt::<u32>(&format!("{d}/id"));
                let size = root.read_opt(&format!("{d}/size"));
                l3_by_cpu.insert(c, (shared, id, size));
                break;
            }
        }
    }
    let l3_groups = group_l3(&l3_by_cpu);

    let mut cpus = Vec::new();
    let mut packages: BTreeMap<u32, CpuSet> = BTreeMap::new();
    let mut governors: BTreeMap<String, CpuSet> = BTreeMap::new();
    let mut cpufreq_driver = None;
    let mut core_keys = std::collections::BTreeSet::new();
    let mut cores_known = !cpu_ids.is_empty();
    let mut cstates: BTreeMap<u32, CState> = BTreeMap::new();
    for c in cpu_ids.iter() {
        let t = format!("{CPU}/cpu{c}/topology");
        let f = format!("{CPU}/cpu{c}/cpufreq");
        let package = root.parse_opt::<u32>(&format!("{t}/physical_package_id"));
        let die = root.parse_opt::<u32>(&format!("{t}/die_id"));
        let core_id = root.parse_opt::<u32>(&format!("{t}/core_id"));
        let thread_siblings = root
            .cpu_list_opt(&format!("{t}/thread_siblings_list"))
            .or_else(|| root.cpu_list_opt(&format!("{t}/core_cpus_list")));
        let governor = root.read_opt(&format!("{f}/scaling_governor"));
        if cpufreq_driver.is_none() {
            cpufreq_driver = root.read_opt(&format!("{f}/scaling_driver"));
        }
        if let Some(p) = package {
            packages.entry(p).or_default().insert(c);
        }
        match (package, core_id) {
            (Some(p), Some(core)) => {
                core_keys.insert((p, die.unwrap_or(0), core));
            }
            _ => cores_known = false,
        }
        if let Some(g) = &governor {
            governors.entry(g.clone()).or_default().insert(c);
        }
        let node = numa_nodes
            .iter()
            .find(|(_, s)| s.contains(c))
            .map(|(n, _)| *n);
        let l3 = l3_groups.iter().find(|g| g.cpus.contains(c)).map(|g| g.id);
        cpus.push(CpuTopo {
            cpu: c,
            package,
            die,
            core_id,
            thread_siblings,
            node,
            l3,
            governor,
            max_freq_khz: root.parse_opt(&format!("{f}/cpuinfo_max_freq")),
            scaling_max_freq_khz: root.parse_opt(&format!("{f}/scaling_max_freq")),
            epp: root.read_opt(&format!("{f}/energy_performance_preference")),
        });
        let idle = format!("{CPU}/cpu{c}/cpuidle");
        for k in numbered(root, &idle, "state") {
            let s = format!("{idle}/state{k}");
            let Some(name) = root.read_opt(&format!("{s}/name")) else {
                continue;
            };
            let entry = cstates.entry(k).or_insert_with(|| CState {
                index: k,
                name: name.clone(),
                desc: root.read_opt(&format!("{s}/desc")),
                latency_us: root.parse_opt(&format!("{s}/latency")),
                cpus: CpuSet::new(),
                disabled_cpus: CpuSet::new(),
            });
            entry.cpus.insert(c);
            if root.read_opt(&format!("{s}/disable")).as_deref() == Some("1") {
                entry.disabled_cpus.insert(c);
            }
        }
    }

    CpuFacts {
        model: root
            .read("/proc/cpuinfo")
            .ok()
            .and_then(|t| parse_cpuinfo_model(&t)),
        online,
        possible,
        smt_active,
        cpus,
        packages,
        cores: cores_known.then_some(core_keys.len()),
        numa_nodes,
        l3_groups,
        cpufreq_driver,
        governors,
        cpuidle_driver: root.read_opt(&format!("{CPU}/cpuidle/current_driver")),
        cstates: cstates.into_values().collect(),
    }
}

/// Turn per-CPU L3 sharing lists into groups. The kernel's cache `id` names a group when every
/// member reports the same id and no two groups share one; otherwise groups are numbered in order
/// of their first CPU.
pub(crate) fn group_l3(
    by_cpu: &BTreeMap<u32, (CpuSet, Option<u32>, Option<String>)>,
) -> Vec<L3Group> {
    let mut groups: Vec<(CpuSet, Vec<Option<u32>>, Option<String>)> = Vec::new();
    for (shared, id, size) in by_cpu.values() {
        match groups.iter_mut().find(|g| &g.0 == shared) {
            Some(g) => g.1.push(*id),
            None => groups.push((shared.clone(), vec![*id], size.clone())),
        }
    }
    // A CPU may appear in two different lists on a confused kernel; keep the first claim.
    groups.sort_by_key(|g| g.0.first());
    let ids: Vec<Option<u32>> = groups
        .iter()
        .map(|g| {
            let first = g.1.first().copied().flatten()?;
            g.1.iter().all(|i| *i == Some(first)).then_some(first)
        })
        .collect();
    let mut unique = ids.iter().flatten().copied().collect::<Vec<_>>();
    unique.sort_unstable();
    unique.dedup();
    let use_ids = ids.iter().all(Option::is_some) && unique.len() == ids.len();
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (cpus, _, size))| L3Group {
            id: if use_ids {
                ids[i].unwrap_or(i as u32)
            } else {
                i as u32
            },
            cpus,
            size,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(host: &str) -> Root {
        Root::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/hosts")
                .join(host),
        )
    }

    #[test]
    fn cpuinfo_model_on_several_architectures() {
        assert_eq!(
            parse_cpuinfo_model(
                "processor\t: 0\nmodel name\t: AMD Ryzen 9 9900X 12-Core Processor\n"
            )
            .as_deref(),
            Some("AMD Ryzen 9 9900X 12-Core Processor")
        );
        assert_eq!(
            parse_cpuinfo_model("Processor\t: ARMv7 Processor rev 4 (v7l)\nHardware\t: BCM2835\n")
                .as_deref(),
            Some("ARMv7 Processor rev 4 (v7l)")
        );
        assert_eq!(parse_cpuinfo_model("processor : 0\nBogoMIPS : 50\n"), None);
    }

    #[test]
    fn current_frequency_from_cpufreq_else_cpuinfo() {
        let text = "processor\t: 0\ncpu MHz\t\t: 2596.120\n\nprocessor\t: 1\ncpu MHz\t\t: 2000\n";
        let m = parse_cpuinfo_mhz(text);
        assert_eq!(m.get(&0), Some(&2596.12));
        assert_eq!(m.get(&1), Some(&2000.0));
        assert!(parse_cpuinfo_mhz("Processor : ARMv7\n").is_empty());

        let root = fixture("crow-9900x-cx5-x4");
        let cpus = CpuSet::from_cpus([0, 1]);
        let f = current_freq(&root, &cpus).unwrap();
        assert_eq!(f.source, "cpufreq scaling_cur_freq");
        let khz = |c: u32| -> f64 {
            root.parse_opt::<u64>(&format!(
                "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"
            ))
            .unwrap() as f64
        };
        assert!((f.mhz - (khz(0) + khz(1)) / 2000.0).abs() < 1e-9);
        assert_eq!(f.cpus, cpus);

        // a tree without cpufreq falls back to /proc/cpuinfo
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/cpuinfo"), text).unwrap();
        let f = current_freq(&Root::new(dir.path()), &CpuSet::from_cpus([0, 1, 7])).unwrap();
        assert_eq!(f.source, "/proc/cpuinfo cpu MHz");
        assert!((f.mhz - 2298.06).abs() < 1e-9);
        assert_eq!(f.cpus, CpuSet::from_cpus([0, 1]));
        assert!(current_freq(&fixture("aws-c5n-ena"), &cpus).is_none());
    }

    #[test]
    fn ryzen_has_two_l3_groups_on_one_node() {
        let f = collect_cpus(&fixture("crow-9900x-cx5-x4"));
        assert_eq!(
            f.model.as_deref(),
            Some("AMD Ryzen 9 9900X 12-Core Processor")
        );
        assert_eq!(f.online.as_ref().unwrap().to_string(), "0-11");
        assert_eq!(f.l3_groups.len(), 2);
        assert_eq!(f.l3_groups[0].id, 0);
        assert_eq!(f.l3_groups[0].cpus.to_string(), "0-5");
        assert_eq!(f.l3_groups[1].cpus.to_string(), "6-11");
        assert_eq!(f.l3_of(6).unwrap().id, 1);
        assert_eq!(f.numa_nodes.len(), 1);
        assert!(!f.is_multi_node());
        assert_eq!(f.cpufreq_driver.as_deref(), Some("amd-pstate-epp"));
        assert_eq!(f.governors["powersave"].to_string(), "0-11");
        assert_eq!(f.cores, Some(12));
        assert_eq!(f.cpu(6).unwrap().max_freq_khz, Some(5662000));
        assert_eq!(f.packages[&0].len(), 12);
        // what a named CPU list is checked against: the same online CPUs and nodes, nothing else
        let o = collect_online(&fixture("crow-9900x-cx5-x4"));
        assert_eq!((&o.online, &o.numa_nodes), (&f.online, &f.numa_nodes));
        assert!(o.cpus.is_empty() && o.l3_groups.is_empty() && o.model.is_none());
    }

    #[test]
    fn dual_socket_xeon_has_two_nodes() {
        let f = collect_cpus(&fixture("sl-w9-x3650-cx3"));
        assert!(f.is_multi_node());
        assert_eq!(f.numa_nodes[&1].to_string(), "8-15");
        assert_eq!(f.node_of(9), Some(1));
        assert_eq!(
            f.l3_groups
                .iter()
                .map(|g| g.cpus.to_string())
                .collect::<Vec<_>>(),
            ["0-7", "8-15"]
        );
        assert_eq!(f.nodes_of(&CpuSet::parse_list("1,9").unwrap()), vec![0, 1]);
        assert_eq!(f.packages.len(), 2);
    }

    #[test]
    fn missing_sources_are_unknown() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("sys/devices/system/cpu/cpu0")).unwrap();
        std::fs::create_dir_all(t.path().join("sys/devices/system/cpu/cpu1")).unwrap();
        let f = collect_cpus(&Root::new(t.path()));
        assert_eq!(f.online, None);
        assert_eq!(f.online_set().to_string(), "0-1");
        assert!(f.numa_nodes.is_empty() && f.l3_groups.is_empty() && f.governors.is_empty());
        assert_eq!(f.cores, None);
        assert_eq!(f.model, None);
        assert_eq!(f.node_of(0), None);
    }

    #[test]
    fn l3_ids_used_only_when_consistent() {
        let s = |l: &str| CpuSet::parse_list(l).unwrap();
        let mut m = BTreeMap::new();
        m.insert(0, (s("0-1"), Some(7), None));
        m.insert(1, (s("0-1"), Some(7), None));
        m.insert(2, (s("2-3"), Some(9), None));
        let g = group_l3(&m);
        assert_eq!((g[0].id, g[1].id), (7, 9));
        // duplicate ids across groups: numbered instead
        m.insert(2, (s("2-3"), Some(7), None));
        let g = group_l3(&m);
        assert_eq!((g[0].id, g[1].id), (0, 1));
        // missing ids: numbered
        m.insert(2, (s("2-3"), None, None));
        assert_eq!(group_l3(&m)[1].id, 1);
    }
}
