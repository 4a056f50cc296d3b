//! What an end watches while the data flows: when data and control input last moved, and the
//! data rate over a window. One set of rules for both ends; each end sets the limits it has
//! (a client only `--rcv-timeout`; a server its receive and idle timeouts and its rate limit).

use std::collections::VecDeque;
use std::time::Duration;

/// A cap on the test's total data rate, measured over `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub bits_per_second: u64,
    pub window: Duration,
}

/// The limits an end applies while the data flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// No data received for this long ends the test (only while this end receives).
    pub rcv_timeout: Option<Duration>,
    /// Neither data nor a control message for this long ends the test.
    pub idle_timeout: Option<Duration>,
    /// The total rate (both directions) may not exceed this.
    pub bitrate: Option<RateLimit>,
    /// The data phase may last at most this long after it began.
    pub stop_after: Option<Duration>,
    /// Bytes that must move between two readings to count as movement (at least 1): a trickle
    /// of a few bytes every few seconds is idle.
    pub min_progress: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            rcv_timeout: None,
            idle_timeout: None,
            bitrate: None,
            stop_after: None,
            min_progress: 1,
        }
    }
}

/// Why the watch ended the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WatchStop {
    /// No data received for `quiet` (over the receive timeout `limit`).
    ReceiveIdle { quiet: Duration, limit: Duration },
    /// Neither data nor control messages for `quiet` (over the idle timeout `limit`).
    Idle { quiet: Duration, limit: Duration },
    /// The total rate over `window` exceeded the limit.
    TotalRate {
        rate: u64,
        limit: u64,
        window: Duration,
    },
    /// The data phase ran past `limit`.
    TooLong { limit: Duration },
}

/// The running watch (times are the end's clock, as the core's).
#[derive(Debug)]
pub(crate) struct Watch {
    limits: Limits,
    since: Duration,
    last_total: u64,
    last_recv: u64,
    moved_at: Duration,
    received_at: Duration,
    control_at: Duration,
    samples: VecDeque<(Duration, u64)>,
}

impl Watch {
    pub(crate) fn new(limits: Limits, now: Duration) -> Watch {
        Watch {
            limits: Limits {
                min_progress: limits.min_progress.max(1),
                ..limits
            },
            since: now,
            last_total: 0,
            last_recv: 0,
            moved_at: now,
            received_at: now,
            control_at: now,
            samples: VecDeque::new(),
        }
    }

    /// A control message arrived.
    pub(crate) fn control(&mut self, now: Duration) {
        self.control_at = now;
    }

    /// Check the data counters at `now`: what ends the test, if anything.
    pub(crate) fn check(
        &mut self,
        (sent, recv): (u64, u64),
        receives: bool,
        now: Duration,
    ) -> Option<WatchStop> {
        let l = self.limits;
        let total = sent + recv;
        if total.saturating_sub(self.last_total) >= l.min_progress {
            self.last_total = total;
            self.moved_at = now;
        }
        if recv.saturating_sub(self.last_recv) >= l.min_progress {
            self.last_recv = recv;
            self.received_at = now;
        }
        if let (Some(limit), true) = (l.rcv_timeout, receives) {
            let quiet = now.saturating_sub(self.received_at);
            if quiet > limit {
                return Some(WatchStop::ReceiveIdle { quiet, limit });
            }
        }
        if let Some(limit) = l.idle_timeout {
            let quiet = now.saturating_sub(self.moved_at.max(self.control_at));
            if quiet > limit {
                return Some(WatchStop::Idle { quiet, limit });
            }
        }
        if let Some(r) = l.bitrate {
            if self
                .samples
                .back()
                .is_none_or(|(t, _)| now.saturating_sub(*t) >= Duration::from_millis(500))
            {
                self.samples.push_back((now, total));
            }
            while self
                .samples
                .get(1)
                .is_some_and(|(t, _)| now.saturating_sub(*t) >= r.window)
            {
                self.samples.pop_front();
            }
            if let Some(&(t0, b0)) = self.samples.front() {
                let span = now.saturating_sub(t0);
                if span >= r.window && !span.is_zero() {
                    let rate = ((total - b0) as f64 * 8.0 / span.as_secs_f64()) as u64;
                    if rate > r.bits_per_second {
                        return Some(WatchStop::TotalRate {
                            rate,
                            limit: r.bits_per_second,
                            window: span,
                        });
                    }
                }
            }
        }
        if let Some(limit) = l.stop_after {
            if now.saturating_sub(self.since) > limit {
                return Some(WatchStop::TooLong { limit });
            }
        }
        None
    }

    /// When the watch next needs a reading to end the test on time.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        let l = self.limits;
        [
            l.rcv_timeout.map(|t| self.received_at + t),
            l.idle_timeout
                .map(|t| self.moved_at.max(self.control_at) + t),
            l.stop_after.map(|t| self.since + t),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t + Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn idle_silent_too_fast_and_too_long_tests_end() {
        let limits = Limits {
            rcv_timeout: Some(2 * S),
            idle_timeout: Some(5 * S),
            ..Limits::default()
        };
        // receiving: data stops, the receive timeout ends it
        let mut w = Watch::new(limits, S);
        assert_eq!(w.check((0, 100), true, 2 * S), None);
        assert_eq!(
            w.check((0, 100), true, 4 * S + Duration::from_millis(1)),
            Some(WatchStop::ReceiveIdle {
                quiet: 2 * S + Duration::from_millis(1),
                limit: 2 * S
            })
        );
        // sending only: the receive timeout does not apply, the idle timeout does; control
        // messages count as activity
        let mut w = Watch::new(limits, S);
        assert_eq!(w.check((100, 0), false, 4 * S), None);
        w.control(8 * S);
        assert_eq!(w.check((100, 0), false, 10 * S), None);
        assert!(matches!(
            w.check((100, 0), false, 14 * S),
            Some(WatchStop::Idle { .. })
        ));
        // a trickle below the minimum progress is no progress
        let mut w = Watch::new(
            Limits {
                min_progress: 1000,
                ..limits
            },
            S,
        );
        assert_eq!(w.check((0, 10), true, 2 * S), None);
        assert!(matches!(
            w.check((0, 20), true, 3 * S + Duration::from_millis(1)),
            Some(WatchStop::ReceiveIdle { .. })
        ));
        // the rate limit, over its window
        let mut w = Watch::new(
            Limits {
                bitrate: Some(RateLimit {
                    bits_per_second: 8_000,
                    window: 2 * S,
                }),
                ..Limits::default()
            },
            Duration::ZERO,
        );
        assert_eq!(w.check((0, 0), true, Duration::ZERO), None);
        assert_eq!(w.check((1000, 0), true, S), None);
        assert!(matches!(
            w.check((5000, 0), true, 2 * S),
            Some(WatchStop::TotalRate { rate: 20_000, .. })
        ));
        // the longest a data phase may run
        let mut w = Watch::new(
            Limits {
                stop_after: Some(3 * S),
                ..Limits::default()
            },
            S,
        );
        assert_eq!(w.deadline(), Some(4 * S + Duration::from_millis(1)));
        assert_eq!(w.check((1, 1), true, 4 * S), None);
        assert!(matches!(
            w.check((2, 2), true, 5 * S),
            Some(WatchStop::TooLong { .. })
        ));
    }
}
