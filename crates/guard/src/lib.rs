//! Admission policy for a server that faces the internet, as plain data and arithmetic: no
//! sockets, no clocks, no threads. The server's acceptor owns one [`Guard`] (behind a lock
//! when several threads use it), asks it before each step that costs something, and tells it
//! when the cost is given back.
//!
//! What is counted, per peer and for the whole server:
//! - **pending** connections: accepted, parameters not yet read and checked. Nothing else
//!   (no thread, no test slot) is spent on a connection before its parameters pass.
//! - **tests** running, and the **streams** they hold.
//! - **memory**: the bytes of data buffers (blocks, read buffers) a test's workers hold, which
//!   the caller computes from the test before admitting it ([`Demand`]). A test's share of the
//!   server's budget is the budget divided by its tests (at least [`MIN_TEST_SHARE`]); tests
//!   above their share hold at most half the budget together, so that clients asking for huge
//!   blocks never take the memory a plain test needs.
//! - **control bytes** received on the peer's control connections while they are open: every
//!   phase counts (cookie and parameters before admission, then state bytes, the results and
//!   anything else a running test's peer sends), and the bytes are given back only when the
//!   connection ends. This bounds both the memory one peer can make the server hold and the
//!   work it can make the server do on control input (a running test flooding state bytes is
//!   ended once its address's budget is spent). A [`ControlLedger`] keeps one connection's
//!   share.
//!
//! A peer is an IPv4 address, or the /64 prefix of an IPv6 address (one host usually owns a
//! whole /64); an IPv4-mapped IPv6 address counts as its IPv4 address. Per-peer limits keep one
//! busy or hostile address from locking out another; server-wide limits bound the total. The
//! /64s of wider IPv6 prefixes (by default each /56 and each /48: [`PrefixShare`]) also share:
//! together they hold a few peers' worth of every per-peer limit, so one site's many /64s
//! cannot fill the server while others wait.
//!
//! Before all of it, [`AddrPolicy`] applies allow and deny lists (CIDR): a deny entry always
//! wins; with a non-empty allow list, only listed addresses pass.
//!
//! Every refusal is a [`Refusal`]: a reason for the server's log (one line, with the
//! address), and what to send the peer in iperf3's terms ([`Refusal::decline`]):
//! `ACCESS_DENIED` for "not now / not you" (iperf3's client prints "the server is busy
//! running a test"), `SERVER_ERROR` with iperf3's `i_errno` where iperf3 has one
//! (`IENUMSTREAMS` for too many streams).
//!
//! Typical use by the acceptor:
//!
//! ```
//! use std::net::IpAddr;
//! use wirespeed_guard::{Guard, Limits};
//!
//! let mut g = Guard::new(Limits::default());
//! let ip: IpAddr = "192.0.2.7".parse().unwrap();
//! let peer = g.admit_connection(ip).unwrap();   // on accept, before reading anything
//! let mut ctl = wirespeed_guard::ControlLedger::new(peer);
//! ctl.charge(&mut g, 37).unwrap();              // as control bytes arrive, in every phase
//! g.admit_test(peer, 4).unwrap();               // parameters read and checked: 4 streams
//! g.connection_closed(peer);                    // no longer pending: a test now
//! ctl.charge(&mut g, 1).unwrap();               // a state byte from the running test
//! // ... the test runs ...
//! g.test_done(peer, 4);
//! ctl.close(&mut g);                            // the control connection ended
//! assert_eq!(g.usage(peer), Default::default());
//! ```

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use wirespeed_protocol::server_error::errno;
use wirespeed_protocol::Decline;

/// Who a peer is, for accounting: an IPv4 address or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerKey {
    V4(Ipv4Addr),
    /// The upper 64 bits of the address.
    V6Prefix(u64),
}

impl PeerKey {
    pub fn of(ip: IpAddr) -> PeerKey {
        match ip {
            IpAddr::V4(a) => PeerKey::V4(a),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => PeerKey::V4(v4),
                None => PeerKey::V6Prefix((u128::from(a) >> 64) as u64),
            },
        }
    }
}

impl std::fmt::Display for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerKey::V4(a) => write!(f, "{a}"),
            PeerKey::V6Prefix(p) => write!(f, "{}/64", Ipv6Addr::from(u128::from(*p) << 64)),
        }
    }
}

/// A list entry that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry:?} is not an address or a CIDR prefix (like 192.0.2.0/24 or 2001:db8::/32)")]
pub struct BadEntry {
    pub entry: String,
}

/// Allow and deny lists of CIDR prefixes (a bare address is its own /32 or /128).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrPolicy {
    allow: Vec<IpNet>,
    deny: Vec<IpNet>,
}

fn parse_net(s: &str) -> Result<IpNet, BadEntry> {
    let t = s.trim();
    t.parse::<IpNet>()
        .or_else(|_| t.parse::<IpAddr>().map(IpNet::from))
        .map(|n| n.trunc())
        .map_err(|_| BadEntry {
            entry: s.to_string(),
        })
}

/// The IPv4 address inside an IPv4-mapped IPv6 address, so that lists of IPv4 prefixes
/// apply to a dual-stack socket's peers.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl AddrPolicy {
    /// From the entries of `--allow` and `--deny` (each an address or a prefix; a list
    /// given as one comma-separated string is split here too).
    pub fn new<S: AsRef<str>>(allow: &[S], deny: &[S]) -> Result<AddrPolicy, BadEntry> {
        let parse = |v: &[S]| -> Result<Vec<IpNet>, BadEntry> {
            v.iter()
                .flat_map(|s| {
                    s.as_ref()
                        .split(',')
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .filter(|s| !s.trim().is_empty())
                .map(|s| parse_net(&s))
                .collect()
        };
        Ok(AddrPolicy {
            allow: parse(allow)?,
            deny: parse(deny)?,
        })
    }

    /// Check one peer address.
    pub fn check(&self, ip: IpAddr) -> Result<(), Refusal> {
        let ip = canonical(ip);
        if let Some(n) = self.deny.iter().find(|n| n.contains(&ip)) {
            return Err(Refusal::Denied {
                reason: format!("in the deny list ({n})"),
            });
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|n| n.contains(&ip)) {
            return Err(Refusal::Denied {
                reason: "not in the allow list".into(),
            });
        }
        Ok(())
    }

    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

/// Limits for one peer (an IPv4 address or an IPv6 /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerLimits {
    /// Connections whose parameters have not been read and checked yet.
    pub pending: u32,
    /// Tests running at once.
    pub tests: u32,
    /// Streams of all its running tests together.
    pub streams: u32,
    /// Bytes received on its control connections while they are open (all phases).
    pub control_bytes: u64,
    /// Bytes of data buffers (blocks, read buffers) its running tests' workers hold.
    pub memory: u64,
}

impl PeerLimits {
    /// `n` peers' worth of every limit (what a shared prefix may hold).
    pub fn times(&self, n: u32) -> PeerLimits {
        PeerLimits {
            pending: self.pending.saturating_mul(n),
            tests: self.tests.saturating_mul(n),
            streams: self.streams.saturating_mul(n),
            control_bytes: self.control_bytes.saturating_mul(u64::from(n)),
            memory: self.memory.saturating_mul(u64::from(n)),
        }
    }
}

/// Limits for the whole server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    pub pending: u32,
    pub tests: u32,
    pub streams: u32,
    pub control_bytes: u64,
    /// Bytes of data buffers all running tests' workers hold together: the memory budget.
    pub memory: u64,
}

