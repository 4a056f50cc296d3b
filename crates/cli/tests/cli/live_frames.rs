//! Live frames between the ends of a test (docs/protocol.md, "Live frames"), with the control
//! connection recorded by a forwarding proxy on a free port:
//! - wirespeed ↔ wirespeed: the client's `--json-stream` carries, per interval, a
//!   `wirespeed_interval` event with the server's CPUs of an interval while the test runs and
//!   the verdict so far; the control connection carries live frames both ways;
//! - wirespeed client → iperf3 server and iperf3 client → wirespeed server: the control bytes
//!   are exactly iperf3's sequence, not one byte more.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use wirespeed_protocol::live::{LiveInterval, LIVE_MARKER};

use crate::measure_common::*;

/// Bytes of one proxied connection: client to server, server to client.
#[derive(Default, Clone)]
struct Conn {
    up: Vec<u8>,
    down: Vec<u8>,
    /// Directions that reached their end.
    closed: u8,
}

/// Forwards every connection on its port to `target`, recording the bytes both ways.
struct Proxy {
    port: u16,
    log: Arc<Mutex<Vec<Arc<Mutex<Conn>>>>>,
}

fn pump(mut from: TcpStream, mut to: TcpStream, rec: Arc<Mutex<Conn>>, up: bool) {
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let mut c = rec.lock().unwrap();
            // The control connection is small; a data connection's bytes are not kept.
            let v = if up { &mut c.up } else { &mut c.down };
            if v.len() < (1 << 20) {
                v.extend_from_slice(&buf[..n]);
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    rec.lock().unwrap().closed += 1;
}

impl Proxy {
    fn start(target: u16) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let log: Arc<Mutex<Vec<Arc<Mutex<Conn>>>>> = Arc::default();
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(c) = c else { continue };
                let Ok(s) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let _ = c.set_nodelay(true);
                let _ = s.set_nodelay(true);
                let rec = Arc::new(Mutex::new(Conn::default()));
                log2.lock().unwrap().push(Arc::clone(&rec));
                let (c2, s2) = (c.try_clone().unwrap(), s.try_clone().unwrap());
                let r2 = Arc::clone(&rec);
                std::thread::spawn(move || pump(c, s, rec, true));
                std::thread::spawn(move || pump(s2, c2, r2, false));
            }
        });
        Proxy { port, log }
    }

    /// The control connection (the first one) once both ends closed it.
    fn control(&self) -> Conn {
        let c = Arc::clone(&self.log.lock().unwrap()[0]);
        wait_until("the control connection closed both ways", || {
            c.lock().unwrap().closed == 2
        });
        let got = c.lock().unwrap().clone();
        got
    }
}

/// Split a length-prefixed JSON frame off the front of `b`.
fn frame(b: &[u8]) -> (Value, &[u8]) {
    assert!(b.len() >= 4, "a frame: {b:?}");
    let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let v = serde_json::from_slice(&b[4..4 + n]).expect("a JSON frame");
    (v, &b[4 + n..])
}

/// Live frames at the front of `b`: how many, and the rest.
fn live_frames(mut b: &[u8]) -> (Vec<LiveInterval>, &[u8]) {
    let mut v = Vec::new();
    while b.first() == Some(&LIVE_MARKER) {
        let (li, n) = LiveInterval::decode(b).expect("a live frame");
        v.push(li);
        b = &b[n..];
    }
    (v, b)
}

