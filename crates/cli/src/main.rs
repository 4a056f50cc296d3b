//! `wirespeed`: measure, observe, explain, diagnose and tune high-speed network hosts.
//!
//! The binary is thin: argument parsing, wiring of the library crates, and exit codes. Each
//! subcommand family lives in its own module.

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

mod agent;
mod common;
mod diagnose;
mod exit;
mod explain;
mod generate;
mod iperf3;
mod lab;
mod measure;
mod model;
mod pictures;
mod top;
mod tune;
mod usage;

#[derive(Debug, Parser)]
#[command(
    name = "wirespeed",
    version,
    disable_version_flag = true,
    propagate_version = true,
    about = "Measure, observe, explain, diagnose and tune high-speed network hosts",
    long_about = "Measure, observe, explain, diagnose and tune high-speed network hosts.\n\n\
                  iperf3's own forms work too: `wirespeed -s` and `wirespeed -c HOST [iperf3 flags]`. \
                  As in iperf3, -v prints the version and -V is --verbose (client and server)."
)]
struct Cli {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version, global = true)]
    version: Option<bool>,
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
    /// A two-host lab on this machine: network namespaces, a path with MTU, rate, loss, delay.
    Lab(lab::LabArgs),
    /// What a path allows one TCP stream: BDP, buffers, slow start, the Mathis ceiling of loss.
    Model(model::ModelArgs),
    /// Print a shell completion script (e.g. `wirespeed completions bash > /etc/bash_completion.d/wirespeed`).
    Completions(generate::CompletionsArgs),
    /// Print the manual page (roff), or write one page per command with --dir.
    Man(generate::ManArgs),
    /// Test server plus an HTTP endpoint for Prometheus (/metrics, /probe).
    Agent(Box<agent::AgentArgs>),
    /// One self-contained HTML page (or CSV) of JSON results; several side by side.
    Report(pictures::ReportArgs),
    /// What changed between two JSON results; exit 9 past --threshold.
    Diff(pictures::DiffArgs),
    /// How a test's verdict was decided (--why FILE.json), or the precedence table (--table).
    Explain(pictures::ExplainArgs),
    /// Live view of the tests a running server serves (`server --stats-socket`).
    Top(top::TopArgs),
}

