//! `wirespeed agent`: the test server plus an HTTP endpoint for Prometheus (`/metrics`,
//! `/probe`, `/probe.json`). The work is in `wirespeed-agent`; this is arguments and wiring.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use wirespeed_agent::bridge::ProbeCredentials;
use wirespeed_agent::probe::ProbeLimits;
use wirespeed_agent::{Agent, AgentConfig};
use wirespeed_engine::ServerConfig;
use wirespeed_host::Root;

use crate::diagnose::root_dir;
use crate::exit;
use crate::measure::ServerGuardArgs;

#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// Address of the HTTP endpoint (/metrics, /probe, /probe.json, /-/healthy).
    #[arg(
        long = "web.listen-address",
        value_name = "HOST:PORT",
        default_value = "[::]:9762"
    )]
    listen: SocketAddr,
    /// Port of the test server (as `wirespeed server -p`).
    #[arg(short = 'p', long = "port", default_value_t = wirespeed_engine::targets::DEFAULT_PORT)]
    port: u16,
    /// Local address of the test server.
    #[arg(short = 'B', long = "bind")]
    bind: Option<IpAddr>,
    /// No test server: only the HTTP endpoint (probes still run from here).
    #[arg(long = "no-server")]
    no_server: bool,
    /// The test server's limits, address lists, authentication and timeouts: the flags of
    /// `wirespeed server`, with the same meanings.
    #[command(flatten)]
    guard: ServerGuardArgs,
    /// Let clients move this host's NIC queue IRQs for their test, as `wirespeed server
    /// --allow-tune` (journaled, reverted after each test). Needs root and --psk.
    #[arg(long = "allow-tune")]
    allow_tune: bool,
    /// With --allow-tune: the interface whose IRQs move (default: the route to the client).
    #[arg(long = "tune-iface", value_name = "IFACE", requires = "allow_tune")]
    tune_iface: Option<String>,
    /// Read host facts from a captured tree standing for `/` (doctor --root).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Test port of a probe target that names none.
    #[arg(long = "probe.default-port", default_value_t = wirespeed_engine::targets::DEFAULT_PORT)]
    probe_port: u16,
    /// A probe's duration when its request names none, seconds.
    #[arg(long = "probe.default-duration", default_value_t = 5,
          value_parser = crate::common::limit::u32_in::<1, { crate::common::limit::DAY_S }>)]
    probe_duration: u32,
    /// Longest probe duration a request may ask for, seconds.
    #[arg(long = "probe.max-duration", default_value_t = 30,
          value_parser = crate::common::limit::u32_in::<1, { crate::common::limit::DAY_S }>)]
    probe_max_duration: u32,
    /// Most streams a probe may ask for.
    #[arg(long = "probe.max-streams", default_value_t = 16,
          value_parser = crate::common::limit::u32_in::<1, { crate::common::limit::COUNT }>)]
    probe_max_streams: u32,
    /// Seconds a probe waits for another probe on the same interface before it is refused (503).
    #[arg(long = "probe.wait", default_value_t = 30,
          value_parser = crate::common::limit::u64_in::<0, 3600>)]
    probe_wait: u64,
    /// iperf3's RSA authentication for probes: the user name (the password from
    /// IPERF3_PASSWORD). Probes also carry this agent's --psk.
    #[arg(
        long = "probe.username",
        value_name = "USER",
        requires = "probe_rsa_public_key_path"
    )]
    probe_username: Option<String>,
    /// iperf3's RSA authentication for probes: the targets' public key (PEM).
    #[arg(
        long = "probe.rsa-public-key-path",
        value_name = "FILE",
        requires = "probe_username"
    )]
    probe_rsa_public_key_path: Option<PathBuf>,
    /// Probes encrypt their RSA token with PKCS#1 v1.5 padding (iperf3 before 3.17).
    #[arg(long = "probe.use-pkcs1-padding", requires = "probe_username")]
    probe_use_pkcs1_padding: bool,
    /// The targets a probe may test: an address or CIDR prefix, repeatable or comma-separated;
    /// others get 403. Without it any target may be probed (a warning says so when the endpoint
    /// is reachable from elsewhere).
    #[arg(long = "probe.allow", value_name = "CIDR")]
    probe_allow: Vec<String>,
    /// Highest UDP rate of one probe, all its streams together (bits/s, K/M/G suffixes).
    #[arg(long = "probe.max-udp-rate", value_name = "RATE", default_value = "10G",
          value_parser = parse_probe_rate)]
    probe_max_udp_rate: u64,
    /// Prometheus' web configuration file (exporter-toolkit's format): TLS and bcrypt basic
    /// authentication for every path. See docs/agent.md.
    #[arg(long = "web.config.file", value_name = "FILE")]
    web_config_file: Option<PathBuf>,
    /// HTTP connections served at once, shared by address and prefix (an address an eighth, an
    /// IPv6 /64 a quarter, a /56 or /48 half); a connection whose request has not arrived gives
    /// way to a new one, the oldest first.
    #[arg(long = "web.max-connections", value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    web_max_connections: u32,
}

fn parse_probe_rate(s: &str) -> Result<u64, String> {
    match wirespeed_report::parse_rate(s, "--probe.max-udp-rate").map(|r| r.0) {
        Ok(0) => Err("expected a rate above 0 (like 10G)".into()),
        Ok(r) => Ok(r),
        Err(e) => Err(e.to_string()),
    }
}

