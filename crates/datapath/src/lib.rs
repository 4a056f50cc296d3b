//! wirespeed-datapath: the syscall-level data movers.
//!
//! # Architecture
//!
//! The engine (control plane) connects or accepts the data sockets itself,
//! exchanges the iperf3 cookie, applies [`tcp::TcpOptions`], and then hands
//! the connected sockets to *workers* made here with [`spawn_worker`]. A
//! worker is one OS thread, optionally pinned to one CPU
//! ([`cpu::pin_current_thread`]), carrying one or many streams:
//!
//! * **one stream** — a tight blocking loop: `send()`/`recv()` (or the chosen
//!   zero-copy call) of `block_len` bytes (a receiver asks for [`recv_len`]: at least
//!   [`RECV_LEN_MIN`]), then two relaxed atomic *stores*
//!   into the stream's [`StreamCounters`] (the worker is the only writer, so
//!   no read-modify-write is needed) and one relaxed load of the stop flag.
//!   No allocation, no clock read, no other syscall in the loop. `stop()` is
//!   noticed promptly because the socket gets `SO_SNDTIMEO`/`SO_RCVTIMEO` of
//!   [`POLL_INTERVAL`], so a blocked call wakes up to look at the flag.
//!   A receiver also sets `SO_RCVLOWAT` to its read length (at most
//!   [`RCVLOWAT_MAX`], and a share of its receive buffer as that grows:
//!   [`lowat_mark`]) so it is woken once per read rather than once per
//!   segment; a shorter tail is still read when the timeout expires. Unless the
//!   engine says its workers share their CPUs over loopback ([`Wake::Batch`]): then it runs
//!   under `SCHED_BATCH` and sets no mark (a mark makes the kernel ACK every second
//!   segment while the reader waits; batching lets it find many queued instead).
//! * **many streams** — non-blocking sockets on one level-triggered `epoll`;
//!   each ready stream gets a bounded burst of calls per wake-up (fairness),
//!   so >1000 streams share one or two workers. Receivers keep the same mark:
//!   epoll reports a stream once a read's worth is queued, and the loop sweeps
//!   up shorter tails every [`POLL_INTERVAL`].
//!
//! The engine samples counters from its own thread at interval ticks
//! ([`WorkerHandle::counters`]) and reads `TCP_INFO` on the sockets the workers own
//! ([`WorkerHandle::stream_fd`], [`tcp::tcp_info`]) without stopping workers.
//! A test ends with [`Control::stop`] (all workers of the test finish within
//! about [`POLL_INTERVAL`]), or when a shared [`Budget`] (`-n`/`-k`) runs out
//! (each sending stream then finishes; wait for [`WorkerHandle::is_finished`]),
//! or when the peer closes (receivers end at EOF).
//!
//! Workers never close sockets: [`WorkerHandle::join`] hands them back in
//! [`WorkerReport::sockets`] for the engine to close (or to read final
//! `TCP_INFO` from).
//!
//! Send paths ([`SendPath`]): `Copy` (send), `Sendfile` (sendfile from a memfd
//! holding one block: no user→kernel copy), `Splice` (vmsplice of the block
//! into a pipe, then splice to the socket), `MsgZerocopy` (`SO_ZEROCOPY` +
//! `MSG_ZEROCOPY`, completions read from the socket error queue, outstanding
//! calls bounded). Receive paths ([`RecvPath`]): `Copy` (recv into a buffer),
//! `SkipCopy` (`recv(MSG_TRUNC)`: TCP discards the bytes in the kernel without copying them
//! out) and `Zerocopy` (`TCP_ZEROCOPY_RECEIVE`: the kernel maps whole pages of the receive
//! queue into the worker's address space and the rest is copied, see [`rx_zerocopy`]; counted
//! in [`WorkerReport::rx_zerocopy`]). A requested path the kernel refuses falls back (towards
//! `Copy`), and [`WorkerReport`] says what actually ran and why.
//!
//! UDP (batched `sendmmsg`/`recvmmsg`, GSO/GRO, pacing, loss/jitter
//! accounting) lives in [`udp`]. The iperf3 datagram header it writes and
//! reads is `wirespeed_protocol::udp` (the sans-I/O home of every wire format
//! decoded from peer bytes, fuzzed there); the datapath depends on that crate
//! for nothing else and knows nothing of the control protocol.

pub mod cpu;
pub mod rx_zerocopy;
pub mod sockopt;
pub mod sys;
pub mod tcp;
pub mod thread;
pub mod udp;
mod worker;
mod zerocopy;

