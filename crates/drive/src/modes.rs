//! `--repeat N`: statistics over the runs, the runs grouped into modes, and each mode tied to
//! the placement signature its runs share.
//!
//! **Mode finding.** Sort the throughputs; walk them in order and start a new mode wherever the
//! gap between two neighbours exceeds [`GAP_FRACTION`] (10 %) of the median of all runs. Runs of
//! one setup typically vary by a few percent, while a placement change (interrupts on the app's
//! own core, on another L3 group) moves throughput by 15–35 %, so a gap of 10 % of the median
//! separates them without splitting ordinary noise; a continuum of small steps stays one mode.
//!
//! **Signature.** Each run's placement signature is that of the receiving end (the local end
//! when the receiver was not observed): where the NIC's interrupts and the NET_RX softirqs ran
//! relative to the receiving app CPU ([`wirespeed_observe::placement`]). A mode's signature is the one most of
//! its runs share, with the count.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use wirespeed_host::CpuSet;

pub use wirespeed_model::doc::{Mode, RepeatAnalysis, Stats};
use wirespeed_model::observation::{BitsPerSecond, EndObservation, Percent, TestObservation};
use wirespeed_observe::placement::IrqPlacementOf;
use wirespeed_observe::placement::{cpus_words, IrqPlacement, Signature};
use wirespeed_observe::topology::{Relation, Topology};

/// A gap between sorted neighbours larger than this fraction of the median starts a new mode.
pub const GAP_FRACTION: f64 = 0.10;

pub use wirespeed_model::doc::median;

/// Statistics of finite throughputs; `None` when there are none.
pub fn stats(values: &[f64]) -> Option<Stats> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let med = median(&v)?;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    Some(Stats {
        runs: v.len(),
        min: BitsPerSecond(min),
        median: BitsPerSecond(med),
        max: BitsPerSecond(max),
        mean: BitsPerSecond(mean),
        spread: if med > 0.0 {
            Percent::new((max - min) * 100.0 / med)
        } else {
            Percent::new(0.0)
        },
    })
}

/// Group values into modes (see the module docs): lists of indices into `values`, each list in
/// ascending order of value, the lists from the slowest mode to the fastest. Non-finite values
/// are left out.
pub fn split_modes(values: &[f64], gap_fraction: f64) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..values.len())
        .filter(|&i| values[i].is_finite())
        .collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
    let finite: Vec<f64> = idx.iter().map(|&i| values[i]).collect();
    let Some(med) = median(&finite) else {
        return Vec::new();
    };
    let gap = gap_fraction * med.abs();
    let mut modes: Vec<Vec<usize>> = Vec::new();
    let mut prev: Option<f64> = None;
    for &i in &idx {
        let v = values[i];
        match (prev, modes.last_mut()) {
            (Some(p), Some(cur)) if v - p <= gap => cur.push(i),
            _ => modes.push(vec![i]),
        }
        prev = Some(v);
    }
    modes
}

/// One run of a `--repeat` series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub bits_per_second: BitsPerSecond,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<TestObservation>,
}

impl Run {
    /// The end whose placement characterises the run: the receiver, else the local end.
    fn end(&self) -> Option<&EndObservation> {
        let o = self.observation.as_ref()?;
        o.receiver().or(Some(&o.local))
    }
}

fn runs_words(runs: &[usize]) -> String {
    let v: Vec<String> = runs.iter().map(usize::to_string).collect();
    if runs.len() == 1 {
        format!("run {}", v[0])
    } else {
        format!("runs {}", v.join(", "))
    }
}

/// `64.1–65.3 Gbit/s`.
fn range_words(min: BitsPerSecond, max: BitsPerSecond) -> String {
    if min.0 >= 1e9 {
        format!("{:.1}–{max}", min.gbps())
    } else {
        format!("{min}–{max}")
    }
}

