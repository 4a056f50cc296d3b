//! A control connection that stopped making progress, one rule for both ends: this end's own
//! large message un-acknowledged ([`control_stalled`], an MTU black hole toward the peer), or
//! the peer silent after the test began ([`peer_silent`]: its data or results never came).
//! What they mean is the verdict's (`wirespeed_verdict`); this module only measures.

use std::time::Duration;

use wirespeed_model::verdict::{ControlStall, End, PeerSilent, SilentPhase};

/// What the runner reads from the control connection's `TCP_INFO` for these rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControlInfo {
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    /// Retransmitted segments over the connection's life.
    pub retransmits_total: u32,
    /// This end's MSS toward the peer.
    pub snd_mss: u32,
    /// The path MTU toward the peer.
    pub pmtu: u32,
}

/// How long a sent results message may go un-acknowledged, and with how many retransmits,
/// before the control connection counts as black-holed.
pub const STALL_AFTER: Duration = Duration::from_secs(4);
pub const STALL_RETRANSMITS: u32 = 3;

/// The black-hole check: a message sent at `sent` (when the connection had retransmitted
/// `retrans_then` segments) is still un-acknowledged after [`STALL_AFTER`] and
/// [`STALL_RETRANSMITS`] retransmits.
pub fn control_stalled(
    sent: Duration,
    now: Duration,
    retrans_then: u32,
    info: &ControlInfo,
) -> Option<ControlStall> {
    let waited = now.saturating_sub(sent);
    let retransmits = info.retransmits_total.saturating_sub(retrans_then);
    (waited >= STALL_AFTER && info.unacked > 0 && retransmits >= STALL_RETRANSMITS).then_some(
        ControlStall {
            seconds: waited.as_secs_f64(),
            unacked: info.unacked,
            retransmits,
            mss: info.snd_mss,
            pmtu: info.pmtu,
        },
    )
}

/// What this end knows when it gives up waiting for a silent `peer` in `phase`: the bytes that
/// flowed, the peer's MSS when the control connection opened, and the control connection's
/// state now (its path MTU toward the peer; when this end's own results went out
/// (`own_sent`), whether they were acknowledged).
pub fn peer_silent(
    peer: End,
    phase: SilentPhase,
    waited: Duration,
    bytes: (u64, u64),
    peer_mss: Option<u32>,
    own_sent: bool,
    info: Option<&ControlInfo>,
) -> PeerSilent {
    PeerSilent {
        peer,
        phase,
        seconds: waited.as_secs_f64(),
        bytes_sent: bytes.0,
        bytes_received: bytes.1,
        peer_mss: peer_mss.filter(|m| *m > 0),
        pmtu: info.map(|i| i.pmtu).filter(|p| *p > 0),
        own_acked: own_sent && info.is_some_and(|i| i.unacked == 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_results_message_unacked_after_retransmits_is_a_stall() {
        let info = |unacked, retrans| ControlInfo {
            unacked,
            retransmits_total: retrans,
            snd_mss: 8948,
            pmtu: 9000,
        };
        let s = Duration::from_secs(10);
        // 4.5 s, 5 retransmits since the message, one segment un-acked
        let st = control_stalled(s, s + Duration::from_millis(4500), 2, &info(1, 7)).unwrap();
        assert_eq!(
            (st.unacked, st.retransmits, st.mss, st.pmtu),
            (1, 5, 8948, 9000)
        );
        assert!((st.seconds - 4.5).abs() < 1e-9);
        // too early, too few retransmits, or everything acknowledged: no stall
        assert!(control_stalled(s, s + Duration::from_secs(2), 2, &info(1, 7)).is_none());
        assert!(control_stalled(s, s + Duration::from_secs(5), 2, &info(1, 4)).is_none());
        assert!(control_stalled(s, s + Duration::from_secs(5), 2, &info(0, 7)).is_none());
    }

    #[test]
    fn a_silent_peer_carries_the_control_connections_path_mtu_and_acks() {
        let info = ControlInfo {
            unacked: 0,
            pmtu: 1500,
            ..Default::default()
        };
        let s = peer_silent(
            End::Server,
            SilentPhase::Results,
            Duration::from_secs(8),
            (4_048_551_936, 0),
            Some(8948),
            true,
            Some(&info),
        );
        assert_eq!(
            (s.pmtu, s.peer_mss, s.own_acked),
            (Some(1500), Some(8948), true)
        );
        assert_eq!(s.mtu_gap(), Some((8988, 1500)));
        // un-acknowledged bytes, an unknown MSS (0) or no TCP_INFO: said so, never guessed
        let busy = ControlInfo { unacked: 2, ..info };
        let s = peer_silent(
            End::Server,
            SilentPhase::Data,
            Duration::ZERO,
            (0, 0),
            Some(0),
            true,
            Some(&busy),
        );
        assert_eq!((s.own_acked, s.peer_mss, s.mtu_gap()), (false, None, None));
        let s = peer_silent(
            End::Client,
            SilentPhase::Data,
            Duration::ZERO,
            (0, 0),
            Some(1448),
            true,
            None,
        );
        assert_eq!((s.own_acked, s.pmtu), (false, None));
        // this end's results not sent yet (a server waiting for the client's): nothing to ack
        let s = peer_silent(
            End::Client,
            SilentPhase::Results,
            Duration::ZERO,
            (0, 0),
            Some(1448),
            false,
            Some(&info),
        );
        assert!(!s.own_acked);
    }
}
