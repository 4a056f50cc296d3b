//! `--scale`: the many-stream comparison sized to the machine, and its summary.
//!
//! `-P` runs from 1, doubling, up to the online CPUs, then the CPU count and twice it (capped at
//! iperf3's 128 streams); TCP (128 KiB, copy) and UDP (1472 B, `-b 0`), no CPUs given, wirespeed
//! against iperf3 3.21 (and Debian's iperf3 when present), rounds alternating as everywhere in
//! the bench. The pure pieces here (the `-P` ladder, the knee, the cores a link needs, the goal
//! check) take recorded figures, so they are tested without running anything.

use serde::Serialize;

use crate::stats::{median, ratio};

/// iperf3 refuses more than 128 streams (`MAX_STREAMS`).
pub const MAX_PARALLEL: u32 = 128;
/// "Stops growing": doubling the streams adds less than this fraction to the aggregate.
pub const KNEE_GAIN: f64 = 0.05;
/// Issue 23's goal with many streams: CPU per bit at most this × iperf3's, in every round at
/// `-P` 2 and up.
pub const CPU_GOAL: f64 = 0.8;
/// Issue 38's goal with many streams on few cores: CPU per bit at most this × iperf3's, in every
/// round where the streams number at least twice the online CPUs (`-P 4` and `-P 8` on two:
/// each CPU then carries four or more data threads of the two ends).
pub const CROWDED_CPU_GOAL: f64 = 0.9;
/// The link the summary sizes the cores for, Gbit/s.
pub const LINK_GBPS: f64 = 100.0;

/// The `-P` ladder for `cpus` online CPUs: 1, 2, 4 … ≤ cpus, then cpus and 2 × cpus.
pub fn parallels(cpus: u32) -> Vec<u32> {
    let cpus = cpus.max(1);
    let mut v = Vec::new();
    let mut p = 1u32;
    while p <= cpus {
        v.push(p);
        p *= 2;
    }
    v.push(cpus);
    v.push(2 * cpus);
    let mut v: Vec<u32> = v.into_iter().map(|p| p.min(MAX_PARALLEL)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// One round of one contender at one `-P`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Round {
    /// Aggregate receiver rate, Gbit/s.
    pub gbps: Option<f64>,
    /// CPU seconds both ends spent per Gbit received.
    pub cpu_s_per_gbit: Option<f64>,
    /// Cores both ends kept busy (their CPU time / the test's seconds).
    pub busy_cores: Option<f64>,
    /// Why the round has no figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Round {
    /// Gbit/s per busy core: what one core moves at this cost (1 / CPU-s per Gbit).
    pub fn gbps_per_core(&self) -> Option<f64> {
        self.cpu_s_per_gbit.filter(|c| *c > 0.0).map(|c| 1.0 / c)
    }
}

/// One contender at one `-P`: every round, and the medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub contender: String,
    pub parallel: u32,
    pub rounds: Vec<Round>,
    pub median_gbps: Option<f64>,
    pub median_cpu_s_per_gbit: Option<f64>,
    pub median_busy_cores: Option<f64>,
    pub median_gbps_per_core: Option<f64>,
}

impl Cell {
    pub fn new(contender: &str, parallel: u32, rounds: Vec<Round>) -> Cell {
        let med = |f: &dyn Fn(&Round) -> Option<f64>| {
            median(&rounds.iter().filter_map(f).collect::<Vec<_>>())
        };
        Cell {
            contender: contender.to_string(),
            parallel,
            median_gbps: med(&|r| r.gbps),
            median_cpu_s_per_gbit: med(&|r| r.cpu_s_per_gbit),
            median_busy_cores: med(&|r| r.busy_cores),
            median_gbps_per_core: med(&|r| r.gbps_per_core()),
            rounds,
        }
    }
}

/// wirespeed against one reference at one `-P`: ratios of the medians, and per round (round i
/// of one against round i of the other: they ran back to back).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratios {
    pub parallel: u32,
    pub reference: String,
    pub rate: Option<f64>,
    pub cpu_per_bit: Option<f64>,
    pub cpu_per_bit_rounds: Vec<Option<f64>>,
}

