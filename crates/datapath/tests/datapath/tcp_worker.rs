//! Loopback tests of the TCP workers: byte totals, budgets, stop taking effect,
//! many streams, errors, pinning. No test times anything: each waits for what it needs (a
//! counter moving, a socket state) with a hang detector ([`common::HANG`]).

use crate::common;

use common::{one, pairs, stop_and_join, wait_until};
use std::sync::Arc;
use std::time::Duration;
use wirespeed_datapath::*;

fn spec(
    cpu: Option<u32>,
    streams: Vec<StreamSpec>,
    block_len: usize,
    budget: Option<Arc<Budget>>,
) -> WorkerSpec {
    WorkerSpec {
        cpu,
        streams,
        block_len,
        send_path: SendPath::Copy,
        recv_path: RecvPath::Copy,
        budget,
        wake: Wake::default(),
    }
}

/// One stream over loopback on the copy paths: its receiving worker, its sending worker, and
/// the sender's and receiver's controls.
fn one_stream_copying(
    block_len: usize,
) -> (WorkerHandle, WorkerHandle, Arc<Control>, Arc<Control>) {
    let (a, b) = pairs(1).pop().expect("pair");
    let (cs, cr) = (Arc::new(Control::new()), Arc::new(Control::new()));
    let rx = spawn_worker(
        spec(None, vec![one(1, b, Direction::Recv)], block_len, None),
        cr.clone(),
    )
    .expect("rx");
    let tx = spawn_worker(
        spec(None, vec![one(1, a, Direction::Send)], block_len, None),
        cs.clone(),
    )
    .expect("tx");
    (rx, tx, cs, cr)
}

/// Run a sender for `dur`, stop it, close its socket; the receiver must see exactly the bytes sent.
#[test]
fn one_stream_stop_then_eof_totals_match() {
    let (rx, tx, cs, _cr) = one_stream_copying(128 * 1024);
    let ctr = tx.counters()[0].1.clone();
    wait_until("the sender's counter moves while running", || {
        ctr.bytes() > 0
    });
    let mid = ctr.bytes();
    let mut rep = stop_and_join(tx, &cs, "sender").expect("join tx");
    assert_eq!(rep.send_path, Some(SendPath::Copy));
    assert_eq!(rep.recv_path, None);
    let s = &rep.streams[0];
    assert_eq!(s.end, StreamEnd::Stopped);
    assert!(s.error.is_none());
    assert_eq!(s.bytes, ctr.bytes());
    assert!(s.bytes >= mid);
    assert_eq!(
        s.bytes,
        s.blocks * 128 * 1024,
        "blocking sender writes whole blocks"
    );
    assert!(!rep.cpus_seen.is_empty());
    let sent = s.bytes;
    rep.sockets.clear(); // close: receiver sees EOF
    let rrep = rx.join().expect("join rx");
    assert_eq!(rrep.streams[0].end, StreamEnd::Eof);
    assert_eq!(rrep.streams[0].bytes, sent);
    assert_eq!(rrep.recv_path, Some(RecvPath::Copy));
}

#[test]
fn byte_budget_is_exact_and_block_budget_counts_blocks() {
    for (budget, block, expect) in [
        (Budget::bytes(3_000_000 + 123), 128 * 1024, 3_000_123u64),
        (Budget::blocks(17), 65536, 17 * 65536),
    ] {
        let (a, b) = pairs(1).pop().expect("pair");
        let c = Arc::new(Control::new());
        let rx = spawn_worker(
            spec(None, vec![one(7, b, Direction::Recv)], block, None),
            c.clone(),
        )
        .expect("rx");
        let budget = Arc::new(budget);
        let tx = spawn_worker(
            spec(
                None,
                vec![one(7, a, Direction::Send)],
                block,
                Some(budget.clone()),
            ),
            c,
        )
        .expect("tx");
        let rep = tx.join().expect("tx");
        assert!(budget.is_exhausted());
        assert_eq!(rep.streams[0].end, StreamEnd::BudgetSpent);
        assert_eq!(rep.streams[0].bytes, expect);
        drop(rep); // closes the socket
        let rrep = rx.join().expect("rx");
        assert_eq!(rrep.streams[0].bytes, expect);
        assert_eq!(rrep.streams[0].end, StreamEnd::Eof);
    }
}

