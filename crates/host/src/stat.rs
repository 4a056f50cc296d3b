//! `/proc/stat`: CPU time per CPU, in clock ticks (`USER_HZ`).
//!
//! Only the `cpu` and `cpuN` lines are read. Each holds, in this order: user, nice, system, idle,
//! iowait, irq, softirq, steal, guest, guest_nice. Old kernels print fewer columns (2.6.11 has 8,
//! 2.6.24 adds guest, 2.6.33 guest_nice); a missing column reads as 0. Offline CPUs have no line.
//!
//! The kernel counts `guest` and `guest_nice` inside `user` and `nice` as well, so they are
//! kept but never added to a total.

use std::collections::BTreeMap;

/// A line of `/proc/stat` that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatError {
    #[error("/proc/stat line {line}: {reason}: {text:?}")]
    BadLine {
        line: usize,
        reason: &'static str,
        text: String,
    },
    #[error("/proc/stat: no cpu lines")]
    NoCpuLines,
}

/// Cumulative CPU time of one CPU (or of all, for the `cpu` line), in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// All the time accounted to this CPU: the ten columns less guest and guest_nice, which the
    /// kernel already counts in user and nice.
    pub fn total(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.idle)
            .saturating_add(self.iowait)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
            .saturating_add(self.steal)
    }

    /// The time spent between an earlier reading and this one, column by column. A counter that
    /// went backwards (CPU hot-unplugged and back, or a broken hypervisor) counts as 0.
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
            guest: self.guest.saturating_sub(earlier.guest),
            guest_nice: self.guest_nice.saturating_sub(earlier.guest_nice),
        }
    }
}

/// The CPU lines of `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The `cpu` line: the sum over all CPUs.
    pub total: CpuTimes,
    /// The `cpuN` lines, by CPU number (online CPUs only).
    pub cpus: BTreeMap<u32, CpuTimes>,
}

/// Parse the text of `/proc/stat`.
pub fn parse(text: &str) -> Result<ProcStat, StatError> {
    let mut out = ProcStat::default();
    let mut saw_cpu = false;
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(label) = fields.next() else { continue };
        let Some(rest) = label.strip_prefix("cpu") else {
            continue;
        };
        let bad = |reason| StatError::BadLine {
            line: i + 1,
            reason,
            text: line.to_string(),
        };
        let cpu = if rest.is_empty() {
            None
        } else {
            Some(rest.parse::<u32>().map_err(|_| bad("bad CPU number"))?)
        };
        let mut v = [0u64; 10];
        let mut n = 0;
        for f in fields {
            if n == v.len() {
                break; // a future kernel's extra column
            }
            v[n] = f.parse().map_err(|_| bad("bad counter"))?;
            n += 1;
        }
        if n < 4 {
            return Err(bad("fewer than 4 counters"));
        }
        let times = CpuTimes {
            user: v[0],
            nice: v[1],
            system: v[2],
            idle: v[3],
            iowait: v[4],
            irq: v[5],
            softirq: v[6],
            steal: v[7],
            guest: v[8],
            guest_nice: v[9],
        };
        saw_cpu = true;
        match cpu {
            None => out.total = times,
            Some(c) => {
                out.cpus.insert(c, times);
            }
        }
    }
    if !saw_cpu {
        return Err(StatError::NoCpuLines);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "cpu  10992 0 10177 76427 486 0 436 12 0 0\n\
cpu0 5143 0 4755 39086 56 0 235 2 0 0\n\
cpu1 5848 0 5422 37340 430 0 200 9 0 0\n\
intr 480246 0 0 0\n\
ctxt 851443\n\
softirq 923103 0 25582 4 568987 50762 0 70 45555 134130 98013\n";

    #[test]
    fn parses_cpu_lines_and_skips_the_rest() {
        let s = parse(SAMPLE).unwrap();
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(s.total.user, 10992);
        let c1 = s.cpus[&1];
        assert_eq!(
            (c1.user, c1.system, c1.idle, c1.iowait, c1.softirq, c1.steal),
            (5848, 5422, 37340, 430, 200, 9)
        );
        assert_eq!(c1.total(), 5848 + 5422 + 37340 + 430 + 200 + 9);
    }

    #[test]
    fn old_kernels_with_fewer_columns_and_offline_cpus() {
        let s = parse("cpu 1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\ncpu2 1 1 1 1\n").unwrap();
        assert_eq!(s.cpus.keys().copied().collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(s.cpus[&0].softirq, 7);
        assert_eq!(s.cpus[&0].steal, 0);
        assert_eq!(s.cpus[&2].idle, 1);
    }

    #[test]
    fn guest_time_is_not_counted_twice_and_deltas_saturate() {
        let a = parse("cpu0 100 0 0 0 0 0 0 0 100 0\n").unwrap().cpus[&0];
        assert_eq!(a.total(), 100);
        let b = parse("cpu0 50 0 10 0 0 0 0 0 0 0\n").unwrap().cpus[&0];
        let d = b.since(&a);
        assert_eq!((d.user, d.system), (0, 10));
    }

    #[test]
    fn bad_input_names_the_line() {
        let e = parse("cpu 1 2 3 4\ncpuX 1 2 3 4\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(parse("cpu0 1 2 x 4\n").is_err());
        assert!(parse("cpu0 1 2\n").is_err());
        assert_eq!(parse("intr 1\n").unwrap_err(), StatError::NoCpuLines);
        assert_eq!(parse("").unwrap_err(), StatError::NoCpuLines);
    }
}
