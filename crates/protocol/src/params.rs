//! The test parameters a client sends after `PARAM_EXCHANGE`, with iperf3's exact keys.

use serde_json::{Map, Value};

use crate::ext::{ParamsExt, EXT_KEY};
use crate::fields::{self, Obj};
use crate::frame::{self, JsonFrame, MAX_PARAMS_LEN};
use crate::WireError;

pub use wirespeed_model::Transport;

/// Who sends data, from the client's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// The client sends (iperf3's default).
    #[default]
    ClientToServer,
    /// `-R`: the server sends.
    ServerToClient,
    /// `--bidir`: both send, on separate streams.
    Both,
}

impl Direction {
    /// Whether stream `i` (0-based, in the order the client opened them) carries data from
    /// this end — the client's when `client` — to the other: with `--bidir` the client's first
    /// `parallel` streams are its sending ones, the rest the server's. One rule for both ends.
    pub fn stream_sends(self, i: usize, parallel: usize, client: bool) -> bool {
        let from_client = match self {
            Direction::ClientToServer => true,
            Direction::ServerToClient => false,
            Direction::Both => i < parallel,
        };
        from_client == client
    }
}

/// Upper bounds for numbers a peer may send. iperf3 checks the same keys (3.17+); the
/// stream count bound here is only what the wire format allows — servers apply their own
/// configured limits on top.
pub mod bounds {
    pub const MAX_TIME: i64 = 86_400;
    pub const MAX_OMIT: i64 = 600;
    pub const MAX_STREAMS: i64 = 1 << 20;
    pub const MAX_MSS: i64 = 9 * 1024;
    pub const MAX_WINDOW: i64 = 512 * 1024 * 1024;
    pub const MAX_BLOCK: i64 = 1 << 30;
    pub const MAX_BURST: i64 = 1000;
    pub const MAX_STRING: usize = 4096;
}

/// What a client is about to ask for, as far as a server checks it before it runs a test.
///
/// [`check_client`] applies the limits a wirespeed server (and iperf3's, which has the same
/// ones) would refuse, so the client can say why before it connects instead of reporting a
/// closed connection afterwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientChoices<'a> {
    /// `-t`, seconds.
    pub time: u32,
    /// `-O`, seconds.
    pub omit: u32,
    /// `-M`, bytes.
    pub mss: Option<u32>,
    /// `--burst` (UDP, datagrams).
    pub burst: Option<u32>,
    /// `-T`.
    pub title: Option<&'a str>,
    /// `--extra-data`.
    pub extra_data: Option<&'a str>,
    /// `-C`.
    pub congestion: Option<&'a str>,
}

/// A choice a server would refuse, in iperf3's words where iperf3 has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientCheckError {
    /// iperf3's `IEDURATION`.
    #[error("test duration valid values are 0 to {max} seconds (-t {got})")]
    Duration { got: u32, max: i64 },
    /// iperf3's `IEOMIT`.
    #[error("bogus value for --omit (maximum = {max} seconds) (-O {got})")]
    Omit { got: u32, max: i64 },
    /// iperf3's `IEMSS`.
    #[error("TCP MSS too large (maximum = {max} bytes) (-M {got})")]
    Mss { got: u32, max: i64 },
    /// iperf3's `IEBURST`.
    #[error("invalid burst count (maximum = {max}) (--burst {got})")]
    Burst { got: u32, max: i64 },
    /// A string the server would not accept: iperf3 has no words for it (its server
    /// refuses the whole parameters message with "unable to receive parameters from
    /// client").
    #[error("{option} too long: {got} bytes (maximum = {max} bytes)")]
    TooLong {
        option: &'static str,
        got: usize,
        max: usize,
    },
}

