//! One measurement core for both ends: the test's sections built from its parameters, and the
//! running measurement (data phase, timeline, result builder, observer, CPU meter) with one
//! tick rule and one final-tick rule.
//!
//! The client builds [`TestParams`] from its options and sends them; the server receives them.
//! Either way the test is described by those parameters, so `start` and `start.test_start`
//! ([`start_section`], [`test_start`]) and the data phase's configuration ([`data_config`]) are
//! built from them here, once, plus what only this end knows (its CPUs and paths, its
//! addresses, its interval).
//!
//! A [`Measurement`] takes the time from its caller (a `Duration` since the test's epoch), like
//! the protocol's sessions, so its rules are tested without sleeping:
//! - every interval due at `now` is sampled, given to the observer and built, in order; the tick
//!   that closes the omit period marks the counters there;
//! - the final tick happens once: at `min(end, now)` (the last receiver's byte, or when the end
//!   was decided, never in the future), after the intervals due by then; it closes the interval
//!   in progress, then closes the observation with the workers and the senders' `TCP_INFO`
//!   while the sockets are still open. Later calls change nothing;
//! - the measured time is from the end of the omit period to the final tick (0 before it).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirespeed_datapath::tcp::TcpInfo;
use wirespeed_datapath::udp::{UdpRecvPath, UdpSendPath};
use wirespeed_datapath::{self as dp, Budget, RecvPath, SendPath};
use wirespeed_model::{End, Worker};
use wirespeed_protocol::{Cookie, Direction, TestParams, Transport};
use wirespeed_report::builder::{BuildError, ResultBuilder, StreamSample};
use wirespeed_report::{HostPort, LiveEvent, Start, TestStart};

use crate::assemble::{self, VERSION};
use crate::data::{DataConfig, DataPhase, DataSocket, DataStream, Drain, UdpConfig};
use crate::live::LiveState;
use crate::observe::TestObserver;
use crate::output::Reporter;
use crate::placement::WorkerPlacement;
use crate::timeline::Timeline;
use crate::usage::{CpuMeter, CpuPercent};
use crate::EngineError;
use wirespeed_model::RunningEnd;

/// iperf3's default TCP block (`-l`): 128 KiB.
pub const DEFAULT_TCP_BLOCK: u32 = 128 * 1024;
/// iperf3's UDP datagram size when the control connection's MSS is unknown.
pub const DEFAULT_UDP_BLOCK: u32 = 1460;

/// The block (TCP) or datagram (UDP) length of a test: `len`, or iperf3's default.
pub fn block_len(p: &TestParams) -> u32 {
    p.len.unwrap_or(if p.transport == Transport::Udp {
        DEFAULT_UDP_BLOCK
    } else {
        DEFAULT_TCP_BLOCK
    })
}

pub use crate::observe::sends;

/// The TCP socket options of a test's data connections, from its parameters: the same at
/// both ends (the client applies them before it connects, the server to what it accepted).
pub fn tcp_options(p: &TestParams) -> dp::tcp::TcpOptions {
    dp::tcp::TcpOptions {
        window: p.window,
        mss: p.mss,
        nodelay: p.nodelay,
        congestion: p.congestion.clone(),
        fq_rate: p.tcp_pacing_rate(),
    }
}

/// `start.test_start`, from the parameters and this end's interval.
pub fn test_start(p: &TestParams, interval: Duration) -> TestStart {
    let mut t = assemble::test_start(
        if p.transport == Transport::Udp {
            "UDP"
        } else {
            "TCP"
        },
        p.parallel,
        u64::from(block_len(p)),
        p.omit,
        p.time,
        p.num,
        p.blockcount,
        p.direction == Direction::ServerToClient,
        p.direction == Direction::Both,
        interval.as_secs_f64(),
    );
    // What the client asked for, as iperf3 prints it: -b (UDP's default included), -S, --fq-rate.
    t.target_bitrate = p.bandwidth.unwrap_or(0);
    t.tos = p.tos.unwrap_or(0);
    t.fqrate = Some(p.fqrate.unwrap_or(0));
    t
}

