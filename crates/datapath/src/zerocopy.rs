//! Per-stream send operations for every [`SendPath`], and the receive call.
//!
//! Each `send` moves bytes `block[off..off+len]` (all send paths transmit
//! the same constant block) and returns how many the socket took, or the
//! errno. The caller owns retry/stop logic; these are single syscalls except
//! for `Splice` (vmsplice when the pipe is empty + splice) and the occasional
//! error-queue drain of `MsgZerocopy`.

use crate::sys::{self, borrow};
use crate::{RecvPath, SendPath};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};
use rustix::pipe::SpliceFlags;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// `MSG_ZEROCOPY` (linux/socket.h), which rustix's `SendFlags` does not name.
const MSG_ZEROCOPY: u32 = 0x0400_0000;

/// A rustix error as the errno the workers match on.
#[inline]
fn errno(e: Errno) -> i32 {
    e.raw_os_error()
}

/// Start reading MSG_ZEROCOPY completions once this many calls are outstanding.
const ZC_REAP_AT: u64 = 64;
/// Never have more than this many MSG_ZEROCOPY calls outstanding.
const ZC_MAX_OUTSTANDING: u64 = 1024;

/// MSG_ZEROCOPY completion accounting of one socket.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ZcStats {
    /// send calls that took data with MSG_ZEROCOPY (each gets one notification id)
    pub sends: u64,
    /// ids whose completion was read from the error queue
    pub completed: u64,
    /// ... of which the kernel copied the data after all
    pub copied: u64,
}

impl ZcStats {
    #[inline]
    fn outstanding(&self) -> u64 {
        self.sends.saturating_sub(self.completed)
    }
}

pub(crate) enum SendOp {
    Copy,
    Sendfile {
        memfd: RawFd,
    },
    Splice {
        pipe_r: OwnedFd,
        pipe_w: OwnedFd,
        in_pipe: usize,
    },
    Zerocopy(ZcStats),
}

impl SendOp {
    pub(crate) fn path(&self) -> SendPath {
        match self {
            SendOp::Copy => SendPath::Copy,
            SendOp::Sendfile { .. } => SendPath::Sendfile,
            SendOp::Splice { .. } => SendPath::Splice,
            SendOp::Zerocopy(_) => SendPath::MsgZerocopy,
        }
    }

    pub(crate) fn zc_stats(&self) -> ZcStats {
        match self {
            SendOp::Zerocopy(s) => *s,
            _ => ZcStats::default(),
        }
    }

    /// One transfer attempt of `block[off..off + len]`. `Err(errno)`; EAGAIN means "not now"
    /// (timeout or non-blocking), EINTR means "retry", and a range outside `block` is EINVAL
    /// (a caller's bug, refused rather than trusted).
    #[inline]
    pub(crate) fn send(
        &mut self,
        fd: RawFd,
        block: &[u8],
        off: usize,
        len: usize,
    ) -> Result<usize, i32> {
        let data = off
            .checked_add(len)
            .and_then(|end| block.get(off..end))
            .ok_or(libc::EINVAL)?;
        let fd = borrow(fd);
        match self {
            SendOp::Copy => rustix::net::send(fd, data, SendFlags::NOSIGNAL).map_err(errno),
            SendOp::Sendfile { memfd } => {
                // The memfd holds a copy of `block`: the same range, by offset.
                let mut o = off as u64;
                rustix::fs::sendfile(fd, borrow(*memfd), Some(&mut o), len).map_err(errno)
            }
            SendOp::Splice {
                pipe_r,
                pipe_w,
                in_pipe,
            } => {
                if *in_pipe == 0 {
                    let iov = [rustix::pipe::IoSliceRaw::from_slice(data)];
                    // SAFETY: `iov` describes `data`, a range of `block`, which is never
                    // modified while the worker lives; vmsplice takes page references, so
                    // pages left in the pipe stay valid even after the buffer is freed.
                    let n = unsafe { rustix::pipe::vmsplice(&*pipe_w, &iov, SpliceFlags::empty()) }
                        .map_err(errno)?;
                    *in_pipe = n;
                }
                let n = rustix::pipe::splice(&*pipe_r, None, fd, None, *in_pipe, SpliceFlags::MOVE)
                    .map_err(errno)?;
                *in_pipe -= n;
                Ok(n)
            }
            SendOp::Zerocopy(st) => {
                if st.outstanding() >= ZC_REAP_AT {
                    let raw = fd.as_raw_fd();
                    reap(raw, st);
                    if st.outstanding() >= ZC_MAX_OUTSTANDING {
                        wait_errqueue(raw, 10);
                        reap(raw, st);
                        if st.outstanding() >= ZC_MAX_OUTSTANDING {
                            return Err(libc::EAGAIN);
                        }
                    }
                }
                // `block` is never modified while the worker lives, so the kernel may keep
                // referencing its pages until the completion arrives.
                let flags = SendFlags::NOSIGNAL | SendFlags::from_bits_retain(MSG_ZEROCOPY);
                match rustix::net::send(fd, data, flags) {
                    Err(Errno::NOBUFS) => {
                        // optmem full of notifications: read them and let the caller retry.
                        let raw = fd.as_raw_fd();
                        wait_errqueue(raw, 10);
                        reap(raw, st);
                        Err(libc::EINTR)
                    }
                    Err(e) => Err(errno(e)),
                    Ok(n) => {
                        if n > 0 {
                            st.sends += 1;
                        }
                        Ok(n)
                    }
                }
            }
        }
    }