/// Check a client's choices against the limits servers apply to the parameters
/// ([`bounds`]); the first one over its limit is reported.
pub fn check_client(c: &ClientChoices<'_>) -> Result<(), ClientCheckError> {
    use bounds::*;
    if i64::from(c.time) > MAX_TIME {
        return Err(ClientCheckError::Duration {
            got: c.time,
            max: MAX_TIME,
        });
    }
    if i64::from(c.omit) > MAX_OMIT {
        return Err(ClientCheckError::Omit {
            got: c.omit,
            max: MAX_OMIT,
        });
    }
    if let Some(m) = c.mss.filter(|&m| i64::from(m) > MAX_MSS) {
        return Err(ClientCheckError::Mss {
            got: m,
            max: MAX_MSS,
        });
    }
    if let Some(b) = c.burst.filter(|&b| i64::from(b) > MAX_BURST) {
        return Err(ClientCheckError::Burst {
            got: b,
            max: MAX_BURST,
        });
    }
    for (option, v) in [
        ("title (-T)", c.title),
        ("extra data (--extra-data)", c.extra_data),
        ("congestion algorithm (-C)", c.congestion),
    ] {
        if let Some(v) = v.filter(|v| v.len() > MAX_STRING) {
            return Err(ClientCheckError::TooLong {
                option,
                got: v.len(),
                max: MAX_STRING,
            });
        }
    }
    Ok(())
}

/// The test parameters. Field names are iperf3's keys unless noted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestParams {
    /// `tcp` / `udp` (a `true` key each); TCP when none is present.
    pub transport: Transport,
    /// `sctp`: iperf3 can ask for SCTP; wirespeed decodes it to refuse it clearly (it then
    /// outranks `transport`, as the last of iperf3's three keys does).
    pub sctp: bool,
    /// `omit`: seconds at the start not counted.
    pub omit: u32,
    /// `server_affinity`: `-A`'s second number.
    pub server_affinity: Option<u32>,
    /// `time`: seconds; 0 with `num` or `blockcount` set.
    pub time: u32,
    /// `num`: bytes to send in total (`-n`), 0 = not set.
    pub num: u64,
    /// `blockcount`: blocks to send (`-k`), 0 = not set.
    pub blockcount: u64,
    /// `MSS` (`-M`).
    pub mss: Option<u32>,
    /// `nodelay` (`-N`).
    pub nodelay: bool,
    /// `parallel` (`-P`): streams per direction.
    pub parallel: u32,
    /// `reverse` / `bidirectional`.
    pub direction: Direction,
    /// `window` (`-w`): socket buffer bytes.
    pub window: Option<u32>,
    /// `len` (`-l`): block (TCP) or datagram (UDP) bytes.
    pub len: Option<u32>,
    /// `bandwidth` (`-b`): bits per second per stream, 0 = unlimited.
    pub bandwidth: Option<u64>,
    /// `fqrate` (`--fq-rate`): bits per second.
    pub fqrate: Option<u64>,
    /// `pacing_timer` (microseconds).
    pub pacing_timer: Option<u32>,
    /// `burst`.
    pub burst: Option<u32>,
    /// `TOS`.
    pub tos: Option<u32>,
    /// `flowlabel`.
    pub flowlabel: Option<u32>,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    /// `congestion` (`-C`).
    pub congestion: Option<String>,
    /// `congestion_used`: the client's algorithm.
    pub congestion_used: Option<String>,
    /// `get_server_output`.
    pub get_server_output: bool,
    /// `udp_counters_64bit`.
    pub udp_counters_64bit: bool,
    /// `repeating_payload`.
    pub repeating_payload: bool,
    /// `zerocopy` (`-Z`): iperf3 sends 1.
    pub zerocopy: Option<u32>,
    /// `dont_fragment`.
    pub dont_fragment: bool,
    /// `skip_rx_copy` (iperf3 3.19+).
    pub skip_rx_copy: bool,
    /// `authtoken`: iperf3's RSA authentication; wirespeed does not implement it.
    pub authtoken: Option<String>,
    /// `client_version`, e.g. `"3.12"`.
    pub client_version: Option<String>,
    /// wirespeed's extension; `Some` means the client is wirespeed.
    pub wirespeed: Option<ParamsExt>,
    /// Keys not listed above (iperf3 versions add some, e.g. `gso`, `mptcp`); kept verbatim.
    pub other: Map<String, Value>,
}

