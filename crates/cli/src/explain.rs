//! `sweep` and `latency`: where the work runs.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct SweepArgs {}

#[derive(Debug, clap::Args)]
pub struct LatencyArgs {}

pub fn run_sweep(_args: SweepArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "sweep: not built yet"))
}

pub fn run_latency(_args: LatencyArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "latency: not built yet"))
}
