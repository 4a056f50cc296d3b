//! Length-prefixed JSON: a 4-byte big-endian length, then that many bytes of JSON.
//!
//! iperf3 sends the test parameters and both ends' results this way (`JSON_write`/`JSON_read`).
//! [`JsonFrame`] is a checked view over received bytes in the style of smoltcp's `Packet`:
//! `new_checked` refuses a length of zero or above the cap before any byte of the payload is
//! needed, so a peer cannot make the receiver allocate what it announces; the receiver buffers
//! only bytes that actually arrived.

use crate::WireError;

/// Size of the length prefix.
pub const LEN_PREFIX: usize = 4;

/// Cap on the parameters a client sends. iperf3 3.17+ caps at 8 KiB; wirespeed allows more
/// room for its extension key, and no more.
pub const MAX_PARAMS_LEN: u32 = 64 * 1024;

/// Cap on results. They grow with the number of streams and with `server_output_json`
/// (`--get-server-output`), which holds a whole `-J` document.
pub const MAX_RESULTS_LEN: u32 = 32 * 1024 * 1024;

/// Cap on the results a server accepts from a client. A client's results list only its
/// streams (about 200 bytes each; iperf3 never puts `server_output_*` in them), so this is
/// room for some 20,000 streams, and it keeps what one control connection can make a server
/// buffer and parse to a few MiB.
pub const MAX_CLIENT_RESULTS_LEN: u32 = 4 * 1024 * 1024;

/// Cap on the structural tokens (see [`MAX_JSON_TOKENS`]) in a client's results: 22 per
/// stream for some 6,000 streams.
pub const MAX_CLIENT_RESULTS_TOKENS: usize = 1 << 17;

/// Cap on wirespeed's error-detail frame.
pub const MAX_DETAIL_LEN: u32 = 16 * 1024;

/// Deepest nesting of arrays and objects accepted in any message. iperf3's own messages
/// nest at most 6 deep (a `-J` document inside `server_output_json`).
pub const MAX_JSON_DEPTH: usize = 32;

/// Most structural tokens (`{`, `[`, `:` and `,`) accepted in one message: a bound on the
/// number of values, hence on the memory the parsed tree takes, whatever the byte count.
/// A results message of 128 streams with a 60-second `-J` server document holds about
/// 250,000.
pub const MAX_JSON_TOKENS: usize = 1 << 20;

/// A checked view of one length-prefixed JSON frame at the start of a buffer.
#[derive(Debug, Clone, Copy)]
pub struct JsonFrame<'a> {
    payload: &'a [u8],
}

impl<'a> JsonFrame<'a> {
    /// Check the header and that the whole frame is present.
    ///
    /// Errors: [`WireError::Truncated`] while the header or payload is incomplete (only after
    /// the length was checked against `max`), [`WireError::EmptyFrame`], [`WireError::Oversized`].
    pub fn new_checked(buf: &'a [u8], max: u32) -> Result<JsonFrame<'a>, WireError> {
        let len = Self::announced_len(buf, max)?;
        let total = LEN_PREFIX + len as usize;
        if buf.len() < total {
            return Err(WireError::Truncated {
                needed: total - buf.len(),
            });
        }
        Ok(JsonFrame {
            payload: &buf[LEN_PREFIX..total],
        })
    }

    /// The length the header announces, checked against `max`.
    pub fn announced_len(buf: &[u8], max: u32) -> Result<u32, WireError> {
        if buf.len() < LEN_PREFIX {
            return Err(WireError::Truncated {
                needed: LEN_PREFIX - buf.len(),
            });
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if len == 0 {
            return Err(WireError::EmptyFrame);
        }
        if len > max {
            return Err(WireError::Oversized { len, max });
        }
        Ok(len)
    }

    /// The JSON bytes.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Bytes this frame occupies in the buffer, prefix included.
    pub fn total_len(&self) -> usize {
        LEN_PREFIX + self.payload.len()
    }

    /// Parse the payload as a JSON object.
    pub fn object(&self) -> Result<serde_json::Map<String, serde_json::Value>, WireError> {
        parse_object(self.payload)
    }
}

/// Check, in one pass and without allocating, that `json` nests at most `max_depth` deep and
/// holds at most `max_tokens` structural tokens (`{`, `[`, `:`, `,`) outside strings.
///
/// This runs before any tree is built, so a message that would cost far more memory parsed
/// than its bytes (millions of tiny values) is refused at the cost of reading it once. It
/// does not validate JSON: the parser does that afterwards.
pub fn prescan(json: &[u8], max_depth: usize, max_tokens: usize) -> Result<(), WireError> {
    let mut depth = 0usize;
    let mut tokens = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, &b) in json.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max_depth {
                    return Err(WireError::BadJson(format!(
                        "nested more than {max_depth} deep (at byte {at})"
                    )));
                }
                tokens += 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b':' | b',' => tokens += 1,
            _ => continue,
        }
        if tokens > max_tokens {
            return Err(WireError::BadJson(format!(
                "more than {max_tokens} values (at byte {at})"
            )));
        }
    }
    Ok(())
}

