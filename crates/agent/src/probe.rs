//! `/probe`: the request's parameters (hostile input, checked here), the one-probe-per-interface
//! slots, and the probe's result as metrics. Parsing and rendering are pure; running the test
//! is [`crate::bridge::run_probe`]'s job.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use wirespeed_report::TestResult;
use wirespeed_verdict::VerdictId;

use crate::expo::{Exposition, Kind};

/// Longest query string accepted (bytes, before decoding).
pub const MAX_QUERY: usize = 1024;
/// Longest host name or address accepted.
const MAX_HOST: usize = 253;

/// What a probe may ask for, and its defaults (the agent's flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeLimits {
    /// Test port when `target` names none.
    pub default_port: u16,
    /// `duration` when the request names none, seconds.
    pub default_duration: u32,
    /// Longest `duration` accepted, seconds.
    pub max_duration: u32,
    /// Most `streams` accepted.
    pub max_streams: u32,
    /// Highest UDP rate of one probe, bits/s, all its streams together (`udp_rate` ×
    /// `streams`): a caller cannot make the agent flood a target.
    pub max_udp_rate: u64,
}

impl Default for ProbeLimits {
    fn default() -> ProbeLimits {
        ProbeLimits {
            default_port: 5201,
            default_duration: 5,
            max_duration: 30,
            max_streams: 16,
            max_udp_rate: 10_000_000_000,
        }
    }
}

/// One probe's parameters, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeParams {
    pub host: String,
    pub port: u16,
    /// Seconds.
    pub duration: u32,
    pub streams: u32,
    /// The target sends (iperf3's `-R`).
    pub reverse: bool,
    /// UDP at this rate per stream (bits/s); TCP when `None`.
    pub udp_rate: Option<u64>,
    /// Local address of the test's connections (`-B`).
    pub bind: Option<IpAddr>,
}

/// Why a request was refused; the text is the response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRequest(pub String);

fn bad(s: impl Into<String>) -> BadRequest {
    BadRequest(s.into())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decode `application/x-www-form-urlencoded` text (`+` is a space, `%XX` a byte); the result
/// must be UTF-8.
pub fn percent_decode(s: &str) -> Result<String, BadRequest> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let (Some(h), Some(l)) = (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                ) else {
                    return Err(bad("bad percent escape in the query"));
                };
                out.push(h << 4 | l);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| bad("the query is not UTF-8"))
}

/// Split a query string into decoded pairs; every key at most once.
pub fn parse_query(q: &str) -> Result<Vec<(String, String)>, BadRequest> {
    if q.len() > MAX_QUERY {
        return Err(bad(format!("query longer than {MAX_QUERY} bytes")));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for part in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let (k, v) = (percent_decode(k)?, percent_decode(v)?);
        if out.iter().any(|(x, _)| *x == k) {
            return Err(bad(format!("parameter {k:?} given twice")));
        }
        out.push((k, v));
    }
    Ok(out)
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= MAX_HOST
        && h.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':' | b'%'))
        && !h.starts_with('-')
}

/// `HOST`, `HOST:PORT`, `[V6]`, `[V6]:PORT` or a bare IPv6 address.
pub fn parse_target(t: &str, default_port: u16) -> Result<(String, u16), BadRequest> {
    let port_of = |p: &str| -> Result<u16, BadRequest> {
        match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad(format!("target port {p:?}: expected 1..=65535"))),
        }
    };
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("target: unclosed '['"))?;
        let port = match after {
            "" => default_port,
            p => port_of(
                p.strip_prefix(':')
                    .ok_or_else(|| bad("target: junk after ']'"))?,
            )?,
        };
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad("target: '[...]' holds no IPv6 address"));
        }
        (h.to_string(), port)
    } else if t.matches(':').count() > 1 {
        if t.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad("target: an IPv6 address with a port goes in brackets"));
        }
        (t.to_string(), default_port)
    } else if let Some((h, p)) = t.split_once(':') {
        (h.to_string(), port_of(p)?)
    } else {
        (t.to_string(), default_port)
    };
    if !valid_host(&host) {
        return Err(bad(format!("target {t:?}: not a host name or address")));
    }
    Ok((host, port))
}

