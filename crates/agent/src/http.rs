//! The agent's HTTP endpoint: `/metrics`, `/probe`, `/probe.json`, `/-/healthy`, `/-/ready`.
//!
//! hyper's HTTP/1.1 server on a small tokio runtime. Every caller may be a stranger:
//! - the request line and headers are bounded ([`MAX_BUF`], [`MAX_HEADERS`]) and must arrive
//!   within [`HEADER_TIMEOUT`]; one request per connection (no idle keep-alive), and a
//!   connection lives at most as long as the longest probe allows;
//! - connections are capped ([`AgentConfig::max_connections`]) and shared by address and IPv6
//!   prefix ([`crate::share`]): an address holds an eighth, a /64 a quarter, a /56 or /48 half;
//!   a connection whose request has not arrived gives way, the oldest first, to a new one of
//!   the same caller at its share, or of another caller when the endpoint is full, so idle or
//!   slow callers from a few addresses or one site cannot hold every place; none of them costs
//!   a thread;
//! - with `--web.config.file` ([`crate::web`]): TLS, and bcrypt basic authentication on every
//!   path. Credentials already verified are recognised before the one-at-a-time bcrypt check,
//!   so a scraper never waits behind guesses; unverified checks waiting or running are shared
//!   by address and prefix ([`MAX_UNVERIFIED`]), the rest answered 429 at once;
//! - probe requests waiting or running ([`MAX_PROBE_REQUESTS`]) are shared by address and
//!   prefix, so one caller cannot take every one;
//! - `/probe` targets outside `--probe.allow` get 403; only `GET`/`HEAD`; the URL's length is
//!   bounded; `/probe`'s parameters are checked by [`crate::probe::parse_probe`]; a probe's
//!   duration is bounded twice (its parameters, then a watchdog that interrupts the test);
//! - an accept error that is not a passing shortage (descriptors, memory) ends [`Agent::serve`]
//!   with an error, so the process exits and its supervisor restarts it rather than leaving a
//!   process alive that answers nothing.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE as CT, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use wirespeed_guard::AddrPolicy;
use wirespeed_host::Root;

use crate::counters::{write_probes, write_server, CounterSource, ProbeCounters, ProbeOutcome};
use crate::expo::{Exposition, Kind, CONTENT_TYPE};
use crate::host::{read_host, write_host};
use crate::probe::{
    local_interface, parse_probe, write_probe, ProbeLimits, ProbeParams, ProbeReport, Slots,
    MAX_QUERY,
};
use crate::share::{ConnTable, Counter, Refused, Shares};
use crate::web::WebConfig;

/// Longest request path accepted, query included.
const MAX_URL: usize = MAX_QUERY + 32;
/// hyper's read buffer: the request line and headers must fit (its smallest allowed size).
pub const MAX_BUF: usize = 8192;
/// Most header fields in a request.
pub const MAX_HEADERS: usize = 64;
/// Time a caller has to send its request line and headers (and a TLS handshake).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time past a probe's duration before its watchdog interrupts it.
const PROBE_GRACE: Duration = Duration::from_secs(15);
/// Probe requests that may wait for their interface or run at once (the rest get 503), shared
/// by address and prefix ([`Shares::probes`]).
pub const MAX_PROBE_REQUESTS: usize = 16;
/// Password checks of credentials not yet verified that may wait or run at once (the rest get
/// 429), shared by address and prefix ([`Shares::unverified`]).
pub const MAX_UNVERIFIED: usize = 16;

