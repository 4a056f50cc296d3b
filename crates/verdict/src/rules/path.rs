//! The path: a rate held flat below the link — with the path's drops or queue (a shaper), or
//! with nothing on the host to explain it — and loss at the loss models' ceiling.

use wirespeed_model::verdict::Measured;
use wirespeed_model::{Also, AlsoKind, Bound, Rank, VerdictId};

use super::super::context::Context;
use super::super::evidence;
use super::super::finding::{Finding, Out, Rule};
use super::super::loss::{loss_judgement, LossJudgement, QueueSeen};
use super::super::{is_virtual, Thresholds};
use wirespeed_model::observation::{BitsPerSecond, TestObservation};

pub(crate) const PATH: Rule = Rule {
    name: "a rate held flat below the link",
    ids: &[VerdictId::PathLimited],
    check: path,
};

pub(crate) const LOSS: Rule = Rule {
    name: "the path's loss against the loss models",
    ids: &[VerdictId::LossLimited],
    check: loss,
};

const PATH_COUNTERS: &[&str] = &[
    "the intervals' throughput",
    "TCP retransmits less D-SACKs (tcpi_dsack_dups) and receive drops",
    "TCP RTT (smallest, largest)",
];

/// `path-limited`, bound where a shaper held the rate (flat while the path dropped or queued);
/// consistent where the rate was only flat below the link and no host limit was found (over
/// one host only when both ends' workers sat mostly idle: busy workers at a flat rate are the
/// CPUs' speed). Not at the rate the test asked for (its own pacing is as flat). As strong as
/// the rate was flat.
fn path(cx: &Context) -> Vec<Out> {
    let (bound, max_cv) = if cx.shaped {
        (Bound::Binding, cx.th.shaped_cv)
    } else if !cx.host_limit() && !cx.at_target() && (!cx.one_host() || cx.idle) {
        (Bound::Consistent, cx.th.flat_cv)
    } else {
        return Vec::new();
    };
    let Some((line, cv)) = path_limited(cx.test, &cx.pm, cx.th, max_cv, cx.queue) else {
        return Vec::new();
    };
    let flat_cv = cx.th.flat_cv;
    let agreed = cx.flat.and_then(|(mean, _, _)| {
        evidence::rates(&cx.m, &|x| (x - mean).abs() * 100.0 <= mean * flat_cv)
    });
    vec![Out::Finding(
        Finding::new(
            VerdictId::PathLimited,
            None,
            line,
            Rank::Shaper,
            bound,
            1.0 - cv / 100.0,
        )
        .reads(PATH_COUNTERS)
        .agreed(agreed),
    )]
}

/// `loss-limited`, or a note that loss was seen and did not bind, with why.
fn loss(cx: &Context) -> Vec<Out> {
    match loss_judgement(cx) {
        LossJudgement::Binds(f) => vec![Out::Finding(*f)],
        LossJudgement::DidNotBind(line) => vec![Out::Note(Also::note(AlsoKind::Loss, line))],
        LossJudgement::BelowModel(line) => vec![Out::LossBelowModel(line)],
        LossJudgement::NotApplicable => Vec::new(),
    }
}

/// The `path-limited` line and the rate's coefficient of variation: the intervals' throughput
/// flat (within `max_cv`) below the link (or the link virtual or unknown), with the evidence
/// seen: RTT growth (queueing), retransmits.
fn path_limited(
    test: &TestObservation,
    m: &Measured,
    th: &Thresholds,
    max_cv: f64,
    queue: Option<QueueSeen>,
) -> Option<(String, f64)> {
    let (mean, cv, n) = super::super::loss::flatness(m)?;
    if cv > max_cv {
        return None;
    }
    let link = test
        .ends()
        .filter(|e| !is_virtual(e))
        .filter_map(|e| e.iface_speed_mbps)
        .min();
    if let Some(mbps) = link {
        if mean >= mbps as f64 * 1e6 * th.below_link / 100.0 {
            return None;
        }
    }
    let mut evidence = vec![format!(
        "{} flat over {n} intervals (±{cv:.1} %)",
        BitsPerSecond(mean)
    )];
    match link {
        Some(mbps) => evidence.push(format!(
            "below the {} link",
            BitsPerSecond(mbps as f64 * 1e6)
        )),
        None => evidence.push("the link's own speed unknown or virtual".into()),
    }
    let ms = |us: u64| us as f64 / 1000.0;
    match queue {
        Some(QueueSeen::Grew { from, to }) => evidence.push(format!(
            "RTT grew from {:.2} to {:.2} ms (a queue filling)",
            ms(from),
            ms(to)
        )),
        Some(QueueSeen::Stood { least, path }) => evidence.push(format!(
            "RTT at least {:.2} ms over a {:.3} ms path (a queue standing)",
            ms(least),
            ms(path)
        )),
        None => {}
    }
    if let Some(r) = m.retransmits.filter(|r| *r > 0) {
        evidence.push(format!("{r} retransmits (drops)"));
    }
    let over_lo = test.ends().any(|e| e.iface.as_deref() == Some("lo"));
    let what = if over_lo {
        "— over lo there is no path: a qdisc on lo (tc qdisc show dev lo) or something pacing the sockets holds the rate"
    } else {
        "— a rate limit on the path (a shaper, a policer, a slower link)"
    };
    Some((
        format!(
            "path-limited: {}, with no CPU, window or buffer limit {what}",
            evidence.join(", ")
        ),
        cv,
    ))
}