#[test]
fn stop_interrupts_blocked_receiver_and_blocked_sender() {
    // Receiver with no data: blocked in recv.
    let (a, b) = pairs(1).pop().expect("pair");
    let c = Arc::new(Control::new());
    let rx = spawn_worker(
        spec(None, vec![one(1, b, Direction::Recv)], 4096, None),
        c.clone(),
    )
    .expect("rx");
    let r = stop_and_join(rx, &c, "receiver").expect("rx");
    assert_eq!(r.streams[0].end, StreamEnd::Stopped);
    assert_eq!(r.streams[0].bytes, 0);

    // Sender whose peer never reads: blocked in send once buffers fill.
    let c = Arc::new(Control::new());
    let tx = spawn_worker(
        spec(None, vec![one(1, a, Direction::Send)], 1 << 20, None),
        c.clone(),
    )
    .expect("tx");
    let ctr = tx.counters()[0].1.clone();
    wait_until("the sender sends", || ctr.bytes() > 0);
    let s = stop_and_join(tx, &c, "sender").expect("tx");
    assert_eq!(s.streams[0].end, StreamEnd::Stopped);
    assert!(s.streams[0].bytes > 0);
    drop(r); // the receiving socket lived until here
}

#[test]
fn pinned_worker_stays_on_its_cpu_and_bad_cpu_is_refused() {
    let cpus = cpu::allowed_cpus().expect("cpus");
    let target = cpus.iter().next_back().expect("one cpu");
    let (a, b) = pairs(1).pop().expect("pair");
    let c = Arc::new(Control::new());
    let rx = spawn_worker(
        spec(None, vec![one(1, b, Direction::Recv)], 65536, None),
        c.clone(),
    )
    .expect("rx");
    let tx = spawn_worker(
        spec(Some(target), vec![one(1, a, Direction::Send)], 65536, None),
        c.clone(),
    )
    .expect("tx");
    let ctr = tx.counters()[0].1.clone();
    wait_until("the pinned sender sends", || ctr.bytes() > 0);
    let rep = stop_and_join(tx, &c, "pinned sender").expect("tx");
    assert_eq!(rep.cpu_requested, Some(target));
    assert_eq!(rep.cpus_seen, wirespeed_model::CpuSet::from_cpus([target]));
    rx.join().expect("rx");

    let (a, _b) = pairs(1).pop().expect("pair");
    match spawn_worker(
        spec(Some(4000), vec![one(1, a, Direction::Send)], 65536, None),
        Arc::new(Control::new()),
    ) {
        Err(DatapathError::CpuNotAllowed { cpu: 4000, allowed }) => assert!(!allowed.is_empty()),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("pinning to CPU 4000 must fail"),
    }
}

/// >1024 streams over two workers (one sending, one receiving), exact totals with a shared budget.
#[test]
fn many_streams_over_two_workers() {
    let n = 1100usize;
    let _ = sys::raise_fd_limit(4 * n as u64 + 256);
    let ps = pairs(n);
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for (i, (a, b)) in ps.into_iter().enumerate() {
        sends.push(one(i as u32 + 1, a, Direction::Send));
        recvs.push(one(i as u32 + 1, b, Direction::Recv));
    }
    let total = n as u64 * 40_000 + 5;
    let budget = Arc::new(Budget::bytes(total));
    let c = Arc::new(Control::new());
    let rx = spawn_worker(spec(None, recvs, 16384, None), c.clone()).expect("rx");
    let tx = spawn_worker(spec(None, sends, 16384, Some(budget)), c.clone()).expect("tx");
    wait_until("the shared budget is spent", || tx.is_finished());
    let rep = tx.join().expect("tx");
    let sent: u64 = rep.streams.iter().map(|s| s.bytes).sum();
    assert_eq!(sent, total);
    assert!(rep
        .streams
        .iter()
        .all(|s| s.end == StreamEnd::BudgetSpent && s.error.is_none()));
    drop(rep);
    let rrep = rx.join().expect("rx");
    let got: u64 = rrep.streams.iter().map(|s| s.bytes).sum();
    assert_eq!(got, total);
    assert!(rrep.streams.iter().all(|s| s.end == StreamEnd::Eof));
}

