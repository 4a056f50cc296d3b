//! Feed a server session a flood of one-byte state messages (`TEST_START`, which a server
//! ignores) in 64 KiB reads, as a hostile client could, and print how long the session took
//! to consume them:
//!
//! ```text
//! cargo build --release -p wirespeed-protocol --example control_flood
//! target/release/examples/control_flood 1024    # MiB of state bytes
//! ```

use std::time::{Duration, Instant};

use wirespeed_protocol::{Cookie, ServerEvent, ServerSession, State, TestParams, Timeouts};

fn main() {
    let mib: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    let t0 = Duration::ZERO;
    let mut s = ServerSession::new(t0, Cookie::from_entropy(&[1u8; 36]), Timeouts::default());
    s.take_transmit();
    s.handle_input(t0, &TestParams::new_tcp(10, 1).encode_frame().unwrap());
    assert!(matches!(s.poll_event(), Some(ServerEvent::Params(_))));
    s.accept(t0).unwrap();
    s.streams_ready(t0).unwrap();
    let chunk = vec![State::TestStart.to_byte(); 64 * 1024];
    let start = Instant::now();
    for _ in 0..mib * 16 {
        s.handle_input(t0, &chunk);
    }
    let secs = start.elapsed().as_secs_f64();
    assert!(!s.is_closed(), "the session is still running");
    println!(
        "{mib} MiB of state bytes consumed in {secs:.3} s ({:.0} MiB/s)",
        mib as f64 / secs
    );
}
