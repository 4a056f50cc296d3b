//! The agent's HTTP front door against callers who are strangers: bounded requests, a
//! connection cap that one address cannot fill, `--web.config.file` (TLS and bcrypt basic
//! authentication), `--probe.allow`, a UDP cap per probe, and probe failures reported as a few
//! fixed reasons with the detail in the agent's log only. Loopback only; every attack is
//! bounded in bytes and time.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::agent_common::{get, start_agent, value};

/// The agent's peak resident memory, KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Bytes of `chunk` written, repeatedly, before the agent closes the connection (or `limit`).
fn send_until_closed(addr: SocketAddr, head: &[u8], chunk: &[u8], limit: usize) -> usize {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut sent = 0;
    if s.write_all(head).is_err() {
        return 0;
    }
    while sent < limit {
        match s.write(chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => sent += n,
        }
    }
    sent
}

#[test]
fn an_endless_request_line_or_a_header_flood_is_cut_off_and_memory_stays_bounded() {
    let a = start_agent(&[], &["--web.listen-address", "127.0.0.1:0", "--no-server"]);
    let before = peak_kib(a.pid());
    // 64 MiB of request line without a line end, and an endless stream of headers: each must
    // be closed long before it is all sent (a server that buffers keeps reading)
    let limit = 64 << 20;
    let line = send_until_closed(a.web, b"GET /", &[b'a'; 65536], limit);
    let headers = send_until_closed(
        a.web,
        b"GET /metrics HTTP/1.1\r\nHost: a\r\n",
        "X-A: b\r\n".repeat(8192).as_bytes(),
        limit,
    );
    assert!(
        line < limit && headers < limit,
        "sent {line} and {headers} bytes"
    );
    let grew = peak_kib(a.pid()).saturating_sub(before);
    assert!(
        grew < 32 << 10,
        "the agent's peak memory grew by {grew} KiB"
    );
    let (code, _) = get(a.web, "/metrics");
    assert_eq!(code, 200);
}

#[test]
fn idle_connections_from_one_address_leave_room_for_a_scraper_from_another() {
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "--no-server",
            "--web.max-connections",
            "8",
        ],
    );
    // 40 idle connections from 127.0.0.1: one (an eighth of 8) is kept, the rest closed (each
    // new one closes the address's oldest idle one)
    let idle: Vec<TcpStream> = (0..40)
        .filter_map(|_| TcpStream::connect(a.web).ok())
        .collect();
    assert_eq!(idle.len(), 40);
    // a scraper from 127.0.0.2 gets its answer at once, not after the idle ones time out
    let from = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    from.bind(&"127.0.0.2:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    from.connect(&a.web.into()).unwrap();
    let mut s: TcpStream = from.into();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: a\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    let refused = value(&answer, "wirespeed_agent_http_refused_connections_total").unwrap()
        + value(&answer, "wirespeed_agent_http_evicted_connections_total").unwrap_or(0.0);
    assert!(refused >= 30.0, "closed {refused} of 40 idle connections");
    drop(idle);
}

/// A self-signed certificate for 127.0.0.1 (openssl), its key, and a web configuration with a
/// bcrypt user `prom` (password `s3cret`).
pub(crate) fn tls_and_auth(dir: &std::path::Path) -> std::path::PathBuf {
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=agent",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
        ])
        .arg(dir.join("agent.key"))
        .arg("-out")
        .arg(dir.join("agent.crt"))
        .output()
        .expect("run openssl");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let cfg = dir.join("web.yml");
    std::fs::write(
        &cfg,
        format!(
            "tls_server_config:\n  cert_file: agent.crt\n  key_file: agent.key\n\
             basic_auth_users:\n  prom: {hash}\n\
             http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
        ),
    )
    .unwrap();
    cfg
}

