//! The verdict of a test: what limited it, in one line with the evidence, and every other
//! finding that holds under `also`, each with its id, how its evidence relates to the test and
//! how strongly.
//!
//! A pure function of the test's observations (both ends when the peer is wirespeed; each end
//! carries its own topology, NIC facts and workers) and what the test measured. It is decided in
//! three steps, each in one place:
//!
//! 1. [`context::Context`]: what every rule reads, computed once — the figures (with the
//!    sender's own `TCP_INFO` where this end's report lacks it), both ends on one host and
//!    whether they compete, the CPU candidates, the loss account and whether a shaper held the
//!    rate, the cgroup quota, the rate's flatness.
//! 2. [`rules::RULES`]: small rule units, each with its id(s), the counters it reads and a
//!    check over the context. A rule reports each finding with its row in the precedence table,
//!    how its own evidence relates to this test (`Binding`, `Consistent`, `Fact`) and how
//!    strongly (a CPU's saturated share, the rate's flatness, the window's fill, the share of
//!    datagrams lost, the measured rate against the loss model). No rule looks at another's
//!    findings.
//! 3. [`decide`]: the headline is the first finding by bound, then by its row in
//!    [`wirespeed_model::precedence::PRECEDENCE`] (one table, as data, with a reason per row),
//!    then by strength; with no finding that bound or is consistent, `no-cpu-saturated`. A fact
//!    about the setup (both ends on one host, MTUs that differ) leads only where its own
//!    evidence shows it bound this test. Every other finding follows under `also`, typed.
//!
//! The running verdict (`--live`, `top`, the agent's `/probe`) and the final one are the same
//! function over the figures so far: they differ only where the figures did.
//!
//! The path's retransmits are the senders' less those the receiving host explains: spurious
//! ones (the receiver D-SACKed them: `tcpi_dsack_dups`) and its own receive-path drops (its
//! CPUs' softnet backlog drops, TCP's receive-side drops); when the host explains ≥ 80 % of
//! them, the path lost nothing.
//!
//! **A busy host.** Whatever the verdict (but `cpu-contended`, which says it itself), when other
//! tasks took ≥ 25 % (`busy_others`) of a CPU this test's workers ran on, the first `also`
//! line says so (`kind: host-load`) and `host_load` carries it typed; where the deciding check
//! sat near its threshold the line adds that the verdict is marginal under load.
//!
//! **`--bidir`.** Each direction is judged as a test of its own (the end that sends in it the
//! sender), the slower direction is the verdict and the other direction's verdict is the first
//! `also` line (`kind: other-direction`) and `other_direction`, its own `also` lines after it
//! with their `direction`.
//!
//! docs/explain.md describes each id and the precedence table (generated from the table).

mod bidir;
mod context;
mod cpu;
mod evidence;
mod finding;
mod load;
mod loss;
mod rules;
mod window;
mod words;

pub mod cost;

#[cfg(test)]
mod tests;

use wirespeed_model::observation::{BitsPerSecond, Role, TestObservation};
use wirespeed_model::verdict::Flow;
use wirespeed_model::{Also, AlsoKind, Bound, Rank};

pub use wirespeed_model::verdict::Measured;
pub use wirespeed_model::verdict::PathCeiling;

use context::Context;
use finding::{Finding, Out};

