//! `sweep` and `latency`: where the work runs.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use wirespeed_doctor::target::{Ask, Command, HostTarget};
use wirespeed_drive::sweep::Summarize;
use wirespeed_report::doc::{Document, IrqSweepDoc, LatencyDoc, RepeatDoc, SweepDoc, Written};

use wirespeed_drive::irq_sweep::{self, IrqSweepError};
use wirespeed_drive::modes;
use wirespeed_drive::sweep;
use wirespeed_drive::{self as drive, IrqDrive, IrqDriveError, PairSweep, Repeat, SweepSpec};
pub use wirespeed_drive::{observation_of, receiver_bps};
use wirespeed_engine::ClientConfig;
use wirespeed_host::{CpuSet, Root};
use wirespeed_latency::{self as latency, LatencyError, Options};

use crate::exit::{self, engine_code};

use crate::common::cpu_list;

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
    #[arg(short = 't', long = "time", default_value_t = 3,
          value_parser = crate::common::limit::u32_in::<1, { crate::common::limit::DAY_S }>)]
    pub time: u32,
    /// Tests per pair; the matrix shows their median.
    #[arg(long, default_value_t = 1, value_parser = crate::common::limit::u32_in::<1, 1000>)]
    pub repeat: u32,
    /// Also move the receiver NIC's queue IRQs to each of these CPUs in turn (through tune's
    /// journal; reverted after each step and on Ctrl-C): this host's with -R, else the server's
    /// (a wirespeed server started with --allow-tune --psk; needs --psk).
    #[arg(long = "irq-cpus", value_parser = cpu_list)]
    pub irq_cpus: Option<CpuSet>,
    /// The server's pre-shared key file (as its --psk): tags every test; needed by --irq-cpus
    /// without -R (a server takes tune requests only with verified parameters).
    #[arg(long = "psk", value_name = "FILE")]
    pub psk: Option<std::path::PathBuf>,
    /// Server port.
    #[arg(short, long, default_value_t = wirespeed_engine::targets::DEFAULT_PORT)]
    pub port: u16,
    /// Reverse: the server sends, this host receives.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    #[command(flatten)]
    pub out: crate::pictures::DocOutput,
}

#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    /// CPUs to measure (default: every online CPU).
    #[arg(long, value_parser = cpu_list)]
    pub cpus: Option<CpuSet>,
    /// Samples per pair.
    #[arg(long, default_value_t = 300, value_parser = crate::common::limit::usize_in::<1, 1_000_000>)]
    pub samples: usize,
    /// Round trips per sample.
    #[arg(long = "round-trips", default_value_t = 100,
          value_parser = crate::common::limit::usize_in::<1, 1_000_000>)]
    pub round_trips: usize,
    /// A pair is noise when its standard error stays above this % of its mean.
    #[arg(long = "max-stderr", value_name = "PCT", default_value_t = 5.0)]
    pub max_stderr: f64,
    /// Rounds of --samples samples at most for a pair above --max-stderr.
    #[arg(long = "max-rounds", value_name = "N", default_value_t = 5,
          value_parser = crate::common::limit::usize_in::<1, 1_000_000>)]
    pub max_rounds: usize,
    #[command(flatten)]
    pub out: crate::pictures::DocOutput,
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

/// What every sweep test shares, from the arguments.
fn sweep_spec(a: &SweepArgs) -> anyhow::Result<SweepSpec> {
    Ok(SweepSpec {
        host: a.host.clone(),
        port: a.port,
        time: a.time,
        repeat: a.repeat,
        reverse: a.reverse,
        cpus: a.cpus.clone(),
        server_cpus: a.server_cpus.clone(),
        observe: Some(crate::common::live_observer()),
        psk: a.psk.as_deref().map(crate::common::read_psk).transpose()?,
    })
}

/// Progress lines on stderr (also with `-J`: stdout holds only the document).
fn progress(line: String) {
    eprintln!("{line}")
}

/// A refusal before the first test: a server that cannot be reached (`CONNECT`).
fn preflight_fail(e: drive::PreflightError) -> anyhow::Error {
    exit::fail(exit::CONNECT, e.to_string())
}

