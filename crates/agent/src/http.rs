//! The agent's HTTP endpoint: `/metrics`, `/probe`, `/probe.json`, `/-/healthy`, `/-/ready`.
//!
//! A few worker threads take requests from one listener (`tiny_http`). Every request is
//! hostile: only `GET`/`HEAD`, the URL's length is bounded, `/probe`'s parameters are checked
//! by [`crate::probe::parse_probe`], and a probe's duration is bounded twice (its parameters,
//! then a watchdog that interrupts the test).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tiny_http::{Header, Method, Request, Response, Server};
use wirespeed_host::Root;

use crate::counters::{write_probes, write_server, CounterSource, ProbeCounters, ProbeOutcome};
use crate::expo::{Exposition, Kind, CONTENT_TYPE};
use crate::host::{read_host, write_host};
use crate::probe::{
    local_interface, parse_probe, write_probe, ProbeLimits, ProbeParams, ProbeReport, Slots,
    MAX_QUERY,
};

/// Longest request path accepted, query included.
const MAX_URL: usize = MAX_QUERY + 32;
/// Time past a probe's duration before its watchdog interrupts it.
const PROBE_GRACE: Duration = Duration::from_secs(15);
/// Probe requests that may wait for their interface or run at once (the rest get 503).
const MAX_PROBE_REQUESTS: usize = 16;

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
}

/// Errors of the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("--web.listen-address {addr}: {reason}")]
    Listen { addr: SocketAddr, reason: String },
}

struct State {
    cfg: AgentConfig,
    server: Option<Arc<dyn CounterSource>>,
    probes: ProbeCounters,
    slots: Slots,
    probe_requests: AtomicUsize,
    epoch: Instant,
}

/// A bound endpoint.
pub struct Agent {
    http: Arc<Server>,
    state: Arc<State>,
}

impl Agent {
    /// Bind the listener. `server` feeds the `wirespeed_server_*` families when a test server
    /// runs beside the endpoint.
    pub fn bind(
        cfg: AgentConfig,
        server: Option<Arc<dyn CounterSource>>,
    ) -> Result<Agent, AgentError> {
        let http = Server::http(cfg.listen).map_err(|e| AgentError::Listen {
            addr: cfg.listen,
            reason: e.to_string(),
        })?;
        Ok(Agent {
            http: Arc::new(http),
            state: Arc::new(State {
                cfg,
                server,
                probes: ProbeCounters::default(),
                slots: Slots::default(),
                probe_requests: AtomicUsize::new(0),
                epoch: Instant::now(),
            }),
        })
    }

    /// The bound address (port 0 picks one).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.http.server_addr().to_ip()
    }

    /// Serve until `stop` is set.
    pub fn serve(&self, stop: &AtomicBool) {
        std::thread::scope(|s| {
            for i in 0..self.state.cfg.threads.max(1) {
                let http = Arc::clone(&self.http);
                let state = Arc::clone(&self.state);
                let _ = std::thread::Builder::new()
                    .name(format!("ws-http-{i}"))
                    .spawn_scoped(s, move || {
                        while !stop.load(Ordering::Acquire) {
                            match http.recv_timeout(Duration::from_millis(200)) {
                                Ok(Some(rq)) => handle(&state, rq),
                                Ok(None) => {}
                                Err(_) => std::thread::sleep(Duration::from_millis(50)),
                            }
                        }
                    });
            }
        });
    }
}

fn header(k: &str, v: &str) -> Header {
    Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("static header")
}

fn reply(rq: Request, code: u16, ctype: &str, body: String) {
    let resp = Response::from_string(body)
        .with_status_code(code)
        .with_header(header("Content-Type", ctype));
    let _ = rq.respond(resp);
}

fn text(rq: Request, code: u16, body: impl Into<String>) {
    let mut b: String = body.into();
    b.push('\n');
    reply(rq, code, "text/plain; charset=utf-8", b);
}

fn handle(st: &Arc<State>, rq: Request) {
    if !matches!(rq.method(), Method::Get | Method::Head) {
        return text(rq, 405, "only GET and HEAD");
    }
    if rq.url().len() > MAX_URL {
        return text(rq, 414, format!("URL longer than {MAX_URL} bytes"));
    }
    let url = rq.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    match path {
        "/metrics" => {
            let body = metrics(st);
            reply(rq, 200, CONTENT_TYPE, body)
        }
        "/probe" | "/probe.json" => match parse_probe(query, &st.cfg.limits) {
            Err(e) => {
                st.probes.add(ProbeOutcome::BadRequest);
                text(rq, 400, e.0)
            }
            Ok(p) => {
                // Probes run on their own threads so that waiting ones never hold up /metrics;
                // how many may wait or run at once is bounded.
                let Some(ticket) = Ticket::take(st) else {
                    st.probes.add(ProbeOutcome::Busy);
                    return text(rq, 503, "too many probe requests at once");
                };
                let st = Arc::clone(st);
                let json = path == "/probe.json";
                let _ = std::thread::Builder::new()
                    .name("ws-probe".into())
                    .spawn(move || {
                        let _ticket = ticket;
                        answer_probe(&st, rq, p, json);
                    });
            }
        },
        "/-/healthy" => text(rq, 200, "OK"),
        "/-/ready" => text(rq, 200, "OK"),
        "/" => text(
            rq,
            200,
            "wirespeed agent: /metrics, /probe?target=HOST[:PORT]&duration=&streams=&reverse=&udp_rate=&bind=, /probe.json?..., /-/healthy, /-/ready",
        ),
        _ => text(rq, 404, "not found"),
    }
}

fn answer_probe(st: &State, rq: Request, p: ProbeParams, json: bool) {
    match probe(st, p) {
        Err(busy) => {
            st.probes.add(ProbeOutcome::Busy);
            text(rq, 503, busy)
        }
        Ok(rep) => {
            st.probes.add(if rep.success() {
                ProbeOutcome::Ok
            } else {
                ProbeOutcome::Failed
            });
            if json {
                reply(rq, 200, "application/json", rep.to_json())
            } else {
                let mut e = Exposition::new();
                write_probe(&mut e, &rep);
                reply(rq, 200, CONTENT_TYPE, e.finish())
            }
        }
    }
}

/// One of the [`MAX_PROBE_REQUESTS`] probe requests that may wait or run at once.
struct Ticket(Arc<State>);

impl Ticket {
    fn take(st: &Arc<State>) -> Option<Ticket> {
        let n = st.probe_requests.fetch_add(1, Ordering::AcqRel);
        if n >= MAX_PROBE_REQUESTS {
            st.probe_requests.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Ticket(Arc::clone(st)))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.probe_requests.fetch_sub(1, Ordering::AcqRel);
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
    e.finish()
}

/// Run one probe holding its interface's slot. `Err` when the slot stays busy.
fn probe(st: &State, p: ProbeParams) -> Result<ProbeReport, String> {
    let dest = (p.host.as_str(), p.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next());
    let interface = match dest {
        Some(d) => local_interface(d, p.bind),
        None => "unknown".into(),
    };
    let Some(_slot) = st.slots.acquire(&interface, st.cfg.probe_wait) else {
        return Err(format!(
            "another probe holds {interface}; try again after it ends"
        ));
    };
    let held_from = st.epoch.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let limit = Duration::from_secs(u64::from(p.duration)) + PROBE_GRACE;
    let watchdog = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
                stop.store(true, Ordering::Release);
            }
        })
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