    /// Read pending completions (MsgZerocopy only; no-op otherwise).
    pub(crate) fn reap(&mut self, fd: RawFd) {
        if let SendOp::Zerocopy(st) = self {
            reap(fd, st);
        }
    }

    /// At the end: wait up to `ms` for outstanding MSG_ZEROCOPY completions.
    pub(crate) fn drain(&mut self, fd: RawFd, ms: u64) {
        if let SendOp::Zerocopy(st) = self {
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(ms);
            reap(fd, st);
            while st.outstanding() > 0 && std::time::Instant::now() < deadline {
                wait_errqueue(fd, 10);
                reap(fd, st);
            }
        }
    }
}

/// Poll for POLLERR (error-queue readiness) up to `ms` milliseconds.
fn wait_errqueue(fd: RawFd, ms: i32) {
    sys::poll_fd(fd, rustix::event::PollFlags::empty(), ms);
}

/// Drain MSG_ZEROCOPY notifications from the socket error queue.
fn reap(fd: RawFd, st: &mut ZcStats) {
    loop {
        let mut control = [0u64; 32];
        // SAFETY: msghdr is plain data; zeroed is valid (no name, no iov).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at our control buffer of the stated length.
        let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if r < 0 {
            return; // EAGAIN: queue empty (or a real error, which the next send reports)
        }
        // SAFETY: CMSG_* walk the control buffer the kernel just filled, bounded by msg_controllen.
        let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cm.is_null() {
            // SAFETY: cm is non-null and points inside `control`.
            let (level, ty) = unsafe { ((*cm).cmsg_level, (*cm).cmsg_type) };
            let is_err = (level == libc::SOL_IP && ty == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && ty == libc::IPV6_RECVERR);
            if is_err {
                // SAFETY: an IP(V6)_RECVERR cmsg carries a sock_extended_err; read unaligned.
                let ee: libc::sock_extended_err = unsafe {
                    std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast::<libc::sock_extended_err>())
                };
                if ee.ee_origin == sys::SO_EE_ORIGIN_ZEROCOPY && ee.ee_errno == 0 {
                    let n = u64::from(ee.ee_data.wrapping_sub(ee.ee_info)) + 1;
                    st.completed += n;
                    if ee.ee_code & sys::SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                        st.copied += n;
                    }
                }
            }
            // SAFETY: as above.
            cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
        }
    }
}

/// Shared resources a worker creates once for its requested send path.
pub(crate) struct SendSetup {
    pub memfd: Option<OwnedFd>,
    pub fallbacks: Vec<String>,
}

impl SendSetup {
    pub(crate) fn new(requested: SendPath, block: &[u8]) -> SendSetup {
        let mut s = SendSetup {
            memfd: None,
            fallbacks: Vec::new(),
        };
        if matches!(requested, SendPath::Sendfile) {
            match sys::memfd_with("wirespeed-block", block) {
                Ok(fd) => s.memfd = Some(fd),
                Err(e) => s.fallbacks.push(format!(
                    "sendfile: memfd_create/write failed ({e}); using copy"
                )),
            }
        }
        s
    }

    /// The op for one socket; falls back towards Copy, noting why (once per reason).
    pub(crate) fn op_for(&mut self, requested: SendPath, fd: RawFd, block_len: usize) -> SendOp {
        match requested {
            SendPath::Copy => SendOp::Copy,
            SendPath::Sendfile => match &self.memfd {
                Some(m) => SendOp::Sendfile {
                    memfd: m.as_raw_fd(),
                },
                None => SendOp::Copy,
            },
            SendPath::Splice => match make_pipe(block_len) {
                Ok((r, w)) => SendOp::Splice {
                    pipe_r: r,
                    pipe_w: w,
                    in_pipe: 0,
                },
                Err(e) => {
                    self.note(format!("splice: pipe setup failed ({e}); using copy"));
                    SendOp::Copy
                }
            },
            SendPath::MsgZerocopy => {
                match sys::setsockopt_int(fd, libc::SOL_SOCKET, sys::SO_ZEROCOPY, 1) {
                    Ok(()) => SendOp::Zerocopy(ZcStats::default()),
                    Err(e) => {
                        self.note(format!(
                            "msg_zerocopy: setsockopt SO_ZEROCOPY failed ({e}); using copy"
                        ));
                        SendOp::Copy
                    }
                }
            }
        }
    }

    fn note(&mut self, s: String) {
        if !self.fallbacks.contains(&s) {
            self.fallbacks.push(s);
        }
    }
}

/// A pipe sized to hold one block if the system allows it.
fn make_pipe(block_len: usize) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // Best effort: a larger pipe means fewer vmsplice/splice rounds per block.
    let _ = rustix::pipe::fcntl_setpipe_size(&w, block_len.clamp(4096, 1 << 20));
    Ok((r, w))
}

/// One receive attempt into `buf` (or discarding, for SkipCopy).
#[inline]
pub(crate) fn recv_once(fd: RawFd, buf: &mut [u8], path: RecvPath) -> Result<usize, i32> {
    let flags = match path {
        // the zero-copy path reads its remainder itself (`rx_zerocopy`); here it copies
        RecvPath::Copy | RecvPath::Zerocopy => RecvFlags::empty(),
        RecvPath::SkipCopy => RecvFlags::TRUNC,
    };
    // With MSG_TRUNC TCP does not write to `buf`, and the count is what was consumed (it may
    // exceed the buffer): the second value.
    rustix::net::recv(borrow(fd), buf, flags)
        .map(|(_, n)| n)
        .map_err(errno)
}
