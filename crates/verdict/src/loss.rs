//! The loss account (what the receiving host explains of the retransmits, and the path's
//! rest), whether a shaper held the rate, the loss models (Mathis; Padhye with the connection's
//! retransmission timeouts) and the `Path model:` ceiling.

use wirespeed_model::observation::CpuQuota;
use wirespeed_model::verdict::Measured;
use wirespeed_model::{Bound, Rank, VerdictId};

use super::context::Context;
use super::cpu::worker_needed;
use super::finding::Finding;
use super::load::{contended, EndLoads};
use super::{Directions, Thresholds};
use wirespeed_model::observation::{BitsPerSecond, EndObservation, Percent, TestObservation};

/// What the receiving host did to the test's segments itself, against the sender's
/// retransmits: the segments the receiver reported as duplicates (`tcpi_dsack_dups`: the
/// retransmit was spurious) and the receive path's own drops (its CPUs' backlogs, TCP's
/// receive queue). The rest of the retransmits are the path's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct LossAccount {
    pub(super) retransmits: u64,
    pub(super) spurious: u64,
    pub(super) host_drops: u64,
}

impl LossAccount {
    pub(super) fn of(test: &TestObservation, m: &Measured) -> LossAccount {
        let spurious = test
            .ends()
            .filter(|e| e.role.sends())
            .filter_map(|e| e.total.tcp)
            .map(|t| t.dsack_dups)
            .sum();
        let host_drops = test
            .receiver()
            .and_then(|e| e.total.rx_drops.as_ref())
            .map_or(0, |d| d.total());
        LossAccount {
            retransmits: m.retransmits.unwrap_or(0),
            spurious,
            host_drops,
        }
    }

    /// The retransmits the receiving host explains (spurious, or its own drops).
    pub(super) fn host_explained(&self) -> u64 {
        self.spurious
            .saturating_add(self.host_drops)
            .min(self.retransmits)
    }

    /// The retransmits left for the path.
    pub(super) fn path(&self) -> u64 {
        self.retransmits - self.host_explained()
    }

    /// The receiving host explains `share` % or more of the retransmits: they are not the
    /// path's loss.
    pub(super) fn host_made(&self, share: f64) -> bool {
        self.retransmits > 0
            && self.host_explained() as f64 * 100.0 >= self.retransmits as f64 * share
    }

    /// `; 18446 of the 18916 retransmits were spurious (...), the receiver's host dropped 12 ...`
    pub(super) fn words(&self) -> String {
        if self.retransmits == 0 || self.host_explained() == 0 {
            return String::new();
        }
        let mut parts = Vec::new();
        if self.spurious > 0 {
            parts.push(format!(
                "{} of the {} retransmits were spurious (the receiver had the segments: D-SACK)",
                self.spurious.min(self.retransmits),
                self.retransmits
            ));
        }
        if self.host_drops > 0 {
            parts.push(format!(
                "the receiving host dropped {} segments itself (its backlog or TCP receive queue)",
                self.host_drops
            ));
        }
        format!("; {}: not the path's loss", parts.join(", "))
    }
}

/// The intervals' throughput after the first (slow start): mean and coefficient of variation
/// (%), with at least two intervals.
pub(super) fn flatness(m: &Measured) -> Option<(f64, f64, usize)> {
    let v: Vec<f64> = m.interval_bps.iter().skip(1).copied().collect();
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    Some((mean, sd * 100.0 / mean, v.len()))
}

/// The ends whose cgroup's CPU-time limit held them back over the test (see
/// [`Thresholds::quota_throttled`]), the most throttled first.
pub(super) fn quota_bound<'a>(
    test: &'a TestObservation,
    th: &Thresholds,
) -> Vec<(&'a EndObservation, &'a CpuQuota)> {
    let mut v: Vec<_> = test
        .ends()
        .filter_map(|e| Some((e, e.cpu_quota.as_ref()?)))
        .filter(|(_, q)| {
            q.cpus().is_some()
                && q.periods.is_some_and(|p| p >= th.quota_periods)
                && q.throttled_periods.is_some_and(|t| t >= th.quota_periods)
                && q.throttled_share()
                    .is_some_and(|s| s.get() >= th.quota_throttled)
        })
        .collect();
    v.sort_by(|a, b| {
        let share = |q: &CpuQuota| q.throttled_share().map_or(0.0, Percent::get);
        share(b.1).total_cmp(&share(a.1))
    });
    v
}

