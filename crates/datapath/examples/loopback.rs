//! One TCP stream over 127.0.0.1 through the datapath workers, for quick
//! path comparisons:
//!
//!   cargo run --release -p wirespeed-datapath --example loopback -- \
//!       [copy|sendfile|splice|zerocopy] [copy|skip|zerocopy] [BLOCK] [SECONDS] [SEND_CPU] [RECV_CPU]
//!
//! Prints one JSON line with the bytes, the rate, what ran and the CPU time
//! each worker thread spent per KiB. Set `WIRESPEED_NO_RCVLOWAT=1` to compare
//! against a receiver that leaves SO_RCVLOWAT at 1.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_datapath::*;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| a.get(i).map(String::as_str);
    let send_path = match arg(0).unwrap_or("copy") {
        "copy" => SendPath::Copy,
        "sendfile" => SendPath::Sendfile,
        "splice" => SendPath::Splice,
        "zerocopy" => SendPath::MsgZerocopy,
        other => {
            eprintln!("loopback: unknown send path {other:?}");
            std::process::exit(2)
        }
    };
    let recv_path = match arg(1).unwrap_or("copy") {
        "copy" => RecvPath::Copy,
        "skip" => RecvPath::SkipCopy,
        "zerocopy" => RecvPath::Zerocopy,
        other => {
            eprintln!("loopback: unknown recv path {other:?}");
            std::process::exit(2)
        }
    };
    let num = |i: usize, d: f64| arg(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(d);
    let block = num(2, 131072.0) as usize;
    let secs = num(3, 2.0);
    let cpu = |i: usize, d: i64| match num(i, d as f64) as i64 {
        c if c < 0 => None,
        c => Some(c as u32),
    };
    let (scpu, rcpu) = (cpu(4, 0), cpu(5, 1));

    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let s = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
    let (r, _) = l.accept().expect("accept");
    let ctl = Arc::new(Control::new());
    let mk = |cpu, socket, direction| WorkerSpec {
        cpu,
        streams: vec![StreamSpec {
            id: 1,
            socket,
            direction,
        }],
        block_len: block,
        send_path,
        recv_path,
        budget: None,
        wake: Wake::default(),
    };
    let rx = spawn_worker(mk(rcpu, r, Direction::Recv), Arc::new(Control::new())).expect("rx");
    let t0 = Instant::now();
    let tx = spawn_worker(mk(scpu, s, Direction::Send), ctl.clone()).expect("tx");
    std::thread::sleep(Duration::from_secs_f64(secs));
    ctl.stop();
    let mut srep = tx.join().expect("tx");
    let el = t0.elapsed().as_secs_f64();
    srep.sockets.clear();
    let rrep = rx.join().expect("rx");
    let bytes = rrep.streams[0].bytes;
    println!(
        "{{\"send_path\":\"{}\",\"recv_path\":\"{}\",\"block\":{block},\"bytes\":{bytes},\"seconds\":{el:.3},\"gbit_per_s\":{:.3},\"zc_sends\":{},\"zc_completions\":{},\"zc_copied\":{},\"rx_mapped\":{},\"rx_copied\":{},\"fallbacks\":{:?},\"send_cpus\":{:?},\"recv_cpus\":{:?},\"send_cpu_ns_per_kib\":{:.1},\"recv_cpu_ns_per_kib\":{:.1}}}",
        srep.send_path.map(|p| p.as_str()).unwrap_or("-"),
        rrep.recv_path.map(|p| p.as_str()).unwrap_or("-"),
        bytes as f64 * 8.0 / el / 1e9,
        srep.zerocopy_sends,
        srep.zerocopy_completions,
        srep.zerocopy_copied,
        rrep.rx_zerocopy.map_or(0, |z| z.mapped),
        rrep.rx_zerocopy.map_or(0, |z| z.copied),
        srep.fallbacks.iter().chain(&rrep.fallbacks).collect::<Vec<_>>(),
        srep.cpus_seen,
        rrep.cpus_seen,
        per_kib(&srep, bytes),
        per_kib(&rrep, bytes),
    );
}

/// Worker thread CPU time (user+sys) per KiB moved, in ns.
fn per_kib(r: &WorkerReport, bytes: u64) -> f64 {
    (r.cpu_user + r.cpu_system).as_nanos() as f64 / (bytes.max(1) as f64 / 1024.0)
}
