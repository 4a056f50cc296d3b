//! The running test on the server, on its own thread: parameters, admission (see
//! [`super::admission`]), the client's tune request, the data connections, the measurement
//! (the engine's one core, [`crate::measurement`]) and the results exchange. Whatever ends a
//! test is a [`TestError`]; it ends that test only.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use thiserror::Error;
use wirespeed_datapath::{self as dp, RecvPath, SendPath};
use wirespeed_protocol::{
    Decline, Failure, ServerSession, TestParams, TestResults, Transport, WireSendPath,
};
use wirespeed_report::TestResult;
use wirespeed_run::{Action, Cause, Ending, Limits, RateLimit, ServerPlan, TestRun, WatchStop};

use super::admission::{AdmissionError, Ticket};
use super::{bind_udp, Ctx, Incoming, ServerConfig, TestInfo};
use crate::data::{DataSocket, DataStream, Drain};
use crate::drive::{Endpoint, Failed, Link, Step};
use crate::measurement::{self, LocalPaths, Whence};
use crate::net::Ctrl;
use crate::output::Reporter;
use crate::placement::WorkerPlacement;
use crate::shell::{Begin, Peer, Ready, Shell};
use crate::tune::HeldTune;

/// What ended a test on the server (its words go to the server's output for that test).
#[derive(Debug, Error)]
pub enum TestError {
    /// The test was refused; the client was told why.
    #[error("refused: {0}")]
    Refused(AdmissionError),
    /// The control connection failed.
    #[error("{what} the control connection: {source}")]
    Control {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The client's control connection failed (closed, timed out, broke the protocol).
    #[error("client {0}")]
    Client(Failure),
    #[error("the client terminated the test")]
    ClientTerminated,
    /// The client sent something not expected now.
    #[error("unexpected event {0}")]
    Unexpected(String),
    /// The session cannot move on.
    #[error("{0}")]
    Session(String),
    /// The data connections could not be set up.
    #[error("{0}")]
    Streams(String),
    /// The data phase could not start.
    #[error("{0}")]
    Start(String),
    /// The test ran past the server's limit.
    #[error("the test ran past its limit of {secs} s and was terminated")]
    TooLong { secs: u64 },
    /// A message without a valid pre-shared key tag (`--psk`).
    #[error("pre-shared key: {0}")]
    Psk(String),
    /// Nothing arrived for too long (`--rcv-timeout`, `--idle-timeout`).
    #[error("no {what} for {secs:.1} s ({option}); the test was ended")]
    Idle {
        what: &'static str,
        secs: f64,
        option: &'static str,
    },
    /// The test's data rate was above `--server-bitrate-limit`.
    #[error("the test's rate of {rate} bit/s over {window:.0} s is above the server's limit of {limit} bit/s (--server-bitrate-limit)")]
    TotalRate { rate: u64, limit: u64, window: f64 },
}

impl TestError {
    /// iperf3's `i_errno` for the errors the server tells the client about mid-test.
    fn i_errno(&self) -> Option<i32> {
        use wirespeed_protocol::server_error::errno;
        match self {
            TestError::Idle { .. } => Some(errno::IENOMSG),
            TestError::TotalRate { .. } => Some(errno::IETOTALRATE),
            _ => None,
        }
    }
}

/// The server's limits while the data flows (the core's watch applies them): its receive and
/// idle timeouts, its rate limit, the longest a test may run, and what counts as movement.
fn server_limits(cfg: &ServerConfig, p: &TestParams) -> Limits {
    let limit = cfg.limits.max_duration;
    let timed = u64::from(p.time) + u64::from(p.omit);
    let stop_after = if p.time > 0 {
        Duration::from_secs(timed + 30).min(limit + Duration::from_secs(5))
    } else {
        limit
    };
    Limits {
        rcv_timeout: Some(cfg.rcv_timeout),
        idle_timeout: cfg.idle_timeout,
        bitrate: cfg.bitrate_limit.map(|l| RateLimit {
            bits_per_second: l.bits_per_second,
            window: l.window,
        }),
        stop_after: Some(stop_after),
        min_progress: min_progress(p),
    }
}

impl TestError {
    /// A limit of the core's watch, in iperf3's terms.
    fn from_stop(stop: WatchStop) -> TestError {
        match stop {
            WatchStop::ReceiveIdle { quiet, .. } => TestError::Idle {
                what: "data received",
                secs: quiet.as_secs_f64(),
                option: "--rcv-timeout",
            },
            WatchStop::Idle { quiet, .. } => TestError::Idle {
                what: "data or control message",
                secs: quiet.as_secs_f64(),
                option: "--idle-timeout",
            },
            WatchStop::TotalRate {
                rate,
                limit,
                window,
            } => TestError::TotalRate {
                rate,
                limit,
                window: window.as_secs_f64(),
            },
            WatchStop::TooLong { limit } => TestError::TooLong {
                secs: limit.as_secs(),
            },
        }
    }
}

/// Most bytes a test must move between two readings of its counters, within the idle and
/// receive timeouts, to count as active.
const MAX_MIN_PROGRESS: u64 = 64 << 10;

/// What a real sender of these parameters moves at once: one block (`-l`; a UDP datagram of
/// iperf3's default size, or a TCP block of 128 KiB), at most [`MAX_MIN_PROGRESS`]. Slower
/// than that per timeout is far below anything a throughput test sends.
fn min_progress(p: &TestParams) -> u64 {
    let block = p.len.map(u64::from).unwrap_or(match p.transport {
        Transport::Udp => 1460,
        _ => 128 << 10,
    });
    block.min(MAX_MIN_PROGRESS)
}

/// One admitted test, on its own thread: `sess` has its parameters, `ticket` its slot.
pub(super) fn serve_test(
    stream: TcpStream,
    peer: SocketAddr,
    sess: ServerSession,
    params: TestParams,
    ticket: Ticket,
    number: u64,
    ctx: &Ctx,
) {
    let mut reporter = (ctx.factory)(&TestInfo { number, peer });
    let mut t = ServerTest::new(stream, peer, sess, &params, ticket, number, ctx);
    let outcome = t.run(params, reporter.as_mut());
    t.link.sh.close();
    // Whatever ended the test, its tune change goes back before anything else.
    t.release_tune();
    match outcome {
        Ok(()) => {
            ctx.stats.tests_completed.fetch_add(1, Ordering::Relaxed);
            if let Some(r) = t.result.take() {
                reporter.finish(&r);
            }
        }
        Err(e) => {
            let msg = e.to_string();
            if t.refused {
                let reason = match &e {
                    TestError::Refused(a) => a.reason(),
                    _ => super::RefusalReason::Other,
                };
                ctx.stats.count_refusal(reason);
            } else {
                ctx.stats.tests_failed.fetch_add(1, Ordering::Relaxed);
            }
            // A client silent after the data phase: this end's report with its end and the
            // verdict on the silence; otherwise what was measured so far.
            let r = match t.result.take().filter(|_| t.link.sh.silent) {
                Some(mut r) => {
                    r.error = Some(msg);
                    r
                }
                None => t.partial_result(msg),
            };
            reporter.finish(&r);
        }
    }
}

/// Where this server runs a test's workers, and on which paths, from the client's wishes and
/// the server's own options. WorkerPlacement, first that applies: the client's `--server-cpus`, the
/// client's `-A n,m` (the server's CPU), the server's `--cpus`, the server's `-A`, the CPUs a
/// wirespeed client pairs a TCP test's streams on over loopback (`wirespeed.paired_cpus`, where
/// this process may use them all: [`WorkerPlacement::paired`]; the data phase runs them
/// unpinned over any other path); else unpinned. Send path: the client's wish (`wirespeed.send_path`, or iperf3's `-Z` as
/// sendfile), else the server's default; receive path: zero-copy or skip-copy when the client
/// asks for it.
pub(super) fn local_paths(p: &TestParams, cfg: &ServerConfig) -> LocalPaths {
    let ext = p.wirespeed.as_ref();
    let placement =
        WorkerPlacement::pinned(ext.and_then(|e| e.server_cpus.clone()), p.server_affinity)
            .or_else(|| WorkerPlacement::pinned(cfg.cpus.clone(), cfg.affinity))
            .or_else(|| {
                let cpus = ext?.paired_cpus.as_deref()?;
                let allowed = dp::cpu::allowed_cpus().ok()?;
                (p.transport == Transport::Tcp)
                    .then(|| WorkerPlacement::paired(cpus, &allowed, p.parallel as usize))?
            })
            .unwrap_or_else(WorkerPlacement::float);
    // An unknown name never gets this far: admission refuses it by name.
    let send_path = ext
        .and_then(|e| e.send_path.as_ref())
        .and_then(WireSendPath::known)
        .or_else(|| p.zerocopy.map(|_| SendPath::Sendfile))
        .unwrap_or(cfg.send_path);
    let recv_path = match ext.and_then(|e| e.recv_path.as_deref()) {
        Some("zerocopy") => RecvPath::Zerocopy,
        Some("skip") => RecvPath::SkipCopy,
        _ if p.skip_rx_copy => RecvPath::SkipCopy,
        _ => RecvPath::Copy,
    };
    LocalPaths {
        placement,
        send_path,
        recv_path,
        udp_send_path: dp::udp::UdpSendPath::Gso,
        udp_recv_path: dp::udp::UdpRecvPath::Gro,
    }
}

struct ServerTest<'a> {
    ctx: &'a Ctx,
    peer: SocketAddr,
    /// The shell (the data phase, this end's and the client's results), the core (around the
    /// session the acceptor admitted) and the control connection.
    link: Link<'a, Ctrl>,
    params: Option<TestParams>,
    result: Option<TestResult>,
    refused: bool,
    /// 1, 2, 3... (names the holder of a tune change).
    number: u64,
    /// The client's tune request, applied (`--allow-tune`); reverted on release or drop.
    tune: Option<HeldTune<'a>>,
    /// The test's hold on the server's slots and per-address accounting.
    ticket: Ticket,
    /// Control bytes read since admission, and the live-frame bytes among them taken within
    /// the session's budget (left out of the address's control-byte accounting).
    ctl_read: u64,
    ctl_live_free: u64,
    /// Of those, what this test charged to the address (the ticket holds the bytes read before
    /// admission too).
    ctl_charged: u64,
    /// The client is iperf3 (it did not ask for wirespeed's drain): the receivers' count and
    /// interval end when its `TEST_END` arrives, as iperf3's server counts (docs/measure.md).
    iperf3_client: bool,
}

