//! UDP workers on loopback: every send/receive path delivers every datagram with
//! a correct iperf3 header, the receiver's accounting matches what was sent, and
//! pacing never runs ahead of its rate.

use crate::common;

use common::{stop_and_join, wait_until};
use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_datapath::udp::*;
use wirespeed_datapath::*;

/// A connected pair of UDP sockets with large buffers (loopback drops nothing
/// if the receiver keeps up and the buffer holds a burst).
fn udp_pair() -> (UdpSocket, UdpSocket) {
    let a = UdpSocket::bind("127.0.0.1:0").expect("bind a");
    let b = UdpSocket::bind("127.0.0.1:0").expect("bind b");
    a.connect(b.local_addr().expect("addr")).expect("connect a");
    b.connect(a.local_addr().expect("addr")).expect("connect b");
    for s in [&a, &b] {
        let r = socket2::SockRef::from(s);
        let _ = r.set_recv_buffer_size(4 << 20);
        let _ = r.set_send_buffer_size(4 << 20);
    }
    (a, b)
}

fn kernel_has_gso(s: &UdpSocket) -> bool {
    use std::os::fd::AsRawFd;
    sys::getsockopt_int(s.as_raw_fd(), libc::SOL_UDP, libc::UDP_SEGMENT).is_ok()
}

struct Run {
    sent: UdpWorkerReport,
    got: UdpWorkerReport,
}

/// Send `count` datagrams from one worker to another and stop the receiver
/// once it has everything (or 2 s have passed).
#[allow(clippy::too_many_arguments)]
fn run(
    nstreams: usize,
    len: usize,
    c64: bool,
    send_path: UdpSendPath,
    recv_path: UdpRecvPath,
    count: u64,
    rate_bps: u64,
) -> Run {
    let (mut tx_streams, mut rx_streams) = (Vec::new(), Vec::new());
    for i in 0..nstreams {
        let (a, b) = udp_pair();
        tx_streams.push(UdpStreamSpec {
            id: i as u32 + 1,
            socket: a,
            direction: Direction::Send,
            rate_bps,
        });
        rx_streams.push(UdpStreamSpec {
            id: i as u32 + 1,
            socket: b,
            direction: Direction::Recv,
            rate_bps: 0,
        });
    }
    let mk = |streams, budget| UdpWorkerSpec {
        cpu: None,
        streams,
        datagram_len: len,
        counters_64bit: c64,
        send_path,
        recv_path,
        batch: 0,
        budget,
        fq_rate: None,
    };
    let rctl = Arc::new(Control::new());
    let rx = spawn_udp_worker(mk(rx_streams, None), rctl.clone()).expect("rx");
    let tx = spawn_udp_worker(
        mk(tx_streams, Some(Arc::new(Budget::blocks(count)))),
        Arc::new(Control::new()),
    )
    .expect("tx");
    let sent = tx.join().expect("tx join");
    let total_sent: u64 = sent.streams.iter().map(|s| s.packets).sum();
    let ctrs = rx.counters();
    wait_until("the receiver counts every datagram sent", || {
        ctrs.iter().map(|(_, c)| c.snapshot().unique).sum::<u64>() >= total_sent
    });
    let got = stop_and_join(rx, &rctl, "receiver").expect("rx join");
    Run { sent, got }
}

fn check_exact(r: &Run, count: u64, len: usize) {
    let sent: u64 = r.sent.streams.iter().map(|s| s.packets).sum();
    assert_eq!(sent, count, "budget of {count} datagrams");
    for (s, g) in r.sent.streams.iter().zip(&r.got.streams) {
        assert_eq!(s.id, g.id);
        assert_eq!(s.bytes, s.packets * len as u64);
        let st = g.recv.expect("receiver stats");
        // Paced well below what loopback carries: nothing may be lost here.
        assert_eq!(st.unique, s.packets, "stream {}: {st:?}", s.id);
        assert_eq!(st.expected, s.packets);
        assert_eq!(st.lost, 0);
        assert_eq!(st.duplicates, 0);
        assert_eq!(st.out_of_order, 0);
        assert_eq!(st.malformed, 0);
        assert_eq!(st.bytes, s.bytes);
        assert!(st.jitter_ms >= 0.0 && st.jitter_ms.is_finite());
    }
}

