//! Sockets of the control plane: name resolution with an address family, connect with a
//! timeout and an optional source port, and a control connection read with deadlines.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::EngineError;

/// `-4` / `-6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    #[default]
    Any,
    V4,
    V6,
}

impl Family {
    /// `-4` and `-6` (`-4` when both are given, as iperf3).
    pub fn from_flags(v4: bool, v6: bool) -> Family {
        if v4 {
            Family::V4
        } else if v6 {
            Family::V6
        } else {
            Family::Any
        }
    }

    fn admits(self, a: &SocketAddr) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        }
    }
}

/// Resolve `host:port` to the addresses of the wanted family, in resolver order.
pub fn resolve(host: &str, port: u16, family: Family) -> Result<Vec<SocketAddr>, EngineError> {
    let target = format!("{host} port {port}");
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Connect {
            target: target.clone(),
            reason: format!("name lookup failed: {e}"),
        })?
        .filter(|a| family.admits(a))
        .collect();
    if addrs.is_empty() {
        return Err(EngineError::Connect {
            target,
            reason: match family {
                Family::V4 => "no IPv4 address (-4)".into(),
                Family::V6 => "no IPv6 address (-6)".into(),
                Family::Any => "no address".into(),
            },
        });
    }
    Ok(addrs)
}

/// Describe a connect error the way a network engineer expects.
pub fn connect_reason(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::ConnectionRefused => "connection refused (is a server listening?)".into(),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => "timed out".into(),
        _ => match Errno::from_io_error(e) {
            Some(Errno::NETUNREACH) => "network unreachable".into(),
            Some(Errno::HOSTUNREACH) => "host unreachable".into(),
            _ => e.to_string(),
        },
    }
}

/// A TCP socket, options applied by `prepare` before `connect` (window, MSS: they must be set
/// before the SYN), optionally bound to `bind`/`cport`, connected within `timeout`.
pub fn connect(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    cport: Option<u16>,
    timeout: Option<Duration>,
    prepare: impl FnOnce(&Socket) -> Result<(), EngineError>,
) -> Result<TcpStream, EngineError> {
    connect_with(addr, bind, cport, timeout, false, None, prepare)
}

/// [`connect`], over MPTCP when `mptcp` (iperf3's `-m`; the kernel falls back to TCP when the
/// peer does not speak it).
pub fn connect_with(
    addr: SocketAddr,
    bind: Option<IpAddr>,
    cport: Option<u16>,
    timeout: Option<Duration>,
    mptcp: bool,
    interrupt: Option<&AtomicBool>,
    prepare: impl FnOnce(&Socket) -> Result<(), EngineError>,
) -> Result<TcpStream, EngineError> {
    let target = addr.to_string();
    let proto = if mptcp {
        Protocol::MPTCP
    } else {
        Protocol::TCP
    };
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(proto)).map_err(|e| {
        if mptcp {
            EngineError::Config(format!(
                "-m/--mptcp: this kernel does not offer MPTCP ({e})"
            ))
        } else {
            EngineError::io(format!("socket for {target}"), e)
        }
    })?;
    prepare(&sock)?;
    if bind.is_some() || cport.is_some() {
        let ip = bind.unwrap_or(match addr {
            SocketAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            SocketAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        });
        let local = SocketAddr::new(ip, cport.unwrap_or(0));
        let _ = sock.set_reuse_address(true);
        sock.bind(&SockAddr::from(local)).map_err(|e| {
            EngineError::Config(format!("cannot bind the client socket to {local}: {e}"))
        })?;
    }
    match connect_polled(&sock, &SockAddr::from(addr), timeout, interrupt) {
        Ok(()) => Ok(sock.into()),
        Err(e) if e.kind() == ErrorKind::Interrupted => Err(EngineError::Interrupted),
        Err(e) => Err(EngineError::Connect {
            target,
            reason: connect_reason(&e),
        }),
    }
}

/// How long one wait for a connection in progress lasts before the interrupt flag is read
/// again (a signal handler only sets the flag; the SYN may be dropped for minutes).
const CONNECT_POLL: Duration = Duration::from_millis(100);

/// `connect` without blocking: the connection in progress is polled in short waits, so
/// `interrupt` ends it promptly (an `Interrupted` error) and `timeout` bounds it (`TimedOut`);
/// with neither, the kernel's SYN retries decide, as for a blocking connect.
fn connect_polled(
    sock: &Socket,
    addr: &SockAddr,
    timeout: Option<Duration>,
    interrupt: Option<&AtomicBool>,
) -> std::io::Result<()> {
    sock.set_nonblocking(true)?;
    let r = match sock.connect(addr) {
        Ok(()) => Ok(()),
        Err(e) if Errno::from_io_error(&e) == Some(Errno::INPROGRESS) => {
            wait_connected(sock, timeout.map(|t| Instant::now() + t), interrupt)
        }
        Err(e) => Err(e),
    };
    sock.set_nonblocking(false)?;
    r
}

