//! The server: many tests at once, from many clients, on one port.
//!
//! One thread (the *acceptor*) owns the listening socket and every connection whose first 37
//! bytes (the cookie) have not arrived yet; it `poll`s them all with per-connection
//! deadlines, so silent or slow peers cost a slot, never a thread, and are dropped when their
//! time is up. A complete cookie either matches a test that is waiting for its data
//! connections (the connection goes to that test, tagged with its accept order), or starts a
//! new test on its own thread, which drives a [`ServerSession`] over the control connection.
//! A cookie that matches nothing expecting streams, or a duplicate, gets `ACCESS_DENIED` and a
//! close, as iperf3 does.
//!
//! Limits (concurrent tests, streams per test, duration, pending handshakes) are enforced
//! with refusals the client understands: `ACCESS_DENIED` toward iperf3 clients when busy,
//! `SERVER_ERROR` with iperf3's `i_errno` otherwise, and wirespeed's own words toward
//! wirespeed clients. No single client can stop the server: every failure ends only its
//! own test.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use wirespeed_datapath::{self as dp, RecvPath, SendPath};
use wirespeed_protocol::server_error::errno;
use wirespeed_protocol::{
    Cookie, Decline, Direction, ServerEvent, ServerSession, State, TestParams, TestResults,
    Timeouts, Transport, COOKIE_LEN,
};
use wirespeed_report::builder::{Protocol, ResultBuilder, Role};
use wirespeed_report::{HostPort, Start, TestResult};

use crate::assemble::{self, VERSION};
use crate::client::{usable_cpus, DEFAULT_TCP_BLOCK};
use crate::data::{DataConfig, DataPhase, DataSocket, DataStream, Drain, UdpConfig};
use crate::net::{Ctrl, Family, ReadOutcome};
use crate::output::Reporter;
use crate::placement::Placement;
use crate::timeline::Timeline;
use crate::tune::{HeldTune, TuneConfig, TuneSlot};
use crate::usage::{CpuMeter, CpuPercent};
use crate::EngineError;

/// What one server accepts.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Tests running at the same time.
    pub max_tests: usize,
    /// `-P` a client may ask for.
    pub max_streams: u32,
    /// Longest test (`-t` + `-O`); `-n`/`-k` tests are stopped at this age.
    pub max_duration: Duration,
    /// Largest block (`-l`) a client may ask for.
    pub max_block: u32,
    /// Connections whose cookie has not arrived yet.
    pub max_pending: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_tests: 64,
            max_streams: 4096,
            max_duration: Duration::from_secs(86_400),
            max_block: 16 * 1024 * 1024,
            max_pending: 4096,
        }
    }
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `-B`.
    pub bind: Option<IpAddr>,
    /// `-p`; 0 picks a free port.
    pub port: u16,
    pub family: Family,
    /// `-1`: serve one test, then return.
    pub one_off: bool,
    pub limits: Limits,
    /// Server-side default placement of workers (`--cpus` on the server).
    pub cpus: Option<Vec<u32>>,
    /// `-A` on the server.
    pub affinity: Option<u32>,
    /// `-i` on the server.
    pub interval: Duration,
    pub timeouts: Timeouts,
    /// Time a new connection has to send its 37-byte cookie.
    pub cookie_timeout: Duration,
    /// Server-side send path (when the client sends no wish).
    pub send_path: SendPath,
    /// `--allow-tune`: a client may ask this server to move its NIC's queue IRQs for a test
    /// ([`crate::tune`]); `None` refuses such requests.
    pub tune: Option<TuneConfig>,
    /// iperf3's `--bind-dev` (the TCP listener), `--cntl-ka` (every accepted connection, the
    /// control one included) and `--snd-timeout` (TCP data sockets) on the server.
    pub extras: crate::Extras,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            bind: None,
            port: 5201,
            family: Family::Any,
            one_off: false,
            limits: Limits::default(),
            cpus: None,
            affinity: None,
            interval: Duration::from_secs(1),
            timeouts: Timeouts::default(),
            cookie_timeout: Duration::from_secs(10),
            send_path: SendPath::Copy,
            tune: None,
            extras: crate::Extras::default(),
        }
    }
}

/// Makes one reporter per test.
pub type ReporterFactory = Arc<dyn Fn(&TestInfo) -> Box<dyn Reporter> + Send + Sync>;

/// What a reporter factory knows about a new test.
#[derive(Debug, Clone)]
pub struct TestInfo {
    /// 1, 2, 3... in order of control connections.
    pub number: u64,
    pub peer: SocketAddr,
}

/// A data connection handed to its test.
struct Incoming {
    seq: u64,
    stream: TcpStream,
}

