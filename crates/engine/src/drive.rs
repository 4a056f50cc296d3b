//! The one loop both ends run around the test-run core ([`wirespeed_run::TestRun`]) once they
//! reached their peer: poll the core, do what its actions say through the [`Shell`], read the
//! control connection until the next wake-up, feed the core the bytes, the counters and the
//! time, and end as the core says. The client's runner ([`crate::client`]) and the server's
//! ([`crate::server`]) each implement [`Endpoint`] with only what differs: the data connections
//! (the client opens them when asked; the server accepted them before the loop), what reading
//! the control connection costs (the server charges the peer's address), their error words,
//! what they add to their results and what they release (the server's tune change).
//!
//! The control connection is a [`Control`]: the runners' TCP connection ([`Ctrl`]), or an
//! in-memory one in the tests, which drive a client end and a server end through this loop.

use std::io;
use std::time::{Duration, Instant};

use wirespeed_protocol::psk::{PskError, PskRefusal};
use wirespeed_protocol::{TestResults, WireError};
use wirespeed_run::{Action, ControlInfo, Ending, TestRun};

use crate::net::{Ctrl, ReadOutcome};
use crate::output::Reporter;
use crate::shell::{SendError, Shell};

/// How long a client waits for its senders to end after telling them to stop, before it says
/// `TEST_END`: each ends within one write, or one [`wirespeed_datapath::POLL_INTERVAL`] when
/// its socket takes nothing (a stalled path); past this its interval ends when it was decided.
const SENDERS_END_WITHIN: Duration =
    Duration::from_millis(2 * wirespeed_datapath::POLL_INTERVAL.as_millis() as u64);

/// An end's control connection, as the loop uses it.
pub trait Control {
    /// Write all of `bytes`.
    fn send(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Wait for bytes until `deadline`: what came.
    fn read_until(&mut self, deadline: Instant) -> io::Result<(ReadOutcome, &[u8])>;
    /// Bytes (or the end of the connection) can be read now.
    fn has_input(&self) -> bool;
    /// The connection's state for the core's rules (its `TCP_INFO`).
    fn info(&self) -> Option<ControlInfo>;
    /// How long ago the peer's last bytes arrived, when the kernel says.
    fn last_data_ago(&self) -> Option<Duration>;
}

impl Control for Ctrl {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        Ctrl::send(self, bytes)
    }
    fn read_until(&mut self, deadline: Instant) -> io::Result<(ReadOutcome, &[u8])> {
        Ctrl::read_until(self, deadline)
    }
    fn has_input(&self) -> bool {
        Ctrl::has_input(self)
    }
    fn info(&self) -> Option<ControlInfo> {
        self.tcp_info().as_ref().map(crate::stall::control_info)
    }
    fn last_data_ago(&self) -> Option<Duration> {
        self.tcp_info()
            .map(|i| Duration::from_millis(u64::from(i.last_data_recv_ms)))
    }
}

/// What the core was told when the session refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The senders stopped (`TEST_END`).
    EndTest,
    /// The data phase finished (the server asks for results; the client sends its own).
    Finish,
    /// This end's results.
    SendResults,
}

/// What went wrong in the loop, for the end to say in its words.
#[derive(Debug)]
pub enum Failed {
    /// Writing to the control connection.
    Write(io::Error),
    /// Reading it.
    Read(io::Error),
    /// The session refused a step.
    Session(Step, WireError),
    /// Sealing this end's results with the pre-shared key.
    Seal(PskError),
    /// The peer's results do not carry the pre-shared key's tag.
    PeerKey(PskRefusal),
}

/// One end's side of a test the loop drives: its shell, its core and its control connection.
/// `'k`: the pre-shared key the shell borrows.
pub struct Link<'k, C> {
    pub sh: Shell<'k>,
    pub core: TestRun,
    pub ctrl: C,
}

