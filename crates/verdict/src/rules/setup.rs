//! Facts about the setup — both ends on one host, MTUs that differ, a path MTU below the
//! interface's — and a cgroup's CPU-time limit. A fact binds only where its own evidence shows
//! it bound this test: a CPU both ends' workers used was saturated (one host); a CPU paid the
//! per-packet cost of the smaller frames (TCP). Otherwise it is said, never the headline.

use wirespeed_model::{Bound, Rank, Verdict, VerdictId};

use super::super::context::Context;
use super::super::finding::{Finding, Out, Rule};
use super::super::loss::quota_bound;
use super::super::words::end_of;
use wirespeed_model::observation::{EndObservation, Role, TestObservation};

pub(crate) const PMTU: Rule = Rule {
    name: "path MTU below the interface MTU",
    ids: &[VerdictId::PmtuBelowMtu],
    check: pmtu_below_mtu,
};

pub(crate) const MTU_MISMATCH: Rule = Rule {
    name: "the ends' MTUs differ",
    ids: &[VerdictId::MtuMismatch],
    check: mtu_mismatch,
};

pub(crate) const QUOTA: Rule = Rule {
    name: "a cgroup's CPU-time limit",
    ids: &[VerdictId::CpuQuota],
    check: quota,
};

pub(crate) const SAME_HOST: Rule = Rule {
    name: "both ends on one host",
    ids: &[VerdictId::SameHost],
    check: one_host,
};

/// The busiest saturated CPU the test's workers needed, as a share (0-1): what smaller frames'
/// per-packet work, or two ends on one host's CPUs, can have bound.
fn saturated_share(cx: &Context) -> Option<f64> {
    cx.cands.first().map(|c| c.busy / 100.0)
}

/// A frame-size fact: bound on TCP with a saturated CPU (its per-packet work), else a fact.
fn frame_fact(cx: &Context) -> (Bound, f64) {
    match saturated_share(cx).filter(|_| !cx.m.udp) {
        Some(s) => (Bound::Binding, s),
        None => (Bound::Fact, 0.0),
    }
}

fn pmtu_below_mtu(cx: &Context) -> Vec<Out> {
    let (bound, strength) = frame_fact(cx);
    cx.test
        .ends()
        .filter(|e| e.role.sends())
        .filter_map(|e| {
            let (pmtu, mtu) = (e.total.tcp.and_then(|t| t.pmtu)?, e.iface_mtu?);
            ((pmtu as f64) < mtu as f64 * cx.th.pmtu_fraction).then(|| {
                Out::Finding(
                    Finding::new(
                        VerdictId::PmtuBelowMtu,
                        Some(end_of(e, false)),
                        format!(
                            "path MTU {pmtu} below the interface MTU {mtu}{}: jumbo frames are not passed end to end (a switch or the peer)",
                            e.iface.as_ref().map_or(String::new(), |i| format!(" of {i}"))
                        ),
                        Rank::FrameSize,
                        bound,
                        strength,
                    )
                    .reads(&["the sender's TCP_INFO tcpi_pmtu", "the interface MTU"]),
                )
            })
        })
        .collect()
}

/// `mtu-mismatch`: both ends observed, their interface MTUs differ by more than
/// `pmtu_fraction` (the 10 % left for tunnel and VLAN overhead). TCP: each end advertises an MSS
/// from its own MTU and TCP sends the smaller, so the larger end's jumbo frames are never used
/// and it pays the per-packet cost of the smaller frames. UDP has no MSS: datagrams larger than
/// the smaller MTU are fragmented, which is all the difference says. Names the end with the
/// smaller MTU.
fn mtu_mismatch(cx: &Context) -> Vec<Out> {
    let test = cx.test;
    let Some(r) = test.remote.as_ref() else {
        return Vec::new();
    };
    let (Some(lm), Some(rm)) = (test.local.iface_mtu, r.iface_mtu) else {
        return Vec::new();
    };
    let (small, big) = if lm <= rm {
        (&test.local, r)
    } else {
        (r, &test.local)
    };
    let (s_mtu, b_mtu) = (lm.min(rm), lm.max(rm));
    if f64::from(s_mtu) >= f64::from(b_mtu) * cx.th.pmtu_fraction {
        return Vec::new();
    }
    let dev = |e: &EndObservation| {
        e.iface
            .as_ref()
            .map_or(String::new(), |i| format!(" ({i})"))
    };
    let (sw, bw) = (
        end_of(small, small.role.receives()),
        end_of(big, big.role.receives()),
    );
    let line = if cx.m.udp {
        format!(
            "MTU mismatch: the {bw}'s interface MTU is {b_mtu}{}, the {sw}'s {s_mtu}{}: UDP datagrams over {} bytes are fragmented on the way (a lost fragment loses the datagram) — keep -l at or below it, or set the {sw}'s MTU to {b_mtu} with every link between",
            dev(big),
            dev(small),
            s_mtu.saturating_sub(28)
        )
    } else {
        format!(
            "MTU mismatch: the {bw}'s interface MTU is {b_mtu}{}, the {sw}'s {s_mtu}{}: TCP uses the smaller end's MSS, so the {bw}'s jumbo frames are never used and both ends pay the per-packet cost of {s_mtu}-byte frames — set the {sw}'s MTU to {b_mtu} (`ip link set DEV mtu {b_mtu}`, with every link between), or the {bw}'s to {s_mtu}",
            dev(big),
            dev(small)
        )
    };
    let (bound, strength) = frame_fact(cx);
    vec![Out::Finding(
        Finding::new(
            VerdictId::MtuMismatch,
            Some(sw),
            line,
            Rank::FrameSize,
            bound,
            strength,
        )
        .reads(&["each end's interface MTU", "/proc/stat per-CPU time"]),
    )]
}

