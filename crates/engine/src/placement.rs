//! Which worker carries which stream, and where each worker runs.
//!
//! Rules (documented for users in the README):
//! - `--cpus LIST`: one worker per listed CPU, pinned there; streams are dealt round-robin
//!   (stream k goes to CPU k mod n), so `-P 8 --cpus 6-9` puts two streams on each CPU.
//! - `-A N` alone: one worker pinned to CPU N carrying every stream (iperf3 pins its whole
//!   process).
//! - neither: one unpinned worker per stream (a blocking loop each, as iperf3's thread per
//!   stream) up to [`THREADS_PER_CPU`] per CPU this process may use, and no more than
//!   [`SHARED_THREADS_MAX`] unless the CPUs are more ([`float_threads_max`]); beyond that, one
//!   worker per CPU with the streams shared round-robin (epoll).
//! - neither, over loopback between two wirespeed ends, TCP, with at least as many streams a
//!   direction as CPUs and a thread each: each stream's two ends on one CPU, stream k of either
//!   direction on the k-th of the CPUs the client names ([`pair_cpus`]), a thread each, pinned.
//!
//! Sending and receiving streams get separate workers (so each direction can be stopped on
//! its own); in `--bidir` each CPU then hosts one worker per direction.
//!
//! How the workers are woken ([`wake`]): over loopback, workers of one stream each that crowd
//! the CPUs, unpinned or paired, run `SCHED_BATCH` with no wake-up mark ([`Wake::Batch`]); every
//! other worker keeps its mark ([`Wake::Mark`]).

use std::net::IpAddr;
use wirespeed_datapath::Wake;
use wirespeed_host::CpuSet;

/// One planned worker: where it runs and the indices of the streams it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPlan {
    pub cpu: Option<u32>,
    pub streams: Vec<usize>,
}

/// Where workers may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerPlacement {
    /// One pinned worker per CPU (`--cpus`).
    Cpus(CpuSet),
    /// Everything on one CPU (`-A`).
    Affinity(u32),
    /// Unpinned over `cpus` CPUs (those this process may use): a worker per stream up to
    /// [`float_threads_max`], then a worker per CPU.
    Float { cpus: usize },
    /// Each stream's two ends on one CPU (over loopback, [`pair_cpus`]): a worker per stream,
    /// stream k's pinned to the k mod len'th of these CPUs, in this order.
    Paired(Vec<u32>),
}

/// Unpinned threads per CPU before streams share epoll workers. Measured on two CPUs, loopback,
/// 128 KiB, BBR, `-t 3`, rounds alternating with iperf3 3.21 (Gbit/s): a thread per stream
/// ([`Wake::Batch`]) moved 44–61 at `-P 3`, 62–65 at `-P 4` and 38–49 at `-P 8`, where two
/// epoll workers per end (marked) moved 33–38, 32–34 and 29–41, and iperf3 3.21 29–39, 33–37
/// and 33–47. Each thread holds its read buffer (1 MiB) or its block, so past this many the
/// streams share workers.
pub const THREADS_PER_CPU: usize = 4;

/// More unpinned threads than CPUs only up to this many in all (iperf3's most streams): a
/// thread holds a 1 MiB read buffer, and a host of more CPUs already has one a stream up to
/// its CPU count.
pub const SHARED_THREADS_MAX: usize = 128;

/// How many unpinned threads an end runs at most, a stream each, on `cpus` CPUs.
pub fn float_threads_max(cpus: usize) -> usize {
    let cpus = cpus.max(1);
    cpus.max(cpus.saturating_mul(THREADS_PER_CPU).min(SHARED_THREADS_MAX))
}

impl WorkerPlacement {
    /// A CPU set (`--cpus`) if given, else one CPU (`-A`), else none: both ends' rule, applied
    /// by the server first to the client's wishes, then to its own options.
    pub fn pinned(cpus: Option<CpuSet>, affinity: Option<u32>) -> Option<WorkerPlacement> {
        cpus.map(WorkerPlacement::Cpus)
            .or(affinity.map(WorkerPlacement::Affinity))
    }

