//! Two test-run cores joined in memory, with virtual time: a client core and a server core
//! exchange the control connection's bytes through a pipe that can lose what a real path loses
//! (everything, or every write larger than an MTU and what follows it, as TCP would), while a
//! model of the data phase moves bytes at a fixed rate. Each test runs a whole test — setup,
//! data, end, results — in milliseconds, no sockets, no processes, no sleeps.
//!
//! The shells here do for each [`Action`] what the engine's runners do with sockets; what they
//! decide is the core's, so every rule tested here is the one both runners run.

use std::time::Duration;

use wirespeed_model::verdict::{End, SilentPhase};
use wirespeed_protocol::{
    Cookie, Decline, Direction, LiveInterval, ParamsExt, ServerEvent, ServerSession, StreamResult,
    TestParams, TestResults, Timeouts, Transport, COOKIE_LEN,
};
use wirespeed_run::{
    Action, Cause, ClientPlan, ControlInfo, Drain, EndAt, Ending, Limits, Progress, ServerPlan,
    TestRun, WatchStop,
};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);
/// The virtual clock's step.
const STEP: Duration = Duration::from_millis(5);
/// Data rate of one direction, bytes per step (8 Gbit/s).
const PER_STEP: u64 = 5_000_000;

/// One direction of the control connection.
#[derive(Debug, Default)]
struct Link {
    /// Writes larger than this are lost — and, as on a TCP connection, everything after them
    /// (an MTU black hole: small segments pass, the first large one never does).
    mtu: Option<usize>,
    /// Everything written from this moment on is lost.
    down_at: Option<Duration>,
    /// A write was lost: the rest of the stream waits behind it forever.
    blocked: bool,
    /// Bytes lost and their retransmits (for the sender's `TCP_INFO`).
    unacked: u32,
    retransmits: u32,
    last_retransmit: Duration,
    /// Delivered, waiting for the reader.
    inflight: Vec<u8>,
    closed: bool,
}

impl Link {
    fn write(&mut self, now: Duration, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let lost = self.blocked
            || self.down_at.is_some_and(|t| now >= t)
            || self.mtu.is_some_and(|m| bytes.len() > m);
        if lost {
            if !self.blocked {
                self.last_retransmit = now;
            }
            self.blocked = true;
            self.unacked += bytes.len().div_ceil(1448) as u32;
        } else {
            self.inflight.extend(bytes);
        }
    }

    /// The writer's view: lost segments retransmitted every 200 ms.
    fn info(&mut self, now: Duration) -> ControlInfo {
        if self.blocked && now.saturating_sub(self.last_retransmit) >= 200 * MS {
            self.retransmits += 1;
            self.last_retransmit = now;
        }
        ControlInfo {
            unacked: self.unacked,
            retransmits_total: self.retransmits,
            snd_mss: 8948,
            pmtu: 9000,
        }
    }

    /// The writer closed: the FIN arrives unless it waits behind a lost segment.
    fn close(&mut self) {
        self.closed = true;
    }

    fn eof_visible(&self) -> bool {
        self.closed && !self.blocked
    }
}

/// One end: its core and what its runner holds.
#[derive(Debug)]
struct EndState {
    run: Option<TestRun>,
    sends: bool,
    receives: bool,
    sending: bool,
    started: Option<Duration>,
    sent: u64,
    received: u64,
    /// This end's incoming data stops arriving from this moment.
    data_cut_at: Option<Duration>,
    final_tick: Option<Duration>,
    peer_results: Option<TestResults>,
    peer_live: usize,
    ending: Option<(Duration, Ending)>,
    closed: bool,
    /// How big this end's results are (a large message is what an MTU black hole drops).
    results_size: usize,
}

impl EndState {
    fn new(sends: bool, receives: bool) -> EndState {
        EndState {
            run: None,
            sends,
            receives,
            sending: false,
            started: None,
            sent: 0,
            received: 0,
            data_cut_at: None,
            final_tick: None,
            peer_results: None,
            peer_live: 0,
            ending: None,
            closed: false,
            results_size: 4,
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            bytes: (self.sent, self.received),
            blocks: (self.sent / 131_072, self.received / 131_072),
            senders_finished: false,
            receives: self.receives,
            omit_done: true,
            measure_start: self.started.unwrap_or_default(),
        }
    }

    fn results(&self) -> TestResults {
        TestResults {
            streams: (0..self.results_size)
                .map(|i| StreamResult {
                    id: 1 + i as u32,
                    bytes: self.sent.max(self.received),
                    ..StreamResult::default()
                })
                .collect(),
            ..TestResults::default()
        }
    }
}

