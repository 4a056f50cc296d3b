//! `SERVER_ERROR` and `ACCESS_DENIED`: how a server says no.
//!
//! `ACCESS_DENIED` (-1) is one byte; iperf3 sends it to a second client while busy and on a
//! data connection whose cookie matches no test. `SERVER_ERROR` (-2) is followed by two
//! 4-byte big-endian integers, iperf3's `i_errno` (what failed, see [`errno`]) and the system
//! `errno`. An iperf3 client prints its own text for `i_errno`.
//!
//! wirespeed adds one thing, only toward a client that announced the extension: when the
//! `errno` field holds [`DETAIL_MAGIC`], a length-prefixed JSON object
//! `{"wirespeed":{"error":"..."}}` follows with the server's own words.

use serde_json::Value;

use crate::ext::EXT_KEY;
use crate::frame::{self, JsonFrame, MAX_DETAIL_LEN};
use crate::WireError;

/// The `errno` value that announces a detail frame ("WSD1"): never a real errno.
pub const DETAIL_MAGIC: i32 = 0x5753_4431;

/// Bytes after the `SERVER_ERROR` state byte.
pub const SERVER_ERROR_BODY_LEN: usize = 8;

/// iperf3's `i_errno` values a server sends (subset; numbers are iperf3's).
pub mod errno {
    pub const IEDURATION: i32 = 5;
    pub const IENUMSTREAMS: i32 = 6;
    pub const IEBLOCKSIZE: i32 = 7;
    pub const IEBUFSIZE: i32 = 8;
    pub const IEMSS: i32 = 10;
    pub const IEOMIT: i32 = 12;
    pub const IEUNIMP: i32 = 13;
    pub const IEBURST: i32 = 15;
    pub const IENOSCTP: i32 = 18;
    pub const IEUDPBLOCKSIZE: i32 = 20;
    pub const IEBADTOS: i32 = 21;
    pub const IEREVERSEBIDIR: i32 = 25;
    pub const IETOTALRATE: i32 = 27;
    pub const IEMAXSERVERTESTDURATIONEXCEEDED: i32 = 37;
    pub const IEINITTEST: i32 = 101;
    pub const IELISTEN: i32 = 102;
    pub const IEACCEPT: i32 = 104;
    pub const IERECVCOOKIE: i32 = 106;
    pub const IECTRLREAD: i32 = 108;
    pub const IECTRLCLOSE: i32 = 109;
    pub const IEMESSAGE: i32 = 110;
    pub const IERECVPARAMS: i32 = 114;
    pub const IERECVRESULTS: i32 = 117;
    pub const IECLIENTTERM: i32 = 119;
    pub const IEACCESSDENIED: i32 = 121;
    pub const IESETCONGESTION: i32 = 134;
    pub const IEAFFINITY: i32 = 132;
    pub const IEAUTHTEST: i32 = 142;
    pub const IENOMSG: i32 = 144;
    pub const IECREATESTREAM: i32 = 200;
    pub const IESTREAMACCEPT: i32 = 204;
    pub const IESTREAMID: i32 = 208;
}

