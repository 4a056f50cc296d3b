//! What ended or invalidated the test before its figures could be judged: datagrams that were
//! not this test's, a control connection that stalled on a large message, a peer that went
//! silent.

use wirespeed_model::verdict::{End, PeerSilent, SilentPhase};
use wirespeed_model::{Bound, Rank, Verdict, VerdictEnd, VerdictId};

use super::super::context::Context;
use super::super::finding::{Finding, Out, Rule};

pub(crate) const FOREIGN: Rule = Rule {
    name: "UDP datagrams that were not this test's",
    ids: &[VerdictId::UdpForeignDatagrams],
    check: foreign,
};

pub(crate) const STALL: Rule = Rule {
    name: "the control connection's large message stalled",
    ids: &[VerdictId::MtuBlackhole],
    check: stall,
};

pub(crate) const SILENT: Rule = Rule {
    name: "the peer went silent",
    ids: &[VerdictId::MtuBlackhole, VerdictId::PeerSilent],
    check: silent,
};

/// Datagrams beyond what the sender sent: iperf3's datagram header carries no
/// authentication, so datagrams forged with the client's address and port (or a stray
/// sender's) count as this test's, and a far-ahead sequence number makes everything below it
/// "lost". The test's own figures are then wrong.
pub(crate) fn forged(cx: &Context) -> Option<(u64, u64)> {
    match (cx.m.udp, cx.m.udp_lost, cx.m.udp_sent) {
        (true, Some((_, expected)), Some(sent)) if expected > sent => Some((expected, sent)),
        _ => None,
    }
}

fn foreign(cx: &Context) -> Vec<Out> {
    forged(cx)
        .map(|(expected, sent)| {
            Out::Finding(
                Finding::new(
                    VerdictId::UdpForeignDatagrams,
                    Some(VerdictEnd::Receiver),
                    format!(
                        "the receiver saw UDP sequence numbers up to {expected}, but the sender sent {sent} datagrams: datagrams that were not this test's sender's reached it (forged with the client's address and port, or a stray sender), so its loss count is not the path's — iperf3's UDP header has no authentication (docs/measure.md)"
                    ),
                    Rank::ForeignDatagrams,
                    Bound::Binding,
                    1.0 - sent as f64 / expected as f64,
                )
                .reads(&[
                    "the receiver's highest UDP sequence number",
                    "the sender's own count of datagrams sent",
                ]),
            )
        })
        .into_iter()
        .collect()
}

fn stall(cx: &Context) -> Vec<Out> {
    cx.m.control_stall
        .as_ref()
        .map(|st| {
            Out::Finding(
                Finding::new(
                    VerdictId::MtuBlackhole,
                    None,
                    format!(
                        "MTU black hole: the control connection's results message ({} un-acked segment(s) of MSS {}, path MTU {}) got no acknowledgement in {:.1} s and {} retransmits, while small messages got through — frames above some MTU vanish toward the peer without an ICMP answer (a link or switch with a smaller MTU): set the interfaces' MTU to the path's, or net.ipv4.tcp_mtu_probing=1",
                        st.unacked, st.mss, st.pmtu, st.seconds, st.retransmits
                    ),
                    Rank::TestEnded,
                    Bound::Binding,
                    1.0,
                )
                .reads(&["the control connection's TCP_INFO (tcpi_unacked, tcpi_total_retrans, tcpi_snd_mss, tcpi_pmtu)"]),
            )
        })
        .into_iter()
        .collect()
}

fn silent(cx: &Context) -> Vec<Out> {
    cx.m.peer_silent
        .as_ref()
        .map(|s| {
            let v = silent_verdict(s);
            Out::Finding(
                Finding::new(v.id, None, v.line, Rank::TestEnded, Bound::Binding, 1.0).reads(&[
                    "the peer's message never arriving (the wait)",
                    "the control connection's TCP_INFO (tcpi_pmtu, tcpi_unacked)",
                    "the peer's MSS at connect",
                    "bytes sent and received before the silence",
                ]),
            )
        })
        .into_iter()
        .collect()
}

/// A peer that went silent after the test began (see [`PeerSilent`]): `mtu-blackhole` when the
/// peer's full segments do not fit the path MTU this end learned toward it (the small messages
/// got through, the large one never came), else `peer-silent`. Both say what was measured, what
/// was waited for and what to check.
fn silent_verdict(s: &PeerSilent) -> Verdict {
    let peer = s.peer.word();
    let me = match s.peer {
        End::Client => "server",
        End::Server => "client",
    };
    let what = match s.phase {
        SilentPhase::Data => format!("data stopped for {:.1} s", s.seconds),
        SilentPhase::Results => format!("results message never came in {:.1} s", s.seconds),
    };
    let flowed = format!(
        "{} sent, {} received before",
        wirespeed_report::units::format_bytes(s.bytes_sent as f64).trim(),
        wirespeed_report::units::format_bytes(s.bytes_received as f64).trim()
    );
    let acked = if s.own_acked && s.phase == SilentPhase::Results {
        format!(", the {me}'s own results acknowledged")
    } else {
        String::new()
    };
    let known = |v: Option<u32>| v.map_or("unknown".to_string(), |v| v.to_string());
    match s.mtu_gap() {
        Some((frame, pmtu)) => Verdict::new(VerdictId::MtuBlackhole, None, format!(
                "MTU black hole toward the {me}: the {peer}'s {what} ({flowed}{acked}); the {peer}'s full segments are {frame}-byte frames (MSS {}) but the path toward it carries {pmtu} (the {me}'s path MTU, lowered by the path's ICMP) — frames above {pmtu} vanish toward the {me} and no ICMP \"fragmentation needed\" reaches the {peer}: check `ip link` MTU on the {peer}'s side and the links between, or set net.ipv4.tcp_mtu_probing=1 on the {peer}",
                known(s.peer_mss)
            )),
        None => Verdict::new(VerdictId::PeerSilent, None, format!(
                "the {peer} went silent: its {what} ({flowed}{acked}); no MTU gap seen (the {peer}'s MSS {}, path MTU {}): the {peer} stalled or went away, or the path drops its packets — check the {peer}'s log and, if its interface MTU is above the path's, `ip link` MTU there and net.ipv4.tcp_mtu_probing=1",
                known(s.peer_mss),
                known(s.pmtu)
            )),
    }
}
