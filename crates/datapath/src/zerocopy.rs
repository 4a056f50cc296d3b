//! Per-stream send operations for every [`SendPath`], and the receive call.
//!
//! Each `send` moves bytes `block[off..off+len]` (all send paths transmit
//! the same constant block) and returns how many the socket took, or the
//! errno. The caller owns retry/stop logic; these are single syscalls except
//! for `Splice` (vmsplice when the pipe is empty + splice) and the occasional
//! error-queue drain of `MsgZerocopy`.

use crate::sys;
use crate::{RecvPath, SendPath};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

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

    /// One transfer attempt. `Err(errno)`; EAGAIN means "not now" (timeout or
    /// non-blocking), EINTR means "retry".
    #[inline]
    pub(crate) fn send(
        &mut self,
        fd: RawFd,
        block: &[u8],
        off: usize,
        len: usize,
    ) -> Result<usize, i32> {
        debug_assert!(off + len <= block.len());
        match self {
            SendOp::Copy => {
                // SAFETY: block[off..off+len] is a valid readable range.
                let n = unsafe {
                    libc::send(fd, block.as_ptr().add(off).cast(), len, libc::MSG_NOSIGNAL)
                };
                if n < 0 {
                    Err(sys::errno())
                } else {
                    Ok(n as usize)
                }
            }
            SendOp::Sendfile { memfd } => {
                let mut o = off as libc::off_t;
                // SAFETY: `o` is a valid in/out offset; memfd holds block.len() bytes.
                let n = unsafe { libc::sendfile(fd, *memfd, &mut o, len) };
                if n < 0 {
                    Err(sys::errno())
                } else {
                    Ok(n as usize)
                }
            }
            SendOp::Splice {
                pipe_r,
                pipe_w,
                in_pipe,
            } => {
                if *in_pipe == 0 {
                    let iov = libc::iovec {
                        // SAFETY: in-bounds pointer arithmetic on `block`.
                        iov_base: unsafe { block.as_ptr().add(off) } as *mut libc::c_void,
                        iov_len: len,
                    };
                    // SAFETY: iov points into `block`, which is never modified while
                    // the worker lives; vmsplice takes page references, so pages
                    // left in the pipe stay valid even after the buffer is freed.
                    let n = unsafe { libc::vmsplice(pipe_w.as_raw_fd(), &iov, 1, 0) };
                    if n < 0 {
                        return Err(sys::errno());
                    }
                    *in_pipe = n as usize;
                }
                // SAFETY: plain fds, null offsets (pipes/sockets have none).
                let n = unsafe {
                    libc::splice(
                        pipe_r.as_raw_fd(),
                        std::ptr::null_mut(),
                        fd,
                        std::ptr::null_mut(),
                        *in_pipe,
                        libc::SPLICE_F_MOVE,
                    )
                };
                if n < 0 {
                    return Err(sys::errno());
                }
                *in_pipe -= n as usize;
                Ok(n as usize)
            }
            SendOp::Zerocopy(st) => {
                if st.outstanding() >= ZC_REAP_AT {
                    reap(fd, st);
                    if st.outstanding() >= ZC_MAX_OUTSTANDING {
                        wait_errqueue(fd, 10);
                        reap(fd, st);
                        if st.outstanding() >= ZC_MAX_OUTSTANDING {
                            return Err(libc::EAGAIN);
                        }
                    }
                }
                // SAFETY: block[off..off+len] is valid; it is never modified, so the
                // kernel may keep referencing its pages until completion.
                let n = unsafe {
                    libc::send(
                        fd,
                        block.as_ptr().add(off).cast(),
                        len,
                        libc::MSG_NOSIGNAL | libc::MSG_ZEROCOPY,
                    )
                };
                if n < 0 {
                    let e = sys::errno();
                    if e == libc::ENOBUFS {
                        // optmem full of notifications: read them and let the caller retry.
                        wait_errqueue(fd, 10);
                        reap(fd, st);
                        return Err(libc::EINTR);
                    }
                    Err(e)
                } else {
                    if n > 0 {
                        st.sends += 1;
                    }
                    Ok(n as usize)
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
    sys::poll_fd(fd, 0, ms);
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
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid 2-element out array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Best effort: a larger pipe means fewer vmsplice/splice rounds per block.
    let want = block_len.clamp(4096, 1 << 20) as libc::c_int;
    // SAFETY: fcntl with an integer argument on our own fd.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
    Ok((r, w))
}

/// One receive attempt into `buf` (or discarding, for SkipCopy).
#[inline]
pub(crate) fn recv_once(fd: RawFd, buf: &mut [u8], path: RecvPath) -> Result<usize, i32> {
    let flags = match path {
        RecvPath::Copy => 0,
        RecvPath::SkipCopy => libc::MSG_TRUNC,
    };
    // SAFETY: `buf` is writable for its length (with MSG_TRUNC TCP does not write to it).
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(sys::errno())
    } else {
        Ok(n as usize)
    }
}
