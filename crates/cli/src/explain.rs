//! `sweep` and `latency`: where the work runs.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use wirespeed_explain::latency::{self, LatencyError, Options};
use wirespeed_explain::topology::Topology;
use wirespeed_host::{CpuSet, Root};

use crate::exit;

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
    #[arg(short = 't', long = "time", default_value_t = 3.0)]
    pub time: f64,
    /// Tests per pair; the matrix shows their median.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Also move the receiver NIC's queue IRQs to each of these CPUs in turn (through tune's
    /// journal; reverted at the end and on Ctrl-C).
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
    /// CSV output (one line per pair).
    #[arg(long)]
    pub csv: bool,
}

pub fn run_sweep(_args: SweepArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(
        exit::INTERNAL,
        "sweep: waiting for the engine's client API",
    ))
}

pub fn run_latency(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    if args.samples == 0 || args.round_trips == 0 {
        return Err(exit::fail(
            exit::USAGE,
            "--samples and --round-trips must be at least 1",
        ));
    }
    let root = Root::live();
    let topo = Topology::read(&root);
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