/// The least a test's share of the memory budget is ([`ServerLimits::test_share`]): twice what
/// a UDP test's batch receiver holds (64 slots of 64 KiB), so a plain test is never "above its
/// share" on a server with many test slots.
pub const MIN_TEST_SHARE: u64 = 8 << 20;

impl ServerLimits {
    /// One test's share of the memory budget: the budget divided by the tests that may run,
    /// at least [`MIN_TEST_SHARE`]. A test that asks for more is above its share and takes
    /// its buffers from [`ServerLimits::above_share`] only.
    pub fn test_share(&self) -> u64 {
        (self.memory / u64::from(self.tests.max(1))).max(MIN_TEST_SHARE)
    }

    /// What tests above their share may hold together: half the budget, so that the other
    /// half stays for tests within theirs.
    pub fn above_share(&self) -> u64 {
        self.memory / 2
    }
}

/// IPv6 prefixes wider than a peer's /64 whose /64s share: together they hold at most
/// `peers` peers' worth of every per-peer limit (`--ipv6-prefix-shares 56:4,48:8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixShare {
    /// The prefix length, 1..=63.
    pub len: u8,
    /// How many peers' worth of each per-peer limit the prefix holds together (at least 1).
    pub peers: u32,
}

/// A list of prefix shares that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{entry:?} is not a prefix share LEN:PEERS (LEN 1..=63, PEERS 1..=65536, like 56:4,48:8; \
     or none)"
)]
pub struct BadShare {
    pub entry: String,
}

impl PrefixShare {
    /// The default: a /56 holds 4 peers' worth, a /48 8.
    pub const DEFAULT: [PrefixShare; 2] = [
        PrefixShare { len: 56, peers: 4 },
        PrefixShare { len: 48, peers: 8 },
    ];

    /// `56:4,48:8` (or `none`: no sharing beyond the /64).
    pub fn parse_list(s: &str) -> Result<Vec<PrefixShare>, BadShare> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("none") {
            return Ok(Vec::new());
        }
        let mut v: Vec<PrefixShare> = t
            .split(',')
            .map(|e| {
                let bad = || BadShare {
                    entry: e.to_string(),
                };
                let (l, n) = e.trim().split_once(':').ok_or_else(bad)?;
                let len: u8 = l
                    .trim()
                    .trim_start_matches('/')
                    .parse()
                    .map_err(|_| bad())?;
                let peers: u32 = n.trim().parse().map_err(|_| bad())?;
                if !(1..=63).contains(&len) || !(1..=65_536).contains(&peers) {
                    return Err(bad());
                }
                Ok(PrefixShare { len, peers })
            })
            .collect::<Result<_, _>>()?;
        v.sort_by_key(|p| std::cmp::Reverse(p.len));
        v.dedup_by_key(|p| p.len);
        Ok(v)
    }
}

/// Both sets of limits, and the addresses allowed at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub peer: PeerLimits,
    pub server: ServerLimits,
    pub addrs: AddrPolicy,
    /// IPv6 prefixes whose /64s share their limits ([`PrefixShare::DEFAULT`]).
    pub prefixes: Vec<PrefixShare>,
}

impl Default for Limits {
    /// Defaults for a server left running on a routable host: a peer may hold 8 pending
    /// connections, 2 tests of 128 streams together, 8 MiB of control input and 64 MiB of
    /// data buffers; the server 256 pending connections, 64 tests, 1024 streams, 256 MiB of
    /// control input and 128 MiB of data buffers; a /56 holds 4 peers' worth, a /48 8.
    fn default() -> Limits {
        Limits {
            peer: PeerLimits {
                pending: 8,
                tests: 2,
                streams: 128,
                control_bytes: 8 << 20,
                memory: 64 << 20,
            },
            server: ServerLimits {
                pending: 256,
                tests: 64,
                streams: 1024,
                control_bytes: 256 << 20,
                memory: 128 << 20,
            },
            addrs: AddrPolicy::default(),
            prefixes: PrefixShare::DEFAULT.to_vec(),
        }
    }
}

/// What one peer (or the whole server) holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub pending: u32,
    pub tests: u32,
    pub streams: u32,
    pub control_bytes: u64,
    /// Data connections that admitted tests still expect: each raises the pending limit by
    /// one until the test's streams are set up ([`Guard::expect_streams`]), so a test's own
    /// streams are never refused as the peer's excess.
    pub connecting: u32,
    /// Bytes of data buffers its running tests hold.
    pub memory: u64,
}

/// What one test takes when admitted: its streams and its workers' data buffers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Demand {
    pub streams: u32,
    /// Bytes: every block and read buffer its workers allocate at this end.
    pub memory: u64,
}

impl Demand {
    /// `streams` streams and no buffers counted.
    pub fn streams(streams: u32) -> Demand {
        Demand { streams, memory: 0 }
    }
}

impl Usage {
    fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// Which limit a refusal hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The peer's own limit.
    Peer,
    /// The server-wide limit.
    Server,
    /// The peer's share of a server-wide limit that is over half taken while other peers
    /// hold tests too ([`Guard::admit_test`]).
    Share,
    /// The limit of an IPv6 prefix of this length whose /64s share ([`PrefixShare`]).
    Prefix(u8),
    /// The part of the memory budget tests above their share may hold together
    /// ([`ServerLimits::above_share`]).
    AboveShare,
}

impl Scope {
    fn words(self) -> String {
        match self {
            Scope::Peer => "per-address".into(),
            Scope::Server => "server-wide".into(),
            Scope::Share => {
                "this address's share (the server is busy with other addresses) of a".into()
            }
            Scope::Prefix(len) => format!("per-/{len} (shared by its /64s)"),
            Scope::AboveShare => "server-wide (tests above their share)".into(),
        }
    }
}

/// Bytes as MiB for a refusal's words (`16 MiB`, `0.12 MiB`).
fn mib(b: u64) -> String {
    let m = b as f64 / f64::from(1u32 << 20);
    if b % (1 << 20) == 0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.2} MiB")
    }
}

