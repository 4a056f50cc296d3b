//! Authentication through the binary: iperf3's RSA scheme both ways with Debian's iperf3
//! (good key, wrong key, unknown user, no credentials), wirespeed to wirespeed, and the
//! pre-shared key (`--psk`). A stale timestamp cannot be produced through either binary (both
//! stamp their token with the clock); it is tested at the protocol level
//! (`crates/protocol/tests/protocol/auth_interop.rs`).
//!
//! Keys are made with openssl as iperf3's documentation makes them. Without iperf3 (built with
//! authentication) or openssl the tests print `SKIP:` (a failure under `CI`).

use crate::measure_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use measure_common::*;

#[path = "../../../protocol/tests/protocol/rsa_keys.rs"]
mod rsa_keys;
use rsa_keys::keys;

const WITHIN: Duration = Duration::from_secs(40);

fn tools(test: &str) -> bool {
    if !crate::need::iperf3(test) {
        return false;
    }
    let v = Command::new("iperf3")
        .arg("-v")
        .output()
        .expect("iperf3 -v");
    if !String::from_utf8_lossy(&v.stdout).contains("authentication") {
        crate::need::unavailable(test, "this iperf3 is built without authentication");
        return false;
    }
    crate::need::tool(test, "openssl", "version", "openssl")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A client of `side` with credentials `user`/`password` and the public key `key`.
fn client(side: Side, port: u16, user: &str, password: &str, key: &Path, extra: &[&str]) -> Output {
    let mut c = client_cmd(side, port, &["-t", "1"]);
    c.args(["--username", user, "--rsa-public-key-path", s(key)])
        .args(extra)
        .env("IPERF3_PASSWORD", password);
    run(&mut c, WITHIN)
}

fn assert_refused(o: &Output, what: &str) {
    assert!(!o.status.success(), "{what}: accepted: {}", text_of(o));
    assert!(
        text_of(o).contains("test authorization failed"),
        "{what}: not iperf3's words: {}",
        text_of(o)
    );
}

#[test]
fn iperf3_client_to_wirespeed_server_with_rsa_keys() {
    if !tools("iperf3_client_to_wirespeed_server_with_rsa_keys") {
        return;
    }
    let k = keys();
    let (srv, port) = start_server(&[
        "--rsa-private-key-path",
        s(&k.private),
        "--authorized-users-path",
        s(&k.users),
        "-i",
        "0",
    ]);
    let good = client(Side::Iperf3, port, "mario", "rossi", &k.public, &[]);
    assert_success(&good, "iperf3 client, good key");
    assert_refused(
        &client(Side::Iperf3, port, "mario", "rossi", &k.other_public, &[]),
        "iperf3 client, wrong key",
    );
    assert_refused(
        &client(Side::Iperf3, port, "luigi", "verdi", &k.public, &[]),
        "iperf3 client, unknown user",
    );
    assert_refused(
        &client(Side::Iperf3, port, "mario", "wrong", &k.public, &[]),
        "iperf3 client, wrong password",
    );
    let none = run(&mut client_cmd(Side::Iperf3, port, &["-t", "1"]), WITHIN);
    assert!(!none.status.success(), "no credentials: {}", text_of(&none));
    // wirespeed's own client, same key: OAEP (iperf3 3.17+'s default) and PKCS#1 v1.5.
    let ws = client(Side::Wirespeed, port, "mario", "rossi", &k.public, &[]);
    assert_success(&ws, "wirespeed client, good key");
    let ws1 = client(
        Side::Wirespeed,
        port,
        "mario",
        "rossi",
        &k.public,
        &["--use-pkcs1-padding"],
    );
    assert_success(&ws1, "wirespeed client, PKCS#1 padding");
    let wrong = client(
        Side::Wirespeed,
        port,
        "mario",
        "rossi",
        &k.other_public,
        &[],
    );
    assert_refused(&wrong, "wirespeed client, wrong key");
    assert_eq!(wrong.status.code(), Some(4), "refused: {}", text_of(&wrong));
    let log = String::from_utf8_lossy(&srv.wait_output(Duration::ZERO).stderr).into_owned();
    assert!(
        log.lines().any(
            |l| l.starts_with("wirespeed server: refused 127.0.0.1: test authorization failed")
        ),
        "server log: {log}"
    );
    assert!(!log.contains("rossi"), "a password in the log: {log}");
    drop(k);
}

#[test]
fn wirespeed_client_to_iperf3_server_with_rsa_keys() {
    if !tools("wirespeed_client_to_iperf3_server_with_rsa_keys") {
        return;
    }
    let k = keys();
    let port = free_port();
    let _srv = spawn(Command::new("iperf3").args([
        "-s",
        "-p",
        &port.to_string(),
        "--rsa-private-key-path",
        s(&k.private),
        "--authorized-users-path",
        s(&k.users),
    ]));
    wait_listening(port);
    // Debian's iperf3 (3.12) decrypts PKCS#1 v1.5 only (OAEP came with 3.17).
    let pkcs1 = ["--use-pkcs1-padding"];
    let good = client(Side::Wirespeed, port, "mario", "rossi", &k.public, &pkcs1);
    assert_success(&good, "good key");
    for (user, pwd, key, what) in [
        ("mario", "rossi", &k.other_public, "wrong key"),
        ("luigi", "verdi", &k.public, "unknown user"),
        ("mario", "wrong", &k.public, "wrong password"),
    ] {
        let o = client(Side::Wirespeed, port, user, pwd, key, &pkcs1);
        assert_refused(&o, what);
        assert_eq!(o.status.code(), Some(4), "{what}: {}", text_of(&o));
    }
}

#[test]
fn a_password_comes_from_the_environment_never_a_prompt() {
    let k = tempfile::tempdir().expect("tempdir");
    let key = k.path().join("public.pem");
    std::fs::write(&key, "not a key").expect("write");
    let o = run(
        Command::new(wirespeed())
            .args(["client", "127.0.0.1", "-p", "9", "--username", "mario"])
            .arg("--rsa-public-key-path")
            .arg(&key)
            .env_remove("IPERF3_PASSWORD"),
        WITHIN,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text_of(&o));
}

#[test]
fn a_psk_server_takes_only_clients_with_its_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("a.psk");
    let other = dir.path().join("b.psk");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef\n").expect("key");
    std::fs::write(&other, "fedcba9876543210fedcba9876543210\n").expect("key");
    let (srv, port) = start_server(&["--psk", key.to_str().expect("utf-8"), "-i", "0"]);
    let with = |k: Option<&PathBuf>| {
        let mut c = client_cmd(Side::Wirespeed, port, &["-t", "1"]);
        if let Some(k) = k {
            c.arg("--psk").arg(k);
        }
        run(&mut c, WITHIN)
    };
    assert_success(&with(Some(&key)), "the same key");
    for (k, what) in [(Some(&other), "another key"), (None, "no key")] {
        let o = with(k);
        assert_eq!(o.status.code(), Some(4), "{what}: {}", text_of(&o));
        assert!(
            text_of(&o).contains("pre-shared key"),
            "{what}: {}",
            text_of(&o)
        );
    }
    if crate::need::iperf3("a_psk_server_takes_only_clients_with_its_key") {
        let o = run(&mut client_cmd(Side::Iperf3, port, &["-t", "1"]), WITHIN);
        assert!(!o.status.success(), "iperf3 client got in: {}", text_of(&o));
    }
    let log = String::from_utf8_lossy(&srv.wait_output(Duration::ZERO).stderr).into_owned();
    assert!(
        log.contains("refused 127.0.0.1: pre-shared key"),
        "server log: {log}"
    );
}