pub use cpu::{CpuNow, ThreadWatch};
pub use worker::{
    lowat_mark, recv_len, spawn_worker, worker_buffers, WorkerHandle, MAX_BLOCK_LEN, RCVLOWAT_MAX,
    RECV_LEN_MIN, SHORT_PATH_US,
};

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// How often a blocked worker looks at the stop flag.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Errors of the datapath; each names the CPU, fd, option or value involved.
#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    #[error("CPU {cpu} is offline, absent or not allowed for this process (allowed: {allowed})")]
    CpuNotAllowed { cpu: u32, allowed: String },
    #[error("cannot pin thread to CPU {cpu}: {source}")]
    Pin { cpu: u32, source: std::io::Error },
    #[error("sched_getaffinity: {source}")]
    Affinity { source: std::io::Error },
    #[error("setsockopt {opt}={value}: {source}")]
    SockOpt {
        opt: &'static str,
        value: String,
        source: std::io::Error,
    },
    #[error("congestion control algorithm {algo:?} is not available: {source}")]
    Congestion {
        algo: String,
        source: std::io::Error,
    },
    #[error("{op} (fd {fd}): {source}")]
    Syscall {
        op: &'static str,
        fd: i32,
        source: std::io::Error,
    },
    #[error("cannot start worker thread: {0}")]
    Spawn(std::io::Error),
    #[error("worker thread panicked")]
    WorkerPanicked,
    #[error("invalid worker spec: {0}")]
    InvalidSpec(String),
}

/// Which path moved (or is requested to move) the bytes of sending streams (the model's
/// type: both ends and the protocol name it the same).
pub use wirespeed_model::SendPath;

/// Which path received the bytes of receiving streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecvPath {
    /// recv into a user buffer.
    Copy,
    /// recv(MSG_TRUNC): the kernel discards TCP payload without copying it out.
    SkipCopy,
    /// TCP_ZEROCOPY_RECEIVE: whole pages mapped into the receiver, the remainder copied.
    Zerocopy,
}

impl RecvPath {
    pub fn as_str(self) -> &'static str {
        match self {
            RecvPath::Copy => "copy",
            RecvPath::SkipCopy => "skip_copy",
            RecvPath::Zerocopy => "zerocopy",
        }
    }
}

/// Direction of one stream as seen from this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Send,
    Recv,
}

/// Live counters of one stream. Written only by its worker (relaxed stores),
/// read by anyone. Cache-line aligned so streams never share a line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct StreamCounters {
    bytes: AtomicU64,
    blocks: AtomicU64,
}

impl StreamCounters {
    pub fn new() -> StreamCounters {
        StreamCounters::default()
    }
    /// Payload bytes written to / read from the socket so far.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
    /// Sender: complete blocks written. Receiver: successful read calls.
    #[inline]
    pub fn blocks(&self) -> u64 {
        self.blocks.load(Ordering::Relaxed)
    }
    /// Single-writer update (plain stores, no read-modify-write).
    #[inline]
    pub(crate) fn publish(&self, bytes: u64, blocks: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
        self.blocks.store(blocks, Ordering::Relaxed);
    }
}

/// Stop flag shared by all workers of one test.
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
}

impl Control {
    pub fn new() -> Control {
        Control::default()
    }
    /// Ask every worker holding this Control to finish (within ~[`POLL_INTERVAL`]).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Unit of a [`Budget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetUnit {
    /// `-n`: bytes; the last block is shortened so the total is exact.
    Bytes,
    /// `-k`: whole blocks.
    Blocks,
}

/// What may still be sent, shared by all sending streams of all workers of a test.
#[derive(Debug)]
pub struct Budget {
    remaining: AtomicI64,
    unit: BudgetUnit,
    total: u64,
}

impl Budget {
    /// A byte budget (`-n`).
    pub fn bytes(n: u64) -> Budget {
        Budget {
            remaining: AtomicI64::new(n.min(i64::MAX as u64) as i64),
            unit: BudgetUnit::Bytes,
            total: n,
        }
    }
    /// A block budget (`-k`).
    pub fn blocks(n: u64) -> Budget {
        Budget {
            remaining: AtomicI64::new(n.min(i64::MAX as u64) as i64),
            unit: BudgetUnit::Blocks,
            total: n,
        }
    }
    pub fn unit(&self) -> BudgetUnit {
        self.unit
    }
    pub fn total(&self) -> u64 {
        self.total
    }
    /// True once everything has been claimed by senders (some may still be writing it).
    pub fn is_exhausted(&self) -> bool {
        self.remaining.load(Ordering::Relaxed) <= 0
    }
    /// Claim the next block: returns how many bytes to send (0 = budget spent).
    #[inline]
    pub fn claim(&self, block_len: usize) -> usize {
        match self.unit {
            BudgetUnit::Bytes => {
                let prev = self
                    .remaining
                    .fetch_sub(block_len as i64, Ordering::Relaxed);
                if prev <= 0 {
                    0
                } else {
                    (prev as u64).min(block_len as u64) as usize
                }
            }
            BudgetUnit::Blocks => {
                if self.remaining.fetch_sub(1, Ordering::Relaxed) <= 0 {
                    0
                } else {
                    block_len
                }
            }
        }
    }
}

