//! What every rule reads, computed once per direction judged: the test's figures (with the
//! sender's own `TCP_INFO` where this end's report lacks it), both ends on one host and
//! whether they compete, the CPU candidates, the loss account and whether a shaper held the
//! rate, the cgroup quota, the rate's flatness.

use std::borrow::Cow;

use wirespeed_model::verdict::Measured;

use super::cpu::{cpu_candidates, workers_idle, Candidate};
use super::finding::Finding;
use super::load::{end_loads, host_load, EndLoads};
use super::loss::{flatness, path_loss, quota_bound, with_sender_tcp, LossAccount, QueueSeen};
use super::rules::setup::{ends_compete, same_host};
use super::{Directions, Thresholds};
use wirespeed_model::observation::TestObservation;

pub(crate) struct Context<'a> {
    /// The observation of the direction judged (each end's role in it).
    pub test: &'a TestObservation,
    pub m: Cow<'a, Measured>,
    pub th: &'a Thresholds,
    /// Both ends on one host: where.
    pub same_host: Option<String>,
    /// The ends' workers compete for CPUs (unpinned, or on shared CPUs).
    pub compete: bool,
    /// The test ran over `lo`.
    pub over_lo: bool,
    /// Both ends observed and their workers mostly blocked on the network.
    pub idle: bool,
    /// The saturated CPUs the test's workers needed, both ends, the busiest first.
    pub cands: Vec<Candidate>,
    /// The retransmits the receiving host explains, and the path's.
    pub loss: LossAccount,
    pub host_loss: bool,
    /// `m` with the path's retransmits only.
    pub pm: Measured,
    /// Workers another task held off their CPUs (the `cpu-contended` findings).
    pub contention: Vec<Finding>,
    /// A rate held flat while the path dropped or queued.
    pub shaped: bool,
    /// What the senders' RTT says of a queue on the path.
    pub queue: Option<QueueSeen>,
    /// Each end's workers' loads: their run and wait, other tasks and interrupt work on their
    /// CPUs.
    pub loads: EndLoads<'a>,
    /// A cgroup's CPU-time limit held an end back.
    pub quota: bool,
    /// The intervals' rate after the first: mean, coefficient of variation (%), count.
    pub flat: Option<(f64, f64, usize)>,
    /// The workers' CPUs other tasks took a share of (`busy_others` or more), the busiest
    /// first.
    pub busy: Vec<wirespeed_model::BusyCpu>,
}

impl<'a> Context<'a> {
    /// `dirs`: whether the direction judged is one of a `--bidir` test's two, and whether the
    /// observation tells their workers apart ([`super::directions`]).
    pub fn new(
        test: &'a TestObservation,
        m: &'a Measured,
        th: &'a Thresholds,
        dirs: Directions,
    ) -> Context<'a> {
        let m = with_sender_tcp(test, m);
        let mut cands = Vec::new();
        for e in test.ends() {
            cpu_candidates(e, th, &mut cands);
        }
        cands.sort_by(|a, b| {
            b.busy
                .total_cmp(&a.busy)
                .then(b.receiver.cmp(&a.receiver))
                .then_with(|| {
                    // among equals, an app-CPU verdict before a softirq-CPU one
                    let softirq =
                        |c: &Candidate| c.verdict.id == wirespeed_model::VerdictId::SoftirqCpuBound;
                    softirq(a).cmp(&softirq(b))
                })
        });
        let loads = end_loads(test);
        let pl = path_loss(test, &m, th, &loads, !cands.is_empty(), dirs);
        Context {
            test,
            same_host: same_host(test),
            compete: ends_compete(test),
            over_lo: test.ends().any(|e| e.iface.as_deref() == Some("lo")),
            idle: test.remote.is_some() && test.ends().all(|e| workers_idle(e, th)),
            cands,
            loss: pl.loss,
            host_loss: pl.host_loss,
            pm: pl.pm,
            contention: pl.contention,
            shaped: pl.shaped,
            queue: pl.queue,
            loads,
            quota: !quota_bound(test, th).is_empty(),
            flat: flatness(&m),
            busy: host_load(test, th),
            m,
            th,
        }
    }

    /// Both ends on one host, or over `lo`: the "path" is this host's CPUs.
    pub fn one_host(&self) -> bool {
        self.over_lo || self.same_host.is_some()
    }

    /// A host limit the rules found evidence of: a saturated CPU the workers needed, a
    /// contended worker, a sender held by the window or its buffer, a cgroup's quota.
    pub fn host_limit(&self) -> bool {
        let th = self.th;
        !self.cands.is_empty()
            || !self.contention.is_empty()
            || self.quota
            || self
                .test
                .ends()
                .filter(|e| e.role.sends())
                .filter_map(|e| e.total.tcp)
                .any(|t| {
                    t.rwnd_share().get() >= th.tcp_limited
                        || t.sndbuf_share().get() >= th.tcp_limited
                })
    }

    /// The receiver got at least `at_target` % of the rate the test asked for.
    pub fn at_target(&self) -> bool {
        matches!(
            (self.m.target_bps, self.m.throughput),
            (Some(t), Some(b)) if t > 0.0 && b.0 >= t * self.th.at_target / 100.0
        )
    }

    /// Other tasks took at least half of `cpu` where `e`'s workers ran: whatever saturated it
    /// was not this end's work.
    pub fn others_took(&self, e: &wirespeed_model::observation::EndObservation, cpu: u32) -> bool {
        use wirespeed_model::LoadedEnd;
        let whose = |b: &wirespeed_model::BusyCpu| match b.end {
            LoadedEnd::Sender => e.role.sends(),
            LoadedEnd::Receiver => e.role.receives(),
            LoadedEnd::ThisEnd => std::ptr::eq(e, &self.test.local),
            LoadedEnd::ThePeer => !std::ptr::eq(e, &self.test.local),
        };
        self.busy
            .iter()
            .any(|b| b.cpu == cpu && whose(b) && b.others_pct >= 50.0)
    }

    /// The slowest real link of the two ends (a virtual one's speed is nominal), Mbit/s.
    pub fn link(&self) -> Option<(u64, Option<String>)> {
        self.test
            .ends()
            .filter(|e| !super::is_virtual(e))
            .filter_map(|e| e.iface_speed_mbps.map(|s| (s, e.iface.clone())))
            .min_by_key(|(s, _)| *s)
    }
}