/// A reset peer ends only its own stream; the worker's other streams go on.
#[test]
fn peer_reset_marks_only_that_stream() {
    let mut ps = pairs(3);
    let (a3, b3) = ps.pop().expect("p");
    let (a2, b2) = ps.pop().expect("p");
    let (a1, b1) = ps.pop().expect("p");
    let cr = Arc::new(Control::new());
    let rx = spawn_worker(
        spec(
            None,
            vec![one(1, b1, Direction::Recv), one(3, b3, Direction::Recv)],
            65536,
            None,
        ),
        cr.clone(),
    )
    .expect("rx");
    // Stream 2's receiver closes with unread data => RST to the sender.
    socket2::SockRef::from(&b2)
        .set_linger(Some(Duration::ZERO))
        .expect("linger");
    let c = Arc::new(Control::new());
    let tx = spawn_worker(
        spec(
            None,
            vec![
                one(1, a1, Direction::Send),
                one(2, a2, Direction::Send),
                one(3, a3, Direction::Send),
            ],
            65536,
            None,
        ),
        c.clone(),
    )
    .expect("tx");
    let ctr = tx.counters();
    wait_until("every stream sends", || {
        ctr.iter().all(|(_, c)| c.bytes() > 0)
    });
    drop(b2);
    // The sender's socket of stream 2 has taken the reset (TCP_CLOSE) ...
    let id2 = ctr[1].0;
    wait_until("stream 2 takes the reset", || {
        let fd = tx.stream_fd(id2).expect("stream 2 runs on this worker");
        tcp::tcp_info(fd).is_ok_and(|i| i.state == 7)
    });
    // ... and the other streams keep going well after that (the worker sees the error on
    // stream 2 in the same round as their next blocks).
    let before: Vec<u64> = ctr.iter().map(|(_, c)| c.bytes()).collect();
    wait_until("streams 1 and 3 keep going", || {
        let after: Vec<u64> = ctr.iter().map(|(_, c)| c.bytes()).collect();
        after[0] > before[0] + (4 << 20) && after[2] > before[2] + (4 << 20)
    });
    let rep = stop_and_join(tx, &c, "sender").expect("tx");
    let s2 = rep.streams.iter().find(|s| s.id == 2).expect("s2");
    assert_eq!(s2.end, StreamEnd::Error);
    assert!(
        s2.error.as_deref().unwrap_or("").contains("stream 2"),
        "{:?}",
        s2.error
    );
    for id in [1, 3] {
        let s = rep.streams.iter().find(|s| s.id == id).expect("s");
        assert_eq!(s.end, StreamEnd::Stopped);
    }
    let sent1 = rep.streams[0].bytes;
    drop(rep);
    let rrep = rx.join().expect("rx");
    assert_eq!(rrep.streams[0].bytes, sent1);
    cr.stop();
}

/// --bidir style: one worker carrying a send and a receive stream.
#[test]
fn mixed_directions_in_one_worker() {
    let mut ps = pairs(2);
    let (a2, b2) = ps.pop().expect("p");
    let (a1, b1) = ps.pop().expect("p");
    let c = Arc::new(Control::new());
    let w1 = spawn_worker(
        spec(
            None,
            vec![one(1, a1, Direction::Send), one(2, a2, Direction::Recv)],
            32768,
            None,
        ),
        c.clone(),
    )
    .expect("w1");
    let w2 = spawn_worker(
        spec(
            None,
            vec![one(1, b1, Direction::Recv), one(2, b2, Direction::Send)],
            32768,
            None,
        ),
        c.clone(),
    )
    .expect("w2");
    let ctrs: Vec<_> = [w1.counters(), w2.counters()].concat();
    wait_until("every stream of both workers moves", || {
        ctrs.iter().all(|(_, c)| c.bytes() > 0)
    });
    c.stop();
    let r1 = w1.join().expect("w1");
    let r2 = w2.join().expect("w2");
    assert_eq!(r1.send_path, Some(SendPath::Copy));
    assert_eq!(r1.recv_path, Some(RecvPath::Copy));
    for r in [&r1, &r2] {
        assert!(r.streams.iter().all(|s| s.bytes > 0), "{:?}", r.streams);
    }
    // Whatever was sent and not yet read is still in flight: receivers never exceed senders.
    assert!(r2.streams[0].bytes <= r1.streams[0].bytes);
    assert!(r1.streams[1].bytes <= r2.streams[1].bytes);
}

