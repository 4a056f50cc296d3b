//! Where the work ran (issue 6), wired into both runners through the [`crate::hooks::Observe`]
//! hook of their configuration (no hook: no observation).
//!
//! Each runner owns a [`TestObserver`]: started when its data phase starts, sampled at every
//! interval tick, closed at the final tick (with the workers' CPUs and the senders' `TCP_INFO`
//! limits, while the sockets are still open). Each end sends its observation in the
//! `observation` slot of its results' extension; each joins the peer's with its own, computes the
//! verdict and stores both under its report's `wirespeed.observation` and `wirespeed.verdict`, so
//! the server's output shows where the work ran as the client's does.
//! Observation never fails a test: when `/proc` cannot be read, the observation is absent.

use std::net::IpAddr;

use wirespeed_datapath::tcp::TcpInfo;
use wirespeed_datapath::ThreadWatch;
use wirespeed_model::observation::{
    BitsPerSecond, EndObservation, IntervalObservation, Role, TcpLimits, WorkerRun,
};
use wirespeed_model::verdict::{ControlStall, Measured, PeerSilent};
use wirespeed_model::{TestObservation, Worker};
use wirespeed_protocol::{Direction, ResultsExt};
use wirespeed_report::WirespeedExt;
use wirespeed_report::{End, Interval};

use crate::hooks::{EndObserver, ObserveHook};

/// `true` when this end (`client` or not) sends in a test going `direction`.
pub fn sends(direction: Direction, client: bool) -> bool {
    match direction {
        Direction::Both => true,
        Direction::ClientToServer => client,
        Direction::ServerToClient => !client,
    }
}

/// The role of one end for a direction: who sends is [`sends`]'s rule.
pub fn role(direction: Direction, client: bool) -> Role {
    match direction {
        Direction::Both => Role::Both,
        _ if sends(direction, client) => Role::Sender,
        _ => Role::Receiver,
    }
}

/// The workers (as `assemble::worker_infos` lists them) as the observation records them.
pub fn worker_runs(workers: &[Worker]) -> Vec<WorkerRun> {
    workers
        .iter()
        .enumerate()
        .map(|(i, w)| WorkerRun {
            worker: i as u32,
            cpu_requested: w.cpu_requested,
            cpus_seen: w.cpus_seen.clone(),
            streams: w
                .streams
                .iter()
                .filter_map(|&s| i32::try_from(s).ok())
                .collect(),
            tid: w.tid,
        })
        .collect()
}

/// The senders' `TCP_INFO` limits summed over their streams; `None` without senders or when the
/// kernel has no busy-time counters (before 4.10).
pub fn tcp_limits<'a>(infos: impl IntoIterator<Item = &'a TcpInfo>) -> Option<TcpLimits> {
    let mut total: Option<TcpLimits> = None;
    for i in infos {
        let Some(busy) = i.busy_time_us else { continue };
        let one = TcpLimits {
            busy_us: busy,
            rwnd_limited_us: i.rwnd_limited_us.unwrap_or(0),
            sndbuf_limited_us: i.sndbuf_limited_us.unwrap_or(0),
            pmtu: (i.pmtu > 0).then_some(i.pmtu),
            dsack_dups: i.dsack_dups.map_or(0, u64::from),
            mss: (i.snd_mss > 0).then_some(i.snd_mss),
            srtt_us: (i.rtt_us > 0).then_some(i.rtt_us),
            rtt_us: None,
            min_rtt_us: i.min_rtt_us.filter(|r| *r > 0),
            snd_wnd: i.snd_wnd.map(u64::from),
            rto_timeouts: i.total_rto.map(u64::from),
            rto_time_ms: i.total_rto_time_ms.map(u64::from),
        };
        match &mut total {
            Some(t) => t.add(&one),
            None => total = Some(one),
        }
    }
    total
}

