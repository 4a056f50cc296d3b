//! Turning raw counters into the model: the one place where wirespeed does
//! iperf3's arithmetic.
//!
//! The engine registers each stream ([`ResultBuilder::add_stream`]), then at
//! every interval tick hands over the *cumulative* counters it read (bytes,
//! `TCP_INFO`, UDP counters) as [`StreamSample`]s. The builder keeps the
//! previous values, computes the per-interval deltas, rates and sums, and
//! stores the [`Interval`] (returned for live rendering). At the end,
//! [`ResultBuilder::end`] combines the local totals with what the peer
//! reported for each stream ([`PeerStream`]) into iperf3's `end` section:
//! `sender`/`receiver` (TCP) or `udp` per stream, `sum_sent`/`sum_received`
//! (and `sum` for UDP, `*_bidir_reverse` for `--bidir`), CPU utilisation and
//! congestion algorithms.
//!
//! Rules kept from iperf3:
//! - bits_per_second = bytes × 8 / seconds, and 0 when seconds is not
//!   positive (never NaN or infinity);
//! - stream order and sum names in `--bidir`: the client lists its sending
//!   streams first (`sum`), then its receiving ones (`sum_bidir_reverse`);
//!   a server lists receiving streams first;
//! - an interval shorter than 10 % of the reporting interval in which no
//!   stream moved a byte is dropped (timing noise at the end of a test);
//! - omitted intervals (`-O`) are reported but not counted in the totals;
//! - RTT statistics are over the per-interval `TCP_INFO` samples
//!   (max, min, integer mean), cwnd and send window maxima likewise;
//! - UDP loss percent = 100 × lost / packets, 0 when there are no packets;
//!   jitter of a sum is the mean of the streams' jitter.

use wirespeed_model::Transport;

use crate::model::{
    CpuUtilization, End, EndStream, Interval, IntervalStats, StreamTotals, Summary,
};

/// One `TCP_INFO` reading of a sending stream at an interval tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpSample {
    /// `tcpi_total_retrans`, cumulative since the connection started.
    pub retransmits_total: u64,
    /// Congestion window in bytes (`tcpi_snd_cwnd * tcpi_snd_mss`).
    pub snd_cwnd: u64,
    /// `tcpi_snd_wnd` (bytes), when the kernel reports it.
    pub snd_wnd: Option<u64>,
    /// Smoothed RTT, µs.
    pub rtt_us: u64,
    /// RTT variance, µs.
    pub rttvar_us: u64,
    /// Path MTU, bytes.
    pub pmtu: u64,
    /// `tcpi_reordering` when wanted in the output (iperf3 3.17+ prints `reorder`).
    pub reorder: Option<u64>,
}

/// UDP counters of a stream at an interval tick, cumulative since the stream
/// started (jitter is the current running estimate).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpSample {
    /// Sender: datagrams sent. Receiver: datagrams expected (highest sequence number seen).
    pub packets: i64,
    /// Receiver: datagrams lost (expected − received, duplicates excluded).
    pub lost: i64,
    /// Receiver: datagrams that arrived out of order.
    pub out_of_order: i64,
    /// Receiver: RFC 3550 jitter estimate, milliseconds.
    pub jitter_ms: f64,
}

/// The engine's reading of one stream at an interval tick.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StreamSample {
    /// Stream id as registered with [`ResultBuilder::add_stream`].
    pub id: u32,
    /// Payload bytes moved since the stream started (cumulative).
    pub bytes: u64,
    /// TCP sender: `TCP_INFO` reading; `None` on receivers or when unavailable.
    pub tcp: Option<TcpSample>,
    /// UDP: counters; `None` for TCP.
    pub udp: Option<UdpSample>,
}

/// What the peer reported for one stream at the end (iperf3's results
/// exchange: `id`, `bytes`, `retransmits`, `jitter`, `errors`, `packets`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PeerStream {
    pub id: u32,
    /// Bytes the peer sent (if it was the sender) or received.
    pub bytes: u64,
    /// Peer-sender retransmits; `None` when the peer has none to report.
    pub retransmits: Option<u64>,
    /// UDP peer-receiver jitter, ms.
    pub jitter_ms: Option<f64>,
    /// UDP peer-receiver lost datagrams.
    pub lost: Option<i64>,
    /// UDP: the peer's packet count (sent or expected).
    pub packets: Option<i64>,
    /// UDP peer-receiver out-of-order count (wirespeed peers only).
    pub out_of_order: Option<i64>,
}

impl PeerStream {
    /// From iperf3's results JSON values: `retransmits` is -1 when unknown,
    /// `jitter` is in **seconds**, `errors` is the lost count.
    pub fn from_iperf3(
        id: u32,
        bytes: u64,
        retransmits: i64,
        jitter_seconds: f64,
        errors: i64,
        packets: i64,
    ) -> PeerStream {
        PeerStream {
            id,
            bytes,
            retransmits: u64::try_from(retransmits).ok(),
            jitter_ms: Some(crate::num::finite(jitter_seconds) * 1000.0),
            lost: Some(errors),
            packets: Some(packets),
            out_of_order: None,
        }
    }
}

/// Everything the end section needs beyond the intervals.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndInput {
    /// Seconds from the (post-omit) test start to the local end of the streams.
    pub local_elapsed: f64,
    /// The peer's elapsed time (iperf3's `end_time` in the results exchange);
    /// `None` or 0 falls back to `local_elapsed`, as iperf3 does.
    pub peer_elapsed: Option<f64>,
    /// Per-stream results from the peer; streams without an entry count 0.
    pub peer_streams: Vec<PeerStream>,
    /// Local ("host") and peer ("remote") CPU utilisation, percent.
    pub cpu: CpuUtilization,
    /// TCP: local congestion control algorithm.
    pub local_congestion: Option<String>,
    /// TCP: peer's congestion control algorithm.
    pub remote_congestion: Option<String>,
}

/// The result of [`ResultBuilder::end`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EndReport {
    /// iperf3's `end` object.
    pub end: End,
    /// Per-stream totals of both ends, for `wirespeed.streams`.
    pub totals: Vec<StreamTotals>,
}

