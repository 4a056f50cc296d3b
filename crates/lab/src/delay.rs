//! The delay line's scheduling, without I/O or a clock: packets in with the time they arrived,
//! packets out once they are due (arrival + the hold time). Time is injected as nanoseconds on
//! any monotonic clock, so the rules are unit-tested without sleeping; [`crate::relay`] feeds it
//! from a TUN device.
//!
//! One hold time for every packet makes arrival order the due order, so the queue is a FIFO.
//! It is bounded in packets and in bytes: a packet that would exceed either bound is dropped and
//! counted (a router's full queue), never held longer.

use std::collections::VecDeque;

/// Bounds of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub packets: usize,
    pub bytes: usize,
}

/// The relay's bounds: 64 MiB or 100,000 packets, several times what 2 Gbit/s puts in flight
/// over 100 ms (25 MB), so the queue only fills when the path is pushed beyond what it carries.
pub const DEFAULT_BOUNDS: Bounds = Bounds {
    packets: 100_000,
    bytes: 64 << 20,
};

/// What passed through the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineStats {
    /// Packets taken in (and held).
    pub queued: u64,
    /// Packets handed out when due.
    pub released: u64,
    /// Packets dropped because the queue was full.
    pub dropped: u64,
    /// The most packets held at once.
    pub peak_packets: usize,
}

/// A FIFO of packets, each released `hold_ns` after it arrived.
#[derive(Debug)]
pub struct DelayLine {
    hold_ns: u64,
    bounds: Bounds,
    queue: VecDeque<(u64, Vec<u8>)>,
    bytes: usize,
    stats: LineStats,
    /// Buffers of released packets, reused for the next arrivals (no allocation per packet).
    spare: Vec<Vec<u8>>,
}

impl DelayLine {
    pub fn new(hold_ns: u64, bounds: Bounds) -> DelayLine {
        DelayLine {
            hold_ns,
            bounds,
            queue: VecDeque::new(),
            bytes: 0,
            stats: LineStats::default(),
            spare: Vec::new(),
        }
    }

    pub fn hold_ns(&self) -> u64 {
        self.hold_ns
    }

    /// A packet arrived at `now`: held until `now + hold`, or dropped (`false`) when the
    /// queue is full.
    pub fn push(&mut self, now: u64, packet: &[u8]) -> bool {
        if self.queue.len() >= self.bounds.packets || self.bytes + packet.len() > self.bounds.bytes
        {
            self.stats.dropped += 1;
            return false;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(packet);
        self.bytes += buf.len();
        // a clock that stepped back must not reorder the line: never due before the last one
        let due = now
            .saturating_add(self.hold_ns)
            .max(self.queue.back().map_or(0, |(d, _)| *d));
        self.queue.push_back((due, buf));
        self.stats.queued += 1;
        self.stats.peak_packets = self.stats.peak_packets.max(self.queue.len());
        true
    }

    /// The oldest packet when it is due at `now`; give its buffer back with [`DelayLine::recycle`].
    pub fn pop_due(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.queue.front().is_some_and(|(due, _)| *due <= now) {
            let (_, buf) = self.queue.pop_front()?;
            self.bytes -= buf.len();
            self.stats.released += 1;
            Some(buf)
        } else {
            None
        }
    }

    /// A released packet's buffer, for reuse (a few are kept).
    pub fn recycle(&mut self, buf: Vec<u8>) {
        if self.spare.len() < 1024 {
            self.spare.push(buf);
        }
    }

    /// When the next packet is due.
    pub fn next_due(&self) -> Option<u64> {
        self.queue.front().map(|(due, _)| *due)
    }

    /// How long to wait from `now` for the next due packet (`None`: nothing held).
    pub fn wait_ns(&self, now: u64) -> Option<u64> {
        self.next_due().map(|d| d.saturating_sub(now))
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn stats(&self) -> LineStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_packet_leaves_exactly_its_hold_after_it_arrived() {
        let mut l = DelayLine::new(10 * MS, DEFAULT_BOUNDS);
        assert!(l.is_empty() && l.wait_ns(0).is_none());
        assert!(l.push(5 * MS, b"one"));
        assert_eq!(l.next_due(), Some(15 * MS));
        assert_eq!(l.wait_ns(7 * MS), Some(8 * MS));
        assert_eq!(l.pop_due(15 * MS - 1), None);
        assert_eq!(l.pop_due(15 * MS).as_deref(), Some(&b"one"[..]));
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn packets_leave_in_arrival_order_each_after_its_own_hold() {
        let mut l = DelayLine::new(10 * MS, DEFAULT_BOUNDS);
        l.push(0, b"a");
        l.push(3 * MS, b"b");
        l.push(4 * MS, b"c");
        // at 12 ms only the first is due; the line then waits for the second
        assert_eq!(l.pop_due(12 * MS).as_deref(), Some(&b"a"[..]));
        assert_eq!(l.pop_due(12 * MS), None);
        assert_eq!(l.wait_ns(12 * MS), Some(MS));
        // late: everything due goes at once, in order
        let out: Vec<_> = std::iter::from_fn(|| l.pop_due(20 * MS)).collect();
        assert_eq!(out, [b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(
            l.stats(),
            LineStats {
                queued: 3,
                released: 3,
                dropped: 0,
                peak_packets: 3
            }
        );
    }

    #[test]
    fn a_full_queue_drops_and_counts_by_packets_and_by_bytes() {
        let mut l = DelayLine::new(
            MS,
            Bounds {
                packets: 2,
                bytes: 10,
            },
        );
        assert!(l.push(0, &[0; 4]));
        assert!(l.push(0, &[0; 4]));
        assert!(!l.push(0, &[0; 1]), "a third packet");
        assert_eq!(l.bytes(), 8);
        l.pop_due(MS).unwrap();
        assert!(!l.push(MS, &[0; 7]), "4 + 7 bytes exceed 10");
        assert!(l.push(MS, &[0; 6]));
        assert_eq!(l.stats().dropped, 2);
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn a_clock_stepping_back_never_reorders_or_releases_early() {
        let mut l = DelayLine::new(10 * MS, DEFAULT_BOUNDS);
        l.push(5 * MS, b"first");
        l.push(2 * MS, b"second");
        assert_eq!(l.pop_due(12 * MS), None);
        assert_eq!(l.pop_due(15 * MS).as_deref(), Some(&b"first"[..]));
        assert_eq!(l.pop_due(15 * MS).as_deref(), Some(&b"second"[..]));
    }

    #[test]
    fn released_buffers_are_reused_with_the_new_packet_only() {
        let mut l = DelayLine::new(0, DEFAULT_BOUNDS);
        l.push(0, b"a long packet");
        let buf = l.pop_due(0).unwrap();
        let cap = buf.capacity();
        l.recycle(buf);
        l.push(1, b"short");
        let again = l.pop_due(1).unwrap();
        assert_eq!(again, b"short");
        assert_eq!(again.capacity(), cap);
    }
}
