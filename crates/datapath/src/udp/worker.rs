//! The UDP worker thread: batched senders with pacing, batched receivers.

use super::accounting::RecvAccounting;
use super::pacer::{paced_batch, Pacer};
use super::{
    UdpCounters, UdpRecvPath, UdpSendPath, UdpStreamResult, UdpWorkerReport, UdpWorkerSpec,
};
use crate::cpu::{CpuNow, CpuSampler};
use crate::thread::{spawn_pinned, WorkerThread};
use crate::{sys, Budget, Control, DatapathError, Direction, StreamEnd, POLL_INTERVAL};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use wirespeed_protocol::udp::{header_len, unwrap_seq32, DatagramHeader, MAX_DATAGRAM_LEN};

/// Receive slot size: room for a GRO-coalesced message or any datagram.
const SLOT: usize = 65536;
/// Kernel limit of segments per GSO send (UDP_MAX_SEGMENTS is 64 on older kernels).
const GSO_MAX_SEGS: usize = 64;
/// Payload bytes per GSO message (must stay below the 64 KiB IP datagram limit).
const GSO_MAX_BYTES: usize = 65000;
/// GSO messages per sendmmsg by default.
const GSO_MSGS: usize = 8;
/// recvmmsg rounds per ready socket per wake-up.
const RECV_ROUNDS: usize = 16;
/// Pace in slices of about this much time.
const PACE_SLICE_NS: u64 = 1_000_000;

/// A running UDP worker.
pub type UdpWorkerHandle = WorkerThread<UdpWorkerReport, UdpCounters>;

#[inline]
fn mono_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(ns: u64) {
    let ts = rustix::time::Timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as _,
    };
    // an interruption only wakes the pacer early
    let _ = rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &ts);
}

/// The socket is full: false when the test is stopping, else true after waiting (1 ms at
/// most) for room.
fn wait_for_room(fd: RawFd, control: &Control) -> bool {
    if control.is_stopped() {
        return false;
    }
    sys::poll_fd(fd, rustix::event::PollFlags::OUT, 1);
    true
}

/// Start a UDP worker. Validates the spec and applies `fq_rate` before the
/// thread starts; a pin failure is returned here (the sockets are then closed).
pub fn spawn_udp_worker(
    spec: UdpWorkerSpec,
    control: Arc<Control>,
) -> Result<UdpWorkerHandle, DatapathError> {
    let min = header_len(spec.counters_64bit);
    if spec.datagram_len < min || spec.datagram_len > MAX_DATAGRAM_LEN {
        return Err(DatapathError::InvalidSpec(format!(
            "UDP datagram length {} out of range {min}..={MAX_DATAGRAM_LEN}",
            spec.datagram_len
        )));
    }
    if spec.batch > 4096 {
        return Err(DatapathError::InvalidSpec(format!(
            "UDP batch {} above 4096",
            spec.batch
        )));
    }
    if let Some(rate) = spec.fq_rate {
        for s in spec
            .streams
            .iter()
            .filter(|s| s.direction == Direction::Send)
        {
            crate::tcp::set_max_pacing_rate(s.socket.as_raw_fd(), rate)?;
        }
    }
    let streams = spec
        .streams
        .iter()
        .map(|s| (s.id, s.socket.as_raw_fd()))
        .collect();
    let unpinned = empty_report(spec.cpu);
    spawn_pinned("ws-udp", spec.cpu, streams, unpinned, move |ctrs, now| {
        run(spec, &control, ctrs, now)
    })
}

fn empty_report(cpu: Option<u32>) -> UdpWorkerReport {
    UdpWorkerReport {
        cpu_requested: cpu,
        cpus_seen: wirespeed_model::CpuSet::new(),
        send_path: None,
        recv_path: None,
        fallbacks: Vec::new(),
        streams: Vec::new(),
        syscalls: 0,
        cpu_user: std::time::Duration::ZERO,
        cpu_system: std::time::Duration::ZERO,
        sockets: Vec::new(),
    }
}

/// Batch sender: slots of `len` bytes in one buffer, prebuilt message arrays.
struct Sender {
    path: UdpSendPath,
    len: usize,
    c64: bool,
    batch_max: usize,
    gso_segs: usize,
    buf: Vec<u8>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    cmsg: Box<[u64; 4]>,
    cmsg_space: usize,
    syscalls: u64,
    fallbacks: Vec<String>,
}