#[test]
fn zero_block_len_is_rejected() {
    let (a, _b) = pairs(1).pop().expect("pair");
    let r = spawn_worker(
        spec(None, vec![one(1, a, Direction::Send)], 0, None),
        Arc::new(Control::new()),
    );
    assert!(matches!(r, Err(DatapathError::InvalidSpec(_))));
}

/// The one-stream receiver waits for a block's worth (SO_RCVLOWAT), but a tail
/// shorter than that is still counted (at the next poll interval), with the peer
/// neither sending more nor closing.
#[test]
fn short_tail_is_counted_without_eof() {
    use std::io::Write;
    let (a, b) = pairs(1).pop().expect("pair");
    let c = Arc::new(Control::new());
    let rx = spawn_worker(
        spec(None, vec![one(1, b, Direction::Recv)], 1 << 20, None),
        c.clone(),
    )
    .expect("rx");
    let ctr = rx.counters()[0].1.clone();
    (&a).write_all(&[5u8; 1000]).expect("write");
    wait_until("the 1000-byte tail is counted", || ctr.bytes() >= 1000);
    assert_eq!(ctr.bytes(), 1000);
    let r = stop_and_join(rx, &c, "receiver").expect("rx");
    assert_eq!(r.streams[0].bytes, 1000);
    drop(a);
}

/// A one-stream receiver's SO_RCVLOWAT stays within a quarter of its socket's receive buffer
/// while autotuning grows it: a mark above that makes the kernel grow the buffer for it and
/// clamp the window at the mark (a 128 KiB mark set on a fresh socket held one stream over a
/// 40 ms path to 19-24 Mbit/s). It still rises above the kernel's 1 as the buffer grows.
#[test]
fn a_receivers_mark_stays_within_a_quarter_of_its_buffer() {
    use std::os::fd::AsRawFd;
    let (rx, tx, cs, cr) = one_stream_copying(128 * 1024);
    let fd = rx.stream_fd(1).expect("the receiver's socket").as_raw_fd();
    let rctr = rx.counters()[0].1.clone();
    let opt = |o| sys::getsockopt_int(fd, libc::SOL_SOCKET, o).expect("getsockopt");
    let mut highest = 0;
    // until 64 MiB have been read, and the mark has been seen above 1
    wait_until("the receiver reads 64 MiB with a mark above 1", || {
        // the mark first: the buffer only grows, so this order never reads a stale buffer
        let mark = opt(libc::SO_RCVLOWAT);
        let rcvbuf = opt(libc::SO_RCVBUF);
        assert!(
            mark <= (rcvbuf / 4).max(1),
            "SO_RCVLOWAT {mark} above a quarter of SO_RCVBUF {rcvbuf}"
        );
        highest = highest.max(mark);
        rctr.bytes() >= 64 << 20 && highest > 1
    });
    stop_and_join(tx, &cs, "sender").expect("join tx");
    cr.stop();
    rx.join().expect("join rx");
    assert!(highest > 1, "the mark never rose above 1");
}

