//! Sans-I/O state machines for the two ends of a control connection.
//!
//! Neither machine touches a socket or reads a clock. The caller feeds received bytes
//! ([`ClientSession::handle_input`]), end of stream, decisions and the current time (a
//! monotonic `Duration` since any origin the caller likes); the machine answers with bytes to
//! send ([`ClientSession::take_transmit`]), events to act on ([`ClientSession::poll_event`])
//! and the next deadline ([`ClientSession::deadline`]) at which the caller must call
//! `handle_timeout`. Bytes that arrive early stay buffered (bounded) until the phase that reads
//! them.
//!
//! The sequence (TCP; UDP is the same on the control connection):
//!
//! ```text
//! client                                   server
//!   cookie (37 bytes)            ->
//!                                <-        PARAM_EXCHANGE
//!   params (len + JSON)          ->
//!                                <-        CREATE_STREAMS          (or ACCESS_DENIED /
//!   data connections, each sends the cookie                         SERVER_ERROR + 8 bytes)
//!                                <-        TEST_START, TEST_RUNNING
//!   ... data flows; client decides the end ...
//!   TEST_END                     ->
//!                                <-        EXCHANGE_RESULTS
//!   client results (len + JSON)  ->
//!                                <-        server results (len + JSON)
//!                                <-        DISPLAY_RESULTS
//!   IPERF_DONE                   ->
//! ```
//!
//! Between `TEST_RUNNING` and `TEST_END`, when the client asked for them (`"live": true` in its
//! parameters' extension), each end may send live frames ([`crate::live`]): the server first,
//! the client only after one arrived. Each machine takes at most its [`LiveBudget`] of them and
//! skips the rest unparsed.

/// What a machine does with the live frames it reads.
#[derive(Debug, Default)]
struct LiveIn {
    budget: LiveBudget,
    /// Frames read.
    read: u64,
    /// Frames skipped over budget.
    skipped: u64,
    /// Bytes of the frames read within the budget (markers and headers included).
    read_bytes: u64,
}

/// What a live frame at the front of the inbox came to.
enum LiveStep {
    /// Not all there yet.
    Wait,
    /// Parsed (`Some`) or skipped over budget (`None`); consumed.
    Took(Option<Box<LiveInterval>>),
    /// Broken: the connection cannot go on.
    Bad(WireError),
}

impl LiveIn {
    fn step(&mut self, inbox: &mut Inbox, now: Duration) -> LiveStep {
        let n = match LiveInterval::frame_len(inbox.data()) {
            Ok(n) => n,
            Err(e) if e.is_truncated() => return LiveStep::Wait,
            Err(e) => return LiveStep::Bad(e),
        };
        if !self.budget.take(now) {
            inbox.consume(n);
            self.skipped += 1;
            return LiveStep::Took(None);
        }
        match LiveInterval::decode(inbox.data()) {
            Ok((li, n)) => {
                inbox.consume(n);
                self.read += 1;
                self.read_bytes += n as u64;
                LiveStep::Took(Some(Box::new(li)))
            }
            Err(e) => LiveStep::Bad(e),
        }
    }
}

use std::collections::VecDeque;
use std::time::Duration;

use crate::cookie::Cookie;
use crate::frame::{JsonFrame, MAX_CLIENT_RESULTS_LEN, MAX_PARAMS_LEN, MAX_RESULTS_LEN};
use crate::live::{LiveBudget, LiveInterval, LIVE_MARKER};
use crate::params::TestParams;
use crate::results::TestResults;
use crate::server_error::{self, ServerErrorBody, DETAIL_MAGIC, SERVER_ERROR_BODY_LEN};
use crate::state::State;
use crate::WireError;

/// How long each waiting phase may last before the machine gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Each step of the setup (a state byte, the parameters).
    pub setup: Duration,
    /// The data connections after `CREATE_STREAMS` (server side).
    pub streams: Duration,
    /// The results exchange after `TEST_END`.
    pub results: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            setup: Duration::from_secs(10),
            streams: Duration::from_secs(20),
            results: Duration::from_secs(20),
        }
    }
}

impl Timeouts {
    /// The timeouts a server derives from its one handshake timeout: each setup step gets it,
    /// the data connections twice it (they follow `CREATE_STREAMS` after a setup step); the
    /// results exchange keeps its own.
    pub fn from_handshake(handshake: Duration) -> Timeouts {
        Timeouts {
            setup: handshake,
            streams: handshake * 2,
            ..Timeouts::default()
        }
    }
}

