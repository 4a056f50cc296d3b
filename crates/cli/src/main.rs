//! `wirespeed`: measure, observe, explain, diagnose and tune high-speed network hosts.
//!
//! The binary is thin: argument parsing, wiring of the library crates, and exit codes. Each
//! subcommand family lives in its own module.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod diagnose;
mod exit;
mod explain;
mod live;
mod measure;
mod pictures;
mod tune;

#[derive(Debug, Parser)]
#[command(
    name = "wirespeed",
    version,
    about = "Measure, observe, explain, diagnose and tune high-speed network hosts",
    long_about = "Measure, observe, explain, diagnose and tune high-speed network hosts.\n\n\
                  iperf3's own forms work too: `wirespeed -s` and `wirespeed -c HOST [iperf3 flags]`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a test against a server (iperf3 or wirespeed); iperf3's `-c HOST`.
    Client(Box<measure::ClientArgs>),
    /// Serve tests to any number of clients at once; iperf3's `-s`.
    Server(Box<measure::ServerArgs>),
    /// Find what holds this host (or a captured one) back.
    Doctor(diagnose::DoctorArgs),
    /// Show CPUs, NUMA nodes, L3 groups and where each NIC's interrupts land.
    Topo(diagnose::TopoArgs),
    /// Capture the files doctor reads into a snapshot for offline diagnosis.
    Capture(diagnose::CaptureArgs),
    /// Plan, apply and revert host tuning.
    Tune(tune::TuneArgs),
    /// A one-stream test for every client-CPU x server-CPU pair.
    Sweep(Box<explain::SweepArgs>),
    /// Core-to-core latency matrix.
    Latency(explain::LatencyArgs),
    /// One self-contained HTML page (or CSV) of JSON results; several side by side.
    Report(pictures::ReportArgs),
    /// What changed between two JSON results; exit 9 past --threshold.
    Diff(pictures::DiffArgs),
}

fn main() -> ExitCode {
    let argv = measure::rewrite_iperf3_argv(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Client(a) => measure::run_client(*a),
        Command::Server(a) => measure::run_server(*a),
        Command::Doctor(a) => diagnose::run_doctor(a),
        Command::Topo(a) => diagnose::run_topo(a),
        Command::Capture(a) => diagnose::run_capture(a),
        Command::Tune(a) => tune::run(a),
        Command::Sweep(a) => explain::run_sweep(*a),
        Command::Latency(a) => explain::run_latency(a),
        Command::Report(a) => pictures::run_report(a),
        Command::Diff(a) => pictures::run_diff(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wirespeed: {}", exit::one_line(&e));
            ExitCode::from(exit::code_of(&e))
        }
    }
}
