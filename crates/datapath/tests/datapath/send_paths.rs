//! Every send path and receive path on loopback: bytes arrive intact, counters
//! match on both ends, and the report says which path ran.

use crate::common;

use common::{one, pairs};
use std::io::Read;
use std::net::TcpStream;
use std::sync::Arc;
use wirespeed_datapath::*;

const PATHS: [SendPath; 4] = [
    SendPath::Copy,
    SendPath::Sendfile,
    SendPath::Splice,
    SendPath::MsgZerocopy,
];

/// Read a whole stream in odd-sized chunks and check it repeats with period `block`
/// (every path sends the same block again and again, whatever the partial writes).
fn read_and_check(mut s: TcpStream, block: usize, path: SendPath) -> u64 {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 77_777];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read: {e}"),
        }
    }
    assert!(all.len() > block, "need more than one block to compare");
    assert!(
        all[..block].iter().any(|&b| b != 0),
        "payload is not all zero"
    );
    for i in block..all.len() {
        assert_eq!(
            all[i],
            all[i - block],
            "{path:?}: byte {i} differs from the block before: a partial send was mis-offset"
        );
    }
    all.len() as u64
}

fn check_report(rep: &WorkerReport, want: SendPath) {
    assert_eq!(rep.send_path, Some(want), "fallbacks: {:?}", rep.fallbacks);
    if want == SendPath::MsgZerocopy {
        assert!(rep.zerocopy_sends > 0);
        assert_eq!(
            rep.zerocopy_completions, rep.zerocopy_sends,
            "every MSG_ZEROCOPY call completed"
        );
        assert!(rep.zerocopy_copied <= rep.zerocopy_completions);
    } else {
        assert_eq!(rep.zerocopy_sends, 0);
    }
}

/// An unpinned worker sending exactly `total` bytes over `streams`, in blocks of `block`, by `path`.
fn send_total(streams: Vec<StreamSpec>, block: usize, path: SendPath, total: u64) -> WorkerHandle {
    spawn_worker(
        WorkerSpec {
            cpu: None,
            streams,
            block_len: block,
            send_path: path,
            recv_path: RecvPath::Copy,
            budget: Some(Arc::new(Budget::bytes(total))),
            wake: Wake::default(),
        },
        Arc::new(Control::new()),
    )
    .expect("spawn")
}

#[test]
fn each_send_path_one_stream_delivers_intact_bytes() {
    for path in PATHS {
        let (a, b) = pairs(1).pop().expect("pair");
        let block = 100_003; // not a page multiple: exercises partial pipe/file ranges
        let total = 3 * 1024 * 1024 + 17;
        let reader = std::thread::spawn(move || read_and_check(b, block, path));
        let w = send_total(vec![one(1, a, Direction::Send)], block, path, total);
        let ctr = w.counters()[0].1.clone();
        let rep = w.join().expect("join");
        check_report(&rep, path);
        assert_eq!(rep.streams[0].bytes, total);
        assert_eq!(ctr.bytes(), total);
        drop(rep);
        assert_eq!(reader.join().expect("reader"), total, "{path:?}");
    }
}

#[test]
fn each_send_path_many_streams_delivers_intact_bytes() {
    for path in PATHS {
        let ps = pairs(4);
        let block = 65_539;
        let total = 8 * 1024 * 1024 + 3;
        let mut readers = Vec::new();
        let mut streams = Vec::new();
        for (i, (a, b)) in ps.into_iter().enumerate() {
            readers.push(std::thread::spawn(move || read_and_check(b, block, path)));
            streams.push(one(i as u32 + 1, a, Direction::Send));
        }
        let w = send_total(streams, block, path, total);
        let rep = w.join().expect("join");
        check_report(&rep, path);
        let per: Vec<u64> = rep.streams.iter().map(|s| s.bytes).collect();
        assert_eq!(per.iter().sum::<u64>(), total);
        drop(rep);
        let got: Vec<u64> = readers
            .into_iter()
            .map(|r| r.join().expect("reader"))
            .collect();
        assert_eq!(
            got, per,
            "{path:?}: each receiver got exactly what its stream sent"
        );
    }
}

#[test]
fn skip_copy_receiver_counts_exactly() {
    for nstreams in [1usize, 3] {
        let ps = pairs(nstreams);
        let (mut sends, mut recvs) = (Vec::new(), Vec::new());
        for (i, (a, b)) in ps.into_iter().enumerate() {
            sends.push(one(i as u32, a, Direction::Send));
            recvs.push(one(i as u32, b, Direction::Recv));
        }
        let total = 5 * 1024 * 1024 + 1;
        let mk = |streams, budget| WorkerSpec {
            cpu: None,
            streams,
            block_len: 131072,
            send_path: SendPath::Sendfile,
            recv_path: RecvPath::SkipCopy,
            budget,
            wake: Wake::default(),
        };
        let rx = spawn_worker(mk(recvs, None), Arc::new(Control::new())).expect("rx");
        let tx = spawn_worker(
            mk(sends, Some(Arc::new(Budget::bytes(total)))),
            Arc::new(Control::new()),
        )
        .expect("tx");
        let srep = tx.join().expect("tx");
        let sent: Vec<u64> = srep.streams.iter().map(|s| s.bytes).collect();
        drop(srep);
        let rrep = rx.join().expect("rx");
        assert_eq!(
            rrep.recv_path,
            Some(RecvPath::SkipCopy),
            "fallbacks: {:?}",
            rrep.fallbacks
        );
        let got: Vec<u64> = rrep.streams.iter().map(|s| s.bytes).collect();
        assert_eq!(got, sent);
        assert_eq!(got.iter().sum::<u64>(), total);
        assert!(rrep.streams.iter().all(|s| s.end == StreamEnd::Eof));
    }
}
