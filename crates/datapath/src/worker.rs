//! Worker threads: one-stream blocking loop and many-stream epoll loop.

use crate::cpu::{CpuNow, CpuSampler};
use crate::rx_zerocopy::ZcRx;
use crate::sys;
use crate::thread::{spawn_pinned, WorkerThread};
use crate::zerocopy::{recv_once, SendOp, SendSetup};
use crate::{
    Budget, Control, DatapathError, Direction, RecvPath, RxZerocopyCounts, SendPath,
    StreamCounters, StreamEnd, StreamResult, Wake, WorkerReport, WorkerSpec, POLL_INTERVAL,
};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest block a worker accepts (iperf3 caps TCP blocks far lower).
pub const MAX_BLOCK_LEN: usize = 1 << 30;
/// Largest SO_RCVLOWAT a receiver sets (it uses its read length up to this).
/// Set the environment variable `WIRESPEED_NO_RCVLOWAT` to leave SO_RCVLOWAT alone.
pub const RCVLOWAT_MAX: usize = 1 << 20;
/// The least a TCP receiver asks for per read call, whatever the block length (`-l` sets
/// what a sender writes per call; a receiver reads what is queued). On loopback, one stream
/// at `-l 128K` pinned to two CPUs, reading 1 MiB a call with a 1 MiB mark moved 61–64
/// Gbit/s against 39–46 reading 128 KiB with a 128 KiB mark (the sending CPU, which runs both
/// ends' TCP work there, wakes the reader once per mark); 2 MiB was no better, 4 MiB worse.
pub const RECV_LEN_MIN: usize = 1 << 20;

/// A TCP receiver's read length for block length `block_len`.
pub fn recv_len(block_len: usize) -> usize {
    block_len.max(RECV_LEN_MIN)
}

/// The bytes a page-aligned buffer of `len` bytes maps (what [`AlignedBuf`] takes).
fn mapped(len: usize) -> u64 {
    (len.max(1).div_ceil(4096) * 4096) as u64
}

/// The bytes of data buffers one TCP worker holds while it runs: its block (filled, so every
/// page is resident) when it sends — twice with `sendfile`, whose memfd holds a copy — and
/// its read buffer ([`recv_len`]) when it receives. What a server counts against its memory
/// budget for each worker of a test before admitting it.
pub fn worker_buffers(block_len: usize, send_path: SendPath, send: bool, recv: bool) -> u64 {
    let mut n = 0;
    if send {
        n += mapped(block_len);
        if send_path == SendPath::Sendfile {
            n += mapped(block_len);
        }
    }
    if recv {
        n += mapped(recv_len(block_len));
    }
    n
}

/// Below this round-trip time (µs) a path counts as short for [`lowat_mark`].
pub const SHORT_PATH_US: u32 = 1000;

/// SO_RCVLOWAT for a receiver reading `read_len` bytes a call whose socket's receive buffer
/// is now `rcvbuf` bytes (SO_RCVBUF), on a path of round-trip time `rtt_us`: the read
/// length, up to [`RCVLOWAT_MAX`] and a quarter of the buffer, on a short path only (`None`:
/// leave the kernel's mark of 1).
///
/// - Never so high that the kernel grows the buffer for the mark: when it does, it also
///   clamps the window at the mark until autotuning outgrows it. A 128 KiB mark set on a
///   fresh socket held one stream over a 1 Gbit/s path at 10, 20 and 40 ms RTT to 78, 38
///   and 24 Mbit/s, where iperf3 moved 755, 657–679 and 502. So the mark follows the buffer as
///   autotuning grows it (and a `-w` locks the buffer at twice its value).
/// - Data the reader has not yet taken shrinks the window it advertises, and the kernel
///   wakes a reader below its mark only when the window is about to close. Over a path with
///   a round trip of a millisecond or more that costs the test its rate: over 20 ms, `-w 1M`
///   moved 343–368 Mbit/s with a quarter of the buffer, 405–424 with an eighth, 449–451 with
///   a sixteenth (iperf3 460–464), and `-R` unbounded 749–768 with a sixteenth against
///   837–915 with no mark. So a path of [`SHORT_PATH_US`] or more (or of unknown RTT) gets
///   none. On a shorter one (loopback, a LAN) the window refills within microseconds and the
///   wake-ups are what costs (loopback `-w 256K`: 42–49 Gbit/s at a quarter, 28–30 at an
///   eighth or less).
pub fn lowat_mark(read_len: usize, rcvbuf: usize, rtt_us: Option<u32>) -> Option<usize> {
    rtt_us
        .is_some_and(|r| r < SHORT_PATH_US)
        .then(|| read_len.min(RCVLOWAT_MAX).min(rcvbuf / 4).max(1))
}