/// What the endpoint serves.
#[derive(Clone)]
pub struct AgentConfig {
    pub listen: SocketAddr,
    /// Where host facts are read (`/` or a captured tree).
    pub root: Root,
    pub limits: ProbeLimits,
    /// How long a probe waits for another probe on the same interface before it is refused.
    pub probe_wait: Duration,
    /// Request worker threads.
    pub threads: usize,
    /// The version in `wirespeed_build_info`.
    pub version: String,
    /// What probes show a server that asks for authentication.
    pub credentials: crate::bridge::ProbeCredentials,
    /// `--web.config.file`: TLS, basic authentication, extra headers.
    pub web: Option<Arc<WebConfig>>,
    /// `--probe.allow`: the targets a probe may test (open: any).
    pub probe_allow: AddrPolicy,
    /// Connections served at once, shared by address and prefix ([`Shares::connections`]).
    pub max_connections: usize,
}

/// Errors of the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("--web.listen-address {addr}: {reason}")]
    Listen { addr: SocketAddr, reason: String },
    /// The listener failed for good: the process should end (and be restarted).
    #[error("--web.listen-address {addr}: the listener failed: {reason}")]
    Accept { addr: SocketAddr, reason: String },
    #[error("the HTTP endpoint cannot start: {0}")]
    Runtime(String),
}

struct State {
    cfg: AgentConfig,
    server: Option<Arc<dyn CounterSource>>,
    probes: ProbeCounters,
    slots: Slots,
    /// Probe requests waiting or running, per caller.
    probe_requests: Mutex<Counter>,
    epoch: Instant,
    /// Open connections, per caller, and whether their request has arrived; what closes each.
    conns: Mutex<ConnTable<Arc<tokio::sync::Notify>>>,
    /// Connections closed at once because the endpoint or the caller's share was full.
    refused_connections: AtomicU64,
    /// Idle connections closed to make room for a new one.
    evicted_connections: AtomicU64,
    /// Requests turned away for missing or wrong credentials.
    unauthorized: AtomicU64,
    /// Requests with unverified credentials turned away (429) because their caller's share of
    /// password checks was taken.
    auth_throttled: AtomicU64,
    /// Password checks of unverified credentials waiting or running, per caller.
    unverified: Mutex<Counter>,
    /// One bcrypt check at a time (a flood of guesses holds one worker, not all).
    auth_check: tokio::sync::Semaphore,
}

/// A bound endpoint.
pub struct Agent {
    listener: TcpListener,
    state: Arc<State>,
}

impl Agent {
    /// Bind the listener. `server` feeds the `wirespeed_server_*` families when a test server
    /// runs beside the endpoint.
    pub fn bind(
        cfg: AgentConfig,
        server: Option<Arc<dyn CounterSource>>,
    ) -> Result<Agent, AgentError> {
        let listen_err = |e: std::io::Error| AgentError::Listen {
            addr: cfg.listen,
            reason: e.to_string(),
        };
        let listener = TcpListener::bind(cfg.listen).map_err(listen_err)?;
        listener.set_nonblocking(true).map_err(listen_err)?;
        Ok(Agent {
            listener,
            state: Arc::new(State {
                server,
                probes: ProbeCounters::default(),
                slots: Slots::default(),
                probe_requests: Mutex::new(Counter::new(Shares::probes(MAX_PROBE_REQUESTS))),
                epoch: Instant::now(),
                conns: Mutex::new(ConnTable::new(Shares::connections(
                    cfg.max_connections.max(1),
                ))),
                refused_connections: AtomicU64::new(0),
                evicted_connections: AtomicU64::new(0),
                unauthorized: AtomicU64::new(0),
                auth_throttled: AtomicU64::new(0),
                unverified: Mutex::new(Counter::new(Shares::unverified(MAX_UNVERIFIED))),
                auth_check: tokio::sync::Semaphore::new(1),
                cfg,
            }),
        })
    }

