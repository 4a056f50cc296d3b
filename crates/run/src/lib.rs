//! wirespeed-run: the test-run core — one test at one end, without I/O.
//!
//! The protocol crate's sessions say what goes over the control connection; this core says
//! what the *test* does next, for both ends with one set of rules: when the client ends the
//! data phase (`-t`, `-n`, `-k`, every sender gone), how each end drains, when results go out,
//! and how a test ends when something goes wrong — a silent peer in the data phase (its
//! streams brought nothing for the receive timeout), a peer whose results never came, this
//! end's own results black-holed (un-acknowledged, retransmitted: an MTU black hole toward the
//! peer), the idle and rate limits, a data phase that runs too long. Every such end carries a
//! named reason ([`Ending`]) and, where the peer went silent, what this end knows for the
//! verdict ([`wirespeed_model::verdict::PeerSilent`]).
//!
//! The core takes the time, the control connection's bytes, the data phase's counters
//! ([`Progress`]) and the control connection's state ([`ControlInfo`]); it returns
//! [`Action`]s for the runner (open streams, start data, stop senders, finish the data
//! phase, send results, end) and the bytes to write. The runners in the engine crate are
//! socket shells around it; `tests/run/two_ends.rs` joins a client core and a server core with
//! an in-memory pipe and virtual time.

mod stall;
mod watch;

use std::collections::VecDeque;
use std::time::Duration;

use wirespeed_model::verdict::{ControlStall, End, PeerSilent, SilentPhase};
use wirespeed_protocol::session::{ClientEvent, ClientPhase, Failure, Refusal, ServerEvent};
use wirespeed_protocol::{
    ClientSession, Cookie, Decline, LiveInterval, ServerSession, TestParams, TestResults, Timeouts,
    WireError,
};

pub use stall::{control_stalled, peer_silent, ControlInfo, STALL_AFTER, STALL_RETRANSMITS};
pub use watch::{Limits, RateLimit, WatchStop};

/// What ends the data phase (the client decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndAt {
    /// `-t`: this long after the omit period.
    Time(Duration),
    /// `-n`: this many bytes sent or received.
    Bytes(u64),
    /// `-k`: this many blocks sent or received.
    Blocks(u64),
}

/// How an end's receivers finish after the senders stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// Read until every stream reached EOF, at most `within`.
    UntilEof { within: Duration },
    /// Read until nothing arrived for `quiet`, at most `max`.
    UntilQuiet { quiet: Duration, max: Duration },
}

impl Drain {
    /// After the peer went silent: its streams are quiet already.
    pub const SILENT: Drain = Drain::UntilQuiet {
        quiet: Duration::from_millis(100),
        max: Duration::from_secs(1),
    };
}

/// The data phase's counters, read by the runner whenever it steps the core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes sent and received after the omit period.
    pub bytes: (u64, u64),
    /// Blocks sent and received after the omit period.
    pub blocks: (u64, u64),
    /// Every sending stream ended (the peer reset it).
    pub senders_finished: bool,
    /// This end has receiving streams.
    pub receives: bool,
    /// The omit period is over.
    pub omit_done: bool,
    /// When the measurement after the omit period began.
    pub measure_start: Duration,
}

/// The client's plan: what ends the test and how the data phase is watched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientPlan {
    pub end: EndAt,
    /// Paced TCP (`-b`, `--fq-rate`): the sender's time ends when what it wrote was sent.
    pub paced: bool,
    pub limits: Limits,
    /// The server's MSS when the control connection opened.
    pub peer_mss: Option<u32>,
}

/// The server's plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerPlan {
    /// How the receivers drain after `TEST_END` (the client's wish).
    pub drain: Drain,
    pub limits: Limits,
    /// The client's MSS when the control connection opened.
    pub peer_mss: Option<u32>,
}