/// Calls per ready stream per epoll wake-up (fairness across many streams).
const BURST: usize = 8;
/// epoll events fetched per wait.
const EVENTS: usize = 256;

/// A running TCP worker.
pub type WorkerHandle = WorkerThread<WorkerReport, StreamCounters>;

/// A page-aligned byte buffer of its own anonymous mapping, never modified
/// after it is filled.
///
/// Zero-copy paths (vmsplice, MSG_ZEROCOPY) leave the kernel holding
/// references to these pages after the worker is gone (data still in a pipe,
/// in the socket's queue or in flight). Memory from the global allocator would
/// be handed to the next allocation and overwritten under those references,
/// corrupting bytes not yet transmitted. A private mapping is safe: `munmap`
/// only drops our view, the kernel keeps the referenced pages intact until it
/// releases them, and nothing else can ever write to them.
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    map_len: usize,
}

// SAFETY: AlignedBuf uniquely owns its mapping; it is a plain byte buffer.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let map_len = mapped(len) as usize;
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: a new anonymous private mapping (no hint address, no fd) aliases nothing.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                map_len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        };
        let Ok(p) = p else {
            // Out of address space: the same outcome as a failed allocation.
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(map_len, 4096)
                    .unwrap_or(std::alloc::Layout::new::<u8>()),
            );
        };
        AlignedBuf {
            ptr: p.cast(),
            len,
            map_len,
        }
    }
    fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is valid for map_len >= len zero-initialized bytes while self lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees uniqueness.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`, which nothing uses any more.
        let _ = unsafe { rustix::mm::munmap(self.ptr.cast(), self.map_len) };
    }
}

/// Fill with pseudo-random bytes (payload that does not compress, as iperf3's default).
fn fill_pattern(buf: &mut [u8]) {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

/// Start a worker thread for `spec`. Returns once the thread runs (and is
/// pinned, if asked). A pin failure is returned here; the sockets of the
/// spec are then closed.
pub fn spawn_worker(
    spec: WorkerSpec,
    control: Arc<Control>,
) -> Result<WorkerHandle, DatapathError> {
    if spec.block_len == 0 || spec.block_len > MAX_BLOCK_LEN {
        return Err(DatapathError::InvalidSpec(format!(
            "block length {} out of range 1..={MAX_BLOCK_LEN}",
            spec.block_len
        )));
    }
    let streams = spec
        .streams
        .iter()
        .map(|s| (s.id, s.socket.as_raw_fd()))
        .collect();
    let unpinned = empty_report(&spec);
    spawn_pinned("ws-dp", spec.cpu, streams, unpinned, move |ctrs, now| {
        run(spec, &control, ctrs, now)
    })
}

fn empty_report(spec: &WorkerSpec) -> WorkerReport {
    WorkerReport {
        cpu_requested: spec.cpu,
        cpus_seen: wirespeed_model::CpuSet::new(),
        send_path: None,
        recv_path: None,
        fallbacks: Vec::new(),
        wake: spec.wake,
        streams: Vec::new(),
        zerocopy_completions: 0,
        zerocopy_copied: 0,
        zerocopy_sends: 0,
        rx_zerocopy: None,
        cpu_user: Duration::ZERO,
        cpu_system: Duration::ZERO,
        sockets: Vec::new(),
    }
}

/// Per-stream state of a running worker.
struct St {
    id: u32,
    fd: RawFd,
    dir: Direction,
    ctr: Arc<StreamCounters>,
    bytes: u64,
    blocks: u64,
    /// sender: offset within the current block and its claimed length (0 = claim next)
    off: usize,
    cur_len: usize,
    end: Option<StreamEnd>,
    err: Option<String>,
    op: Option<SendOp>,
    /// The zero-copy receive region (receivers on [`RecvPath::Zerocopy`]).
    zc: Option<ZcRx>,
    /// This receiver's SO_RCVLOWAT (set back to 1 at the end).
    lowat: Lowat,
}

/// A receiver's wake-up mark, raised toward `goal` as the socket's receive buffer grows
/// ([`lowat_mark`]): never so high that the kernel grows the buffer (and clamps the window)
/// for it, and none on a long path.
#[derive(Debug, Default, Clone, Copy)]
struct Lowat {
    /// The mark wanted once the buffer allows (0: none).
    goal: usize,
    /// The mark set now (0: none).
    set: usize,
    /// The path's RTT, read once: a receiver's is the handshake's, which does not change.
    rtt_us: Option<Option<u32>>,
    /// Reads left before the buffer is looked at again.
    skip: u32,
}

/// Reads between two looks at a receiver's buffer while its mark is below its goal (under a
/// `-w` the buffer never grows, and the mark never reaches a 1 MiB goal: one `getsockopt` per
/// read there would be a syscall more per read for the whole test).
const LOWAT_EVERY: u32 = 16;

impl Lowat {
    /// A mark to raise toward `read_len`, or toward [`RCVLOWAT_MAX`] when that is less: a goal
    /// above the most [`lowat_mark`] gives would never be reached, and the buffer would be
    /// looked at every [`LOWAT_EVERY`] reads for the whole test (`-l 4M`).
    fn toward(read_len: usize) -> Lowat {
        Lowat {
            goal: read_len.min(RCVLOWAT_MAX),
            ..Lowat::default()
        }
    }

    fn wanted(&self) -> bool {
        self.goal > 0
    }

    /// Raise the mark as far as the buffer now allows (looked at on the first call, then every
    /// [`LOWAT_EVERY`] calls); an error from the kernel gives it up.
    fn follow(&mut self, fd: RawFd) {
        if self.set >= self.goal {
            return;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        self.skip = LOWAT_EVERY - 1;
        let rtt_us = *self.rtt_us.get_or_insert_with(|| crate::tcp::srtt_us(fd));
        let Ok(rcvbuf) = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF) else {
            self.goal = 0;
            return;
        };
        let rcvbuf = usize::try_from(rcvbuf).unwrap_or(0);
        match lowat_mark(self.goal, rcvbuf, rtt_us) {
            // a long path: no mark, no more looking
            None => self.clear(fd),
            Some(mark) if mark > self.set.max(1) => {
                match sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, mark as _) {
                    Ok(()) => self.set = mark,
                    Err(_) => self.goal = 0,
                }
            }
            Some(_) => {}
        }
    }

    /// Back to the kernel's default mark, and no more raising.
    fn clear(&mut self, fd: RawFd) {
        if self.set > 0 {
            let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, 1);
        }
        *self = Lowat::default();
    }
}

impl St {
    fn fail(&mut self, errno: i32, what: &str) {
        self.end = Some(StreamEnd::Error);
        self.err = Some(format!(
            "{what} on stream {}: {}",
            self.id,
            std::io::Error::from_raw_os_error(errno)
        ));
    }
}

fn run(
    spec: WorkerSpec,
    control: &Control,
    ctrs: Vec<Arc<StreamCounters>>,
    now: Arc<CpuNow>,
) -> WorkerReport {
    let mut sampler = CpuSampler::new(now);
    let has_send = spec.streams.iter().any(|s| s.direction == Direction::Send);
    let has_recv = spec.streams.iter().any(|s| s.direction == Direction::Recv);
    let mut block = AlignedBuf::new(if has_send { spec.block_len } else { 0 });
    fill_pattern(block.as_mut_slice());
    let mut rbuf = AlignedBuf::new(if has_recv {
        recv_len(spec.block_len)
    } else {
        0
    });
    let mut setup = SendSetup::new(spec.send_path, block.as_slice());
    let mut fallbacks = Vec::new();
    let mut recv_path = spec.recv_path;

    let single = spec.streams.len() == 1;
    // a kernel that refuses the policy leaves the worker as it was: marked
    let wake = match spec.wake {
        Wake::Batch => match sys::set_sched_batch() {
            Ok(()) => Wake::Batch,
            Err(e) => {
                fallbacks.push(format!("SCHED_BATCH refused ({e}): woken by a mark"));
                Wake::Mark
            }
        },
        Wake::Mark => Wake::Mark,
    };
    let recv_lowat = std::env::var_os("WIRESPEED_NO_RCVLOWAT").is_none();
    let mut sts: Vec<St> = Vec::with_capacity(spec.streams.len());
    for (s, ctr) in spec.streams.iter().zip(ctrs) {
        let fd = s.socket.as_raw_fd();
        let op = match s.direction {
            Direction::Send => Some(setup.op_for(spec.send_path, fd, spec.block_len)),
            Direction::Recv => None,
        };
        let mut st = St {
            id: s.id,
            fd,
            dir: s.direction,
            ctr,
            bytes: 0,
            blocks: 0,
            off: 0,
            cur_len: 0,
            end: None,
            err: None,
            op,
            zc: None,
            lowat: Lowat::default(),
        };
        let prep = if single {
            sys::set_nonblocking(fd, false)
                .and_then(|_| sys::set_timeout(fd, sys::Timeout::Send, Some(POLL_INTERVAL)))
                .and_then(|_| sys::set_timeout(fd, sys::Timeout::Recv, Some(POLL_INTERVAL)))
        } else {
            sys::set_nonblocking(fd, true)
        };
        if let Err(e) = prep {
            st.fail(e.raw_os_error().unwrap_or(libc::EINVAL), "socket setup");
        }
        sts.push(st);
    }

    if has_recv && recv_path == RecvPath::Zerocopy {
        for st in sts.iter_mut().filter(|s| s.dir == Direction::Recv) {
            match ZcRx::new(st.fd, spec.block_len) {
                Ok(z) => st.zc = Some(z),
                Err(e) => {
                    zc_fall_back(
                        &mut recv_path,
                        format!("the socket cannot be mapped ({})", sys::errno_str(e)),
                        &mut fallbacks,
                    );
                    break;
                }
            }
        }
    }

    if recv_lowat {
        // Wake each receiver once per read instead of once per segment: far fewer wake-ups
        // (IPIs) for the sender's CPU to issue. A tail shorter than the mark is still read
        // within POLL_INTERVAL: a blocking recv returns whatever arrived when its SO_RCVTIMEO
        // expires, and the epoll loop sweeps its marked streams that often (epoll reports a
        // stream below its mark only at its end or when its window is about to close). Many
        // zero-copy receivers on one epoll loop wait for one mapping call's worth: without a
        // mark every readable event carries a segment or two, and each TCP_ZEROCOPY_RECEIVE
        // maps little.
        for st in sts.iter_mut().filter(|s| s.dir == Direction::Recv) {
            if wake == Wake::Batch && st.zc.is_none() {
                continue;
            }
            let read = match &st.zc {
                Some(z) if !single => z.map_len(),
                _ => recv_len(spec.block_len),
            };
            st.lowat = Lowat::toward(read);
            st.lowat.follow(st.fd);
        }
    }

    let budget = spec.budget.as_deref();
    if single {
        let st = &mut sts[0];
        if st.end.is_none() {
            match st.dir {
                Direction::Send => single_send(st, block.as_slice(), control, budget, &mut sampler),
                Direction::Recv => single_recv(
                    st,
                    rbuf.as_mut_slice(),
                    &mut recv_path,
                    &mut fallbacks,
                    control,
                    &mut sampler,
                ),
            }
        }
    } else if let Err(e) = epoll_loop(
        &mut sts,
        block.as_slice(),
        rbuf.as_mut_slice(),
        &mut recv_path,
        &mut fallbacks,
        control,
        budget,
        &mut sampler,
    ) {
        for st in sts.iter_mut().filter(|s| s.end.is_none()) {
            st.end = Some(StreamEnd::Error);
            st.err = Some(format!("worker epoll failed: {e}"));
        }
    }

    // Collect outstanding MSG_ZEROCOPY completions briefly, then restore socket modes.
    let deadline = Instant::now() + Duration::from_millis(200);
    let (mut zc_sends, mut zc_done, mut zc_copied) = (0, 0, 0);
    let mut send_paths = Vec::new();
    for st in &mut sts {
        if let Some(op) = st.op.as_mut() {
            let left = deadline.saturating_duration_since(Instant::now());
            op.drain(st.fd, left.as_millis() as u64);
            let z = op.zc_stats();
            zc_sends += z.sends;
            zc_done += z.completed;
            zc_copied += z.copied;
            send_paths.push(op.path());
        }
        st.ctr.publish(st.bytes, st.blocks);
        let _ = sys::set_nonblocking(st.fd, false);
        let _ = sys::set_timeout(st.fd, sys::Timeout::Send, None);
        let _ = sys::set_timeout(st.fd, sys::Timeout::Recv, None);
        st.lowat.clear(st.fd);
    }
    fallbacks.extend(setup.fallbacks);
    let send_path = if send_paths.is_empty() {
        None
    } else if send_paths.iter().all(|p| *p == send_paths[0]) {
        Some(send_paths[0])
    } else {
        fallbacks.push("send paths differ between streams; reporting copy".into());
        Some(SendPath::Copy)
    };
    // Every received byte was either mapped or copied (by the zero-copy path's remainder, or
    // by the copy path after a fallback).
    let rx_zerocopy = (has_recv && spec.recv_path == RecvPath::Zerocopy).then(|| {
        let received: u64 = sts
            .iter()
            .filter(|s| s.dir == Direction::Recv)
            .map(|s| s.bytes)
            .sum();
        let mapped: u64 = sts
            .iter()
            .filter_map(|s| s.zc.as_ref())
            .map(|z| z.mapped_bytes)
            .sum();
        RxZerocopyCounts {
            mapped,
            copied: received.saturating_sub(mapped),
        }
    });
    sampler.sample();
    let streams = sts
        .iter()
        .map(|s| StreamResult {
            id: s.id,
            direction: s.dir,
            bytes: s.bytes,
            blocks: s.blocks,
            end: s.end.unwrap_or(StreamEnd::Stopped),
            error: s.err.clone(),
        })
        .collect();
    drop(sts);
    let (cpu_user, cpu_system) = sys::thread_cpu_times();
    WorkerReport {
        cpu_requested: spec.cpu,
        cpus_seen: sampler.cpus(),
        send_path,
        recv_path: if has_recv { Some(recv_path) } else { None },
        fallbacks,
        wake,
        streams,
        zerocopy_completions: zc_done,
        zerocopy_copied: zc_copied,
        zerocopy_sends: zc_sends,
        rx_zerocopy,
        cpu_user,
        cpu_system,
        sockets: spec.streams.into_iter().map(|s| (s.id, s.socket)).collect(),
    }
}

/// The one-stream sender: a tight blocking loop.
fn single_send(
    st: &mut St,
    block: &[u8],
    control: &Control,
    budget: Option<&Budget>,
    sampler: &mut CpuSampler,
) {
    let Some(op) = st.op.as_mut() else { return };
    let fd = st.fd;
    let block_len = block.len();
    let (mut bytes, mut blocks) = (0u64, 0u64);
    let end = 'outer: loop {
        if control.is_stopped() {
            break StreamEnd::Stopped;
        }
        let len = match budget {
            None => block_len,
            Some(b) => match b.claim(block_len) {
                0 => break StreamEnd::BudgetSpent,
                n => n,
            },
        };
        let mut off = 0;
        while off < len {
            match op.send(fd, block, off, len - off) {
                Ok(0) => {
                    st.err = Some(format!("send on stream {} wrote 0 bytes", st.id));
                    break 'outer StreamEnd::Error;
                }
                Ok(n) => {
                    off += n;
                    bytes += n as u64;
                    if off >= len {
                        blocks += 1;
                    }
                    // Two plain stores: the only per-call cost besides the syscall.
                    st.ctr.publish(bytes, blocks);
                }
                Err(libc::EINTR) => {}
                Err(libc::EAGAIN) => {
                    if control.is_stopped() {
                        break 'outer StreamEnd::Stopped;
                    }
                }
                Err(e) => {
                    st.bytes = bytes;
                    st.blocks = blocks;
                    st.fail(e, "send");
                    return;
                }
            }
        }
        sampler.sample();
    };
    st.bytes = bytes;
    st.blocks = blocks;
    st.end = Some(end);
}

fn skip_copy_unsupported(path: RecvPath, errno: i32) -> bool {
    path == RecvPath::SkipCopy
        && (errno == libc::EINVAL || errno == libc::EOPNOTSUPP || errno == libc::EFAULT)
}

/// recv(MSG_TRUNC) was refused with `errno`: say why and receive by copying from now on.
fn fall_back_to_copy(path: &mut RecvPath, errno: i32, fallbacks: &mut Vec<String>) {
    fallbacks.push(format!(
        "skip_copy: recv(MSG_TRUNC) refused ({}); using copy",
        sys::errno_str(errno)
    ));
    *path = RecvPath::Copy;
}

/// The zero-copy path gives up when this many bytes arrived without one page mapped: the
/// payload does not sit in whole pages (no header split, or an MSS that is not a page
/// multiple), and the path would only add a system call to the copy.
pub(crate) const ZC_NOTHING_MAPPED_AFTER: u64 = 16 << 20;

/// Errors of the zero-copy receive that mean "not here" rather than a broken connection.
fn zc_unsupported(errno: i32) -> bool {
    matches!(
        errno,
        libc::EINVAL
            | libc::EOPNOTSUPP
            | libc::ENOPROTOOPT
            | libc::ENOMEM
            | libc::ENODEV
            | libc::EFAULT
    )
}

/// The zero-copy receive cannot work here: say why (once) and copy from now on.
fn zc_fall_back(path: &mut RecvPath, why: String, fallbacks: &mut Vec<String>) {
    let line = format!("zerocopy: {why}; using copy");
    if !fallbacks.contains(&line) {
        fallbacks.push(line);
    }
    *path = RecvPath::Copy;
}

/// What one zero-copy receive step got.
enum ZcGot {
    Bytes(usize),
    /// Nothing queued yet (or the path just fell back): wait or retry.
    Nothing,
    Eof,
}

/// One zero-copy receive on `st`; falls back (setting `path` to Copy) where the kernel refuses
/// or maps nothing.
fn zc_step(
    st: &mut St,
    buf: &mut [u8],
    path: &mut RecvPath,
    fallbacks: &mut Vec<String>,
) -> Result<ZcGot, i32> {
    let Some(zc) = st.zc.as_mut() else {
        zc_fall_back(path, "no mapping for the stream".into(), fallbacks);
        return Ok(ZcGot::Nothing);
    };
    match zc.recv(buf) {
        Ok(None) => Ok(ZcGot::Eof),
        Ok(Some(r)) if r.is_empty() => Ok(ZcGot::Nothing),
        Ok(Some(r)) => {
            let n = r.len();
            if zc.mapped_bytes == 0 && zc.copied_bytes >= ZC_NOTHING_MAPPED_AFTER {
                zc_fall_back(
                    path,
                    format!(
                        "the kernel mapped no page of the first {} MiB (the payload does not \
                         arrive in whole pages: off loopback that needs a NIC that splits \
                         headers, tcp-data-split)",
                        ZC_NOTHING_MAPPED_AFTER >> 20
                    ),
                    fallbacks,
                );
            }
            Ok(ZcGot::Bytes(n))
        }
        Err(libc::EINTR) | Err(libc::EAGAIN) => Ok(ZcGot::Nothing),
        Err(e) if zc_unsupported(e) => {
            zc_fall_back(
                path,
                format!(
                    "getsockopt(TCP_ZEROCOPY_RECEIVE) refused ({})",
                    sys::errno_str(e)
                ),
                fallbacks,
            );
            Ok(ZcGot::Nothing)
        }
        Err(e) => Err(e),
    }
}

/// The one-stream receiver. Zero-copy first where asked: map what is queued, wait for
/// readability (SO_RCVLOWAT batches the wake-ups) when nothing is; then, or after a fall-back
/// from zero-copy, a tight blocking loop of copies (SO_RCVTIMEO wakes it to check stop).
fn single_recv(
    st: &mut St,
    buf: &mut [u8],
    path: &mut RecvPath,
    fallbacks: &mut Vec<String>,
    control: &Control,
    sampler: &mut CpuSampler,
) {
    if *path == RecvPath::Zerocopy {
        let wait_ms = POLL_INTERVAL.as_millis() as i32;
        recv_loop(st, control, sampler, |st| {
            if *path != RecvPath::Zerocopy {
                return Got::End(None);
            }
            match zc_step(st, buf, path, fallbacks) {
                Ok(ZcGot::Eof) => Got::End(Some(StreamEnd::Eof)),
                Ok(ZcGot::Bytes(n)) => Got::Bytes(n),
                Ok(ZcGot::Nothing) => {
                    if let (RecvPath::Zerocopy, Some(zc)) = (*path, st.zc.as_ref()) {
                        zc.wait_readable(wait_ms);
                    }
                    Got::Nothing
                }
                Err(e) => Got::Failed(e, "getsockopt(TCP_ZEROCOPY_RECEIVE)"),
            }
        });
        if st.end.is_some() {
            return;
        }
    }
    recv_loop(st, control, sampler, |st| {
        match recv_once(st.fd, buf, *path) {
            Ok(0) => Got::End(Some(StreamEnd::Eof)),
            Ok(n) => Got::Bytes(n),
            Err(libc::EINTR) | Err(libc::EAGAIN) => Got::Nothing,
            Err(e) if skip_copy_unsupported(*path, e) => {
                fall_back_to_copy(path, e, fallbacks);
                Got::Nothing
            }
            Err(e) => Got::Failed(e, "recv"),
        }
    });
}

/// What one step of a one-stream receiver got.
enum Got {
    Bytes(usize),
    Nothing,
    /// The loop ends: at the stream's end, or (`None`) to go on another way.
    End(Option<StreamEnd>),
    /// The call that failed, with its errno.
    Failed(i32, &'static str),
}

/// The one-stream receive loop around `step` (one read of either path): counts bytes and reads
/// in locals, publishing them at each read; stops when asked; leaves the counts and the end (or
/// the failure) in `st`.
fn recv_loop(
    st: &mut St,
    control: &Control,
    sampler: &mut CpuSampler,
    mut step: impl FnMut(&mut St) -> Got,
) {
    let (mut bytes, mut reads) = (st.bytes, st.blocks);
    let end = loop {
        if control.is_stopped() {
            break Some(StreamEnd::Stopped);
        }
        match step(st) {
            Got::Bytes(n) => {
                bytes += n as u64;
                reads += 1;
                st.ctr.publish(bytes, reads);
                st.lowat.follow(st.fd);
                sampler.sample();
            }
            Got::Nothing => {}
            Got::End(end) => break end,
            Got::Failed(e, what) => {
                st.bytes = bytes;
                st.blocks = reads;
                st.fail(e, what);
                return;
            }
        }
    };
    st.bytes = bytes;
    st.blocks = reads;
    st.end = end;
}

#[allow(clippy::too_many_arguments)]
fn epoll_loop(
    sts: &mut [St],
    block: &[u8],
    rbuf: &mut [u8],
    path: &mut RecvPath,
    fallbacks: &mut Vec<String>,
    control: &Control,
    budget: Option<&Budget>,
    sampler: &mut CpuSampler,
) -> std::io::Result<()> {
    let ep = sys::Epoll::new()?;
    let mut active = 0usize;
    for (i, st) in sts.iter_mut().enumerate() {
        if st.end.is_some() {
            continue;
        }
        let ev = match st.dir {
            Direction::Send => sys::EpollFlags::OUT,
            Direction::Recv => sys::EpollFlags::IN | sys::EpollFlags::RDHUP,
        };
        match ep.add(st.fd, ev, i as u64) {
            Ok(()) => active += 1,
            Err(e) => st.fail(e.raw_os_error().unwrap_or(libc::EINVAL), "epoll_ctl"),
        }
    }
    let mut events = sys::Epoll::events(EVENTS);
    let timeout_ms = POLL_INTERVAL.as_millis() as i32;
    // Receivers with a low-water mark: epoll reports a stream only once a mark's worth is
    // queued (or at its end), so a shorter tail is swept up every POLL_INTERVAL.
    let mut swept = Instant::now();
    while active > 0 {
        if control.is_stopped() {
            break;
        }
        let k = match ep.wait(&mut events, timeout_ms) {
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if (k == 0 || swept.elapsed() >= POLL_INTERVAL) && sts.iter().any(|s| s.lowat.wanted()) {
            swept = Instant::now();
            for st in sts.iter_mut() {
                if st.lowat.wanted() && st.end.is_none() && st.dir == Direction::Recv {
                    service_recv(st, rbuf, path, fallbacks);
                    st.lowat.follow(st.fd);
                    st.ctr.publish(st.bytes, st.blocks);
                    if st.end.is_some() {
                        let _ = ep.delete(st.fd);
                        active -= 1;
                    }
                }
            }
        }
        for ev in &events[..k] {
            let (bits, idx) = (ev.flags, ev.data.u64() as usize);
            let Some(st) = sts.get_mut(idx) else { continue };
            if st.end.is_some() {
                continue;
            }
            match st.dir {
                Direction::Send => service_send(st, bits, block, budget),
                Direction::Recv => {
                    service_recv(st, rbuf, path, fallbacks);
                    st.lowat.follow(st.fd);
                }
            }
            st.ctr.publish(st.bytes, st.blocks);
            sampler.sample();
            if st.end.is_some() {
                let _ = ep.delete(st.fd);
                active -= 1;
            }
        }
    }
    for st in sts.iter_mut().filter(|s| s.end.is_none()) {
        st.end = Some(StreamEnd::Stopped);
    }
    Ok(())
}

fn service_send(st: &mut St, bits: sys::EpollFlags, block: &[u8], budget: Option<&Budget>) {
    let Some(op) = st.op.as_mut() else { return };
    if bits.contains(sys::EpollFlags::ERR) {
        op.reap(st.fd);
    }
    for _ in 0..BURST {
        if st.cur_len == 0 {
            let len = match budget {
                None => block.len(),
                Some(b) => b.claim(block.len()),
            };
            if len == 0 {
                st.end = Some(StreamEnd::BudgetSpent);
                return;
            }
            st.cur_len = len;
            st.off = 0;
        }
        match op.send(st.fd, block, st.off, st.cur_len - st.off) {
            Ok(n) => {
                st.off += n;
                st.bytes += n as u64;
                if st.off >= st.cur_len {
                    st.blocks += 1;
                    st.cur_len = 0;
                }
            }
            Err(libc::EINTR) => {}
            Err(libc::EAGAIN) => return,
            Err(e) => {
                st.fail(e, "send");
                return;
            }
        }
    }
}

fn service_recv(st: &mut St, buf: &mut [u8], path: &mut RecvPath, fallbacks: &mut Vec<String>) {
    for _ in 0..BURST {
        if *path == RecvPath::Zerocopy {
            match zc_step(st, buf, path, fallbacks) {
                Ok(ZcGot::Eof) => {
                    st.end = Some(StreamEnd::Eof);
                    return;
                }
                Ok(ZcGot::Bytes(n)) => {
                    st.bytes += n as u64;
                    st.blocks += 1;
                }
                // nothing queued: level-triggered epoll reports the stream again when
                // there is; after a fallback the next round copies
                Ok(ZcGot::Nothing) => return,
                Err(e) => {
                    st.fail(e, "getsockopt(TCP_ZEROCOPY_RECEIVE)");
                    return;
                }
            }
            continue;
        }
        match recv_once(st.fd, buf, *path) {
            Ok(0) => {
                st.end = Some(StreamEnd::Eof);
                return;
            }
            Ok(n) => {
                st.bytes += n as u64;
                st.blocks += 1;
            }
            Err(libc::EINTR) => {}
            Err(libc::EAGAIN) => return,
            Err(e) if skip_copy_unsupported(*path, e) => fall_back_to_copy(path, e, fallbacks),
            Err(e) => {
                st.fail(e, "recv");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {

    /// What a server counts for a worker is what the worker maps: issue 37's `-R -l 16M`
    /// held one 16 MiB block per sending worker.
    #[test]
    fn worker_buffers_are_the_block_and_the_read_buffer_it_maps() {
        const MIB: u64 = 1 << 20;
        assert_eq!(
            worker_buffers(16 << 20, SendPath::Copy, true, false),
            16 * MIB
        );
        assert_eq!(
            worker_buffers(16 << 20, SendPath::Sendfile, true, false),
            32 * MIB
        );
        // a receiver reads at least RECV_LEN_MIN a call
        assert_eq!(worker_buffers(128 << 10, SendPath::Copy, false, true), MIB);
        assert_eq!(
            worker_buffers(100, SendPath::Copy, true, true),
            4096 + MIB,
            "whole pages"
        );
        let b = AlignedBuf::new(16 << 20);
        assert_eq!(
            b.map_len as u64,
            worker_buffers(16 << 20, SendPath::Copy, true, false)
        );
        // UDP: a batch of datagrams to send, 64 KiB slots to receive into
        use crate::udp::{UdpRecvPath, UdpSendPath};
        let udp = crate::udp::worker_buffers;
        assert_eq!(
            udp(1400, UdpSendPath::Gso, UdpRecvPath::Gro, 0, false, true),
            16 * (65536 + 64)
        );
        assert_eq!(
            udp(1400, UdpSendPath::Mmsg, UdpRecvPath::Mmsg, 0, false, true),
            64 * (65536 + 64)
        );
        assert!(
            udp(65507, UdpSendPath::Gso, UdpRecvPath::Gro, 0, true, false) <= 4 * MIB + 64 * 4096
        );
        assert_eq!(
            udp(
                1400,
                UdpSendPath::Plain,
                UdpRecvPath::Plain,
                0,
                false,
                false
            ),
            0
        );
    }

    use super::*;

    #[test]
    fn a_receiver_reads_at_least_a_mebibyte_a_call() {
        assert_eq!(recv_len(1), RECV_LEN_MIN);
        assert_eq!(recv_len(128 * 1024), RECV_LEN_MIN);
        assert_eq!(recv_len(4 << 20), 4 << 20);
    }

    #[test]
    fn a_marks_goal_is_one_the_mark_can_reach() {
        // a 4 MiB read: the mark stops at its cap, so the goal must too (else the buffer is
        // looked at every LOWAT_EVERY reads for ever)
        assert_eq!(Lowat::toward(recv_len(4 << 20)).goal, RCVLOWAT_MAX);
        let big = lowat_mark(4 << 20, usize::MAX, Some(0)).expect("a short path's mark");
        assert_eq!(Lowat::toward(4 << 20).goal, big);
        assert_eq!(Lowat::toward(128 * 1024).goal, 128 * 1024);
    }

    #[test]
    fn the_mark_is_the_read_length_up_to_its_cap_and_a_quarter_of_the_buffer() {
        let lan = Some(60);
        // autotuned past 4 MiB: the whole read length
        assert_eq!(
            lowat_mark(recv_len(128 * 1024), 6 << 20, lan),
            Some(1 << 20)
        );
        assert_eq!(lowat_mark(8 << 20, 32 << 20, lan), Some(RCVLOWAT_MAX));
        // a fresh socket (tcp_rmem's default 128 KiB): 32 KiB until the buffer grows
        assert_eq!(lowat_mark(1 << 20, 128 * 1024, lan), Some(32 * 1024));
        // -w 256K locks SO_RCVBUF at 512 KiB: half the window
        assert_eq!(lowat_mark(1 << 20, 512 * 1024, lan), Some(128 * 1024));
        // a buffer too small for a mark: the kernel's 1
        assert_eq!(lowat_mark(1 << 20, 3, lan), Some(1));
        assert_eq!(lowat_mark(1 << 20, 0, lan), Some(1));
    }

    #[test]
    fn a_long_path_or_an_unknown_one_gets_no_mark() {
        assert_eq!(lowat_mark(1 << 20, 32 << 20, Some(20_000)), None);
        assert_eq!(lowat_mark(1 << 20, 32 << 20, Some(SHORT_PATH_US)), None);
        assert_eq!(lowat_mark(1 << 20, 32 << 20, None), None);
        assert_eq!(
            lowat_mark(1 << 20, 32 << 20, Some(SHORT_PATH_US - 1)),
            Some(1 << 20)
        );
    }
}
