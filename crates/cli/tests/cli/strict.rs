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