/// What the runner must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Client: open the data connections now (each sends the cookie first).
    OpenStreams,
    /// Client: start moving data (`TEST_RUNNING`); answer with [`TestRun::data_started`].
    /// The test's clock starts at `started`, when `TEST_START` arrived, as iperf3's client
    /// starts its `-t` there and its server its own clock when it sent it: the server's
    /// receiver interval then spans what the client's sender interval does, however long
    /// the client takes to start its workers.
    StartData { started: Duration },
    /// Client: the test is over: stop the senders (paced: wait until what they wrote was
    /// sent) and answer with [`TestRun::senders_stopped`] and the moment the data phase ended.
    StopSenders { paced: bool },
    /// Stop the senders, drain the receivers, close the last interval at the later of
    /// `decided` and the last arrival; then answer with [`TestRun::data_finished`].
    Finish { decided: Duration, drain: Drain },
    /// Build this end's results and hand them to [`TestRun::send_results`].
    SendResults,
    /// The peer's observation of one interval.
    PeerLive(Box<LiveInterval>),
    /// The peer's results (verify, keep; a server answers with its own: [`Action::SendResults`]
    /// follows).
    PeerResults(Box<TestResults>),
    /// The test is over.
    End(Ending),
}

/// Why a test ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Results exchanged.
    Complete,
    /// This end's results message went out and makes no progress (an MTU black hole toward
    /// the peer): the report is this end's, with the stall for the verdict.
    ResultsStalled(ControlStall),
    /// The peer went silent (its data, or its results, never came): stop here with this
    /// end's counts; `silent` is for the verdict, `cause` for the error.
    Silent { silent: PeerSilent, cause: Cause },
    /// One of this end's limits.
    Limit(WatchStop),
    /// The server refused or aborted the test.
    Refused(Refusal),
    /// The peer ended the test (`SERVER_TERMINATE`, `CLIENT_TERMINATE`).
    PeerTerminated,
    /// The control connection failed; `in_setup`: before the parameters were exchanged.
    Failed { failure: Failure, in_setup: bool },
    /// The user interrupted the test.
    Interrupted,
    /// The peer sent this where the test had no place for it.
    Unexpected(&'static str),
}

/// What made an end give up on a silent peer.
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
    Watch(WatchStop),
    Control(Failure),
}

#[derive(Debug)]
enum Session {
    Client(Box<ClientSession>),
    Server(Box<ServerSession>),
}

/// Where the test is, as the core sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Setup,
    Running,
    /// The client decided the end (and is waiting for the senders to stop).
    Stopping,
    /// The data phase ended at this end.
    Finished,
    Over,
}

/// One test at one end.
#[derive(Debug)]
pub struct TestRun {
    sess: Session,
    end: Option<EndAt>,
    paced: bool,
    drain: Drain,
    limits: Limits,
    peer_mss: Option<u32>,
    stage: Stage,
    watch: Option<watch::Watch>,
    progress: Progress,
    /// The client's decision: when the data phase ended.
    decided: Option<Duration>,
    /// Client: when `TEST_START` arrived.
    test_start: Option<Duration>,
    /// When this end asked for (server) or was asked for (client) the results.
    results_asked: Option<Duration>,
    /// When this end's results went out, and the control connection's retransmits then.
    results_sent: Option<(Duration, u32)>,
    peer_results: bool,
    /// The peer acted on this end's results (a server's results answer the client's).
    results_confirmed: bool,
    control: Option<ControlInfo>,
    actions: VecDeque<Action>,
}

impl TestRun {
    /// A client's test: queues the cookie; the parameters follow when the server asks.
    pub fn client(
        now: Duration,
        cookie: Cookie,
        params: TestParams,
        timeouts: Timeouts,
        plan: ClientPlan,
    ) -> TestRun {
        TestRun::new(
            Session::Client(Box::new(ClientSession::new(now, cookie, params, timeouts))),
            Some(plan.end),
            plan.paced,
            Drain::UntilEof {
                within: Duration::from_secs(5),
            },
            plan.limits,
            plan.peer_mss,
        )
    }

    /// A server's test, from a session whose parameters were accepted (`accept` called or to
    /// be called by the runner's stream setup).
    pub fn server(sess: ServerSession, plan: ServerPlan) -> TestRun {
        TestRun::new(
            Session::Server(Box::new(sess)),
            None,
            false,
            plan.drain,
            plan.limits,
            plan.peer_mss,
        )
    }

    fn new(
        sess: Session,
        end: Option<EndAt>,
        paced: bool,
        drain: Drain,
        limits: Limits,
        peer_mss: Option<u32>,
    ) -> TestRun {
        TestRun {
            sess,
            end,
            paced,
            drain,
            limits,
            peer_mss,
            stage: Stage::Setup,
            watch: None,
            progress: Progress::default(),
            decided: None,
            test_start: None,
            results_asked: None,
            results_sent: None,
            peer_results: false,
            results_confirmed: false,
            control: None,
            actions: VecDeque::new(),
        }
    }

