//! The one error type for bytes that came from a peer.

use thiserror::Error;

/// Everything that can be wrong with bytes a peer sent.
///
/// Decoders of untrusted input return only this type. [`WireError::Truncated`] is the one
/// non-fatal kind: the input is a valid prefix and more bytes are needed; every other kind
/// means the peer sent something wirespeed will not accept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The input ends early; `needed` more bytes (at least) would let decoding go on.
    #[error("truncated input: {needed} more byte(s) needed")]
    Truncated { needed: usize },
    /// A control-state byte that iperf3's protocol does not define.
    #[error("unknown control state byte {0} (0x{0:02x})")]
    UnknownState(u8),
    /// A control-state byte that is defined but not allowed at this point.
    #[error("unexpected control state {state} while {phase}")]
    UnexpectedState { state: String, phase: &'static str },
    /// The 37-byte cookie is not 36 printable ASCII characters and a NUL.
    #[error("bad cookie: {0}")]
    BadCookie(&'static str),
    /// A JSON frame announces more bytes than the cap for its kind.
    #[error("JSON frame of {len} bytes exceeds the limit of {max} bytes")]
    Oversized { len: u32, max: u32 },
    /// A JSON frame of length zero.
    #[error("empty JSON frame")]
    EmptyFrame,
    /// The frame's payload is not valid JSON, or not a JSON object.
    #[error("invalid JSON: {0}")]
    BadJson(String),
    /// A key of the parameters or results has the wrong type or an impossible value.
    #[error("bad value for {key:?}: {reason}")]
    BadField { key: String, reason: String },
    /// A key the peer must send is missing.
    #[error("missing key {0:?}")]
    MissingField(String),
    /// A UDP handshake word that is not one.
    #[error("bad UDP {what}: {reason}")]
    BadUdp { what: &'static str, reason: String },
    /// A UDP datagram (or buffer) shorter than iperf3's datagram header. It carries only
    /// numbers, so the datapath's receive loop can meet it at line rate without allocating.
    #[error("bad UDP datagram: {len} bytes, shorter than the {header}-byte header")]
    ShortDatagram { len: usize, header: usize },
    /// The local side asked to emit something that cannot be encoded.
    #[error("cannot encode: {0}")]
    Encode(String),
}

impl WireError {
    /// `true` when more input might complete the message.
    pub fn is_truncated(&self) -> bool {
        matches!(self, WireError::Truncated { .. })
    }

    pub(crate) fn field(key: &str, reason: impl Into<String>) -> WireError {
        WireError::BadField {
            key: key.to_string(),
            reason: reason.into(),
        }
    }
}
