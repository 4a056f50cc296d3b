//! The client's and the server's option values, each read into the type the engine takes, with
//! one clear line for a value that is not one (the command line's parsers call these; a library
//! caller gets the same rule).

use std::net::IpAddr;

use wirespeed_datapath::SendPath;
use wirespeed_report::sizes::{parse_bytes, parse_rate};

/// A size (K/M/G suffixes, powers of 1024, as iperf3 reads them).
pub fn size(s: &str) -> Result<u64, String> {
    parse_bytes(s, "size")
        .map(|b| b.0)
        .map_err(|e| e.to_string())
}

/// A memory budget: a size (K/M/G) from 1 MiB to 1 TiB.
pub fn memory_budget(s: &str) -> Result<u64, String> {
    size(s)
        .ok()
        .filter(|b| (1 << 20..=1 << 40).contains(b))
        .ok_or_else(|| "a size from 1M to 1T (K/M/G suffixes)".to_string())
}

/// A rate in bit/s (K/M/G suffixes, powers of 1000, as iperf3 reads them).
pub fn rate(s: &str) -> Result<u64, String> {
    parse_rate(s, "rate")
        .map(|b| b.0)
        .map_err(|e| e.to_string())
}

/// `--server-bitrate-limit RATE[/SECS]` (iperf3's spelling; SECS defaults to 5).
pub fn bitrate_limit(s: &str) -> Result<(u64, u64), String> {
    let (r, secs) = match s.split_once('/') {
        Some((r, t)) => (
            r,
            t.parse::<u64>()
                .ok()
                .filter(|t| (1..=3600).contains(t))
                .ok_or_else(|| {
                    format!("{t:?}: the averaging interval is whole seconds from 1 to 3600")
                })?,
        ),
        None => (s, 5),
    };
    Ok((rate(r)?, secs))
}

/// `-i`: 0 (no interval reports) or 0.1 to 60 seconds.
pub fn interval_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(v == 0.0 || (0.1..=60.0).contains(&v)) {
        return Err(format!(
            "{v} must be 0 (no interval reports) or 0.1..=60 seconds"
        ));
    }
    Ok(v)
}

/// `-A N[,M]` (also `,M` for the server side only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Affinity {
    pub client: Option<u32>,
    pub server: Option<u32>,
}

pub fn affinity(s: &str) -> Result<Affinity, String> {
    let (a, b) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let num = |t: &str| -> Result<Option<u32>, String> {
        if t.is_empty() {
            Ok(None)
        } else {
            t.trim()
                .parse::<u32>()
                .map(Some)
                .map_err(|_| format!("{t:?} is not a CPU number"))
        }
    };
    let r = Affinity {
        client: num(a)?,
        server: match b {
            Some(b) => num(b)?,
            None => None,
        },
    };
    if r.client.is_none() && r.server.is_none() {
        return Err("expected N or N,M".into());
    }
    Ok(r)
}

/// `--zerocopy`'s send path.
pub fn send_path(s: &str) -> Result<SendPath, String> {
    match s {
        "sendfile" | "z" => Ok(SendPath::Sendfile),
        "splice" => Ok(SendPath::Splice),
        "msg_zerocopy" | "msg-zerocopy" | "zerocopy" => Ok(SendPath::MsgZerocopy),
        "copy" | "none" => Ok(SendPath::Copy),
        other => Err(format!(
            "{other:?}: expected sendfile, splice, msg_zerocopy or copy"
        )),
    }
}

/// `-b RATE[/BURST]`.
pub fn rate_burst(s: &str) -> Result<(u64, Option<u32>), String> {
    match s.split_once('/') {
        None => Ok((rate(s)?, None)),
        Some((r, b)) => {
            let burst = b
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| (1..=1000).contains(&n))
                .ok_or_else(|| format!("{b:?}: the burst is 1 to 1000 packets"))?;
            Ok((rate(r)?, Some(burst)))
        }
    }
}

/// `-B ADDR[%DEV]`.
pub fn bind_addr(s: &str) -> Result<(IpAddr, Option<String>), String> {
    let (addr, dev) = crate::targets::split_dev(s);
    let dev = dev.map(String::from);
    let ip = addr
        .parse::<IpAddr>()
        .map_err(|_| format!("{addr:?} is not an IP address"))?;
    Ok((ip, dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_forms() {
        assert_eq!(
            affinity("3").unwrap(),
            Affinity {
                client: Some(3),
                server: None
            }
        );
        assert_eq!(
            affinity("3,5").unwrap(),
            Affinity {
                client: Some(3),
                server: Some(5)
            }
        );
        assert_eq!(
            affinity(",5").unwrap(),
            Affinity {
                client: None,
                server: Some(5)
            }
        );
        assert!(affinity("x").is_err());
        assert!(affinity(",").is_err());
    }
}