    /// Unpinned, over the CPUs this process may use.
    pub fn float() -> WorkerPlacement {
        WorkerPlacement::Float {
            cpus: usable_cpus(),
        }
    }

    /// The CPUs a peer named for each stream's two ends ([`pair_cpus`]), where this end may run
    /// on every one of them (`allowed`) and its `streams` streams a direction would get a thread
    /// each unpinned ([`float_threads_max`]); `None` (unpinned, then) for an empty list, one that
    /// names a CPU this end may not use, or more streams (a pairing never adds threads).
    pub fn paired(cpus: &[u32], allowed: &CpuSet, streams: usize) -> Option<WorkerPlacement> {
        (!cpus.is_empty()
            && streams <= float_threads_max(allowed.len())
            && cpus.iter().all(|&c| allowed.contains(c)))
        .then(|| WorkerPlacement::Paired(cpus.to_vec()))
    }

    /// This placement as it applies to streams that do not run over loopback: a pairing is
    /// loopback's ([`pair_cpus`]), so there the workers run unpinned.
    pub fn off_loopback(self) -> WorkerPlacement {
        match self {
            WorkerPlacement::Paired(_) => WorkerPlacement::float(),
            other => other,
        }
    }
}

/// Whether one end's `workers` threads crowd its `cpus` CPUs: they number more than half of
/// them, so over loopback, where the other end's as many run on the same CPUs, every CPU
/// carries more than one data thread. Where [`wake`] makes them wait for each other
/// ([`Wake::Batch`]); [`pair_cpus`] asks more.
pub fn crowded(workers: usize, cpus: usize) -> bool {
    workers.saturating_mul(2) > cpus.max(1)
}

/// The CPUs for each stream's two ends of a test over loopback (the client decides, the server
/// follows: the protocol extension's `paired_cpus`), or `None` where the streams run unpinned:
/// `allowed` rotated by `offset`, where two or more CPUs carry `streams` streams a direction,
/// at least one a CPU (so no CPU is left idle: both directions' stream k share the k-th) and a
/// thread each ([`float_threads_max`]). Such streams always crowd the CPUs ([`crowded`]): the
/// paired threads run batch.
///
/// Over loopback a stream's receive path runs in the sender's system call (the segments are
/// delivered in its softirq, on its CPU), so a receiver on that CPU copies from a warm cache and
/// is woken without an interrupt to another CPU; unpinned, the scheduler moves the two ends
/// apart. Measured on two CPUs, loopback, 128 KiB, BBR, `-t 3`, a thread per stream under
/// [`Wake::Batch`], the bench's `--scale` ladder (CPU per bit ÷ iperf3 3.21's, three rounds):
/// `-P 4` 0.413 0.481 0.626 paired against 0.778 0.921 0.855 unpinned, `-P 8` 0.792 0.731
/// 0.873 against 0.923 0.784 0.934 (`bench/README.md`). Fewer streams than CPUs stay
/// unpinned: paired, the CPUs without a stream would idle where unpinned threads use them (one
/// stream each way on two CPUs; `--bidir -P 1`, whose four threads would share one CPU). The
/// offset (random, from the client) keeps concurrent tests from all starting on the first CPU.
pub fn pair_cpus(allowed: &CpuSet, streams: usize, offset: usize) -> Option<Vec<u32>> {
    let cpus: Vec<u32> = allowed.iter().collect();
    let n = cpus.len();
    if n < 2 || streams < n || streams > float_threads_max(n) {
        return None;
    }
    let k = offset % n;
    Some(cpus[k..].iter().chain(&cpus[..k]).copied().collect())
}

/// Number of CPUs this process may use (at least 1).
pub fn usable_cpus() -> usize {
    wirespeed_datapath::cpu::allowed_cpus().map_or(1, |v| v.len().max(1))
}