/// Which end of the control connection this is, for `start`.
#[derive(Debug, Clone)]
pub enum Whence {
    /// The client: `connecting_to`.
    ConnectingTo(HostPort),
    /// The server: `accepted_connection` from the client's address.
    AcceptedFrom(SocketAddr),
}

/// The report's `start` section once the streams are connected: the parameters, the streams'
/// addresses and buffers, the cookie, and the control connection's MSS (`mss_default`, used
/// when no `-M` was asked).
pub fn start_section(
    p: &TestParams,
    interval: Duration,
    streams: &[DataStream],
    cookie: &Cookie,
    mss_default: Option<u32>,
    whence: Whence,
) -> Start {
    let refs: Vec<(u32, &DataSocket)> = streams.iter().map(|s| (s.id, &s.socket)).collect();
    let (snd, rcv) = streams
        .first()
        .and_then(|s| dp::tcp::socket_buffers(&s.socket).ok())
        .unwrap_or((0, 0));
    let (connecting_to, accepted_connection) = match whence {
        Whence::ConnectingTo(h) => (Some(h), None),
        Whence::AcceptedFrom(a) => (
            None,
            Some(HostPort {
                host: crate::net::canonical_ip(a.ip()).to_string(),
                port: a.port(),
            }),
        ),
    };
    Start {
        connected: assemble::connected(&refs),
        version: format!("wirespeed {VERSION}"),
        system_info: crate::sysinfo::system_info(),
        timestamp: Some(crate::sysinfo::timestamp_now()),
        connecting_to,
        accepted_connection,
        cookie: Some(cookie.as_str().to_string()),
        tcp_mss: p.mss.map(u64::from),
        // iperf3 prints the control connection's MSS for TCP tests only.
        tcp_mss_default: if p.mss.is_none() && p.transport == Transport::Tcp {
            mss_default.map(u64::from)
        } else {
            None
        },
        target_bitrate: Some(p.bandwidth.unwrap_or(0)),
        fq_rate: Some(p.fqrate.unwrap_or(0)),
        sock_bufsize: Some(u64::from(p.window.unwrap_or(0))),
        sndbuf_actual: Some(u64::from(snd)),
        rcvbuf_actual: Some(u64::from(rcv)),
        test_start: Some(test_start(p, interval)),
        extra: Default::default(),
    }
}

/// The result builder of this end, with its streams registered.
pub fn builder(
    p: &TestParams,
    client: bool,
    interval: Duration,
    streams: &[DataStream],
) -> Result<ResultBuilder, BuildError> {
    let mut b = ResultBuilder::new(
        p.transport,
        if client { End::Client } else { End::Server },
        p.direction == Direction::Both,
        interval.as_secs_f64(),
    );
    for s in streams {
        b.add_stream(s.id, s.send)?;
    }
    Ok(b)
}

/// What only this end decides about its data phase.
#[derive(Debug, Clone)]
pub struct LocalPaths {
    pub placement: WorkerPlacement,
    pub send_path: SendPath,
    pub recv_path: RecvPath,
    pub udp_send_path: UdpSendPath,
    pub udp_recv_path: UdpRecvPath,
}

/// The data phase's configuration. A sending end stops at `-n` bytes / `-k` blocks with a
/// budget its senders share when nothing is omitted (with `-O` the end is checked against the
/// counts after the omit period instead).
pub fn data_config(p: &TestParams, client: bool, local: LocalPaths) -> DataConfig {
    let block = block_len(p);
    let budget = if p.omit == 0 && sends(p.direction, client) {
        if p.num > 0 {
            Some(Arc::new(Budget::bytes(p.num)))
        } else if p.blockcount > 0 {
            Some(Arc::new(Budget::blocks(p.blockcount)))
        } else {
            None
        }
    } else {
        None
    };
    DataConfig {
        block_len: block as usize,
        send_path: local.send_path,
        recv_path: local.recv_path,
        placement: local.placement,
        budget,
        udp: (p.transport == Transport::Udp).then(|| UdpConfig {
            datagram_len: block as usize,
            counters_64bit: p.udp_counters_64bit,
            rate_bps: p.bandwidth.unwrap_or(0),
            send_path: local.udp_send_path,
            recv_path: local.udp_recv_path,
            fq_rate: p.fq_pacing_rate(),
        }),
    }
}