/// Outcome of one batch.
enum SendOutcome {
    /// all `n` datagrams sent
    Done,
    /// stop() while waiting for the socket: this many were sent
    Stopped(usize),
    /// an error after this many were sent
    Failed(usize, i32),
}

fn gso_supported(fd: RawFd) -> bool {
    sys::getsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT).is_ok()
}

/// Datagrams a sender's buffer holds on `path` (after any fallback) for datagrams of `len`
/// bytes; `batch` > 0 overrides.
fn send_batch(path: UdpSendPath, len: usize, batch: usize) -> usize {
    let gso_segs = (GSO_MAX_BYTES / len.max(1)).min(GSO_MAX_SEGS);
    if batch > 0 {
        batch
    } else {
        match path {
            UdpSendPath::Gso => gso_segs * GSO_MSGS,
            UdpSendPath::Mmsg => 64,
            UdpSendPath::Plain => 16,
        }
    }
}

/// Slots of [`SLOT`] bytes a receiver's buffer holds on `path`; `batch` > 0 overrides.
fn recv_slots(path: UdpRecvPath, batch: usize) -> usize {
    match path {
        UdpRecvPath::Plain => 1,
        UdpRecvPath::Mmsg => {
            if batch > 0 {
                batch.min(1024)
            } else {
                64
            }
        }
        UdpRecvPath::Gro => {
            if batch > 0 {
                batch.min(64)
            } else {
                16
            }
        }
    }
}

/// The bytes of data buffers one UDP worker holds while it runs, at most (a send path that
/// falls back takes the larger of the two; a receive path keeps its slot count): its batch of datagrams of `len` bytes when it
/// sends, its receive slots and their control space when it receives. What a server counts
/// against its memory budget for each worker of a test before admitting it.
pub fn worker_buffers(
    len: usize,
    send_path: UdpSendPath,
    recv_path: UdpRecvPath,
    batch: usize,
    send: bool,
    recv: bool,
) -> u64 {
    let mut n = 0;
    if send {
        let most = [send_path, UdpSendPath::Mmsg]
            .into_iter()
            .map(|p| send_batch(p, len, batch))
            .max()
            .unwrap_or(0);
        n += (most * len) as u64;
    }
    if recv {
        // a fallback keeps the slot count (the receiver is made with it)
        n += (recv_slots(recv_path, batch) * (SLOT + CTRL_WORDS * 8)) as u64;
    }
    n
}

impl Sender {
    fn new(path: UdpSendPath, len: usize, c64: bool, batch: usize) -> Sender {
        let gso_segs = (GSO_MAX_BYTES / len).min(GSO_MAX_SEGS);
        let mut path = path;
        let mut fallbacks = Vec::new();
        if path == UdpSendPath::Gso && gso_segs < 2 {
            fallbacks.push(format!("gso: datagrams of {len} bytes leave no room for 2 segments per send; using sendmmsg"));
            path = UdpSendPath::Mmsg;
        }
        let batch_max = send_batch(path, len, batch);
        let mut s = Sender {
            path,
            len,
            c64,
            batch_max,
            gso_segs: gso_segs.max(1),
            buf: vec![0u8; batch_max * len],
            iovs: Vec::new(),
            msgs: Vec::new(),
            cmsg: Box::new([0u64; 4]),
            cmsg_space: 0,
            syscalls: 0,
            fallbacks,
        };
        // Payload after the header: a fixed pseudo-random pattern.
        let mut x: u32 = 0x1234_5678;
        for b in s.buf.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        s.build_cmsg();
        s
    }

