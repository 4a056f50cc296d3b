//! `client` and `server`: the measuring engine's command line.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    /// Server host name or address.
    pub host: String,
}

#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// Port to listen on.
    #[arg(short, long, default_value_t = 5201)]
    pub port: u16,
}

/// Accept iperf3's spelling: `-s ...` becomes `server ...`, `-c HOST ...` becomes `client HOST ...`.
pub fn rewrite_iperf3_argv(argv: Vec<OsString>) -> Vec<OsString> {
    argv
}

pub fn run_client(_args: ClientArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "client: not built yet"))
}

pub fn run_server(_args: ServerArgs) -> anyhow::Result<ExitCode> {
    Err(exit::fail(exit::INTERNAL, "server: not built yet"))
}
