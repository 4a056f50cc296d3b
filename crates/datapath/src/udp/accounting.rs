//! Receiver-side UDP accounting: pure, socket-free, clock-free.
//!
//! Definitions (per stream; sequence numbers start at 1):
//! * `received` — valid datagrams that arrived, duplicates included;
//! * `unique` — distinct sequence numbers that arrived;
//! * `duplicates` — arrivals of a sequence number already seen (= received − unique);
//! * `out_of_order` — first arrivals of a sequence number lower than the highest
//!   seen before it (late, not lost);
//! * `expected` — the highest sequence number seen (everything up to it was sent);
//! * `lost` = expected − unique. A late datagram therefore reduces `lost` when it
//!   arrives, and duplicates never hide a loss. Once the sender's count is known,
//!   [`RecvAccounting::lost_given_sent`] also counts datagrams lost after the last
//!   one that arrived.
//! * `jitter` — RFC 3550 §6.4.1 interarrival jitter over arrival order:
//!   `D = (R_j − R_i) − (S_j − S_i)`, `J += (|D| − J) / 16`, where S is the
//!   sender's timestamp in the header and R the receive time. Only differences
//!   of each clock are used, so the two hosts' clocks need not agree.
//!
//! Duplicate detection uses a bitmap of the last [`WINDOW`] sequence numbers
//! below the highest; an arrival older than that cannot be told apart from a
//! duplicate and is counted in `beyond_window` (and as out-of-order, not as a
//! duplicate).

/// Sequence numbers remembered below the highest, for duplicate detection.
pub const WINDOW: u64 = 1 << 16;
const WORDS: usize = (WINDOW / 64) as usize;

/// Accounting state of one receiving stream.
#[derive(Debug, Clone)]
pub struct RecvAccounting {
    highest: u64,
    received: u64,
    unique: u64,
    duplicates: u64,
    out_of_order: u64,
    beyond_window: u64,
    malformed: u64,
    bytes: u64,
    jitter: f64,
    prev_transit: Option<f64>,
    /// bit (seq % WINDOW) set <=> seq seen, for seq in (highest − WINDOW, highest]
    seen: Box<[u64; WORDS]>,
}

impl Default for RecvAccounting {
    fn default() -> Self {
        Self::new()
    }
}

/// A copy of the figures, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RecvStats {
    pub bytes: u64,
    pub received: u64,
    pub unique: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    pub beyond_window: u64,
    pub malformed: u64,
    /// Highest sequence number seen (= datagrams expected so far).
    pub expected: u64,
    pub lost: u64,
    pub jitter_ms: f64,
}

impl RecvAccounting {
    pub fn new() -> RecvAccounting {
        RecvAccounting {
            highest: 0,
            received: 0,
            unique: 0,
            duplicates: 0,
            out_of_order: 0,
            beyond_window: 0,
            malformed: 0,
            bytes: 0,
            jitter: 0.0,
            prev_transit: None,
            seen: Box::new([0u64; WORDS]),
        }
    }

    #[inline]
    fn bit(&self, seq: u64) -> bool {
        let i = (seq % WINDOW) as usize;
        self.seen[i / 64] & (1 << (i % 64)) != 0
    }
    #[inline]
    fn set(&mut self, seq: u64) {
        let i = (seq % WINDOW) as usize;
        self.seen[i / 64] |= 1 << (i % 64);
    }
    #[inline]
    fn clear(&mut self, seq: u64) {
        let i = (seq % WINDOW) as usize;
        self.seen[i / 64] &= !(1 << (i % 64));
    }

    /// A datagram too short to carry a header (or with sequence 0).
    pub fn on_malformed(&mut self) {
        self.malformed += 1;
    }

