//! The CPU candidates of an end: each saturated CPU its workers needed (followed through the
//! intervals where they migrate), with what saturated it.

use super::words::{end_of, l3_words, parts};
use super::Thresholds;
use std::cell::OnceCell;
use wirespeed_host::CpuSet;
use wirespeed_model::observation::{CpuUse, EndObservation, Percent};
use wirespeed_model::topology::Relation;
use wirespeed_model::{Verdict, VerdictId};
use wirespeed_observe::placement::IrqPlacementOf;
use wirespeed_observe::placement::{cpus_words, IrqPlacement};

/// A candidate CPU verdict: busy share, whether it is about a receiver, and the verdict.
pub(super) struct Candidate {
    pub(super) busy: f64,
    pub(super) receiver: bool,
    /// The CPU, and its softirq + irq share.
    pub(super) cpu: u32,
    pub(super) interrupts: f64,
    pub(super) verdict: Verdict,
}

/// `place`: the end's placement over the test ([`IrqPlacement::of_end`], made once for all its
/// CPUs).
pub(super) fn receiver_cause(
    e: &EndObservation,
    place: &IrqPlacement,
    c: &CpuUse,
    th: &Thresholds,
) -> Verdict {
    let who = end_of(e, true);
    let nic_total = e.total.nic_irq_total();
    let irq_share = if nic_total > 0 {
        c.nic_irqs as f64 * 100.0 / nic_total as f64
    } else {
        0.0
    };
    let v = |id: VerdictId, line: String| Verdict::new(id, Some(who), line);
    if c.softirq.get() >= th.softirq_on_app || irq_share >= th.irqs_on_app {
        let mut line = format!(
            "{who} shares CPU {} with RX softirq (CPU {}: {}",
            c.cpu,
            c.cpu,
            parts(c)
        );
        if nic_total > 0 {
            line.push_str(&format!(
                "; {} of the NIC's interrupts",
                wirespeed_model::observation::Percent::new(irq_share)
            ));
        }
        line.push(')');
        return v(VerdictId::ReceiverSharesCpuWithSoftirq, line);
    }
    let work = place.rx_work();
    let work_name = if place.irq.is_some() {
        "NIC interrupts"
    } else {
        "NET_RX softirqs"
    };
    if let Some(w) = work.filter(|w| w.relation == Relation::OtherNode) {
        let nodes: Vec<String> = w
            .cpus
            .iter()
            .filter_map(|x| e.topology.node_of(x))
            .map(|n| n.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        return v(
            VerdictId::IrqNumaRemote,
            format!(
                "IRQs on a remote NUMA node: {work_name} on {} (node {}), {who} on CPU {} (node {}, {} busy)",
                cpus_words(&w.cpus),
                nodes.join(","),
                c.cpu,
                e.topology
                    .node_of(c.cpu)
                    .map_or("?".to_string(), |n| n.to_string()),
                c.busy()
            ),
        );
    }
    if let (Some(nic), Some(app)) = (e.nic_numa_node, e.topology.node_of(c.cpu)) {
        if nic as usize != app {
            return v(
                VerdictId::AppNumaRemote,
                format!(
                    "{who} on a remote NUMA node: CPU {} is on node {app}, the NIC{} on node {nic} ({} busy)",
                    c.cpu,
                    e.iface.as_ref().map_or(String::new(), |i| format!(" {i}")),
                    c.busy()
                ),
            );
        }
    }
    if let Some(w) = work.filter(|w| w.relation == Relation::OtherL3) {
        let first = w.cpus.first().unwrap_or(c.cpu);
        return v(
            VerdictId::IrqCrossL3,
            format!(
                "IRQs on a different L3 group than the {who}: {work_name} on {} ({}), {who} on CPU {} ({}, {})",
                cpus_words(&w.cpus),
                l3_words(e, first),
                c.cpu,
                l3_words(e, c.cpu),
                parts(c)
            ),
        );
    }
    v(
        VerdictId::ReceiverCpuBound,
        format!("{who} CPU-bound (CPU {}, {})", c.cpu, parts(c)),
    )
}

/// A saturated CPU that lost `th.steal` or more to the hypervisor.
pub(super) fn steal_candidate(
    e: &EndObservation,
    c: &CpuUse,
    busy: f64,
    th: &Thresholds,
) -> Option<Candidate> {
    if c.steal.get() < th.steal {
        return None;
    }
    let who = end_of(e, e.role.receives());
    Some(Candidate {
        busy,
        receiver: e.role.receives(),
        cpu: c.cpu,
        interrupts: c.softirq.get() + c.irq.get(),
        verdict: Verdict::new(VerdictId::CpuSteal, Some(who), format!(
                "{who}'s CPU {} saturated with {} of it stolen by the hypervisor (steal): a VM's CPU is not all its own ({})",
                c.cpu,
                c.steal,
                parts(c)
            )),
    })
}

/// The candidates of one saturated app CPU `c` (its `busy`), with `suffix` after each line.
pub(super) fn app_candidates(
    e: &EndObservation,
    place: &IrqPlacement,
    c: &CpuUse,
    busy: f64,
    suffix: &str,
    th: &Thresholds,
    out: &mut Vec<Candidate>,
) {
    out.extend(steal_candidate(e, c, busy, th));
    if e.role.receives() {
        let mut verdict = receiver_cause(e, place, c, th);
        verdict.line.push_str(suffix);
        out.push(Candidate {
            busy,
            receiver: true,
            cpu: c.cpu,
            interrupts: c.softirq.get() + c.irq.get(),
            verdict,
        });
    }
    if e.role.sends() {
        let who = end_of(e, false);
        out.push(Candidate {
            busy,
            receiver: false,
            cpu: c.cpu,
            interrupts: c.softirq.get() + c.irq.get(),
            verdict: Verdict::new(
                VerdictId::SenderCpuBound,
                Some(who),
                format!("{who} CPU-bound (CPU {}, {}){suffix}", c.cpu, parts(c)),
            ),
        });
    }
}

/// Each worker followed through the intervals: in each, the busiest of the CPUs it ran on
/// (the interval's own record of its CPUs, else the whole test's). A worker whose CPU was
/// saturated in `th.saturated_intervals` % of the intervals or more is saturated; its CPU is
/// the average of those intervals' CPUs (numbered as the one it was on most).
pub(super) fn followed_workers(e: &EndObservation, th: &Thresholds) -> Vec<(CpuUse, f64, String)> {
    let intervals: Vec<_> = e.intervals.iter().filter(|i| !i.cpus.is_empty()).collect();
    let mut out = Vec::new();
    if intervals.is_empty() {
        return out;
    }
    // each interval's threads, CPUs and workers, looked up rather than scanned for each worker
    let index: Vec<_> = intervals
        .iter()
        .map(|i| {
            (
                i,
                IntervalThreads::of(e, i),
                CpusById::of(i),
                OnceCell::new(),
            )
        })
        .collect();
    for w in &e.total.workers {
        let mut hot: Vec<&CpuUse> = Vec::new();
        let mut cpus_used = wirespeed_host::CpuSet::new();
        for (i, threads, cpus, workers) in &index {
            let exact = threads
                .of_worker(w)
                .and_then(|t| t.cpu)
                .map(|c| CpuSet::from_cpus([c]));
            let seen = exact.as_ref().unwrap_or_else(|| {
                // the interval's own record of where the worker was, by number (made the first
                // time a worker's thread is not there)
                let workers = workers.get_or_init(|| {
                    let mut m = std::collections::HashMap::new();
                    for x in &i.workers {
                        m.entry(x.worker).or_insert(&x.cpus_seen);
                    }
                    m
                });
                workers.get(&w.worker).copied().unwrap_or(&w.cpus_seen)
            });
            let busiest = seen
                .iter()
                .filter_map(|c| cpus.get(c))
                .max_by(|a, b| a.busy().get().total_cmp(&b.busy().get()));
            if let Some(c) = busiest.filter(|c| c.busy().get() >= th.saturated) {
                cpus_used.insert(c.cpu);
                hot.push(c);
            }
        }
        let need = (intervals.len() as f64 * th.saturated_intervals / 100.0)
            .ceil()
            .max(1.0);
        if (hot.len() as f64) < need {
            continue;
        }
        let n = hot.len() as f64;
        let mean = |f: fn(&CpuUse) -> f64| Percent::new(hot.iter().map(|c| f(c)).sum::<f64>() / n);
        let mut counts = std::collections::BTreeMap::new();
        for c in &hot {
            *counts.entry(c.cpu).or_insert(0usize) += 1;
        }
        // the CPU it was on most (the lowest of equals)
        let cpu = counts
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map_or(0, |(c, _)| *c);
        let avg = CpuUse {
            cpu,
            user: mean(|c| c.user.get()),
            system: mean(|c| c.system.get()),
            irq: mean(|c| c.irq.get()),
            softirq: mean(|c| c.softirq.get()),
            steal: mean(|c| c.steal.get()),
            idle: mean(|c| c.idle.get()),
            nic_irqs: hot.iter().map(|c| c.nic_irqs).sum(),
            net_rx: hot.iter().map(|c| c.net_rx).sum(),
            net_tx: hot.iter().map(|c| c.net_tx).sum(),
        };
        let busy = avg.busy().get();
        let suffix = format!(
            " in {} of {} intervals (worker {} followed over CPU{} {})",
            hot.len(),
            intervals.len(),
            w.worker,
            if cpus_used.len() == 1 { "" } else { "s" },
            cpus_used
        );
        out.push((avg, busy, suffix));
    }
    out
}

/// An interval's CPUs by id, each found by a binary search rather than a scan of the list for
/// each thread or worker (the list is ascending as the observer writes it, but a peer's or a
/// file's need not be): the first of an id, as [`IntervalObservation::cpu`] finds it.
///
/// [`IntervalObservation::cpu`]: wirespeed_model::observation::IntervalObservation::cpu
pub(super) struct CpusById<'a>(Vec<(u32, &'a CpuUse)>);