/// The thresholds of the checks (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// A CPU is saturated at this busy share (%).
    pub saturated: f64,
    /// Softirq share (%) of a saturated receiver CPU that counts as sharing it with RX work.
    pub softirq_on_app: f64,
    /// Share (%) of the NIC's interrupts taken by the app CPU that counts as sharing.
    pub irqs_on_app: f64,
    /// Throughput share (%) of the link speed that counts as line rate.
    pub line_rate: f64,
    /// Throughput share (%) of the test's `-b` target that counts as reaching it.
    pub at_target: f64,
    /// `TCP_INFO` limited-time share (%) that counts as window or send-buffer limited.
    pub tcp_limited: f64,
    /// Data in flight on average (the rate times the mean RTT) at this share (%) of the
    /// window the receiver advertised or more: the window ran full and is the limit, whatever
    /// `tcpi_rwnd_limited` says (a sender short of CPU with a small window spends its busy time
    /// sending, not waiting on the window, yet a larger window would carry more). Receive
    /// autotuning aims at twice what one RTT carries (50 %) and overshoots it; a window that
    /// binds runs at 90 % and more.
    pub window_full: f64,
    /// Path MTU below this fraction of the interface MTU counts as not passing it.
    pub pmtu_fraction: f64,
    /// softirq + irq share (%) of a saturated non-app CPU that makes it a softirq CPU.
    pub softirq_cpu: f64,
    /// Steal share (%) of a CPU that did work that counts as the hypervisor taking it.
    pub steal: f64,
    /// Share (%) of the intervals a worker's CPU must be saturated in for the worker to be.
    pub saturated_intervals: f64,
    /// UDP loss (%) worth explaining.
    pub udp_loss: f64,
    /// Loss-limited when the throughput is within this factor of the Mathis ceiling, either
    /// way. 3: the model's constant spans 0.87 (delayed ACKs) to 1.22-1.31 (an ACK per
    /// segment, random loss), a factor 1.5, and a sender's retransmits overstate the loss
    /// (the recorded lab run at 0.5 % drop retransmitted 2081 segments for 814 drops, 2.6x;
    /// lab runs at 0.5 % drop retransmitted 0.8-2.5 %, up to 5x), which puts the ceiling up to
    /// √4 = 2x low: 1.5 × 2 = 3. Lab runs at 0.5 % loss measured 0.7-3.4x their ceiling, two
    /// of about twelve above 4 (docs/explain.md); the receiver-input drop, 3.4x.
    pub mathis_factor: f64,
    /// Flat throughput: the intervals' coefficient of variation (%) at most this.
    pub flat_cv: f64,
    /// Below the link: the throughput under this share (%) of the link (when one is known).
    pub below_link: f64,
    /// A rate held this flat (coefficient of variation, %) while the path dropped segments:
    /// a shaper or policer, decided before the loss and CPU checks.
    pub shaped_cv: f64,
    /// A worker that waited on its CPU's run queue this share (%) of the wall time, needed a
    /// CPU `contended_demand` % of it, on a CPU where other tasks took `contended_others` %, was
    /// held back by something else on its CPU.
    pub contended_wait: f64,
    pub contended_demand: f64,
    pub contended_others: f64,
    /// softirq + irq share (%) of a worker's CPU at which that work, not other tasks, is what
    /// the worker waits for: the receive softirq on the receiver's app CPU is named before
    /// contention and the other CPU verdicts.
    pub softirq_heavy: f64,
    /// The receiving host (spurious retransmits, its own receive-path drops) explains this
    /// share (%) of the retransmits or more: they are not the path's loss.
    pub host_loss: f64,
    /// Workers that needed a CPU (ran + waited) less than this share (%) of the time were
    /// blocked on the network: their busy app CPU is not their limit.
    pub worker_demand: f64,
    /// A shaped rate drops less than this share (%) of its segments.
    pub shaped_loss: f64,
    /// A shaper's queue: the largest RTT at least this multiple of the smallest, and at least
    /// this many microseconds above it.
    pub queue_rtt: f64,
    pub queue_rtt_us: u64,
    /// Other tasks that took this share (%) of a CPU the test's workers ran on, averaged over
    /// the intervals a worker ran there, made the host busy: the verdict says so.
    pub busy_others: f64,
    /// On a busy host, a `TCP_INFO` limit within this many points above `tcp_limited` (or a
    /// verdict whose intervals did not agree) is marginal under that load.
    pub marginal_points: f64,
    /// An end's cgroup ran out of its CPU-time limit in at least this share (%) of the periods
    /// the limit was enforced in (and in at least `quota_periods` of them): the limit held the
    /// test back.
    pub quota_throttled: f64,
    pub quota_periods: u64,
}

