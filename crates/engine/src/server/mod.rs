//! The server: many tests at once, from many clients, on one port.
//!
//! In three parts:
//! - [`acceptor`]: one thread owns the listening socket and every connection whose cookie has
//!   not arrived yet, and hands each complete one to its test (a data connection) or starts a
//!   new test on its own thread (a control connection).
//! - [`admission`]: whether a test runs: its parameters against the [`Limits`], a plugged-in
//!   [`admission::AdmissionPolicy`], a place among the concurrent tests; every "no" is an
//!   [`admission::AdmissionError`] the client understands (`ACCESS_DENIED` toward iperf3
//!   clients when busy, `SERVER_ERROR` with iperf3's `i_errno` otherwise, wirespeed's own
//!   words toward wirespeed clients).
//! - [`test`]: the running test, which drives a `ServerSession` over the control connection
//!   and ends with a [`test::TestError`] or its results.
//!
//! No single client can stop the server: every failure ends only its own test.

pub mod acceptor;
pub mod admission;
pub mod test;
mod udp_setup;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use wirespeed_datapath::SendPath;
use wirespeed_host::CpuSet;
use wirespeed_protocol::{Cookie, Timeouts};

use crate::net::Family;
use crate::output::Reporter;
use crate::tune::{TuneConfig, TuneSlot};
use crate::EngineError;

pub use admission::{AdmissionError, AdmissionHook, AdmissionPolicy};
pub use test::TestError;

/// What one server accepts.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Tests running at the same time (counted once, by the guard: its server-wide `tests`).
    pub max_tests: usize,
    /// `-P` a client may ask for.
    pub max_streams: u32,
    /// Longest test (`-t` + `-O`); `-n`/`-k` tests are stopped at this age.
    pub max_duration: Duration,
    /// Largest block (`-l`) a client may ask for.
    pub max_block: u32,
    /// Connections whose parameters have not been read and checked yet (server-wide).
    pub max_pending: usize,
    /// Streams of all running tests together (server-wide).
    pub max_total_streams: u32,
    /// Bytes of control messages received on open control connections, every phase
    /// (server-wide).
    pub max_control_bytes: u64,
    /// Bytes of data buffers (blocks and read buffers of every worker) all running tests
    /// hold together (server-wide): the memory budget (`--max-memory`).
    pub max_memory: u64,
    /// The same, per client address (an IPv4 address or an IPv6 /64), plus its tests.
    pub per_peer: wirespeed_guard::PeerLimits,
    /// IPv6 prefixes whose /64s share their per-address limits (`--ipv6-prefix-shares`).
    pub prefixes: Vec<wirespeed_guard::PrefixShare>,
}

impl Default for Limits {
    fn default() -> Limits {
        let g = wirespeed_guard::Limits::default();
        Limits {
            max_tests: 64,
            max_streams: 4096,
            max_duration: Duration::from_secs(86_400),
            max_block: 16 * 1024 * 1024,
            max_pending: g.server.pending as usize,
            max_total_streams: g.server.streams,
            max_control_bytes: g.server.control_bytes,
            max_memory: g.server.memory,
            per_peer: g.peer,
            prefixes: g.prefixes,
        }
    }
}

impl Limits {
    /// The guard's limits: these, and the address lists.
    pub fn guard(&self, addrs: &wirespeed_guard::AddrPolicy) -> wirespeed_guard::Limits {
        let sat = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        wirespeed_guard::Limits {
            peer: self.per_peer,
            server: wirespeed_guard::ServerLimits {
                pending: sat(self.max_pending),
                tests: sat(self.max_tests),
                streams: self.max_total_streams,
                control_bytes: self.max_control_bytes,
                memory: self.max_memory,
            },
            addrs: addrs.clone(),
            prefixes: self.prefixes.clone(),
        }
    }
}

/// `--server-bitrate-limit RATE[/SECS]`: a test whose data rate, averaged over `window`,
/// is above `bits_per_second` is ended (iperf3's `IETOTALRATE`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitrateLimit {
    pub bits_per_second: u64,
    pub window: Duration,
}

/// Where the server's log lines go (refusals, with the address).
#[derive(Clone)]
pub struct LogHook(pub Arc<dyn Fn(&str) + Send + Sync>);

impl LogHook {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> LogHook {
        LogHook(Arc::new(f))
    }
}