    /// The bound address (port 0 picks one).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serve until `stop` is set (`Ok`), or until the listener fails for good (`Err`).
    pub fn serve(&self, stop: &AtomicBool) -> Result<(), AgentError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.state.cfg.threads.max(1))
            .max_blocking_threads(2)
            .thread_name("ws-http")
            .enable_all()
            .build()
            .map_err(|e| AgentError::Runtime(e.to_string()))?;
        let listener = self
            .listener
            .try_clone()
            .map_err(|e| AgentError::Runtime(e.to_string()))?;
        let addr = self.state.cfg.listen;
        rt.block_on(async {
            let listener = tokio::net::TcpListener::from_std(listener)
                .map_err(|e| AgentError::Runtime(e.to_string()))?;
            accept_loop(&self.state, listener, stop).await
        })
        .map_err(|e| match e {
            AgentError::Runtime(reason) => AgentError::Accept { addr, reason },
            other => other,
        })
    }
}

/// An accept error that passes: a shortage (descriptors, memory, buffers) or a caller that
/// left before it was accepted.
fn passing(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock | TimedOut | OutOfMemory
    ) {
        return true;
    }
    let passing = [
        Errno::MFILE,
        Errno::NFILE,
        Errno::NOBUFS,
        Errno::NOMEM,
        Errno::PROTO,
        Errno::PERM,
        Errno::NETDOWN,
        Errno::HOSTUNREACH,
        Errno::NETUNREACH,
        Errno::OPNOTSUPP,
    ];
    e.raw_os_error()
        .is_some_and(|n| passing.iter().any(|p| p.raw_os_error() == n))
}