const KNOWN: &[&str] = &[
    "tcp",
    "udp",
    "sctp",
    "omit",
    "server_affinity",
    "time",
    "num",
    "blockcount",
    "MSS",
    "nodelay",
    "parallel",
    "reverse",
    "bidirectional",
    "window",
    "len",
    "bandwidth",
    "fqrate",
    "pacing_timer",
    "burst",
    "TOS",
    "flowlabel",
    "title",
    "extra_data",
    "congestion",
    "congestion_used",
    "get_server_output",
    "udp_counters_64bit",
    "repeating_payload",
    "zerocopy",
    "dont_fragment",
    "skip_rx_copy",
    "authtoken",
    "client_version",
    EXT_KEY,
];

fn u32_of(o: &Obj, key: &str, min: i64, max: i64) -> Result<Option<u32>, WireError> {
    Ok(fields::int(o, key, min, max)?.map(|v| v as u32))
}

impl TestParams {
    /// Parameters as a wirespeed client fills them before it sets its own values.
    pub fn new_tcp(time: u32, parallel: u32) -> TestParams {
        TestParams {
            time,
            parallel,
            ..TestParams::default()
        }
    }

    /// Decode a complete length-prefixed frame at the start of `buf`.
    pub fn decode_frame(buf: &[u8]) -> Result<(TestParams, usize), WireError> {
        let f = JsonFrame::new_checked(buf, MAX_PARAMS_LEN)?;
        Ok((TestParams::parse(f.payload())?, f.total_len()))
    }

    /// Parse the JSON payload (without the length prefix).
    pub fn parse(json: &[u8]) -> Result<TestParams, WireError> {
        use bounds::*;
        let o = frame::parse_object(json)?;
        let mut p = TestParams {
            transport: Transport::Tcp,
            ..TestParams::default()
        };
        // iperf3 applies tcp, then udp, then sctp: the last present wins.
        if fields::flag(&o, "tcp")? {
            p.transport = Transport::Tcp;
        }
        if fields::flag(&o, "udp")? {
            p.transport = Transport::Udp;
        }
        p.sctp = fields::flag(&o, "sctp")?;
        p.omit = u32_of(&o, "omit", 0, MAX_OMIT)?.unwrap_or(0);
        p.server_affinity = u32_of(&o, "server_affinity", 0, 1 << 20)?;
        p.time = u32_of(&o, "time", 0, i64::from(u32::MAX))?.unwrap_or(0);
        p.num = fields::uint(&o, "num", u64::MAX)?.unwrap_or(0);
        p.blockcount = fields::uint(&o, "blockcount", u64::MAX)?.unwrap_or(0);
        p.mss = u32_of(&o, "MSS", 0, MAX_MSS)?.filter(|&m| m != 0);
        p.nodelay = fields::flag(&o, "nodelay")?;
        p.parallel = u32_of(&o, "parallel", 1, MAX_STREAMS)?.unwrap_or(1);
        let reverse = fields::flag(&o, "reverse")?;
        let bidir = fields::flag(&o, "bidirectional")?;
        p.direction = match (reverse, bidir) {
            (_, true) => Direction::Both,
            (true, false) => Direction::ServerToClient,
            (false, false) => Direction::ClientToServer,
        };
        p.window = u32_of(&o, "window", 0, MAX_WINDOW)?.filter(|&w| w != 0);
        p.len = u32_of(&o, "len", 0, MAX_BLOCK)?.filter(|&l| l != 0);
        p.bandwidth = fields::uint(&o, "bandwidth", u64::MAX)?;
        p.fqrate = fields::uint(&o, "fqrate", u64::MAX)?;
        p.pacing_timer = u32_of(&o, "pacing_timer", 0, i64::from(u32::MAX))?;
        p.burst = u32_of(&o, "burst", 0, MAX_BURST)?;
        p.tos = u32_of(&o, "TOS", 0, 255)?;
        p.flowlabel = u32_of(&o, "flowlabel", 0, 0xf_ffff)?;
        p.title = fields::string(&o, "title", MAX_STRING)?;
        p.extra_data = fields::string(&o, "extra_data", MAX_STRING)?;
        p.congestion = fields::string(&o, "congestion", MAX_STRING)?;
        p.congestion_used = fields::string(&o, "congestion_used", MAX_STRING)?;
        p.get_server_output = fields::flag(&o, "get_server_output")?;
        p.udp_counters_64bit = fields::flag(&o, "udp_counters_64bit")?;
        p.repeating_payload = fields::flag(&o, "repeating_payload")?;
        p.zerocopy = u32_of(&o, "zerocopy", 0, i64::from(u32::MAX))?.filter(|&z| z != 0);
        p.dont_fragment = fields::flag(&o, "dont_fragment")?;
        p.skip_rx_copy = fields::flag(&o, "skip_rx_copy")?;
        p.authtoken = fields::string(&o, "authtoken", 64 * 1024)?;
        p.client_version = fields::string(&o, "client_version", MAX_STRING)?;
        p.wirespeed = match o.get(EXT_KEY) {
            None | Some(Value::Null) => None,
            Some(v) => Some(ParamsExt::from_value(v)?),
        };
        for (k, v) in o.iter() {
            if !KNOWN.contains(&k.as_str()) {
                p.other.insert(k.clone(), v.clone());
            }
        }
        Ok(p)
    }

