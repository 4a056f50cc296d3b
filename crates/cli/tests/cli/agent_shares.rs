//! The agent's front door shared by address and prefix, against a few callers that try to
//! starve a scraper: idle connections from four addresses (over HTTP and TLS), from four
//! addresses of one IPv6 /64 (in a network namespace of the test's own), wrong passwords from
//! four addresses against a cost-10 bcrypt user, and one address asking for every probe ticket.
//! The scraper's answers are counted (never timed): at least 19 of 20 must be answered while
//! the attack runs. Loopback only; every attack is bounded in count and time, and paced.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::agent_common::{get, read_answer, start_agent, value};
use crate::measure_common::wait_until;

/// Scrapes counted during an attack.
const SCRAPES: usize = 20;
/// Least of them that must be answered.
const ANSWERED: usize = 19;
/// Time between scrapes, so that the attackers refill what the agent closed.
const PACE: Duration = Duration::from_millis(200);
/// Time between an attacker's sweeps over its connections (a bound on its load, not a wait).
const SWEEP: Duration = Duration::from_millis(5);
/// Most sweeps or requests of one attacker thread.
const MAX_ROUNDS: usize = 60_000;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Move this thread into network namespace `ns` (its sockets are then created there).
fn enter(ns: &str) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(format!("/run/netns/{ns}")).expect("open the namespace");
    // SAFETY: setns on a valid descriptor; it changes only this thread's network namespace
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

/// A TCP connection from `from` (a local address) to `to`.
fn connect_from(from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let d = if from.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(d, Type::STREAM, None)?;
    s.bind(&SocketAddr::new(from, 0).into())?;
    s.connect_timeout(&to.into(), Duration::from_secs(10))?;
    Ok(s.into())
}

