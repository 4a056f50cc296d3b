//! Other tasks' load on the test's CPUs: each worker's run and wait, what else its CPU did,
//! the busy-host statement, and the workers another task held off their CPUs.

use wirespeed_model::{Also, AlsoKind, Bound, LoadedEnd, Rank, Verdict, VerdictId};

use super::cpu::{own_threads, CpusById};
use super::evidence;
use super::finding::{Finding, Near};
use super::loss::LossAccount;
use super::rules::setup::same_host;
use super::words::end_of;
use super::Thresholds;
use wirespeed_model::observation::{CpuUse, EndObservation, Percent, Role, TestObservation};

/// One worker thread over the test, averaged over the intervals that saw it on a CPU with a
/// row: its own run and wait shares, and what else its CPU did — other tasks (busy − the
/// thread's run − softirq − irq − steal) and interrupt work (softirq + irq).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ThreadLoad {
    pub(super) name: String,
    pub(super) cpu: Option<u32>,
    pub(super) run: f64,
    pub(super) wait: f64,
    pub(super) others: f64,
    pub(super) interrupts: f64,
}

/// The other end of a test whose ends share one host: its workers are the test's too, never
/// "other tasks" on a CPU they share with `e`'s. `None` on two hosts.
pub(super) fn peer_on_host<'a>(
    test: &'a TestObservation,
    e: &EndObservation,
) -> Option<&'a EndObservation> {
    same_host(test)?;
    test.ends().find(|p| !std::ptr::eq(*p, e))
}

/// On one host, the peer's workers were not read in interval `n` though they were in others
/// (an end whose workers had ended before its last reading): that interval's "other tasks"
/// would hold the peer's whole run, so it is left out of the other-task figures.
pub(super) fn peer_unread(peer: Option<&EndObservation>, n: usize) -> bool {
    peer.is_some_and(|p| {
        p.intervals.iter().any(|i| !i.threads.is_empty())
            && p.intervals.get(n).is_none_or(|i| i.threads.is_empty())
    })
}

/// What other tasks took of the CPUs in `e`'s interval `n` (the one rule for "other tasks",
/// read by `cpu-contended` and by the busy-host statement): on each CPU, [`others_on`] with the
/// test's workers' run there — `e`'s and, on one host, its peer's in the same interval (a
/// `--bidir` end's two workers can share one CPU: neither is the other's "other task") — and
/// no more than on the whole host. Made once per interval: a scan of the threads for each
/// thread was quadratic (1,024 workers an end over 60 intervals took a third of a second).
pub(super) struct Others {
    /// The test's workers' run (%) by the CPU each was on at the interval's end.
    run: std::collections::BTreeMap<u32, f64>,
    /// At most what other tasks took of the whole host, in % of one CPU: every listed CPU's
    /// busy time less the test's workers' run (each worker once, wherever it was), irq and
    /// steal. A worker is placed on the CPU it was on at the interval's end, so one that moved
    /// during the interval leaves its run on another CPU looking like other tasks' — with many
    /// unpinned workers a CPU's "other tasks" can be the test's own; over the host that error
    /// cancels, and other tasks cannot have taken more of one CPU than of all of them. Softirq
    /// stays in: a kernel without `CONFIG_IRQ_TIME_ACCOUNTING` counts the softirq a worker ran
    /// in its own context in the worker's run too, and taking it out twice would hide a real
    /// competitor (a busy loop beside a loopback sender); left in, the figure is an upper
    /// bound either way.
    host: f64,
}

impl Others {
    pub(super) fn of(e: &EndObservation, peer: Option<&EndObservation>, n: usize) -> Others {
        let Some(i) = e.intervals.get(n) else {
            return Others {
                run: Default::default(),
                host: 0.0,
            };
        };
        let mut run = std::collections::BTreeMap::new();
        let mut total = 0.0;
        for t in std::iter::once(i)
            .chain(peer.and_then(|p| p.intervals.get(n)))
            .flat_map(|i| &i.threads)
        {
            total += t.run.get();
            if let Some(c) = t.cpu {
                *run.entry(c).or_insert(0.0) += t.run.get();
            }
        }
        let busy: f64 = i
            .cpus
            .iter()
            .map(|c| c.busy().get() - c.irq.get() - c.steal.get())
            .sum();
        Others {
            run,
            host: (busy - total).max(0.0),
        }
    }

    /// Other tasks' share (%) of CPU `c`.
    pub(super) fn on(&self, c: &CpuUse) -> f64 {
        others_on(c, self.run.get(&c.cpu).copied().unwrap_or(0.0)).min(self.host)
    }
}

