//! The verdict on a test: what limited it, in one line with the evidence. The verdict crate
//! decides it (`wirespeed_verdict`); both ends' reports carry it.

use serde::{Deserialize, Serialize};

pub use crate::rank::{Bound, Rank};

/// What limited a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Stable id (see [`VerdictId`]).
    pub id: VerdictId,
    /// The end it concerns, when it concerns one (`sender` or `receiver` in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<VerdictEnd>,
    /// The verdict in one line with the evidence.
    pub line: String,
    /// How it stands: bound, strength, row (absent in reports of earlier versions).
    #[serde(flatten)]
    pub standing: Standing,
    /// Further findings and notes that also hold, each with its id and strength where it is a
    /// finding (a report of an earlier version has plain lines: they read as notes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Also>,
    /// What the verdict rests on: the counters it read and how many intervals agreed, so a
    /// clear case can be told from a marginal one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// Other tasks took a significant share of the CPUs this test's workers ran on (the
    /// verdict's `also` says so in words, but for `cpu-contended`, whose own line says it): the
    /// verdict may be a consequence of that load. Absent where the host was quiet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<HostLoad>,
    /// `--bidir`: the direction this verdict judges (the slower one); the other direction's
    /// verdict is `other_direction` (and a line under `also`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Flow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_direction: Option<Box<Verdict>>,
}

impl Verdict {
    /// A verdict with its id, end and line, nothing else known yet.
    pub fn new(id: VerdictId, end: Option<VerdictEnd>, line: impl Into<String>) -> Verdict {
        Verdict {
            id,
            end,
            line: line.into(),
            standing: Standing::default(),
            also: Vec::new(),
            evidence: None,
            host_load: None,
            direction: None,
            other_direction: None,
        }
    }

    /// The `also` entries that are findings of their own (not notes), with their ids.
    pub fn also_findings(&self) -> impl Iterator<Item = &Also> {
        self.also.iter().filter(|a| a.id.is_some())
    }
}

/// How a finding stands against the test and against the other findings: the verdict and each
/// finding under its `also` carry one, its keys beside theirs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// How its own evidence relates to this test (see [`crate::precedence`]); absent in
    /// reports of earlier versions and in notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// How strongly the measurement shows that it bound this test, 0 to 1 (a CPU's saturated
    /// share, the rate's flatness, the window's fill, the share of datagrams lost ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<f64>,
    /// Its row in the precedence table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<Rank>,
}

/// What an `also` entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AlsoKind {
    /// A finding of a rule that did not lead (its `id`, `bound`, `strength`, `rank` set).
    Finding,
    /// `--bidir`: the other direction's verdict.
    OtherDirection,
    /// Other tasks took a share of the workers' CPUs (`host_load` says it typed).
    HostLoad,
    /// Loss was seen and did not bind, and why.
    Loss,
    /// A note that is no finding (what a zero-copy send did on one host, a report of an
    /// earlier version's line).
    #[default]
    Note,
}

/// One line under a verdict's `also`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Also {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<VerdictId>,
    pub kind: AlsoKind,
    pub line: String,
    /// How the finding stands (a note has none).
    #[serde(flatten)]
    pub standing: Standing,
    /// What the finding rests on (its counters, the intervals that agreed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// `--bidir`: the direction the line is about, where it is not the verdict's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Flow>,
}

impl Also {
    /// A note: a line that is no finding.
    pub fn note(kind: AlsoKind, line: impl Into<String>) -> Also {
        Also {
            id: None,
            kind,
            line: line.into(),
            standing: Standing::default(),
            evidence: None,
            direction: None,
        }
    }

    /// A finding that did not lead: `v`'s id, line, bound, strength, rank and evidence.
    pub fn finding(v: &Verdict) -> Also {
        Also {
            id: Some(v.id),
            kind: AlsoKind::Finding,
            line: v.line.clone(),
            standing: v.standing,
            evidence: v.evidence.clone(),
            direction: v.direction,
        }
    }

