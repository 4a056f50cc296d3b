//! Building the messages and the report of one end from what its data phase counted:
//! `start`, the results this end sends, and the final [`TestResult`].

use wirespeed_protocol::{ResultsExt, StreamResult, TestResults};
use wirespeed_report::builder::{EndInput, PeerStream, ResultBuilder};
use wirespeed_report::{Connected, CpuUtilization, End, Peer, TestStart, WirespeedExt, Worker};

use crate::data::{DataPhase, DataSocket, WorkerSummary};
use crate::observe::TestObserver;
use crate::usage::CpuPercent;

/// wirespeed's version string.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `start.connected` entries for the data sockets, in stream-id order.
pub fn connected(streams: &[(u32, &DataSocket)]) -> Vec<Connected> {
    streams
        .iter()
        .filter_map(|(id, s)| {
            let l = s.local_addr().ok()?;
            let r = s.peer_addr().ok()?;
            Some(Connected {
                socket: *id as _,
                local_host: crate::net::canonical_ip(l.ip()).to_string(),
                local_port: l.port(),
                remote_host: crate::net::canonical_ip(r.ip()).to_string(),
                remote_port: r.port(),
                extra: Default::default(),
            })
        })
        .collect()
}

/// What the local end sends in the results exchange.
pub fn local_results(
    data: &DataPhase,
    cpu: CpuPercent,
    measured: f64,
    congestion: Option<String>,
    ext: Option<ResultsExt>,
) -> TestResults {
    let totals = data.stream_totals();
    let has_send = totals.iter().any(|t| t.send);
    let has_retr = totals.iter().any(|t| t.send && t.retransmits.is_some());
    let sender_has_retransmits = if !has_send {
        -1
    } else if has_retr {
        1
    } else {
        0
    };
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    TestResults {
        cpu_util_total: cpu.total,
        cpu_util_user: cpu.user,
        cpu_util_system: cpu.system,
        sender_has_retransmits,
        congestion_used: congestion,
        streams: totals
            .iter()
            .map(|t| StreamResult {
                id: t.id,
                bytes: t.bytes,
                retransmits: if t.send {
                    t.retransmits.map_or(-1, i)
                } else {
                    -1
                },
                // iperf3 keeps jitter in seconds on the wire.
                jitter: t.jitter_ms.map_or(0.0, |j| j / 1000.0),
                errors: t.lost.map_or(0, i),
                omitted_errors: Some(0),
                packets: t.packets.map_or(0, i),
                omitted_packets: Some(i(data.omitted_packets(t.id))),
                start_time: Some(0.0),
                end_time: Some(measured.max(0.0)),
            })
            .collect(),
        server_output_json: None,
        server_output_text: None,
        wirespeed: ext,
    }
}

/// The peer's per-stream results in the report builder's terms.
pub fn peer_streams(r: &TestResults) -> Vec<PeerStream> {
    r.streams
        .iter()
        .map(|s| {
            PeerStream::from_iperf3(s.id, s.bytes, s.retransmits, s.jitter, s.errors, s.packets)
        })
        .collect()
}

/// The peer's elapsed time (iperf3 takes it from the streams' `end_time - start_time`).
pub fn peer_elapsed(r: &TestResults) -> Option<f64> {
    r.streams
        .iter()
        .filter_map(|s| Some(s.end_time? - s.start_time.unwrap_or(0.0)))
        .filter(|d| d.is_finite() && *d > 0.0)
        .reduce(f64::max)
}

/// Workers as the extension reports them.
pub fn worker_infos(reports: &[WorkerSummary]) -> Vec<Worker> {
    reports
        .iter()
        .filter(|r| !r.streams.is_empty())
        .map(|r| Worker {
            cpu_requested: r.cpu_requested,
            paired: r.paired,
            cpus_seen: r.cpus_seen.clone(),
            streams: r.streams.clone(),
            rx_zerocopy: r.rx_zerocopy,
            wake: r.wake,
            tid: r.tid,
        })
        .collect()
}

/// The paths that ran (after fallbacks), joined when workers differ.
pub fn paths(reports: &[WorkerSummary]) -> (Option<String>, Option<String>) {
    let mut send: Vec<&str> = reports.iter().filter_map(|r| r.send_path).collect();
    send.sort_unstable();
    send.dedup();
    let mut recv: Vec<&str> = reports.iter().filter_map(|r| r.recv_path).collect();
    recv.sort_unstable();
    recv.dedup();
    let j = |v: Vec<&str>| (!v.is_empty()).then(|| v.join("+"));
    (j(send), j(recv))
}

