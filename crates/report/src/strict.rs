//! A report as iperf3 3.20 prints it, for strict consumers (wirespeed invoked as `iperf3`, or
//! `--iperf3-strict`): the same values, only iperf3's keys.
//!
//! What changes, beyond dropping the `wirespeed` section:
//! - on the server, the figures of a stream the client sent carry no sender TCP details
//!   (retransmits, reorder, cwnd/window/RTT maxima): iperf3's server does not print the
//!   client's, although the results exchange carries its retransmits;
//! - on the server, one congestion key, its own: `sender_tcp_congestion` when it sends
//!   (`-R`, `--bidir`), else `receiver_tcp_congestion`.
//!
//! The client's document is iperf3's already, apart from the `wirespeed` section.

use crate::model::{Summary, TestResult};

/// `r` as iperf3 3.20 prints it at this end (`server`: the server's report).
pub fn iperf3_strict(r: &TestResult, server: bool) -> TestResult {
    let mut r = r.clone();
    r.wirespeed = None;
    if !server {
        return r;
    }
    let end = &mut r.end;
    let mut sends = false;
    for s in &mut end.streams {
        if let Some(snd) = &mut s.sender {
            if snd.sender {
                sends = true;
            } else {
                strip_sender_details(snd);
            }
        }
    }
    for sum in [&mut end.sum_sent, &mut end.sum_sent_bidir_reverse]
        .into_iter()
        .flatten()
    {
        if !sum.sender {
            sum.retransmits = None;
        }
    }
    if end.sender_tcp_congestion.is_some() || end.receiver_tcp_congestion.is_some() {
        if sends {
            end.receiver_tcp_congestion = None;
        } else {
            end.sender_tcp_congestion = None;
        }
    }
    r
}

fn strip_sender_details(s: &mut Summary) {
    s.retransmits = None;
    s.reorder = None;
    s.max_snd_cwnd = None;
    s.max_snd_wnd = None;
    s.max_rtt = None;
    s.min_rtt = None;
    s.mean_rtt = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{End, EndStream, WirespeedExt};

    fn peer_sent() -> Summary {
        Summary {
            socket: Some(5),
            bytes: 100,
            retransmits: Some(3),
            reorder: Some(0),
            max_snd_cwnd: Some(0),
            max_rtt: Some(0),
            min_rtt: Some(0),
            mean_rtt: Some(0),
            max_snd_wnd: Some(0),
            sender: false,
            ..Summary::default()
        }
    }

    fn result(local_sends: bool) -> TestResult {
        let mut snd = peer_sent();
        snd.sender = local_sends;
        TestResult {
            end: End {
                streams: vec![EndStream {
                    sender: Some(snd.clone()),
                    receiver: Some(Summary::default()),
                    ..EndStream::default()
                }],
                sum_sent: Some(Summary {
                    socket: None,
                    ..snd
                }),
                sender_tcp_congestion: Some("cubic".into()),
                receiver_tcp_congestion: Some("bbr".into()),
                ..End::default()
            },
            wirespeed: Some(WirespeedExt::default()),
            ..TestResult::default()
        }
    }

    #[test]
    fn a_receiving_server_keeps_only_its_own_keys() {
        let r = iperf3_strict(&result(false), true);
        assert!(r.wirespeed.is_none());
        let s = r.end.streams[0].sender.as_ref().unwrap();
        assert_eq!(s.bytes, 100);
        assert!(s.retransmits.is_none() && s.max_rtt.is_none() && s.reorder.is_none());
        assert!(r.end.sum_sent.as_ref().unwrap().retransmits.is_none());
        assert!(r.end.sender_tcp_congestion.is_none());
        assert_eq!(r.end.receiver_tcp_congestion.as_deref(), Some("bbr"));
    }

    #[test]
    fn a_sending_server_keeps_its_sender_details() {
        let r = iperf3_strict(&result(true), true);
        let s = r.end.streams[0].sender.as_ref().unwrap();
        assert_eq!(s.retransmits, Some(3));
        assert_eq!(r.end.sum_sent.as_ref().unwrap().retransmits, Some(3));
        assert_eq!(r.end.sender_tcp_congestion.as_deref(), Some("cubic"));
        assert!(r.end.receiver_tcp_congestion.is_none());
    }

    #[test]
    fn the_client_loses_only_the_wirespeed_section() {
        let before = result(false);
        let r = iperf3_strict(&before, false);
        assert!(r.wirespeed.is_none());
        assert_eq!(r.end, before.end);
    }
}
