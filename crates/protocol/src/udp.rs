//! iperf3's UDP wire formats: the stream handshake and the datagram header.
//!
//! Handshake: after connecting its UDP socket, the client sends one 4-byte word; the server
//! learns the client's address from it and answers with another. iperf3 writes these words in
//! host byte order (`0x36373839`, `0x39383736`), so between little-endian hosts the bytes on
//! the wire read `"9876"` (client) and `"6789"` (server). Old servers answer `987654321`.
//! Decoding accepts both byte orders.
//!
//! Datagram header, at the start of every data datagram, in network byte order:
//!
//! | offset | size | field                                             |
//! |--------|------|---------------------------------------------------|
//! | 0      | 4    | send time, seconds (sender's monotonic clock)     |
//! | 4      | 4    | send time, microseconds                           |
//! | 8      | 4/8  | sequence number: u32, or u64 when both ends       |
//! |        |      | agreed on 64-bit counters (`udp_counters_64bit`)  |
//!
//! Sequence numbers start at 1 and grow by one per datagram of a stream; the rest of the
//! datagram is payload. This is the one implementation: the datapath's UDP senders and
//! receivers encode and decode with it on their hot paths (hence `#[inline]` and errors that
//! do not allocate), and the fuzz targets exercise it.

use crate::WireError;

/// The client's word, as iperf3 on a little-endian host puts it on the wire.
pub const CONNECT_MSG: [u8; 4] = 0x3637_3839u32.to_le_bytes();
/// The server's reply, as iperf3 on a little-endian host puts it on the wire.
pub const CONNECT_REPLY: [u8; 4] = 0x3938_3736u32.to_le_bytes();
/// The legacy reply value (`987654321`) in little-endian byte order.
pub const LEGACY_CONNECT_REPLY: [u8; 4] = 987_654_321u32.to_le_bytes();

/// The legacy client word (`123456789`) some old iperf3 clients send.
pub const LEGACY_CONNECT_MSG: u32 = 123_456_789;

fn word(buf: &[u8], what: &'static str) -> Result<[u8; 4], WireError> {
    buf.try_into().map_err(|_| WireError::BadUdp {
        what,
        reason: format!("{} bytes, expected 4", buf.len()),
    })
}

/// Check the client's first datagram on a UDP stream (read by the server).
///
/// Accepts iperf3's word written by a little- or big-endian host, and the legacy word.
pub fn check_connect_msg(buf: &[u8]) -> Result<(), WireError> {
    let w = word(buf, "connect message")?;
    let (le, be) = (u32::from_le_bytes(w), u32::from_be_bytes(w));
    if [le, be]
        .iter()
        .any(|&v| v == 0x3637_3839 || v == LEGACY_CONNECT_MSG)
    {
        Ok(())
    } else {
        Err(WireError::BadUdp {
            what: "connect message",
            reason: format!("unknown word {w:02x?}"),
        })
    }
}

/// Bytes of the per-test token a wirespeed client puts after its connect word: the test's
/// cookie without its NUL.
pub const TOKEN_LEN: usize = crate::cookie::COOKIE_LEN - 1;

/// The token that binds a UDP stream to its test.
pub type StreamToken = [u8; TOKEN_LEN];

/// The test's token: its cookie's 36 characters.
pub fn stream_token(cookie: &crate::Cookie) -> StreamToken {
    let mut t = [0u8; TOKEN_LEN];
    t.copy_from_slice(&cookie.as_bytes()[..TOKEN_LEN]);
    t
}

/// A wirespeed client's first datagram on a UDP stream: iperf3's word, then the test's token.
/// An iperf3 server reads the word into 4 bytes and the kernel discards the rest, so the
/// same datagram serves both (docs/protocol.md).
pub fn connect_msg_with_token(cookie: &crate::Cookie) -> [u8; 4 + TOKEN_LEN] {
    let mut b = [0u8; 4 + TOKEN_LEN];
    b[..4].copy_from_slice(&CONNECT_MSG);
    b[4..].copy_from_slice(&stream_token(cookie));
    b
}

