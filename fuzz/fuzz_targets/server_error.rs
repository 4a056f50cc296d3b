#![no_main]
//! SERVER_ERROR's body and wirespeed's detail frame.
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::server_error::{decode_detail, ServerErrorBody};

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = ServerErrorBody::parse(data) {
        assert_eq!(&b.emit()[..], &data[..8]);
    }
    let _ = decode_detail(data);
});
