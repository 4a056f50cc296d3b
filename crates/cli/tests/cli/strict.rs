//! Strict iperf3 mode: invoked as `iperf3` (a symlink), wirespeed's `-J` documents have exactly
//! iperf3 3.20's key paths, from both ends, for TCP, `-P 4`, `-R`, `--bidir` and UDP; the
//! reference documents are recorded from iperf3 3.20 (tests/data/iperf3-3.20/). Values differ
//! between runs; key paths must not.
//!
//! One path depends on the kernel: `reorder` (TCP senders) comes from `tcpi_reord_seen`,
//! which kernels before 4.19 do not have; on such a kernel the reference's `reorder` paths of
//! the local sender are not expected.

use crate::measure_common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use measure_common::*;
use serde_json::Value;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/iperf3-3.20")
}

/// Every key path of a document, arrays collapsed (`end.streams[].sender.bytes`).
fn key_paths(v: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, at: &str, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let p = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    out.insert(p.clone());
                    walk(x, &p, out);
                }
            }
            Value::Array(a) => {
                for x in a {
                    walk(x, &format!("{at}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(v, "", &mut out);
    out
}

/// Whether this kernel's `tcp_info` has `tcpi_reord_seen` (4.19+).
fn kernel_has_reord_seen() -> bool {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut it = r
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (major, minor) >= (4, 19)
}

fn reference(name: &str) -> BTreeSet<String> {
    let path = data_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("recorded document is JSON");
    let mut paths = key_paths(&v);
    if !kernel_has_reord_seen() {
        paths.retain(|p| !p.ends_with(".reorder"));
    }
    paths
}

#[test]
fn invoked_as_iperf3_json_has_iperf3_3_20_key_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let iperf3 = dir.path().join("iperf3");
    std::os::unix::fs::symlink(wirespeed(), &iperf3).expect("symlink");
    let mut failures = Vec::new();
    for (name, args) in [
        ("tcp", &[][..]),
        ("parallel4", &["-P", "4"][..]),
        ("reverse", &["-R"][..]),
        ("bidir", &["--bidir"][..]),
        ("udp", &["-u", "-b", "100M"][..]),
    ] {
        let port = free_port();
        // starts: wirespeed (invoked as iperf3, through a link)
        let srv = spawn(Command::new(&iperf3).args(["-s", "-1", "-J", "-p", &port.to_string()]));
        wait_listening(port);
        let c = run(
            // starts: wirespeed (invoked as iperf3, through a link)
            Command::new(&iperf3)
                .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "2", "-J"])
                .args(args),
            HANG,
        );
        let s = srv.wait_output(HANG);
        assert_success(&c, &format!("{name}: client"));
        assert_success(&s, &format!("{name}: server"));
        for (end, out) in [("client", &c.stdout), ("server", &s.stdout)] {
            let doc = json_of(out, &format!("{name} {end}"));
            assert!(
                doc.get("wirespeed").is_none(),
                "{name} {end}: a wirespeed key"
            );
            let got = key_paths(&doc);
            let want = reference(&format!("{name}.{end}.json"));
            let missing: Vec<_> = want.difference(&got).collect();
            let extra: Vec<_> = got.difference(&want).collect();
            if !missing.is_empty() || !extra.is_empty() {
                failures.push(format!(
                    "{name} {end}: missing {missing:?}, not in iperf3's {extra:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn strict_text_ends_with_iperf_done_and_failures_exit_1() {
    let (_srv, port) = start_server(&[]);
    let o = run(
        &mut client_cmd(Side::Wirespeed, port, &["-t", "1", "--iperf3-strict"]),
        HANG,
    );
    assert_success(&o, "strict client");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.trim_end().ends_with("iperf Done."),
        "nothing after iperf Done.: {text}"
    );
    // iperf3's words and status for a failure.
    let o = run(
        &mut client_cmd(
            Side::Wirespeed,
            free_port(),
            &["-t", "1", "--iperf3-strict"],
        ),
        HANG,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("iperf3: error - "),
        "{}",
        text_of(&o)
    );
}

#[test]
fn wirespeed_json_side_file_holds_the_additions() {
    let (_srv, port) = start_server(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let side = dir.path().join("ws.json");
    let o = run(
        client_cmd(
            Side::Wirespeed,
            port,
            &["-t", "1", "-J", "--iperf3-strict", "--wirespeed-json"],
        )
        .arg(&side),
        HANG,
    );
    assert_success(&o, "strict client with a side file");
    let doc = json_of(&o.stdout, "strict client");
    assert!(doc.get("wirespeed").is_none());
    let s: Value = serde_json::from_slice(&std::fs::read(&side).expect("side file")).expect("JSON");
    assert!(s["wirespeed"]["workers"].is_array(), "{s}");
    assert_eq!(s["wirespeed"]["peer"]["is_wirespeed"], true);
}

/// wirespeed linked as `iperf3` in a temporary directory (dropped with it).
fn linked_as_iperf3() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("iperf3");
    std::os::unix::fs::symlink(wirespeed(), &link).expect("symlink");
    (dir, link)
}

/// Runs `program args`, to completion.
fn output_of(program: &Path, args: &[&str]) -> std::process::Output {
    // starts: wirespeed (invoked as iperf3, through a link) or Debian's iperf3
    run(Command::new(program).args(args), HANG)
}

/// `iperf3 -v`: iperf3's three lines, each of the real iperf3's shape (its release and cJSON,
/// uname's line, the features), wirespeed's version as the last feature, exit 0, nothing on
/// stderr — as Debian's iperf3 prints it (same line count, same patterns) when it is here.
#[test]
fn strict_version_is_iperf3s_shape_with_wirespeeds_version() {
    let (_dir, link) = linked_as_iperf3();
    let shape = |out: &std::process::Output, who: &str| {
        assert_eq!(out.status.code(), Some(0), "{who}: {}", text_of(out));
        assert!(out.stderr.is_empty(), "{who}: stderr {}", text_of(out));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{who}: {text}");
        // `iperf 3.N[+] (cJSON 1.7.N)`: what scripts parse
        let first = lines[0]
            .strip_prefix("iperf 3.")
            .and_then(|r| r.split_once(" (cJSON 1.7."))
            .filter(|(minor, rest)| {
                minor.trim_end_matches('+').parse::<u32>().is_ok() && rest.ends_with(')')
            });
        assert!(first.is_some(), "{who}: first line {:?}", lines[0]);
        let uname = |k: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{k}"))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        assert!(
            lines[1].starts_with(&format!(
                "Linux {} {} ",
                uname("hostname"),
                uname("osrelease")
            )),
            "{who}: system line {:?}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("Optional features available: CPU affinity setting, "),
            "{who}: {:?}",
            lines[2]
        );
        lines.iter().map(|l| l.to_string()).collect::<Vec<_>>()
    };
    for args in [&["-v"][..], &["--version"], &["-c", "127.0.0.1", "-v"]] {
        let ours = shape(
            &output_of(&link, args),
            &format!("wirespeed as iperf3 {args:?}"),
        );
        assert!(
            ours[2].ends_with(&format!(", wirespeed {}", env!("CARGO_PKG_VERSION"))),
            "{}",
            ours[2]
        );
    }
    // --iperf3-strict under wirespeed's own name answers the same
    let o = run(
        Command::new(wirespeed()).args(["--iperf3-strict", "-v"]),
        HANG,
    );
    shape(&o, "wirespeed --iperf3-strict -v");
    // and without strict mode, wirespeed's own line
    let o = ws(&["-v"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("wirespeed {}", env!("CARGO_PKG_VERSION"))
    );
    if have_iperf3("strict_version_is_iperf3s_shape_with_wirespeeds_version") {
        shape(
            &output_of(Path::new("iperf3"), &["-v"]),
            "Debian's iperf3 -v",
        );
    }
}

/// The structure of iperf3's `-h`: its two usage lines, its three headings in order, option
/// lines (`  -x, --long ...` or `  --long ...`) or their continuations under them, the `[KMG]`
/// note; on stdout, exit 0.
fn usage_structure(out: &std::process::Output, who: &str) -> Vec<String> {
    assert_eq!(out.status.code(), Some(0), "{who}: {}", text_of(out));
    assert!(out.stderr.is_empty(), "{who}: stderr {}", text_of(out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"Usage: iperf3 [-s|-c host] [options]"),
        "{who}"
    );
    assert_eq!(
        lines.get(1),
        Some(&"       iperf3 [-h|--help] [-v|--version]"),
        "{who}"
    );
    let headings: Vec<String> = lines
        .iter()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .map(|l| l.to_string())
        .collect();
    assert_eq!(
        headings,
        ["Server or Client:", "Server specific:", "Client specific:"],
        "{who}: {text}"
    );
    assert!(text.contains("\n[KMG] indicates options"), "{who}");
    // between the first heading and the blank line that ends the options: option lines
    let start = lines
        .iter()
        .position(|l| *l == "Server or Client:")
        .unwrap_or(0);
    let mut options = Vec::new();
    for l in lines[start..].iter().take_while(|l| !l.is_empty()) {
        if l.ends_with(':') && !l.starts_with(' ') {
            continue;
        }
        assert!(
            l.starts_with("  -") || l.starts_with("                  "),
            "{who}: not an option line: {l:?}"
        );
        // `--timestamps<=format>`, `--debug[=#]`, `--port,`: the name alone
        if let Some(long) = l.split_whitespace().find(|w| w.starts_with("--")) {
            let name: String = long[2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            options.push(format!("--{name}"));
        }
    }
    options
}

#[test]
fn strict_help_is_iperf3s_usage_shape() {
    let (_dir, link) = linked_as_iperf3();
    let ours = usage_structure(&output_of(&link, &["-h"]), "wirespeed as iperf3 -h");
    for must in [
        "--port",
        "--server",
        "--client",
        "--time",
        "--parallel",
        "--reverse",
        "--json",
    ] {
        assert!(ours.iter().any(|o| o == must), "{must} missing: {ours:?}");
    }
    usage_structure(&output_of(&link, &["--help"]), "wirespeed as iperf3 --help");
    if !have_iperf3("strict_help_is_iperf3s_usage_shape") {
        return;
    }
    let theirs = usage_structure(
        &output_of(Path::new("iperf3"), &["-h"]),
        "Debian's iperf3 -h",
    );
    // every long option Debian's iperf3 lists, wirespeed lists too — but SCTP's and -F, which
    // wirespeed refuses (docs/measure.md)
    let refused = ["--sctp", "--xbind", "--nstreams", "--file", "--daemon"];
    let missing: Vec<&String> = theirs
        .iter()
        .filter(|o| !ours.contains(o) && !refused.contains(&o.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "iperf3 lists, wirespeed does not: {missing:?}"
    );
}

/// A bad command line: exit 1, nothing on stdout, iperf3's error line and short usage on
/// stderr — the same lines as iperf3 3.17+ prints (Debian's 3.12 follows its line with the
/// whole usage; the first line and the status are the same).
#[test]
fn strict_bad_command_lines_exit_1_in_iperf3s_shape() {
    let (_dir, link) = linked_as_iperf3();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--frobnicate"],
            "iperf3: unrecognized option '--frobnicate'",
        ),
        (
            &["-c", "127.0.0.1", "--frobnicate"],
            "iperf3: unrecognized option '--frobnicate'",
        ),
        (
            &[],
            "iperf3: parameter error - must either be a client (-c) or server (-s)",
        ),
    ];
    for (args, first) in cases {
        let o = output_of(&link, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text_of(&o));
        assert!(o.stdout.is_empty(), "{args:?}: stdout {}", text_of(&o));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines,
            [
                *first,
                "",
                "Usage: iperf3 [-s|-c host] [options]",
                "Try `iperf3 --help' for more information."
            ],
            "{args:?}"
        );
        if have_iperf3("strict_bad_command_lines_exit_1_in_iperf3s_shape") {
            let theirs = output_of(Path::new("iperf3"), args);
            assert_eq!(theirs.status.code(), Some(1), "Debian's iperf3 {args:?}");
            let their_err = String::from_utf8_lossy(&theirs.stderr).into_owned();
            assert_eq!(
                their_err.lines().next(),
                Some(*first),
                "Debian's iperf3 {args:?}"
            );
        }
    }
    // a bad value: exit 1, the flag named
    let o = output_of(&link, &["-c", "127.0.0.1", "-t", "-1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("iperf3: invalid value '-1' for -t/--time")
    );
    // without strict mode: wirespeed's own words and status 2
    let o = ws(&["-c", "127.0.0.1", "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2), "{}", text_of(&o));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("wirespeed: unrecognized option"));
}