/// Why the server said no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `ACCESS_DENIED`: busy, or over a limit, as iperf3 reports it.
    AccessDenied,
    /// `SERVER_ERROR` with iperf3's codes, and wirespeed's own words when the server is
    /// wirespeed.
    ServerError {
        i_errno: i32,
        errno: i32,
        detail: Option<String>,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::AccessDenied => {
                f.write_str("access denied (the server is busy or at its limit of tests)")
            }
            Refusal::ServerError {
                i_errno,
                detail: Some(d),
                ..
            } => write!(
                f,
                "{} (iperf3 error {i_errno})",
                // the server's own words: never raw to a terminal
                wirespeed_model::text::terminal(d)
            ),
            Refusal::ServerError { i_errno, errno, .. } => {
                write!(
                    f,
                    "{} (iperf3 error {i_errno}",
                    server_error::describe(*i_errno)
                )?;
                if *errno != 0 {
                    write!(f, ", errno {errno}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// A control connection that cannot go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The peer sent bytes that do not decode, or a state not allowed now.
    Protocol {
        phase: &'static str,
        error: WireError,
    },
    /// The peer closed the connection.
    Closed { phase: &'static str },
    /// Nothing arrived in time.
    Timeout {
        phase: &'static str,
        after: Duration,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Protocol { phase, error } => {
                write!(f, "protocol error while {phase}: {error}")
            }
            Failure::Closed { phase } => {
                write!(f, "the peer closed the control connection while {phase}")
            }
            Failure::Timeout { phase, after } => {
                write!(
                    f,
                    "timed out after {:.1} s while {phase}",
                    after.as_secs_f64()
                )
            }
        }
    }
}

/// Bytes received and not yet consumed; bounded.
///
/// Consuming only moves a read offset; the consumed front is dropped in one move once it is
/// at least half the buffer (or everything was read). Each byte is therefore moved a bounded
/// number of times, so a flood of one-byte state messages costs O(n), not O(n²).
#[derive(Debug)]
struct Inbox {
    /// Most bytes held at once.
    max: usize,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed.
    start: usize,
    /// Bytes moved by compaction, for the tests' O(n) check.
    #[cfg(test)]
    moved: usize,
}

impl Inbox {
    /// An inbox that holds at most the largest frame `max_frame` plus a few state bytes.
    fn new(max_frame: u32) -> Inbox {
        Inbox {
            max: max_frame as usize + 64,
            buf: Vec::new(),
            start: 0,
            #[cfg(test)]
            moved: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        let held = self.buf.len() - self.start;
        if held + bytes.len() > self.max {
            return Err(WireError::Oversized {
                len: u32::try_from(held + bytes.len()).unwrap_or(u32::MAX),
                max: u32::try_from(self.max).unwrap_or(u32::MAX),
            });
        }
        self.compact();
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The bytes not yet consumed.
    fn data(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Drop the consumed front when it is at least half the buffer.
    fn compact(&mut self) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            #[cfg(test)]
            {
                self.moved += self.buf.len() - self.start;
            }
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }
}

/// What both ends' machines keep the same way: the phase, the deadline that goes with it,
/// bytes to send and events to hand out.
#[derive(Debug)]
struct Machine<P, E> {
    phase: P,
    deadline: Option<Duration>,
    /// How long the current deadline allows (what a timeout reports it waited).
    armed: Duration,
    outbox: Vec<u8>,
    events: VecDeque<E>,
}

impl<P, E> Machine<P, E> {
    fn new(now: Duration, phase: P, timeout: Duration, outbox: Vec<u8>) -> Self {
        Machine {
            phase,
            deadline: Some(now + timeout),
            armed: timeout,
            outbox,
            events: VecDeque::new(),
        }
    }

    fn enter(&mut self, now: Duration, phase: P, timeout: Option<Duration>) {
        self.phase = phase;
        self.deadline = timeout.map(|t| now + t);
        self.armed = timeout.unwrap_or_default();
    }

    /// Stay in `phase` with nothing more to wait for.
    fn settle(&mut self, phase: P) {
        self.phase = phase;
        self.deadline = None;
    }

    /// Settle in `phase` (done or failed) and hand out `ev`.
    fn stop(&mut self, phase: P, ev: E) {
        self.settle(phase);
        self.events.push_back(ev);
    }
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/// Where the client is in the sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    AwaitParamExchange,
    AwaitCreateStreams,
    AwaitTestStart,
    AwaitTestRunning,
    Running,
    AwaitExchangeResults,
    /// The caller must call [`ClientSession::send_results`].
    AwaitLocalResults,
    AwaitPeerResults,
    AwaitDisplayResults,
    Done,
    Failed,
}

impl ClientPhase {
    fn describe(self) -> &'static str {
        match self {
            ClientPhase::AwaitParamExchange => "waiting for PARAM_EXCHANGE",
            ClientPhase::AwaitCreateStreams => "waiting for CREATE_STREAMS",
            ClientPhase::AwaitTestStart => "waiting for TEST_START",
            ClientPhase::AwaitTestRunning => "waiting for TEST_RUNNING",
            ClientPhase::Running => "running the test",
            ClientPhase::AwaitExchangeResults => "waiting for EXCHANGE_RESULTS",
            ClientPhase::AwaitLocalResults => "preparing results",
            ClientPhase::AwaitPeerResults => "waiting for the server's results",
            ClientPhase::AwaitDisplayResults => "waiting for DISPLAY_RESULTS",
            ClientPhase::Done => "done",
            ClientPhase::Failed => "failed",
        }
    }
}

/// What the client's caller must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// Open the data connections now (each sends the cookie first).
    CreateStreams,
    /// Prepare to run: the server has all streams.
    TestStart,
    /// Start moving data.
    TestRunning,
    /// The server asks for results: stop, then call [`ClientSession::send_results`].
    ResultsRequested,
    /// The server's observation of one interval (a live frame).
    PeerLive(Box<LiveInterval>),
    /// The server's results.
    PeerResults(Box<TestResults>),
    /// `DISPLAY_RESULTS` arrived and `IPERF_DONE` is queued: flush, then close.
    Finished,
    /// The server refused or aborted the test.
    Refused(Refusal),
    /// `SERVER_TERMINATE`: the server stopped the test.
    ServerTerminated,
    /// The connection cannot go on.
    Failed(Failure),
}

/// The client end of a control connection.
#[derive(Debug)]
pub struct ClientSession {
    cookie: Cookie,
    params: TestParams,
    timeouts: Timeouts,
    m: Machine<ClientPhase, ClientEvent>,
    inbox: Inbox,
    /// A SERVER_ERROR body was read and announced a detail frame.
    pending_error: Option<ServerErrorBody>,
    /// The phase the session was in when it failed.
    failed_in: Option<ClientPhase>,
    /// The client asked for live frames.
    live: bool,
    live_in: LiveIn,
}

impl ClientSession {
    /// Start: queues the cookie.
    pub fn new(
        now: Duration,
        cookie: Cookie,
        params: TestParams,
        timeouts: Timeouts,
    ) -> ClientSession {
        let live = params.wirespeed.as_ref().is_some_and(|w| w.live);
        ClientSession {
            cookie,
            params,
            timeouts,
            m: Machine::new(
                now,
                ClientPhase::AwaitParamExchange,
                timeouts.setup,
                cookie.as_bytes().to_vec(),
            ),
            inbox: Inbox::new(MAX_RESULTS_LEN),
            pending_error: None,
            failed_in: None,
            live,
            live_in: LiveIn::default(),
        }
    }

    pub fn cookie(&self) -> &Cookie {
        &self.cookie
    }

    pub fn params(&self) -> &TestParams {
        &self.params
    }

    pub fn phase(&self) -> ClientPhase {
        self.m.phase
    }

    /// When [`Self::handle_timeout`] must be called, if the machine is waiting on the peer.
    pub fn deadline(&self) -> Option<Duration> {
        self.m.deadline
    }

    /// Bytes to write to the control connection (in order), emptying the queue.
    pub fn take_transmit(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.m.outbox)
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.m.events.pop_front()
    }

    /// `true` once finished or failed.
    pub fn is_closed(&self) -> bool {
        matches!(self.m.phase, ClientPhase::Done | ClientPhase::Failed)
    }

    /// Bytes received and not yet consumed (for per-peer accounting of buffered control
    /// input).
    pub fn buffered(&self) -> usize {
        self.inbox.data().len()
    }

    fn enter(&mut self, now: Duration, phase: ClientPhase, timeout: Option<Duration>) {
        self.m.enter(now, phase, timeout);
    }

    fn fail(&mut self, f: Failure) {
        self.failed_in = Some(self.m.phase);
        self.m.stop(ClientPhase::Failed, ClientEvent::Failed(f));
    }

    /// The phase the session was in when it failed (e.g. to tell "no iperf3 server answered"
    /// from "the server vanished mid-test").
    pub fn phase_before_failure(&self) -> Option<ClientPhase> {
        self.failed_in
    }

    fn stop_with(&mut self, ev: ClientEvent) {
        self.m.stop(ClientPhase::Failed, ev);
    }

    /// Bytes read from the control connection.
    pub fn handle_input(&mut self, now: Duration, bytes: &[u8]) {
        if self.is_closed() {
            return;
        }
        if let Err(e) = self.inbox.push(bytes) {
            let phase = self.m.phase.describe();
            self.fail(Failure::Protocol { phase, error: e });
            return;
        }
        self.process(now);
    }

    /// The peer closed the control connection.
    pub fn handle_eof(&mut self, _now: Duration) {
        if self.is_closed() {
            return;
        }
        // iperf3 refuses an authentication with SERVER_ERROR and i_errno alone (4 bytes, no
        // errno) before it closes: that is a refusal, not a vanished server.
        let d = self.inbox.data();
        if d.len() >= 5 && d[0] == State::ServerError.to_byte() && self.pending_error.is_none() {
            let i_errno = i32::from_be_bytes([d[1], d[2], d[3], d[4]]);
            self.stop_with(ClientEvent::Refused(Refusal::ServerError {
                i_errno,
                errno: 0,
                detail: None,
            }));
            return;
        }
        let phase = self.m.phase.describe();
        self.fail(Failure::Closed { phase });
    }

    /// Time passed; fails the session if the current deadline has expired.
    pub fn handle_timeout(&mut self, now: Duration) {
        if let Some(d) = self.m.deadline {
            if now >= d && !self.is_closed() {
                let phase = self.m.phase.describe();
                let after = self.m.armed;
                self.fail(Failure::Timeout { phase, after });
            }
        }
    }

    /// The client decided the test is over (time, bytes or blocks reached): queue `TEST_END`.
    pub fn end_test(&mut self, now: Duration) -> Result<(), WireError> {
        if self.m.phase != ClientPhase::Running {
            return Err(WireError::UnexpectedState {
                state: State::TestEnd.to_string(),
                phase: self.m.phase.describe(),
            });
        }
        self.m.outbox.push(State::TestEnd.to_byte());
        self.enter(
            now,
            ClientPhase::AwaitExchangeResults,
            Some(self.timeouts.results),
        );
        self.process(now);
        Ok(())
    }

    /// `true` once a live frame from the server arrived: it sends them, so it reads ours.
    pub fn peer_sends_live(&self) -> bool {
        self.live_in.read + self.live_in.skipped > 0
    }

    /// Live frames read from the server, and skipped over the budget.
    pub fn live_frames(&self) -> (u64, u64) {
        (self.live_in.read, self.live_in.skipped)
    }

    /// Queue this end's observation of an interval, when the server takes them (it sent one)
    /// and the test runs; `Ok(false)` when not sent.
    pub fn send_live(&mut self, li: &LiveInterval) -> Result<bool, WireError> {
        if self.m.phase != ClientPhase::Running || !self.peer_sends_live() {
            return Ok(false);
        }
        let f = li.encode()?;
        self.m.outbox.extend_from_slice(&f);
        Ok(true)
    }

    /// Abort the test (Ctrl-C): queue `CLIENT_TERMINATE`.
    pub fn terminate(&mut self) {
        if !self.is_closed() {
            self.m.outbox.push(State::ClientTerminate.to_byte());
            self.m.settle(ClientPhase::Failed);
        }
    }

    /// Our results, after [`ClientEvent::ResultsRequested`].
    pub fn send_results(&mut self, now: Duration, results: &TestResults) -> Result<(), WireError> {
        if self.m.phase != ClientPhase::AwaitLocalResults {
            return Err(WireError::UnexpectedState {
                state: "client results".into(),
                phase: self.m.phase.describe(),
            });
        }
        let frame = results.encode_frame()?;
        self.m.outbox.extend_from_slice(&frame);
        self.enter(
            now,
            ClientPhase::AwaitPeerResults,
            Some(self.timeouts.results),
        );
        self.process(now);
        Ok(())
    }

    fn process(&mut self, now: Duration) {
        loop {
            if self.is_closed() {
                return;
            }
            // A SERVER_ERROR detail frame, if one was announced.
            if let Some(body) = self.pending_error {
                match server_error::decode_detail(self.inbox.data()) {
                    Ok((msg, n)) => {
                        self.inbox.consume(n);
                        self.pending_error = None;
                        self.stop_with(ClientEvent::Refused(Refusal::ServerError {
                            i_errno: body.i_errno,
                            errno: 0,
                            detail: Some(msg),
                        }));
                    }
                    Err(e) if e.is_truncated() => {}
                    Err(_) => {
                        // Unreadable detail: report the codes alone.
                        self.pending_error = None;
                        self.stop_with(ClientEvent::Refused(Refusal::ServerError {
                            i_errno: body.i_errno,
                            errno: 0,
                            detail: None,
                        }));
                    }
                }
                return;
            }
            let live_phase = matches!(
                self.m.phase,
                ClientPhase::Running | ClientPhase::AwaitExchangeResults
            );
            if self.live && live_phase && self.inbox.data().first() == Some(&LIVE_MARKER) {
                match self.live_in.step(&mut self.inbox, now) {
                    LiveStep::Wait => return,
                    LiveStep::Took(Some(li)) => self.m.events.push_back(ClientEvent::PeerLive(li)),
                    LiveStep::Took(None) => {}
                    LiveStep::Bad(error) => {
                        let phase = self.m.phase.describe();
                        self.fail(Failure::Protocol { phase, error });
                        return;
                    }
                }
                continue;
            }
            match self.m.phase {
                ClientPhase::AwaitLocalResults => return,
                ClientPhase::AwaitPeerResults => {
                    // A state byte (error) may come instead of results.
                    if let Some(&b) = self.inbox.data().first() {
                        if matches!(
                            State::from_byte(b),
                            Ok(State::ServerError | State::AccessDenied | State::ServerTerminate)
                        ) {
                            if !self.step_state_at(now) {
                                return;
                            }
                            continue;
                        }
                    }
                    match TestResults::decode_frame(self.inbox.data()) {
                        Ok((r, n)) => {
                            self.inbox.consume(n);
                            self.m
                                .events
                                .push_back(ClientEvent::PeerResults(Box::new(r)));
                            self.enter(
                                now,
                                ClientPhase::AwaitDisplayResults,
                                Some(self.timeouts.results),
                            );
                        }
                        Err(e) if e.is_truncated() => return,
                        Err(error) => {
                            let phase = self.m.phase.describe();
                            self.fail(Failure::Protocol { phase, error });
                            return;
                        }
                    }
                }
                _ => {
                    if !self.step_state_at(now) {
                        return;
                    }
                }
            }
        }
    }

    /// Consume one state byte (and what follows it for `SERVER_ERROR`); `false` when more
    /// input is needed.
    fn step_state_at(&mut self, now: Duration) -> bool {
        let Some(&b) = self.inbox.data().first() else {
            return false;
        };
        let state = match State::from_byte(b) {
            Ok(s) => s,
            Err(error) => {
                let phase = self.m.phase.describe();
                self.fail(Failure::Protocol { phase, error });
                return false;
            }
        };
        if state == State::ServerError {
            let body = match ServerErrorBody::parse(&self.inbox.data()[1..]) {
                Ok(b) => b,
                Err(_) => return false, // only truncation is possible
            };
            self.inbox.consume(1 + SERVER_ERROR_BODY_LEN);
            if body.errno == DETAIL_MAGIC {
                self.pending_error = Some(body);
            } else {
                self.stop_with(ClientEvent::Refused(Refusal::ServerError {
                    i_errno: body.i_errno,
                    errno: body.errno,
                    detail: None,
                }));
            }
            return true;
        }
        self.inbox.consume(1);
        let unexpected = |s: &mut ClientSession| {
            let phase = s.m.phase.describe();
            s.fail(Failure::Protocol {
                phase,
                error: WireError::UnexpectedState {
                    state: state.to_string(),
                    phase,
                },
            });
        };
        match (self.m.phase, state) {
            (_, State::AccessDenied) => self.stop_with(ClientEvent::Refused(Refusal::AccessDenied)),
            (_, State::ServerTerminate) => self.stop_with(ClientEvent::ServerTerminated),
            (ClientPhase::AwaitParamExchange, State::ParamExchange) => {
                match self.params.encode_frame() {
                    Ok(f) => {
                        self.m.outbox.extend_from_slice(&f);
                        self.enter(
                            now,
                            ClientPhase::AwaitCreateStreams,
                            Some(self.timeouts.setup),
                        );
                    }
                    Err(error) => self.fail(Failure::Protocol {
                        phase: "sending parameters",
                        error,
                    }),
                }
            }
            (ClientPhase::AwaitCreateStreams, State::CreateStreams) => {
                self.m.events.push_back(ClientEvent::CreateStreams);
                self.enter(
                    now,
                    ClientPhase::AwaitTestStart,
                    Some(self.timeouts.streams),
                );
            }
            (ClientPhase::AwaitTestStart, State::TestStart) => {
                self.m.events.push_back(ClientEvent::TestStart);
                self.enter(
                    now,
                    ClientPhase::AwaitTestRunning,
                    Some(self.timeouts.setup),
                );
            }
            (ClientPhase::AwaitTestRunning, State::TestRunning) => {
                self.m.events.push_back(ClientEvent::TestRunning);
                self.enter(now, ClientPhase::Running, None);
            }
            (ClientPhase::AwaitExchangeResults, State::ExchangeResults) => {
                self.m.events.push_back(ClientEvent::ResultsRequested);
                self.enter(now, ClientPhase::AwaitLocalResults, None);
            }
            (ClientPhase::AwaitDisplayResults, State::DisplayResults) => {
                self.m.outbox.push(State::IperfDone.to_byte());
                self.m.events.push_back(ClientEvent::Finished);
                self.enter(now, ClientPhase::Done, None);
            }
            _ => unexpected(self),
        }
        true
    }
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// Where the server is in the sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    AwaitParams,
    /// The caller must [`ServerSession::accept`] or [`ServerSession::refuse`].
    AwaitDecision,
    /// Data connections are being matched; the caller calls [`ServerSession::streams_ready`].
    AwaitStreams,
    Running,
    /// `TEST_END` arrived; the caller stops the test and calls [`ServerSession::request_results`].
    Stopping,
    AwaitClientResults,
    /// The caller must call [`ServerSession::send_results`].
    AwaitLocalResults,
    AwaitDone,
    Done,
    Failed,
}

impl ServerPhase {
    fn describe(self) -> &'static str {
        match self {
            ServerPhase::AwaitParams => "waiting for the test parameters",
            ServerPhase::AwaitDecision => "deciding on the test",
            ServerPhase::AwaitStreams => "waiting for the data connections",
            ServerPhase::Running => "running the test",
            ServerPhase::Stopping => "stopping the test",
            ServerPhase::AwaitClientResults => "waiting for the client's results",
            ServerPhase::AwaitLocalResults => "preparing results",
            ServerPhase::AwaitDone => "waiting for IPERF_DONE",
            ServerPhase::Done => "done",
            ServerPhase::Failed => "failed",
        }
    }
}

/// What the server's caller must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// Decide: [`ServerSession::accept`] or [`ServerSession::refuse`].
    Params(Box<TestParams>),
    /// `TEST_END`: stop the streams, then [`ServerSession::request_results`].
    TestEnd,
    /// The client's results; answer with [`ServerSession::send_results`].
    PeerResults(Box<TestResults>),
    /// `IPERF_DONE` (or a close after the results): the test is complete.
    Finished,
    /// `CLIENT_TERMINATE`: the client aborted.
    ClientTerminated,
    /// The client's observation of one interval (a live frame).
    PeerLive(Box<LiveInterval>),
    /// The connection cannot go on.
    Failed(Failure),
}

