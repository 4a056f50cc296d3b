//! `doctor`, `topo` and `capture`: host facts and findings.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}

#[derive(Debug, clap::Args)]
pub struct TopoArgs {}

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {}

pub fn run_doctor(_args: DoctorArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "doctor: not built yet"))
}

pub fn run_topo(_args: TopoArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "topo: not built yet"))
}

pub fn run_capture(_args: CaptureArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "capture: not built yet"))
}
