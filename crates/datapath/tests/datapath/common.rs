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

/// Let a worker run for `settle`, then stop it through `c` and join it: the stop must take
/// effect within 200 ms (the workers look at the stop flag every 50 ms).
pub fn stop_promptly<R, C>(
    w: WorkerThread<R, C>,
    c: &Control,
    settle: Duration,
    what: &str,
) -> Result<R, DatapathError> {
    std::thread::sleep(settle);
    let t = Instant::now();
    c.stop();
    let r = w.join();
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{what} stop took {:?}",
        t.elapsed()
    );
    r
}