    fn peer(&self) -> End {
        match self.sess {
            Session::Client(_) => End::Server,
            Session::Server(_) => End::Client,
        }
    }

    /// Bytes to write to the control connection.
    pub fn take_transmit(&mut self) -> Vec<u8> {
        match &mut self.sess {
            Session::Client(s) => s.take_transmit(),
            Session::Server(s) => s.take_transmit(),
        }
    }

    /// The next action, after every input.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// `true` once the test ended.
    pub fn is_over(&self) -> bool {
        self.stage == Stage::Over
    }

    /// `true` while the data phase runs at this end.
    pub fn is_running(&self) -> bool {
        self.stage == Stage::Running
    }

    /// `true` when this end ends the data phase at a byte or block count (`-n`, `-k`): a
    /// count is no time the core can name in [`TestRun::deadline`], the runner reads the
    /// counters often while the data flows.
    pub fn ends_at_count(&self) -> bool {
        matches!(self.end, Some(EndAt::Bytes(_) | EndAt::Blocks(_)))
    }

    /// The latest the runner must step the core again ([`TestRun::handle_timeout`]): the
    /// session's deadline, the watch's, the results' black-hole check, the end of a timed test.
    pub fn deadline(&self) -> Option<Duration> {
        let sess = match &self.sess {
            Session::Client(s) => s.deadline(),
            Session::Server(s) => s.deadline(),
        };
        let watch = self
            .watch
            .as_ref()
            .filter(|_| self.stage == Stage::Running)
            .and_then(watch::Watch::deadline);
        let timed = match (self.stage, self.end) {
            (Stage::Running, Some(EndAt::Time(t))) if self.progress.omit_done => {
                Some(self.progress.measure_start + t)
            }
            _ => None,
        };
        let stall = self
            .results_sent
            .filter(|_| !self.results_confirmed)
            .map(|(t, _)| t + STALL_AFTER);
        [sess, watch, timed, stall].into_iter().flatten().min()
    }

    /// The client's session (what it was asked, the live frames it has).
    pub fn client_session(&self) -> Option<&ClientSession> {
        match &self.sess {
            Session::Client(s) => Some(s),
            Session::Server(_) => None,
        }
    }

    /// The server's session.
    pub fn server_session(&self) -> Option<&ServerSession> {
        match &self.sess {
            Session::Server(s) => Some(s),
            Session::Client(_) => None,
        }
    }

    /// The server's stream setup: `CREATE_STREAMS` goes out.
    pub fn accept(&mut self, now: Duration) -> Result<(), WireError> {
        match &mut self.sess {
            Session::Server(s) => s.accept(now),
            Session::Client(_) => Ok(()),
        }
    }

    /// The server's streams are ready: `TEST_START` and `TEST_RUNNING` go out; the runner
    /// starts its data phase and calls [`TestRun::data_started`].
    pub fn streams_ready(&mut self, now: Duration) -> Result<(), WireError> {
        match &mut self.sess {
            Session::Server(s) => s.streams_ready(now),
            Session::Client(_) => Ok(()),
        }
    }

    /// Refuse or abort the test with `decline` (server).
    pub fn refuse(&mut self, decline: &Decline) {
        if let Session::Server(s) = &mut self.sess {
            s.refuse(decline);
        }
    }

    /// The data phase began at this end.
    pub fn data_started(&mut self, now: Duration) {
        self.stage = Stage::Running;
        self.watch = Some(watch::Watch::new(self.limits, now));
    }

    /// Bytes from the control connection.
    pub fn handle_input(&mut self, now: Duration, bytes: &[u8]) {
        if let Some(w) = &mut self.watch {
            w.control(now);
        }
        match &mut self.sess {
            Session::Client(s) => s.handle_input(now, bytes),
            Session::Server(s) => s.handle_input(now, bytes),
        }
        self.events(now);
    }

    /// The control connection closed.
    pub fn handle_eof(&mut self, now: Duration) {
        match &mut self.sess {
            Session::Client(s) => s.handle_eof(now),
            Session::Server(s) => s.handle_eof(now),
        }
        self.events(now);
    }

