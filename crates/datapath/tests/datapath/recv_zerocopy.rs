//! The zero-copy receive path (`TCP_ZEROCOPY_RECEIVE`) on loopback: every byte sent is
//! received once, counted as mapped or copied, with the right content; where nothing maps the
//! worker falls back to copying and says so.
//!
//! On loopback the kernel maps pages only when the sender's buffers are whole, plain pages:
//! a `MSG_ZEROCOPY` sender's data is copied into such pages when it loops back, a copying
//! sender's is not (its buffers are compound pages). So the tests that want mapped pages send
//! with `MSG_ZEROCOPY`; the counts must add up whatever the kernel maps.

use crate::common;

use common::{one, pairs, wait_until, HANG};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;
use wirespeed_datapath::rx_zerocopy::ZcRx;
use wirespeed_datapath::*;

/// The byte at stream offset `i`: varies within and across pages, never periodic in a page.
fn pattern(i: u64) -> u8 {
    (i ^ (i >> 12) ^ (i >> 20)).wrapping_mul(31) as u8
}

/// `MSG_ZEROCOPY` (linux/socket.h).
const MSG_ZEROCOPY: libc::c_int = 0x0400_0000;

/// Send `data` on `s` with MSG_ZEROCOPY (plain send where the socket refuses it). `data`
/// outlives the socket's use of it: the caller keeps it until the receiver is done.
fn send_all_zerocopy(s: &std::net::TcpStream, data: &[u8]) {
    let zc = sys::setsockopt_int(s.as_raw_fd(), libc::SOL_SOCKET, sys::SO_ZEROCOPY, 1).is_ok();
    let sock = socket2::SockRef::from(s);
    let mut off = 0;
    while off < data.len() {
        let end = (off + (256 << 10)).min(data.len());
        let r = if zc {
            sock.send_with_flags(&data[off..end], MSG_ZEROCOPY)
        } else {
            sock.send(&data[off..end])
        };
        match r {
            Ok(n) => off += n,
            // optmem full of completions: let them drain (nothing reads the error queue;
            // the kernel drops notifications it cannot queue)
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                std::thread::sleep(std::time::Duration::from_millis(1))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("send: {e}"),
        }
    }
}

#[test]
fn zcrx_receives_every_byte_once_with_its_content() {
    let (a, b) = pairs(1).pop().expect("pair");
    let total: u64 = (24 << 20) + 12345;
    let data: Arc<Vec<u8>> = Arc::new((0..total).map(pattern).collect());
    let d2 = data.clone();
    let tx = std::thread::spawn(move || {
        send_all_zerocopy(&a, &d2);
        a // closed by the caller once the receiver is done
    });
    let mut zc = match ZcRx::new(b.as_raw_fd(), 256 << 10) {
        Ok(z) => z,
        Err(e) => {
            println!(
                "SKIP: zcrx_receives_every_byte_once_with_its_content because the socket cannot be mapped ({})",
                sys::errno_str(e)
            );
            return;
        }
    };
    let mut buf = vec![0u8; 128 << 10];
    let mut at = 0u64;
    let t = Instant::now();
    let mut tx = Some(tx);
    loop {
        assert!(t.elapsed() < HANG, "receiver stuck at {at} of {total}");
        if at == total {
            // everything arrived: close the sender so the receiver sees the end
            if let Some(h) = tx.take() {
                drop(h.join().expect("sender"));
            }
        }
        let r = match zc.recv(&mut buf) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) if e == libc::EINVAL || e == libc::EOPNOTSUPP || e == libc::ENOPROTOOPT => {
                println!(
                    "SKIP: zcrx_receives_every_byte_once_with_its_content because TCP_ZEROCOPY_RECEIVE is refused ({})",
                    sys::errno_str(e)
                );
                return;
            }
            Err(e) => panic!("recv: {}", sys::errno_str(e)),
        };
        if r.is_empty() {
            zc.wait_readable(50);
            continue;
        }
        for part in [r.mapped, r.copied] {
            for (k, &byte) in part.iter().enumerate() {
                let i = at + k as u64;
                assert!(i < total, "more bytes than were sent");
                assert_eq!(byte, data[i as usize], "byte {i} of the stream");
            }
            at += part.len() as u64;
        }
    }
    assert_eq!(at, total, "every byte received once");
    assert_eq!(
        zc.mapped_bytes + zc.copied_bytes,
        total,
        "mapped + copied = sent"
    );
    println!(
        "zero-copy receive: {} bytes mapped, {} copied",
        zc.mapped_bytes, zc.copied_bytes
    );
}

fn spec(streams: Vec<StreamSpec>, send_path: SendPath, budget: Option<Arc<Budget>>) -> WorkerSpec {
    WorkerSpec {
        cpu: None,
        streams,
        block_len: 128 << 10,
        send_path,
        recv_path: RecvPath::Zerocopy,
        budget,
        wake: Wake::default(),
    }
}

