//! `completions SHELL` and `man`: shell completions and manual pages generated from the clap
//! definitions themselves, so they never drift from `--help`. The `.deb` ships what these print
//! (`scripts/package` writes them into its assets directory).
//!
//! Each page is clap_mangen's, plus EXIT STATUS (from [`exit::MEANINGS`], the table the README
//! shows) and EXAMPLES (from [`EXAMPLES`]); the help's `code` spans are set in bold instead of
//! showing their backticks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for (bash, zsh, fish, elvish, powershell).
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Print this command's page instead of wirespeed.1 (`man client`, `man tune revert`).
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,
    /// Write one page per command (wirespeed.1, wirespeed-client.1, ...) into DIR, created if
    /// missing, instead of printing wirespeed.1 to stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Print the completion script for `shell` to stdout.
pub fn run_completions(a: CompletionsArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    let mut cmd = cmd;
    clap_complete::generate(a.shell, &mut cmd, "wirespeed", &mut buf);
    let script = String::from_utf8_lossy(&buf).into_owned();
    let script = complete_interfaces(a.shell, &script, &iface_options(&cmd));
    write_stdout(script.as_bytes())
}

/// The value name of every option that takes a network interface (`doctor --iface`,
/// `--bind-dev`, ...): the completions offer the host's interfaces (`/sys/class/net`) for them
/// instead of file names.
pub const IFACE: &str = "IFACE";

/// The long names of the options whose value is an interface ([`IFACE`]), in every command.
pub fn iface_options(cmd: &clap::Command) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for a in cmd.get_arguments() {
        let iface = a
            .get_value_names()
            .is_some_and(|v| v.iter().any(|n| n == IFACE));
        if let (true, Some(l)) = (iface, a.get_long()) {
            out.insert(l.to_string());
        }
    }
    for sub in cmd.get_subcommands() {
        out.extend(iface_options(sub));
    }
    out
}

/// clap's completion `script` for `shell`, with the options in `longs` completing interface
/// names (the entries of `/sys/class/net`) instead of files. Shells other than bash, zsh and
/// fish keep clap's script.
pub fn complete_interfaces(
    shell: Shell,
    script: &str,
    longs: &std::collections::BTreeSet<String>,
) -> String {
    const BASH_FILES: &str = r#"COMPREPLY=($(compgen -f "${cur}"))"#;
    const BASH_IFACES: &str = r#"local ifaces=(/sys/class/net/*); [[ -e ${ifaces[0]} ]] || ifaces=(); COMPREPLY=($(compgen -W "${ifaces[*]##*/}" -- "${cur}"))"#;
    let mut out = String::with_capacity(script.len() + 1024);
    let mut after_iface = false;
    for line in script.lines() {
        let t = line.trim();
        let mut line = line.to_string();
        match shell {
            // `--iface)` then the line that completes its value
            Shell::Bash => {
                if after_iface && t == BASH_FILES {
                    line = line.replace(BASH_FILES, BASH_IFACES);
                }
                after_iface = t
                    .strip_prefix("--")
                    .and_then(|l| l.strip_suffix(')'))
                    .is_some_and(|l| longs.contains(l));
            }
            // `'--iface=[help]:IFACE:_default'`
            Shell::Zsh => {
                line = line.replace(
                    &format!(":{IFACE}:_default'"),
                    &format!(":{IFACE}:{{compadd - /sys/class/net/*(N\\:t)}}'"),
                );
            }
            // `complete -c wirespeed -n "..." -l iface -d '...' -r`
            Shell::Fish => {
                let takes_iface = longs.iter().any(|l| line.contains(&format!(" -l {l} ")));
                if takes_iface && line.ends_with(" -r") {
                    line.push_str(" -f -a \"(string replace -r '^.*/' '' /sys/class/net/*)\"");
                }
            }
            _ => {}
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The examples of each command's page: `[page]`, then each example's command line and, on the
/// next line indented by four spaces, what it does (lines starting with `#` are comments).
const EXAMPLES: &str = include_str!("man-examples.txt");

/// The examples of the page `name` (`wirespeed-client`): (command line, what it does).
fn examples(name: &str) -> Vec<(&'static str, &'static str)> {
    let (mut here, mut line, mut out) = (false, None, Vec::new());
    for l in EXAMPLES
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        if let Some(page) = l.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
            here = page == name;
        } else if let Some(what) = l.strip_prefix("    ") {
            out.extend(line.take().filter(|_| here).map(|cmd| (cmd, what)));
        } else {
            line = Some(l);
        }
    }
    out
}

/// Print the top-level page, or write every command's page into `--dir`.
pub fn run_man(a: ManArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    // `help` is not a command worth a page (as clap_mangen's generate_to decides too).
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    match a.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| exit::fail(exit::IO, format!("man --dir {}: {e}", dir.display())))?;
            for (name, text) in all_pages(&cmd)? {
                let path = dir.join(name);
                std::fs::write(&path, text).map_err(|e| {
                    exit::fail(exit::IO, format!("man --dir: {}: {e}", path.display()))
                })?;
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut here = &cmd;
            for word in &a.command {
                here = here
                    .get_subcommands()
                    .find(|c| c.get_name() == word && !c.is_hide_set())
                    .ok_or_else(|| {
                        let names: Vec<&str> = here
                            .get_subcommands()
                            .filter(|c| !c.is_hide_set())
                            .map(|c| c.get_name())
                            .collect();
                        exit::fail(
                            exit::USAGE,
                            format!(
                                "man: no command '{}' (the commands: {})",
                                a.command.join(" "),
                                names.join(", ")
                            ),
                        )
                    })?;
            }
            write_stdout(&page(clap_mangen::Man::new(here.clone()))?)
        }
    }
}