impl std::fmt::Debug for LogHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogHook")
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
    pub cpus: Option<CpuSet>,
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
    /// A policy asked about every test after the limits ([`admission::AdmissionPolicy`]).
    pub admission: Option<AdmissionHook>,
    /// Observe where the work ran at this end; `None`: no observation.
    pub observe: Option<crate::hooks::ObserveHook>,
    /// iperf3's `--bind-dev` (the TCP listener), `--cntl-ka` (every accepted connection, the
    /// control one included) and `--snd-timeout` (TCP data sockets) on the server.
    pub extras: crate::Extras,
    /// `--allow` / `--deny`: who may connect at all.
    pub addrs: wirespeed_guard::AddrPolicy,
    /// `--rsa-private-key-path` + `--authorized-users-path`: iperf3's RSA authentication.
    pub auth: Option<Arc<wirespeed_protocol::auth::ServerAuth>>,
    /// `--psk FILE`: only wirespeed clients holding the key.
    pub psk: Option<wirespeed_protocol::psk::Psk>,
    /// `--time-skew-threshold`, seconds (for RSA tokens and PSK tags).
    pub skew_threshold: u32,
    /// `--rcv-timeout`: a test whose server side receives and gets no data for this long
    /// ends (iperf3's `IENOMSG`).
    pub rcv_timeout: Duration,
    /// `--idle-timeout`: a running test that moves no data and sends no control message for
    /// this long ends; `None`: never.
    pub idle_timeout: Option<Duration>,
    /// `--server-bitrate-limit`.
    pub bitrate_limit: Option<BitrateLimit>,
    /// Where refusals are logged (one line each, with the address); `None`: nowhere.
    pub log: Option<LogHook>,
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
            admission: None,
            observe: None,
            extras: crate::Extras::default(),
            addrs: wirespeed_guard::AddrPolicy::default(),
            auth: None,
            psk: None,
            skew_threshold: wirespeed_protocol::auth::DEFAULT_SKEW_THRESHOLD,
            rcv_timeout: Duration::from_secs(120),
            idle_timeout: Some(Duration::from_secs(300)),
            bitrate_limit: None,
            log: None,
        }
    }
}

impl ServerConfig {
    /// The one handshake timeout (`--handshake-timeout`): a new connection's time to send its
    /// cookie, and the session timeouts derived from it ([`Timeouts::from_handshake`]); the
    /// results' timeout stays as it is.
    pub fn set_handshake_timeout(&mut self, handshake: Duration) {
        self.timeouts = Timeouts {
            results: self.timeouts.results,
            ..Timeouts::from_handshake(handshake)
        };
        self.cookie_timeout = handshake;
    }

