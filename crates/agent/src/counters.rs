//! Counters of the agent's test server and of its probes, as metrics.
//!
//! [`ServerCounters`] is a plain snapshot a server fills in however it counts (the agent copies
//! the engine's statistics through a [`CounterSource`]); [`ProbeCounters`] is kept by the agent.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::expo::{Exposition, Kind};

/// Why a server refused a test (or a connection before its test). Low cardinality by
/// construction: a server-wide or per-test limit, a limit of the peer's own address,
/// authentication (RSA or pre-shared key), the address lists, a peer too slow to send its
/// cookie or parameters, anything else.
pub const REFUSAL_REASONS: [&str; 6] =
    ["limit", "per_address", "auth", "denied", "timeout", "other"];

/// What the test server has done since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerCounters {
    pub tests_completed: u64,
    pub tests_failed: u64,
    /// Refusals by reason, in [`REFUSAL_REASONS`]' order.
    pub tests_refused: [u64; 6],
    pub bytes_received: u64,
    pub bytes_sent: u64,
    pub tests_running: u64,
    /// Control connections dropped before a test began (bad cookie, timeout).
    pub connections_dropped: u64,
}

/// Anything that can tell its server counters now.
pub trait CounterSource: Send + Sync {
    fn counters(&self) -> ServerCounters;
}

/// Write the server families.
pub fn write_server(e: &mut Exposition, c: &ServerCounters) {
    e.family(
        "wirespeed_server_tests_total",
        Kind::Counter,
        "Tests the server ran to their end, by result.",
    )
    .sample(&[("result", "completed")], c.tests_completed as f64)
    .sample(&[("result", "failed")], c.tests_failed as f64);
    {
        let mut f = e.family(
            "wirespeed_server_tests_refused_total",
            Kind::Counter,
            "Tests the server refused, by reason.",
        );
        for (r, n) in REFUSAL_REASONS.iter().zip(c.tests_refused) {
            f.sample(&[("reason", r)], n as f64);
        }
    }
    e.family(
        "wirespeed_server_connections_dropped_total",
        Kind::Counter,
        "Connections dropped before their test began (no or unknown cookie, timeout).",
    )
    .sample(&[], c.connections_dropped as f64);
    e.family(
        "wirespeed_server_received_bytes_total",
        Kind::Counter,
        "Test payload bytes the server received.",
    )
    .sample(&[], c.bytes_received as f64);
    e.family(
        "wirespeed_server_sent_bytes_total",
        Kind::Counter,
        "Test payload bytes the server sent.",
    )
    .sample(&[], c.bytes_sent as f64);
    e.family(
        "wirespeed_server_tests_running",
        Kind::Gauge,
        "Tests running now.",
    )
    .sample(&[], c.tests_running as f64);
}

/// Outcome of one `/probe` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The test ran and ended without error.
    Ok,
    /// The test ran (or tried to) and failed.
    Failed,
    /// Another probe held the interface for longer than the agent waits.
    Busy,
    /// The request's parameters were refused.
    BadRequest,
}

impl ProbeOutcome {
    const ALL: [ProbeOutcome; 4] = [
        ProbeOutcome::Ok,
        ProbeOutcome::Failed,
        ProbeOutcome::Busy,
        ProbeOutcome::BadRequest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProbeOutcome::Ok => "ok",
            ProbeOutcome::Failed => "failed",
            ProbeOutcome::Busy => "busy",
            ProbeOutcome::BadRequest => "bad_request",
        }
    }
}

/// Probe requests by outcome, kept by the agent.
#[derive(Debug, Default)]
pub struct ProbeCounters {
    n: [AtomicU64; 4],
}

impl ProbeCounters {
    pub fn add(&self, o: ProbeOutcome) {
        self.n[o as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, o: ProbeOutcome) -> u64 {
        self.n[o as usize].load(Ordering::Relaxed)
    }
}

/// Write the agent's own probe counters.
pub fn write_probes(e: &mut Exposition, c: &ProbeCounters) {
    let mut f = e.family(
        "wirespeed_agent_probes_total",
        Kind::Counter,
        "Probe requests this agent answered, by outcome.",
    );
    for o in ProbeOutcome::ALL {
        f.sample(&[("outcome", o.as_str())], c.get(o) as f64);
    }
}