/// The test's loss as the path made it, and whether a shaper held the rate (see the verdict's
/// step 2e): one reading for the verdict and the `Path model:` line.
pub(super) struct PathLoss {
    pub(super) loss: LossAccount,
    /// The receiving host explains most retransmits.
    pub(super) host_loss: bool,
    /// `m` with the path's retransmits only.
    pub(super) pm: Measured,
    pub(super) contention: Vec<Finding>,
    pub(super) shaped: bool,
    /// What the senders' RTT says of a queue on the path ([`queue_seen`]).
    pub(super) queue: Option<QueueSeen>,
}

/// `saturated`: some CPU the test's workers needed was saturated (a CPU-verdict candidate);
/// `dirs`: of which test the direction judged is ([`super::directions`]).
pub(super) fn path_loss(
    test: &TestObservation,
    m: &Measured,
    th: &Thresholds,
    loads: &EndLoads,
    saturated: bool,
    dirs: Directions,
) -> PathLoss {
    let mixed = dirs.mixed;
    let queue = queue_seen(test, m, th, dirs);
    // a shaper's tail drops are rare (about one per congestion cycle: 0.005-0.2 % in the lab);
    // a loss rate as high as a lossy path's is that path's loss, not a shaper's
    // Retransmits the receiving host explains (spurious ones, its own drops) are not the
    // path's: the path's loss is the rest, and none when the host explains most of them.
    let loss = LossAccount::of(test, m);
    let host_loss = loss.host_made(th.host_loss);
    let pm = Measured {
        retransmits: m
            .retransmits
            .map(|_| if host_loss { 0 } else { loss.path() }),
        ..m.clone()
    };
    // a worker held off its CPU acknowledges late: the RTT then grows at the host, not in a
    // queue on the path, so RTT growth is no shaper's evidence beside a contended worker
    let contention = contended(test, loads, th, &loss);
    // nor beside a CPU the test's workers needed and found full: a saturated receiver's
    // backlog (and on one host, softirq waiting for a CPU) grows the RTT at the host too —
    // a 16-CPU loopback run at -P 32, every CPU busy, read 0.24 -> 1.26 ms at a flat rate
    let queued = queue.is_some() && contention.is_empty() && !saturated;
    // A shaper holds the rate below what the ends can move, so their workers block on it (a
    // full send buffer, an empty receive queue): where a worker of either end needed its CPU
    // nearly all the test, or another task held one off its CPU, the host held the rate, and
    // a drop at that flat rate is no shaper's evidence. A veth pair with a busy loop on the
    // receiver's CPU read `path-limited` on one retransmit in 4 s (15.5 Gbit/s, the sender's
    // worker running 97 % of the test) and on two (37.3 Gbit/s, the receiver's worker waiting
    // 13 % of it for its CPU). Only the judged direction's workers count (in `--bidir` each
    // end runs a worker per direction): the other direction's busy or held worker says nothing
    // of this direction's path; where the observation does not tell them apart (`mixed`) a
    // drop counts as it did.
    let held = !contention.is_empty() || test.ends().any(|e| worker_needed(e, th.saturated));
    let dropped = pm.retransmits.is_some_and(|r| r > 0) && (mixed || !held);
    // No exception for BBR, whose probing above a tbf's rate can drop more than
    // `shaped_loss`: where no CPU, contention or window limit is found, such a flat rate is
    // named `path-limited` by step 6 anyway; where one is, the queue's RTT growth is no
    // evidence (a CPU-bound receiver's backlog or a contended worker grows the RTT too), and
    // BBR under random loss runs flat at the CPUs' speed: the two cannot be told apart there.
    // A cgroup's CPU-time limit holds a rate as flat as a shaper does, at the host.
    let shaped = (dropped || queued)
        && pm.tcp_loss().is_none_or(|p| p * 100.0 < th.shaped_loss)
        && flatness(m).is_some_and(|(_, cv, _)| cv <= th.shaped_cv)
        && quota_bound(test, th).is_empty();
    PathLoss {
        loss,
        host_loss,
        pm,
        contention,
        shaped,
        queue,
    }
}