impl<'a> ServerTest<'a> {
    fn new(
        stream: TcpStream,
        peer: SocketAddr,
        sess: ServerSession,
        params: &TestParams,
        ticket: Ticket,
        number: u64,
        ctx: &'a Ctx,
    ) -> ServerTest<'a> {
        // The session's clock started when the connection was accepted; this test's epoch
        // starts now and the session is told so through its deadlines only from here on
        // (nothing is armed while the server decides).
        let peer_mss = crate::net::mss_of(&stream);
        let wirespeed_drain = params.wirespeed.as_ref().is_some_and(|e| e.drain);
        let drain = if wirespeed_drain {
            Drain::UntilEof {
                within: Duration::from_secs(5),
            }
        } else {
            Drain::UntilQuiet {
                quiet: Duration::from_millis(100),
                max: Duration::from_secs(2),
            }
        };
        let cookie = *sess.cookie();
        let core = TestRun::server(
            sess,
            ServerPlan {
                drain,
                limits: server_limits(&ctx.cfg, params),
                peer_mss,
            },
        );
        ServerTest {
            iperf3_client: !wirespeed_drain,
            ctx,
            peer,
            link: Link {
                sh: Shell::new(
                    wirespeed_model::End::Server,
                    cookie,
                    ctx.cfg.psk.as_ref(),
                    ctx.cfg.interval,
                ),
                core,
                ctrl: Ctrl::new(stream),
            },
            ticket,
            ctl_read: 0,
            ctl_live_free: 0,
            ctl_charged: 0,
            params: None,
            result: None,
            refused: false,
            number,
            tune: None,
        }
    }

    /// Revert the test's tune change, if it holds one (once).
    fn release_tune(&mut self) {
        if let Some(t) = &mut self.tune {
            t.release();
        }
    }

    /// The client's tune request (`irq_cpus`): refused unless the server allows tuning, the
    /// test's NIC has queue IRQs and no other test holds a change; else applied now.
    fn apply_tune(&mut self, p: &TestParams) -> Result<(), AdmissionError> {
        let Some(cpus) = p.wirespeed.as_ref().and_then(|e| e.irq_cpus.as_ref()) else {
            return Ok(());
        };
        let ctx = self.ctx;
        let Some(cfg) = ctx.cfg.tune.as_ref() else {
            return Err(AdmissionError::Tune(crate::tune::not_allowed(cpus).0));
        };
        let local = self.link.ctrl.stream().local_addr().ok().map(|a| a.ip());
        match crate::tune::apply(
            &ctx.tune_slot,
            cfg,
            self.number,
            cpus,
            self.peer.ip(),
            local,
        ) {
            Ok(held) => {
                self.tune = Some(held);
                Ok(())
            }
            Err(r) => Err(AdmissionError::Tune(r.0)),
        }
    }

    fn now(&self) -> Duration {
        self.link.sh.now()
    }

    fn flush(&mut self) -> Result<(), TestError> {
        let out = self.link.core.take_transmit();
        self.link
            .ctrl
            .send(&out)
            .map_err(|source| TestError::Control {
                what: "writing to",
                source,
            })
    }

    /// Refuse the test: the client is told why (see [`AdmissionError::decline`]).
    fn refuse(&mut self, e: AdmissionError, peer_is_wirespeed: bool) -> TestError {
        self.refused = true;
        self.link.core.refuse(&e.decline(peer_is_wirespeed));
        let _ = self.flush();
        TestError::Refused(e)
    }

    /// Read the control connection until `deadline` and feed the session.
    fn pump(&mut self, deadline: Instant) -> Result<(), TestError> {
        crate::drive::feed(self, deadline)
    }

    fn peer_is_wirespeed(&self) -> bool {
        self.link
            .core
            .server_session()
            .is_some_and(ServerSession::peer_is_wirespeed)
    }

    /// While the streams are set up, the core may end the test (the client failed or
    /// aborted): what it said, as this end's error.
    fn setup_action(&mut self, waiting_for: &str) -> Option<TestError> {
        Some(match self.link.core.poll_action()? {
            Action::End(Ending::Failed { failure, .. }) => TestError::Client(failure),
            Action::End(Ending::PeerTerminated) => TestError::ClientTerminated,
            other => TestError::Unexpected(format!("{other:?} while waiting for {waiting_for}")),
        })
    }

    fn run(&mut self, params: TestParams, reporter: &mut dyn Reporter) -> Result<(), TestError> {
        // Admitted by the acceptor (parameters, authentication, limits, slot).
        let is_ws = params.wirespeed.is_some();
        self.params = Some(params.clone());
        if let Err(e) = self.apply_tune(&params) {
            return Err(self.refuse(e, is_ws));
        }

        // Data connections.
        let total = params.total_streams() as usize;
        if total > 512 {
            let _ = dp::sys::raise_fd_limit((total as u64) * 2 + 256);
        }
        let sockets = if params.transport == Transport::Udp {
            let token = params
                .wirespeed
                .as_ref()
                .is_some_and(|e| e.udp_token)
                .then(|| wirespeed_protocol::udp::stream_token(&self.link.sh.cookie));
            self.udp_streams(total, params.window, token)?
        } else {
            self.tcp_streams(total)?
        };

        // Ids and directions in the client's order.
        let parallel = params.parallel.max(1) as usize;
        let opts = measurement::tcp_options(&params);
        let mut streams = Vec::with_capacity(total);
        for (i, socket) in sockets.into_iter().enumerate() {
            let send = params.direction.stream_sends(i, parallel, false);
            if let DataSocket::Tcp(t) = &socket {
                if dp::tcp::apply(t, &opts).is_err() {
                    // iperf3 warns and goes on when an option (e.g. the congestion algorithm)
                    // is not available here; so does wirespeed.
                    let mut o = opts.clone();
                    o.congestion = None;
                    let _ = dp::tcp::apply(t, &o);
                }
            }
            match &socket {
                DataSocket::Tcp(t) => {
                    crate::extras::server_data(t, params.tos, false);
                    if let Some(to) = self.ctx.cfg.extras.snd_timeout {
                        let _ = dp::sockopt::set_user_timeout(t, to);
                    }
                }
                DataSocket::Udp(u) => {
                    crate::extras::server_data(u, params.tos, params.dont_fragment)
                }
            }
            streams.push(DataStream {
                id: wirespeed_protocol::stream_id(i),
                socket,
                send,
            });
        }
        // The data phase is readied before TEST_START (the observer's first snapshot and the
        // rest take tens of ms on a loaded host: after it, they held the CPUs an iperf3 client
        // needed to start its -t clock, and the server's sending time ran that much longer
        // than the client's). TEST_START and TEST_RUNNING go out before the data workers
        // start: a client must never receive (or a stopped or slow server leave in flight)
        // test data ahead of the states that say the test runs — under load a server whose
        // senders started first had sent 64 KiB of a reverse stream while its TEST_START was
        // still unwritten.
        let ready = self.prepare(&params, &streams, reporter)?;
        let now = self.now();
        self.link
            .core
            .streams_ready(now)
            .map_err(|e| TestError::Session(format!("cannot start: {e}")))?;
        self.flush()?;
        // An iperf3 client's test time starts when TEST_START went out, as iperf3's server
        // starts its clock (and the client its -t) there, not when the workers are ready.
        let started = self.iperf3_client.then_some(now);
        self.link
            .sh
            .start_data(ready, streams, started)
            .map_err(TestError::Start)?;
        self.link.core.data_started(self.now());
        crate::drive::drive(self, reporter)
    }

    /// `CREATE_STREAMS` goes out: the client opens its data connections.
    fn create_streams(&mut self) -> Result<(), TestError> {
        let now = self.now();
        self.link
            .core
            .accept(now)
            .map_err(|e| TestError::Session(format!("cannot accept: {e}")))?;
        self.flush()
    }

    /// `CREATE_STREAMS`, then the TCP data connections the acceptor hands over, in the order
    /// the client opened them.
    fn tcp_streams(&mut self, total: usize) -> Result<Vec<DataSocket>, TestError> {
        let (tx, rx) = mpsc::channel::<Incoming>();
        self.ctx
            .registry
            .lock()
            .insert(self.link.sh.cookie, Some(tx));
        self.create_streams()?;
        let mut incoming: Vec<Incoming> = Vec::with_capacity(total);
        let result = loop {
            if incoming.len() >= total {
                break Ok(());
            }
            let mut got = false;
            while let Ok(i) = rx.try_recv() {
                incoming.push(i);
                got = true;
            }
            if incoming.len() >= total {
                break Ok(());
            }
            if let Some(e) = self.setup_action("streams") {
                break Err(e);
            }
            if !got {
                // Nothing new: watch the control connection briefly, then the streams again.
                match rx.recv_timeout(Duration::from_millis(5)) {
                    Ok(i) => incoming.push(i),
                    Err(_) => {
                        let dl = Instant::now() + Duration::from_millis(1);
                        if let Err(e) = self.pump(dl) {
                            break Err(e);
                        }
                    }
                }
            }
        };
        self.ctx.registry.lock().insert(self.link.sh.cookie, None);
        drop(rx);
        self.ticket.streams_settled();
        result?;
        incoming.sort_by_key(|i| i.seq);
        incoming.truncate(total);
        Ok(incoming
            .into_iter()
            .map(|i| DataSocket::Tcp(i.stream))
            .collect())
    }

    /// UDP streams as iperf3 makes them: the client's 4-byte word reaches the server's UDP
    /// socket and is handed to this test ([`super::udp_setup`]: words from the control
    /// connection's host, no server-wide lock; with `token`, only words that carry it); a
    /// socket of the test's own, bound to the server's port, is connected to the client's
    /// address and answers.
    fn udp_streams(
        &mut self,
        total: usize,
        window: Option<u32>,
        token: Option<wirespeed_protocol::udp::StreamToken>,
    ) -> Result<Vec<DataSocket>, TestError> {
        let ctx = self.ctx;
        let local = ctx.local_addr;
        let waiting = match ctx.udp.wait(self.peer.ip(), self.number, token) {
            Ok(w) => w,
            Err(reason) => {
                let is_ws = self.peer_is_wirespeed();
                return Err(self.refuse(
                    AdmissionError::UdpListen {
                        addr: local,
                        reason,
                    },
                    is_ws,
                ));
            }
        };
        self.create_streams()?;
        let deadline = Instant::now() + ctx.cfg.timeouts.streams;
        let mut out = Vec::with_capacity(total);
        let mut seen: Vec<SocketAddr> = Vec::with_capacity(total);
        while out.len() < total {
            if Instant::now() >= deadline {
                return Err(TestError::Streams(format!(
                    "only {} of {total} UDP streams arrived within {:.0} s",
                    out.len(),
                    ctx.cfg.timeouts.streams.as_secs_f64()
                )));
            }
            if let Some(e) = self.setup_action("UDP streams") {
                return Err(e);
            }
            let from = match waiting.rx.recv_timeout(Duration::from_millis(20)) {
                Ok(f) => f,
                Err(_) => {
                    self.pump(Instant::now() + Duration::from_millis(1))?;
                    continue;
                }
            };
            if seen.contains(&from) {
                continue; // the same word again
            }
            seen.push(from);
            let conn = bind_udp(local, window)
                .map_err(|e| TestError::Streams(format!("binding UDP on {local}: {e}")))?;
            conn.connect(from)
                .map_err(|e| TestError::Streams(format!("connecting UDP stream to {from}: {e}")))?;
            conn.send(&wirespeed_protocol::udp::CONNECT_REPLY)
                .map_err(|e| TestError::Streams(format!("answering UDP stream {from}: {e}")))?;
            out.push(DataSocket::Udp(conn));
        }
        Ok(out)
    }

    /// Ready the data phase (all but its workers: [`Shell::prepare`]).
    fn prepare(
        &mut self,
        p: &TestParams,
        streams: &[DataStream],
        reporter: &mut dyn Reporter,
    ) -> Result<Ready, TestError> {
        let cfg = &self.ctx.cfg;
        let how = Begin {
            whence: Whence::AcceptedFrom(self.peer),
            mss_default: crate::net::mss_of(self.link.ctrl.stream()),
            paths: local_paths(p, cfg),
            observe: cfg.observe.as_ref(),
            peer: self.peer.ip(),
            local: self.link.ctrl.stream().local_addr().ok().map(|a| a.ip()),
        };
        let observer = self.link.sh.observer(p, &how);
        self.link
            .sh
            .prepare(p, streams, how, observer, reporter)
            .map_err(TestError::Start)
    }

    /// Tell the client why the test ended here, in iperf3's terms.
    fn tell_client(&mut self, e: &TestError) {
        self.link.core.refuse(&Decline::Error {
            i_errno: e.i_errno().unwrap_or(0),
            errno: 0,
            detail: e.to_string(),
        });
        let _ = self.flush();
    }

    /// The server's results for the client: the shell's, with the server's tune change, and
    /// this end's output when the client asked for it (`--get-server-output`).
    fn server_results(
        &mut self,
        result: &mut TestResult,
        reporter: &mut dyn Reporter,
    ) -> TestResults {
        if self.link.sh.m.is_none() {
            return TestResults::default();
        }
        let irq_move = self.tune.as_ref().map(|t| t.report().clone());
        let mut r = self.link.sh.local_results(irq_move);
        if self.params.as_ref().is_some_and(|p| p.get_server_output) {
            match reporter.captured_text() {
                Some(t) => {
                    let mut text = t;
                    let mut buf = Vec::new();
                    if wirespeed_report::where_ran::write_server_output_tail(&mut buf, result)
                        .is_ok()
                    {
                        text.push_str(&String::from_utf8_lossy(&buf));
                    }
                    r.server_output_text = Some(text);
                }
                None => r.server_output_json = serde_json::to_value(&*result).ok(),
            }
        }
        r
    }

    /// This end's report with its `end`, from its counts and the client's results so far.
    fn build_result(&mut self) -> TestResult {
        self.link.sh.note_cpu();
        let params = self.params.as_ref();
        let head = TestResult {
            start: self.link.sh.start_or(Whence::AcceptedFrom(self.peer)),
            title: params.and_then(|p| p.title.clone()),
            extra_data: params.and_then(|p| p.extra_data.clone()),
            ..TestResult::default()
        };
        let peer = Peer {
            results: self.link.sh.peer_results.as_ref(),
            client_version: params.and_then(|p| p.client_version.as_deref()),
            is_wirespeed: self.peer_is_wirespeed(),
        };
        let mut r = self.link.sh.report(head, true, peer, None);
        if let Some(x) = r.wirespeed.as_mut() {
            x.irq_move = self.tune.as_ref().map(|t| t.report().clone());
        }
        r
    }

    /// What was measured so far, with the error that ended the test.
    fn partial_result(&mut self, msg: String) -> TestResult {
        let head = TestResult {
            start: self.link.sh.start_or(Whence::AcceptedFrom(self.peer)),
            error: Some(msg),
            ..TestResult::default()
        };
        self.link.sh.report(head, false, Peer::default(), None)
    }
}

