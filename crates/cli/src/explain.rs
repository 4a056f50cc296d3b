//! `sweep` and `latency`: where the work runs.

use std::io::{IsTerminal, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wirespeed_engine::{ClientConfig, EngineError, NullReporter};
use wirespeed_explain::irq_sweep::{self, IrqSweepError, IrqSweepSpec};
use wirespeed_explain::latency::{self, LatencyError, Options};
use wirespeed_explain::model::{BitsPerSecond, TestObservation};
use wirespeed_explain::modes;
use wirespeed_explain::route;
use wirespeed_explain::sweep::{self, Axes, Matrix};
use wirespeed_explain::topology::Topology;
use wirespeed_explain::verdict::Verdict;
use wirespeed_host::{CpuSet, Root};
use wirespeed_protocol::Direction;
use wirespeed_report::TestResult;

use crate::exit::{self, engine_code};

fn cpu_list(s: &str) -> Result<CpuSet, String> {
    CpuSet::parse_nonempty(s).map_err(|e| e.to_string())
}

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Server host name or address.
    pub host: String,
    /// Client CPUs to try (one pinned one-stream test per client CPU × server CPU).
    #[arg(long, value_parser = cpu_list)]
    pub cpus: CpuSet,
    /// Server CPUs to try.
    #[arg(long = "server-cpus", value_parser = cpu_list)]
    pub server_cpus: CpuSet,
    /// Seconds per test.
    #[arg(short = 't', long = "time", default_value_t = 3)]
    pub time: u32,
    /// Tests per pair; the matrix shows their median.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Also move the receiver NIC's queue IRQs to each of these CPUs in turn (through tune's
    /// journal; reverted after each step and on Ctrl-C): this host's with -R, else the server's
    /// (a wirespeed server started with --allow-tune).
    #[arg(long = "irq-cpus", value_parser = cpu_list)]
    pub irq_cpus: Option<CpuSet>,
    /// Server port.
    #[arg(short, long, default_value_t = 5201)]
    pub port: u16,
    /// Reverse: the server sends, this host receives.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// JSON output.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub html: crate::pictures::HtmlArg,
    #[command(flatten)]
    pub csv: crate::pictures::CsvFileArg,
}

#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    /// CPUs to measure (default: every online CPU).
    #[arg(long, value_parser = cpu_list)]
    pub cpus: Option<CpuSet>,
    /// Samples per pair.
    #[arg(long, default_value_t = 300)]
    pub samples: usize,
    /// Round trips per sample.
    #[arg(long = "round-trips", default_value_t = 100)]
    pub round_trips: usize,
    /// JSON output.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    #[command(flatten)]
    pub html: crate::pictures::HtmlArg,
    /// CSV output (one line per pair).
    #[arg(long)]
    pub csv: bool,
}

/// SIGINT and SIGTERM set the returned flag instead of killing the process, so a sweep can
/// finish the running test and put the IRQs back.
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| exit::fail(exit::INTERNAL, format!("installing a signal handler: {e}")))?;
    }
    Ok(stop)
}

/// One pinned one-stream test; with `irq_cpu`, the server moves its NIC's queue IRQs there for
/// the test (a server started with `--allow-tune`).
fn sweep_test(
    a: &SweepArgs,
    client_cpu: u32,
    server_cpu: u32,
    irq_cpu: Option<u32>,
) -> Result<TestResult, EngineError> {
    let cfg = ClientConfig {
        host: a.host.clone(),
        port: a.port,
        time: a.time,
        parallel: 1,
        direction: if a.reverse {
            Direction::ServerToClient
        } else {
            Direction::ClientToServer
        },
        affinity: Some(client_cpu),
        server_affinity: Some(server_cpu),
        server_irq_cpus: irq_cpu.map(|c| CpuSet::from_cpus([c])),
        interval: std::time::Duration::ZERO,
        observe: Some(crate::measure::live_observer()),
        ..ClientConfig::default()
    };
    wirespeed_engine::run_client(&cfg, &mut NullReporter)
}

