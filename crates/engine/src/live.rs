//! A running test's observation, interval by interval, at both ends (the live frames of
//! `wirespeed_protocol::live`), and the verdict over the intervals so far.
//!
//! [`LiveState`] belongs to a [`crate::measurement::Measurement`]: at each interval tick it
//! adds this end's observation of the interval (the workers taken from their threads'
//! scheduling) to this end's [`RunningEnd`], queues the frame for the peer (when the session
//! takes them) and, when the reporter shows it, computes the verdict so far through the
//! observe hook and hands a [`LiveEvent`] to the reporter. The peer's frames, fed in by the
//! runner as they arrive, build the peer's [`RunningEnd`].

use wirespeed_model::observation::{BitsPerSecond, IntervalObservation};
use wirespeed_model::verdict::Measured;
use wirespeed_model::RunningEnd;
use wirespeed_protocol::LiveInterval;
use wirespeed_report::{Interval, LiveEvent};

/// Frames queued for the peer at most (the runner drains them after every tick).
const MAX_QUEUED: usize = 8;

/// Both ends' observation of a running test.
#[derive(Debug, Default)]
pub struct LiveState {
    seq: u64,
    head_sent: bool,
    local: Option<RunningEnd>,
    peer: Option<RunningEnd>,
    peer_last: Option<IntervalObservation>,
    peer_iface: Option<String>,
    local_iface: Option<String>,
    peer_frames: u64,
    out: Vec<LiveInterval>,
}

impl LiveState {
    /// `true` until this end's head was given (see [`LiveState::local_interval`]).
    pub fn needs_head(&self) -> bool {
        self.local.is_none() || !self.head_sent
    }

    /// This end's interval `start..end` and its observation (`head`: this end's head, when it
    /// is observed and [`LiveState::needs_head`]). Queues the frame for the peer.
    pub fn local_interval(
        &mut self,
        start: f64,
        end: f64,
        head: Option<wirespeed_model::EndObservation>,
        obs: Option<IntervalObservation>,
    ) {
        let obs = obs.map(|mut o| {
            if o.workers.is_empty() {
                o.workers = o.workers_from_threads();
            }
            o
        });
        if self.local.is_none() {
            self.local_iface = head.as_ref().and_then(|h| h.iface.clone());
            self.local = head.clone().map(RunningEnd::new);
        }
        if let (Some(l), Some(o)) = (&mut self.local, &obs) {
            l.push(o.clone());
        }
        self.seq += 1;
        let head = if self.head_sent { None } else { head };
        self.head_sent |= head.is_some();
        if self.out.len() < MAX_QUEUED {
            self.out.push(LiveInterval {
                seq: self.seq,
                start,
                end,
                head,
                observation: obs,
            });
        }
    }

    /// Frames for the peer, in order (the runner gives them to its session, which sends them
    /// only when the peer takes them).
    pub fn take_outgoing(&mut self) -> Vec<LiveInterval> {
        std::mem::take(&mut self.out)
    }

    /// A frame from the peer.
    pub fn peer_interval(&mut self, li: LiveInterval) {
        self.peer_frames += 1;
        if let Some(h) = &li.head {
            self.peer_iface = h.iface.clone();
            match &mut self.peer {
                Some(p) => p.set_head(h),
                None => self.peer = Some(RunningEnd::new(h.clone())),
            }
        }
        if let Some(o) = li.observation {
            if let Some(p) = &mut self.peer {
                p.push(o.clone());
            }
            self.peer_last = Some(o);
        }
    }

    /// Frames the peer sent so far.
    pub fn peer_frames(&self) -> u64 {
        self.peer_frames
    }

    /// This end so far.
    pub fn local(&self) -> Option<&RunningEnd> {
        self.local.as_ref()
    }

    /// The peer so far (once its head arrived).
    pub fn peer(&self) -> Option<&RunningEnd> {
        self.peer.as_ref()
    }

    /// The event for the reporter: this end's latest interval, the peer's latest, and the
    /// verdict so far (decided by the caller).
    pub fn event(
        &self,
        start: f64,
        end: f64,
        verdict: Option<wirespeed_model::Verdict>,
    ) -> LiveEvent {
        LiveEvent {
            start,
            end,
            local: self
                .local
                .as_ref()
                .and_then(|l| l.observation().intervals.last().cloned()),
            local_iface: self.local_iface.clone(),
            peer: self.peer_last.clone(),
            peer_iface: self.peer_iface.clone(),
            verdict_so_far: verdict,
        }
    }
}

