//! UDP loss: where the datagrams were lost — the receiver that could not keep up, or the path.
//! An end that was not observed (an iperf3 receiver) is never taken for an idle one.

use wirespeed_model::{Bound, Rank, VerdictEnd, VerdictId};

use super::super::context::Context;
use super::super::cpu::{cpu_candidates_with, Candidate};
use super::super::evidence;
use super::super::finding::{Finding, Key, Out, Rule};
use super::ending::forged;
use wirespeed_model::observation::Percent;
use wirespeed_model::observation::UdpRx;

pub(crate) const UDP_LOSS: Rule = Rule {
    name: "UDP datagrams lost",
    ids: &[VerdictId::UdpReceiverCpuBound, VerdictId::UdpPathLoss],
    check: udp_loss,
};

const COUNTERS: &[&str] = &[
    "datagrams lost (the receiver's count)",
    "/proc/stat per-CPU time",
    "/proc/net/snmp Udp RcvbufErrors",
];

fn udp_loss(cx: &Context) -> Vec<Out> {
    let (true, None, Some((lost, total))) = (cx.m.udp, forged(cx), cx.m.udp_lost) else {
        return Vec::new();
    };
    let share = if total > 0 {
        lost as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    if share < cx.th.udp_loss {
        return Vec::new();
    }
    let test = cx.test;
    // a UDP receiver's host work (its softirq, its copies) is what could not keep up, whether
    // or not its thread was runnable: every saturated receiver CPU counts
    let mut all = Vec::new();
    for e in test.ends() {
        cpu_candidates_with(e, cx.th, false, &mut all);
    }
    all.sort_by(|a, b| b.busy.total_cmp(&a.busy));
    // a receiver CPU that other tasks took half of or more was not saturated by the receiver:
    // its own drops (the socket buffer, below) say whether it lost the datagrams
    let receiver = test.receiver();
    let rx = all
        .iter()
        .find(|c| c.receiver && receiver.is_none_or(|e| !cx.others_took(e, c.cpu)));
    // the receiver's own socket buffer overflowing (`RcvbufErrors`) for half the loss or
    // more: it did not read in time, saturated CPU or not
    let rcvbuf = test
        .receiver()
        .and_then(|e| e.total.rx_drops.as_ref()?.udp)
        .filter(|u| u.rcvbuf_errors > 0 && u.rcvbuf_share().get() * 2.0 >= share);
    vec![Out::Finding(where_lost(
        cx,
        (lost, total),
        share,
        rx,
        rcvbuf,
    ))]
}

/// The finding of `share` % of the datagrams lost (`lost` of `total`): the receiver's saturated
/// CPU `rx` or its overflowing socket buffer, else the path (or, with the receiver not
/// observed, what could not be told).
fn where_lost(
    cx: &Context,
    (lost, total): (u64, u64),
    share: f64,
    rx: Option<&Candidate>,
    rcvbuf: Option<UdpRx>,
) -> Finding {
    let test = cx.test;
    let observed = test.receiver().is_some();
    let strength = share / 100.0;
    let saturated = cx.th.saturated;
    let f = |id, end, line, bound| {
        Finding::new(id, end, line, Rank::UdpLoss, bound, strength).reads(COUNTERS)
    };
    match (rx, rcvbuf) {
        (None, Some(u)) => f(
            VerdictId::UdpReceiverCpuBound,
            Some(VerdictEnd::Receiver),
            format!(
                "UDP lost {} of the datagrams because the receiver could not keep up: its socket's receive buffer was full for {} of what reached it ({} drops, RcvbufErrors) — the receiving application did not read in time (more receive CPU, a larger buffer, or lower -b)",
                Percent::new(share),
                u.rcvbuf_share(),
                u.rcvbuf_errors
            ),
            Bound::Binding,
        ),
        (Some(c), _) => {
            let mut x = f(
                VerdictId::UdpReceiverCpuBound,
                Some(VerdictEnd::Receiver),
                format!(
                    "UDP lost {} of the datagrams because the receiver could not keep up: {}",
                    Percent::new(share),
                    c.verdict.line
                ),
                Bound::Binding,
            )
            .agreed(evidence::per_interval(test, Some(VerdictEnd::Receiver), &|i| {
                evidence::saturated(i, saturated)
            }))
            .on_cpu(c.cpu);
            x.quotes = Some(Key {
                id: c.verdict.id,
                end: c.verdict.end,
                cpu: Some(c.cpu),
            });
            x
        }
        (None, None) if observed => f(
            VerdictId::UdpPathLoss,
            None,
            format!(
                "UDP lost {} of the datagrams ({lost} of {total}) with no receiver CPU saturated by the test and the receiver's socket buffer not overflowing: the path dropped them (a rate above the path's, a policer, a full queue) — lower -b",
                Percent::new(share)
            ),
            Bound::Binding,
        ),
        (None, None) => f(
            VerdictId::UdpPathLoss,
            None,
            format!(
                "UDP lost {} of the datagrams ({lost} of {total}); the receiver was not observed ({}), so whether its CPU or socket buffer or the path dropped them cannot be told from here — run wirespeed at the receiver to tell, or lower -b",
                Percent::new(share),
                test.remote_absent.as_deref().unwrap_or("the peer sends no observation")
            ),
            Bound::Consistent,
        ),
    }
}