/// The test server beside the endpoint: the engine's server on its own thread.
fn server_config(a: &AgentArgs) -> anyhow::Result<ServerConfig> {
    let tune = if a.allow_tune {
        Some(crate::measure::irq_tune(
            Root::live(),
            a.tune_iface.clone(),
        )?)
    } else {
        None
    };
    let mut cfg = ServerConfig::default();
    a.guard.apply(&mut cfg)?;
    Ok(ServerConfig {
        // the test server listens where the HTTP endpoint does, unless told otherwise
        bind: a
            .bind
            .or_else(|| (!a.listen.ip().is_unspecified()).then(|| a.listen.ip())),
        port: a.port,
        tune,
        observe: Some(crate::common::live_observer()),
        // Refusals and ended tests, one line each with the address, as `wirespeed server`.
        log: Some(wirespeed_engine::server::LogHook::new(|line: &str| {
            eprintln!("wirespeed agent: {line}");
        })),
        ..cfg
    })
}

pub fn run(a: AgentArgs) -> anyhow::Result<ExitCode> {
    if !(1..=3600).contains(&a.probe_max_duration)
        || !(1..=a.probe_max_duration).contains(&a.probe_duration)
        || !(1..=1024).contains(&a.probe_max_streams)
        || a.probe_wait > 3600
    {
        return Err(exit::fail(
            exit::USAGE,
            "--probe.max-duration 1..=3600, --probe.default-duration 1..=max, --probe.max-streams 1..=1024, --probe.wait 0..=3600",
        ));
    }
    let root = match &a.root {
        Some(d) => root_dir(d)?,
        None => Root::live(),
    };
    let g = &a.guard;
    if a.no_server
        && (g.rsa_private_key_path.is_some() || !g.allow.is_empty() || !g.deny.is_empty())
    {
        return Err(exit::fail(
            exit::USAGE,
            "--rsa-private-key-path, --allow and --deny guard the test server (drop --no-server)",
        ));
    }
    if a.no_server && a.allow_tune {
        return Err(exit::fail(
            exit::USAGE,
            "--allow-tune needs the test server (drop --no-server)",
        ));
    }
    a.guard.tune_needs_psk(a.allow_tune)?;
    // Probes show the targets what this agent's own server asks of its clients: the same
    // pre-shared key, and RSA credentials when given.
    let credentials = ProbeCredentials {
        auth: crate::measure::rsa_client_auth(
            a.probe_username.as_deref(),
            a.probe_rsa_public_key_path.as_deref(),
            a.probe_use_pkcs1_padding,
            "--probe.",
        )?,
        psk: a
            .guard
            .psk
            .as_deref()
            .map(crate::common::read_psk)
            .transpose()?,
    };
    let probe_allow = wirespeed_guard::AddrPolicy::new(&a.probe_allow, &[] as &[String])
        .map_err(|e| exit::fail(exit::USAGE, format!("--probe.allow: {e}")))?;
    let web = a
        .web_config_file
        .as_deref()
        .map(wirespeed_agent::web::WebConfig::load)
        .transpose()
        .map_err(|e| exit::fail(exit::USAGE, e.to_string()))?
        .map(Arc::new);
    let (server, counters) = if a.no_server {
        (None, None)
    } else {
        let (h, c) =
            wirespeed_agent::bridge::start_server(server_config(&a)?).map_err(exit::engine_fail)?;
        (Some(h), Some(c))
    };
    let cfg = AgentConfig {
        listen: a.listen,
        root,
        limits: ProbeLimits {
            default_port: a.probe_port,
            default_duration: a.probe_duration,
            max_duration: a.probe_max_duration,
            max_streams: a.probe_max_streams,
            max_udp_rate: a.probe_max_udp_rate,
        },
        probe_wait: Duration::from_secs(a.probe_wait),
        threads: 4,
        version: env!("CARGO_PKG_VERSION").into(),
        credentials,
        web,
        probe_allow,
        max_connections: a.web_max_connections as usize,
    };
    let cfg_tls = cfg.web.as_ref().is_some_and(|w| w.tls().is_some());
    let agent = Agent::bind(cfg, counters).map_err(|e| exit::fail(exit::HOST, e.to_string()))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| exit::fail(exit::INTERNAL, format!("signal handler: {e}")))?;
    }
    let web = agent
        .local_addr()
        .map_or_else(|| a.listen.to_string(), |s| s.to_string());
    let scheme = if a.web_config_file.is_some() && cfg_tls {
        "https"
    } else {
        "http"
    };
    match &server {
        Some(h) => eprintln!(
            "wirespeed agent: {scheme}://{web}/metrics, tests on {}",
            h.addr
        ),
        None => eprintln!("wirespeed agent: {scheme}://{web}/metrics, no test server"),
    }
    if a.probe_allow.is_empty() && !a.listen.ip().is_loopback() {
        eprintln!(
            "wirespeed agent: warning: any caller of /probe may make this host test any target \
             (limit the targets with --probe.allow, the callers with --web.config.file)"
        );
    }
    let served = agent.serve(&stop);
    if let Some(h) = server {
        h.stop().map_err(exit::engine_fail)?;
    }
    // a listener that failed for good ends the process, so its supervisor restarts it
    served.map_err(|e| exit::fail(exit::HOST, e.to_string()))?;
    Ok(ExitCode::from(exit::OK))
}
