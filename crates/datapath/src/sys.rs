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

/// Set an integer-valued socket option.
pub fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `val` lives across the call and its exact size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&val as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Set a socket option from raw bytes.
pub fn setsockopt_bytes(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &[u8],
) -> io::Result<()> {
    // SAFETY: the slice is valid for its length during the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            val.as_ptr().cast(),
            val.len() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Read an integer-valued socket option.
pub fn getsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut val: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `val` and `len` are valid out-pointers of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            opt,
            (&mut val as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        Ok(val)
    } else {
        Err(io::Error::last_os_error())
    }
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
    let r = unsafe { libc::getsockopt(fd, level, opt, buf.as_mut_ptr().cast(), &mut len) };
    if r == 0 {
        Ok((len as usize).min(buf.len()))
    } else {
        Err(io::Error::last_os_error())
    }
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
    // SAFETY: `tv` is a valid timeval for the duration of the call, size passed exactly.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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