    /// A server on 127.0.0.1 at a free port for the user's own tests (`client --loopback`):
    /// nobody else's, so no memory budget shared with others. Its intervals (`interval`) are
    /// not shown; they pace its live frames.
    pub fn loopback(interval: Duration) -> ServerConfig {
        let unlimited = Limits {
            max_memory: u64::MAX,
            per_peer: wirespeed_guard::PeerLimits {
                memory: u64::MAX,
                ..Limits::default().per_peer
            },
            ..Limits::default()
        };
        ServerConfig {
            bind: Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            port: 0,
            interval,
            limits: unlimited,
            ..ServerConfig::default()
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
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Cookie, Option<Sender<Incoming>>>> {
        self.tests.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Why the server said no, in a few fixed kinds (fit for a metric's label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// A server-wide limit or a per-test one (tests, streams, duration, rate, block size).
    Limit,
    /// A limit of the peer's own address (pending connections, tests, streams, control bytes).
    PerAddress,
    /// iperf3's RSA authentication or the pre-shared key failed.
    Auth,
    /// `--allow`/`--deny` (or a plugged-in policy) refused the address.
    Denied,
    /// The peer did not send its cookie or parameters in time.
    Timeout,
    /// Anything else: parameters this server cannot run (SCTP, CPUs, tune, UDP setup).
    Other,
}

impl RefusalReason {
    /// Every reason, in the order of [`ServerStats::refused`].
    pub const ALL: [RefusalReason; 6] = [
        RefusalReason::Limit,
        RefusalReason::PerAddress,
        RefusalReason::Auth,
        RefusalReason::Denied,
        RefusalReason::Timeout,
        RefusalReason::Other,
    ];

    /// The reason as a label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::Limit => "limit",
            RefusalReason::PerAddress => "per_address",
            RefusalReason::Auth => "auth",
            RefusalReason::Denied => "denied",
            RefusalReason::Timeout => "timeout",
            RefusalReason::Other => "other",
        }
    }

    /// The reason of a guard's refusal.
    pub fn of_guard(r: &wirespeed_guard::Refusal) -> RefusalReason {
        use wirespeed_guard::{Refusal, Scope};
        match r {
            Refusal::Denied { .. } => RefusalReason::Denied,
            Refusal::Pending { scope, .. }
            | Refusal::Tests { scope, .. }
            | Refusal::Streams { scope, .. }
            | Refusal::ControlBytes { scope, .. }
            | Refusal::Memory { scope, .. } => match scope {
                Scope::Peer | Scope::Share | Scope::Prefix(_) => RefusalReason::PerAddress,
                Scope::Server | Scope::AboveShare => RefusalReason::Limit,
            },
        }
    }
}

/// Counts of what happened, for the caller and for tests.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub tests_completed: AtomicU64,
    pub tests_failed: AtomicU64,
    /// Refusals of every reason together (tests refused after their parameters arrived, and
    /// connections refused or timed out before).
    pub tests_refused: AtomicU64,
    pub connections_dropped: AtomicU64,
    /// Refusals by reason, in [`RefusalReason::ALL`]'s order.
    pub refused: [AtomicU64; 6],
}

impl ServerStats {
    /// Count one refusal.
    pub fn count_refusal(&self, r: RefusalReason) {
        self.tests_refused.fetch_add(1, Ordering::Relaxed);
        self.refused[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals of this reason so far.
    pub fn refused(&self, r: RefusalReason) -> u64 {
        self.refused[r as usize].load(Ordering::Relaxed)
    }
}

struct Ctx {
    cfg: ServerConfig,
    /// The TCP listener's address; UDP streams bind the same address and port.
    local_addr: SocketAddr,
    /// UDP stream setup: the server's one unconnected UDP socket hands each 4-byte word to
    /// the test that waits for streams from that address (no server-wide lock).
    udp: udp_setup::UdpSetup,
    /// Per-address and server-wide accounting, running tests among it.
    gate: Arc<admission::Gate>,
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
                        crate::client::check_cpus(c, "--cpus")?;
                    }
                    if let Some(a) = cfg.affinity {
                        crate::client::check_cpus(&CpuSet::from_cpus([a]), "-A")?;
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

    /// Serve on a new thread, reporting nothing here (each test's results go to its client).
    pub fn spawn_quiet(self) -> Result<ServerHandle, EngineError> {
        self.spawn(Arc::new(|_| {
            Box::new(crate::output::NullReporter) as Box<dyn Reporter>
        }))
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
        let udp = udp_setup::UdpSetup::bind(local_addr);
        let ctx = Arc::new(Ctx {
            cfg: self.cfg.clone(),
            local_addr,
            gate: Arc::new(admission::Gate::new(self.cfg.limits.guard(&self.cfg.addrs))),
            udp,
            registry: Registry::default(),
            factory,
            stats: Arc::clone(&self.stats),
            done_tx: Mutex::new(done_tx),
            tune_slot: TuneSlot::default(),
        });
        let udp_stop = Arc::new(AtomicBool::new(false));
        let udp_thread = ctx.udp.spawn(Arc::clone(&self.stop), Arc::clone(&udp_stop));
        let r = acceptor::acceptor(&self.listener, &ctx, &self.stop, &done_rx);
        udp_stop.store(true, Ordering::Release);
        if let Some(t) = udp_thread {
            let _ = t.join();
        }
        // Stopping (or failing): a tune change still held by a running test goes back now.
        ctx.tune_slot.close(ctx.cfg.tune.as_ref());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The handshake timeout sets the cookie's time and the setup steps' (the data connections
    /// get twice it); a results timeout set before stays.
    #[test]
    fn the_handshake_timeout_derives_the_setup_timeouts_and_keeps_the_results_one() {
        let mut cfg = ServerConfig::default();
        cfg.timeouts.results = Duration::from_secs(77);
        cfg.set_handshake_timeout(Duration::from_secs(3));
        assert_eq!(cfg.cookie_timeout, Duration::from_secs(3));
        assert_eq!(
            cfg.timeouts,
            Timeouts {
                setup: Duration::from_secs(3),
                streams: Duration::from_secs(6),
                results: Duration::from_secs(77),
            }
        );
    }

    /// `client --loopback`'s server: on 127.0.0.1 at a free port, with no memory budget shared.
    #[test]
    fn the_loopback_server_is_local_and_unbudgeted() {
        let cfg = ServerConfig::loopback(Duration::from_millis(250));
        assert_eq!(cfg.bind, Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)));
        assert_eq!((cfg.port, cfg.interval), (0, Duration::from_millis(250)));
        assert_eq!(
            (cfg.limits.max_memory, cfg.limits.per_peer.memory),
            (u64::MAX, u64::MAX)
        );
    }
}