/// Every command's page, by file name (`wirespeed-client.1`); `cmd` is built.
pub fn all_pages(cmd: &clap::Command) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut cmds = Vec::new();
    collect(cmd, &mut cmds);
    cmds.into_iter()
        .map(|c| {
            let man = clap_mangen::Man::new(c);
            Ok((man.get_filename(), page(man)?))
        })
        .collect()
}

/// The command and every visible subcommand, depth first.
fn collect(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
    for c in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(c, out);
    }
    out.push(cmd.clone());
}

/// One page: clap_mangen's, its `code` spans in bold, then EXIT STATUS and EXAMPLES.
fn page(man: clap_mangen::Man) -> anyhow::Result<Vec<u8>> {
    let name = man.get_filename();
    let name = name.trim_end_matches(".1");
    let mut buf = Vec::new();
    man.render(&mut buf)
        .map_err(|e| exit::fail(exit::INTERNAL, format!("man: {e}")))?;
    let mut text = bold_code_spans(&String::from_utf8_lossy(&buf));
    let mut extra = Roff::new();
    extra.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit::MEANINGS {
        extra
            .control("TP", [])
            .text([bold(code.to_string())])
            .text([roman(*meaning)]);
    }
    extra.control("PP", []).text([roman(exit::JSON_EXIT)]);
    let examples = examples(name);
    if !examples.is_empty() {
        extra.control("SH", ["EXAMPLES"]);
        for (line, what) in examples {
            extra
                .control("TP", [])
                .text([bold(line)])
                .text([roman(what)]);
        }
    }
    // before VERSION, where man pages keep them
    let at = text.find(".SH VERSION").unwrap_or(text.len());
    text.insert_str(at, &extra.to_roff());
    Ok(text.into_bytes())
}

/// `` `x` `` in rendered roff → `\fBx\fR`, line by line (a lone backtick stays).
fn bold_code_spans(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    for line in roff.split_inclusive('\n') {
        let parts: Vec<&str> = line.split('`').collect();
        if parts.len() < 3 {
            out.push_str(line);
            continue;
        }
        let pairs = (parts.len() - 1) / 2 * 2;
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                if i <= pairs {
                    out.push_str(if i % 2 == 1 { "\\fB" } else { "\\fR" });
                } else {
                    out.push('`');
                }
            }
            out.push_str(p);
        }
    }
    out
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(buf: &[u8]) -> anyhow::Result<ExitCode> {
    crate::diagnose::emit(buf).map(|()| ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_turn_bold() {
        assert_eq!(
            bold_code_spans("iperf3 \\-s: `wirespeed \\-s` and `x`\nlone ` tick\n"),
            "iperf3 \\-s: \\fBwirespeed \\-s\\fR and \\fBx\\fR\nlone ` tick\n"
        );
    }
    /// Every command line in the examples' file is followed by what it does, and every
    /// description by a command line's.
    #[test]
    fn every_example_says_what_it_does() {
        let lines: Vec<&str> = EXAMPLES
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        let is_what = |l: &str| l.starts_with("    ");
        let is_page = |l: &str| l.starts_with('[');
        for (i, l) in lines.iter().enumerate() {
            let next = lines.get(i + 1).copied().unwrap_or("");
            let before = if i == 0 { "" } else { lines[i - 1] };
            if is_what(l) {
                assert!(
                    !is_what(before) && !is_page(before),
                    "no command before {l:?}"
                );
            } else if !is_page(l) {
                assert!(is_what(next), "{l:?} says nothing of what it does");
            }
        }
        let pairs = examples("wirespeed-explain");
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        assert_eq!(
            pairs[1],
            (
                "wirespeed explain --table",
                "the precedence table the verdict is decided by"
            )
        );
        assert!(examples("wirespeed-nothing").is_empty());
    }
}
