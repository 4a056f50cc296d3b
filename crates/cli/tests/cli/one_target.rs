//! One host target: the same `--rate`, `--rtt` and `--iface` strings give the same resolved
//! target in every command that takes them (`model`, `doctor`, `tune`, `lab up`, the client and
//! its cost projection), and each command says it in the same words and refuses CPUs the host
//! lacks in one sentence. Doctor and tune read a captured host (`--root`) or this one; `lab up
//! --dry-run` plans without root; the client runs a loopback test.

use std::process::Output;

use serde_json::Value;

use crate::host_common::{fixtures, put, run, temp_copy, text};

/// `--rate` spellings, the rate each means (bit/s) and the words every command echoes it in.
const RATES: &[(&str, u64, &str)] = &[
    ("40000", 40_000_000_000, "40 Gbit/s (--rate)"),
    ("40000M", 40_000_000_000, "40 Gbit/s (--rate)"),
    ("40G", 40_000_000_000, "40 Gbit/s (--rate)"),
    ("40gbit/s", 40_000_000_000, "40 Gbit/s (--rate)"),
    ("2.5G", 2_500_000_000, "2.5 Gbit/s (--rate)"),
    ("400", 400_000_000, "400 Mbit/s (--rate)"),
];

/// `--rtt` spellings, each with the rate table (cycled) so every pair is seen once.
const RTTS: &[&str] = &["10", "25", "0.5"];

const IFACE: &str = "enp1s0f0np0";

fn crow() -> String {
    fixtures().join("crow-9900x-cx5-x4").display().to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Each command's output for one `--rate` and `--rtt`: the words of the rate and the RTT.
#[test]
fn the_same_rate_and_rtt_strings_resolve_and_read_the_same_in_every_command() {
    let root = crow();
    for (i, (rate, bps, words)) in RATES.iter().enumerate() {
        let rtt = RTTS[i % RTTS.len()];
        let ctx = format!("--rate {rate} --rtt {rtt}");

        // model: the path's rate, and the same rate in its JSON
        let o = run(&["model", "--rate", rate, "--rtt", rtt]);
        assert!(o.status.success(), "model {ctx}: {}", text(&o));
        let want = format!("path: {words}, RTT {rtt} ms");
        assert!(stdout(&o).contains(&want), "model {ctx}: {}", text(&o));
        let o = run(&["model", "--rate", rate, "--rtt", rtt, "-J"]);
        let m: Value = serde_json::from_slice(&o.stdout).expect("model JSON");
        assert_eq!(m["rate_bps"].as_u64(), Some(*bps), "model {ctx}: {m}");
        assert_eq!(m["rtt_ms"].as_f64(), rtt.parse::<f64>().ok(), "{ctx}");

        // doctor: its header, and the same rate in its JSON options
        let d = [
            "doctor", "--root", &root, "--iface", IFACE, "--rate", rate, "--rtt", rtt,
        ];
        let o = run(&d);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "doctor {ctx}: {}",
            text(&o)
        );
        let want = format!("RTT: {rtt} ms   rate: {words}");
        assert!(stdout(&o).contains(&want), "doctor {ctx}: {}", text(&o));
        let o = run(&[&d[..], &["--json"]].concat());
        let j: Value = serde_json::from_slice(&o.stdout).expect("doctor JSON");
        assert_eq!(
            j["options"]["rate_mbps"].as_u64(),
            Some(bps / 1_000_000),
            "{ctx}"
        );
        assert_eq!(
            j["options"]["rtt_ms"].as_f64(),
            rtt.parse::<f64>().ok(),
            "{ctx}"
        );

        // tune: the plan's context
        let o = run(&[
            "tune", "--root", &root, "--iface", IFACE, "--rate", rate, "--rtt", rtt,
        ]);
        assert!(o.status.success(), "tune {ctx}: {}", text(&o));
        let want = format!("socket buffers sized for RTT {rtt} ms and {words}");
        assert!(stdout(&o).contains(&want), "tune {ctx}: {}", text(&o));

        // lab: what `lab up` would build, and the tbf it would set
        let o = run(&["lab", "up", "--name", "wsot", "--rate", rate, "--dry-run"]);
        assert!(o.status.success(), "lab {ctx}: {}", text(&o));
        let out = stdout(&o);
        assert!(
            out.contains(&format!("rate: {words} each direction")),
            "lab {ctx}: {out}"
        );
        assert!(
            out.contains(&format!("tbf rate {bps}bit ")),
            "lab {ctx}: {out}"
        );
    }
}

