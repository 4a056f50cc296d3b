//! What a user meets before any test: `client --help` and `server --help` (and the iperf3
//! drop-in forms `-c HOST --help`, `-s --help`) grouped under headings, the shell completions
//! offering network interfaces for `--iface` (in a real bash, fish and zsh), and one `--csv`
//! convention for client, sweep and latency (`--csv FILE`; `-` or no FILE: stdout, which then
//! holds only the CSV).

use crate::measure_common;
use crate::need;

use std::process::{Command, Output};

use measure_common::{assert_success, online_cpus, start_server, ws};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The help's sections: (heading, the options listed under it).
fn sections(help: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            out.push((line.trim_end_matches(':').to_string(), Vec::new()));
        } else if let Some((_, opts)) = out.last_mut() {
            let t = line.trim_start();
            // an option's first line: `-t, --time <TIME>` or `--bidir`
            if t.starts_with('-') && line.len() - t.len() <= 6 {
                opts.push(t.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    }
    out
}

fn check_grouped(args: &[&str], headings: &[&str]) {
    let out = ws(args);
    assert_success(&out, &args.join(" "));
    let help = text(&out.stdout);
    let secs = sections(&help);
    let names: Vec<&str> = secs.iter().map(|(h, _)| h.as_str()).collect();
    for h in headings {
        assert!(
            names.contains(h),
            "{args:?}: no heading {h:?} in {names:?}\n{help}"
        );
    }
    for (h, opts) in &secs {
        if h == "Usage" || h == "Arguments" {
            continue;
        }
        assert!(
            !opts.is_empty(),
            "{args:?}: heading {h:?} has no option\n{help}"
        );
        if h == "Options" {
            // only help and version stay ungrouped
            assert!(
                opts.iter().all(|o| o == "-v," || o == "-h,"),
                "{args:?}: ungrouped options {opts:?}\n{help}"
            );
        }
    }
}

#[test]
fn client_and_server_help_group_their_options() {
    let client = [
        "Connection",
        "Test (iperf3 flags)",
        "Placement",
        "Observation",
        "Output",
        "Security",
    ];
    check_grouped(&["client", "--help"], &client);
    // the iperf3 drop-in form is the same command
    check_grouped(&["-c", "127.0.0.1", "--help"], &client);
    let server = [
        "Connection",
        "Placement",
        "Limits",
        "Security",
        "Tuning",
        "Output",
    ];
    check_grouped(&["server", "--help"], &server);
    check_grouped(&["-s", "--help"], &server);
}

/// The completion script for `shell`, written to a temporary directory (as `file`).
fn script(shell: &str, file: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let out = ws(&["completions", shell]);
    assert_success(&out, "completions");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::write(&path, &out.stdout).unwrap();
    (dir, path)
}

fn run(c: &mut Command) -> Output {
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{c:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

#[test]
fn bash_completes_interfaces_for_iface() {
    let (_dir, path) = script("bash", "wirespeed.bash");
    // bash's own completion machinery: the words typed so far, then the function clap wrote
    let probe = r#"source "$1"
complete_for() {
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _wirespeed wirespeed "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\n' "${COMPREPLY[@]}"
}
echo '== doctor'; complete_for wirespeed doctor --iface ''
echo '== client'; complete_for wirespeed client --bind-dev l
echo '== doctor-l'; complete_for wirespeed doctor --iface l
"#;
    // starts: bash
    let o = run(Command::new("bash").args(["-c", probe, "probe"]).arg(&path));
    let out = text(&o.stdout);
    let block = |name: &str| -> Vec<String> {
        out.split(&format!("== {name}\n"))
            .nth(1)
            .unwrap_or("")
            .split("==")
            .next()
            .unwrap_or("")
            .lines()
            .map(str::to_string)
            .collect()
    };
    assert!(block("doctor").contains(&"lo".to_string()), "{out}");
    assert!(block("client").contains(&"lo".to_string()), "{out}");
    // only names starting with what was typed, and no file of the current directory
    assert!(
        block("doctor-l").iter().all(|w| w.starts_with('l')),
        "{out}"
    );
    assert!(!block("doctor").iter().any(|w| w == "Cargo.toml"), "{out}");
}

#[test]
fn fish_completes_interfaces_for_iface() {
    if !need::tool(
        "fish_completes_interfaces_for_iface",
        "fish",
        "--version",
        "fish",
    ) {
        return;
    }
    let (_dir, path) = script("fish", "wirespeed.fish");
    // starts: fish
    let o = run(Command::new("fish")
        .arg("--no-config")
        .arg("-c")
        .arg("source $argv[1]; complete -C 'wirespeed doctor --iface '")
        .arg(&path));
    let words: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    assert!(words.contains(&"lo".to_string()), "{words:?}");
    assert!(!words.iter().any(|w| w == "Cargo.toml"), "{words:?}");
}

#[test]
fn zsh_completes_interfaces_for_iface() {
    if !need::tool(
        "zsh_completes_interfaces_for_iface",
        "zsh",
        "--version",
        "zsh",
    ) {
        return;
    }
    let (dir, _path) = script("zsh", "_wirespeed");
    // an interactive zsh on a pseudo-terminal (zsh's own zpty), Tab after `--iface `: the
    // listing it draws
    let probe = r#"zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; PS1='> '; setopt nobeep"
zpty -n -w z $'wirespeed doctor --iface \t\t'
local all='' chunk rest
for i in {1..100}; do
  while zpty -r -t z chunk; do all+=$chunk; done
  rest=${all#*doctor --iface }
  [[ $all == *'doctor --iface '* && ( $rest == lo[^a-z]* || $rest == *[^a-z]lo[^a-z]* ) ]] && break
  sleep 0.1
done
print -r -- "$all"
zpty -d z
"#;
    // starts: zsh
    let o = run(Command::new("zsh")
        .args(["-f", "-c", probe, "probe"])
        .arg(dir.path()));
    let out = text(&o.stdout);
    let after = out.split_once("doctor --iface").map_or("", |(_, a)| a);
    assert!(
        after
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "lo"),
        "{out}"
    );
}

/// The CSV lines of `out`'s stdout, after checking it is CSV with `header` first.
fn csv_stdout(out: &Output, header: &str) -> Vec<String> {
    let s = text(&out.stdout);
    assert!(s.starts_with(header), "stdout is not the CSV: {s}");
    s.lines().map(str::to_string).collect()
}

#[test]
fn client_csv_to_a_file_or_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    let f = file.to_str().unwrap();
    let out = ws(&["client", "--loopback", "-t", "1", "--csv", f]);
    assert_success(&out, "client --csv FILE");
    let csv = std::fs::read_to_string(&file).unwrap();
    assert!(csv.lines().count() > 1, "{csv}");
    assert!(
        text(&out.stdout).contains("receiver"),
        "the text stays on stdout"
    );

    // `-` and no FILE: stdout holds only the CSV, the text moves to stderr
    for args in [&["--csv", "-"][..], &["--csv"][..]] {
        let mut a = vec!["client", "--loopback", "-t", "1"];
        a.extend_from_slice(args);
        let out = ws(&a);
        assert_success(&out, &a.join(" "));
        let lines = csv_stdout(&out, csv.lines().next().unwrap());
        assert!(lines.len() > 1);
        assert!(
            text(&out.stderr).contains("receiver"),
            "{}",
            text(&out.stderr)
        );
    }

    // several hosts or ports are not one test: refused, not ignored
    let out = ws(&["client", "127.0.0.1", "-p", "1,2", "--csv", f]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--csv"), "{}", text(&out.stderr));

    // -J wants stdout too: one line, usage
    let out = ws(&["client", "--loopback", "-t", "1", "-J", "--csv", "-"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--csv -") && err.contains("-J"), "{err}");
}

#[test]
fn latency_csv_to_a_file_or_stdout() {
    if online_cpus() < 2 {
        eprintln!("SKIP: latency_csv_to_a_file_or_stdout because fewer than 2 CPUs are online");
        return;
    }
    let base = ["latency", "--cpus", "0-1", "--samples", "10"];
    let header = "cpu_a,cpu_b,";
    // what users typed before: `--csv` alone is stdout
    for extra in [&["--csv"][..], &["--csv", "-"][..]] {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        let out = ws(&a);
        assert_success(&out, &a.join(" "));
        assert_eq!(csv_stdout(&out, header).len(), 2);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("l.csv");
    let mut a = base.to_vec();
    a.extend(["--csv", file.to_str().unwrap()]);
    let out = ws(&a);
    assert_success(&out, "latency --csv FILE");
    let csv = std::fs::read_to_string(&file).unwrap();
    assert!(csv.starts_with(header) && csv.lines().count() == 2, "{csv}");
    assert!(text(&out.stdout).starts_with("one-way core-to-core latency"));

    let mut a = base.to_vec();
    a.extend(["-J", "--csv"]);
    let out = ws(&a);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn sweep_csv_to_a_file_or_stdout() {
    let (_srv, port) = start_server(&["-B", "127.0.0.1"]);
    let port = port.to_string();
    let base = [
        "sweep",
        "127.0.0.1",
        "-p",
        &port,
        "--cpus",
        "0",
        "--server-cpus",
        "0",
        "-t",
        "1",
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.csv");
    let mut a = base.to_vec();
    a.extend(["--csv", file.to_str().unwrap()]);
    let out = ws(&a);
    assert_success(&out, "sweep --csv FILE");
    let csv = std::fs::read_to_string(&file).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    let header = csv.lines().next().unwrap().to_string();

    let mut a = base.to_vec();
    a.extend(["--csv", "-"]);
    let out = ws(&a);
    assert_success(&out, "sweep --csv -");
    assert_eq!(csv_stdout(&out, &header).len(), 2);
    // the heatmap and the recommendation moved to stderr
    let err = text(&out.stderr);
    assert!(err.contains("median Gbit/s, rows: client CPU"), "{err}");
    assert!(err.contains("recommended: "), "{err}");

    let mut a = base.to_vec();
    a.extend(["-J", "--csv", "-"]);
    let out = ws(&a);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