    fn build_cmsg(&mut self) {
        let seg = self.len as u16;
        // SAFETY: CMSG_* compute offsets inside our own 32-byte buffer,
        // which is large enough for one cmsg carrying a u16 (CMSG_SPACE(2) = 24).
        unsafe {
            let mut mh: libc::msghdr = std::mem::zeroed();
            mh.msg_control = self.cmsg.as_mut_ptr().cast();
            self.cmsg_space = libc::CMSG_SPACE(2) as usize;
            mh.msg_controllen = self.cmsg_space as _;
            let cm = libc::CMSG_FIRSTHDR(&mh);
            (*cm).cmsg_level = libc::SOL_UDP;
            (*cm).cmsg_type = libc::UDP_SEGMENT;
            (*cm).cmsg_len = libc::CMSG_LEN(2) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cm).cast::<u16>(), seg);
        }
    }

    /// Headers for datagrams first_seq.. of a batch of n, stamped `now_ns`.
    #[inline]
    fn fill(&mut self, n: usize, first_seq: u64, now_ns: u64) {
        let sec = (now_ns / 1_000_000_000) as u32;
        let usec = ((now_ns % 1_000_000_000) / 1000) as u32;
        for k in 0..n {
            let h = DatagramHeader {
                sec,
                usec,
                seq: first_seq + k as u64,
            };
            // Cannot fail: the spec check keeps datagram_len >= header_len.
            let written = h.emit(&mut self.buf[k * self.len..(k + 1) * self.len], self.c64);
            debug_assert!(written.is_ok());
        }
    }

    /// Lay out message headers for datagrams [from, n) in the current path.
    /// Returns the number of messages; `seg_of` maps message -> datagram count.
    fn layout(&mut self, from: usize, n: usize) -> usize {
        self.iovs.clear();
        self.msgs.clear();
        let per = if self.path == UdpSendPath::Gso {
            self.gso_segs
        } else {
            1
        };
        let mut k = from;
        while k < n {
            let cnt = per.min(n - k);
            self.iovs.push(libc::iovec {
                // SAFETY: k*len is inside `buf` (k < n <= batch_max).
                iov_base: unsafe { self.buf.as_mut_ptr().add(k * self.len) }.cast(),
                iov_len: cnt * self.len,
            });
            k += cnt;
        }
        for i in 0..self.iovs.len() {
            // SAFETY: mmsghdr is plain data; zeroed is a valid empty message.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: in-bounds element of iovs, which is not resized until the next layout().
            m.msg_hdr.msg_iov = unsafe { self.iovs.as_mut_ptr().add(i) };
            m.msg_hdr.msg_iovlen = 1;
            if self.path == UdpSendPath::Gso {
                m.msg_hdr.msg_control = self.cmsg.as_mut_ptr().cast();
                m.msg_hdr.msg_controllen = self.cmsg_space as _;
            }
            self.msgs.push(m);
        }
        self.msgs.len()
    }

    /// Send datagrams [0, n) of the buffer on `fd`.
    fn send(&mut self, fd: RawFd, n: usize, control: &Control) -> SendOutcome {
        let mut done = 0usize; // datagrams sent
        if self.path == UdpSendPath::Plain {
            while done < n {
                // SAFETY: slot `done` is inside buf.
                let r = unsafe {
                    libc::send(
                        fd,
                        self.buf.as_ptr().add(done * self.len).cast(),
                        self.len,
                        0,
                    )
                };
                self.syscalls += 1;
                if r >= 0 {
                    done += 1;
                    continue;
                }
                match sys::errno() {
                    libc::EINTR => {}
                    libc::EAGAIN | libc::ENOBUFS => {
                        if !wait_for_room(fd, control) {
                            return SendOutcome::Stopped(done);
                        }
                    }
                    e => return SendOutcome::Failed(done, e),
                }
            }
            return SendOutcome::Done;
        }
        let mut nmsg = self.layout(0, n);
        let mut mi = 0usize; // messages sent
        while mi < nmsg {
            // SAFETY: msgs[mi..nmsg] are valid messages pointing into buf/iovs/cmsg.
            let r = unsafe {
                libc::sendmmsg(
                    fd,
                    self.msgs.as_mut_ptr().add(mi),
                    (nmsg - mi) as libc::c_uint,
                    0,
                )
            };
            self.syscalls += 1;
            if r > 0 {
                for m in &self.msgs[mi..mi + r as usize] {
                    done += m.msg_len as usize / self.len;
                }
                mi += r as usize;
                continue;
            }
            let e = if r == 0 { libc::EAGAIN } else { sys::errno() };
            match e {
                libc::EINTR => {}
                libc::EAGAIN | libc::ENOBUFS => {
                    if !wait_for_room(fd, control) {
                        return SendOutcome::Stopped(done);
                    }
                }
                libc::EIO
                | libc::EINVAL
                | libc::EOPNOTSUPP
                | libc::ENOPROTOOPT
                | libc::EMSGSIZE
                    if self.path == UdpSendPath::Gso =>
                {
                    self.fallbacks.push(format!(
                        "gso: sendmmsg with UDP_SEGMENT={} refused ({}); using sendmmsg",
                        self.len,
                        std::io::Error::from_raw_os_error(e)
                    ));
                    self.path = UdpSendPath::Mmsg;
                    nmsg = self.layout(done, n);
                    mi = 0;
                }
                e => return SendOutcome::Failed(done, e),
            }
        }
        SendOutcome::Done
    }
}

