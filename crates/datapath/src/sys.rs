//! Thin, checked wrappers over the syscalls the datapath needs, and the kernel constants the
//! `libc` crate does not (yet) export for every arch.
//!
//! The syscall crate is `rustix` (epoll, poll, memfd, rlimit, non-blocking mode, socket
//! timeouts; pipes, splice, sendfile and send/recv in `zerocopy`; affinity in `cpu`). `libc`
//! remains only where rustix has no call: socket options by number (`TCP_INFO`, `TCP_MAXSEG`,
//! `SO_ZEROCOPY`, `SO_MAX_PACING_RATE`, `UDP_SEGMENT`, `UDP_GRO`, `SO_RCVLOWAT`),
//! `getrusage(RUSAGE_THREAD)`, `sched_setscheduler`/`sched_getscheduler` (SCHED_BATCH), the
//! MSG_ZEROCOPY error queue and `sendmmsg`/`recvmmsg` with their control messages (GSO/GRO) in
//! `udp`.
//!
//! Functions here take the raw fd of a descriptor the calling worker owns (a stream's socket
//! from its `StreamSpec`, or an `OwnedFd` it holds) and keeps open for the whole call.

use rustix::event::{epoll, PollFd, PollFlags, Timespec};
use rustix::process::{Resource, Rlimit};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

