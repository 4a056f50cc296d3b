//! Interoperability with Debian's iperf3, both ways: wirespeed client → iperf3 server and
//! iperf3 client → wirespeed server, for one stream, -P 4, -R, --bidir, -t, -n (both directions), -w, all with
//! -J. Both ends' JSON must agree on the byte totals; where wirespeed receives, it must have
//! received exactly what was sent (iperf3 as a receiver stops counting at TEST_END, so there
//! it may be a little below).

use crate::measure_common;

use measure_common::*;
use serde_json::Value;

struct Case {
    name: &'static str,
    args: &'static [&'static str],
    parallel: usize,
    reverse: bool,
    bidir: bool,
    bytes: Option<u64>,
    seconds: Option<f64>,
    window: Option<u64>,
}

/// A case with one stream, forward, checked only for agreeing totals.
const fn case(name: &'static str, args: &'static [&'static str]) -> Case {
    Case {
        name,
        args,
        parallel: 1,
        reverse: false,
        bidir: false,
        bytes: None,
        seconds: None,
        window: None,
    }
}

const CASES: &[Case] = &[
    case("one stream", &["-t", "1"]),
    Case {
        parallel: 4,
        ..case("-P 4", &["-t", "1", "-P", "4"])
    },
    Case {
        reverse: true,
        ..case("-R", &["-t", "1", "-R"])
    },
    Case {
        bidir: true,
        ..case("--bidir", &["-t", "1", "--bidir"])
    },
    Case {
        seconds: Some(2.0),
        ..case("-t 2", &["-t", "2"])
    },
    Case {
        bytes: Some(64 << 20),
        ..case("-n 64M", &["-n", "64M"])
    },
    Case {
        reverse: true,
        bytes: Some(32 << 20),
        ..case("-n 32M -R", &["-n", "32M", "-R"])
    },
    Case {
        window: Some(256 << 10),
        ..case("-w 256K", &["-t", "1", "-w", "256K"])
    },
];

/// The third (maximum) field of a `tcp_wmem`/`tcp_rmem` sysctl, bytes.
fn tcp_mem_max(name: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .ok()
        .and_then(|t| t.split_whitespace().nth(2).and_then(|v| v.parse().ok()))
        .unwrap_or_else(|| panic!("/proc/sys/net/ipv4/{name}: no maximum"))
}

/// Check one direction: `sent` by one end, `received` by the other, over `streams` streams.
///
/// wirespeed reads until the sender's last byte. iperf3 stops reading its data sockets when
/// the test ends, so what the sender wrote but iperf3 never read is still in the kernel's
/// buffers: at most the sender's send buffer and the receiver's receive buffer per stream
/// (each bounded by the `tcp_wmem`/`tcp_rmem` maximum). The shortfall may be that, never more —
/// a bound from the kernel, not from how fast a loaded machine ran.
fn check_direction(what: &str, sent: u64, received: u64, receiver: Side, streams: usize) {
    assert!(sent > 0, "{what}: nothing sent");
    assert!(received > 0, "{what}: nothing received");
    assert!(
        received <= sent,
        "{what}: received {received} > sent {sent}"
    );
    match receiver {
        Side::Wirespeed => assert_eq!(
            received, sent,
            "{what}: wirespeed received {received} of {sent} bytes"
        ),
        Side::Iperf3 => {
            // SO_SNDBUF/SO_RCVBUF are doubled by the kernel for its bookkeeping.
            let buffered = 2 * (tcp_mem_max("tcp_wmem") + tcp_mem_max("tcp_rmem"));
            let bound = streams as u64 * buffered;
            assert!(
                sent - received <= bound,
                "{what}: iperf3 received {received} of {sent}: {} bytes missing, more than \
                 {streams} stream(s) × {buffered} bytes of socket buffers can hold",
                sent - received
            );
        }
    }
}

fn check(case: &Case, client: Side, server: Side, cj: &Value, sj: &Value) {
    let tag = format!("{} ({client:?} client, {server:?} server)", case.name);
    assert_no_error(cj, sj, &tag);
    let n_streams = case.parallel * if case.bidir { 2 } else { 1 };
    assert_eq!(
        cj["end"]["streams"].as_array().map(Vec::len),
        Some(n_streams),
        "{tag}: client end.streams"
    );
    assert_eq!(
        sj["end"]["streams"].as_array().map(Vec::len),
        Some(n_streams),
        "{tag}: server end.streams"
    );

    // Every total both JSON documents know must be the same number.
    let (c, s) = (totals(cj), totals(sj));
    for k in 0..4 {
        if let (Some(a), Some(b)) = (c[k], s[k]) {
            if a > 0 && b > 0 {
                assert_eq!(
                    a, b,
                    "{tag}: total #{k} differs between the ends: client {a}, server {b}"
                );
            }
        }
    }
    // The client's document has all of them after the results exchange.
    let fwd_receiver = if case.reverse { client } else { server };
    check_direction(
        &format!("{tag} forward"),
        c[0].unwrap_or(0),
        c[1].unwrap_or(0),
        fwd_receiver,
        case.parallel,
    );
    if case.bidir {
        check_direction(
            &format!("{tag} reverse"),
            c[2].unwrap_or(0),
            c[3].unwrap_or(0),
            client,
            case.parallel,
        );
    }
    if let Some(n) = case.bytes {
        let sent = c[0].unwrap_or(0);
        assert!(
            sent >= n && sent < n + 2 * 131_072,
            "{tag}: -n {n} sent {sent}"
        );
        let sender = if case.reverse { server } else { client };
        if sender == Side::Wirespeed {
            assert_eq!(sent, n, "{tag}: wirespeed sends exactly -n bytes");
        }
    }
    if let Some(t) = case.seconds {
        let secs = cj["end"]["sum_sent"]["seconds"].as_f64().unwrap_or(0.0);
        assert!(
            secs >= t * 0.9 && secs <= t + 1.0,
            "{tag}: -t {t} lasted {secs} s"
        );
    }
    if let Some(w) = case.window {
        for (j, side) in [(cj, client), (sj, server)] {
            if side == Side::Wirespeed {
                assert_eq!(
                    j["start"]["sock_bufsize"].as_u64(),
                    Some(w),
                    "{tag}: sock_bufsize"
                );
                assert!(
                    j["start"]["sndbuf_actual"].as_u64().unwrap_or(0) > 0,
                    "{tag}: sndbuf_actual"
                );
            }
        }
    }
    // Who is who: the extension says so.
    for (j, me, peer) in [(cj, client, server), (sj, server, client)] {
        if me == Side::Wirespeed {
            assert_eq!(
                j["wirespeed"]["peer"]["is_wirespeed"].as_bool(),
                Some(peer == Side::Wirespeed),
                "{tag}: peer detection"
            );
        }
    }
}

fn run_case(case: &Case, client: Side, server: Side) {
    let what = format!("{}: {client:?} client", case.name);
    let (cj, sj) = one_off_json(client, server, case.args, &what);
    check(case, client, server, &cj, &sj);
    eprintln!(
        "ok: {} ({client:?} -> {server:?}): totals client {:?} server {:?}",
        case.name,
        totals(&cj),
        totals(&sj)
    );
}

/// Every case between these two ends; with iperf3 at either end, skipped (saying so) when it
/// is not installed.
fn run_all(test: &str, client: Side, server: Side) {
    if (client == Side::Iperf3 || server == Side::Iperf3) && !have_iperf3(test) {
        return;
    }
    for case in CASES {
        run_case(case, client, server);
    }
}

#[test]
fn wirespeed_client_with_iperf3_server() {
    run_all(
        "wirespeed_client_with_iperf3_server",
        Side::Wirespeed,
        Side::Iperf3,
    );
}

#[test]
fn iperf3_client_with_wirespeed_server() {
    run_all(
        "iperf3_client_with_wirespeed_server",
        Side::Iperf3,
        Side::Wirespeed,
    );
}

#[test]
fn wirespeed_both_ends_agree_exactly() {
    run_all(
        "wirespeed_both_ends_agree_exactly",
        Side::Wirespeed,
        Side::Wirespeed,
    );
}
