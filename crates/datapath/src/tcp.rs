//! TCP socket options an iperf3 user sets, and `TCP_INFO` reading.
//!
//! `TCP_INFO` is read into a byte buffer and decoded by offset in
//! [`parse_tcp_info`], so older kernels (shorter struct) yield `None` for the
//! fields they lack instead of garbage, and the decoder is unit-tested
//! without sockets.

use crate::sys;
use crate::DatapathError;
use rustix::net::sockopt;
use std::os::fd::{AsFd, AsRawFd};

/// Socket options applied before connect (client) or right after accept (server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// `-w`: SO_SNDBUF and SO_RCVBUF (the kernel doubles the value it stores).
    pub window: Option<u32>,
    /// `-M`: TCP_MAXSEG.
    pub mss: Option<u32>,
    /// `-N`: TCP_NODELAY.
    pub nodelay: bool,
    /// `-C`: TCP_CONGESTION algorithm name.
    pub congestion: Option<String>,
    /// `--fq-rate`: SO_MAX_PACING_RATE in bytes per second.
    pub fq_rate: Option<u64>,
}

/// Apply `opts` to a socket. Each failure names the option and value.
pub fn apply(sock: impl AsFd, opts: &TcpOptions) -> Result<(), DatapathError> {
    let sock = sock.as_fd();
    let fd = sock.as_raw_fd();
    let fail = |opt: &'static str, value: String| {
        move |source: std::io::Error| DatapathError::SockOpt { opt, value, source }
    };
    if let Some(w) = opts.window {
        // The kernel takes an int: larger values are refused here, not truncated.
        let v = i32::try_from(w).map_err(|_| DatapathError::SockOpt {
            opt: "SO_SNDBUF/SO_RCVBUF",
            value: w.to_string(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        })? as usize;
        sockopt::set_socket_send_buffer_size(sock, v)
            .map_err(|e| fail("SO_SNDBUF", w.to_string())(e.into()))?;
        sockopt::set_socket_recv_buffer_size(sock, v)
            .map_err(|e| fail("SO_RCVBUF", w.to_string())(e.into()))?;
    }
    if let Some(m) = opts.mss {
        let v = i32::try_from(m).unwrap_or(i32::MAX);
        sys::setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, v)
            .map_err(fail("TCP_MAXSEG", m.to_string()))?;
    }
    if opts.nodelay {
        sockopt::set_tcp_nodelay(sock, true)
            .map_err(|e| fail("TCP_NODELAY", "1".into())(e.into()))?;
    }
    if let Some(cc) = &opts.congestion {
        sockopt::set_tcp_congestion(sock, cc).map_err(|e| DatapathError::Congestion {
            algo: cc.clone(),
            source: e.into(),
        })?;
    }
    if let Some(rate) = opts.fq_rate {
        set_max_pacing_rate(fd, rate)?;
        // Paced, the kernel sends at `rate` but a write returns as soon as the data fits in
        // the send buffer (megabytes): the writer would count as sent what still waits there
        // (-b 100M over 5 s read 107 Mbit/s at the sender, 100 at the receiver). Bounding
        // the unsent bytes to ~10 ms of the rate keeps what the writer counts within that
        // of what the kernel sent; in-flight data is not bounded by it.
        let lowat = notsent_lowat(rate);
        sys::setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, lowat as i32)
            .map_err(fail("TCP_NOTSENT_LOWAT", lowat.to_string()))?;
    }
    Ok(())
}

/// TCP_NOTSENT_LOWAT for a paced socket: 10 ms at `bytes_per_sec`, within 16 KiB..=1 MiB.
pub fn notsent_lowat(bytes_per_sec: u64) -> u32 {
    (bytes_per_sec / 100).clamp(16 * 1024, 1024 * 1024) as u32
}