#[derive(Default)]
struct Registry {
    tests: Mutex<HashMap<Cookie, Option<Sender<Incoming>>>>,
    running: AtomicUsize,
    threads: AtomicUsize,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Cookie, Option<Sender<Incoming>>>> {
        self.tests.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Counts of what happened, for the caller and for tests.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub tests_completed: AtomicU64,
    pub tests_failed: AtomicU64,
    pub tests_refused: AtomicU64,
    pub connections_dropped: AtomicU64,
}

struct Ctx {
    cfg: ServerConfig,
    /// The TCP listener's address; UDP streams bind the same address and port.
    local_addr: SocketAddr,
    /// UDP stream setup carries no cookie: one test at a time.
    udp_setup: Mutex<()>,
    registry: Registry,
    factory: ReporterFactory,
    stats: Arc<ServerStats>,
    done_tx: Mutex<Sender<()>>,
    /// The one tune change this server may hold (`--allow-tune`).
    tune_slot: TuneSlot,
}

/// A bound server, ready to [`Server::serve`].
pub struct Server {
    listener: TcpListener,
    cfg: ServerConfig,
    stop: Arc<AtomicBool>,
    stats: Arc<ServerStats>,
}

/// Stops a serving [`Server`] from another thread.
#[derive(Debug, Clone)]
pub struct Stopper(Arc<AtomicBool>);

impl Stopper {
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A server running on its own thread (`--loopback`, tests).
pub struct ServerHandle {
    pub addr: SocketAddr,
    pub stats: Arc<ServerStats>,
    stopper: Stopper,
    thread: Option<std::thread::JoinHandle<Result<(), EngineError>>>,
}

impl ServerHandle {
    /// Stop accepting and wait for the acceptor to return.
    pub fn stop(mut self) -> Result<(), EngineError> {
        self.stopper.stop();
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(EngineError::Peer("server thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn listen_socket(addr: SocketAddr, dev: Option<&str>, mptcp: bool) -> std::io::Result<TcpListener> {
    let proto = if mptcp {
        SockProto::MPTCP
    } else {
        SockProto::TCP
    };
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(proto))?;
    if let Some(dev) = dev {
        s.bind_device(Some(dev.as_bytes()))?;
    }
    s.set_reuse_address(true)?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&SockAddr::from(addr))?;
    s.listen(1024)?;
    Ok(s.into())
}

/// A UDP socket on the server's address and port, shareable with the stream sockets
/// already connected there (SO_REUSEADDR, as iperf3).
fn bind_udp(addr: SocketAddr, window: Option<u32>) -> std::io::Result<std::net::UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(SockProto::UDP))?;
    s.set_reuse_address(true)?;
    crate::net::set_udp_buffers(&s, window);
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&SockAddr::from(addr))?;
    Ok(s.into())
}

impl Server {
    /// Bind the listening socket (dual-stack `[::]` unless `-B` or `-4`).
    pub fn bind(cfg: ServerConfig) -> Result<Server, EngineError> {
        let candidates: Vec<SocketAddr> = match (cfg.bind, cfg.family) {
            (Some(ip), _) => vec![SocketAddr::new(ip, cfg.port)],
            (None, Family::V4) => vec![SocketAddr::new(
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                cfg.port,
            )],
            (None, Family::V6) => {
                vec![SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), cfg.port)]
            }
            (None, Family::Any) => vec![
                SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), cfg.port),
                SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), cfg.port),
            ],
        };
        let mut last = None;
        for a in candidates {
            match listen_socket(a, cfg.extras.bind_dev.as_deref(), cfg.extras.mptcp) {
                Ok(l) => {
                    l.set_nonblocking(true)
                        .map_err(|e| EngineError::Listen { addr: a, source: e })?;
                    if let Some(c) = cfg.cpus.as_ref() {
                        crate::client::check_cpus(c, "server")?;
                    }
                    if let Some(a) = cfg.affinity {
                        crate::client::check_cpus(&[a], "server")?;
                    }
                    return Ok(Server {
                        listener: l,
                        cfg,
                        stop: Arc::new(AtomicBool::new(false)),
                        stats: Arc::new(ServerStats::default()),
                    });
                }
                Err(e) => last = Some(EngineError::Listen { addr: a, source: e }),
            }
        }
        Err(last.unwrap_or(EngineError::Config("no address to listen on".into())))
    }

    pub fn local_addr(&self) -> Result<SocketAddr, EngineError> {
        self.listener
            .local_addr()
            .map_err(|e| EngineError::io("listening socket address", e))
    }

    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.stop))
    }

    /// The flag that stops [`Server::serve`] when set (for a signal handler).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    pub fn stats(&self) -> Arc<ServerStats> {
        Arc::clone(&self.stats)
    }

    /// Serve on a new thread.
    pub fn spawn(self, factory: ReporterFactory) -> Result<ServerHandle, EngineError> {
        let addr = self.local_addr()?;
        let stopper = self.stopper();
        let stats = self.stats();
        let thread = std::thread::Builder::new()
            .name("ws-acceptor".into())
            .spawn(move || self.serve(factory))
            .map_err(|e| EngineError::io("starting the server thread", e))?;
        Ok(ServerHandle {
            addr,
            stats,
            stopper,
            thread: Some(thread),
        })
    }

    /// Accept and serve until stopped (or, with `one_off`, until the first test ends).
    pub fn serve(self, factory: ReporterFactory) -> Result<(), EngineError> {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let local_addr = self.local_addr()?;
        let ctx = Arc::new(Ctx {
            cfg: self.cfg.clone(),
            local_addr,
            udp_setup: Mutex::new(()),
            registry: Registry::default(),
            factory,
            stats: Arc::clone(&self.stats),
            done_tx: Mutex::new(done_tx),
            tune_slot: TuneSlot::default(),
        });
        let r = acceptor(&self.listener, &ctx, &self.stop, &done_rx);
        // Stopping (or failing): a tune change still held by a running test goes back now.
        ctx.tune_slot.close(ctx.cfg.tune.as_ref());
        r
    }
}

struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    seq: u64,
    buf: [u8; COOKIE_LEN],
    got: usize,
    deadline: Instant,
}

fn deny_and_close(mut s: TcpStream) {
    let _ = s.set_nonblocking(true);
    let _ = s.write(&[State::AccessDenied.to_byte()]);
}

