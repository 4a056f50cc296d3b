//! `wirespeed sweep` end to end on loopback against a wirespeed server started here.

use crate::measure_common;

use measure_common::{assert_success, free_port, online_cpus, start_server, ws};

#[test]
fn a_two_by_two_sweep_completes() {
    if online_cpus() < 2 {
        eprintln!("SKIP: a_two_by_two_sweep_completes because fewer than 2 CPUs are online");
        return;
    }
    let (_srv, port) = start_server(&["-B", "127.0.0.1"]);
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--cpus",
        "0,1",
        "--server-cpus",
        "0,1",
        "-t",
        "1",
        "--json",
    ]);
    assert_success(&out, "sweep");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["tests_run"], 4);
    assert_eq!(j["matrix"]["rows"], serde_json::json!([0, 1]));
    assert_eq!(j["matrix"]["cols"], serde_json::json!([0, 1]));
    for r in 0..2 {
        for c in 0..2 {
            let cell = &j["matrix"]["cells"][r][c];
            assert_eq!(cell["runs"].as_array().unwrap().len(), 1, "{cell}");
            assert!(cell["median"].as_f64().unwrap() > 0.0, "{cell}");
            // the run's interval rates, which the cell's spread comes from
            assert!(
                cell["intervals"][0].as_array().unwrap().len() >= 2,
                "{cell}"
            );
        }
    }
    let best = &j["summary"]["best"];
    assert!(best["median"].as_f64().unwrap() > 0.0);
    // a pair is recommended only when it is better than the next beyond both cells' spread
    let noise = &j["summary"]["noise"];
    let rec = j["summary"]["recommendation"].as_str().unwrap();
    if noise["beyond"].as_bool().unwrap() {
        assert!(rec.starts_with("run the client on CPU"), "{rec}");
    } else {
        assert!(
            rec.starts_with("no pair is better beyond the noise"),
            "{rec}"
        );
    }
    // Loopback: both ends on this host, so the cells are grouped by relation.
    assert!(!j["summary"]["by_relation"].as_array().unwrap().is_empty());
}

#[test]
fn irq_sweep_refusals_are_clear() {
    // Without -R the server's IRQs move (server_tune.rs): this host sends from one CPU.
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        "9",
        "--cpus",
        "0,1",
        "--server-cpus",
        "0",
        "--irq-cpus",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("give one --cpus CPU"), "{err}");
    // With -R to a loopback address there is no NIC to move.
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        "9",
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "--irq-cpus",
        "1",
        "-R",
    ]);
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("through lo"));
    // Bad values.
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "-t",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = ws(&["sweep", "127.0.0.1", "--cpus", "x", "--server-cpus", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_sweep_against_no_server_fails_with_the_connect_code() {
    let port = free_port(); // closed again: nothing listens there
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "-t",
        "1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // refused up front, once, instead of a line per test
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach a server at 127.0.0.1:"), "{err}");
}

#[test]
fn a_sweep_over_cpus_this_host_lacks_is_refused_up_front() {
    let port = free_port();
    let out = ws(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--cpus",
        "0,4095",
        "--server-cpus",
        "0",
        "-t",
        "1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--cpus 0,4095: CPU 4095 is not online"),
        "{err}"
    );
    // --repeat checks its peer once, too
    let out = ws(&[
        "client",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--repeat",
        "3",
        "-t",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
}