pub fn ratios(w: &Cell, r: &Cell) -> Ratios {
    Ratios {
        parallel: w.parallel,
        reference: r.contender.clone(),
        rate: ratio(w.median_gbps, r.median_gbps),
        cpu_per_bit: ratio(w.median_cpu_s_per_gbit, r.median_cpu_s_per_gbit),
        cpu_per_bit_rounds: w
            .rounds
            .iter()
            .zip(r.rounds.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(a, b)| ratio(a.cpu_s_per_gbit, b.and_then(|b| b.cpu_s_per_gbit)))
            .collect(),
    }
}

/// The smallest `-P` at which the aggregate stops growing: the next `-P` up adds less than
/// [`KNEE_GAIN`] to its median. `None` when it grows all the way (or too few points).
pub fn knee(points: &[(u32, Option<f64>)]) -> Option<u32> {
    let pts: Vec<(u32, f64)> = points
        .iter()
        .filter_map(|&(p, g)| g.map(|g| (p, g)))
        .collect();
    pts.windows(2)
        .find(|w| w[1].1 < w[0].1 * (1.0 + KNEE_GAIN))
        .map(|w| w[0].0)
}

/// Cores both ends need to move `gbps` at `cpu_s_per_gbit`.
pub fn cores_for(gbps: f64, cpu_s_per_gbit: f64) -> f64 {
    gbps * cpu_s_per_gbit
}

/// One contender's summary over the ladder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub contender: String,
    /// Where the aggregate stops growing (`None`: still growing at the top of the ladder).
    pub knee: Option<u32>,
    /// The `-P` whose cost the sizing uses: the knee, else the top of the ladder.
    pub cost_at: u32,
    pub cpu_s_per_gbit: Option<f64>,
    /// What one core moves at that cost, Gbit/s.
    pub gbps_per_core: Option<f64>,
    /// Cores (both ends) a [`LINK_GBPS`] link needs at that cost.
    pub cores_for_link: Option<f64>,
}

pub fn summarise(cells: &[&Cell]) -> Option<Summary> {
    let first = cells.first()?;
    let pts: Vec<(u32, Option<f64>)> = cells.iter().map(|c| (c.parallel, c.median_gbps)).collect();
    let k = knee(&pts);
    let at = k.unwrap_or_else(|| cells.iter().map(|c| c.parallel).max().unwrap_or(1));
    let cost = cells
        .iter()
        .find(|c| c.parallel == at)
        .and_then(|c| c.median_cpu_s_per_gbit);
    Some(Summary {
        contender: first.contender.clone(),
        knee: k,
        cost_at: at,
        cpu_s_per_gbit: cost,
        gbps_per_core: cost.filter(|c| *c > 0.0).map(|c| 1.0 / c),
        cores_for_link: cost.map(|c| cores_for(LINK_GBPS, c)),
    })
}

/// Whether wirespeed's CPU per bit is ≤ `limit` × the reference's in every round at every `-P`
/// from `from_parallel` on ([`CPU_GOAL`] from 2, [`CROWDED_CPU_GOAL`] from twice the CPUs). A
/// round without both figures fails the goal: it cannot be shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Goal {
    pub reference: String,
    pub limit: f64,
    pub from_parallel: u32,
    pub met: bool,
    /// The largest per-round ratio seen (the one that decides).
    pub worst: Option<f64>,
    /// Rounds checked, and rounds that lacked a figure.
    pub rounds: usize,
    pub missing: usize,
}

pub fn goal(reference: &str, r: &[Ratios], limit: f64, from_parallel: u32) -> Goal {
    let per: Vec<Option<f64>> = r
        .iter()
        .filter(|x| x.parallel >= from_parallel && x.reference == reference)
        .flat_map(|x| x.cpu_per_bit_rounds.iter().copied())
        .collect();
    let missing = per.iter().filter(|x| x.is_none()).count();
    let worst = per
        .iter()
        .flatten()
        .copied()
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    Goal {
        reference: reference.to_string(),
        limit,
        from_parallel,
        met: !per.is_empty() && missing == 0 && worst.is_some_and(|w| w <= limit),
        worst,
        rounds: per.len(),
        missing,
    }
}