/// Set SO_MAX_PACING_RATE (bytes/s) on any socket; honoured by the fq qdisc
/// and, since Linux 4.13, by TCP's internal pacing. UDP uses it via fq only.
pub fn set_max_pacing_rate(
    fd: std::os::fd::RawFd,
    bytes_per_sec: u64,
) -> Result<(), DatapathError> {
    // The kernel accepts a u64 since 4.20 and a u32 before; try u64 first.
    let r = sys::setsockopt_bytes(
        fd,
        libc::SOL_SOCKET,
        sys::SO_MAX_PACING_RATE,
        &bytes_per_sec.to_ne_bytes(),
    );
    match r {
        Ok(()) => Ok(()),
        Err(_) => {
            let v = u32::try_from(bytes_per_sec).unwrap_or(u32::MAX);
            sys::setsockopt_bytes(
                fd,
                libc::SOL_SOCKET,
                sys::SO_MAX_PACING_RATE,
                &v.to_ne_bytes(),
            )
            .map_err(|source| DatapathError::SockOpt {
                opt: "SO_MAX_PACING_RATE",
                value: bytes_per_sec.to_string(),
                source,
            })
        }
    }
}

/// The send/receive buffer sizes the kernel actually granted (after doubling).
pub fn socket_buffers(sock: impl AsFd) -> Result<(u32, u32), DatapathError> {
    let sock = sock.as_fd();
    let fail = |name: &'static str| {
        move |e: rustix::io::Errno| DatapathError::SockOpt {
            opt: name,
            value: "?".into(),
            source: e.into(),
        }
    };
    let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    Ok((
        clamp(sockopt::socket_send_buffer_size(sock).map_err(fail("SO_SNDBUF"))?),
        clamp(sockopt::socket_recv_buffer_size(sock).map_err(fail("SO_RCVBUF"))?),
    ))
}

/// TCP_INFO fields iperf3 reports, plus the limit counters that explain them.
/// Optional fields are `None` when the running kernel's struct is too short.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// TCP state (1 = ESTABLISHED ...).
    pub state: u8,
    /// tcpi_total_retrans: segments retransmitted over the connection's life.
    pub retransmits_total: u32,
    /// snd_cwnd × snd_mss, in bytes (what iperf3 prints as Cwnd).
    pub snd_cwnd_bytes: u64,
    /// snd_cwnd in segments.
    pub snd_cwnd_segs: u32,
    /// Peer's advertised window after scaling (5.19+).
    pub snd_wnd: Option<u32>,
    /// Smoothed RTT and its variance, µs.
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// Minimum RTT seen, µs (4.6+).
    pub min_rtt_us: Option<u32>,
    pub pmtu: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub snd_ssthresh: u32,
    pub unacked: u32,
    pub lost: u32,
    /// `tcpi_last_data_recv`: milliseconds since the connection last received data (the
    /// kernel's clock, in jiffies: a few ms of resolution).
    pub last_data_recv_ms: u32,
    pub reordering: u32,
    /// Current and maximum pacing rate, bytes/s (4.0+).
    pub pacing_rate: Option<u64>,
    pub max_pacing_rate: Option<u64>,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    /// Bytes written but not yet sent (4.6+).
    pub notsent_bytes: Option<u32>,
    pub delivery_rate: Option<u64>,
    /// µs busy sending / limited by receive window / limited by send buffer (4.10+).
    pub busy_time_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    /// Segments the peer reported received twice (`tcpi_dsack_dups`, 4.19+): spurious
    /// retransmits.
    pub dsack_dups: Option<u32>,
    /// Reordering events seen (`tcpi_reord_seen`, 4.19+; iperf3 3.17+ prints it as `reorder`).
    pub reord_seen: Option<u32>,
    /// Retransmission timeouts over the connection's life and the time spent recovering
    /// from them, ms (`tcpi_total_rto`, `tcpi_total_rto_time`, 6.7+).
    pub total_rto: Option<u16>,
    pub total_rto_time_ms: Option<u32>,
    /// Congestion control algorithm (TCP_CONGESTION).
    pub congestion: Option<String>,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}
fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    b.get(off..off + 2)
        .map(|s| u16::from_ne_bytes([s[0], s[1]]))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8).map(|s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_ne_bytes(a)
    })
}

/// Minimum TCP_INFO length we accept (the 2.6-era struct up to total_retrans).
pub const TCP_INFO_MIN_LEN: usize = 104;

