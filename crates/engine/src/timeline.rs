//! When intervals end, and where the omit period stops: pure arithmetic on times the caller
//! passes in (a monotonic `Duration` since any origin).
//!
//! As in iperf3: intervals of `-i` seconds start when the test starts; during `-O` they are
//! reported as omitted with times since the start; when the omit period ends the statistics
//! restart, and later intervals count from the end of the omit period.
//!
//! An interval ends when its counters are read (the `now` of [`Timeline::due`]), not at its
//! nominal time: a tick that runs 5 ms late reports `1.00-2.005` and the bytes of those
//! 1.005 s, so its rate is right, and the last interval of a test ends where the summary does.
//! The nominal grid still decides when ticks are due, so lateness does not accumulate.

use std::time::Duration;

/// One interval that is due.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    /// Reported start and end, seconds.
    pub start: f64,
    pub end: f64,
    pub omitted: bool,
    /// This tick closes the omit period (counters must be snapshotted here).
    pub omit_boundary: bool,
}

/// Interval and omit bookkeeping of one test.
#[derive(Debug, Clone)]
pub struct Timeline {
    interval: Option<Duration>,
    started: Duration,
    omit_end: Duration,
    /// Start of the interval in progress (absolute): when the last one was closed.
    cur: Duration,
    /// When the next interval is due (absolute), on the nominal grid.
    grid: Option<Duration>,
    omit_done: bool,
}

impl Timeline {
    /// `interval` of zero means no interval reports (only the omit boundary ticks).
    pub fn new(started: Duration, interval: Duration, omit: Duration) -> Timeline {
        Timeline {
            interval: (!interval.is_zero()).then_some(interval),
            started,
            omit_end: started + omit,
            cur: started,
            grid: (!interval.is_zero()).then(|| started + interval),
            omit_done: omit.is_zero(),
        }
    }

    /// Absolute time the post-omit measurement starts.
    pub fn measure_start(&self) -> Duration {
        self.omit_end
    }

    /// `true` once the omit period is over.
    pub fn omit_done(&self) -> bool {
        self.omit_done
    }

    /// The next time [`Timeline::due`] will return a tick.
    pub fn next_event(&self) -> Option<Duration> {
        let by_interval = self.grid;
        if self.omit_done {
            by_interval
        } else {
            Some(by_interval.map_or(self.omit_end, |t| t.min(self.omit_end)))
        }
    }

    fn origin(&self, omitted: bool) -> Duration {
        if omitted {
            self.started
        } else {
            self.omit_end
        }
    }

    /// The next tick if it is due at `now`, ending at `now` (when the caller reads the
    /// counters).
    pub fn due(&mut self, now: Duration) -> Option<Tick> {
        let at = self.next_event()?;
        if now < at {
            return None;
        }
        Some(self.close_at(now))
    }

    fn close_at(&mut self, now: Duration) -> Tick {
        let omitted = !self.omit_done;
        let omit_boundary = omitted && now >= self.omit_end;
        if omit_boundary {
            // The measurement starts when the counters are snapshotted, here.
            self.omit_end = now;
        }
        let o = self.origin(omitted);
        let tick = Tick {
            start: self.cur.saturating_sub(o).as_secs_f64(),
            end: now.saturating_sub(o).as_secs_f64(),
            omitted,
            omit_boundary,
        };
        if omit_boundary {
            self.omit_done = true;
            // Intervals count again from the end of the omit period.
            self.grid = self.interval.map(|i| now + i);
        } else if let (Some(i), Some(g)) = (self.interval, &mut self.grid) {
            // The next boundary on the grid after `now` (a tick more than an interval late
            // makes one longer interval, never an empty one).
            while *g <= now {
                *g += i;
            }
        }
        self.cur = now;
        tick
    }