impl<'a> CpusById<'a> {
    pub(super) fn of(i: &'a wirespeed_model::observation::IntervalObservation) -> CpusById<'a> {
        let mut v: Vec<_> = i.cpus.iter().map(|c| (c.cpu, c)).collect();
        // stable: the first of an id stays first
        v.sort_by_key(|&(id, _)| id);
        CpusById(v)
    }

    pub(super) fn get(&self, cpu: u32) -> Option<&'a CpuUse> {
        let k = self.0.partition_point(|&(id, _)| id < cpu);
        self.0.get(k).filter(|&&(id, _)| id == cpu).map(|&(_, c)| c)
    }
}

/// An interval's worker threads, to find each worker's: the one of its id, where the end said
/// it (a binary search, not a scan: 1,024 workers over 60 intervals are 31 million
/// comparisons); else, from an end that did not, by order (the end's worker threads in the
/// order they started, taken as the workers' order) when the interval has one per worker.
pub(super) struct IntervalThreads<'a> {
    /// By id (the order they started in), each with its id beside it for the search.
    sorted: Vec<(u32, &'a wirespeed_model::observation::ThreadUse)>,
    /// One thread per worker of the end.
    one_each: bool,
}

impl<'a> IntervalThreads<'a> {
    pub(super) fn of(
        e: &EndObservation,
        i: &'a wirespeed_model::observation::IntervalObservation,
    ) -> IntervalThreads<'a> {
        let mut sorted: Vec<_> = i.threads.iter().map(|t| (t.tid, t)).collect();
        sorted.sort_unstable_by_key(|&(tid, _)| tid);
        IntervalThreads {
            sorted,
            one_each: i.threads.len() == e.total.workers.len(),
        }
    }

    /// Worker `w`'s thread, when the interval has it.
    pub(super) fn of_worker(
        &self,
        w: &wirespeed_model::observation::WorkerRun,
    ) -> Option<&'a wirespeed_model::observation::ThreadUse> {
        match w.tid {
            Some(tid) => self
                .sorted
                .binary_search_by_key(&tid, |&(id, _)| id)
                .ok()
                .map(|k| self.sorted[k].1),
            None if self.one_each => self.sorted.get(w.worker as usize).map(|&(_, t)| t),
            None => None,
        }
    }
}

