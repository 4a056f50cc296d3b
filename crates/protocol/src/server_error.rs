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

/// `EINVAL`: the `errno` sent with [`errno::IERECVPARAMS`], so that an iperf3 client prints
/// "unable to receive parameters from client: Invalid argument".
pub const EINVAL: i32 = 22;

/// How a server refuses parameters it cannot read, in iperf3's terms: the `i_errno` of the
/// offending key where iperf3's sentence for it is true of the value (`time` → "test
/// duration valid values are 0 to 86400 seconds", `parallel` above its bound → "number of
/// parallel streams too large", ...), otherwise `IERECVPARAMS` with `EINVAL`. The second
/// value is the `errno` to send.
pub fn params_errno(error: &WireError) -> (i32, i32) {
    use errno::*;
    let WireError::BadField { key, reason } = error else {
        return (IERECVPARAMS, EINVAL);
    };
    // "N is out of range MIN..=MAX": above the bound is what iperf3's "too large" says.
    let too_large = reason
        .split_once(" is out of range ")
        .and_then(|(n, range)| {
            let max = range.rsplit_once("..=")?.1.parse::<i64>().ok()?;
            Some(n.parse::<i64>().ok()? > max)
        })
        .unwrap_or(false);
    let code = match key.as_str() {
        "time" => IEDURATION,
        "omit" => IEOMIT,
        "TOS" => IEBADTOS,
        "parallel" if too_large => IENUMSTREAMS,
        "MSS" if too_large => IEMSS,
        "window" if too_large => IEBUFSIZE,
        "len" if too_large => IEBLOCKSIZE,
        "burst" if too_large => IEBURST,
        _ => return (IERECVPARAMS, EINVAL),
    };
    (code, 0)
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
    fn unreadable_parameters_get_iperf3s_error_for_their_key() {
        use crate::TestParams;
        let code = |json: &str| params_errno(&TestParams::parse(json.as_bytes()).unwrap_err());
        assert_eq!(code(r#"{"tcp":true,"time":-1}"#), (errno::IEDURATION, 0));
        assert_eq!(code(r#"{"tcp":true,"omit":100000}"#), (errno::IEOMIT, 0));
        assert_eq!(
            code(r#"{"tcp":true,"parallel":2000000}"#),
            (errno::IENUMSTREAMS, 0)
        );
        // 0 streams is not "too large": iperf3's general words.
        assert_eq!(
            code(r#"{"tcp":true,"parallel":0}"#),
            (errno::IERECVPARAMS, EINVAL)
        );
        assert_eq!(
            code(r#"{"tcp":true,"parallel":"4"}"#),
            (errno::IERECVPARAMS, EINVAL)
        );
        assert_eq!(code(r#"{"tcp":true,"TOS":256}"#), (errno::IEBADTOS, 0));
        assert_eq!(code("[1]"), (errno::IERECVPARAMS, EINVAL));
    }

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
