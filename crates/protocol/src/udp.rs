//! iperf3's UDP wire formats: the stream handshake and the datagram header.
//!
//! Handshake: after connecting its UDP socket, the client sends one 4-byte word; the server
//! learns the client's address from it and answers with another. iperf3 writes these words in
//! host byte order (`0x36373839`, `0x39383736`), so between little-endian hosts the bytes on
//! the wire read `"9876"` (client) and `"6789"` (server). Old servers answer `987654321`.
//! Decoding accepts both byte orders.
//!
//! Datagram header (network byte order): send time seconds (4 bytes), microseconds (4), then
//! the sequence number, 4 bytes or — when both ends agreed on `udp_counters_64bit` — 8 bytes.
//! Sequence numbers start at 1.

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

/// The decoded header of one data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramHeader {
    pub sec: u32,
    pub usec: u32,
    pub seq: u64,
}

impl DatagramHeader {
    /// Header length for the negotiated counter width.
    pub const fn len(counters_64bit: bool) -> usize {
        if counters_64bit {
            HEADER_LEN_64
        } else {
            HEADER_LEN_32
        }
    }

    /// Decode the header at the start of a datagram.
    pub fn parse(buf: &[u8], counters_64bit: bool) -> Result<DatagramHeader, WireError> {
        let need = Self::len(counters_64bit);
        if buf.len() < need {
            return Err(WireError::BadUdp {
                what: "datagram",
                reason: format!("{} bytes, shorter than the {need}-byte header", buf.len()),
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

    /// Write the header into the start of `buf` (which must hold [`Self::len`] bytes).
    pub fn emit(&self, buf: &mut [u8], counters_64bit: bool) -> Result<usize, WireError> {
        let need = Self::len(counters_64bit);
        if buf.len() < need {
            return Err(WireError::Encode(format!(
                "datagram buffer of {} bytes cannot hold the {need}-byte header",
                buf.len()
            )));
        }
        buf[..4].copy_from_slice(&self.sec.to_be_bytes());
        buf[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            // 32-bit counters wrap, as iperf3's do.
            buf[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
        Ok(need)
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
}