/// The server's part of the loop around the core ([`crate::drive`]): every control byte it
/// reads is charged to the client's address, it counts an iperf3 client's data as iperf3's
/// server does, gives its tune change back when the data phase ends, adds the change and its
/// output to its results, and says what ended the test in iperf3's terms (telling the client).
impl<'a> Endpoint<'a> for ServerTest<'a> {
    type Error = TestError;
    type Ctrl = Ctrl;

    fn link(&mut self) -> &mut Link<'a, Ctrl> {
        &mut self.link
    }

    fn failed(&mut self, f: Failed) -> TestError {
        match f {
            Failed::Write(source) => TestError::Control {
                what: "writing to",
                source,
            },
            Failed::Read(source) => TestError::Control {
                what: "reading",
                source,
            },
            Failed::Session(step, e) => TestError::Session(match step {
                Step::EndTest => format!("cannot end the test: {e}"),
                Step::Finish => format!("cannot ask for results: {e}"),
                Step::SendResults => format!("cannot send results: {e}"),
            }),
            Failed::Seal(e) => TestError::Psk(e.to_string()),
            Failed::PeerKey(e) => {
                let e = TestError::Psk(format!("the client's results: {e}"));
                self.link.core.refuse(&Decline::Error {
                    i_errno: wirespeed_protocol::server_error::errno::IEAUTHTEST,
                    errno: 0,
                    detail: e.to_string(),
                });
                e
            }
        }
    }

    fn open_streams(&mut self, _: &mut dyn Reporter) -> Result<(), TestError> {
        Err(TestError::Unexpected("OpenStreams".into()))
    }

    fn start_data(&mut self, _: Duration, _: &mut dyn Reporter) -> Result<(), TestError> {
        Err(TestError::Unexpected("StartData".into()))
    }

    /// Every control byte counts against the address's budget while the connection lives
    /// (state bytes, the results, anything) — except the live frames the client negotiated
    /// and sent within the session's rate budget, which a long test sends for hours: past the
    /// budget the test ends, in iperf3's terms and with one log line.
    fn input(&mut self, now: Duration, bytes: &[u8]) -> Result<(), TestError> {
        let budget = |c: &TestRun| {
            c.server_session()
                .map_or(0, ServerSession::live_bytes_within_budget)
        };
        let live_before = budget(&self.link.core);
        self.link.core.handle_input(now, bytes);
        self.ctl_read += bytes.len() as u64;
        self.ctl_live_free += budget(&self.link.core) - live_before;
        let due = self.ctl_read.saturating_sub(self.ctl_live_free);
        let more = due.saturating_sub(self.ctl_charged);
        if let Err(r) = self.ticket.charge_control(more) {
            let e = AdmissionError::Guard(r);
            if let Some(h) = &self.ctx.cfg.log {
                (h.0)(&format!(
                    "refused {}: {e}; its running test #{} was ended",
                    crate::net::canonical_ip(self.peer.ip()),
                    self.number,
                ));
            }
            let is_ws = self.peer_is_wirespeed();
            return Err(self.refuse(e, is_ws));
        }
        self.ctl_charged += more;
        Ok(())
    }

    /// iperf3's server: what was read when `TEST_END` came, over the time until then; the
    /// drain after it only empties the sockets.
    fn counts_at_arrival(&self) -> bool {
        self.iperf3_client
    }

    fn data_over(&mut self) {
        self.release_tune();
    }

    fn local_results(&mut self, reporter: &mut dyn Reporter) -> TestResults {
        let mut result = self.build_result();
        let local = self.server_results(&mut result, reporter);
        self.result = Some(result);
        local
    }

    /// A client silent after the data phase began (its data stopped, or its results never
    /// came), or stalled results toward it (an MTU black hole): this end's report with its
    /// end and the verdict on it, as the client does in the mirror case.
    fn ending(&mut self, ending: Ending, _: &mut dyn Reporter) -> Result<(), TestError> {
        match ending {
            Ending::Complete => Ok(()),
            Ending::ResultsStalled(_) => {
                self.result = Some(self.build_result());
                Ok(())
            }
            Ending::Silent { cause, .. } => {
                let e = match cause {
                    Cause::Watch(stop) => {
                        let e = TestError::from_stop(stop);
                        self.tell_client(&e);
                        e
                    }
                    Cause::Control(f) => TestError::Client(f),
                };
                if self.link.sh.silent {
                    self.result = Some(self.build_result());
                }
                Err(e)
            }
            Ending::Limit(WatchStop::TooLong { limit }) => {
                self.link.core.terminate();
                Err(TestError::TooLong {
                    secs: limit.as_secs(),
                })
            }
            Ending::Limit(stop) => {
                let e = TestError::from_stop(stop);
                self.tell_client(&e);
                Err(e)
            }
            Ending::PeerTerminated => Err(TestError::ClientTerminated),
            Ending::Failed { failure, .. } => Err(TestError::Client(failure)),
            Ending::Unexpected(what) => Err(TestError::Unexpected(what.into())),
            other @ (Ending::Refused(_) | Ending::Interrupted) => {
                Err(TestError::Unexpected(format!("{other:?}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::CpuSet;
    use wirespeed_protocol::ParamsExt;

    fn ext(server_cpus: Option<CpuSet>) -> Option<ParamsExt> {
        Some(ParamsExt {
            server_cpus,
            ..ParamsExt::default()
        })
    }

    #[test]
    fn placement_takes_the_clients_wish_first_then_the_servers_options() {
        let server = ServerConfig {
            cpus: Some(CpuSet::from_cpus([8, 9])),
            affinity: Some(5),
            ..ServerConfig::default()
        };
        let both = TestParams {
            server_affinity: Some(3),
            wirespeed: ext(Some(CpuSet::from_cpus([1, 2]))),
            ..TestParams::default()
        };
        let place = |p: &TestParams, c: &ServerConfig| local_paths(p, c).placement;
        assert_eq!(
            place(&both, &server),
            WorkerPlacement::Cpus(CpuSet::from_cpus([1, 2])),
            "--server-cpus first"
        );
        let affinity = TestParams {
            wirespeed: ext(None),
            ..both.clone()
        };
        assert_eq!(
            place(&affinity, &server),
            WorkerPlacement::Affinity(3),
            "then -A n,m"
        );
        let plain = TestParams::default();
        assert_eq!(
            place(&plain, &server),
            WorkerPlacement::Cpus(CpuSet::from_cpus([8, 9])),
            "then the server's --cpus"
        );
        let only_a = ServerConfig {
            cpus: None,
            ..server.clone()
        };
        assert_eq!(
            place(&plain, &only_a),
            WorkerPlacement::Affinity(5),
            "then its -A"
        );
        assert!(matches!(
            place(&plain, &ServerConfig::default()),
            WorkerPlacement::Float { .. }
        ));
        // then the CPUs a wirespeed client pairs a TCP test's streams on, where this process
        // may run on every one of them
        let allowed: Vec<u32> = dp::cpu::allowed_cpus().expect("affinity").iter().collect();
        let paired = |cpus: Vec<u32>, transport| TestParams {
            transport,
            parallel: 4,
            wirespeed: Some(ParamsExt {
                paired_cpus: Some(cpus),
                ..ParamsExt::default()
            }),
            ..TestParams::default()
        };
        let tcp = paired(allowed.clone(), Transport::Tcp);
        assert_eq!(
            place(&tcp, &ServerConfig::default()),
            WorkerPlacement::Paired(allowed.clone()),
            "then the client's pairing"
        );
        assert_eq!(
            place(&tcp, &only_a),
            WorkerPlacement::Affinity(5),
            "the server's own options before it"
        );
        assert!(matches!(
            place(&paired(allowed, Transport::Udp), &ServerConfig::default()),
            WorkerPlacement::Float { .. }
        ));
        assert!(matches!(
            place(
                &paired(vec![1 << 20], Transport::Tcp),
                &ServerConfig::default()
            ),
            WorkerPlacement::Float { .. }
        ));
    }

    #[test]
    fn paths_follow_the_clients_wishes() {
        let cfg = ServerConfig::default();
        let p = local_paths(&TestParams::default(), &cfg);
        assert_eq!((p.send_path, p.recv_path), (cfg.send_path, RecvPath::Copy));
        let zerocopy = TestParams {
            zerocopy: Some(1),
            skip_rx_copy: true,
            ..TestParams::default()
        };
        let p = local_paths(&zerocopy, &cfg);
        assert_eq!(
            (p.send_path, p.recv_path),
            (SendPath::Sendfile, RecvPath::SkipCopy)
        );
        let named = TestParams {
            zerocopy: Some(1),
            wirespeed: Some(ParamsExt {
                send_path: Some(SendPath::Splice.into()),
                recv_path: Some("skip".into()),
                ..ParamsExt::default()
            }),
            ..TestParams::default()
        };
        let p = local_paths(&named, &cfg);
        assert_eq!(
            (p.send_path, p.recv_path),
            (SendPath::Splice, RecvPath::SkipCopy)
        );
        let zc = TestParams {
            wirespeed: Some(ParamsExt {
                recv_path: Some("zerocopy".into()),
                ..ParamsExt::default()
            }),
            ..TestParams::default()
        };
        assert_eq!(local_paths(&zc, &cfg).recv_path, RecvPath::Zerocopy);
    }

    #[test]
    fn the_servers_limits_and_their_words() {
        let cfg = ServerConfig {
            rcv_timeout: Duration::from_secs(5),
            idle_timeout: Some(Duration::from_secs(8)),
            bitrate_limit: Some(crate::server::BitrateLimit {
                bits_per_second: 8_000_000,
                window: Duration::from_secs(2),
            }),
            ..ServerConfig::default()
        };
        let p = TestParams {
            time: 10,
            len: Some(1 << 20),
            ..TestParams::default()
        };
        let l = server_limits(&cfg, &p);
        assert_eq!(
            (l.rcv_timeout, l.idle_timeout, l.min_progress),
            (
                Some(Duration::from_secs(5)),
                Some(Duration::from_secs(8)),
                64 << 10
            )
        );
        assert_eq!(l.bitrate.map(|b| b.bits_per_second), Some(8_000_000));
        // a timed test may run its time and 30 s more, within the server's own bound
        assert_eq!(l.stop_after, Some(Duration::from_secs(40)));
        // each limit in iperf3's terms and error numbers
        let s = Duration::from_secs;
        let e = TestError::from_stop(WatchStop::ReceiveIdle {
            quiet: s(6),
            limit: s(5),
        });
        assert!(e.to_string().contains("--rcv-timeout"), "{e}");
        assert_eq!(
            e.i_errno(),
            Some(wirespeed_protocol::server_error::errno::IENOMSG)
        );
        let e = TestError::from_stop(WatchStop::Idle {
            quiet: s(9),
            limit: s(8),
        });
        assert!(e.to_string().contains("--idle-timeout"), "{e}");
        let e = TestError::from_stop(WatchStop::TotalRate {
            rate: 16_000_000,
            limit: 8_000_000,
            window: s(2),
        });
        assert_eq!(
            e.i_errno(),
            Some(wirespeed_protocol::server_error::errno::IETOTALRATE)
        );
        assert!(matches!(
            TestError::from_stop(WatchStop::TooLong { limit: s(40) }),
            TestError::TooLong { secs: 40 }
        ));
    }
}
