//! The exposition on captured hosts and on a recorded probe result: compared with the stored
//! snapshots in `tests/snapshots/` (`WIRESPEED_UPDATE_SNAPSHOTS=1` rewrites them), and checked
//! by `promtool check metrics` when promtool is installed (required when `CI` is set).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wirespeed_agent::counters::{
    write_probes, write_server, ProbeCounters, ProbeOutcome, ServerCounters,
};
use wirespeed_agent::expo::Exposition;
use wirespeed_agent::host::{read_host, write_host};
use wirespeed_agent::probe::{write_probe, ProbeParams, ProbeReport};
use wirespeed_host::Root;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/hosts")
        .join(name)
}

fn snapshot(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("WIRESPEED_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (WIRESPEED_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    assert_eq!(got, want, "{name} differs from its snapshot");
}

/// `promtool check metrics` on `text`: Ok(()) clean, Err(lint output); None when promtool is
/// missing (a failure under CI).
fn promtool(text: &str) -> Option<Result<(), String>> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "promtool is missing (apt-get install prometheus) and CI is set"
            );
            eprintln!("SKIP: promtool not installed (apt-get install prometheus)");
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Some(Ok(()))
    } else {
        Some(Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

fn host_text(name: &str) -> String {
    let view = read_host(&Root::new(fixture(name)));
    let mut e = Exposition::new();
    write_host(&mut e, &view);
    e.finish()
}

#[test]
fn crow_findings_and_facts() {
    let text = host_text("crow-9900x-cx5-x4");
    // The fixture's expected findings are exposed, each with its device and severity.
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("crow-9900x-cx5-x4").join("EXPECTED.json")).unwrap(),
    )
    .unwrap();
    for id in expected["expect_findings"].as_array().unwrap() {
        let id = id.as_str().unwrap();
        // The agent runs doctor without --app-cpus, so the placement checks stay quiet.
        if id == "irq-cross-l3" {
            assert!(!text.contains("irq-cross-l3"));
            continue;
        }
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("wirespeed_host_finding{{id=\"{id}\""))),
            "{id} missing:\n{text}"
        );
    }
    for id in expected["expect_absent"].as_array().unwrap() {
        let id = id.as_str().unwrap();
        assert!(!text.contains(&format!("id=\"{id}\"")), "{id} present");
    }
    // The downgraded x4 link against its x16 maximum, the hot card.
    assert!(text.contains("wirespeed_nic_pcie_link_width_lanes{device=\"enp1s0f0np0\"} 4\n"));
    assert!(text.contains("wirespeed_nic_pcie_link_max_width_lanes{device=\"enp1s0f0np0\"} 16\n"));
    assert!(text.contains("wirespeed_nic_pcie_downgraded{device=\"enp1s0f0np0\"} 1\n"));
    snapshot("crow-9900x-cx5-x4.prom", &text);
    if let Some(r) = promtool(&text) {
        r.unwrap();
    }
}

