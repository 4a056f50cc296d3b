#![no_main]
//! A cookie that parses re-encodes to the same 37 bytes.
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::Cookie;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Cookie::parse(data) {
        assert_eq!(&c.as_bytes()[..], &data[..37]);
        assert_eq!(c.as_str().len(), 36);
    }
});
