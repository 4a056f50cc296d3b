//! iperf3's RSA authentication against Debian's iperf3, both ways, without the engine:
//! keys from `openssl genrsa` / `openssl rsa -pubout`, the users file in iperf3's format.
//!
//! - wirespeed's client session, over a plain TCP stream, to `iperf3 -s
//!   --rsa-private-key-path K --authorized-users-path U`: a good token gets `CREATE_STREAMS`;
//!   a wrong key, an unknown user and a stale timestamp get `SERVER_ERROR` 142.
//! - `iperf3 -c --username U --rsa-public-key-path P` (password in `IPERF3_PASSWORD`) to a
//!   harness made of the protocol crate's server session and [`ServerAuth`]: a good token
//!   passes the check (the harness then answers `ACCESS_DENIED`, so iperf3 says "busy"
//!   instead of running a test); the others are refused and iperf3 prints "test
//!   authorization failed".
//!
//! Without iperf3 (built with authentication) or openssl these tests print `SKIP:`; with `CI`
//! set that is a failure.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::rsa_keys::{keys, Keys};
use rand_core::OsRng;
use wirespeed_protocol::auth::{
    encode_token, public_key_from_pem, AuthRefusal, Padding, ServerAuth,
};
use wirespeed_protocol::session::{ClientEvent, Refusal, ServerEvent};
use wirespeed_protocol::{ClientSession, Cookie, ServerSession, State, TestParams, Timeouts};

fn skip(test: &str, why: &str) -> bool {
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {why} (CI is set: this is a failure, not a skip)");
    }
    eprintln!("SKIP: {test} because {why}");
    true
}

/// iperf3 with authentication, and openssl, or a reason to skip.
fn tools_missing(test: &str) -> bool {
    let v = match Command::new("iperf3").arg("-v").output() {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(_) => return skip(test, "iperf3 is not installed (apt-get install iperf3)"),
    };
    if !v.contains("authentication") {
        return skip(test, "this iperf3 is built without authentication");
    }
    if Command::new("openssl").arg("version").output().is_err() {
        return skip(test, "openssl is not installed");
    }
    false
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Wait until something listens on 127.0.0.1:`port`, reading the kernel's table instead of
/// connecting (a probe connection would count as a failed test to iperf3).
fn wait_listening(port: u16, child: &mut Child) {
    let want = format!(":{port:04X} ");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let t = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let t6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
        if t.lines()
            .chain(t6.lines())
            .any(|l| l.contains(&want) && l.split_whitespace().nth(3) == Some("0A"))
        {
            return;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("iperf3 -s exited: {st}");
        }
        assert!(
            Instant::now() < deadline,
            "iperf3 -s never listened on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A one-off `iperf3 -s -1` with authentication, listening on a free port. (A server
/// that runs many tests re-creates its listening socket after each, so a connection made
/// right after a test can land on the closing one.)
fn iperf3_server(k: &Keys) -> (Server, u16) {
    let port = free_port();
    let mut child = Command::new("iperf3")
        .args([
            "-s",
            "-1",
            "-p",
            &port.to_string(),
            "--rsa-private-key-path",
        ])
        .arg(&k.private)
        .arg("--authorized-users-path")
        .arg(&k.users)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(port, &mut child);
    (Server(child), port)
}

/// Drive a client session, against a fresh iperf3 server, until the server answers the
/// parameters.
fn client_until_decision(k: &Keys, authtoken: Option<String>) -> ClientEvent {
    let (_server, port) = iperf3_server(k);
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let start = Instant::now();
    let now = || start.elapsed();
    let mut params = TestParams::new_tcp(1, 1);
    params.authtoken = authtoken;
    params.client_version = Some("3.12".into());
    let mut c = ClientSession::new(
        now(),
        Cookie::from_entropy(&[9u8; 36]),
        params,
        Timeouts::default(),
    );
    let mut buf = [0u8; 4096];
    loop {
        let out = c.take_transmit();
        if !out.is_empty() {
            s.write_all(&out).unwrap();
        }
        if let Some(ev) = c.poll_event() {
            return ev;
        }
        match s.read(&mut buf) {
            Ok(0) => c.handle_eof(now()),
            Ok(n) => c.handle_input(now(), &buf[..n]),
            Err(e) => panic!("reading from iperf3: {e}"),
        }
    }
}

fn is_auth_refusal(ev: &ClientEvent) -> bool {
    matches!(
        ev,
        ClientEvent::Refused(Refusal::ServerError { i_errno: 142, .. })
    )
}

#[test]
fn wirespeed_client_authenticates_to_an_iperf3_server() {
    let test = "wirespeed_client_authenticates_to_an_iperf3_server";
    if tools_missing(test) {
        return;
    }
    let k = keys();
    let public = public_key_from_pem(&std::fs::read_to_string(&k.public).unwrap()).unwrap();
    let other = public_key_from_pem(&std::fs::read_to_string(&k.other_public).unwrap()).unwrap();
    // Debian's iperf3 is 3.12: PKCS#1 v1.5.
    let token = |key, user: &str, pw: &str, ts: i64| {
        Some(encode_token(user, pw, ts, key, Padding::Pkcs1v15, &mut OsRng).unwrap())
    };

    let ev = client_until_decision(&k, token(&public, "mario", "rossi", unix_now()));
    assert_eq!(ev, ClientEvent::CreateStreams, "good key: accepted");
    for (what, tok) in [
        ("wrong key", token(&other, "mario", "rossi", unix_now())),
        ("unknown user", token(&public, "peach", "rossi", unix_now())),
        (
            "wrong password",
            token(&public, "mario", "verdi", unix_now()),
        ),
        (
            "stale timestamp",
            token(&public, "mario", "rossi", unix_now() - 3600),
        ),
        ("no token", None),
    ] {
        let ev = client_until_decision(&k, tok);
        assert!(is_auth_refusal(&ev), "{what}: {ev:?}");
        if let ClientEvent::Refused(r) = ev {
            assert!(
                r.to_string().contains("test authorization failed"),
                "{what}: {r}"
            );
        }
    }
}

/// A one-connection-at-a-time server made of the protocol crate's server session and
/// [`ServerAuth`]; each decision is sent back on the channel.
fn harness(
    auth: ServerAuth,
    clock_offset: i64,
    connections: usize,
) -> (
    u16,
    std::thread::JoinHandle<Vec<Result<String, AuthRefusal>>>,
) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let mut decisions = Vec::new();
        for _ in 0..connections {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let start = Instant::now();
            let mut cookie = [0u8; 37];
            s.read_exact(&mut cookie).unwrap();
            let mut sess = ServerSession::new(
                start.elapsed(),
                Cookie::parse(&cookie).unwrap(),
                Timeouts::default(),
            );
            s.write_all(&sess.take_transmit()).unwrap();
            let mut buf = [0u8; 8192];
            let params = loop {
                if let Some(ev) = sess.poll_event() {
                    match ev {
                        ServerEvent::Params(p) => break p,
                        other => panic!("before params: {other:?}"),
                    }
                }
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    sess.handle_eof(start.elapsed());
                } else {
                    sess.handle_input(start.elapsed(), &buf[..n]);
                }
            };
            let d = auth.authorize(params.authtoken.as_deref(), unix_now() + clock_offset);
            match &d {
                // Authenticated: a real server would accept; this one says busy, so that
                // the iperf3 client ends at once with a different message.
                Ok(_) => s.write_all(&[State::AccessDenied.to_byte()]).unwrap(),
                Err(r) => {
                    sess.refuse(&wirespeed_protocol::auth::refusal_decline(r));
                    s.write_all(&sess.take_transmit()).unwrap();
                }
            }
            decisions.push(d);
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        decisions
    });
    (port, h)
}

