//! Socket options iperf3 users ask for beyond the TCP ones in [`crate::tcp`]: the IP TOS byte
//! (IPv6 traffic class), `SO_BINDTODEVICE`, IPv4 don't-fragment (`IP_MTU_DISCOVER`), TCP
//! keepalive and `TCP_USER_TIMEOUT`. Each works on any socket (TCP or UDP where it applies),
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
}