/// A queue on the path, as the senders' RTT shows it (µs): what the shaped check reads, under
/// its guards, and what the `path-limited` line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueueSeen {
    /// It filled during the test: the largest smoothed RTT against the smallest.
    Grew { from: u64, to: u64 },
    /// It stood over the whole test: the smallest smoothed RTT against the path's own
    /// (`tcpi_min_rtt`).
    Stood { least: u64, path: u64 },
}

/// The queue the senders' RTT shows, by one measure — `queue_rtt` × and `queue_rtt_us` above
/// (a shaper's queue holds milliseconds; tens of microseconds doubling on a veth is noise):
/// - it grew: the largest smoothed RTT that far above the smallest;
/// - else it stood: the smallest smoothed RTT that far above the smallest RTT the kernel
///   measured over the connection (`tcpi_min_rtt`, the handshake's sample included: the path
///   with no queue on it). A shaper's queue that filled in slow start, before the first
///   interval's sample, shows no growth — a 200 Mbit/s `tbf` with a 50 ms queue on a veth pair
///   held every interval's RTT at 3.4–5.4 ms over a path of 7–22 µs. Not for one direction of
///   a `--bidir` test (`dirs`): its ACKs wait in the queue the other direction's data fill, so
///   a queue standing in its RTT from the start may be the other's — a `tbf` on the client's
///   egress alone held server → client's RTT at 4 ms, its own data unshaped at 3.9 Gbit/s.
pub(super) fn queue_seen(
    test: &TestObservation,
    m: &Measured,
    th: &Thresholds,
    dirs: Directions,
) -> Option<QueueSeen> {
    let (least, _, most) = m.rtt_us.filter(|r| r.0 > 0)?;
    let above = |hi: u64, lo: u64| {
        hi as f64 >= lo as f64 * th.queue_rtt && hi.saturating_sub(lo) >= th.queue_rtt_us
    };
    if above(most, least) {
        return Some(QueueSeen::Grew {
            from: least,
            to: most,
        });
    }
    if dirs.two_way {
        return None;
    }
    let path = test
        .ends()
        .filter_map(|e| e.total.tcp?.min_rtt_us)
        .filter(|r| *r > 0)
        .min()
        .map(u64::from)?;
    above(least, path).then_some(QueueSeen::Stood { least, path })
}

/// What the loss model says about a TCP test (see [`loss_judgement`]).
#[derive(Debug, Clone)]
pub(super) enum LossJudgement {
    /// No retransmits, or no RTT, MSS or throughput, or a shaper named already, or loopback:
    /// nothing to say about loss.
    NotApplicable,
    /// The Mathis ceiling (or, with the connection's retransmission timeouts, Padhye's) is
    /// within `mathis_factor` of the measurement, either way: the `loss-limited` finding.
    Binds(Box<Finding>),
    /// Loss was seen but did not set the rate: the `also` line saying why.
    DidNotBind(String),
    /// The measurement sat far below every loss model with no timeouts to explain it: the line
    /// so far, which the decision completes with what held the rate lower.
    BelowModel(String),
}

/// The loss-based sending algorithms the Mathis model describes are every Linux one but BBR,
/// which paces at its estimate of the bottleneck and does not halve its window on a loss.
pub(super) fn loss_based(congestion: Option<&str>) -> bool {
    !congestion.is_some_and(|c| c.to_ascii_lowercase().starts_with("bbr"))
}