fn iperf3_client(port: u16, public: &Path, user: &str, password: &str) -> String {
    let o = Command::new("timeout")
        .args([
            "60",
            "iperf3",
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
        ])
        .args(["--username", user, "--rsa-public-key-path"])
        .arg(public)
        .env("IPERF3_PASSWORD", password)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn iperf3_client_authenticates_to_the_protocol_crates_server() {
    let test = "iperf3_client_authenticates_to_the_protocol_crates_server";
    if tools_missing(test) {
        return;
    }
    let k = keys();
    let auth = ServerAuth::new(
        &std::fs::read_to_string(&k.private).unwrap(),
        &std::fs::read_to_string(&k.users).unwrap(),
    )
    .unwrap();

    // Good key, then unknown user, wrong password and the wrong key, on the server's clock.
    let (port, h) = harness(auth.clone(), 0, 4);
    let good = iperf3_client(port, &k.public, "mario", "rossi");
    let unknown = iperf3_client(port, &k.public, "peach", "rossi");
    let wrong_pw = iperf3_client(port, &k.public, "mario", "verdi");
    let wrong_key = iperf3_client(port, &k.other_public, "mario", "rossi");
    let d = h.join().unwrap();
    assert_eq!(d[0], Ok("mario".to_string()), "{good}");
    assert!(good.contains("busy"), "{good}");
    assert!(!good.contains("authorization"), "{good}");
    assert!(
        matches!(d[1], Err(AuthRefusal::Unknown { .. })),
        "{:?}",
        d[1]
    );
    assert!(
        matches!(d[2], Err(AuthRefusal::Unknown { .. })),
        "{:?}",
        d[2]
    );
    assert_eq!(d[3], Err(AuthRefusal::Undecryptable));
    for out in [&unknown, &wrong_pw, &wrong_key] {
        assert!(out.contains("test authorization failed"), "{out}");
    }

    // A stale timestamp: the server's clock an hour ahead of the client's.
    let (port, h) = harness(auth, 3600, 1);
    let stale = iperf3_client(port, &k.public, "mario", "rossi");
    let d = h.join().unwrap();
    assert!(matches!(d[0], Err(AuthRefusal::Skew { .. })), "{:?}", d[0]);
    assert!(stale.contains("test authorization failed"), "{stale}");
}