async fn accept_loop(
    st: &Arc<State>,
    listener: tokio::net::TcpListener,
    stop: &AtomicBool,
) -> Result<(), AgentError> {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut last_shortage_log: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if stop.load(Ordering::Acquire) {
                    return Ok(());
                }
            }
            r = listener.accept() => match r {
                Ok((tcp, peer)) => {
                    let close = Arc::new(tokio::sync::Notify::new());
                    let admission = lock(&st.conns).admit(peer.ip(), Arc::clone(&close));
                    for idle in &admission.evicted {
                        st.evicted_connections.fetch_add(1, Ordering::Relaxed);
                        idle.notify_one();
                    }
                    let Ok(id) = admission.result else {
                        st.refused_connections.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let place = Place { st: Arc::clone(st), id };
                    let st = Arc::clone(st);
                    tokio::spawn(async move {
                        let _place = place;
                        tokio::select! {
                            _ = serve_connection(st, tcp, peer.ip(), id) => {}
                            // closed to make room: chosen while its request had not arrived
                            // (one whose request arrives at that very moment is closed too)
                            _ = close.notified() => {}
                        }
                    });
                }
                Err(e) if passing(&e) => {
                    if last_shortage_log.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                        eprintln!("wirespeed agent: accepting a connection: {e} (retrying)");
                        last_shortage_log = Some(Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(AgentError::Runtime(e.to_string())),
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A connection's place in the table, given back on drop.
struct Place {
    st: Arc<State>,
    id: u64,
}

impl Drop for Place {
    fn drop(&mut self) {
        lock(&self.st.conns).close(self.id);
    }
}

/// One of a caller's shares of a [`Counter`] (probe requests, unverified checks), given back on
/// drop.
struct Taken<F: Fn(&State) -> &Mutex<Counter>> {
    st: Arc<State>,
    ip: IpAddr,
    which: F,
}

impl<F: Fn(&State) -> &Mutex<Counter>> Taken<F> {
    fn take(st: &Arc<State>, ip: IpAddr, which: F) -> Result<Taken<F>, Refused> {
        lock(which(st)).take(ip)?;
        Ok(Taken {
            st: Arc::clone(st),
            ip,
            which,
        })
    }
}

impl<F: Fn(&State) -> &Mutex<Counter>> Drop for Taken<F> {
    fn drop(&mut self) {
        lock((self.which)(&self.st)).give_back(self.ip);
    }
}

/// The longest a connection may live: a probe that waits for its interface, runs its longest
/// duration and its grace, and a margin to send the answer.
fn connection_lifetime(cfg: &AgentConfig) -> Duration {
    HEADER_TIMEOUT
        + cfg.probe_wait
        + Duration::from_secs(u64::from(cfg.limits.max_duration))
        + PROBE_GRACE
        + Duration::from_secs(30)
}

async fn serve_connection(st: Arc<State>, tcp: tokio::net::TcpStream, ip: IpAddr, id: u64) {
    let _ = tcp.set_nodelay(true);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_BUF)
        .max_headers(MAX_HEADERS)
        .keep_alive(false);
    let lifetime = connection_lifetime(&st.cfg);
    let tls = st.cfg.web.as_ref().and_then(|w| w.tls());
    let svc_state = Arc::clone(&st);
    let svc = hyper::service::service_fn(move |rq| {
        // the request arrived: the connection no longer gives way to a new one
        lock(&svc_state.conns).busy(id);
        handle(Arc::clone(&svc_state), rq, ip)
    });
    match tls {
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            let Ok(Ok(stream)) = tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(tcp)).await
            else {
                return;
            };
            let _ =
                tokio::time::timeout(lifetime, http.serve_connection(TokioIo::new(stream), svc))
                    .await;
        }
        None => {
            let _ =
                tokio::time::timeout(lifetime, http.serve_connection(TokioIo::new(tcp), svc)).await;
        }
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(st: &State, code: u16, ctype: &str, body: String) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(ctype) {
        h.insert(CT, v);
    }
    if let Some(w) = &st.cfg.web {
        for (k, v) in w.headers() {
            if let (Ok(k), Ok(v)) = (HeaderName::try_from(k.as_str()), HeaderValue::from_str(v)) {
                h.insert(k, v);
            }
        }
    }
    r
}

fn text(st: &State, code: u16, body: impl Into<String>) -> Reply {
    let mut b: String = body.into();
    b.push('\n');
    reply(st, code, "text/plain; charset=utf-8", b)
}

async fn handle(st: Arc<State>, rq: Request<Incoming>, ip: IpAddr) -> Result<Reply, Infallible> {
    if let Some(w) = st.cfg.web.clone() {
        if w.needs_auth() {
            let given = rq
                .headers()
                .get(AUTHORIZATION)
                .map(|v| v.as_bytes().to_vec());
            // credentials already verified pass at once, never queued behind guesses
            let ok = if w.remembered(given.as_deref()) {
                true
            } else if given.is_none() {
                false
            } else {
                let Ok(_place) = Taken::take(&st, ip, |s: &State| &s.unverified) else {
                    st.auth_throttled.fetch_add(1, Ordering::Relaxed);
                    let mut r = text(
                        &st,
                        429,
                        "too many password checks at once from your address or network",
                    );
                    r.headers_mut()
                        .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
                    return Ok(r);
                };
                match st.auth_check.acquire().await {
                    Ok(_one) => tokio::task::block_in_place(|| w.authorized(given.as_deref())),
                    Err(_) => false,
                }
            };
            if !ok {
                st.unauthorized.fetch_add(1, Ordering::Relaxed);
                let mut r = text(&st, 401, "Unauthorized");
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"wirespeed agent\""),
                );
                return Ok(r);
            }
        }
    }
    if !matches!(*rq.method(), Method::GET | Method::HEAD) {
        return Ok(text(&st, 405, "only GET and HEAD"));
    }
    let url = rq
        .uri()
        .path_and_query()
        .map_or_else(|| rq.uri().path().to_string(), |p| p.as_str().to_string());
    if url.len() > MAX_URL {
        return Ok(text(&st, 414, format!("URL longer than {MAX_URL} bytes")));
    }
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    Ok(match path {
        "/metrics" => {
            let st2 = Arc::clone(&st);
            // reading the host's facts is file I/O
            let body = tokio::task::spawn_blocking(move || metrics(&st2))
                .await
                .unwrap_or_default();
            reply(&st, 200, CONTENT_TYPE, body)
        }
        "/probe" | "/probe.json" => match parse_probe(query, &st.cfg.limits) {
            Err(e) => {
                st.probes.add(ProbeOutcome::BadRequest);
                text(&st, 400, e.0)
            }
            Ok(p) => start_probe(&st, p, path == "/probe.json", ip).await,
        },
        "/-/healthy" => text(&st, 200, "OK"),
        "/-/ready" => text(&st, 200, "OK"),
        "/" => text(
            &st,
            200,
            "wirespeed agent: /metrics, /probe?target=HOST[:PORT]&duration=&streams=&reverse=&udp_rate=&bind=, /probe.json?..., /-/healthy, /-/ready",
        ),
        _ => text(&st, 404, "not found"),
    })
}

