//! Failures of the client and server: one line on stderr, a distinct exit code, no hang.

use crate::measure_common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use measure_common::*;
use wirespeed_protocol::{Cookie, State, TestParams};

// Exit codes (crates/cli/src/exit.rs).
const USAGE: i32 = 2;
const CONNECT: i32 = 3;
const REFUSED: i32 = 4;
const PEER: i32 = 5;
const HOST: i32 = 6;
/// Every failure with JSON output, as iperf3.
const IPERF3_FAILURE: i32 = 1;

/// A wirespeed client against 127.0.0.1:`port` with `args`.
fn client(port: u16, args: &[&str]) -> Output {
    run(
        &mut client_cmd(Side::Wirespeed, port, args),
        Duration::from_secs(30),
    )
}

fn assert_fails(o: &Output, code: i32, needle: &str, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{what}: stderr {err}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "{what}: {err:?} lacks {needle:?}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() == 1, "{what}: not one line: {err:?}");
    assert!(!err.contains("panicked"), "{what}: panic: {err}");
}

#[test]
fn refused_port_is_a_connect_error() {
    let port = free_port();
    let o = client(port, &["-t", "1"]);
    assert_fails(&o, CONNECT, "refused", "closed port");
    // With -J the output is still one valid iperf3-shaped document carrying the error, as
    // iperf3 prints it, with iperf3's exit status 1 and nothing on stderr (so `2>&1 | jq`
    // works); with --json-stream the last events are "error" and "end".
    let o = client(port, &["-t", "1", "-J"]);
    assert_eq!(o.status.code(), Some(IPERF3_FAILURE), "closed port, -J");
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("-J output on a refused connection is JSON");
    assert!(
        doc["error"].as_str().unwrap_or("").contains("refused"),
        "{doc}"
    );
    assert!(doc["start"]["version"]
        .as_str()
        .unwrap_or("")
        .starts_with("wirespeed"));
    assert_eq!(doc["intervals"], serde_json::json!([]));
    let o = client(port, &["-t", "1", "--json-stream"]);
    assert_eq!(
        o.status.code(),
        Some(IPERF3_FAILURE),
        "closed port, --json-stream"
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each --json-stream line is JSON"))
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(names, ["error", "end"], "{events:?}");
}

#[test]
fn json_output_failures_before_the_test_are_one_document() {
    // A failure before the report exists (a bad value) is still a document on stdout.
    let o = client(free_port(), &["-t", "1", "-J", "-l", "99999999999999"]);
    assert_eq!(o.status.code(), Some(IPERF3_FAILURE), "{}", text_of(&o));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON document");
    assert!(
        doc["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{doc}"
    );
    assert_eq!(doc["end"], serde_json::json!({}));
}

#[test]
fn bad_flag_values_are_usage_errors() {
    for (args, needle) in [
        (
            &["-c", "127.0.0.1", "-P", "0"][..],
            "'0' for -P/--parallel: a whole number from 1",
        ),
        (&["-c", "127.0.0.1", "-t", "abc"][..], "abc"),
        (&["-c", "127.0.0.1", "-n", "12Q"][..], "12Q"),
        (&["-c", "127.0.0.1", "-l", "0"][..], "-l 0"),
        (&["-c", "127.0.0.1", "-R", "--bidir"][..], "--bidir"),
        (&["-c", "127.0.0.1", "--cpus", "3-1"][..], "3-1"),
        (&["-c", "127.0.0.1", "-A", "x"][..], "x"),
        (&["-s", "-D"][..], "daemon"),
        (&["-c", "127.0.0.1", "-u", "-l", "70000"][..], "65507"),
        (&["-c", "127.0.0.1", "-u", "-l", "8"][..], "-l 8"),
        (&["-c", "127.0.0.1", "-b", "fast"][..], "fast"),
        // What a server would refuse, said before connecting, in iperf3's words.
        (
            &["-c", "127.0.0.1", "-O", "999999"][..],
            "bogus value for --omit (maximum = 600 seconds)",
        ),
        (
            &["-c", "127.0.0.1", "-M", "99999"][..],
            "TCP MSS too large (maximum = 9216 bytes)",
        ),
        (
            &["-c", "127.0.0.1", "-T", &"t".repeat(4097)][..],
            "title (-T) too long: 4097 bytes",
        ),
        (
            &["-c", "127.0.0.1", "--extra-data", &"x".repeat(5000)][..],
            "extra data (--extra-data) too long: 5000 bytes",
        ),
    ] {
        let o = ws(args);
        assert_fails(&o, USAGE, needle, &format!("{args:?}"));
    }
}

/// Mistakes clap catches are one line too, naming the flag and what it takes (iperf3's
/// words where iperf3 has them), exit 2: no usage block, no tips.
#[test]
fn bad_command_lines_are_one_line_naming_the_flag() {
    for (args, needle) in [
        (
            &["-c", "127.0.0.1", "-t", "-1"][..],
            "invalid value '-1' for -t/--time: test duration valid values are 0 to 86400 seconds",
        ),
        (
            &["-c", "127.0.0.1", "-t", "0.5"][..],
            "invalid value '0.5' for -t/--time: test duration valid values are 0 to 86400 \
             seconds (a whole number)",
        ),
        (
            &["-c", "127.0.0.1", "--frobnicate"][..],
            "unrecognized option '--frobnicate' ('wirespeed client --help' lists the options)",
        ),
        (
            &["-c", "127.0.0.1", "--paralel", "2"][..],
            "did you mean '--parallel'?",
        ),
        (
            &["-c"][..],
            "option requires an argument -- -c/--client: the server to test (-c HOST)",
        ),
        (
            &["client"][..],
            "option requires an argument -- -c/--client: the server to test (-c HOST)",
        ),
        (
            &["-c", "127.0.0.1", "-P"][..],
            "option requires an argument -- -P/--parallel: a whole number from 1 to 65536 - \
             parallel streams (per direction)",
        ),
        (
            &["-c", "127.0.0.1", "-P", "x"][..],
            "invalid value 'x' for -P/--parallel: a whole number from 1 to 65536 - \
             parallel streams (per direction)",
        ),
        (
            &["-c", "127.0.0.1", "-O", "-3"][..],
            "bogus value for --omit (maximum = 600 seconds)",
        ),
        (
            &["-c", "127.0.0.1", "-R", "--bidir"][..],
            "-R/--reverse cannot be used with --bidir",
        ),
        (
            &["-c", "127.0.0.1", "--zerocopy-rx", "--skip-rx-copy"][..],
            "--zerocopy-rx cannot be used with --skip-rx-copy",
        ),
        (
            &["-s", "--frobnicate"][..],
            "unrecognized option '--frobnicate'",
        ),
        (&["doctor", "--frob"][..], "'wirespeed doctor --help'"),
        (&["frobnicate"][..], "unrecognized command 'frobnicate'"),
        (
            &["tune", "--root", "a", "--root", "b"][..],
            "--root cannot be given more than once",
        ),
    ] {
        let o = ws(args);
        assert_fails(&o, USAGE, needle, &format!("{args:?}"));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("wirespeed: "), "{args:?}: {err}");
        assert!(
            !err.contains("tip:") && !err.contains("Usage:"),
            "{args:?}: {err}"
        );
    }
    // Flags that look like negative numbers stay flags where no value is due.
    let o = ws(&["-c", "127.0.0.1", "-4", "-6"]);
    assert_fails(&o, USAGE, "--version6", "-4 -6");
}

/// Every limit and timeout an operator or user sets is range-checked when the command line is
/// read: one line naming the flag, exit 2 (no panic at start, none in each test's thread).
#[test]
fn limits_are_range_checked_at_start() {
    const HUGE: &str = "18446744073709551615";
    let server = |flag: &str| {
        vec![
            "-s".to_string(),
            "-p".into(),
            free_port().to_string(),
            flag.into(),
        ]
    };
    let mut cases: Vec<(Vec<String>, &str)> = Vec::new();
    for (flag, range) in [
        ("--handshake-timeout", "a whole number from 1 to 3600"),
        ("--max-duration", "a whole number from 1 to 31536000"),
        ("--idle-timeout", "a whole number from 0 to 86400"),
        (
            "--rcv-timeout",
            "receive timeout value is incorrect or not in range",
        ),
        (
            "--snd-timeout",
            "send timeout value is incorrect or not in range",
        ),
        ("--time-skew-threshold", "a whole number from 0 to 86400"),
        ("--max-tests", "a whole number from 1 to 1048576"),
        ("--max-pending", "a whole number from 1 to 1048576"),
        ("--max-streams", "a whole number from 1 to 1048576"),
        ("--max-total-streams", "a whole number from 1 to 1048576"),
        (
            "--max-pending-per-address",
            "a whole number from 1 to 1048576",
        ),
        (
            "--max-tests-per-address",
            "a whole number from 1 to 1048576",
        ),
        (
            "--max-streams-per-address",
            "a whole number from 1 to 1048576",
        ),
    ] {
        let mut a = server(flag);
        a.push(HUGE.into());
        cases.push((a, range));
        let mut a = server(flag);
        a.push("-1".into());
        cases.push((a, range));
    }
    for flag in ["--max-memory", "--max-memory-per-address"] {
        for bad in [HUGE, "-1", "0"] {
            let mut a = server(flag);
            a.push(bad.into());
            cases.push((a, "a size from 1M to 1T"));
        }
    }
    for bad in [HUGE, "0"] {
        let mut a = server("--ipv6-prefix-shares");
        a.push(bad.into());
        cases.push((a, "is not a prefix share LEN:PEERS"));
    }
    let mut a = server("--server-bitrate-limit");
    a.push(format!("1G/{HUGE}"));
    cases.push((a, "whole seconds from 1 to 3600"));
    for (args, range) in [
        (
            &["-c", "127.0.0.1", "--connect-timeout", HUGE][..],
            "a whole number from 1 to 86400000",
        ),
        (
            &["-c", "127.0.0.1", "--rcv-timeout", HUGE][..],
            "receive timeout value",
        ),
        (
            &["-c", "127.0.0.1", "--repeat", "0"][..],
            "a whole number from 1 to 1000",
        ),
        (
            &["agent", "--probe.wait", HUGE][..],
            "a whole number from 0 to 3600",
        ),
        (
            &["agent", "--probe.max-duration", HUGE][..],
            "a whole number from 1 to 86400",
        ),
        (
            &[
                "sweep",
                "--cpus",
                "0",
                "--server-cpus",
                "0",
                "-t",
                HUGE,
                "127.0.0.1",
            ][..],
            "from 1 to 86400",
        ),
        (
            &["latency", "--samples", HUGE][..],
            "a whole number from 1 to 1000000",
        ),
    ] {
        cases.push((args.iter().map(|s| s.to_string()).collect(), range));
    }
    for (args, range) in cases {
        // The flag is the word before its value.
        let at = args
            .iter()
            .rposition(|a| a == HUGE || a == "-1" || a == "0" || a.ends_with(HUGE))
            .expect("a value");
        let flag = args[at - 1].clone();
        let o = run(
            Command::new(wirespeed()).args(&args),
            Duration::from_secs(60),
        );
        assert_fails(&o, USAGE, &format!("for {flag}"), &format!("{args:?}"));
        assert_fails(&o, USAGE, range, &format!("{args:?}"));
    }
}

#[test]
fn offline_cpu_is_a_host_error() {
    let o = ws(&["-c", "127.0.0.1", "-p", "1", "-A", "4095", "-t", "1"]);
    assert_fails(&o, HOST, "CPU 4095", "-A 4095");
    let o = ws(&[
        "-c",
        "127.0.0.1",
        "-p",
        "1",
        "--cpus",
        "4000-4001",
        "-t",
        "1",
    ]);
    assert_fails(&o, HOST, "CPUs 4000-4001", "--cpus 4000-4001");
    let o = ws(&["-s", "-p", "1", "--cpus", "4000"]);
    assert_fails(&o, HOST, "CPU 4000", "server --cpus 4000");
}

#[test]
fn server_limits_are_reported_to_the_client() {
    let (_srv, port) = start_server(&["--max-streams", "2", "--max-duration", "5", "-i", "0"]);
    let o = client(port, &["-P", "3", "-t", "1"]);
    assert_fails(
        &o,
        REFUSED,
        "at most 2 streams",
        "-P 3 over --max-streams 2",
    );
    let o = client(port, &["-t", "10"]);
    assert_fails(&o, REFUSED, "at most 5 s", "-t 10 over --max-duration 5");
    let o = client(port, &["-t", "1", "-A", "0,4095"]);
    assert_fails(&o, REFUSED, "CPU 4095", "server CPU 4095");
    if have_iperf3("iperf3 client refused by --max-streams") {
        let o = run(
            &mut client_cmd(Side::Iperf3, port, &["-P", "3", "-t", "1"]),
            Duration::from_secs(20),
        );
        assert!(!o.status.success());
        let text = text_of(&o);
        assert!(text.contains("parallel streams"), "iperf3 said: {text}");
    }
}

/// Issue 37: a test's data buffers come out of the server's memory budget. A test asking for
/// more than its address may ever hold is refused in iperf3's words ("block size too large")
/// and, toward a wirespeed client, with the option that raises the limit; a test within it
/// runs.
#[test]
fn a_test_whose_buffers_exceed_the_memory_budget_is_refused_in_words() {
    let (_srv, port) = start_server(&["-i", "0", "--max-memory-per-address", "1M", "-A", "0"]);
    // -R: one sending worker (-A 0) holds a 2 MiB block
    let o = client(port, &["-R", "-l", "2M", "-t", "1"]);
    assert_fails(
        &o,
        REFUSED,
        "raise it with the server's --max-memory-per-address",
        "-R -l 2M over --max-memory-per-address 1M",
    );
    assert!(
        text_of(&o).contains("per-address limit of 1 MiB of test buffers"),
        "{}",
        text_of(&o)
    );
    let o = client(port, &["-R", "-l", "512K", "-t", "1"]);
    assert_success(&o, "-R -l 512K within --max-memory-per-address 1M");
    if have_iperf3("iperf3 client refused by the memory budget") {
        let o = run(
            // a 1 MiB block to send and a 1 MiB read buffer (iperf3's largest block is 1 MiB)
            &mut client_cmd(Side::Iperf3, port, &["--bidir", "-l", "1M", "-t", "1"]),
            HANG,
        );
        let text = text_of(&o);
        assert!(!o.status.success(), "{text}");
        assert!(text.contains("block size too large"), "iperf3 said: {text}");
    }
}

/// iperf3 clients whose parameters a wirespeed server cannot take get iperf3's own error
/// (`SERVER_ERROR` with the number its client prints as a sentence), and the server logs one
/// line for each refusal.
#[test]
fn iperf3_clients_are_told_why_they_are_refused() {
    if !have_iperf3("iperf3 clients refused by a wirespeed server") {
        return;
    }
    let (srv, port) = start_server(&["-i", "0", "--max-streams-per-address", "2"]);
    for (args, said) in [
        // iperf3 3.12 sends these as they are; the server cannot run them.
        (
            &["-P", "0"][..],
            "unable to receive parameters from client: Invalid argument",
        ),
        // IEDURATION: "test duration too long (maximum = 86400 seconds)" in 3.12, "test
        // duration valid values are 0 to 86400 seconds" in later versions.
        (&["-t", "-1"][..], "test duration "),
        // Over a per-address limit: iperf3's words for too many streams.
        (
            &["-P", "3", "-t", "1"][..],
            "number of parallel streams too large",
        ),
    ] {
        let o = run(&mut client_cmd(Side::Iperf3, port, args), HANG);
        let text = text_of(&o);
        assert!(!o.status.success(), "iperf3 {args:?}: {text}");
        assert!(
            text.contains(&format!("iperf3: error - {said}")),
            "iperf3 {args:?} said: {text}"
        );
        assert!(
            !text.contains("closed unexpectedly"),
            "iperf3 {args:?}: {text}"
        );
    }
    // A wirespeed client over the same limit is told which server option raises it.
    let o = client(port, &["-P", "3", "-t", "1"]);
    assert_fails(
        &o,
        REFUSED,
        "raise it with the server's --max-streams-per-address",
        "-P 3 over --max-streams-per-address 2",
    );
    let out = srv.wait_output(Duration::ZERO);
    let log = String::from_utf8_lossy(&out.stderr);
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("refused 127.0.0.1"))
        .collect();
    assert_eq!(refused.len(), 4, "one line per refusal: {log}");
    assert!(refused[0].contains("\"parallel\""), "{log}");
    assert!(refused[1].contains("\"time\""), "{log}");
    assert!(
        refused[2].contains("--max-streams-per-address")
            && refused[3].contains("--max-streams-per-address"),
        "{log}"
    );
}