/// Spread `n` streams over workers.
pub fn plan(n: usize, placement: &WorkerPlacement) -> Vec<WorkerPlan> {
    if n == 0 {
        return Vec::new();
    }
    match placement {
        WorkerPlacement::Affinity(c) => vec![WorkerPlan {
            cpu: Some(*c),
            streams: (0..n).collect(),
        }],
        WorkerPlacement::Cpus(cpus) if !cpus.is_empty() => {
            deal(n, cpus.iter().take(cpus.len().min(n)).map(Some))
        }
        WorkerPlacement::Cpus(_) => vec![WorkerPlan {
            cpu: None,
            streams: (0..n).collect(),
        }],
        WorkerPlacement::Float { cpus } => {
            let k = if n <= float_threads_max(*cpus) {
                n
            } else {
                (*cpus).max(1)
            };
            deal(n, std::iter::repeat_n(None, k))
        }
        WorkerPlacement::Paired(cpus) if !cpus.is_empty() => {
            deal(n, (0..n).map(|k| Some(cpus[k % cpus.len()])))
        }
        WorkerPlacement::Paired(_) => plan(n, &WorkerPlacement::float()),
    }
}

/// Streams `0..n` dealt round-robin over one worker per place given (stream k on the k mod
/// len'th).
fn deal(n: usize, places: impl Iterator<Item = Option<u32>>) -> Vec<WorkerPlan> {
    let mut w: Vec<WorkerPlan> = places
        .map(|cpu| WorkerPlan {
            cpu,
            streams: Vec::new(),
        })
        .collect();
    let k = w.len();
    for i in 0..n {
        w[i % k].streams.push(i);
    }
    w
}

/// Spread `n` UDP streams over workers: as [`plan`], but unpinned a thread per stream only up to
/// the CPUs (UDP workers were not measured with more, and [`Wake`] and the pairing are TCP's).
pub fn plan_udp(n: usize, placement: &WorkerPlacement) -> Vec<WorkerPlan> {
    match placement {
        WorkerPlacement::Float { cpus } if n > (*cpus).max(1) => {
            deal(n, std::iter::repeat_n(None, (*cpus).max(1)))
        }
        WorkerPlacement::Paired(_) => plan_udp(n, &WorkerPlacement::float()),
        _ => plan(n, placement),
    }
}

/// How the workers of one test end are woken, from all of that end's workers (both
/// directions), where they may run, and whether the test runs over the loopback device
/// ([`over_loopback`]).
///
/// [`Wake::Batch`] over loopback where the workers are unpinned, carry a stream each, and
/// number more than half the CPUs ([`crowded`]), or are paired ([`pair_cpus`], which asks as
/// much): they then share CPUs with each other and with the other end's workers (the sending
/// CPU also runs both ends' TCP work). There a woken receiver that
/// preempts the running sender finds a segment or two to read, and a wake-up mark makes the
/// kernel ACK every second segment at once while the reader waits (twice the TCP work of both
/// ends in a profile of `-P 8`); under `SCHED_BATCH` without a mark it waits for the sender's
/// slice and reads a batch. Measured on two CPUs, loopback, 128 KiB, BBR, `-t 3`, a thread
/// per stream (Gbit/s): `-P 2` 51–54 batch against 37–39 marked (a mark under batch: 31–34),
/// `-P 8` 38–49 against 33–34 marked. `-P 1` (two threads on two CPUs, one each) moved 12–14
/// batch against 17–20 marked, so one stream keeps its mark. [`Wake::Mark`] everywhere else:
/// pinned workers (placed by the user); epoll workers of many streams (a mark spares them a
/// wake-up per segment of any of their streams: `-P 8` on two epoll workers per end moved
/// 31–33 batch without marks against 29–41 marked); and any other path, a veth pair between
/// two namespaces on the same two CPUs included: there, MTU 1500, batch cost 0.077–0.097
/// CPU-s/Gbit at `-P 2`, `-P 4` and `-P 8` where marked threads cost 0.051–0.083 (the
/// rule before it, threads up to the CPUs then epoll workers, all marked: 0.060–0.078).
pub fn wake(placement: &WorkerPlacement, workers: &[WorkerPlan], over_loopback: bool) -> Wake {
    match placement {
        WorkerPlacement::Float { cpus }
            if over_loopback
                && workers.iter().all(|w| w.streams.len() == 1)
                && crowded(workers.len(), *cpus) =>
        {
            Wake::Batch
        }
        WorkerPlacement::Paired(_) if over_loopback => Wake::Batch,
        _ => Wake::Mark,
    }
}