/// What one end supplies to the loop: only what differs between the client and the server.
pub trait Endpoint<'k> {
    type Error;
    type Ctrl: Control;

    /// This end's shell, core and control connection.
    fn link(&mut self) -> &mut Link<'k, Self::Ctrl>;

    /// This end's words for what went wrong. Whatever it queues in the core (telling the
    /// peer) is written before the loop returns.
    fn failed(&mut self, f: Failed) -> Self::Error;

    /// The user asked to stop (checked once per turn): the error to end with, after this end
    /// closed what it measured (`None`: go on).
    fn interrupted(&mut self, _reporter: &mut dyn Reporter) -> Option<Self::Error> {
        None
    }

    /// `Action::OpenStreams`: open the data connections and ready the data phase
    /// ([`Shell::prepare`]), so that only its workers are left for `TEST_RUNNING`.
    fn open_streams(&mut self, reporter: &mut dyn Reporter) -> Result<(), Self::Error>;

    /// `Action::StartData`: start the data phase ([`Shell::start_data`]), its clock at
    /// `started`.
    fn start_data(
        &mut self,
        started: Duration,
        reporter: &mut dyn Reporter,
    ) -> Result<(), Self::Error>;

    /// Control bytes that came (read at `now`): hand them to the core (`handle_input`), after
    /// whatever this end counts of them. An error ends the test; what it queued in the core
    /// is written first.
    fn input(&mut self, now: Duration, bytes: &[u8]) -> Result<(), Self::Error> {
        self.link().core.handle_input(now, bytes);
        Ok(())
    }

    /// This end counts its receivers as iperf3's server does: until the peer's `TEST_END`
    /// arrived (see [`crate::shell::receivers_end`]).
    fn counts_at_arrival(&self) -> bool {
        false
    }

    /// The data phase is over: release what was held for it (before the results).
    fn data_over(&mut self) {}

    /// `Action::SendResults`: this end's results for the peer (the loop seals them).
    fn local_results(&mut self, reporter: &mut dyn Reporter) -> TestResults;

    /// This end's results went out (sealed).
    fn results_sent(&mut self, _r: TestResults) {}

    /// How the core ended the test, as this end reports it: the shell already noted a silent
    /// peer ([`Shell::peer_silent`]) or stalled results ([`Shell::results_stalled`]). What it
    /// queues in the core is written.
    fn ending(&mut self, ending: Ending, reporter: &mut dyn Reporter) -> Result<(), Self::Error>;
}

/// Write what the core has for the peer.
fn flush<'k, E: Endpoint<'k>>(end: &mut E) -> Result<(), E::Error> {
    let Link { core, ctrl, .. } = end.link();
    let out = core.take_transmit();
    ctrl.send(&out).map_err(|e| end.failed(Failed::Write(e)))
}

/// The end's words for `f`, once what it queued in the core (telling the peer) is written,
/// as far as it goes.
fn fail<'k, E: Endpoint<'k>>(end: &mut E, f: Failed) -> E::Error {
    let e = end.failed(f);
    written(end, e)
}

/// `e`, once what the core has for the peer is written, as far as it goes.
fn written<'k, E: Endpoint<'k>>(end: &mut E, e: E::Error) -> E::Error {
    let Link { core, ctrl, .. } = end.link();
    let _ = ctrl.send(&core.take_transmit());
    e
}

/// When the peer's `TEST_END` (read at `decided`, since `epoch`) arrived: the control
/// connection's last data came `last_data_ago` before now — a loaded host may take tens of ms
/// to schedule the thread that reads it, and the receiver's interval ends at the arrival, not
/// at the reading. Never after `decided`; `decided` when the kernel does not say.
pub fn test_end_arrival(
    last_data_ago: Option<Duration>,
    epoch: Instant,
    decided: Duration,
) -> Duration {
    let now = epoch.elapsed();
    last_data_ago.map_or(decided, |ago| now.saturating_sub(ago).min(decided))
}

/// Read the control connection until `deadline` and give the core what came (through
/// [`End::input`]), the data phase's counters as they are after the wait, then the time and the
/// connection's state. An error of the end's is returned once what it queued went out.
pub fn feed<'k, E: Endpoint<'k>>(end: &mut E, deadline: Instant) -> Result<(), E::Error> {
    let read = end
        .link()
        .ctrl
        .read_until(deadline)
        .map(|(o, b)| (o, b.to_vec()));
    let (outcome, bytes) = match read {
        Ok(got) => got,
        Err(e) => return Err(fail(end, Failed::Read(e))),
    };
    let now = end.link().sh.now();
    match outcome {
        ReadOutcome::Data(_) => {
            if let Err(e) = end.input(now, &bytes) {
                return Err(written(end, e));
            }
        }
        ReadOutcome::Eof => end.link().core.handle_eof(now),
        ReadOutcome::Timeout => {}
    }
    let Link { sh, core, ctrl } = end.link();
    if let Some(p) = sh.progress() {
        core.handle_progress(sh.now(), p);
    }
    core.handle_timeout(sh.now(), ctrl.info());
    Ok(())
}

