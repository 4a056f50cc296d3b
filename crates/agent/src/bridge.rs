//! The agent's two calls into the engine, each in one function so the engine's API can change
//! under them in one place: [`run_probe`] runs one client test, [`start_server`] runs the test
//! server and counts what it does for `/metrics`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wirespeed_drive::hooks::HostObserve;
use wirespeed_engine::output::Reporter;
use wirespeed_engine::server::{RefusalReason, ServerStats};
use wirespeed_engine::{
    run_client, ClientConfig, EngineError, ObserveHook, ReporterFactory, Server, ServerConfig,
    ServerHandle,
};
use wirespeed_host::Root;
use wirespeed_protocol::params::Direction;
use wirespeed_report::{Start, TestResult};

use crate::counters::{CounterSource, ServerCounters, REFUSAL_REASONS};
use crate::probe::{ProbeFailure, ProbeParams};

/// Keeps the report the engine hands to `finish` (also on failure).
#[derive(Default)]
struct Keep(Option<TestResult>);

impl Reporter for Keep {
    fn finish(&mut self, r: &TestResult) {
        self.0 = Some(r.clone());
    }
}

/// What a probe's client shows a hardened server: iperf3's RSA credentials, wirespeed's
/// pre-shared key.
#[derive(Clone, Default)]
pub struct ProbeCredentials {
    pub auth: Option<wirespeed_protocol::auth::ClientAuth>,
    pub psk: Option<wirespeed_protocol::psk::Psk>,
}

/// Run one test as the probe asks. `stop` set from another thread ends it early (the agent's
/// watchdog). Returns the report when the test got far enough to make one, and why it failed:
/// the caller gets one of [`ProbeFailure`]'s few reasons, the agent's log the detail.
pub fn run_probe(
    p: &ProbeParams,
    creds: &ProbeCredentials,
    stop: Arc<AtomicBool>,
) -> (Option<TestResult>, Option<ProbeFailure>) {
    let cfg = ClientConfig {
        host: p.host.clone(),
        port: p.port,
        bind: p.bind,
        connect_timeout: Some(Duration::from_secs(5)),
        time: p.duration,
        parallel: p.streams,
        direction: if p.reverse {
            Direction::ServerToClient
        } else {
            Direction::ClientToServer
        },
        udp: p.udp_rate.is_some(),
        bandwidth: p.udp_rate,
        interval: Duration::ZERO,
        title: None,
        interrupt: Some(stop),
        // Where the work ran and the verdict, as a `wirespeed client` run observes them.
        observe: Some(ObserveHook::new(HostObserve::new(Root::live()))),
        auth: creds.auth.clone(),
        psk: creds.psk.clone(),
        ..ClientConfig::default()
    };
    let mut keep = Keep::default();
    match run_client(&cfg, &mut keep) {
        Ok(r) => (Some(r), None),
        Err(e) => {
            let reason = failure(&e);
            eprintln!(
                "wirespeed agent: probe of {}:{} failed ({}): {}",
                printable(&p.host),
                p.port,
                reason.as_str(),
                printable(&e.to_string())
            );
            // the report's own error text would carry the detail to the caller
            let report = keep.0.map(|mut r| {
                r.error = r.error.map(|_| reason.as_str().to_string());
                r
            });
            (report, Some(reason))
        }
    }
}

/// The few reasons a probe's caller sees, from the engine's error.
fn failure(e: &EngineError) -> ProbeFailure {
    match e {
        EngineError::Connect { .. } => ProbeFailure::Connect,
        EngineError::Refused(_) => ProbeFailure::Refused,
        EngineError::Peer(_) => ProbeFailure::Peer,
        EngineError::Interrupted => ProbeFailure::Timeout,
        EngineError::Config(_)
        | EngineError::Host(_)
        | EngineError::Io { .. }
        | EngineError::Listen { .. } => ProbeFailure::Local,
    }
}

