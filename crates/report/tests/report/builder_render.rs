//! The engine's path: counters -> ResultBuilder -> model -> text/JSON, checked
//! against the layout of real iperf3 output (tests/data, see README.md there).

use wirespeed_model::{End, Transport};
use wirespeed_report::json::to_json_string;
use wirespeed_report::{
    Connected, CpuUtilization, EndInput, HostPort, PeerStream, ResultBuilder, Start, StreamSample,
    TcpSample, TestResult, TestStart, TextOptions, UdpSample, WirespeedExt, Worker,
};

use crate::common;

use common::{assert_same_layout, data, text};

fn client_start(protocol: &str, streams: &[(u32, u16)], omit: u64, duration: u64) -> Start {
    Start {
        connected: streams
            .iter()
            .map(|&(socket, port)| Connected {
                socket,
                local_host: "127.0.0.1".into(),
                local_port: port,
                remote_host: "127.0.0.1".into(),
                remote_port: 5611,
                extra: Default::default(),
            })
            .collect(),
        version: "wirespeed 0.1.0".into(),
        system_info: "Linux test".into(),
        connecting_to: Some(HostPort {
            host: "127.0.0.1".into(),
            port: 5611,
        }),
        cookie: Some("abcdefghijklmnopqrstuvwxyz0123456789".into()),
        test_start: Some(TestStart {
            protocol: protocol.into(),
            num_streams: streams.len() as u32,
            blksize: 131072,
            omit,
            duration,
            ..TestStart::default()
        }),
        ..Start::default()
    }
}

fn tcp(total_retrans: u64, cwnd: u64) -> Option<TcpSample> {
    Some(TcpSample {
        retransmits_total: total_retrans,
        snd_cwnd: cwnd,
        snd_wnd: Some(3 << 20),
        rtt_us: 50,
        rttvar_us: 10,
        pmtu: 65535,
        reorder: None,
    })
}

fn sample(id: u32, bytes: u64, tcp: Option<TcpSample>, udp: Option<UdpSample>) -> StreamSample {
    StreamSample {
        id,
        bytes,
        tcp,
        udp,
    }
}

#[test]
fn tcp_two_streams_with_omit_reads_like_iperf3() {
    let mut b = ResultBuilder::new(Transport::Tcp, End::Client, false, 1.0);
    b.add_stream(5, true).unwrap();
    b.add_stream(7, true).unwrap();
    let g = 1u64 << 30;
    // Omit second, then one real second (times restart at 0 after omit, as in iperf3).
    b.interval(
        0.0,
        1.0,
        true,
        &[
            sample(5, g, tcp(3, 2_480_000), None),
            sample(7, g + g / 10, tcp(3, 2_220_000), None),
        ],
    )
    .unwrap();
    b.interval(
        0.0,
        1.0,
        false,
        &[
            sample(5, g + 798_000_000, tcp(4, 785_000), None),
            sample(7, g + g / 10 + 761_000_000, tcp(3, 785_000), None),
        ],
    )
    .unwrap();
    let rep = b.end(&EndInput {
        local_elapsed: 1.0,
        peer_elapsed: Some(1.006),
        peer_streams: vec![
            PeerStream::from_iperf3(5, 799_000_000, -1, 0.0, 0, 0),
            PeerStream::from_iperf3(7, 762_000_000, -1, 0.0, 0, 0),
        ],
        cpu: CpuUtilization::default(),
        local_congestion: Some("cubic".into()),
        remote_congestion: Some("cubic".into()),
    });
    assert_eq!(
        rep.end.sum_sent.as_ref().unwrap().bytes,
        798_000_000 + 761_000_000
    );
    let result = TestResult {
        start: client_start("TCP", &[(5, 39302), (7, 39308)], 1, 1),
        intervals: b.take_intervals(),
        end: rep.end,
        wirespeed: Some(WirespeedExt {
            version: "0.1.0".into(),
            send_path: Some("copy".into()),
            recv_path: Some("copy".into()),
            workers: vec![Worker {
                cpu_requested: Some(0),
                cpus_seen: wirespeed_model::CpuSet::from_cpus([0]),
                streams: vec![5, 7],
                ..Worker::default()
            }],
            streams: rep.totals,
            ..WirespeedExt::default()
        }),
        ..TestResult::default()
    };
    let ours = text(&result);
    let real = data("tcp_omit_p2.txt").replace("port 5614", "port 5611");
    assert_same_layout("tcp_omit_p2", &real, &ours);
    assert!(ours.contains("(omitted)"));

    // The JSON has iperf3's keys plus one "wirespeed" key, and parses back.
    let j = to_json_string(&result);
    let back: TestResult = serde_json::from_str(&j).unwrap();
    assert_eq!(back, result);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["start", "intervals", "end", "wirespeed"]);
}

