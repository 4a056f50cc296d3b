//! TCP receive without the copy: `TCP_ZEROCOPY_RECEIVE` (Linux 4.18+).
//!
//! `mmap` of a TCP socket only reserves a read-only region of address space. Each
//! `getsockopt(TCP_ZEROCOPY_RECEIVE)` then asks the kernel to map whole pages of the receive
//! queue into that region: the payload pages of the socket's buffers become the process's pages,
//! and the bytes count as read. What cannot be mapped (a tail shorter than a page, a buffer whose
//! payload is not page-aligned, a page the kernel refuses to map) is left in the queue and
//! reported in `recv_skip_hint`; newer kernels (5.11+) copy a small part of it in the same call
//! into a caller's buffer (`copybuf`). The rest is read with `recv`.
//!
//! Whether pages map depends on how the payload sits in memory: a NIC that splits headers from
//! payload (ethtool's `tcp-data-split`) with a page-multiple MSS hands over whole pages; on
//! loopback the sender's buffers decide (the kernel refuses compound and page-cache pages).
//! Where nothing maps the path only adds a system call, so the worker falls back to copying
//! (see `worker`). [`ZcRx`] counts what was mapped and what was copied.
//!
//! All `unsafe` of the path is here: the mapping's lifetime, the kernel's struct and the view
//! of mapped pages as a byte slice.

use crate::sys::{self, borrow};
use rustix::net::RecvFlags;
use std::os::fd::RawFd;

/// `struct tcp_zerocopy_receive` (linux/tcp.h, the 5.11+ layout with `copybuf`, `flags` and the
/// control message fields; older kernels read a prefix of it and say how much in `optlen`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct TcpZerocopyReceive {
    /// in: address of the mapping (page-aligned, the start of the socket's mmap region)
    address: u64,
    /// in: bytes that may be mapped; out: bytes mapped
    length: u32,
    /// out: bytes at the head of the queue (after what was mapped and copied) to read with recv
    recv_skip_hint: u32,
    /// out: bytes left in the receive queue
    inq: u32,
    /// out: pending socket error
    err: i32,
    /// in: a buffer for small leftovers (5.11+)
    copybuf_address: u64,
    /// in: its size; out: bytes copied into it (or a negative errno)
    copybuf_len: i32,
    /// in: `TCP_RECEIVE_ZEROCOPY_FLAG_*`
    flags: u32,
    msg_control: u64,
    msg_controllen: u64,
    msg_flags: u32,
    reserved: u32,
}

/// End of `copybuf_len` in the struct: a kernel that wrote back a shorter `optlen` ignored the
/// copy buffer (and left our input value in the field).
const COPYBUF_LEN_END: usize = std::mem::offset_of!(TcpZerocopyReceive, copybuf_len) + 4;
/// End of `err`.
const ERR_END: usize = std::mem::offset_of!(TcpZerocopyReceive, err) + 4;

/// The kernel copies everything into `copybuf` when the whole queue fits in it: a copy buffer of
/// less than a page keeps every page-sized run mappable and takes only the short tails.
const COPYBUF_MAX: usize = 4095;

/// What one [`ZcRx::recv`] call received, in stream order: `mapped` first, then `copied`.
#[derive(Debug)]
pub struct Received<'a> {
    /// Pages the kernel mapped (valid until the next call on the same [`ZcRx`]).
    pub mapped: &'a [u8],
    /// Bytes copied into the caller's buffer (the kernel's leftover copy, then recv).
    pub copied: &'a [u8],
}

impl Received<'_> {
    /// Bytes this call took from the stream.
    pub fn len(&self) -> usize {
        self.mapped.len() + self.copied.len()
    }
    /// Nothing was available (not end of stream: that is [`ZcRx::recv`]'s `Ok(None)`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The address space a [`ZcRx`] reserves: this many times what one call maps, within
/// [`RING_MIN`]..=[`RING_MAX`] (and never less than one call's worth).
const RING_CALLS: usize = 8;
const RING_MIN: usize = 2 << 20;
const RING_MAX: usize = 8 << 20;

/// The ring for calls of `map_len` bytes (a page multiple), in whole pages.
fn ring_len(map_len: usize, page: usize) -> usize {
    (map_len * RING_CALLS)
        .clamp(RING_MIN, RING_MAX)
        .max(map_len)
        .div_ceil(page)
        * page
}