/// Other tasks' share (%) of CPU `c` by itself: busy less the test's workers' run there
/// (`run`), softirq, irq and steal ([`Others::on`] caps it by the whole host's).
pub(super) fn others_on(c: &CpuUse, run: f64) -> f64 {
    (c.busy().get() - run - c.softirq.get() - c.irq.get() - c.steal.get()).max(0.0)
}

/// The CPUs this test's workers ran on where other tasks took `th.busy_others` % or more,
/// averaged over the intervals a worker of that end was on the CPU (at the interval's end),
/// the busiest first. Both ends on one host: the peer's workers in the same interval are the
/// test's too, not other tasks. Empty without the workers' threads in the intervals.
pub(super) fn host_load(test: &TestObservation, th: &Thresholds) -> Vec<wirespeed_model::BusyCpu> {
    let mut out = Vec::new();
    for (k, e) in test.ends().enumerate() {
        let peer = peer_on_host(test, e);
        // cpu → (sum of others, intervals)
        let mut acc: std::collections::BTreeMap<u32, (f64, u32)> = Default::default();
        for (n, i) in e.intervals.iter().enumerate() {
            if peer_unread(peer, n) {
                continue;
            }
            let cpus: std::collections::BTreeSet<u32> =
                i.threads.iter().filter_map(|t| t.cpu).collect();
            let others = Others::of(e, peer, n);
            let by_id = CpusById::of(i);
            for cpu in cpus {
                let Some(c) = by_id.get(cpu) else { continue };
                let a = acc.entry(cpu).or_insert((0.0, 0));
                a.0 += others.on(c);
                a.1 += 1;
            }
        }
        let who = match (e.role, k) {
            (Role::Both, 0) => LoadedEnd::ThisEnd,
            (Role::Both, _) => LoadedEnd::ThePeer,
            (Role::Receiver, _) => LoadedEnd::Receiver,
            (Role::Sender, _) => LoadedEnd::Sender,
        };
        for (cpu, (sum, n)) in acc {
            let mean = sum / f64::from(n.max(1));
            if mean >= th.busy_others {
                out.push(wirespeed_model::BusyCpu {
                    end: who,
                    cpu,
                    others_pct: mean,
                    intervals: n,
                });
            }
        }
    }
    out.sort_by(|a, b| b.others_pct.total_cmp(&a.others_pct));
    out
}

/// The busy-host statement of verdict `v`: `host_load` set and a line first under `also` (not
/// for `cpu-contended`, whose own line says it: its `host_load` only).
/// `cpus`: the context's [`host_load`], computed once.
pub(super) fn with_host_load(
    v: &mut Verdict,
    near: Option<Near>,
    cpus: &[wirespeed_model::BusyCpu],
    th: &Thresholds,
) {
    if cpus.is_empty() {
        return;
    }
    let contended = v.standing.rank == Some(Rank::Contention);
    v.host_load = Some(wirespeed_model::HostLoad {
        cpus: cpus.to_vec(),
        marginal: !contended && near.is_some(),
    });
    if contended {
        return;
    }
    let each: Vec<String> = cpus
        .iter()
        .take(4)
        .map(|c| {
            format!(
                "{} of the {}'s CPU {} (a worker's CPU in {} interval{})",
                Percent::new(c.others_pct),
                c.end.words(),
                c.cpu,
                c.intervals,
                if c.intervals == 1 { "" } else { "s" }
            )
        })
        .collect();
    let more = cpus.len().saturating_sub(4);
    let mut line = format!(
        "host busy: other tasks took {}{} during the test; this verdict may be a consequence of that load",
        match each.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        },
        if more > 0 {
            format!(" (and {more} more CPU{})", if more == 1 { "" } else { "s" })
        } else {
            String::new()
        }
    );
    match near {
        Some(Near::Share(p)) if p < th.tcp_limited => line.push_str(&format!(
            " — {} from a full window, its time limited at {} of busy time, under its {} threshold: marginal under load",
            v.id,
            Percent::new(p),
            Percent::new(th.tcp_limited)
        )),
        Some(Near::Share(p)) => line.push_str(&format!(
            " — {} at {} of busy time is within {} points of its {} threshold: marginal under load",
            v.id,
            Percent::new(p),
            th.marginal_points,
            Percent::new(th.tcp_limited)
        )),
        Some(Near::Disagreed) => line.push_str(&format!(
            " — {}'s intervals did not agree: marginal under load",
            v.id
        )),
        None => {}
    }
    v.also.insert(0, Also::note(AlsoKind::HostLoad, line));
}

/// Each end of a test with its workers' loads ([`thread_loads`]), made once for the rules that
/// read them (`cpu-contended`, the saturated-CPU rule's "other tasks first"), in
/// [`TestObservation::ends`]' order.
pub(super) type EndLoads<'a> = Vec<(&'a EndObservation, Vec<ThreadLoad>)>;