/// The scenario: parameters, plans and what the paths do.
struct Scenario {
    params: TestParams,
    end: EndAt,
    client_limits: Limits,
    server_limits: Limits,
    timeouts: Timeouts,
    /// Client → server and server → client control links.
    c2s: Link,
    s2c: Link,
    /// The client's data stops reaching the server / the server's the client, at this time.
    c2s_data_cut: Option<Duration>,
    s2c_data_cut: Option<Duration>,
    interrupt_at: Option<Duration>,
    results_size: (usize, usize),
}

impl Scenario {
    fn new(direction: Direction, end: EndAt) -> Scenario {
        let mut params = TestParams {
            transport: Transport::Tcp,
            parallel: 1,
            direction,
            time: 10,
            // wirespeed at both ends: a refusal carries the server's words
            wirespeed: Some(ParamsExt::default()),
            ..TestParams::default()
        };
        if let EndAt::Time(t) = end {
            params.time = t.as_secs() as u32;
        }
        Scenario {
            params,
            end,
            client_limits: Limits::default(),
            server_limits: Limits {
                rcv_timeout: Some(2 * S),
                stop_after: Some(60 * S),
                min_progress: 65536,
                ..Limits::default()
            },
            timeouts: Timeouts::default(),
            c2s: Link::default(),
            s2c: Link::default(),
            c2s_data_cut: None,
            s2c_data_cut: None,
            interrupt_at: None,
            results_size: (4, 4),
        }
    }
}

/// What both ends saw.
#[derive(Debug)]
struct Outcome {
    client: EndState,
    server: EndState,
    /// Virtual time when both ends were over.
    took: Duration,
}

impl Outcome {
    fn client_end(&self) -> &Ending {
        &self.client.ending.as_ref().expect("the client ended").1
    }
    fn server_end(&self) -> &Ending {
        &self.server.ending.as_ref().expect("the server ended").1
    }
}

fn sends(direction: Direction, client: bool) -> bool {
    match direction {
        Direction::ClientToServer => client,
        Direction::ServerToClient => !client,
        Direction::Both => true,
    }
}

/// Run the scenario to its end (at most 120 virtual seconds).
fn run(mut sc: Scenario) -> Outcome {
    let dir = sc.params.direction;
    let mut c = EndState::new(sends(dir, true), sends(dir, false));
    let mut s = EndState::new(sends(dir, false), sends(dir, true));
    c.results_size = sc.results_size.0;
    s.results_size = sc.results_size.1;
    c.data_cut_at = sc.s2c_data_cut;
    s.data_cut_at = sc.c2s_data_cut;
    let cookie = Cookie::from_entropy(&[7u8; COOKIE_LEN - 1]);
    let mut now = Duration::ZERO;
    c.run = Some(TestRun::client(
        now,
        cookie,
        sc.params.clone(),
        sc.timeouts,
        ClientPlan {
            end: sc.end,
            paced: false,
            limits: sc.client_limits,
            peer_mss: Some(8948),
        },
    ));
    // The server's acceptor: the cookie, then the parameters, then the decision.
    let mut acceptor = Some(ServerSession::new(now, cookie, sc.timeouts));
    let mut cookie_left = COOKIE_LEN;

    while now < 120 * S && !(c.closed && s.closed) {
        now += STEP;
        // the data phase
        flow(&mut c, &mut s, now);
        flow(&mut s, &mut c, now);
        // the client
        if let Some(at) = sc.interrupt_at.filter(|t| now >= *t && !c.closed) {
            let _ = at;
            sc.interrupt_at = None;
            c.run.as_mut().unwrap().interrupt();
        }
        step_end(&mut c, &mut sc.c2s, &mut sc.s2c, now, true);
        // the server's acceptor, before the test core exists
        if let Some(mut sess) = acceptor.take() {
            let mut bytes = std::mem::take(&mut sc.c2s.inflight);
            let skip = cookie_left.min(bytes.len());
            bytes.drain(..skip);
            cookie_left -= skip;
            if !bytes.is_empty() {
                sess.handle_input(now, &bytes);
            }
            match sess.poll_event() {
                Some(ServerEvent::Params(_)) => {
                    let mut run = TestRun::server(
                        sess,
                        ServerPlan {
                            drain: Drain::UntilQuiet {
                                quiet: 100 * MS,
                                max: 2 * S,
                            },
                            limits: sc.server_limits,
                            peer_mss: Some(8948),
                        },
                    );
                    run.accept(now).unwrap();
                    s.run = Some(run);
                }
                Some(ServerEvent::Failed(f)) => {
                    // the acceptor gives up on a client that never sent its parameters
                    s.ending = Some((
                        now,
                        Ending::Failed {
                            failure: f,
                            in_setup: true,
                        },
                    ));
                    s.closed = true;
                    sc.s2c.close();
                }
                Some(other) => panic!("acceptor: {other:?}"),
                None => {
                    sess.handle_timeout(now);
                    sc.s2c.write(now, sess.take_transmit());
                    acceptor = Some(sess);
                }
            }
        }
        if s.run.is_some() && !s.closed {
            step_end(&mut s, &mut sc.s2c, &mut sc.c2s, now, false);
        }
    }
    Outcome {
        client: c,
        server: s,
        took: now,
    }
}