#[test]
fn busy_server_refuses_with_access_denied() {
    let (_srv, port) = start_server(&["--max-tests", "1", "-i", "0"]);
    // Long enough for the refusals below to happen while it runs, however loaded the machine.
    let first = spawn(&mut client_cmd(Side::Wirespeed, port, &["-t", "10"]));
    wait_connected(port, 2); // its control connection and its stream: the test runs
    let o = client(port, &["-t", "1"]);
    assert_fails(&o, REFUSED, "maximum of 1 tests", "second wirespeed client");
    if have_iperf3("iperf3 client against a busy wirespeed server") {
        let o = run(
            &mut client_cmd(Side::Iperf3, port, &["-t", "1"]),
            Duration::from_secs(20),
        );
        assert!(!o.status.success());
        let text = text_of(&o);
        assert!(text.contains("busy"), "iperf3 said: {text}");
    }
    assert!(first.wait_output(HANG).status.success());
}

#[test]
fn silent_server_hits_the_connect_timeout() {
    // Accepts (the kernel completes the handshake) but never speaks.
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    // Without the timeout the client would wait forever: `ws`'s hard limit (30 s) ends it
    // with a signal, not exit code 3.
    let o = ws(&[
        "-c",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        "1",
        "--connect-timeout",
        "500",
    ]);
    assert_fails(&o, CONNECT, "timed out", "silent server");
    drop(l);
}

