//! The result model of one test, shaped exactly like iperf3's `-J` output.
//!
//! Field names, nesting and the order of keys follow what iperf3 prints, so a
//! tool that parses iperf3 JSON parses wirespeed's unchanged. Fields iperf3
//! prints only in some modes (TCP vs UDP, sender vs receiver, `--bidir`) are
//! `Option`s that are left out of the output when `None`, so the key set of a
//! TCP test differs from a UDP test exactly as iperf3's does.
//!
//! Every object also carries an `extra` map (flattened): keys this model does
//! not know (for example ones a newer iperf3 adds) survive a parse/serialize
//! round trip instead of being dropped.
//!
//! Floating point fields are written through [`crate::num`], which prints
//! integral values without a fraction (`"start": 0`, as iperf3's cJSON does)
//! and never writes NaN or infinities.
//!
//! wirespeed's own additions live under the single top-level key
//! `"wirespeed"` ([`WirespeedExt`]); iperf3 tools ignore it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wirespeed_model::{MoveReport, TestObservation, Verdict};

pub use wirespeed_model::Worker;

use crate::num;

/// Unknown keys of a JSON object, kept for round trips.
pub type Extra = Map<String, Value>;

/// The whole `-J` document of one test (iperf3's top-level object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// `start`: connection and test parameters.
    #[serde(default)]
    pub start: Start,
    /// `intervals`: one entry per reporting interval.
    #[serde(default)]
    pub intervals: Vec<Interval>,
    /// `end`: the summary. iperf3 prints `"end": {}` when a test failed early.
    #[serde(default)]
    pub end: End,
    /// `error`: present when the test failed; the rest holds what was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `title` (iperf3 `-T`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `extra_data` (iperf3 `--extra-data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// `server_output_json` (iperf3 `--get-server-output` with a JSON server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Value>,
    /// `server_output_text` (iperf3 `--get-server-output` with a text server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// wirespeed's additions, all under this one key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wirespeed: Option<WirespeedExt>,
    /// Unknown top-level keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Start {
    /// `connected`: one entry per data stream.
    #[serde(default)]
    pub connected: Vec<Connected>,
    /// `version`, e.g. `"iperf 3.12"`; wirespeed writes `"wirespeed 0.1.0"`.
    #[serde(default)]
    pub version: String,
    /// `system_info`: `uname -a` style line.
    #[serde(default)]
    pub system_info: String,
    /// `timestamp` of the control connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// `connecting_to` (client side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connecting_to: Option<HostPort>,
    /// `accepted_connection` (server side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_connection: Option<HostPort>,
    /// `cookie`: the 36-character test cookie (without its NUL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// `tcp_mss`: the MSS set with `-M` (TCP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_mss: Option<u64>,
    /// `tcp_mss_default`: the control socket's MSS when `-M` was not given (TCP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_mss_default: Option<u64>,
    /// `target_bitrate` in bit/s (0 = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bitrate: Option<u64>,
    /// `fq_rate` in bit/s (iperf3 3.16+ prints it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fq_rate: Option<u64>,
    /// `sock_bufsize`: the `-w` value (0 = not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sock_bufsize: Option<u64>,
    /// `sndbuf_actual`: SO_SNDBUF read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<u64>,
    /// `rcvbuf_actual`: SO_RCVBUF read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<u64>,
    /// `test_start`: the test parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_start: Option<TestStart>,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `start.connected`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connected {
    /// `socket`: iperf3's stream id (the file descriptor number in iperf3).
    pub socket: u32,
    pub local_host: String,
    pub local_port: u16,
    pub remote_host: String,
    pub remote_port: u16,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `start.timestamp`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timestamp {
    /// RFC 1123 time, e.g. `"Sun, 22 Nov 2026 07:56:40 GMT"`.
    pub time: String,
    /// Unix seconds.
    pub timesecs: i64,
    /// Unix milliseconds (iperf3 3.17+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timemillisecs: Option<i64>,
}

