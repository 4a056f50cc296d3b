//! CPU pinning and placement observation for worker threads: the workspace's one pinning
//! function ([`pin_current_thread`]); the latency measurement and every worker use it.

use crate::DatapathError;
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

/// The CPU the calling thread runs on right now (vDSO/rseq-backed, cheap).
#[inline]
pub fn current_cpu() -> Option<u32> {
    u32::try_from(rustix::thread::sched_getcpu()).ok()
}

/// A fixed-size, allocation-free record of CPUs seen; sampled from hot loops.
#[derive(Clone)]
pub(crate) struct CpuSampler {
    bits: [u64; 16], // CPUs 0..1023; higher ones are folded into `overflow`
    overflow: Vec<u32>,
    tick: u32,
}

impl CpuSampler {
    /// Sample every `EVERY` calls to `tick()`.
    const EVERY: u32 = 64;

    pub(crate) fn new() -> CpuSampler {
        let mut s = CpuSampler {
            bits: [0; 16],
            overflow: Vec::new(),
            tick: 0,
        };
        s.sample();
        s
    }

    #[inline]
    pub(crate) fn tick(&mut self) {
        self.tick = self.tick.wrapping_add(1);
        if self.tick % Self::EVERY == 0 {
            self.sample();
        }
    }

    #[cold]
    pub(crate) fn sample(&mut self) {
        if let Some(c) = current_cpu() {
            if c < 1024 {
                self.bits[(c / 64) as usize] |= 1 << (c % 64);
            } else if !self.overflow.contains(&c) {
                self.overflow.push(c);
            }
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
    fn sampler_records_current_cpu() {
        let s = CpuSampler::new();
        let cpus = s.cpus();
        assert_eq!(cpus.len(), 1);
    }
}