/// What this end's report says the test measured, for the verdict: the receiver's throughput
/// (total and per interval; a UDP sender's own intervals are left out, what it sent is not what
/// arrived), TCP retransmits, bytes sent, the MSS (`mss`, the senders' `TCP_INFO`) and the
/// senders' RTT (smallest, mean of the streams' means, largest), UDP loss as the receiver
/// counted it. A saved report gives the same when read into the report's types and passed here.
pub fn measured(udp: bool, end: &End, intervals: &[Interval], mss: Option<u32>) -> Measured {
    let received = end.sum_received.as_ref().or(end.sum.as_ref());
    let rtts: Vec<(u64, u64, u64)> = end
        .streams
        .iter()
        .filter_map(|s| {
            let snd = s.sender.as_ref()?;
            Some((snd.min_rtt?, snd.mean_rtt?, snd.max_rtt?))
        })
        .collect();
    let rtt_us = (!udp && !rtts.is_empty()).then(|| {
        (
            rtts.iter().map(|r| r.0).min().unwrap_or(0),
            rtts.iter().map(|r| r.1).sum::<u64>() / rtts.len() as u64,
            rtts.iter().map(|r| r.2).max().unwrap_or(0),
        )
    });
    let lost = |s: &wirespeed_report::Summary| {
        Some((
            u64::try_from(s.lost_packets?).ok()?,
            u64::try_from(s.packets?).ok()?,
        ))
    };
    Measured {
        throughput: received.map(|s| BitsPerSecond(s.bits_per_second)),
        interval_bps: intervals
            .iter()
            .filter(|i| !(i.sum.omitted || (udp && i.sum.sender)))
            .map(|i| i.sum.bits_per_second)
            .collect(),
        udp,
        retransmits: (!udp)
            .then(|| end.sum_sent.as_ref().and_then(|s| s.retransmits))
            .flatten(),
        bytes_sent: end.sum_sent.as_ref().map(|s| s.bytes),
        bytes_received: received.map(|s| s.bytes),
        rate_bps: None,
        zero_copy_send: None,
        reverse: None,
        local: None,
        mss: if udp { None } else { mss.filter(|m| *m > 0) },
        rtt_us,
        control_stall: None,
        peer_silent: None,
        congestion: if udp {
            None
        } else {
            end.sender_tcp_congestion.clone()
        },
        target_bps: None,
        udp_sent: if udp {
            end.sum_sent
                .as_ref()
                .and_then(|s| u64::try_from(s.packets?).ok())
        } else {
            None
        },
        udp_lost: if udp {
            end.sum_received
                .as_ref()
                .and_then(lost)
                .or_else(|| end.sum.as_ref().and_then(lost))
        } else {
            None
        },
    }
}

/// `--bidir`: [`measured`] of the client → server direction with the server → client one under
/// `reverse`, each from its own figures — the report's `sum_*` and the intervals' `sum`, then
/// `sum_*_bidir_reverse` (both ends list the client → server streams first), the streams of that
/// direction — and `local`, which end this report is (`client`). `mss`, the senders' at the final
/// tick, is this end's: the direction it sends in (the other's comes from the peer's observation).
/// Without the reverse sums (not `--bidir`): [`measured`] as is.
pub fn measured_bidir(
    udp: bool,
    end: &End,
    intervals: &[Interval],
    mss: Option<u32>,
    client: bool,
) -> Measured {
    if end.sum_sent_bidir_reverse.is_none() && end.sum_bidir_reverse.is_none() {
        return measured(udp, end, intervals, mss);
    }
    // the streams this end sends on: the client's in the client → server direction
    let sent_here = |s: &wirespeed_report::EndStream| {
        s.sender
            .as_ref()
            .or(s.udp.as_ref())
            .is_some_and(|x| x.sender)
    };
    let one_way = |forward: bool| {
        let mine = forward == client;
        let e = End {
            streams: end
                .streams
                .iter()
                .filter(|s| sent_here(s) == mine)
                .cloned()
                .collect(),
            sum: if forward {
                end.sum.clone()
            } else {
                end.sum_bidir_reverse.clone()
            },
            sum_sent: if forward {
                end.sum_sent.clone()
            } else {
                end.sum_sent_bidir_reverse.clone()
            },
            sum_received: if forward {
                end.sum_received.clone()
            } else {
                end.sum_received_bidir_reverse.clone()
            },
            sender_tcp_congestion: end.sender_tcp_congestion.clone(),
            ..End::default()
        };
        let ivs: Vec<Interval> = intervals
            .iter()
            .filter_map(|i| {
                let sum = if forward {
                    i.sum.clone()
                } else {
                    i.sum_bidir_reverse.clone()?
                };
                Some(Interval {
                    streams: Vec::new(),
                    sum,
                    sum_bidir_reverse: None,
                    extra: Default::default(),
                })
            })
            .collect();
        measured(udp, &e, &ivs, if mine { mss } else { None })
    };
    Measured {
        reverse: Some(Box::new(one_way(false))),
        local: Some(if client {
            wirespeed_model::End::Client
        } else {
            wirespeed_model::End::Server
        }),
        ..one_way(true)
    }
}

