//! The shell both ends run around the test-run core ([`wirespeed_run::TestRun`]): this end's
//! state from the data phase on and what it does for each of the core's actions, written
//! once. The loop that polls the core and acts is [`crate::drive`]'s, also one for both ends;
//! the client's runner ([`crate::client`]) and the server's ([`crate::server`]) supply only
//! what differs there ([`crate::drive::Endpoint`]): how the peer is reached (connect or accept),
//! what reading the control connection costs (the server charges the peer's address), their
//! error words, what they release (the server's tune change) and what they add to the report.
//!
//! One rule each, for both ends: the start of the data phase ([`Shell::begin`]), the senders'
//! stop ([`Shell::stop_senders`]), the end of the data phase on `Action::Finish`
//! ([`Shell::finish`]: where the receivers' interval ends),
//! the PSK seal and check of the results with one clock ([`unix_now`]), the live frames
//! ([`Shell::send_live`]), the wake-up ([`Shell::wake`]), a silent peer
//! ([`Shell::peer_silent`]) and the assembly of this end's results and report
//! ([`Shell::local_results`], [`Shell::report`]).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use wirespeed_model::verdict::{ControlStall, Measured, PeerSilent, SilentPhase};
use wirespeed_model::End;
use wirespeed_model::MoveReport;
use wirespeed_protocol::psk::{Psk, PskError, PskRefusal};
use wirespeed_protocol::{Cookie, LiveInterval, TestParams, TestResults, Transport, WireError};
use wirespeed_report::builder::ResultBuilder;
use wirespeed_report::{Start, TestResult};
use wirespeed_run::{ControlInfo, Progress, TestRun};

use crate::assemble::{self, VERSION};
use crate::data::{DataConfig, DataStream, Drain};
use crate::hooks::ObserveHook;
use crate::measurement::{self, LocalPaths, Measurement, Whence};
use crate::observe::TestObserver;
use crate::output::Reporter;
use crate::usage::{CpuMeter, CpuPercent};

/// The longest an end sleeps between two looks at its counters and the control connection
/// while nothing is due: the core's watch (idle, receive and rate limits) reads the counters
/// at least this often.
pub const WATCH: Duration = Duration::from_millis(100);

/// How often a test that ends at a byte or block count reads its counters: the end is a
/// count, not a time the core can name in advance.
pub const COUNT_POLL: Duration = Duration::from_millis(2);

/// The shortest sleep: a deadline already past is served after at least this.
const MIN_SLEEP: Duration = Duration::from_millis(1);

/// Seconds since the Unix epoch: the one clock of authentication tokens and pre-shared key
/// tags, at both ends.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// When an end next steps the core, `now` and every time being this end's test clock: the
/// core's deadline (none: within a second), the next interval tick, and at most [`WATCH`]
/// away — [`COUNT_POLL`] while a test that ends at a count runs — never sooner than 1 ms.
pub fn wake(
    now: Duration,
    deadline: Option<Duration>,
    next_tick: Option<Duration>,
    counting: bool,
) -> Duration {
    let poll = if counting { COUNT_POLL } else { WATCH };
    let mut at = deadline
        .unwrap_or(now + Duration::from_secs(1))
        .min(now + poll);
    if let Some(t) = next_tick {
        at = at.min(t);
    }
    at.max(now + MIN_SLEEP)
}

/// Where this end's receivers' interval ends on `Action::Finish` (the core `decided` the end
/// of the data phase): at the last byte the drain read, unless the end counts as iperf3's
/// server does (`arrival`: when the client's `TEST_END` arrived; the drain after it only
/// empties the sockets). Without receivers, at `decided`.
pub fn receivers_end(
    decided: Duration,
    last_read: Option<Duration>,
    arrival: Option<Duration>,
    has_receivers: bool,
) -> Duration {
    match (arrival, has_receivers) {
        (Some(a), true) => a,
        (Some(_), false) => decided,
        (None, _) => last_read.map_or(decided, |l| decided.max(l)),
    }
}

/// Why this end's results did not go out.
#[derive(Debug)]
pub enum SendError {
    /// Sealing them with the pre-shared key failed.
    Psk(PskError),
    /// The core refused them (the session cannot send results now).
    Session(WireError),
}

