//! Which worker carries which stream, and where each worker runs.
//!
//! Rules (documented for users in the README):
//! - `--cpus LIST`: one worker per listed CPU, pinned there; streams are dealt round-robin
//!   (stream k goes to CPU k mod n), so `-P 8 --cpus 6-9` puts two streams on each CPU.
//! - `-A N` alone: one worker pinned to CPU N carrying every stream (iperf3 pins its whole
//!   process).
//! - neither: one unpinned worker per stream (a blocking loop each, as iperf3's thread per
//!   stream) up to the number of CPUs this process may use; beyond that, one worker per CPU
//!   with the streams shared round-robin (epoll).
//!
//! Sending and receiving streams get separate workers (so each direction can be stopped on
//! its own); in `--bidir` each CPU then hosts one worker per direction.

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
    /// Unpinned: a worker per stream, at most `max_workers` (the CPUs this process may use).
    /// More threads than CPUs cost more than they save: on two CPUs, loopback, `-P 3` and
    /// `-P 4` moved 43–65 Gbit/s with a thread per stream and 61–76 with two epoll workers per
    /// end (every receiver woken a read's worth at a time in both).
    Float { max_workers: usize },
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
            max_workers: usable_cpus(),
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
            let used = cpus.len().min(n);
            let mut w: Vec<WorkerPlan> = cpus
                .iter()
                .take(used)
                .map(|c| WorkerPlan {
                    cpu: Some(c),
                    streams: Vec::new(),
                })
                .collect();
            for i in 0..n {
                w[i % used].streams.push(i);
            }
            w
        }
        WorkerPlacement::Cpus(_) => vec![WorkerPlan {
            cpu: None,
            streams: (0..n).collect(),
        }],
        WorkerPlacement::Float { max_workers } => {
            let k = (*max_workers).max(1).min(n);
            let mut w: Vec<WorkerPlan> = (0..k)
                .map(|_| WorkerPlan {
                    cpu: None,
                    streams: Vec::new(),
                })
                .collect();
            for i in 0..n {
                w[i % k].streams.push(i);
            }
            w
        }
    }
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
        let p = plan(1024, &WorkerPlacement::Float { max_workers: 2 });
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].streams.len(), 512);
        assert!(p.iter().all(|w| w.cpu.is_none()));
        assert!(plan(0, &WorkerPlacement::Float { max_workers: 2 }).is_empty());
        let mut all: Vec<usize> = p.iter().flat_map(|w| w.streams.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..1024).collect::<Vec<_>>());
        // Up to one stream per CPU: a worker (thread) each; beyond, a worker per CPU.
        let q = plan(2, &WorkerPlacement::Float { max_workers: 2 });
        assert_eq!(q.len(), 2);
        assert!(q.iter().all(|w| w.streams.len() == 1));
        let q = plan(3, &WorkerPlacement::Float { max_workers: 2 });
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].streams, vec![0, 2]);
        assert_eq!(plan(6, &WorkerPlacement::Float { max_workers: 8 }).len(), 6);
    }
}
