//! SIGINT/SIGTERM as iperf3 handles them: a client interrupted mid-test prints the partial
//! summary (text and `-J`, whose document has `end.sum_sent`); a client interrupted while its
//! SYN goes unanswered ends at once; a server stops cleanly (exit 0) on SIGTERM.
//!
//! Readiness comes from the processes' own output (`--logfile`) and the kernel's socket
//! tables, never from sleeps; nothing here asserts how long anything took.

use crate::measure_common;

use std::net::SocketAddr;
use std::process::Command;

use measure_common::*;

/// wirespeed's exit code for an interrupted client in text mode (crates/cli/src/exit.rs).
const INTERRUPTED: i32 = 130;

/// A one-off server logging to a file, and a `-t 60` client logging to another: both running
/// and past the first second of data (the server printed its first interval), so the
/// client's measurement runs.
struct Running {
    _dir: tempfile::TempDir,
    _srv: Proc,
    client: Proc,
    client_log: std::path::PathBuf,
}

fn running(client_args: &[&str]) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv_log = dir.path().join("server.log");
    let client_log = dir.path().join("client.log");
    let port = free_port();
    let srv = spawn(Command::new(wirespeed()).args([
        "server",
        "-1",
        "-p",
        &port.to_string(),
        "--logfile",
        srv_log.to_str().unwrap(),
    ]));
    wait_listening(port);
    let client = spawn(
        client_cmd(Side::Wirespeed, port, &["-t", "60", "--logfile"])
            .arg(&client_log)
            .args(client_args),
    );
    // An interval line (`[  1]   0.00-1.01   sec ...`): a second of data went through.
    wait_for_text(&srv_log, " sec ");
    Running {
        _dir: dir,
        _srv: srv,
        client,
        client_log,
    }
}

#[test]
fn sigint_mid_test_prints_the_partial_summary() {
    let r = running(&[]);
    wait_for_text(&r.client_log, " sec ");
    signal(r.client.pid(), "-INT");
    let out = r.client.wait_output(HANG);
    let log = std::fs::read_to_string(&r.client_log).expect("client log");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(INTERRUPTED), "{err}\n{log}");
    assert!(
        err.contains("interrupt - the client has terminated"),
        "{err}"
    );
    // The summary of what was measured, and no `iperf Done.` (iperf3 prints none either).
    let summary = log
        .rsplit_once("- - - - -")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no summary: {log}"));
    assert!(summary.contains("sender"), "{log}");
    assert!(!log.contains("iperf Done."), "{log}");
}

#[test]
fn sigint_mid_test_with_json_gives_a_document_with_end() {
    let r = running(&["-J"]);
    signal(r.client.pid(), "-INT");
    let out = r.client.wait_output(HANG);
    let log = std::fs::read(&r.client_log).expect("client log");
    // iperf3: exit 1, the error in the document, nothing on stderr.
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json_of(&log, "interrupted client");
    assert_eq!(j["error"], "interrupt - the client has terminated");
    let sent = &j["end"]["sum_sent"];
    assert!(
        sent["bytes"].as_u64().is_some_and(|b| b > 0),
        "{}",
        j["end"]
    );
    assert!(sent["seconds"].as_f64().is_some_and(|s| s > 0.0), "{sent}");
    assert!(j["end"]["sum_received"].is_object(), "{}", j["end"]);
    assert!(j["end"]["streams"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
}

#[test]
fn sigint_while_connecting_ends_the_client() {
    // A listener whose accept queue is full drops the next SYN: the client's connect waits
    // for the kernel's retries (minutes) unless the interrupt ends it.
    let l =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .expect("bind");
    l.listen(0).expect("listen");
    let port = l
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("port")
        .port();
    // One connection fills a backlog of 0; nobody accepts it.
    let _filler = std::net::TcpStream::connect(("127.0.0.1", port)).expect("filler");
    for json in [false, true] {
        let mut cmd = client_cmd(Side::Wirespeed, port, &["-t", "1"]);
        if json {
            cmd.arg("-J");
        }
        let client = spawn(&mut cmd);
        wait_syn_sent(port);
        signal(client.pid(), "-INT");
        // A client that ignored the interrupt would be killed at HANG, with a signal and no
        // exit code.
        let out = client.wait_output(HANG);
        if json {
            assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
            let j = json_of(&out.stdout, "interrupted while connecting");
            assert_eq!(j["error"], "interrupt - the client has terminated");
        } else {
            assert_eq!(out.status.code(), Some(INTERRUPTED), "{}", text_of(&out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("interrupt"),
                "{}",
                text_of(&out)
            );
        }
    }
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let (srv, port) = start_server(&[]);
    // It still serves a test, then stops on SIGTERM with exit 0 (what a service manager
    // counts as a clean stop).
    let o = run(
        &mut client_cmd(Side::Wirespeed, port, &["-t", "1", "-J"]),
        HANG,
    );
    assert_success(&o, "a test before the stop");
    signal(srv.pid(), "-TERM");
    let out = srv.wait_output(HANG);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