/// `e`'s own worker threads in interval `i`: those that serve its role (in `--bidir`, the
/// direction judged; the other direction's are still the test's, never other tasks).
pub(super) fn own_threads<'a>(
    e: &EndObservation,
    i: &'a wirespeed_model::observation::IntervalObservation,
) -> impl Iterator<Item = &'a wirespeed_model::observation::ThreadUse> {
    let role = e.role;
    i.threads.iter().filter(move |t| t.serves(role))
}

/// Each worker thread of an end over the test (those that serve its role: in `--bidir`, the
/// direction judged): (name, CPU it ran on last, mean run %, mean wait %), averaged over the
/// intervals that saw it.
pub(super) fn thread_means(e: &EndObservation) -> Vec<(String, Option<u32>, f64, f64)> {
    let mut acc: std::collections::BTreeMap<u32, (String, Option<u32>, f64, f64, f64)> =
        Default::default();
    for i in &e.intervals {
        for t in own_threads(e, i) {
            let a = acc
                .entry(t.tid)
                .or_insert((t.name.clone(), None, 0.0, 0.0, 0.0));
            a.1 = t.cpu.or(a.1);
            a.2 += t.run.get();
            a.3 += t.wait.get();
            a.4 += 1.0;
        }
    }
    acc.into_values()
        .map(|(n, c, r, w, k)| (n, c, r / k, w / k))
        .collect()
}