/// Whether a connection from `local` to `peer` runs over the loopback device: a loopback
/// address, or one of this host's own (the kernel routes a host's traffic to itself through
/// `lo`, whichever address it names).
pub fn over_loopback(local: IpAddr, peer: IpAddr) -> bool {
    let canon = |a: IpAddr| a.to_canonical();
    canon(peer).is_loopback() || canon(local) == canon(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_get_streams_round_robin() {
        let p = plan(5, &WorkerPlacement::Cpus(CpuSet::from_cpus([6, 7])));
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            WorkerPlan {
                cpu: Some(6),
                streams: vec![0, 2, 4]
            }
        );
        assert_eq!(
            p[1],
            WorkerPlan {
                cpu: Some(7),
                streams: vec![1, 3]
            }
        );
        // More CPUs than streams: only as many workers as streams.
        assert_eq!(
            plan(1, &WorkerPlacement::Cpus(CpuSet::from_cpus([1, 2, 3]))).len(),
            1
        );
    }

    #[test]
    fn affinity_and_float() {
        let p = plan(3, &WorkerPlacement::Affinity(4));
        assert_eq!(
            p,
            vec![WorkerPlan {
                cpu: Some(4),
                streams: vec![0, 1, 2]
            }]
        );
        let p = plan(1024, &WorkerPlacement::Float { cpus: 2 });
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].streams.len(), 512);
        assert!(p.iter().all(|w| w.cpu.is_none()));
        assert!(plan(0, &WorkerPlacement::Float { cpus: 2 }).is_empty());
        let mut all: Vec<usize> = p.iter().flat_map(|w| w.streams.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..1024).collect::<Vec<_>>());
        // Up to THREADS_PER_CPU streams per CPU: a worker (thread) each; beyond, a worker per
        // CPU.
        for n in [1, 2, 3, 8] {
            let q = plan(n, &WorkerPlacement::Float { cpus: 2 });
            assert_eq!(q.len(), n, "-P {n} on two CPUs");
            assert!(q.iter().all(|w| w.streams.len() == 1));
        }
        let q = plan(9, &WorkerPlacement::Float { cpus: 2 });
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].streams, vec![0, 2, 4, 6, 8]);
        assert_eq!(plan(64, &WorkerPlacement::Float { cpus: 16 }).len(), 64);
        assert_eq!(plan(65, &WorkerPlacement::Float { cpus: 16 }).len(), 16);
        // more threads than CPUs up to 128 in all; a larger host a thread per CPU at most
        assert_eq!(plan(128, &WorkerPlacement::Float { cpus: 64 }).len(), 128);
        assert_eq!(plan(129, &WorkerPlacement::Float { cpus: 64 }).len(), 64);
        assert_eq!(plan(512, &WorkerPlacement::Float { cpus: 512 }).len(), 512);
        assert_eq!(plan(513, &WorkerPlacement::Float { cpus: 512 }).len(), 512);
        assert_eq!(float_threads_max(0), 4);
    }

    #[test]
    fn udp_streams_get_a_thread_each_only_up_to_the_cpus() {
        let float = WorkerPlacement::Float { cpus: 2 };
        assert_eq!(plan_udp(2, &float).len(), 2);
        let p = plan_udp(3, &float);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].streams, vec![0, 2]);
        assert_eq!(p[1].streams, vec![1]);
        let pinned = WorkerPlacement::Cpus(CpuSet::from_cpus([6, 7]));
        assert_eq!(plan_udp(5, &pinned), plan(5, &pinned));
        assert!(plan_udp(0, &float).is_empty());
    }

    /// Unpinned workers of a stream each that outnumber half the CPUs run batch; one stream
    /// per end on two CPUs, pinned workers and epoll workers keep their marks.
    #[test]
    fn workers_that_share_cpus_run_batch_and_the_rest_keep_their_marks() {
        let float = |cpus| WorkerPlacement::Float { cpus };
        // a test end's workers: its receivers' plan and its senders'
        let end = |recv: usize, send: usize, placement: &WorkerPlacement| {
            let mut w = plan(recv, placement);
            w.extend(plan(send, placement));
            wake(placement, &w, true)
        };
        // two CPUs: -P 1 one way keeps its mark; -P 2 on, and --bidir -P 1, share them
        assert_eq!(end(1, 0, &float(2)), Wake::Mark);
        assert_eq!(end(0, 1, &float(2)), Wake::Mark);
        for p in [2, 3, 4, 8] {
            assert_eq!(end(p, 0, &float(2)), Wake::Batch, "-P {p}");
            assert_eq!(end(0, p, &float(2)), Wake::Batch, "-R -P {p}");
        }
        assert_eq!(end(1, 1, &float(2)), Wake::Batch, "--bidir");
        // beyond THREADS_PER_CPU a CPU, epoll workers of many streams each: marked
        assert_eq!(end(9, 0, &float(2)), Wake::Mark);
        // one CPU: even one stream shares it with the kernel's work for the other end
        assert_eq!(end(1, 0, &float(1)), Wake::Batch);
        // sixteen CPUs: up to eight workers keep their marks
        assert_eq!(end(8, 0, &float(16)), Wake::Mark);
        assert_eq!(end(9, 0, &float(16)), Wake::Batch);
        assert_eq!(end(4, 4, &float(16)), Wake::Mark);
        // the user's placement is kept as placed
        let pinned = WorkerPlacement::Cpus(CpuSet::from_cpus([0, 1]));
        assert_eq!(end(8, 0, &pinned), Wake::Mark);
        assert_eq!(end(8, 0, &WorkerPlacement::Affinity(0)), Wake::Mark);
        // any path but loopback keeps its marks (a veth pair on the same CPUs included)
        let w = plan(8, &float(2));
        assert_eq!(wake(&float(2), &w, false), Wake::Mark);
    }

    /// Each stream's two ends share a CPU where two or more CPUs carry a stream a direction
    /// each at least, a thread each: never with one CPU, fewer streams than CPUs (one stream
    /// each way on two, `--bidir -P 1`), or streams past a thread each; and a pairing always
    /// runs batch.
    #[test]
    fn streams_pair_where_every_cpu_carries_one() {
        let two = CpuSet::from_cpus([0, 1]);
        assert_eq!(
            pair_cpus(&two, 1, 0),
            None,
            "-P 1 (and --bidir -P 1) keep both CPUs"
        );
        for p in [2, 3, 4, 8] {
            assert_eq!(pair_cpus(&two, p, 0), Some(vec![0, 1]), "-P {p}");
        }
        assert_eq!(
            pair_cpus(&two, 9, 0),
            None,
            "epoll workers of many streams each"
        );
        assert_eq!(pair_cpus(&CpuSet::from_cpus([3]), 8, 0), None, "one CPU");
        assert_eq!(pair_cpus(&two, 0, 0), None);
        // the offset rotates the CPUs: tests with different offsets start on different CPUs
        let four = CpuSet::from_cpus([2, 4, 6, 8]);
        assert_eq!(pair_cpus(&four, 8, 1), Some(vec![4, 6, 8, 2]));
        assert_eq!(pair_cpus(&four, 8, 7), Some(vec![8, 2, 4, 6]));
        assert_eq!(pair_cpus(&four, 3, 0), None, "three streams on four CPUs");
        assert_eq!(pair_cpus(&four, 4, 0).map(|c| c.len()), Some(4));
        // wherever streams pair, their workers crowd the CPUs and run batch, in one direction
        // or both; and every CPU carries a stream
        for cpus in 1..=8u32 {
            let set: CpuSet = (0..cpus).collect();
            let float = WorkerPlacement::Float {
                cpus: cpus as usize,
            };
            for p in 1..=40 {
                let Some(c) = pair_cpus(&set, p, 0) else {
                    assert!(
                        cpus < 2 || (p as u32) < cpus || plan(p, &float).len() < p,
                        "{cpus} CPUs, -P {p}"
                    );
                    continue;
                };
                let place = WorkerPlacement::Paired(c);
                for dirs in [1, 2] {
                    let w: Vec<WorkerPlan> = (0..dirs).flat_map(|_| plan(p, &place)).collect();
                    assert_eq!(w.len(), p * dirs);
                    assert_eq!(wake(&float, &w, true), Wake::Batch, "{cpus} CPUs, -P {p}");
                    assert_eq!(wake(&place, &w, true), Wake::Batch);
                    let used: CpuSet = w.iter().filter_map(|w| w.cpu).collect();
                    assert_eq!(used, set, "{cpus} CPUs, -P {p}: every CPU carries a stream");
                }
            }
        }
    }

    /// A paired placement pins stream k of a direction to the k mod len'th CPU named, a thread
    /// each; off loopback, or for UDP, the streams run as unpinned ones would.
    #[test]
    fn paired_streams_run_a_thread_each_on_their_cpu() {
        let place = WorkerPlacement::Paired(vec![1, 0]);
        let p = plan(5, &place);
        let got: Vec<(Option<u32>, Vec<usize>)> =
            p.into_iter().map(|w| (w.cpu, w.streams)).collect();
        assert_eq!(
            got,
            vec![
                (Some(1), vec![0]),
                (Some(0), vec![1]),
                (Some(1), vec![2]),
                (Some(0), vec![3]),
                (Some(1), vec![4]),
            ]
        );
        assert_eq!(wake(&place, &plan(5, &place), true), Wake::Batch);
        assert_eq!(wake(&place, &plan(5, &place), false), Wake::Mark);
        assert!(matches!(
            place.clone().off_loopback(),
            WorkerPlacement::Float { .. }
        ));
        let pinned = WorkerPlacement::Cpus(CpuSet::from_cpus([3]));
        assert_eq!(pinned.clone().off_loopback(), pinned);
        assert!(plan_udp(4, &place).iter().all(|w| w.cpu.is_none()));
        assert!(plan(3, &WorkerPlacement::Paired(Vec::new()))
            .iter()
            .all(|w| w.cpu.is_none()));
    }

    /// What a peer names is followed only where this end may run on all of it, for no more
    /// streams than would get a thread each.
    #[test]
    fn a_peers_pairing_is_followed_only_within_this_ends_cpus() {
        let allowed = CpuSet::from_cpus([0, 1, 2, 3]);
        assert_eq!(
            WorkerPlacement::paired(&[2, 3, 0, 1], &allowed, 8),
            Some(WorkerPlacement::Paired(vec![2, 3, 0, 1]))
        );
        assert_eq!(WorkerPlacement::paired(&[2, 9], &allowed, 8), None);
        assert_eq!(WorkerPlacement::paired(&[], &allowed, 8), None);
        assert_eq!(
            WorkerPlacement::paired(&[0, 1], &allowed, float_threads_max(4) + 1),
            None,
            "a pairing never adds threads"
        );
    }

    #[test]
    fn loopback_is_a_loopback_address_or_the_hosts_own() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("address");
        assert!(over_loopback(ip("127.0.0.1"), ip("127.0.0.1")));
        assert!(over_loopback(ip("127.0.0.1"), ip("127.0.0.2")));
        assert!(over_loopback(ip("::1"), ip("::1")));
        assert!(over_loopback(
            ip("::ffff:127.0.0.1"),
            ip("::ffff:127.0.0.1")
        ));
        // this host's own address: routed through lo
        assert!(over_loopback(ip("192.0.2.7"), ip("192.0.2.7")));
        // a peer across a veth pair or a NIC
        assert!(!over_loopback(ip("10.79.0.1"), ip("10.79.0.2")));
        assert!(!over_loopback(ip("2001:db8::1"), ip("2001:db8::2")));
    }
}