/// The agent's test server takes `wirespeed server`'s authentication and address flags with
/// their meanings, and its `/metrics` counts each refusal under its reason.
#[test]
fn an_agent_with_rsa_keys_refuses_unauthenticated_clients_and_counts_them_as_auth() {
    use crate::agent_common::{get, metrics_reaching, promtool_complaints, start_agent, value};
    if !tools("an_agent_with_rsa_keys_refuses_unauthenticated_clients_and_counts_them_as_auth") {
        return;
    }
    let k = keys();
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--rsa-private-key-path",
            s(&k.private),
            "--authorized-users-path",
            s(&k.users),
        ],
    );
    let port = a.test_port.expect("test server port");
    let none = run(&mut client_cmd(Side::Iperf3, port, &["-t", "1"]), WITHIN);
    assert!(!none.status.success(), "no credentials: {}", text_of(&none));
    assert_refused(
        &client(Side::Iperf3, port, "mario", "rossi", &k.other_public, &[]),
        "iperf3 client, wrong key",
    );
    assert_success(
        &client(Side::Iperf3, port, "mario", "rossi", &k.public, &[]),
        "iperf3 client, good key",
    );
    // A probe from another agent with the credentials (`--probe.*`) gets in too.
    let prober = start_agent(
        &["env", "IPERF3_PASSWORD=rossi"],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "--no-server",
            "--probe.username",
            "mario",
            "--probe.rsa-public-key-path",
            s(&k.public),
        ],
    );
    let (code, text) = get(
        prober.web,
        &format!("/probe?target=127.0.0.1:{port}&duration=1"),
    );
    assert_eq!(code, 200, "{text}");
    assert_eq!(value(&text, "wirespeed_probe_success"), Some(1.0), "{text}");
    let completed = r#"wirespeed_server_tests_total{result="completed"}"#;
    let text = metrics_reaching(a.web, completed, 2.0);
    assert_eq!(
        value(
            &text,
            r#"wirespeed_server_tests_refused_total{reason="auth"}"#
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(value(&text, completed), Some(2.0), "{text}");
    if let Some(c) = promtool_complaints(&text) {
        panic!("promtool check metrics: {c}\n{text}");
    }
    drop(k);
}

#[test]
fn an_agent_with_deny_refuses_the_address_and_counts_it_as_denied() {
    use crate::agent_common::{get, start_agent, value};
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "-p",
            "0",
            "--deny",
            "127.0.0.0/8",
        ],
    );
    let port = a.test_port.expect("test server port");
    let o = run(&mut client_cmd(Side::Wirespeed, port, &["-t", "1"]), WITHIN);
    assert!(
        !o.status.success(),
        "a denied address got in: {}",
        text_of(&o)
    );
    let (code, text) = get(a.web, "/metrics");
    assert_eq!(code, 200, "{text}");
    let denied = value(
        &text,
        r#"wirespeed_server_tests_refused_total{reason="denied"}"#,
    );
    assert!(denied.is_some_and(|n| n >= 1.0), "{text}");
}