/// One peer's share of a server-wide `limit` once other peers hold tests too: an equal part
/// among them, this peer and one newcomer more, so that the greediest holders leave room for
/// an address that holds nothing (at least 1).
fn share(limit: u32, others: usize) -> u32 {
    let parts = u32::try_from(others).unwrap_or(u32::MAX).saturating_add(2);
    (limit / parts).max(1)
}

/// [`share`] of a limit in bytes.
fn share_u64(limit: u64, others: usize) -> u64 {
    let parts = u64::try_from(others).unwrap_or(u64::MAX).saturating_add(2);
    (limit / parts).max(1)
}

/// Why the guard said no.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The address lists refuse the peer.
    #[error("address refused: {reason}")]
    Denied { reason: String },
    #[error("{} limit of {limit} pending connections reached ({})", scope.words(), self.raise_with())]
    Pending { scope: Scope, limit: u32 },
    #[error("{} limit of {limit} running tests reached ({})", scope.words(), self.raise_with())]
    Tests { scope: Scope, limit: u32 },
    #[error(
        "{} limit of {limit} streams: {held} held, {asked} more asked for ({})",
        scope.words(),
        self.raise_with()
    )]
    Streams {
        scope: Scope,
        limit: u32,
        held: u32,
        asked: u32,
    },
    #[error("{} limit of {limit} bytes of control messages reached", scope.words())]
    ControlBytes { scope: Scope, limit: u64 },
    /// The test's data buffers (its block and read buffers, per worker) do not fit.
    #[error(
        "{} limit of {} of test buffers: {} held, {} more asked for ({})",
        scope.words(),
        mib(*limit),
        mib(*held),
        mib(*asked),
        self.raise_with()
    )]
    Memory {
        scope: Scope,
        limit: u64,
        held: u64,
        asked: u64,
    },
}

impl Refusal {
    /// The server option that sets the limit a refusal hit, in the refusal's words: the
    /// operator raises it there (`wirespeed server` and `wirespeed agent` take the same
    /// options).
    pub fn raise_with(&self) -> &'static str {
        match self {
            Refusal::Pending {
                scope: Scope::Peer, ..
            } => "raise it with the server's --max-pending-per-address",
            Refusal::Pending {
                scope: Scope::Server,
                ..
            } => "raise it with the server's --max-pending",
            Refusal::Tests {
                scope: Scope::Peer, ..
            } => "raise it with the server's --max-tests-per-address",
            Refusal::Tests {
                scope: Scope::Server,
                ..
            } => "raise it with the server's --max-tests",
            Refusal::Streams {
                scope: Scope::Peer, ..
            } => "raise it with the server's --max-streams-per-address",
            Refusal::Streams {
                scope: Scope::Server,
                ..
            } => "raise it with the server's --max-total-streams",
            // a share of a busy server: no one option raises it (the server-wide limit does)
            Refusal::Tests {
                scope: Scope::Share,
                ..
            } => "a fair share of --max-tests among the addresses holding tests",
            Refusal::Streams {
                scope: Scope::Share,
                ..
            } => "a fair share of --max-total-streams among the addresses holding tests",
            Refusal::Memory {
                scope: Scope::Peer, ..
            } => "raise it with the server's --max-memory-per-address, or ask for smaller blocks (-l) or fewer streams (-P)",
            Refusal::Memory {
                scope: Scope::Server | Scope::AboveShare,
                ..
            } => "raise it with the server's --max-memory, or ask for smaller blocks (-l) or fewer streams (-P)",
            Refusal::Memory {
                scope: Scope::Share,
                ..
            } => "a fair share of --max-memory among the addresses holding tests",
            Refusal::Pending {
                scope: Scope::Prefix(_),
                ..
            }
            | Refusal::Tests {
                scope: Scope::Prefix(_),
                ..
            }
            | Refusal::Streams {
                scope: Scope::Prefix(_),
                ..
            }
            | Refusal::Memory {
                scope: Scope::Prefix(_),
                ..
            } => "raise it with the server's --ipv6-prefix-shares",
            Refusal::Pending {
                scope: Scope::Share | Scope::AboveShare,
                ..
            }
            | Refusal::Tests {
                scope: Scope::AboveShare,
                ..
            }
            | Refusal::Streams {
                scope: Scope::AboveShare,
                ..
            }
            | Refusal::Denied { .. }
            | Refusal::ControlBytes { .. } => "",
        }
    }

    /// What to send the peer, in iperf3's terms. Too many streams is iperf3's own error
    /// (`IENUMSTREAMS`, "number of parallel streams too large"); everything else is
    /// `ACCESS_DENIED`, which an iperf3 client reports as a busy server. A wirespeed client
    /// also gets the reason ([`Decline::Error`]'s detail) where a `SERVER_ERROR` is sent.
    /// Buffers that could never fit (more than the limit itself, not only more than is free
    /// now) are iperf3's `IEBLOCKSIZE` ("block size too large"); buffers that do not fit now
    /// are a busy server.
    pub fn decline(&self) -> Decline {
        match self {
            Refusal::Streams { .. } => Decline::Error {
                i_errno: errno::IENUMSTREAMS,
                errno: 0,
                detail: self.to_string(),
            },
            Refusal::Memory {
                scope,
                limit,
                asked,
                ..
            } if *scope != Scope::Share && asked > limit => Decline::Error {
                i_errno: errno::IEBLOCKSIZE,
                errno: 0,
                detail: self.to_string(),
            },
            _ => Decline::AccessDenied,
        }
    }

    /// The server's log line for it: `refused 192.0.2.7: per-address limit of ...`.
    pub fn log_line(&self, ip: IpAddr) -> String {
        format!("refused {}: {self}", canonical(ip))
    }
}

/// An IPv6 prefix wider than a /64 that its /64s share ([`PrefixShare`]): its length and the
/// upper 64 bits of the address with the rest cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedPrefix {
    pub len: u8,
    pub bits: u64,
}

impl SharedPrefix {
    fn of(p64: u64, len: u8) -> SharedPrefix {
        let len = len.clamp(1, 63);
        SharedPrefix {
            len,
            bits: p64 & !(u64::MAX >> len),
        }
    }
}

impl std::fmt::Display for SharedPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = Ipv6Addr::from(u128::from(self.bits) << 64);
        write!(f, "{a}/{}", self.len)
    }
}

/// The accounting: what each peer, each shared IPv6 prefix and the server hold, against the
/// limits.
#[derive(Debug, Clone)]
pub struct Guard {
    limits: Limits,
    peers: HashMap<PeerKey, Usage>,
    /// What the /64s inside each shared prefix hold together.
    prefixes: HashMap<SharedPrefix, Usage>,
    total: Usage,
    /// Memory held by tests above their share ([`ServerLimits::above_share`]).
    above_share: u64,
}