    /// Account one datagram: its sequence number, its length, its send time
    /// from the header and its receive time (seconds, any fixed origin).
    pub fn on_datagram(&mut self, seq: u64, len: usize, sent_secs: f64, recv_secs: f64) {
        if seq == 0 {
            self.malformed += 1;
            return;
        }
        self.received += 1;
        self.bytes += len as u64;
        if seq > self.highest {
            // Forget the slots the window slides past, then mark this one.
            let gap = seq - self.highest;
            if gap >= WINDOW {
                self.seen.fill(0);
            } else {
                for s in self.highest + 1..seq {
                    self.clear(s);
                }
            }
            self.highest = seq;
            self.set(seq);
        } else if self.highest - seq >= WINDOW {
            self.beyond_window += 1;
            self.out_of_order += 1;
        } else if self.bit(seq) {
            self.duplicates += 1;
            return; // a duplicate says nothing new about the path's delay variation
        } else {
            self.set(seq);
            self.out_of_order += 1;
        }
        self.unique += 1;
        let transit = recv_secs - sent_secs;
        if let Some(prev) = self.prev_transit {
            let d = (transit - prev).abs();
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.prev_transit = Some(transit);
    }

    pub fn highest_seq(&self) -> u64 {
        self.highest
    }
    pub fn unique(&self) -> u64 {
        self.unique
    }
    /// expected − unique, with expected = highest sequence number seen.
    pub fn lost(&self) -> u64 {
        self.highest.saturating_sub(self.unique)
    }
    /// Lost datagrams once the sender's datagram count is known (includes a lost tail).
    pub fn lost_given_sent(&self, sent: u64) -> u64 {
        sent.max(self.highest).saturating_sub(self.unique)
    }
    /// Current RFC 3550 jitter, seconds.
    pub fn jitter_secs(&self) -> f64 {
        self.jitter
    }

    pub fn stats(&self) -> RecvStats {
        RecvStats {
            bytes: self.bytes,
            received: self.received,
            unique: self.unique,
            duplicates: self.duplicates,
            out_of_order: self.out_of_order,
            beyond_window: self.beyond_window,
            malformed: self.malformed,
            expected: self.highest,
            lost: self.lost(),
            jitter_ms: self.jitter * 1e3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed sequence numbers with a fixed transit time.
    fn feed(seqs: &[u64]) -> RecvAccounting {
        let mut a = RecvAccounting::new();
        for (i, &s) in seqs.iter().enumerate() {
            a.on_datagram(s, 100, s as f64 * 0.001, i as f64 * 0.001 + 0.5);
        }
        a
    }

    #[test]
    fn in_order_no_loss() {
        let a = feed(&(1..=1000).collect::<Vec<_>>());
        let s = a.stats();
        assert_eq!(
            (
                s.received,
                s.unique,
                s.expected,
                s.lost,
                s.out_of_order,
                s.duplicates
            ),
            (1000, 1000, 1000, 0, 0, 0)
        );
        assert_eq!(s.bytes, 100_000);
        assert!(s.jitter_ms.abs() < 1e-9, "constant transit => zero jitter");
    }

    #[test]
    fn gaps_are_lost() {
        let a = feed(&[1, 2, 5, 6, 10]);
        let s = a.stats();
        assert_eq!(s.expected, 10);
        assert_eq!(s.unique, 5);
        assert_eq!(s.lost, 5); // 3,4,7,8,9
        assert_eq!(s.out_of_order, 0);
        assert_eq!(a.lost_given_sent(12), 7); // and 11,12 never arrived
        assert_eq!(
            a.lost_given_sent(3),
            5,
            "a smaller sender count cannot hide what was seen"
        );
    }

    #[test]
    fn reordering_is_not_loss() {
        let a = feed(&[1, 3, 2, 4, 6, 5]);
        let s = a.stats();
        assert_eq!(s.lost, 0);
        assert_eq!(s.out_of_order, 2);
        assert_eq!(s.duplicates, 0);
        assert_eq!(s.unique, 6);
    }

    #[test]
    fn duplicates_counted_apart_and_never_hide_loss() {
        // 3 is lost; 2 arrives three times.
        let a = feed(&[1, 2, 2, 4, 2, 5]);
        let s = a.stats();
        assert_eq!(s.received, 6);
        assert_eq!(s.unique, 4);
        assert_eq!(s.duplicates, 2);
        assert_eq!(s.lost, 1);
        assert_eq!(s.out_of_order, 0, "a duplicate is not a late arrival");
    }

    #[test]
    fn late_arrival_reduces_loss_and_later_duplicate_is_caught() {
        let mut a = feed(&[1, 2, 4, 5]);
        assert_eq!(a.lost(), 1);
        a.on_datagram(3, 100, 0.003, 1.0);
        assert_eq!(a.lost(), 0);
        assert_eq!(a.stats().out_of_order, 1);
        a.on_datagram(3, 100, 0.003, 1.1);
        assert_eq!(a.stats().duplicates, 1);
        assert_eq!(a.lost(), 0);
    }

    #[test]
    fn window_slides_and_old_arrivals_are_flagged() {
        let mut a = RecvAccounting::new();
        a.on_datagram(1, 10, 0.0, 0.0);
        a.on_datagram(WINDOW + 10, 10, 0.0, 0.0); // huge jump: window cleared
        a.on_datagram(1, 10, 0.0, 0.0); // too old to tell
        let s = a.stats();
        assert_eq!(s.beyond_window, 1);
        assert_eq!(s.duplicates, 0);
        // A slot reused after the window moved must not make a late arrival look duplicate:
        // WINDOW+6 shares its slot with 6 (seen long ago) and arrives late.
        let mut b = RecvAccounting::new();
        for seq in 1..=WINDOW + 5 {
            b.on_datagram(seq, 1, 0.0, 0.0);
        }
        b.on_datagram(WINDOW + 7, 1, 0.0, 0.0);
        assert_eq!(b.lost(), 1);
        b.on_datagram(WINDOW + 6, 1, 0.0, 0.0);
        let s = b.stats();
        assert_eq!((s.duplicates, s.out_of_order, s.lost), (0, 1, 0));
        b.on_datagram(WINDOW + 6, 1, 0.0, 0.0);
        assert_eq!(b.stats().duplicates, 1);
    }

    #[test]
    fn seq_zero_and_malformed() {
        let mut a = RecvAccounting::new();
        a.on_datagram(0, 100, 0.0, 0.0);
        a.on_malformed();
        let s = a.stats();
        assert_eq!(s.malformed, 2);
        assert_eq!(s.received, 0);
        assert_eq!(s.bytes, 0);
    }

    #[test]
    fn jitter_follows_rfc3550() {
        // Sent every 1 ms; transit alternates 10 ms / 12 ms => |D| = 2 ms each time.
        let mut a = RecvAccounting::new();
        let mut j = 0.0f64;
        for i in 1..=200u64 {
            let sent = i as f64 * 0.001;
            let transit = if i % 2 == 0 { 0.012 } else { 0.010 };
            a.on_datagram(i, 1000, sent, sent + transit);
            if i > 1 {
                j += (0.002 - j) / 16.0;
            }
        }
        assert!((a.jitter_secs() - j).abs() < 1e-12);
        assert!(
            (a.stats().jitter_ms - 2.0).abs() < 0.01,
            "converges to |D| = 2 ms: {}",
            a.stats().jitter_ms
        );
        // Clock offsets between hosts cancel out.
        let mut b = RecvAccounting::new();
        for i in 1..=200u64 {
            let sent = i as f64 * 0.001;
            let transit = if i % 2 == 0 { 0.012 } else { 0.010 };
            b.on_datagram(i, 1000, sent + 12345.0, sent + transit - 777.0);
        }
        assert!((b.jitter_secs() - a.jitter_secs()).abs() < 1e-9);
    }
}