/// The observer of one end of one test.
#[derive(Default)]
pub struct TestObserver {
    hook: Option<ObserveHook>,
    running: Option<Box<dyn EndObserver>>,
    end: Option<EndObservation>,
    /// The senders' MSS at the final tick (for the loss rate of the verdict).
    mss: Option<u32>,
    /// The control connection stalled on the results message.
    stall: Option<ControlStall>,
    /// The peer went silent after the test began.
    silent: Option<PeerSilent>,
}

impl std::fmt::Debug for TestObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestObserver")
            .field("running", &self.running.is_some())
            .field("end", &self.end)
            .finish()
    }
}

impl TestObserver {
    /// Start observing (first snapshot) through `hook`, when there is one. `peer` finds the NIC
    /// through the route to it.
    pub fn start(
        hook: Option<&ObserveHook>,
        direction: Direction,
        client: bool,
        peer: IpAddr,
        local: Option<IpAddr>,
    ) -> Self {
        TestObserver {
            hook: hook.cloned(),
            running: hook.and_then(|h| h.0.start(role(direction, client), peer, local)),
            end: None,
            mss: None,
            stall: None,
            silent: None,
        }
    }

    /// An interval tick: the interval's observation, when this end is observed.
    pub fn tick(&mut self, start: f64, end: f64) -> Option<IntervalObservation> {
        self.running.as_mut().and_then(|o| o.tick(start, end))
    }

    /// What is known of this end before any interval, when it is observed.
    pub fn head(&self) -> Option<EndObservation> {
        self.running.as_ref().and_then(|o| o.head())
    }

    /// The verdict over a running test so far: this end's and the peer's observation of the
    /// intervals so far (the peer's from its live frames), and what was measured so far.
    /// `None` without an observe hook or before this end has a head.
    pub fn verdict_so_far(
        &self,
        local: &EndObservation,
        peer: Option<&EndObservation>,
        peer_is_wirespeed: bool,
        measured: &Measured,
    ) -> Option<wirespeed_model::Verdict> {
        let hook = self.hook.as_ref()?;
        let test = TestObservation::combine(local.clone(), Ok(peer), peer_is_wirespeed);
        Some(hook.0.verdict(&test, measured))
    }

    /// This end's worker threads, once they run (see [`EndObserver::own_threads`]).
    pub fn own_threads(&mut self, threads: &[ThreadWatch]) {
        if let Some(o) = self.running.as_mut() {
            o.own_threads(threads);
        }
    }

    /// The workers are about to be stopped (see [`EndObserver::hold_threads`]).
    pub fn hold_threads(&mut self) {
        if let Some(o) = self.running.as_mut() {
            o.hold_threads();
        }
    }

    /// The final tick: close the totals with the workers and the senders' limits.
    pub fn close(&mut self, workers: &[Worker], tcp: Option<TcpLimits>) {
        if let Some(o) = self.running.take() {
            self.end = o.close(&worker_runs(workers), tcp);
        }
    }

    /// The workers' own CPU time (user + system seconds), once they have joined: the total of
    /// this end's observation carries it (for the cost per bit).
    pub fn note_worker_cpu(&mut self, seconds: f64) {
        if let Some(e) = &mut self.end {
            e.total.worker_cpu_s = Some(seconds);
        }
    }

    /// The senders' MSS (`TCP_INFO`) at the final tick, while the sockets are open.
    pub fn note_mss(&mut self, mss: Option<u32>) {
        self.mss = mss.filter(|m| *m > 0);
    }

    /// The control connection stalled on a large message (see `client`'s black-hole check).
    pub fn note_stall(&mut self, stall: ControlStall) {
        self.stall = Some(stall);
    }

    /// The peer went silent after the test began (see [`crate::stall::peer_silent`]).
    pub fn note_silent(&mut self, silent: PeerSilent) {
        self.silent = Some(silent);
    }

    /// The silent peer noted, if any.
    pub fn silent(&self) -> Option<&PeerSilent> {
        self.silent.as_ref()
    }

    /// The stall noted, if any.
    pub fn stall(&self) -> Option<&ControlStall> {
        self.stall.as_ref()
    }