/// `start.connecting_to` / `start.accepted_connection`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

/// `start.test_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestStart {
    /// `"TCP"` or `"UDP"`.
    pub protocol: String,
    pub num_streams: u32,
    /// Block (`-l`) size in bytes.
    pub blksize: u64,
    /// `-O` seconds.
    pub omit: u64,
    /// `-t` seconds.
    pub duration: u64,
    /// `-n` bytes (0 = not set).
    pub bytes: u64,
    /// `-k` blocks (0 = not set).
    pub blocks: u64,
    /// 1 with `-R`, else 0 (iperf3 prints an integer, not a bool).
    pub reverse: u8,
    pub tos: u32,
    /// `-b` in bit/s.
    pub target_bitrate: u64,
    /// 1 with `--bidir` (iperf3 3.13+ prints it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bidir: Option<u8>,
    /// `--fq-rate` in bit/s (iperf3 3.13+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqrate: Option<u64>,
    /// `-i` seconds (iperf3 3.16+).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub interval: Option<f64>,
    /// UDP GSO in use (iperf3 3.20+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<u64>,
    /// UDP GRO in use (iperf3 3.20+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<u64>,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `intervals`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Per-stream figures for this interval.
    #[serde(default)]
    pub streams: Vec<IntervalStats>,
    /// The sum over streams of the forward direction.
    #[serde(default)]
    pub sum: IntervalStats,
    /// `--bidir`: the sum over the reverse-direction streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<IntervalStats>,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One stream's (or the sum's) figures for one interval: an element of
/// `intervals[].streams`, or `intervals[].sum` / `sum_bidir_reverse`
/// (which have no `socket` and no TCP_INFO fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalStats {
    /// Stream id; `None` for sums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    /// Seconds since the test started (after omit).
    #[serde(serialize_with = "num::f64")]
    pub start: f64,
    #[serde(serialize_with = "num::f64")]
    pub end: f64,
    /// Length of the interval in seconds.
    #[serde(serialize_with = "num::f64")]
    pub seconds: f64,
    pub bytes: u64,
    #[serde(serialize_with = "num::f64")]
    pub bits_per_second: f64,
    /// TCP sender: retransmits in this interval (`tcpi_total_retrans` delta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP sender, per stream: congestion window in bytes (`snd_cwnd * snd_mss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    /// TCP sender, per stream: peer's advertised window in bytes (`tcpi_snd_wnd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// TCP sender, per stream: smoothed RTT in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt: Option<u64>,
    /// TCP sender, per stream: RTT variance in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar: Option<u64>,
    /// TCP sender, per stream: path MTU in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u64>,
    /// TCP sender, per stream: reordering seen (iperf3 3.17+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<u64>,
    /// UDP receiver: jitter in milliseconds (RFC 3550).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub jitter_ms: Option<f64>,
    /// UDP receiver: packets lost (iperf3 may print negative with duplicates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: datagrams sent (sender) or expected (receiver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// UDP receiver: 100 * lost / packets.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub lost_percent: Option<f64>,
    /// Whether this interval falls in the `-O` omit period.
    #[serde(default)]
    pub omitted: bool,
    /// Whether the local end is the sender of this stream (or of the summed streams).
    #[serde(default)]
    pub sender: bool,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// One entry per stream; empty (and omitted) in the early-error case
    /// where iperf3 prints `"end": {}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<EndStream>,
    /// UDP: the receiver-side sum (iperf3 prints it before `sum_sent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_sent: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<Summary>,
    /// UDP `--bidir`: the reverse direction's `sum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_utilization_percent: Option<CpuUtilization>,
    /// TCP: congestion control algorithm of the sending end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
    /// TCP: congestion control algorithm of the receiving end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_tcp_congestion: Option<String>,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `end.streams`: TCP has `sender` and `receiver`, UDP has `udp`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndStream {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<Summary>,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A whole-test figure: `end.streams[].sender|receiver|udp` (with `socket`)