/// Batch receiver: `vlen` slots of SLOT bytes plus a control buffer each.
struct Receiver {
    path: UdpRecvPath,
    vlen: usize,
    bufs: Vec<u8>,
    iovs: Vec<libc::iovec>,
    ctrl: Vec<u64>,
    msgs: Vec<libc::mmsghdr>,
    syscalls: u64,
}

const CTRL_WORDS: usize = 8; // 64 bytes of control data per slot

impl Receiver {
    fn new(path: UdpRecvPath, batch: usize) -> Receiver {
        let vlen = recv_slots(path, batch);
        let mut r = Receiver {
            path,
            vlen,
            bufs: vec![0u8; vlen * SLOT],
            iovs: Vec::with_capacity(vlen),
            ctrl: vec![0u64; vlen * CTRL_WORDS],
            msgs: Vec::with_capacity(vlen),
            syscalls: 0,
        };
        for i in 0..vlen {
            r.iovs.push(libc::iovec {
                // SAFETY: slot i is inside bufs.
                iov_base: unsafe { r.bufs.as_mut_ptr().add(i * SLOT) }.cast(),
                iov_len: SLOT,
            });
        }
        for i in 0..vlen {
            // SAFETY: zeroed mmsghdr is a valid empty message.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: in-bounds; iovs/ctrl are never resized after this point.
            m.msg_hdr.msg_iov = unsafe { r.iovs.as_mut_ptr().add(i) };
            m.msg_hdr.msg_iovlen = 1;
            // SAFETY: as above.
            m.msg_hdr.msg_control = unsafe { r.ctrl.as_mut_ptr().add(i * CTRL_WORDS) }.cast();
            r.msgs.push(m);
        }
        r
    }

