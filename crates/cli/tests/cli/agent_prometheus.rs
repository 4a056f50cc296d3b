//! Debian's Prometheus scrapes two `wirespeed agent`s in their own network namespaces and
//! probes each from the other through `/probe` (relabelled as blackbox-style exporters are),
//! until its TSDB holds several probes per direction; the test then asks Prometheus' HTTP API
//! for the `wirespeed_probe_*` series of each direction and the `wirespeed_host_finding`
//! series a fixture root injects into one agent, and runs `promtool check metrics` on both
//! agents' exposition.
//!
//! Topology (names carry the pid and a counter; addresses in 10.77.N.0/24 exist only inside
//! these namespaces): `H` holds a bridge (10.77.N.254, Prometheus), `A` (10.77.N.1, agent with
//! the crow fixture root) and `B` (10.77.N.2, agent on its own namespace's facts) hang off it by
//! veth pairs. Needs root, iproute2, `prometheus`/`promtool` and curl; prints `SKIP:` otherwise,
//! and fails instead when `CI` is set.

use crate::agent_common;

use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_common::{fixture, promtool_complaints, start_agent, AgentProc};
use serde_json::Value;

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn sh(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

fn ok(cmd: &str, args: &[&str]) {
    let o = sh(cmd, args);
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A network namespace, deleted when dropped (with the veths in it).
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// A child killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET through curl inside `ns`.
fn curl(ns: &str, url: &str) -> Option<String> {
    let o = sh(
        "ip",
        &["netns", "exec", ns, "curl", "-sf", "--max-time", "30", url],
    );
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// An instant query's result vector.
fn query(ns: &str, prom: &str, q: &str) -> Vec<Value> {
    let enc: String = q
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let Some(body) = curl(ns, &format!("http://{prom}/api/v1/query?query={enc}")) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&body).expect("Prometheus answers JSON");
    assert_eq!(v["status"], "success", "{body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn show(rows: &[Value]) -> String {
    rows.iter()
        .map(|r| format!("{} {}", r["metric"], r["value"][1]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn prometheus_scrapes_and_probes_two_agents_across_namespaces() {
    let me = "prometheus_scrapes_and_probes_two_agents_across_namespaces";
    if !crate::need::root(me) {
        return;
    }
    for (cmd, arg, package) in [
        ("ip", "-V", "iproute2"),
        ("prometheus", "--version", "prometheus"),
        ("promtool", "--version", "prometheus"),
        ("curl", "--version", "curl"),
    ] {
        if !crate::need::tool(me, cmd, arg, package) {
            return;
        }
    }
    let tag = format!(
        "wsag{}x{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let net = format!("10.77.{}", std::process::id() % 250);
    let mut nss = Vec::new();
    for role in ["h", "a", "b"] {
        let name = format!("{tag}{role}");
        let o = sh("ip", &["netns", "add", &name]);
        if !o.status.success() {
            return crate::need::unavailable(
                me,
                &format!(
                    "`ip netns add` failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            );
        }
        nss.push(Netns(name));
    }
    let (h, a, b) = (nss[0].0.clone(), nss[1].0.clone(), nss[2].0.clone());
    ok("ip", &["-n", &h, "link", "add", "br0", "type", "bridge"]);
    ok(
        "ip",
        &[
            "-n",
            &h,
            "addr",
            "add",
            &format!("{net}.254/24"),
            "dev",
            "br0",
        ],
    );
    for (ns, host, peer) in [(&a, "1", "va"), (&b, "2", "vb")] {
        ok(
            "ip",
            &[
                "-n", &h, "link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", ns,
            ],
        );
        ok(
            "ip",
            &["-n", &h, "link", "set", peer, "master", "br0", "up"],
        );
        ok(
            "ip",
            &[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{net}.{host}/24"),
                "dev",
                "eth0",
            ],
        );
        ok("ip", &["-n", ns, "link", "set", "eth0", "up"]);
        ok("ip", &["-n", ns, "link", "set", "lo", "up"]);
    }
    ok("ip", &["-n", &h, "link", "set", "br0", "up"]);
    ok("ip", &["-n", &h, "link", "set", "lo", "up"]);

    let root = fixture("crow-9900x-cx5-x4").display().to_string();
    let (web_a, web_b) = (format!("{net}.1:9762"), format!("{net}.2:9762"));
    let agent = |ns: &str, web: &str, extra: &[&str]| -> AgentProc {
        let mut args = vec!["--web.listen-address", web, "-p", "5201"];
        args.extend_from_slice(extra);
        start_agent(&["ip", "netns", "exec", ns], &args)
    };
    let _agent_a = agent(&a, &web_a, &["--root", &root]);
    let _agent_b = agent(&b, &web_b, &[]);

    // promtool on both agents' exposition, fetched over the bridge.
    for web in [&web_a, &web_b] {
        let text = curl(&h, &format!("http://{web}/metrics")).expect("scrape an agent");
        if let Some(c) = promtool_complaints(&text) {
            panic!("promtool check metrics on {web}: {c}\n{text}");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"global:
  scrape_interval: 5s
  evaluation_interval: 5s
scrape_configs:
  - job_name: wirespeed
    static_configs:
      - targets: ['{web_a}', '{web_b}']
  - job_name: wirespeed_probe
    metrics_path: /probe
    params:
      duration: ['2']
    scrape_interval: 10s
    scrape_timeout: 8s
    static_configs:
      - targets: ['{net}.2:5201']
        labels: {{agent: '{web_a}'}}
      - targets: ['{net}.1:5201']
        labels: {{agent: '{web_b}'}}
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: target
      - source_labels: [agent]
        target_label: __address__
      - source_labels: [agent]
        target_label: instance
      - regex: agent
        action: labeldrop
"#
    );
    let cfg_path = dir.path().join("prometheus.yml");
    std::fs::write(&cfg_path, &config).unwrap();
    let check = sh("promtool", &["check", "config", cfg_path.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "promtool check config: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let prom = format!("{net}.254:9090");
    let _prometheus = Killed(
        Command::new("ip")
            .args(["netns", "exec", &h, "prometheus"])
            .arg(format!("--config.file={}", cfg_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let mut ready = false;
    for _ in 0..300 {
        if curl(&h, &format!("http://{prom}/-/ready")).is_some() {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ready, "prometheus never became ready");

    // Readiness of the whole pipeline: at least five successful probes per direction in the
    // TSDB (about a minute at one probe per 10 s), bounded so a broken setup fails.
    let enough = r#"sum_over_time(wirespeed_probe_success{job="wirespeed_probe"}[10m]) >= 5"#;
    let mut done = Vec::new();
    for _ in 0..90 {
        done = query(&h, &prom, enough);
        if done.len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let probes = query(
        &h,
        &prom,
        r#"count_over_time(wirespeed_probe_success{job="wirespeed_probe"}[10m])"#,
    );
    assert_eq!(
        done.len(),
        2,
        "not five successful probes in each direction; probes so far:\n{}",
        show(&probes)
    );
    eprintln!("probes per direction:\n{}", show(&probes));

    let rates = query(&h, &prom, "wirespeed_probe_received_bytes_per_second * 8");
    eprintln!(
        "wirespeed_probe_received_bytes_per_second * 8:\n{}",
        show(&rates)
    );
    let mut dirs: Vec<(String, String)> = rates
        .iter()
        .map(|r| {
            let v: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
            assert!(v > 0.0, "{r}");
            (
                r["metric"]["instance"].as_str().unwrap().to_string(),
                r["metric"]["target"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    dirs.sort();
    assert_eq!(
        dirs,
        vec![
            (web_a.clone(), format!("{net}.2:5201")),
            (web_b.clone(), format!("{net}.1:5201")),
        ]
    );
    let verdicts = query(&h, &prom, "wirespeed_probe_verdict_info");
    eprintln!("wirespeed_probe_verdict_info:\n{}", show(&verdicts));
    for series in [
        "wirespeed_probe_sent_bytes",
        "wirespeed_probe_rtt_seconds",
        "wirespeed_probe_duration_seconds",
        "wirespeed_probe_retransmits",
    ] {
        let rows = query(&h, &prom, series);
        eprintln!("{series}:\n{}", show(&rows));
        assert_eq!(rows.len(), 2, "{series}: {}", show(&rows));
    }

    // The findings the crow fixture injects into agent A, and none from B's namespace facts
    // that name crow's interfaces.
    let findings = query(&h, &prom, "wirespeed_host_finding");
    eprintln!("wirespeed_host_finding:\n{}", show(&findings));
    let of_a: Vec<&str> = findings
        .iter()
        .filter(|r| r["metric"]["instance"] == web_a.as_str())
        .map(|r| r["metric"]["id"].as_str().unwrap())
        .collect();
    for id in [
        "pcie-link-downgraded",
        "pcie-bandwidth-below-line-rate",
        "nic-temperature-high",
        "socket-buffers-small",
    ] {
        assert!(
            of_a.contains(&id),
            "{id} missing from A's findings: {of_a:?}"
        );
    }
    assert!(findings
        .iter()
        .filter(|r| r["metric"]["instance"] == web_b.as_str())
        .all(|r| r["metric"]["device"] != "enp1s0f0np0"));

    // Each agent's test server served the other agent's probes.
    let served = query(
        &h,
        &prom,
        r#"wirespeed_server_tests_total{result="completed"} > 0"#,
    );
    eprintln!(
        "wirespeed_server_tests_total{{result=\"completed\"}}:\n{}",
        show(&served)
    );
    assert_eq!(served.len(), 2, "{}", show(&served));
}
