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
//!
//! Sending and receiving streams get separate workers (so each direction can be stopped on
//! its own); in `--bidir` each CPU then hosts one worker per direction.
//!
//! How the workers are woken ([`wake`]): over loopback, unpinned workers of one stream each
//! that outnumber half the CPUs run `SCHED_BATCH` with no wake-up mark ([`Wake::Batch`]); every
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
/// the CPUs (UDP workers were not measured with more, and [`Wake`] is TCP's).
pub fn plan_udp(n: usize, placement: &WorkerPlacement) -> Vec<WorkerPlan> {
    match placement {
        WorkerPlacement::Float { cpus } if n > (*cpus).max(1) => {
            deal(n, std::iter::repeat_n(None, (*cpus).max(1)))
        }
        _ => plan(n, placement),
    }
}

/// How the workers of one test end are woken, from all of that end's workers (both
/// directions), where they may run, and whether the test runs over the loopback device
/// ([`over_loopback`]).
///
/// [`Wake::Batch`] over loopback where the workers are unpinned, carry a stream each, and
/// number more than half the CPUs: they then share CPUs with each other and with the other
/// end's workers (the sending CPU also runs both ends' TCP work). There a woken receiver that
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
                && workers.len() * 2 > (*cpus).max(1) =>
        {
            Wake::Batch
        }
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
