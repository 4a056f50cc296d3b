//! `completions SHELL` and `man`: shell completions and manual pages generated from the clap
//! definitions themselves, so they never drift from `--help`. The `.deb` ships what these print
//! (`scripts/package` writes them into its assets directory).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap_complete::Shell;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for (bash, zsh, fish, elvish, powershell).
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command (wirespeed.1, wirespeed-client.1, ...) into DIR instead of
    /// printing wirespeed.1 to stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Print the completion script for `shell` to stdout.
pub fn run_completions(a: CompletionsArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    let mut cmd = cmd;
    clap_complete::generate(a.shell, &mut cmd, "wirespeed", &mut buf);
    write_stdout(&buf)
}

/// Print the top-level page, or write every command's page into `--dir`.
pub fn run_man(a: ManArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    // `help` is not a command worth a page (as clap_mangen's generate_to decides too).
    let cmd = cmd.disable_help_subcommand(true);
    match a.dir {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(exit::fail(
                    exit::IO,
                    format!("man --dir {}: not a directory", dir.display()),
                ));
            }
            clap_mangen::generate_to(cmd, &dir)
                .map_err(|e| exit::fail(exit::IO, format!("man --dir {}: {e}", dir.display())))?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut buf)
                .map_err(|e| exit::fail(exit::INTERNAL, format!("man: {e}")))?;
            write_stdout(&buf)
        }
    }
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(buf: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(buf).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(exit::fail(exit::IO, format!("stdout: {e}"))),
    }
}