impl Guard {
    pub fn new(limits: Limits) -> Guard {
        Guard {
            limits,
            peers: HashMap::new(),
            prefixes: HashMap::new(),
            total: Usage::default(),
            above_share: 0,
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// What `peer` holds now.
    pub fn usage(&self, peer: PeerKey) -> Usage {
        self.peers.get(&peer).copied().unwrap_or_default()
    }

    /// What the /64s inside `prefix` hold together now.
    pub fn prefix_usage(&self, prefix: SharedPrefix) -> Usage {
        self.prefixes.get(&prefix).copied().unwrap_or_default()
    }

    /// What the whole server holds now.
    pub fn total(&self) -> Usage {
        self.total
    }

    /// Memory held by tests above their share of the budget.
    pub fn above_share(&self) -> u64 {
        self.above_share
    }

    /// Peers holding anything.
    pub fn peers(&self) -> usize {
        self.peers.len()
    }

    /// The shared prefixes `peer` is inside, narrowest first (none for IPv4).
    pub fn shared_prefixes(&self, peer: PeerKey) -> Vec<SharedPrefix> {
        match peer {
            PeerKey::V4(_) => Vec::new(),
            PeerKey::V6Prefix(p) => self
                .limits
                .prefixes
                .iter()
                .map(|s| SharedPrefix::of(p, s.len))
                .collect(),
        }
    }

    /// Every holder `peer` is counted in, with the limits that apply to it: the peer itself,
    /// then each shared prefix it is inside.
    fn holders(&self, peer: PeerKey) -> Vec<(Scope, Usage, PeerLimits)> {
        let mut v = vec![(Scope::Peer, self.usage(peer), self.limits.peer)];
        if let PeerKey::V6Prefix(p) = peer {
            for s in &self.limits.prefixes {
                let k = SharedPrefix::of(p, s.len);
                v.push((
                    Scope::Prefix(s.len),
                    self.prefix_usage(k),
                    self.limits.peer.times(s.peers.max(1)),
                ));
            }
        }
        v
    }

    /// Apply `f` to what `peer` holds and to what each of its shared prefixes holds (not the
    /// total), forgetting holders left with nothing.
    fn each(&mut self, peer: PeerKey, f: impl Fn(&mut Usage)) {
        f(self.peers.entry(peer).or_default());
        if self.peers.get(&peer).is_some_and(Usage::is_zero) {
            self.peers.remove(&peer);
        }
        for k in self.shared_prefixes(peer) {
            f(self.prefixes.entry(k).or_default());
            if self.prefixes.get(&k).is_some_and(Usage::is_zero) {
                self.prefixes.remove(&k);
            }
        }
    }

    /// A connection was accepted from `ip`: check the address lists and the pending limits,
    /// and count it as pending. Call before reading anything from it.
    pub fn admit_connection(&mut self, ip: IpAddr) -> Result<PeerKey, Refusal> {
        self.limits.addrs.check(ip)?;
        let peer = PeerKey::of(ip);
        for (scope, u, l) in self.holders(peer) {
            if u.pending >= l.pending.saturating_add(u.connecting) {
                return Err(Refusal::Pending {
                    scope,
                    limit: l.pending,
                });
            }
        }
        let server = self.limits.server;
        if self.total.pending >= server.pending.saturating_add(self.total.connecting) {
            return Err(Refusal::Pending {
                scope: Scope::Server,
                limit: server.pending,
            });
        }
        self.each(peer, |u| u.pending += 1);
        self.total.pending += 1;
        Ok(peer)
    }

    /// A pending connection closed (or was refused) before it became a test.
    pub fn connection_closed(&mut self, peer: PeerKey) {
        if self.usage(peer).pending > 0 {
            self.each(peer, |u| u.pending = u.pending.saturating_sub(1));
            self.total.pending = self.total.pending.saturating_sub(1);
        }
    }

    /// The peer's parameters were read and passed the checks: a test of `streams` streams
    /// may start. The connection stays counted as pending until [`Guard::connection_closed`]
    /// is called for it — call that now, or keep it pending while the streams connect.
    pub fn admit_test(&mut self, peer: PeerKey, streams: u32) -> Result<(), Refusal> {
        self.admit(peer, Demand::streams(streams))
    }

    /// A test of `d.streams` streams whose workers hold `d.memory` bytes of buffers may start
    /// (as [`Guard::admit_test`], buffers counted too): per peer, per shared prefix, against
    /// the server's budget (a test above its share only from the part for such tests), and,
    /// past half of a server-wide limit while other peers hold tests, within this peer's
    /// share of it.
    pub fn admit(&mut self, peer: PeerKey, d: Demand) -> Result<(), Refusal> {
        let server = self.limits.server;
        let (streams, memory) = (d.streams, d.memory);
        let holders = self.holders(peer);
        for &(scope, u, l) in &holders {
            if u.tests >= l.tests {
                return Err(Refusal::Tests {
                    scope,
                    limit: l.tests,
                });
            }
        }
        if self.total.tests >= server.tests {
            return Err(Refusal::Tests {
                scope: Scope::Server,
                limit: server.tests,
            });
        }
        for &(scope, u, l) in &holders {
            if u64::from(u.streams) + u64::from(streams) > u64::from(l.streams) {
                return Err(Refusal::Streams {
                    scope,
                    limit: l.streams,
                    held: u.streams,
                    asked: streams,
                });
            }
        }
        if u64::from(self.total.streams) + u64::from(streams) > u64::from(server.streams) {
            return Err(Refusal::Streams {
                scope: Scope::Server,
                limit: server.streams,
                held: self.total.streams,
                asked: streams,
            });
        }
        for &(scope, u, l) in &holders {
            if u.memory.saturating_add(memory) > l.memory {
                return Err(Refusal::Memory {
                    scope,
                    limit: l.memory,
                    held: u.memory,
                    asked: memory,
                });
            }
        }
        if self.total.memory.saturating_add(memory) > server.memory {
            return Err(Refusal::Memory {
                scope: Scope::Server,
                limit: server.memory,
                held: self.total.memory,
                asked: memory,
            });
        }
        let above = memory > server.test_share();
        if above && self.above_share.saturating_add(memory) > server.above_share() {
            return Err(Refusal::Memory {
                scope: Scope::AboveShare,
                limit: server.above_share(),
                held: self.above_share,
                asked: memory,
            });
        }
        let u = self.usage(peer);
        // Fairness: past half of a server-wide limit, while other addresses hold tests, one
        // address gets no more than its share, so many greedy addresses cannot take it all
        // and leave none for a newcomer.
        let others = self
            .peers
            .iter()
            .filter(|(k, v)| **k != peer && v.tests > 0)
            .count();
        if others > 0 {
            let tests_share = share(server.tests, others);
            if self.total.tests + 1 > server.tests / 2 && u.tests + 1 > tests_share {
                return Err(Refusal::Tests {
                    scope: Scope::Share,
                    limit: tests_share,
                });
            }
            let streams_share = share(server.streams, others);
            if u64::from(self.total.streams) + u64::from(streams) > u64::from(server.streams / 2)
                && u64::from(u.streams) + u64::from(streams) > u64::from(streams_share)
            {
                return Err(Refusal::Streams {
                    scope: Scope::Share,
                    limit: streams_share,
                    held: u.streams,
                    asked: streams,
                });
            }
            let memory_share = share_u64(server.memory, others);
            if self.total.memory.saturating_add(memory) > server.memory / 2
                && u.memory.saturating_add(memory) > memory_share
            {
                return Err(Refusal::Memory {
                    scope: Scope::Share,
                    limit: memory_share,
                    held: u.memory,
                    asked: memory,
                });
            }
        }
        self.each(peer, |e| {
            e.tests += 1;
            e.streams += streams;
            e.memory += memory;
        });
        self.total.tests += 1;
        self.total.streams += streams;
        self.total.memory += memory;
        if above {
            self.above_share += memory;
        }
        Ok(())
    }

    /// A test admitted with `streams` streams ended (however it ended).
    pub fn test_done(&mut self, peer: PeerKey, streams: u32) {
        self.release(peer, Demand::streams(streams));
    }

    /// A test admitted with [`Guard::admit`] and `d` ended (however it ended).
    pub fn release(&mut self, peer: PeerKey, d: Demand) {
        let u = self.usage(peer);
        if u.tests == 0 {
            return;
        }
        let s = d.streams.min(u.streams);
        let m = d.memory.min(u.memory);
        self.each(peer, |e| {
            e.tests = e.tests.saturating_sub(1);
            e.streams = e.streams.saturating_sub(s);
            e.memory = e.memory.saturating_sub(m);
        });
        self.total.tests = self.total.tests.saturating_sub(1);
        self.total.streams = self.total.streams.saturating_sub(s);
        self.total.memory = self.total.memory.saturating_sub(m);
        if d.memory > self.limits.server.test_share() {
            self.above_share = self.above_share.saturating_sub(m);
        }
    }

    /// An admitted test of `peer` now waits for `n` data connections: until
    /// [`Guard::streams_settled`], the peer (and the server) may hold `n` more pending
    /// connections.
    pub fn expect_streams(&mut self, peer: PeerKey, n: u32) {
        self.each(peer, |u| u.connecting += n);
        self.total.connecting += n;
    }

    /// The test that expected `n` data connections has them (or gave up waiting).
    pub fn streams_settled(&mut self, peer: PeerKey, n: u32) {
        let n = n.min(self.usage(peer).connecting);
        self.each(peer, |u| u.connecting = u.connecting.saturating_sub(n));
        self.total.connecting = self.total.connecting.saturating_sub(n);
    }

    /// `n` bytes from the peer's control connection arrived (or are about to be buffered).
    /// Prefer a [`ControlLedger`], which gives them back when the connection ends.
    pub fn add_control_bytes(&mut self, peer: PeerKey, n: u64) -> Result<(), Refusal> {
        for (scope, u, l) in self.holders(peer) {
            if u.control_bytes.saturating_add(n) > l.control_bytes {
                return Err(Refusal::ControlBytes {
                    scope,
                    limit: l.control_bytes,
                });
            }
        }
        let server = self.limits.server;
        if self.total.control_bytes.saturating_add(n) > server.control_bytes {
            return Err(Refusal::ControlBytes {
                scope: Scope::Server,
                limit: server.control_bytes,
            });
        }
        self.each(peer, |u| u.control_bytes += n);
        self.total.control_bytes += n;
        Ok(())
    }

    /// `n` control bytes are given back (their connection ended).
    pub fn release_control_bytes(&mut self, peer: PeerKey, n: u64) {
        let n = n.min(self.usage(peer).control_bytes);
        self.each(peer, |u| {
            u.control_bytes = u.control_bytes.saturating_sub(n)
        });
        self.total.control_bytes = self.total.control_bytes.saturating_sub(n);
    }
}

/// The control bytes one control connection was charged, from its first byte to its end: the
/// per-address and server-wide budgets hold across every phase of the connection (before
/// admission and while its test runs), and [`ControlLedger::close`] gives back the whole share
/// when the connection ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlLedger {
    peer: PeerKey,
    charged: u64,
}

impl ControlLedger {
    pub fn new(peer: PeerKey) -> ControlLedger {
        ControlLedger { peer, charged: 0 }
    }