/// Send `total` bytes over `n` streams through workers (the sender on `send_path`, the
/// receiver on the zero-copy path), close, and return the receiver's report.
fn run_workers(n: usize, send_path: SendPath, total: u64) -> WorkerReport {
    let (mut sends, mut recvs) = (Vec::new(), Vec::new());
    for (i, (a, b)) in pairs(n).into_iter().enumerate() {
        sends.push(one(i as u32 + 1, a, Direction::Send));
        recvs.push(one(i as u32 + 1, b, Direction::Recv));
    }
    let c = Arc::new(Control::new());
    let rx = spawn_worker(spec(recvs, SendPath::Copy, None), c.clone()).expect("rx");
    let budget = Arc::new(Budget::bytes(total));
    let tx = spawn_worker(spec(sends, send_path, Some(budget)), c).expect("tx");
    wait_until("the budget is sent", || tx.is_finished());
    let rep = tx.join().expect("tx");
    assert_eq!(rep.streams.iter().map(|s| s.bytes).sum::<u64>(), total);
    drop(rep); // closes the sending sockets: the receiver reads to the end
    let r = rx.join().expect("rx");
    assert!(r
        .streams
        .iter()
        .all(|s| s.end == StreamEnd::Eof && s.error.is_none()));
    r
}

#[test]
fn worker_counts_mapped_and_copied_bytes_exactly() {
    let total = (40 << 20) + 777;
    for n in [1, 3] {
        let r = run_workers(n, SendPath::MsgZerocopy, total);
        let got: u64 = r.streams.iter().map(|s| s.bytes).sum();
        assert_eq!(got, total, "{n} streams: every byte received");
        let z = r.rx_zerocopy.expect("zero-copy counts");
        assert_eq!(
            z.mapped + z.copied,
            total,
            "{n} streams: mapped + copied = sent"
        );
        match r.recv_path {
            Some(RecvPath::Zerocopy) => assert!(z.mapped > 0, "{n} streams: {z:?}"),
            // a kernel that maps nothing here: the fallback says so
            Some(RecvPath::Copy) => assert!(
                r.fallbacks.iter().any(|f| f.starts_with("zerocopy: ")),
                "{:?}",
                r.fallbacks
            ),
            other => panic!("receive path {other:?}"),
        }
        println!("{n} streams: {z:?}, path {:?}", r.recv_path);
    }
}

/// A copying sender's buffers are compound pages on loopback: nothing maps, the worker falls
/// back once, says why, and still counts every byte (as copied).
#[test]
fn nothing_mapped_falls_back_to_copy_once_with_a_note() {
    let total = (40 << 20) + 5;
    let r = run_workers(1, SendPath::Copy, total);
    let z = r.rx_zerocopy.expect("zero-copy counts");
    assert_eq!(z.mapped + z.copied, total);
    assert_eq!(r.streams[0].bytes, total);
    if z.mapped == 0 {
        assert_eq!(r.recv_path, Some(RecvPath::Copy));
        let notes: Vec<_> = r
            .fallbacks
            .iter()
            .filter(|f| f.starts_with("zerocopy: "))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", r.fallbacks);
    }
}

#[test]
fn receivers_on_other_paths_have_no_zero_copy_counts() {
    let (a, b) = pairs(1).pop().expect("pair");
    let c = Arc::new(Control::new());
    let mut s = spec(vec![one(1, b, Direction::Recv)], SendPath::Copy, None);
    s.recv_path = RecvPath::Copy;
    let rx = spawn_worker(s, c.clone()).expect("rx");
    (&a).write_all(&[1u8; 5000]).expect("write");
    drop(a);
    let r = rx.join().expect("rx");
    assert_eq!(r.streams[0].bytes, 5000);
    assert_eq!(r.rx_zerocopy, None);
}

/// Many streams on the zero-copy path raise SO_RCVLOWAT (epoll reports a stream once a region's
/// worth is queued): bytes short of that must still be read while the senders keep their sockets
/// open — not only at the end of the stream, and not never.
#[test]
fn many_streams_read_bytes_below_the_low_water_mark_before_the_end() {
    let (mut senders, mut recvs) = (Vec::new(), Vec::new());
    for (i, (a, b)) in pairs(3).into_iter().enumerate() {
        senders.push(a);
        recvs.push(one(i as u32 + 1, b, Direction::Recv));
    }
    let c = Arc::new(Control::new());
    let rx = spawn_worker(spec(recvs, SendPath::Copy, None), c.clone()).expect("rx");
    let tail = [7u8; 1000];
    for s in &mut senders {
        s.write_all(&tail).expect("write");
    }
    let ctrs = rx.counters();
    let t = Instant::now();
    while ctrs.iter().map(|(_, k)| k.bytes()).sum::<u64>() < 3000 {
        // the loop sweeps such tails every 50 ms: 10 s means they are never read
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "bytes below the mark were not read while the senders stayed open"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(senders); // the end of the streams
    let r = rx.join().expect("rx");
    assert_eq!(r.streams.iter().map(|s| s.bytes).sum::<u64>(), 3000);
    assert!(
        r.streams
            .iter()
            .all(|s| s.end == StreamEnd::Eof && s.error.is_none()),
        "{:?}",
        r.streams
    );
}
