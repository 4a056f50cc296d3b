//! Token-bucket pacing on a caller-supplied monotonic clock (pure; unit-tested
//! without sleeping).
//!
//! The schedule is absolute: by time `t` after the start the sender may have
//! sent `rate × t + burst` bytes. Sleeping late therefore never lowers the
//! long-run rate (the next batch catches up), and sleeping early is impossible
//! because the sender asks [`Pacer::allowed`] before each batch. Debt is capped
//! at [`Pacer::max_catch_up_ns`]: after a longer stall (the thread was
//! descheduled) the schedule restarts instead of bursting for seconds.

/// Pacing state of one stream.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// payload bytes per second
    rate: f64,
    /// schedule origin, ns on the caller's clock
    start_ns: u64,
    /// bytes sent since `start_ns`
    sent: u64,
    /// bytes allowed at once on top of the schedule
    burst: u64,
    /// largest backlog of unsent allowance kept after a stall, ns of rate
    pub max_catch_up_ns: u64,
}

impl Pacer {
    /// `rate_bps` in bits per second of UDP payload (iperf3's -b), `burst`
    /// bytes allowed ahead of the schedule (about one batch).
    pub fn new(rate_bps: u64, burst: u64, now_ns: u64) -> Pacer {
        Pacer {
            rate: rate_bps as f64 / 8.0,
            start_ns: now_ns,
            sent: 0,
            burst,
            max_catch_up_ns: 50_000_000,
        }
    }

    /// Bytes per second.
    pub fn rate_bytes(&self) -> f64 {
        self.rate
    }

    /// How many datagrams of `len` bytes may be sent at `now_ns` (at most `max`).
    #[inline]
    pub fn allowed(&mut self, now_ns: u64, len: usize, max: usize) -> usize {
        let el = now_ns.saturating_sub(self.start_ns) as f64 * 1e-9;
        let mut budget = self.rate * el + self.burst as f64 - self.sent as f64;
        let cap = self.rate * self.max_catch_up_ns as f64 * 1e-9 + self.burst as f64;
        if budget > cap {
            // Stalled too long: forgive the excess by moving the origin forward.
            let excess_ns = ((budget - cap) / self.rate * 1e9) as u64;
            self.start_ns += excess_ns;
            budget = cap;
        }
        if budget < len as f64 {
            return 0;
        }
        ((budget / len as f64) as usize).min(max)
    }

    /// Record bytes sent.
    #[inline]
    pub fn sent(&mut self, bytes: u64) {
        self.sent += bytes;
    }

    /// Earliest clock value at which `n` datagrams of `len` bytes will be allowed.
    pub fn ready_at(&self, len: usize, n: usize) -> u64 {
        let need = (self.sent + (len * n) as u64).saturating_sub(self.burst) as f64;
        self.start_ns + (need / self.rate * 1e9).ceil() as u64
    }
}

/// Datagrams per paced batch: about `slice_ns` worth of the rate, within 1..=max.
pub fn paced_batch(rate_bps: u64, len: usize, max: usize, slice_ns: u64) -> usize {
    let per = rate_bps as f64 / 8.0 * slice_ns as f64 * 1e-9 / len as f64;
    (per as usize).clamp(1, max.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive a pacer with a simulated clock that wakes exactly at ready_at (plus
    /// some lateness) and check the achieved rate.
    fn simulate(rate_bps: u64, len: usize, batch: usize, late_ns: u64, secs: f64) -> f64 {
        let mut now = 1_000_000u64;
        let start = now;
        let mut p = Pacer::new(rate_bps, (len * batch) as u64, now);
        let end = start + (secs * 1e9) as u64;
        let mut total = 0u64;
        while now < end {
            let n = p.allowed(now, len, batch);
            if n > 0 {
                p.sent((n * len) as u64);
                total += (n * len) as u64;
            } else {
                now = p.ready_at(len, batch).max(now + 1) + late_ns;
            }
        }
        total as f64 * 8.0 / ((now - start) as f64 * 1e-9)
    }

    #[test]
    fn rates_within_half_a_percent_in_simulation() {
        for rate in [1_000_000u64, 1_000_000_000, 5_000_000_000, 10_000_000_000] {
            let batch = paced_batch(rate, 1472, 64, 1_000_000);
            for late in [0u64, 20_000, 60_000] {
                let got = simulate(rate, 1472, batch, late, 2.0);
                let err = (got - rate as f64).abs() / rate as f64;
                assert!(
                    err < 0.005,
                    "rate {rate} late {late}: got {got} ({:.3}%)",
                    err * 100.0
                );
            }
        }
    }

    #[test]
    fn never_ahead_of_schedule() {
        let mut p = Pacer::new(8_000_000, 1000, 0); // 1 MB/s, 1 KB burst
        assert_eq!(p.allowed(0, 1000, 100), 1);
        p.sent(1000);
        assert_eq!(p.allowed(0, 1000, 100), 0);
        assert_eq!(p.ready_at(1000, 1), 1_000_000); // 1 ms later
        assert_eq!(p.allowed(999_000, 1000, 100), 0);
        assert_eq!(p.allowed(1_000_000, 1000, 100), 1);
        assert_eq!(p.allowed(10_000_000, 1000, 100), 10);
    }

    #[test]
    fn stall_debt_is_capped() {
        let mut p = Pacer::new(8_000_000, 1000, 0); // 1 MB/s
        p.max_catch_up_ns = 10_000_000; // 10 ms = 10 KB
                                        // 5 s stall: allowance is capped at 10 KB + burst, not 5 MB.
        assert_eq!(p.allowed(5_000_000_000, 1000, 1_000_000), 11);
        p.sent(11_000);
        assert_eq!(p.allowed(5_000_000_000, 1000, 1_000_000), 0);
        assert_eq!(p.allowed(5_001_000_000, 1000, 1_000_000), 1);
    }

    #[test]
    fn batch_sizes() {
        assert_eq!(paced_batch(1_000_000, 1472, 64, 1_000_000), 1);
        assert_eq!(paced_batch(1_000_000_000, 1472, 64, 1_000_000), 64);
        assert_eq!(paced_batch(100_000_000, 1472, 64, 1_000_000), 8);
    }
}
