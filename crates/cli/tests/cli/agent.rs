//! `wirespeed agent` on loopback: /metrics with a fixture root's findings (promtool clean),
//! probes against the agent's own test server, one probe per interface at a time, hostile HTTP.

use crate::agent_common;

use agent_common::{
    fixture, get, metrics_reaching, promtool_complaints, raw, raw_within, start_agent, value,
};
use std::time::Duration;

fn crow() -> String {
    fixture("crow-9900x-cx5-x4").display().to_string()
}

#[test]
fn metrics_show_the_fixture_findings_and_pass_promtool() {
    let root = crow();
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--root",
            &root,
        ],
    );
    let (code, text) = get(a.web, "/metrics");
    assert_eq!(code, 200, "{text}");
    for want in [
        r#"wirespeed_host_finding{id="pcie-link-downgraded",device="enp1s0f0np0",severity="critical"} 1"#,
        r#"wirespeed_host_finding{id="nic-temperature-high",device="enp1s0f0np0",severity="warning"} 1"#,
        r#"wirespeed_nic_pcie_link_width_lanes{device="enp1s0f0np0"} 4"#,
        "wirespeed_server_tests_running 0",
        "# TYPE wirespeed_server_tests_total counter",
    ] {
        assert!(text.lines().any(|l| l == want), "{want} missing:\n{text}");
    }
    if let Some(c) = promtool_complaints(&text) {
        panic!("promtool check metrics: {c}\n{text}");
    }
    assert_eq!(get(a.web, "/-/healthy").0, 200);
    assert_eq!(get(a.web, "/nope").0, 404);
}

#[test]
fn probe_tcp_and_udp_against_the_agent_itself() {
    let a = start_agent(&[], &["--web.listen-address", "127.0.0.1:0", "-p", "0"]);
    let port = a.test_port.expect("test server port");
    let (code, text) = get(a.web, &format!("/probe?target=127.0.0.1:{port}&duration=1"));
    assert_eq!(code, 200, "{text}");
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(1.0), "{text}");
    let rate = value(&text, "wirespeed_probe_received_bytes_per_second").expect("rate");
    assert!(rate > 0.0, "{text}");
    assert!(
        text.contains(r#"wirespeed_probe_info{protocol="tcp",direction="send",interface="lo"} 1"#)
    );
    if let Some(c) = promtool_complaints(&text) {
        panic!("promtool check metrics: {c}\n{text}");
    }

    let (code, text) = get(
        a.web,
        &format!("/probe?target=127.0.0.1:{port}&duration=1&udp_rate=10M&reverse=true"),
    );
    assert_eq!(code, 200, "{text}");
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(1.0), "{text}");
    assert!(
        value(&text, "wirespeed_probe_udp_loss_ratio").is_some(),
        "{text}"
    );
    assert!(
        value(&text, "wirespeed_probe_udp_jitter_seconds").is_some(),
        "{text}"
    );
    assert!(
        text.contains(r#"protocol="udp",direction="receive""#),
        "{text}"
    );

    let (code, json) = get(
        a.web,
        &format!("/probe.json?target=127.0.0.1:{port}&duration=1"),
    );
    assert_eq!(code, 200, "{json}");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("probe.json is JSON");
    assert_eq!(doc["agent"]["success"], true, "{json}");
    assert!(doc["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);

    // The server counted the three tests it served and their bytes.
    let completed = r#"wirespeed_server_tests_total{result="completed"}"#;
    let m = metrics_reaching(a.web, completed, 3.0);
    assert_eq!(value(&m, completed), Some(3.0), "{m}");
    assert!(value(&m, "wirespeed_server_received_bytes_total").unwrap() > 0.0);
    assert_eq!(
        value(&m, r#"wirespeed_agent_probes_total{outcome="ok"}"#),
        Some(3.0)
    );

    // Nothing listens there: the probe fails, the scrape still answers.
    let (code, text) = get(a.web, "/probe?target=127.0.0.1:1&duration=1");
    assert_eq!(code, 200);
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(0.0), "{text}");
}

#[test]
fn probes_on_one_interface_never_overlap() {
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--probe.wait",
            "120",
        ],
    );
    let port = a.test_port.unwrap();
    let web = a.web;
    let path = format!("/probe.json?target=127.0.0.1:{port}&duration=1");
    let docs: Vec<serde_json::Value> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3).map(|_| s.spawn(|| get(web, &path))).collect();
        hs.into_iter()
            .map(|h| {
                let (code, body) = h.join().unwrap();
                assert_eq!(code, 200, "{body}");
                serde_json::from_str(&body).unwrap()
            })
            .collect()
    });
    let mut spans: Vec<(f64, f64)> = docs
        .iter()
        .map(|d| {
            assert_eq!(d["agent"]["success"], true, "{d}");
            (
                d["agent"]["held_from"].as_f64().unwrap(),
                d["agent"]["held_until"].as_f64().unwrap(),
            )
        })
        .collect();
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "probes overlap: {spans:?}");
    }
}