fn placement_words(p: &IrqPlacement) -> String {
    let rel = |s: &wirespeed_observe::placement::Share, what: &str| {
        format!(
            "{what} on {} ({})",
            cpus_words(&s.cpus),
            s.relation.describe()
        )
    };
    match (&p.irq, &p.softirq) {
        (Some(i), Some(s)) if i.relation == s.relation && i.cpus == s.cpus => format!(
            "NIC interrupts and RX softirq on {} ({}; app on {})",
            cpus_words(&i.cpus),
            i.relation.describe(),
            cpus_words(&p.app_cpus)
        ),
        (Some(i), Some(s)) => format!(
            "{}, {}; app on {}",
            rel(i, "NIC interrupts"),
            rel(s, "RX softirq"),
            cpus_words(&p.app_cpus)
        ),
        (Some(i), None) => format!(
            "{}; app on {}",
            rel(i, "NIC interrupts"),
            cpus_words(&p.app_cpus)
        ),
        (None, Some(s)) => format!(
            "{}; app on {}",
            rel(s, "RX softirq"),
            cpus_words(&p.app_cpus)
        ),
        (None, None) => "no NIC interrupts or RX softirqs counted".to_string(),
    }
}

/// Where to put the NIC's interrupts, from the placement of the best mode.
fn recommend(best: &IrqPlacement, topo: &Topology, iface: Option<&str>) -> Option<String> {
    let work = best.rx_work()?;
    let nic = iface.map_or("the NIC".to_string(), |i| i.to_string());
    let (cpus, why) = match work.relation {
        Relation::SameL3 => {
            let c = topo.same_l3_other_cores(&best.app_cpus);
            (
                c,
                format!(
                    "the L3 group of the receiver's {} without that core",
                    cpus_words(&best.app_cpus)
                ),
            )
        }
        Relation::SmtSibling => {
            let mut c = CpuSet::new();
            for a in best.app_cpus.iter() {
                c = c.union(&topo.core_cpus(a));
            }
            (
                c.difference(&best.app_cpus),
                "the SMT sibling of the receiver's core".to_string(),
            )
        }
        Relation::Unknown => return None,
        _ => (
            work.cpus.clone(),
            "where the fastest runs had them".to_string(),
        ),
    };
    if cpus.is_empty() {
        return None;
    }
    Some(format!(
        "pin {nic}'s queue IRQs to {cpus_list} ({why}) and keep irqbalance from moving them; \
         the receiver stays on {app}",
        cpus_list = cpus_words(&cpus),
        app = cpus_words(&best.app_cpus)
    ))
}