/// Why requested paths were not used (one line each, deduplicated).
pub fn fallbacks(reports: &[WorkerSummary]) -> Vec<String> {
    let mut v: Vec<String> = reports
        .iter()
        .flat_map(|r| r.fallbacks.iter().cloned())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The extension this end sends with its results.
pub fn results_ext(reports: &[WorkerSummary]) -> ResultsExt {
    let (send_path, recv_path) = paths(reports);
    ResultsExt {
        version: VERSION.into(),
        protocol: wirespeed_protocol::ext::EXT_PROTOCOL_VERSION,
        workers: worker_infos(reports),
        send_path,
        recv_path,
        observation: None,
        observation_error: None,
        irq_move: None,
        psk: None,
        extra: Default::default(),
    }
}

/// The report's `wirespeed` section.
pub fn report_ext(
    reports: &[WorkerSummary],
    peer: Option<&ResultsExt>,
    peer_client_version: Option<&str>,
    peer_is_wirespeed: bool,
) -> WirespeedExt {
    let (send_path, recv_path) = paths(reports);
    WirespeedExt {
        version: VERSION.into(),
        send_path,
        recv_path,
        workers: worker_infos(reports),
        peer: Some(Peer {
            is_wirespeed: peer_is_wirespeed || peer.is_some(),
            version: peer
                .map(|p| p.version.clone())
                .or_else(|| peer_client_version.map(str::to_string)),
        }),
        remote_workers: peer.map(|p| p.workers.clone()).unwrap_or_default(),
        path_fallbacks: fallbacks(reports),
        remote_send_path: peer.and_then(|p| p.send_path.clone()),
        remote_recv_path: peer.and_then(|p| p.recv_path.clone()),
        remote_irq_move: peer.and_then(|p| p.irq_move.clone()),
        ..WirespeedExt::default()
    }
}

/// What one end knows when it builds its final report: its own counts and the peer's results.
pub struct EndSide<'a> {
    /// Seconds this end measured (after omit).
    pub measured: f64,
    /// This end's CPU utilisation.
    pub cpu: CpuPercent,
    /// This end's data phase, when it started.
    pub data: Option<&'a DataPhase>,
    /// The peer's results from the exchange, when they came.
    pub peer: Option<&'a TestResults>,
    /// The client's version from its parameters (server side only).
    pub peer_client_version: Option<&'a str>,
    /// The peer said it is wirespeed before the results (server side only).
    pub peer_is_wirespeed: bool,
    /// This end's observation of where the work ran.
    pub observer: &'a TestObserver,
    /// The rate the test asked for (all streams of one direction), bit/s, when limited.
    pub target_bps: Option<f64>,
    /// The link rate the user named for the cost projection (`--rate`, client only), bit/s.
    pub rate_bps: Option<f64>,
}

/// The report's `end` and `wirespeed` sections, the same on both ends: CPU utilisation
/// and congestion control of this end and the peer, per-stream totals of both ends, and
/// where the work ran with its verdict.
pub fn end_sections(b: &ResultBuilder, side: &EndSide<'_>) -> (End, WirespeedExt) {
    let peer = side.peer;
    let input = EndInput {
        local_elapsed: side.measured,
        peer_elapsed: peer.and_then(peer_elapsed),
        peer_streams: peer.map(peer_streams).unwrap_or_default(),
        cpu: CpuUtilization {
            host_total: side.cpu.total,
            host_user: side.cpu.user,
            host_system: side.cpu.system,
            remote_total: peer.map_or(0.0, |p| p.cpu_util_total),
            remote_user: peer.map_or(0.0, |p| p.cpu_util_user),
            remote_system: peer.map_or(0.0, |p| p.cpu_util_system),
        },
        local_congestion: side.data.and_then(DataPhase::congestion),
        remote_congestion: peer.and_then(|p| p.congestion_used.clone()),
    };
    let rep = b.end(&input);
    let peer_ext = peer.and_then(|p| p.wirespeed.as_ref());
    let reports = side.data.map_or(&[][..], DataPhase::summaries);
    let mut ext = report_ext(
        reports,
        peer_ext,
        side.peer_client_version,
        side.peer_is_wirespeed,
    );
    ext.streams = rep.totals;
    // Where the work ran: this end's observation, the peer's when it is wirespeed
    // (absent, and said so, when it is iperf3), and the verdict.
    let udp = side.data.is_some_and(DataPhase::is_udp);
    let (role, bidir) = b.role();
    let mut measured = if bidir {
        crate::observe::measured_bidir(
            udp,
            &rep.end,
            b.intervals(),
            side.observer.mss(),
            role == wirespeed_model::End::Client,
        )
    } else {
        crate::observe::measured(udp, &rep.end, b.intervals(), side.observer.mss())
    };
    measured.control_stall = side.observer.stall().cloned();
    measured.peer_silent = side.observer.silent().cloned();
    let zero_copy = |p: &Option<String>| {
        p.clone()
            .filter(|p| wirespeed_model::cost::is_zero_copy_send(p))
    };
    let zero_copy_send = zero_copy(&ext.send_path).or_else(|| zero_copy(&ext.remote_send_path));
    // the test's own figures hold for each direction of a `--bidir` test
    let own = |m: &mut wirespeed_model::verdict::Measured| {
        m.target_bps = side.target_bps;
        m.rate_bps = side.rate_bps;
        m.zero_copy_send = zero_copy_send.clone();
    };
    own(&mut measured);
    if let Some(r) = measured.reverse.as_deref_mut() {
        own(r);
    }
    side.observer.attach(&mut ext, peer_ext, &measured);
    (rep.end, ext)
}

/// `start.test_start`.
#[allow(clippy::too_many_arguments)]
pub fn test_start(
    protocol: &str,
    parallel: u32,
    block_len: u64,
    omit: u32,
    duration: u32,
    bytes: u64,
    blocks: u64,
    reverse: bool,
    bidir: bool,
    interval: f64,
) -> TestStart {
    TestStart {
        protocol: protocol.into(),
        num_streams: parallel,
        blksize: block_len,
        omit: u64::from(omit),
        duration: u64::from(duration),
        bytes,
        blocks,
        reverse: u8::from(reverse),
        tos: 0,
        target_bitrate: 0,
        bidir: Some(u8::from(bidir)),
        fqrate: Some(0),
        interval: Some(interval),
        gso: None,
        gro: None,
        extra: Default::default(),
    }
}