/// A receiver carrying several streams on one epoll loop marks each socket too (epoll then
/// reports a stream once a read's worth is queued), and still counts a tail shorter than the
/// mark, with the peer neither sending more nor closing: the loop sweeps its marked streams.
#[test]
fn an_epoll_receiver_marks_its_streams_and_still_counts_a_short_tail() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let mut ps = pairs(2);
    let (a2, b2) = ps.pop().expect("pair");
    let (a1, b1) = ps.pop().expect("pair");
    let c = Arc::new(Control::new());
    let streams = vec![one(1, b1, Direction::Recv), one(2, b2, Direction::Recv)];
    let rx = spawn_worker(spec(None, streams, 128 * 1024, None), c.clone()).expect("rx");
    for id in [1, 2] {
        let fd = rx.stream_fd(id).expect("a receiver's socket").as_raw_fd();
        wait_until("the epoll receiver sets its mark", || {
            sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT).expect("getsockopt") > 1
        });
        let mark = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT).expect("mark");
        assert!(
            mark > 1000,
            "a mark of {mark} bytes would let the tail wake the reader"
        );
    }
    (&a1).write_all(&[5u8; 1000]).expect("write");
    (&a2).write_all(&[6u8; 700]).expect("write");
    let ctr = |id| {
        rx.counters()
            .into_iter()
            .find(|(i, _)| *i == id)
            .expect("counter")
            .1
    };
    let (c1, c2) = (ctr(1), ctr(2));
    wait_until("both tails are counted", || {
        c1.bytes() >= 1000 && c2.bytes() >= 700
    });
    let r = stop_and_join(rx, &c, "receiver").expect("rx");
    let mut got: Vec<(u32, u64)> = r.streams.iter().map(|s| (s.id, s.bytes)).collect();
    got.sort_unstable();
    assert_eq!(got, vec![(1, 1000), (2, 700)]);
    drop((a1, a2));
}

/// A worker woken as one that shares its CPU (`Wake::Batch`) runs under SCHED_BATCH and its
/// copying receiver sets no mark (the kernel would ACK every second segment below it), yet
/// it still counts every byte, a short tail included; a worker left as it was (`Wake::Mark`)
/// keeps the normal policy and its mark.
#[test]
fn a_batch_worker_runs_sched_batch_and_its_receiver_sets_no_mark() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let (a, b) = pairs(1).pop().expect("pair");
    let (c, d) = pairs(1).pop().expect("pair");
    let ctl = Arc::new(Control::new());
    let with = |wake, socket| {
        let mut s = spec(
            None,
            vec![one(1, socket, Direction::Recv)],
            128 * 1024,
            None,
        );
        s.wake = wake;
        spawn_worker(s, ctl.clone()).expect("rx")
    };
    let batch = with(Wake::Batch, b);
    let marked = with(Wake::Mark, d);
    let policy = |w: &WorkerHandle| sys::sched_policy(w.tid() as i32).expect("sched_getscheduler");
    let mark = |w: &WorkerHandle| {
        let fd = w.stream_fd(1).expect("socket").as_raw_fd();
        sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT).expect("getsockopt")
    };
    wait_until("the batch worker takes its policy", || {
        policy(&batch) == libc::SCHED_BATCH
    });
    wait_until("the marked receiver sets its mark", || mark(&marked) > 1);
    assert_eq!(policy(&marked), libc::SCHED_OTHER);
    (&a).write_all(&[7u8; 64 * 1024]).expect("write");
    (&c).write_all(&[8u8; 1000]).expect("write");
    let ctr = |w: &WorkerHandle| w.counters()[0].1.clone();
    let (cb, cm) = (ctr(&batch), ctr(&marked));
    wait_until("both receivers count what was sent", || {
        cb.bytes() >= 64 * 1024 && cm.bytes() >= 1000
    });
    assert_eq!(mark(&batch), 1, "a batch receiver keeps the kernel's mark");
    let rb = stop_and_join(batch, &ctl, "batch receiver").expect("join");
    let rm = marked.join().expect("join");
    assert_eq!(rb.streams[0].bytes, 64 * 1024);
    assert_eq!(rm.streams[0].bytes, 1000);
    assert!(rb.fallbacks.is_empty(), "{:?}", rb.fallbacks);
    drop((a, c));
}