fn wait_connected(
    sock: &Socket,
    deadline: Option<Instant>,
    interrupt: Option<&AtomicBool>,
) -> std::io::Result<()> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    loop {
        if interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return Err(std::io::Error::new(ErrorKind::Interrupted, "interrupted"));
        }
        let mut wait = CONNECT_POLL;
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::Error::new(ErrorKind::TimedOut, "timed out"));
            }
            wait = wait.min(left);
        }
        let timeout = Timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos().max(1) as _,
        };
        let mut fds = [PollFd::new(sock, PollFlags::OUT)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => continue,
            Ok(_) => {
                return match sock.take_error()? {
                    Some(e) => Err(e),
                    // Writable without a pending error: connected (or refused later, which the
                    // first use reports).
                    None => sock.peer_addr().map(|_| ()),
                };
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// UDP socket buffers when `-w` is not given: large enough that a burst of GSO
/// super-datagrams (or a receiver that was scheduled out for a millisecond) does not overflow
/// the kernel's 208 KiB default and show up as loss. The kernel caps it at `net.core.rmem_max`
/// / `wmem_max`.
pub const UDP_DEFAULT_BUFFER: usize = 4 * 1024 * 1024;

/// Apply `-w` (or [`UDP_DEFAULT_BUFFER`]) to a UDP socket.
pub fn set_udp_buffers(sock: &Socket, window: Option<u32>) {
    let w = window.map_or(UDP_DEFAULT_BUFFER, |w| w as usize);
    let _ = sock.set_send_buffer_size(w);
    let _ = sock.set_recv_buffer_size(w);
}

/// A UDP data stream of a client: bound (optionally to `bind`/`cport`), connected to the
/// server, iperf3's 4-byte handshake done (the server learns our address from it), the test's
/// token after the word (a wirespeed server attaches the stream only with it; an iperf3 server
/// reads the 4-byte word and the rest of the datagram is discarded).
pub fn udp_connect(
    server: SocketAddr,
    bind: Option<IpAddr>,
    cport: Option<u16>,
    window: Option<u32>,
    timeout: Duration,
    cookie: &wirespeed_protocol::Cookie,
) -> Result<std::net::UdpSocket, EngineError> {
    let target = server.to_string();
    let sock = Socket::new(
        Domain::for_address(server),
        Type::DGRAM,
        Some(Protocol::UDP),
    )
    .map_err(|e| EngineError::io(format!("UDP socket for {target}"), e))?;
    set_udp_buffers(&sock, window);
    if bind.is_some() || cport.is_some() {
        let ip = bind.unwrap_or(match server {
            SocketAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        });
        let local = SocketAddr::new(ip, cport.unwrap_or(0));
        let _ = sock.set_reuse_address(true);
        sock.bind(&SockAddr::from(local)).map_err(|e| {
            EngineError::Config(format!("cannot bind the UDP socket to {local}: {e}"))
        })?;
    }
    sock.connect(&SockAddr::from(server))
        .map_err(|e| EngineError::Connect {
            target: target.clone(),
            reason: connect_reason(&e),
        })?;
    let s: std::net::UdpSocket = sock.into();
    let fail = |reason: String| EngineError::Connect {
        target: target.clone(),
        reason,
    };
    s.set_read_timeout(Some(timeout.max(Duration::from_millis(10))))
        .map_err(|e| fail(e.to_string()))?;
    s.send(&wirespeed_protocol::udp::connect_msg_with_token(cookie))
        .map_err(|e| fail(format!("UDP handshake: {}", connect_reason(&e))))?;
    let mut b = [0u8; 16];
    let n = s.recv(&mut b).map_err(|e| {
        fail(format!(
            "UDP handshake: no reply within {:.1} s ({})",
            timeout.as_secs_f64(),
            connect_reason(&e)
        ))
    })?;
    wirespeed_protocol::udp::check_connect_reply(&b[..n])
        .map_err(|e| fail(format!("UDP handshake: {e}")))?;
    s.set_read_timeout(None).map_err(|e| fail(e.to_string()))?;
    Ok(s)
}

/// The same address, with IPv4-mapped IPv6 addresses turned into IPv4.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// What a deadline-bounded read returned.
#[derive(Debug)]
pub enum ReadOutcome {
    Data(usize),
    Eof,
    Timeout,
}

/// The control connection: reads bounded by deadlines, writes bounded by a timeout.
#[derive(Debug)]
pub struct Ctrl {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Ctrl {
    /// The control connection's `TCP_INFO` (for the black-hole check).
    pub fn tcp_info(&self) -> Option<wirespeed_datapath::tcp::TcpInfo> {
        use std::os::fd::AsFd;
        wirespeed_datapath::tcp::tcp_info(self.stream.as_fd()).ok()
    }

    pub fn new(stream: TcpStream) -> Ctrl {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
        Ctrl {
            stream,
            buf: vec![0u8; 64 * 1024],
        }
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Write everything (a peer that stops reading for 10 s fails the write).
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.stream.write_all(bytes)
    }

    /// Read what is available, waiting until `deadline` at most.
    /// Whether the connection has something to read now (data, EOF or an error), without
    /// waiting.
    pub fn has_input(&self) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut fds = [PollFd::new(&self.stream, PollFlags::IN)];
        poll(&mut fds, Some(&zero)).is_ok_and(|n| n > 0)
    }

    pub fn read_until(&mut self, deadline: Instant) -> std::io::Result<(ReadOutcome, &[u8])> {
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        self.stream.set_read_timeout(Some(wait))?;
        match self.stream.read(&mut self.buf) {
            Ok(0) => Ok((ReadOutcome::Eof, &[])),
            Ok(n) => Ok((ReadOutcome::Data(n), &self.buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                Ok((ReadOutcome::Timeout, &[]))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                Ok((ReadOutcome::Eof, &[]))
            }
            Err(e) => Err(e),
        }
    }
}

/// The MSS of a connected socket (iperf3's `tcp_mss_default`).
pub fn mss_of(s: &TcpStream) -> Option<u32> {
    let sock = socket2::SockRef::from(s);
    sock.tcp_mss().ok()
}
