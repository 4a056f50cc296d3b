//! Whether a server runs a test: the client's parameters against the server's limits, a place
//! among the concurrent tests, and any policy plugged in ([`AdmissionPolicy`]). Every "no" is
//! an [`AdmissionError`], which says what was wrong in words and maps to the refusal the
//! client understands ([`AdmissionError::decline`]): `ACCESS_DENIED` toward an iperf3 client
//! when the server is busy, `SERVER_ERROR` with iperf3's `i_errno` otherwise, with wirespeed's
//! own words in the detail.
//!
//! Per client address (an IPv4 address or an IPv6 /64) and server-wide, the [`Gate`] keeps
//! `wirespeed-guard`'s accounting: the acceptor asks it on every accepted connection
//! ([`Gate::connection`]: allow/deny lists, pending connections) and for every control byte
//! it reads before admission; [`decide`] runs after the parameters arrived, and only a test
//! it admits gets a thread and a [`Ticket`] (which gives its place back when dropped). The
//! guard's count of running tests is the server's only one: `--max-tests` is its server-wide
//! limit. The ticket also carries the control connection's bytes ([`Ticket::charge_control`]):
//! every byte the test's client sends counts against its address's budget until the test ends,
//! and the test's data buffers ([`test_buffers`]: what its workers will allocate), counted
//! against the memory budget from admission to the test's end.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use thiserror::Error;
use wirespeed_datapath as dp;
use wirespeed_datapath::SendPath;
use wirespeed_guard::{ControlLedger, Demand, Guard, PeerKey, Refusal};
use wirespeed_host::CpuSet;
use wirespeed_model::End;
use wirespeed_protocol::psk::{PskRefusal, ReplayWindow};
use wirespeed_protocol::server_error::errno;
use wirespeed_protocol::{Cookie, Decline, Direction, TestParams, Transport, WireSendPath};

use super::{Limits, ServerConfig};
use crate::shell::unix_now;

/// Why a test is not run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AdmissionError {
    #[error("wirespeed does not run SCTP tests")]
    Sctp,
    #[error("a UDP datagram must be {min}..={max} bytes, the client asked for {asked}")]
    UdpDatagram { min: u32, max: u32, asked: u32 },
    #[error(
        "this server allows at most {max} streams per test (-P), the client asked for {asked}"
    )]
    TooManyStreams { max: u32, asked: u32 },
    #[error("this server allows tests of at most {max} s, the client asked for {asked} s")]
    TooLong { max: u64, asked: u64 },
    #[error("this server allows blocks of at most {max} bytes, the client asked for {asked}")]
    BlockTooLarge { max: u32, asked: u32 },
    #[error("the test has no end: time, bytes and blocks are all 0")]
    NoEnd,
    #[error("--server-cpus is empty")]
    NoServerCpus,
    /// A CPU the client asked for is offline or not allowed here.
    #[error("{0}")]
    Cpus(String),
    /// The server runs its maximum of concurrent tests (`--max-tests`).
    #[error("the server is running its maximum of {0} tests; try again later")]
    Busy(usize),
    /// The client's tune request cannot be carried out (or tuning is not allowed).
    #[error("{0}")]
    Tune(String),
    /// The UDP streams cannot be set up.
    #[error("cannot listen for UDP streams on {addr}: {reason}")]
    UdpListen { addr: SocketAddr, reason: String },
    /// A plugged-in policy said no.
    #[error("{0}")]
    Policy(String),
    /// A per-address or server-wide limit, or the address lists.
    #[error("{0}")]
    Guard(wirespeed_guard::Refusal),
    /// iperf3's RSA authentication failed.
    #[error("test authorization failed: {0}")]
    Auth(String),
    /// The pre-shared key's tag is missing, wrong, stale or replayed (the log says which; the
    /// client reads only [`PskRefusal::public`]).
    #[error("pre-shared key: {0}")]
    Psk(PskRefusal),
    /// A tune request (`irq_cpus`) whose parameters are not verified by the pre-shared key:
    /// the server has no `--psk`, or the tag is missing or wrong.
    #[error("tune request refused: {0}")]
    TuneUnverified(String),
    /// A send path this server does not know (`wirespeed.send_path`), named as the client
    /// sent it (cut and made safe to print).
    #[error(
        "the client asked for send path \"{0}\", which this server does not know (it knows {known})",
        known = SendPath::names()
    )]
    UnknownSendPath(String),
    /// `-b` × streams above `--server-bitrate-limit`.
    #[error("total requested rate {asked} bit/s is above the server's limit of {limit} bit/s")]
    TotalRate { limit: u64, asked: u64 },
}