/// Why a probe did not run.
enum NotRun {
    /// Its interface stayed busy (503).
    Busy(String),
    /// Its target is outside `--probe.allow`, or does not resolve (403).
    Forbidden(String),
}

/// Run a probe on its own thread (it waits for its interface and runs a test: blocking work
/// that must never hold up `/metrics`); how many may wait or run at once is bounded.
async fn start_probe(st: &Arc<State>, p: ProbeParams, json: bool, ip: IpAddr) -> Reply {
    let ticket = match Taken::take(st, ip, |s: &State| &s.probe_requests) {
        Ok(t) => t,
        Err(why) => {
            st.probes.add(ProbeOutcome::Busy);
            return text(st, 503, format!("too many probe requests at once: {why}"));
        }
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let st2 = Arc::clone(st);
    let spawned = std::thread::Builder::new()
        .name("ws-probe".into())
        .spawn(move || {
            let _ticket = ticket;
            let _ = tx.send(probe(&st2, p));
        });
    if spawned.is_err() {
        st.probes.add(ProbeOutcome::Busy);
        return text(
            st,
            503,
            "no thread for the probe (the agent is at its task limit)",
        );
    }
    match rx.await {
        Err(_) => text(st, 500, "the probe ended without an answer"),
        Ok(Err(NotRun::Busy(why))) => {
            st.probes.add(ProbeOutcome::Busy);
            text(st, 503, why)
        }
        Ok(Err(NotRun::Forbidden(why))) => {
            st.probes.add(ProbeOutcome::BadRequest);
            text(st, 403, why)
        }
        Ok(Ok(rep)) => {
            st.probes.add(if rep.success() {
                ProbeOutcome::Ok
            } else {
                ProbeOutcome::Failed
            });
            if json {
                reply(st, 200, "application/json", rep.to_json())
            } else {
                let mut e = Exposition::new();
                write_probe(&mut e, &rep);
                reply(st, 200, CONTENT_TYPE, e.finish())
            }
        }
    }
}

/// Everything `/metrics` shows.
fn metrics(st: &State) -> String {
    let mut e = Exposition::new();
    e.family(
        "wirespeed_build_info",
        Kind::Gauge,
        "The agent's version (value 1).",
    )
    .sample(&[("version", &st.cfg.version)], 1.0);
    write_host(&mut e, &read_host(&st.cfg.root));
    if let Some(s) = &st.server {
        write_server(&mut e, &s.counters());
    }
    write_probes(&mut e, &st.probes);
    e.family(
        "wirespeed_agent_probe_requests",
        Kind::Gauge,
        "Probe requests waiting for their interface or running now.",
    )
    .sample(&[], lock(&st.probe_requests).total() as f64);
    e.family(
        "wirespeed_agent_http_refused_connections_total",
        Kind::Counter,
        "HTTP connections closed at once: the endpoint, or the caller's address or network, held its share of connections, none of them idle.",
    )
    .sample(&[], st.refused_connections.load(Ordering::Relaxed) as f64);
    e.family(
        "wirespeed_agent_http_evicted_connections_total",
        Kind::Counter,
        "Idle HTTP connections (no request yet) closed to make room for a new one, the oldest first.",
    )
    .sample(&[], st.evicted_connections.load(Ordering::Relaxed) as f64);
    e.family(
        "wirespeed_agent_http_unauthorized_total",
        Kind::Counter,
        "HTTP requests turned away for missing or wrong credentials.",
    )
    .sample(&[], st.unauthorized.load(Ordering::Relaxed) as f64);
    e.family(
        "wirespeed_agent_http_auth_throttled_total",
        Kind::Counter,
        "HTTP requests with credentials not yet verified answered 429: their address or network held its share of password checks.",
    )
    .sample(&[], st.auth_throttled.load(Ordering::Relaxed) as f64);
    e.finish()
}

/// Resolve a probe's target once, check it against `--probe.allow`, and pin the probe to that
/// address (a name that resolves elsewhere later is not followed).
fn allowed_target(st: &State, p: &mut ProbeParams) -> Result<Option<SocketAddr>, NotRun> {
    let dest = (p.host.as_str(), p.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next());
    if st.cfg.probe_allow.is_open() {
        return Ok(dest);
    }
    let Some(d) = dest else {
        return Err(NotRun::Forbidden(
            "the target does not resolve, so --probe.allow cannot admit it".into(),
        ));
    };
    if st.cfg.probe_allow.check(d.ip()).is_err() {
        return Err(NotRun::Forbidden(format!(
            "target {} is not in this agent's --probe.allow",
            d.ip()
        )));
    }
    p.host = d.ip().to_string();
    Ok(Some(d))
}

/// Run one probe holding its interface's slot.
fn probe(st: &State, mut p: ProbeParams) -> Result<ProbeReport, NotRun> {
    let dest = allowed_target(st, &mut p)?;
    let interface = match dest {
        Some(d) => local_interface(d, p.bind),
        None => "unknown".into(),
    };
    let Some(_slot) = st.slots.acquire(&interface, st.cfg.probe_wait) else {
        return Err(NotRun::Busy(format!(
            "another probe holds {interface}; try again after it ends"
        )));
    };
    let held_from = st.epoch.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let limit = Duration::from_secs(u64::from(p.duration)) + PROBE_GRACE;
    let watchdog = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("ws-probe-watch".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
                    stop.store(true, Ordering::Release);
                }
            })
            .map_err(|_| NotRun::Busy("no thread for the probe's watchdog".into()))?
    };
    let (result, error) = crate::bridge::run_probe(&p, &st.cfg.credentials, stop);
    drop(done_tx);
    let _ = watchdog.join();
    let held_until = st.epoch.elapsed().as_secs_f64();
    Ok(ProbeReport {
        params: p,
        interface,
        result,
        error,
        held_from,
        held_until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortages_pass_and_a_broken_listener_does_not() {
        use rustix::io::Errno;
        let os = |e: Errno| std::io::Error::from_raw_os_error(e.raw_os_error());
        for e in [
            Errno::MFILE,
            Errno::NFILE,
            Errno::NOBUFS,
            Errno::NOMEM,
            Errno::CONNABORTED,
        ] {
            assert!(passing(&os(e)), "{e:?}");
        }
        for e in [Errno::BADF, Errno::INVAL, Errno::NOTSOCK, Errno::FAULT] {
            assert!(!passing(&os(e)), "{e:?}");
        }
    }

    #[test]
    fn a_connection_outlives_the_longest_probe() {
        let cfg = AgentConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            root: Root::live(),
            limits: ProbeLimits::default(),
            probe_wait: Duration::from_secs(30),
            threads: 1,
            version: String::new(),
            credentials: Default::default(),
            web: None,
            probe_allow: AddrPolicy::default(),
            max_connections: 1,
        };
        let longest =
            cfg.probe_wait + Duration::from_secs(u64::from(cfg.limits.max_duration)) + PROBE_GRACE;
        assert!(connection_lifetime(&cfg) > longest + HEADER_TIMEOUT);
    }
}
