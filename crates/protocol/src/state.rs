//! The one-byte control states of iperf3's control connection.

use crate::WireError;

/// A control message: one signed byte on the control connection.
///
/// The numbers are iperf3's (`iperf_api.h`). States 3 and 5–8 are defined but never sent by
/// iperf3; wirespeed decodes them (so a peer that sends one gets a clear "unexpected state"
/// error rather than "unknown byte") and never sends them either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    TestStart,
    TestRunning,
    ResultRequest,
    TestEnd,
    StreamBegin,
    StreamRunning,
    StreamEnd,
    AllStreamsEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    /// `-1`: the server will not run this test (busy, or a data connection with a wrong cookie).
    AccessDenied,
    /// `-2`: followed by two 4-byte big-endian integers, iperf3's `i_errno` and `errno`.
    ServerError,
}

impl State {
    /// The signed value iperf3 uses.
    pub const fn code(self) -> i8 {
        match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::ResultRequest => 3,
            State::TestEnd => 4,
            State::StreamBegin => 5,
            State::StreamRunning => 6,
            State::StreamEnd => 7,
            State::AllStreamsEnd => 8,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        }
    }

    /// The byte on the wire.
    pub const fn to_byte(self) -> u8 {
        self.code() as u8
    }

    /// Decode one byte from the peer.
    pub fn from_byte(b: u8) -> Result<State, WireError> {
        Ok(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            3 => State::ResultRequest,
            4 => State::TestEnd,
            5 => State::StreamBegin,
            6 => State::StreamRunning,
            7 => State::StreamEnd,
            8 => State::AllStreamsEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return Err(WireError::UnknownState(b)),
        })
    }

    /// iperf3's macro name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            State::TestStart => "TEST_START",
            State::TestRunning => "TEST_RUNNING",
            State::ResultRequest => "RESULT_REQUEST",
            State::TestEnd => "TEST_END",
            State::StreamBegin => "STREAM_BEGIN",
            State::StreamRunning => "STREAM_RUNNING",
            State::StreamEnd => "STREAM_END",
            State::AllStreamsEnd => "ALL_STREAMS_END",
            State::ParamExchange => "PARAM_EXCHANGE",
            State::CreateStreams => "CREATE_STREAMS",
            State::ServerTerminate => "SERVER_TERMINATE",
            State::ClientTerminate => "CLIENT_TERMINATE",
            State::ExchangeResults => "EXCHANGE_RESULTS",
            State::DisplayResults => "DISPLAY_RESULTS",
            State::IperfStart => "IPERF_START",
            State::IperfDone => "IPERF_DONE",
            State::AccessDenied => "ACCESS_DENIED",
            State::ServerError => "SERVER_ERROR",
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_iperf3s_and_round_trip() {
        assert_eq!(State::TestStart.to_byte(), 1);
        assert_eq!(State::TestEnd.to_byte(), 4);
        assert_eq!(State::ParamExchange.to_byte(), 9);
        assert_eq!(State::CreateStreams.to_byte(), 10);
        assert_eq!(State::ExchangeResults.to_byte(), 13);
        assert_eq!(State::DisplayResults.to_byte(), 14);
        assert_eq!(State::IperfDone.to_byte(), 16);
        assert_eq!(State::AccessDenied.to_byte(), 0xff);
        assert_eq!(State::ServerError.to_byte(), 0xfe);
        let mut decoded = 0;
        for b in 0..=255u8 {
            if let Ok(s) = State::from_byte(b) {
                assert_eq!(s.to_byte(), b);
                decoded += 1;
            }
        }
        assert_eq!(decoded, 18);
        assert_eq!(State::from_byte(0), Err(WireError::UnknownState(0)));
        assert_eq!(State::from_byte(17), Err(WireError::UnknownState(17)));
        assert_eq!(State::from_byte(0xfd), Err(WireError::UnknownState(0xfd)));
    }
}