/// `curl` over TLS: (status, body).
fn curl(url: &str, ca: &std::path::Path, user: Option<&str>) -> (u16, String) {
    let mut c = Command::new("curl");
    c.args(["-s", "--max-time", "60", "-w", "\n%{http_code}", "--cacert"])
        .arg(ca)
        .arg(url);
    if let Some(u) = user {
        c.args(["-u", u]);
    }
    let o = c.output().expect("run curl");
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[test]
fn a_web_config_file_brings_tls_and_basic_authentication_to_every_path() {
    let me = "a_web_config_file_brings_tls_and_basic_authentication_to_every_path";
    if !crate::need::tool(me, "openssl", "version", "openssl")
        || !crate::need::tool(me, "curl", "--version", "curl")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = tls_and_auth(dir.path());
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "--no-server",
            "--web.config.file",
            cfg.to_str().unwrap(),
        ],
    );
    let ca = dir.path().join("agent.crt");
    let base = format!("https://127.0.0.1:{}", a.web.port());
    for path in ["/metrics", "/-/healthy", "/probe?target=127.0.0.1"] {
        assert_eq!(curl(&format!("{base}{path}"), &ca, None).0, 401, "{path}");
        assert_eq!(
            curl(&format!("{base}{path}"), &ca, Some("prom:wrong")).0,
            401
        );
        assert_eq!(
            curl(&format!("{base}{path}"), &ca, Some("nobody:s3cret")).0,
            401
        );
    }
    let (code, body) = curl(&format!("{base}/metrics"), &ca, Some("prom:s3cret"));
    assert_eq!(code, 200, "{body}");
    assert!(value(&body, "wirespeed_agent_http_unauthorized_total").unwrap() >= 9.0);
    // plain HTTP to the TLS port gets no metrics
    let (code, body) = get(a.web, "/metrics");
    assert_ne!(code, 200, "{body}");
    // a file the agent cannot use is refused at start, naming the file and the key
    std::fs::write(dir.path().join("bad.yml"), "cipher_suites: [x]\n").unwrap();
    let o = Command::new(crate::agent_common::wirespeed())
        .args(["agent", "--no-server", "--web.config.file"])
        .arg(dir.path().join("bad.yml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.yml") && err.contains("cipher_suites"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn probes_reach_only_allowed_targets_at_a_bounded_udp_rate_and_fail_with_a_fixed_reason() {
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--probe.allow",
            "127.0.0.1/32",
        ],
    );
    let port = a.test_port.expect("the agent's test server");
    // outside --probe.allow: refused before anything is sent
    let (code, body) = get(a.web, &format!("/probe?target=127.0.0.9:{port}&duration=1"));
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("--probe.allow"), "{body}");
    // UDP: 16 streams of 1 Gbit/s is above the default 10 Gbit/s for one probe
    let (code, body) = get(
        a.web,
        &format!("/probe?target=127.0.0.1:{port}&udp_rate=1G&streams=16"),
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("--probe.max-udp-rate"), "{body}");
    // an allowed target runs
    let (code, text) = get(a.web, &format!("/probe?target=127.0.0.1:{port}&duration=1"));
    assert_eq!(code, 200, "{text}");
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(1.0), "{text}");
    // nothing listens on port 1: the caller learns "connect", the log the detail
    let started = Instant::now();
    let (code, json) = get(a.web, "/probe.json?target=127.0.0.1:1&duration=1");
    assert_eq!(code, 200);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(doc["agent"]["error"], "connect", "{json}");
    assert!(!json.to_lowercase().contains("refused"), "{json}");
    let (_, text) = get(a.web, "/probe?target=127.0.0.1:1&duration=1");
    assert_eq!(
        value(&text, r#"wirespeed_probe_failure{reason="connect"}"#),
        Some(1.0),
        "{text}"
    );
    // the detail reaches the agent's log (read until it shows, bounded)
    while !a
        .log
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("probe of 127.0.0.1:1 failed (connect)"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no log line: {:?}",
            a.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