/// What a running test measured so far, from this end's intervals (for the verdict so far):
/// the mean of the measured (not omitted) intervals' sums as the throughput, each interval's,
/// and the retransmits. `--bidir` (`bidir_local`: this end, and the intervals carry the reverse
/// sums): the client → server figures with the server → client ones under `reverse`, so the
/// verdict so far judges each direction as the final one does.
///
/// Kept as running sums: each tick adds the intervals that came since the last one, instead of
/// reading every interval so far again. When the result builder merged its oldest intervals
/// (past its cap: the list is no longer the one summed plus new ones at its end), the sums
/// start again from the list as it is now, so the figures are always those of the list.
#[derive(Debug, Default)]
pub struct SoFar {
    /// Intervals summed, and the first and last of them (`start`, `end`), to know the list
    /// only grew since.
    seen: usize,
    first: Option<(f64, f64)>,
    last: Option<(f64, f64)>,
    forward: OneWay,
    reverse: OneWay,
    /// The senders' RTT samples (smallest, sum, count, largest) of measured intervals.
    rtt: Option<(u64, u64, u64, u64)>,
}

/// One direction's running sums.
#[derive(Debug, Default)]
struct OneWay {
    /// Interval sums seen (the reverse direction: intervals that carry one).
    count: usize,
    bps: Vec<f64>,
    bps_sum: f64,
    retransmits: u64,
    bytes: u64,
}

impl OneWay {
    fn add(&mut self, s: &wirespeed_report::IntervalStats) {
        self.count += 1;
        if !s.omitted {
            self.bps.push(s.bits_per_second);
            self.bps_sum += s.bits_per_second;
        }
        self.retransmits += s.retransmits.unwrap_or(0);
        self.bytes += s.bytes;
    }

    fn measured(&self, udp: bool) -> Measured {
        Measured {
            throughput: (!self.bps.is_empty())
                .then(|| BitsPerSecond(self.bps_sum / self.bps.len() as f64)),
            interval_bps: self.bps.clone(),
            udp,
            retransmits: (!udp).then_some(self.retransmits),
            // the bytes so far, for the loss rate (the final verdict's from the report's
            // sums): the same figures the final one reads, so the two differ only where the
            // figures did
            bytes_sent: (!udp && self.bytes > 0).then_some(self.bytes),
            ..Measured::default()
        }
    }
}

impl SoFar {
    /// What was measured over `intervals` (the result builder's so far), adding only those
    /// that came since the last call.
    pub fn measured(
        &mut self,
        udp: bool,
        intervals: &[Interval],
        bidir_local: Option<wirespeed_model::End>,
    ) -> Measured {
        let span = |i: &Interval| (i.sum.start, i.sum.end);
        let grew = intervals.len() >= self.seen
            && (self.seen == 0
                || (intervals.first().map(span) == self.first
                    && intervals.get(self.seen - 1).map(span) == self.last));
        if !grew {
            *self = SoFar::default();
        }
        for i in &intervals[self.seen..] {
            self.add(i);
        }
        self.seen = intervals.len();
        self.first = intervals.first().map(span);
        self.last = intervals.last().map(span);
        let forward = self.forward.measured(udp);
        let Some(local) = bidir_local else {
            // the senders' RTT samples so far (smallest, mean, largest), as the final verdict
            // reads them from the report's streams: a shaper's queue shows in them while the
            // test runs
            return Measured {
                rtt_us: self
                    .rtt
                    .filter(|_| !udp)
                    .map(|(min, sum, n, max)| (min, sum / n, max)),
                ..forward
            };
        };
        if self.reverse.count == 0 {
            return forward;
        }
        Measured {
            reverse: Some(Box::new(self.reverse.measured(udp))),
            local: Some(local),
            ..forward
        }
    }