/// Read a client's first datagram on a UDP stream (the server): iperf3's word alone (`None`),
/// or the word and a wirespeed token. Any other length is refused.
pub fn parse_connect(buf: &[u8]) -> Result<Option<StreamToken>, WireError> {
    match buf.len() {
        4 => check_connect_msg(buf).map(|()| None),
        n if n == 4 + TOKEN_LEN => {
            check_connect_msg(&buf[..4])?;
            let mut t = [0u8; TOKEN_LEN];
            t.copy_from_slice(&buf[4..]);
            Ok(Some(t))
        }
        n => Err(WireError::BadUdp {
            what: "connect message",
            reason: format!("{n} bytes, expected 4 or {}", 4 + TOKEN_LEN),
        }),
    }
}

/// Check the server's reply on a UDP stream (read by the client).
pub fn check_connect_reply(buf: &[u8]) -> Result<(), WireError> {
    let w = word(buf, "connect reply")?;
    let (le, be) = (u32::from_le_bytes(w), u32::from_be_bytes(w));
    if [le, be]
        .iter()
        .any(|&v| v == 0x3938_3736 || v == 987_654_321)
    {
        Ok(())
    } else {
        Err(WireError::BadUdp {
            what: "connect reply",
            reason: format!("unknown word {w:02x?}"),
        })
    }
}

/// Header length with 32-bit sequence numbers.
pub const HEADER_LEN_32: usize = 12;
/// Header length with 64-bit sequence numbers.
pub const HEADER_LEN_64: usize = 16;
/// Largest UDP payload over IPv4 (65535 − 20 − 8): the longest datagram a test can use.
pub const MAX_DATAGRAM_LEN: usize = 65507;

/// Header length for the negotiated counter width.
pub const fn header_len(counters_64bit: bool) -> usize {
    if counters_64bit {
        HEADER_LEN_64
    } else {
        HEADER_LEN_32
    }
}

/// The decoded header of one data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramHeader {
    pub sec: u32,
    pub usec: u32,
    pub seq: u64,
}