impl AdmissionError {
    /// The kind of refusal, for counters.
    pub fn reason(&self) -> super::RefusalReason {
        use super::RefusalReason as R;
        match self {
            AdmissionError::TooManyStreams { .. }
            | AdmissionError::TooLong { .. }
            | AdmissionError::BlockTooLarge { .. }
            | AdmissionError::Busy(_)
            | AdmissionError::TotalRate { .. } => R::Limit,
            AdmissionError::Guard(r) => R::of_guard(r),
            AdmissionError::Auth(_)
            | AdmissionError::Psk(_)
            | AdmissionError::TuneUnverified(_) => R::Auth,
            AdmissionError::Policy(_) => R::Denied,
            AdmissionError::Sctp
            | AdmissionError::UdpDatagram { .. }
            | AdmissionError::NoEnd
            | AdmissionError::NoServerCpus
            | AdmissionError::Cpus(_)
            | AdmissionError::Tune(_)
            | AdmissionError::UnknownSendPath(_)
            | AdmissionError::UdpListen { .. } => R::Other,
        }
    }

    /// iperf3's `i_errno` for the refusal.
    pub fn i_errno(&self) -> i32 {
        match self {
            AdmissionError::Sctp => errno::IENOSCTP,
            AdmissionError::UdpDatagram { .. } => errno::IEUDPBLOCKSIZE,
            AdmissionError::TooManyStreams { .. } => errno::IENUMSTREAMS,
            AdmissionError::TooLong { .. } => errno::IEMAXSERVERTESTDURATIONEXCEEDED,
            AdmissionError::BlockTooLarge { .. } => errno::IEBLOCKSIZE,
            AdmissionError::NoEnd | AdmissionError::UnknownSendPath(_) => errno::IERECVPARAMS,
            AdmissionError::NoServerCpus | AdmissionError::Cpus(_) => errno::IEAFFINITY,
            AdmissionError::Busy(_)
            | AdmissionError::Tune(_)
            | AdmissionError::TuneUnverified(_)
            | AdmissionError::Policy(_) => errno::IEACCESSDENIED,
            AdmissionError::UdpListen { .. } => errno::IELISTEN,
            AdmissionError::Guard(r) => match r.decline() {
                Decline::Error { i_errno, .. } => i_errno,
                Decline::AccessDenied => errno::IEACCESSDENIED,
            },
            AdmissionError::Auth(_) | AdmissionError::Psk(_) => errno::IEAUTHTEST,
            AdmissionError::TotalRate { .. } => errno::IETOTALRATE,
        }
    }

    /// The refusal sent to the client: a busy server answers an iperf3 client with
    /// `ACCESS_DENIED`, as iperf3 does; everything else is `SERVER_ERROR` with the words.
    pub fn decline(&self, peer_is_wirespeed: bool) -> Decline {
        let access_denied = match self {
            AdmissionError::Busy(_) => true,
            AdmissionError::Guard(r) => r.decline() == Decline::AccessDenied,
            _ => false,
        };
        if access_denied && !peer_is_wirespeed {
            return Decline::AccessDenied;
        }
        let detail = match self {
            // The client is not told which check failed: stale, replayed, wrong key.
            AdmissionError::Psk(r) => format!("pre-shared key: {}", r.public()),
            e => e.to_string(),
        };
        Decline::Error {
            i_errno: self.i_errno(),
            errno: 0,
            detail,
        }
    }
}

/// A decision on each test beyond the built-in checks (who may test, with what), plugged into
/// [`super::ServerConfig::admission`]. Asked after the parameters passed the limits and before
/// the test is counted.
pub trait AdmissionPolicy: Send + Sync {
    fn admit(&self, peer: SocketAddr, params: &TestParams) -> Result<(), AdmissionError>;
}

/// A shared [`AdmissionPolicy`] in a configuration.
#[derive(Clone)]
pub struct AdmissionHook(pub Arc<dyn AdmissionPolicy>);

impl AdmissionHook {
    pub fn new(p: impl AdmissionPolicy + 'static) -> AdmissionHook {
        AdmissionHook(Arc::new(p))
    }
}

impl fmt::Debug for AdmissionHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdmissionHook")
    }
}

/// Check a client's parameters against the server's limits; `check_cpus` says whether the
/// server CPUs the client asked for can be used.
pub fn check_params(
    p: &TestParams,
    l: &Limits,
    check_cpus: impl Fn(&CpuSet) -> Result<(), String>,
) -> Result<(), AdmissionError> {
    if p.sctp {
        return Err(AdmissionError::Sctp);
    }
    match p.transport {
        Transport::Tcp => {}
        Transport::Udp => {
            let min = dp::udp::header_len(p.udp_counters_64bit) as u32;
            if let Some(len) = p.len {
                if len < min || len as usize > dp::udp::MAX_DATAGRAM_LEN {
                    return Err(AdmissionError::UdpDatagram {
                        min,
                        max: dp::udp::MAX_DATAGRAM_LEN as u32,
                        asked: len,
                    });
                }
            }
        }
    }
    if p.parallel > l.max_streams {
        return Err(AdmissionError::TooManyStreams {
            max: l.max_streams,
            asked: p.parallel,
        });
    }
    let dur = u64::from(p.time) + u64::from(p.omit);
    if Duration::from_secs(dur) > l.max_duration {
        return Err(AdmissionError::TooLong {
            max: l.max_duration.as_secs(),
            asked: dur,
        });
    }
    if let Some(len) = p.len {
        if len > l.max_block {
            return Err(AdmissionError::BlockTooLarge {
                max: l.max_block,
                asked: len,
            });
        }
    }
    if p.num == 0 && p.blockcount == 0 && p.time == 0 {
        return Err(AdmissionError::NoEnd);
    }
    if let Some(WireSendPath::Unknown(name)) =
        p.wirespeed.as_ref().and_then(|e| e.send_path.as_ref())
    {
        return Err(AdmissionError::UnknownSendPath(
            wirespeed_model::text::terminal_short(name, 64),
        ));
    }
    let mut wanted = CpuSet::new();
    if let Some(c) = p.wirespeed.as_ref().and_then(|e| e.server_cpus.as_ref()) {
        if c.is_empty() {
            return Err(AdmissionError::NoServerCpus);
        }
        wanted = c.clone();
    }
    wanted.extend(p.server_affinity);
    if !wanted.is_empty() {
        check_cpus(&wanted).map_err(AdmissionError::Cpus)?;
    }
    Ok(())
}

