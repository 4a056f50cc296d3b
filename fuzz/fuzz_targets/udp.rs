#![no_main]
//! UDP handshake words (with and without a wirespeed token) and datagram headers (both
//! counter widths).
use libfuzzer_sys::fuzz_target;
use wirespeed_protocol::udp::{
    check_connect_msg, check_connect_reply, parse_connect, DatagramHeader,
};

fuzz_target!(|data: &[u8]| {
    let _ = check_connect_msg(data);
    let _ = parse_connect(data);
    let _ = check_connect_reply(data);
    for wide in [false, true] {
        if let Ok(h) = DatagramHeader::parse(data, wide) {
            let mut buf = [0u8; 16];
            let n = h.emit(&mut buf, wide).expect("header fits");
            assert_eq!(&buf[..n], &data[..n]);
        }
    }
});