fn parse_bool(k: &str, v: &str) -> Result<bool, BadRequest> {
    match v {
        "1" | "true" | "yes" | "" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(bad(format!("{k}={v:?}: expected true or false"))),
    }
}

fn parse_num(k: &str, v: &str, lo: u32, hi: u32) -> Result<u32, BadRequest> {
    match v.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(bad(format!("{k}={v:?}: expected {lo}..={hi}"))),
    }
}

/// Check a `/probe` query against `limits`.
pub fn parse_probe(query: &str, limits: &ProbeLimits) -> Result<ProbeParams, BadRequest> {
    let mut p = ProbeParams {
        host: String::new(),
        port: limits.default_port,
        duration: limits.default_duration.min(limits.max_duration),
        streams: 1,
        reverse: false,
        udp_rate: None,
        bind: None,
    };
    let mut target = false;
    for (k, v) in parse_query(query)? {
        match k.as_str() {
            "target" => {
                (p.host, p.port) = parse_target(&v, limits.default_port)?;
                target = true;
            }
            "duration" => p.duration = parse_num(&k, &v, 1, limits.max_duration)?,
            "streams" => p.streams = parse_num(&k, &v, 1, limits.max_streams)?,
            "reverse" => p.reverse = parse_bool(&k, &v)?,
            "udp_rate" => {
                let r = wirespeed_report::parse_rate(&v, "udp_rate")
                    .map_err(|e| bad(format!("udp_rate={v:?}: {e}")))?
                    .0;
                if r == 0 || r > limits.max_udp_rate {
                    return Err(bad(format!(
                        "udp_rate={v:?}: expected 1..={} bits/s",
                        limits.max_udp_rate
                    )));
                }
                p.udp_rate = Some(r);
            }
            "bind" => {
                p.bind = Some(
                    v.parse::<IpAddr>()
                        .map_err(|_| bad(format!("bind={v:?}: expected an IP address")))?,
                )
            }
            _ => {
                let shown: String = k.chars().take(32).collect();
                return Err(bad(format!("unknown parameter {shown:?}")));
            }
        }
    }
    if !target {
        return Err(bad("target is required (target=HOST[:PORT])"));
    }
    if let Some(r) = p.udp_rate {
        if r.saturating_mul(u64::from(p.streams)) > limits.max_udp_rate {
            return Err(bad(format!(
                "udp_rate × streams = {} bits/s: above this agent's {} bits/s for one probe \
                 (--probe.max-udp-rate)",
                r.saturating_mul(u64::from(p.streams)),
                limits.max_udp_rate
            )));
        }
    }
    Ok(p)
}

/// The local interface a test to `dest` would leave by (the kernel's route lookup through a
/// connected UDP socket; nothing is sent), else the local address, else `"unknown"`.
pub fn local_interface(dest: SocketAddr, bind: Option<IpAddr>) -> String {
    let local = bind.or_else(|| {
        let any: SocketAddr = if dest.is_ipv4() {
            "0.0.0.0:0".parse().ok()?
        } else {
            "[::]:0".parse().ok()?
        };
        let s = UdpSocket::bind(any).ok()?;
        s.connect(dest).ok()?;
        s.local_addr().ok().map(|a| a.ip())
    });
    let Some(ip) = local else {
        return "unknown".into();
    };
    // The kernel's routing table through the live root (the same lookup the observer uses).
    if let Some(i) =
        wirespeed_observe::route::iface_for_peer(&wirespeed_host::Root::live(), dest.ip(), Some(ip))
    {
        return i;
    }
    ip.to_string()
}

/// One probe at a time per key (the local interface).
#[derive(Debug, Default)]
pub struct Slots {
    busy: Mutex<HashSet<String>>,
    freed: Condvar,
}