pub const THRESHOLDS: Thresholds = Thresholds {
    saturated: 90.0,
    softirq_on_app: 10.0,
    irqs_on_app: 50.0,
    line_rate: 95.0,
    at_target: 90.0,
    tcp_limited: 25.0,
    window_full: 75.0,
    pmtu_fraction: 0.9,
    softirq_cpu: 50.0,
    steal: 10.0,
    saturated_intervals: 50.0,
    udp_loss: 1.0,
    mathis_factor: 3.0,
    flat_cv: 10.0,
    below_link: 90.0,
    shaped_cv: 10.0,
    shaped_loss: 0.3,
    contended_wait: 10.0,
    contended_demand: 25.0,
    contended_others: 25.0,
    softirq_heavy: 25.0,
    host_loss: 80.0,
    worker_demand: 50.0,
    queue_rtt: 2.0,
    queue_rtt_us: 1000,
    busy_others: 25.0,
    marginal_points: 10.0,
    quota_throttled: 20.0,
    quota_periods: 5,
};

pub use wirespeed_observe::nic::is_virtual;

pub use wirespeed_model::verdict::{Verdict, VerdictId};

/// The path model's ceiling for what a TCP test measured: the Mathis ceiling from its
/// retransmit rate, smallest RTT and MSS (the same `path_model::mathis_bps` `wirespeed model`
/// uses); `None` without retransmits, an RTT or the MSS.
pub fn ceiling(m: &Measured) -> Option<PathCeiling> {
    let (p, (min_us, _, _), mss) = (m.tcp_loss()?, m.rtt_us?, m.mss?);
    let rtt_ms = min_us as f64 / 1000.0;
    (rtt_ms > 0.0).then(|| PathCeiling {
        loss: p,
        retransmits: m.retransmits.unwrap_or(0),
        rtt_ms,
        mss,
        mathis_bps: wirespeed_doctor::path_model::mathis_bps(mss, rtt_ms, p),
        measured_bps: m.throughput.map(|b| b.0).filter(|b| *b > 0.0),
        direction: None,
        other_direction: None,
    })
}

/// The verdict of a test from its observation and measured throughput (the receiver's figure).
pub fn verdict(test: &TestObservation, throughput: Option<BitsPerSecond>) -> Verdict {
    verdict_with(test, throughput, &THRESHOLDS)
}

/// [`verdict`] with explicit thresholds.
pub fn verdict_with(
    test: &TestObservation,
    throughput: Option<BitsPerSecond>,
    th: &Thresholds,
) -> Verdict {
    verdict_measured(test, &Measured::throughput(throughput), th)
}

/// The verdict from the observation and everything else the test measured.
pub fn verdict_of(test: &TestObservation, m: &Measured) -> Verdict {
    verdict_measured(test, m, &THRESHOLDS)
}

/// [`verdict_of`] with explicit thresholds. `--bidir` (`m.reverse` and `m.local` known):
/// each direction judged on its own (see [`bidir::bidir`]).
pub fn verdict_measured(test: &TestObservation, m: &Measured, th: &Thresholds) -> Verdict {
    match bidir::directions(m) {
        Some((forward, reverse, local)) => bidir::bidir(test, &forward, &reverse, local, th),
        None => one_direction(test, test, m, th),
    }
}