impl DatagramHeader {
    /// Decode the header at the start of a datagram. With 32-bit counters `seq` is the raw
    /// 32-bit value; [`unwrap_seq32`] places it on the 64-bit line.
    #[inline]
    pub fn parse(buf: &[u8], counters_64bit: bool) -> Result<DatagramHeader, WireError> {
        let header = header_len(counters_64bit);
        if buf.len() < header {
            return Err(WireError::ShortDatagram {
                len: buf.len(),
                header,
            });
        }
        let sec = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let usec = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
        let seq = if counters_64bit {
            u64::from_be_bytes([
                buf[8], buf[9], buf[10], buf[11], buf[12], buf[13], buf[14], buf[15],
            ])
        } else {
            u64::from(u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]))
        };
        Ok(DatagramHeader { sec, usec, seq })
    }

    /// Write the header into the start of `buf` (which must hold [`header_len`] bytes) and
    /// return its length. With 32-bit counters the sequence number is truncated to its low
    /// 32 bits (it wraps, as iperf3's does).
    #[inline]
    pub fn emit(&self, buf: &mut [u8], counters_64bit: bool) -> Result<usize, WireError> {
        let header = header_len(counters_64bit);
        if buf.len() < header {
            return Err(WireError::ShortDatagram {
                len: buf.len(),
                header,
            });
        }
        buf[..4].copy_from_slice(&self.sec.to_be_bytes());
        buf[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            buf[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
        Ok(header)
    }

    /// Send time in seconds as a float (for transit and jitter arithmetic).
    #[inline]
    pub fn sent_secs(&self) -> f64 {
        f64::from(self.sec) + f64::from(self.usec) / 1e6
    }
}

/// Extend a 32-bit sequence number to 64 bits: the value congruent to `raw` modulo 2^32 that
/// is nearest to `highest` (the highest 64-bit sequence seen so far). Lets a receiver count
/// past 2^32 datagrams of a test on 32-bit counters.
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
    fn handshake_words_are_9876_and_6789_on_the_wire() {
        assert_eq!(&CONNECT_MSG, b"9876");
        assert_eq!(&CONNECT_REPLY, b"6789");
        check_connect_msg(b"9876").unwrap();
        check_connect_reply(b"6789").unwrap();
        check_connect_reply(&LEGACY_CONNECT_REPLY).unwrap();
        // Big-endian iperf3 hosts write the other byte order.
        check_connect_msg(b"6789").unwrap();
        check_connect_reply(b"9876").unwrap();
        check_connect_msg(&LEGACY_CONNECT_MSG.to_le_bytes()).unwrap();
        assert!(check_connect_msg(b"1234").is_err());
        assert!(check_connect_reply(&LEGACY_CONNECT_MSG.to_le_bytes()).is_err());
        assert!(check_connect_msg(b"98765").is_err());
        assert!(check_connect_reply(b"").is_err());
    }

    #[test]
    fn a_token_follows_the_word_for_wirespeed_servers() {
        let c = crate::Cookie::from_entropy(&[b'q'; 36]);
        let m = connect_msg_with_token(&c);
        assert_eq!(&m[..4], b"9876");
        assert_eq!(parse_connect(&m).unwrap(), Some(stream_token(&c)));
        assert_eq!(&stream_token(&c)[..], &c.as_bytes()[..36]);
        assert_eq!(parse_connect(b"9876").unwrap(), None);
        assert!(parse_connect(&m[..20]).is_err());
        let mut bad = m;
        bad[0] = b'1';
        assert!(parse_connect(&bad).is_err());
    }

    #[test]
    fn header_round_trip_both_widths() {
        let h = DatagramHeader {
            sec: 1_700_000_000,
            usec: 999_999,
            seq: (1 << 32) + 5,
        };
        let mut b = [0u8; 16];
        assert_eq!(h.emit(&mut b, true).unwrap(), 16);
        assert_eq!(DatagramHeader::parse(&b, true).unwrap(), h);
        assert_eq!(h.emit(&mut b, false).unwrap(), 12);
        assert_eq!(DatagramHeader::parse(&b, false).unwrap().seq, 5);
        assert!(DatagramHeader::parse(&b[..11], false).is_err());
        assert!(DatagramHeader::parse(&b[..15], true).is_err());
        assert!(h.emit(&mut b[..10], false).is_err());
    }

    #[test]
    fn header_layout_is_network_order() {
        let h = DatagramHeader {
            sec: 0x01020304,
            usec: 999_999,
            seq: 0x0A0B0C0D,
        };
        let mut b = [0u8; 16];
        assert_eq!(h.emit(&mut b, false).unwrap(), HEADER_LEN_32);
        assert_eq!(
            &b[..12],
            &[1, 2, 3, 4, 0x00, 0x0F, 0x42, 0x3F, 0x0A, 0x0B, 0x0C, 0x0D]
        );
        assert_eq!(DatagramHeader::parse(&b, false).unwrap(), h);
        assert_eq!(h.sent_secs(), f64::from(0x01020304u32) + 0.999_999);
        let h64 = DatagramHeader {
            sec: 7,
            usec: 8,
            seq: 0x1122334455667788,
        };
        assert_eq!(h64.emit(&mut b, true).unwrap(), HEADER_LEN_64);
        assert_eq!(&b[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(DatagramHeader::parse(&b, true).unwrap(), h64);
    }

    #[test]
    fn short_buffers_are_refused_with_their_lengths() {
        let h = DatagramHeader {
            sec: 1,
            usec: 2,
            seq: 3,
        };
        assert!(h.emit(&mut [0u8; 11], false).is_err());
        assert!(h.emit(&mut [0u8; 15], true).is_err());
        assert!(DatagramHeader::parse(&[0u8; 15], true).is_err());
        assert!(DatagramHeader::parse(&[0u8; 12], false).is_ok());
        let e = DatagramHeader::parse(&[0u8; 11], false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad UDP datagram: 11 bytes, shorter than the 12-byte header"
        );
    }

    #[test]
    fn seq32_truncates_and_unwraps() {
        let h = DatagramHeader {
            sec: 0,
            usec: 0,
            seq: (1 << 32) + 5,
        };
        let mut b = [0u8; 12];
        h.emit(&mut b, false).unwrap();
        assert_eq!(
            DatagramHeader::parse(&b, false).map(|h| h.seq).ok(),
            Some(5)
        );
        assert_eq!(unwrap_seq32(0, 1), 1);
        assert_eq!(unwrap_seq32(10, 7), 7);
        assert_eq!(unwrap_seq32(0xFFFF_FFF0, 3), (1 << 32) + 3);
        assert_eq!(unwrap_seq32((1 << 32) + 2, 0xFFFF_FFFE), 0xFFFF_FFFE);
        assert_eq!(unwrap_seq32((5 << 32) + 100, 90), (5 << 32) + 90);
    }
}