/// What the measurement reads from the data phase (a fake in the tests).
pub trait Counters {
    /// Cumulative counters of every stream (`tcp`: read the senders' `TCP_INFO` too); with
    /// `omit_end`, the same reading is remembered as the end of the omit period.
    fn samples(&mut self, tcp: bool, omit_end: bool) -> Vec<StreamSample>;
    /// `TCP_INFO` of the sending streams still open.
    fn sender_tcp_infos(&self) -> Vec<TcpInfo>;
    /// The workers and where they ran.
    fn workers(&self) -> Vec<Worker>;
}

impl Counters for DataPhase {
    fn samples(&mut self, tcp: bool, omit_end: bool) -> Vec<StreamSample> {
        DataPhase::samples(self, tcp, omit_end)
    }
    fn sender_tcp_infos(&self) -> Vec<TcpInfo> {
        DataPhase::sender_tcp_infos(self)
    }
    fn workers(&self) -> Vec<Worker> {
        assemble::worker_infos(self.summaries())
    }
}

/// The running measurement of one end of one test.
pub struct Measurement<D = DataPhase> {
    data: D,
    builder: ResultBuilder,
    timeline: Timeline,
    observer: TestObserver,
    cpu: CpuMeter,
    show_intervals: bool,
    final_time: Option<Duration>,
    live: LiveState,
    /// What was measured so far, for the verdict so far (running sums).
    so_far: crate::live::SoFar,
    /// The latest tick's interval (the live event a late peer frame is shown with).
    last_tick: Option<(f64, f64)>,
    udp: bool,
}

impl Measurement<DataPhase> {
    /// Start the data phase over `streams`, the observer (its first snapshot taken) and the
    /// CPU meter (`cpu`, started) readied before: the clock (`now()`, read before any worker
    /// moves a byte), then the workers.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        streams: Vec<DataStream>,
        cfg: &DataConfig,
        builder: ResultBuilder,
        observer: TestObserver,
        cpu: CpuMeter,
        interval: Duration,
        omit: Duration,
        now: impl Fn() -> Duration,
    ) -> Result<Measurement<DataPhase>, EngineError> {
        let started = now();
        let data = DataPhase::start(streams, cfg)?;
        let mut observer = observer;
        observer.own_threads(data.worker_threads());
        Ok(Measurement::new(
            data, builder, observer, cpu, started, interval, omit,
        ))
    }

    /// The data phase's counters, as the test-run core reads them (both runners step it so).
    pub fn progress(&self) -> wirespeed_run::Progress {
        let d = &self.data;
        wirespeed_run::Progress {
            bytes: d.measured_bytes(),
            blocks: d.blocks(),
            senders_finished: d.senders_finished(),
            receives: d.has_receivers(),
            omit_done: self.omit_done(),
            measure_start: self.measure_start(),
        }
    }

    /// This end's CPU utilisation so far (its control thread and its workers).
    pub fn cpu(&self) -> CpuPercent {
        self.cpu.finish(self.data.worker_cpu())
    }

    /// Stop the senders (see [`DataPhase::stop_senders`]). Their threads go when joined, so
    /// the observer reads them once they have ended and before: the interval they ended in
    /// still holds all they ran.
    pub fn stop_senders(&mut self) {
        let observer = &mut self.observer;
        self.data.stop_senders_then(|| observer.hold_threads());
    }

    /// Finish the receivers (see [`DataPhase::finish_receivers`]), the observer reading their
    /// threads as [`Measurement::stop_senders`] does.
    pub fn finish_receivers(&mut self, drain: Drain) -> Option<Instant> {
        let observer = &mut self.observer;
        self.data
            .finish_receivers_then(drain, || observer.hold_threads())
    }

    /// Give the observation the joined workers' own CPU time (see
    /// [`crate::observe::TestObserver::note_worker_cpu`]).
    pub fn note_worker_cpu(&mut self) {
        let (u, s) = self.data.worker_cpu();
        self.observer.note_worker_cpu((u + s).as_secs_f64());
    }
}