/// The one rule for the loss model, used by the verdict and by [`ceiling_for`] (the
/// `Path model:` line): `pm` is `m` with the path's retransmits only (those the receiving host
/// explains taken out). Loss binds when the measurement is within `th.mathis_factor` of the
/// Mathis ceiling, either way; otherwise the line says why it did not: BBR, retransmits the
/// receiving host made (spurious, its own drops), a measurement far above the ceiling (at
/// an RTT under 1 ms recovery is quicker than the model's cycle, so the window is not what loss
/// leaves it) or far below it (something else held the rate lower).
pub(super) fn loss_judgement(cx: &Context) -> LossJudgement {
    let (test, m, th) = (cx.test, &*cx.m, cx.th);
    let (Some(p_all), Some((min_us, _, _)), Some(mss), Some(bps)) =
        (m.tcp_loss(), m.rtt_us, m.mss, m.throughput)
    else {
        return LossJudgement::NotApplicable;
    };
    let rtt_ms = min_us as f64 / 1000.0;
    // loopback has no path: its retransmits are the host's, and the model's ceiling there
    // (hundreds of Gbit/s at microseconds of RTT) describes nothing
    let loopback = test.ends().any(|e| e.iface.as_deref() == Some("lo"));
    if rtt_ms <= 0.0 || cx.shaped || loopback || bps.0 <= 0.0 {
        return LossJudgement::NotApplicable;
    }
    let seen = format!(
        "loss seen but did not bind: {} retransmitted ({} segments) at {rtt_ms:.2} ms RTT",
        Percent::new(p_all * 100.0),
        m.retransmits.unwrap_or(0)
    );
    if !loss_based(m.congestion.as_deref()) {
        return LossJudgement::DidNotBind(format!(
            "{seen}; the sender ran {}, which paces at its estimate of the bottleneck and does not halve its window on a loss: the Mathis ceiling of loss-based TCP does not apply",
            m.congestion.as_deref().unwrap_or("bbr")
        ));
    }
    if cx.host_loss {
        let why = cx.loss.words();
        return LossJudgement::DidNotBind(format!(
            "{seen}{}",
            if why.is_empty() {
                "; the receiving host explains them: not the path's loss".to_string()
            } else {
                why
            }
        ));
    }
    let Some(p) = cx.pm.tcp_loss() else {
        return LossJudgement::NotApplicable;
    };
    let ceiling = wirespeed_doctor::path_model::mathis_bps(mss, rtt_ms, p);
    let ratio = bps.0 / ceiling;
    let within = |r: f64| r <= th.mathis_factor && r >= 1.0 / th.mathis_factor;
    if within(ratio) {
        return LossJudgement::Binds(Box::new(
            Finding::new(
                VerdictId::LossLimited,
                None,
                format!(
                    "loss-limited: {} retransmitted ({} segments) at {rtt_ms:.2} ms RTT allows about {} to loss-based congestion control (Mathis: MSS/RTT x 1.22/sqrt(p), MSS {mss}); {bps} measured, {ratio:.1}x the ceiling (within {}x counts as binding) — find the loss, or try a loss-tolerant algorithm (BBR, HTCP)",
                    Percent::new(p * 100.0),
                    cx.pm.retransmits.unwrap_or(0),
                    BitsPerSecond(ceiling),
                    th.mathis_factor
                ),
                Rank::Loss,
                Bound::Binding,
                1.0 - ratio.ln().abs() / th.mathis_factor.ln(),
            )
            .reads(LOSS_COUNTERS),
        ));
    }
    let model = format!(
        "the Mathis ceiling is {} (MSS {mss}), {bps} measured",
        BitsPerSecond(ceiling)
    );
    if ratio > th.mathis_factor {
        let why = if rtt_ms < 1.0 {
            "at an RTT under 1 ms the sender recovers each loss within a millisecond (SACK, fast recovery) and its window is set by buffers and CPUs, not by the losses: the model does not describe this flow"
        } else {
            "the losses did not cut the window as the model assumes (they came in bursts, or were recovered within a round trip)"
        };
        return LossJudgement::DidNotBind(format!(
            "{seen}; {model}, {ratio:.1}x above it (over {}x): {why}",
            th.mathis_factor
        ));
    }
    below_mathis(
        cx,
        &Below {
            seen: &seen,
            model: &model,
            ratio,
            mss,
            rtt_ms,
            p,
            bps,
        },
    )
}