/// How this end starts its data phase (see [`Shell::begin`]).
pub struct Begin<'p> {
    /// Which end of the control connection this is, for `start`.
    pub whence: Whence,
    /// The control connection's MSS.
    pub mss_default: Option<u32>,
    /// Where the workers run and on which paths.
    pub paths: LocalPaths,
    /// The observer's hook, when this end observes.
    pub observe: Option<&'p ObserveHook>,
    pub peer: IpAddr,
    pub local: Option<IpAddr>,
}

/// What [`Shell::prepare`] readied for the data phase: all but its workers.
pub struct Ready {
    builder: ResultBuilder,
    dcfg: DataConfig,
    observer: TestObserver,
    cpu: CpuMeter,
    omit: Duration,
    udp: bool,
}

/// What this end knows of its peer for the report's `end`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peer<'p> {
    /// The peer's results, when they came.
    pub results: Option<&'p TestResults>,
    /// The client's version from its parameters (the server's report only).
    pub client_version: Option<&'p str>,
    /// The peer said it is wirespeed before the results (the server's report only).
    pub is_wirespeed: bool,
}

/// One end's state around the core, from the data phase on.
pub struct Shell<'a> {
    /// This end's test clock starts here.
    pub epoch: Instant,
    pub cookie: Cookie,
    /// This end (whose results it seals); the peer's are checked as the other side's.
    pub side: End,
    psk: Option<&'a Psk>,
    /// `-i`: intervals shown (zero: none, the report has none either).
    pub interval: Duration,
    /// The data phase, once running.
    pub m: Option<Measurement>,
    pub start: Option<Start>,
    /// This end's CPU use as its results and report give it.
    pub local_cpu: CpuPercent,
    /// The peer's results (checked against the pre-shared key), once they came.
    pub peer_results: Option<TestResults>,
    /// The peer went silent after the data phase began: the report's `end` comes from this
    /// end's counts, with the verdict on the silence.
    pub silent: bool,
}

impl<'a> Shell<'a> {
    pub fn new(side: End, cookie: Cookie, psk: Option<&'a Psk>, interval: Duration) -> Self {
        Shell {
            epoch: Instant::now(),
            cookie,
            side,
            psk,
            interval,
            m: None,
            start: None,
            local_cpu: CpuPercent::default(),
            peer_results: None,
            silent: false,
        }
    }

    fn client(&self) -> bool {
        self.side == End::Client
    }

    /// This end's test clock.
    pub fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// The observer's first snapshot of this end (milliseconds, tens on a loaded host): taken
    /// before the data connections open by a client (whose server starts its clock once the
    /// last one is up), before `TEST_START` by a server.
    pub fn observer(&self, p: &TestParams, how: &Begin<'_>) -> TestObserver {
        TestObserver::start(how.observe, p.direction, self.client(), how.peer, how.local)
    }

    /// Everything the data phase needs before its workers: the `start` section (given to the
    /// reporter), the result builder and the CPU meter, beside the `observer`
    /// ([`Shell::observer`]). An end
    /// whose clock starts when it tells the peer the test runs (a server under an iperf3
    /// client) prepares before it tells: this work takes milliseconds, tens on a loaded host,
    /// and done after `TEST_START` it competes for the CPUs with the peer that has just been
    /// told to start its own clock.
    pub fn prepare(
        &mut self,
        p: &TestParams,
        streams: &[DataStream],
        how: Begin<'_>,
        observer: TestObserver,
        reporter: &mut dyn Reporter,
    ) -> Result<Ready, String> {
        let client = self.client();
        let start = measurement::start_section(
            p,
            self.interval,
            streams,
            &self.cookie,
            how.mss_default,
            how.whence,
        );
        reporter.start(&start);
        self.start = Some(start);
        let builder =
            measurement::builder(p, client, self.interval, streams).map_err(|e| e.to_string())?;
        let dcfg = measurement::data_config(p, client, how.paths);
        Ok(Ready {
            builder,
            dcfg,
            observer,
            cpu: CpuMeter::start(),
            omit: Duration::from_secs(u64::from(p.omit)),
            udp: p.transport == Transport::Udp,
        })
    }

    /// Start the workers over `streams`, with what [`Shell::prepare`] readied; the test's clock
    /// starts at `started`, else when the workers start.
    pub fn start_data(
        &mut self,
        ready: Ready,
        streams: Vec<DataStream>,
        started: Option<Duration>,
    ) -> Result<(), String> {
        let epoch = self.epoch;
        let mut m = Measurement::start(
            streams,
            &ready.dcfg,
            ready.builder,
            ready.observer,
            ready.cpu,
            self.interval,
            ready.omit,
            move || started.unwrap_or_else(|| epoch.elapsed()),
        )
        .map_err(|e| e.to_string())?;
        m.set_udp(ready.udp);
        self.m = Some(m);
        Ok(())
    }