fn no_receiver_summary() -> EngineError {
    EngineError::Peer("the result has no receiver summary".into())
}

/// One pinned one-stream test; the receiver's throughput.
fn one_test(a: &SweepArgs, client_cpu: u32, server_cpu: u32) -> Result<BitsPerSecond, EngineError> {
    let r = sweep_test(a, client_cpu, server_cpu, None)?;
    receiver_bps(&r).ok_or_else(no_receiver_summary)
}

fn peer_addr(host: &str, port: u16) -> Option<IpAddr> {
    (host, port).to_socket_addrs().ok()?.next().map(|a| a.ip())
}

pub fn run_sweep(a: SweepArgs) -> anyhow::Result<ExitCode> {
    if a.time == 0 || a.repeat == 0 {
        return Err(exit::fail(
            exit::USAGE,
            "-t and --repeat must be at least 1",
        ));
    }
    let stop = stop_flag()?;
    let text = !a.json;
    let peer = peer_addr(&a.host, a.port);
    // Both ends on this host (loopback): relations between client and server CPUs mean something.
    let same_host = peer
        .is_some_and(|p| route::iface_for_peer(&Root::live(), p, None).as_deref() == Some("lo"));
    let topo = wirespeed_explain::topology::read(&Root::live());

    if let Some(irq_cpus) = &a.irq_cpus {
        return run_irq_sweep(&a, irq_cpus, peer, &topo, &stop);
    }

    let mut m = Matrix::new(
        Axes::ClientServer,
        a.cpus.iter().collect(),
        a.server_cpus.iter().collect(),
    );
    let mut first_err: Option<(u8, String)> = None;
    let mut ran = 0;
    'all: for c in a.cpus.iter() {
        for sc in a.server_cpus.iter() {
            for _ in 0..a.repeat {
                if stop.load(Ordering::SeqCst) {
                    break 'all;
                }
                ran += 1;
                match one_test(&a, c, sc) {
                    Ok(bps) => {
                        if text {
                            eprintln!("client CPU {c}, server CPU {sc}: {bps}");
                        }
                        m.record(c, sc, bps);
                    }
                    Err(e) => {
                        if text {
                            eprintln!("client CPU {c}, server CPU {sc}: {e}");
                        }
                        first_err.get_or_insert((engine_code(&e), e.to_string()));
                        m.record_error(c, sc, e.to_string());
                    }
                }
            }
        }
    }
    let interrupted = stop.load(Ordering::SeqCst);
    let summary = m.summary(same_host.then_some(&topo));
    if summary.is_none() {
        if let Some((code, msg)) = first_err {
            return Err(exit::fail(code, format!("sweep: every test failed: {msg}")));
        }
        if interrupted {
            return Err(exit::fail(
                exit::PEER,
                "sweep: interrupted before any test finished",
            ));
        }
    }
    let j = serde_json::json!({
        "matrix": m,
        "summary": summary,
        "tests_run": ran,
        "interrupted": interrupted,
    });
    crate::pictures::save(
        &a.html,
        Some(&a.csv),
        "sweep",
        || crate::pictures::from_json(j.clone()),
        same_host.then_some(&topo),
    )?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = (|| -> std::io::Result<()> {
        if a.json {
            serde_json::to_writer_pretty(&mut out, &j)?;
            writeln!(out)?;
        } else {
            let color = out.is_terminal();
            sweep::write_heatmap(&mut out, &m, color)?;
            if let Some(s) = &summary {
                sweep::write_summary(&mut out, &m, s)?;
            }
            if interrupted {
                writeln!(out, "(interrupted: the matrix is partial)")?;
            }
        }
        out.flush()
    })();
    stdout_result(written)
}