/// What [`below_mathis`] judges: a measurement far below the Mathis ceiling.
struct Below<'a> {
    seen: &'a str,
    model: &'a str,
    /// The measurement over the Mathis ceiling.
    ratio: f64,
    mss: u32,
    rtt_ms: f64,
    p: f64,
    bps: BitsPerSecond,
}

/// Far below Mathis: Padhye's timeout term with the connection's own timeouts, or what the
/// decision completes.
fn below_mathis(cx: &Context, b: &Below) -> LossJudgement {
    let (test, th) = (cx.test, cx.th);
    let Below {
        seen,
        model,
        ratio,
        mss,
        rtt_ms,
        p,
        bps,
    } = *b;
    let within = |r: f64| r <= th.mathis_factor && r >= 1.0 / th.mathis_factor;
    // Far below Mathis, whose cycle has no timeouts. At short RTTs one retransmission timeout
    // (200 ms at least) costs more than thousands of fast recoveries, and a loss of a whole
    // burst (a forwarded GSO aggregate is dropped whole) ends in one: Padhye's model has the
    // timeout term, and the connection's own counters (tcpi_total_rto) say whether they came.
    let below = format!(
        "{seen}; {model}, {:.1}x below it (over {}x)",
        1.0 / ratio,
        th.mathis_factor
    );
    let rto = rto_counters(test);
    match rto {
        Some((n, ms)) if n > 0 => {
            let t0_s = (ms as f64 / n as f64 / 1000.0).max(RTO_MIN_S);
            let padhye = padhye_bps(mss, rtt_ms, p, t0_s);
            let r = bps.0 / padhye;
            if within(r) {
                let line = format!(
                    "loss-limited by retransmission timeouts: {} retransmitted ({} segments) at {rtt_ms:.2} ms RTT with {n} timeouts ({ms} ms recovering from them, tcpi_total_rto) allows about {} (Padhye: the Mathis cycle plus a timeout of {:.0} ms per loss window, MSS {mss}); {bps} measured, {r:.1}x that ceiling, {:.1}x below Mathis's, which has no timeouts — find the loss (whole bursts lost end in a timeout: a policer, a forwarded GSO aggregate dropped whole), or shorten the minimum RTO (ip route ... rto_min)",
                    Percent::new(p * 100.0),
                    cx.pm.retransmits.unwrap_or(0),
                    BitsPerSecond(padhye),
                    t0_s * 1000.0,
                    1.0 / ratio
                );
                return padhye_binds(line, Bound::Binding, r, th, LOSS_RTO_COUNTERS);
            }
            LossJudgement::BelowModel(format!(
                "{below}; {n} retransmission timeouts came ({ms} ms recovering), and Padhye's timeout-aware ceiling with them is {} ({r:.1}x): the losses allowed more",
                BitsPerSecond(padhye)
            ))
        }
        Some(_) => LossJudgement::BelowModel(format!(
            "{below}; no retransmission timeouts came (tcpi_total_rto 0), so no timeout explains the gap: the losses allowed more"
        )),
        None => {
            let padhye = padhye_bps(mss, rtt_ms, p, RTO_MIN_S);
            let r = bps.0 / padhye;
            if within(r) {
                // the kernel does not count timeouts: consistent with the model, not shown
                let line = format!(
                    "loss-limited if the losses ended in timeouts: {} retransmitted ({} segments) at {rtt_ms:.2} ms RTT allows about {} with a 200 ms timeout per loss window (Padhye, MSS {mss}); {bps} measured, {r:.1}x that, {:.1}x below the Mathis ceiling — this kernel does not count the connection's timeouts (tcpi_total_rto, 6.7+), so this is consistent, not shown",
                    Percent::new(p * 100.0),
                    cx.pm.retransmits.unwrap_or(0),
                    BitsPerSecond(padhye),
                    1.0 / ratio
                );
                return padhye_binds(line, Bound::Consistent, r, th, LOSS_COUNTERS);
            }
            LossJudgement::BelowModel(format!(
                "{below}, and {:.1}x below Padhye's with a 200 ms timeout per loss window: the losses allowed more",
                1.0 / r
            ))
        }
    }
}