    /// Report every interval that is due.
    pub fn ticks(&mut self, reporter: &mut dyn Reporter) {
        let now = self.now();
        if let Some(m) = &mut self.m {
            m.ticks(now, reporter);
        }
    }

    /// The final interval (after senders stopped and receivers drained), once.
    pub fn final_tick(&mut self, reporter: &mut dyn Reporter, end: Duration) {
        let now = self.now();
        if let Some(m) = &mut self.m {
            m.final_tick(end, now, reporter);
        }
    }

    /// Seconds this end measured (0 before the final tick).
    pub fn measured(&self) -> f64 {
        self.m.as_ref().map_or(0.0, Measurement::measured)
    }

    /// `Action::Finish`: stop the senders, drain the receivers and close the last interval
    /// where [`receivers_end`] says. `arrival` (an end that counts as iperf3's server does):
    /// when the peer's `TEST_END` arrived, given the moment it was read; the receivers' count
    /// is closed before it is asked.
    pub fn finish(
        &mut self,
        decided: Duration,
        drain: Drain,
        arrival: Option<&dyn Fn(Duration) -> Duration>,
        reporter: &mut dyn Reporter,
    ) {
        let mut end = decided;
        if let Some(m) = self.m.as_mut() {
            let mut arrived = None;
            if let Some(at) = arrival {
                m.data_mut().close_count();
                arrived = Some(at(decided));
            }
            m.stop_senders();
            let last = m
                .finish_receivers(drain)
                .map(|l| l.saturating_duration_since(self.epoch));
            end = receivers_end(decided, last, arrived, m.data().has_receivers());
        }
        self.final_tick(reporter, end);
    }

    /// This end's live frames since the last call, handed to the core (which sends them when
    /// the peer takes them): `true` when there is something to write.
    pub fn send_live(&mut self, core: &mut TestRun) -> bool {
        let Some(m) = self.m.as_mut() else {
            return false;
        };
        let mut sent = false;
        for li in m.take_live() {
            sent |= core.send_live(&li);
        }
        sent
    }

    /// When to step the core next (see [`wake`]), on the monotonic clock.
    pub fn wake(&self, core: &TestRun) -> Instant {
        let now = self.now();
        let running = core.is_running();
        let next_tick = self
            .m
            .as_ref()
            .filter(|_| running)
            .and_then(Measurement::next_event);
        let at = wake(
            now,
            core.deadline(),
            next_tick,
            running && core.ends_at_count(),
        );
        self.epoch + at
    }

    /// `Action::SendResults`: seal `r` (when there is a key) and hand it to the core.
    pub fn send_results(
        &self,
        core: &mut TestRun,
        mut r: TestResults,
        control: Option<ControlInfo>,
    ) -> Result<TestResults, SendError> {
        self.seal(&mut r).map_err(SendError::Psk)?;
        core.send_results(self.now(), &r, control)
            .map_err(SendError::Session)?;
        Ok(r)
    }

    /// `Action::StopSenders`: the senders stop; the data phase ended when it was decided, now —
    /// for paced TCP (`paced`), when what the senders wrote left the socket and was
    /// acknowledged (see `DataPhase::wait_sent`). Without receivers, the last interval closes
    /// there. When it was decided.
    pub fn stop_senders(
        &mut self,
        paced: bool,
        decided: Duration,
        reporter: &mut dyn Reporter,
    ) -> Duration {
        let mut decided = decided;
        if let Some(m) = self.m.as_mut() {
            m.stop_senders();
            let d = m.data_mut();
            if paced {
                if let Some(t) = d.wait_sent(Duration::from_secs(2)) {
                    decided = t.saturating_duration_since(self.epoch);
                }
            }
            if !d.has_receivers() {
                self.final_tick(reporter, decided);
            }
        }
        decided
    }

    /// Whether this end says `TEST_END` before its senders are joined: a client not pacing.
    /// iperf3's client sends it when its timer fires, and an iperf3 server's receiver interval
    /// runs until it arrives; joining the workers and the final tick (the observer's last
    /// look) take milliseconds, hundreds through a shaper on a loaded host. A paced sender's
    /// time ends when what it wrote was acknowledged (`DataPhase::wait_sent`), so it says
    /// `TEST_END` after.
    pub fn ends_before_joining(&self, paced: bool) -> bool {
        self.client() && !paced
    }

