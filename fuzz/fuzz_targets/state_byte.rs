#![no_main]
//! Every byte either decodes to a state that re-encodes to itself, or is an error.
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::State;

fuzz_target!(|data: &[u8]| {
    for &b in data {
        if let Ok(s) = State::from_byte(b) {
            assert_eq!(s.to_byte(), b);
        }
    }
});