/// `loss-limited` by Padhye's model, `r` the measurement over its ceiling: as strong as it
/// sits near 1 within the model's factor.
fn padhye_binds(
    line: String,
    bound: Bound,
    r: f64,
    th: &Thresholds,
    counters: &'static [&'static str],
) -> LossJudgement {
    LossJudgement::Binds(Box::new(
        Finding::new(
            VerdictId::LossLimited,
            None,
            line,
            Rank::Loss,
            bound,
            1.0 - r.ln().abs() / th.mathis_factor.ln(),
        )
        .reads(counters),
    ))
}

/// The kernel's minimum retransmission timeout (`TCP_RTO_MIN`), s.
const RTO_MIN_S: f64 = 0.2;

pub(super) const LOSS_COUNTERS: &[&str] = &[
    "TCP retransmits and segments sent, less D-SACKs and receive drops",
    "the smallest RTT",
    "the MSS",
];

const LOSS_RTO_COUNTERS: &[&str] = &[
    "TCP retransmits and segments sent, less D-SACKs and receive drops",
    "the smallest RTT",
    "the MSS",
    "the senders' TCP_INFO tcpi_total_rto and tcpi_total_rto_time",
];

/// The sending ends' retransmission timeouts and the time spent recovering from them (ms),
/// where their kernel counts them.
fn rto_counters(test: &TestObservation) -> Option<(u64, u64)> {
    let t: Vec<_> = test
        .ends()
        .filter(|e| e.role.sends())
        .filter_map(|e| e.total.tcp)
        .collect();
    let n = t.iter().map(|t| t.rto_timeouts).sum::<Option<u64>>()?;
    let ms = t.iter().filter_map(|t| t.rto_time_ms).sum();
    (!t.is_empty()).then_some((n, ms))
}

/// Padhye, Firoiu, Towsley and Kurose's steady-state throughput of loss-based TCP, bit/s: the
/// Mathis cycle plus a retransmission timeout of `t0_s` for the share of losses that end in
/// one (b = 1 segment per ACK, the constant Mathis's 1.22 assumes).
pub(super) fn padhye_bps(mss: u32, rtt_ms: f64, p: f64, t0_s: f64) -> f64 {
    let rtt = rtt_ms / 1000.0;
    let b = 1.0;
    let denom = rtt * (2.0 * b * p / 3.0).sqrt()
        + t0_s * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    f64::from(mss) * 8.0 / denom
}

/// `m` with the sending end's RTT and MSS from its own `TCP_INFO` in the observation, where
/// this end's report lacks them: a `-R` client receives, and iperf3's results give it the
/// server's retransmits but no RTT (0 in its report) and no MSS, so without this the loss model
/// could not be judged from the client's side at all (a `-R` test with 0.5 % loss named no
/// loss). The RTT is the sender's own report's samples (smallest, mean, largest: the same
/// figures a forward client's report has), else its smoothed RTT at the final tick standing
/// for all three (one sample shows no queue growing: a shaper is then told by its drops alone).
pub(super) fn with_sender_tcp<'a>(
    test: &TestObservation,
    m: &'a Measured,
) -> std::borrow::Cow<'a, Measured> {
    let rtt_known = m.rtt_us.is_some_and(|(min, _, _)| min > 0);
    if m.udp || (rtt_known && m.mss.is_some()) {
        return std::borrow::Cow::Borrowed(m);
    }
    let Some(t) = test
        .ends()
        .filter(|e| e.role.sends())
        .find_map(|e| e.total.tcp)
    else {
        return std::borrow::Cow::Borrowed(m);
    };
    let mut filled = m.clone();
    if !rtt_known {
        if let Some(r) = t.rtt_us.filter(|r| r.0 > 0) {
            filled.rtt_us = Some(r);
        } else if let Some(srtt) = t.srtt_us {
            let us = u64::from(srtt);
            filled.rtt_us = Some((us, us, us));
        }
    }
    if filled.mss.is_none() {
        filled.mss = t.mss;
    }
    std::borrow::Cow::Owned(filled)
}