/// Analyse a series of runs. `None` when no run has a finite throughput.
pub fn analyze(runs: &[Run]) -> Option<RepeatAnalysis> {
    let values: Vec<f64> = runs.iter().map(|r| r.bits_per_second.0).collect();
    let all = stats(&values)?;
    let mut modes = Vec::new();
    for group in split_modes(&values, GAP_FRACTION) {
        let vals: Vec<f64> = group.iter().map(|&i| values[i]).collect();
        let st = stats(&vals)?;
        let mut run_nums: Vec<usize> = group.iter().map(|&i| i + 1).collect();
        run_nums.sort_unstable();
        // Count signatures, keeping the first placement of each.
        let mut counts: BTreeMap<Signature, (usize, IrqPlacement)> = BTreeMap::new();
        let mut order = group.clone();
        order.sort_unstable();
        for &i in &order {
            if let Some(e) = runs[i].end() {
                let p = IrqPlacement::of_end(e);
                counts
                    .entry(p.signature())
                    .and_modify(|c| c.0 += 1)
                    .or_insert((1, p));
            }
        }
        let top = counts.into_iter().fold(
            None,
            |best: Option<(Signature, usize, IrqPlacement)>, (s, (n, p))| match best {
                Some(b) if b.1 >= n => Some(b),
                _ => Some((s, n, p)),
            },
        );
        let mut description = format!(
            "{} ({}; {})",
            st.median,
            runs_words(&run_nums),
            range_words(st.min, st.max)
        );
        let (signature, agreeing, placement) = match top {
            Some((s, n, p)) => {
                description.push_str(": ");
                description.push_str(&placement_words(&p));
                if n < group.len() {
                    description.push_str(&format!(" [{} of {} runs]", n, group.len()));
                }
                (Some(s), n, Some(p))
            }
            None => (None, 0, None),
        };
        modes.push(Mode {
            runs: run_nums,
            stats: st,
            signature,
            agreeing,
            placement,
            description,
        });
    }

    let mut conclusion = None;
    let mut recommendation = None;
    if modes.len() > 1 {
        let (worst, best) = (&modes[0], &modes[modes.len() - 1]);
        if let (Some(ws), Some(bs)) = (worst.signature, best.signature) {
            if ws != bs {
                let distinct: Vec<String> = modes
                    .iter()
                    .rev()
                    .filter_map(|m| {
                        let p = m.placement.as_ref()?;
                        let w = p.rx_work()?;
                        Some(format!(
                            "{} with them on {}",
                            m.stats.median,
                            w.relation.describe()
                        ))
                    })
                    .collect();
                conclusion = Some(format!(
                    "throughput follows where the receiver's NIC interrupts and RX softirq ran: {}",
                    distinct.join("; ")
                ));
                let best_end = best
                    .runs
                    .iter()
                    .filter_map(|&n| runs[n - 1].end())
                    .find(|e| Some(IrqPlacement::of_end(e).signature()) == best.signature);
                if let (Some(p), Some(e)) = (&best.placement, best_end) {
                    recommendation = recommend(p, &e.topology, e.iface.as_deref());
                }
            } else {
                conclusion = Some(format!(
                    "the modes share one placement ({}): the difference lies elsewhere (the path, the peer, or flows landing on other queues)",
                    bs.words()
                ));
            }
        }
    }

    Some(RepeatAnalysis {
        stats: all,
        method: format!(
            "sorted throughputs split where neighbours differ by more than {:.0} % of the median",
            GAP_FRACTION * 100.0
        ),
        modes,
        conclusion,
        recommendation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_stats() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let s = stats(&[90.0, 100.0, 110.0, f64::NAN]).unwrap();
        assert_eq!(s.runs, 3);
        assert_eq!(
            (s.min.0, s.median.0, s.max.0, s.mean.0),
            (90.0, 100.0, 110.0, 100.0)
        );
        assert_eq!(s.spread.get(), 20.0);
        assert!(stats(&[f64::NAN]).is_none());
    }

    #[test]
    fn splits_at_gaps_larger_than_ten_percent_of_the_median() {
        let v = [98.8, 64.6, 84.9, 65.1, 99.2, 84.2, 64.0, 98.1, 85.6];
        let m = split_modes(&v, GAP_FRACTION);
        assert_eq!(m, vec![vec![6, 1, 3], vec![5, 2, 8], vec![7, 0, 4]]);
    }

    #[test]
    fn noise_and_continua_stay_one_mode() {
        // ±3 % noise.
        assert_eq!(
            split_modes(&[97.0, 100.0, 103.0, 99.0], GAP_FRACTION).len(),
            1
        );
        // Steps of 7 % of the median never exceed the gap: one mode, though the range is wide.
        assert_eq!(
            split_modes(&[60.0, 65.0, 70.0, 75.0, 80.0], GAP_FRACTION).len(),
            1
        );
        // A single outlier is its own mode.
        assert_eq!(
            split_modes(&[100.0, 101.0, 99.0, 50.0], GAP_FRACTION),
            vec![vec![3], vec![2, 0, 1]]
        );
        assert!(split_modes(&[], GAP_FRACTION).is_empty());
        assert_eq!(split_modes(&[5.0], GAP_FRACTION), vec![vec![0]]);
        // Equal values are one mode, in run order.
        assert_eq!(split_modes(&[7.0, 7.0], GAP_FRACTION), vec![vec![0, 1]]);
    }

    #[test]
    fn runs_without_observation_still_get_stats_and_modes() {
        let runs: Vec<Run> = [10.0, 10.2, 20.0]
            .iter()
            .map(|&g| Run {
                bits_per_second: BitsPerSecond::from_gbps(g),
                observation: None,
            })
            .collect();
        let a = analyze(&runs).unwrap();
        assert_eq!(a.modes.len(), 2);
        assert_eq!(a.modes[0].runs, vec![1, 2]);
        assert!(a.modes[0].signature.is_none());
        assert!(a.conclusion.is_none());
        let mut out = Vec::new();
        wirespeed_report::repeat::write_text(&mut out, &a).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.starts_with("3 runs: min 10.0 Gbit/s  median 10.2 Gbit/s  max 20.0 Gbit/s"),
            "{t}"
        );
    }
}
