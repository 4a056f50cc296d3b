//! UDP datapath (issue 3): batched, segmented, paced senders and batched,
//! coalescing receivers with exact loss/jitter accounting.
//!
//! # API (analogous to the TCP workers)
//!
//! The engine does the iperf3 UDP stream handshake itself (the 4-byte
//! "9876"/"6789" exchange), `connect()`s each UDP socket to its peer, and hands
//! the sockets to a worker:
//!
//! ```ignore
//! let spec = UdpWorkerSpec {
//!     cpu: Some(2),
//!     streams: vec![UdpStreamSpec { id: 1, socket, direction: Direction::Send, rate_bps: 1_000_000_000 }],
//!     datagram_len: 1472,           // -l (payload bytes per datagram, header included)
//!     counters_64bit: true,         // as negotiated (udp_counters_64bit)
//!     send_path: UdpSendPath::Gso,  // best wanted: Gso -> Mmsg -> Plain fallbacks
//!     recv_path: UdpRecvPath::Gro,  // best wanted: Gro -> Mmsg -> Plain
//!     batch: 0,                     // datagrams per round; 0 = path default
//!     budget: None,                 // -n / -k shared Budget (whole datagrams)
//!     fq_rate: None,                // SO_MAX_PACING_RATE, bytes/s (needs the fq qdisc)
//! };
//! let w = spawn_udp_worker(spec, control.clone())?;
//! // interval ticks: w.counters() -> Vec<(id, Arc<UdpCounters>)>, .snapshot()
//! control.stop();
//! let report = w.join()?; // UdpWorkerReport: paths that ran, per-stream results, sockets back
//! ```
//!
//! * **Sender** — writes the iperf3 datagram header ([`DatagramHeader`], the
//!   one implementation in `wirespeed_protocol::udp`) into every datagram
//!   (send time from `CLOCK_MONOTONIC` as iperf3 does, sequence from 1),
//!   then sends a batch in as few syscalls as the kernel allows:
//!   `Gso`: `sendmmsg` of several messages each carrying up to 64 datagrams
//!   with a `UDP_SEGMENT` cmsg (the kernel or NIC splits them);
//!   `Mmsg`: `sendmmsg` of single datagrams; `Plain`: one `send` each.
//!   GSO is probed at start (getsockopt `UDP_SEGMENT`) and abandoned at the
//!   first refusal (EIO/EINVAL/EOPNOTSUPP, e.g. a datagram above the path MTU)
//!   with the batch resent by `sendmmsg`; [`UdpWorkerReport::send_path`] says
//!   what ran, `fallbacks` why.
//! * **Pacing** (`rate_bps` > 0, iperf3's `-b`, per stream) — a token bucket
//!   on an absolute monotonic schedule ([`pacer`]), batches of about 1 ms of
//!   the rate, sleeping with `clock_nanosleep(TIMER_ABSTIME)` and the thread's
//!   timer slack set to 1 ns. Late wake-ups are caught up (bounded to 50 ms of
//!   debt), so the long-run rate equals the target when the CPU can carry it.
//! * **Receiver** — `recvmmsg` into 64 KiB slots; with `Gro` the socket has
//!   `UDP_GRO` on and each coalesced message carries its segment size in a
//!   cmsg, then is split back into datagrams. Every datagram goes through
//!   [`accounting::RecvAccounting`] (lost = expected − unique, out-of-order and
//!   duplicates apart, RFC 3550 jitter). Receive time is read once per
//!   `recvmmsg` call. A receiver runs until [`crate::Control::stop`]: UDP has no EOF,
//!   so the engine stops it after its grace period (e.g. when
//!   `unique == sender's count` or counters stop moving).
//! * All sockets are non-blocking; receivers wait in `epoll` (50 ms),
//!   senders that find a full socket wait in `poll(POLLOUT)`.

pub mod accounting;
pub mod pacer;
mod worker;

pub use accounting::{RecvAccounting, RecvStats};
pub use wirespeed_protocol::udp::{header_len, DatagramHeader, MAX_DATAGRAM_LEN};
pub use worker::{spawn_udp_worker, worker_buffers, UdpWorkerHandle};

use crate::{Budget, Direction, StreamEnd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How datagrams are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UdpSendPath {
    /// one send(2) per datagram
    Plain,
    /// sendmmsg(2), one datagram per message
    Mmsg,
    /// sendmmsg(2) of UDP_SEGMENT (GSO) super-datagrams
    Gso,
}

impl UdpSendPath {
    pub fn as_str(self) -> &'static str {
        match self {
            UdpSendPath::Plain => "send",
            UdpSendPath::Mmsg => "sendmmsg",
            UdpSendPath::Gso => "sendmmsg+gso",
        }
    }
}

/// How datagrams are received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UdpRecvPath {
    /// one recv(2) per datagram
    Plain,
    /// recvmmsg(2)
    Mmsg,
    /// recvmmsg(2) with UDP_GRO coalescing
    Gro,
}

impl UdpRecvPath {
    pub fn as_str(self) -> &'static str {
        match self {
            UdpRecvPath::Plain => "recv",
            UdpRecvPath::Mmsg => "recvmmsg",
            UdpRecvPath::Gro => "recvmmsg+gro",
        }
    }
}