/// `cpu-quota`: each end (or both, one host and one cgroup) whose cgroup ran out of its
/// CPU-time limit, with the limit and how often it bound; as strong as the share of periods
/// throttled.
fn quota(cx: &Context) -> Vec<Out> {
    let test = cx.test;
    let bound = quota_bound(test, cx.th);
    let one_cgroup = bound.len() == 2
        && same_host(test).is_some()
        && bound[0].1.cgroup == bound[1].1.cgroup
        && bound[0].1.quota_us == bound[1].1.quota_us
        && bound[0].1.period_us == bound[1].1.period_us;
    let take = if one_cgroup { 1 } else { bound.len() };
    bound
        .iter()
        .take(take)
        .map(|(e, q)| {
            let whose = if one_cgroup {
                "both ends' cgroup".to_string()
            } else {
                format!("the {}'s cgroup", end_of(e, e.role.receives()))
            };
            let cpus = q.cpus().unwrap_or(0.0);
            Out::Finding(
                Finding::new(
                    VerdictId::CpuQuota,
                    (!one_cgroup).then(|| end_of(e, e.role.receives())),
                    format!(
                        "CPU quota: {whose} {} may use {} ({} µs of every {} µs) and ran out of it in {} of {} periods ({} held back): the test ran out of CPU time, not of CPUs, which look idle while its threads wait for the next period — raise the cgroup's limit (cpu.max; cpu.cfs_quota_us on cgroup v1) or run outside it",
                        wirespeed_model::text::terminal_short(&q.cgroup, 120),
                        wirespeed_model::units::cpus(cpus),
                        q.quota_us,
                        q.period_us,
                        q.throttled_periods.unwrap_or(0).min(q.periods.unwrap_or(0)),
                        q.periods.unwrap_or(0),
                        q.throttled_s
                            .filter(|s| s.is_finite() && *s >= 0.0)
                            .map_or("time".to_string(), |s| format!("{s:.2} s")),
                    ),
                    Rank::CpuQuota,
                    Bound::Binding,
                    q.throttled_share().map_or(0.0, |s| s.get() / 100.0),
                )
                .reads(&[
                    "the cgroup's CPU limit (cpu.max, or cpu.cfs_quota_us and cpu.cfs_period_us) and those above it",
                    "that cgroup's cpu.stat (nr_periods, nr_throttled, throttled time)",
                ]),
            )
        })
        .collect()
}

/// `same-host`: bound where the ends compete and a CPU both ends' workers ran on was
/// saturated (they took it from each other), as strong as that CPU's busy share; otherwise a
/// fact: two ends on one host over a shaper measure the shaper.
fn one_host(cx: &Context) -> Vec<Out> {
    let Some(place) = &cx.same_host else {
        return Vec::new();
    };
    let test = cx.test;
    let shared = match &test.remote {
        Some(r) => test
            .local
            .total
            .app_cpus()
            .intersection(&r.total.app_cpus()),
        None => wirespeed_host::CpuSet::new(),
    };
    let busiest_shared = cx
        .cands
        .iter()
        .filter(|c| shared.contains(c.cpu))
        .map(|c| c.busy / 100.0)
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let (bound, strength) = match busiest_shared.filter(|_| cx.compete) {
        Some(s) => (Bound::Binding, s),
        None => (Bound::Fact, 0.0),
    };
    vec![Out::Finding(
        Finding::new(
            VerdictId::SameHost,
            None,
            same_host_verdict(test, place, cx.compete).line,
            Rank::SharedCpus,
            bound,
            strength,
        )
        .reads(&[
            "each end's host name, topology and interface",
            "the workers' CPUs",
            "/proc/stat per-CPU time",
        ]),
    )]
}

/// Both ends on one host: `Some(where)` (the model's rule, [`TestObservation::same_host`]).
pub(crate) fn same_host(test: &TestObservation) -> Option<String> {
    test.same_host()
}

/// The ends' workers compete for CPUs: a worker unpinned, the ends' CPUs shared, or the peer's
/// CPUs unknown.
pub(crate) fn ends_compete(test: &TestObservation) -> bool {
    let Some(r) = &test.remote else {
        return true;
    };
    let unpinned = test
        .ends()
        .any(|e| e.total.workers.iter().any(|w| w.cpu_requested.is_none()));
    unpinned || test.local.total.app_cpus().intersects(&r.total.app_cpus())
}

pub(crate) fn same_host_verdict(test: &TestObservation, place: &str, compete: bool) -> Verdict {
    let cpus = |(i, e): (usize, &EndObservation)| {
        let set = e.total.app_cpus();
        let pinned = e.total.workers.iter().all(|w| w.cpu_requested.is_some());
        // With --bidir both ends send and receive: say which end is which instead.
        let who = match (e.role, i) {
            (Role::Both, 0) => "this end (sending and receiving)",
            (Role::Both, _) => "the peer (sending and receiving)",
            _ => end_of(e, e.role.receives()).word(),
        };
        format!(
            "{who} on CPU{} {}{}",
            if set.len() == 1 { "" } else { "s" },
            set,
            if pinned { "" } else { ", unpinned" }
        )
    };
    let ends: Vec<String> = test.ends().enumerate().map(cpus).collect();
    let line = if compete {
        format!(
            "both ends on one host ({place}): they compete for the same CPUs ({}); this measures the host, not a path",
            ends.join("; ")
        )
    } else {
        format!(
            "both ends on one host ({place}, {}): the figure is this host's CPUs and memory, not a network path",
            ends.join("; ")
        )
    };
    Verdict::new(VerdictId::SameHost, None, line)
}
