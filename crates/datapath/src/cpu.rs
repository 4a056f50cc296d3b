//! CPU pinning and placement observation for worker threads: the workspace's one pinning
//! function ([`pin_current_thread`]); the latency measurement and every worker use it.

use crate::DatapathError;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use wirespeed_model::CpuSet;

/// Largest CPU number `cpu_set_t` can hold.
const SETSIZE: u32 = rustix::thread::CpuSet::MAX_CPU as u32;

/// CPUs this process may run on, ascending: the affinity of the process's
/// main thread (`sched_getaffinity(getpid())`), so a worker thread that has
/// already pinned itself still sees the whole set. Offline CPUs are never in it.
pub fn allowed_cpus() -> Result<CpuSet, DatapathError> {
    let set = rustix::thread::sched_getaffinity(Some(rustix::process::getpid()))
        .map_err(|e| DatapathError::Affinity { source: e.into() })?;
    Ok((0..SETSIZE).filter(|&i| set.is_set(i as usize)).collect())
}

/// Pin the calling thread to exactly one CPU.
///
/// A CPU that is offline, absent, or outside this process's allowed set is
/// [`DatapathError::CpuNotAllowed`] (naming the allowed set); any other
/// kernel refusal is [`DatapathError::Pin`].
pub fn pin_current_thread(cpu: u32) -> Result<(), DatapathError> {
    let refused = |cpu| DatapathError::CpuNotAllowed {
        cpu,
        allowed: allowed_cpus()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "unknown".into()),
    };
    if cpu >= SETSIZE {
        return Err(refused(cpu));
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu as usize);
    // None: the calling thread.
    match rustix::thread::sched_setaffinity(None, &set) {
        Ok(()) => Ok(()),
        // EINVAL: no CPU of the mask is online and permitted by the cpuset.
        Err(rustix::io::Errno::INVAL) => Err(refused(cpu)),
        Err(e) => Err(DatapathError::Pin {
            cpu,
            source: e.into(),
        }),
    }
}

/// The CPU the calling thread runs on right now: the C library's `sched_getcpu`, which reads
/// the CPU the kernel keeps in the thread's registered `rseq` area (glibc 2.35 and later), or
/// asks the vDSO's `getcpu` — no system call either way (rustix's `sched_getcpu` makes one).
#[inline]
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments, no memory handed over; -1 on failure
    u32::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// Where a worker thread runs, as the thread itself last saw it ([`current_cpu`] at each of its
/// I/O calls): what an observer would otherwise learn from the thread's
/// `/proc/self/task/TID/stat` (`processor`), which the kernel prints whole at each read. One
/// writer (the worker), any number of readers.
#[derive(Debug)]
pub struct CpuNow(AtomicU32);

impl Default for CpuNow {
    fn default() -> CpuNow {
        CpuNow(AtomicU32::new(u32::MAX))
    }
}

impl CpuNow {
    /// The CPU last noted; `None` before the thread noted one.
    #[inline]
    pub fn get(&self) -> Option<u32> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&c| c != u32::MAX)
    }

    /// Note the calling thread's CPU now (a worker's sampler does at each I/O call; so may a
    /// test or a bench standing in for a worker).
    #[inline]
    pub fn note(&self) {
        if let Some(c) = current_cpu() {
            self.set(c);
        }
    }

    #[inline]
    fn set(&self, cpu: u32) {
        self.0.store(cpu, Ordering::Relaxed);
    }
}

/// A worker thread as an observer is told of it: its kernel id (its `/proc/self/task` entry),
/// where it runs now, and which way its streams carry data at this end.
#[derive(Debug, Clone)]
pub struct ThreadWatch {
    pub tid: u32,
    pub cpu: Arc<CpuNow>,
    /// `Sender` or `Receiver`: a worker carries one direction's streams (in `--bidir` each
    /// end runs a worker per direction); `None` where whoever started it did not say.
    pub role: Option<wirespeed_model::observation::Role>,
}

impl ThreadWatch {
    /// A thread that has noted no CPU (an observer reads where it ran from its `stat`).
    pub fn unnoted(tid: u32) -> ThreadWatch {
        ThreadWatch {
            tid,
            cpu: Arc::default(),
            role: None,
        }
    }
}

/// A fixed-size, allocation-free record of CPUs seen, sampled at each I/O call of a worker's
/// loop, which also notes where the worker runs now ([`CpuNow`]).
#[derive(Clone)]
pub(crate) struct CpuSampler {
    bits: [u64; 16], // CPUs 0..1023; higher ones are folded into `overflow`
    overflow: Vec<u32>,
    now: Arc<CpuNow>,
}

impl CpuSampler {
    pub(crate) fn new(now: Arc<CpuNow>) -> CpuSampler {
        let mut s = CpuSampler {
            bits: [0; 16],
            overflow: Vec::new(),
            now,
        };
        s.sample();
        s
    }

    /// Where the worker runs now: noted for the observer, and recorded.
    #[inline]
    pub(crate) fn sample(&mut self) {
        let Some(c) = current_cpu() else {
            return;
        };
        self.now.set(c);
        if c < 1024 {
            self.bits[(c / 64) as usize] |= 1 << (c % 64);
        } else {
            self.note_high(c);
        }
    }

    #[cold]
    fn note_high(&mut self, c: u32) {
        if !self.overflow.contains(&c) {
            self.overflow.push(c);
        }
    }

    pub(crate) fn cpus(&self) -> CpuSet {
        let mut v: CpuSet = (0..1024u32)
            .filter(|c| self.bits[(c / 64) as usize] & (1 << (c % 64)) != 0)
            .collect();
        v.extend(self.overflow.iter().copied());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_to_each_allowed_cpu_and_observe_it() {
        let allowed = allowed_cpus().expect("affinity");
        assert!(!allowed.is_empty());
        let handle = std::thread::spawn(move || {
            for c in allowed.iter() {
                pin_current_thread(c).expect("pin");
                // After sched_setaffinity to one CPU the thread is migrated before return.
                assert_eq!(current_cpu(), Some(c));
            }
        });
        handle.join().expect("thread");
    }

    #[test]
    fn pin_to_absent_cpu_is_distinct_error() {
        let err = std::thread::spawn(|| pin_current_thread(SETSIZE - 1))
            .join()
            .expect("thread");
        match err {
            Err(DatapathError::CpuNotAllowed { cpu, .. }) => assert_eq!(cpu, SETSIZE - 1),
            other => panic!("expected CpuNotAllowed, got {other:?}"),
        }
        let err = std::thread::spawn(|| pin_current_thread(1 << 20))
            .join()
            .expect("thread");
        assert!(matches!(err, Err(DatapathError::CpuNotAllowed { .. })));
    }

    #[test]
    fn sampler_records_current_cpu_and_notes_it_for_the_observer() {
        let allowed = allowed_cpus().expect("affinity");
        let now = Arc::new(CpuNow::default());
        assert_eq!(now.get(), None, "nothing noted yet");
        let seen = std::thread::spawn({
            let now = Arc::clone(&now);
            move || {
                let mut s = CpuSampler::new(now);
                for c in allowed.iter() {
                    pin_current_thread(c).expect("pin");
                    s.sample();
                }
                s.cpus()
            }
        })
        .join()
        .expect("thread");
        // every CPU it was pinned to, and the last one as where it runs now
        let allowed = allowed_cpus().expect("affinity");
        assert_eq!(seen, allowed);
        assert_eq!(now.get(), allowed.iter().last());
    }
}