/// and `end.sum*` (without).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Stream id; `None` in sums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    #[serde(serialize_with = "num::f64")]
    pub start: f64,
    #[serde(serialize_with = "num::f64")]
    pub end: f64,
    #[serde(serialize_with = "num::f64")]
    pub seconds: f64,
    pub bytes: u64,
    #[serde(serialize_with = "num::f64")]
    pub bits_per_second: f64,
    /// TCP sender side: total retransmits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP sender side (iperf3 3.17+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<u64>,
    /// TCP sender, per stream: largest cwnd seen, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    /// TCP sender, per stream: largest send window seen, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snd_wnd: Option<u64>,
    /// TCP sender, per stream: RTT extremes and mean over interval samples, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rtt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rtt: Option<u64>,
    /// UDP: jitter in ms.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub jitter_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub lost_percent: Option<f64>,
    /// UDP per stream: datagrams that arrived out of order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<i64>,
    #[serde(default)]
    pub sender: bool,
    /// Unknown keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `end.cpu_utilization_percent`: "host" is the local end, "remote" the peer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUtilization {
    #[serde(serialize_with = "num::f64")]
    pub host_total: f64,
    #[serde(serialize_with = "num::f64")]
    pub host_user: f64,
    #[serde(serialize_with = "num::f64")]
    pub host_system: f64,
    #[serde(serialize_with = "num::f64")]
    pub remote_total: f64,
    #[serde(serialize_with = "num::f64")]
    pub remote_user: f64,
    #[serde(serialize_with = "num::f64")]
    pub remote_system: f64,
}

/// One interval of a running test as wirespeed sees it (the `--json-stream` event
/// `wirespeed_interval`, after each `interval`): this end's observation of the interval, the
/// latest one the peer sent (a wirespeed peer sends one per interval on the control connection;
/// it carries its own `start`/`end`), and the verdict over the intervals so far, which the
/// end-of-test verdict replaces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveEvent {
    /// This end's interval, seconds since the start of the test.
    pub start: f64,
    pub end: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<wirespeed_model::observation::IntervalObservation>,
    /// The interface this end's NIC counts are for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_iface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<wirespeed_model::observation::IntervalObservation>,
    /// The interface the peer's NIC counts are for, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_iface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_so_far: Option<Verdict>,
}

/// `client --wirespeed-json FILE`: a test's `wirespeed` section on its own, under the same key
/// as in the test's document.
#[derive(Debug, Clone, Serialize)]
pub struct WirespeedSection<'a> {
    pub wirespeed: Option<&'a WirespeedExt>,
}