    /// Close the interval in progress at `now` (end of test). `None` if it is empty.
    pub fn finish(&mut self, now: Duration) -> Option<Tick> {
        if now <= self.cur {
            return None;
        }
        let omitted = !self.omit_done;
        let o = self.origin(omitted);
        let tick = Tick {
            start: self.cur.saturating_sub(o).as_secs_f64(),
            end: now.saturating_sub(o).as_secs_f64(),
            omitted,
            omit_boundary: false,
        };
        self.cur = now;
        Some(tick)
    }

    /// Seconds measured (after omit) up to `now`.
    pub fn measured(&self, now: Duration) -> f64 {
        now.saturating_sub(self.omit_end).as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn intervals_without_omit() {
        let mut t = Timeline::new(s(100.0), s(1.0), Duration::ZERO);
        assert_eq!(t.next_event(), Some(s(101.0)));
        assert!(t.due(s(100.5)).is_none());
        // A tick 1 ms late ends when the counters were read; the grid stays.
        let a = t.due(s(101.001)).unwrap();
        assert!((a.start, a.omitted) == (0.0, false) && (a.end - 1.001).abs() < 1e-9);
        assert_eq!(t.next_event(), Some(s(102.0)));
        let b = t.due(s(102.0)).unwrap();
        assert!((b.start - 1.001).abs() < 1e-9 && (b.end - 2.0).abs() < 1e-9);
        let f = t.finish(s(102.25)).unwrap();
        assert!((f.end - 2.25).abs() < 1e-9);
        assert!(t.finish(s(102.25)).is_none());
    }

    #[test]
    fn a_tick_later_than_an_interval_makes_one_longer_interval() {
        let mut t = Timeline::new(s(0.0), s(1.0), Duration::ZERO);
        let a = t.due(s(2.5)).unwrap();
        assert!((a.start, a.end) == (0.0, 2.5));
        assert!(t.due(s(2.5)).is_none(), "no empty interval");
        assert_eq!(t.next_event(), Some(s(3.0)));
    }

    #[test]
    fn the_end_of_the_test_closes_the_last_interval_where_the_summary_ends() {
        // The end is decided at 2.0095 and the tick due at 2.0 runs then: one interval
        // 1.0-2.0095, nothing left for the final one.
        let mut t = Timeline::new(s(0.0), s(1.0), Duration::ZERO);
        t.due(s(1.0)).unwrap();
        let last = t.due(s(2.0095)).unwrap();
        assert!((last.start - 1.0).abs() < 1e-9 && (last.end - 2.0095).abs() < 1e-9);
        assert!(t.finish(s(2.0095)).is_none());
        assert!((t.measured(s(2.0095)) - last.end).abs() < 1e-9);
    }

    #[test]
    fn omit_period_restarts_the_clock() {
        let mut t = Timeline::new(s(0.0), s(1.0), s(1.5));
        let a = t.due(s(1.0)).unwrap();
        assert_eq!(
            (a.start, a.end, a.omitted, a.omit_boundary),
            (0.0, 1.0, true, false)
        );
        let b = t.due(s(1.5)).unwrap();
        assert_eq!(
            (b.start, b.end, b.omitted, b.omit_boundary),
            (1.0, 1.5, true, true)
        );
        assert!(t.omit_done());
        let c = t.due(s(2.5)).unwrap();
        assert_eq!((c.start, c.end, c.omitted), (0.0, 1.0, false));
        assert!((t.measured(s(3.0)) - 1.5).abs() < 1e-9);
    }

    #[test]
    fn no_interval_reports_still_tick_at_the_omit_end() {
        let mut t = Timeline::new(s(0.0), Duration::ZERO, s(2.0));
        assert_eq!(t.next_event(), Some(s(2.0)));
        assert!(t.due(s(2.0)).unwrap().omit_boundary);
        assert_eq!(t.next_event(), None);
        let f = t.finish(s(5.0)).unwrap();
        assert_eq!((f.start, f.end, f.omitted), (0.0, 3.0, false));
    }
}