    /// The line.
    pub fn as_str(&self) -> &str {
        &self.line
    }
}

/// An `also` entry reads as its line (what a person reads; the rest is for tools).
impl std::ops::Deref for Also {
    type Target = str;

    fn deref(&self) -> &str {
        &self.line
    }
}

impl std::fmt::Display for Also {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl PartialEq<&str> for Also {
    fn eq(&self, other: &&str) -> bool {
        self.line == *other
    }
}

impl PartialEq<String> for Also {
    fn eq(&self, other: &String) -> bool {
        &self.line == other
    }
}

impl PartialEq<str> for Also {
    fn eq(&self, other: &str) -> bool {
        self.line == other
    }
}

/// An `also` entry as reports write it (an object) or as earlier versions did (a line).
impl<'de> Deserialize<'de> for Also {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Also, D::Error> {
        #[derive(Deserialize)]
        struct Object {
            #[serde(default)]
            id: Option<VerdictId>,
            #[serde(default)]
            kind: AlsoKind,
            line: String,
            #[serde(flatten)]
            standing: Standing,
            #[serde(default)]
            evidence: Option<Evidence>,
            #[serde(default)]
            direction: Option<Flow>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape {
            Line(String),
            Object(Object),
        }
        Ok(match Shape::deserialize(d)? {
            Shape::Line(line) => Also::note(AlsoKind::Note, line),
            Shape::Object(o) => Also {
                id: o.id,
                kind: o.kind,
                line: o.line,
                standing: Standing {
                    strength: o.standing.strength.filter(|s| s.is_finite()),
                    ..o.standing
                },
                evidence: o.evidence,
                direction: o.direction,
            },
        })
    }
}

/// A verdict's stable id: what `-J` carries as `wirespeed.verdict.id` (the contract;
/// `wirespeed_verdict` says when each holds, docs/explain.md describes each). The JSON
/// string is [`VerdictId::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictId {
    MtuBlackhole,
    PeerSilent,
    LineRate,
    BondMemberLimited,
    PmtuBelowMtu,
    MtuMismatch,
    CpuQuota,
    SameHost,
    UdpReceiverCpuBound,
    UdpForeignDatagrams,
    UdpPathLoss,
    AtTargetRate,
    LossLimited,
    CpuSteal,
    CpuContended,
    ReceiverSharesCpuWithSoftirq,
    IrqNumaRemote,
    AppNumaRemote,
    IrqCrossL3,
    ReceiverCpuBound,
    SenderCpuBound,
    SoftirqCpuBound,
    WindowLimited,
    SndbufLimited,
    PathLimited,
    NoCpuSaturated,
    /// An id this build does not know (a report a newer build wrote): read as `unknown`, so
    /// such a report can still be shown and compared. No verdict this build decides has it.
    #[serde(other)]
    Unknown,
}

impl VerdictId {
    /// The id as JSON and the text output write it (`window-limited`).
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictId::MtuBlackhole => "mtu-blackhole",
            VerdictId::PeerSilent => "peer-silent",
            VerdictId::LineRate => "line-rate",
            VerdictId::BondMemberLimited => "bond-member-limited",
            VerdictId::PmtuBelowMtu => "pmtu-below-mtu",
            VerdictId::MtuMismatch => "mtu-mismatch",
            VerdictId::CpuQuota => "cpu-quota",
            VerdictId::SameHost => "same-host",
            VerdictId::UdpReceiverCpuBound => "udp-receiver-cpu-bound",
            VerdictId::UdpForeignDatagrams => "udp-foreign-datagrams",
            VerdictId::UdpPathLoss => "udp-path-loss",
            VerdictId::AtTargetRate => "at-target-rate",
            VerdictId::LossLimited => "loss-limited",
            VerdictId::CpuSteal => "cpu-steal",
            VerdictId::CpuContended => "cpu-contended",
            VerdictId::ReceiverSharesCpuWithSoftirq => "receiver-shares-cpu-with-softirq",
            VerdictId::IrqNumaRemote => "irq-numa-remote",
            VerdictId::AppNumaRemote => "app-numa-remote",
            VerdictId::IrqCrossL3 => "irq-cross-l3",
            VerdictId::ReceiverCpuBound => "receiver-cpu-bound",
            VerdictId::SenderCpuBound => "sender-cpu-bound",
            VerdictId::SoftirqCpuBound => "softirq-cpu-bound",
            VerdictId::WindowLimited => "window-limited",
            VerdictId::SndbufLimited => "sndbuf-limited",
            VerdictId::PathLimited => "path-limited",
            VerdictId::NoCpuSaturated => "no-cpu-saturated",
            VerdictId::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for VerdictId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is no verdict id (see [`VerdictId::ALL`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVerdictId(pub String);

impl std::fmt::Display for UnknownVerdictId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown verdict id `{}`", self.0)
    }
}

impl std::error::Error for UnknownVerdictId {}

/// The end a verdict concerns, by its role in the direction judged: `sender` or `receiver` in
/// JSON. (An end that both sends and receives is named by the side the finding concerns.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictEnd {
    Sender,
    Receiver,
}

impl VerdictEnd {
    /// `sender`, `receiver`.
    pub fn word(self) -> &'static str {
        match self {
            VerdictEnd::Sender => "sender",
            VerdictEnd::Receiver => "receiver",
        }
    }
}