    /// Tell the senders to stop and wait, up to `within`, until each has ended, without
    /// joining them ([`Self::stop_senders`] does, and the final tick): when they ended, the
    /// end of this sender's interval, as iperf3's client ends its interval once its sending
    /// threads are gone and says `TEST_END` right after. `None` when one had not ended by
    /// then (its interval ends when it was decided).
    pub fn signal_stop_senders(&mut self, within: Duration) -> Option<Duration> {
        let m = self.m.as_mut()?;
        let d = m.data_mut();
        d.signal_stop_senders();
        d.wait_senders_ended(within).then(|| self.epoch.elapsed())
    }

    /// `Action::PeerLive`: the peer's observation of an interval, shown with this end's.
    pub fn peer_live(&mut self, li: LiveInterval, reporter: &mut dyn Reporter) {
        if let Some(m) = self.m.as_mut() {
            m.peer_live(li, reporter);
        }
    }

    /// The data phase's counters, once it runs.
    pub fn progress(&self) -> Option<Progress> {
        self.m.as_ref().map(Measurement::progress)
    }

    /// Tag this end's results with the pre-shared key, when there is one.
    pub fn seal(&self, r: &mut TestResults) -> Result<(), PskError> {
        match self.psk {
            Some(k) => k.seal_results(r, &self.cookie, self.side, unix_now()),
            None => Ok(()),
        }
    }

    /// The peer's results: checked against the pre-shared key (when there is one), then kept.
    pub fn peer_results(&mut self, r: TestResults) -> Result<(), PskRefusal> {
        if let Some(k) = self.psk {
            k.verify_results(&r, &self.cookie, self.side.peer())?;
        }
        self.peer_results = Some(r);
        Ok(())
    }

    /// The peer went silent after the data phase began (the core's `Ending::Silent`): in the
    /// data phase the test ends here (senders stopped; the receivers are quiet already, so
    /// joining them is quick and gives the workers' CPUs to the observation); the verdict is
    /// told what this end knows (`mtu-blackhole` or `peer-silent`) and the last interval
    /// closes now, once.
    pub fn peer_silent(&mut self, silent: PeerSilent, reporter: &mut dyn Reporter) {
        let Some(m) = self.m.as_mut() else {
            return;
        };
        if silent.phase == SilentPhase::Data {
            m.stop_senders();
            m.finish_receivers(Drain::SILENT);
        }
        m.observer_mut().note_silent(silent);
        self.silent = true;
        self.stop_here(reporter);
    }

    /// The core's `Ending::ResultsStalled`: this end's results message (large) made no
    /// progress while the small messages before it got through (an MTU black hole toward the
    /// peer); the verdict names it.
    pub fn results_stalled(&mut self, stall: ControlStall) {
        if let Some(m) = self.m.as_mut() {
            m.observer_mut().note_stall(stall);
        }
    }

    /// The test is over at this end: its data connections close.
    pub fn close(&mut self) {
        if let Some(m) = &mut self.m {
            m.data_mut().close();
        }
    }

    /// Stop sending and close the last interval now (once); this end's CPU use so far.
    pub fn stop_here(&mut self, reporter: &mut dyn Reporter) {
        if let Some(m) = self.m.as_mut() {
            m.stop_senders();
        }
        let now = self.now();
        self.final_tick(reporter, now);
        self.note_cpu();
    }

    /// This end's CPU use up to now, for its results and report.
    pub fn note_cpu(&mut self) {
        if let Some(m) = &self.m {
            self.local_cpu = m.cpu();
        }
    }

    /// This end's results for the peer (not yet sealed): its counts, CPU use, workers and
    /// observation, and `irq_move` (the server's tune change).
    pub fn local_results(&mut self, irq_move: Option<MoveReport>) -> TestResults {
        self.note_cpu();
        let Some(m) = &mut self.m else {
            return TestResults::default();
        };
        m.note_worker_cpu();
        let data = m.data();
        let mut ext = assemble::results_ext(data.summaries());
        // This end's observation goes to the peer too: its report shows both ends.
        ext.observation = m.observer().value();
        ext.irq_move = irq_move;
        assemble::local_results(
            data,
            self.local_cpu,
            m.measured(),
            data.congestion(),
            Some(ext),
        )
    }

