#![no_main]
//! The client's control-connection machine fed arbitrary server bytes in two chunks.
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::{ClientEvent, ClientSession, Cookie, TestParams, TestResults, Timeouts};

fuzz_target!(|data: &[u8]| {
    let t = Duration::ZERO;
    let cut = data.first().map_or(0, |&b| b as usize).min(data.len());
    let mut c = ClientSession::new(t, Cookie::from_entropy(&[2; 36]), TestParams::new_tcp(1, 1), Timeouts::default());
    c.handle_input(t, &data[..cut]);
    while let Some(ev) = c.poll_event() {
        if let ClientEvent::TestRunning = ev {
            let _ = c.end_test(t);
        }
    }
    c.handle_input(t, &data[cut..]);
    while let Some(ev) = c.poll_event() {
        if let ClientEvent::ResultsRequested = ev {
            let _ = c.send_results(t, &TestResults::default());
        }
    }
    c.handle_eof(t);
    c.handle_timeout(Duration::from_secs(3600));
    let _ = c.take_transmit();
});