impl std::fmt::Display for VerdictEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// Which way data flowed, for a verdict on one direction of a `--bidir` test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flow {
    ClientToServer,
    ServerToClient,
}

impl Flow {
    /// `client → server`.
    pub fn words(self) -> &'static str {
        match self {
            Flow::ClientToServer => "client → server",
            Flow::ServerToClient => "server → client",
        }
    }

    /// The direction in which `end` sends.
    pub fn sent_by(end: End) -> Flow {
        match end {
            End::Client => Flow::ClientToServer,
            End::Server => Flow::ServerToClient,
        }
    }
}

/// Other tasks' load on the CPUs a test's workers ran on: each CPU where other tasks (not the
/// test's workers, softirq, irq or steal) took a significant share, averaged over the intervals
/// a worker ran there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// The busiest first.
    pub cpus: Vec<BusyCpu>,
    /// The deciding check sat near its threshold (or its intervals did not agree): under this
    /// load the verdict is marginal.
    #[serde(default)]
    pub marginal: bool,
}

/// One worker CPU that other tasks took a share of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusyCpu {
    /// The end whose worker ran on the CPU.
    pub end: LoadedEnd,
    pub cpu: u32,
    /// Other tasks' share of the CPU, %.
    pub others_pct: f64,
    /// The intervals a worker of that end ran on the CPU.
    pub intervals: u32,
}

/// Which end of a test a busy CPU's worker belonged to: its role in the direction judged, or,
/// for a `--bidir` test judged as a whole, this end or the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadedEnd {
    Sender,
    Receiver,
    ThisEnd,
    ThePeer,
}

impl LoadedEnd {
    /// `sender`, `receiver`, `this end`, `the peer`.
    pub fn words(self) -> &'static str {
        match self {
            LoadedEnd::Sender => "sender",
            LoadedEnd::Receiver => "receiver",
            LoadedEnd::ThisEnd => "this end",
            LoadedEnd::ThePeer => "the peer",
        }
    }
}

/// What a verdict rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The counters the deciding check read (`/proc/stat` per-CPU time, `TCP_INFO` fields, ...).
    pub counters: Vec<String>,
    /// The intervals in which the deciding condition held, of those judged; absent where the
    /// check reads whole-test counters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Agreement>,
    pub confidence: Confidence,
}