/// How the server turns a test down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decline {
    /// One `ACCESS_DENIED` byte (iperf3's answer when busy).
    AccessDenied,
    /// `SERVER_ERROR` + `i_errno` + `errno`; `detail` is sent only to a wirespeed client.
    Error {
        i_errno: i32,
        errno: i32,
        detail: String,
    },
}

/// The server end of one test's control connection, from the moment its cookie was read.
#[derive(Debug)]
pub struct ServerSession {
    cookie: Cookie,
    timeouts: Timeouts,
    m: Machine<ServerPhase, ServerEvent>,
    inbox: Inbox,
    peer_is_wirespeed: bool,
    /// The client asked for live frames.
    live: bool,
    live_in: LiveIn,
}

impl ServerSession {
    /// The cookie has been read: queue `PARAM_EXCHANGE`.
    pub fn new(now: Duration, cookie: Cookie, timeouts: Timeouts) -> ServerSession {
        ServerSession {
            cookie,
            timeouts,
            m: Machine::new(
                now,
                ServerPhase::AwaitParams,
                timeouts.setup,
                vec![State::ParamExchange.to_byte()],
            ),
            inbox: Inbox::new(MAX_CLIENT_RESULTS_LEN),
            peer_is_wirespeed: false,
            live: false,
            live_in: LiveIn::default(),
        }
    }