impl<D: Counters> Measurement<D> {
    /// A measurement over a running data phase whose clock started at `started`.
    pub fn new(
        data: D,
        builder: ResultBuilder,
        observer: TestObserver,
        cpu: CpuMeter,
        started: Duration,
        interval: Duration,
        omit: Duration,
    ) -> Measurement<D> {
        Measurement {
            data,
            builder,
            timeline: Timeline::new(started, interval, omit),
            observer,
            cpu,
            show_intervals: interval > Duration::ZERO,
            final_time: None,
            live: LiveState::default(),
            so_far: crate::live::SoFar::default(),
            last_tick: None,
            udp: false,
        }
    }

    /// Every interval due at `now`: sampled, observed, built and reported (when intervals are
    /// shown). Nothing after the final tick.
    pub fn ticks(&mut self, now: Duration, reporter: &mut dyn Reporter) {
        if self.final_time.is_some() {
            return;
        }
        while let Some(t) = self.timeline.due(now) {
            let samples = self.data.samples(true, t.omit_boundary);
            let obs = self.observer.tick(t.start, t.end);
            if let Ok(Some(iv)) = self.builder.interval(t.start, t.end, t.omitted, &samples) {
                if self.show_intervals {
                    reporter.interval(iv);
                }
            }
            self.live_tick(t.start, t.end, obs, reporter);
        }
    }

    /// A UDP test (the verdict so far reads no retransmits).
    pub fn set_udp(&mut self, udp: bool) {
        self.udp = udp;
    }

    /// After an interval: this end's observation of it into the live state (and a frame for
    /// the peer), then, when the reporter shows it, the verdict so far and the live event.
    fn live_tick(
        &mut self,
        start: f64,
        end: f64,
        obs: Option<wirespeed_model::observation::IntervalObservation>,
        reporter: &mut dyn Reporter,
    ) {
        let head = if self.live.needs_head() {
            self.observer.head()
        } else {
            None
        };
        self.live.local_interval(start, end, head, obs);
        self.last_tick = Some((start, end));
        if let Some(ev) = self.live_event(start, end, reporter) {
            reporter.live(&ev);
        }
    }

    /// The live event of the tick `start..end` (both ends' latest and the verdict so far),
    /// when the reporter shows them.
    fn live_event(&mut self, start: f64, end: f64, reporter: &dyn Reporter) -> Option<LiveEvent> {
        if !reporter.wants_live() {
            return None;
        }
        let verdict = self.live.local().and_then(|l| {
            let bidir_local = match self.builder.role() {
                (End::Client, true) => Some(End::Client),
                (_, true) => Some(End::Server),
                (_, false) => None,
            };
            let measured = self
                .so_far
                .measured(self.udp, self.builder.intervals(), bidir_local);
            self.observer.verdict_so_far(
                l.observation(),
                self.live.peer().map(RunningEnd::observation),
                self.live.peer_frames() > 0,
                &measured,
            )
        });
        Some(self.live.event(start, end, verdict))
    }

    /// A live frame from the peer. The peer's frame of an interval arrives just after this
    /// end's tick of it: the reporter gets the latest tick's event again, with it
    /// ([`Reporter::peer_frame`]), so that what it shows of the peer belongs to the same tick as
    /// this end's figures, not to the one before.
    pub fn peer_live(&mut self, li: wirespeed_protocol::LiveInterval, reporter: &mut dyn Reporter) {
        self.live.peer_interval(li);
        if let Some((start, end)) = self.last_tick {
            if let Some(ev) = self.live_event(start, end, reporter) {
                reporter.peer_frame(&ev);
            }
        }
    }

    /// Frames for the peer since the last call.
    pub fn take_live(&mut self) -> Vec<wirespeed_protocol::LiveInterval> {
        self.live.take_outgoing()
    }

    /// Both ends' observation so far.
    pub fn live(&self) -> &LiveState {
        &self.live
    }