fn main() -> ExitCode {
    // Before any thread exists: the local offset for --timestamps.
    iperf3::init_local_offset();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let as_iperf3 = iperf3::invoked_as_iperf3(args.first().map(|a| a.as_os_str()));
    // Strict iperf3 mode answers -v and -h as iperf3 does, whatever else the line holds.
    let strict = iperf3::strict_requested(&args, as_iperf3);
    if strict && iperf3::has_flag(&args, &["-v", "--version"]) {
        print!("{}", iperf3::version_text());
        return ExitCode::from(exit::OK);
    }
    if strict && iperf3::has_flag(&args, &["-h", "--help"]) {
        print!("{}", iperf3::usage_text(&Cli::command()));
        return ExitCode::from(exit::OK);
    }
    let argv = iperf3::rewrite_iperf3_argv(args, |w| {
        Cli::command().get_subcommands().any(|c| c.get_name() == w)
    });
    let words: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let parsed = usage::parse_command(Cli::command())
        .try_get_matches_from(argv)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // A bad command line is one line naming the flag; help and version are clap's.
            return match usage::one_line(&e, &Cli::command(), &words) {
                Some(line) if strict => {
                    // iperf3's shape: its words, its short usage, its exit status.
                    eprint!(
                        "iperf3: {}\n{}",
                        iperf3::strict_error_line(&e, &line),
                        iperf3::SHORT_USAGE
                    );
                    ExitCode::from(exit::IPERF3_FAILURE)
                }
                Some(line) => {
                    eprintln!("wirespeed: {line}");
                    ExitCode::from(exit::USAGE)
                }
                None => {
                    let _ = e.print();
                    ExitCode::from(exit::OK)
                }
            };
        }
    };
    // How a failure is reported when the command ends: iperf3's ways for a client or server
    // writing JSON or in strict iperf3 mode, wirespeed's otherwise.
    let style = match &cli.command {
        Command::Client(a) => measure::failure_style(&a.out, Some(&a.csv), as_iperf3),
        Command::Server(a) => measure::failure_style(&a.out, None, as_iperf3),
        _ => exit::Style::Wirespeed,
    };
    let result = match cli.command {
        Command::Client(a) => measure::run_client(*a, as_iperf3),
        Command::Server(a) => measure::run_server(*a, as_iperf3),
        Command::Doctor(a) => diagnose::run_doctor(a),
        Command::Topo(a) => diagnose::run_topo(a),
        Command::Capture(a) => diagnose::run_capture(a),
        Command::Tune(a) => tune::run(a),
        Command::Sweep(a) => explain::run_sweep(*a),
        Command::Latency(a) => explain::run_latency(a),
        Command::Explain(a) => pictures::run_explain(a),
        Command::Lab(a) => lab::run(a),
        Command::Model(a) => model::run(a),
        Command::Completions(a) => generate::run_completions(a, Cli::command()),
        Command::Man(a) => generate::run_man(a, Cli::command()),
        Command::Agent(a) => agent::run(*a),
        Command::Report(a) => pictures::run_report(a),
        Command::Diff(a) => pictures::run_diff(a),
        Command::Top(a) => top::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => match style {
            exit::Style::Wirespeed => {
                eprintln!("wirespeed: {}", exit::one_line(&e));
                ExitCode::from(exit::code_of(&e))
            }
            exit::Style::Iperf3Text => {
                let msg = exit::one_line(&e);
                if msg.starts_with("interrupt - ") {
                    eprintln!("iperf3: {msg}");
                } else {
                    eprintln!("iperf3: error - {msg}");
                }
                ExitCode::from(exit::IPERF3_FAILURE)
            }
            exit::Style::Iperf3Json => {
                if !exit::was_reported(&e) {
                    // Failed before the report's own document: iperf3's shape for it.
                    let doc = serde_json::json!({
                        "start": {"connected": []},
                        "intervals": [],
                        "end": {},
                        "error": exit::one_line(&e),
                    });
                    if let Ok(s) = serde_json::to_string_pretty(&doc) {
                        println!("{s}");
                    }
                }
                ExitCode::from(exit::IPERF3_FAILURE)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every command in the tree, with its path (`wirespeed tune revert`).
    fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            walk(sub, format!("{path} {}", sub.get_name()), out);
        }
    }

    fn commands() -> Vec<(String, clap::Command)> {
        let mut cmd = Cli::command();
        cmd.build();
        let mut all = Vec::new();
        walk(&cmd, "wirespeed".into(), &mut all);
        all
    }

    #[test]
    fn every_argument_is_described() {
        let mut missing = Vec::new();
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path}: {}", arg.get_id()));
                }
            }
            if path != "wirespeed" && cmd.get_about().is_none() {
                missing.push(format!("{path} (the command itself)"));
            }
        }
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }

    #[test]
    fn a_short_flag_means_one_thing_everywhere() {
        // short -> (long name, where)
        let mut seen: BTreeMap<char, Vec<(String, String)>> = BTreeMap::new();
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                if let Some(s) = arg.get_short() {
                    let long = arg.get_long().unwrap_or("(no long name)").to_string();
                    seen.entry(s).or_default().push((long, path.clone()));
                }
            }
        }
        let clashes: Vec<String> = seen
            .iter()
            .filter(|(_, uses)| uses.iter().any(|(l, _)| *l != uses[0].0))
            .map(|(s, uses)| format!("-{s}: {uses:?}"))
            .collect();
        assert!(
            clashes.is_empty(),
            "short flags with two meanings: {clashes:#?}"
        );
    }

    #[test]
    fn client_and_server_options_each_sit_under_a_heading() {
        for (path, cmd) in commands() {
            if path != "wirespeed client" && path != "wirespeed server" {
                continue;
            }
            let loose: Vec<String> = cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set() && !a.is_positional())
                .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
                .filter(|a| a.get_help_heading().is_none())
                .map(|a| a.get_id().to_string())
                .collect();
            assert!(
                loose.is_empty(),
                "{path}: options without a heading: {loose:?}"
            );
        }
    }

    #[test]
    fn an_interface_option_name_means_an_interface_everywhere() {
        // the completions patch by long name (`--iface)` in bash): no other option may share it
        let ifaces = generate::iface_options(&Cli::command());
        assert!(
            ifaces.contains("iface") && ifaces.contains("bind-dev"),
            "{ifaces:?}"
        );
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                if arg.get_long().is_some_and(|l| ifaces.contains(l)) {
                    let names = arg.get_value_names().unwrap_or_default();
                    assert!(
                        names.iter().any(|n| n == generate::IFACE),
                        "{path} --{}: not an interface",
                        arg.get_long().unwrap_or_default()
                    );
                }
            }
        }
    }

    #[test]
    fn every_page_has_exit_status_and_examples() {
        let mut cmd = Cli::command().disable_help_subcommand(true);
        cmd.build();
        let pages = generate::all_pages(&cmd).expect("pages");
        assert!(pages.len() > 15, "{}", pages.len());
        let mut missing = Vec::new();
        for (name, text) in &pages {
            let text = String::from_utf8_lossy(text);
            for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES"] {
                if !text.contains(section) {
                    missing.push(format!("{name}: {section}"));
                }
            }
        }
        assert!(missing.is_empty(), "{missing:#?}");
        // and every page the examples name is one
        for l in include_str!("man-examples.txt").lines() {
            if let Some(page) = l.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
                let file = format!("{page}.1");
                assert!(pages.iter().any(|(n, _)| *n == file), "no page {page}");
            }
        }
    }

    #[test]
    fn the_version_note_is_said_once() {
        // -v/-V explained at the top, not repeated under every command's -v
        let mut cmd = Cli::command();
        cmd.build();
        let top = cmd.render_long_help().to_string();
        assert_eq!(top.matches("-V is --verbose").count(), 1, "{top}");
        for (path, mut c) in commands() {
            if path == "wirespeed" {
                continue;
            }
            let help = c.render_long_help().to_string();
            assert!(!help.contains("-V is --verbose"), "{path}: {help}");
        }
    }

    #[test]
    fn json_output_is_dash_j_everywhere() {
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                if arg.get_long() == Some("json") {
                    assert_eq!(arg.get_short(), Some('J'), "{path} --json has no -J");
                }
            }
        }
    }
}
