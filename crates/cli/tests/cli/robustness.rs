//! A wirespeed server keeps serving a real test while other connections send garbage, announce
//! oversized JSON, stay silent, leave streams half-open or vanish mid-test.
//!
//! Nothing here is timed: every connection the server must drop is read until it closes, with
//! a hang detector ([`HANG`]) far above the server's own timeouts, so a server that keeps one
//! forever fails and a slow, loaded machine does not.

use crate::measure_common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use measure_common::*;
use wirespeed_protocol::{Cookie, State, TestParams};

const HANDSHAKE_TIMEOUT_S: u64 = 1;

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the server");
    s.set_read_timeout(Some(HANG)).expect("timeout");
    s
}

/// Read until EOF (or reset); returns the bytes. Fails if the server keeps the connection
/// open for [`HANG`].
fn read_to_close(mut s: TcpStream) -> Vec<u8> {
    s.set_read_timeout(Some(HANG)).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => {
                panic!("the server did not close the connection within {HANG:?}: {e} (got {got:?})")
            }
        }
    }
}

fn cookie(seed: u8) -> Cookie {
    Cookie::from_entropy(&[seed; 36])
}

/// Open a control connection and get through PARAM_EXCHANGE.
fn hello(port: u16, c: &Cookie) -> TcpStream {
    let mut s = connect(port);
    s.write_all(c.as_bytes()).expect("cookie");
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("PARAM_EXCHANGE");
    assert_eq!(b[0], State::ParamExchange.to_byte());
    s
}

#[test]
fn server_survives_hostile_and_broken_peers_while_serving_a_real_test() {
    // Every connection here comes from 127.0.0.1: the per-address limits are raised so that
    // each is served for what it is (per-address admission is the abuse test's).
    let (_srv, port) = start_server(&[
        "--handshake-timeout",
        &HANDSHAKE_TIMEOUT_S.to_string(),
        "-i",
        "0",
        "--max-pending-per-address",
        "512",
        "--max-tests-per-address",
        "8",
    ]);

    // A real test runs meanwhile.
    let real = spawn(&mut client_cmd(
        Side::Wirespeed,
        port,
        &["-t", "3", "-P", "2", "-J"],
    ));
    wait_connected(port, 3); // its control connection and its two streams

    // 1. Garbage instead of a cookie: ACCESS_DENIED (or nothing), then close.
    let mut g = connect(port);
    g.write_all(b"GET / HTTP/1.1\r\nHost: wirespeed\r\n\r\n\x00\x01\x02")
        .expect("garbage");
    let got = read_to_close(g);
    assert!(
        got.is_empty() || got == [State::AccessDenied.to_byte()],
        "garbage got {got:?}"
    );

    // 2. A valid cookie, then a JSON length of 4 GiB: refused (the decoder refuses it from
    //    the header alone: crates/protocol/tests/robust_decoders.rs).
    let mut o = hello(port, &cookie(1));
    o.write_all(&u32::MAX.to_be_bytes()).expect("length");
    read_to_close(o);

    // 3. Invalid JSON of a plausible length.
    let mut j = hello(port, &cookie(2));
    j.write_all(&[0, 0, 0, 5]).expect("len");
    j.write_all(b"{{{{{").expect("json");
    read_to_close(j);

    // 4. A silent connection (no cookie) and 5. one silent after the cookie: both dropped
    //    after the handshake timeout, not kept forever.
    let silent = connect(port);
    let silent2 = hello(port, &cookie(3));
    // 6. Many silent connections at once.
    let crowd: Vec<TcpStream> = (0..200).map(|_| connect(port)).collect();
    // 7. A slow cookie: one byte at a time, never finished in time.
    let mut slow = connect(port);
    slow.write_all(&cookie(4).as_bytes()[..10])
        .expect("part of a cookie");

    // 8. Half-open streams: asks for 2 streams, opens one.
    let c5 = cookie(5);
    let mut h = hello(port, &c5);
    h.write_all(&TestParams::new_tcp(1, 2).encode_frame().expect("params"))
        .expect("params");
    let mut b = [0u8; 1];
    h.read_exact(&mut b).expect("CREATE_STREAMS");
    assert_eq!(b[0], State::CreateStreams.to_byte());
    let mut one = connect(port);
    one.write_all(c5.as_bytes()).expect("stream cookie");

    // 9. A client that vanishes mid-test.
    let c6 = cookie(6);
    let mut v = hello(port, &c6);
    v.write_all(&TestParams::new_tcp(10, 1).encode_frame().expect("params"))
        .expect("params");
    v.read_exact(&mut b).expect("CREATE_STREAMS");
    let mut vs = connect(port);
    vs.write_all(c6.as_bytes()).expect("stream cookie");
    let mut two = [0u8; 2];
    v.read_exact(&mut two).expect("TEST_START, TEST_RUNNING");
    assert_eq!(
        two,
        [State::TestStart.to_byte(), State::TestRunning.to_byte()]
    );
    vs.write_all(&[0u8; 65536]).expect("some data");
    drop(vs);
    drop(v);

    // 10. A data connection with a cookie no test knows: ACCESS_DENIED, then closed.
    let mut unknown = connect(port);
    unknown
        .write_all(cookie(7).as_bytes())
        .expect("unknown cookie");
    // It is taken for a new control connection (iperf3 does the same) and gets
    // PARAM_EXCHANGE; say nothing more and it is dropped after the handshake timeout.

    // The silent ones are dropped (after the handshake timeout), not kept forever.
    read_to_close(silent);
    read_to_close(silent2);
    read_to_close(slow);
    for c in crowd {
        read_to_close(c);
    }
    // The half-open test is abandoned (after the streams timeout, 2 x handshake).
    read_to_close(h);
    drop(one);
    let got = read_to_close(unknown);
    assert_eq!(got, [State::ParamExchange.to_byte()]);

    // The real test finished correctly.
    let out = real.wait_output(HANG);
    assert_success(&out, "real test");
    let j = json_of(&out.stdout, "real client");
    let t = totals(&j);
    assert!(t[0].unwrap_or(0) > 0);
    assert_eq!(t[0], t[1], "real test: sent and received differ");

    // And the server still serves.
    let again = run(
        &mut client_cmd(Side::Wirespeed, port, &["-t", "1", "-J"]),
        Duration::from_secs(20),
    );
    assert_success(&again, "second test");
    let t = totals(&json_of(&again.stdout, "second client"));
    assert_eq!(t[0], t[1]);
}