/// The client's cost projection: the same spelling, the same rate in the JSON and the same
/// words on the `Cost:` line (a loopback test per spelling of 40 Gbit/s, one second each).
#[test]
fn the_client_projects_for_the_rate_every_command_understands() {
    for rate in ["40000", "40G"] {
        let o = run(&["client", "--loopback", "-t", "1", "--rate", rate, "-J"]);
        assert!(o.status.success(), "client --rate {rate}: {}", text(&o));
        let j: Value = serde_json::from_slice(&o.stdout).expect("client JSON");
        let p = &j["wirespeed"]["cost"]["projection"];
        assert_eq!(p["rate_bps"].as_f64(), Some(40e9), "--rate {rate}: {p}");
        assert_eq!(p["rate_source"], "--rate", "{p}");
        let o = run(&["client", "--loopback", "-t", "1", "--rate", rate]);
        assert!(o.status.success(), "client --rate {rate}: {}", text(&o));
        let out = stdout(&o);
        let line = out
            .lines()
            .find(|l| l.starts_with("Cost: "))
            .unwrap_or_else(|| panic!("--rate {rate}: no Cost: line in\n{out}"));
        assert!(line.contains("| 40 Gbit/s (--rate) needs "), "{line}");
    }
}

/// A rate or RTT no command accepts is refused by each the same way: exit 2 and the same words.
#[test]
fn a_bad_rate_or_rtt_is_refused_by_every_command_in_the_same_words() {
    let root = crow();
    let rate_why = "expected a rate such as 50G, 2.5G, 400M or 40000 (a bare number is Mbit/s), from 1 Mbit/s to 10 Tbit/s";
    let rtt_why = "expected a round-trip time in milliseconds, above 0 and at most 10000";
    for (flag, value, why) in [
        ("--rate", "40x", rate_why),
        ("--rate", "0", rate_why),
        ("--rate", "11T", rate_why),
        ("--rtt", "0", rtt_why),
        ("--rtt", "10001", rtt_why),
    ] {
        let mut commands: Vec<Vec<&str>> = vec![
            vec!["doctor", "--root", &root],
            vec!["tune", "--root", &root],
            vec!["model", "--rate", "10G", "--rtt", "10"],
        ];
        if flag == "--rate" {
            commands.push(vec!["lab", "up", "--dry-run"]);
            commands.push(vec!["client", "--loopback", "-t", "1"]);
        }
        for mut args in commands {
            // a later --rate/--rtt replaces model's own: clap refuses a repeat, so drop it
            if let Some(i) = args.iter().position(|a| *a == flag) {
                args.drain(i..i + 2);
            }
            args.extend([flag, value]);
            let o = run(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
            let err = stderr(&o);
            assert!(err.contains(why), "{args:?}: {err}");
            assert!(err.contains(&format!("'{value}'")), "{args:?}: {err}");
        }
    }
}

/// Without `--iface`, doctor and tune choose the same NIC by the same rule, and say a tie the
/// name order broke in the same words; `--iface` chooses another in both.
#[test]
fn doctor_and_tune_choose_the_same_interface_and_say_a_tie_alike() {
    let (_t, dir) = temp_copy(&fixtures().join("crow-9900x-cx5-x4"));
    // the card's second port up at the same speed as the first
    put(&dir, "sys/class/net/enp1s0f1np1/operstate", "up\n");
    put(&dir, "sys/class/net/enp1s0f1np1/carrier", "1\n");
    put(&dir, "sys/class/net/enp1s0f1np1/speed", "100000\n");
    let root = dir.display().to_string();
    let words = "interface enp1s0f0np0: the fastest NIC that is up (100 Gbit/s); as fast: enp1s0f1np1, the first by name is taken (--iface chooses)";

    let o = run(&["doctor", "--root", &root]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    assert!(stdout(&o).contains(words), "doctor: {}", text(&o));
    let o = run(&["tune", "--root", &root]);
    assert!(o.status.success(), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.contains(words), "tune: {out}");
    assert!(out.contains("interface enp1s0f0np0 ("), "tune: {out}");

    // --iface chooses the other port: no rule, nothing to say
    let o = run(&["doctor", "--root", &root, "--iface", "enp1s0f1np1"]);
    assert!(
        stdout(&o).contains("interface: enp1s0f1np1"),
        "{}",
        text(&o)
    );
    assert!(!stdout(&o).contains("as fast:"), "{}", text(&o));
    let o = run(&["tune", "--root", &root, "--iface", "enp1s0f1np1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stdout(&o).contains("interface enp1s0f1np1 ("),
        "{}",
        text(&o)
    );
    assert!(!stdout(&o).contains("as fast:"), "{}", text(&o));

    // the fixture as captured: one fast NIC up, no tie to say
    let o = run(&["tune", "--root", &crow()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stdout(&o).contains("interface enp1s0f0np0 ("),
        "{}",
        text(&o)
    );
    assert!(!stdout(&o).contains("as fast:"), "{}", text(&o));
}

/// The `target:` line of a command's output, cut into its parts (`interface …`, `rate …`,
/// `RTT …`, CPUs).
fn target_parts(what: &str, o: &Output) -> Vec<String> {
    let out = stdout(o);
    let line = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("target: "))
        .unwrap_or_else(|| panic!("{what}: no target: line in\n{}", text(o)));
    line.split("; ").map(str::to_string).collect()
}

/// The one resolved target: `doctor`, `tune`, `model` and `lab up --dry-run` print the same
/// `target:` words for the same `--rate`, `--rtt`, `--iface` and CPU strings — each the parts it
/// takes, in one order — and refuse CPUs the host lacks in one sentence with one exit code.
#[test]
fn doctor_tune_model_and_lab_print_the_same_target_for_the_same_strings() {
    let root = crow();
    for (i, (rate, _, words)) in RATES.iter().enumerate() {
        let rtt = RTTS[i % RTTS.len()];
        let ctx = format!("--rate {rate} --rtt {rtt}");
        let iface = format!("interface {IFACE} (--iface)");
        let rate_w = format!("rate {words}");
        let rtt_w = format!("RTT {rtt} ms (--rtt)");
        let cpus_w = "--app-cpus 2-3 (NUMA node 0)".to_string();
        let host = [
            "--root",
            &root,
            "--iface",
            IFACE,
            "--rate",
            rate,
            "--rtt",
            rtt,
            "--app-cpus",
            "2-3",
        ];

        let o = run(&[&["doctor"][..], &host].concat());
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "doctor {ctx}: {}",
            text(&o)
        );
        let doctor = target_parts("doctor", &o);
        let o = run(&[&["tune"][..], &host].concat());
        assert!(o.status.success(), "tune {ctx}: {}", text(&o));
        let tune = target_parts("tune", &o);
        let o = run(&["model", "--rate", rate, "--rtt", rtt]);
        assert!(o.status.success(), "model {ctx}: {}", text(&o));
        let model = target_parts("model", &o);
        let o = run(&["lab", "up", "--name", "wsot", "--rate", rate, "--dry-run"]);
        assert!(o.status.success(), "lab {ctx}: {}", text(&o));
        let lab = target_parts("lab", &o);

        let all = vec![iface, rate_w.clone(), rtt_w.clone(), cpus_w];
        assert_eq!(doctor, all, "doctor {ctx}");
        assert_eq!(tune, all, "tune {ctx}");
        assert_eq!(model, vec![rate_w.clone(), rtt_w], "model {ctx}");
        assert_eq!(lab, vec![rate_w], "lab {ctx}");
    }

    // nothing given: the one NIC rule, its link speed and the default RTT, alike in both
    let want = [
        "interface enp1s0f0np0: the fastest NIC that is up (100 Gbit/s)",
        "rate 100 Gbit/s (link speed)",
        "RTT 10 ms (default)",
    ];
    for cmd in ["doctor", "tune"] {
        let o = run(&[cmd, "--root", &root]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{cmd}: {}",
            text(&o)
        );
        assert_eq!(target_parts(cmd, &o), want, "{cmd}");
    }

    // CPUs the host lacks: one sentence, the host's exit code, in both
    for cmd in ["doctor", "tune"] {
        let o = run(&[cmd, "--root", &root, "--app-cpus", "2,99"]);
        assert_eq!(o.status.code(), Some(6), "{cmd}: {}", text(&o));
        assert!(
            stderr(&o)
                .contains("--app-cpus 2,99: CPU 99 is not online on this host (online: 0-11)"),
            "{cmd}: {}",
            text(&o)
        );
    }
}

/// The CPU part of doctor's `target:` line on this host for `--app-cpus LIST`, said of `flag`
/// (`--cpus 0 (NUMA node 0)`): the live host's words, whatever its NUMA layout.
fn live_cpu_words(list: &str, flag: &str) -> String {
    let o = run(&["doctor", "--app-cpus", list]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let parts = target_parts("doctor", &o);
    let part = parts
        .iter()
        .find(|p| p.starts_with("--app-cpus "))
        .unwrap_or_else(|| panic!("no CPU part in {parts:?}"));
    part.replacen("--app-cpus", flag, 1)
}

/// The plain client (no `--repeat`) resolves the same target as every other command and says it
/// in the same words on its `target:` line: the interface its test takes (the route to its
/// server, or the device it binds to), the rate `--rate` gave and the CPUs `--cpus` or `-A`
/// named, each part as doctor, tune, model and lab say it. A loopback test of one second each.
#[test]
fn the_plain_client_prints_the_same_target_as_every_command() {
    for (rate, _, words) in [RATES[0], RATES[4]] {
        let o = run(&[
            "client",
            "--loopback",
            "-t",
            "1",
            "--rate",
            rate,
            "--cpus",
            "0",
        ]);
        assert!(o.status.success(), "client --rate {rate}: {}", text(&o));
        // model says the rate the same way
        let m = run(&["model", "--rate", rate, "--rtt", "10"]);
        let model_rate = target_parts("model", &m)[0].clone();
        assert_eq!(model_rate, format!("rate {words}"));
        assert_eq!(
            target_parts("client", &o),
            [
                "interface lo: the route to 127.0.0.1".to_string(),
                model_rate,
                live_cpu_words("0", "--cpus"),
            ],
            "client --rate {rate}"
        );
    }
    // the device it binds to, and -A's CPU
    let o = run(&[
        "client",
        "--loopback",
        "-t",
        "1",
        "--bind-dev",
        "lo",
        "-A",
        "0",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        target_parts("client", &o),
        [
            "interface lo (--bind-dev)".to_string(),
            live_cpu_words("0", "-A")
        ]
    );
    // no target line where the output is iperf3's or a document: strict mode, -J
    let o = run(&[
        "client",
        "--loopback",
        "-t",
        "1",
        "--iperf3-strict",
        "-A",
        "0",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!stdout(&o).contains("target:"), "{}", text(&o));
    let o = run(&["client", "--loopback", "-t", "1", "-J", "-A", "0"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).expect("client -J is one JSON document");
    assert!(j["end"].is_object(), "{j}");
}

/// CPUs this host lacks: the plain client refuses `--cpus` and `-A` in the sentence doctor (and
/// tune) refuse `--app-cpus` in, with the same exit code; in strict iperf3 mode the same sentence
/// in iperf3's shape, with iperf3's exit status; with `-J`, in the document's `error`.
#[test]
fn the_plain_client_refuses_cpus_the_host_lacks_as_doctor_does() {
    let list = "0,4095";
    let d = run(&["doctor", "--app-cpus", list]);
    assert_eq!(d.status.code(), Some(6), "{}", text(&d));
    let doctor = stderr(&d);
    assert!(
        doctor.contains("CPU 4095 is not online on this host (online: "),
        "{doctor}"
    );
    // port 1: nothing listens, but the CPUs are refused before any connection
    for (flag, value) in [("--cpus", list), ("-A", "4095")] {
        let want = doctor
            .trim_end()
            .replacen("--app-cpus", flag, 1)
            .replacen(list, value, 1);
        let o = run(&["client", "127.0.0.1", "-p", "1", "-t", "1", flag, value]);
        assert_eq!(o.status.code(), Some(6), "client {flag}: {}", text(&o));
        assert_eq!(stderr(&o).trim_end(), want, "client {flag}");
        let o = run(&[
            "-c",
            "127.0.0.1",
            "-p",
            "1",
            "-t",
            "1",
            "--iperf3-strict",
            flag,
            value,
        ]);
        assert_eq!(o.status.code(), Some(1), "strict {flag}: {}", text(&o));
        let sentence = want.trim_start_matches("wirespeed: ");
        assert_eq!(
            stderr(&o).trim_end(),
            format!("iperf3: error - {sentence}"),
            "strict {flag}"
        );
        assert!(!stdout(&o).contains("target:"), "{}", text(&o));
        let o = run(&[
            "client",
            "127.0.0.1",
            "-p",
            "1",
            "-t",
            "1",
            "-J",
            flag,
            value,
        ]);
        assert_eq!(o.status.code(), Some(1), "-J {flag}: {}", text(&o));
        let j: Value = serde_json::from_slice(&o.stdout).expect("-J: a document");
        assert_eq!(j["error"].as_str(), Some(sentence), "-J {flag}");
    }
}