/// The CPUs a sweep, a repeat or the latency matrix names, resolved once on the live host
/// (online, allowed for this process, their NUMA nodes): its target.
fn cpu_target(command: Command, cpus: &[(&str, &CpuSet)]) -> anyhow::Result<HostTarget> {
    let live = Root::live();
    let facts = wirespeed_host::collect(&live);
    let ask = cpus.iter().fold(Ask::default(), |ask, (flag, c)| {
        ask.with_cpus(flag, Some(c))
    });
    crate::common::resolve_target(command, Some((&live, &facts)), &ask)
}

/// How long the one up-front connect to the server may take.
const PREFLIGHT_CONNECT: std::time::Duration = std::time::Duration::from_secs(5);

/// An IRQ sweep that could not run, with its exit code.
fn irq_fail(e: IrqDriveError) -> anyhow::Error {
    let code = match &e {
        IrqDriveError::OneServerCpu(_)
        | IrqDriveError::OneClientCpu(_)
        | IrqDriveError::NeedsPsk => exit::USAGE,
        IrqDriveError::Resolve(_) => exit::CONNECT,
        IrqDriveError::NoRoute(_) | IrqDriveError::Loopback(_) | IrqDriveError::Nic(_) => {
            exit::HOST
        }
        IrqDriveError::Sweep(IrqSweepError::Tune(wirespeed_tune::TuneError::NotPrivileged)) => {
            return exit::fail(
                exit::HOST,
                "--irq-cpus writes /proc/irq/*/smp_affinity_list: run as root",
            )
        }
        IrqDriveError::Sweep(IrqSweepError::RevertIncomplete { .. }) => exit::HOST,
        IrqDriveError::Sweep(_) => exit::IO,
        IrqDriveError::ServerRefused(_) => exit::REFUSED,
        IrqDriveError::ServerNotReverted(_) => exit::PEER,
    };
    exit::fail(code, e.to_string())
}

pub fn run_sweep(a: SweepArgs) -> anyhow::Result<ExitCode> {
    if a.time == 0 || a.repeat == 0 {
        return Err(exit::fail(
            exit::USAGE,
            "-t and --repeat must be at least 1",
        ));
    }
    a.out.check_stdout()?;
    let stop = stop_flag()?;
    let text = !a.out.json;
    let (peer, same_host) = drive::locate_peer(&Root::live(), &a.host, a.port);
    // Refuse up front, once: CPUs this host lacks (the server's too when it runs here), no server.
    let mut cpus = vec![("--cpus", &a.cpus)];
    if same_host {
        cpus.push(("--server-cpus", &a.server_cpus));
    }
    if let Some(irq) = a.irq_cpus.as_ref().filter(|_| a.reverse) {
        cpus.push(("--irq-cpus", irq));
    }
    let target = cpu_target(Command::Sweep, &cpus)?;
    let topo = wirespeed_observe::topology::read(&Root::live());

    if let Some(irq_cpus) = &a.irq_cpus {
        let spec = sweep_spec(&a)?;
        let run = if a.reverse {
            drive::run_local_irq_sweep(&spec, irq_cpus, &Root::live(), peer, &stop, &mut progress)
        } else {
            drive::run_server_irq_sweep(&spec, irq_cpus, &stop, &mut progress)
        }
        .map_err(irq_fail)?;
        return finish_irq_sweep(&a, run);
    }

    drive::check_peer(&a.host, a.port, PREFLIGHT_CONNECT).map_err(preflight_fail)?;
    if let Some(line) = target.line().filter(|_| text) {
        eprintln!("{line}");
    }
    let PairSweep {
        matrix: m,
        ran,
        interrupted,
        first_err,
    } = drive::run_pair_sweep(&sweep_spec(&a)?, &stop, &mut progress);
    let summary = m.summary(same_host.then_some(&topo));
    if summary.is_none() {
        nothing_to_summarize(first_err, interrupted)?;
    }
    let j = Written::Sweep(SweepDoc {
        matrix: m.clone(),
        summary: summary.clone(),
        tests_run: ran,
        interrupted,
        topology: None,
    });
    let colour = a.out.csv.text_is_terminal();
    write_sweep_doc(&a, &j, same_host.then_some(&topo), |out| {
        wirespeed_report::sweep::write_sweep(out, &m, summary.as_ref(), interrupted, colour)
    })
}