    /// The JSON object in iperf3's key order. Flags are written only when set (iperf3 3.12
    /// treats a present flag as set whatever its value).
    pub fn to_json(&self) -> Value {
        let mut j = Map::new();
        let key = match self.transport {
            _ if self.sctp => "sctp",
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        };
        j.insert(key.into(), Value::Bool(true));
        j.insert("omit".into(), self.omit.into());
        if let Some(a) = self.server_affinity {
            j.insert("server_affinity".into(), a.into());
        }
        j.insert("time".into(), self.time.into());
        j.insert("num".into(), self.num.into());
        j.insert("blockcount".into(), self.blockcount.into());
        if let Some(m) = self.mss {
            j.insert("MSS".into(), m.into());
        }
        if self.nodelay {
            j.insert("nodelay".into(), Value::Bool(true));
        }
        j.insert("parallel".into(), self.parallel.into());
        match self.direction {
            Direction::ServerToClient => {
                j.insert("reverse".into(), Value::Bool(true));
            }
            Direction::Both => {
                j.insert("bidirectional".into(), Value::Bool(true));
            }
            Direction::ClientToServer => {}
        }
        let opt_num = |j: &mut Map<String, Value>, k: &str, v: Option<u64>| {
            if let Some(v) = v.filter(|&v| v != 0) {
                j.insert(k.into(), v.into());
            }
        };
        opt_num(&mut j, "window", self.window.map(u64::from));
        opt_num(&mut j, "len", self.len.map(u64::from));
        opt_num(&mut j, "bandwidth", self.bandwidth);
        opt_num(&mut j, "fqrate", self.fqrate);
        opt_num(&mut j, "pacing_timer", self.pacing_timer.map(u64::from));
        opt_num(&mut j, "burst", self.burst.map(u64::from));
        opt_num(&mut j, "TOS", self.tos.map(u64::from));
        opt_num(&mut j, "flowlabel", self.flowlabel.map(u64::from));
        let opt_str = |j: &mut Map<String, Value>, k: &str, v: &Option<String>| {
            if let Some(s) = v {
                j.insert(k.into(), Value::String(s.clone()));
            }
        };
        opt_str(&mut j, "title", &self.title);
        opt_str(&mut j, "extra_data", &self.extra_data);
        opt_str(&mut j, "congestion", &self.congestion);
        opt_str(&mut j, "congestion_used", &self.congestion_used);
        if self.get_server_output {
            j.insert("get_server_output".into(), 1.into());
        }
        if self.udp_counters_64bit {
            j.insert("udp_counters_64bit".into(), 1.into());
        }
        if self.repeating_payload {
            j.insert("repeating_payload".into(), 1.into());
        }
        opt_num(&mut j, "zerocopy", self.zerocopy.map(u64::from));
        if self.dont_fragment {
            j.insert("dont_fragment".into(), 1.into());
        }
        if self.skip_rx_copy {
            j.insert("skip_rx_copy".into(), 1.into());
        }
        opt_str(&mut j, "authtoken", &self.authtoken);
        opt_str(&mut j, "client_version", &self.client_version);
        for (k, v) in &self.other {
            j.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if let Some(e) = &self.wirespeed {
            if let Ok(v) = serde_json::to_value(e) {
                j.insert(EXT_KEY.into(), v);
            }
        }
        Value::Object(j)
    }

    /// The length-prefixed frame to send.
    pub fn encode_frame(&self) -> Result<Vec<u8>, WireError> {
        frame::encode(&self.to_json(), MAX_PARAMS_LEN)
    }

    /// Number of data connections the client opens: `parallel`, twice with `--bidir`.
    pub fn total_streams(&self) -> u64 {
        let p = u64::from(self.parallel.max(1));
        if self.direction == Direction::Both {
            2 * p
        } else {
            p
        }
    }

    /// The rate a TCP sender of these parameters paces each stream at: see [`tcp_pacing_rate`].
    pub fn tcp_pacing_rate(&self) -> Option<u64> {
        tcp_pacing_rate(self.fqrate, self.bandwidth)
    }

    /// The fair-queue pacing rate alone (`--fq-rate`; UDP paces `-b` on its own): see
    /// [`fq_pacing_rate`].
    pub fn fq_pacing_rate(&self) -> Option<u64> {
        fq_pacing_rate(self.fqrate)
    }
}

/// `--fq-rate` in bits per second as a socket pacing rate (`SO_MAX_PACING_RATE`, bytes per
/// second). `--fq-rate 0`, as in iperf3, means no fair-queue pacing: `None`, like no option.
pub fn fq_pacing_rate(fq_rate: Option<u64>) -> Option<u64> {
    fq_rate.filter(|&bits| bits > 0).map(|bits| bits / 8)
}

/// The pacing rate of one TCP stream, in bytes per second: `--fq-rate` when above 0, else the
/// target bitrate `-b` when above 0, else none. Both ends, and the client's "was this paced"
/// question at the end of the test, ask this one rule.
pub fn tcp_pacing_rate(fq_rate: Option<u64>, bandwidth: Option<u64>) -> Option<u64> {
    fq_pacing_rate(fq_rate).or_else(|| fq_pacing_rate(bandwidth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stream_sends_from_one_end() {
        for (d, want) in [
            (Direction::ClientToServer, [true, true, true, true]),
            (Direction::ServerToClient, [false, false, false, false]),
            (Direction::Both, [true, true, false, false]),
        ] {
            for (i, w) in want.into_iter().enumerate() {
                assert_eq!(d.stream_sends(i, 2, true), w, "{d:?} {i}");
                assert_eq!(d.stream_sends(i, 2, false), !w, "{d:?} {i}");
            }
        }
    }
    use crate::ext::ParamsExt;

    /// What `iperf3 -c ... -t 1 -P 4 -R -w 256K -J` (3.12) sends, captured shape.
    const IPERF312: &str = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":4,"reverse":true,"window":262144,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;

    #[test]
    fn pacing_rate_is_fq_rate_else_bitrate_and_zero_means_none() {
        let mbit = |m: u64| Some(m * 1_000_000);
        // (fqrate, bandwidth) -> TCP pacing in bytes per second, fq pacing alone
        let cases = [
            ((None, None), None, None),
            ((Some(0), None), None, None),
            ((None, Some(0)), None, None),
            ((Some(0), Some(0)), None, None),
            ((mbit(8), None), Some(1_000_000), Some(1_000_000)),
            ((None, mbit(16)), Some(2_000_000), None),
            ((mbit(8), mbit(16)), Some(1_000_000), Some(1_000_000)),
            // `--fq-rate 0` is no fair-queue pacing: `-b` applies, as with no `--fq-rate`
            ((Some(0), mbit(16)), Some(2_000_000), None),
        ];
        for ((fqrate, bandwidth), tcp, fq) in cases {
            let p = TestParams {
                fqrate,
                bandwidth,
                ..TestParams::default()
            };
            assert_eq!(p.tcp_pacing_rate(), tcp, "{fqrate:?} {bandwidth:?}");
            assert_eq!(tcp_pacing_rate(fqrate, bandwidth), tcp);
            assert_eq!(p.fq_pacing_rate(), fq, "{fqrate:?}");
        }
    }
    #[test]
    fn parses_iperf3_parameters() {
        let p = TestParams::parse(IPERF312.as_bytes()).unwrap();
        assert_eq!(p.transport, Transport::Tcp);
        assert_eq!(p.time, 1);
        assert_eq!(p.parallel, 4);
        assert_eq!(p.direction, Direction::ServerToClient);
        assert_eq!(p.window, Some(262_144));
        assert_eq!(p.len, Some(131_072));
        assert_eq!(p.pacing_timer, Some(1000));
        assert_eq!(p.client_version.as_deref(), Some("3.12"));
        assert!(p.wirespeed.is_none());
        assert_eq!(p.total_streams(), 4);
    }

    #[test]
    fn round_trips_with_extension_and_unknown_keys() {
        let mut p = TestParams::new_tcp(5, 8);
        p.direction = Direction::Both;
        p.num = 10_000_000_000;
        p.mss = Some(1400);
        p.nodelay = true;
        p.congestion = Some("cubic".into());
        p.zerocopy = Some(1);
        p.len = Some(1 << 20);
        p.client_version = Some("wirespeed 0.1.0".into());
        p.other.insert("gso".into(), 1.into());
        p.wirespeed = Some(ParamsExt {
            version: "0.1.0".into(),
            protocol: 1,
            server_cpus: Some(wirespeed_model::CpuSet::from_cpus([2, 3])),
            observe: true,
            drain: true,
            irq_cpus: Some(wirespeed_model::CpuSet::from_cpus([8])),
            ..ParamsExt::default()
        });
        let f = p.encode_frame().unwrap();
        let (q, used) = TestParams::decode_frame(&f).unwrap();
        assert_eq!(used, f.len());
        assert_eq!(q, p);
        assert_eq!(q.total_streams(), 16);
        // Key order is iperf3's.
        let s = String::from_utf8(f[4..].to_vec()).unwrap();
        assert!(s.starts_with(r#"{"tcp":true,"omit":0,"time":5,"num":10000000000,"blockcount":0,"MSS":1400,"nodelay":true,"parallel":8,"bidirectional":true"#), "{s}");
        assert!(!s.contains("reverse"));
    }

    #[test]
    fn refuses_wrong_types_and_ranges() {
        for bad in [
            r#"{"tcp":true,"parallel":0}"#,
            r#"{"tcp":true,"parallel":"4"}"#,
            r#"{"tcp":true,"time":-1}"#,
            r#"{"tcp":true,"omit":100000}"#,
            r#"{"tcp":true,"MSS":100000}"#,
            r#"{"tcp":true,"TOS":256}"#,
            r#"{"tcp":"yes"}"#,
            r#"{"title":7}"#,
            r#"{"wirespeed":{"version":3}}"#,
            r#"{"wirespeed":"x"}"#,
        ] {
            assert!(TestParams::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        // Defaults when almost nothing is sent: TCP, one stream.
        let p = TestParams::parse(b"{}").unwrap();
        assert_eq!(p.transport, Transport::Tcp);
        assert_eq!(p.parallel, 1);
    }

    #[test]
    fn client_checks_match_what_the_parser_refuses() {
        use bounds::*;
        let ok = ClientChoices {
            time: MAX_TIME as u32,
            omit: MAX_OMIT as u32,
            mss: Some(MAX_MSS as u32),
            burst: Some(MAX_BURST as u32),
            title: Some(&"t".repeat(MAX_STRING)),
            ..ClientChoices::default()
        };
        assert_eq!(check_client(&ok), Ok(()));
        let too_long = "x".repeat(MAX_STRING + 1);
        let cases: Vec<(ClientChoices, &str, &str)> = vec![
            (
                ClientChoices {
                    omit: 999_999,
                    ..ok
                },
                "bogus value for --omit (maximum = 600 seconds)",
                "omit",
            ),
            (
                ClientChoices {
                    mss: Some(99_999),
                    ..ok
                },
                "TCP MSS too large (maximum = 9216 bytes)",
                "MSS",
            ),
            (
                ClientChoices { time: 86_401, ..ok },
                "test duration valid values are 0 to 86400 seconds",
                "",
            ),
            (
                ClientChoices {
                    burst: Some(1001),
                    ..ok
                },
                "invalid burst count (maximum = 1000)",
                "burst",
            ),
            (
                ClientChoices {
                    title: Some(&too_long),
                    ..ok
                },
                "title (-T) too long: 4097 bytes",
                "title",
            ),
            (
                ClientChoices {
                    extra_data: Some(&too_long),
                    ..ok
                },
                "extra data (--extra-data) too long",
                "extra_data",
            ),
        ];
        for (c, words, key) in cases {
            let e = check_client(&c).unwrap_err().to_string();
            assert!(e.starts_with(words), "{e}");
            if key.is_empty() {
                continue; // the server checks the duration after parsing
            }
            // The same choice, sent anyway, is what a server's parser refuses.
            let p = TestParams {
                omit: c.omit,
                time: c.time,
                mss: c.mss,
                burst: c.burst,
                title: c.title.map(String::from),
                extra_data: c.extra_data.map(String::from),
                ..TestParams::new_tcp(c.time, 1)
            };
            let f = p.encode_frame().unwrap();
            let err = TestParams::decode_frame(&f).unwrap_err().to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn cjson_float_forms_are_read_as_integers() {
        let p = TestParams::parse(br#"{"udp":true,"num":1e+16,"bandwidth":1000000000.0,"time":0}"#)
            .unwrap();
        assert_eq!(p.transport, Transport::Udp);
        assert_eq!(p.num, 10_000_000_000_000_000);
        assert_eq!(p.bandwidth, Some(1_000_000_000));
    }

    #[test]
    fn an_sctp_request_is_read_apart_from_the_transport_and_written_back() {
        let p = TestParams::parse(br#"{"udp":true,"sctp":true,"time":1}"#).unwrap();
        assert!(p.sctp);
        assert_eq!(p.transport, Transport::Udp);
        let j = p.to_json();
        assert_eq!(j.get("sctp"), Some(&Value::Bool(true)));
        assert_eq!((j.get("udp"), j.get("tcp")), (None, None));
        let plain = TestParams::parse(br#"{"udp":true,"time":1}"#).unwrap();
        assert!(!plain.sctp);
        assert_eq!(plain.to_json().get("udp"), Some(&Value::Bool(true)));
    }
}