/// Whether the agent closed `s` (a non-blocking socket): end of stream or an error.
fn closed(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.peek(&mut b) {
        Ok(n) => n == 0,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

/// Standard base64 with padding (for a basic authentication header).
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, x)| n | u32::from(*x) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// Attacker threads, stopped and joined on drop.
struct Attack {
    stop: Arc<AtomicBool>,
    /// Connections opened (idle attack) or answers read (password attack) so far.
    count: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
}

impl Attack {
    /// `per` idle connections from each address of `from`, each reopened as soon as the agent
    /// closes it; the threads enter `ns` first when given.
    fn idle(from: &[IpAddr], to: SocketAddr, per: usize, ns: Option<&str>) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let threads = from
            .iter()
            .map(|&a| {
                let (stop, count, ns) = (
                    Arc::clone(&stop),
                    Arc::clone(&count),
                    ns.map(str::to_string),
                );
                std::thread::spawn(move || {
                    if let Some(ns) = ns {
                        enter(&ns);
                    }
                    let mut held: Vec<Option<TcpStream>> = (0..per).map(|_| None).collect();
                    for _ in 0..MAX_ROUNDS {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        for slot in held.iter_mut() {
                            if slot.as_ref().is_none_or(closed) {
                                *slot = connect_from(a, to)
                                    .ok()
                                    .filter(|s| s.set_nonblocking(true).is_ok());
                                if slot.is_some() {
                                    count.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                        std::thread::sleep(SWEEP);
                    }
                })
            })
            .collect();
        Attack {
            stop,
            count,
            threads,
        }
    }

    /// `per` connections from each address of `from`, each sending `request` over and over
    /// (a new connection each time) and reading the answer.
    fn requests(from: &[IpAddr], to: SocketAddr, per: usize, request: &str) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for &a in from {
            for _ in 0..per {
                let (stop, count, request) =
                    (Arc::clone(&stop), Arc::clone(&count), request.to_string());
                threads.push(std::thread::spawn(move || {
                    for _ in 0..MAX_ROUNDS {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        let Ok(mut s) = connect_from(a, to) else {
                            std::thread::sleep(SWEEP);
                            continue;
                        };
                        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
                        let _ = s.write_all(request.as_bytes());
                        let mut answer = Vec::new();
                        let _ = s.read_to_end(&mut answer);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
        }
        Attack {
            stop,
            count,
            threads,
        }
    }

    /// `per` threads for each address of `from`, each running `curl ARGS --interface ADDRESS`
    /// over and over (a TLS attacker without a TLS library in the test).
    fn curls(from: &[IpAddr], per: usize, args: &[String]) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for &a in from {
            for _ in 0..per {
                let (stop, count, args) = (Arc::clone(&stop), Arc::clone(&count), args.to_vec());
                threads.push(std::thread::spawn(move || {
                    for _ in 0..MAX_ROUNDS {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        let _ = std::process::Command::new("curl")
                            .args(&args)
                            .args(["--interface", &a.to_string()])
                            .output();
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
        }
        Attack {
            stop,
            count,
            threads,
        }
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One scrape of `/metrics` from `from` over plain HTTP: the status (0 when the agent closed
/// the connection without an answer) and the body.
fn scrape_from(from: IpAddr, to: SocketAddr, auth: Option<&str>) -> (u16, String) {
    let Ok(mut s) = connect_from(from, to) else {
        return (0, String::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let auth = auth.map_or(String::new(), |a| {
        format!("Authorization: Basic {}\r\n", base64(a.as_bytes()))
    });
    if s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: agent\r\n{auth}\r\n").as_bytes())
        .is_err()
    {
        return (0, String::new());
    }
    read_answer(&mut s)
}

/// [`SCRAPES`] scrapes by `one` (true when answered 200), paced: how many were answered, and
/// the last answer's body. The time each took is printed (a figure, not a criterion).
fn count_answers(what: &str, mut one: impl FnMut() -> (bool, String)) -> (usize, String) {
    let mut answered = 0;
    let mut took = Vec::new();
    let mut last = String::new();
    for _ in 0..SCRAPES {
        let t0 = Instant::now();
        let (ok, body) = one();
        if ok {
            answered += 1;
            took.push(t0.elapsed());
            last = body;
        }
        std::thread::sleep(PACE);
    }
    took.sort();
    eprintln!(
        "{what}: {answered} of {SCRAPES} scrapes answered, median {:?}",
        took.get(took.len() / 2)
    );
    (answered, last)
}

#[test]
fn base64_is_the_standard_one() {
    assert_eq!(base64(b"prom:s3cret"), "cHJvbTpzM2NyZXQ=");
    assert_eq!(base64(b"ab"), "YWI=");
    assert_eq!(base64(b"abc"), "YWJj");
}

#[test]
fn idle_connections_from_four_addresses_leave_a_scraper_answered() {
    let a = start_agent(&[], &["--web.listen-address", "127.0.0.1:0", "--no-server"]);
    let from: Vec<IpAddr> = (2..6).map(|i| ip(&format!("127.0.0.{i}"))).collect();
    let attack = Attack::idle(&from, a.web, 16, None);
    // at full strength: every attacker has opened its 16 (the default 64 places, all of them)
    wait_until("the attackers' connections", || attack.count() >= 64);
    let scraper = ip("127.0.0.9");
    let (answered, last) = count_answers("idle connections, HTTP", || {
        let (code, body) = scrape_from(scraper, a.web, None);
        (code == 200, body)
    });
    assert!(
        answered >= ANSWERED,
        "{answered} of {SCRAPES} scrapes answered"
    );
    // the attack pressed on the shares: the agent closed attackers' idle connections
    let evicted = value(&last, "wirespeed_agent_http_evicted_connections_total").unwrap();
    assert!(evicted > 0.0, "{last}");
    drop(attack);
}

#[test]
fn idle_connections_from_four_addresses_leave_a_scraper_answered_over_tls() {
    let me = "idle_connections_from_four_addresses_leave_a_scraper_answered_over_tls";
    if !crate::need::tool(me, "openssl", "version", "openssl")
        || !crate::need::tool(me, "curl", "--version", "curl")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = crate::agent_front_door::tls_and_auth(dir.path());
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
    let url = format!("https://127.0.0.1:{}/metrics", a.web.port());
    let from: Vec<IpAddr> = (2..6).map(|i| ip(&format!("127.0.0.{i}"))).collect();
    let attack = Attack::idle(&from, a.web, 16, None);
    wait_until("the attackers' connections", || attack.count() >= 64);
    let (answered, _) = count_answers("idle connections, TLS", || {
        let o = std::process::Command::new("curl")
            .args(["-s", "--max-time", "60", "--interface", "127.0.0.9"])
            .args(["-u", "prom:s3cret", "-w", "\n%{http_code}", "--cacert"])
            .arg(&ca)
            .arg(&url)
            .output()
            .expect("run curl");
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim() == "200", body.to_string())
    });
    assert!(
        answered >= ANSWERED,
        "{answered} of {SCRAPES} scrapes answered over TLS"
    );
    drop(attack);
}

/// A network namespace of the test's own, deleted on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.0])
            .output();
    }
}

fn ip_cmd(args: &[&str]) {
    let o = std::process::Command::new("ip")
        .args(args)
        .output()
        .expect("run ip");
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn idle_connections_from_four_addresses_of_one_ipv6_64_leave_a_scraper_answered() {
    let me = "idle_connections_from_four_addresses_of_one_ipv6_64_leave_a_scraper_answered";
    if !crate::need::root(me) || !crate::need::tool(me, "ip", "-V", "iproute2") {
        return;
    }
    let ns = Netns(format!("ws-sec-agent-v6-{}", std::process::id()));
    ip_cmd(&["netns", "add", &ns.0]);
    ip_cmd(&["-n", &ns.0, "link", "set", "lo", "up"]);
    // the agent, four attackers in one /64, a scraper in another /64: all on the namespace's lo
    let agent_ip = "2001:db8:37:1::1";
    let attackers: Vec<IpAddr> = (2..6).map(|i| ip(&format!("2001:db8:37:2::{i}"))).collect();
    let scraper = ip("2001:db8:37:3::9");
    for a in std::iter::once(ip(agent_ip))
        .chain(attackers.iter().copied())
        .chain([scraper])
    {
        ip_cmd(&[
            "-n",
            &ns.0,
            "addr",
            "add",
            &format!("{a}/128"),
            "dev",
            "lo",
            "nodad",
        ]);
    }
    let a = start_agent(
        &["ip", "netns", "exec", &ns.0],
        &[
            "--web.listen-address",
            &format!("[{agent_ip}]:0"),
            "--no-server",
        ],
    );
    let web = a.web;
    let attack = Attack::idle(&attackers, web, 16, Some(&ns.0));
    wait_until("the attackers' connections", || attack.count() >= 64);
    // the scraper's sockets are made in the namespace too, by a thread of its own
    let nsname = ns.0.clone();
    let result = std::thread::spawn(move || {
        enter(&nsname);
        count_answers("idle connections from one IPv6 /64", || {
            let (code, body) = scrape_from(scraper, web, None);
            (code == 200, body)
        })
    })
    .join()
    .unwrap();
    let (answered, last) = result;
    assert!(
        answered >= ANSWERED,
        "{answered} of {SCRAPES} scrapes answered"
    );
    let evicted = value(&last, "wirespeed_agent_http_evicted_connections_total").unwrap();
    assert!(evicted > 0.0, "{last}");
    drop(attack);
    drop(a);
}

#[test]
fn wrong_passwords_from_four_addresses_leave_a_verified_scraper_answered() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("web.yml");
    let hash = bcrypt::hash("s3cret", 10).unwrap();
    std::fs::write(&cfg, format!("basic_auth_users:\n  prom: {hash}\n")).unwrap();
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
    let scraper = ip("127.0.0.9");
    // the scraper's credentials are verified once, before the attack
    assert_eq!(scrape_from(scraper, a.web, Some("prom:s3cret")).0, 200);
    let wrong = base64(b"prom:guess");
    let from: Vec<IpAddr> = (2..6).map(|i| ip(&format!("127.0.0.{i}"))).collect();
    let attack = Attack::requests(
        &from,
        a.web,
        16,
        &format!("GET /metrics HTTP/1.0\r\nAuthorization: Basic {wrong}\r\n\r\n"),
    );
    // the attack is under way: its guesses are being answered
    wait_until("the attackers' answers", || attack.count() >= 64);
    let (answered, last) = count_answers("wrong passwords, verified scraper", || {
        let (code, body) = scrape_from(scraper, a.web, Some("prom:s3cret"));
        (code == 200, body)
    });
    assert!(
        answered >= ANSWERED,
        "{answered} of {SCRAPES} scrapes answered"
    );
    // the guesses were turned away: wrong (401) or too many at once (429)
    let turned = value(&last, "wirespeed_agent_http_unauthorized_total").unwrap()
        + value(&last, "wirespeed_agent_http_auth_throttled_total").unwrap();
    assert!(turned >= 64.0, "{last}");
    drop(attack);
}

#[test]
fn wrong_passwords_over_tls_from_four_addresses_leave_a_verified_scraper_answered() {
    let me = "wrong_passwords_over_tls_from_four_addresses_leave_a_verified_scraper_answered";
    if !crate::need::tool(me, "openssl", "version", "openssl")
        || !crate::need::tool(me, "curl", "--version", "curl")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = crate::agent_front_door::tls_and_auth(dir.path());
    // the same certificate, a cost-10 user
    let hash = bcrypt::hash("s3cret", 10).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "tls_server_config:\n  cert_file: agent.crt\n  key_file: agent.key\n\
             basic_auth_users:\n  prom: {hash}\n"
        ),
    )
    .unwrap();
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
    let url = format!("https://127.0.0.1:{}/metrics", a.web.port());
    let curl = |user: &str, from: &str| -> (bool, String) {
        let o = std::process::Command::new("curl")
            .args(["-s", "--max-time", "60", "--interface", from, "-u", user])
            .args(["-w", "\n%{http_code}", "--cacert"])
            .arg(&ca)
            .arg(&url)
            .output()
            .expect("run curl");
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim() == "200", body.to_string())
    };
    // the scraper's credentials are verified once, before the attack
    assert!(curl("prom:s3cret", "127.0.0.9").0);
    let from: Vec<IpAddr> = (2..6).map(|i| ip(&format!("127.0.0.{i}"))).collect();
    let args: Vec<String> = [
        "-s",
        "--max-time",
        "30",
        "-o",
        "/dev/null",
        "-u",
        "prom:guess",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(["--cacert".into(), ca.display().to_string(), url.clone()])
    .collect();
    let attack = Attack::curls(&from, 16, &args);
    wait_until("the attackers' answers", || attack.count() >= 64);
    let (answered, last) = count_answers("wrong passwords over TLS, verified scraper", || {
        curl("prom:s3cret", "127.0.0.9")
    });
    assert!(
        answered >= ANSWERED,
        "{answered} of {SCRAPES} scrapes answered over TLS"
    );
    let turned = value(&last, "wirespeed_agent_http_unauthorized_total").unwrap()
        + value(&last, "wirespeed_agent_http_auth_throttled_total").unwrap();
    assert!(turned >= 64.0, "{last}");
    drop(attack);
}

#[test]
fn one_address_cannot_take_every_probe_ticket() {
    // a silent target: it accepts nothing and answers nothing, so each probe holds its ticket
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = silent.local_addr().unwrap();
    let a = start_agent(
        &[],
        &[
            "--web.listen-address",
            "127.0.0.1:0",
            "--no-server",
            "--probe.allow",
            "127.0.0.1/32",
        ],
    );
    // 16 probe requests at once from 127.0.0.2, as many as the agent has tickets
    let answers = Arc::new(Mutex::new(Vec::new()));
    let attacker = ip("127.0.0.2");
    let threads: Vec<JoinHandle<()>> = (0..16)
        .map(|_| {
            let answers = Arc::clone(&answers);
            let web = a.web;
            std::thread::spawn(move || {
                let path = format!("/probe?target={target}&duration=1");
                let answer = match connect_from(attacker, web) {
                    Ok(mut s) => {
                        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
                        let _ = s.write_all(
                            format!("GET {path} HTTP/1.0\r\nHost: agent\r\n\r\n").as_bytes(),
                        );
                        let mut buf = Vec::new();
                        let _ = s.read_to_end(&mut buf);
                        String::from_utf8_lossy(&buf).into_owned()
                    }
                    Err(_) => String::new(),
                };
                answers.lock().unwrap().push(answer);
            })
        })
        .collect();
    // every request of the attacker is either answered (refused at once) or holds a ticket
    let in_flight = || {
        value(&get(a.web, "/metrics").1, "wirespeed_agent_probe_requests").unwrap_or(0.0) as usize
    };
    wait_until(
        "the attacker's requests answered or holding a ticket",
        || answers.lock().unwrap().len() + in_flight() >= 16,
    );
    let held = in_flight();
    assert!(held <= 4, "one address holds {held} of 16 probe tickets");
    // another address still gets a ticket: its probe (outside --probe.allow) is refused with
    // 403, not turned away for want of a ticket
    let (code, body) = {
        let mut s = connect_from(ip("127.0.0.3"), a.web).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        s.write_all(b"GET /probe?target=127.0.0.99 HTTP/1.0\r\nHost: agent\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        let code: u16 = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (code, text)
    };
    assert_eq!(code, 403, "{body}");
    let refused = answers
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.contains("too many probe requests"))
        .count();
    assert!(refused > 0, "{:?}", answers.lock().unwrap());
    drop(a);
    for t in threads {
        let _ = t.join();
    }
    drop(silent);
}
