//! Thin, checked wrappers over the few raw syscalls the datapath needs, and the
//! kernel constants the `libc` crate does not (yet) export for every arch.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

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

/// Set a socket option to the bytes of a plain-data value (an int, a timeval).
fn setsockopt_val<T: Copy>(
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
            std::mem::size_of::<T>() as libc::socklen_t,
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
    // SAFETY: the slice is valid for its length during the call.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            val.as_ptr().cast(),
            val.len() as libc::socklen_t,
        )
    })
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

/// Put a descriptor into (non-)blocking mode.
pub fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl on a caller-provided descriptor with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let new = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if new != flags {
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, new) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Set SO_SNDTIMEO / SO_RCVTIMEO (None = block forever).
pub fn set_timeout(fd: RawFd, opt: libc::c_int, t: Option<std::time::Duration>) -> io::Result<()> {
    let tv = match t {
        Some(d) => libc::timeval {
            tv_sec: d.as_secs() as libc::time_t,
            tv_usec: d.subsec_micros() as libc::suseconds_t,
        },
        None => libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
    };
    setsockopt_val(fd, libc::SOL_SOCKET, opt, &tv)
}

/// An anonymous in-memory file (memfd) holding `data`, for sendfile/splice sources.
pub fn memfd_with(name: &str, data: &[u8]) -> io::Result<OwnedFd> {
    let cname =
        std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `cname` is a valid NUL-terminated string; flags are constants.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut off = 0usize;
    while off < data.len() {
        // SAFETY: writing from a valid slice range into our own descriptor.
        let n = unsafe {
            libc::write(
                owned.as_raw_fd(),
                data[off..].as_ptr().cast(),
                data.len() - off,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        off += n as usize;
    }
    Ok(owned)
}

/// Raise RLIMIT_NOFILE's soft limit to at least `want` (up to the hard limit);
/// returns the soft limit now in force. Tests with >1000 streams need this.
pub fn raise_fd_limit(want: u64) -> io::Result<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if rl.rlim_cur >= want {
        return Ok(rl.rlim_cur);
    }
    let target = want.min(rl.rlim_max);
    let new = libc::rlimit {
        rlim_cur: target,
        rlim_max: rl.rlim_max,
    };
    // SAFETY: `new` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(target)
}

/// Wait up to `ms` milliseconds for `events` on `fd` (error conditions always wake it:
/// `events` 0 waits for the error queue).
pub fn poll_fd(fd: RawFd, events: libc::c_short, ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// An owned epoll descriptor.
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall with a flag.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is new and owned by nobody else.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// `epoll_ctl(op)` for `fd` with `events`, tagged `data`.
    pub fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: `ev` is a valid epoll_event for the call.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Wait up to `timeout_ms` for events; returns how many of `events` were filled.
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        let max = events.len().min(libc::c_int::MAX as usize) as libc::c_int;
        // SAFETY: `events` has at least `max` writable entries.
        let k =
            unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), max, timeout_ms) };
        if k < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(k as usize)
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