/// Intervals that agreed with the verdict, of those judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agreement {
    pub agreed: u32,
    pub of: u32,
}

/// How firmly the evidence holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// At least three quarters of the judged intervals agreed.
    Clear,
    /// Fewer did: the condition came and went, or sat near its threshold.
    Marginal,
    /// Whole-test counters only (no per-interval reading for this check).
    WholeTest,
}

impl Confidence {
    pub fn words(self) -> &'static str {
        match self {
            Confidence::Clear => "clear",
            Confidence::Marginal => "marginal",
            Confidence::WholeTest => "whole-test counters",
        }
    }
}

use crate::observation::BitsPerSecond;

/// What a test measured besides the observation (from its report), each when known: the
/// engine fills it from its report when it decides the verdict (`observe::measured`, which a
/// saved report read into the report's types passes through too).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// The receiver's throughput over the test.
    pub throughput: Option<BitsPerSecond>,
    /// The throughput in each interval, in order (a UDP sender's report leaves it empty: what
    /// it sent is not what arrived).
    pub interval_bps: Vec<f64>,
    /// A UDP test.
    pub udp: bool,
    /// TCP: segments retransmitted, bytes sent and the MSS (for the loss rate).
    pub retransmits: Option<u64>,
    pub bytes_sent: Option<u64>,
    pub mss: Option<u32>,
    /// TCP: the sender's smoothed RTT, µs: smallest, mean and largest seen.
    pub rtt_us: Option<(u64, u64, u64)>,
    /// UDP: datagrams lost and sent, as the receiver counted them (sent = the highest sequence
    /// number it saw).
    pub udp_lost: Option<(u64, u64)>,
    /// UDP: datagrams the sender itself counted sending, when its report is known: the
    /// receiver's sequence numbers can never go past it (a datagram that does was not this
    /// test's sender's).
    pub udp_sent: Option<u64>,
    /// The control connection stalled on a large message (the engine ended the test instead
    /// of waiting for the peer's results).
    pub control_stall: Option<ControlStall>,
    /// The peer went silent after the data phase began (its data or its results never came):
    /// this end gave up waiting and ended the test with what it measured.
    pub peer_silent: Option<PeerSilent>,
    /// TCP: the sending end's congestion control algorithm (`cubic`, `bbr`, ...), when known:
    /// the loss model describes loss-based algorithms only.
    pub congestion: Option<String>,
    /// The rate the test asked for (`-b`, per stream, times the streams of one direction), bit/s;
    /// `None` when unlimited.
    pub target_bps: Option<f64>,
    /// Bytes the receiver counted over the test (for the receiver's cost per bit).
    pub bytes_received: Option<u64>,
    /// The link rate the user named for the cost projection (`--rate`), bit/s; without it the
    /// projection uses a real interface's speed.
    pub rate_bps: Option<f64>,
    /// The zero-copy send path that ran at the sending end (`sendfile`, `splice`,
    /// `msg_zerocopy`), when one did.
    pub zero_copy_send: Option<String>,
    /// `--bidir`: this `Measured` is the client → server direction and `reverse` the
    /// server → client one (each from its own sums and intervals), and `local` says which end
    /// this report is: the verdict then judges each direction.
    pub reverse: Option<Box<Measured>>,
    pub local: Option<End>,
}

/// A control connection whose large message made no progress while small ones had got
/// through: its `TCP_INFO` when this end gave up waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlStall {
    /// Seconds since the message was sent.
    pub seconds: f64,
    /// Bytes of the message not acknowledged, as segments (`tcpi_unacked`), and retransmits
    /// since it was sent.
    pub unacked: u32,
    pub retransmits: u32,
    /// The connection's MSS and path MTU.
    pub mss: u32,
    pub pmtu: u32,
}

/// Which end of a test: the client (it opened the control connection) or the server. The one
/// client/server type of every crate (a silent peer, the PSK's seal of an end's results, the
/// end a result builder reports for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum End {
    Client,
    Server,
}