fn acceptor(
    listener: &TcpListener,
    ctx: &Arc<Ctx>,
    stop: &AtomicBool,
    done_rx: &Receiver<()>,
) -> Result<(), EngineError> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut seq: u64 = 0;
    let mut tests_started: u64 = 0;
    let cfg = &ctx.cfg;
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        if cfg.one_off && tests_started > 0 && done_rx.try_recv().is_ok() {
            return Ok(());
        }
        let now = Instant::now();
        pending.retain(|p| {
            let alive = p.deadline > now;
            if !alive {
                ctx.stats
                    .connections_dropped
                    .fetch_add(1, Ordering::Relaxed);
            }
            alive
        });
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(pending.len() + 1);
        fds.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for p in &pending {
            fds.push(libc::pollfd {
                fd: p.stream.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let next_deadline = pending.iter().map(|p| p.deadline).min();
        let timeout_ms = next_deadline
            .map_or(100, |d| {
                d.saturating_duration_since(now).as_millis().min(100) as i32
            })
            .max(1);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the whole call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(EngineError::io("poll on the listening socket", e));
        }
        // Pending connections first, in accept order.
        let mut finished: Vec<usize> = Vec::new();
        for (i, p) in pending.iter_mut().enumerate() {
            let re = fds[i + 1].revents;
            if re == 0 {
                continue;
            }
            match p.stream.read(&mut p.buf[p.got..]) {
                Ok(0) => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    finished.push(i);
                }
                Ok(k) => {
                    p.got += k;
                    if p.got == COOKIE_LEN {
                        finished.push(i);
                    }
                }
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    finished.push(i);
                }
            }
        }
        for &i in finished.iter().rev() {
            let p = pending.remove(i);
            if p.got < COOKIE_LEN {
                continue;
            }
            let cookie = match Cookie::parse(&p.buf) {
                Ok(c) => c,
                Err(_) => {
                    ctx.stats
                        .connections_dropped
                        .fetch_add(1, Ordering::Relaxed);
                    deny_and_close(p.stream);
                    continue;
                }
            };
            let _ = p.stream.set_nonblocking(false);
            let mut tests = ctx.registry.lock();
            match tests.get(&cookie) {
                Some(Some(tx)) => {
                    // A data connection of a test that is collecting its streams.
                    if tx
                        .send(Incoming {
                            seq: p.seq,
                            stream: p.stream,
                        })
                        .is_err()
                    {
                        tests.remove(&cookie);
                    }
                }
                Some(None) => {
                    // A test with this cookie exists but takes no streams now (or a duplicate
                    // control connection).
                    drop(tests);
                    deny_and_close(p.stream);
                }
                None => {
                    let threads = ctx.registry.threads.load(Ordering::Acquire);
                    if threads >= cfg.limits.max_tests * 2 + 16 {
                        drop(tests);
                        ctx.stats.tests_refused.fetch_add(1, Ordering::Relaxed);
                        deny_and_close(p.stream);
                        continue;
                    }
                    tests.insert(cookie, None);
                    drop(tests);
                    tests_started += 1;
                    ctx.registry.threads.fetch_add(1, Ordering::AcqRel);
                    let ctx2 = Arc::clone(ctx);
                    let number = tests_started;
                    let spawned = std::thread::Builder::new()
                        .name(format!("ws-test-{number}"))
                        .spawn(move || {
                            serve_test(p.stream, p.peer, cookie, number, &ctx2);
                            ctx2.registry.lock().remove(&cookie);
                            ctx2.registry.threads.fetch_sub(1, Ordering::AcqRel);
                            if let Ok(tx) = ctx2.done_tx.lock() {
                                let _ = tx.send(());
                            }
                        });
                    if spawned.is_err() {
                        ctx.registry.lock().remove(&cookie);
                        ctx.registry.threads.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            }
        }
        // New connections.
        if fds[0].revents != 0 {
            loop {
                match listener.accept() {
                    Ok((s, peer)) => {
                        seq += 1;
                        if pending.len() >= cfg.limits.max_pending {
                            ctx.stats
                                .connections_dropped
                                .fetch_add(1, Ordering::Relaxed);
                            deny_and_close(s);
                            continue;
                        }
                        if s.set_nonblocking(true).is_err() {
                            continue;
                        }
                        let _ = cfg.extras.keepalive(&s);
                        pending.push(Pending {
                            stream: s,
                            peer,
                            seq,
                            buf: [0; COOKIE_LEN],
                            got: 0,
                            deadline: Instant::now() + cfg.cookie_timeout,
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    // EMFILE and friends: keep serving; the pending ones will free descriptors.
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                }
            }
        }
    }
}

/// A test admitted to run; releases its slot when dropped.
struct Slot<'a>(&'a Registry);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

fn try_slot<'a>(reg: &'a Registry, max: usize) -> Option<Slot<'a>> {
    let mut cur = reg.running.load(Ordering::Acquire);
    loop {
        if cur >= max {
            return None;
        }
        match reg
            .running
            .compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return Some(Slot(reg)),
            Err(c) => cur = c,
        }
    }
}

fn decline(i_errno: i32, detail: impl Into<String>) -> Decline {
    Decline::Error {
        i_errno,
        errno: 0,
        detail: detail.into(),
    }
}