/// One socket's zero-copy receive region and its counts.
///
/// The region is a ring of several calls' worth: each call maps into the next unused part, and
/// the pages are dropped all at once when the ring is full. Dropping pages (`MADV_DONTNEED`,
/// or the kernel's own zap when it maps over old pages) flushes the TLB of every CPU that runs
/// a thread of the process — an IPI to each — so with many streams on several workers one
/// flush per call cost the receiver a quarter of its time; one per ring costs little. The
/// price: up to a ring of received pages stays mapped (not charged to the socket) until then.
#[derive(Debug)]
pub struct ZcRx {
    fd: RawFd,
    addr: *mut u8,
    /// The whole reserved region (the ring).
    ring_len: usize,
    /// What one call may map.
    map_len: usize,
    /// Where the next call maps; every byte before it may hold pages of earlier calls.
    next: usize,
    /// Bytes mapped / copied so far.
    pub mapped_bytes: u64,
    pub copied_bytes: u64,
}

// SAFETY: ZcRx uniquely owns its mapping; the fd is only used by the thread holding the ZcRx.
unsafe impl Send for ZcRx {}

/// The system's page size.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

impl ZcRx {
    /// Reserve a region of `len` bytes (rounded up to whole pages) on the connected TCP socket
    /// `fd`, which the caller keeps open as long as the `ZcRx` lives. `Err(errno)` when the
    /// kernel refuses (no TCP mmap: ENODEV; out of address space: ENOMEM).
    pub fn new(fd: RawFd, len: usize) -> Result<ZcRx, i32> {
        let page = page_size();
        let map_len = len.max(1).div_ceil(page) * page;
        let ring_len = ring_len(map_len, page);
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: a new shared read-only mapping of the socket at a kernel-chosen address; it
        // aliases no Rust object. The kernel allows only PROT_READ and maps pages in it only
        // during our getsockopt calls.
        let p = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                ring_len,
                ProtFlags::READ,
                MapFlags::SHARED,
                borrow(fd),
                0,
            )
        }
        .map_err(|e| e.raw_os_error())?;
        Ok(ZcRx {
            fd,
            addr: p.cast(),
            ring_len,
            map_len,
            next: 0,
            mapped_bytes: 0,
            copied_bytes: 0,
        })
    }

    /// Bytes the region can map in one call.
    pub fn map_len(&self) -> usize {
        self.map_len
    }

    /// Wait up to `ms` milliseconds for the socket to be readable (SO_RCVLOWAT bytes queued,
    /// the end of the stream or an error): [`ZcRx::recv`] never waits itself.
    pub fn wait_readable(&self, ms: i32) {
        sys::poll_fd(self.fd, rustix::event::PollFlags::IN, ms);
    }

    /// Make room for one call: when the rest of the ring is shorter than a call's worth, drop
    /// the pages of every earlier call (the socket's buffers are freed once unmapped) and start
    /// again at the ring's head.
    fn release(&mut self) {
        if self.next + self.map_len > self.ring_len && self.next > 0 {
            // SAFETY: the range is inside our mapping and no slice of it is alive (`recv` takes
            // `&mut self`, ending the borrow of the last `Received`). MADV_DONTNEED on a socket
            // mapping unmaps the pages; the region stays reserved for the next call.
            let _ = unsafe {
                rustix::mm::madvise(
                    self.addr.cast(),
                    self.next,
                    rustix::mm::Advice::LinuxDontNeed,
                )
            };
            self.next = 0;
        }
    }

    /// Take what the receive queue holds: whole pages by mapping, the rest by copying into
    /// `buf`. Never blocks for data that has not arrived: `Ok(Some(r))` with `r` empty means
    /// nothing is queued yet (wait for readability). `Ok(None)`: the peer closed and everything
    /// was read. `Err(errno)`: the kernel refused (EINVAL, EOPNOTSUPP, ENOPROTOOPT: the caller
    /// falls back to copying) or the connection failed.
    pub fn recv<'a>(&'a mut self, buf: &'a mut [u8]) -> Result<Option<Received<'a>>, i32> {
        self.release();
        let copybuf_len = buf.len().min(COPYBUF_MAX);
        let mut zc = TcpZerocopyReceive {
            // the ring's next free part: next + map_len <= ring_len after `release`
            address: self.addr as u64 + self.next as u64,
            length: u32::try_from(self.map_len).unwrap_or(u32::MAX),
            copybuf_address: buf.as_mut_ptr() as u64,
            copybuf_len: copybuf_len as i32,
            ..TcpZerocopyReceive::default()
        };
        let mut optlen = std::mem::size_of::<TcpZerocopyReceive>() as libc::socklen_t;
        // SAFETY: `zc` is a valid, writable struct of the stated length; `address` is inside our
        // own socket mapping with `map_len` bytes of it left, of which the kernel maps at most
        // `length` bytes;
        // `copybuf_address` is `buf`, writable for `copybuf_len` <= buf.len() bytes, and `buf`
        // is exclusively borrowed for the call.
        let r = unsafe {
            libc::getsockopt(
                self.fd,
                libc::IPPROTO_TCP,
                libc::TCP_ZEROCOPY_RECEIVE,
                (&mut zc as *mut TcpZerocopyReceive).cast(),
                &mut optlen,
            )
        };
        if r != 0 {
            let e = sys::errno();
            // EIO: nothing queued and the peer closed. Confirm with recv (0 at end of stream).
            if e != libc::EIO {
                return Err(e);
            }
            zc = TcpZerocopyReceive {
                recv_skip_hint: 1,
                ..TcpZerocopyReceive::default()
            };
        }
        let optlen = optlen as usize;
        if optlen >= ERR_END && zc.err != 0 {
            return Err(zc.err.abs());
        }
        let mapped = (zc.length as usize).min(self.map_len);
        let at = self.next;
        // whole pages: the kernel maps nothing shorter
        self.next += mapped.div_ceil(page_size()) * page_size();
        // A kernel older than the copy buffer left our input in `copybuf_len`; a negative value
        // is an error of the copy (then `recv_skip_hint` still covers those bytes).
        let mut copied = if optlen >= COPYBUF_LEN_END && zc.copybuf_len > 0 {
            (zc.copybuf_len as usize).min(copybuf_len)
        } else {
            0
        };
        let hint = zc.recv_skip_hint as usize;
        if hint > 0 && copied < buf.len() {
            let want = hint.min(buf.len() - copied);
            match rustix::net::recv(
                borrow(self.fd),
                &mut buf[copied..copied + want],
                RecvFlags::DONTWAIT,
            ) {
                Ok((_, 0)) if mapped == 0 && copied == 0 => return Ok(None),
                Ok((n, _)) => copied += n,
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
                Err(e) if mapped == 0 && copied == 0 => return Err(e.raw_os_error()),
                // the bytes already taken count; the error comes back on the next call
                Err(_) => {}
            }
        }
        self.mapped_bytes += mapped as u64;
        self.copied_bytes += copied as u64;
        // SAFETY: the kernel mapped `mapped` bytes of whole pages at offset `at` of our region
        // (zc.length, capped at the region's size); they stay mapped and unchanged (read-only,
        // owned by this mapping) until `release`, which needs `&mut self`, so not while the
        // returned borrow lives.
        let mapped = unsafe { std::slice::from_raw_parts(self.addr.add(at).cast_const(), mapped) };
        Ok(Some(Received {
            mapped,
            copied: &buf[..copied],
        }))
    }
}