/// A short description of an iperf3 `i_errno` (wirespeed's wording).
pub fn describe(i_errno: i32) -> &'static str {
    use errno::*;
    match i_errno {
        IEDURATION => "test duration too long",
        IENUMSTREAMS => "too many parallel streams",
        IEBLOCKSIZE => "block size too large",
        IEBUFSIZE => "socket buffer size too large",
        9 => "invalid report interval",
        IEMSS => "MSS too large",
        IEOMIT => "bad omit value",
        IEUNIMP => "not implemented",
        IEBURST => "invalid burst count",
        IENOSCTP => "no SCTP support",
        IEUDPBLOCKSIZE => "invalid UDP block size",
        IEBADTOS => "bad TOS value",
        IEREVERSEBIDIR => "cannot be both reverse and bidirectional",
        IETOTALRATE => "total requested rate above the server's limit",
        IEMAXSERVERTESTDURATIONEXCEEDED => "test duration above the server's maximum",
        IEINITTEST => "test initialization failed",
        IELISTEN => "server cannot listen for data connections",
        IEACCEPT => "server cannot accept the connection",
        IERECVCOOKIE => "server did not receive the cookie",
        IECTRLREAD => "control connection read failed",
        IECTRLCLOSE => "control connection closed unexpectedly",
        IEMESSAGE => "unknown control message",
        IERECVPARAMS => "server could not read the test parameters",
        IERECVRESULTS => "results could not be read",
        IECLIENTTERM => "the client terminated",
        IEACCESSDENIED => "the server is busy running a test",
        IEAFFINITY => "server could not set CPU affinity",
        IESETCONGESTION => "congestion control algorithm could not be set",
        IEAUTHTEST => "test authorization failed",
        IENOMSG => "no message received within the timeout",
        IECREATESTREAM => "stream could not be created",
        IESTREAMACCEPT => "stream connection could not be accepted",
        IESTREAMID => "stream has an invalid id",
        _ => "server error",
    }
}

/// The 8 bytes after a `SERVER_ERROR` byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerErrorBody {
    pub i_errno: i32,
    pub errno: i32,
}

impl ServerErrorBody {
    pub fn parse(buf: &[u8]) -> Result<ServerErrorBody, WireError> {
        if buf.len() < SERVER_ERROR_BODY_LEN {
            return Err(WireError::Truncated {
                needed: SERVER_ERROR_BODY_LEN - buf.len(),
            });
        }
        Ok(ServerErrorBody {
            i_errno: i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]),
            errno: i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
        })
    }

    pub fn emit(&self) -> [u8; SERVER_ERROR_BODY_LEN] {
        let mut b = [0u8; SERVER_ERROR_BODY_LEN];
        b[..4].copy_from_slice(&self.i_errno.to_be_bytes());
        b[4..].copy_from_slice(&self.errno.to_be_bytes());
        b
    }

    /// `true` when a wirespeed detail frame follows.
    pub fn has_detail(&self) -> bool {
        self.errno == DETAIL_MAGIC
    }
}

/// Decode wirespeed's error-detail frame; returns the message and bytes used.
pub fn decode_detail(buf: &[u8]) -> Result<(String, usize), WireError> {
    let f = JsonFrame::new_checked(buf, MAX_DETAIL_LEN)?;
    let o = f.object()?;
    let msg = o
        .get(EXT_KEY)
        .and_then(|w| w.get("error"))
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::MissingField("wirespeed.error".into()))?;
    Ok((msg.to_string(), f.total_len()))
}

/// Encode wirespeed's error-detail frame (the message is cut to fit the cap).
pub fn encode_detail(message: &str) -> Vec<u8> {
    let mut m: String = message.chars().take(2000).collect();
    if m.is_empty() {
        m.push_str("refused");
    }
    let v = serde_json::json!({ EXT_KEY: { "error": m } });
    // A 2000-char message always fits MAX_DETAIL_LEN.
    frame::encode(&v, MAX_DETAIL_LEN).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_round_trip_and_detail() {
        let b = ServerErrorBody {
            i_errno: errno::IENUMSTREAMS,
            errno: DETAIL_MAGIC,
        };
        let bytes = b.emit();
        assert_eq!(&bytes[..4], &[0, 0, 0, 6]);
        assert_eq!(ServerErrorBody::parse(&bytes).unwrap(), b);
        assert!(b.has_detail());
        assert!(ServerErrorBody::parse(&bytes[..7])
            .unwrap_err()
            .is_truncated());
        let d = encode_detail("max 64 streams per test, asked for 1024");
        let (m, n) = decode_detail(&d).unwrap();
        assert_eq!(n, d.len());
        assert_eq!(m, "max 64 streams per test, asked for 1024");
        assert!(decode_detail(b"\x00\x00\x00\x02{}").is_err());
    }
}