/// [`EndLoads`] of `test`.
pub(super) fn end_loads(test: &TestObservation) -> EndLoads<'_> {
    test.ends()
        .map(|e| (e, thread_loads(e, peer_on_host(test, e))))
        .collect()
}

/// Each of `e`'s workers over the intervals (those that serve its role: in `--bidir`, the
/// direction judged): its run and wait, and the other tasks and interrupt work on the CPU it
/// was on. Every worker of the test is no other task: on one host the peer's (`peer`) too —
/// the same rule as [`host_load`]'s.
pub(super) fn thread_loads(e: &EndObservation, peer: Option<&EndObservation>) -> Vec<ThreadLoad> {
    // tid → (name, cpu, run, wait, others, interrupts, intervals)
    type Acc = (String, Option<u32>, f64, f64, f64, f64, f64);
    let mut acc: std::collections::BTreeMap<u32, Acc> = Default::default();
    for (n, i) in e.intervals.iter().enumerate() {
        if peer_unread(peer, n) {
            continue;
        }
        // the end's own workers (in `--bidir`, the direction judged); any worker of the test
        // is no "other task" ([`Others`])
        let on = Others::of(e, peer, n);
        let by_id = CpusById::of(i);
        for t in own_threads(e, i) {
            let Some(c) = t.cpu.and_then(|c| by_id.get(c)) else {
                continue;
            };
            let irq = c.softirq.get() + c.irq.get();
            let others = on.on(c);
            let a = acc
                .entry(t.tid)
                .or_insert((t.name.clone(), None, 0.0, 0.0, 0.0, 0.0, 0.0));
            a.1 = t.cpu;
            a.2 += t.run.get();
            a.3 += t.wait.get();
            a.4 += others;
            a.5 += irq;
            a.6 += 1.0;
        }
    }
    acc.into_values()
        .map(|(name, cpu, r, w, o, q, k)| ThreadLoad {
            name,
            cpu,
            run: r / k,
            wait: w / k,
            others: o / k,
            interrupts: q / k,
        })
        .collect()
}

/// `cpu-contended`: a worker that waited on its CPU's run queue ≥ `contended_wait` % of the
/// time and needed a CPU (ran + waited) ≥ `contended_demand` %, on a CPU where other tasks took
/// ≥ `contended_others` % and at least half as much as the worker ran, and more than interrupt work
/// took when that reached `softirq_heavy` % (a wait mostly for softirq is the softirq
/// verdict's): another task held its CPU.
pub(super) fn contended(
    test: &TestObservation,
    loads: &EndLoads,
    th: &Thresholds,
    loss: &LossAccount,
) -> Vec<Finding> {
    // the most-waiting worker of each end, the longer wait first
    let mut per_end: Vec<(&EndObservation, &ThreadLoad)> = loads
        .iter()
        .filter_map(|&(e, ref loads)| {
            loads
                .iter()
                .filter(|t| {
                    t.wait >= th.contended_wait
                        && t.run + t.wait >= th.contended_demand
                        && t.others >= th.contended_others
                        // one busy loop beside the worker gets about the worker's own share
                        // (the scheduler splits the CPU fairly, and the worker's softirq work
                        // comes out of it): half as much as the worker ran is contention
                        && t.others * 2.0 >= t.run
                        && (t.interrupts < th.softirq_heavy || t.others > t.interrupts)
                })
                .max_by(|a, b| a.wait.total_cmp(&b.wait))
                .map(|t| (e, t))
        })
        .collect();
    per_end.sort_by(|a, b| b.1.wait.total_cmp(&a.1.wait));
    per_end
        .into_iter()
        .map(|(e, t)| {
            let who = end_of(e, e.role.receives());
            let on = t.cpu.map_or(String::new(), |c| format!(" on CPU {c}"));
            let f = Finding::new(
                VerdictId::CpuContended,
                Some(who),
                format!(
                    "CPU contended: the {who}'s worker ({}){on} waited {} of the test for its CPU and ran {}, while other tasks took {} of that CPU — another process runs there{} (pin the test to a free CPU, or stop the other work)",
                    t.name,
                    Percent::new(t.wait),
                    Percent::new(t.run),
                    Percent::new(t.others),
                    if e.role.receives() { loss.words() } else { String::new() }
                ),
                Rank::Contention,
                Bound::Binding,
                t.wait / 100.0,
            )
            .reads(CONTENDED_COUNTERS)
            .agreed(evidence::per_interval(test, Some(who), &|i| {
                own_threads(e, i).any(|x| x.wait.get() >= th.contended_wait)
            }));
            match t.cpu {
                Some(c) => f.on_cpu(c),
                None => f,
            }
        })
        .collect()
}

const CONTENDED_COUNTERS: &[&str] = &[
    "the worker threads' schedstat (run and run-queue wait)",
    "/proc/stat per-CPU time",
];