impl End {
    pub fn word(self) -> &'static str {
        match self {
            End::Client => "client",
            End::Server => "server",
        }
    }

    /// The other end (whose results this end checks).
    pub fn peer(self) -> End {
        match self {
            End::Client => End::Server,
            End::Server => End::Client,
        }
    }
}

/// What an end was waiting for from its peer when it gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SilentPhase {
    /// The data phase: the streams brought nothing for the receive timeout.
    Data,
    /// The results exchange: the peer's results message never came.
    Results,
}

impl SilentPhase {
    pub fn words(self) -> &'static str {
        match self {
            SilentPhase::Data => "data",
            SilentPhase::Results => "results",
        }
    }
}

/// A peer that went silent after the test began, as the waiting end saw it: what it waited
/// for, what flowed before, and what it knows of the path toward the peer. Small messages got
/// through (the test reached its data phase), so a large message that never comes points at
/// frames the path drops (see `wirespeed_verdict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerSilent {
    /// The silent end.
    pub peer: End,
    pub phase: SilentPhase,
    /// Seconds this end waited.
    pub seconds: f64,
    /// Bytes this end sent and received in the data phase.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The peer's MSS as this end's control connection had it when it opened: the peer's
    /// advertised MSS (capped by this end's own MTU), the size of the peer's full segments.
    pub peer_mss: Option<u32>,
    /// This end's path MTU toward the peer when it gave up (`TCP_INFO` of the control
    /// connection, lowered only by an ICMP "fragmentation needed" from the path).
    pub pmtu: Option<u32>,
    /// This end's own results message was acknowledged (the control connection had nothing
    /// un-acknowledged): the path toward the peer carried it.
    pub own_acked: bool,
}

/// IPv4 and TCP headers without options: a full segment of MSS `m` is a frame of `m + 40`.
pub const TCP_IP_HEADERS: u32 = 40;

impl PeerSilent {
    /// The peer's full segments do not fit the path MTU this end learned toward it: the peer
    /// can cross the path only if it learns the path MTU too (an ICMP "fragmentation needed"
    /// that reaches it). `(segment frame, path MTU)` when so.
    pub fn mtu_gap(&self) -> Option<(u32, u32)> {
        let (mss, pmtu) = (self.peer_mss?, self.pmtu?);
        let frame = mss + TCP_IP_HEADERS;
        (frame > pmtu).then_some((frame, pmtu))
    }
}

impl Measured {
    /// Only the throughput.
    pub fn throughput(t: Option<BitsPerSecond>) -> Measured {
        Measured {
            throughput: t,
            ..Default::default()
        }
    }

    /// The target rate of a test started with `start.test_start`'s `target_bitrate` (per stream)
    /// and `num_streams`: `None` when unlimited (0).
    pub fn target_of(target_bitrate: u64, num_streams: u32) -> Option<f64> {
        (target_bitrate > 0).then(|| target_bitrate as f64 * f64::from(num_streams.max(1)))
    }

    /// The TCP loss rate: retransmitted segments over segments sent.
    pub fn tcp_loss(&self) -> Option<f64> {
        let (r, b, m) = (self.retransmits?, self.bytes_sent?, self.mss?);
        let segments = b / u64::from(m.max(1));
        (segments > 0 && r > 0).then(|| r as f64 / segments as f64)
    }
}