/// The end's worker threads needed a CPU (ran or waited to) less than `worker_demand` % of
/// the time: they were mostly blocked on the network, so a busy app CPU did not hold them back.
/// `false` when the threads were not observed.
pub(super) fn workers_idle(e: &EndObservation, th: &Thresholds) -> bool {
    let t = thread_means(e);
    !t.is_empty()
        && t.iter()
            .all(|(_, _, run, wait)| run + wait < th.worker_demand)
}

/// Some worker thread of the end needed a CPU (ran + waited) ≥ `pct` % of the time (`false`
/// when the threads were not observed): at `contended_demand` it did work, though less than a
/// CPU-bound one; at `saturated` it never blocked on the network.
pub(super) fn worker_needed(e: &EndObservation, pct: f64) -> bool {
    thread_means(e)
        .iter()
        .any(|(_, _, run, wait)| run + wait >= pct)
}

pub(super) fn cpu_candidates(e: &EndObservation, th: &Thresholds, out: &mut Vec<Candidate>) {
    cpu_candidates_with(e, th, true, out);
}

/// `demand`: leave out an end whose workers were mostly blocked (see [`workers_idle`]).
pub(super) fn cpu_candidates_with(
    e: &EndObservation,
    th: &Thresholds,
    demand: bool,
    out: &mut Vec<Candidate>,
) {
    let idle = demand && workers_idle(e, th);
    let app = if idle {
        // a busy app CPU is someone else's work: not this end's limit — unless that work is
        // the receive softirq on a receiver's app CPU (this end's own packets: it preempts
        // the worker without the worker counting it as a wait) and the workers did want a
        // CPU a good part of the time
        e.total
            .app_cpus()
            .iter()
            .filter(|&c| {
                e.role.receives()
                    && worker_needed(e, th.contended_demand)
                    && e.total.cpu(c).is_some_and(|u| {
                        u.net_rx > 0 && u.softirq.get() + u.irq.get() >= th.softirq_heavy
                    })
            })
            .collect()
    } else {
        e.total.app_cpus()
    };
    let place = IrqPlacement::of_end(e);
    let mut saturated_app = false;
    for c in &e.total.cpus {
        let busy = c.busy().get();
        if busy < th.saturated {
            continue;
        }
        if app.contains(c.cpu) {
            saturated_app = true;
            app_candidates(e, &place, c, busy, "", th, out);
        } else if c.softirq.get() + c.irq.get() >= th.softirq_cpu {
            let who = end_of(e, e.role.receives());
            out.push(Candidate {
                busy,
                receiver: e.role.receives(),
                cpu: c.cpu,
        interrupts: c.softirq.get() + c.irq.get(),
                verdict: Verdict::new(VerdictId::SoftirqCpuBound, Some(who), format!(
                        "{who}'s softirq CPU {} saturated ({}): spread the flows over more queues (RSS) or RPS",
                        c.cpu,
                        parts(c)
                    )),
            });
        }
    }
    // Averages hide a worker that migrates: follow each one through the intervals.
    if !saturated_app && !idle {
        for (c, busy, suffix) in followed_workers(e, th) {
            app_candidates(e, &place, &c, busy, &suffix, th, out);
        }
    }
}