/// The data `from` sends in one step, and what of it reaches `to`.
fn flow(from: &mut EndState, to: &mut EndState, now: Duration) {
    if from.sending {
        from.sent += PER_STEP;
        if to.data_cut_at.is_none_or(|t| now < t) && to.ending.is_none() {
            to.received += PER_STEP;
        }
    }
}

/// One step of one end's runner: read the control connection, feed the counters and the time,
/// do what the core says, write what it queued.
fn step_end(e: &mut EndState, out: &mut Link, inp: &mut Link, now: Duration, client: bool) {
    if e.closed {
        return;
    }
    let Some(mut run) = e.run.take() else { return };
    let bytes = std::mem::take(&mut inp.inflight);
    if !bytes.is_empty() {
        run.handle_input(now, &bytes);
    } else if inp.eof_visible() {
        run.handle_eof(now);
    }
    run.handle_progress(now, e.progress());
    let info = out.info(now);
    run.handle_timeout(now, Some(info));
    while let Some(a) = run.poll_action() {
        match a {
            Action::OpenStreams => {} // the server's streams_ready follows its accept below
            Action::StartData { .. } => {
                run.data_started(now);
                e.started = Some(now);
                e.sending = e.sends;
            }
            Action::StopSenders { .. } => {
                e.sending = false;
                run.senders_stopped(now, now).unwrap();
            }
            Action::Finish { decided, drain: _ } => {
                e.sending = false;
                e.final_tick = Some(decided.min(now));
                run.data_finished(now).unwrap();
            }
            Action::SendResults => {
                let r = e.results();
                run.send_results(now, &r, Some(out.info(now))).unwrap();
            }
            Action::PeerLive(_) => e.peer_live += 1,
            Action::PeerResults(r) => e.peer_results = Some(*r),
            Action::End(ending) => {
                e.sending = false;
                if e.final_tick.is_none() && e.started.is_some() {
                    e.final_tick = Some(now);
                }
                // the server's runner tells the client why its limits ended the test
                if let (false, Ending::Limit(_) | Ending::Silent { .. }) = (client, &ending) {
                    run.refuse(&Decline::Error {
                        i_errno: 0,
                        errno: 0,
                        detail: format!("{ending:?}"),
                    });
                }
                e.ending = Some((now, ending));
            }
        }
    }
    // the server: its streams are all there one step after CREATE_STREAMS went out
    if !client && e.started.is_none() && e.ending.is_none() {
        run.streams_ready(now).unwrap();
        run.data_started(now);
        e.started = Some(now);
        e.sending = e.sends;
    }
    // this end's live frames, one per 100 ms while its data runs, when the scenario asks
    let due = now.as_millis() % 100 == 0;
    if LIVE.with(|l| l.get()) && due && run.is_running() {
        run.send_live(&live_frame(now.as_secs_f64()));
    }
    out.write(now, run.take_transmit());
    if e.ending.is_some() {
        e.closed = true;
        out.close();
    }
    e.run = Some(run);
}

#[test]
fn a_timed_test_ends_complete_at_both_ends_in_every_direction() {
    for dir in [
        Direction::ClientToServer,
        Direction::ServerToClient,
        Direction::Both,
    ] {
        let o = run(Scenario::new(dir, EndAt::Time(3 * S)));
        assert_eq!(o.client_end(), &Ending::Complete, "{dir:?}");
        assert_eq!(o.server_end(), &Ending::Complete, "{dir:?}");
        // the client decided at 3 s after its data began; the server closed its last
        // interval when TEST_END came, a step later
        let (cs, ct) = (o.client.started.unwrap(), o.client.final_tick.unwrap());
        assert_eq!(ct - cs, 3 * S, "{dir:?}");
        let st = o.server.final_tick.unwrap();
        assert!(st >= ct && st <= ct + 4 * STEP, "{dir:?}: {st:?} vs {ct:?}");
        // both ends hold the other's results, with the bytes that moved
        let pr = o.client.peer_results.as_ref().unwrap();
        assert_eq!(pr.streams[0].bytes, o.server.sent.max(o.server.received));
        assert!(o.server.peer_results.is_some());
        assert!(o.took < 4 * S, "{:?}", o.took);
    }
}

