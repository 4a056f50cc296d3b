//! Socket options iperf3 users ask for beyond the TCP ones in [`crate::tcp`]: the IP TOS byte
//! (IPv6 traffic class), `SO_BINDTODEVICE`, IPv4 don't-fragment (`IP_MTU_DISCOVER`), TCP
//! keepalive, `TCP_USER_TIMEOUT` and the IPv6 flow label. Each works on any socket (TCP or UDP where it applies),
//! through socket2, and a failure names the option and value.

use std::os::fd::AsFd;
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};

use crate::DatapathError;

fn fail(opt: &'static str, value: impl ToString) -> impl FnOnce(std::io::Error) -> DatapathError {
    let value = value.to_string();
    move |source| DatapathError::SockOpt { opt, value, source }
}

fn is_v6(s: &SockRef<'_>) -> bool {
    s.domain().is_ok_and(|d| d == socket2::Domain::IPV6)
}

/// `-S`/`--dscp`: IP_TOS on an IPv4 socket, IPV6_TCLASS on an IPv6 one (and IP_TOS too, for
/// IPv4-mapped peers).
pub fn set_tos(sock: impl AsFd, tos: u32) -> Result<(), DatapathError> {
    let s = SockRef::from(&sock);
    if is_v6(&s) {
        s.set_tclass_v6(tos).map_err(fail("IPV6_TCLASS", tos))?;
        let _ = s.set_tos_v4(tos);
        Ok(())
    } else {
        s.set_tos_v4(tos).map_err(fail("IP_TOS", tos))
    }
}

/// The TOS byte a socket sends with (IPV6_TCLASS on IPv6 sockets).
pub fn tos(sock: impl AsFd) -> Result<u32, DatapathError> {
    let s = SockRef::from(&sock);
    if is_v6(&s) {
        s.tclass_v6().map_err(fail("IPV6_TCLASS", "?"))
    } else {
        s.tos_v4().map_err(fail("IP_TOS", "?"))
    }
}

/// `--bind-dev DEV` (and `-B ADDR%DEV`): SO_BINDTODEVICE, before bind/connect.
pub fn bind_device(sock: impl AsFd, dev: &str) -> Result<(), DatapathError> {
    SockRef::from(&sock)
        .bind_device(Some(dev.as_bytes()))
        .map_err(fail("SO_BINDTODEVICE", dev))
}

/// `--dont-fragment`: IP_MTU_DISCOVER = IP_PMTUDISC_DO on an IPv4 socket (the DF bit set,
/// datagrams over the path MTU fail instead of being fragmented). IPv6 never fragments in the
/// network; nothing to do there.
pub fn set_dont_fragment(sock: impl AsFd) -> Result<(), DatapathError> {
    use std::os::fd::AsRawFd;
    let s = SockRef::from(&sock);
    if is_v6(&s) {
        return Ok(());
    }
    crate::sys::setsockopt_int(
        sock.as_fd().as_raw_fd(),
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    )
    .map_err(fail("IP_MTU_DISCOVER", "IP_PMTUDISC_DO"))
}

/// `--cntl-ka[=IDLE/INTERVAL/COUNT]`: SO_KEEPALIVE with TCP_KEEPIDLE, TCP_KEEPINTVL and
/// TCP_KEEPCNT where given (the system's values otherwise).
pub fn set_keepalive(
    sock: impl AsFd,
    idle: Option<Duration>,
    interval: Option<Duration>,
    count: Option<u32>,
) -> Result<(), DatapathError> {
    let s = SockRef::from(&sock);
    s.set_keepalive(true).map_err(fail("SO_KEEPALIVE", 1))?;
    let mut ka = TcpKeepalive::new();
    if let Some(t) = idle {
        ka = ka.with_time(t);
    }
    if let Some(t) = interval {
        ka = ka.with_interval(t);
    }
    if let Some(n) = count {
        ka = ka.with_retries(n);
    }
    if idle.is_some() || interval.is_some() || count.is_some() {
        s.set_tcp_keepalive(&ka).map_err(fail(
            "TCP_KEEPIDLE/TCP_KEEPINTVL/TCP_KEEPCNT",
            format!("{ka:?}"),
        ))?;
    }
    Ok(())
}