/// One UDP stream handed to a worker.
#[derive(Debug)]
pub struct UdpStreamSpec {
    pub id: u32,
    /// Connected to the peer (handshake done).
    pub socket: std::net::UdpSocket,
    pub direction: Direction,
    /// Sender: target payload bits/s (`-b`); 0 = unlimited. Ignored for receivers.
    pub rate_bps: u64,
}

/// What one UDP worker thread does.
#[derive(Debug)]
pub struct UdpWorkerSpec {
    pub cpu: Option<u32>,
    pub streams: Vec<UdpStreamSpec>,
    /// Bytes per datagram (UDP payload, header included): header_len..=65507.
    pub datagram_len: usize,
    /// 64-bit sequence numbers in the header (iperf3 `udp_counters_64bit`).
    pub counters_64bit: bool,
    /// Best send path wanted; falls back Gso -> Mmsg -> Plain.
    pub send_path: UdpSendPath,
    /// Best receive path wanted; falls back Gro -> Mmsg.
    pub recv_path: UdpRecvPath,
    /// Datagrams per send round / recvmmsg slots; 0 = default for the path.
    pub batch: usize,
    /// `-n`/`-k`: shared budget; a sender sends whole datagrams while a claim succeeds.
    pub budget: Option<Arc<Budget>>,
    /// SO_MAX_PACING_RATE (bytes/s) on sending sockets (effective with the fq qdisc).
    pub fq_rate: Option<u64>,
}

/// Live counters of one UDP stream (single writer, relaxed stores).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct UdpCounters {
    bytes: AtomicU64,
    packets: AtomicU64,
    unique: AtomicU64,
    expected: AtomicU64,
    out_of_order: AtomicU64,
    duplicates: AtomicU64,
    malformed: AtomicU64,
    jitter_bits: AtomicU64,
}

/// A consistent-enough copy of a stream's counters at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpSnapshot {
    /// Sender: payload bytes sent. Receiver: payload bytes of valid datagrams received.
    pub bytes: u64,
    /// Sender: datagrams sent. Receiver: valid datagrams received (duplicates included).
    pub packets: u64,
    /// Receiver only (0 for senders):
    pub unique: u64,
    pub expected: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub malformed: u64,
    pub jitter_ms: f64,
}

impl UdpCounters {
    pub fn new() -> UdpCounters {
        UdpCounters::default()
    }
    pub fn snapshot(&self) -> UdpSnapshot {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (unique, expected) = (r(&self.unique), r(&self.expected));
        UdpSnapshot {
            bytes: r(&self.bytes),
            packets: r(&self.packets),
            unique,
            expected,
            lost: expected.saturating_sub(unique),
            out_of_order: r(&self.out_of_order),
            duplicates: r(&self.duplicates),
            malformed: r(&self.malformed),
            jitter_ms: f64::from_bits(r(&self.jitter_bits)),
        }
    }
    #[inline]
    pub(crate) fn publish_send(&self, bytes: u64, packets: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
        self.packets.store(packets, Ordering::Relaxed);
    }
    pub(crate) fn publish_recv(&self, s: &RecvStats) {
        self.bytes.store(s.bytes, Ordering::Relaxed);
        self.packets.store(s.received, Ordering::Relaxed);
        // (a reader may see these from two different batches; lost saturates at 0)
        self.unique.store(s.unique, Ordering::Relaxed);
        self.expected.store(s.expected, Ordering::Relaxed);
        self.out_of_order.store(s.out_of_order, Ordering::Relaxed);
        self.duplicates.store(s.duplicates, Ordering::Relaxed);
        self.malformed.store(s.malformed, Ordering::Relaxed);
        self.jitter_bits
            .store(s.jitter_ms.to_bits(), Ordering::Relaxed);
    }
}

/// Final figures of one UDP stream.
#[derive(Debug, Clone)]
pub struct UdpStreamResult {
    pub id: u32,
    pub direction: Direction,
    /// As in [`UdpSnapshot`].
    pub bytes: u64,
    pub packets: u64,
    pub end: StreamEnd,
    pub error: Option<String>,
    /// Receiver accounting (None for senders).
    pub recv: Option<RecvStats>,
    /// Sender: the target rate (bits/s, 0 = unlimited).
    pub rate_bps: u64,
    /// Sender: seconds from the first send to the last (for achieved-rate checks).
    pub send_seconds: f64,
}

/// What a UDP worker did.
#[derive(Debug)]
pub struct UdpWorkerReport {
    pub cpu_requested: Option<u32>,
    pub cpus_seen: wirespeed_model::CpuSet,
    /// Path that ran for senders / receivers (None without such streams).
    pub send_path: Option<UdpSendPath>,
    pub recv_path: Option<UdpRecvPath>,
    pub fallbacks: Vec<String>,
    pub streams: Vec<UdpStreamResult>,
    /// send/recv-family syscalls made (sendmmsg/recvmmsg/send/recv), for efficiency checks.
    pub syscalls: u64,
    pub cpu_user: std::time::Duration,
    pub cpu_system: std::time::Duration,
    pub sockets: Vec<(u32, std::net::UdpSocket)>,
}
