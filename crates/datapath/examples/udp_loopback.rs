//! One UDP stream over 127.0.0.1 through the datapath UDP workers:
//!
//!   cargo run --release -p wirespeed-datapath --example udp_loopback -- \
//!       [gso|mmsg|plain] [gro|mmsg|plain] [LEN] [RATE_BPS (0 = unlimited)] [SECONDS] [SEND_CPU] [RECV_CPU]
//!
//! Prints one JSON line: sender rate, receiver goodput, loss, paths, syscalls.

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_datapath::udp::*;
use wirespeed_datapath::*;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| a.get(i).map(String::as_str);
    let sp = match arg(0).unwrap_or("gso") {
        "gso" => UdpSendPath::Gso,
        "mmsg" => UdpSendPath::Mmsg,
        _ => UdpSendPath::Plain,
    };
    let rp = match arg(1).unwrap_or("gro") {
        "gro" => UdpRecvPath::Gro,
        "mmsg" => UdpRecvPath::Mmsg,
        _ => UdpRecvPath::Plain,
    };
    let num = |i: usize, d: f64| arg(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(d);
    let len = num(2, 1472.0) as usize;
    let rate = num(3, 0.0) as u64;
    let secs = num(4, 2.0);
    let cpu = |i: usize, d: f64| match num(i, d) as i64 {
        c if c < 0 => None,
        c => Some(c as u32),
    };
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let r = UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.connect(r.local_addr().expect("addr")).expect("connect");
    r.connect(s.local_addr().expect("addr")).expect("connect");
    let _ = socket2::SockRef::from(&r).set_recv_buffer_size(4 << 20);
    let _ = socket2::SockRef::from(&s).set_send_buffer_size(4 << 20);
    let mk = |cpu, socket, direction| UdpWorkerSpec {
        cpu,
        streams: vec![UdpStreamSpec {
            id: 1,
            socket,
            direction,
            rate_bps: rate,
        }],
        datagram_len: len,
        counters_64bit: true,
        send_path: sp,
        recv_path: rp,
        batch: 0,
        budget: None,
        fq_rate: None,
    };
    let rctl = Arc::new(Control::new());
    let rx = spawn_udp_worker(mk(cpu(6, 1.0), r, Direction::Recv), rctl.clone()).expect("rx");
    let sctl = Arc::new(Control::new());
    let t0 = Instant::now();
    let tx = spawn_udp_worker(mk(cpu(5, 0.0), s, Direction::Send), sctl.clone()).expect("tx");
    std::thread::sleep(Duration::from_secs_f64(secs));
    sctl.stop();
    let srep = tx.join().expect("tx");
    let el = t0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(100)); // grace for in-flight datagrams
    rctl.stop();
    let rrep = rx.join().expect("rx");
    let ss = &srep.streams[0];
    let st = rrep.streams[0].recv.expect("stats");
    println!(
        "{{\"send_path\":\"{}\",\"recv_path\":\"{}\",\"len\":{len},\"target_bps\":{rate},\"sent_bps\":{:.0},\"sent_bps_active\":{:.0},\"goodput_bps\":{:.0},\"sent\":{},\"received\":{},\"lost\":{},\"lost_percent\":{:.3},\"ooo\":{},\"dup\":{},\"jitter_ms\":{:.4},\"send_syscalls\":{},\"recv_syscalls\":{},\"fallbacks\":{:?}}}",
        srep.send_path.map(|p| p.as_str()).unwrap_or("-"),
        rrep.recv_path.map(|p| p.as_str()).unwrap_or("-"),
        ss.bytes as f64 * 8.0 / el,
        ss.bytes as f64 * 8.0 / ss.send_seconds.max(1e-9),
        st.bytes as f64 * 8.0 / el,
        ss.packets,
        st.unique,
        ss.packets.saturating_sub(st.unique),
        100.0 * ss.packets.saturating_sub(st.unique) as f64 / ss.packets.max(1) as f64,
        st.out_of_order,
        st.duplicates,
        st.jitter_ms,
        srep.syscalls,
        rrep.syscalls,
        srep.fallbacks.iter().chain(&rrep.fallbacks).collect::<Vec<_>>(),
    );
}
