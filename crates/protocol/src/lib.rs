//! iperf3's control protocol, exactly, as bytes in and bytes out: no sockets, no clocks.
//!
//! Architecture:
//! - [`state`]: the one-byte control states (`TEST_START` = 1 ... `IPERF_DONE` = 16,
//!   `ACCESS_DENIED` = -1, `SERVER_ERROR` = -2).
//! - [`cookie`]: the 37-byte cookie that opens the control connection and every data
//!   connection.
//! - [`frame`]: 4-byte big-endian length + JSON, with caps checked from the header alone.
//! - [`params`] / [`results`]: the JSON objects with iperf3's key names.
//! - [`server_error`]: `SERVER_ERROR`'s two integers and wirespeed's optional detail frame.
//! - [`udp`]: the UDP stream handshake words and the datagram header.
//! - [`ext`]: wirespeed's additions, all under the one key `"wirespeed"`, which iperf3 ignores.
//! - [`live`]: wirespeed's mid-test frame, one end's observation of each interval, negotiated
//!   through the extension and sent on the control connection while the test runs.
//! - [`auth`]: iperf3's RSA authentication (the `authtoken` key), both ends.
//! - [`psk`]: wirespeed's pre-shared key: HMAC tags over the parameters and both results.
//! - [`session`]: sans-I/O state machines for the client and the server end of a control
//!   connection; the engine drives them over real sockets.
//!
//! Every decoder of peer input returns [`WireError`], never panics, and never allocates more
//! than the bytes it was given (frame lengths are checked against caps before any payload is
//! buffered). `docs/protocol.md` describes the wire protocol in prose.

pub mod auth;
pub mod cookie;
pub mod error;
pub mod ext;
mod fields;
pub mod frame;
pub mod live;
pub mod params;
pub mod psk;
pub mod results;
pub mod server_error;
pub mod session;
pub mod state;
pub mod udp;

pub use cookie::{Cookie, COOKIE_LEN};
pub use error::WireError;
pub use ext::{ParamsExt, ResultsExt, WireSendPath, Worker, WorkerInfo, EXT_KEY};
pub use live::LiveInterval;
pub use params::{Direction, TestParams, Transport};
pub use results::{StreamResult, TestResults};
pub use session::{
    ClientEvent, ClientPhase, ClientSession, Decline, Failure, Refusal, ServerEvent, ServerPhase,
    ServerSession, Timeouts,
};
pub use state::State;

/// iperf3's numbering of data streams: the first stream is 1, later ones 3, 4, 5, ...
/// (iperf3 skips 2). `index` counts streams in the order the client opens them; with
/// `--bidir` the client opens its sending streams first, then its receiving ones.
pub fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        u32::try_from(index).map_or(u32::MAX, |i| i.saturating_add(2))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn stream_ids_skip_two_like_iperf3() {
        let ids: Vec<u32> = (0..5).map(super::stream_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 5, 6]);
    }
}