impl Drop for ZcRx {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region made in `new`; no slice of it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.addr.cast(), self.ring_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_holds_several_calls_within_bounds() {
        // 128 KiB calls: 16 of them in the 2 MiB floor; 1 MiB calls: 8; 4 MiB: the 8 MiB cap
        assert_eq!(ring_len(128 << 10, 4096), 2 << 20);
        assert_eq!(ring_len(1 << 20, 4096), 8 << 20);
        assert_eq!(ring_len(4 << 20, 4096), 8 << 20);
        // a call larger than the cap still fits once
        assert_eq!(ring_len(16 << 20, 4096), 16 << 20);
        assert_eq!(ring_len(4096, 65536) % 65536, 0);
    }

    #[test]
    fn struct_layout_matches_the_kernel() {
        // linux/tcp.h: 64 bytes; err at 20, copybuf_address at 24, copybuf_len at 32,
        // msg_control at 40.
        assert_eq!(std::mem::size_of::<TcpZerocopyReceive>(), 64);
        assert_eq!(ERR_END, 24);
        assert_eq!(
            std::mem::offset_of!(TcpZerocopyReceive, copybuf_address),
            24
        );
        assert_eq!(COPYBUF_LEN_END, 36);
        assert_eq!(std::mem::offset_of!(TcpZerocopyReceive, msg_control), 40);
    }
}