/// Holds a slot; frees it when dropped.
#[derive(Debug)]
pub struct SlotGuard<'a> {
    slots: &'a Slots,
    key: String,
}

impl Slots {
    /// Take `key`'s slot, waiting at most `wait` for the probe holding it; `None` when it stays
    /// busy.
    pub fn acquire(&self, key: &str, wait: Duration) -> Option<SlotGuard<'_>> {
        let deadline = Instant::now() + wait;
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while busy.contains(key) {
            let left = deadline.checked_duration_since(Instant::now())?;
            busy = self
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        busy.insert(key.to_string());
        Some(SlotGuard {
            slots: self,
            key: key.to_string(),
        })
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let mut busy = self.slots.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy.remove(&self.key);
        self.slots.freed.notify_all();
    }
}

/// Why a probe failed, as its caller sees it: a small fixed set, so that the agent is no oracle
/// for what listens where (the detail goes to the agent's log only). The label value of
/// `wirespeed_probe_failure{reason}` and `agent.error` in `/probe.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeFailure {
    /// The target could not be reached or resolved (refused, unreachable, timed out).
    Connect,
    /// The target's server turned the test down (limits, authentication, access lists).
    Refused,
    /// The peer broke off or broke the protocol during the test.
    Peer,
    /// The test outlasted its duration and grace and was stopped.
    Timeout,
    /// Something on this host (a socket, a CPU, a setting) failed.
    Local,
}

impl ProbeFailure {
    pub const ALL: [ProbeFailure; 5] = [
        ProbeFailure::Connect,
        ProbeFailure::Refused,
        ProbeFailure::Peer,
        ProbeFailure::Timeout,
        ProbeFailure::Local,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProbeFailure::Connect => "connect",
            ProbeFailure::Refused => "refused",
            ProbeFailure::Peer => "peer",
            ProbeFailure::Timeout => "timeout",
            ProbeFailure::Local => "local",
        }
    }
}

/// One finished probe.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    pub params: ProbeParams,
    /// The local interface whose slot the probe held.
    pub interface: String,
    /// The test's report (also on failure, with `error` set), when the test got that far.
    pub result: Option<TestResult>,
    /// Why the probe failed, when it did.
    pub error: Option<ProbeFailure>,
    /// Seconds since the agent started, when the probe took its slot and when it let go of it.
    pub held_from: f64,
    pub held_until: f64,
}

impl ProbeReport {
    pub fn success(&self) -> bool {
        self.error.is_none()
            && self
                .result
                .as_ref()
                .is_some_and(|r| r.error.is_none() && r.end.sum_sent.is_some())
    }

    /// The verdict id explain gave the test, when it gave one.
    pub fn verdict(&self) -> Option<VerdictId> {
        let v = self.result.as_ref()?.wirespeed.as_ref()?.verdict.as_ref()?;
        Some(v.id)
    }

    /// The probe's JSON: the test's iperf3 `-J` document with an `agent` member.
    pub fn to_json(&self) -> String {
        let mut doc = match &self.result {
            Some(r) => serde_json::to_value(r).unwrap_or_default(),
            None => serde_json::json!({}),
        };
        if let Some(m) = doc.as_object_mut() {
            m.insert(
                "agent".into(),
                serde_json::json!({
                    "target": format!("{}:{}", self.params.host, self.params.port),
                    "interface": self.interface,
                    "protocol": if self.params.udp_rate.is_some() { "udp" } else { "tcp" },
                    "reverse": self.params.reverse,
                    "streams": self.params.streams,
                    "duration": self.params.duration,
                    "success": self.success(),
                    "error": self.error.map(ProbeFailure::as_str),
                    "held_from": self.held_from,
                    "held_until": self.held_until,
                }),
            );
        }
        serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into()) + "\n"
    }
}