#[test]
fn bytes_and_blocks_end_the_test_where_they_are_reached() {
    let o = run(Scenario::new(
        Direction::ClientToServer,
        EndAt::Bytes(50 * PER_STEP),
    ));
    assert_eq!(o.client_end(), &Ending::Complete);
    assert_eq!(o.client.sent, 50 * PER_STEP);
    let o = run(Scenario::new(
        Direction::ServerToClient,
        EndAt::Blocks(3000),
    ));
    assert_eq!(o.client_end(), &Ending::Complete);
    // -k counts what this end received in -R
    assert!(o.client.received / 131_072 >= 3000);
    assert!(o.client.received / 131_072 < 3000 + PER_STEP / 131_072 + 1);
    assert_eq!(o.server_end(), &Ending::Complete);
}

#[test]
fn results_black_holed_toward_the_client_are_named_at_both_ends() {
    // The server → client path drops large segments: the states get through, the server's
    // results (a large message) never do.
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Time(2 * S));
    sc.s2c.mtu = Some(1400);
    sc.results_size = (4, 200);
    let o = run(sc);
    // the server sees its own results unacknowledged and retransmitted: a stall
    match o.server_end() {
        Ending::ResultsStalled(st) => {
            assert!(st.seconds >= 4.0 && st.retransmits >= 3, "{st:?}")
        }
        other => panic!("server: {other:?}"),
    }
    // the client waited for them: a silent server in the results phase, never a bare timeout;
    // its own results were acknowledged (they went the other way)
    match o.client_end() {
        Ending::Silent { silent, cause } => {
            assert_eq!(
                (silent.peer, silent.phase, silent.own_acked),
                (End::Server, SilentPhase::Results, true)
            );
            assert!(silent.bytes_sent > 0);
            assert!(matches!(cause, Cause::Control(_)), "{cause:?}");
        }
        other => panic!("client: {other:?}"),
    }
}

#[test]
fn results_black_holed_toward_the_server_are_named_at_both_ends() {
    let mut sc = Scenario::new(Direction::ServerToClient, EndAt::Time(2 * S));
    sc.c2s.mtu = Some(1400);
    sc.results_size = (200, 4);
    let o = run(sc);
    assert!(
        matches!(o.client_end(), Ending::ResultsStalled(_)),
        "client: {:?}",
        o.client_end()
    );
    match o.server_end() {
        Ending::Silent { silent, .. } => {
            assert_eq!(
                (silent.peer, silent.phase),
                (End::Client, SilentPhase::Results)
            );
            // the server had not sent its results: nothing of its own to be acknowledged
            assert!(!silent.own_acked);
            assert!(silent.bytes_sent > 0);
        }
        other => panic!("server: {other:?}"),
    }
}

#[test]
fn a_client_whose_data_stops_is_named_by_the_server_and_the_client_hears_why() {
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Time(10 * S));
    sc.c2s_data_cut = Some(2 * S);
    let o = run(sc);
    match o.server_end() {
        Ending::Silent { silent, cause } => {
            assert_eq!(
                (silent.peer, silent.phase),
                (End::Client, SilentPhase::Data)
            );
            assert!(matches!(
                cause,
                Cause::Watch(WatchStop::ReceiveIdle { limit, .. }) if *limit == 2 * S
            ));
            assert!(silent.bytes_received > 0);
        }
        other => panic!("server: {other:?}"),
    }
    // the server said why; the client ends with the server's words
    match o.client_end() {
        Ending::Refused(r) => assert!(r.to_string().contains("Silent"), "{r}"),
        other => panic!("client: {other:?}"),
    }
    assert!(o.took < 6 * S, "{:?}", o.took);
}