/// One stream handed to a worker.
#[derive(Debug)]
pub struct StreamSpec {
    /// iperf3 stream id, for reports.
    pub id: u32,
    /// Connected, cookie exchanged, options applied. The worker sets its
    /// blocking mode and timeouts; it never closes it.
    pub socket: std::net::TcpStream,
    pub direction: Direction,
}

/// What one worker thread does.
#[derive(Debug)]
pub struct WorkerSpec {
    /// Pin to this CPU; None = let the scheduler place it.
    pub cpu: Option<u32>,
    pub streams: Vec<StreamSpec>,
    /// `-l`: bytes per send call; a receiver reads up to the larger of this and
    /// [`RECV_LEN_MIN`] per call ([`recv_len`]).
    pub block_len: usize,
    /// Requested; the worker falls back and reports what ran.
    pub send_path: SendPath,
    pub recv_path: RecvPath,
    /// `-n` / `-k`, shared across all streams and workers of a test.
    pub budget: Option<std::sync::Arc<Budget>>,
    /// How the worker is woken for its streams.
    pub wake: Wake,
}

/// How a TCP worker is woken ([`WorkerSpec::wake`], and what it ran with in
/// [`WorkerReport::wake`]): a kernel that refuses `SCHED_BATCH` leaves the worker as it was,
/// named in [`WorkerReport::fallbacks`].
pub use wirespeed_model::worker::Wake;

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// Control::stop() was called.
    Stopped,
    /// The peer closed cleanly (receivers) .
    Eof,
    /// The shared budget was spent (senders).
    BudgetSpent,
    /// A socket error (see `StreamResult::error`).
    Error,
}

/// Final figures of one stream.
#[derive(Debug, Clone)]
pub struct StreamResult {
    pub id: u32,
    pub direction: Direction,
    pub bytes: u64,
    pub blocks: u64,
    pub end: StreamEnd,
    /// The error that ended the stream (peer reset etc.), None for clean ends.
    pub error: Option<String>,
}

/// Received bytes of a worker on the zero-copy receive path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxZerocopyCounts {
    /// Bytes in pages the kernel mapped.
    pub mapped: u64,
    /// Bytes copied (what could not be mapped).
    pub copied: u64,
}

/// What a worker did, returned by [`WorkerHandle::join`].
#[derive(Debug)]
pub struct WorkerReport {
    pub cpu_requested: Option<u32>,
    /// CPUs the worker thread was observed on ([`cpu::current_cpu`] at each I/O call).
    pub cpus_seen: wirespeed_model::CpuSet,
    /// Path that actually ran for sending streams (None if there were none).
    pub send_path: Option<SendPath>,
    /// Path that actually ran for receiving streams (None if there were none).
    pub recv_path: Option<RecvPath>,
    /// Why a requested path was not used, one line each.
    pub fallbacks: Vec<String>,
    /// How it was woken: [`WorkerSpec::wake`], or [`Wake::Mark`] where batch was refused.
    pub wake: Wake,
    pub streams: Vec<StreamResult>,
    /// MSG_ZEROCOPY send calls whose completion was read back.
    pub zerocopy_completions: u64,
    /// ... of which the kernel reported it had copied after all (SO_EE_CODE_ZEROCOPY_COPIED).
    pub zerocopy_copied: u64,
    /// MSG_ZEROCOPY send calls issued.
    pub zerocopy_sends: u64,
    /// Zero-copy receive asked for ([`RecvPath::Zerocopy`]): the received bytes the kernel
    /// mapped and those copied (the remainder, and everything after a fallback); the two add up
    /// to the bytes the worker's receiving streams received. `None` when not asked for.
    pub rx_zerocopy: Option<RxZerocopyCounts>,
    /// CPU time the worker thread spent in user and kernel mode (getrusage(RUSAGE_THREAD)).
    pub cpu_user: std::time::Duration,
    pub cpu_system: std::time::Duration,
    /// The sockets, handed back for the engine to close.
    pub sockets: Vec<(u32, std::net::TcpStream)>,
}
