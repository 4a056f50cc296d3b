//! `tune`: plans, journals, revert.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct TuneArgs {}

pub fn run(_args: TuneArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "tune: not built yet"))
}