    /// `start` as far as this end got: the data phase's, else one naming this end.
    pub fn start_or(&self, whence: Whence) -> Start {
        self.start.clone().unwrap_or_else(|| {
            let (connecting_to, accepted_connection) = match whence {
                Whence::ConnectingTo(h) => (Some(h), None),
                Whence::AcceptedFrom(a) => (
                    None,
                    Some(wirespeed_report::HostPort {
                        host: crate::net::canonical_ip(a.ip()).to_string(),
                        port: a.port(),
                    }),
                ),
            };
            Start {
                version: format!("wirespeed {VERSION}"),
                system_info: crate::sysinfo::system_info(),
                timestamp: Some(crate::sysinfo::timestamp_now()),
                connecting_to,
                accepted_connection,
                ..Start::default()
            }
        })
    }

    /// This end's report: `head` (its `start`, title, error) with the intervals shown and —
    /// `with_end` — the `end` sections and wirespeed's extension from this end's counts and
    /// the `peer`'s results. `rate_bps`: the rate the client was asked to check (`--rate`).
    pub fn report(
        &self,
        head: TestResult,
        with_end: bool,
        peer: Peer<'_>,
        rate_bps: Option<f64>,
    ) -> TestResult {
        let mut r = head;
        let Some(m) = &self.m else {
            return r;
        };
        if with_end {
            let target_bps = r
                .start
                .test_start
                .as_ref()
                .and_then(|t| Measured::target_of(t.target_bitrate, t.num_streams));
            let (end, ext) = assemble::end_sections(
                m.builder(),
                &assemble::EndSide {
                    measured: self.measured(),
                    cpu: self.local_cpu,
                    data: Some(m.data()),
                    peer: peer.results,
                    peer_client_version: peer.client_version,
                    peer_is_wirespeed: peer.is_wirespeed,
                    observer: m.observer(),
                    target_bps,
                    rate_bps,
                },
            );
            r.end = end;
            r.wirespeed = Some(ext);
        }
        if self.interval > Duration::ZERO {
            r.intervals = m.builder().intervals().to_vec();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NullReporter;
    use wirespeed_protocol::{
        Decline, Direction, ParamsExt, ServerEvent, ServerSession, Timeouts, COOKIE_LEN,
    };
    use wirespeed_run::{Action, ClientPlan, EndAt, Ending, Limits, Progress, ServerPlan};

    const MS: Duration = Duration::from_millis(1);
    const S: Duration = Duration::from_secs(1);

    /// One end for the in-memory runs: its shell, its core and a model of its data.
    struct Side1<'k> {
        sh: Shell<'k>,
        core: Option<TestRun>,
        /// What this end puts in its results, to tell them apart at the peer.
        cpu: f64,
        started: Option<Duration>,
        moved: u64,
        ending: Option<Ending>,
        psk_error: Option<String>,
    }

    impl<'k> Side1<'k> {
        fn new(side: End, cookie: Cookie, psk: Option<&'k Psk>, cpu: f64) -> Self {
            Side1 {
                sh: Shell::new(side, cookie, psk, Duration::ZERO),
                core: None,
                cpu,
                started: None,
                moved: 0,
                ending: None,
                psk_error: None,
            }
        }

        /// One turn of the shell around the core, as the runners take it: the control bytes
        /// that came, the counters, the time; then each action, through the shell.
        fn step(&mut self, now: Duration, input: &[u8]) -> Vec<u8> {
            if self.over() {
                return Vec::new();
            }
            let Some(core) = self.core.as_mut() else {
                return Vec::new();
            };
            if !input.is_empty() {
                core.handle_input(now, input);
            }
            if let Some(t) = self.started {
                self.moved = (now - t).as_millis() as u64 * 1_000_000;
            }
            core.handle_progress(
                now,
                Progress {
                    bytes: (self.moved, self.moved),
                    blocks: (0, 0),
                    senders_finished: false,
                    receives: true,
                    omit_done: true,
                    measure_start: self.started.unwrap_or_default(),
                },
            );
            core.handle_timeout(now, None);
            while let Some(a) = core.poll_action() {
                match a {
                    Action::OpenStreams | Action::PeerLive(_) => {}
                    Action::StartData { .. } => {
                        core.data_started(now);
                        self.started = Some(now);
                    }
                    Action::StopSenders { .. } => core.senders_stopped(now, now).unwrap(),
                    Action::Finish { decided, drain } => {
                        self.sh.finish(decided, drain, None, &mut NullReporter);
                        core.data_finished(now).unwrap();
                    }
                    Action::SendResults => {
                        let mut r = self.sh.local_results(None);
                        r.cpu_util_total = self.cpu;
                        r.wirespeed = Some(assemble::results_ext(&[]));
                        self.sh.seal(&mut r).unwrap();
                        core.send_results(now, &r, None).unwrap();
                    }
                    Action::PeerResults(r) => {
                        if let Err(e) = self.sh.peer_results(*r) {
                            // as the server's runner does: the test ends, the peer is told
                            self.psk_error = Some(e.to_string());
                            core.refuse(&Decline::Error {
                                i_errno: 0,
                                errno: 0,
                                detail: e.to_string(),
                            });
                            return core.take_transmit();
                        }
                    }
                    Action::End(e) => self.ending = Some(e),
                }
            }
            core.take_transmit()
        }

        /// The core ended the test, or this end did (a refused key).
        fn over(&self) -> bool {
            self.ending.is_some() || self.psk_error.is_some()
        }

        /// When this end wakes next (the shell's one rule), `None` once over.
        fn wake(&self, now: Duration) -> Option<Duration> {
            let core = self
                .core
                .as_ref()
                .filter(|c| !c.is_over() && !self.over())?;
            Some(wake(
                now,
                core.deadline(),
                None,
                core.is_running() && core.ends_at_count(),
            ))
        }
    }

    /// A client and a server, each in its shell, joined by an in-memory control connection:
    /// the time jumps from one end's wake-up to the next.
    fn two_ends<'k>(
        end: EndAt,
        client_key: Option<&'k Psk>,
        server_key: Option<&'k Psk>,
    ) -> (Side1<'k>, Side1<'k>) {
        let cookie = Cookie::from_entropy(&[9u8; COOKIE_LEN - 1]);
        let mut c = Side1::new(End::Client, cookie, client_key, 11.0);
        let mut s = Side1::new(End::Server, cookie, server_key, 22.0);
        let params = TestParams {
            time: match end {
                EndAt::Time(t) => t.as_secs() as u32,
                _ => 0,
            },
            parallel: 1,
            direction: Direction::ClientToServer,
            wirespeed: Some(ParamsExt::default()),
            ..TestParams::default()
        };
        let mut now = Duration::ZERO;
        let timeouts = Timeouts::default();
        c.core = Some(TestRun::client(
            now,
            cookie,
            params,
            timeouts,
            ClientPlan {
                end,
                paced: false,
                limits: Limits::default(),
                peer_mss: None,
            },
        ));
        let mut acceptor = Some(ServerSession::new(now, cookie, timeouts));
        let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
        let mut cookie_left = COOKIE_LEN;
        let mut turns = 0;
        while !c.over() || (s.core.is_some() && !s.over()) {
            turns += 1;
            assert!(turns < 10_000 && now < 600 * S, "the test never ended");
            c2s.extend(c.step(now, &std::mem::take(&mut s2c)));
            if let Some(mut sess) = acceptor.take() {
                // the acceptor: the cookie, the parameters, then the test's own core
                let skip = cookie_left.min(c2s.len());
                c2s.drain(..skip);
                cookie_left -= skip;
                sess.handle_input(now, &std::mem::take(&mut c2s));
                match sess.poll_event() {
                    Some(ServerEvent::Params(_)) => {
                        let drain = Drain::UntilQuiet {
                            quiet: 100 * MS,
                            max: 2 * S,
                        };
                        let plan = ServerPlan {
                            drain,
                            limits: Limits::default(),
                            peer_mss: None,
                        };
                        let mut core = TestRun::server(sess, plan);
                        core.accept(now).unwrap();
                        core.streams_ready(now).unwrap();
                        core.data_started(now);
                        s.started = Some(now);
                        s2c.extend(core.take_transmit());
                        s.core = Some(core);
                    }
                    None => {
                        s2c.extend(sess.take_transmit());
                        acceptor = Some(sess);
                    }
                    Some(other) => panic!("acceptor: {other:?}"),
                }
            } else {
                s2c.extend(s.step(now, &std::mem::take(&mut c2s)));
            }
            // nothing written waits: the next turn comes at once, else at the earlier wake-up
            now = if !c2s.is_empty() || !s2c.is_empty() || acceptor.is_some() {
                now + MS
            } else {
                [c.wake(now), s.wake(now)]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(now + MS)
            };
        }
        (c, s)
    }