    pub fn cookie(&self) -> &Cookie {
        &self.cookie
    }

    pub fn phase(&self) -> ServerPhase {
        self.m.phase
    }

    /// `true` once the parameters carried wirespeed's extension.
    pub fn peer_is_wirespeed(&self) -> bool {
        self.peer_is_wirespeed
    }

    pub fn deadline(&self) -> Option<Duration> {
        self.m.deadline
    }

    /// `true` when the client asked for live frames (it reads them and may send its own).
    pub fn live(&self) -> bool {
        self.live
    }

    /// Live frames read from the client, and skipped over the budget.
    pub fn live_frames(&self) -> (u64, u64) {
        (self.live_in.read, self.live_in.skipped)
    }

    /// Bytes of the client's live frames taken within the budget: negotiated, rate-bounded
    /// traffic that a server's control-byte accounting leaves out (frames over the budget,
    /// and every other byte, still count).
    pub fn live_bytes_within_budget(&self) -> u64 {
        self.live_in.read_bytes
    }

    /// Queue this end's observation of an interval, when the client asked for them and the
    /// test runs; `Ok(false)` when not sent.
    pub fn send_live(&mut self, li: &LiveInterval) -> Result<bool, WireError> {
        if self.m.phase != ServerPhase::Running || !self.live {
            return Ok(false);
        }
        let f = li.encode()?;
        self.m.outbox.extend_from_slice(&f);
        Ok(true)
    }