/// Check a client's parameters against what this server accepts.
fn check_params(p: &TestParams, cfg: &ServerConfig) -> Result<(), Decline> {
    let l = &cfg.limits;
    match p.transport {
        Transport::Tcp => {}
        Transport::Udp => {
            let min = dp::udp::header_len(p.udp_counters_64bit) as u32;
            if let Some(len) = p.len {
                if len < min || len as usize > dp::udp::MAX_DATAGRAM_LEN {
                    return Err(decline(
                        errno::IEUDPBLOCKSIZE,
                        format!(
                            "a UDP datagram must be {min}..={} bytes, the client asked for {len}",
                            dp::udp::MAX_DATAGRAM_LEN
                        ),
                    ));
                }
            }
        }
        Transport::Sctp => {
            return Err(decline(
                errno::IENOSCTP,
                "wirespeed does not run SCTP tests",
            ))
        }
    }
    if p.parallel > l.max_streams {
        return Err(decline(
            errno::IENUMSTREAMS,
            format!(
                "this server allows at most {} streams per test (-P), the client asked for {}",
                l.max_streams, p.parallel
            ),
        ));
    }
    let dur = u64::from(p.time) + u64::from(p.omit);
    if Duration::from_secs(dur) > l.max_duration {
        return Err(decline(
            errno::IEMAXSERVERTESTDURATIONEXCEEDED
                .min(errno::IEDURATION.max(errno::IEMAXSERVERTESTDURATIONEXCEEDED)),
            format!(
                "this server allows tests of at most {} s, the client asked for {dur} s",
                l.max_duration.as_secs()
            ),
        ));
    }
    if let Some(len) = p.len {
        if len > l.max_block {
            return Err(decline(
                errno::IEBLOCKSIZE,
                format!(
                    "this server allows blocks of at most {} bytes, the client asked for {len}",
                    l.max_block
                ),
            ));
        }
    }
    if p.num == 0 && p.blockcount == 0 && p.time == 0 {
        return Err(decline(
            errno::IERECVPARAMS,
            "the test has no end: time, bytes and blocks are all 0",
        ));
    }
    let mut wanted: Vec<u32> = Vec::new();
    if let Some(ext) = &p.wirespeed {
        if let Some(c) = &ext.server_cpus {
            if c.is_empty() {
                return Err(decline(errno::IEAFFINITY, "--server-cpus is empty"));
            }
            wanted.extend(c);
        }
    }
    wanted.extend(p.server_affinity);
    if !wanted.is_empty() {
        if let Err(e) = crate::client::check_cpus(&wanted, "server") {
            return Err(decline(errno::IEAFFINITY, e.to_string()));
        }
    }
    Ok(())
}

fn parse_path(s: Option<&str>) -> Option<SendPath> {
    match s? {
        "copy" => Some(SendPath::Copy),
        "sendfile" => Some(SendPath::Sendfile),
        "splice" => Some(SendPath::Splice),
        "msg_zerocopy" => Some(SendPath::MsgZerocopy),
        _ => None,
    }
}

/// One test, on its own thread.
fn serve_test(stream: TcpStream, peer: SocketAddr, cookie: Cookie, number: u64, ctx: &Ctx) {
    let mut reporter = (ctx.factory)(&TestInfo { number, peer });
    let mut t = ServerTest::new(stream, peer, cookie, number, ctx);
    let outcome = t.run(reporter.as_mut());
    if let Some(d) = &mut t.data {
        d.close();
    }
    // Whatever ended the test, its tune change goes back before anything else.
    t.release_tune();
    match outcome {
        Ok(()) => {
            ctx.stats.tests_completed.fetch_add(1, Ordering::Relaxed);
            if let Some(r) = t.result.take() {
                reporter.finish(&r);
            }
        }
        Err(msg) => {
            if t.refused {
                ctx.stats.tests_refused.fetch_add(1, Ordering::Relaxed);
            } else {
                ctx.stats.tests_failed.fetch_add(1, Ordering::Relaxed);
            }
            let r = t.partial_result(msg);
            reporter.finish(&r);
        }
    }
}

struct ServerTest<'a> {
    ctx: &'a Ctx,
    ctrl: Ctrl,
    peer: SocketAddr,
    cookie: Cookie,
    epoch: Instant,
    sess: ServerSession,
    params: Option<TestParams>,
    data: Option<DataPhase>,
    builder: Option<ResultBuilder>,
    timeline: Option<Timeline>,
    start: Option<Start>,
    cpu: Option<CpuMeter>,
    local_cpu: CpuPercent,
    final_time: Option<Duration>,
    running_since: Option<Duration>,
    result: Option<TestResult>,
    refused: bool,
    /// Where the work ran (issue 6); sent to a wirespeed client with the results.
    observer: crate::observe::TestObserver,
    /// 1, 2, 3... (names the holder of a tune change).
    number: u64,
    /// The client's tune request, applied (`--allow-tune`); reverted on release or drop.
    tune: Option<HeldTune<'a>>,
}

