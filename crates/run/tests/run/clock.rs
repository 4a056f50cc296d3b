//! When a client's test clock starts: at `TEST_START`'s arrival, not when the runner gets to
//! `TEST_RUNNING` (iperf3's server starts its clock when it sends `TEST_START`, and its receiver
//! interval runs from there to `TEST_END`).

use std::time::Duration;

use wirespeed_protocol::{Cookie, Direction, TestParams, Timeouts, Transport, COOKIE_LEN};
use wirespeed_run::{Action, ClientPlan, EndAt, Limits, TestRun};

const MS: Duration = Duration::from_millis(1);

/// iperf3's state bytes, as a server sends them.
const PARAM_EXCHANGE: u8 = 9;
const CREATE_STREAMS: u8 = 10;
const TEST_START: u8 = 1;
const TEST_RUNNING: u8 = 2;

fn client() -> TestRun {
    let params = TestParams {
        transport: Transport::Tcp,
        parallel: 1,
        direction: Direction::ClientToServer,
        time: 3,
        ..TestParams::default()
    };
    TestRun::client(
        Duration::ZERO,
        Cookie::from_entropy(&[3u8; COOKIE_LEN - 1]),
        params,
        Timeouts::default(),
        ClientPlan {
            end: EndAt::Time(Duration::from_secs(3)),
            paced: false,
            limits: Limits::default(),
            peer_mss: None,
        },
    )
}

/// Feed `bytes` at `now` and collect the actions that follow.
fn feed(run: &mut TestRun, now: Duration, bytes: &[u8]) -> Vec<Action> {
    run.handle_input(now, bytes);
    run.handle_timeout(now, None);
    std::iter::from_fn(|| run.poll_action()).collect()
}

/// The server's states up to `CREATE_STREAMS`, then `TEST_START` and `TEST_RUNNING` read
/// `apart` from each other: the data phase's clock starts at `TEST_START`'s arrival either way.
fn started(apart: Option<Duration>) -> Duration {
    let mut run = client();
    let _ = run.take_transmit(); // the cookie
    assert!(feed(&mut run, MS, &[PARAM_EXCHANGE]).is_empty());
    let _ = run.take_transmit(); // the parameters
    let opened = feed(&mut run, 2 * MS, &[CREATE_STREAMS]);
    assert_eq!(opened, vec![Action::OpenStreams]);
    let start = 40 * MS;
    let actions = match apart {
        None => feed(&mut run, start, &[TEST_START, TEST_RUNNING]),
        Some(d) => {
            assert!(feed(&mut run, start, &[TEST_START]).is_empty());
            feed(&mut run, start + d, &[TEST_RUNNING])
        }
    };
    match actions.as_slice() {
        [Action::StartData { started }] => *started,
        other => panic!("after TEST_RUNNING: {other:?}"),
    }
}

#[test]
fn the_clients_clock_starts_when_test_start_arrives() {
    assert_eq!(started(None), 40 * MS);
    // a server that says TEST_RUNNING 25 ms after TEST_START (or a client whose runner read
    // it late): the 25 ms are on the server's clock, so they are on the client's too
    assert_eq!(started(Some(25 * MS)), 40 * MS);
}