/// The one loop around the core, from where this end reached its peer to the test's end: what
/// is due for the peer goes out first; then, turn by turn, each action the core has, through
/// the shell; what came on the control connection is read before the tick's work (observing
/// and building an interval takes milliseconds, tens on a loaded host: a `TEST_END` that came
/// with the last tick stops the senders when it came, not after that work); then the
/// intervals due, this end's live frames, and a wait for the control connection until the
/// next wake-up ([`Shell::wake`]).
pub fn drive<'k, E: Endpoint<'k>>(
    end: &mut E,
    reporter: &mut dyn Reporter,
) -> Result<(), E::Error> {
    flush(end)?;
    let mut read_early = false;
    loop {
        if let Some(e) = end.interrupted(reporter) {
            return Err(e);
        }
        while let Some(action) = end.link().core.poll_action() {
            if let Action::End(ending) = action {
                return finish(end, ending, reporter);
            }
            act(end, action, reporter)?;
        }
        flush(end)?;
        // Once per turn: an EOF stays readable.
        if !read_early && end.link().ctrl.has_input() {
            read_early = true;
            feed(end, Instant::now())?;
            continue;
        }
        read_early = false;
        let Link { sh, core, .. } = end.link();
        if core.is_running() {
            sh.ticks(reporter);
        }
        // This end's live frames (the session sends them only while the peer takes them).
        if sh.send_live(core) {
            flush(end)?;
        }
        let Link { sh, core, .. } = end.link();
        let wake = sh.wake(core);
        feed(end, wake)?;
    }
}

/// One action of the core's, through the shell (`Action::End` is [`finish`]'s).
fn act<'k, E: Endpoint<'k>>(
    end: &mut E,
    action: Action,
    reporter: &mut dyn Reporter,
) -> Result<(), E::Error> {
    match action {
        Action::OpenStreams => end.open_streams(reporter)?,
        Action::StartData { started } => {
            end.start_data(started, reporter)?;
            let Link { sh, core, .. } = end.link();
            core.data_started(sh.now());
        }
        Action::PeerLive(li) => end.link().sh.peer_live(*li, reporter),
        Action::StopSenders { paced } => {
            let Link { sh, core, .. } = end.link();
            let decided = sh.now();
            if sh.ends_before_joining(paced) {
                let decided = sh
                    .signal_stop_senders(SENDERS_END_WITHIN)
                    .unwrap_or(decided);
                if let Err(e) = core.senders_stopped(sh.now(), decided) {
                    return Err(fail(end, Failed::Session(Step::EndTest, e)));
                }
                flush(end)?;
                end.link().sh.stop_senders(paced, decided, reporter);
            } else {
                let decided = sh.stop_senders(paced, decided, reporter);
                if let Err(e) = core.senders_stopped(sh.now(), decided) {
                    return Err(fail(end, Failed::Session(Step::EndTest, e)));
                }
            }
        }
        Action::Finish { decided, drain } => {
            let counts_at_arrival = end.counts_at_arrival();
            let Link { sh, ctrl, .. } = end.link();
            let (epoch, ctrl) = (sh.epoch, &*ctrl);
            let arrival = |decided| test_end_arrival(ctrl.last_data_ago(), epoch, decided);
            let at = counts_at_arrival.then_some(&arrival as &dyn Fn(Duration) -> Duration);
            sh.finish(decided, drain, at, reporter);
            // The data phase is over: what was held for it goes back before the results (a
            // sweep's next test may ask for another IRQ layout right after).
            end.data_over();
            let Link { sh, core, .. } = end.link();
            if let Err(e) = core.data_finished(sh.now()) {
                return Err(fail(end, Failed::Session(Step::Finish, e)));
            }
            flush(end)?;
        }
        Action::SendResults => {
            let r = end.local_results(reporter);
            let Link { sh, core, ctrl } = end.link();
            match sh.send_results(core, r, ctrl.info()) {
                Ok(r) => {
                    flush(end)?;
                    end.results_sent(r);
                }
                Err(SendError::Psk(e)) => return Err(fail(end, Failed::Seal(e))),
                Err(SendError::Session(e)) => {
                    return Err(fail(end, Failed::Session(Step::SendResults, e)))
                }
            }
        }
        Action::PeerResults(r) => {
            if let Err(refusal) = end.link().sh.peer_results(*r) {
                return Err(fail(end, Failed::PeerKey(refusal)));
            }
        }
        Action::End(ending) => return finish(end, ending, reporter),
    }
    Ok(())
}