#[test]
fn every_path_combination_delivers_everything() {
    let probe = udp_pair().0;
    let gso = kernel_has_gso(&probe);
    for (sp, rp) in [
        (UdpSendPath::Plain, UdpRecvPath::Plain),
        (UdpSendPath::Mmsg, UdpRecvPath::Mmsg),
        (UdpSendPath::Gso, UdpRecvPath::Gro),
        (UdpSendPath::Gso, UdpRecvPath::Mmsg),
        (UdpSendPath::Mmsg, UdpRecvPath::Gro),
    ] {
        let (len, count) = (1472, 3000);
        let r = run(1, len, true, sp, rp, count, 400_000_000);
        check_exact(&r, count, len);
        let want_sp = if sp == UdpSendPath::Gso && !gso {
            UdpSendPath::Mmsg
        } else {
            sp
        };
        assert_eq!(
            r.sent.send_path,
            Some(want_sp),
            "fallbacks: {:?}",
            r.sent.fallbacks
        );
        if gso {
            assert_eq!(
                r.got.recv_path,
                Some(rp),
                "fallbacks: {:?}",
                r.got.fallbacks
            );
        }
        assert!(r.sent.syscalls > 0 && r.got.syscalls > 0);
        eprintln!(
            "{:?} -> {:?}: {} send syscalls, {} recv syscalls for {count} datagrams",
            r.sent.send_path, r.got.recv_path, r.sent.syscalls, r.got.syscalls
        );
        if sp != UdpSendPath::Plain {
            assert!(
                r.sent.syscalls < count,
                "batched: {} syscalls for {count} datagrams",
                r.sent.syscalls
            );
        }
    }
}

#[test]
fn counters_32bit_and_odd_sizes_and_many_streams() {
    for (len, c64) in [(12usize, false), (16, true), (9000, false), (65507, true)] {
        let count = 200;
        let r = run(
            3,
            len,
            c64,
            UdpSendPath::Gso,
            UdpRecvPath::Gro,
            count,
            100_000_000,
        );
        check_exact(&r, count, len);
    }
}

#[test]
fn header_on_the_wire_is_iperf3s() {
    let (a, b) = udp_pair();
    b.set_read_timeout(Some(common::HANG)).expect("timeout");
    let w = spawn_udp_worker(
        UdpWorkerSpec {
            cpu: None,
            streams: vec![UdpStreamSpec {
                id: 1,
                socket: a,
                direction: Direction::Send,
                rate_bps: 50_000_000,
            }],
            datagram_len: 100,
            counters_64bit: false,
            send_path: UdpSendPath::Gso,
            recv_path: UdpRecvPath::Mmsg,
            batch: 0,
            budget: Some(Arc::new(Budget::bytes(100 * 50 - 1))),
            fq_rate: None,
        },
        Arc::new(Control::new()),
    )
    .expect("spawn");
    let rep = w.join().expect("join");
    assert_eq!(
        rep.streams[0].packets, 50,
        "a byte budget rounds up to whole datagrams"
    );
    let mut buf = [0u8; 2048];
    let mut prev_t = 0u64;
    for want in 1..=50u32 {
        let n = b.recv(&mut buf).expect("recv");
        assert_eq!(n, 100);
        let sec = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let usec = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
        let seq = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
        assert_eq!(seq, want);
        assert!(usec < 1_000_000);
        let t = u64::from(sec) * 1_000_000 + u64::from(usec);
        assert!(t >= prev_t, "timestamps never go back");
        prev_t = t;
    }
}