/// Every rule over the one context, the findings in the decision's order: by bound, then the
/// precedence table's row, then strength; each said once (a finding another quotes is left to
/// the one that quotes it). With none that bound or is consistent, `no-cpu-saturated` leads.
fn decide(cx: &Context) -> (Vec<Finding>, Vec<Also>) {
    let mut found = Vec::new();
    let mut notes = Vec::new();
    let mut below = None;
    for rule in rules::RULES {
        for out in (rule.check)(cx) {
            match out {
                Out::Finding(f) => {
                    debug_assert!(rule.ids.contains(&f.id()), "{}: {}", rule.name, f.id());
                    debug_assert!(
                        wirespeed_model::precedence::row(f.rank)
                            .ids
                            .contains(&f.id()),
                        "{}: {} in no row {:?}",
                        rule.name,
                        f.id(),
                        f.rank
                    );
                    found.push(f);
                }
                Out::Note(a) => notes.push(a),
                Out::LossBelowModel(line) => below = Some(line),
            }
        }
    }
    let quoted: Vec<_> = found.iter().filter_map(|f| f.quotes).collect();
    found.retain(|f| !quoted.contains(&f.key()));
    found.sort_by(|a, b| a.order(b));
    if found.first().is_none_or(|f| f.bound == Bound::Fact) {
        found.insert(0, nothing_found(cx));
    }
    if let Some(line) = below {
        // what held the rate lower than the loss allowed: the headline, or nothing found
        let head = &found[0];
        let what = if head.id() == VerdictId::NoCpuSaturated {
            "nothing else was found that held it (no CPU, window, buffer or shaper limit): the peer or an unobserved part of the path".to_string()
        } else {
            format!("{} held the rate lower (the verdict)", head.id())
        };
        notes.push(Also::note(AlsoKind::Loss, format!("{line}; {what}")));
    }
    (found, notes)
}

/// `no-cpu-saturated`: no rule found a limit; the busiest CPU seen, and what was not seen.
fn nothing_found(cx: &Context) -> Finding {
    let test = cx.test;
    let busiest = test
        .ends()
        .flat_map(|e| e.total.cpus.iter().map(move |c| (e, c)))
        .max_by(|a, b| a.1.busy().get().total_cmp(&b.1.busy().get()));
    let mut line = "no CPU saturated".to_string();
    if let Some((e, c)) = busiest {
        line.push_str(&format!(
            " (busiest: {}'s CPU {} at {})",
            words::end_of(e, e.role.receives()),
            c.cpu,
            c.busy()
        ));
    }
    match (&test.remote_absent, &test.remote) {
        (Some(r), _) => line.push_str(&format!(
            " at this end; the peer was not observed ({r}), so its CPUs could not be seen: the limit is the path or the peer"
        )),
        (None, None) => line.push_str(" at this end; the peer's CPUs were not seen: the limit is the path or the peer"),
        _ if cx.one_host() => line.push_str(": both ends on one host and no limit found — the host's CPUs and memory, not a path"),
        _ => line.push_str(": the limit is the path or the peer"),
    }
    let sat = cx.th.saturated;
    Finding::new(
        VerdictId::NoCpuSaturated,
        None,
        line,
        Rank::Nothing,
        Bound::Consistent,
        0.0,
    )
    .reads(&["/proc/stat per-CPU time"])
    .agreed(evidence::per_interval(test, None, &|i| {
        !evidence::saturated(i, sat)
    }))
}

/// A `--bidir` test (either end sends and receives): an end's CPU time pays for both
/// directions.
pub(crate) fn two_way(test: &TestObservation) -> bool {
    test.ends().any(|e| e.role == Role::Both)
}

/// How the directions of the test a verdict judges bear on the path's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Directions {
    /// One direction of a `--bidir` test: its ACKs wait in the same queues as the other
    /// direction's data, so its RTT is not its own path's alone.
    pub two_way: bool,
    /// The observation does not tell the two directions' workers apart ([`directions_mixed`]).
    pub mixed: bool,
}

/// [`Directions`] of `judged`, an observation of the test `whole` (or `whole` itself).
pub(crate) fn directions(judged: &TestObservation, whole: &TestObservation) -> Directions {
    Directions {
        two_way: two_way(whole),
        mixed: directions_mixed(judged, whole),
    }
}

/// `judged`, an observation of the `--bidir` test `whole` (or `whole` itself), does not tell
/// the two directions' workers apart: the test judged as a whole (an end of both roles), or a
/// worker thread without its role (a peer or capture that does not say). There one
/// direction's busy or held worker may be the other's. Where every thread has its role, each
/// direction is judged on its own workers ([`ThreadUse::serves`]).
///
/// [`ThreadUse::serves`]: wirespeed_model::observation::ThreadUse::serves
pub(crate) fn directions_mixed(judged: &TestObservation, whole: &TestObservation) -> bool {
    two_way(whole)
        && (two_way(judged)
            || judged
                .ends()
                .flat_map(|e| &e.intervals)
                .flat_map(|i| &i.threads)
                .any(|t| t.role.is_none()))
}