/// What the server holds for each client address and in total: `wirespeed-guard`'s
/// accounting, the one count of running tests (server-wide: `--max-tests`) among it.
#[derive(Debug)]
pub struct Gate {
    guard: Mutex<Guard>,
    /// Parameters tags admitted within the skew window (`--psk`).
    replay: Mutex<ReplayWindow>,
}

impl Gate {
    pub fn new(limits: wirespeed_guard::Limits) -> Gate {
        Gate {
            guard: Mutex::new(Guard::new(limits)),
            replay: Mutex::new(ReplayWindow::default()),
        }
    }

    pub fn guard(&self) -> MutexGuard<'_, Guard> {
        self.guard.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection was accepted from `ip`: the address lists and the pending limits.
    pub fn connection(&self, ip: IpAddr) -> Result<PeerKey, Refusal> {
        self.guard().admit_connection(ip)
    }

    /// Tests admitted and not yet ended (the guard's count).
    pub fn running(&self) -> usize {
        self.guard().total().tests as usize
    }
}

/// The bytes of data buffers a test's workers hold at the server: per worker what the
/// datapath allocates (its block when it sends, its read buffer when it receives:
/// [`dp::worker_buffers`], [`dp::udp::worker_buffers`]), for every worker the data phase
/// plans from the test's placement ([`crate::placement::plan`]), sending and receiving
/// streams on workers of their own. Counted against the memory budget before the test is
/// admitted, so a test whose client never reads its data holds no more than this.
pub fn test_buffers(p: &TestParams, cfg: &ServerConfig) -> u64 {
    let local = super::test::local_paths(p, cfg);
    let dc = crate::measurement::data_config(p, false, local);
    let n = p.parallel.max(1) as usize;
    let (send, recv) = match p.direction {
        Direction::ClientToServer => (0, n),
        Direction::ServerToClient => (n, 0),
        Direction::Both => (n, n),
    };
    [(send, true), (recv, false)]
        .into_iter()
        .map(|(streams, sends)| {
            let workers = dc.plan(streams).len() as u64;
            let each = match &dc.udp {
                Some(u) => dp::udp::worker_buffers(
                    u.datagram_len,
                    u.send_path,
                    u.recv_path,
                    0,
                    sends,
                    !sends,
                ),
                None => dp::worker_buffers(dc.block_len, dc.send_path, sends, !sends),
            };
            workers.saturating_mul(each)
        })
        .fold(0u64, u64::saturating_add)
}

/// An admitted test's hold on the [`Gate`]: its test, streams and buffers in the guard,
/// (TCP) the data connections it still expects, and the control bytes its control connection
/// was charged. Given back when dropped.
#[derive(Debug)]
pub struct Ticket {
    gate: Arc<Gate>,
    pub peer: PeerKey,
    demand: Demand,
    connecting: u32,
    control: ControlLedger,
}

impl Ticket {
    /// The control connection's bytes charged before admission stay charged for the test.
    pub fn keep_control(&mut self, ctl: ControlLedger) {
        let mut g = self.gate.guard();
        self.control.close(&mut g);
        self.control = ctl;
    }

    /// `n` more bytes arrived on the test's control connection (state bytes, the results,
    /// anything): refused when the address's or the server's control-byte budget is spent.
    pub fn charge_control(&mut self, n: u64) -> Result<(), Refusal> {
        self.control.charge(&mut self.gate.guard(), n)
    }