/// `fd` borrowed for one call.
#[inline]
pub(crate) fn borrow<'a>(fd: RawFd) -> BorrowedFd<'a> {
    // SAFETY: every fd handed to this crate's syscall wrappers is a descriptor the calling
    // worker owns and keeps open for the whole call (see the module docs).
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// A millisecond timeout as rustix takes it (negative: wait forever).
fn timespec_ms(ms: i32) -> Option<Timespec> {
    (ms >= 0).then(|| Timespec::try_from(Duration::from_millis(ms as u64)).unwrap_or_default())
}

/// `SO_MAX_PACING_RATE` (asm-generic/socket.h).
pub const SO_MAX_PACING_RATE: libc::c_int = 47;
/// `SO_ZEROCOPY` (asm-generic/socket.h).
pub const SO_ZEROCOPY: libc::c_int = 60;
/// `SO_EE_ORIGIN_ZEROCOPY` (linux/errqueue.h).
pub const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED` (linux/errqueue.h): the kernel fell back to copying.
pub const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// `Ok(())` for a call that returned 0, else the thread's errno.
fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Set a socket option to the bytes of a plain-data value (an int, a timeval, a byte string),
/// its whole size.
fn setsockopt_val<T: ?Sized>(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
) -> io::Result<()> {
    // SAFETY: `val` lives across the call and its exact size is passed.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (val as *const T).cast(),
            std::mem::size_of_val(val) as libc::socklen_t,
        )
    })
}

/// Set an integer-valued socket option.
pub fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: libc::c_int,
) -> io::Result<()> {
    setsockopt_val(fd, level, opt, &val)
}

/// Set a socket option from raw bytes.
pub fn setsockopt_bytes(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &[u8],
) -> io::Result<()> {
    setsockopt_val(fd, level, opt, val)
}

/// Read an integer-valued socket option.
pub fn getsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut val: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `val` and `len` are valid out-pointers of the sizes given.
    check(unsafe {
        libc::getsockopt(
            fd,
            level,
            opt,
            (&mut val as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(val)
}

/// Read a socket option into `buf`; returns the length the kernel filled.
pub fn getsockopt_bytes(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is writable for `len` bytes; the kernel writes at most `len` and updates it.
    check(unsafe { libc::getsockopt(fd, level, opt, buf.as_mut_ptr().cast(), &mut len) })?;
    Ok((len as usize).min(buf.len()))
}

/// Run the calling thread under SCHED_BATCH at nice 0 (any user may: it asks for less of the
/// scheduler, not more). The kernel then never preempts a running thread when this one wakes:
/// a woken worker waits for the CPU's running thread to block or spend its slice.
pub fn set_sched_batch() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param for the call.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) })
}

/// The scheduling policy of thread `tid` (0: the caller): `libc::SCHED_OTHER`,
/// `libc::SCHED_BATCH`, ...
pub fn sched_policy(tid: i32) -> io::Result<libc::c_int> {
    // SAFETY: a plain query of a thread id; no pointers.
    let p = unsafe { libc::sched_getscheduler(tid) };
    if p < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(p)
    }
}

/// Put a descriptor into (non-)blocking mode.
pub fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<()> {
    Ok(rustix::io::ioctl_fionbio(borrow(fd), on)?)
}

/// Which socket timeout [`set_timeout`] sets.
pub use rustix::net::sockopt::Timeout;

/// Set SO_SNDTIMEO / SO_RCVTIMEO (None = block forever).
pub fn set_timeout(fd: RawFd, which: Timeout, t: Option<Duration>) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_timeout(
        borrow(fd),
        which,
        t,
    )?)
}

/// An anonymous in-memory file (memfd) holding `data`, for sendfile/splice sources.
pub fn memfd_with(name: &str, data: &[u8]) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut rest = data;
    while !rest.is_empty() {
        match rustix::io::write(&fd, rest) {
            Ok(n) => rest = &rest[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(fd)
}

/// Raise RLIMIT_NOFILE's soft limit to at least `want` (up to the hard limit);
/// returns the soft limit now in force. Tests with >1000 streams need this.
pub fn raise_fd_limit(want: u64) -> io::Result<u64> {
    let rl = rustix::process::getrlimit(Resource::Nofile);
    let cur = rl.current.unwrap_or(u64::MAX);
    if cur >= want {
        return Ok(cur);
    }
    let target = rl.maximum.map_or(want, |max| want.min(max));
    rustix::process::setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: rl.maximum,
        },
    )?;
    Ok(target)
}

/// Wait up to `ms` milliseconds for `events` on `fd` (error conditions always wake it:
/// empty `events` waits for the error queue).
pub fn poll_fd(fd: RawFd, events: PollFlags, ms: i32) {
    let mut p = [PollFd::from_borrowed_fd(borrow(fd), events)];
    let _ = rustix::event::poll(&mut p, timespec_ms(ms).as_ref());
}

/// What an epoll entry waits for, and what it reported.
pub use rustix::event::epoll::{Event as EpollEvent, EventFlags as EpollFlags};

/// An owned epoll descriptor whose entries carry a `u64` tag (the stream's index).
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        Ok(Epoll(epoll::create(epoll::CreateFlags::CLOEXEC)?))
    }

    /// Watch `fd` for `events`, tagged `data`.
    pub fn add(&self, fd: RawFd, events: EpollFlags, data: u64) -> io::Result<()> {
        Ok(epoll::add(
            &self.0,
            borrow(fd),
            epoll::EventData::new_u64(data),
            events,
        )?)
    }

    /// Stop watching `fd`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        Ok(epoll::delete(&self.0, borrow(fd))?)
    }

    /// A buffer of `n` events for [`Epoll::wait`].
    pub fn events(n: usize) -> Vec<EpollEvent> {
        vec![
            EpollEvent {
                flags: EpollFlags::empty(),
                data: epoll::EventData::new_u64(0),
            };
            n
        ]
    }

    /// Wait up to `timeout_ms` for events; returns how many of `events` were filled.
    pub fn wait(&self, events: &mut [EpollEvent], timeout_ms: i32) -> io::Result<usize> {
        Ok(epoll::wait(
            &self.0,
            events,
            timespec_ms(timeout_ms).as_ref(),
        )?)
    }
}

/// An errno as text (`"Connection refused (os error 111)"`).
pub fn errno_str(e: i32) -> String {
    io::Error::from_raw_os_error(e).to_string()
}

/// errno of the last failed call.
#[inline]
pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// User and system CPU time of the calling thread.
pub fn thread_cpu_times() -> (std::time::Duration, std::time::Duration) {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (std::time::Duration::ZERO, std::time::Duration::ZERO);
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000)
    };
    (tv(ru.ru_utime), tv(ru.ru_stime))
}
