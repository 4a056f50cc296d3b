//! iperf3's requests beyond the test shape: socket options (`-S`/`--dscp`, `--bind-dev`,
//! `--dont-fragment`, `--snd-timeout`, `--cntl-ka`, `-m` MPTCP) and parameters passed to the peer as
//! iperf3 passes them (`-b RATE/BURST`, `--pacing-timer`, `--repeating-payload`). The client
//! applies them to its own sockets; the TOS, the MSS and don't-fragment also travel in the
//! parameters, so the server applies them to its data sockets (iperf3 does the same).

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;

use wirespeed_datapath as dp;

use crate::EngineError;

/// `--cntl-ka[=IDLE/INTERVAL/COUNT]`; a part left out keeps the system's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keepalive {
    pub idle_secs: Option<u32>,
    pub interval_secs: Option<u32>,
    pub count: Option<u32>,
}

/// The client's iperf3 extras; all off by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    /// `-S`/`--dscp`: the TOS byte of every data socket, and `TOS` in the parameters.
    pub tos: Option<u32>,
    /// `--bind-dev DEV` or `-B ADDR%DEV`: SO_BINDTODEVICE on every socket.
    pub bind_dev: Option<String>,
    /// `--dont-fragment`: IPv4 DF on UDP data sockets, and `dont_fragment` in the parameters.
    pub dont_fragment: bool,
    /// `--snd-timeout`: TCP_USER_TIMEOUT on TCP data sockets.
    pub snd_timeout: Option<Duration>,
    /// `--cntl-ka`: TCP keepalive on the control connection.
    pub cntl_keepalive: Option<Keepalive>,
    /// `-b RATE/BURST`: `burst` in the parameters (an iperf3 sender sends BURST packets back
    /// to back at each pacing tick).
    pub burst: Option<u32>,
    /// `--pacing-timer`: `pacing_timer` in the parameters (microseconds; default 1000).
    pub pacing_timer: Option<u32>,
    /// `--repeating-payload`: `repeating_payload` in the parameters.
    pub repeating_payload: bool,
    /// `-m`/`--mptcp`: the client's TCP connections, or the server's listener, over MPTCP.
    pub mptcp: bool,
    /// `-L`/`--flowlabel`: the IPv6 flow label of the TCP data connections, and `flowlabel` in
    /// the parameters.
    pub flowlabel: Option<u32>,
}

fn config(e: dp::DatapathError) -> EngineError {
    EngineError::Config(e.to_string())
}

impl Extras {
    /// The control connection, before connect: device binding and keepalive.
    pub fn control(&self, sock: impl AsFd) -> Result<(), EngineError> {
        if let Some(dev) = &self.bind_dev {
            dp::sockopt::bind_device(&sock, dev).map_err(config)?;
        }
        self.keepalive(sock)
    }

    /// `--cntl-ka`, if asked for.
    pub fn keepalive(&self, sock: impl AsFd) -> Result<(), EngineError> {
        if let Some(k) = self.cntl_keepalive {
            let secs = |s: Option<u32>| s.map(|s| Duration::from_secs(u64::from(s)));
            dp::sockopt::set_keepalive(&sock, secs(k.idle_secs), secs(k.interval_secs), k.count)
                .map_err(config)?;
        }
        Ok(())
    }

    /// The address a TCP data connection connects to: with `-L`, the flow label in its
    /// flowinfo (IPv6 only, as iperf3).
    pub fn data_target(&self, target: SocketAddr) -> Result<SocketAddr, EngineError> {
        match (self.flowlabel, target) {
            (None, t) => Ok(t),
            (Some(l), SocketAddr::V6(mut a)) => {
                a.set_flowinfo(dp::sockopt::flowinfo(l));
                Ok(SocketAddr::V6(a))
            }
            (Some(_), SocketAddr::V4(a)) => Err(EngineError::Config(format!(
                "-L/--flowlabel: flow labels are IPv6 only, and {a} is IPv4 (use -6 or an IPv6 address)"
            ))),
        }
    }

    /// A TCP data socket, before it connects to `target` (from [`Extras::data_target`]).
    pub fn tcp_data(&self, sock: impl AsFd, target: SocketAddr) -> Result<(), EngineError> {
        if let (Some(l), SocketAddr::V6(a)) = (self.flowlabel, target) {
            dp::sockopt::set_flowlabel(&sock, *a.ip(), l).map_err(config)?;
        }
        if let Some(dev) = &self.bind_dev {
            dp::sockopt::bind_device(&sock, dev).map_err(config)?;
        }
        if let Some(t) = self.tos {
            dp::sockopt::set_tos(&sock, t).map_err(config)?;
        }
        if let Some(t) = self.snd_timeout {
            dp::sockopt::set_user_timeout(&sock, t).map_err(config)?;
        }
        Ok(())
    }

    /// A UDP data socket (connected).
    pub fn udp_data(&self, sock: impl AsFd) -> Result<(), EngineError> {
        if let Some(dev) = &self.bind_dev {
            dp::sockopt::bind_device(&sock, dev).map_err(config)?;
        }
        if let Some(t) = self.tos {
            dp::sockopt::set_tos(&sock, t).map_err(config)?;
        }
        if self.dont_fragment {
            dp::sockopt::set_dont_fragment(&sock).map_err(config)?;
        }
        Ok(())
    }
}

/// The server's side of what a client asked for in its parameters: the TOS byte and
/// don't-fragment on each data socket (MSS, window, no-delay and congestion go through
/// `tcp::TcpOptions`). iperf3 goes on with a warning when an option fails; so does the server.
pub fn server_data(sock: impl AsFd, tos: Option<u32>, dont_fragment: bool) {
    if let Some(t) = tos.filter(|&t| t != 0) {
        let _ = dp::sockopt::set_tos(&sock, t);
    }
    if dont_fragment {
        let _ = dp::sockopt::set_dont_fragment(&sock);
    }
}