/// A fake server that runs the protocol up to TEST_RUNNING, then vanishes.
#[test]
fn server_vanishing_mid_test_is_a_peer_error() {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let fake = std::thread::spawn(move || {
        let (mut ctrl, _) = l.accept().expect("control");
        let mut ck = [0u8; 37];
        ctrl.read_exact(&mut ck).expect("cookie");
        Cookie::parse(&ck).expect("valid cookie");
        ctrl.write_all(&[State::ParamExchange.to_byte()])
            .expect("PARAM_EXCHANGE");
        let mut len = [0u8; 4];
        ctrl.read_exact(&mut len).expect("length");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        ctrl.read_exact(&mut body).expect("params");
        let p = TestParams::parse(&body).expect("params parse");
        assert!(p.wirespeed.is_some(), "wirespeed announces itself");
        ctrl.write_all(&[State::CreateStreams.to_byte()])
            .expect("CREATE_STREAMS");
        let (mut data, _) = l.accept().expect("stream");
        data.read_exact(&mut ck).expect("stream cookie");
        ctrl.write_all(&[State::TestStart.to_byte(), State::TestRunning.to_byte()])
            .expect("start");
        let mut sink = vec![0u8; 1 << 16];
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(400) {
            let _ = data.read(&mut sink);
        }
        // Vanish.
    });
    // A client that never noticed would be ended by `client`'s hard limit (30 s), with a
    // signal instead of exit code 5.
    let o = client(port, &["-t", "3"]);
    fake.join().expect("fake server");
    assert_fails(&o, PEER, "server", "vanished server");
}

#[test]
fn server_stops_a_test_past_its_maximum_duration() {
    let (_srv, port) = start_server(&["--max-duration", "2", "-i", "0"]);
    // -n with no time: only the server's limit ends it (otherwise `client`'s hard limit of
    // 30 s would, with a signal instead of exit code 5).
    let o = client(port, &["-n", "100T", "-i", "0"]);
    assert_fails(&o, PEER, "terminated", "-n 100T over --max-duration 2");
}

#[test]
fn busy_iperf3_server_is_a_refusal() {
    if !have_iperf3("busy_iperf3_server_is_a_refusal") {
        return;
    }
    let port = free_port();
    let _srv = spawn(Side::Iperf3.command().args(["-s", "-p", &port.to_string()]));
    wait_listening(port);
    let first = spawn(&mut client_cmd(Side::Iperf3, port, &["-t", "10"]));
    wait_connected(port, 2); // its control connection and its stream: the test runs
    let o = client(port, &["-t", "1"]);
    assert_fails(
        &o,
        REFUSED,
        "busy",
        "wirespeed client against a busy iperf3 server",
    );
    assert!(first.wait_output(HANG).status.success());
}