/// The probe's families (`wirespeed_probe_*`).
pub fn write_probe(e: &mut Exposition, p: &ProbeReport) {
    let r = p.result.as_ref();
    let end = r.map(|r| &r.end);
    let sent = end.and_then(|e| e.sum_sent.as_ref());
    let received = end.and_then(|e| e.sum_received.as_ref().or(e.sum.as_ref()));
    e.family(
        "wirespeed_probe_success",
        Kind::Gauge,
        "1 when the probe's test ran to its end without error.",
    )
    .sample(&[], if p.success() { 1.0 } else { 0.0 });
    let mut failure = e.family(
        "wirespeed_probe_failure",
        Kind::Gauge,
        "1 for the reason the probe failed (connect, refused, peer, timeout, local), 0 for the others.",
    );
    for r in ProbeFailure::ALL {
        failure.sample(
            &[("reason", r.as_str())],
            if p.error == Some(r) { 1.0 } else { 0.0 },
        );
    }
    e.family(
        "wirespeed_probe_duration_seconds",
        Kind::Gauge,
        "Time the probe held its interface, including setup.",
    )
    .sample(&[], (p.held_until - p.held_from).max(0.0));
    let proto = if p.params.udp_rate.is_some() {
        "udp"
    } else {
        "tcp"
    };
    let dir = if p.params.reverse { "receive" } else { "send" };
    e.family(
        "wirespeed_probe_info",
        Kind::Gauge,
        "What the probe ran: protocol, and whether this agent sent or received.",
    )
    .sample(
        &[
            ("protocol", proto),
            ("direction", dir),
            ("interface", &p.interface),
        ],
        1.0,
    );
    if let Some(v) = p.verdict() {
        e.family(
            "wirespeed_probe_verdict_info",
            Kind::Gauge,
            "The verdict explain gave the probe's test (its stable id).",
        )
        .sample(&[("verdict", v.as_str())], 1.0);
    }
    if let Some(s) = sent {
        e.family(
            "wirespeed_probe_sent_bytes_per_second",
            Kind::Gauge,
            "Rate the sending end sent at (bytes/s; x8 for the bits/s iperf3 prints).",
        )
        .sample(&[], s.bits_per_second / 8.0);
        e.family(
            "wirespeed_probe_sent_bytes",
            Kind::Gauge,
            "Bytes the sending end sent.",
        )
        .sample(&[], s.bytes as f64);
        if let Some(n) = s.retransmits {
            e.family(
                "wirespeed_probe_retransmits",
                Kind::Gauge,
                "TCP segments the sending end retransmitted during the test.",
            )
            .sample(&[], n as f64);
        }
    }
    if let Some(s) = received {
        e.family(
            "wirespeed_probe_received_bytes_per_second",
            Kind::Gauge,
            "Rate the receiving end received at (bytes/s; x8 for the bits/s iperf3 prints).",
        )
        .sample(&[], s.bits_per_second / 8.0);
        e.family(
            "wirespeed_probe_received_bytes",
            Kind::Gauge,
            "Bytes the receiving end received.",
        )
        .sample(&[], s.bytes as f64);
    }
    let rtts: Vec<u64> = end
        .map(|e| {
            e.streams
                .iter()
                .filter_map(|s| s.sender.as_ref()?.mean_rtt)
                .collect()
        })
        .unwrap_or_default();
    if !rtts.is_empty() {
        let mean_us = rtts.iter().sum::<u64>() as f64 / rtts.len() as f64;
        e.family(
            "wirespeed_probe_rtt_seconds",
            Kind::Gauge,
            "Mean smoothed TCP round-trip time of the sending end's streams.",
        )
        .sample(&[], mean_us / 1e6);
    }
    if p.params.udp_rate.is_some() {
        if let Some(s) = end.and_then(|e| e.sum.as_ref().or(e.sum_received.as_ref())) {
            if let Some(j) = s.jitter_ms {
                e.family(
                    "wirespeed_probe_udp_jitter_seconds",
                    Kind::Gauge,
                    "UDP jitter the receiving end measured.",
                )
                .sample(&[], j / 1000.0);
            }
            if let (Some(lost), Some(total)) = (s.lost_packets, s.packets) {
                e.family(
                    "wirespeed_probe_udp_lost_packets",
                    Kind::Gauge,
                    "UDP datagrams lost on the way.",
                )
                .sample(&[], lost as f64);
                e.family(
                    "wirespeed_probe_udp_packets",
                    Kind::Gauge,
                    "UDP datagrams the sending end sent.",
                )
                .sample(&[], total as f64);
                e.family(
                    "wirespeed_probe_udp_loss_ratio",
                    Kind::Gauge,
                    "Share of UDP datagrams lost (0 to 1).",
                )
                .sample(
                    &[],
                    if total > 0 {
                        lost as f64 / total as f64
                    } else {
                        0.0
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> ProbeLimits {
        ProbeLimits::default()
    }

    #[test]
    fn targets() {
        assert_eq!(parse_target("h", 5201), Ok(("h".into(), 5201)));
        assert_eq!(parse_target("10.0.0.1:9", 5201), Ok(("10.0.0.1".into(), 9)));
        assert_eq!(parse_target("[::1]:7", 5201), Ok(("::1".into(), 7)));
        assert_eq!(parse_target("fe80::1", 5201), Ok(("fe80::1".into(), 5201)));
        for t in [
            "", "h:0", "h:70000", "[::1", "[x]:1", "a b", "-o", "h:", "[::1]x",
        ] {
            assert!(parse_target(t, 5201).is_err(), "{t:?}");
        }
        assert!(parse_target(&"a".repeat(300), 1).is_err());
    }

    #[test]
    fn probe_params() {
        let p = parse_probe(
            "target=10.1.2.3%3A6000&duration=3&streams=4&reverse=1&udp_rate=10M&bind=10.1.2.4",
            &lim(),
        )
        .unwrap();
        assert_eq!(
            p,
            ProbeParams {
                host: "10.1.2.3".into(),
                port: 6000,
                duration: 3,
                streams: 4,
                reverse: true,
                udp_rate: Some(10_000_000),
                bind: Some("10.1.2.4".parse().unwrap()),
            }
        );
        let d = parse_probe("target=h", &lim()).unwrap();
        assert_eq!((d.duration, d.streams, d.reverse), (5, 1, false));
    }

    #[test]
    fn hostile_queries() {
        for q in [
            "",
            "duration=3",
            "target=h&target=i",
            "target=h&duration=0",
            "target=h&duration=31",
            "target=h&duration=99999999999999",
            "target=h&streams=17",
            "target=h&reverse=maybe",
            "target=h&udp_rate=0",
            "target=h&udp_rate=lots",
            "target=h&bind=nowhere",
            "target=h&x=1",
            "target=%zz",
            "target=%ff%fe",
            "target=h%00",
        ] {
            assert!(parse_probe(q, &lim()).is_err(), "{q:?}");
        }
        let long = format!("target=h&{}", "a".repeat(MAX_QUERY));
        assert!(parse_probe(&long, &lim()).is_err());
    }

    #[test]
    fn slots_never_overlap() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let slots = Slots::default();
        let inside = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let got = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        if let Some(_g) = slots.acquire("eth0", Duration::from_secs(60)) {
                            let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            got.fetch_add(1, Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert_eq!(got.load(Ordering::SeqCst), 400);
    }

    #[test]
    fn busy_slot_is_refused_after_the_wait_and_other_keys_are_free() {
        let slots = Slots::default();
        let g = slots.acquire("eth0", Duration::ZERO).unwrap();
        assert!(slots.acquire("eth0", Duration::from_millis(20)).is_none());
        assert!(slots.acquire("eth1", Duration::ZERO).is_some());
        drop(g);
        assert!(slots.acquire("eth0", Duration::ZERO).is_some());
    }

    #[test]
    fn loopback_route_is_lo() {
        assert_eq!(local_interface("127.0.0.1:9".parse().unwrap(), None), "lo");
    }
}