impl<'a> ServerTest<'a> {
    fn new(
        stream: TcpStream,
        peer: SocketAddr,
        cookie: Cookie,
        number: u64,
        ctx: &'a Ctx,
    ) -> ServerTest<'a> {
        let epoch = Instant::now();
        ServerTest {
            ctx,
            ctrl: Ctrl::new(stream),
            peer,
            cookie,
            epoch,
            sess: ServerSession::new(Duration::ZERO, cookie, ctx.cfg.timeouts),
            params: None,
            data: None,
            builder: None,
            timeline: None,
            start: None,
            cpu: None,
            local_cpu: CpuPercent::default(),
            final_time: None,
            running_since: None,
            result: None,
            refused: false,
            observer: Default::default(),
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
    fn apply_tune(&mut self, p: &TestParams) -> Result<(), Decline> {
        let Some(cpus) = p.wirespeed.as_ref().and_then(|e| e.irq_cpus.as_ref()) else {
            return Ok(());
        };
        let ctx = self.ctx;
        let Some(cfg) = ctx.cfg.tune.as_ref() else {
            return Err(decline(
                errno::IEACCESSDENIED,
                crate::tune::not_allowed(cpus).0,
            ));
        };
        let local = self.ctrl.stream().local_addr().ok().map(|a| a.ip());
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
            Err(r) => Err(decline(errno::IEACCESSDENIED, r.0)),
        }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn flush(&mut self) -> Result<(), String> {
        let out = self.sess.take_transmit();
        self.ctrl
            .send(&out)
            .map_err(|e| format!("writing to the control connection: {e}"))
    }

    fn refuse(&mut self, d: &Decline) -> String {
        self.refused = true;
        self.sess.refuse(d);
        let _ = self.flush();
        match d {
            Decline::AccessDenied => {
                "refused: the server is at its limit of concurrent tests".into()
            }
            Decline::Error { detail, .. } => format!("refused: {detail}"),
        }
    }

    /// Read the control connection until `deadline` and feed the session.
    fn pump(&mut self, deadline: Instant) -> Result<(), String> {
        let (outcome, bytes) = self
            .ctrl
            .read_until(deadline)
            .map_err(|e| format!("reading the control connection: {e}"))?;
        let now = self.epoch.elapsed();
        match outcome {
            ReadOutcome::Data(_) => self.sess.handle_input(now, bytes),
            ReadOutcome::Eof => self.sess.handle_eof(now),
            ReadOutcome::Timeout => {}
        }
        self.sess.handle_timeout(self.epoch.elapsed());
        Ok(())
    }

    fn run(&mut self, reporter: &mut dyn Reporter) -> Result<(), String> {
        self.flush()?;
        // Parameters.
        let params = loop {
            if let Some(ev) = self.sess.poll_event() {
                match ev {
                    ServerEvent::Params(p) => break *p,
                    ServerEvent::Failed(f) => return Err(format!("client {f}")),
                    ServerEvent::ClientTerminated => return Err("the client terminated".into()),
                    other => return Err(format!("unexpected event {other:?}")),
                }
            }
            let dl = self.epoch
                + self
                    .sess
                    .deadline()
                    .unwrap_or(self.now() + Duration::from_secs(1));
            self.pump(dl)?;
        };
        let is_ws = params.wirespeed.is_some();
        if let Err(d) = check_params(&params, &self.ctx.cfg) {
            return Err(self.refuse(&d));
        }
        let _slot = match try_slot(&self.ctx.registry, self.ctx.cfg.limits.max_tests) {
            Some(s) => s,
            None => {
                let d = if is_ws {
                    decline(
                        errno::IEACCESSDENIED,
                        format!(
                            "the server is running its maximum of {} tests; try again later",
                            self.ctx.cfg.limits.max_tests
                        ),
                    )
                } else {
                    Decline::AccessDenied
                };
                return Err(self.refuse(&d));
            }
        };
        self.params = Some(params.clone());
        if let Err(d) = self.apply_tune(&params) {
            return Err(self.refuse(&d));
        }

        // Data connections.
        let total = params.total_streams() as usize;
        if total > 512 {
            let _ = dp::sys::raise_fd_limit((total as u64) * 2 + 256);
        }
        let sockets = if params.transport == Transport::Udp {
            self.udp_streams(total, params.window)?
        } else {
            self.tcp_streams(total)?
        };

        // Ids and directions in the client's order.
        let parallel = params.parallel.max(1) as usize;
        let opts = dp::tcp::TcpOptions {
            window: params.window,
            mss: params.mss,
            nodelay: params.nodelay,
            congestion: params.congestion.clone(),
            fq_rate: params
                .fqrate
                .or(params.bandwidth)
                .filter(|&b| b > 0)
                .map(|b| b / 8),
        };
        let mut streams = Vec::with_capacity(total);
        for (i, socket) in sockets.into_iter().enumerate() {
            let send = match params.direction {
                Direction::ClientToServer => false,
                Direction::ServerToClient => true,
                Direction::Both => i >= parallel,
            };
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
        self.begin(&params, streams, reporter)?;
        let now = self.now();
        self.sess
            .streams_ready(now)
            .map_err(|e| format!("cannot start: {e}"))?;
        self.flush()?;
        self.running_since = Some(now);
        self.running(&params, reporter)
    }

    /// `CREATE_STREAMS`, then the TCP data connections the acceptor hands over, in the order
    /// the client opened them.
    fn tcp_streams(&mut self, total: usize) -> Result<Vec<DataSocket>, String> {
        let (tx, rx) = mpsc::channel::<Incoming>();
        self.ctx.registry.lock().insert(self.cookie, Some(tx));
        let now = self.now();
        self.sess
            .accept(now)
            .map_err(|e| format!("cannot accept: {e}"))?;
        self.flush()?;
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
            if let Some(ev) = self.sess.poll_event() {
                break Err(match ev {
                    ServerEvent::Failed(f) => format!("client {f}"),
                    ServerEvent::ClientTerminated => "the client terminated".into(),
                    other => format!("unexpected event {other:?} while waiting for streams"),
                });
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
        self.ctx.registry.lock().insert(self.cookie, None);
        drop(rx);
        result?;
        incoming.sort_by_key(|i| i.seq);
        incoming.truncate(total);
        Ok(incoming
            .into_iter()
            .map(|i| DataSocket::Tcp(i.stream))
            .collect())
    }

    /// UDP streams as iperf3 makes them: a UDP socket bound to the server's port receives the
    /// client's 4-byte word, is connected to the client's address, and answers; a fresh socket
    /// is bound for the next stream. UDP words carry no cookie, so one test at a time runs
    /// this (a server-wide lock), and only words from the control connection's host count.
    fn udp_streams(
        &mut self,
        total: usize,
        window: Option<u32>,
    ) -> Result<Vec<DataSocket>, String> {
        let ctx = self.ctx;
        let _one_at_a_time = ctx.udp_setup.lock().unwrap_or_else(|p| p.into_inner());
        let local = ctx.local_addr;
        let mut listener = match bind_udp(local, window) {
            Ok(l) => l,
            Err(e) => {
                return Err(self.refuse(&decline(
                    errno::IELISTEN,
                    format!("cannot listen for UDP streams on {local}: {e}"),
                )))
            }
        };
        let now = self.now();
        self.sess
            .accept(now)
            .map_err(|e| format!("cannot accept: {e}"))?;
        self.flush()?;
        let want_ip = crate::net::canonical_ip(self.peer.ip());
        let deadline = Instant::now() + ctx.cfg.timeouts.streams;
        let mut out = Vec::with_capacity(total);
        let mut buf = [0u8; 64];
        while out.len() < total {
            if Instant::now() >= deadline {
                return Err(format!(
                    "only {} of {total} UDP streams arrived within {:.0} s",
                    out.len(),
                    ctx.cfg.timeouts.streams.as_secs_f64()
                ));
            }
            if let Some(ev) = self.sess.poll_event() {
                return Err(match ev {
                    ServerEvent::Failed(f) => format!("client {f}"),
                    ServerEvent::ClientTerminated => "the client terminated".into(),
                    other => format!("unexpected event {other:?} while waiting for UDP streams"),
                });
            }
            let _ = listener.set_read_timeout(Some(Duration::from_millis(20)));
            let (n, from) = match listener.recv_from(&mut buf) {
                Ok(x) => x,
                Err(_) => {
                    self.pump(Instant::now() + Duration::from_millis(1))?;
                    continue;
                }
            };
            if crate::net::canonical_ip(from.ip()) != want_ip
                || wirespeed_protocol::udp::check_connect_msg(&buf[..n]).is_err()
            {
                continue; // a stray datagram
            }
            // The next stream's socket must exist before this one answers.
            let next =
                bind_udp(local, window).map_err(|e| format!("binding UDP on {local}: {e}"))?;
            let conn = std::mem::replace(&mut listener, next);
            conn.connect(from)
                .map_err(|e| format!("connecting UDP stream to {from}: {e}"))?;
            let _ = conn.set_read_timeout(None);
            conn.send(&wirespeed_protocol::udp::CONNECT_REPLY)
                .map_err(|e| format!("answering UDP stream {from}: {e}"))?;
            out.push(DataSocket::Udp(conn));
        }
        Ok(out)
    }

    fn begin(
        &mut self,
        p: &TestParams,
        streams: Vec<DataStream>,
        reporter: &mut dyn Reporter,
    ) -> Result<(), String> {
        let cfg = &self.ctx.cfg;
        let refs: Vec<(u32, &DataSocket)> = streams.iter().map(|s| (s.id, &s.socket)).collect();
        let connected = assemble::connected(&refs);
        let (snd, rcv) = streams
            .first()
            .and_then(|s| dp::tcp::socket_buffers(&s.socket).ok())
            .unwrap_or((0, 0));
        let block = p.len.unwrap_or(if p.transport == Transport::Udp {
            crate::client::DEFAULT_UDP_BLOCK
        } else {
            DEFAULT_TCP_BLOCK
        });
        let start = Start {
            connected,
            version: format!("wirespeed {VERSION}"),
            system_info: crate::sysinfo::system_info(),
            timestamp: Some(crate::sysinfo::timestamp_now()),
            connecting_to: None,
            accepted_connection: Some(HostPort {
                host: crate::net::canonical_ip(self.peer.ip()).to_string(),
                port: self.peer.port(),
            }),
            cookie: Some(self.cookie.as_str().to_string()),
            tcp_mss: p.mss.map(u64::from),
            tcp_mss_default: if p.mss.is_none() {
                crate::net::mss_of(self.ctrl.stream()).map(u64::from)
            } else {
                None
            },
            target_bitrate: Some(p.bandwidth.unwrap_or(0)),
            fq_rate: None,
            sock_bufsize: Some(u64::from(p.window.unwrap_or(0))),
            sndbuf_actual: Some(u64::from(snd)),
            rcvbuf_actual: Some(u64::from(rcv)),
            test_start: Some(assemble::test_start(
                if p.transport == Transport::Udp {
                    "UDP"
                } else {
                    "TCP"
                },
                p.parallel,
                u64::from(block),
                p.omit,
                p.time,
                p.num,
                p.blockcount,
                p.direction == Direction::ServerToClient,
                p.direction == Direction::Both,
                cfg.interval.as_secs_f64(),
            )),
            extra: Default::default(),
        };
        reporter.start(&start);
        self.start = Some(start);
        let udp = p.transport == Transport::Udp;
        let mut b = ResultBuilder::new(
            if udp { Protocol::Udp } else { Protocol::Tcp },
            Role::Server,
            p.direction == Direction::Both,
            cfg.interval.as_secs_f64(),
        );
        for s in &streams {
            b.add_stream(s.id, s.send).map_err(|e| e.to_string())?;
        }
        self.builder = Some(b);
        let ext = p.wirespeed.as_ref();
        let placement = if let Some(c) = ext.and_then(|e| e.server_cpus.clone()) {
            Placement::Cpus(c)
        } else if let Some(a) = p.server_affinity {
            Placement::Affinity(a)
        } else if let Some(c) = &cfg.cpus {
            Placement::Cpus(c.clone())
        } else if let Some(a) = cfg.affinity {
            Placement::Affinity(a)
        } else {
            Placement::Float {
                max_workers: usable_cpus(),
            }
        };
        let send_path = parse_path(ext.and_then(|e| e.send_path.as_deref()))
            .or_else(|| p.zerocopy.map(|_| SendPath::Sendfile))
            .unwrap_or(cfg.send_path);
        let recv_path =
            if p.skip_rx_copy || ext.and_then(|e| e.recv_path.as_deref()) == Some("skip") {
                RecvPath::SkipCopy
            } else {
                RecvPath::Copy
            };
        // As iperf3, a sending server stops at -n bytes / -k blocks (the client still ends the
        // test with TEST_END once it has received them).
        let dcfg = DataConfig {
            block_len: block as usize,
            send_path,
            recv_path,
            placement,
            budget: if p.omit == 0 && p.direction != Direction::ClientToServer {
                if p.num > 0 {
                    Some(Arc::new(wirespeed_datapath::Budget::bytes(p.num)))
                } else if p.blockcount > 0 {
                    Some(Arc::new(wirespeed_datapath::Budget::blocks(p.blockcount)))
                } else {
                    None
                }
            } else {
                None
            },
            udp: udp.then(|| UdpConfig {
                datagram_len: block as usize,
                counters_64bit: p.udp_counters_64bit,
                rate_bps: p.bandwidth.unwrap_or(0),
                send_path: dp::udp::UdpSendPath::Gso,
                recv_path: dp::udp::UdpRecvPath::Gro,
                fq_rate: p.fqrate.filter(|&r| r > 0).map(|r| r / 8),
            }),
        };
        self.observer = crate::observe::TestObserver::start(
            p.direction,
            false,
            self.peer.ip(),
            self.ctrl.stream().local_addr().ok().map(|a| a.ip()),
        );
        self.cpu = Some(CpuMeter::start());
        self.data = Some(DataPhase::start(streams, &dcfg).map_err(|e| e.to_string())?);
        self.timeline = Some(Timeline::new(
            self.now(),
            cfg.interval,
            Duration::from_secs(u64::from(p.omit)),
        ));
        Ok(())
    }

    fn ticks(&mut self, reporter: &mut dyn Reporter) {
        let now = self.now();
        self.ticks_at(reporter, now);
    }

    /// Report every interval due at `now`.
    fn ticks_at(&mut self, reporter: &mut dyn Reporter, now: Duration) {
        let show = self.ctx.cfg.interval > Duration::ZERO;
        let (Some(tl), Some(data), Some(b)) =
            (&mut self.timeline, &mut self.data, &mut self.builder)
        else {
            return;
        };
        while let Some(t) = tl.due(now) {
            let samples = data.samples(true);
            if t.omit_boundary {
                data.mark_omit_end();
            }
            self.observer.tick(t.start, t.end);
            if let Ok(Some(iv)) = b.interval(t.start, t.end, t.omitted, &samples) {
                if show {
                    reporter.interval(iv);
                }
            }
        }
    }

    fn final_tick(&mut self, reporter: &mut dyn Reporter, end: Duration) {
        let now = end.min(self.now());
        self.ticks_at(reporter, now);
        self.final_time = Some(now);
        let show = self.ctx.cfg.interval > Duration::ZERO;
        let (Some(tl), Some(data), Some(b)) =
            (&mut self.timeline, &mut self.data, &mut self.builder)
        else {
            return;
        };
        let samples = data.samples(false);
        if let Some(t) = tl.finish(now) {
            self.observer.tick(t.start, t.end);
            if let Ok(Some(iv)) = b.interval(t.start, t.end, t.omitted, &samples) {
                if show {
                    reporter.interval(iv);
                }
            }
        }
        let tcp = crate::observe::tcp_limits(&data.sender_tcp_infos());
        self.observer
            .close(&assemble::worker_infos(data.summaries()), tcp);
    }

    fn measured(&self) -> f64 {
        match (&self.timeline, self.final_time) {
            (Some(tl), Some(t)) => tl.measured(t),
            _ => 0.0,
        }
    }

    fn running(&mut self, p: &TestParams, reporter: &mut dyn Reporter) -> Result<(), String> {
        let limit = self.ctx.cfg.limits.max_duration;
        let timed = u64::from(p.time) + u64::from(p.omit);
        let stop_after = if p.time > 0 {
            Duration::from_secs(timed + 30).min(limit + Duration::from_secs(5))
        } else {
            limit
        };
        let drain = if p.wirespeed.as_ref().is_some_and(|e| e.drain) {
            Drain::UntilEof {
                within: Duration::from_secs(5),
            }
        } else {
            Drain::UntilQuiet {
                quiet: Duration::from_millis(100),
                max: Duration::from_secs(2),
            }
        };
        let mut client_results: Option<TestResults> = None;
        loop {
            while let Some(ev) = self.sess.poll_event() {
                match ev {
                    ServerEvent::TestEnd => {
                        let mut end = self.now();
                        if let Some(d) = &mut self.data {
                            d.stop_senders();
                            if let Some(l) = d.finish_receivers(drain) {
                                end = end.max(l.saturating_duration_since(self.epoch));
                            }
                        }
                        self.final_tick(reporter, end);
                        // The data phase is over: the IRQs go back before the results (a
                        // sweep's next test may ask for another layout right after).
                        self.release_tune();
                        let now = self.now();
                        self.sess
                            .request_results(now)
                            .map_err(|e| format!("cannot ask for results: {e}"))?;
                        self.flush()?;
                    }
                    ServerEvent::PeerResults(r) => {
                        let mut result = self.build_result(Some(&r), reporter);
                        let local = self.local_results(p, &mut result, reporter);
                        client_results = Some(*r);
                        let now = self.now();
                        self.sess
                            .send_results(now, &local)
                            .map_err(|e| format!("cannot send results: {e}"))?;
                        self.flush()?;
                        self.result = Some(result);
                    }
                    ServerEvent::Finished => {
                        let _ = client_results;
                        return Ok(());
                    }
                    ServerEvent::ClientTerminated => {
                        return Err("the client terminated the test".into())
                    }
                    ServerEvent::Failed(f) => return Err(format!("client {f}")),
                    ServerEvent::Params(_) => return Err("unexpected parameters".into()),
                }
            }
            self.ticks(reporter);
            if let Some(since) = self.running_since {
                if self.final_time.is_none() && self.now() > since + stop_after {
                    self.sess.terminate();
                    let _ = self.flush();
                    return Err(format!(
                        "the test ran past its limit of {} s and was terminated",
                        stop_after.as_secs()
                    ));
                }
            }
            let now = self.now();
            let mut wake = self.sess.deadline().unwrap_or(now + Duration::from_secs(1));
            if self.final_time.is_none() {
                if let Some(t) = self.timeline.as_ref().and_then(Timeline::next_event) {
                    wake = wake.min(t);
                }
            }
            let dl = self.epoch + wake.max(now + Duration::from_millis(1));
            self.pump(dl)?;
        }
    }

    fn local_results(
        &mut self,
        p: &TestParams,
        result: &mut TestResult,
        reporter: &mut dyn Reporter,
    ) -> TestResults {
        let Some(data) = &self.data else {
            return TestResults::default();
        };
        let mut ext = assemble::results_ext(data.summaries());
        ext.observation = self.observer.value();
        ext.irq_move = self
            .tune
            .as_ref()
            .and_then(|t| serde_json::to_value(t.report()).ok());
        let mut r = assemble::local_results(
            data,
            self.local_cpu,
            self.measured(),
            data.congestion(),
            Some(ext),
        );
        if p.get_server_output {
            match reporter.captured_text() {
                Some(t) => {
                    let mut text = t;
                    let mut buf = Vec::new();
                    if wirespeed_report::text::TextRenderer::new(
                        wirespeed_report::text::TextContext::from_result(result),
                        wirespeed_report::text::TextOptions {
                            done_line: false,
                            ..Default::default()
                        },
                    )
                    .end(&mut buf, result)
                    .is_ok()
                        && crate::output::write_where(&mut buf, result).is_ok()
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

    fn build_result(
        &mut self,
        peer: Option<&TestResults>,
        _reporter: &mut dyn Reporter,
    ) -> TestResult {
        if let Some(data) = &self.data {
            self.local_cpu = self
                .cpu
                .map(|m| m.finish(data.worker_cpu()))
                .unwrap_or_default();
        }
        let mut r = TestResult {
            start: self.start.clone().unwrap_or_default(),
            title: self.params.as_ref().and_then(|p| p.title.clone()),
            extra_data: self.params.as_ref().and_then(|p| p.extra_data.clone()),
            ..TestResult::default()
        };
        let measured = self.measured();
        let show = self.ctx.cfg.interval > Duration::ZERO;
        let client_version = self.params.as_ref().and_then(|p| p.client_version.clone());
        let is_ws = self.sess.peer_is_wirespeed();
        if let Some(b) = &mut self.builder {
            let (end, mut ext) = assemble::end_sections(
                b,
                &assemble::EndSide {
                    measured,
                    cpu: self.local_cpu,
                    data: self.data.as_ref(),
                    peer,
                    peer_client_version: client_version.as_deref(),
                    peer_is_wirespeed: is_ws,
                    observer: &self.observer,
                },
            );
            r.end = end;
            if let Some(m) = self
                .tune
                .as_ref()
                .and_then(|t| serde_json::to_value(t.report()).ok())
            {
                ext.extra.insert("irq_move".into(), m);
            }
            r.wirespeed = Some(ext);
            r.intervals = if show {
                b.intervals().to_vec()
            } else {
                Vec::new()
            };
        }
        r
    }

    fn partial_result(&mut self, msg: String) -> TestResult {
        let mut r = TestResult {
            start: self.start.clone().unwrap_or_else(|| Start {
                version: format!("wirespeed {VERSION}"),
                system_info: crate::sysinfo::system_info(),
                timestamp: Some(crate::sysinfo::timestamp_now()),
                accepted_connection: Some(HostPort {
                    host: crate::net::canonical_ip(self.peer.ip()).to_string(),
                    port: self.peer.port(),
                }),
                ..Start::default()
            }),
            error: Some(msg),
            ..TestResult::default()
        };
        if let Some(b) = &self.builder {
            if self.ctx.cfg.interval > Duration::ZERO {
                r.intervals = b.intervals().to_vec();
            }
        }
        r
    }
}