/// A sample named a stream that was never registered, or a stream was registered twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("sample for unknown stream id {0}")]
    UnknownStream(u32),
    #[error("stream id {0} registered twice")]
    DuplicateStream(u32),
}

/// A figure over the whole test, from 0 to `end` seconds: `bytes` and their rate over that span
/// (a stream's, with its `socket`, or a sum's, without).
fn whole_test(socket: Option<u32>, end: f64, bytes: u64, sender: bool) -> Summary {
    Summary {
        socket,
        start: 0.0,
        end,
        seconds: end,
        bytes,
        bits_per_second: bits_per_second(bytes, end),
        sender,
        ..Summary::default()
    }
}

/// bits per second from bytes and seconds; 0 unless seconds is positive and finite.
pub fn bits_per_second(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 && seconds.is_finite() {
        crate::num::finite(bytes as f64 * 8.0 / seconds)
    } else {
        0.0
    }
}

/// 100 × lost / packets; 0 when packets is not positive.
pub fn lost_percent(lost: i64, packets: i64) -> f64 {
    if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    }
}

#[derive(Debug, Clone, Default)]
struct StreamAcc {
    id: u32,
    sender: bool,
    // previous cumulative readings
    last_bytes: u64,
    last_retrans: u64,
    last_udp: UdpSample,
    // totals over non-omitted intervals
    bytes: u64,
    retrans: u64,
    saw_tcp: bool,
    max_cwnd: u64,
    max_wnd: u64,
    rtt_max: u64,
    rtt_min: Option<u64>,
    rtt_sum: u128,
    rtt_count: u64,
    reorder: Option<u64>,
    udp_packets: i64,
    udp_lost: i64,
    udp_ooo: i64,
    jitter_ms: f64,
    saw_udp: bool,
}

/// Most intervals a builder keeps (two hours of 1 s intervals). When one more arrives, the kept
/// ones but the newest are merged in adjacent pairs (the history so far at half the
/// resolution), so a day-long test holds at most this many instead of growing by an interval
/// a second on both ends; a test of fewer intervals is reported exactly as before. The `end`
/// section comes from the streams' totals, never from the intervals, and does not change.
pub const MAX_KEPT_INTERVALS: usize = 7200;

/// Keep `kept` within `max`: past it, all but the newest are merged in adjacent pairs
/// (`merge(earlier, later)`), so a long test keeps its whole span at a coarser step. The one
/// rule for the report's intervals and the observer's (`wirespeed-observe`).
pub fn keep_capped<T>(kept: &mut Vec<T>, max: usize, merge: impl Fn(T, T) -> T) {
    if kept.len() <= max {
        return;
    }
    let newest = kept.pop();
    let mut it = std::mem::take(kept).into_iter();
    while let Some(a) = it.next() {
        kept.push(match it.next() {
            Some(b) => merge(a, b),
            None => a,
        });
    }
    kept.extend(newest);
}

/// Accumulates intervals and produces the `intervals` and `end` sections.
#[derive(Debug, Clone)]
pub struct ResultBuilder {
    protocol: Transport,
    role: wirespeed_model::End,
    bidir: bool,
    interval_secs: f64,
    streams: Vec<StreamAcc>,
    intervals: Vec<Interval>,
    max_kept: usize,
}

impl ResultBuilder {
    /// `interval_secs` is `-i` (used only for the short-interval rule; 0 disables it).
    pub fn new(
        protocol: Transport,
        role: wirespeed_model::End,
        bidir: bool,
        interval_secs: f64,
    ) -> ResultBuilder {
        ResultBuilder {
            protocol,
            role,
            bidir,
            interval_secs: crate::num::finite(interval_secs),
            streams: Vec::new(),
            intervals: Vec::new(),
            max_kept: MAX_KEPT_INTERVALS,
        }
    }

    /// Keep at most `max` intervals (at least 2) instead of [`MAX_KEPT_INTERVALS`].
    pub fn with_max_kept(mut self, max: usize) -> ResultBuilder {
        self.max_kept = max.max(2);
        self
    }

    /// Register a stream; `sender` is true when the local end sends on it.
    pub fn add_stream(&mut self, id: u32, sender: bool) -> Result<(), BuildError> {
        if self.streams.iter().any(|s| s.id == id) {
            return Err(BuildError::DuplicateStream(id));
        }
        self.streams.push(StreamAcc {
            id,
            sender,
            ..StreamAcc::default()
        });
        Ok(())
    }

    /// Number of registered streams.
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// Which end the report is for, and whether the test is `--bidir`.
    pub fn role(&self) -> (wirespeed_model::End, bool) {
        (self.role, self.bidir)
    }

    /// The intervals recorded so far.
    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    /// Take the recorded intervals (e.g. to move them into a `TestResult`).
    pub fn take_intervals(&mut self) -> Vec<Interval> {
        std::mem::take(&mut self.intervals)
    }