/// Everything wirespeed adds, under the top-level key `"wirespeed"`.
///
/// Every section is typed with `wirespeed-model`'s types (the same ones the
/// protocol extension carries between the ends); keys this version does not
/// know are kept in `extra` and otherwise ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WirespeedExt {
    /// wirespeed's version, e.g. `"0.1.0"`.
    #[serde(default)]
    pub version: String,
    /// Send path that ran: e.g. `"copy"`, `"sendfile"`, `"splice"`, `"msg_zerocopy"`,
    /// `"sendmmsg"`, `"udp_gso"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path: Option<String>,
    /// Receive path that ran: e.g. `"copy"`, `"skip_copy"`, `"zerocopy"`, `"recvmmsg"`,
    /// `"udp_gro"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_path: Option<String>,
    /// The local end's pinned workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<Worker>,
    /// What we learned about the peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Peer>,
    /// The peer's workers when the peer is wirespeed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_workers: Vec<Worker>,
    /// Per-stream totals from both ends, including what iperf3's JSON has no
    /// key for (e.g. UDP receiver bytes per stream).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamTotals>,
    /// Per-CPU observation of this test, both ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<TestObservation>,
    /// What limited the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The path model's ceiling for the measured loss, RTT and MSS (TCP with retransmits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<wirespeed_model::PathCeiling>,
    /// What a bit cost at each end (CPU-seconds per Gbit, cycles per byte, by data path) and
    /// the cores the link's rate needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<wirespeed_model::Cost>,
    /// Why requested send or receive paths were not used (one line each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_fallbacks: Vec<String>,
    /// The send path that ran on the peer, when the peer is wirespeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_send_path: Option<String>,
    /// The receive path that ran on the peer, when the peer is wirespeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_recv_path: Option<String>,
    /// What the server (the peer) did with this client's tune request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_irq_move: Option<MoveReport>,
    /// What this server did with its client's tune request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_move: Option<MoveReport>,
    /// The command line that ran the test (the client's arguments, as given), so a page or a
    /// later reader can say what was run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Keys this version does not know (from a newer wirespeed's `-J` output).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One stream's whole-test totals as both ends counted them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamTotals {
    /// Stream id (`socket`).
    pub socket: u32,
    /// Whether the local end sent on this stream.
    pub sender: bool,
    /// Bytes the sending end counted (excluding the omit period).
    pub bytes_sent: u64,
    /// Bytes the receiving end counted (excluding the omit period).
    pub bytes_received: u64,
    /// UDP: datagrams the sender sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<i64>,
    /// UDP: datagrams the receiver expected (highest sequence seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_received: Option<i64>,
    /// UDP: lost datagrams as the receiver counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// UDP: out-of-order datagrams (receiver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<i64>,
    /// UDP: final jitter, ms (receiver).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::opt_f64"
    )]
    pub jitter_ms: Option<f64>,
}

/// What the local end knows about its peer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// True when the peer announced wirespeed's protocol extension.
    #[serde(default)]
    pub is_wirespeed: bool,
    /// The peer's version string when known (`client_version` or the extension's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl TestResult {
    /// Parse a `-J` document. Unlike `serde_json::from_str::<TestResult>`,
    /// this accepts the duplicate keys iperf3 itself writes (3.12 repeats
    /// `sock_bufsize`, `sndbuf_actual`, `rcvbuf_actual` once per stream in
    /// `start`): the last value wins, at the first key's position.
    pub fn from_json_str(s: &str) -> Result<TestResult, serde_json::Error> {
        let v: Value = serde_json::from_str(s)?;
        serde_json::from_value(v)
    }

    /// The verdict on the test, when it has one (under `wirespeed`).
    pub fn verdict(&self) -> Option<&Verdict> {
        self.wirespeed.as_ref()?.verdict.as_ref()
    }

    /// The verdict that says why the test ended early (a silent server, a black hole, ...):
    /// a failed test's error names it.
    pub fn ended_by(&self) -> Option<&Verdict> {
        self.verdict().filter(|v| v.id.ended_the_test())
    }

    /// `true` for UDP tests (from `start.test_start.protocol`).
    pub fn is_udp(&self) -> bool {
        self.start
            .test_start
            .as_ref()
            .is_some_and(|t| t.protocol.eq_ignore_ascii_case("UDP"))
    }

    /// `true` for `--bidir` tests: `test_start.bidir == 1`, or (iperf3 before
    /// 3.13, which does not print `bidir`) any interval with `sum_bidir_reverse`
    /// or an end with `sum_sent_bidir_reverse`.
    pub fn is_bidir(&self) -> bool {
        self.start
            .test_start
            .as_ref()
            .and_then(|t| t.bidir)
            .is_some_and(|b| b != 0)
            || self.intervals.iter().any(|i| i.sum_bidir_reverse.is_some())
            || self.end.sum_sent_bidir_reverse.is_some()
            || self.end.sum_bidir_reverse.is_some()
    }

    /// `true` for `-R` tests.
    pub fn is_reverse(&self) -> bool {
        self.start
            .test_start
            .as_ref()
            .is_some_and(|t| t.reverse != 0)
    }
}
