#![no_main]
//! Length-prefixed results: decode, and anything accepted survives a re-encode.
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::TestResults;

fuzz_target!(|data: &[u8]| {
    let _ = TestResults::parse(data);
    if let Ok((r, used)) = TestResults::decode_frame(data) {
        assert!(used <= data.len());
        if let Ok(f) = r.encode_frame() {
            let (q, _) = TestResults::decode_frame(&f).expect("re-encoded results decode");
            assert_eq!(r.streams.len(), q.streams.len());
        }
    }
});