#[test]
fn every_fixture_passes_promtool() {
    for name in [
        "crow-9900x-cx5-x4",
        "crow-9900x-cx5-tuned",
        "sl-w9-x3650-cx3",
    ] {
        let text = host_text(name);
        snapshot(&format!("{name}.prom"), &text);
        if let Some(r) = promtool(&text) {
            r.unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn server_and_probe_counters() {
    let mut e = Exposition::new();
    write_server(
        &mut e,
        &ServerCounters {
            tests_completed: 7,
            tests_failed: 1,
            tests_refused: [2, 0, 1, 0, 0, 0],
            bytes_received: 123_456_789_012,
            bytes_sent: 5,
            tests_running: 1,
            connections_dropped: 3,
        },
    );
    let p = ProbeCounters::default();
    p.add(ProbeOutcome::Ok);
    p.add(ProbeOutcome::Busy);
    write_probes(&mut e, &p);
    let text = e.finish();
    assert!(text.contains("wirespeed_server_received_bytes_total 123456789012\n"));
    snapshot("server.prom", &text);
    if let Some(r) = promtool(&text) {
        r.unwrap();
    }
}

fn report(json: &str, udp: bool) -> ProbeReport {
    ProbeReport {
        params: ProbeParams {
            host: "10.0.0.2".into(),
            port: 5201,
            duration: 5,
            streams: 2,
            reverse: false,
            udp_rate: udp.then_some(100_000_000),
            bind: None,
        },
        interface: "eth0".into(),
        result: Some(serde_json::from_str(json).unwrap()),
        error: None,
        held_from: 10.0,
        held_until: 15.25,
    }
}

#[test]
fn tcp_probe() {
    let r = report(
        r#"{"start":{},"intervals":[],"end":{
            "streams":[
              {"sender":{"socket":5,"start":0,"end":5,"seconds":5,"bytes":5000000000,"bits_per_second":8e9,"retransmits":3,"max_rtt":300,"min_rtt":100,"mean_rtt":200,"sender":true}},
              {"sender":{"socket":6,"start":0,"end":5,"seconds":5,"bytes":5000000000,"bits_per_second":8e9,"retransmits":1,"max_rtt":500,"min_rtt":100,"mean_rtt":400,"sender":true}}],
            "sum_sent":{"start":0,"end":5,"seconds":5,"bytes":10000000000,"bits_per_second":16e9,"retransmits":4,"sender":true},
            "sum_received":{"start":0,"end":5,"seconds":5,"bytes":9990000000,"bits_per_second":15.984e9,"sender":true}},
          "wirespeed":{"verdict":{"id":"receiver-cpu-bound","line":"x"}}}"#,
        false,
    );
    assert!(r.success());
    let mut e = Exposition::new();
    write_probe(&mut e, &r);
    let text = e.finish();
    assert!(text.contains("wirespeed_probe_success 1\n"));
    assert!(text.contains("wirespeed_probe_rtt_seconds 0.0003\n"));
    assert!(text.contains("wirespeed_probe_verdict_info{verdict=\"receiver-cpu-bound\"} 1\n"));
    snapshot("probe-tcp.prom", &text);
    if let Some(r) = promtool(&text) {
        r.unwrap();
    }
}

#[test]
fn udp_probe_and_failed_probe() {
    let r = report(
        r#"{"start":{},"intervals":[],"end":{
            "streams":[{"udp":{"socket":5,"start":0,"end":5,"seconds":5,"bytes":62500000,"bits_per_second":1e8,"jitter_ms":0.05,"lost_packets":10,"packets":1000,"lost_percent":1,"sender":true}}],
            "sum":{"start":0,"end":5,"seconds":5,"bytes":62000000,"bits_per_second":0.992e8,"jitter_ms":0.05,"lost_packets":10,"packets":1000,"lost_percent":1,"sender":false},
            "sum_sent":{"start":0,"end":5,"seconds":5,"bytes":62500000,"bits_per_second":1e8,"jitter_ms":0,"lost_packets":0,"packets":1000,"lost_percent":0,"sender":true}}}"#,
        true,
    );
    let mut e = Exposition::new();
    write_probe(&mut e, &r);
    let text = e.finish();
    assert!(text.contains("wirespeed_probe_udp_loss_ratio 0.01\n"));
    assert!(text.contains("wirespeed_probe_udp_jitter_seconds 0.00005\n"));
    snapshot("probe-udp.prom", &text);
    if let Some(r) = promtool(&text) {
        r.unwrap();
    }

    let failed = ProbeReport {
        result: None,
        error: Some(wirespeed_agent::probe::ProbeFailure::Connect),
        ..r
    };
    assert!(!failed.success());
    let mut e = Exposition::new();
    write_probe(&mut e, &failed);
    let text = e.finish();
    assert!(text.contains("wirespeed_probe_success 0\n"));
    assert!(
        text.contains("wirespeed_probe_failure{reason=\"connect\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("wirespeed_probe_failure{reason=\"refused\"} 0\n"),
        "{text}"
    );
    assert!(!text.contains("bytes_per_second"));
    let doc: serde_json::Value = serde_json::from_str(&failed.to_json()).unwrap();
    assert_eq!(doc["agent"]["success"], false);
    assert_eq!(doc["agent"]["error"], "connect");
    assert_eq!(doc["agent"]["interface"], "eth0");
}
