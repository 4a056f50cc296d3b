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

/// iperf3's `--dscp`: a number 0-63 (decimal, 0x hex or 0 octal) or a name (RFC 2474 class
/// selectors, RFC 2597 assured forwarding, RFC 3246 expedited forwarding, RFC 5865 voice admit,
/// RFC 8622 lower effort); the TOS byte is the DSCP shifted left by two.
pub fn dscp_tos(s: &str) -> Result<u32, String> {
    let named = match s.to_ascii_lowercase().as_str() {
        "le" => Some(1),
        "ef" => Some(46),
        "va" => Some(44),
        n => {
            if let Some(c) = n.strip_prefix("cs") {
                c.parse::<u32>().ok().filter(|&c| c <= 7).map(|c| c << 3)
            } else if let Some(af) = n.strip_prefix("af") {
                let mut d = af.chars().map(|c| c.to_digit(10));
                match (d.next(), d.next(), d.next()) {
                    (Some(Some(class @ 1..=4)), Some(Some(drop @ 1..=3)), None) => {
                        Some((class << 3) | (drop << 1))
                    }
                    _ => None,
                }
            } else {
                None
            }
        }
    };
    let dscp = match named {
        Some(d) => d,
        None => c_number(s).filter(|&d| d <= 63).ok_or_else(|| {
            format!("{s:?}: a DSCP is 0-63 or a name (ef, af11..af43, cs0..cs7, le, va)")
        })?,
    };
    Ok(dscp << 2)
}

/// iperf3's `-S`: the TOS byte, 0-255, decimal, 0x hex or 0 octal.
pub fn tos(s: &str) -> Result<u32, String> {
    c_number(s)
        .filter(|&t| t <= 255)
        .ok_or_else(|| format!("{s:?}: the TOS is 0-255 (52, 064 and 0x34 are the same)"))
}

/// iperf3's `-L`: an IPv6 flow label, 1-0xfffff (decimal, 0x hex or 0 octal).
pub fn flowlabel(s: &str) -> Result<u32, String> {
    c_number(s)
        .filter(|&l| (1..=0xf_ffff).contains(&l))
        .ok_or_else(|| format!("{s:?}: a flow label is 1-1048575 (0xfffff)"))
}

/// A number as C's strtol with base 0 reads it: `0x` hex, leading `0` octal, else decimal.
fn c_number(s: &str) -> Option<u32> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// `--cntl-ka[=IDLE/INTERVAL/COUNT]`: TCP keepalive on the control connection; each part may be
/// empty (the system's setting).
pub fn keepalive(s: &str) -> Result<Keepalive, String> {
    let mut parts = s.split('/');
    let mut next = |what: &str| -> Result<Option<u32>, String> {
        match parts.next().map(str::trim) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .map(Some)
                .ok_or_else(|| format!("--cntl-ka: {what} {v:?} is not a positive number")),
        }
    };
    let ka = Keepalive {
        idle_secs: next("idle time")?,
        interval_secs: next("interval")?,
        count: next("count")?,
    };
    if parts.next().is_some() {
        return Err("--cntl-ka: at most IDLE/INTERVAL/COUNT".into());
    }
    if let (Some(idle), Some(iv), Some(n)) = (ka.idle_secs, ka.interval_secs, ka.count) {
        if idle <= iv.saturating_mul(n) {
            return Err(format!(
                "--cntl-ka={idle}/{iv}/{n}: the idle time must exceed interval x count"
            ));
        }
    }
    Ok(ka)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_and_dscp_read_as_iperf3_reads_them() {
        assert_eq!(tos("52"), Ok(52));
        assert_eq!(tos("064"), Ok(52));
        assert_eq!(tos("0x34"), Ok(52));
        assert!(tos("256").is_err() && tos("x").is_err());
        assert_eq!(dscp_tos("46"), Ok(46 << 2));
        assert_eq!(dscp_tos("EF"), Ok(46 << 2));
        assert_eq!(dscp_tos("af11"), Ok(10 << 2));
        assert_eq!(dscp_tos("af43"), Ok(38 << 2));
        assert_eq!(dscp_tos("cs7"), Ok(56 << 2));
        assert_eq!(dscp_tos("0x3f"), Ok(63 << 2));
        assert_eq!(flowlabel("0xfffff"), Ok(0xfffff));
        assert!(flowlabel("0").is_err() && flowlabel("0x100000").is_err());
        assert!(dscp_tos("64").is_err() && dscp_tos("af51").is_err() && dscp_tos("cs8").is_err());
    }

    #[test]
    fn keepalive_parts_are_optional() {
        let k = keepalive("").unwrap();
        assert_eq!((k.idle_secs, k.interval_secs, k.count), (None, None, None));
        let k = keepalive("30/5/3").unwrap();
        assert_eq!(
            (k.idle_secs, k.interval_secs, k.count),
            (Some(30), Some(5), Some(3))
        );
        let k = keepalive("/7").unwrap();
        assert_eq!(
            (k.idle_secs, k.interval_secs, k.count),
            (None, Some(7), None)
        );
        assert!(
            keepalive("10/5/3").is_err(),
            "idle must exceed interval x count"
        );
        assert!(keepalive("1/2/3/4").is_err() && keepalive("x").is_err());
    }
}