/// One protocol's ladder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ladder {
    pub proto: String,
    pub block: usize,
    pub cells: Vec<Cell>,
    pub ratios: Vec<Ratios>,
    pub summaries: Vec<Summary>,
    pub goals: Vec<Goal>,
}

impl Ladder {
    /// From the cells (any order); `references` are the contenders wirespeed is compared with,
    /// on a machine of `cpus` online CPUs.
    pub fn new(
        proto: &str,
        block: usize,
        cells: Vec<Cell>,
        references: &[&str],
        cpus: u32,
    ) -> Ladder {
        let mut names: Vec<String> = Vec::new();
        for c in &cells {
            if !names.contains(&c.contender) {
                names.push(c.contender.clone());
            }
        }
        let of = |name: &str| -> Vec<&Cell> {
            let mut v: Vec<&Cell> = cells.iter().filter(|c| c.contender == name).collect();
            v.sort_by_key(|c| c.parallel);
            v
        };
        let mut rs = Vec::new();
        for w in of("wirespeed") {
            for r in references {
                if let Some(rc) = of(r).into_iter().find(|c| c.parallel == w.parallel) {
                    rs.push(ratios(w, rc));
                }
            }
        }
        let summaries = names.iter().filter_map(|n| summarise(&of(n))).collect();
        let goals = references
            .iter()
            .filter(|r| names.iter().any(|n| n == *r))
            .flat_map(|r| {
                [
                    goal(r, &rs, CPU_GOAL, 2),
                    goal(r, &rs, CROWDED_CPU_GOAL, cpus.max(1).saturating_mul(2)),
                ]
            })
            .collect();
        Ladder {
            proto: proto.to_string(),
            block,
            cells,
            ratios: rs,
            summaries,
            goals,
        }
    }
}

fn f(x: Option<f64>, prec: usize) -> String {
    crate::stats::fmt_opt(x, prec)
}