#[test]
fn udp_two_streams_reads_like_iperf3() {
    let mut b = ResultBuilder::new(Transport::Udp, End::Client, false, 1.0);
    b.add_stream(5, true).unwrap();
    b.add_stream(7, true).unwrap();
    let sent = |p| {
        Some(UdpSample {
            packets: p,
            ..UdpSample::default()
        })
    };
    b.interval(
        0.0,
        1.0,
        false,
        &[
            sample(5, 131072, None, sent(4)),
            sample(7, 131072, None, sent(4)),
        ],
    )
    .unwrap();
    let peer = |id| PeerStream::from_iperf3(id, 131072, -1, 0.0002, 0, 4);
    let rep = b.end(&EndInput {
        local_elapsed: 1.0,
        peer_elapsed: Some(1.0003),
        peer_streams: vec![peer(5), peer(7)],
        ..EndInput::default()
    });
    let result = TestResult {
        start: client_start("UDP", &[(5, 43464), (7, 48991)], 0, 1),
        intervals: b.take_intervals(),
        end: rep.end,
        wirespeed: Some(WirespeedExt {
            streams: rep.totals,
            ..WirespeedExt::default()
        }),
        ..TestResult::default()
    };
    let ours = text(&result);
    let real = data("udp_p2.txt");
    assert_same_layout("udp_p2", &real, &ours);
    assert!(
        ours.contains(
            "[SUM]   0.00-1.00   sec   256 KBytes  2.10 Mbits/sec  0.000 ms  0/8 (0%)  sender"
        ),
        "{ours}"
    );
    assert!(ours.contains("  0.200 ms  0/8 (0%)  receiver"), "{ours}");
}

#[test]
fn server_bidir_lists_receiving_streams_first() {
    let mut b = ResultBuilder::new(Transport::Tcp, End::Server, true, 1.0);
    b.add_stream(8, true).unwrap();
    b.add_stream(5, false).unwrap();
    b.interval(
        0.0,
        1.0,
        false,
        &[
            sample(5, 1_000_000_000, None, None),
            sample(8, 850_000_000, tcp(39, 3_000_000), None),
        ],
    )
    .unwrap();
    let rep = b.end(&EndInput {
        local_elapsed: 1.0,
        peer_elapsed: Some(1.0),
        peer_streams: vec![
            PeerStream::from_iperf3(5, 1_000_000_000, 18, 0.0, 0, 0),
            PeerStream::from_iperf3(8, 850_000_000, -1, 0.0, 0, 0),
        ],
        ..EndInput::default()
    });
    let mut start = client_start("TCP", &[(5, 5611), (8, 5611)], 0, 1);
    start.connecting_to = None;
    start.accepted_connection = Some(HostPort {
        host: "127.0.0.1".into(),
        port: 43482,
    });
    if let Some(t) = start.test_start.as_mut() {
        t.num_streams = 1;
        t.bidir = Some(1);
    }
    let result = TestResult {
        start,
        intervals: b.take_intervals(),
        end: rep.end,
        ..TestResult::default()
    };
    let ours = text(&result);
    let lines: Vec<&str> = ours.lines().collect();
    assert_eq!(lines[0], "Accepted connection from 127.0.0.1, port 43482");
    assert_eq!(
        lines[3],
        "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd"
    );
    assert!(
        lines[4].starts_with("[  5][RX-S]   0.00-1.00   sec   954 MBytes  8.00 Gbits/sec"),
        "{ours}"
    );
    assert!(
        lines[5].starts_with(
            "[  8][TX-S]   0.00-1.00   sec   811 MBytes  6.80 Gbits/sec   39   2.86 MBytes"
        ),
        "{ours}"
    );
    // A server prints only its own side of each stream, and no "iperf Done.".
    assert!(
        ours.contains(
            "[  5][RX-S]   0.00-1.00   sec   954 MBytes  8.00 Gbits/sec                  receiver"
        ),
        "{ours}"
    );
    assert!(
        ours.contains(
            "[  8][TX-S]   0.00-1.00   sec   811 MBytes  6.80 Gbits/sec   39             sender"
        ),
        "{ours}"
    );
    assert!(
        !ours.contains("[  5][RX-S]   0.00-1.00   sec   954 MBytes  8.00 Gbits/sec   18"),
        "{ours}"
    );
    assert!(!ours.contains("iperf Done."));
    // Compare the layout of the end with iperf3's server output of a bidir test.
    let real_server: TestResult = TestResult::from_json_str(&data("tcp_bidir.json")).unwrap();
    let real_text = real_server.server_output_text.unwrap();
    let real_end = &real_text[real_text.rfind("- - -").unwrap()..];
    let our_end = &ours[ours.rfind("- - -").unwrap()..];
    assert_same_layout("server bidir end", real_end, our_end);
}

#[test]
fn live_client_start_in_two_steps_equals_whole_start() {
    let mut start = client_start("TCP", &[(5, 40000)], 0, 1);
    start.test_start.as_mut().unwrap().reverse = 1;
    let ctx = wirespeed_report::TextContext::from_start(&start);
    let mut whole = Vec::new();
    wirespeed_report::TextRenderer::new(ctx, TextOptions::default())
        .start(&mut whole, &start)
        .unwrap();
    let mut live = Vec::new();
    wirespeed_report::text::write_connecting(&mut live, "127.0.0.1", 5611).unwrap();
    wirespeed_report::TextRenderer::new(ctx, TextOptions::default())
        .start_after_connecting(&mut live, &start)
        .unwrap();
    assert_eq!(
        String::from_utf8(live).unwrap(),
        String::from_utf8(whole).unwrap()
    );
    let real = data("tcp_rev.txt");
    let first3: Vec<&str> = real.lines().take(2).collect();
    let mut out = Vec::new();
    wirespeed_report::TextRenderer::new(ctx, TextOptions::default())
        .start(&mut out, &start)
        .unwrap();
    let ours = String::from_utf8(out).unwrap();
    let ours: Vec<&str> = ours.lines().take(2).collect();
    assert_eq!(ours, first3);
}