    fn add(&mut self, i: &Interval) {
        self.forward.add(&i.sum);
        if let Some(r) = &i.sum_bidir_reverse {
            self.reverse.add(r);
        }
        if i.sum.omitted {
            return;
        }
        for r in i.streams.iter().filter_map(|s| s.rtt.filter(|r| *r > 0)) {
            self.rtt = Some(match self.rtt {
                None => (r, r, 1, r),
                Some((min, sum, n, max)) => (min.min(r), sum + r, n + 1, max.max(r)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::observation::{CpuUse, Percent, Role, ThreadUse};
    use wirespeed_model::EndObservation;

    fn head(iface: &str) -> EndObservation {
        EndObservation {
            role: Role::Receiver,
            host: None,
            iface: Some(iface.into()),
            iface_mtu: None,
            iface_speed_mbps: None,
            nic_numa_node: None,
            nic_irqs: vec![],
            topology: Default::default(),
            intervals: vec![],
            total: Default::default(),
            notes: vec![],
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        }
    }

    fn obs(cpu: u32) -> IntervalObservation {
        IntervalObservation {
            cpus: vec![CpuUse {
                cpu,
                system: Percent::new(50.0),
                idle: Percent::new(50.0),
                ..Default::default()
            }],
            threads: vec![ThreadUse {
                tid: 9,
                name: format!("ws-dp-cpu{cpu}"),
                cpu: Some(cpu),
                run: Percent::new(50.0),
                wait: Percent::new(0.0),
                role: None,
            }],
            ..Default::default()
        }
    }

    /// The figures read from every interval again (what the running sums replace): the
    /// reference they must equal.
    fn rescan(
        udp: bool,
        intervals: &[Interval],
        bidir_local: Option<wirespeed_model::End>,
    ) -> Measured {
        fn one_way<'a>(
            udp: bool,
            sums: impl Iterator<Item = &'a wirespeed_report::IntervalStats> + Clone,
        ) -> Measured {
            let bps: Vec<f64> = sums
                .clone()
                .filter(|s| !s.omitted)
                .map(|s| s.bits_per_second)
                .collect();
            let retransmits = (!udp).then(|| sums.clone().filter_map(|s| s.retransmits).sum());
            let bytes: u64 = sums.map(|s| s.bytes).sum();
            Measured {
                throughput: (!bps.is_empty())
                    .then(|| BitsPerSecond(bps.iter().sum::<f64>() / bps.len() as f64)),
                interval_bps: bps,
                udp,
                retransmits,
                bytes_sent: (!udp && bytes > 0).then_some(bytes),
                ..Measured::default()
            }
        }
        let forward = one_way(udp, intervals.iter().map(|i| &i.sum));
        let Some(local) = bidir_local else {
            let rtts: Vec<u64> = intervals
                .iter()
                .filter(|i| !i.sum.omitted)
                .flat_map(|i| i.streams.iter().filter_map(|s| s.rtt.filter(|r| *r > 0)))
                .collect();
            return Measured {
                rtt_us: (!udp && !rtts.is_empty()).then(|| {
                    let n = rtts.len() as u64;
                    (
                        rtts.iter().copied().min().unwrap_or(0),
                        rtts.iter().sum::<u64>() / n,
                        rtts.iter().copied().max().unwrap_or(0),
                    )
                }),
                ..forward
            };
        };
        let reverse: Vec<_> = intervals
            .iter()
            .filter_map(|i| i.sum_bidir_reverse.as_ref())
            .collect();
        if reverse.is_empty() {
            return forward;
        }
        Measured {
            reverse: Some(Box::new(one_way(udp, reverse.into_iter()))),
            local: Some(local),
            ..forward
        }
    }

    /// A recorded run's intervals: omitted ones first, RTT samples (some zero, some missing),
    /// retransmits now and then, a reverse direction from the third on.
    fn recorded(n: usize) -> Vec<Interval> {
        use wirespeed_report::IntervalStats;
        (0..n)
            .map(|k| {
                let t = k as f64;
                let stats = |bps: f64, retr: Option<u64>| IntervalStats {
                    start: t,
                    end: t + 1.0,
                    seconds: 1.0,
                    bytes: (bps / 8.0) as u64,
                    bits_per_second: bps,
                    retransmits: retr,
                    omitted: k < 2,
                    ..Default::default()
                };
                let bps = 1e9 + (k * 7919 % 613) as f64 * 1.3e6 + 0.1;
                let stream = |rtt: Option<u64>| IntervalStats {
                    rtt,
                    ..stats(bps / 2.0, None)
                };
                Interval {
                    streams: vec![
                        stream(Some((k as u64 * 37) % 900)),
                        stream((k % 3 != 0).then_some(120 + k as u64)),
                    ],
                    sum: stats(bps, (k % 4 == 1).then_some(k as u64 * 3)),
                    sum_bidir_reverse: (k >= 3).then(|| stats(bps / 9.0, Some(k as u64))),
                    ..Default::default()
                }
            })
            .collect()
    }

    #[test]
    fn the_running_sums_equal_a_rescan_of_every_interval() {
        let all = recorded(40);
        for udp in [false, true] {
            for bidir in [
                None,
                Some(wirespeed_model::End::Client),
                Some(wirespeed_model::End::Server),
            ] {
                let mut so_far = SoFar::default();
                // tick by tick, and now and then several intervals between two looks
                let mut n = 0;
                while n < all.len() {
                    n = (n + 1 + n % 3).min(all.len());
                    let got = so_far.measured(udp, &all[..n], bidir);
                    assert_eq!(got, rescan(udp, &all[..n], bidir), "{n} {udp} {bidir:?}");
                }
                // the builder merged its oldest intervals (past its cap): the list is shorter,
                // then it grows again; the sums follow the list
                let mut merged: Vec<Interval> = all
                    .chunks(2)
                    .map(|c| {
                        let mut i = c[c.len() - 1].clone();
                        i.sum.start = c[0].sum.start;
                        i.sum.bits_per_second =
                            (c[0].sum.bits_per_second + i.sum.bits_per_second) / 2.0;
                        i
                    })
                    .collect();
                assert_eq!(
                    so_far.measured(udp, &merged, bidir),
                    rescan(udp, &merged, bidir)
                );
                merged.extend(recorded(45).into_iter().skip(40));
                assert_eq!(
                    so_far.measured(udp, &merged, bidir),
                    rescan(udp, &merged, bidir)
                );
                // a list of the same length whose first interval changed (merged and grown
                // back to the length summed) is read again too
                let mut same_len = all.clone();
                same_len[0].sum.bits_per_second = 1.0;
                same_len[0].sum.end = 2.0;
                let mut fresh = SoFar::default();
                fresh.measured(udp, &all, bidir);
                assert_eq!(
                    fresh.measured(udp, &same_len, bidir),
                    rescan(udp, &same_len, bidir)
                );
            }
        }
    }

    #[test]
    fn frames_carry_the_head_once_and_workers_from_threads() {
        let mut l = LiveState::default();
        l.local_interval(0.0, 1.0, Some(head("eth0")), Some(obs(3)));
        l.local_interval(1.0, 2.0, Some(head("eth0")), Some(obs(3)));
        let out = l.take_outgoing();
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0].head.as_ref().and_then(|h| h.iface.as_deref()),
            Some("eth0")
        );
        assert!(out[1].head.is_none());
        let w = &out[1].observation.as_ref().unwrap().workers;
        assert_eq!((w.len(), w[0].cpu_requested), (1, Some(3)));
        assert_eq!(
            l.local()
                .unwrap()
                .observation()
                .total
                .app_cpus()
                .to_string(),
            "3"
        );
        // Bounded when nobody drains.
        for i in 0..100 {
            l.local_interval(i as f64, i as f64 + 1.0, None, None);
        }
        assert_eq!(l.take_outgoing().len(), MAX_QUEUED);
    }

    #[test]
    fn the_peers_frames_build_its_running_end() {
        let mut l = LiveState::default();
        // An interval before any head is shown but not accumulated.
        l.peer_interval(LiveInterval {
            seq: 1,
            start: 0.0,
            end: 1.0,
            head: None,
            observation: Some(obs(1)),
        });
        assert!(l.peer().is_none());
        l.peer_interval(LiveInterval {
            seq: 2,
            start: 1.0,
            end: 2.0,
            head: Some(head("eth7")),
            observation: Some(obs(2)),
        });
        assert_eq!(l.peer().unwrap().intervals_seen(), 1);
        let ev = l.event(1.0, 2.0, None);
        assert_eq!(ev.peer.unwrap().cpus[0].cpu, 2);
        assert_eq!(ev.peer_iface.as_deref(), Some("eth7"));
        assert_eq!(l.peer_frames(), 2);
    }

    #[test]
    fn a_bidir_verdict_so_far_gets_each_direction() {
        use wirespeed_report::IntervalStats;
        let stats = |bps: f64, retransmits: u64| IntervalStats {
            bits_per_second: bps,
            retransmits: Some(retransmits),
            ..Default::default()
        };
        let iv = |fwd: f64, rev: Option<f64>| Interval {
            sum: stats(fwd, 1),
            sum_bidir_reverse: rev.map(|r| stats(r, 5)),
            ..Default::default()
        };
        let ivs = [iv(9e9, Some(2e8)), iv(8e9, Some(1e8))];
        let m = SoFar::default().measured(false, &ivs, Some(wirespeed_model::End::Server));
        assert_eq!(m.throughput, Some(BitsPerSecond(8.5e9)));
        assert_eq!(
            (m.retransmits, m.local),
            (Some(2), Some(wirespeed_model::End::Server))
        );
        let r = m.reverse.as_deref().expect("the server → client figures");
        assert_eq!(r.throughput, Some(BitsPerSecond(1.5e8)));
        assert_eq!(r.interval_bps, vec![2e8, 1e8]);
        assert_eq!((r.retransmits, r.reverse.is_none()), (Some(10), true));
        // not --bidir, or no reverse sums yet: one direction
        let m = SoFar::default().measured(false, &ivs, None);
        assert_eq!((m.reverse.is_none(), m.local), (true, None));
        let m =
            SoFar::default().measured(false, &[iv(9e9, None)], Some(wirespeed_model::End::Client));
        assert_eq!((m.reverse.is_none(), m.local), (true, None));
    }
}