    /// One receive call into the slots; feeds `acc`. Ok(messages) or Err(errno).
    fn round(&mut self, fd: RawFd, acc: &mut RecvAccounting, c64: bool) -> Result<usize, i32> {
        let k = if self.path == UdpRecvPath::Plain {
            // SAFETY: slot 0 is SLOT writable bytes.
            let r =
                unsafe { libc::recv(fd, self.bufs.as_mut_ptr().cast(), SLOT, libc::MSG_DONTWAIT) };
            self.syscalls += 1;
            if r < 0 {
                return Err(sys::errno());
            }
            self.msgs[0].msg_len = r as u32;
            self.msgs[0].msg_hdr.msg_controllen = 0;
            1
        } else {
            for m in &mut self.msgs {
                m.msg_hdr.msg_controllen = (CTRL_WORDS * 8) as _;
                m.msg_hdr.msg_flags = 0;
            }
            // SAFETY: msgs describe valid slots and control buffers of the stated sizes.
            let r = unsafe {
                libc::recvmmsg(
                    fd,
                    self.msgs.as_mut_ptr(),
                    self.vlen as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            self.syscalls += 1;
            if r < 0 {
                return Err(sys::errno());
            }
            r as usize
        };
        let now = mono_ns() as f64 * 1e-9;
        for i in 0..k {
            let len = self.msgs[i].msg_len as usize;
            let seg = self.gro_size(i).unwrap_or(len).max(1);
            let slot = &self.bufs[i * SLOT..i * SLOT + len.min(SLOT)];
            for d in slot.chunks(seg) {
                match DatagramHeader::parse(d, c64) {
                    Ok(h) => {
                        let seq = if c64 {
                            h.seq
                        } else {
                            unwrap_seq32(acc.highest_seq(), h.seq as u32)
                        };
                        acc.on_datagram(seq, d.len(), h.sent_secs(), now);
                    }
                    Err(_) => acc.on_malformed(),
                }
            }
            if len == 0 {
                acc.on_malformed();
            }
        }
        Ok(k)
    }

    /// Segment size from a UDP_GRO cmsg of message i, if any.
    fn gro_size(&self, i: usize) -> Option<usize> {
        if self.path != UdpRecvPath::Gro {
            return None;
        }
        let mh = &self.msgs[i].msg_hdr;
        // SAFETY: the kernel filled msg_control up to msg_controllen; CMSG_* stay inside it.
        unsafe {
            let mut cm = libc::CMSG_FIRSTHDR(mh);
            while !cm.is_null() {
                if (*cm).cmsg_level == libc::SOL_UDP && (*cm).cmsg_type == libc::UDP_GRO {
                    let v = std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast::<libc::c_int>());
                    return if v > 0 { Some(v as usize) } else { None };
                }
                cm = libc::CMSG_NXTHDR(mh, cm);
            }
        }
        None
    }
}

struct SendSt {
    id: u32,
    fd: RawFd,
    ctr: Arc<UdpCounters>,
    next_seq: u64,
    bytes: u64,
    packets: u64,
    pacer: Option<Pacer>,
    rate_bps: u64,
    target: usize,
    first_ns: u64,
    last_ns: u64,
    end: Option<StreamEnd>,
    err: Option<String>,
}

struct RecvSt {
    id: u32,
    fd: RawFd,
    ctr: Arc<UdpCounters>,
    acc: RecvAccounting,
    end: Option<StreamEnd>,
    err: Option<String>,
}

fn run(
    spec: UdpWorkerSpec,
    control: &Control,
    ctrs: Vec<Arc<UdpCounters>>,
    now: Arc<CpuNow>,
) -> UdpWorkerReport {
    let mut sampler = CpuSampler::new(now);
    let len = spec.datagram_len;
    let c64 = spec.counters_64bit;
    let mut fallbacks = Vec::new();
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for (s, ctr) in spec.streams.iter().zip(ctrs) {
        let fd = s.socket.as_raw_fd();
        let prep = sys::set_nonblocking(fd, true);
        let err = prep
            .err()
            .map(|e| format!("socket setup on stream {}: {e}", s.id));
        match s.direction {
            Direction::Send => sends.push(SendSt {
                id: s.id,
                fd,
                ctr,
                next_seq: 1,
                bytes: 0,
                packets: 0,
                pacer: None,
                rate_bps: s.rate_bps,
                target: 0,
                first_ns: 0,
                last_ns: 0,
                end: err.as_ref().map(|_| StreamEnd::Error),
                err,
            }),
            Direction::Recv => recvs.push(RecvSt {
                id: s.id,
                fd,
                ctr,
                acc: RecvAccounting::new(),
                end: err.as_ref().map(|_| StreamEnd::Error),
                err,
            }),
        }
    }

    // Send path: GSO only if every sending socket supports it.
    let mut send_path = spec.send_path;
    if send_path == UdpSendPath::Gso && !sends.iter().all(|s| gso_supported(s.fd)) {
        fallbacks.push("gso: UDP_SEGMENT not supported by this kernel; using sendmmsg".to_string());
        send_path = UdpSendPath::Mmsg;
    }
    let mut sender = if sends.is_empty() {
        None
    } else {
        Some(Sender::new(send_path, len, c64, spec.batch))
    };
    // Receive path: GRO must be switched on per socket.
    let mut recv_path = spec.recv_path;
    if recv_path == UdpRecvPath::Gro {
        for r in &recvs {
            if let Err(e) = sys::setsockopt_int(r.fd, libc::SOL_UDP, libc::UDP_GRO, 1) {
                fallbacks.push(format!(
                    "gro: setsockopt UDP_GRO failed ({e}); using recvmmsg"
                ));
                recv_path = UdpRecvPath::Mmsg;
                break;
            }
        }
        if recv_path != UdpRecvPath::Gro {
            for r in &recvs {
                let _ = sys::setsockopt_int(r.fd, libc::SOL_UDP, libc::UDP_GRO, 0);
            }
        }
    }
    let mut receiver = if recvs.is_empty() {
        None
    } else {
        // As many slots as the path asked for, after a fallback too (GRO's 16 slots of 64 KiB
        // stay 16 on recvmmsg): what `worker_buffers` counted.
        let slots = recv_slots(spec.recv_path, spec.batch);
        Some(Receiver::new(recv_path, slots))
    };

    let start = mono_ns();
    if let Some(snd) = &sender {
        for s in &mut sends {
            if s.rate_bps > 0 {
                s.target = paced_batch(s.rate_bps, len, snd.batch_max, PACE_SLICE_NS);
                s.pacer = Some(Pacer::new(s.rate_bps, (s.target * len) as u64, start));
            } else {
                s.target = snd.batch_max;
            }
        }
    }
    if sends.iter().any(|s| s.pacer.is_some()) {
        // 1 ns of timer slack for this thread: the pacer's sleeps end on time.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    }

    let ep = if recvs.is_empty() {
        None
    } else {
        make_epoll(&mut recvs)
    };
    let mut events = sys::Epoll::events(recvs.len().clamp(1, 256));
    let budget = spec.budget.as_deref();

    loop {
        if control.is_stopped() {
            break;
        }
        let now = mono_ns();
        let mut progressed = false;
        let mut unpaced_active = false;
        let mut wake: Option<u64> = None;
        let mut active_sends = 0usize;
        if let Some(snd) = sender.as_mut() {
            for s in sends.iter_mut().filter(|s| s.end.is_none()) {
                active_sends += 1;
                let want = match s.pacer.as_mut() {
                    Some(p) => {
                        // Wait for a whole batch: sending the sliver that accrued
                        // during the last send would cost a syscall per datagram.
                        let n = p.allowed(now, len, s.target);
                        if n < s.target {
                            let at = p.ready_at(len, s.target);
                            wake = Some(wake.map_or(at, |w: u64| w.min(at)));
                            continue;
                        }
                        n
                    }
                    None => {
                        unpaced_active = true;
                        s.target
                    }
                };
                let n = match budget {
                    None => want,
                    Some(b) => claim_datagrams(b, len, want),
                };
                if n == 0 {
                    s.end = Some(StreamEnd::BudgetSpent);
                    continue;
                }
                snd.fill(n, s.next_seq, now);
                if s.first_ns == 0 {
                    s.first_ns = now;
                }
                let (sent, outcome) = match snd.send(s.fd, n, control) {
                    SendOutcome::Done => (n, None),
                    SendOutcome::Stopped(k) => (k, Some(StreamEnd::Stopped)),
                    SendOutcome::Failed(k, e) => {
                        s.err = Some(format!(
                            "send on UDP stream {}: {}",
                            s.id,
                            std::io::Error::from_raw_os_error(e)
                        ));
                        (k, Some(StreamEnd::Error))
                    }
                };
                s.next_seq += sent as u64;
                s.packets += sent as u64;
                s.bytes += (sent * len) as u64;
                s.last_ns = mono_ns();
                if let Some(p) = s.pacer.as_mut() {
                    p.sent((sent * len) as u64);
                }
                s.ctr.publish_send(s.bytes, s.packets);
                if outcome.is_some() {
                    s.end = outcome;
                }
                progressed = true;
                sampler.sample();
            }
        }
        if let (Some(rcv), Some(ep)) = (receiver.as_mut(), ep.as_ref()) {
            let timeout_ms: i32 = if progressed || unpaced_active {
                0
            } else if let Some(w) = wake {
                (w.saturating_sub(now).div_ceil(1_000_000) as i32)
                    .min(POLL_INTERVAL.as_millis() as i32)
            } else {
                POLL_INTERVAL.as_millis() as i32
            };
            // An interrupted (or failed) wait is an empty round.
            let k = ep.wait(&mut events, timeout_ms).unwrap_or(0);
            for ev in &events[..k] {
                let Some(r) = recvs.get_mut(ev.data.u64() as usize) else {
                    continue;
                };
                if r.end.is_some() {
                    continue;
                }
                for _ in 0..RECV_ROUNDS {
                    match rcv.round(r.fd, &mut r.acc, c64) {
                        Ok(_) => sampler.sample(),
                        Err(libc::EAGAIN) => break,
                        // ICMP errors from earlier sends on this socket: not fatal for a receiver.
                        Err(libc::EINTR) | Err(libc::ECONNREFUSED) => {}
                        Err(e) => {
                            r.end = Some(StreamEnd::Error);
                            r.err = Some(format!(
                                "recv on UDP stream {}: {}",
                                r.id,
                                std::io::Error::from_raw_os_error(e)
                            ));
                            break;
                        }
                    }
                }
                r.ctr.publish_recv(&r.acc.stats());
            }
        } else if active_sends == 0 {
            break; // sender-only worker: every stream has ended
        } else if !progressed {
            if let Some(w) = wake {
                sleep_until(w.min(now + POLL_INTERVAL.as_nanos() as u64));
            }
        }
    }

    // Report.
    if let Some(snd) = &sender {
        fallbacks.extend(snd.fallbacks.iter().cloned());
    }
    let syscalls =
        sender.as_ref().map_or(0, |s| s.syscalls) + receiver.as_ref().map_or(0, |r| r.syscalls);
    let send_path = sender.as_ref().map(|s| s.path);
    let recv_path = receiver.as_ref().map(|r| r.path);
    let mut results = Vec::new();
    for s in &sends {
        s.ctr.publish_send(s.bytes, s.packets);
        results.push(UdpStreamResult {
            id: s.id,
            direction: Direction::Send,
            bytes: s.bytes,
            packets: s.packets,
            end: s.end.unwrap_or(StreamEnd::Stopped),
            error: s.err.clone(),
            recv: None,
            rate_bps: s.rate_bps,
            send_seconds: s.last_ns.saturating_sub(s.first_ns) as f64 * 1e-9,
        });
    }
    for r in &recvs {
        let st = r.acc.stats();
        r.ctr.publish_recv(&st);
        results.push(UdpStreamResult {
            id: r.id,
            direction: Direction::Recv,
            bytes: st.bytes,
            packets: st.received,
            end: r.end.unwrap_or(StreamEnd::Stopped),
            error: r.err.clone(),
            recv: Some(st),
            rate_bps: 0,
            send_seconds: 0.0,
        });
    }
    // Keep the spec's stream order in the report.
    let order: Vec<u32> = spec.streams.iter().map(|s| s.id).collect();
    results.sort_by_key(|r| {
        order
            .iter()
            .position(|&id| id == r.id)
            .unwrap_or(usize::MAX)
    });
    drop(sender);
    drop(receiver);
    for s in &spec.streams {
        let _ = sys::set_nonblocking(s.socket.as_raw_fd(), false);
    }
    sampler.sample();
    let (cpu_user, cpu_system) = sys::thread_cpu_times();
    UdpWorkerReport {
        cpu_requested: spec.cpu,
        cpus_seen: sampler.cpus(),
        send_path,
        recv_path,
        fallbacks,
        streams: results,
        syscalls,
        cpu_user,
        cpu_system,
        sockets: spec.streams.into_iter().map(|s| (s.id, s.socket)).collect(),
    }
}

/// Claim up to `want` whole datagrams from a shared budget.
fn claim_datagrams(b: &Budget, len: usize, want: usize) -> usize {
    let mut n = 0;
    while n < want && b.claim(len) > 0 {
        n += 1;
    }
    n
}

fn make_epoll(recvs: &mut [RecvSt]) -> Option<sys::Epoll> {
    let ep = match sys::Epoll::new() {
        Ok(ep) => ep,
        Err(e) => {
            for r in recvs.iter_mut() {
                r.end = Some(StreamEnd::Error);
                r.err = Some(format!("epoll_create1: {e}"));
            }
            return None;
        }
    };
    for (i, r) in recvs.iter_mut().enumerate() {
        if let Err(e) = ep.add(r.fd, sys::EpollFlags::IN, i as u64) {
            r.end = Some(StreamEnd::Error);
            r.err = Some(format!("epoll_ctl on UDP stream {}: {e}", r.id));
        }
    }
    Some(ep)
}
