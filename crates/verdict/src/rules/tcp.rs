//! The kernel's own account of what held a TCP sender: the receiver's window (its busy-time
//! share, or the window the data in flight filled) and the send buffer.

use wirespeed_model::observation::{IntervalObservation, TcpLimits};
use wirespeed_model::{Bound, Confidence, Rank, VerdictId};

use super::super::context::Context;
use super::super::evidence;
use super::super::finding::{Finding, Near, Out, Rule};
use super::super::window::window_fill;
use super::super::words::end_of;

pub(crate) const WINDOW: Rule = Rule {
    name: "the receiver's window",
    ids: &[VerdictId::WindowLimited],
    check: window,
};

pub(crate) const SNDBUF: Rule = Rule {
    name: "the send buffer",
    ids: &[VerdictId::SndbufLimited],
    check: sndbuf,
};

/// Of the intervals with `TCP_INFO`, those where `f`'s share of busy time reached the
/// threshold (none when no interval carries `TCP_INFO`).
fn tcp_intervals(cx: &Context, f: fn(&TcpLimits) -> u64) -> Option<wirespeed_model::Agreement> {
    let th = cx.th.tcp_limited;
    let any = cx
        .test
        .ends()
        .any(|e| e.intervals.iter().any(|i| i.tcp.is_some()));
    let held = move |i: &IntervalObservation| {
        i.tcp
            .is_some_and(|t| t.busy_us > 0 && f(&t) as f64 * 100.0 >= t.busy_us as f64 * th)
    };
    evidence::per_interval(cx.test, None, &held).filter(|_| any)
}

/// A limit near its threshold (`share` within the marginal points above it) or whose intervals
/// did not agree; beside a contended worker such a limit is only consistent (a worker kept off
/// its CPU fills the window or leaves the buffer full: the consequence, not the cause).
fn judged(cx: &Context, f: Finding, share: f64) -> Finding {
    let near = if share < cx.th.tcp_limited + cx.th.marginal_points {
        Some(Near::Share(share))
    } else if f.confidence() == Confidence::Marginal {
        Some(Near::Disagreed)
    } else {
        None
    };
    let mut f = f;
    f.near = near;
    if near.is_some() && !cx.contention.is_empty() {
        f.bound = Bound::Consistent;
    }
    f
}

fn window(cx: &Context) -> Vec<Out> {
    let th = cx.th;
    let mut out = Vec::new();
    for e in cx.test.ends().filter(|e| e.role.sends()) {
        let Some(t) = e.total.tcp else { continue };
        let fill = window_fill(&t, cx.m.throughput).filter(|f| f.share().get() >= th.window_full);
        let share = t.rwnd_share().get();
        if share < th.tcp_limited && fill.is_none() {
            continue;
        }
        let full = fill.map_or(String::new(), |f| format!(" ran full: {f}, and",));
        let strength = fill.map_or(share / 100.0, |f| f.share().get().min(100.0) / 100.0);
        // a window found full is a whole-test reading: the intervals' share would only
        // disagree with it
        let intervals = (share >= th.tcp_limited)
            .then(|| tcp_intervals(cx, |t| t.rwnd_limited_us))
            .flatten();
        let f = Finding::new(
            VerdictId::WindowLimited,
            Some(end_of(e, false)),
            format!(
                "window-limited: the receiver's window{full} held the sender back {} of its busy time (raise tcp_rmem's maximum, or -w)",
                t.rwnd_share()
            ),
            Rank::TcpWindow,
            Bound::Binding,
            strength,
        )
        .reads(&[
            "the sender's TCP_INFO tcpi_rwnd_limited and tcpi_busy_time",
            "the sender's TCP_INFO tcpi_snd_wnd (the window advertised) and tcpi_rtt",
            "receiver throughput",
        ])
        .agreed(intervals);
        out.push(Out::Finding(judged(cx, f, share)));
    }
    out
}

fn sndbuf(cx: &Context) -> Vec<Out> {
    let th = cx.th;
    let mut out = Vec::new();
    for e in cx.test.ends().filter(|e| e.role.sends()) {
        let Some(t) = e.total.tcp else { continue };
        let share = t.sndbuf_share().get();
        if share < th.tcp_limited {
            continue;
        }
        let f = Finding::new(
            VerdictId::SndbufLimited,
            Some(end_of(e, false)),
            format!(
                "send-buffer-limited {} of the sender's busy time (raise tcp_wmem's maximum, or -w)",
                t.sndbuf_share()
            ),
            Rank::TcpWindow,
            Bound::Binding,
            share / 100.0,
        )
        .reads(&["the sender's TCP_INFO tcpi_sndbuf_limited and tcpi_busy_time"])
        .agreed(tcp_intervals(cx, |t| t.sndbuf_limited_us));
        out.push(Out::Finding(judged(cx, f, share)));
    }
    out
}
