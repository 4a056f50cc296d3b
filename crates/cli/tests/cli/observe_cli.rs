//! Observation in every test, end to end on loopback: where the workers ran on both ends, the
//! verdict, `--repeat` grouping, and the absent remote end with an iperf3 peer — on the client's
//! output and on the server's (text, `-J`, `--json-stream`).

use crate::measure_common;

use std::process::Command;
use std::time::Duration;

use measure_common::{
    assert_success, free_port, have_iperf3, online_cpus, spawn, wait_listening, wirespeed,
};

fn json_of(args: &[&str]) -> serde_json::Value {
    let out = Command::new(wirespeed()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One of the verdict ids (the contract), as the JSON carries it.
fn a_verdict_id(id: &serde_json::Value) -> bool {
    id.as_str()
        .is_some_and(|s| s.parse::<wirespeed_verdict::VerdictId>().is_ok())
}

#[test]
fn pinned_workers_are_seen_on_both_ends() {
    if online_cpus() < 2 {
        eprintln!(
            "SKIP: pinned_workers_are_seen_on_both_ends because fewer than 2 CPUs are online"
        );
        return;
    }
    let j = json_of(&["client", "--loopback", "-t", "1", "-A", "0,1", "-J"]);
    let obs = &j["wirespeed"]["observation"];
    let local = &obs["local"];
    let remote = &obs["remote"];
    assert_eq!(local["role"], "sender");
    assert_eq!(remote["role"], "receiver");
    assert_eq!(local["iface"], "lo");
    assert_eq!(local["total"]["workers"][0]["cpus_seen"], "0");
    assert_eq!(remote["total"]["workers"][0]["cpus_seen"], "1");
    // The CPUs that did work include both workers' CPUs, with shares that add up.
    for end in [local, remote] {
        let cpus = end["total"]["cpus"].as_array().unwrap();
        for want in [0, 1] {
            let c = cpus
                .iter()
                .find(|c| c["cpu"] == want)
                .expect("worker CPU listed");
            let sum: f64 = ["user", "system", "irq", "softirq", "steal", "idle"]
                .iter()
                .map(|k| c[*k].as_f64().unwrap())
                .sum();
            assert!((99.0..=101.0).contains(&sum), "{c}");
        }
        assert!(!end["intervals"].as_array().unwrap().is_empty());
    }
    assert!(local["total"]["tcp"]["busy_us"].as_u64().unwrap() > 0);
    // the path's own RTT, which the smoothed RTT the report sampled never goes below
    let base = local["total"]["tcp"]["min_rtt_us"]
        .as_u64()
        .expect("min_rtt_us");
    let sampled = &local["total"]["tcp"]["rtt_us"];
    if let Some(least) = sampled[0].as_u64() {
        assert!(base > 0 && base <= least, "{base} over {sampled}");
    }
    let v = &j["wirespeed"]["verdict"];
    assert!(a_verdict_id(&v["id"]), "{v}");
    assert!(!v["line"].as_str().unwrap().is_empty());
}

/// Each end's observation holds its own worker threads and only those, in every interval and
/// in the totals: over `--loopback` both ends' workers run in one process, and a worker whose
/// streams ended (stopped, or at the peer's end of stream) must still count in the interval it
/// ended in. Each thread says which way its streams carried data: the end's role, and in
/// `--bidir` a worker per direction at each end (the verdict judges each direction on its own).
#[test]
fn each_end_observes_its_own_workers_to_the_last_interval() {
    for extra in [&[][..], &["-R"], &["--bidir"], &["-u", "-b", "0"]] {
        let mut args = vec!["client", "--loopback", "-t", "2", "-P", "2", "-J"];
        args.extend_from_slice(extra);
        let j = json_of(&args);
        let obs = &j["wirespeed"]["observation"];
        let tids = |iv: &serde_json::Value| -> Vec<u64> {
            let mut t: Vec<u64> = iv["threads"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t["tid"].as_u64()).collect())
                .unwrap_or_default();
            t.sort_unstable();
            t
        };
        let roles = |iv: &serde_json::Value| -> std::collections::BTreeSet<String> {
            iv["threads"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|t| t["role"].as_str().unwrap_or("none").to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut ends = Vec::new();
        for who in ["local", "remote"] {
            let e = &obs[who];
            let workers = e["total"]["workers"].as_array().unwrap().len();
            let own = tids(&e["total"]);
            assert_eq!(own.len(), workers, "{extra:?} {who}: totals: {e}");
            // each worker names its thread
            let mut named: Vec<u64> = e["total"]["workers"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|w| w["tid"].as_u64())
                .collect();
            named.sort_unstable();
            assert_eq!(named, own, "{extra:?} {who}: workers' threads: {e}");
            let want: std::collections::BTreeSet<String> = match e["role"].as_str() {
                Some("both") => ["receiver".to_string(), "sender".to_string()].into(),
                Some(r) => [r.to_string()].into(),
                None => panic!("{extra:?} {who}: no role: {e}"),
            };
            assert_eq!(roles(&e["total"]), want, "{extra:?} {who}: totals: {e}");
            let intervals = e["intervals"].as_array().unwrap();
            assert!(!intervals.is_empty(), "{extra:?} {who}");
            for (n, iv) in intervals.iter().enumerate() {
                assert_eq!(tids(iv), own, "{extra:?} {who}: interval {n}: {iv}");
                assert_eq!(roles(iv), want, "{extra:?} {who}: interval {n}: {iv}");
            }
            ends.push(own);
        }
        assert!(
            ends[0].iter().all(|t| !ends[1].contains(t)),
            "{extra:?}: one thread in both ends: {ends:?}"
        );
    }
}

#[test]
fn reverse_swaps_the_roles() {
    let j = json_of(&["client", "--loopback", "-t", "1", "-R", "-J"]);
    let obs = &j["wirespeed"]["observation"];
    assert_eq!(obs["local"]["role"], "receiver");
    assert_eq!(obs["remote"]["role"], "sender");
}

#[test]
fn text_output_shows_where_the_work_ran() {
    let out = Command::new(wirespeed())
        .args(["client", "--loopback", "-t", "1", "-A", "0", "--where"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    let at = t.find("Where the work ran:").expect(&t);
    let tail = &t[at..];
    assert!(
        tail.contains("\nsender ") && tail.contains(" via lo: CPUs that did work\n"),
        "{tail}"
    );
    assert!(tail.contains("\nreceiver "), "{tail}");
    assert!(tail.contains("worker 0"), "{tail}");
    assert!(tail.contains("\nVerdict: "), "{tail}");
}

#[test]
fn repeat_groups_the_runs() {
    let j = json_of(&["client", "--loopback", "-t", "1", "--repeat", "3", "-J"]);
    assert_eq!(j["runs"].as_array().unwrap().len(), 3);
    let a = &j["repeat"];
    assert_eq!(a["stats"]["runs"], 3);
    let modes = a["modes"].as_array().unwrap();
    assert!(!modes.is_empty());
    let grouped: usize = modes
        .iter()
        .map(|m| m["runs"].as_array().unwrap().len())
        .sum();
    assert_eq!(grouped, 3);
    for m in modes {
        // Every run was observed, so every mode has a placement signature.
        assert!(m["signature"].is_object(), "{m}");
        assert!(m["agreeing"].as_u64().unwrap() >= 1);
    }
    assert!(a["method"].as_str().unwrap().contains("10 % of the median"));

    let out = Command::new(wirespeed())
        .args(["client", "--loopback", "-t", "1", "--repeat", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("run 1/2: ") && t.contains("run 2/2: "), "{t}");
    assert!(t.contains("2 runs: min "), "{t}");

    let out = Command::new(wirespeed())
        .args(["client", "--loopback", "-t", "1", "--repeat", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_iperf3_server_leaves_the_remote_end_absent() {
    if !have_iperf3("an_iperf3_server_leaves_the_remote_end_absent") {
        return;
    }
    let port = free_port();
    let srv =
        spawn(Command::new("iperf3").args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()]));
    wait_listening(port);
    let out = Command::new(wirespeed())
        .args([
            "client",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-J",
        ])
        .output()
        .unwrap();
    drop(srv);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let obs = &j["wirespeed"]["observation"];
    assert_eq!(obs["local"]["role"], "sender");
    assert!(obs["remote"].is_null());
    assert!(
        obs["remote_absent"].as_str().unwrap().contains("iperf3"),
        "{obs}"
    );
    assert!(j["wirespeed"]["verdict"]["line"].is_string());
}

/// `wirespeed server -1` with `args` on a free port, and the `client` command's test against it
/// (its port appended); the server's output.
fn serve_one(args: &[&str], client: &mut Command) -> std::process::Output {
    let port = free_port();
    let p = port.to_string();
    let srv = spawn(
        Command::new(wirespeed())
            .args(["server", "-B", "127.0.0.1", "-p", &p, "-1"])
            .args(args),
    );
    wait_listening(port);
    let c = measure_common::run(client.args(["-p", &p]), Duration::from_secs(30));
    let s = srv.wait_output(Duration::from_secs(20));
    assert_success(&c, "client");
    assert_success(&s, "server");
    s
}

fn ws_client(extra: &[&str]) -> Command {
    let mut c = Command::new(wirespeed());
    c.args(["client", "127.0.0.1", "-t", "1"]).args(extra);
    c
}

#[test]
fn the_servers_text_shows_where_the_work_ran_on_both_ends() {
    if online_cpus() < 2 {
        eprintln!("SKIP: the_servers_text_shows_where_the_work_ran_on_both_ends because fewer than 2 CPUs are online");
        return;
    }
    let s = serve_one(&["--where"], &mut ws_client(&["-A", "0,1"]));
    let t = String::from_utf8(s.stdout).unwrap();
    let at = t.find("Where the work ran:").expect(&t);
    let tail = &t[at..];
    // This end (the receiver, its worker pinned to CPU 1) first, then the client's.
    let recv = tail.find("\nreceiver ").expect(tail);
    let send = tail.find("\nsender ").expect(tail);
    assert!(recv < send, "{tail}");
    let recv_table = &tail[recv..send];
    let worker_row = recv_table
        .lines()
        .find(|l| l.ends_with("worker 0"))
        .expect(recv_table);
    assert_eq!(
        worker_row.split_whitespace().next(),
        Some("1"),
        "{recv_table}"
    );
    let send_table = &tail[send..];
    let worker_row = send_table
        .lines()
        .find(|l| l.ends_with("worker 0"))
        .expect(send_table);
    assert_eq!(
        worker_row.split_whitespace().next(),
        Some("0"),
        "{send_table}"
    );
    assert!(tail.contains("\nVerdict: "), "{tail}");
    assert!(!tail.contains("not observed"), "{tail}");
}

#[test]
fn the_servers_json_carries_both_ends_and_its_verdict() {
    if online_cpus() < 2 {
        eprintln!("SKIP: the_servers_json_carries_both_ends_and_its_verdict because fewer than 2 CPUs are online");
        return;
    }
    let s = serve_one(&["-J"], &mut ws_client(&["-A", "0,1", "-R"]));
    let j = measure_common::json_of(&s.stdout, "server -J");
    let obs = &j["wirespeed"]["observation"];
    // -R: the server sends from CPU 1, the client receives on CPU 0.
    assert_eq!(obs["local"]["role"], "sender", "{obs}");
    assert_eq!(obs["local"]["total"]["workers"][0]["cpus_seen"], "1");
    assert_eq!(obs["remote"]["role"], "receiver");
    assert_eq!(obs["remote"]["total"]["workers"][0]["cpus_seen"], "0");
    assert!(obs["remote_absent"].is_null());
    let v = &j["wirespeed"]["verdict"];
    assert!(a_verdict_id(&v["id"]), "{v}");

    let s = serve_one(&["--json-stream"], &mut ws_client(&[]));
    let t = String::from_utf8(s.stdout).unwrap();
    let ev: serde_json::Value = t
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "wirespeed")
        .expect(&t);
    assert_eq!(
        ev["data"]["observation"]["local"]["role"], "receiver",
        "{ev}"
    );
    assert_eq!(
        ev["data"]["observation"]["remote"]["role"], "sender",
        "{ev}"
    );
    assert!(ev["data"]["verdict"]["line"].is_string(), "{ev}");
}

#[test]
fn an_iperf3_peer_is_said_to_be_unobserved_on_either_side() {
    if !measure_common::have_iperf3("an_iperf3_peer_is_said_to_be_unobserved_on_either_side") {
        return;
    }
    // iperf3 client -> wirespeed server: the server's own end, and why not the client's.
    let mut c = Command::new("iperf3");
    c.args(["-c", "127.0.0.1", "-t", "1"]);
    let s = serve_one(&["-J"], &mut c);
    let j = measure_common::json_of(&s.stdout, "server -J");
    let obs = &j["wirespeed"]["observation"];
    assert_eq!(obs["local"]["role"], "receiver", "{obs}");
    assert!(obs["remote"].is_null());
    assert!(
        obs["remote_absent"].as_str().unwrap().contains("iperf3"),
        "{obs}"
    );
    assert!(j["wirespeed"]["verdict"]["line"].is_string());
    let mut c = Command::new("iperf3");
    c.args(["-c", "127.0.0.1", "-t", "1", "-R"]);
    let s = serve_one(&[], &mut c);
    let t = String::from_utf8(s.stdout).unwrap();
    // One line for the end observed (the default, short form).
    assert!(t.contains("Where the work ran (this end, sender "), "{t}");
    assert!(
        t.contains("peer: not observed (the peer is not wirespeed (iperf3 sends no observation))"),
        "{t}"
    );

    // wirespeed client -> iperf3 server, text: the same words under the client's test.
    let port = free_port();
    let _srv =
        spawn(Command::new("iperf3").args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()]));
    wait_listening(port);
    let out = measure_common::run(
        ws_client(&["-p", &port.to_string()]).args(["-i", "0"]),
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("Where the work ran (this end, sender "), "{t}");
    assert!(
        t.contains("peer: not observed (the peer is not wirespeed"),
        "{t}"
    );
    assert!(t.contains("\nVerdict: "), "{t}");
}

/// `wirespeed.cost` on a live loopback test: both ends' cost is there, computed from the test's
/// own counters (bytes, the workers' CPU time, the frequency read) and consistent with its CPU
/// utilisation; the projection for `--rate` follows from it; the text output prints it.
#[test]
fn cost_per_bit_is_present_and_follows_from_the_tests_own_figures() {
    let j = json_of(&["client", "--loopback", "-t", "1", "--rate", "100G", "-J"]);
    let cost = &j["wirespeed"]["cost"];
    let end = &j["end"];
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    let util = &end["cpu_utilization_percent"];
    let seconds = f(&end["sum_sent"]["seconds"]);
    for (who, bytes_key, util_key) in [
        ("sender", "sum_sent", "host_total"),
        ("receiver", "sum_received", "remote_total"),
    ] {
        let c = &cost[who];
        assert_eq!(c["role"], who, "{cost}");
        assert_eq!(c["path"], "copy", "{cost}");
        let bytes = c["bytes"].as_u64().unwrap();
        assert_eq!(Some(bytes), end[bytes_key]["bytes"].as_u64(), "{who}");
        let threads = f(&c["thread_cpu_s"]);
        let softirq = f(&c["softirq_cpu_s"]);
        assert!(threads > 0.0 && softirq >= 0.0, "{c}");
        // the workers' time is part of what iperf3's CPU utilisation counts for that end
        // (workers and control thread over the test's wall time, which is at least its seconds)
        let whole = f(&util[util_key]) / 100.0 * seconds;
        assert!(
            threads <= whole * 1.5 + 0.05,
            "{who}: {threads} s of {whole} s: {c}"
        );
        let gbit = bytes as f64 * 8.0 / 1e9;
        let per_gbit = f(&c["cpu_s_per_gbit"]);
        assert!(((threads + softirq) / gbit - per_gbit).abs() < 1e-9 * per_gbit.max(1.0));
        assert!((f(&c["gbps_per_core"]) * per_gbit - 1.0).abs() < 1e-9);
        if let Some(mhz) = c["freq"]["mhz"].as_f64() {
            let cpb = (threads + softirq) * mhz * 1e6 / bytes as f64;
            assert!(
                (f(&c["cycles_per_byte"]) - cpb).abs() < 1e-9 * cpb.max(1.0),
                "{c}"
            );
        }
    }
    let p = &cost["projection"];
    assert_eq!(p["rate_source"], "--rate");
    assert_eq!(f(&p["rate_bps"]), 100e9);
    for (who, key) in [("sender", "sender_cores"), ("receiver", "receiver_cores")] {
        let need = (100.0 / f(&cost[who]["gbps_per_core"]) - 1e-9).ceil() as u64;
        assert_eq!(p[key].as_u64(), Some(need.max(1)), "{cost}");
    }
    assert!(!p["sender_cpus"].as_array().unwrap().is_empty(), "{p}");

    let out = Command::new(wirespeed())
        .args(["client", "--loopback", "-t", "1", "--rate", "100G"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    let line = t
        .lines()
        .find(|l| l.starts_with("Cost: sender "))
        .unwrap_or_else(|| panic!("no cost line in:\n{t}"));
    assert!(
        line.contains("CPU-s/Gbit") && line.contains("| receiver "),
        "{line}"
    );
    assert!(line.contains("100 Gbit/s (--rate) needs "), "{line}");
}

/// `-Z` between two ends of one host: the verdict and the cost's notes say it cost more than a
/// copy would (the kernel's doing, docs/measure.md).
#[test]
fn zero_copy_send_on_loopback_is_said() {
    let j = json_of(&["client", "--loopback", "-t", "1", "-Z", "-J"]);
    let w = &j["wirespeed"];
    if w["send_path"] != "sendfile" {
        // the kernel refused sendfile: the fallback is said instead, and nothing is zero-copy
        assert!(!w["path_fallbacks"].as_array().unwrap().is_empty(), "{w}");
        return;
    }
    let said = |v: &serde_json::Value| {
        v.as_array().unwrap().iter().any(|a| {
            // a verdict's `also` entries are objects with their line; the cost's notes lines
            a.get("line")
                .unwrap_or(a)
                .as_str()
                .unwrap()
                .starts_with("zero-copy send (sendfile) on one host")
        })
    };
    assert!(said(&w["verdict"]["also"]), "{}", w["verdict"]);
    assert!(said(&w["cost"]["notes"]), "{}", w["cost"]);
    let plain = json_of(&["client", "--loopback", "-t", "1", "-J"]);
    let also = &plain["wirespeed"]["verdict"]["also"];
    assert!(also.is_null() || !said(also), "{also}");
}

/// The line that says which paths and workers ran reads as a sentence: counts with their
/// plural, only the paths this end used, no JSON in text.
#[test]
fn the_paths_line_reads_as_words() {
    for (args, path) in [
        (&["-P", "2"][..], "local send path "),
        (&["-R"][..], "local receive path "),
    ] {
        // The paths line comes with the full tables (--where, or -V).
        let out = Command::new(wirespeed())
            .args(["client", "--loopback", "-t", "1", "--where"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("wirespeed: local "))
            .unwrap_or_else(|| panic!("{args:?}: no paths line: {text}"));
        assert!(line.contains(path), "{args:?}: {line}");
        // a worker run under SCHED_BATCH says so before where it ran, and one the pairing
        // rule pinned says so first
        assert!(
            [
                "(1 stream, ran on ",
                "(1 stream, batch, ran on ",
                "(paired, 1 stream, batch, ran on "
            ]
            .iter()
            .any(|w| line.contains(w)),
            "{args:?}: {line}"
        );
        for wrong in ["[", "path -", "1 streams", "fallbacks: ["] {
            assert!(!line.contains(wrong), "{args:?}: {wrong:?} in {line}");
        }
    }
}

/// `--bidir`: both ends send and receive, so neither is labelled "receiver" alone; the tables
/// and the verdict say which end is which.
#[test]
fn bidir_ends_are_told_apart() {
    let out = Command::new(wirespeed())
        .args(["client", "--loopback", "-t", "1", "--bidir", "--where"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("this end, sender+receiver ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("the peer, sender+receiver ")),
        "{text}"
    );
    let verdict = text
        .lines()
        .find(|l| l.starts_with("Verdict: "))
        .unwrap_or_else(|| panic!("no verdict: {text}"));
    assert!(
        verdict.matches("receiver on CPU").count() < 2,
        "both ends called receiver: {verdict}"
    );
}

/// By default the text is iperf3's lines, where the work ran in one line (both ends on one host:
/// one line for both), and the verdict; the per-CPU tables and the paths line come with
/// `--where` or `-V`.
#[test]
fn default_text_is_short_and_where_or_verbose_gives_the_tables() {
    let run = |extra: &[&str]| {
        let out = Command::new(wirespeed())
            .args(["client", "--loopback", "-t", "1"])
            .args(extra)
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{extra:?}: {t}");
        t
    };
    let t = run(&[]);
    let after = &t[t.find("iperf Done.").expect(&t)..];
    let where_lines: Vec<&str> = after
        .lines()
        .filter(|l| l.starts_with("Where the work ran"))
        .collect();
    assert_eq!(where_lines.len(), 1, "{t}");
    assert!(
        where_lines[0].starts_with("Where the work ran: both ends on "),
        "loopback is one host: {t}"
    );
    assert!(after.contains("\nVerdict: "), "{t}");
    for table in ["CPUs that did work", "   CPU   usr", "wirespeed: local "] {
        assert!(!t.contains(table), "{table:?} by default: {t}");
    }
    for flag in ["--where", "-V"] {
        let t = run(&[flag]);
        assert!(t.contains("CPUs that did work"), "{flag}: {t}");
        assert!(t.contains("wirespeed: local "), "{flag}: {t}");
    }
}