    /// The test has its data connections (or stopped waiting for them).
    pub fn streams_settled(&mut self) {
        if self.connecting > 0 {
            self.gate
                .guard()
                .streams_settled(self.peer, self.connecting);
            self.connecting = 0;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.streams_settled();
        let mut g = self.gate.guard();
        g.release(self.peer, self.demand);
        self.control.close(&mut g);
    }
}

/// Authentication, when the server requires it: iperf3's RSA token, and wirespeed's
/// pre-shared key tag (remembered in `replay` until its timestamp leaves the window).
pub fn authenticate(
    p: &TestParams,
    cookie: &Cookie,
    cfg: &ServerConfig,
    replay: &Mutex<ReplayWindow>,
) -> Result<Option<String>, AdmissionError> {
    let now = unix_now();
    let mut user = None;
    if let Some(a) = &cfg.auth {
        let mut a2;
        let a = if a.skew_threshold == cfg.skew_threshold {
            a.as_ref()
        } else {
            a2 = a.as_ref().clone();
            a2.skew_threshold = cfg.skew_threshold;
            &a2
        };
        user = Some(
            a.authorize(p.authtoken.as_deref(), now)
                .map_err(|e| AdmissionError::Auth(e.to_string()))?,
        );
    }
    if let Some(k) = &cfg.psk {
        let mut seen = replay.lock().unwrap_or_else(|p| p.into_inner());
        k.verify_params_once(p, cookie, now, cfg.skew_threshold, &mut seen)
            .map_err(AdmissionError::Psk)?;
    }
    Ok(user)
}

/// The whole decision on a test whose parameters arrived (in the acceptor, before it has a
/// thread): the limits, authentication, the policy, the per-address and server-wide
/// accounting (the test counted once, there).
pub fn decide(
    p: &TestParams,
    peer: SocketAddr,
    key: PeerKey,
    cookie: &Cookie,
    cfg: &ServerConfig,
    gate: &Arc<Gate>,
) -> Result<Ticket, AdmissionError> {
    check_params(p, &cfg.limits, |c| {
        crate::client::check_cpus(c, "--server-cpus").map_err(|e| e.to_string())
    })?;
    if let Some(l) = cfg.bitrate_limit {
        let asked = p.bandwidth.unwrap_or(0).saturating_mul(p.total_streams());
        if asked > l.bits_per_second {
            return Err(AdmissionError::TotalRate {
                limit: l.bits_per_second,
                asked,
            });
        }
    }
    let tune_request = p.wirespeed.as_ref().is_some_and(|e| e.irq_cpus.is_some());
    match authenticate(p, cookie, cfg, &gate.replay) {
        Err(AdmissionError::Psk(why)) if tune_request => {
            return Err(AdmissionError::TuneUnverified(format!(
                "its parameters are not verified by the pre-shared key ({})",
                why.public()
            )))
        }
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    if tune_request && cfg.tune.is_some() {
        wirespeed_protocol::psk::tune_needs_key(End::Server, cfg.psk.is_some()).map_err(|_| {
            AdmissionError::TuneUnverified(
                "this server has no pre-shared key (--psk) to verify it with".into(),
            )
        })?;
    }
    if let Some(h) = &cfg.admission {
        h.0.admit(peer, p)?;
    }
    let streams = u32::try_from(p.total_streams()).unwrap_or(u32::MAX);
    let demand = Demand {
        streams,
        memory: test_buffers(p, cfg),
    };
    let mut g = gate.guard();
    g.admit(key, demand).map_err(|r| match r {
        // The server-wide count of tests is `--max-tests`: a busy server, in its own words.
        wirespeed_guard::Refusal::Tests {
            scope: wirespeed_guard::Scope::Server,
            limit,
        } => AdmissionError::Busy(limit as usize),
        r => AdmissionError::Guard(r),
    })?;
    let connecting = if p.transport == Transport::Tcp {
        g.expect_streams(key, streams);
        streams
    } else {
        0
    };
    drop(g);
    Ok(Ticket {
        gate: Arc::clone(gate),
        peer: key,
        demand,
        connecting,
        control: ControlLedger::new(key),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_protocol::ParamsExt;

    fn ok_cpus(_: &CpuSet) -> Result<(), String> {
        Ok(())
    }

    fn params() -> TestParams {
        TestParams {
            time: 10,
            parallel: 4,
            ..TestParams::default()
        }
    }

    fn peer() -> SocketAddr {
        "192.0.2.9:40000".parse().unwrap()
    }

    #[test]
    fn parameters_within_the_limits_pass_and_each_limit_refuses_in_words() {
        let l = Limits::default();
        assert_eq!(check_params(&params(), &l, ok_cpus), Ok(()));
        let cases: Vec<(TestParams, AdmissionError)> = vec![
            (
                TestParams {
                    parallel: l.max_streams + 1,
                    ..params()
                },
                AdmissionError::TooManyStreams {
                    max: l.max_streams,
                    asked: l.max_streams + 1,
                },
            ),
            (
                TestParams {
                    time: 0,
                    ..params()
                },
                AdmissionError::NoEnd,
            ),
            (
                TestParams {
                    len: Some(l.max_block + 1),
                    ..params()
                },
                AdmissionError::BlockTooLarge {
                    max: l.max_block,
                    asked: l.max_block + 1,
                },
            ),
            (
                TestParams {
                    sctp: true,
                    ..params()
                },
                AdmissionError::Sctp,
            ),
            (
                TestParams {
                    transport: Transport::Udp,
                    len: Some(3),
                    ..params()
                },
                AdmissionError::UdpDatagram {
                    min: dp::udp::header_len(false) as u32,
                    max: dp::udp::MAX_DATAGRAM_LEN as u32,
                    asked: 3,
                },
            ),
        ];
        for (p, want) in cases {
            let got = check_params(&p, &l, ok_cpus).unwrap_err();
            assert_eq!(got, want);
            let Decline::Error {
                i_errno, detail, ..
            } = got.decline(false)
            else {
                panic!("SERVER_ERROR expected for {got:?}");
            };
            assert_eq!(i_errno, got.i_errno());
            assert_eq!(detail, got.to_string());
        }
        let long = TestParams {
            time: l.max_duration.as_secs() as u32,
            omit: 1,
            ..params()
        };
        let e = check_params(&long, &l, ok_cpus).unwrap_err();
        assert!(matches!(e, AdmissionError::TooLong { .. }), "{e}");
        assert!(e.to_string().contains("the client asked for"), "{e}");
    }

    #[test]
    fn an_unknown_send_path_is_refused_by_name_with_the_known_ones() {
        let l = Limits::default();
        let asking = |path: WireSendPath| TestParams {
            wirespeed: Some(ParamsExt {
                send_path: Some(path),
                ..ParamsExt::default()
            }),
            ..params()
        };
        for p in SendPath::ALL {
            assert_eq!(check_params(&asking(p.into()), &l, ok_cpus), Ok(()));
        }
        let e = check_params(
            &asking(WireSendPath::Unknown("io_uring".into())),
            &l,
            ok_cpus,
        )
        .unwrap_err();
        assert_eq!(e, AdmissionError::UnknownSendPath("io_uring".into()));
        assert_eq!(
            e.to_string(),
            "the client asked for send path \"io_uring\", which this server does not know \
             (it knows copy, sendfile, splice, msg_zerocopy)"
        );
        assert_eq!(e.i_errno(), errno::IERECVPARAMS);
        assert_eq!(e.reason(), super::super::RefusalReason::Other);
        // The wirespeed client that asked is told in these words.
        let Decline::Error { detail, .. } = e.decline(true) else {
            panic!("SERVER_ERROR expected");
        };
        assert_eq!(detail, e.to_string());
        // A hostile name is cut and cannot break the server's log line or the client's.
        let long = format!("a\nb{}", "x".repeat(10_000));
        let e = check_params(&asking(WireSendPath::Unknown(long)), &l, ok_cpus).unwrap_err();
        let line = e.to_string();
        assert!(!line.contains('\n') && line.len() < 300, "{line}");
    }

    #[test]
    fn server_cpus_are_checked_together_with_the_server_affinity() {
        let l = Limits::default();
        let with_cpus = |cpus: CpuSet| TestParams {
            server_affinity: Some(7),
            wirespeed: Some(ParamsExt {
                server_cpus: Some(cpus),
                ..ParamsExt::default()
            }),
            ..params()
        };
        assert_eq!(
            check_params(&with_cpus(CpuSet::new()), &l, ok_cpus),
            Err(AdmissionError::NoServerCpus)
        );
        let asked = std::cell::RefCell::new(None);
        let offline = |c: &CpuSet| {
            *asked.borrow_mut() = Some(c.clone());
            Err(format!("server CPU {c} is offline"))
        };
        let e = check_params(&with_cpus(CpuSet::from_cpus([2, 3])), &l, offline).unwrap_err();
        assert_eq!(
            e,
            AdmissionError::Cpus("server CPU 2-3,7 is offline".into())
        );
        assert_eq!(asked.borrow().clone(), Some(CpuSet::from_cpus([2, 3, 7])));
        assert_eq!(e.i_errno(), errno::IEAFFINITY);
    }

    struct OnlyFrom(std::net::IpAddr);

    impl AdmissionPolicy for OnlyFrom {
        fn admit(&self, peer: SocketAddr, _: &TestParams) -> Result<(), AdmissionError> {
            if peer.ip() == self.0 {
                Ok(())
            } else {
                Err(AdmissionError::Policy(format!(
                    "{} may not test here",
                    peer.ip()
                )))
            }
        }
    }

    #[test]
    fn a_policy_decides_after_the_limits_and_a_ticket_gives_its_test_back_on_drop() {
        let cfg = ServerConfig {
            limits: Limits {
                max_tests: 1,
                ..Limits::default()
            },
            admission: Some(AdmissionHook::new(OnlyFrom("192.0.2.9".parse().unwrap()))),
            ..ServerConfig::default()
        };
        let gate = Arc::new(Gate::new(cfg.limits.guard(&cfg.addrs)));
        let c = Cookie::from_entropy(&[5; 36]);
        let other: SocketAddr = "198.51.100.1:1".parse().unwrap();
        let ko = gate.connection(other.ip()).unwrap();
        let e = decide(&params(), other, ko, &c, &cfg, &gate).unwrap_err();
        assert_eq!(e.to_string(), "198.51.100.1 may not test here");
        assert_eq!(e.i_errno(), errno::IEACCESSDENIED);
        assert_eq!(gate.running(), 0, "a refused test is not counted");
        // The limits come first: a bad test from anyone is refused for what it is.
        let bad = TestParams {
            time: 0,
            ..params()
        };
        assert_eq!(
            decide(&bad, other, ko, &c, &cfg, &gate).unwrap_err(),
            AdmissionError::NoEnd
        );
        let k = gate.connection(peer().ip()).unwrap();
        let ticket = decide(&params(), peer(), k, &c, &cfg, &gate).unwrap();
        assert_eq!(gate.running(), 1);
        // --max-tests is counted once (the guard's server-wide count): a busy server.
        let busy = decide(&params(), peer(), k, &c, &cfg, &gate).unwrap_err();
        assert_eq!(busy, AdmissionError::Busy(1));
        assert_eq!(
            busy.to_string(),
            "the server is running its maximum of 1 tests; try again later"
        );
        assert_eq!(busy.reason(), super::super::RefusalReason::Limit);
        assert_eq!(busy.decline(false), Decline::AccessDenied, "iperf3 client");
        assert!(matches!(busy.decline(true), Decline::Error { .. }));
        drop(ticket);
        assert_eq!(gate.running(), 0);
        drop(decide(&params(), peer(), k, &c, &cfg, &gate).unwrap());
    }

    #[test]
    fn decide_counts_per_address_and_a_ticket_gives_everything_back() {
        let cfg = ServerConfig::default();
        let mut limits = cfg.limits.guard(&cfg.addrs);
        limits.peer.tests = 1;
        let gate = Arc::new(Gate::new(limits));
        let a: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let b: SocketAddr = "192.0.2.2:1".parse().unwrap();
        let c = Cookie::from_entropy(&[1; 36]);
        let ka = gate.connection(a.ip()).unwrap();
        let ticket = decide(&params(), a, ka, &c, &cfg, &gate).unwrap();
        assert_eq!(gate.running(), 1);
        assert_eq!(gate.guard().usage(ka).streams, 4);
        assert_eq!(gate.guard().usage(ka).connecting, 4, "TCP streams expected");
        // A second test from the same address is over its limit: ACCESS_DENIED toward
        // iperf3, the reason toward wirespeed; another address still gets in.
        let e = decide(&params(), a, ka, &c, &cfg, &gate).unwrap_err();
        assert!(matches!(e, AdmissionError::Guard(_)), "{e}");
        assert_eq!(e.decline(false), Decline::AccessDenied);
        assert!(
            e.to_string()
                .contains("per-address limit of 1 running tests"),
            "{e}"
        );
        assert_eq!(gate.running(), 1, "a refused test is not counted");
        let kb = gate.connection(b.ip()).unwrap();
        let other = decide(&params(), b, kb, &c, &cfg, &gate).unwrap();
        drop(ticket);
        drop(other);
        let mut g = gate.guard();
        g.connection_closed(ka);
        g.connection_closed(kb);
        assert_eq!(g.total(), wirespeed_guard::Usage::default());
        drop(g);
        assert_eq!(gate.running(), 0);
    }

    #[test]
    fn a_bitrate_limit_refuses_what_asks_for_more_and_auth_refusals_are_142() {
        let cfg = ServerConfig {
            bitrate_limit: Some(super::super::BitrateLimit {
                bits_per_second: 1_000_000,
                window: Duration::from_secs(5),
            }),
            ..ServerConfig::default()
        };
        let gate = Arc::new(Gate::new(cfg.limits.guard(&cfg.addrs)));
        let c = Cookie::from_entropy(&[2; 36]);
        let k = gate.connection(peer().ip()).unwrap();
        let fast = TestParams {
            bandwidth: Some(400_000),
            ..params()
        };
        let e = decide(&fast, peer(), k, &c, &cfg, &gate).unwrap_err();
        assert_eq!(
            e,
            AdmissionError::TotalRate {
                limit: 1_000_000,
                asked: 1_600_000
            }
        );
        assert_eq!(e.i_errno(), errno::IETOTALRATE);
        let psk = ServerConfig {
            psk: Some(wirespeed_protocol::psk::Psk::from_file_contents(&[b'k'; 32]).unwrap()),
            ..ServerConfig::default()
        };
        let e = decide(&params(), peer(), k, &c, &psk, &gate).unwrap_err();
        assert!(matches!(e, AdmissionError::Psk(_)), "{e}");
        assert_eq!(e.i_errno(), errno::IEAUTHTEST);
        assert_eq!(gate.running(), 0);
    }

    /// Issue 22: a recorded, correctly tagged parameter set replayed from another address
    /// after the original was admitted ran in full. Now the second is refused, and the client
    /// is not told whether its tag was replayed, stale or of another key.
    #[test]
    fn a_replayed_tagged_parameter_set_is_refused_from_any_address() {
        let key = || wirespeed_protocol::psk::Psk::from_file_contents(&[b'k'; 32]).unwrap();
        let cfg = ServerConfig {
            psk: Some(key()),
            ..ServerConfig::default()
        };
        let gate = Arc::new(Gate::new(cfg.limits.guard(&cfg.addrs)));
        let c = Cookie::from_entropy(&[4; 36]);
        let mut p = TestParams {
            wirespeed: Some(ParamsExt::default()),
            ..params()
        };
        key().seal_params(&mut p, &c, unix_now()).unwrap();
        let a = peer();
        let ka = gate.connection(a.ip()).unwrap();
        // the original test runs and ends (its cookie is free again)
        drop(decide(&p, a, ka, &c, &cfg, &gate).unwrap());
        let b: SocketAddr = "192.0.2.77:40001".parse().unwrap();
        let kb = gate.connection(b.ip()).unwrap();
        let e = decide(&p, b, kb, &c, &cfg, &gate).unwrap_err();
        assert_eq!(e, AdmissionError::Psk(PskRefusal::Replayed));
        assert_eq!(gate.running(), 0);
        // the log says why; the client's words do not
        assert!(e.to_string().contains("already used"), "{e}");
        let Decline::Error { detail, .. } = e.decline(true) else {
            panic!("{e}")
        };
        let stale = AdmissionError::Psk(PskRefusal::Skew {
            skew: 11,
            threshold: 10,
        });
        let Decline::Error { detail: d2, .. } = stale.decline(true) else {
            panic!()
        };
        assert_eq!(detail, d2);
        assert!(
            !detail.contains("already") && !detail.contains("timestamp"),
            "{detail}"
        );
    }

    struct NoChange;
    impl crate::hooks::HostChange for NoChange {
        fn prepare_irq_move(
            &self,
            _: &CpuSet,
            _: IpAddr,
            _: Option<IpAddr>,
        ) -> Result<Box<dyn crate::hooks::PreparedChange>, crate::hooks::Refusal> {
            Err(crate::hooks::Refusal("not in this test".into()))
        }
        fn revert_journal(&self, _: &str) {}
    }

    fn tune_request() -> TestParams {
        TestParams {
            wirespeed: Some(ParamsExt {
                irq_cpus: Some(CpuSet::from_cpus([3])),
                ..ParamsExt::default()
            }),
            ..params()
        }
    }

    #[test]
    fn a_tune_request_needs_parameters_verified_by_the_pre_shared_key() {
        let key = || wirespeed_protocol::psk::Psk::from_file_contents(&[b'k'; 32]).unwrap();
        let c = Cookie::from_entropy(&[3; 36]);
        // A server that tunes without a key (possible only through the library: the command
        // line refuses --allow-tune without --psk) still refuses every tune request.
        let open = ServerConfig {
            tune: Some(crate::tune::TuneConfig::new(NoChange)),
            ..ServerConfig::default()
        };
        let gate = Arc::new(Gate::new(open.limits.guard(&open.addrs)));
        let k = gate.connection(peer().ip()).unwrap();
        let e = decide(&tune_request(), peer(), k, &c, &open, &gate).unwrap_err();
        assert!(matches!(e, AdmissionError::TuneUnverified(_)), "{e}");
        assert!(e.to_string().contains("no pre-shared key (--psk)"), "{e}");
        assert_eq!(e.i_errno(), errno::IEACCESSDENIED);
        assert_eq!(e.reason(), super::super::RefusalReason::Auth);
        // The plain test is not a tune request: admitted.
        drop(decide(&params(), peer(), k, &c, &open, &gate).unwrap());

        let guarded = ServerConfig {
            psk: Some(key()),
            ..open
        };
        // Untagged, and tagged with another key: refused as a tune request.
        let e = decide(&tune_request(), peer(), k, &c, &guarded, &gate).unwrap_err();
        assert!(matches!(e, AdmissionError::TuneUnverified(_)), "{e}");
        assert_eq!(e.i_errno(), errno::IEACCESSDENIED);
        let mut wrong = tune_request();
        wirespeed_protocol::psk::Psk::from_file_contents(&[b'x'; 32])
            .unwrap()
            .seal_params(&mut wrong, &c, unix_now())
            .unwrap();
        let e = decide(&wrong, peer(), k, &c, &guarded, &gate).unwrap_err();
        assert!(matches!(e, AdmissionError::TuneUnverified(_)), "{e}");
        // Tagged with the server's key: admitted (the move itself happens in the test).
        let mut right = tune_request();
        key().seal_params(&mut right, &c, unix_now()).unwrap();
        drop(decide(&right, peer(), k, &c, &guarded, &gate).unwrap());
        assert_eq!(gate.running(), 0);
    }

    /// Issue 37, attack 1: `{"tcp":true,"reverse":true,"len":16777216,"parallel":2}` held a
    /// 16 MiB block per sending worker in every test. Each test's buffers are counted from
    /// its placement's workers, and the budget admits two such tests; the rest are a busy
    /// server toward iperf3, a plain test still runs, and a test that could never fit is
    /// iperf3's "block size too large".
    #[test]
    fn a_tests_buffers_are_counted_per_worker_and_come_out_of_the_memory_budget() {
        const MIB: u64 = 1 << 20;
        let cfg = ServerConfig {
            cpus: Some(CpuSet::from_cpus([0, 1])),
            ..ServerConfig::default()
        };
        let attack = TestParams {
            direction: Direction::ServerToClient,
            len: Some(16 << 20),
            parallel: 2,
            time: 86_400,
            ..TestParams::default()
        };
        assert_eq!(test_buffers(&attack, &cfg), 32 * MIB, "a block per worker");
        let bidir = TestParams {
            direction: Direction::Both,
            ..attack.clone()
        };
        // and a 16 MiB read buffer per receiving worker
        assert_eq!(test_buffers(&bidir, &cfg), 64 * MIB);
        let one_cpu = ServerConfig {
            affinity: Some(0),
            ..ServerConfig::default()
        };
        assert_eq!(test_buffers(&attack, &one_cpu), 16 * MIB, "one worker");
        // a default test: one receiving worker's 1 MiB read buffer
        assert_eq!(test_buffers(&TestParams::new_tcp(10, 1), &cfg), MIB);

        let gate = Arc::new(Gate::new(cfg.limits.guard(&cfg.addrs)));
        let c = Cookie::from_entropy(&[6; 36]);
        let mut held = Vec::new();
        let mut busy = 0;
        for a in 1..=8u8 {
            let peer: SocketAddr = format!("127.0.3.{a}:1").parse().unwrap();
            let k = gate.connection(peer.ip()).unwrap();
            match decide(&attack, peer, k, &c, &cfg, &gate) {
                Ok(t) => held.push(t),
                Err(e) => {
                    assert!(
                        matches!(
                            e,
                            AdmissionError::Guard(Refusal::Memory {
                                scope: wirespeed_guard::Scope::AboveShare,
                                ..
                            })
                        ),
                        "{e}"
                    );
                    assert_eq!(e.decline(false), Decline::AccessDenied);
                    assert_eq!(e.reason(), super::super::RefusalReason::Limit);
                    busy += 1;
                }
            }
        }
        assert_eq!((held.len(), busy), (2, 6));
        assert_eq!(gate.guard().total().memory, 64 * MIB);
        let real = gate.connection(peer().ip()).unwrap();
        let t = decide(&TestParams::new_tcp(10, 1), peer(), real, &c, &cfg, &gate).unwrap();
        assert_eq!(gate.guard().total().memory, 65 * MIB);
        drop(t);
        // 8 workers of 16 MiB: more than an address may ever hold
        let wide = ServerConfig {
            cpus: Some(CpuSet::from_cpus(0..8)),
            ..ServerConfig::default()
        };
        let big = TestParams {
            parallel: 8,
            ..attack.clone()
        };
        let e = decide(&big, peer(), real, &c, &wide, &gate).unwrap_err();
        assert_eq!(e.i_errno(), errno::IEBLOCKSIZE, "{e}");
        assert!(matches!(e.decline(false), Decline::Error { .. }));
        assert!(e.to_string().contains("--max-memory-per-address"), "{e}");
        drop(held);
        let mut g = gate.guard();
        assert_eq!(g.total().memory, 0);
        assert_eq!(g.above_share(), 0);
        for a in 1..=8u8 {
            g.connection_closed(PeerKey::of(format!("127.0.3.{a}").parse().unwrap()));
        }
        g.connection_closed(real);
        assert_eq!(g.total(), wirespeed_guard::Usage::default());
    }

    /// Issue 37, attack 4: the /64s of one /48 share its limits; over them is a refusal of the
    /// address (`per_address`), a busy server toward iperf3, and another /48 still gets in.
    #[test]
    fn the_64s_of_one_48_share_its_tests_and_a_refusal_is_per_address() {
        let cfg = ServerConfig::default();
        let gate = Arc::new(Gate::new(cfg.limits.guard(&cfg.addrs)));
        let c = Cookie::from_entropy(&[7; 36]);
        let (mut held, mut refused) = (Vec::new(), Vec::new());
        for k in 0..20u32 {
            let peer: SocketAddr = format!("[2001:db8:1:{k:x}00::1]:1").parse().unwrap();
            let key = gate.connection(peer.ip()).unwrap();
            for _ in 0..2 {
                match decide(&params(), peer, key, &c, &cfg, &gate) {
                    Ok(t) => held.push(t),
                    Err(e) => refused.push(e),
                }
            }
        }
        assert_eq!((held.len(), refused.len()), (16, 24));
        let e = &refused[0];
        assert_eq!(e.reason(), super::super::RefusalReason::PerAddress);
        assert_eq!(e.decline(false), Decline::AccessDenied);
        assert!(
            e.to_string().contains("per-/48 (shared by its /64s)"),
            "{e}"
        );
        let other: SocketAddr = "[2001:db8:2::1]:1".parse().unwrap();
        let k = gate.connection(other.ip()).unwrap();
        held.push(decide(&params(), other, k, &c, &cfg, &gate).unwrap());
        drop(held);
        assert_eq!(gate.running(), 0);
    }
}