    /// Indices of the streams in output order, split into the first and second group.
    fn groups(&self) -> (Vec<usize>, Vec<usize>) {
        if !self.bidir {
            return ((0..self.streams.len()).collect(), Vec::new());
        }
        let first_is_sender = self.role == wirespeed_model::End::Client;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, s) in self.streams.iter().enumerate() {
            if s.sender == first_is_sender {
                a.push(i);
            } else {
                b.push(i);
            }
        }
        (a, b)
    }

    fn group_is_sender(&self, first: bool) -> bool {
        if self.bidir {
            (self.role == wirespeed_model::End::Client) == first
        } else {
            self.streams.first().is_some_and(|s| s.sender)
        }
    }

    /// Record one interval from `start` to `end` seconds (test-relative).
    /// Streams missing from `samples` moved nothing. Returns `None` when the
    /// interval is dropped by the short-interval rule.
    pub fn interval(
        &mut self,
        start: f64,
        end: f64,
        omitted: bool,
        samples: &[StreamSample],
    ) -> Result<Option<&Interval>, BuildError> {
        for s in samples {
            if !self.streams.iter().any(|a| a.id == s.id) {
                return Err(BuildError::UnknownStream(s.id));
            }
        }
        let start = crate::num::finite(start);
        let end = crate::num::finite(end);
        let seconds = (end - start).max(0.0);

        // Per-stream figures, in registration order for now.
        let mut per_stream: Vec<IntervalStats> = Vec::with_capacity(self.streams.len());
        let mut moved = false;
        for acc in &mut self.streams {
            let sample = samples.iter().find(|s| s.id == acc.id);
            let bytes_now = sample.map_or(acc.last_bytes, |s| s.bytes);
            let delta = bytes_now.saturating_sub(acc.last_bytes);
            acc.last_bytes = bytes_now.max(acc.last_bytes);
            moved |= delta > 0;
            if !omitted {
                acc.bytes += delta;
            }
            let mut st = IntervalStats {
                socket: Some(acc.id),
                start,
                end,
                seconds,
                bytes: delta,
                bits_per_second: bits_per_second(delta, seconds),
                omitted,
                sender: acc.sender,
                ..IntervalStats::default()
            };
            match self.protocol {
                Transport::Tcp => {
                    if let (true, Some(t)) = (acc.sender, sample.and_then(|s| s.tcp)) {
                        let d = t.retransmits_total.saturating_sub(acc.last_retrans);
                        acc.last_retrans = t.retransmits_total.max(acc.last_retrans);
                        if !omitted {
                            acc.retrans += d;
                            acc.saw_tcp = true;
                            acc.max_cwnd = acc.max_cwnd.max(t.snd_cwnd);
                            acc.max_wnd = acc.max_wnd.max(t.snd_wnd.unwrap_or(0));
                            acc.rtt_max = acc.rtt_max.max(t.rtt_us);
                            acc.rtt_min = Some(acc.rtt_min.map_or(t.rtt_us, |m| m.min(t.rtt_us)));
                            acc.rtt_sum += u128::from(t.rtt_us);
                            acc.rtt_count += 1;
                            if let Some(r) = t.reorder {
                                acc.reorder = Some(acc.reorder.unwrap_or(0).max(r));
                            }
                        }
                        st.retransmits = Some(d);
                        st.snd_cwnd = Some(t.snd_cwnd);
                        st.snd_wnd = Some(t.snd_wnd.unwrap_or(0));
                        st.rtt = Some(t.rtt_us);
                        st.rttvar = Some(t.rttvar_us);
                        st.pmtu = Some(t.pmtu);
                        st.reorder = t.reorder;
                    }
                }
                Transport::Udp => {
                    let u = sample.and_then(|s| s.udp).unwrap_or(acc.last_udp);
                    let prev = acc.last_udp;
                    let d_packets = (u.packets - prev.packets).max(0);
                    let d_lost = u.lost - prev.lost;
                    let d_ooo = (u.out_of_order - prev.out_of_order).max(0);
                    acc.last_udp = u;
                    if !omitted {
                        acc.saw_udp = true;
                        acc.udp_packets += d_packets;
                        acc.udp_lost += d_lost;
                        acc.udp_ooo += d_ooo;
                        acc.jitter_ms = crate::num::finite(u.jitter_ms);
                    }
                    st.packets = Some(d_packets);
                    if !acc.sender {
                        st.jitter_ms = Some(crate::num::finite(u.jitter_ms));
                        st.lost_packets = Some(d_lost);
                        st.lost_percent = Some(lost_percent(d_lost, d_packets));
                    }
                }
            }
            per_stream.push(st);
        }

        if !moved && self.interval_secs > 0.0 && seconds < self.interval_secs * 0.10 {
            return Ok(None);
        }

        let (g1, g2) = self.groups();
        let mut streams = Vec::with_capacity(per_stream.len());
        for &i in g1.iter().chain(g2.iter()) {
            streams.push(per_stream[i].clone());
        }
        let sum = self.interval_sum(&per_stream, &g1, self.group_is_sender(true), start, end);
        let sum_bidir_reverse = if self.bidir {
            Some(self.interval_sum(&per_stream, &g2, self.group_is_sender(false), start, end))
        } else {
            None
        };
        self.intervals.push(Interval {
            streams,
            sum,
            sum_bidir_reverse,
            extra: Default::default(),
        });
        keep_capped(&mut self.intervals, self.max_kept, merge_intervals);
        Ok(self.intervals.last())
    }

    fn interval_sum(
        &self,
        per_stream: &[IntervalStats],
        group: &[usize],
        sender: bool,
        start: f64,
        end: f64,
    ) -> IntervalStats {
        let seconds = (end - start).max(0.0);
        let bytes: u64 = group.iter().map(|&i| per_stream[i].bytes).sum();
        let omitted = group.iter().any(|&i| per_stream[i].omitted);
        let mut sum = IntervalStats {
            socket: None,
            start,
            end,
            seconds,
            bytes,
            bits_per_second: bits_per_second(bytes, seconds),
            omitted,
            sender,
            ..IntervalStats::default()
        };
        match self.protocol {
            Transport::Tcp => {
                if sender && group.iter().any(|&i| per_stream[i].retransmits.is_some()) {
                    sum.retransmits = Some(
                        group
                            .iter()
                            .filter_map(|&i| per_stream[i].retransmits)
                            .sum(),
                    );
                }
            }
            Transport::Udp => {
                let packets: i64 = group.iter().filter_map(|&i| per_stream[i].packets).sum();
                sum.packets = Some(packets);
                if !sender {
                    let lost: i64 = group
                        .iter()
                        .filter_map(|&i| per_stream[i].lost_packets)
                        .sum();
                    let jitter: f64 = group.iter().filter_map(|&i| per_stream[i].jitter_ms).sum();
                    let n = group.len().max(1) as f64;
                    sum.jitter_ms = Some(crate::num::finite(jitter / n));
                    sum.lost_packets = Some(lost);
                    sum.lost_percent = Some(lost_percent(lost, packets));
                }
            }
        }
        sum
    }

    /// Build the `end` section (and per-stream totals) from the recorded
    /// intervals and the peer's results.
    /// The sending streams' RTT samples so far (µs): the smallest, the mean of the streams'
    /// means, the largest — what `end` puts in their `min_rtt`, `mean_rtt` and `max_rtt`.
    /// `None` without a sending stream that took a sample.
    pub fn sender_rtt_us(&self) -> Option<(u64, u64, u64)> {
        let s: Vec<&StreamAcc> = self
            .streams
            .iter()
            .filter(|a| a.sender && a.rtt_count > 0)
            .collect();
        if s.is_empty() {
            return None;
        }
        let mean = s
            .iter()
            .map(|a| u64::try_from(a.rtt_sum / u128::from(a.rtt_count)).unwrap_or(u64::MAX))
            .sum::<u64>()
            / s.len() as u64;
        Some((
            s.iter().filter_map(|a| a.rtt_min).min().unwrap_or(0),
            mean,
            s.iter().map(|a| a.rtt_max).max().unwrap_or(0),
        ))
    }

    /// The largest window each sending stream's peer advertised over the measured intervals
    /// (`tcpi_snd_wnd`), summed over the streams; `None` before any such sample or where the
    /// kernel does not report it.
    pub fn sender_max_snd_wnd(&self) -> Option<u64> {
        let w: u64 = self
            .streams
            .iter()
            .filter(|a| a.sender && a.rtt_count > 0)
            .map(|a| a.max_wnd)
            .fold(0, u64::saturating_add);
        (w > 0).then_some(w)
    }

    pub fn end(&self, input: &EndInput) -> EndReport {
        let local = crate::num::finite(input.local_elapsed).max(0.0);
        let peer = input
            .peer_elapsed
            .map(crate::num::finite)
            .filter(|p| *p > 0.0)
            .unwrap_or(local);
        let (g1, g2) = self.groups();
        let mut end = End::default();
        let mut totals = Vec::with_capacity(self.streams.len());

        let mut groups: Vec<(&[usize], bool)> = vec![(&g1, true)];
        if self.bidir {
            groups.push((&g2, false));
        }
        let mut last_group_sender = self.group_is_sender(true);
        for (group, first) in groups {
            let gsender = self.group_is_sender(first);
            last_group_sender = gsender;
            // Where the local end sends, its clock is the sender's.
            let (sender_time, receiver_time) = if gsender {
                (local, peer)
            } else {
                (peer, local)
            };
            let mut total_sent = 0u64;
            let mut total_received = 0u64;
            let mut total_retrans = 0u64;
            let mut any_retrans = false;
            let mut jitter_sum = 0.0f64;
            let mut lost_total = 0i64;
            let mut packets_total = 0i64;
            let mut sender_packets_total = 0i64;
            let mut receiver_packets_total = 0i64;

            for &i in group {
                let acc = &self.streams[i];
                let p = input.peer_streams.iter().find(|p| p.id == acc.id);
                let (bytes_sent, bytes_received) = if acc.sender {
                    (acc.bytes, p.map_or(0, |p| p.bytes))
                } else {
                    (p.map_or(0, |p| p.bytes), acc.bytes)
                };
                total_sent += bytes_sent;
                total_received += bytes_received;
                let mut t = StreamTotals {
                    socket: acc.id,
                    sender: acc.sender,
                    bytes_sent,
                    bytes_received,
                    ..StreamTotals::default()
                };
                let mut es = EndStream::default();
                match self.protocol {
                    Transport::Tcp => {
                        let mut s = whole_test(Some(acc.id), sender_time, bytes_sent, acc.sender);
                        if acc.sender && acc.saw_tcp {
                            any_retrans = true;
                            total_retrans += acc.retrans;
                            s.retransmits = Some(acc.retrans);
                            s.reorder = acc.reorder;
                            s.max_snd_cwnd = Some(acc.max_cwnd);
                            s.max_snd_wnd = Some(acc.max_wnd);
                            s.max_rtt = Some(acc.rtt_max);
                            s.min_rtt = Some(acc.rtt_min.unwrap_or(0));
                            s.mean_rtt = Some(if acc.rtt_count == 0 {
                                0
                            } else {
                                u64::try_from(acc.rtt_sum / u128::from(acc.rtt_count))
                                    .unwrap_or(u64::MAX)
                            });
                        } else if let (false, Some(r)) = (acc.sender, p.and_then(|p| p.retransmits))
                        {
                            // The peer sent: iperf3 reports its retransmits and zero maxima.
                            any_retrans = true;
                            total_retrans += r;
                            s.retransmits = Some(r);
                            s.reorder = Some(0);
                            s.max_snd_cwnd = Some(0);
                            s.max_snd_wnd = Some(0);
                            s.max_rtt = Some(0);
                            s.min_rtt = Some(0);
                            s.mean_rtt = Some(0);
                        }
                        es.sender = Some(s);
                        es.receiver = Some(Summary {
                            seconds: local,
                            ..whole_test(Some(acc.id), receiver_time, bytes_received, acc.sender)
                        });
                    }
                    Transport::Udp => {
                        let (sent_pk, recv_pk, lost, ooo, jitter) = if acc.sender {
                            (
                                acc.udp_packets,
                                p.and_then(|p| p.packets).unwrap_or(0),
                                p.and_then(|p| p.lost).unwrap_or(0),
                                p.and_then(|p| p.out_of_order).unwrap_or(0),
                                crate::num::finite(p.and_then(|p| p.jitter_ms).unwrap_or(0.0)),
                            )
                        } else {
                            (
                                p.and_then(|p| p.packets).unwrap_or(0),
                                acc.udp_packets,
                                acc.udp_lost,
                                acc.udp_ooo,
                                acc.jitter_ms,
                            )
                        };
                        let packets = if sent_pk != 0 { sent_pk } else { recv_pk };
                        jitter_sum += jitter;
                        lost_total += lost;
                        packets_total += packets;
                        sender_packets_total += sent_pk;
                        receiver_packets_total += recv_pk;
                        t.packets_sent = Some(sent_pk);
                        t.packets_received = Some(recv_pk);
                        t.lost_packets = Some(lost);
                        t.out_of_order = Some(ooo);
                        t.jitter_ms = Some(jitter);
                        es.udp = Some(Summary {
                            jitter_ms: Some(jitter),
                            lost_packets: Some(lost),
                            packets: Some(packets),
                            lost_percent: Some(lost_percent(lost, sent_pk)),
                            out_of_order: Some(ooo),
                            ..whole_test(Some(acc.id), sender_time, bytes_sent, acc.sender)
                        });
                    }
                }
                end.streams.push(es);
                totals.push(t);
            }

            let (sum, sum_sent, sum_received) = match self.protocol {
                Transport::Tcp => {
                    let mut sent = whole_test(None, sender_time, total_sent, gsender);
                    if any_retrans {
                        sent.retransmits = Some(total_retrans);
                    }
                    (
                        None,
                        sent,
                        whole_test(None, receiver_time, total_received, gsender),
                    )
                }
                Transport::Udp => {
                    let n = group.len().max(1) as f64;
                    let jitter = crate::num::finite(jitter_sum / n);
                    let pct = lost_percent(lost_total, packets_total);
                    let mut sum = whole_test(None, receiver_time, total_sent, gsender);
                    // iperf3 writes the sender's rate here, over the receiver's time span.
                    sum.bits_per_second = bits_per_second(total_sent, sender_time);
                    sum.jitter_ms = Some(jitter);
                    sum.lost_packets = Some(lost_total);
                    sum.packets = Some(packets_total);
                    sum.lost_percent = Some(pct);
                    let mut sent = whole_test(None, sender_time, total_sent, true);
                    sent.jitter_ms = Some(0.0);
                    sent.lost_packets = Some(0);
                    sent.packets = Some(sender_packets_total);
                    sent.lost_percent = Some(0.0);
                    let mut recv = whole_test(None, receiver_time, total_received, false);
                    recv.jitter_ms = Some(jitter);
                    recv.lost_packets = Some(lost_total);
                    recv.packets = Some(receiver_packets_total);
                    recv.lost_percent = Some(pct);
                    (Some(sum), sent, recv)
                }
            };
            if first {
                end.sum = sum;
                end.sum_sent = Some(sum_sent);
                end.sum_received = Some(sum_received);
            } else {
                end.sum_bidir_reverse = sum;
                end.sum_sent_bidir_reverse = Some(sum_sent);
                end.sum_received_bidir_reverse = Some(sum_received);
            }
        }

        end.cpu_utilization_percent = Some(sanitize_cpu(&input.cpu));
        if self.protocol == Transport::Tcp {
            let (snd, rcv) = if last_group_sender {
                (&input.local_congestion, &input.remote_congestion)
            } else {
                (&input.remote_congestion, &input.local_congestion)
            };
            end.sender_tcp_congestion = snd.clone();
            end.receiver_tcp_congestion = rcv.clone();
        }
        EndReport { end, totals }
    }
}