    /// The senders' MSS noted at the final tick.
    pub fn mss(&self) -> Option<u32> {
        self.mss
    }

    /// This end's observation, once closed.
    pub fn end(&self) -> Option<&EndObservation> {
        self.end.as_ref()
    }

    /// This end's observation as the extension carries it.
    pub fn value(&self) -> Option<EndObservation> {
        self.end.clone()
    }

    /// Join the peer's observation (from its results' extension; `peer` is `None` when the
    /// peer is iperf3) with this end's, compute the verdict from what the test measured (see
    /// [`measured`]), and store both in the report. The client and the server each do it for
    /// their own report.
    pub fn attach(&self, ext: &mut WirespeedExt, peer: Option<&ResultsExt>, measured: &Measured) {
        let (Some(local), Some(hook)) = (self.end.clone(), &self.hook) else {
            return;
        };
        let remote = match peer {
            Some(ResultsExt {
                observation_error: Some(e),
                ..
            }) => Err(e.as_str()),
            p => Ok(p.and_then(|p| p.observation.as_ref())),
        };
        let test = if peer.is_none() && self.stall.is_some() {
            TestObservation::local_only(
                local,
                "its results never arrived (the control connection stalled)",
            )
        } else if let (None, Some(s)) = (peer, &self.silent) {
            TestObservation::local_only(
                local,
                format!(
                    "its results never arrived (the peer went silent in the {} phase)",
                    s.phase.words()
                ),
            )
        } else {
            TestObservation::combine(local, remote, peer.is_some())
        };
        ext.verdict = Some(hook.0.verdict(&test, measured));
        ext.cost = hook.0.cost(&test, measured).map(|mut c| {
            // the data path each end ran: this end's from its own workers, the peer's from its
            // results
            let local_role = test.local.role;
            for e in [c.sender.as_mut(), c.receiver.as_mut()]
                .into_iter()
                .flatten()
            {
                let local = e.role == local_role;
                e.path = match (e.role, local) {
                    (Role::Sender, true) => ext.send_path.clone(),
                    (Role::Sender, false) => ext.remote_send_path.clone(),
                    (_, true) => ext.recv_path.clone(),
                    (_, false) => ext.remote_recv_path.clone(),
                };
            }
            c
        });
        ext.ceiling = hook.0.ceiling(&test, measured);
        ext.observation = Some(test);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::CpuSet;

    #[test]
    fn roles_by_direction_and_end() {
        assert_eq!(role(Direction::ClientToServer, true), Role::Sender);
        assert_eq!(role(Direction::ClientToServer, false), Role::Receiver);
        assert_eq!(role(Direction::ServerToClient, true), Role::Receiver);
        assert_eq!(role(Direction::ServerToClient, false), Role::Sender);
        assert_eq!(role(Direction::Both, false), Role::Both);
    }

    #[test]
    fn workers_and_tcp_limits_convert() {
        let w = worker_runs(&[Worker {
            cpu_requested: Some(3),
            paired: false,
            cpus_seen: CpuSet::from_cpus([3, 5]),
            streams: vec![1, 3],
            rx_zerocopy: None,
            wake: None,
            tid: None,
        }]);
        assert_eq!(w[0].cpus_seen.to_string(), "3,5");
        assert_eq!(w[0].streams, vec![1, 3]);
        assert_eq!(tcp_limits(&[]), None);
        // the loss model's inputs travel with the limits: the smaller MSS, the larger RTT
        let info = |mss: u32, rtt_us: u32| TcpInfo {
            busy_time_us: Some(1000),
            snd_mss: mss,
            rtt_us,
            ..Default::default()
        };
        let t = tcp_limits(&[info(8948, 40), info(1448, 90)]).unwrap();
        assert_eq!((t.busy_us, t.mss, t.srtt_us), (2000, Some(1448), Some(90)));
        // the path's own RTT: the smallest any stream's kernel measured
        let based = |min_rtt: u32| TcpInfo {
            min_rtt_us: Some(min_rtt),
            ..info(1448, 5000)
        };
        let t = tcp_limits(&[based(25), based(12)]).unwrap();
        assert_eq!(t.min_rtt_us, Some(12));
        // a kernel's 0 is unknown, not a value
        let t = tcp_limits(&[info(0, 0)]).unwrap();
        assert_eq!((t.mss, t.srtt_us, t.min_rtt_us), (None, None, None));
        assert_eq!(tcp_limits(&[based(0)]).unwrap().min_rtt_us, None);
    }

    #[test]
    fn a_bidir_report_gives_the_verdict_each_direction() {
        use wirespeed_report::{EndStream, IntervalStats, Summary};
        let stats = |bps: f64, sender: bool| IntervalStats {
            bits_per_second: bps,
            sender,
            ..Default::default()
        };
        let iv = |fwd: f64, rev: f64, client: bool| Interval {
            sum: stats(fwd, client),
            sum_bidir_reverse: Some(stats(rev, !client)),
            ..Default::default()
        };
        let sum = |bps: f64, retransmits: Option<u64>| {
            Some(Summary {
                bits_per_second: bps,
                bytes: 1000,
                retransmits,
                ..Default::default()
            })
        };
        // a stream this end sends on (with its RTT) and one it receives on
        let stream = |sender: bool, rtt: u64| EndStream {
            sender: Some(Summary {
                sender,
                min_rtt: Some(rtt),
                mean_rtt: Some(rtt),
                max_rtt: Some(rtt),
                ..Default::default()
            }),
            ..Default::default()
        };
        for client in [true, false] {
            let end = End {
                // client → server first in both ends' reports
                streams: vec![stream(client, 100), stream(!client, 9000)],
                sum_sent: sum(9e9, Some(3)),
                sum_received: sum(9e9, None),
                sum_sent_bidir_reverse: sum(2e8, Some(40)),
                sum_received_bidir_reverse: sum(2e8, None),
                ..Default::default()
            };
            let ivs = [iv(9e9, 2e8, client), iv(8e9, 2.1e8, client)];
            let m = measured_bidir(false, &end, &ivs, Some(1448), client);
            let want = if client {
                wirespeed_model::End::Client
            } else {
                wirespeed_model::End::Server
            };
            assert_eq!(m.local, Some(want));
            assert_eq!(m.throughput, Some(BitsPerSecond(9e9)));
            assert_eq!(m.interval_bps, vec![9e9, 8e9]);
            assert_eq!(m.retransmits, Some(3));
            assert_eq!(m.rtt_us, Some((100, 100, 100)), "client {client}");
            let r = m.reverse.as_deref().expect("the reverse direction");
            assert_eq!(r.throughput, Some(BitsPerSecond(2e8)));
            assert_eq!(r.interval_bps, vec![2e8, 2.1e8]);
            assert_eq!(r.retransmits, Some(40));
            assert_eq!(r.rtt_us, Some((9000, 9000, 9000)), "client {client}");
            // this end's MSS is the direction it sends in
            assert_eq!(
                (m.mss, r.mss),
                if client {
                    (Some(1448), None)
                } else {
                    (None, Some(1448))
                }
            );
            assert_eq!(r.reverse, None);
        }
        // not --bidir: one direction, as `measured`
        let end = End {
            sum_received: sum(1e9, None),
            ..Default::default()
        };
        let m = measured_bidir(false, &end, &[], None, true);
        assert_eq!((m.reverse, m.local), (None, None));
    }

    #[test]
    fn the_report_gives_the_verdict_what_was_measured() {
        use wirespeed_report::{EndStream, IntervalStats, Summary};
        let iv = |bps: f64, sender: bool, omitted: bool| Interval {
            sum: IntervalStats {
                bits_per_second: bps,
                sender,
                omitted,
                ..Default::default()
            },
            ..Default::default()
        };
        let end = End {
            streams: vec![EndStream {
                sender: Some(Summary {
                    min_rtt: Some(800),
                    mean_rtt: Some(5000),
                    max_rtt: Some(26000),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            sum_sent: Some(Summary {
                bytes: 1_000_000,
                retransmits: Some(7),
                ..Default::default()
            }),
            sum_received: Some(Summary {
                bits_per_second: 2e9,
                ..Default::default()
            }),
            ..Default::default()
        };
        let ivs = [
            iv(1e9, true, true),
            iv(2e9, true, false),
            iv(3e9, true, false),
        ];
        let m = measured(false, &end, &ivs, Some(1448));
        assert_eq!(m.throughput, Some(BitsPerSecond(2e9)));
        assert_eq!(
            m.interval_bps,
            vec![2e9, 3e9],
            "the omitted interval left out"
        );
        assert_eq!(m.retransmits, Some(7));
        assert_eq!(m.bytes_sent, Some(1_000_000));
        assert_eq!(m.mss, Some(1448));
        assert_eq!(m.rtt_us, Some((800, 5000, 26000)));
        assert_eq!(m.udp_lost, None);
        // UDP: the receiver's loss; a sender's own intervals are not what arrived.
        let end = End {
            sum_received: Some(Summary {
                bits_per_second: 1e9,
                lost_packets: Some(25),
                packets: Some(100),
                ..Default::default()
            }),
            ..Default::default()
        };
        let m = measured(true, &end, &[iv(3e9, true, false)], Some(1448));
        assert!(m.udp && m.interval_bps.is_empty() && m.mss.is_none());
        assert_eq!(m.udp_lost, Some((25, 100)));
    }

    /// What a saved report in iperf3's `-J` shape gives, read through the report's types (once
    /// a string-keyed reader in the verdict crate; its cases live on here).
    #[test]
    fn measured_from_an_iperf3_shaped_report_read_through_its_types() {
        let read = |json: serde_json::Value| -> (End, Vec<Interval>) {
            let end: End = serde_json::from_value(json["end"].clone()).unwrap();
            let ivs: Vec<Interval> = serde_json::from_value(json["intervals"].clone()).unwrap();
            (end, ivs)
        };
        let (end, ivs) = read(serde_json::json!({
            "intervals": [
                {"streams": [], "sum": {"start": 0, "end": 1, "seconds": 1, "bytes": 0,
                 "bits_per_second": 3.4e8}},
                {"streams": [], "sum": {"start": 1, "end": 2, "seconds": 1, "bytes": 0,
                 "bits_per_second": 3.7e8}}
            ],
            "end": {
                "streams": [
                    {"sender": {"start": 0, "end": 2, "seconds": 2, "bytes": 0,
                     "bits_per_second": 0, "min_rtt": 828, "mean_rtt": 5000, "max_rtt": 26288}},
                    {"sender": {"start": 0, "end": 2, "seconds": 2, "bytes": 0,
                     "bits_per_second": 0, "min_rtt": 900, "mean_rtt": 6000, "max_rtt": 20000}}
                ],
                "sum_sent": {"start": 0, "end": 2, "seconds": 2, "bytes": 231473152u64,
                 "bits_per_second": 0, "retransmits": 2081},
                "sum_received": {"start": 0, "end": 2, "seconds": 2, "bytes": 0,
                 "bits_per_second": 3.07e8}
            }
        }));
        let m = measured(false, &end, &ivs, Some(1448));
        assert_eq!(m.throughput, Some(BitsPerSecond(3.07e8)));
        assert_eq!(m.interval_bps, vec![3.4e8, 3.7e8]);
        assert_eq!((m.retransmits, m.bytes_sent), (Some(2081), Some(231473152)));
        assert_eq!(m.mss, Some(1448));
        assert_eq!(
            m.rtt_us,
            Some((828, 5500, 26288)),
            "smallest, mean of the streams' means, largest"
        );
        assert_eq!((m.udp_lost, m.udp_sent), (None, None));
        // UDP: the receiver's count of loss over the end's `sum`; a sender's intervals left out.
        let (end, ivs) = read(serde_json::json!({
            "intervals": [{"streams": [], "sum": {"start": 0, "end": 1, "seconds": 1,
                "bytes": 0, "bits_per_second": 3e9, "sender": true}}],
            "end": {
                "sum": {"start": 0, "end": 1, "seconds": 1, "bytes": 0, "bits_per_second": 0,
                 "lost_packets": 9, "packets": 100},
                "sum_sent": {"start": 0, "end": 1, "seconds": 1, "bytes": 1000,
                 "bits_per_second": 0, "packets": 100},
                "sum_received": {"start": 0, "end": 1, "seconds": 1, "bytes": 0,
                 "bits_per_second": 1e9, "lost_packets": 25, "packets": 100}
            }
        }));
        let m = measured(true, &end, &ivs, Some(1448));
        assert!(m.udp && m.interval_bps.is_empty());
        assert_eq!(m.udp_lost, Some((25, 100)));
        assert_eq!(m.udp_sent, Some(100));
        assert_eq!((m.retransmits, m.mss, m.rtt_us), (None, None, None));
        // Nothing reported: nothing known.
        assert_eq!(
            measured(false, &End::default(), &[], None),
            Measured::default()
        );
    }

    struct FakeObserve;
    struct FakeEnd(Role, Vec<(f64, f64)>);

    impl crate::hooks::Observe for FakeObserve {
        fn start(
            &self,
            role: Role,
            _peer: IpAddr,
            _local: Option<IpAddr>,
        ) -> Option<Box<dyn EndObserver>> {
            Some(Box::new(FakeEnd(role, Vec::new())))
        }
        fn verdict(&self, test: &TestObservation, m: &Measured) -> wirespeed_model::Verdict {
            let receiver = m.throughput;
            wirespeed_model::Verdict::new(
                wirespeed_model::VerdictId::NoCpuSaturated,
                None,
                format!(
                    "{} intervals at {:?}",
                    test.local.intervals.len(),
                    receiver.map(|b| b.0)
                ),
            )
        }
    }

    impl EndObserver for FakeEnd {
        fn tick(
            &mut self,
            start: f64,
            end: f64,
        ) -> Option<wirespeed_model::observation::IntervalObservation> {
            self.1.push((start, end));
            None
        }
        fn close(
            self: Box<Self>,
            workers: &[WorkerRun],
            tcp: Option<TcpLimits>,
        ) -> Option<EndObservation> {
            Some(EndObservation {
                role: self.0,
                host: None,
                iface: Some("lo".into()),
                iface_mtu: None,
                iface_speed_mbps: None,
                nic_numa_node: None,
                nic_irqs: vec![],
                topology: Default::default(),
                intervals: self
                    .1
                    .iter()
                    .map(
                        |&(s, e)| wirespeed_model::observation::IntervalObservation {
                            start: Some(s),
                            end: Some(e),
                            ..Default::default()
                        },
                    )
                    .collect(),
                total: wirespeed_model::observation::IntervalObservation {
                    workers: workers.to_vec(),
                    tcp,
                    ..Default::default()
                },
                notes: vec![],
                cpu_quota: None,
                iface_link: None,
                iface_stack: None,
            })
        }
    }

    #[test]
    fn the_hook_sees_ticks_and_close_and_decides_the_verdict() {
        let hook = ObserveHook::new(FakeObserve);
        let mut o = TestObserver::start(
            Some(&hook),
            Direction::ClientToServer,
            true,
            "127.0.0.1".parse().unwrap(),
            None,
        );
        o.tick(0.0, 1.0);
        o.tick(1.0, 2.0);
        let workers = [Worker {
            cpu_requested: Some(2),
            paired: false,
            cpus_seen: CpuSet::from_cpus([2]),
            streams: vec![1],
            rx_zerocopy: None,
            wake: None,
            tid: None,
        }];
        o.close(&workers, None);
        o.close(&[], None);
        let e = o.end().expect("closed once");
        assert_eq!(e.role, Role::Sender);
        assert_eq!(e.intervals.len(), 2);
        assert_eq!(e.total.workers[0].cpus_seen, CpuSet::from_cpus([2]));
        let mut ext = WirespeedExt::default();
        o.attach(
            &mut ext,
            None,
            &Measured::throughput(Some(BitsPerSecond(1e9))),
        );
        let obs = ext.observation.unwrap();
        assert!(obs.remote_absent.unwrap().contains("iperf3"));
        assert_eq!(
            ext.verdict.unwrap().line,
            "2 intervals at Some(1000000000.0)"
        );
        // A peer whose observation did not parse: said so, the local end still counts.
        let peer = ResultsExt {
            observation_error: Some("bad role".into()),
            ..ResultsExt::default()
        };
        let mut ext = WirespeedExt::default();
        o.attach(&mut ext, Some(&peer), &Measured::default());
        assert!(ext
            .observation
            .unwrap()
            .remote_absent
            .unwrap()
            .contains("does not parse: bad role"));
    }

    #[test]
    fn without_a_hook_nothing_is_observed() {
        let mut o = TestObserver::start(
            None,
            Direction::ServerToClient,
            false,
            "127.0.0.1".parse().unwrap(),
            None,
        );
        o.tick(0.0, 1.0);
        o.close(&[], None);
        assert!(o.end().is_none());
        let mut ext = WirespeedExt::default();
        o.attach(&mut ext, None, &Measured::default());
        assert!(ext.observation.is_none() && ext.verdict.is_none());
    }
}