/// Parse bytes as one JSON object, after [`prescan`] with [`MAX_JSON_DEPTH`] and
/// [`MAX_JSON_TOKENS`].
pub fn parse_object(json: &[u8]) -> Result<serde_json::Map<String, serde_json::Value>, WireError> {
    parse_object_capped(json, MAX_JSON_TOKENS)
}

/// [`parse_object`] with a tighter cap on structural tokens.
pub fn parse_object_capped(
    json: &[u8],
    max_tokens: usize,
) -> Result<serde_json::Map<String, serde_json::Value>, WireError> {
    prescan(json, MAX_JSON_DEPTH, max_tokens)?;
    match serde_json::from_slice::<serde_json::Value>(json) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => Err(WireError::BadJson(format!(
            "expected an object, got {}",
            kind_of(&other)
        ))),
        Err(e) => Err(WireError::BadJson(e.to_string())),
    }
}

pub(crate) fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Encode a JSON value as a frame (compact JSON, as iperf3's `cJSON_PrintUnformatted`).
pub fn encode(value: &serde_json::Value, max: u32) -> Result<Vec<u8>, WireError> {
    let body = serde_json::to_vec(value).map_err(|e| WireError::Encode(e.to_string()))?;
    if body.is_empty() {
        return Err(WireError::EmptyFrame);
    }
    let len = u32::try_from(body.len()).map_err(|_| WireError::Encode("frame too long".into()))?;
    if len > max {
        return Err(WireError::Oversized { len, max });
    }
    let mut out = Vec::with_capacity(LEN_PREFIX + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip_and_truncation() {
        let v = serde_json::json!({"tcp": true, "time": 10});
        let f = encode(&v, MAX_PARAMS_LEN).unwrap();
        assert_eq!(&f[..4], &(f.len() as u32 - 4).to_be_bytes());
        for cut in 0..f.len() {
            let e = JsonFrame::new_checked(&f[..cut], MAX_PARAMS_LEN).unwrap_err();
            let needed = if cut < 4 { 4 - cut } else { f.len() - cut };
            assert_eq!(e, WireError::Truncated { needed });
        }
        let mut longer = f.clone();
        longer.extend_from_slice(b"\x0d");
        let fr = JsonFrame::new_checked(&longer, MAX_PARAMS_LEN).unwrap();
        assert_eq!(fr.total_len(), f.len());
        assert_eq!(fr.object().unwrap()["time"], 10);
    }

    #[test]
    fn oversized_and_empty_are_refused_from_the_header_alone() {
        let huge = [0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            JsonFrame::new_checked(&huge, MAX_PARAMS_LEN).unwrap_err(),
            WireError::Oversized {
                len: u32::MAX,
                max: MAX_PARAMS_LEN
            }
        );
        assert_eq!(
            JsonFrame::new_checked(&[0, 0, 0, 0], MAX_PARAMS_LEN).unwrap_err(),
            WireError::EmptyFrame
        );
        let just_over = (MAX_PARAMS_LEN + 1).to_be_bytes();
        assert!(matches!(
            JsonFrame::new_checked(&just_over, MAX_PARAMS_LEN),
            Err(WireError::Oversized { .. })
        ));
    }

    #[test]
    fn non_object_json_is_refused() {
        for bad in [
            &b"[1,2]"[..],
            b"42",
            b"\"x\"",
            b"{",
            b"{\"a\":}",
            b"\xff\xfe",
        ] {
            assert!(
                matches!(parse_object(bad), Err(WireError::BadJson(_))),
                "{bad:?}"
            );
        }
        // Deep nesting is refused, not a stack overflow.
        let deep = "[".repeat(100_000);
        assert!(parse_object(deep.as_bytes()).is_err());
    }

    #[test]
    fn prescan_bounds_depth_and_values_outside_strings_only() {
        let at_cap = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert_eq!(prescan(at_cap.as_bytes(), MAX_JSON_DEPTH, 100), Ok(()));
        let over = format!("[{at_cap}]");
        let e = prescan(over.as_bytes(), MAX_JSON_DEPTH, 100).unwrap_err();
        assert!(e.to_string().contains("nested more than 32 deep"), "{e}");
        let obj = format!("{{\"a\":{over}}}");
        assert!(matches!(
            parse_object(obj.as_bytes()),
            Err(WireError::BadJson(_))
        ));

        // Brackets, commas and escaped quotes inside strings are not structure.
        let s = br#"{"t":"[[[[,,,,\"{{{{:::"}"#;
        assert_eq!(prescan(s, 1, 2), Ok(()));
        assert!(parse_object(s).is_ok());

        // Five values: 1 '[' and 4 ','.
        assert_eq!(prescan(b"[1,2,3,4,5]", 4, 5), Ok(()));
        let e = prescan(b"[1,2,3,4,5]", 4, 4).unwrap_err();
        assert!(e.to_string().contains("more than 4 values"), "{e}");
    }
}