/// Text from a peer or a request, fit for one log line: control characters (terminal escapes,
/// line breaks) shown as `\u{..}`, at most 512 characters.
fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(512)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if s.chars().count() > 512 {
        out.push('…');
    }
    out
}

#[derive(Debug, Default)]
struct Counts {
    running: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
}

/// Counts one server test: running while it runs, its bytes when it ends.
struct Counting {
    counts: Arc<Counts>,
    started: bool,
    reverse: bool,
    bidir: bool,
}

impl Reporter for Counting {
    fn start(&mut self, s: &Start) {
        if !self.started {
            self.started = true;
            if let Some(t) = &s.test_start {
                self.reverse = t.reverse != 0;
                self.bidir = t.bidir.unwrap_or(0) != 0;
            }
            self.counts.running.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn finish(&mut self, r: &TestResult) {
        if std::mem::take(&mut self.started) {
            self.counts.running.fetch_sub(1, Ordering::Relaxed);
        }
        let bytes = |s: &Option<wirespeed_report::Summary>| s.as_ref().map_or(0, |s| s.bytes);
        let e = &r.end;
        // The server receives in a forward test and sends in a reverse one.
        let (rx, tx) = if self.bidir {
            (bytes(&e.sum_received), bytes(&e.sum_sent_bidir_reverse))
        } else if self.reverse {
            (0, bytes(&e.sum_sent))
        } else {
            (bytes(&e.sum_received).max(bytes(&e.sum)), 0)
        };
        self.counts.received.fetch_add(rx, Ordering::Relaxed);
        self.counts.sent.fetch_add(tx, Ordering::Relaxed);
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        if self.started {
            self.counts.running.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The server's counters: the engine's statistics and the bytes the reporters saw.
struct EngineCounters {
    stats: Arc<ServerStats>,
    counts: Arc<Counts>,
}

impl CounterSource for EngineCounters {
    fn counters(&self) -> ServerCounters {
        let s = &self.stats;
        ServerCounters {
            tests_completed: s.tests_completed.load(Ordering::Relaxed),
            tests_failed: s.tests_failed.load(Ordering::Relaxed),
            tests_refused: REFUSAL_REASONS.map(|name| {
                RefusalReason::ALL
                    .iter()
                    .find(|r| r.as_str() == name)
                    .map_or(0, |&r| s.refused(r))
            }),
            bytes_received: self.counts.received.load(Ordering::Relaxed),
            bytes_sent: self.counts.sent.load(Ordering::Relaxed),
            tests_running: self.counts.running.load(Ordering::Relaxed),
            connections_dropped: s.connections_dropped.load(Ordering::Relaxed),
        }
    }
}

/// Bind and start the test server on its own thread.
pub fn start_server(
    cfg: ServerConfig,
) -> Result<(ServerHandle, Arc<dyn CounterSource>), EngineError> {
    let server = Server::bind(cfg)?;
    let counts = Arc::new(Counts::default());
    let c = Arc::clone(&counts);
    let factory: ReporterFactory = Arc::new(move |_| {
        Box::new(Counting {
            counts: Arc::clone(&c),
            started: false,
            reverse: false,
            bidir: false,
        })
    });
    let handle = server.spawn(factory)?;
    let source = Arc::new(EngineCounters {
        stats: Arc::clone(&handle.stats),
        counts,
    });
    Ok((handle, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_refusal_reason_has_its_label() {
        let names: Vec<&str> = RefusalReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names, REFUSAL_REASONS);
    }

    #[test]
    fn refusals_land_under_their_reason() {
        let stats = Arc::new(ServerStats::default());
        stats.count_refusal(RefusalReason::Auth);
        stats.count_refusal(RefusalReason::Auth);
        stats.count_refusal(RefusalReason::Denied);
        let src = EngineCounters {
            stats,
            counts: Arc::new(Counts::default()),
        };
        let c = src.counters();
        let at = |n: &str| c.tests_refused[REFUSAL_REASONS.iter().position(|r| *r == n).unwrap()];
        assert_eq!((at("auth"), at("denied"), at("limit")), (2, 1, 0));
    }
}