fn sanitize_cpu(c: &CpuUtilization) -> CpuUtilization {
    use crate::num::finite;
    CpuUtilization {
        host_total: finite(c.host_total),
        host_user: finite(c.host_user),
        host_system: finite(c.host_system),
        remote_total: finite(c.remote_total),
        remote_user: finite(c.remote_user),
        remote_system: finite(c.remote_system),
    }
}

/// Two adjacent intervals as one: times joined, counts summed, rates from the sums, the
/// latest of the gauges (window, RTT, MTU, jitter).
fn merge_intervals(a: Interval, b: Interval) -> Interval {
    let streams = if a.streams.len() == b.streams.len() {
        a.streams
            .into_iter()
            .zip(b.streams)
            .map(|(x, y)| merge_stats(x, y))
            .collect()
    } else {
        b.streams
    };
    Interval {
        streams,
        sum: merge_stats(a.sum, b.sum),
        sum_bidir_reverse: match (a.sum_bidir_reverse, b.sum_bidir_reverse) {
            (Some(x), Some(y)) => Some(merge_stats(x, y)),
            (x, y) => y.or(x),
        },
        extra: b.extra,
    }
}

fn merge_stats(a: IntervalStats, b: IntervalStats) -> IntervalStats {
    let add = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    };
    let addi = |x: Option<i64>, y: Option<i64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    };
    let seconds = a.seconds + b.seconds;
    let bytes = a.bytes.saturating_add(b.bytes);
    let lost_packets = addi(a.lost_packets, b.lost_packets);
    let packets = addi(a.packets, b.packets);
    let lost_percent = match (lost_packets, packets) {
        (Some(l), Some(p)) if p > 0 => Some(100.0 * l as f64 / p as f64),
        _ => b.lost_percent.or(a.lost_percent),
    };
    IntervalStats {
        socket: a.socket,
        start: a.start,
        end: b.end,
        seconds,
        bytes,
        bits_per_second: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds
        } else {
            0.0
        },
        retransmits: add(a.retransmits, b.retransmits),
        snd_cwnd: b.snd_cwnd.or(a.snd_cwnd),
        snd_wnd: b.snd_wnd.or(a.snd_wnd),
        rtt: b.rtt.or(a.rtt),
        rttvar: b.rttvar.or(a.rttvar),
        pmtu: b.pmtu.or(a.pmtu),
        reorder: add(a.reorder, b.reorder),
        jitter_ms: b.jitter_ms.or(a.jitter_ms),
        lost_packets,
        packets,
        lost_percent,
        omitted: a.omitted && b.omitted,
        sender: a.sender,
        extra: b.extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TestResult;

    fn tcp(retrans: u64, cwnd: u64, rtt: u64) -> Option<TcpSample> {
        Some(TcpSample {
            retransmits_total: retrans,
            snd_cwnd: cwnd,
            snd_wnd: Some(3_000_000),
            rtt_us: rtt,
            rttvar_us: rtt / 4,
            pmtu: 65535,
            reorder: None,
        })
    }

    fn sample(id: u32, bytes: u64, t: Option<TcpSample>) -> StreamSample {
        StreamSample {
            id,
            bytes,
            tcp: t,
            udp: None,
        }
    }

    /// The interval the builder keeps for these samples (it must keep one).
    fn kept(
        b: &mut ResultBuilder,
        start: f64,
        end: f64,
        omitted: bool,
        samples: &[StreamSample],
    ) -> Interval {
        b.interval(start, end, omitted, samples)
            .unwrap()
            .expect("interval kept")
            .clone()
    }

    #[test]
    fn tcp_client_intervals_and_end() {
        let mut b = ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
        b.add_stream(5, true).unwrap();
        b.add_stream(7, true).unwrap();
        let iv = kept(
            &mut b,
            0.0,
            1.0,
            false,
            &[
                sample(5, 1000, tcp(3, 100, 40)),
                sample(7, 3000, tcp(1, 300, 20)),
            ],
        );
        assert_eq!(iv.streams.len(), 2);
        assert_eq!(iv.streams[0].bytes, 1000);
        assert_eq!(iv.streams[0].bits_per_second, 8000.0);
        assert_eq!(iv.streams[0].retransmits, Some(3));
        assert_eq!(iv.streams[0].snd_cwnd, Some(100));
        assert_eq!(iv.sum.bytes, 4000);
        assert_eq!(iv.sum.retransmits, Some(4));
        assert_eq!(iv.sum.socket, None);
        assert!(iv.sum.sender);
        assert!(iv.sum_bidir_reverse.is_none());

        let iv = kept(
            &mut b,
            1.0,
            2.0,
            false,
            &[
                sample(5, 5000, tcp(5, 200, 60)),
                sample(7, 3000, tcp(1, 100, 30)),
            ],
        );
        assert_eq!(iv.streams[0].bytes, 4000);
        assert_eq!(iv.streams[0].retransmits, Some(2));
        assert_eq!(iv.streams[1].bytes, 0);
        assert_eq!(iv.streams[1].retransmits, Some(0));
        assert_eq!(iv.sum.bytes, 4000);

        let rep = b.end(&EndInput {
            local_elapsed: 2.0,
            peer_elapsed: Some(2.5),
            peer_streams: vec![
                PeerStream {
                    id: 5,
                    bytes: 4990,
                    ..PeerStream::default()
                },
                PeerStream {
                    id: 7,
                    bytes: 3000,
                    ..PeerStream::default()
                },
            ],
            cpu: CpuUtilization {
                host_total: 50.0,
                ..CpuUtilization::default()
            },
            local_congestion: Some("cubic".into()),
            remote_congestion: Some("bbr".into()),
        });
        let e = &rep.end;
        let s5 = e.streams[0].sender.as_ref().unwrap();
        assert_eq!(s5.bytes, 5000);
        assert_eq!(s5.end, 2.0);
        assert_eq!(s5.bits_per_second, 20000.0);
        assert_eq!(s5.retransmits, Some(5));
        assert_eq!(s5.max_snd_cwnd, Some(200));
        assert_eq!(s5.max_rtt, Some(60));
        assert_eq!(s5.min_rtt, Some(40));
        assert_eq!(s5.mean_rtt, Some(50));
        let r5 = e.streams[0].receiver.as_ref().unwrap();
        assert_eq!(r5.bytes, 4990);
        assert_eq!(r5.end, 2.5);
        assert_eq!(r5.bits_per_second, 4990.0 * 8.0 / 2.5);
        assert!(r5.retransmits.is_none());
        let ss = e.sum_sent.as_ref().unwrap();
        assert_eq!(ss.bytes, 8000);
        assert_eq!(ss.retransmits, Some(6));
        assert_eq!(e.sum_received.as_ref().unwrap().bytes, 7990);
        assert!(e.sum.is_none());
        assert_eq!(e.sender_tcp_congestion.as_deref(), Some("cubic"));
        assert_eq!(e.receiver_tcp_congestion.as_deref(), Some("bbr"));
        assert_eq!(e.cpu_utilization_percent.as_ref().unwrap().host_total, 50.0);
        assert_eq!(rep.totals.len(), 2);
        assert_eq!(rep.totals[0].bytes_received, 4990);
    }

    #[test]
    fn reverse_client_reports_peer_retransmits() {
        let mut b = ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
        b.add_stream(5, false).unwrap();
        let iv = kept(&mut b, 0.0, 1.0, false, &[sample(5, 100, None)]);
        assert!(!iv.streams[0].sender);
        assert!(iv.streams[0].retransmits.is_none());
        assert!(iv.sum.retransmits.is_none());
        let rep = b.end(&EndInput {
            local_elapsed: 1.0,
            peer_elapsed: Some(1.1),
            peer_streams: vec![PeerStream::from_iperf3(5, 120, 7, 0.0, 0, 0)],
            ..EndInput::default()
        });
        let s = rep.end.streams[0].sender.as_ref().unwrap();
        assert_eq!(s.bytes, 120);
        assert_eq!(s.end, 1.1);
        assert_eq!(s.retransmits, Some(7));
        assert_eq!(s.max_snd_cwnd, Some(0));
        assert_eq!(rep.end.streams[0].receiver.as_ref().unwrap().bytes, 100);
        assert_eq!(rep.end.sum_sent.as_ref().unwrap().retransmits, Some(7));
        assert!(!rep.end.sum_sent.as_ref().unwrap().sender);
        // -1 from an iperf3 peer means "no retransmit information".
        assert_eq!(
            PeerStream::from_iperf3(1, 0, -1, 0.0, 0, 0).retransmits,
            None
        );
    }

    #[test]
    fn bidir_order_and_sum_names() {
        for (role, first_sender) in [
            (wirespeed_model::End::Client, true),
            (wirespeed_model::End::Server, false),
        ] {
            let mut b = ResultBuilder::new(Transport::Tcp, role, true, 1.0);
            // Register in the "wrong" order on purpose.
            b.add_stream(7, !first_sender).unwrap();
            b.add_stream(5, first_sender).unwrap();
            let iv = kept(
                &mut b,
                0.0,
                1.0,
                false,
                &[sample(5, 10, tcp(0, 1, 1)), sample(7, 30, tcp(0, 1, 1))],
            );
            assert_eq!(iv.streams[0].socket, Some(5), "{role:?}");
            assert_eq!(iv.streams[0].sender, first_sender);
            assert_eq!(iv.sum.bytes, 10);
            assert_eq!(iv.sum.sender, first_sender);
            let rev = iv.sum_bidir_reverse.expect("reverse sum");
            assert_eq!(rev.bytes, 30);
            assert_eq!(rev.sender, !first_sender);
            let rep = b.end(&EndInput {
                local_elapsed: 1.0,
                ..EndInput::default()
            });
            assert_eq!(rep.end.streams.len(), 2);
            assert!(rep.end.sum_sent_bidir_reverse.is_some());
            assert!(rep.end.sum_received_bidir_reverse.is_some());
            assert_eq!(rep.end.sum_sent.as_ref().unwrap().sender, first_sender);
        }
    }

    #[test]
    fn udp_receiver_loss_and_jitter() {
        let mut b = ResultBuilder::new(Transport::Udp, wirespeed_model::End::Client, false, 1.0);
        b.add_stream(5, false).unwrap();
        b.add_stream(7, false).unwrap();
        let u = |packets, lost, ooo, jitter_ms| {
            Some(UdpSample {
                packets,
                lost,
                out_of_order: ooo,
                jitter_ms,
            })
        };
        let mk = |id, bytes, udp| StreamSample {
            id,
            bytes,
            tcp: None,
            udp,
        };
        let iv = kept(
            &mut b,
            0.0,
            1.0,
            false,
            &[
                mk(5, 14720, u(10, 0, 0, 0.5)),
                mk(7, 7360, u(10, 5, 1, 1.5)),
            ],
        );
        assert_eq!(iv.streams[1].lost_packets, Some(5));
        assert_eq!(iv.streams[1].lost_percent, Some(50.0));
        assert_eq!(iv.streams[1].jitter_ms, Some(1.5));
        assert_eq!(iv.sum.packets, Some(20));
        assert_eq!(iv.sum.lost_packets, Some(5));
        assert_eq!(iv.sum.lost_percent, Some(25.0));
        assert_eq!(iv.sum.jitter_ms, Some(1.0));
        assert!(iv.sum.retransmits.is_none());

        let rep = b.end(&EndInput {
            local_elapsed: 1.0,
            peer_elapsed: Some(0.9),
            peer_streams: vec![
                PeerStream::from_iperf3(5, 14720, -1, 0.0, 0, 10),
                PeerStream::from_iperf3(7, 14720, -1, 0.0, 0, 10),
            ],
            ..EndInput::default()
        });
        let e = &rep.end;
        let u7 = e.streams[1].udp.as_ref().unwrap();
        assert_eq!(u7.bytes, 14720, "udp entry carries the sender's bytes");
        assert_eq!(u7.end, 0.9, "sender time is the peer's");
        assert_eq!(u7.lost_packets, Some(5));
        assert_eq!(u7.packets, Some(10));
        assert_eq!(u7.lost_percent, Some(50.0));
        assert_eq!(u7.out_of_order, Some(1));
        assert!(e.streams[1].sender.is_none());
        let sum = e.sum.as_ref().unwrap();
        assert_eq!(sum.packets, Some(20));
        assert_eq!(sum.lost_percent, Some(25.0));
        assert_eq!(sum.end, 1.0);
        let sent = e.sum_sent.as_ref().unwrap();
        assert!(sent.sender, "iperf3 always marks sum_sent as sender");
        assert_eq!(sent.jitter_ms, Some(0.0));
        let recv = e.sum_received.as_ref().unwrap();
        assert!(!recv.sender);
        assert_eq!(recv.bytes, 22080);
        assert_eq!(recv.packets, Some(20));
        assert!(e.sender_tcp_congestion.is_none());
        assert_eq!(rep.totals[1].bytes_received, 7360);
        assert_eq!(rep.totals[1].packets_sent, Some(10));
    }

    /// Issue 22, item 5: a day-long test grew by an interval a second on both ends. Past the
    /// cap (4 here, 7200 by default) the history is merged in pairs: bounded, bytes and times
    /// kept, the newest interval as it was, the end section unchanged.
    #[test]
    fn kept_intervals_are_bounded_and_merged_in_pairs() {
        let run = |max: Option<usize>| {
            let mut b =
                ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
            if let Some(m) = max {
                b = b.with_max_kept(m);
            }
            b.add_stream(5, true).unwrap();
            let mut bytes = 0;
            for i in 0..1000u64 {
                bytes += 1000 + i;
                let iv = b
                    .interval(
                        i as f64,
                        (i + 1) as f64,
                        false,
                        &[sample(5, bytes, tcp(i, 1, 10))],
                    )
                    .unwrap()
                    .unwrap();
                assert_eq!(iv.sum.start, i as f64, "the newest interval is as it was");
                assert!(b.intervals().len() <= max.unwrap_or(MAX_KEPT_INTERVALS));
            }
            let rep = b.end(&EndInput {
                local_elapsed: 1000.0,
                ..EndInput::default()
            });
            (b.take_intervals(), rep.end)
        };
        let (all, end_all) = run(None);
        let (kept, end_kept) = run(Some(4));
        assert_eq!(all.len(), 1000, "under the default cap nothing changes");
        assert!(kept.len() <= 4, "{}", kept.len());
        assert_eq!(end_all, end_kept, "the end section does not change");
        let total = |v: &[Interval]| v.iter().map(|i| i.sum.bytes).sum::<u64>();
        assert_eq!(total(&kept), total(&all));
        assert_eq!(kept[0].sum.start, 0.0);
        assert_eq!(kept.last().unwrap().sum.end, 1000.0);
        for w in kept.windows(2) {
            assert_eq!(w[0].sum.end, w[1].sum.start, "contiguous");
        }
        let r: u64 = kept.iter().filter_map(|i| i.streams[0].retransmits).sum();
        let r_all: u64 = all.iter().filter_map(|i| i.streams[0].retransmits).sum();
        assert_eq!(r, r_all);
    }

    #[test]
    fn short_empty_interval_is_dropped_and_omit_not_counted() {
        let mut b = ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
        b.add_stream(5, true).unwrap();
        let iv = kept(&mut b, 0.0, 1.0, true, &[sample(5, 500, tcp(1, 1, 10))]);
        assert!(iv.streams[0].omitted && iv.sum.omitted);
        b.interval(0.0, 1.0, false, &[sample(5, 800, tcp(2, 1, 20))])
            .unwrap()
            .unwrap();
        // 50 ms, nothing moved: dropped.
        assert!(b
            .interval(1.0, 1.05, false, &[sample(5, 800, tcp(2, 1, 20))])
            .unwrap()
            .is_none());
        // 50 ms with bytes: kept.
        assert!(b
            .interval(1.05, 1.1, false, &[sample(5, 900, tcp(2, 1, 20))])
            .unwrap()
            .is_some());
        assert_eq!(b.intervals().len(), 3);
        let rep = b.end(&EndInput {
            local_elapsed: 1.1,
            ..EndInput::default()
        });
        let s = rep.end.streams[0].sender.as_ref().unwrap();
        assert_eq!(s.bytes, 400, "omitted 500 bytes excluded");
        assert_eq!(s.retransmits, Some(1), "omitted retransmit excluded");
        assert_eq!(s.min_rtt, Some(20));
        // the same figures for the observation (a -R peer's report has none)
        assert_eq!(
            b.sender_rtt_us(),
            Some((s.min_rtt.unwrap(), s.mean_rtt.unwrap(), s.max_rtt.unwrap()))
        );
        let mut r = ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
        r.add_stream(5, false).unwrap();
        assert_eq!(r.sender_rtt_us(), None, "a receiving stream takes no RTT");
        assert_eq!(r.sender_max_snd_wnd(), None);
    }

    #[test]
    fn the_largest_advertised_window_is_each_streams_largest_summed() {
        let wnd = |w: u64| {
            tcp(0, 1, 20).map(|t| TcpSample {
                snd_wnd: Some(w),
                ..t
            })
        };
        let mut b = ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
        b.add_stream(5, true).unwrap();
        b.add_stream(7, true).unwrap();
        assert_eq!(b.sender_max_snd_wnd(), None, "no sample yet");
        // stream 5's window swings 90 K → 40 K; 7's grows 10 K → 30 K; an omitted 500 K is not
        // the test's
        kept(&mut b, 0.0, 1.0, true, &[sample(5, 1, wnd(500_000))]);
        kept(
            &mut b,
            1.0,
            2.0,
            false,
            &[sample(5, 2, wnd(90_000)), sample(7, 1, wnd(10_000))],
        );
        kept(
            &mut b,
            2.0,
            3.0,
            false,
            &[sample(5, 3, wnd(40_000)), sample(7, 2, wnd(30_000))],
        );
        assert_eq!(b.sender_max_snd_wnd(), Some(120_000));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let mut b = ResultBuilder::new(Transport::Tcp, wirespeed_model::End::Client, false, 1.0);
        b.add_stream(5, true).unwrap();
        assert_eq!(b.add_stream(5, true), Err(BuildError::DuplicateStream(5)));
        assert_eq!(
            b.interval(0.0, 1.0, false, &[sample(9, 1, None)]).err(),
            Some(BuildError::UnknownStream(9))
        );
        // Counters going backwards count as zero, not as a huge delta.
        b.interval(0.0, 1.0, false, &[sample(5, 1000, tcp(10, 1, 1))])
            .unwrap();
        let iv = b
            .interval(1.0, 2.0, false, &[sample(5, 10, tcp(2, 1, 1))])
            .unwrap()
            .unwrap();
        assert_eq!(iv.streams[0].bytes, 0);
        assert_eq!(iv.streams[0].retransmits, Some(0));
    }

    /// Zero, negative and non-finite durations and CPU figures must still give
    /// JSON without NaN/inf/null numbers that parses back to the same model.
    #[test]
    fn edge_cases_serialize_to_valid_json() {
        let mut b = ResultBuilder::new(Transport::Udp, wirespeed_model::End::Server, true, 0.0);
        b.add_stream(5, true).unwrap();
        b.add_stream(6, false).unwrap();
        let nan_udp = Some(UdpSample {
            packets: 0,
            lost: 0,
            out_of_order: 0,
            jitter_ms: f64::NAN,
        });
        b.interval(
            1.0,
            1.0,
            false,
            &[
                StreamSample {
                    id: 5,
                    bytes: 100,
                    tcp: None,
                    udp: nan_udp,
                },
                StreamSample {
                    id: 6,
                    bytes: 100,
                    tcp: None,
                    udp: nan_udp,
                },
            ],
        )
        .unwrap();
        b.interval(f64::NAN, f64::INFINITY, false, &[]).unwrap();
        b.interval(2.0, 1.0, false, &[]).unwrap();
        let rep = b.end(&EndInput {
            local_elapsed: f64::NAN,
            peer_elapsed: Some(f64::NEG_INFINITY),
            cpu: CpuUtilization {
                host_total: f64::NAN,
                host_user: f64::INFINITY,
                ..CpuUtilization::default()
            },
            ..EndInput::default()
        });
        let mut r = TestResult {
            intervals: b.take_intervals(),
            end: rep.end,
            ..TestResult::default()
        };
        r.end.streams[0].udp.as_mut().unwrap().jitter_ms = Some(f64::NAN);
        let text = serde_json::to_string(&r).unwrap();
        for bad in ["NaN", "Infinity", ":null"] {
            assert!(!text.contains(bad), "{bad} in {text}");
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        fn all_numbers_finite(v: &serde_json::Value) {
            match v {
                serde_json::Value::Number(n) => {
                    assert!(n.as_f64().is_some_and(f64::is_finite), "{n}")
                }
                serde_json::Value::Array(a) => a.iter().for_each(all_numbers_finite),
                serde_json::Value::Object(o) => o.values().for_each(all_numbers_finite),
                _ => {}
            }
        }
        all_numbers_finite(&v);
        let back: TestResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back.intervals.len(), 3);
        assert_eq!(back.intervals[0].streams[0].bits_per_second, 0.0);
        assert_eq!(
            back.end.streams[0].udp.as_ref().unwrap().jitter_ms,
            Some(0.0)
        );
        // Re-serializing the parsed model gives the same text.
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
    }

    #[test]
    fn math_helpers() {
        assert_eq!(bits_per_second(125, 1.0), 1000.0);
        assert_eq!(bits_per_second(125, 0.0), 0.0);
        assert_eq!(bits_per_second(125, -1.0), 0.0);
        assert_eq!(bits_per_second(125, f64::NAN), 0.0);
        assert_eq!(bits_per_second(u64::MAX, 1e-300), 0.0);
        assert_eq!(lost_percent(1, 4), 25.0);
        assert_eq!(lost_percent(1, 0), 0.0);
        assert_eq!(lost_percent(-1, 4), -25.0);
    }
}
