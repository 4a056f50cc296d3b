//! `wirespeed agent`'s library: what a Prometheus server scrapes from a host.
//!
//! - [`expo`]: a small writer of Prometheus' text format (names fixed here, label values
//!   escaped);
//! - [`host`]: doctor's findings (`wirespeed_host_finding{id,device,severity}`) and the NIC facts
//!   that matter (link speed, PCIe width and speed against their maximum, temperature, IRQ
//!   CPUs), from facts read through a `Root` — a captured tree injects its findings;
//! - [`counters`]: the test server's counters behind [`counters::CounterSource`] and the
//!   agent's own probe counters;
//! - [`probe`]: `/probe`'s parameters (hostile input), one probe per local interface at a time,
//!   and the probe's result as `wirespeed_probe_*` families;
//! - [`bridge`]: the only two calls into the engine (run one client test; start the server);
//! - [`web`]: `--web.config.file`, Prometheus' web configuration (TLS, bcrypt basic auth);
//! - [`share`]: shares of connections, unverified password checks and probe requests per
//!   address and IPv6 prefix, and which idle connection gives way when the endpoint is full;
//! - [`http`]: the endpoint that serves all of it (hyper; bounded requests, connections shared
//!   by address and prefix, `--probe.allow`).
//!
//! Everything but `bridge` and `http` is pure: facts, findings, counters and reports in, text
//! out, so the exposition is tested on fixtures without a network.

pub mod bridge;
pub mod counters;
pub mod expo;
pub mod host;
pub mod http;
pub mod probe;
pub mod share;
pub mod web;

pub use http::{Agent, AgentConfig, AgentError};