#[test]
fn receiver_counts_loss_reordering_and_duplicates_from_a_raw_sender() {
    let (a, b) = udp_pair();
    let ctl = Arc::new(Control::new());
    let w = spawn_udp_worker(
        UdpWorkerSpec {
            cpu: None,
            streams: vec![UdpStreamSpec {
                id: 9,
                socket: b,
                direction: Direction::Recv,
                rate_bps: 0,
            }],
            datagram_len: 64,
            counters_64bit: true,
            send_path: UdpSendPath::Mmsg,
            recv_path: UdpRecvPath::Gro,
            batch: 0,
            budget: None,
            fq_rate: None,
        },
        ctl.clone(),
    )
    .expect("spawn");
    // 1 2 4 3 3 6 8 7, and one runt: 5 is lost; 3 and 7 are late; one duplicate of 3.
    for seq in [1u64, 2, 4, 3, 3, 6, 8, 7] {
        let mut d = [0u8; 64];
        DatagramHeader {
            sec: 1,
            usec: seq as u32 * 1000,
            seq,
        }
        .emit(&mut d, true)
        .expect("header fits");
        a.send(&d).expect("send");
    }
    a.send(&[1u8; 5]).expect("runt");
    let ctr = w.counters()[0].1.clone();
    wait_until("the receiver counts all nine datagrams", || {
        let s = ctr.snapshot();
        s.packets + s.malformed >= 9
    });
    let snap = ctr.snapshot();
    let rep = stop_and_join(w, &ctl, "receiver").expect("join");
    let st = rep.streams[0].recv.expect("stats");
    assert_eq!(st.received, 8);
    assert_eq!(st.unique, 7);
    assert_eq!(st.duplicates, 1);
    assert_eq!(st.out_of_order, 2);
    assert_eq!(st.expected, 8);
    assert_eq!(st.lost, 1);
    assert_eq!(st.malformed, 1);
    assert_eq!(st.bytes, 8 * 64);
    assert_eq!((snap.lost, snap.duplicates, snap.out_of_order), (1, 1, 2));
}

#[test]
fn pacing_never_runs_ahead_of_the_rate() {
    let (a, b) = udp_pair();
    let rate = 200_000_000u64; // 200 Mbit/s
    let rctl = Arc::new(Control::new());
    let spec = |streams| UdpWorkerSpec {
        cpu: None,
        streams,
        datagram_len: 1472,
        counters_64bit: true,
        send_path: UdpSendPath::Gso,
        recv_path: UdpRecvPath::Gro,
        batch: 0,
        budget: None,
        fq_rate: None,
    };
    let rx = spawn_udp_worker(
        spec(vec![UdpStreamSpec {
            id: 1,
            socket: b,
            direction: Direction::Recv,
            rate_bps: 0,
        }]),
        rctl.clone(),
    )
    .expect("rx");
    let sctl = Arc::new(Control::new());
    let t0 = Instant::now();
    let tx = spawn_udp_worker(
        spec(vec![UdpStreamSpec {
            id: 1,
            socket: a,
            direction: Direction::Send,
            rate_bps: rate,
        }]),
        sctl.clone(),
    )
    .expect("tx");
    std::thread::sleep(Duration::from_millis(600));
    sctl.stop();
    let rep = tx.join().expect("tx");
    let el = t0.elapsed().as_secs_f64();
    let bytes = rep.streams[0].bytes;
    let ceiling = rate as f64 / 8.0 * el + 1472.0 * 64.0; // schedule + one batch of burst
    assert!(
        (bytes as f64) <= ceiling,
        "sent {bytes} B in {el:.3} s: above the {rate} bit/s schedule"
    );
    assert!(bytes > 0);
    let ctr = rx.counters()[0].1.clone();
    let sent = rep.streams[0].packets;
    wait_until("the receiver counts every datagram sent", || {
        ctr.snapshot().unique >= sent
    });
    let got = stop_and_join(rx, &rctl, "receiver").expect("rx");
    assert_eq!(
        got.streams[0].recv.expect("stats").unique,
        rep.streams[0].packets
    );
}

#[test]
fn bad_lengths_are_refused_and_stop_is_prompt() {
    let (a, b) = udp_pair();
    let spec = |socket, len, c64| UdpWorkerSpec {
        cpu: None,
        streams: vec![UdpStreamSpec {
            id: 1,
            socket,
            direction: Direction::Recv,
            rate_bps: 0,
        }],
        datagram_len: len,
        counters_64bit: c64,
        send_path: UdpSendPath::Mmsg,
        recv_path: UdpRecvPath::Mmsg,
        batch: 0,
        budget: None,
        fq_rate: None,
    };
    let c = Arc::new(Control::new());
    for (len, c64) in [(11usize, false), (15, true), (65508, false)] {
        let s = a.try_clone().expect("clone");
        match spawn_udp_worker(spec(s, len, c64), c.clone()) {
            Err(DatapathError::InvalidSpec(m)) => assert!(m.contains(&len.to_string()), "{m}"),
            Err(e) => panic!("wrong error {e}"),
            Ok(_) => panic!("length {len} must be refused"),
        }
    }
    let w = spawn_udp_worker(spec(b, 1472, true), c.clone()).expect("spawn");
    let rep = stop_and_join(w, &c, "receiver").expect("join");
    assert_eq!(rep.streams[0].end, StreamEnd::Stopped);
}