#[test]
fn a_server_whose_data_stops_ends_a_reverse_test_at_the_clients_receive_timeout() {
    let mut sc = Scenario::new(Direction::ServerToClient, EndAt::Time(10 * S));
    sc.s2c_data_cut = Some(S);
    sc.client_limits.rcv_timeout = Some(3 * S);
    let o = run(sc);
    match o.client_end() {
        Ending::Silent { silent, cause } => {
            assert_eq!(
                (silent.peer, silent.phase),
                (End::Server, SilentPhase::Data)
            );
            assert!(matches!(cause, Cause::Watch(WatchStop::ReceiveIdle { .. })));
        }
        other => panic!("client: {other:?}"),
    }
    // the client's final interval closed when it gave up, not at the 10 s it asked for
    let t = o.client.final_tick.unwrap();
    assert!(t < 5 * S, "{t:?}");
}

#[test]
fn a_server_silent_from_the_start_fails_the_setup_with_its_phase() {
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Time(2 * S));
    sc.s2c.down_at = Some(Duration::ZERO);
    let o = run(sc);
    match o.client_end() {
        Ending::Failed { failure, in_setup } => {
            assert!(*in_setup);
            assert!(failure.to_string().contains("PARAM_EXCHANGE"), "{failure}");
        }
        other => panic!("client: {other:?}"),
    }
}

#[test]
fn a_control_connection_lost_mid_test_ends_both_ends_with_a_reason() {
    // Both directions of the control connection go down at 1 s; the data keeps flowing.
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Time(3 * S));
    sc.c2s.down_at = Some(S);
    sc.s2c.down_at = Some(S);
    let o = run(sc);
    // the client's TEST_END never arrives: the server runs until its own bound, or ends
    // when its data stops; either way with a reason, never a hang
    assert!(o.server.ending.is_some() && o.client.ending.is_some());
    assert!(
        !matches!(o.client_end(), Ending::Complete),
        "{:?}",
        o.client_end()
    );
}

#[test]
fn an_interrupted_client_tells_the_server() {
    let mut sc = Scenario::new(Direction::Both, EndAt::Time(10 * S));
    sc.interrupt_at = Some(2 * S);
    let o = run(sc);
    assert_eq!(o.client_end(), &Ending::Interrupted);
    assert_eq!(o.server_end(), &Ending::PeerTerminated);
    assert!(o.took < 3 * S);
}

#[test]
fn the_servers_limits_end_a_test_by_name() {
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Time(20 * S));
    sc.server_limits.stop_after = Some(5 * S);
    let o = run(sc);
    assert!(
        matches!(
            o.server_end(),
            Ending::Limit(WatchStop::TooLong { limit }) if *limit == 5 * S
        ),
        "{:?}",
        o.server_end()
    );
    assert!(matches!(o.client_end(), Ending::Refused(_)));
}

#[test]
fn live_frames_travel_both_ways_when_asked_for() {
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Time(2 * S));
    sc.params.wirespeed = Some(ParamsExt {
        live: true,
        ..ParamsExt::default()
    });
    let o = run_with_live(sc);
    assert_eq!(o.client_end(), &Ending::Complete);
    assert!(o.client.peer_live > 0 && o.server.peer_live > 0, "{o:?}");
}

/// [`run`], with each end sending one live frame per step while its data runs.
fn run_with_live(sc: Scenario) -> Outcome {
    LIVE.with(|l| l.set(true));
    let o = run(sc);
    LIVE.with(|l| l.set(false));
    o
}

thread_local! {
    static LIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn live_frame(t: f64) -> LiveInterval {
    LiveInterval {
        seq: (t * 10.0) as u64,
        start: t,
        end: t + 0.1,
        head: None,
        observation: None,
    }
}

#[test]
fn a_udp_test_ends_on_blocks_and_a_lost_reverse_stream_is_named() {
    // -u -k: the client counts datagrams (blocks) as it does TCP blocks
    let mut sc = Scenario::new(Direction::ClientToServer, EndAt::Blocks(2000));
    sc.params.transport = Transport::Udp;
    let o = run(sc);
    assert_eq!(o.client_end(), &Ending::Complete);
    assert_eq!(o.server_end(), &Ending::Complete);
    // -u -R: the server's datagrams stop arriving; the client's receive timeout names it
    let mut sc = Scenario::new(Direction::ServerToClient, EndAt::Time(10 * S));
    sc.params.transport = Transport::Udp;
    sc.s2c_data_cut = Some(S);
    sc.client_limits.rcv_timeout = Some(2 * S);
    let o = run(sc);
    assert!(
        matches!(o.client_end(), Ending::Silent { silent, .. } if silent.phase == SilentPhase::Data),
        "{:?}",
        o.client_end()
    );
}