/// The core ended the test: what it has for the peer goes out, the shell notes a silent peer
/// or stalled results, and the end says how it ended (what it queues goes out too).
fn finish<'k, E: Endpoint<'k>>(
    end: &mut E,
    ending: Ending,
    reporter: &mut dyn Reporter,
) -> Result<(), E::Error> {
    let Link { sh, core, ctrl } = end.link();
    let wrote = ctrl.send(&core.take_transmit());
    match &ending {
        Ending::ResultsStalled(stall) => sh.results_stalled(stall.clone()),
        Ending::Silent { silent, .. } => sh.peer_silent(silent.clone(), reporter),
        _ => {}
    }
    let how = end.ending(ending, reporter);
    let Link { core, ctrl, .. } = end.link();
    let _ = ctrl.send(&core.take_transmit());
    how?;
    wrote.map_err(|e| end.failed(Failed::Write(e)))
}

#[cfg(test)]
mod tests {
    //! A client end and a server end driven by the one loop, joined by an in-memory control
    //! connection (which can lose what one end writes, as a black-holed path does) and one
    //! TCP data connection on loopback.

    use super::*;
    use std::collections::VecDeque;
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Condvar, Mutex};

    use wirespeed_datapath::udp::{UdpRecvPath, UdpSendPath};
    use wirespeed_datapath::{RecvPath, SendPath};
    use wirespeed_model::End;
    use wirespeed_protocol::psk::Psk;
    use wirespeed_protocol::{
        Cookie, Decline, Direction, ParamsExt, ServerEvent, ServerSession, TestParams, Timeouts,
        COOKIE_LEN,
    };
    use wirespeed_report::HostPort;
    use wirespeed_run::{ClientPlan, Drain, EndAt, Limits, ServerPlan};

    use crate::data::{DataSocket, DataStream};
    use crate::measurement::{LocalPaths, Whence};
    use crate::output::NullReporter;
    use crate::placement::WorkerPlacement;
    use crate::shell::{Begin, Ready};

    const S: Duration = Duration::from_secs(1);

    /// One direction of the in-memory connection: its bytes, and whether the writer is gone.
    #[derive(Default)]
    struct Pipe {
        state: Mutex<(VecDeque<u8>, bool)>,
        cv: Condvar,
    }

    /// One end of the in-memory control connection. `lose`: from when it is set, what this end
    /// writes never arrives (a path that black-holes large messages loses the results).
    struct Mem {
        rx: Arc<Pipe>,
        tx: Arc<Pipe>,
        lose: Arc<AtomicBool>,
        got: Vec<u8>,
    }

    fn duplex() -> (Mem, Mem) {
        let (a, b) = (Arc::new(Pipe::default()), Arc::new(Pipe::default()));
        let end = |rx: &Arc<Pipe>, tx: &Arc<Pipe>| Mem {
            rx: rx.clone(),
            tx: tx.clone(),
            lose: Arc::new(AtomicBool::new(false)),
            got: Vec::new(),
        };
        (end(&a, &b), end(&b, &a))
    }

    impl Drop for Mem {
        fn drop(&mut self) {
            self.tx.state.lock().unwrap().1 = true;
            self.tx.cv.notify_all();
        }
    }

    impl Control for Mem {
        fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
            if !self.lose.load(Ordering::Relaxed) {
                self.tx.state.lock().unwrap().0.extend(bytes);
                self.tx.cv.notify_all();
            }
            Ok(())
        }
        fn read_until(&mut self, deadline: Instant) -> io::Result<(ReadOutcome, &[u8])> {
            let mut st = self.rx.state.lock().unwrap();
            loop {
                if !st.0.is_empty() {
                    self.got = st.0.drain(..).collect();
                    return Ok((ReadOutcome::Data(self.got.len()), &self.got));
                }
                if st.1 {
                    return Ok((ReadOutcome::Eof, &[]));
                }
                let now = Instant::now();
                if now >= deadline {
                    return Ok((ReadOutcome::Timeout, &[]));
                }
                st = self.rx.cv.wait_timeout(st, deadline - now).unwrap().0;
            }
        }
        fn has_input(&self) -> bool {
            let st = self.rx.state.lock().unwrap();
            !st.0.is_empty() || st.1
        }
        fn info(&self) -> Option<ControlInfo> {
            None
        }
        fn last_data_ago(&self) -> Option<Duration> {
            None
        }
    }

    /// An end for the loop: the client opens its (ready) data connection when asked and
    /// starts its data phase; the server started its own before the loop.
    struct TestEnd<'k> {
        link: Link<'k, Mem>,
        params: TestParams,
        streams: Vec<DataStream>,
        /// The client's data phase, readied when its streams opened.
        ready: Option<Ready>,
        peer: SocketAddr,
        opened: bool,
        released: bool,
        /// From this end's results on, nothing it writes arrives.
        lose_results: bool,
        ending: Option<String>,
        failed: Option<String>,
    }

    impl<'k> TestEnd<'k> {
        fn how(&self) -> Begin<'static> {
            Begin {
                whence: match self.link.sh.side {
                    End::Client => Whence::ConnectingTo(HostPort {
                        host: "127.0.0.1".into(),
                        port: self.peer.port(),
                    }),
                    End::Server => Whence::AcceptedFrom(self.peer),
                },
                mss_default: None,
                paths: LocalPaths {
                    placement: WorkerPlacement::float(),
                    send_path: SendPath::Copy,
                    recv_path: RecvPath::Copy,
                    udp_send_path: UdpSendPath::Gso,
                    udp_recv_path: UdpRecvPath::Gro,
                },
                observe: None,
                peer: self.peer.ip(),
                local: None,
            }
        }

        /// The server's start: ready and start at once, its clock at the workers' start.
        fn begin(&mut self, reporter: &mut dyn Reporter) -> Result<(), String> {
            let how = self.how();
            let observer = self.link.sh.observer(&self.params, &how);
            let streams = std::mem::take(&mut self.streams);
            let ready = self
                .link
                .sh
                .prepare(&self.params, &streams, how, observer, reporter)?;
            self.link.sh.start_data(ready, streams, None)
        }
    }

    impl<'k> Endpoint<'k> for TestEnd<'k> {
        type Error = String;
        type Ctrl = Mem;

        fn link(&mut self) -> &mut Link<'k, Mem> {
            &mut self.link
        }
        fn failed(&mut self, f: Failed) -> String {
            let what = format!("{f:?}");
            if let Failed::PeerKey(e) = f {
                // as the server's runner does: the peer is told (a client's core ignores it)
                self.link.core.refuse(&Decline::Error {
                    i_errno: 0,
                    errno: 0,
                    detail: e.to_string(),
                });
            }
            self.failed = Some(what.clone());
            what
        }
        fn open_streams(&mut self, reporter: &mut dyn Reporter) -> Result<(), String> {
            self.opened = true;
            let how = self.how();
            let observer = self.link.sh.observer(&self.params, &how);
            let ready =
                self.link
                    .sh
                    .prepare(&self.params, &self.streams, how, observer, reporter)?;
            self.ready = Some(ready);
            Ok(())
        }
        fn start_data(&mut self, started: Duration, _: &mut dyn Reporter) -> Result<(), String> {
            let ready = self.ready.take().ok_or("TEST_RUNNING before the streams")?;
            let streams = std::mem::take(&mut self.streams);
            self.link.sh.start_data(ready, streams, Some(started))
        }
        fn data_over(&mut self) {
            self.released = true;
        }
        fn local_results(&mut self, _: &mut dyn Reporter) -> TestResults {
            if self.lose_results {
                self.link.ctrl.lose.store(true, Ordering::Relaxed);
            }
            self.link.sh.local_results(None)
        }
        fn ending(&mut self, ending: Ending, _: &mut dyn Reporter) -> Result<(), String> {
            let e = format!("{ending:?}");
            self.ending = Some(e.clone());
            match ending {
                Ending::Complete | Ending::ResultsStalled(_) => Ok(()),
                _ => Err(e),
            }
        }
    }

    fn key(k: &str) -> Psk {
        Psk::from_file_contents(k.as_bytes()).unwrap()
    }

    /// What each end's loop returned, and the end after it.
    type Ran<'k> = (Result<(), String>, TestEnd<'k>);

    /// A test from a client to a server, one second long unless `end` says otherwise, each end
    /// in its own thread through [`drive`]. `lose_server`: from its results on, nothing the
    /// server writes arrives.
    fn two_ends<'k>(
        end_at: EndAt,
        client_key: Option<&'k Psk>,
        server_key: Option<&'k Psk>,
        lose_server: bool,
    ) -> (Ran<'k>, Ran<'k>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = listener.local_addr().unwrap();
        let sender = TcpStream::connect(to).unwrap();
        let (receiver, from) = listener.accept().unwrap();
        let (cctl, sctl) = duplex();
        let cookie = Cookie::from_entropy(&[5u8; COOKIE_LEN - 1]);
        let timeouts = Timeouts {
            results: 2 * S,
            ..Timeouts::default()
        };
        let params = TestParams {
            time: match end_at {
                EndAt::Time(t) => t.as_secs() as u32,
                _ => 0,
            },
            num: match end_at {
                EndAt::Bytes(n) => n,
                _ => 0,
            },
            parallel: 1,
            len: Some(64 << 10),
            // paced: a light test on a busy machine
            bandwidth: Some(40_000_000),
            direction: Direction::ClientToServer,
            wirespeed: Some(ParamsExt {
                drain: true,
                ..ParamsExt::default()
            }),
            ..TestParams::default()
        };
        std::thread::scope(|scope| {
            let client = scope.spawn(|| {
                let sh = Shell::new(End::Client, cookie, client_key, Duration::ZERO);
                let plan = ClientPlan {
                    end: end_at,
                    paced: false,
                    limits: Limits::default(),
                    peer_mss: None,
                };
                let core = TestRun::client(sh.now(), cookie, params.clone(), timeouts, plan);
                let mut end = TestEnd {
                    link: Link {
                        sh,
                        core,
                        ctrl: cctl,
                    },
                    params: params.clone(),
                    streams: vec![DataStream {
                        id: wirespeed_protocol::stream_id(0),
                        socket: DataSocket::Tcp(sender),
                        send: true,
                    }],
                    ready: None,
                    peer: to,
                    opened: false,
                    released: false,
                    lose_results: false,
                    ending: None,
                    failed: None,
                };
                let r = drive(&mut end, &mut NullReporter);
                end.link.sh.close();
                (r, end)
            });
            let server = scope.spawn(move || {
                // the acceptor: the cookie, then the parameters
                let sh = Shell::new(End::Server, cookie, server_key, Duration::ZERO);
                let mut ctrl = sctl;
                let mut sess = ServerSession::new(sh.now(), cookie, timeouts);
                let mut skip = COOKIE_LEN;
                let p = loop {
                    let (o, b) = ctrl.read_until(Instant::now() + 10 * S).unwrap();
                    assert!(matches!(o, ReadOutcome::Data(_)), "{o:?}");
                    let k = skip.min(b.len());
                    skip -= k;
                    let b = b[k..].to_vec();
                    sess.handle_input(sh.now(), &b);
                    match sess.poll_event() {
                        Some(ServerEvent::Params(p)) => break *p,
                        None => ctrl.send(&sess.take_transmit()).unwrap(),
                        Some(other) => panic!("{other:?}"),
                    }
                };
                let plan = ServerPlan {
                    drain: Drain::UntilEof { within: 5 * S },
                    limits: Limits::default(),
                    peer_mss: None,
                };
                let mut core = TestRun::server(sess, plan);
                core.accept(sh.now()).unwrap();
                core.streams_ready(sh.now()).unwrap();
                ctrl.send(&core.take_transmit()).unwrap();
                let mut end = TestEnd {
                    link: Link { sh, core, ctrl },
                    params: p,
                    streams: vec![DataStream {
                        id: wirespeed_protocol::stream_id(0),
                        socket: DataSocket::Tcp(receiver),
                        send: false,
                    }],
                    ready: None,
                    peer: from,
                    opened: false,
                    released: false,
                    lose_results: lose_server,
                    ending: None,
                    failed: None,
                };
                end.begin(&mut NullReporter).unwrap();
                let now = end.link.sh.now();
                end.link.core.data_started(now);
                let r = drive(&mut end, &mut NullReporter);
                end.link.sh.close();
                (r, end)
            });
            (client.join().unwrap(), server.join().unwrap())
        })
    }

    /// Bytes the peer's results say it moved.
    fn peers_bytes(e: &TestEnd<'_>) -> Option<u64> {
        e.link
            .sh
            .peer_results
            .as_ref()
            .map(|r| r.streams.iter().map(|s| s.bytes).sum())
    }

    #[test]
    fn one_loop_runs_both_ends_and_they_exchange_sealed_results() {
        let k = key("a shared key of enough length for the test");
        // a timed test, and one that ends at a byte count (the counters read often)
        for end_at in [EndAt::Time(S), EndAt::Bytes(2_000_000)] {
            let ((cr, mut c), (sr, s)) = two_ends(end_at, Some(&k), Some(&k), false);
            assert_eq!(cr, Ok(()), "{end_at:?}: client: {:?}", c.failed);
            assert_eq!(sr, Ok(()), "{end_at:?}: server: {:?}", s.failed);
            assert_eq!(c.ending.as_deref(), Some("Complete"));
            assert_eq!(s.ending.as_deref(), Some("Complete"));
            // the client opened its streams when asked; both ends released their data phase
            assert!(c.opened && !s.opened);
            assert!(c.released && s.released);
            // each end holds the other's results, checked against the key: what the server
            // received is what the client sent, and the reverse
            let sent = c
                .link
                .sh
                .local_results(None)
                .streams
                .iter()
                .map(|s| s.bytes)
                .sum::<u64>();
            assert!(sent > 0);
            if let EndAt::Bytes(n) = end_at {
                assert!(sent >= n, "{sent} < {n}");
            }
            assert_eq!(peers_bytes(&s), Some(sent), "{end_at:?}");
            assert!(peers_bytes(&c).is_some_and(|b| b > 0));
            assert!(!c.link.sh.silent && !s.link.sh.silent);
        }
    }

    #[test]
    fn a_wrong_key_ends_the_test_at_the_end_that_checks_the_results() {
        let (k1, k2) = (
            key("the client's key, long enough for a key"),
            key("the server's key, long enough for a key"),
        );
        let ((cr, c), (sr, s)) = two_ends(EndAt::Time(S), Some(&k1), Some(&k2), false);
        // the server checks the client's results first, refuses them and tells the client
        let e = sr.unwrap_err();
        assert!(e.starts_with("PeerKey"), "{e}");
        assert!(s.link.sh.peer_results.is_none());
        assert!(cr.is_err(), "{:?}", c.ending);
        assert!(
            c.link.sh.peer_results.is_none(),
            "the client got no results"
        );
        assert_ne!(c.ending.as_deref(), Some("Complete"));
    }

    #[test]
    fn a_server_silent_after_the_exchange_began_ends_the_client_with_its_own_counts() {
        let ((cr, c), (_, s)) = two_ends(EndAt::Time(S), None, None, true);
        // the client sent its results; the server's never arrive: the client ends on the
        // silence, with this end's report and the verdict on it, not a bare timeout
        let e = cr.unwrap_err();
        assert!(e.starts_with("Silent"), "{e}");
        assert!(c.link.sh.silent, "the shell noted the silent peer");
        assert!(c.link.sh.measured() > 0.0, "the last interval closed");
        assert!(c.link.sh.peer_results.is_none());
        // the server got the client's results before it went silent
        assert!(s.link.sh.peer_results.is_some(), "{:?}", s.ending);
    }
}