/// `--irq-cpus`: the receiver's NIC's queue IRQs move to one CPU per step. With `-R` this host
/// receives and moves its own IRQs through tune's journal; without it the server receives, and
/// each test asks the server to move its IRQs (a server started with `--allow-tune`).
fn run_irq_sweep(
    a: &SweepArgs,
    irq_cpus: &CpuSet,
    peer: Option<IpAddr>,
    topo: &Topology,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<ExitCode> {
    if !a.reverse {
        return run_server_irq_sweep(a, irq_cpus, stop);
    }
    if a.server_cpus.len() != 1 {
        return Err(exit::fail(
            exit::USAGE,
            format!(
                "--irq-cpus sweeps app CPU x IRQ CPU: give one --server-cpus CPU, not {}",
                a.server_cpus
            ),
        ));
    }
    let server_cpu = a.server_cpus.first().unwrap_or(0);
    let root = Root::live();
    let peer = peer.ok_or_else(|| {
        exit::fail(
            exit::CONNECT,
            format!("{}: cannot resolve the address", a.host),
        )
    })?;
    let iface = route::iface_for_peer(&root, peer, None).ok_or_else(|| {
        exit::fail(
            exit::HOST,
            format!("no route to {peer}: which NIC carries the test?"),
        )
    })?;
    if iface == "lo" {
        return Err(exit::fail(
            exit::HOST,
            format!("{peer} is reached through lo, which has no NIC interrupts to move"),
        ));
    }
    let irqs =
        irq_sweep::queue_irqs(&root, &iface).map_err(|e| exit::fail(exit::HOST, e.to_string()))?;
    let spec = IrqSweepSpec {
        iface: iface.clone(),
        irqs,
        app_cpus: a.cpus.iter().collect(),
        irq_cpus: irq_cpus.iter().collect(),
        repeat: a.repeat,
    };
    let text = !a.json;
    let mut first_err: Option<(u8, String)> = None;
    let report = irq_sweep::run_irq_sweep(
        &root,
        &spec,
        &wirespeed_tune::ApplyOptions::default(),
        stop,
        &mut |_| {},
        &mut |app, irq_cpu| match one_test(a, app, server_cpu) {
            Ok(bps) => {
                if text {
                    eprintln!("app CPU {app}, {iface} IRQs on CPU {irq_cpu}: {bps}");
                }
                Ok(bps)
            }
            Err(e) => {
                first_err.get_or_insert((engine_code(&e), e.to_string()));
                Err(e.to_string())
            }
        },
    )
    .map_err(|e| match e {
        IrqSweepError::Tune(wirespeed_tune::TuneError::NotPrivileged) => exit::fail(
            exit::HOST,
            "--irq-cpus writes /proc/irq/*/smp_affinity_list: run as root",
        ),
        IrqSweepError::RevertIncomplete { .. } => exit::fail(exit::HOST, e.to_string()),
        other => exit::fail(exit::IO, other.to_string()),
    })?;
    let summary = report.matrix.summary(Some(topo));
    if summary.is_none() {
        if let Some((code, msg)) = first_err {
            return Err(exit::fail(code, format!("sweep: every test failed: {msg}")));
        }
    }
    write_irq_report(a, &report, summary.as_ref())
}

/// The IRQ sweep's output: heatmap and summary (text), or the report and summary (JSON).
fn write_irq_report(
    a: &SweepArgs,
    report: &irq_sweep::IrqSweepReport,
    summary: Option<&sweep::Summary>,
) -> anyhow::Result<ExitCode> {
    let j = serde_json::json!({"irq_sweep": report, "summary": summary});
    crate::pictures::save(
        &a.html,
        Some(&a.csv),
        "sweep",
        || crate::pictures::from_json(j.clone()),
        None,
    )?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = (|| -> std::io::Result<()> {
        if a.json {
            serde_json::to_writer_pretty(&mut out, &j)?;
            writeln!(out)?;
        } else {
            let color = out.is_terminal();
            sweep::write_heatmap(&mut out, &report.matrix, color)?;
            if let Some(s) = summary {
                sweep::write_summary(&mut out, &report.matrix, s)?;
            }
            for s in &report.steps {
                if !s.not_movable.is_empty() {
                    writeln!(
                        out,
                        "IRQ CPU {}: IRQs {:?} are managed by the kernel and stayed put",
                        s.irq_cpu, s.not_movable
                    )?;
                }
                for (irq, e) in &s.elsewhere {
                    writeln!(
                        out,
                        "IRQ CPU {}: IRQ {irq} took effect on CPU {e} instead",
                        s.irq_cpu
                    )?;
                }
            }
            writeln!(
                out,
                "{} step(s), every journal reverted{}{}",
                report.steps.len(),
                if a.reverse { "" } else { " on the server" },
                if report.interrupted {
                    " (interrupted)"
                } else {
                    ""
                }
            )?;
        }
        out.flush()
    })();
    stdout_result(written)
}

/// `--irq-cpus` without `-R`: the server receives, so its NIC's queue IRQs move. Each test asks
/// the server (started with `--allow-tune`) to move them to the step's CPU for that test; the
/// server applies the move through tune's journal, reverts it when the test's data phase ends and
/// reports what it did in its results. Rows: the server's app CPUs (`--server-cpus`); columns:
/// the IRQ CPUs; this host sends from its one `--cpus` CPU.
fn run_server_irq_sweep(
    a: &SweepArgs,
    irq_cpus: &CpuSet,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<ExitCode> {
    if a.cpus.len() != 1 {
        return Err(exit::fail(
            exit::USAGE,
            format!(
                "--irq-cpus without -R sweeps the server's app CPU x IRQ CPU: give one --cpus CPU \
                 (this host sends from it), not {}",
                a.cpus
            ),
        ));
    }
    let client_cpu = a.cpus.first().unwrap_or(0);
    let text = !a.json;
    let mut report = irq_sweep::IrqSweepReport {
        iface: String::new(),
        irqs: Vec::new(),
        matrix: Matrix::new(
            Axes::AppIrq,
            a.server_cpus.iter().collect(),
            irq_cpus.iter().collect(),
        ),
        steps: Vec::new(),
        interrupted: false,
    };
    let mut topo: Option<Topology> = None;
    let mut ok = 0usize;
    let mut first_err: Option<(u8, String)> = None;
    'steps: for irq_cpu in irq_cpus.iter() {
        let mut step: Option<irq_sweep::StepOutcome> = None;
        for app in a.server_cpus.iter() {
            for _ in 0..a.repeat {
                if stop.load(Ordering::SeqCst) {
                    report.interrupted = true;
                    report.steps.extend(step.take());
                    break 'steps;
                }
                let r = match sweep_test(a, client_cpu, app, Some(irq_cpu)) {
                    Ok(r) => r,
                    Err(EngineError::Refused(why)) if ok == 0 => {
                        return Err(exit::fail(
                            exit::REFUSED,
                            format!(
                                "sweep --irq-cpus: the server refused to move its NIC's IRQs: \
                                 {why}; or add -R to sweep this host's IRQs (the server sends, \
                                 this host receives)"
                            ),
                        ));
                    }
                    Err(e) => {
                        if text {
                            eprintln!("server app CPU {app}, IRQs on CPU {irq_cpu}: {e}");
                        }
                        first_err.get_or_insert((engine_code(&e), e.to_string()));
                        report.matrix.record_error(app, irq_cpu, e.to_string());
                        continue;
                    }
                };
                let moved = r.wirespeed.as_ref().and_then(|x| x.remote_irq_move.clone());
                let Some(m) = moved else {
                    // An older wirespeed server ignores the request: the test ran with the IRQs
                    // wherever they were, which says nothing about this cell.
                    let e = "the server did not report moving its IRQs (a wirespeed server \
                             without tune requests?)";
                    first_err.get_or_insert((exit::PEER, e.to_string()));
                    report.matrix.record_error(app, irq_cpu, e);
                    continue;
                };
                if !m.reverted {
                    report
                        .steps
                        .push(irq_sweep::StepOutcome::from_move(irq_cpu, &m));
                    return Err(exit::fail(
                        exit::PEER,
                        format!(
                            "sweep --irq-cpus: the server could not put its IRQs back (journal {} \
                             on the server: run `wirespeed tune revert {}` there)",
                            m.journal, m.journal
                        ),
                    ));
                }
                let Some(bps) = receiver_bps(&r) else {
                    let e = no_receiver_summary();
                    first_err.get_or_insert((engine_code(&e), e.to_string()));
                    report.matrix.record_error(app, irq_cpu, e.to_string());
                    continue;
                };
                ok += 1;
                if text {
                    eprintln!(
                        "server app CPU {app}, {} IRQs on CPU {irq_cpu}: {bps}",
                        m.iface
                    );
                }
                if topo.is_none() {
                    topo = observation_of(&r)
                        .0
                        .and_then(|o| o.remote)
                        .map(|e| e.topology);
                }
                if report.iface.is_empty() {
                    report.iface = m.iface.clone();
                    report.irqs = m.irqs.clone();
                }
                step.get_or_insert_with(|| irq_sweep::StepOutcome::from_move(irq_cpu, &m));
                report.matrix.record(app, irq_cpu, bps);
            }
        }
        report.steps.extend(step);
    }
    let summary = report.matrix.summary(topo.as_ref());
    if summary.is_none() {
        if let Some((code, msg)) = first_err {
            return Err(exit::fail(code, format!("sweep: every test failed: {msg}")));
        }
        if report.interrupted {
            return Err(exit::fail(
                exit::PEER,
                "sweep: interrupted before any test finished",
            ));
        }
    }
    write_irq_report(a, &report, summary.as_ref())
}

pub fn run_latency(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    if args.samples == 0 || args.round_trips == 0 {
        return Err(exit::fail(
            exit::USAGE,
            "--samples and --round-trips must be at least 1",
        ));
    }
    let root = Root::live();
    let topo = wirespeed_explain::topology::read(&root);
    let online = root
        .read_opt("/sys/devices/system/cpu/online")
        .and_then(|s| CpuSet::parse_list(&s).ok());
    let cpus = match (args.cpus, &online) {
        (Some(c), Some(on)) => {
            let off = c.difference(on);
            if !off.is_empty() {
                return Err(exit::fail(
                    exit::HOST,
                    format!("--cpus {c}: CPU {off} not online (online: {on})"),
                ));
            }
            c
        }
        (Some(c), None) => c,
        (None, Some(on)) => on.clone(),
        (None, None) => {
            return Err(exit::fail(
                exit::HOST,
                "/sys/devices/system/cpu/online unreadable: name the CPUs with --cpus",
            ))
        }
    };
    if cpus.len() < 2 {
        return Err(exit::fail(
            exit::USAGE,
            format!("--cpus {cpus}: need at least two CPUs"),
        ));
    }
    let opts = Options {
        samples: args.samples,
        round_trips: args.round_trips,
        ..Options::default()
    };
    let m = latency::measure(&cpus, &opts, Some(&topo)).map_err(|e| {
        let code = match e {
            LatencyError::Pin { .. } | LatencyError::Stalled { .. } => exit::HOST,
            LatencyError::TooFewCpus(_) => exit::USAGE,
            LatencyError::Thread => exit::INTERNAL,
        };
        exit::fail(code, format!("latency: {e}"))
    })?;
    crate::pictures::save(
        &args.html,
        None,
        "latency",
        || crate::pictures::from_json(serde_json::to_value(&m)?),
        Some(&topo),
    )?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = (|| -> std::io::Result<()> {
        if args.json {
            serde_json::to_writer_pretty(&mut out, &m)?;
            writeln!(out)?;
        } else if args.csv {
            latency::write_csv(&mut out, &m)?;
        } else {
            latency::write_table(&mut out, &m)?;
            if out.is_terminal() && !topo.l3_groups.is_empty() {
                writeln!(out, "topology: {}", topo.summary())?;
            }
        }
        out.flush()
    })();
    stdout_result(written)
}

/// A closed pipe (`| head`) ends the output quietly; other write errors are local I/O errors.
fn stdout_result(r: std::io::Result<()>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(()) => Ok(ExitCode::from(exit::OK)),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(exit::OK)),
        Err(e) => Err(exit::fail(exit::IO, format!("writing to stdout: {e}"))),
    }
}