    /// The data phase's counters now.
    pub fn handle_progress(&mut self, now: Duration, p: Progress) {
        self.progress = p;
        if self.stage != Stage::Running {
            return;
        }
        if let Some(stop) = self
            .watch
            .as_mut()
            .and_then(|w| w.check(p.bytes, p.receives, now))
        {
            if let WatchStop::ReceiveIdle { quiet, .. } = stop {
                self.silent(SilentPhase::Data, quiet, Cause::Watch(stop));
            } else {
                self.over(Ending::Limit(stop));
            }
            return;
        }
        if self.end_reached(now) {
            self.stage = Stage::Stopping;
            self.actions
                .push_back(Action::StopSenders { paced: self.paced });
        }
    }

    fn end_reached(&self, now: Duration) -> bool {
        let p = &self.progress;
        let Some(end) = self.end else {
            return false;
        };
        if !p.omit_done {
            return false;
        }
        // Every sending stream died (peer reset): end now, the control connection says why.
        p.senders_finished
            || match end {
                EndAt::Bytes(n) => p.bytes.0 >= n || p.bytes.1 >= n,
                EndAt::Blocks(k) => p.blocks.0 >= k || p.blocks.1 >= k,
                EndAt::Time(t) => now >= p.measure_start + t,
            }
    }

    /// The client's senders stopped; the data phase ended at `decided`: `TEST_END` goes out.
    pub fn senders_stopped(&mut self, now: Duration, decided: Duration) -> Result<(), WireError> {
        self.decided = Some(decided);
        self.stage = Stage::Finished;
        match &mut self.sess {
            Session::Client(s) => s.end_test(now),
            Session::Server(_) => Ok(()),
        }
    }

    /// The runner finished the data phase ([`Action::Finish`]): a server asks for the
    /// client's results; a client sends its own ([`Action::SendResults`] follows).
    pub fn data_finished(&mut self, now: Duration) -> Result<(), WireError> {
        self.stage = Stage::Finished;
        match &mut self.sess {
            Session::Server(s) => {
                s.request_results(now)?;
                self.results_asked = Some(now);
            }
            Session::Client(_) => self.actions.push_back(Action::SendResults),
        }
        Ok(())
    }

    /// This end's results: they go out, and the black-hole watch on them starts.
    pub fn send_results(
        &mut self,
        now: Duration,
        results: &TestResults,
        control: Option<ControlInfo>,
    ) -> Result<(), WireError> {
        match &mut self.sess {
            Session::Client(s) => s.send_results(now, results)?,
            Session::Server(s) => s.send_results(now, results)?,
        }
        self.results_sent = Some((now, control.map_or(0, |c| c.retransmits_total)));
        self.events(now);
        Ok(())
    }

    /// This end's live frame for the peer (when the peer takes them): `true` when queued.
    pub fn send_live(&mut self, li: &LiveInterval) -> bool {
        match &mut self.sess {
            Session::Client(s) => s.send_live(li).unwrap_or(false),
            Session::Server(s) => s.send_live(li).unwrap_or(false),
        }
    }

    /// Time passed (the deadline, or a wake-up) with the control connection's state now.
    pub fn handle_timeout(&mut self, now: Duration, control: Option<ControlInfo>) {
        if control.is_some() {
            self.control = control;
        }
        match &mut self.sess {
            Session::Client(s) => s.handle_timeout(now),
            Session::Server(s) => s.handle_timeout(now),
        }
        self.events(now);
        if self.is_over() {
            return;
        }
        // An MTU black hole: this end's results message (large) makes no progress while the
        // small messages before it got through.
        if let (Some((sent, retrans)), false, Some(c)) =
            (self.results_sent, self.results_confirmed, &self.control)
        {
            if let Some(stall) = control_stalled(sent, now, retrans, c) {
                self.over(Ending::ResultsStalled(stall));
            }
        }
    }

    /// The user interrupted the test: the client tells the server.
    pub fn interrupt(&mut self) {
        self.terminate();
        self.over(Ending::Interrupted);
    }

    /// Tell the peer the test is over (`CLIENT_TERMINATE`/`SERVER_TERMINATE`).
    pub fn terminate(&mut self) {
        match &mut self.sess {
            Session::Client(s) => s.terminate(),
            Session::Server(s) => s.terminate(),
        }
    }

    fn over(&mut self, e: Ending) {
        if self.stage == Stage::Over {
            return;
        }
        self.stage = Stage::Over;
        self.actions.push_back(Action::End(e));
    }