#[test]
fn json_stream_carries_the_peers_cpus_each_interval_and_the_verdict_so_far() {
    let (_srv, port) = start_server(&[]);
    let proxy = Proxy::start(port);
    let o = run(
        &mut client_cmd(Side::Wirespeed, proxy.port, &["-t", "4", "--json-stream"]),
        HANG,
    );
    assert_success(&o, "wirespeed client --json-stream");
    let events: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    let end = names
        .iter()
        .position(|n| *n == "end")
        .expect("an end event");
    let live: Vec<&Value> = events[..end]
        .iter()
        .filter(|e| e["event"] == "wirespeed_interval")
        .map(|e| &e["data"])
        .collect();
    let intervals = names[..end].iter().filter(|n| **n == "interval").count();
    assert_eq!(live.len(), intervals, "one per interval: {names:?}");
    // Each follows its interval.
    for (i, n) in names.iter().enumerate() {
        if *n == "wirespeed_interval" {
            assert_eq!(names[i - 1], "interval", "{names:?}");
        }
    }
    // Mid-test (before the last interval), the server's CPUs of one of its intervals.
    let mid = &live[..live.len() - 1];
    let with_peer: Vec<&&Value> = mid
        .iter()
        .filter(|d| d["peer"]["cpus"].as_array().is_some_and(|c| !c.is_empty()))
        .collect();
    assert!(!with_peer.is_empty(), "the peer's CPUs mid-test: {live:?}");
    let p = &with_peer[0]["peer"];
    assert!(
        p["end"].as_f64().unwrap() > p["start"].as_f64().unwrap(),
        "{p}"
    );
    let c = &p["cpus"][0];
    for k in [
        "cpu", "user", "system", "irq", "softirq", "steal", "idle", "nic_irqs",
    ] {
        assert!(!c[k].is_null(), "{k} in {c}");
    }
    assert!(
        live.iter()
            .all(|d| d["local"]["cpus"].as_array().is_some_and(|c| !c.is_empty())),
        "this end's CPUs each interval: {live:?}"
    );
    assert!(
        mid.iter().all(|d| d["verdict_so_far"]["id"].is_string()),
        "a verdict so far each interval: {live:?}"
    );
    // The end's verdict is still there, in the wirespeed event.
    let ws = events.iter().find(|e| e["event"] == "wirespeed").unwrap();
    assert!(ws["data"]["verdict"]["id"].is_string(), "{ws}");

    // On the wire: after TEST_RUNNING, frames both ways on the control connection, the
    // client's only after the server's first.
    let ctl = proxy.control();
    let (_, rest) = frame(&ctl.up[37..]);
    let (up_frames, rest) = live_frames(rest);
    assert!(!up_frames.is_empty(), "the client's frames");
    assert_eq!(rest[0], 4, "then TEST_END");
    assert_eq!(&ctl.down[..4], &[9, 10, 1, 2]);
    let (down_frames, rest) = live_frames(&ctl.down[4..]);
    assert!(!down_frames.is_empty(), "the server's frames");
    assert!(down_frames[0].head.is_some(), "the first carries the head");
    assert!(down_frames[1..].iter().all(|f| f.head.is_none()));
    assert_eq!(rest[0], 13, "then EXCHANGE_RESULTS");
}

/// The control bytes a wirespeed client sends to iperf3's server: cookie, parameters (asking
/// for live frames, which iperf3 ignores), TEST_END, results, IPERF_DONE — nothing else.
#[test]
fn an_iperf3_server_never_sees_a_live_frame() {
    if !have_iperf3("an_iperf3_server_never_sees_a_live_frame") {
        return;
    }
    let port = free_port();
    let _srv =
        spawn(std::process::Command::new("iperf3").args(["-s", "-1", "-p", &port.to_string()]));
    wait_listening(port);
    let proxy = Proxy::start(port);
    let o = run(
        &mut client_cmd(Side::Wirespeed, proxy.port, &["-t", "3", "-J"]),
        HANG,
    );
    assert_success(&o, "wirespeed client against iperf3 -s");
    let j = json_of(&o.stdout, "wirespeed");
    assert!(j["error"].is_null(), "{j}");
    let ctl = proxy.control();
    let (params, rest) = frame(&ctl.up[37..]);
    assert_eq!(params["wirespeed"]["live"], true, "offered: {params}");
    assert_eq!(rest[0], 4, "TEST_END right after the parameters");
    let (_, rest) = frame(&rest[1..]);
    assert_eq!(rest, &[16], "then IPERF_DONE and nothing more");
    // And iperf3's server sent none either: its states and its results.
    assert_eq!(&ctl.down[..5], &[9, 10, 1, 2, 13]);
    let (_, rest) = frame(&ctl.down[5..]);
    assert_eq!(rest, &[14]);
}

/// The control bytes a wirespeed server sends to iperf3's client: iperf3's states and its
/// results, no live frame.
#[test]
fn an_iperf3_client_never_sees_a_live_frame() {
    if !have_iperf3("an_iperf3_client_never_sees_a_live_frame") {
        return;
    }
    let (_srv, port) = start_server(&[]);
    let proxy = Proxy::start(port);
    let o = run(
        &mut client_cmd(Side::Iperf3, proxy.port, &["-t", "3", "-J"]),
        HANG,
    );
    assert_success(&o, "iperf3 -c against wirespeed server");
    let ctl = proxy.control();
    assert_eq!(
        &ctl.down[..5],
        &[9, 10, 1, 2, 13],
        "no frame before EXCHANGE_RESULTS"
    );
    let (results, rest) = frame(&ctl.down[5..]);
    assert!(results["streams"].is_array(), "{results}");
    assert_eq!(rest, &[14], "then DISPLAY_RESULTS and nothing more");
    let (params, rest) = frame(&ctl.up[37..]);
    assert!(params.get("wirespeed").is_none(), "{params}");
    assert_eq!(rest[0], 4);
}
