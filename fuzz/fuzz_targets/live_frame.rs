#![no_main]
//! wirespeed's live frame: decode, and anything accepted survives a re-encode.
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::LiveInterval;

fuzz_target!(|data: &[u8]| {
    if let Ok((li, used)) = LiveInterval::decode(data) {
        assert!(used <= data.len());
        if let Ok(f) = li.encode() {
            let (back, _) = LiveInterval::decode(&f).expect("re-encoded frame decodes");
            assert_eq!(back.seq, li.seq);
        }
    }
});