    /// The final tick at `min(end, now)`, once (see the module docs). Returns `false` when it
    /// had already happened.
    pub fn final_tick(
        &mut self,
        end: Duration,
        now: Duration,
        reporter: &mut dyn Reporter,
    ) -> bool {
        if self.final_time.is_some() {
            return false;
        }
        let at = end.min(now);
        self.ticks(at, reporter);
        self.final_time = Some(at);
        let samples = self.data.samples(false, false);
        if let Some(t) = self.timeline.finish(at) {
            let obs = self.observer.tick(t.start, t.end);
            if let Ok(Some(iv)) = self.builder.interval(t.start, t.end, t.omitted, &samples) {
                if self.show_intervals {
                    reporter.interval(iv);
                }
            }
            self.live_tick(t.start, t.end, obs, reporter);
        }
        let infos = self.data.sender_tcp_infos();
        let mut tcp = crate::observe::tcp_limits(&infos);
        // the RTT samples this end's report took, for a peer whose report has none (-R), and the
        // largest window the receiver advertised over them: the verdict asks whether the data in
        // flight filled the window, and a window that swings with unread data is not full at its
        // low point
        if let Some(t) = &mut tcp {
            t.rtt_us = self.builder.sender_rtt_us();
            t.snd_wnd = t.snd_wnd.max(self.builder.sender_max_snd_wnd());
        }
        self.observer.note_mss(infos.first().map(|i| i.snd_mss));
        self.observer.close(&self.data.workers(), tcp);
        true
    }

    /// `true` once the final tick happened.
    pub fn is_final(&self) -> bool {
        self.final_time.is_some()
    }

    /// Seconds measured: from the end of the omit period to the final tick (0 before it).
    pub fn measured(&self) -> f64 {
        self.final_time.map_or(0.0, |t| self.timeline.measured(t))
    }

    /// When the next interval is due (none after the final tick).
    pub fn next_event(&self) -> Option<Duration> {
        if self.final_time.is_some() {
            return None;
        }
        self.timeline.next_event()
    }

    /// `true` once the omit period is over.
    pub fn omit_done(&self) -> bool {
        self.timeline.omit_done()
    }

    /// When the measurement after the omit period started.
    pub fn measure_start(&self) -> Duration {
        self.timeline.measure_start()
    }

    pub fn data(&self) -> &D {
        &self.data
    }

    pub fn data_mut(&mut self) -> &mut D {
        &mut self.data
    }

    pub fn builder(&self) -> &ResultBuilder {
        &self.builder
    }

    pub fn builder_mut(&mut self) -> &mut ResultBuilder {
        &mut self.builder
    }

    pub fn observer(&self) -> &TestObserver {
        &self.observer
    }

