//! NIC ring sizes through the ethtool ioctl (`SIOCETHTOOL`), on the live host only.
//!
//! A narrow reader/writer of `ETHTOOL_GRINGPARAM`/`ETHTOOL_SRINGPARAM`; the host crate's facts
//! may grow a fuller ethtool reader, with which this can be unified.

use std::io;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GRINGPARAM: u32 = 0x10;
const ETHTOOL_SRINGPARAM: u32 = 0x11;

/// `struct ethtool_ringparam` from `<linux/ethtool.h>`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RingParam {
    pub cmd: u32,
    pub rx_max_pending: u32,
    pub rx_mini_max_pending: u32,
    pub rx_jumbo_max_pending: u32,
    pub tx_max_pending: u32,
    pub rx_pending: u32,
    pub rx_mini_pending: u32,
    pub rx_jumbo_pending: u32,
    pub tx_pending: u32,
}

/// `struct ifreq` with the `ifr_data` member of its union.
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

fn ioctl(iface: &str, data: *mut libc::c_void) -> io::Result<()> {
    let bytes = iface.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {iface:?}"),
        ));
    }
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data,
        _pad: [0; 16],
    };
    for (d, s) in req.name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: plain socket(2) call; the descriptor is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `req` is a valid ifreq whose data pointer refers to a live ethtool struct of the
    // size the command implies; the kernel reads/writes only within them.
    let rc = unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut req as *mut IfReq) };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` is ours and open.
    unsafe { libc::close(fd) };
    if rc < 0 {
        return Err(err);
    }
    Ok(())
}

/// Ring sizes of `iface`; an error (often `EOPNOTSUPP`) when the driver does not answer.
pub fn get_ring(iface: &str) -> io::Result<RingParam> {
    let mut r = RingParam {
        cmd: ETHTOOL_GRINGPARAM,
        ..RingParam::default()
    };
    ioctl(iface, &mut r as *mut RingParam as *mut libc::c_void)?;
    Ok(r)
}

/// Set rx/tx ring sizes of `iface`, keeping the other rings as they are.
pub fn set_ring(iface: &str, rx: u32, tx: u32) -> io::Result<()> {
    let mut r = get_ring(iface)?;
    r.cmd = ETHTOOL_SRINGPARAM;
    r.rx_pending = rx;
    r.tx_pending = tx;
    ioctl(iface, &mut r as *mut RingParam as *mut libc::c_void)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_names_and_answers_or_errors_for_lo() {
        assert!(get_ring("").is_err());
        assert!(get_ring("a-name-far-too-long-for-ifnamsiz").is_err());
        // lo has no rings: the kernel answers with an error, never a panic or garbage
        match get_ring("lo") {
            Ok(r) => assert!(r.rx_pending <= r.rx_max_pending || r.rx_max_pending == 0),
            Err(e) => assert!(e.raw_os_error().is_some()),
        }
    }
}