/// One direction's verdict (every test but `--bidir` has one). `whole`: the test's own
/// observation — `test` itself, or the `--bidir` test `test` is one direction of (no cost per
/// bit then: an end's CPU time pays for both directions).
fn one_direction(
    test: &TestObservation,
    whole: &TestObservation,
    m: &Measured,
    th: &Thresholds,
) -> Verdict {
    let cx = Context::new(test, m, th, directions(test, whole));
    let (mut found, notes) = decide(&cx);
    let cost = crate::cost::cost_of(whole, &cx.m);
    let head = found.remove(0);
    let near = head.near;
    let mut first = head.into_verdict();
    with_projection(&mut first, cost.as_ref());
    first.also = found
        .into_iter()
        .map(|f| {
            let mut v = f.into_verdict();
            with_projection(&mut v, cost.as_ref());
            Also::finding(&v)
        })
        .chain(notes)
        .collect();
    // a zero-copy send between two ends of one host: what it did, always said
    if let Some(note) = crate::cost::zero_copy_on_one_host(
        test,
        &cx.m,
        cost.as_ref().and_then(|c| c.sender.as_ref()),
    ) {
        first.also.push(Also::note(AlsoKind::Note, note));
    }
    load::with_host_load(&mut first, near, &cx.busy, th);
    first
}

/// A CPU-bound verdict names what its end's cost projects: what one core moves here and the
/// cores (and CPUs) the link's rate needs (`crate::cost`).
fn with_projection(v: &mut Verdict, cost: Option<&wirespeed_model::Cost>) {
    let role = match v.id {
        VerdictId::SenderCpuBound => Role::Sender,
        VerdictId::ReceiverCpuBound | VerdictId::UdpReceiverCpuBound => Role::Receiver,
        _ => return,
    };
    if let Some(words) = cost.and_then(|c| crate::cost::verdict_words(c, role)) {
        v.line.push_str(": ");
        v.line.push_str(&words);
    }
}

/// The `Path model:` line's ceiling, only where it informs the verdict: the loss model binds
/// ([`loss_judgement`], the `loss-limited` verdict first or under `also`). Not on loopback,
/// not with BBR, not where the receiving host explains the retransmits, not where the rate is
/// far from it. `--bidir` (as [`verdict_measured`] judges it): each direction's own model, on
/// that direction's observation and figures, for each direction where it binds, with
/// `direction` saying which: the slower direction's (the verdict's) first and the other's as
/// its `other_direction` where both bind, else the one that binds.
pub fn ceiling_for(test: &TestObservation, m: &Measured) -> Option<PathCeiling> {
    let Some((forward, reverse, local)) = bidir::directions(m) else {
        return one_ceiling(test, m, directions(test, test));
    };
    let slower = bidir::reverse_slower(&forward, &reverse);
    let c2s = (Flow::ClientToServer, forward);
    let s2c = (Flow::ServerToClient, reverse);
    let order = if slower { [s2c, c2s] } else { [c2s, s2c] };
    let mut binding = order.into_iter().filter_map(|(flow, m)| {
        let one = bidir::one_way(test, local, flow);
        let mut c = one_ceiling(&one, &m, directions(&one, test))?;
        c.direction = Some(flow);
        Some(c)
    });
    let mut first = binding.next()?;
    first.other_direction = binding.next().map(Box::new);
    Some(first)
}

/// [`ceiling_for`] of one direction (`dirs`: of which test, [`directions`]).
pub(crate) fn one_ceiling(
    test: &TestObservation,
    m: &Measured,
    dirs: Directions,
) -> Option<PathCeiling> {
    let th = &THRESHOLDS;
    let cx = Context::new(test, m, th, dirs);
    match loss::loss_judgement(&cx) {
        loss::LossJudgement::Binds(f) if f.bound == Bound::Binding => ceiling(&cx.pm),
        _ => None,
    }
}