/// `--snd-timeout MS`: TCP_USER_TIMEOUT, how long sent data may stay unacknowledged before the
/// kernel drops the connection.
pub fn set_user_timeout(sock: impl AsFd, timeout: Duration) -> Result<(), DatapathError> {
    SockRef::from(&sock)
        .set_tcp_user_timeout(Some(timeout))
        .map_err(fail("TCP_USER_TIMEOUT", timeout.as_millis()))
}

/// Linux's `struct in6_flowlabel_req` (include/uapi/linux/in6.h).
#[repr(C)]
struct FlowLabelReq {
    dst: [u8; 16],
    label_be: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}

const IPV6_FL_A_GET: u8 = 0;
const IPV6_FL_S_ANY: u8 = 255;
const IPV6_FL_F_CREATE: u16 = 1;

/// `-L LABEL`: lease the IPv6 flow label LABEL (1..=0xfffff) for `dst` and have the socket send
/// it (IPV6_FLOWLABEL_MGR, IPV6_FLOWINFO_SEND); the caller then connects to an address whose
/// `flowinfo` is [`flowinfo`]`(label)`.
pub fn set_flowlabel(
    sock: impl AsFd,
    dst: std::net::Ipv6Addr,
    label: u32,
) -> Result<(), DatapathError> {
    use std::os::fd::AsRawFd;
    let fd = sock.as_fd().as_raw_fd();
    let req = FlowLabelReq {
        dst: dst.octets(),
        label_be: flowinfo(label),
        action: IPV6_FL_A_GET,
        share: IPV6_FL_S_ANY,
        flags: IPV6_FL_F_CREATE,
        expires: 0,
        linger: 0,
        pad: 0,
    };
    // SAFETY: FlowLabelReq is repr(C) plain data; the slice covers exactly its bytes and lives
    // as long as `req`.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&req as *const FlowLabelReq).cast::<u8>(),
            std::mem::size_of::<FlowLabelReq>(),
        )
    };
    crate::sys::setsockopt_bytes(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWLABEL_MGR, bytes)
        .map_err(fail("IPV6_FLOWLABEL_MGR", label))?;
    crate::sys::setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND, 1)
        .map_err(fail("IPV6_FLOWINFO_SEND", 1))
}

/// The `sin6_flowinfo` value that carries flow label `label` (network byte order, as the kernel
/// reads the field).
pub fn flowinfo(label: u32) -> u32 {
    (label & 0xf_ffff).to_be()
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, Socket, Type};

    #[test]
    fn options_read_back() {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set_tos(&s, 0xb8).unwrap();
        assert_eq!(tos(&s).unwrap(), 0xb8);
        set_dont_fragment(&s).unwrap();
        set_keepalive(
            &s,
            Some(Duration::from_secs(30)),
            Some(Duration::from_secs(5)),
            Some(3),
        )
        .unwrap();
        assert!(s.keepalive().unwrap());
        assert_eq!(s.tcp_keepalive_time().unwrap(), Duration::from_secs(30));
        assert_eq!(s.tcp_keepalive_retries().unwrap(), 3);
        set_user_timeout(&s, Duration::from_millis(1500)).unwrap();
        assert_eq!(
            s.tcp_user_timeout().unwrap(),
            Some(Duration::from_millis(1500))
        );
        let u = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        set_tos(&u, 0x28).unwrap();
        assert_eq!(tos(&u).unwrap(), 0x28);
        assert!(bind_device(&s, "no-such-device0").is_err());
    }

    #[test]
    fn flow_label_is_leased_and_sent() {
        let l = match std::net::TcpListener::bind("[::1]:0") {
            Ok(l) => l,
            Err(e) => {
                eprintln!("SKIP: flow_label_is_leased_and_sent: no IPv6 loopback ({e})");
                return;
            }
        };
        let mut to = match l.local_addr().unwrap() {
            std::net::SocketAddr::V6(a) => a,
            _ => unreachable!(),
        };
        let s = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set_flowlabel(&s, *to.ip(), 0x12345).unwrap();
        to.set_flowinfo(flowinfo(0x12345));
        s.connect(&std::net::SocketAddr::V6(to).into()).unwrap();
        let table = std::fs::read_to_string("/proc/net/ip6_flowlabel").unwrap_or_default();
        assert!(table.lines().any(|l| l.starts_with("12345 ")), "{table}");
    }
}
