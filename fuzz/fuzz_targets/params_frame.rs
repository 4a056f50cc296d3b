#![no_main]
//! Length-prefixed parameters: decode, and anything accepted survives a re-encode.
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::frame::{JsonFrame, MAX_PARAMS_LEN};
use wirespeed_protocol::TestParams;

fuzz_target!(|data: &[u8]| {
    let _ = JsonFrame::new_checked(data, MAX_PARAMS_LEN);
    let _ = TestParams::parse(data);
    if let Ok((p, used)) = TestParams::decode_frame(data) {
        assert!(used <= data.len());
        if let Ok(f) = p.encode_frame() {
            let (q, _) = TestParams::decode_frame(&f).expect("re-encoded params decode");
            assert_eq!(p.time, q.time);
            assert_eq!(p.parallel, q.parallel);
            assert_eq!(p.direction, q.direction);
        }
    }
});