/// The tables, the summary lines and the goal lines.
pub fn print(l: &Ladder) {
    println!(
        "\n== scale: {} {} B blocks, no CPUs given (each tool places its own threads), aggregate of all streams ==",
        l.proto.to_uppercase(),
        l.block
    );
    println!(
        "{:>4} {:<12} {:>9} {:<24} {:>10} {:<24} {:>9} {:>7}",
        "-P",
        "contender",
        "Gb/s med",
        "rounds Gb/s",
        "CPU-s/Gbit",
        "rounds CPU-s/Gbit",
        "Gb/s/core",
        "cores"
    );
    let mut cells: Vec<&Cell> = l.cells.iter().collect();
    cells.sort_by_key(|c| c.parallel);
    for c in cells {
        let rounds = |g: &dyn Fn(&Round) -> Option<f64>, p: usize| {
            c.rounds
                .iter()
                .map(|r| g(r).map_or("FAIL".into(), |x| format!("{x:.p$}")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "{:>4} {:<12} {:>9} {:<24} {:>10} {:<24} {:>9} {:>7}",
            c.parallel,
            c.contender,
            f(c.median_gbps, 2),
            rounds(&|r| r.gbps, 2),
            f(c.median_cpu_s_per_gbit, 4),
            rounds(&|r| r.cpu_s_per_gbit, 4),
            f(c.median_gbps_per_core, 1),
            f(c.median_busy_cores, 2),
        );
        for r in l
            .ratios
            .iter()
            .filter(|r| r.parallel == c.parallel && c.contender == "wirespeed")
        {
            println!(
                "{:>4} {:<12} wirespeed/{}: rate {}  CPU per bit {} (rounds {})",
                "",
                "",
                r.reference,
                f(r.rate, 3),
                f(r.cpu_per_bit, 3),
                r.cpu_per_bit_rounds
                    .iter()
                    .map(|x| f(*x, 3))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    for s in &l.summaries {
        println!(
            "summary {} {}: aggregate stops growing (<{:.0} % more) at {}; cost at -P {}: {} CPU-s/Gbit, \
             one core moves {} Gbit/s -> a {LINK_GBPS:.0} Gbit/s link needs about {} cores (both ends)",
            l.proto,
            s.contender,
            KNEE_GAIN * 100.0,
            s.knee
                .map_or("no -P (still growing at the top)".into(), |k| format!("-P {k}")),
            s.cost_at,
            f(s.cpu_s_per_gbit, 4),
            f(s.gbps_per_core, 1),
            f(s.cores_for_link, 1),
        );
    }
    for g in &l.goals {
        println!(
            "goal {} (CPU per bit <= {:.1} x {}'s in every round, -P >= {}): {} — worst round {} over {} round(s){}",
            l.proto,
            g.limit,
            g.reference,
            g.from_parallel,
            if g.met { "MET" } else { "NOT MET" },
            f(g.worst, 3),
            g.rounds,
            if g.missing > 0 {
                format!(", {} without a figure", g.missing)
            } else {
                String::new()
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(gbps: f64, cpu: f64) -> Round {
        Round {
            gbps: Some(gbps),
            cpu_s_per_gbit: Some(cpu),
            busy_cores: Some(gbps * cpu),
            error: None,
        }
    }

    #[test]
    fn ladder_of_parallels() {
        assert_eq!(parallels(1), vec![1, 2]);
        assert_eq!(parallels(2), vec![1, 2, 4]);
        assert_eq!(parallels(6), vec![1, 2, 4, 6, 12]);
        assert_eq!(parallels(16), vec![1, 2, 4, 8, 16, 32]);
        // iperf3 takes at most 128 streams
        assert_eq!(parallels(96), vec![1, 2, 4, 8, 16, 32, 64, 96, 128]);
        assert_eq!(parallels(0), vec![1, 2]);
    }

    #[test]
    fn knee_is_where_doubling_stops_paying() {
        let p = |v: &[(u32, f64)]| v.iter().map(|&(p, g)| (p, Some(g))).collect::<Vec<_>>();
        assert_eq!(knee(&p(&[(1, 20.0), (2, 38.0), (4, 39.0)])), Some(2));
        // +5 % exactly still counts as growing; a drop stops it
        assert_eq!(knee(&p(&[(1, 20.0), (2, 21.0), (4, 10.0)])), Some(2));
        assert_eq!(knee(&p(&[(1, 20.0), (2, 20.5)])), Some(1));
        assert_eq!(knee(&p(&[(1, 20.0), (2, 30.0), (4, 40.0)])), None);
        assert_eq!(knee(&p(&[(1, 20.0)])), None);
        // a failed -P is left out, not read as zero
        assert_eq!(
            knee(&[(1, Some(20.0)), (2, None), (4, Some(40.0)), (8, Some(40.0))]),
            Some(4)
        );
    }

    #[test]
    fn medians_ratios_and_cores_from_recorded_rounds() {
        let w = Cell::new(
            "wirespeed",
            4,
            vec![round(40.0, 0.030), round(30.0, 0.020), round(50.0, 0.025)],
        );
        assert_eq!(w.median_gbps, Some(40.0));
        assert_eq!(w.median_cpu_s_per_gbit, Some(0.025));
        assert!((w.median_gbps_per_core.unwrap() - 40.0).abs() < 1e-9);
        let i = Cell::new(
            "iperf3-3.21",
            4,
            vec![round(50.0, 0.040), round(50.0, 0.025), Round::default()],
        );
        let r = ratios(&w, &i);
        assert!((r.rate.unwrap() - 0.8).abs() < 1e-9);
        assert!((r.cpu_per_bit.unwrap() - 0.025 / 0.0325).abs() < 1e-9);
        assert_eq!(r.cpu_per_bit_rounds.len(), 3);
        assert!((r.cpu_per_bit_rounds[0].unwrap() - 0.75).abs() < 1e-9);
        assert!((r.cpu_per_bit_rounds[1].unwrap() - 0.8).abs() < 1e-9);
        assert_eq!(r.cpu_per_bit_rounds[2], None);
        assert!((cores_for(100.0, 0.025) - 2.5).abs() < 1e-9);
    }

    #[test]
    fn goal_needs_every_many_stream_round() {
        let mk = |p: u32, rs: &[Option<f64>]| Ratios {
            parallel: p,
            reference: "iperf3-3.21".into(),
            rate: None,
            cpu_per_bit: None,
            cpu_per_bit_rounds: rs.to_vec(),
        };
        // -P 1 is not a many-stream run: its 0.95 does not count
        let ok = [
            mk(1, &[Some(0.95)]),
            mk(2, &[Some(0.7), Some(0.8)]),
            mk(4, &[Some(0.6)]),
        ];
        let g = goal("iperf3-3.21", &ok, CPU_GOAL, 2);
        assert!(g.met);
        assert_eq!((g.worst, g.rounds, g.missing), (Some(0.8), 3, 0));
        // one round over the limit fails it, whatever the median
        let over = [mk(2, &[Some(0.5), Some(0.5), Some(0.81)])];
        let g = goal("iperf3-3.21", &over, CPU_GOAL, 2);
        assert!(!g.met);
        assert_eq!(g.worst, Some(0.81));
        // a round without a figure cannot show the goal
        let g = goal("iperf3-3.21", &[mk(2, &[Some(0.5), None])], CPU_GOAL, 2);
        assert!(!g.met);
        assert_eq!(g.missing, 1);
        // nothing to check: not met
        assert!(!goal("iperf3-3.21", &[], CPU_GOAL, 2).met);
        assert!(!goal("iperf3", &ok, CPU_GOAL, 2).met);
        // the crowded goal counts only its -P and its own limit
        let crowded = [
            mk(2, &[Some(0.95)]),
            mk(4, &[Some(0.85), Some(0.9)]),
            mk(8, &[Some(0.6)]),
        ];
        let g = goal("iperf3-3.21", &crowded, CROWDED_CPU_GOAL, 4);
        assert!(g.met, "{g:?}");
        assert_eq!((g.worst, g.rounds, g.from_parallel), (Some(0.9), 3, 4));
        assert!(!goal("iperf3-3.21", &crowded, CROWDED_CPU_GOAL, 2).met);
    }

    #[test]
    fn ladder_summary_sizes_the_link_at_the_knee() {
        let cells = vec![
            Cell::new("wirespeed", 1, vec![round(20.0, 0.040)]),
            Cell::new("wirespeed", 2, vec![round(40.0, 0.030)]),
            Cell::new("wirespeed", 4, vec![round(41.0, 0.031)]),
            Cell::new("iperf3-3.21", 1, vec![round(20.0, 0.035)]),
            Cell::new("iperf3-3.21", 2, vec![round(30.0, 0.035)]),
            Cell::new("iperf3-3.21", 4, vec![round(45.0, 0.030)]),
        ];
        let l = Ladder::new("tcp", 131072, cells, &["iperf3-3.21", "iperf3"], 2);
        assert_eq!(l.ratios.len(), 3);
        let w = &l.summaries[0];
        assert_eq!(
            (w.contender.as_str(), w.knee, w.cost_at),
            ("wirespeed", Some(2), 2)
        );
        assert!((w.cores_for_link.unwrap() - 3.0).abs() < 1e-9);
        assert!((w.gbps_per_core.unwrap() - 1.0 / 0.03).abs() < 1e-9);
        let i = &l.summaries[1];
        assert_eq!((i.knee, i.cost_at), (None, 4));
        // only references that ran get goal lines: from -P 2 and from twice the CPUs
        assert_eq!(l.goals.len(), 2);
        assert!(!l.goals[0].met); // 0.030/0.035 = 0.857 at -P 2
        assert_eq!(l.goals[1].from_parallel, 4);
        assert!(!l.goals[1].met); // 0.031/0.030 at -P 4
        let j = serde_json::to_value(&l).expect("json");
        assert_eq!(j["summaries"][0]["knee"], 2);
        assert_eq!(j["goals"][0]["met"], false);
    }
}