/// The receiver's throughput of a finished test (`sum_received`, else `sum`).
pub fn receiver_bps(r: &TestResult) -> Option<BitsPerSecond> {
    r.end
        .sum_received
        .as_ref()
        .or(r.end.sum.as_ref())
        .map(|s| BitsPerSecond(s.bits_per_second))
}

/// The observation and verdict a test carries under `wirespeed`, when it has them.
pub fn observation_of(r: &TestResult) -> (Option<TestObservation>, Option<Verdict>) {
    let Some(x) = &r.wirespeed else {
        return (None, None);
    };
    (x.observation.clone(), x.verdict.clone())
}

/// The "where the work ran" block under a client's text output (the server's own output prints
/// the same block); nothing when the test carries no observation.
pub fn write_where(w: &mut dyn Write, r: &TestResult) -> std::io::Result<()> {
    wirespeed_report::where_ran::write_where(w, r)
}

/// `client --repeat N`: N tests in a row with the same settings, then min / median / max /
/// spread, the modes and the placement each mode's runs share. Text: one line per run and the
/// analysis; JSON: every run's result and the analysis.
pub fn run_repeat(
    cfg: &ClientConfig,
    n: u32,
    out: &mut dyn Write,
    json: bool,
    (html, csv): (&crate::pictures::HtmlArg, &crate::pictures::CsvFileArg),
) -> anyhow::Result<ExitCode> {
    if n == 0 {
        return Err(exit::fail(exit::USAGE, "--repeat must be at least 1"));
    }
    let stop = stop_flag()?;
    let mut runs = Vec::new();
    let mut results = Vec::new();
    let mut first_err: Option<(u8, String)> = None;
    for k in 1..=n {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match wirespeed_engine::run_client(cfg, &mut NullReporter) {
            Ok(r) => {
                let bps = receiver_bps(&r).unwrap_or_default();
                let (obs, verdict) = observation_of(&r);
                if !json {
                    let line = verdict
                        .as_ref()
                        .map_or(String::new(), |v| format!(": {}", v.line));
                    writeln!(out, "run {k}/{n}: {bps}{line}")?;
                }
                runs.push(modes::Run {
                    bits_per_second: bps,
                    observation: obs,
                });
                results.push(r);
            }
            Err(e) => {
                if !json {
                    writeln!(out, "run {k}/{n}: {e}")?;
                }
                first_err.get_or_insert((engine_code(&e), e.to_string()));
            }
        }
    }
    let Some(analysis) = modes::analyze(&runs) else {
        return Err(match first_err {
            Some((code, msg)) => exit::fail(code, format!("--repeat: every test failed: {msg}")),
            None => exit::fail(exit::PEER, "--repeat: interrupted before any test finished"),
        });
    };
    let j = serde_json::json!({ "runs": results, "repeat": analysis });
    crate::pictures::save(
        html,
        Some(csv),
        "client --repeat",
        || crate::pictures::from_json(j.clone()),
        None,
    )?;
    if json {
        serde_json::to_writer_pretty(&mut *out, &j)?;
        writeln!(out)?;
    } else {
        modes::write_text(out, &analysis)?;
    }
    out.flush()?;
    Ok(ExitCode::from(exit::OK))
}