/// Decode the kernel's `struct tcp_info` (native endianness) from the bytes
/// getsockopt returned. `None` if shorter than [`TCP_INFO_MIN_LEN`].
pub fn parse_tcp_info(b: &[u8]) -> Option<TcpInfo> {
    if b.len() < TCP_INFO_MIN_LEN {
        return None;
    }
    let r = |o| u32_at(b, o).unwrap_or(0);
    let snd_mss = r(16);
    let cwnd = r(80);
    Some(TcpInfo {
        state: b[0],
        retransmits_total: r(100),
        snd_cwnd_bytes: u64::from(cwnd) * u64::from(snd_mss),
        snd_cwnd_segs: cwnd,
        snd_wnd: u32_at(b, 228),
        rtt_us: r(68),
        rttvar_us: r(72),
        min_rtt_us: u32_at(b, 148),
        pmtu: r(60),
        snd_mss,
        rcv_mss: r(20),
        snd_ssthresh: r(76),
        unacked: r(24),
        lost: r(32),
        last_data_recv_ms: r(52),
        reordering: r(88),
        pacing_rate: u64_at(b, 104),
        max_pacing_rate: u64_at(b, 112),
        bytes_acked: u64_at(b, 120),
        bytes_received: u64_at(b, 128),
        notsent_bytes: u32_at(b, 144),
        delivery_rate: u64_at(b, 160),
        busy_time_us: u64_at(b, 168),
        rwnd_limited_us: u64_at(b, 176),
        sndbuf_limited_us: u64_at(b, 184),
        bytes_sent: u64_at(b, 200),
        bytes_retrans: u64_at(b, 208),
        dsack_dups: u32_at(b, 216),
        reord_seen: u32_at(b, 220),
        total_rto: u16_at(b, 240),
        total_rto_time_ms: u32_at(b, 244),
        congestion: None,
    })
}

/// Read TCP_INFO (and TCP_CONGESTION) of a TCP socket.
pub fn tcp_info(fd: impl AsFd) -> Result<TcpInfo, DatapathError> {
    let mut info = read_tcp_info(fd.as_fd().as_raw_fd())?;
    if let Ok(name) = sockopt::tcp_congestion(fd.as_fd()) {
        let name = name.trim_end_matches('\0');
        if !name.is_empty() {
            info.congestion = Some(name.to_string());
        }
    }
    Ok(info)
}

/// `TCP_INFO` of socket `raw`, decoded ([`parse_tcp_info`]), without the congestion
/// algorithm's name.
fn read_tcp_info(raw: std::os::fd::RawFd) -> Result<TcpInfo, DatapathError> {
    let mut buf = [0u8; 512];
    let n = sys::getsockopt_bytes(raw, libc::IPPROTO_TCP, libc::TCP_INFO, &mut buf).map_err(
        |source| DatapathError::Syscall {
            op: "getsockopt(TCP_INFO)",
            fd: raw,
            source,
        },
    )?;
    parse_tcp_info(&buf[..n]).ok_or_else(|| DatapathError::Syscall {
        op: "getsockopt(TCP_INFO) returned a short struct",
        fd: raw,
        source: std::io::Error::from(std::io::ErrorKind::InvalidData),
    })
}

/// The socket's smoothed RTT in microseconds (`tcpi_rtt`: on a receiver that has sent no
/// data, the handshake's), or `None` where TCP_INFO cannot be read or holds none yet.
pub fn srtt_us(fd: std::os::fd::RawFd) -> Option<u32> {
    read_tcp_info(fd).ok().map(|i| i.rtt_us).filter(|&r| r > 0)
}

#[cfg(test)]
mod tests {

