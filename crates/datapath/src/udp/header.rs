//! The iperf3 UDP datagram header.
//!
//! Every datagram starts with, in network byte order:
//!
//! | offset | size | field                                             |
//! |--------|------|---------------------------------------------------|
//! | 0      | 4    | send time, seconds (sender's monotonic clock)     |
//! | 4      | 4    | send time, microseconds                           |
//! | 8      | 4/8  | sequence number: u32, or u64 when the test        |
//! |        |      | negotiated 64-bit counters (`udp_counters_64bit`)  |
//!
//! Sequence numbers start at 1 and grow by one per datagram of a stream.
//! The rest of the datagram is payload.

/// Header length with 32-bit sequence numbers.
pub const HEADER_LEN_32: usize = 12;
/// Header length with 64-bit sequence numbers.
pub const HEADER_LEN_64: usize = 16;
/// Largest UDP payload over IPv4 (65535 − 20 − 8).
pub const MAX_DATAGRAM_LEN: usize = 65507;

/// Header length for the counter width in use.
pub const fn header_len(counters_64bit: bool) -> usize {
    if counters_64bit {
        HEADER_LEN_64
    } else {
        HEADER_LEN_32
    }
}

/// The decoded header of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramHeader {
    pub sec: u32,
    pub usec: u32,
    pub seq: u64,
}

impl DatagramHeader {
    /// Send time in seconds as a float (for transit/jitter arithmetic).
    pub fn sent_secs(&self) -> f64 {
        f64::from(self.sec) + f64::from(self.usec) / 1e6
    }
}

/// Write `h` at the start of `buf`. With 32-bit counters the sequence number is
/// truncated to its low 32 bits, as iperf3 does. Returns false if `buf` is too short.
#[inline]
pub fn write_header(buf: &mut [u8], h: &DatagramHeader, counters_64bit: bool) -> bool {
    if buf.len() < header_len(counters_64bit) {
        return false;
    }
    buf[0..4].copy_from_slice(&h.sec.to_be_bytes());
    buf[4..8].copy_from_slice(&h.usec.to_be_bytes());
    if counters_64bit {
        buf[8..16].copy_from_slice(&h.seq.to_be_bytes());
    } else {
        buf[8..12].copy_from_slice(&(h.seq as u32).to_be_bytes());
    }
    true
}

/// Parse the header at the start of a datagram; None if it is too short.
/// With 32-bit counters the returned `seq` is the raw 32-bit value; use
/// [`unwrap_seq32`] to place it on the 64-bit line.
#[inline]
pub fn parse_header(buf: &[u8], counters_64bit: bool) -> Option<DatagramHeader> {
    if buf.len() < header_len(counters_64bit) {
        return None;
    }
    let u32_at = |o: usize| u32::from_be_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
    let seq = if counters_64bit {
        let mut a = [0u8; 8];
        a.copy_from_slice(&buf[8..16]);
        u64::from_be_bytes(a)
    } else {
        u64::from(u32_at(8))
    };
    Some(DatagramHeader {
        sec: u32_at(0),
        usec: u32_at(4),
        seq,
    })
}

/// Extend a 32-bit sequence number to 64 bits: the value congruent to `raw`
/// modulo 2^32 that is nearest to `highest` (the highest 64-bit sequence seen).
/// Lets a receiver count past 2^32 datagrams on 32-bit counters.
#[inline]
pub fn unwrap_seq32(highest: u64, raw: u32) -> u64 {
    let base = highest & !0xFFFF_FFFF;
    let cand = base | u64::from(raw);
    let half = 1u64 << 31;
    if cand > highest.saturating_add(half) && cand >= 1 << 32 {
        cand - (1 << 32)
    } else if cand.saturating_add(half) < highest {
        cand + (1 << 32)
    } else {
        cand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_network_order() {
        let h = DatagramHeader {
            sec: 0x01020304,
            usec: 999_999,
            seq: 0x0A0B0C0D,
        };
        let mut b = [0u8; 16];
        assert!(write_header(&mut b, &h, false));
        assert_eq!(
            &b[..12],
            &[1, 2, 3, 4, 0x00, 0x0F, 0x42, 0x3F, 0x0A, 0x0B, 0x0C, 0x0D]
        );
        assert_eq!(parse_header(&b, false), Some(h));
        let h64 = DatagramHeader {
            sec: 7,
            usec: 8,
            seq: 0x1122334455667788,
        };
        assert!(write_header(&mut b, &h64, true));
        assert_eq!(&b[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(parse_header(&b, true), Some(h64));
    }

    #[test]
    fn short_buffers_are_refused() {
        let h = DatagramHeader {
            sec: 1,
            usec: 2,
            seq: 3,
        };
        assert!(!write_header(&mut [0u8; 11], &h, false));
        assert!(!write_header(&mut [0u8; 15], &h, true));
        assert_eq!(parse_header(&[0u8; 11], false), None);
        assert_eq!(parse_header(&[0u8; 15], true), None);
        assert!(parse_header(&[0u8; 12], false).is_some());
    }

    #[test]
    fn seq32_truncates_and_unwraps() {
        let h = DatagramHeader {
            sec: 0,
            usec: 0,
            seq: (1 << 32) + 5,
        };
        let mut b = [0u8; 12];
        write_header(&mut b, &h, false);
        assert_eq!(parse_header(&b, false).map(|h| h.seq), Some(5));
        assert_eq!(unwrap_seq32(0, 1), 1);
        assert_eq!(unwrap_seq32(10, 7), 7);
        assert_eq!(unwrap_seq32(0xFFFF_FFF0, 3), (1 << 32) + 3);
        assert_eq!(unwrap_seq32((1 << 32) + 2, 0xFFFF_FFFE), 0xFFFF_FFFE);
        assert_eq!(unwrap_seq32((5 << 32) + 100, 90), (5 << 32) + 90);
    }
}