    pub fn peer(&self) -> PeerKey {
        self.peer
    }

    /// Bytes charged so far (and not given back).
    pub fn charged(&self) -> u64 {
        self.charged
    }

    /// `n` more bytes arrived on the connection: refused (nothing charged) when the peer's or
    /// the server's budget would be exceeded — the connection should end.
    pub fn charge(&mut self, g: &mut Guard, n: u64) -> Result<(), Refusal> {
        g.add_control_bytes(self.peer, n)?;
        self.charged += n;
        Ok(())
    }

    /// The connection ended: give back everything it was charged (once; later calls do
    /// nothing).
    pub fn close(&mut self, g: &mut Guard) {
        g.release_control_bytes(self.peer, self.charged);
        self.charged = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn greedy_addresses_leave_room_for_a_newcomer() {
        let mut g = Guard::new(Limits::default());
        // 128 streams from each of 8 addresses (the per-address limit): past half of the
        // server's 1024, the 8th would leave nothing; it gets its share instead
        let mut admitted = 0;
        for k in 1..=8 {
            let p = PeerKey::of(ip(&format!("127.0.1.{k}")));
            if g.admit_test(p, 128).is_ok() {
                admitted += 1;
            } else {
                let e = g.admit_test(p, 128).unwrap_err();
                assert!(
                    matches!(
                        e,
                        Refusal::Streams {
                            scope: Scope::Share,
                            limit: 113,
                            ..
                        }
                    ),
                    "{e:?}"
                );
                assert!(e.to_string().contains("share"), "{e}");
            }
        }
        assert_eq!(admitted, 7);
        // a newcomer with a real test still gets in
        let newcomer = PeerKey::of(ip("127.0.2.1"));
        g.admit_test(newcomer, 8).unwrap();
        // tests too, on a 6-test server: an address alone may take its whole per-address 3;
        // past half, with another address holding tests, a second address gets its share
        let mut l = Limits::default();
        l.server.tests = 6;
        l.peer.tests = 3;
        let mut g = Guard::new(l);
        let a = PeerKey::of(ip("127.0.4.1"));
        let b = PeerKey::of(ip("127.0.4.2"));
        g.admit_test(a, 1).unwrap();
        g.admit_test(a, 1).unwrap();
        g.admit_test(a, 1).unwrap(); // alone: the whole per-address limit
        g.admit_test(b, 1).unwrap();
        // past half, with `a` holding tests: b's share is 6 / (1 + 2) = 2
        g.admit_test(b, 1).unwrap();
        let e = g.admit_test(b, 1).unwrap_err();
        assert!(
            matches!(
                e,
                Refusal::Tests {
                    scope: Scope::Share,
                    limit: 2
                }
            ),
            "{e:?}"
        );
        // and the last place stays for a newcomer
        g.admit_test(newcomer, 1).unwrap();
    }

    #[test]
    fn a_lone_address_may_use_the_whole_server() {
        let mut l = Limits::default();
        l.peer.streams = 1024;
        let mut g = Guard::new(l);
        let p = PeerKey::of(ip("127.0.0.1"));
        g.admit_test(p, 1000).unwrap();
    }

    fn small() -> Limits {
        Limits {
            peer: PeerLimits {
                pending: 2,
                tests: 1,
                streams: 8,
                control_bytes: 100,
                memory: 1 << 30,
            },
            server: ServerLimits {
                pending: 3,
                tests: 2,
                streams: 12,
                control_bytes: 150,
                memory: 1 << 30,
            },
            addrs: AddrPolicy::default(),
            prefixes: Vec::new(),
        }
    }

    #[test]
    fn peers_are_ipv4_addresses_and_ipv6_64s() {
        assert_eq!(
            PeerKey::of(ip("192.0.2.1")),
            PeerKey::V4("192.0.2.1".parse().unwrap())
        );
        assert_eq!(
            PeerKey::of(ip("::ffff:192.0.2.1")),
            PeerKey::of(ip("192.0.2.1"))
        );
        assert_eq!(
            PeerKey::of(ip("2001:db8:1:2::1")),
            PeerKey::of(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        );
        assert_ne!(
            PeerKey::of(ip("2001:db8:1:2::1")),
            PeerKey::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            PeerKey::of(ip("2001:db8:1:2::9")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_ne!(PeerKey::of(ip("192.0.2.1")), PeerKey::of(ip("192.0.2.2")));
    }

    #[test]
    fn one_busy_address_never_locks_out_another() {
        let mut g = Guard::new(small());
        let a = ip("127.0.0.1");
        let pa = g.admit_connection(a).unwrap();
        g.admit_connection(a).unwrap();
        // The third from the same address is refused by its own limit...
        let e = g.admit_connection(a).unwrap_err();
        assert_eq!(
            e,
            Refusal::Pending {
                scope: Scope::Peer,
                limit: 2
            }
        );
        assert_eq!(e.decline(), Decline::AccessDenied);
        assert_eq!(
            e.log_line(a),
            "refused 127.0.0.1: per-address limit of 2 pending connections reached \
             (raise it with the server's --max-pending-per-address)"
        );
        // ...while another address still gets in.
        let b = g.admit_connection(ip("127.0.0.2")).unwrap();
        assert_eq!(g.total().pending, 3);
        // The server-wide limit applies to everyone once reached.
        assert_eq!(
            g.admit_connection(ip("127.0.0.3")).unwrap_err(),
            Refusal::Pending {
                scope: Scope::Server,
                limit: 3
            }
        );
        g.connection_closed(pa);
        g.connection_closed(pa);
        g.connection_closed(pa); // one too many: harmless
        assert_eq!(g.usage(pa), Usage::default());
        assert_eq!(g.total().pending, 1);
        g.connection_closed(b);
        assert_eq!(g.total(), Usage::default());
        assert_eq!(g.peers(), 0, "nothing kept for peers that hold nothing");
    }

    #[test]
    fn a_tests_own_data_connections_raise_its_peers_pending_limit() {
        let mut g = Guard::new(small());
        let a = ip("192.0.2.1");
        let p = g.admit_connection(a).unwrap();
        g.admit_test(p, 4).unwrap();
        g.connection_closed(p);
        g.expect_streams(p, 4);
        // Six connections at once, past the per-address limit of 2 (and the server-wide
        // 3): four of them may be the test's own.
        for _ in 0..6 {
            g.admit_connection(a).unwrap();
        }
        assert!(g.admit_connection(a).is_err(), "a seventh is excess");
        for _ in 0..6 {
            g.connection_closed(p);
        }
        g.streams_settled(p, 4);
        g.admit_connection(a).unwrap();
        g.admit_connection(a).unwrap();
        assert!(
            g.admit_connection(a).is_err(),
            "the allowance ends with setup"
        );
        g.connection_closed(p);
        g.connection_closed(p);
        g.test_done(p, 4);
        assert_eq!(g.total(), Usage::default());
    }

    #[test]
    fn tests_and_streams_per_peer_and_server_wide() {
        let mut g = Guard::new(small());
        let a = g.admit_connection(ip("10.0.0.1")).unwrap();
        g.admit_test(a, 8).unwrap();
        assert_eq!(
            g.admit_test(a, 1).unwrap_err(),
            Refusal::Tests {
                scope: Scope::Peer,
                limit: 1
            }
        );
        let b = g.admit_connection(ip("10.0.0.2")).unwrap();
        let e = g.admit_test(b, 9).unwrap_err();
        assert_eq!(
            e,
            Refusal::Streams {
                scope: Scope::Peer,
                limit: 8,
                held: 0,
                asked: 9
            }
        );
        match e.decline() {
            Decline::Error {
                i_errno, detail, ..
            } => {
                assert_eq!(i_errno, errno::IENUMSTREAMS);
                assert!(
                    detail.contains("per-address limit of 8 streams"),
                    "{detail}"
                );
            }
            other => panic!("{other:?}"),
        }
        let e = g.admit_test(b, 5).unwrap_err();
        assert_eq!(
            e,
            Refusal::Streams {
                scope: Scope::Server,
                limit: 12,
                held: 8,
                asked: 5
            }
        );
        g.admit_test(b, 4).unwrap();
        let c = g.admit_connection(ip("10.0.0.3")).unwrap();
        assert_eq!(
            g.admit_test(c, 0).unwrap_err(),
            Refusal::Tests {
                scope: Scope::Server,
                limit: 2
            }
        );
        g.test_done(a, 8);
        g.admit_test(c, 1).unwrap();
        assert_eq!(g.total().tests, 2);
        assert_eq!(g.total().streams, 5);
        g.test_done(b, 4);
        g.test_done(c, 1);
        for p in [a, b, c] {
            g.connection_closed(p);
        }
        assert_eq!(g.total(), Usage::default());
        assert_eq!(g.peers(), 0);
    }

    #[test]
    fn control_bytes_are_bounded_per_peer_and_in_total() {
        let mut g = Guard::new(small());
        let a = g.admit_connection(ip("2001:db8::1")).unwrap();
        let a2 = g.admit_connection(ip("2001:db8::2")).unwrap();
        assert_eq!(a, a2, "same /64");
        g.add_control_bytes(a, 60).unwrap();
        assert_eq!(
            g.add_control_bytes(a2, 41).unwrap_err(),
            Refusal::ControlBytes {
                scope: Scope::Peer,
                limit: 100
            }
        );
        let b = g.admit_connection(ip("2001:db8:0:1::1")).unwrap();
        g.add_control_bytes(b, 90).unwrap();
        assert_eq!(
            g.add_control_bytes(a, 1).unwrap_err(),
            Refusal::ControlBytes {
                scope: Scope::Server,
                limit: 150
            }
        );
        g.release_control_bytes(a, 60);
        g.add_control_bytes(a, 40).unwrap();
        g.release_control_bytes(a, 1000);
        g.release_control_bytes(b, 90);
        assert_eq!(g.total().control_bytes, 0);
    }

    #[test]
    fn allow_and_deny_lists() {
        let p = AddrPolicy::new(
            &["192.0.2.0/24", "2001:db8::/32"],
            &["192.0.2.66", "10.0.0.0/8"],
        )
        .unwrap();
        assert!(p.check(ip("192.0.2.1")).is_ok());
        assert!(p.check(ip("::ffff:192.0.2.1")).is_ok(), "IPv4-mapped");
        assert!(p.check(ip("2001:db8:ffff::1")).is_ok());
        let e = p.check(ip("192.0.2.66")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "address refused: in the deny list (192.0.2.66/32)"
        );
        assert!(p
            .check(ip("198.51.100.1"))
            .unwrap_err()
            .to_string()
            .contains("not in the allow list"));
        assert!(
            p.check(ip("10.1.2.3")).is_err(),
            "deny wins even when not allowed anyway"
        );
        let open = AddrPolicy::new::<&str>(&[], &[]).unwrap();
        assert!(open.is_open() && open.check(ip("203.0.113.9")).is_ok());
        let only_deny = AddrPolicy::new(&[""], &["203.0.113.0/24,198.51.100.0/24"]).unwrap();
        assert!(only_deny.check(ip("198.51.100.200")).is_err());
        assert!(only_deny.check(ip("192.0.2.1")).is_ok());
        assert_eq!(
            AddrPolicy::new(&["192.0.2.0/33"], &[]).unwrap_err().entry,
            "192.0.2.0/33"
        );
        assert!(AddrPolicy::new(&["example.com"], &[]).is_err());
        // A prefix with host bits set is taken as its network.
        let p = AddrPolicy::new(&["192.0.2.77/24"], &[]).unwrap();
        assert!(p.check(ip("192.0.2.1")).is_ok());

        let mut g = Guard::new(Limits {
            addrs: AddrPolicy::new(&[], &["127.0.0.1"]).unwrap(),
            ..Limits::default()
        });
        assert!(matches!(
            g.admit_connection(ip("127.0.0.1")),
            Err(Refusal::Denied { .. })
        ));
        assert_eq!(g.total(), Usage::default());
        assert!(g.admit_connection(ip("127.0.0.2")).is_ok());
    }

    #[test]
    fn control_bytes_count_in_every_phase_until_the_connection_ends() {
        let mut g = Guard::new(small());
        let a = g.admit_connection(ip("192.0.2.1")).unwrap();
        let mut ctl = ControlLedger::new(a);
        // Before admission: cookie and parameters.
        ctl.charge(&mut g, 37).unwrap();
        ctl.charge(&mut g, 40).unwrap();
        g.admit_test(a, 1).unwrap();
        g.connection_closed(a);
        // While the test runs the bytes stay charged: the parameters' 77 and 20 state
        // bytes reach the peer's 100 ...
        for _ in 0..20 {
            ctl.charge(&mut g, 1).unwrap();
        }
        assert_eq!(ctl.charged(), 97);
        assert_eq!(g.usage(a).control_bytes, 97);
        // ... and a results message of 4 bytes is over it: refused, nothing charged.
        let e = ctl.charge(&mut g, 4).unwrap_err();
        assert_eq!(
            e,
            Refusal::ControlBytes {
                scope: Scope::Peer,
                limit: 100
            }
        );
        assert_eq!(e.decline(), Decline::AccessDenied);
        assert!(e
            .to_string()
            .contains("per-address limit of 100 bytes of control"));
        assert_eq!(ctl.charged(), 97);
        // Another address is not held back by this one (its own 100; the server's 150).
        let b = g.admit_connection(ip("192.0.2.2")).unwrap();
        let mut other = ControlLedger::new(b);
        other.charge(&mut g, 50).unwrap();
        // ... but the server-wide budget holds: 97 + 50 + 4 > 150.
        assert_eq!(
            other.charge(&mut g, 4).unwrap_err(),
            Refusal::ControlBytes {
                scope: Scope::Server,
                limit: 150
            }
        );
        // The connection ends: everything it was charged comes back, once.
        g.test_done(a, 1);
        ctl.close(&mut g);
        ctl.close(&mut g);
        assert_eq!(g.usage(a), Usage::default());
        assert_eq!(g.total().control_bytes, 50);
        other.close(&mut g);
        g.connection_closed(b);
        assert_eq!(g.total(), Usage::default());
        assert_eq!(g.peers(), 0);
    }

    const MIB: u64 = 1 << 20;

    /// Issue 37, attack 1: `-R -l 16M -P 2` from many addresses held a 16 MiB block per
    /// worker each (2 GiB). Under the default budget (128 MiB, 64 tests: an 8 MiB share per
    /// test), tests above their share hold at most half of it together; a plain test still
    /// gets in, and a test that could never fit is iperf3's "block size too large".
    #[test]
    fn test_buffers_come_out_of_a_budget_and_big_ones_out_of_half_of_it() {
        let l = Limits::default();
        assert_eq!(l.server.test_share(), 8 * MIB);
        assert_eq!(l.server.above_share(), 64 * MIB);
        let mut g = Guard::new(l);
        let attack = Demand {
            streams: 2,
            memory: 32 * MIB,
        };
        let mut admitted = 0;
        let mut last = None;
        for a in 1..=32u8 {
            let p = PeerKey::of(ip(&format!("127.0.3.{a}")));
            for _ in 0..2 {
                match g.admit(p, attack) {
                    Ok(()) => admitted += 1,
                    Err(e) => last = Some(e),
                }
            }
        }
        assert_eq!(admitted, 2, "64 MiB of tests above their share");
        assert_eq!(g.total().memory, 64 * MIB);
        let e = last.unwrap();
        assert_eq!(
            e,
            Refusal::Memory {
                scope: Scope::AboveShare,
                limit: 64 * MIB,
                held: 64 * MIB,
                asked: 32 * MIB
            }
        );
        assert_eq!(e.decline(), Decline::AccessDenied, "busy, not wrong");
        assert_eq!(
            e.to_string(),
            "server-wide (tests above their share) limit of 64 MiB of test buffers: 64 MiB held, \
             32 MiB more asked for (raise it with the server's --max-memory, or ask for smaller \
             blocks (-l) or fewer streams (-P))"
        );
        assert!(
            e.to_string()
                .contains("64 MiB of test buffers: 64 MiB held, 32 MiB more asked for"),
            "{e}"
        );
        // a plain test (a 1 MiB read buffer) from another address is admitted
        let real = PeerKey::of(ip("127.0.0.2"));
        g.admit(
            real,
            Demand {
                streams: 1,
                memory: MIB,
            },
        )
        .unwrap();
        // a test that could never fit: more than the per-address limit
        let huge = g
            .admit(
                PeerKey::of(ip("127.0.9.1")),
                Demand {
                    streams: 8,
                    memory: 128 * MIB,
                },
            )
            .unwrap_err();
        assert!(
            matches!(
                huge,
                Refusal::Memory {
                    scope: Scope::Peer,
                    ..
                }
            ),
            "{huge:?}"
        );
        assert!(matches!(
            huge.decline(),
            Decline::Error {
                i_errno: errno::IEBLOCKSIZE,
                ..
            }
        ));
        // everything comes back
        g.release(
            real,
            Demand {
                streams: 1,
                memory: MIB,
            },
        );
        for a in 1..=32u8 {
            let p = PeerKey::of(ip(&format!("127.0.3.{a}")));
            while g.usage(p).tests > 0 {
                g.release(p, attack);
            }
        }
        assert_eq!(g.total(), Usage::default());
        assert_eq!(g.above_share(), 0);
        assert_eq!(g.peers(), 0);
    }

    #[test]
    fn small_tests_fill_the_budget_by_address_by_share_and_up_to_the_server_limit() {
        let mut l = Limits::default();
        l.server.memory = 40 * MIB;
        l.peer.memory = 16 * MIB;
        l.peer.tests = 3;
        let mut g = Guard::new(l);
        // 8 MiB is within a test's share (at least 8 MiB)
        let small = Demand {
            streams: 1,
            memory: 8 * MIB,
        };
        let p = |a: &str| PeerKey::of(ip(a));
        g.admit(p("192.0.2.1"), small).unwrap();
        g.admit(p("192.0.2.1"), small).unwrap();
        assert_eq!(
            g.admit(p("192.0.2.1"), small).unwrap_err(),
            Refusal::Memory {
                scope: Scope::Peer,
                limit: 16 * MIB,
                held: 16 * MIB,
                asked: 8 * MIB
            }
        );
        // past half (20 MiB) with another address holding: a share of 40 / 3
        g.admit(p("192.0.2.2"), small).unwrap();
        let e = g.admit(p("192.0.2.2"), small).unwrap_err();
        assert!(
            matches!(
                e,
                Refusal::Memory {
                    scope: Scope::Share,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.decline(), Decline::AccessDenied);
        g.admit(p("192.0.2.3"), small).unwrap();
        g.admit(p("192.0.2.4"), small).unwrap();
        assert_eq!(g.total().memory, 40 * MIB);
        assert_eq!(g.above_share(), 0);
        let e = g.admit(p("192.0.2.5"), small).unwrap_err();
        assert_eq!(
            e,
            Refusal::Memory {
                scope: Scope::Server,
                limit: 40 * MIB,
                held: 40 * MIB,
                asked: 8 * MIB
            }
        );
        assert_eq!(e.decline(), Decline::AccessDenied);
        assert!(e.to_string().contains("--max-memory"), "{e}");
    }

    /// Issue 37, attack 4: two tests from each of 64 /64s of one /48 took all 64 tests. The
    /// /64s of a /56 and of a /48 share: 4 and 8 peers' worth of each limit by default.
    #[test]
    fn the_64s_of_one_site_share_their_prefixes_limits() {
        let mut g = Guard::new(Limits::default());
        let mut admitted = 0;
        for k in 0..64u32 {
            // 16 /56s of 4 /64s each, all in 2001:db8:1::/48
            let a = format!("2001:db8:1:{:x}::1", ((k / 4) << 8) | (k % 4));
            let p = g.admit_connection(ip(&a)).unwrap();
            g.connection_closed(p);
            for _ in 0..2 {
                if g.admit_test(p, 1).is_ok() {
                    admitted += 1;
                }
            }
        }
        assert_eq!(admitted, 16, "8 peers' worth of 2 tests for the /48");
        let site = SharedPrefix::of(0x2001_0db8_0001_0000, 48);
        assert_eq!(site.to_string(), "2001:db8:1::/48");
        assert_eq!(g.prefix_usage(site).tests, 16);
        let p = PeerKey::of(ip("2001:db8:1:ff00::1"));
        let e = g.admit_test(p, 1).unwrap_err();
        assert_eq!(
            e,
            Refusal::Tests {
                scope: Scope::Prefix(48),
                limit: 16
            }
        );
        assert!(
            e.to_string()
                .starts_with("per-/48 (shared by its /64s) limit of 16 running tests"),
            "{e}"
        );
        assert!(e.to_string().contains("--ipv6-prefix-shares"), "{e}");
        // another /48 is served
        g.admit_test(PeerKey::of(ip("2001:db8:2::1")), 1).unwrap();
        // the /56: four /64s of 2001:db8:7:100::/56 take its 8 tests
        let mut g = Guard::new(Limits::default());
        for k in 0..5u32 {
            let p = PeerKey::of(ip(&format!("2001:db8:7:1{k:02x}::1")));
            let r = (g.admit_test(p, 1), g.admit_test(p, 1));
            if k < 4 {
                assert!(r.0.is_ok() && r.1.is_ok());
            } else {
                assert_eq!(
                    r.0.unwrap_err(),
                    Refusal::Tests {
                        scope: Scope::Prefix(56),
                        limit: 8
                    }
                );
            }
        }
        // pending connections too: a /48 holds 8 x 8
        let mut g = Guard::new(Limits::default());
        let mut pending = 0;
        for k in 0..64u32 {
            for _ in 0..8 {
                if g.admit_connection(ip(&format!("2001:db8:1:{k:x}00::1")))
                    .is_ok()
                {
                    pending += 1;
                }
            }
        }
        assert_eq!(pending, 64);
        assert!(g.admit_connection(ip("2001:db8:3::1")).is_ok());
        // IPv4 addresses share nothing
        assert!(g.shared_prefixes(PeerKey::of(ip("192.0.2.1"))).is_empty());
    }

    #[test]
    fn prefix_shares_parse_from_the_option() {
        assert_eq!(
            PrefixShare::parse_list("48:8, 56:4").unwrap(),
            PrefixShare::DEFAULT.to_vec()
        );
        assert_eq!(PrefixShare::parse_list("none").unwrap(), vec![]);
        assert_eq!(
            PrefixShare::parse_list("/40:16").unwrap(),
            vec![PrefixShare { len: 40, peers: 16 }]
        );
        for bad in ["", "64:2", "0:1", "48", "48:0", "48:x", "56:4,"] {
            assert!(PrefixShare::parse_list(bad).is_err(), "{bad:?}");
        }
    }
}