    #[test]
    fn notsent_lowat_is_ten_ms_of_the_rate_within_bounds() {
        assert_eq!(notsent_lowat(12_500_000), 125_000); // 100 Mbit/s
        assert_eq!(notsent_lowat(1_000), 16 * 1024);
        assert_eq!(notsent_lowat(u64::MAX), 1024 * 1024);
    }

    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let a = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (b, _) = l.accept().expect("accept");
        (a, b)
    }

    #[test]
    fn parse_short_struct_is_none_and_old_struct_lacks_new_fields() {
        assert!(parse_tcp_info(&[0u8; 103]).is_none());
        let mut b = vec![0u8; 104];
        b[0] = 1;
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[100..104].copy_from_slice(&7u32.to_ne_bytes());
        b[68..72].copy_from_slice(&250u32.to_ne_bytes());
        let i = parse_tcp_info(&b).expect("parse");
        assert_eq!(i.state, 1);
        assert_eq!(i.snd_cwnd_bytes, 14480);
        assert_eq!(i.retransmits_total, 7);
        assert_eq!(i.rtt_us, 250);
        assert_eq!(i.pacing_rate, None);
        assert_eq!(i.busy_time_us, None);
        assert_eq!(i.snd_wnd, None);
    }

    #[test]
    fn parse_full_struct_offsets() {
        let mut b = vec![0u8; 240];
        b[168..176].copy_from_slice(&123456u64.to_ne_bytes());
        b[176..184].copy_from_slice(&42u64.to_ne_bytes());
        b[228..232].copy_from_slice(&65535u32.to_ne_bytes());
        b[160..168].copy_from_slice(&999u64.to_ne_bytes());
        b[216..220].copy_from_slice(&17u32.to_ne_bytes());
        let i = parse_tcp_info(&b).expect("parse");
        assert_eq!(i.dsack_dups, Some(17));
        assert_eq!(i.busy_time_us, Some(123456));
        assert_eq!(i.rwnd_limited_us, Some(42));
        assert_eq!(i.snd_wnd, Some(65535));
        assert_eq!(i.delivery_rate, Some(999));
        assert_eq!(
            i.total_rto, None,
            "a 240-byte struct ends before tcpi_total_rto"
        );
        let mut b = vec![0u8; 248];
        b[240..242].copy_from_slice(&3u16.to_ne_bytes());
        b[242..244].copy_from_slice(&2u16.to_ne_bytes());
        b[244..248].copy_from_slice(&612u32.to_ne_bytes());
        let i = parse_tcp_info(&b).expect("parse");
        assert_eq!(i.total_rto, Some(3));
        assert_eq!(i.total_rto_time_ms, Some(612));
    }

    #[test]
    fn live_tcp_info_and_options() {
        let (a, b) = pair();
        let opts = TcpOptions {
            window: Some(256 * 1024),
            mss: None,
            nodelay: true,
            congestion: None,
            fq_rate: None,
        };
        apply(&a, &opts).expect("apply");
        let (snd, rcv) = socket_buffers(&a).expect("buffers");
        assert!(
            snd >= 256 * 1024 && rcv >= 256 * 1024,
            "kernel granted {snd}/{rcv}"
        );
        assert!(a.nodelay().expect("nodelay"));
        use std::io::Write;
        (&a).write_all(&[7u8; 10000]).expect("write");
        let i = tcp_info(&a).expect("tcp_info");
        assert_eq!(i.state, 1, "ESTABLISHED");
        assert!(i.snd_mss > 0 && i.pmtu > 0);
        assert!(i.snd_cwnd_bytes > 0);
        assert!(i.congestion.is_some());
        drop(b);
    }

    #[test]
    fn congestion_and_pacing() {
        let (a, _b) = pair();
        let e = apply(
            &a,
            &TcpOptions {
                congestion: Some("no-such-cc".into()),
                ..Default::default()
            },
        );
        match e {
            Err(DatapathError::Congestion { algo, .. }) => assert_eq!(algo, "no-such-cc"),
            other => panic!("expected Congestion error, got {other:?}"),
        }
        apply(
            &a,
            &TcpOptions {
                congestion: Some("cubic".into()),
                fq_rate: Some(125_000_000),
                ..Default::default()
            },
        )
        .expect("cubic + pacing");
        let i = tcp_info(&a).expect("info");
        assert_eq!(i.congestion.as_deref(), Some("cubic"));
        assert_eq!(i.max_pacing_rate, Some(125_000_000));
    }
}
