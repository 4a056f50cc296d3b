#![no_main]
//! The server's control-connection machine fed arbitrary client bytes in two chunks.
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::{Cookie, ServerEvent, ServerSession, Timeouts};

fuzz_target!(|data: &[u8]| {
    let t = Duration::ZERO;
    let cut = data.first().map_or(0, |&b| b as usize).min(data.len());
    let mut s = ServerSession::new(t, Cookie::from_entropy(&[1; 36]), Timeouts::default());
    s.handle_input(t, &data[..cut]);
    while let Some(ev) = s.poll_event() {
        if let ServerEvent::Params(_) = ev {
            let _ = s.accept(t);
            let _ = s.streams_ready(t);
        }
    }
    s.handle_input(t, &data[cut..]);
    while let Some(ev) = s.poll_event() {
        if let ServerEvent::TestEnd = ev {
            let _ = s.request_results(t);
        }
    }
    s.handle_eof(t);
    s.handle_timeout(Duration::from_secs(3600));
    let _ = s.take_transmit();
});