    fn key(k: &str) -> Psk {
        Psk::from_file_contents(k.as_bytes()).unwrap()
    }

    #[test]
    fn both_ends_exchange_sealed_results_through_the_shell() {
        let k = key("a shared key of enough length for the test");
        for end in [EndAt::Time(2 * S), EndAt::Bytes(50_000_000)] {
            let (c, s) = two_ends(end, Some(&k), Some(&k));
            assert!(
                matches!(c.ending, Some(Ending::Complete)),
                "{end:?}: {:?}",
                c.ending
            );
            assert!(matches!(s.ending, Some(Ending::Complete)), "{end:?}");
            // each end holds the other's results, checked as the other side's
            let got = |e: &Side1<'_>| e.sh.peer_results.as_ref().map(|r| r.cpu_util_total);
            assert_eq!((got(&c), got(&s)), (Some(22.0), Some(11.0)), "{end:?}");
            // a count-ended test reached its count, read as often as the rule says
            if let EndAt::Bytes(n) = end {
                assert!(c.moved >= n, "{} < {n}", c.moved);
            }
        }
    }

    #[test]
    fn a_wrong_key_stops_the_results_at_the_end_that_checks_them() {
        let (k1, k2) = (
            key("the client's key, long enough for a key"),
            key("the server's key, long enough for a key"),
        );
        let (c, s) = two_ends(EndAt::Time(1 * S), Some(&k1), Some(&k2));
        // the server checks the client's results first and refuses them
        assert!(s.psk_error.is_some(), "{:?}", s.ending);
        assert!(s.sh.peer_results.is_none());
        assert!(c.sh.peer_results.is_none(), "the client got no results");
        assert!(
            !matches!(c.ending, Some(Ending::Complete)),
            "{:?}",
            c.ending
        );
    }