/// A sweep's document: its pictures (`--html`, `--csv`), then on stdout the document (`-J`)
/// or its text.
fn write_sweep_doc(
    a: &SweepArgs,
    j: &Written,
    topo: Option<&wirespeed_model::Topology>,
    text: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<ExitCode> {
    crate::pictures::save(
        &a.out.html,
        Some(&a.out.csv),
        "sweep",
        || Ok(Document::from(j.clone())),
        topo,
    )?;
    let mut out = a.out.csv.text_out();
    let written = (|| -> std::io::Result<()> {
        if a.out.json {
            serde_json::to_writer_pretty(&mut out, j)?;
            writeln!(out)?;
        } else {
            text(&mut out)?;
        }
        out.flush()
    })();
    stdout_result(written)
}

/// An IRQ sweep's summary and output; every test failing (or an interruption before any
/// finished) is an error.
fn finish_irq_sweep(a: &SweepArgs, mut run: IrqDrive) -> anyhow::Result<ExitCode> {
    // only the steps whose move took effect count
    let ineffective = run.report.drop_ineffective();
    let summary = run.report.matrix.summary(run.topology.as_ref());
    if summary.is_none() && ineffective > 0 && ineffective == run.report.steps.len() {
        return Err(exit::fail(
            exit::HOST,
            format!(
                "sweep --irq-cpus: none of the {ineffective} IRQ moves took effect (the kernel \
                 kept the IRQs elsewhere): nothing to compare"
            ),
        ));
    }
    if summary.is_none() {
        nothing_to_summarize(run.first_err, run.report.interrupted && !a.reverse)?;
    }
    write_irq_report(a, &run.report, summary.as_ref(), ineffective)
}

/// A sweep without a single finished test is an error: every test failed (the first failure's
/// code), or it was interrupted before any finished.
fn nothing_to_summarize(
    first_err: Option<wirespeed_engine::EngineError>,
    interrupted: bool,
) -> anyhow::Result<()> {
    if let Some(e) = first_err {
        return Err(exit::fail(
            engine_code(&e),
            format!("sweep: every test failed: {e}"),
        ));
    }
    if interrupted {
        return Err(exit::fail(
            exit::PEER,
            "sweep: interrupted before any test finished",
        ));
    }
    Ok(())
}

/// The IRQ sweep's output: heatmap and summary (text), or the report and summary (JSON).
fn write_irq_report(
    a: &SweepArgs,
    report: &irq_sweep::IrqSweepReport,
    summary: Option<&sweep::Summary>,
    ineffective: usize,
) -> anyhow::Result<ExitCode> {
    let j = Written::IrqSweep(IrqSweepDoc {
        irq_sweep: report.clone(),
        summary: summary.cloned(),
        ineffective_steps: ineffective,
    });
    let colour = a.out.csv.text_is_terminal();
    write_sweep_doc(a, &j, None, |out| {
        wirespeed_report::sweep::write_irq_sweep(
            out,
            report,
            summary,
            ineffective,
            !a.reverse,
            colour,
        )
    })
}

pub fn run_latency(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    if args.samples == 0 || args.round_trips == 0 || args.max_rounds == 0 {
        return Err(exit::fail(
            exit::USAGE,
            "--samples, --round-trips and --max-rounds must be at least 1",
        ));
    }
    args.out.check_stdout()?;
    if !(args.max_stderr > 0.0 && args.max_stderr <= 100.0) {
        return Err(exit::fail(
            exit::USAGE,
            format!(
                "--max-stderr {}: a percentage above 0 and at most 100",
                args.max_stderr
            ),
        ));
    }
    let root = Root::live();
    let topo = wirespeed_observe::topology::read(&root);
    let named: Vec<(&str, &CpuSet)> = args.cpus.iter().map(|c| ("--cpus", c)).collect();
    let target = cpu_target(Command::Latency, &named)?;
    if let Some(line) = target.line() {
        eprintln!("{line}");
    }
    let cpus = match args.cpus {
        Some(c) => c,
        None if !target.usable.is_empty() => target.usable.clone(),
        None => {
            return Err(exit::fail(
                exit::HOST,
                "the online CPUs are unreadable: name the CPUs with --cpus",
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
        max_rel_stderr: args.max_stderr / 100.0,
        max_rounds: args.max_rounds,
        ..Options::default()
    };
    // progress on stderr, one line per round of each pair (also with --json and --csv)
    let mut progress = |p: latency::Progress| eprintln!("{p}");
    let m = latency::measure_with(&cpus, &opts, Some(&topo), &mut progress).map_err(|e| {
        let code = match e {
            LatencyError::Pin { .. } | LatencyError::Stalled { .. } => exit::HOST,
            LatencyError::TooFewCpus(_) => exit::USAGE,
            LatencyError::Thread => exit::INTERNAL,
        };
        exit::fail(code, format!("latency: {e}"))
    })?;
    if args.out.json || args.out.csv.to_stdout() {
        if let Some(w) = m.noise_warning() {
            eprintln!("{w}");
        }
    }
    let doc = Written::Latency(LatencyDoc {
        matrix: m.clone(),
        topology: None,
    });
    crate::pictures::save(
        &args.out.html,
        None,
        "latency",
        || Ok(Document::from(doc.clone())),
        Some(&topo),
    )?;
    if let Some(p) = &args.out.csv.csv {
        crate::pictures::write_csv(p, &Document::from(doc.clone()))?;
        if args.out.csv.to_stdout() {
            return Ok(ExitCode::from(exit::OK));
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = (|| -> std::io::Result<()> {
        if args.out.json {
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        } else {
            wirespeed_report::latency::write_table(&mut out, &m)?;
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
    exit::stdout_written(r).map(|()| ExitCode::from(exit::OK))
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
    // the CPUs were checked by the client's target (`measure::run_client`), once
    drive::check_peer(&cfg.host, cfg.port, PREFLIGHT_CONNECT).map_err(preflight_fail)?;
    let stop = stop_flag()?;
    let Repeat {
        runs,
        results,
        first_err,
    } = drive::run_repeat(cfg, n, &stop, &mut |k, r| {
        if json {
            // progress on stderr: stdout holds only the document
            match r {
                Ok(r) => eprintln!("run {k}/{n}: {}", receiver_bps(r).unwrap_or_default()),
                Err(e) => eprintln!("run {k}/{n}: {e}"),
            }
            return Ok(());
        }
        match r {
            Ok(r) => {
                let bps = receiver_bps(r).unwrap_or_default();
                let line = observation_of(r)
                    .1
                    .map_or(String::new(), |v| format!(": {}", v.line));
                writeln!(out, "run {k}/{n}: {bps}{line}")
            }
            Err(e) => writeln!(out, "run {k}/{n}: {e}"),
        }
    })?;
    let Some(analysis) = modes::analyze(&runs) else {
        return Err(match first_err {
            Some(e) => exit::fail(engine_code(&e), format!("--repeat: every test failed: {e}")),
            None => exit::fail(exit::PEER, "--repeat: interrupted before any test finished"),
        });
    };
    let j = Written::Repeat(RepeatDoc {
        runs: results,
        repeat: analysis.clone(),
    });
    crate::pictures::save(
        html,
        Some(csv),
        "client --repeat",
        || Ok(Document::from(j.clone())),
        None,
    )?;
    if json {
        serde_json::to_writer_pretty(&mut *out, &j)?;
        writeln!(out)?;
    } else {
        wirespeed_report::repeat::write_text(out, &analysis)?;
    }
    out.flush()?;
    Ok(ExitCode::from(exit::OK))
}