    pub fn take_transmit(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.m.outbox)
    }

    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.m.events.pop_front()
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.m.phase, ServerPhase::Done | ServerPhase::Failed)
    }

    /// Bytes received and not yet consumed (for per-peer accounting of buffered control
    /// input, see the guard crate).
    pub fn buffered(&self) -> usize {
        self.inbox.data().len()
    }

    fn enter(&mut self, now: Duration, phase: ServerPhase, timeout: Option<Duration>) {
        self.m.enter(now, phase, timeout);
    }

    fn fail(&mut self, f: Failure) {
        self.m.stop(ServerPhase::Failed, ServerEvent::Failed(f));
    }

    /// Parameters that do not decode: queue iperf3's `SERVER_ERROR` for them
    /// ([`server_error::params_errno`]) so that the client can say why; the caller sends
    /// [`ServerSession::take_transmit`] before it closes.
    fn refuse_params(&mut self, error: &WireError) {
        let (i_errno, errno) = server_error::params_errno(error);
        self.m.outbox.push(State::ServerError.to_byte());
        self.m
            .outbox
            .extend_from_slice(&ServerErrorBody { i_errno, errno }.emit());
    }

    fn wrong(&mut self, what: &str) -> WireError {
        WireError::UnexpectedState {
            state: what.to_string(),
            phase: self.m.phase.describe(),
        }
    }

    pub fn handle_input(&mut self, now: Duration, bytes: &[u8]) {
        if self.is_closed() {
            return;
        }
        if let Err(error) = self.inbox.push(bytes) {
            let phase = self.m.phase.describe();
            self.fail(Failure::Protocol { phase, error });
            return;
        }
        self.process(now);
    }

    pub fn handle_eof(&mut self, _now: Duration) {
        match self.m.phase {
            ServerPhase::AwaitDone => {
                self.m.stop(ServerPhase::Done, ServerEvent::Finished);
            }
            ServerPhase::Done | ServerPhase::Failed => {}
            p => {
                let phase = p.describe();
                self.fail(Failure::Closed { phase });
            }
        }
    }

    pub fn handle_timeout(&mut self, now: Duration) {
        if let Some(d) = self.m.deadline {
            if now >= d && !self.is_closed() {
                let phase = self.m.phase.describe();
                let after = self.m.armed;
                self.fail(Failure::Timeout { phase, after });
            }
        }
    }

    /// Run the test: queue `CREATE_STREAMS`.
    pub fn accept(&mut self, now: Duration) -> Result<(), WireError> {
        if self.m.phase != ServerPhase::AwaitDecision {
            return Err(self.wrong("accept"));
        }
        self.m.outbox.push(State::CreateStreams.to_byte());
        self.enter(now, ServerPhase::AwaitStreams, Some(self.timeouts.streams));
        self.process(now);
        Ok(())
    }

    /// Turn the test down (at any point before results); the connection is then done.
    pub fn refuse(&mut self, decline: &Decline) {
        if self.is_closed() {
            return;
        }
        match decline {
            Decline::AccessDenied => self.m.outbox.push(State::AccessDenied.to_byte()),
            Decline::Error {
                i_errno,
                errno,
                detail,
            } => {
                self.m.outbox.push(State::ServerError.to_byte());
                let with_detail = self.peer_is_wirespeed && !detail.is_empty();
                let body = ServerErrorBody {
                    i_errno: *i_errno,
                    errno: if with_detail { DETAIL_MAGIC } else { *errno },
                };
                self.m.outbox.extend_from_slice(&body.emit());
                if with_detail {
                    self.m
                        .outbox
                        .extend_from_slice(&server_error::encode_detail(detail));
                }
            }
        }
        self.m.settle(ServerPhase::Failed);
    }

    /// Stop a running test from the server side (e.g. over the maximum duration):
    /// queue `SERVER_TERMINATE`.
    pub fn terminate(&mut self) {
        if !self.is_closed() {
            self.m.outbox.push(State::ServerTerminate.to_byte());
            self.m.settle(ServerPhase::Failed);
        }
    }

    /// All data connections are matched: queue `TEST_START`, `TEST_RUNNING`.
    pub fn streams_ready(&mut self, now: Duration) -> Result<(), WireError> {
        if self.m.phase != ServerPhase::AwaitStreams {
            return Err(self.wrong("streams ready"));
        }
        self.m.outbox.push(State::TestStart.to_byte());
        self.m.outbox.push(State::TestRunning.to_byte());
        self.enter(now, ServerPhase::Running, None);
        self.process(now);
        Ok(())
    }

    /// The streams are stopped: queue `EXCHANGE_RESULTS`.
    pub fn request_results(&mut self, now: Duration) -> Result<(), WireError> {
        if self.m.phase != ServerPhase::Stopping {
            return Err(self.wrong("request results"));
        }
        self.m.outbox.push(State::ExchangeResults.to_byte());
        self.enter(
            now,
            ServerPhase::AwaitClientResults,
            Some(self.timeouts.results),
        );
        self.process(now);
        Ok(())
    }

    /// Our results, after the client's: queue them and `DISPLAY_RESULTS`.
    pub fn send_results(&mut self, now: Duration, results: &TestResults) -> Result<(), WireError> {
        if self.m.phase != ServerPhase::AwaitLocalResults {
            return Err(self.wrong("server results"));
        }
        let frame = results.encode_frame()?;
        self.m.outbox.extend_from_slice(&frame);
        self.m.outbox.push(State::DisplayResults.to_byte());
        self.enter(now, ServerPhase::AwaitDone, Some(self.timeouts.results));
        self.process(now);
        Ok(())
    }

    fn process(&mut self, now: Duration) {
        loop {
            if self.is_closed() {
                return;
            }
            match self.m.phase {
                ServerPhase::AwaitParams => match TestParams::decode_frame(self.inbox.data()) {
                    Ok((p, n)) => {
                        self.inbox.consume(n);
                        self.peer_is_wirespeed = p.wirespeed.is_some();
                        self.live = p.wirespeed.as_ref().is_some_and(|w| w.live);
                        self.m.events.push_back(ServerEvent::Params(Box::new(p)));
                        self.enter(now, ServerPhase::AwaitDecision, None);
                    }
                    Err(e) if e.is_truncated() => {
                        // Refuse an oversized announcement at once, before its bytes arrive.
                        if let Err(error) =
                            JsonFrame::announced_len(self.inbox.data(), MAX_PARAMS_LEN)
                        {
                            if !error.is_truncated() {
                                self.refuse_params(&error);
                                self.fail(Failure::Protocol {
                                    phase: "waiting for the test parameters",
                                    error,
                                });
                            }
                        }
                        return;
                    }
                    Err(error) => {
                        self.refuse_params(&error);
                        self.fail(Failure::Protocol {
                            phase: "waiting for the test parameters",
                            error,
                        });
                        return;
                    }
                },
                ServerPhase::AwaitClientResults => {
                    match TestResults::decode_client_frame(self.inbox.data()) {
                        Ok((r, n)) => {
                            self.inbox.consume(n);
                            self.m
                                .events
                                .push_back(ServerEvent::PeerResults(Box::new(r)));
                            self.enter(now, ServerPhase::AwaitLocalResults, None);
                        }
                        Err(e) if e.is_truncated() => {
                            // Refuse an oversized announcement at once, before its bytes arrive.
                            if let Err(error) =
                                JsonFrame::announced_len(self.inbox.data(), MAX_CLIENT_RESULTS_LEN)
                            {
                                if !error.is_truncated() {
                                    let phase = self.m.phase.describe();
                                    self.fail(Failure::Protocol { phase, error });
                                }
                            }
                            return;
                        }
                        Err(error) => {
                            let phase = self.m.phase.describe();
                            self.fail(Failure::Protocol { phase, error });
                            return;
                        }
                    }
                }
                ServerPhase::AwaitDecision
                | ServerPhase::Stopping
                | ServerPhase::AwaitLocalResults => {
                    // Nothing is read until the caller acts, except an abort.
                    if self.inbox.data().first() == Some(&State::ClientTerminate.to_byte()) {
                        self.inbox.consume(1);
                        self.m
                            .stop(ServerPhase::Failed, ServerEvent::ClientTerminated);
                    }
                    return;
                }
                ServerPhase::AwaitStreams | ServerPhase::Running | ServerPhase::AwaitDone => {
                    let Some(&b) = self.inbox.data().first() else {
                        return;
                    };
                    if self.live && self.m.phase == ServerPhase::Running && b == LIVE_MARKER {
                        match self.live_in.step(&mut self.inbox, now) {
                            LiveStep::Wait => return,
                            LiveStep::Took(Some(li)) => {
                                self.m.events.push_back(ServerEvent::PeerLive(li))
                            }
                            LiveStep::Took(None) => {}
                            LiveStep::Bad(error) => {
                                let phase = self.m.phase.describe();
                                self.fail(Failure::Protocol { phase, error });
                                return;
                            }
                        }
                        continue;
                    }
                    self.inbox.consume(1);
                    let state = match State::from_byte(b) {
                        Ok(s) => s,
                        Err(error) => {
                            let phase = self.m.phase.describe();
                            self.fail(Failure::Protocol { phase, error });
                            return;
                        }
                    };
                    match (self.m.phase, state) {
                        // iperf3's server ignores TEST_START from a client.
                        (_, State::TestStart) => {}
                        (_, State::ClientTerminate) => {
                            self.m
                                .stop(ServerPhase::Failed, ServerEvent::ClientTerminated);
                        }
                        (ServerPhase::Running, State::TestEnd) => {
                            self.m.events.push_back(ServerEvent::TestEnd);
                            self.enter(now, ServerPhase::Stopping, None);
                        }
                        (_, State::IperfDone) => {
                            self.m.stop(ServerPhase::Done, ServerEvent::Finished);
                        }
                        (phase, s) => {
                            let phase = phase.describe();
                            self.fail(Failure::Protocol {
                                phase,
                                error: WireError::UnexpectedState {
                                    state: s.to_string(),
                                    phase,
                                },
                            });
                        }
                    }
                }
                ServerPhase::Done | ServerPhase::Failed => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_timeout_sets_the_setup_and_twice_it_the_streams() {
        let t = Timeouts::from_handshake(Duration::from_secs(3));
        assert_eq!(t.setup, Duration::from_secs(3));
        assert_eq!(t.streams, Duration::from_secs(6));
        assert_eq!(t.results, Timeouts::default().results);
    }

    #[test]
    fn inbox_keeps_order_and_moves_each_byte_a_bounded_number_of_times() {
        let mut inbox = Inbox::new(1 << 20);
        let mut expect = std::collections::VecDeque::new();
        let mut next = 0u8;
        let mut pushed = 0usize;
        // A flood: chunks of up to 4 KiB, consumed one byte at a time, with some bytes
        // always left over so compaction has something to move.
        for round in 0..2_000usize {
            let chunk: Vec<u8> = (0..(round % 4096) + 1)
                .map(|_| {
                    next = next.wrapping_add(1);
                    next
                })
                .collect();
            pushed += chunk.len();
            inbox.push(&chunk).unwrap();
            expect.extend(chunk);
            let eat = expect.len().saturating_sub(7);
            for _ in 0..eat {
                assert_eq!(inbox.data().first(), expect.front());
                inbox.consume(1);
                expect.pop_front();
            }
            assert_eq!(inbox.data(), expect.iter().copied().collect::<Vec<_>>());
        }
        // Quadratic consumption would move ~pushed * buffer bytes; ours moves at most the
        // bytes pushed.
        assert!(
            inbox.moved <= pushed,
            "moved {} bytes for {pushed} pushed",
            inbox.moved
        );
    }
    use crate::ext::{ParamsExt, ResultsExt};
    use crate::params::Direction;
    use crate::results::StreamResult;

    const T0: Duration = Duration::ZERO;

    fn cookie() -> Cookie {
        Cookie::from_entropy(&[7u8; 36])
    }

    fn results(ids: &[u32], bytes: u64) -> TestResults {
        TestResults {
            cpu_util_total: 10.0,
            cpu_util_user: 1.0,
            cpu_util_system: 9.0,
            sender_has_retransmits: 1,
            streams: ids
                .iter()
                .map(|&id| StreamResult {
                    id,
                    bytes,
                    retransmits: 0,
                    omitted_errors: Some(0),
                    omitted_packets: Some(0),
                    start_time: Some(0.0),
                    end_time: Some(1.0),
                    ..StreamResult::default()
                })
                .collect(),
            ..TestResults::default()
        }
    }

    /// Drive a client and a server machine against each other, byte by byte in one direction
    /// to exercise partial input.
    #[test]
    fn client_and_server_run_a_whole_test() {
        let mut params = TestParams::new_tcp(1, 2);
        params.direction = Direction::Both;
        params.wirespeed = Some(ParamsExt {
            version: "test".into(),
            ..ParamsExt::default()
        });
        let mut c = ClientSession::new(T0, cookie(), params.clone(), Timeouts::default());
        let hello = c.take_transmit();
        assert_eq!(hello.len(), 37);
        let ck = Cookie::parse(&hello).unwrap();
        let mut s = ServerSession::new(T0, ck, Timeouts::default());
        let pump_to_client = |s: &mut ServerSession, c: &mut ClientSession| {
            for b in s.take_transmit() {
                c.handle_input(T0, &[b]);
            }
        };
        let pump_to_server = |c: &mut ClientSession, s: &mut ServerSession| {
            let bytes = c.take_transmit();
            s.handle_input(T0, &bytes);
        };
        pump_to_client(&mut s, &mut c);
        pump_to_server(&mut c, &mut s);
        let Some(ServerEvent::Params(p)) = s.poll_event() else {
            panic!("no params")
        };
        assert_eq!(*p, params);
        assert!(s.peer_is_wirespeed());
        s.accept(T0).unwrap();
        pump_to_client(&mut s, &mut c);
        assert_eq!(c.poll_event(), Some(ClientEvent::CreateStreams));
        s.streams_ready(T0).unwrap();
        pump_to_client(&mut s, &mut c);
        assert_eq!(c.poll_event(), Some(ClientEvent::TestStart));
        assert_eq!(c.poll_event(), Some(ClientEvent::TestRunning));
        assert_eq!(c.phase(), ClientPhase::Running);
        assert_eq!(c.deadline(), None, "no timeout while the test runs");
        c.end_test(T0).unwrap();
        pump_to_server(&mut c, &mut s);
        assert_eq!(s.poll_event(), Some(ServerEvent::TestEnd));
        s.request_results(T0).unwrap();
        pump_to_client(&mut s, &mut c);
        assert_eq!(c.poll_event(), Some(ClientEvent::ResultsRequested));
        let cr = results(&[1, 3, 4, 5], 1000);
        c.send_results(T0, &cr).unwrap();
        pump_to_server(&mut c, &mut s);
        let Some(ServerEvent::PeerResults(r)) = s.poll_event() else {
            panic!()
        };
        assert_eq!(*r, cr);
        let mut sr = results(&[1, 3, 4, 5], 999);
        sr.wirespeed = Some(ResultsExt {
            version: "test".into(),
            ..ResultsExt::default()
        });
        s.send_results(T0, &sr).unwrap();
        pump_to_client(&mut s, &mut c);
        let Some(ClientEvent::PeerResults(r)) = c.poll_event() else {
            panic!()
        };
        assert_eq!(*r, sr);
        assert_eq!(c.poll_event(), Some(ClientEvent::Finished));
        assert_eq!(c.phase(), ClientPhase::Done);
        pump_to_server(&mut c, &mut s);
        assert_eq!(s.poll_event(), Some(ServerEvent::Finished));
        assert_eq!(s.phase(), ServerPhase::Done);
    }

    /// A server's words reach a terminal through this Display: escapes in them are text.
    #[test]
    fn a_servers_detail_cannot_drive_the_terminal() {
        let r = Refusal::ServerError {
            i_errno: 101,
            errno: 0,
            detail: Some("no\u{1b}]0;pwned\u{7}\u{1b}[2J\nforged line".into()),
        };
        let m = r.to_string();
        assert!(!m.chars().any(char::is_control), "{m:?}");
        assert_eq!(
            m,
            "no\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\nforged line (iperf3 error 101)"
        );
    }

    #[test]
    fn server_refusals_reach_the_client() {
        for (decline, wirespeed, want) in [
            (Decline::AccessDenied, false, Refusal::AccessDenied),
            (
                Decline::Error {
                    i_errno: 6,
                    errno: 0,
                    detail: "max 8 streams".into(),
                },
                false,
                Refusal::ServerError {
                    i_errno: 6,
                    errno: 0,
                    detail: None,
                },
            ),
            (
                Decline::Error {
                    i_errno: 6,
                    errno: 0,
                    detail: "max 8 streams".into(),
                },
                true,
                Refusal::ServerError {
                    i_errno: 6,
                    errno: 0,
                    detail: Some("max 8 streams".into()),
                },
            ),
        ] {
            let mut params = TestParams::new_tcp(1, 100);
            if wirespeed {
                params.wirespeed = Some(ParamsExt::default());
            }
            let mut c = ClientSession::new(T0, cookie(), params, Timeouts::default());
            let mut s = ServerSession::new(
                T0,
                Cookie::parse(&c.take_transmit()).unwrap(),
                Timeouts::default(),
            );
            c.handle_input(T0, &s.take_transmit());
            s.handle_input(T0, &c.take_transmit());
            assert!(matches!(s.poll_event(), Some(ServerEvent::Params(_))));
            s.refuse(&decline);
            assert!(s.is_closed());
            let bytes = s.take_transmit();
            // Split at every point: the client must assemble the same refusal.
            for cut in 0..=bytes.len() {
                let mut c2 = ClientSession::new(
                    T0,
                    cookie(),
                    TestParams::new_tcp(1, 1),
                    Timeouts::default(),
                );
                c2.take_transmit();
                c2.handle_input(T0, &[State::ParamExchange.to_byte()]);
                c2.handle_input(T0, &bytes[..cut]);
                c2.handle_input(T0, &bytes[cut..]);
                assert_eq!(
                    c2.poll_event(),
                    Some(ClientEvent::Refused(want.clone())),
                    "cut {cut}"
                );
            }
            let _ = c;
        }
    }

    #[test]
    fn server_times_out_silent_peer_and_refuses_oversized_params() {
        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.take_transmit();
        s.handle_timeout(Duration::from_secs(9));
        assert!(s.poll_event().is_none());
        s.handle_timeout(Duration::from_secs(10));
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Timeout { .. }))
        ));

        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.handle_input(T0, &[0x7f, 0xff, 0xff, 0xff]);
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Protocol {
                error: WireError::Oversized { .. },
                ..
            }))
        ));
    }

    #[test]
    fn server_answers_unreadable_params_with_iperf3s_error() {
        use crate::server_error::errno;
        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.take_transmit();
        let body = br#"{"tcp":true,"time":-1,"parallel":1}"#;
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        s.handle_input(T0, &frame);
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Protocol {
                error: WireError::BadField { .. },
                ..
            }))
        ));
        let mut want = vec![State::ServerError.to_byte()];
        want.extend_from_slice(&(errno::IEDURATION).to_be_bytes());
        want.extend_from_slice(&0i32.to_be_bytes());
        assert_eq!(s.take_transmit(), want);

        // An oversized announcement: iperf3's "unable to receive parameters".
        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.take_transmit();
        s.handle_input(T0, &[0x7f, 0xff, 0xff, 0xff]);
        let out = s.take_transmit();
        assert_eq!(out[0], State::ServerError.to_byte());
        assert_eq!(&out[1..5], &errno::IERECVPARAMS.to_be_bytes());
    }

    /// A server at the results exchange: an announcement above the client-results cap is
    /// refused from its four length bytes, a flood of values under it by the pre-scan, and a
    /// flood of state bytes beforehand is consumed without trouble.
    #[test]
    fn server_bounds_client_results() {
        let at_results = || {
            let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
            s.take_transmit();
            s.handle_input(T0, &TestParams::new_tcp(1, 1).encode_frame().unwrap());
            assert!(matches!(s.poll_event(), Some(ServerEvent::Params(_))));
            s.accept(T0).unwrap();
            s.streams_ready(T0).unwrap();
            // Ignored TEST_START bytes, many of them, then TEST_END.
            s.handle_input(T0, &vec![State::TestStart.to_byte(); 60_000]);
            s.handle_input(T0, &[State::TestEnd.to_byte()]);
            assert_eq!(s.poll_event(), Some(ServerEvent::TestEnd));
            s.request_results(T0).unwrap();
            s
        };
        let mut s = at_results();
        s.handle_input(T0, &(32u32 << 20).to_be_bytes());
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Protocol {
                error: WireError::Oversized {
                    max: MAX_CLIENT_RESULTS_LEN,
                    ..
                },
                ..
            }))
        ));

        let mut s = at_results();
        let mut body = br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[],"x":["#.to_vec();
        while body.len() < (MAX_CLIENT_RESULTS_LEN as usize) - 8 {
            body.extend_from_slice(b"0,");
        }
        body.extend_from_slice(b"0]}");
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        s.handle_input(T0, &frame);
        match s.poll_event() {
            Some(ServerEvent::Failed(Failure::Protocol {
                error: WireError::BadJson(why),
                ..
            })) => assert!(why.contains("values"), "{why}"),
            other => panic!("{other:?}"),
        }

        let mut s = at_results();
        s.handle_input(T0, &results(&[1], 5).encode_frame().unwrap());
        assert!(matches!(s.poll_event(), Some(ServerEvent::PeerResults(_))));
    }

    /// A timeout reports what it waited for and for as long as it actually waited (the
    /// client waits for TEST_START as long as the server waits for the streams).
    #[test]
    fn timeouts_report_the_wait_they_armed() {
        let t = Timeouts {
            setup: Duration::from_secs(10),
            streams: Duration::from_secs(20),
            results: Duration::from_secs(30),
        };
        let mut c = ClientSession::new(T0, cookie(), TestParams::new_tcp(1, 1), t);
        c.take_transmit();
        c.handle_input(
            T0,
            &[
                State::ParamExchange.to_byte(),
                State::CreateStreams.to_byte(),
            ],
        );
        assert_eq!(c.poll_event(), Some(ClientEvent::CreateStreams));
        assert_eq!(c.phase(), ClientPhase::AwaitTestStart);
        c.handle_timeout(Duration::from_secs(19));
        assert_eq!(c.poll_event(), None);
        c.handle_timeout(Duration::from_secs(20));
        match c.poll_event() {
            Some(ClientEvent::Failed(f @ Failure::Timeout { .. })) => {
                assert_eq!(
                    f.to_string(),
                    "timed out after 20.0 s while waiting for TEST_START"
                )
            }
            other => panic!("{other:?}"),
        }
        let mut s = ServerSession::new(T0, cookie(), t);
        s.handle_timeout(Duration::from_secs(10));
        match s.poll_event() {
            Some(ServerEvent::Failed(f @ Failure::Timeout { .. })) => {
                assert!(
                    f.to_string().starts_with("timed out after 10.0 s while"),
                    "{f}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    /// iperf3's authentication refusal: SERVER_ERROR, `IEAUTHTEST` alone, then the close.
    #[test]
    fn a_short_server_error_before_the_close_is_a_refusal() {
        let mut c =
            ClientSession::new(T0, cookie(), TestParams::new_tcp(1, 1), Timeouts::default());
        c.take_transmit();
        c.handle_input(T0, &[State::ParamExchange.to_byte()]);
        c.take_transmit();
        let mut refusal = vec![State::ServerError.to_byte()];
        refusal.extend_from_slice(&142i32.to_be_bytes());
        c.handle_input(T0, &refusal);
        assert_eq!(c.poll_event(), None, "waits for errno");
        c.handle_eof(T0);
        let Some(ClientEvent::Refused(r)) = c.poll_event() else {
            panic!("not a refusal")
        };
        assert_eq!(
            r.to_string(),
            "test authorization failed (iperf3 error 142)"
        );
    }

    #[test]
    fn unknown_or_misplaced_state_bytes_fail_cleanly() {
        let mut c =
            ClientSession::new(T0, cookie(), TestParams::new_tcp(1, 1), Timeouts::default());
        c.handle_input(T0, &[State::TestRunning.to_byte()]);
        assert!(matches!(
            c.poll_event(),
            Some(ClientEvent::Failed(Failure::Protocol { .. }))
        ));
        let mut c =
            ClientSession::new(T0, cookie(), TestParams::new_tcp(1, 1), Timeouts::default());
        c.handle_input(T0, &[200]);
        assert!(matches!(
            c.poll_event(),
            Some(ClientEvent::Failed(Failure::Protocol {
                error: WireError::UnknownState(200),
                ..
            }))
        ));
        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.handle_input(T0, b"\x00\x00\x00\x02{}");
        s.poll_event();
        s.accept(T0).unwrap();
        s.streams_ready(T0).unwrap();
        s.handle_input(T0, &[State::ExchangeResults.to_byte()]);
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Protocol { .. }))
        ));
        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.handle_eof(T0);
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Closed { .. }))
        ));
    }

    #[test]
    fn client_terminate_and_server_terminate() {
        let mut s = ServerSession::new(T0, cookie(), Timeouts::default());
        s.handle_input(T0, b"\x00\x00\x00\x02{}");
        s.poll_event();
        s.accept(T0).unwrap();
        s.streams_ready(T0).unwrap();
        s.handle_input(T0, &[State::ClientTerminate.to_byte()]);
        assert_eq!(s.poll_event(), Some(ServerEvent::ClientTerminated));

        let mut c =
            ClientSession::new(T0, cookie(), TestParams::new_tcp(1, 1), Timeouts::default());
        c.handle_input(T0, &[9, 10, 1, 2]);
        c.take_transmit();
        while c.poll_event().is_some() {}
        c.handle_input(T0, &[State::ServerTerminate.to_byte()]);
        assert_eq!(c.poll_event(), Some(ClientEvent::ServerTerminated));
    }

    fn live_frame(seq: u64) -> LiveInterval {
        LiveInterval {
            seq,
            start: seq as f64 - 1.0,
            end: seq as f64,
            head: None,
            observation: Some(Default::default()),
        }
    }

    /// A client and a server at TEST_RUNNING; `live`: the client asked for live frames.
    fn running_pair(live: bool) -> (ClientSession, ServerSession) {
        let mut params = TestParams::new_tcp(1, 10);
        params.wirespeed = Some(ParamsExt {
            version: "test".into(),
            live,
            ..ParamsExt::default()
        });
        let mut c = ClientSession::new(T0, cookie(), params, Timeouts::default());
        let mut s = ServerSession::new(
            T0,
            Cookie::parse(&c.take_transmit()).unwrap(),
            Timeouts::default(),
        );
        c.handle_input(T0, &s.take_transmit());
        s.handle_input(T0, &c.take_transmit());
        assert!(matches!(s.poll_event(), Some(ServerEvent::Params(_))));
        s.accept(T0).unwrap();
        s.streams_ready(T0).unwrap();
        c.handle_input(T0, &s.take_transmit());
        while c.poll_event().is_some() {}
        assert_eq!(c.phase(), ClientPhase::Running);
        (c, s)
    }

    /// Negotiated: the server sends first, the client answers once it has one; frames may
    /// arrive split anywhere and interleaved with the state bytes; the client still takes one
    /// the server sent just before it read TEST_END.
    #[test]
    fn live_frames_travel_both_ways_once_negotiated() {
        let (mut c, mut s) = running_pair(true);
        assert!(s.live());
        assert_eq!(
            c.send_live(&live_frame(1)),
            Ok(false),
            "not before the server's"
        );
        assert!(c.take_transmit().is_empty());
        assert_eq!(s.send_live(&live_frame(1)), Ok(true));
        let bytes = s.take_transmit();
        for b in &bytes {
            c.handle_input(T0, &[*b]);
        }
        assert_eq!(
            c.poll_event(),
            Some(ClientEvent::PeerLive(Box::new(live_frame(1))))
        );
        assert!(c.peer_sends_live());
        assert_eq!(c.send_live(&live_frame(1)), Ok(true));
        let mut out = c.take_transmit();
        out.push(State::TestStart.to_byte());
        s.handle_input(T0, &out);
        assert_eq!(
            s.poll_event(),
            Some(ServerEvent::PeerLive(Box::new(live_frame(1))))
        );
        // The client ends the test while the server's second frame is on its way.
        c.end_test(T0).unwrap();
        assert_eq!(s.send_live(&live_frame(2)), Ok(true));
        c.handle_input(T0, &s.take_transmit());
        s.handle_input(T0, &c.take_transmit());
        assert_eq!(s.poll_event(), Some(ServerEvent::TestEnd));
        assert_eq!(s.send_live(&live_frame(3)), Ok(false), "only while running");
        s.request_results(T0).unwrap();
        c.handle_input(T0, &s.take_transmit());
        assert_eq!(
            c.poll_event(),
            Some(ClientEvent::PeerLive(Box::new(live_frame(2))))
        );
        assert_eq!(c.poll_event(), Some(ClientEvent::ResultsRequested));
        assert_eq!(c.live_frames(), (2, 0));
        assert_eq!(s.live_frames(), (1, 0));
        assert_eq!(
            s.live_bytes_within_budget(),
            live_frame(1).encode().unwrap().len() as u64,
            "the frame's bytes, marker and length included"
        );
    }

    /// Not negotiated (an iperf3 client, or one that did not ask): the server sends nothing,
    /// and a frame from the client is an unknown state byte, as before.
    #[test]
    fn without_negotiation_nobody_sends_live_frames() {
        let (mut c, mut s) = running_pair(false);
        assert_eq!(s.send_live(&live_frame(1)), Ok(false));
        assert!(s.take_transmit().is_empty());
        assert_eq!(c.send_live(&live_frame(1)), Ok(false));
        s.handle_input(T0, &live_frame(1).encode().unwrap());
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Protocol {
                error: WireError::UnknownState(LIVE_MARKER),
                ..
            }))
        ));
        let (mut c, _) = running_pair(false);
        c.handle_input(T0, &live_frame(1).encode().unwrap());
        assert!(matches!(
            c.poll_event(),
            Some(ClientEvent::Failed(Failure::Protocol {
                error: WireError::UnknownState(LIVE_MARKER),
                ..
            }))
        ));
    }

    /// A flood is read and skipped unparsed past the budget; the test goes on. An oversized
    /// announcement fails at its header, a malformed frame fails the connection cleanly.
    #[test]
    fn hostile_live_frames_are_bounded() {
        let (mut c, mut s) = running_pair(true);
        s.send_live(&live_frame(1)).unwrap();
        let one = s.take_transmit();
        let flood: Vec<u8> = one.iter().copied().cycle().take(one.len() * 5000).collect();
        c.handle_input(T0, &flood);
        let mut parsed = 0;
        while let Some(ev) = c.poll_event() {
            assert!(matches!(ev, ClientEvent::PeerLive(_)), "{ev:?}");
            parsed += 1;
        }
        assert_eq!(parsed, LiveBudget::BURST as usize);
        assert_eq!(c.live_frames(), (16, 4984));
        assert_eq!(c.phase(), ClientPhase::Running);
        assert_eq!(c.buffered(), 0, "nothing left buffered");
        // A second later the budget has refilled.
        c.handle_input(Duration::from_secs(1), &one);
        assert!(matches!(c.poll_event(), Some(ClientEvent::PeerLive(_))));

        let (mut c, _) = running_pair(true);
        let mut big = vec![LIVE_MARKER];
        big.extend_from_slice(&u32::MAX.to_be_bytes());
        c.handle_input(T0, &big);
        assert!(matches!(
            c.poll_event(),
            Some(ClientEvent::Failed(Failure::Protocol {
                error: WireError::Oversized { .. },
                ..
            }))
        ));

        let (mut c, mut s) = running_pair(true);
        s.send_live(&live_frame(1)).unwrap();
        c.handle_input(T0, &s.take_transmit());
        c.poll_event();
        c.send_live(&live_frame(1)).unwrap();
        s.handle_input(T0, &c.take_transmit());
        s.poll_event();
        let mut bad = vec![LIVE_MARKER];
        bad.extend_from_slice(&3u32.to_be_bytes());
        bad.extend_from_slice(b"{x}");
        s.handle_input(T0, &bad);
        assert!(matches!(
            s.poll_event(),
            Some(ServerEvent::Failed(Failure::Protocol {
                error: WireError::BadJson(_),
                ..
            }))
        ));
    }
}