    /// The peer went silent in `phase` after waiting `waited`, with what this end knows. The
    /// runner stops here: senders stopped, receivers drained with [`Drain::SILENT`] (they
    /// are quiet), the last interval closed now.
    fn silent(&mut self, phase: SilentPhase, waited: Duration, cause: Cause) {
        let silent = peer_silent(
            self.peer(),
            phase,
            waited,
            self.progress.bytes,
            self.peer_mss,
            self.results_sent.is_some(),
            self.control.as_ref(),
        );
        self.over(Ending::Silent { silent, cause });
    }

    fn events(&mut self, now: Duration) {
        loop {
            if self.is_over() {
                return;
            }
            match &mut self.sess {
                Session::Client(s) => {
                    let Some(ev) = s.poll_event() else { return };
                    let before = s.phase_before_failure();
                    self.client_event(now, ev, before);
                }
                Session::Server(s) => {
                    let Some(ev) = s.poll_event() else { return };
                    self.server_event(now, ev);
                }
            }
        }
    }

    fn client_event(&mut self, now: Duration, ev: ClientEvent, before: Option<ClientPhase>) {
        match ev {
            ClientEvent::CreateStreams => self.actions.push_back(Action::OpenStreams),
            ClientEvent::TestStart => self.test_start = Some(now),
            ClientEvent::TestRunning => self.actions.push_back(Action::StartData {
                started: self.test_start.unwrap_or(now),
            }),
            ClientEvent::PeerLive(li) => self.actions.push_back(Action::PeerLive(li)),
            ClientEvent::ResultsRequested => {
                self.results_asked = Some(now);
                self.stage = Stage::Finished;
                self.actions.push_back(Action::Finish {
                    decided: self.decided.unwrap_or(now),
                    drain: self.drain,
                });
            }
            ClientEvent::PeerResults(r) => {
                self.peer_results = true;
                self.results_confirmed = true;
                self.actions.push_back(Action::PeerResults(r));
            }
            ClientEvent::Finished => self.over(Ending::Complete),
            ClientEvent::Refused(r) => self.over(Ending::Refused(r)),
            ClientEvent::ServerTerminated => self.over(Ending::PeerTerminated),
            ClientEvent::Failed(f) => {
                let awaited = before == Some(ClientPhase::AwaitPeerResults) && !self.peer_results;
                self.failed(
                    now,
                    f,
                    awaited,
                    before == Some(ClientPhase::AwaitParamExchange),
                );
            }
        }
    }

    fn server_event(&mut self, now: Duration, ev: ServerEvent) {
        match ev {
            ServerEvent::TestEnd => {
                self.stage = Stage::Finished;
                self.actions.push_back(Action::Finish {
                    decided: now,
                    drain: self.drain,
                });
            }
            ServerEvent::PeerResults(r) => {
                self.peer_results = true;
                self.actions.push_back(Action::PeerResults(r));
                self.actions.push_back(Action::SendResults);
            }
            ServerEvent::Finished => self.over(Ending::Complete),
            ServerEvent::ClientTerminated => self.over(Ending::PeerTerminated),
            ServerEvent::PeerLive(li) => self.actions.push_back(Action::PeerLive(li)),
            ServerEvent::Failed(f) => {
                let awaited = self.results_asked.is_some() && !self.peer_results;
                self.failed(now, f, awaited, false);
            }
            ServerEvent::Params(_) => self.over(Ending::Unexpected("parameters")),
        }
    }

    /// The control connection failed. While this end waited for the peer's results (after its
    /// data phase): the peer went silent, and the test ends with this end's report.
    fn failed(&mut self, now: Duration, f: Failure, awaited_results: bool, in_setup: bool) {
        if awaited_results {
            let since = self
                .results_sent
                .map(|s| s.0)
                .or(self.results_asked)
                .unwrap_or(now);
            let waited = match &f {
                Failure::Timeout { after, .. } => Some(*after),
                Failure::Closed { .. } => Some(now.saturating_sub(since)),
                Failure::Protocol { .. } => None,
            };
            if let Some(w) = waited {
                self.silent(SilentPhase::Results, w, Cause::Control(f));
                return;
            }
        }
        self.over(Ending::Failed {
            failure: f,
            in_setup,
        });
    }
}