#[test]
fn a_second_probe_is_refused_while_one_runs_when_the_agent_does_not_wait() {
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--probe.wait",
            "0",
        ],
    );
    let port = a.test_port.unwrap();
    let web = a.web;
    std::thread::scope(|s| {
        let first = s.spawn(|| get(web, &format!("/probe?target=127.0.0.1:{port}&duration=4")));
        // Ready when the agent's own server runs the first probe's test.
        let mut running = false;
        for _ in 0..600 {
            let (_, m) = get(web, "/metrics");
            if value(&m, "wirespeed_server_tests_running") == Some(1.0) {
                running = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(running, "the first probe's test never showed as running");
        let (code, body) = get(web, &format!("/probe?target=127.0.0.1:{port}&duration=1"));
        assert_eq!(code, 503, "{body}");
        assert!(body.contains("another probe holds lo"), "{body}");
        let (code, text) = first.join().unwrap();
        assert_eq!(code, 200);
        assert_eq!(value(&text, "wirespeed_probe_success"), Some(1.0), "{text}");
    });
    let (_, m) = get(web, "/metrics");
    assert_eq!(
        value(&m, r#"wirespeed_agent_probes_total{outcome="busy"}"#),
        Some(1.0)
    );
}

#[test]
fn hostile_requests_get_clear_refusals_and_the_agent_keeps_serving() {
    let a = start_agent(&[], &["--web.listen-address", "127.0.0.1:0", "--no-server"]);
    let long = format!("/probe?target=h&{}", "a".repeat(5000));
    assert_eq!(get(a.web, &long).0, 414);
    for q in [
        "/probe",
        "/probe?target=",
        "/probe?target=h&duration=31",
        "/probe?target=h&duration=-1",
        "/probe?target=h&streams=100000",
        "/probe?target=h&target=h",
        "/probe?target=%ff",
        "/probe?target=a%20b",
        "/probe?target=h&udp_rate=1e400",
        "/probe?target=h&bind=::zz",
        "/probe?target=[::1",
    ] {
        let (code, body) = get(a.web, q);
        assert_eq!(code, 400, "{q}: {body}");
        assert!(
            !body.trim().is_empty() && body.lines().count() == 1,
            "{q}: {body}"
        );
    }
    let (code, _) = raw(
        a.web,
        b"POST /probe?target=127.0.0.1 HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(code, 405);
    // Junk and a body that never comes: whatever the answer (if any), the agent keeps serving.
    let brief = Duration::from_secs(2);
    let _ = raw_within(a.web, b"\x00\xff\xfe garbage\r\n\r\n", brief);
    let _ = raw_within(
        a.web,
        b"GET /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
        brief,
    );
    let (code, text) = get(a.web, "/metrics");
    assert_eq!(code, 200);
    assert!(
        value(
            &text,
            r#"wirespeed_agent_probes_total{outcome="bad_request"}"#
        )
        .unwrap()
            >= 11.0
    );
}

#[test]
fn bad_flags_exit_with_usage() {
    let out = crate::host_common::run(&["agent", "--web.listen-address", "nowhere", "--no-server"]);
    assert_eq!(out.status.code(), Some(2));
    let out = crate::host_common::run(&[
        "agent",
        "--web.listen-address",
        "127.0.0.1:0",
        "--probe.max-duration",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // The server's guards without a server: a usage error, not silently ignored.
    let out = crate::host_common::run(&[
        "agent",
        "--web.listen-address",
        "127.0.0.1:0",
        "--no-server",
        "--deny",
        "10.0.0.0/8",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("drop --no-server"));
    // The same flags and checks as `wirespeed server`.
    let out = crate::host_common::run(&[
        "agent",
        "--web.listen-address",
        "127.0.0.1:0",
        "--server-bitrate-limit",
        "1M/0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = crate::host_common::run(&[
        "agent",
        "--web.listen-address",
        "127.0.0.1:0",
        "--root",
        "/nonexistent-dir-x",
    ]);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An agent started with `--psk F` takes probes from an agent with the same key and refuses
/// (under `reason="auth"`) probes from one without it.
#[test]
fn a_probe_to_a_psk_agent_needs_the_same_psk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("fleet.psk");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").expect("key");
    let key = key.to_str().expect("utf-8");
    let target = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--psk",
            key,
        ],
    );
    let port = target.test_port.expect("test server port");
    let keyed = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "--no-server",
            "--psk",
            key,
        ],
    );
    let bare = start_agent(&[], &["--web.listen-address", "127.0.0.1:0", "--no-server"]);
    let probe = format!("/probe?target=127.0.0.1:{port}&duration=1");
    let (code, text) = get(keyed.web, &probe);
    assert_eq!(code, 200, "{text}");
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(1.0), "{text}");
    let (_, text) = get(bare.web, &probe);
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(0.0), "{text}");
    let (_, metrics) = get(target.web, "/metrics");
    assert_eq!(
        value(
            &metrics,
            r#"wirespeed_server_tests_refused_total{reason="auth"}"#
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        value(
            &metrics,
            r#"wirespeed_server_tests_total{result="completed"}"#
        ),
        Some(1.0),
        "{metrics}"
    );
}
