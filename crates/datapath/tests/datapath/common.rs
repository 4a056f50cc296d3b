//! Helpers shared by the datapath's loopback tests.

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use wirespeed_datapath::thread::WorkerThread;
use wirespeed_datapath::{Control, DatapathError, Direction, StreamSpec};

/// `n` connected loopback TCP pairs (connecting end, accepted end).
pub fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    (0..n)
        .map(|_| {
            let a = TcpStream::connect(addr).expect("connect");
            let (b, _) = l.accept().expect("accept");
            (a, b)
        })
        .collect()
}

/// One TCP stream of a worker spec.
pub fn one(id: u32, socket: TcpStream, direction: Direction) -> StreamSpec {
    StreamSpec {
        id,
        socket,
        direction,
    }
}

/// How long a wait for something that must happen gives up: a hang detector, not a
/// performance bound. Everything awaited here takes milliseconds on an idle machine; a loaded CI
/// machine (2 vCPUs, up to 50 % steal) may be slower by seconds, so the bound is minutes: only a
/// real hang reaches it. Speed is the benchmark's job (`bench/`).
pub const HANG: Duration = Duration::from_secs(300);

/// Poll `cond` until it holds; fail naming `what` if it still does not after [`HANG`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < HANG, "{what}: still not after {HANG:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Stop a worker through `c` and join it. The stop must take effect, however long a loaded
/// machine takes to schedule the worker (it looks at the stop flag every 50 ms even when
/// blocked): [`HANG`] detects a worker that never stops.
pub fn stop_and_join<R, C>(
    w: WorkerThread<R, C>,
    c: &Control,
    what: &str,
) -> Result<R, DatapathError> {
    c.stop();
    wait_until(&format!("{what} ends after stop"), || w.is_finished());
    w.join()
}
