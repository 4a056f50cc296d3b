//! Rates the test reached that nothing could have beaten: the link's own, or the one it asked
//! for.

use wirespeed_model::{Bound, Rank, VerdictId};

use super::super::context::Context;
use super::super::evidence;
use super::super::finding::{Finding, Out, Rule};
use wirespeed_model::observation::BitsPerSecond;

pub(crate) const LINE_RATE: Rule = Rule {
    name: "at line rate",
    ids: &[VerdictId::LineRate],
    check: line_rate,
};

pub(crate) const AT_TARGET: Rule = Rule {
    name: "at the rate asked for",
    ids: &[VerdictId::AtTargetRate],
    check: at_target,
};

/// `line-rate`: throughput ≥ `line_rate` % of the slowest real link; as strong as the share of
/// the link it reached.
fn line_rate(cx: &Context) -> Vec<Out> {
    let (Some(bps), Some((mbps, iface))) = (cx.m.throughput, cx.link()) else {
        return Vec::new();
    };
    let link_bps = mbps as f64 * 1e6;
    if bps.0 < link_bps * cx.th.line_rate / 100.0 {
        return Vec::new();
    }
    let at = cx.th.line_rate;
    vec![Out::Finding(
        Finding::new(
            VerdictId::LineRate,
            None,
            format!(
                "at line rate: {bps} of a {} link{}",
                BitsPerSecond(link_bps),
                iface.map_or(String::new(), |i| format!(" ({i})"))
            ),
            Rank::AtLineRate,
            Bound::Binding,
            bps.0 / link_bps,
        )
        .reads(&["receiver throughput", "the interface's link speed"])
        .agreed(evidence::rates(&cx.m, &|x| x * 100.0 >= link_bps * at)),
    )]
}

/// `at-target-rate`: the test asked for a rate (`-b`, times the streams) and the receiver got
/// ≥ `at_target` % of it: its own pacing set the figure.
fn at_target(cx: &Context) -> Vec<Out> {
    let (Some(target), Some(bps)) = (cx.m.target_bps, cx.m.throughput) else {
        return Vec::new();
    };
    if !cx.at_target() {
        return Vec::new();
    }
    let at = cx.th.at_target;
    vec![Out::Finding(
        Finding::new(
            VerdictId::AtTargetRate,
            None,
            format!(
                "at the requested rate: {bps} of the {} asked for (-b): the test's own pacing set the figure, not the host or the path — raise -b (0 = unlimited) to find the limit",
                BitsPerSecond(target)
            ),
            Rank::OwnPacing,
            Bound::Binding,
            bps.0 / target,
        )
        .reads(&["receiver throughput", "the test's -b target"])
        .agreed(evidence::rates(&cx.m, &|x| x * 100.0 >= target * at)),
    )]
}