    pub fn observer_mut(&mut self) -> &mut TestObserver {
        &mut self.observer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{EndObserver, Observe, ObserveHook};
    use std::net::IpAddr;
    use std::sync::Mutex;
    use wirespeed_model::observation::{EndObservation, Role as ObsRole, TcpLimits, WorkerRun};
    use wirespeed_model::{CpuSet, TestObservation, Verdict};
    use wirespeed_report::Interval;

    /// One stream moving `rate` bytes per second of the clock the test sets.
    struct Fake {
        clock: Arc<Mutex<Duration>>,
        rate: u64,
        omit_marks: usize,
    }

    impl Counters for Fake {
        fn samples(&mut self, _tcp: bool, omit_end: bool) -> Vec<StreamSample> {
            if omit_end {
                self.omit_marks += 1;
            }
            let t = *self.clock.lock().unwrap();
            vec![StreamSample {
                id: 1,
                bytes: (t.as_secs_f64() * self.rate as f64) as u64,
                tcp: None,
                udp: None,
            }]
        }
        fn sender_tcp_infos(&self) -> Vec<TcpInfo> {
            Vec::new()
        }
        fn workers(&self) -> Vec<Worker> {
            vec![Worker {
                cpu_requested: Some(4),
                paired: false,
                cpus_seen: CpuSet::from_cpus([4]),
                streams: vec![1],
                rx_zerocopy: None,
                wake: None,
                tid: None,
            }]
        }
    }

    /// Records the observer's ticks and close.
    #[derive(Default, Clone)]
    struct Log(Arc<Mutex<Vec<String>>>);

    impl Observe for Log {
        fn start(&self, _: ObsRole, _: IpAddr, _: Option<IpAddr>) -> Option<Box<dyn EndObserver>> {
            Some(Box::new(self.clone()))
        }
        fn verdict(&self, _: &TestObservation, _: &wirespeed_model::verdict::Measured) -> Verdict {
            unreachable!("not asked here")
        }
    }

    impl EndObserver for Log {
        fn tick(
            &mut self,
            start: f64,
            end: f64,
        ) -> Option<wirespeed_model::observation::IntervalObservation> {
            self.0.lock().unwrap().push(format!("tick {start}-{end}"));
            None
        }
        fn close(
            self: Box<Self>,
            workers: &[WorkerRun],
            _: Option<TcpLimits>,
        ) -> Option<EndObservation> {
            self.0
                .lock()
                .unwrap()
                .push(format!("close {} workers", workers.len()));
            None
        }
    }

    /// Keeps the intervals it is given.
    #[derive(Default)]
    struct Seen(Vec<Interval>);

    impl Reporter for Seen {
        fn interval(&mut self, iv: &Interval) {
            self.0.push(iv.clone());
        }
    }

    fn secs(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    /// A receiving server's measurement started at t = 10 s, 1 MB/s, intervals of 1 s.
    fn measurement(omit: f64, interval: f64) -> (Measurement<Fake>, Arc<Mutex<Duration>>, Log) {
        let clock = Arc::new(Mutex::new(secs(10.0)));
        let log = Log::default();
        let hook = ObserveHook::new(log.clone());
        let observer = TestObserver::start(
            Some(&hook),
            Direction::ClientToServer,
            false,
            "192.0.2.1".parse().unwrap(),
            None,
        );
        let mut b = ResultBuilder::new(Transport::Tcp, End::Server, false, interval);
        b.add_stream(1, false).unwrap();
        let m = Measurement::new(
            Fake {
                clock: clock.clone(),
                rate: 1_000_000,
                omit_marks: 0,
            },
            b,
            observer,
            CpuMeter::start(),
            secs(10.0),
            secs(interval),
            secs(omit),
        );
        (m, clock, log)
    }

    fn at(m: &mut Measurement<Fake>, clock: &Mutex<Duration>, t: f64, seen: &mut Seen) {
        *clock.lock().unwrap() = secs(t);
        m.ticks(secs(t), seen);
    }

    #[test]
    fn intervals_come_due_in_order_and_the_final_tick_closes_once() {
        let (mut m, clock, log) = measurement(0.0, 1.0);
        let mut seen = Seen::default();
        at(&mut m, &clock, 10.5, &mut seen);
        assert!(seen.0.is_empty());
        assert_eq!(m.next_event(), Some(secs(11.0)));
        // Late wake-up, past two boundaries: one interval, ending when it was measured.
        at(&mut m, &clock, 12.2, &mut seen);
        let ends: Vec<f64> = seen.0.iter().map(|i| i.sum.end).collect();
        assert_eq!(ends.len(), 1, "{ends:?}");
        assert!((ends[0] - 2.2).abs() < 1e-9, "{ends:?}");
        assert_eq!(m.next_event(), Some(secs(13.0)), "the grid stays");
        assert_eq!(m.measured(), 0.0, "nothing measured before the final tick");
        // The end was decided at 12.5 but the last byte came at 12.4: the earlier one counts,
        // never a time in the future.
        *clock.lock().unwrap() = secs(12.4);
        assert!(m.final_tick(secs(12.5), secs(12.4), &mut seen));
        assert!((m.measured() - 2.4).abs() < 1e-9, "{}", m.measured());
        assert_eq!(seen.0.len(), 2);
        assert!((seen.0[1].sum.end - 2.4).abs() < 1e-9);
        // Once: a second final tick (the other path to the end) changes nothing.
        assert!(!m.final_tick(secs(20.0), secs(20.0), &mut seen));
        at(&mut m, &clock, 30.0, &mut seen);
        assert_eq!(seen.0.len(), 2);
        assert!((m.measured() - 2.4).abs() < 1e-9);
        assert_eq!(m.next_event(), None);
        assert!(m.is_final());
        let log = log.0.lock().unwrap().clone();
        assert_eq!(log.len(), 3, "{log:?}");
        assert!(log[0].starts_with("tick 0-2.2"), "{log:?}");
        assert!(
            log[1].starts_with("tick 2.2") && log[1].contains("-2.4"),
            "{log:?}"
        );
        assert_eq!(log[2], "close 1 workers");
    }

    #[test]
    fn the_omit_period_marks_the_counters_and_is_not_measured() {
        let (mut m, clock, _log) = measurement(2.0, 1.0);
        let mut seen = Seen::default();
        at(&mut m, &clock, 12.0, &mut seen);
        assert_eq!(m.data().omit_marks, 1);
        assert!(m.omit_done());
        assert_eq!(m.measure_start(), secs(12.0));
        assert!(seen.0.iter().all(|i| i.sum.omitted));
        at(&mut m, &clock, 13.0, &mut seen);
        let last = seen.0.last().unwrap();
        assert!(!last.sum.omitted);
        assert_eq!((last.sum.start, last.sum.end), (0.0, 1.0));
        assert!(m.final_tick(secs(13.5), secs(13.5), &mut seen));
        assert!((m.measured() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn without_interval_reports_the_final_tick_still_measures() {
        let (mut m, clock, log) = measurement(0.0, 0.0);
        let mut seen = Seen::default();
        at(&mut m, &clock, 15.0, &mut seen);
        *clock.lock().unwrap() = secs(15.0);
        assert!(m.final_tick(secs(15.0), secs(16.0), &mut seen));
        assert!(seen.0.is_empty(), "no interval shown without -i");
        assert_eq!(m.builder().intervals().len(), 1, "but the summary has one");
        assert!((m.measured() - 5.0).abs() < 1e-9);
        assert_eq!(log.0.lock().unwrap().last().unwrap(), "close 1 workers");
    }

    #[test]
    fn sections_come_from_the_parameters() {
        let p = TestParams {
            transport: Transport::Udp,
            parallel: 2,
            time: 0,
            num: 5_000_000,
            omit: 0,
            direction: Direction::ServerToClient,
            bandwidth: Some(1_000_000),
            ..TestParams::default()
        };
        assert_eq!(block_len(&p), DEFAULT_UDP_BLOCK);
        let ts = test_start(&p, secs(0.5));
        assert_eq!(ts.protocol, "UDP");
        assert_eq!((ts.num_streams, ts.blksize, ts.bytes), (2, 1460, 5_000_000));
        assert_eq!((ts.reverse, ts.bidir, ts.interval), (1, Some(0), Some(0.5)));
        let local = LocalPaths {
            placement: WorkerPlacement::Affinity(1),
            send_path: SendPath::Copy,
            recv_path: RecvPath::Copy,
            udp_send_path: UdpSendPath::Gso,
            udp_recv_path: UdpRecvPath::Gro,
        };
        // The server sends in -R: it stops at -n; the client receives: no budget.
        assert!(data_config(&p, false, local.clone()).budget.is_some());
        assert!(data_config(&p, true, local.clone()).budget.is_none());
        let udp = data_config(&p, true, local.clone()).udp.unwrap();
        assert_eq!((udp.datagram_len, udp.rate_bps), (1460, 1_000_000));
        // With -O the end is checked after the omit period instead.
        let omitted = TestParams {
            omit: 1,
            ..p.clone()
        };
        assert!(data_config(&omitted, false, local.clone()).budget.is_none());
        let tcp = TestParams {
            transport: Transport::Tcp,
            len: None,
            direction: Direction::ClientToServer,
            ..p
        };
        assert_eq!(block_len(&tcp), DEFAULT_TCP_BLOCK);
        assert!(data_config(&tcp, true, local).udp.is_none());
        assert!(sends(Direction::Both, true) && sends(Direction::Both, false));
        assert!(!sends(Direction::ServerToClient, true));
    }

    /// An observer that sees CPU 4 busy each interval and says how many intervals each end
    /// had when asked for a verdict.
    #[derive(Clone)]
    struct Busy;

    impl Observe for Busy {
        fn start(&self, _: ObsRole, _: IpAddr, _: Option<IpAddr>) -> Option<Box<dyn EndObserver>> {
            Some(Box::new(Busy))
        }
        fn verdict(&self, t: &TestObservation, m: &wirespeed_model::verdict::Measured) -> Verdict {
            Verdict::new(
                wirespeed_model::VerdictId::NoCpuSaturated,
                None,
                format!(
                    "local {} intervals, peer {:?}, {:?} bit/s",
                    t.local.intervals.len(),
                    t.remote.as_ref().map(|r| r.intervals.len()),
                    m.throughput.map(|b| b.0.round())
                ),
            )
        }
    }

    impl EndObserver for Busy {
        fn tick(
            &mut self,
            start: f64,
            end: f64,
        ) -> Option<wirespeed_model::observation::IntervalObservation> {
            Some(wirespeed_model::observation::IntervalObservation {
                start: Some(start),
                end: Some(end),
                cpus: vec![wirespeed_model::observation::CpuUse {
                    cpu: 4,
                    system: wirespeed_model::observation::Percent::new(90.0),
                    ..Default::default()
                }],
                ..Default::default()
            })
        }
        fn head(&self) -> Option<EndObservation> {
            Some(EndObservation {
                role: ObsRole::Receiver,
                host: None,
                iface: Some("eth9".into()),
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
            })
        }
        fn close(self: Box<Self>, _: &[WorkerRun], _: Option<TcpLimits>) -> Option<EndObservation> {
            None
        }
    }

    /// Wants the live events and keeps them.
    #[derive(Default)]
    struct LiveSeen(Vec<wirespeed_report::LiveEvent>);

    impl Reporter for LiveSeen {
        fn wants_live(&self) -> bool {
            true
        }
        fn live(&mut self, ev: &wirespeed_report::LiveEvent) {
            self.0.push(ev.clone());
        }
        fn peer_frame(&mut self, ev: &wirespeed_report::LiveEvent) {
            self.0.push(ev.clone());
        }
    }

    /// Each interval queues a frame for the peer (the head in the first only) and gives the
    /// reporter this end's interval, the peer's latest and the verdict so far over both.
    #[test]
    fn each_interval_makes_a_frame_and_a_verdict_so_far() {
        let clock = Arc::new(Mutex::new(secs(0.0)));
        let hook = ObserveHook::new(Busy);
        let observer = TestObserver::start(
            Some(&hook),
            Direction::ClientToServer,
            false,
            "192.0.2.1".parse().unwrap(),
            None,
        );
        let mut b = ResultBuilder::new(Transport::Tcp, End::Server, false, 1.0);
        b.add_stream(1, false).unwrap();
        let fake = Fake {
            clock: clock.clone(),
            rate: 1_000_000,
            omit_marks: 0,
        };
        let mut m = Measurement::new(
            fake,
            b,
            observer,
            CpuMeter::start(),
            secs(0.0),
            secs(1.0),
            secs(0.0),
        );
        let mut seen = LiveSeen::default();
        *clock.lock().unwrap() = secs(1.0);
        m.ticks(secs(1.0), &mut seen);
        let peer = |seq: u64, head: bool| wirespeed_protocol::LiveInterval {
            seq,
            start: seq as f64 - 1.0,
            end: seq as f64,
            head: head.then(|| Busy.head().unwrap()),
            observation: Busy.tick(seq as f64 - 1.0, seq as f64),
        };
        m.peer_live(peer(1, true), &mut seen);
        // The peer's frame of the first second, after this end's tick of it: shown with that
        // tick at once.
        assert_eq!(seen.0.len(), 2);
        assert_eq!((seen.0[1].start, seen.0[1].end), (0.0, 1.0));
        assert_eq!(seen.0[1].peer.as_ref().unwrap().end, Some(1.0));
        *clock.lock().unwrap() = secs(2.0);
        m.ticks(secs(2.0), &mut seen);
        let frames = m.take_live();
        assert_eq!(frames.len(), 2);
        assert!(frames[0].head.is_some() && frames[1].head.is_none());
        assert_eq!(frames[1].observation.as_ref().unwrap().cpus[0].cpu, 4);
        assert_eq!(seen.0.len(), 3);
        assert!(seen.0[0].peer.is_none());
        let last = &seen.0[2];
        assert_eq!(last.peer.as_ref().unwrap().end, Some(1.0));
        assert_eq!(last.local_iface.as_deref(), Some("eth9"));
        assert_eq!(
            last.verdict_so_far.as_ref().unwrap().line,
            "local 2 intervals, peer Some(1), Some(8000000.0) bit/s"
        );
        assert_eq!(m.live().peer().unwrap().intervals_seen(), 1);
    }
}