    #[test]
    fn an_ends_own_results_do_not_pass_as_the_peers() {
        let k = key("a shared key of enough length for the test");
        let cookie = Cookie::from_entropy(&[3u8; COOKIE_LEN - 1]);
        for side in [End::Client, End::Server] {
            let mut sh = Shell::new(side, cookie, Some(&k), Duration::ZERO);
            let mut own = TestResults {
                wirespeed: Some(assemble::results_ext(&[])),
                ..TestResults::default()
            };
            sh.seal(&mut own).unwrap();
            // reflected back: sealed as this end, checked as the peer's — refused
            assert!(sh.peer_results(own).is_err(), "{side:?}");
            assert!(sh.peer_results.is_none());
        }
    }

    #[test]
    fn one_wake_up_rule_for_both_ends() {
        let now = 1000 * MS;
        // nothing due: the watch's cadence
        assert_eq!(wake(now, None, None, false), now + WATCH);
        // a deadline or a tick sooner than that comes first
        assert_eq!(wake(now, Some(now + 30 * MS), None, false), now + 30 * MS);
        assert_eq!(
            wake(now, Some(now + 30 * MS), Some(now + 20 * MS), false),
            now + 20 * MS
        );
        // later ones wait for the watch
        assert_eq!(wake(now, Some(now + 5000 * MS), None, false), now + WATCH);
        // a test that ends at a count reads its counters often
        assert_eq!(wake(now, None, None, true), now + COUNT_POLL);
        // a deadline already past: served after the shortest sleep, never a busy loop
        assert_eq!(wake(now, Some(now - 10 * MS), None, false), now + MIN_SLEEP);
    }

    #[test]
    fn the_receivers_interval_ends_at_the_last_read_or_at_test_ends_arrival() {
        let s = Duration::from_secs;
        // wirespeed's drain: the last byte read, if after the decision
        assert_eq!(receivers_end(s(10), Some(s(11)), None, true), s(11));
        assert_eq!(receivers_end(s(10), Some(s(9)), None, true), s(10));
        assert_eq!(receivers_end(s(10), None, None, false), s(10));
        // iperf3's server: when TEST_END arrived, whatever the drain read after it
        assert_eq!(
            receivers_end(s(10), Some(s(12)), Some(s(10) - 30 * MS), true),
            s(10) - 30 * MS
        );
        // a sending server under an iperf3 client: the decision
        assert_eq!(receivers_end(s(10), None, Some(s(9)), false), s(10));
    }
}