/// What the path model says one loss-based TCP stream can do over the measured path: the
/// Mathis ceiling MSS / RTT × 1.22 / √p from the test's own retransmit rate, smallest RTT and
/// MSS, beside what was measured. The client prints it under its summary and `-J` carries it
/// under `wirespeed.ceiling`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathCeiling {
    /// The loss rate: segments retransmitted over segments sent.
    pub loss: f64,
    pub retransmits: u64,
    /// The smallest RTT the senders saw, ms.
    pub rtt_ms: f64,
    pub mss: u32,
    /// The Mathis ceiling, bits per second.
    pub mathis_bps: f64,
    /// The receiver's throughput, bits per second, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_bps: Option<f64>,
    /// `--bidir`: the direction whose figures these are (the one whose verdict the model
    /// informs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Flow>,
    /// `--bidir`, where both directions' models inform their verdicts: the other direction's
    /// model (with its own `direction`), printed as a `Path model:` line of its own. This one
    /// is then the slower direction's (the verdict's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_direction: Option<Box<PathCeiling>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_cpu_names_its_end_typed_in_kebab_case() {
        let c = BusyCpu {
            end: LoadedEnd::ThisEnd,
            cpu: 3,
            others_pct: 40.0,
            intervals: 2,
        };
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["end"], "this-end");
        assert_eq!(serde_json::from_value::<BusyCpu>(j).unwrap(), c);
        let words: Vec<_> = [
            LoadedEnd::Sender,
            LoadedEnd::Receiver,
            LoadedEnd::ThisEnd,
            LoadedEnd::ThePeer,
        ]
        .map(LoadedEnd::words)
        .into();
        assert_eq!(words, ["sender", "receiver", "this end", "the peer"]);
    }

    #[test]
    fn a_verdict_names_its_end_typed_with_the_same_json_strings() {
        for (end, word) in [
            (VerdictEnd::Sender, "sender"),
            (VerdictEnd::Receiver, "receiver"),
        ] {
            let v = Verdict::new(VerdictId::SenderCpuBound, Some(end), "l");
            let text = serde_json::to_string(&v).unwrap();
            assert!(text.contains(&format!(r#""end":"{word}""#)), "{text}");
            assert_eq!(serde_json::from_str::<Verdict>(&text).unwrap(), v);
            assert_eq!(end.word(), word);
        }
        // A verdict that concerns no end has no `end` key, and reads back as `None`.
        let none: Verdict = serde_json::from_str(r#"{"id":"path-limited","line":"l"}"#).unwrap();
        assert_eq!(none.end, None);
        assert!(!serde_json::to_string(&none).unwrap().contains("\"end\""));
        // A saved report's strings read into the types: an id this build does not know reads as
        // `Unknown`, an unknown end is refused.
        let saved: Verdict =
            serde_json::from_str(r#"{"id":"x","end":"receiver","line":"l"}"#).unwrap();
        assert_eq!(saved.end, Some(VerdictEnd::Receiver));
        assert_eq!(saved.id, VerdictId::Unknown);
        assert!(serde_json::from_str::<Verdict>(r#"{"id":"x","end":"both","line":"l"}"#).is_err());
    }

    /// The ids as they were strings (the JSON contract): each variant writes and reads its own.
    const ID_STRINGS: [&str; 26] = [
        "udp-foreign-datagrams",
        "mtu-blackhole",
        "peer-silent",
        "line-rate",
        "bond-member-limited",
        "pmtu-below-mtu",
        "mtu-mismatch",
        "cpu-quota",
        "udp-receiver-cpu-bound",
        "udp-path-loss",
        "at-target-rate",
        "path-limited",
        "same-host",
        "window-limited",
        "sndbuf-limited",
        "loss-limited",
        "receiver-shares-cpu-with-softirq",
        "cpu-contended",
        "irq-numa-remote",
        "app-numa-remote",
        "irq-cross-l3",
        "receiver-cpu-bound",
        "sender-cpu-bound",
        "softirq-cpu-bound",
        "cpu-steal",
        "no-cpu-saturated",
    ];

    #[test]
    fn every_verdict_id_writes_and_reads_its_contract_string() {
        for (id, s) in VerdictId::ALL.into_iter().zip(ID_STRINGS) {
            assert_eq!(id.as_str(), s);
            assert_eq!(id.to_string(), s);
            assert_eq!(
                serde_json::to_value(id).unwrap(),
                s,
                "serde and as_str disagree"
            );
            assert_eq!(serde_json::from_value::<VerdictId>(s.into()).unwrap(), id);
            assert_eq!(s.parse::<VerdictId>(), Ok(id));
        }
        let mut seen = std::collections::HashSet::new();
        assert!(VerdictId::ALL.into_iter().all(|id| seen.insert(id)));
        assert_eq!(serde_json::to_value(VerdictId::Unknown).unwrap(), "unknown");
        assert_eq!(VerdictId::Unknown.to_string(), "unknown");
    }

    #[test]
    fn an_id_this_build_does_not_know_reads_as_unknown_but_never_parses() {
        let newer: Verdict =
            serde_json::from_str(r#"{"id":"some-newer-limit","line":"l"}"#).unwrap();
        assert_eq!(newer.id, VerdictId::Unknown);
        assert_eq!(newer.line, "l");
        assert_eq!(
            "some-newer-limit".parse::<VerdictId>(),
            Err(UnknownVerdictId("some-newer-limit".into()))
        );
        assert!("unknown".parse::<VerdictId>().is_err());
        assert!("Window-Limited".parse::<VerdictId>().is_err());
    }

    #[test]
    fn also_is_typed_and_reads_earlier_reports_lines_as_notes() {
        let mut v = Verdict::new(VerdictId::PathLimited, None, "path-limited: flat");
        let mut same = Verdict::new(VerdictId::SameHost, None, "both ends on one host");
        same.standing.bound = Some(Bound::Fact);
        same.standing.strength = Some(0.18);
        same.standing.rank = Some(Rank::SharedCpus);
        v.also.push(Also::finding(&same));
        v.also
            .push(Also::note(AlsoKind::Loss, "loss seen but did not bind"));
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["also"][0]["id"], "same-host");
        assert_eq!(j["also"][0]["bound"], "fact");
        assert_eq!(j["also"][0]["rank"], "shared-cpus");
        assert_eq!(j["also"][1]["kind"], "loss");
        assert!(j["also"][1].get("id").is_none());
        assert_eq!(serde_json::from_value::<Verdict>(j).unwrap(), v);
        // an earlier version's `also` of plain lines
        let old: Verdict = serde_json::from_str(
            r#"{"id":"same-host","line":"l","also":["path-limited: 1.9 Gbit/s flat"]}"#,
        )
        .unwrap();
        assert_eq!(old.also[0].kind, AlsoKind::Note);
        assert_eq!(old.also[0].id, None);
        assert!(old.also[0].starts_with("path-limited"));
    }

    #[test]
    fn a_standing_writes_its_keys_where_the_verdict_and_its_findings_always_had_them() {
        let mut v = Verdict::new(VerdictId::PathLimited, Some(VerdictEnd::Sender), "flat");
        v.standing = Standing {
            bound: Some(Bound::Binding),
            strength: Some(0.5),
            rank: Some(Rank::Shaper),
        };
        let mut same = Verdict::new(VerdictId::SameHost, None, "one host");
        same.standing.bound = Some(Bound::Fact);
        v.also.push(Also::finding(&same));
        v.also.push(Also::note(AlsoKind::Note, "a note"));
        v.direction = Some(Flow::ClientToServer);
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(
            text,
            r#"{"id":"path-limited","end":"sender","line":"flat","bound":"binding","strength":0.5,"rank":"shaper","also":[{"id":"same-host","kind":"finding","line":"one host","bound":"fact"},{"kind":"note","line":"a note"}],"direction":"client-to-server"}"#
        );
        assert_eq!(serde_json::from_str::<Verdict>(&text).unwrap(), v);
        // a key this version does not know is passed over, beside the standing's
        let newer = text.replace(r#""bound":"binding","#, r#""bound":"binding","new":1,"#);
        assert_eq!(serde_json::from_str::<Verdict>(&newer).unwrap(), v);
    }
}
