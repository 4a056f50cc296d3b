//! Client options beyond interop: zero-copy paths (and that the output says which ran),
//! skip-rx-copy, omit, -k, --cport, CPU placement on both ends, --json-stream, --logfile and
//! the iperf3-style text output.

use crate::measure_common;

use std::process::{Command, Output};
use std::time::Duration;

use measure_common::*;
use serde_json::Value;

/// A one-off wirespeed server and one wirespeed client run against it.
fn pair(client_args: &[&str]) -> (Output, Output) {
    let what = format!("{client_args:?}");
    one_off(Side::Wirespeed, Side::Wirespeed, client_args, &what)
}

fn pair_json(args: &[&str]) -> (Value, Value) {
    let what = format!("{args:?}");
    one_off_json(Side::Wirespeed, Side::Wirespeed, args, &what)
}

#[test]
fn zero_copy_paths_run_and_are_reported() {
    for (flag, want) in [
        ("-Z", "sendfile"),
        ("--zerocopy=splice", "splice"),
        ("--zerocopy=msg_zerocopy", "msg_zerocopy"),
    ] {
        let (c, s) = pair_json(&["-t", "1", flag]);
        let x = &c["wirespeed"];
        let path = x["send_path"].as_str().unwrap_or("");
        let fell_back = x["path_fallbacks"]
            .as_array()
            .is_some_and(|a| !a.is_empty());
        assert!(
            path == want || (fell_back && path == "copy"),
            "{flag}: ran {path}, fallbacks {}",
            x["path_fallbacks"]
        );
        let t = totals(&c);
        assert_eq!(t[0], t[1], "{flag}: sent != received");
        assert_eq!(totals(&s)[1], t[1]);
        eprintln!("{flag}: send path {path}, {} bytes", t[0].unwrap_or(0));
    }
    // Reverse: the server sends with the path the client asked for.
    let (c, _) = pair_json(&["-t", "1", "-R", "--zerocopy=splice"]);
    let remote = c["wirespeed"]["remote_send_path"].as_str().unwrap_or("");
    assert!(
        remote == "splice" || remote == "copy",
        "remote send path {remote}"
    );
}

#[test]
fn skip_rx_copy_applies_to_the_receiver() {
    let (c, s) = pair_json(&["-t", "1", "--skip-rx-copy"]);
    assert_eq!(
        s["wirespeed"]["recv_path"], "skip_copy",
        "server receiver: {}",
        s["wirespeed"]
    );
    let t = totals(&c);
    assert_eq!(t[0], t[1]);
    let (c, _) = pair_json(&["-t", "1", "-R", "--skip-rx-copy"]);
    assert_eq!(
        c["wirespeed"]["recv_path"], "skip_copy",
        "client receiver: {}",
        c["wirespeed"]
    );
}

/// The zero-copy receive counts of an end's workers: (mapped, copied), summed; `None` when
/// no worker reports them.
fn rx_zerocopy(workers: &Value) -> Option<(u64, u64)> {
    let counts: Vec<(u64, u64)> = workers
        .as_array()?
        .iter()
        .filter_map(|w| {
            let z = w.get("rx_zerocopy")?;
            Some((z["mapped_bytes"].as_u64()?, z["copied_bytes"].as_u64()?))
        })
        .collect();
    (!counts.is_empty()).then(|| counts.iter().fold((0, 0), |a, &(m, c)| (a.0 + m, a.1 + c)))
}

/// --zerocopy-rx reaches whichever end receives: a wirespeed server (the client's wish travels
/// in the parameters) or the client itself with -R. Every received byte is counted as mapped or
/// copied, the counts travel to the other end, and the run either used the path or says why it
/// fell back. The sender uses MSG_ZEROCOPY: on loopback only its data arrives in pages the
/// kernel can map.
#[test]
fn zerocopy_rx_counts_mapped_and_copied_bytes_at_the_receiver() {
    let (c, s) = pair_json(&["-t", "1", "--zerocopy=msg_zerocopy", "--zerocopy-rx"]);
    let received = totals(&s)[1].expect("server received");
    assert_eq!(totals(&c)[0], totals(&c)[1], "sent != received");
    let (m, cp) = rx_zerocopy(&s["wirespeed"]["workers"]).expect("server's counts");
    assert_eq!(m + cp, received, "server: mapped + copied = received");
    assert_eq!(
        rx_zerocopy(&c["wirespeed"]["remote_workers"]),
        Some((m, cp)),
        "the client shows the server's counts"
    );
    let path = s["wirespeed"]["recv_path"].as_str().unwrap_or("");
    let fell_back = s["wirespeed"]["path_fallbacks"]
        .as_array()
        .is_some_and(|a| {
            a.iter()
                .any(|f| f.as_str().is_some_and(|f| f.starts_with("zerocopy: ")))
        });
    assert!(
        path == "zerocopy" || (path == "copy" && fell_back),
        "server ran {path}: {}",
        s["wirespeed"]
    );
    eprintln!("server receiver: {path}, {m} bytes mapped, {cp} copied");

    // -R: the client receives; the text output's path line shows the counts.
    let (c, _) = pair(&[
        "-t",
        "1",
        "-R",
        "--zerocopy=msg_zerocopy",
        "--zerocopy-rx",
        "-V",
    ]);
    let text = text_of(&c);
    let line = text
        .lines()
        .find(|l| l.starts_with("wirespeed: local receive path "))
        .unwrap_or_else(|| panic!("no receive path line in:\n{text}"));
    assert!(
        line.contains(" mapped, ") && line.contains(" copied)"),
        "{line}"
    );
    // once: in the receive-path text, not again in the local worker list
    assert_eq!(line.matches("mapped").count(), 1, "{line}");
    // A copying sender's pages never map on loopback: the receiver falls back and says so, and
    // still counts every byte.
    let (c, _) = pair_json(&["-t", "1", "-R", "--zerocopy-rx"]);
    let (m, cp) = rx_zerocopy(&c["wirespeed"]["workers"]).expect("client's counts");
    assert_eq!(
        Some(m + cp),
        totals(&c)[1],
        "client: mapped + copied = received"
    );
    if m == 0 {
        assert_eq!(c["wirespeed"]["recv_path"], "copy");
        assert!(
            c["wirespeed"]["path_fallbacks"]
                .to_string()
                .contains("zerocopy: "),
            "{}",
            c["wirespeed"]
        );
    }
}

#[test]
fn omit_blocks_and_cport() {
    // -O 1 -t 1: the first interval is omitted and not counted.
    let (c, s) = pair_json(&["-t", "1", "-O", "1"]);
    let ivs = c["intervals"].as_array().expect("intervals");
    assert_eq!(ivs[0]["sum"]["omitted"], true);
    assert!(ivs.iter().any(|i| i["sum"]["omitted"] == false));
    let secs = c["end"]["sum_sent"]["seconds"].as_f64().unwrap_or(0.0);
    assert!(
        (0.9..1.6).contains(&secs),
        "measured {secs} s, the omitted second included?"
    );
    let counted: u64 = ivs
        .iter()
        .filter(|i| i["sum"]["omitted"] == false)
        .filter_map(|i| i["sum"]["bytes"].as_u64())
        .sum();
    assert_eq!(
        Some(counted),
        totals(&c)[0],
        "totals are the non-omitted intervals"
    );
    // Each end closes its omit period on its own clock (as iperf3), so the two counts differ by
    // what was in flight at that moment, which depends on the machine's load: compare each end
    // with its own intervals instead, and the receiver with everything ever sent.
    let non_omitted = |j: &Value| -> u64 {
        j["intervals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["sum"]["omitted"] == false)
            .filter_map(|i| i["sum"]["bytes"].as_u64())
            .sum()
    };
    let all_sent: u64 = ivs.iter().filter_map(|i| i["sum"]["bytes"].as_u64()).sum();
    let recv = totals(&s)[1].unwrap_or(0);
    assert_eq!(
        s["intervals"][0]["sum"]["omitted"], true,
        "the receiver omits too"
    );
    assert_eq!(
        recv,
        non_omitted(&s),
        "receiver totals are its non-omitted intervals"
    );
    assert!(
        recv > 0 && recv < all_sent,
        "after omit: received {recv} of {all_sent} sent in all"
    );
    assert_eq!(totals(&s)[1], totals(&c)[1]);

    // -k: exactly that many blocks.
    let (c, _) = pair_json(&["-k", "40", "-l", "64K"]);
    assert_eq!(totals(&c)[0], Some(40 * 65536));
    assert_eq!(totals(&c)[1], Some(40 * 65536));

    // --cport: data connections from fixed source ports.
    let base = ports_below_ephemeral(2);
    let (c, _) = pair_json(&["-t", "1", "-P", "2", "--cport", &base.to_string()]);
    let ports: Vec<u64> = c["start"]["connected"]
        .as_array()
        .expect("connected")
        .iter()
        .filter_map(|x| x["local_port"].as_u64())
        .collect();
    assert_eq!(ports, vec![u64::from(base), u64::from(base) + 1]);
}

#[test]
fn cpu_placement_on_both_ends() {
    let cpus = wirespeed_datapath::cpu::allowed_cpus().unwrap_or_default();
    if cpus.len() < 2 {
        eprintln!(
            "SKIP: cpu_placement_on_both_ends because only {} CPU is usable",
            cpus.len()
        );
        return;
    }
    let mut two = cpus.iter();
    let (a, b) = (two.next().unwrap_or(0), two.next().unwrap_or(0));
    let (c, _) = pair_json(&["-t", "1", "-A", &format!("{a},{b}")]);
    let w = &c["wirespeed"];
    assert_eq!(w["workers"][0]["cpu_requested"], a);
    assert_eq!(w["workers"][0]["cpus_seen"], serde_json::json!([a]));
    assert_eq!(w["remote_workers"][0]["cpu_requested"], b);
    assert_eq!(w["remote_workers"][0]["cpus_seen"], serde_json::json!([b]));

    let list = format!("{a},{b}");
    let (c, _) = pair_json(&[
        "-t",
        "1",
        "-P",
        "4",
        "--cpus",
        &list,
        "--server-cpus",
        &list,
    ]);
    let w = &c["wirespeed"];
    for key in ["workers", "remote_workers"] {
        let ws = w[key].as_array().expect("workers");
        assert_eq!(ws.len(), 2, "{key}: {ws:?}");
        for x in ws {
            assert_eq!(
                x["streams"].as_array().map(Vec::len),
                Some(2),
                "{key}: streams spread round-robin"
            );
            assert_eq!(
                x["cpus_seen"],
                serde_json::json!([x["cpu_requested"]]),
                "{key}: pinned"
            );
        }
    }
}

/// How each worker of both ends says it was woken in a client's `-J` (`absent` where one says
/// nothing).
fn wakes(c: &Value) -> Vec<String> {
    both_ends_workers(c)
        .iter()
        .map(|w| w["wake"].as_str().unwrap_or("absent").to_string())
        .collect()
}

/// Each worker of both ends in a client's `-J`: this end's, then the peer's.
fn both_ends_workers(c: &Value) -> Vec<Value> {
    ["workers", "remote_workers"]
        .iter()
        .flat_map(|k| c["wirespeed"][*k].as_array().cloned().unwrap_or_default())
        .collect()
}

/// Over loopback, unpinned workers of a stream each that outnumber half the CPUs run batch on
/// both ends and say so, in `-J` and in the text's worker line; one stream each way on two or
/// more CPUs, and pinned workers, keep their marks.
#[test]
fn workers_say_how_they_were_woken_on_both_ends() {
    let cpus = wirespeed_datapath::cpu::allowed_cpus().map_or(1, |v| v.len().max(1));
    // as many streams as CPUs: with the other end's on the same CPUs, they share them
    let n = cpus.min(128).to_string();
    let (c, _) = pair_json(&["-t", "1", "-P", &n]);
    let w = wakes(&c);
    assert!(
        !w.is_empty() && w.iter().all(|x| x == "batch"),
        "-P {n}: {w:?}"
    );
    // the worker line comes with the full tables (-V)
    let (c, _) = pair(&["-t", "1", "-P", &n, "-V"]);
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(text.contains("stream, batch, ran on"), "-P {n} -V:\n{text}");
    if cpus < 2 {
        eprintln!(
            "SKIP: the marked cases of workers_say_how_they_were_woken_on_both_ends need two CPUs"
        );
        return;
    }
    let (c, _) = pair_json(&["-t", "1"]);
    let w = wakes(&c);
    assert_eq!(w, vec!["mark", "mark"], "-P 1 on {cpus} CPUs");
    let all = wirespeed_datapath::cpu::allowed_cpus().unwrap_or_default();
    let mut two = all.iter();
    let (a, b) = (two.next().unwrap_or(0), two.next().unwrap_or(0));
    let (c, _) = pair_json(&["-t", "1", "-P", &n, "-A", &format!("{a},{b}")]);
    let w = wakes(&c);
    assert!(
        !w.is_empty() && w.iter().all(|x| x == "mark"),
        "pinned: {w:?}"
    );
}

/// Where each end pinned its worker of each stream (`None`: unpinned), by stream id, from a
/// client's `-J`: this end's and the peer's. A stream on no worker, or a pinned worker seen
/// off its CPU, fails.
fn stream_cpus(c: &Value) -> [std::collections::BTreeMap<u64, Option<u64>>; 2] {
    ["workers", "remote_workers"].map(|k| {
        let mut m = std::collections::BTreeMap::new();
        for w in c["wirespeed"][k].as_array().cloned().unwrap_or_default() {
            let cpu = w["cpu_requested"].as_u64();
            if let Some(cpu) = cpu {
                assert_eq!(w["cpus_seen"], serde_json::json!([cpu]), "{k}: {w}");
            }
            for id in w["streams"].as_array().cloned().unwrap_or_default() {
                m.insert(id.as_u64().expect("a stream id"), cpu);
            }
        }
        assert!(!m.is_empty(), "{k}: no streams in {}", c["wirespeed"]);
        m
    })
}

/// Over loopback, where a thread per stream crowds the CPUs, each stream's two ends run on one
/// CPU: the client pins its worker of stream k and the server (a process of its own: the
/// pairing crosses the protocol) pins its worker of the same stream to the same CPU, in either
/// direction and both, the streams spread over the CPUs. One stream each way keeps the ends
/// apart, and the user's placement of either end is kept as placed, the other end unpinned.
#[test]
fn each_streams_two_ends_share_a_cpu_over_loopback() {
    let me = "each_streams_two_ends_share_a_cpu_over_loopback";
    let cpus = wirespeed_datapath::cpu::allowed_cpus().unwrap_or_default();
    if cpus.len() < 2 {
        eprintln!("SKIP: {me} because only {} CPU is usable", cpus.len());
        return;
    }
    let n = cpus.len().min(128);
    let p = n.to_string();
    for extra in [&[][..], &["-R"], &["--bidir"]] {
        let mut args = vec!["-t", "1", "-P", &p];
        args.extend_from_slice(extra);
        let (c, _) = pair_json(&args);
        let [here, there] = stream_cpus(&c);
        let directions = if extra.contains(&"--bidir") { 2 } else { 1 };
        assert_eq!(here.len(), n * directions, "{extra:?}: {here:?}");
        assert_eq!(here, there, "{extra:?}: each stream's two ends on one CPU");
        let used: std::collections::BTreeSet<u64> = here
            .values()
            .map(|c| c.unwrap_or_else(|| panic!("{extra:?}: an unpinned stream in {here:?}")))
            .collect();
        assert_eq!(
            used.len(),
            n,
            "{extra:?}: the streams spread over the CPUs: {here:?}"
        );
        assert!(used.iter().all(|&c| cpus.contains(c as u32)));
        assert!(wakes(&c).iter().all(|w| w == "batch"), "{extra:?}");
        assert!(
            paired(&c).iter().all(|&p| p),
            "{extra:?}: each worker says it was paired"
        );
    }
    // the text's worker line says so too (-V)
    let (c, _) = pair(&["-t", "1", "-P", &p, "-V"]);
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(text.contains("(paired, 1 stream, batch, ran on"), "{text}");
    let unpinned = |c: &Value| {
        stream_cpus(c)
            .iter()
            .all(|m| m.values().all(Option::is_none))
    };
    for one in [&["-t", "1"][..], &["-t", "1", "--bidir"]] {
        let (c, _) = pair_json(one);
        assert!(unpinned(&c), "{one:?}: {}", c["wirespeed"]);
    }
    let first = cpus.iter().next().unwrap_or(0).to_string();
    for placed in ["--cpus", "--server-cpus"] {
        let (c, _) = pair_json(&["-t", "1", "-P", &p, placed, &first]);
        let [here, there] = stream_cpus(&c);
        let (user, other) = if placed == "--cpus" {
            (here, there)
        } else {
            (there, here)
        };
        assert!(
            user.values()
                .all(|c| c.map(|c| c.to_string()) == Some(first.clone())),
            "{placed}: {user:?}"
        );
        assert!(other.values().all(Option::is_none), "{placed}: {other:?}");
        assert!(
            paired(&c).iter().all(|&p| !p),
            "{placed}: the user's pinning, not a pairing"
        );
    }
}

/// Whether each worker of both ends says the pairing rule pinned it, from a client's `-J`.
fn paired(c: &Value) -> Vec<bool> {
    both_ends_workers(c)
        .iter()
        .map(|w| w["paired"].as_bool().unwrap_or(false))
        .collect()
}

/// The wake rule's place, end to end: across a veth pair between two namespaces the workers
/// keep their marks (batch measured worse there), and a test to the host's own address in one
/// namespace — which the kernel routes through `lo` — runs batch. Needs root and iproute2 (the
/// lab): `SKIP:` without, a failure under `CI`.
#[test]
fn a_veth_path_keeps_its_marks_and_the_hosts_own_address_runs_batch() {
    let me = "a_veth_path_keeps_its_marks_and_the_hosts_own_address_runs_batch";
    if let Err(e) = wirespeed_lab::check_can_run(false) {
        crate::need::unavailable(me, &format!("the lab cannot run: {e}"));
        return;
    }
    use wirespeed_lab::{Lab, Side as LabSide, Spec};
    let lab = Lab::up(Spec::new(wirespeed_lab::unique_name("wswk"))).expect("lab up");
    let cpus = wirespeed_datapath::cpu::allowed_cpus().map_or(1, |v| v.len().max(1));
    // as many streams as CPUs, unpinned: over loopback every worker of both ends runs batch
    let n = cpus.min(128).to_string();
    let bin = env!("CARGO_BIN_EXE_wirespeed");
    let run = |server_side: LabSide, to: std::net::Ipv4Addr| -> Value {
        let _server = crate::truth_table::start_server(lab.command(server_side, bin), 5431)
            .expect("the server in the lab's namespace listens");
        let o = lab
            .command(LabSide::Client, bin)
            .args(["client", &to.to_string(), "-p", "5431", "-t", "1", "-P", &n])
            .arg("-J")
            .output()
            .expect("run the client");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("-J")
    };
    let server = lab.addr(LabSide::Server).expect("the server's address");
    let c = run(LabSide::Server, server);
    let w = wakes(&c);
    assert!(
        !w.is_empty() && w.iter().all(|x| x == "mark"),
        "-P {n} across the veth pair: {w:?}"
    );
    // the pairing is loopback's: across the veth pair both ends run unpinned
    let [here, there] = stream_cpus(&c);
    assert!(
        here.values().chain(there.values()).all(Option::is_none),
        "across the veth pair: {here:?} {there:?}"
    );
    let own = lab.addr(LabSide::Client).expect("the client's address");
    let c = run(LabSide::Client, own);
    let w = wakes(&c);
    assert!(
        !w.is_empty() && w.iter().all(|x| x == "batch"),
        "-P {n} to the namespace's own address {own}: {w:?}"
    );
    let [here, there] = stream_cpus(&c);
    if cpus >= 2 {
        assert_eq!(here, there, "to its own address {own}: paired");
        assert!(here.values().all(Option::is_some), "{here:?}");
    }
}

#[test]
fn json_stream_logfile_and_text() {
    // --json-stream: one JSON object per line, start .. interval .. end.
    let (c, _) = pair(&["-t", "1", "--json-stream"]);
    let text = String::from_utf8_lossy(&c.stdout);
    let events: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            v["event"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert_eq!(events.first().map(String::as_str), Some("start"));
    assert!(events.iter().any(|e| e == "interval"));
    assert_eq!(events.last().map(String::as_str), Some("end"));

    // --logfile: the output goes to the file.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("out.json");
    let (c, _) = pair(&[
        "-t",
        "1",
        "-J",
        "--logfile",
        log.to_str().expect("utf-8 path"),
    ]);
    assert!(
        c.stdout.is_empty(),
        "stdout not empty: {}",
        String::from_utf8_lossy(&c.stdout)
    );
    let j: Value = serde_json::from_slice(&std::fs::read(&log).expect("logfile"))
        .expect("JSON in the logfile");
    assert!(totals(&j)[0].unwrap_or(0) > 0);

    // Text: what an iperf3 user expects to read.
    let (c, _) = pair(&["-t", "1", "-P", "2"]);
    let t = String::from_utf8_lossy(&c.stdout);
    for needle in [
        "Connecting to host 127.0.0.1",
        "[ ID] Interval",
        "Retr",
        "[SUM]",
        "sender",
        "receiver",
        "iperf Done.",
        "Where the work ran",
        "Verdict: ",
    ] {
        assert!(t.contains(needle), "text output lacks {needle:?}:\n{t}");
    }
    // The paths line comes with the full tables (-V, --where).
    assert!(!t.contains("send path"), "{t}");
    let (c, _) = pair(&["-t", "1", "-P", "2", "--where"]);
    let t = String::from_utf8_lossy(&c.stdout);
    assert!(
        t.contains("send path"),
        "text output with --where lacks the paths:\n{t}"
    );
}

#[test]
fn loopback_mode_runs_without_a_server() {
    let out = run(
        Command::new(wirespeed()).args(["client", "--loopback", "-t", "1", "-J"]),
        Duration::from_secs(30),
    );
    assert_success(&out, "client --loopback");
    let j = json_of(&out.stdout, "loopback");
    let t = totals(&j);
    assert!(t[0].unwrap_or(0) > 0);
    assert_eq!(t[0], t[1]);
    assert_eq!(j["wirespeed"]["peer"]["is_wirespeed"], true);
}

#[test]
fn several_ports_in_one_run_are_summed() {
    let (_s1, p1) = start_server(&["-i", "0"]);
    let (_s2, p2) = start_server(&["-i", "0"]);
    let out = run(
        &mut client_cmd(Side::Wirespeed, format!("{p1},{p2}"), &["-t", "1", "-J"]),
        Duration::from_secs(30),
    );
    assert_success(&out, "multi-target client");
    let j = json_of(&out.stdout, "multi-target client");
    assert_eq!(j["kind"], "targets", "the document says what it is");
    let targets = j["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2);
    let mut sent = 0;
    for t in targets {
        let r = &t["result"];
        let tt = totals(r);
        assert_eq!(tt[0], tt[1], "each target's totals agree");
        sent += tt[0].unwrap_or(0);
    }
    assert!(sent > 0);
    assert_eq!(j["sum"]["bytes_sent"].as_u64(), Some(sent));
    assert_eq!(j["sum"]["bytes_received"].as_u64(), Some(sent));
}

#[test]
fn json_has_iperf3_3_20_values_and_real_interval_times() {
    let (c, s) = pair_json(&["-t", "2", "-b", "200M", "-S", "16"]);
    let ts = &c["start"]["test_start"];
    assert_eq!(ts["target_bitrate"], 200_000_000, "{ts}");
    assert_eq!(ts["tos"], 16, "{ts}");
    assert_eq!(c["start"]["target_bitrate"], 200_000_000);
    assert_eq!(c["start"]["fq_rate"], 0);
    // Each end's algorithm: the client's own as sender, the server's from its results.
    for (who, j) in [("client", &c), ("server", &s)] {
        let r = j["end"]["receiver_tcp_congestion"].as_str().unwrap_or("");
        assert!(!r.is_empty(), "{who}: {}", j["end"]);
    }
    // Intervals end when they were measured: contiguous, and the last one ends where the
    // sender's summary does (the rate of the last interval covers its real length).
    let ivs = c["intervals"].as_array().expect("intervals");
    assert!(ivs.len() >= 2, "{ivs:?}");
    let mut prev = 0.0;
    for iv in ivs {
        let (a, b) = (
            iv["sum"]["start"].as_f64().unwrap(),
            iv["sum"]["end"].as_f64().unwrap(),
        );
        assert!((a - prev).abs() < 1e-9 && b > a, "{iv}");
        prev = b;
    }
    let sent_end = c["end"]["sum_sent"]["end"].as_f64().unwrap();
    assert!(
        (prev - sent_end).abs() < 1e-6,
        "last interval ends {prev}, sum_sent {sent_end}"
    );
}

#[test]
fn title_prefixes_text_lines_and_server_output_is_printed() {
    let (c, _s) = pair(&[
        "-t",
        "1",
        "-T",
        "lab 1",
        "--get-server-output",
        "--iperf3-strict",
    ]);
    let text = String::from_utf8_lossy(&c.stdout).into_owned();
    // The server of `pair` writes JSON: iperf3 prints its document.
    let (ours, rest) = text
        .split_once("Server JSON output:\n")
        .unwrap_or_else(|| panic!("no server output: {text}"));
    // Every line of the client's own output carries the title, blank ones too.
    assert!(ours.lines().count() >= 5, "{text}");
    for l in ours.lines() {
        assert!(l.starts_with("lab 1:  "), "{l:?} in {text}");
    }
    // The server's text as it printed it (not prefixed), then the title's iperf Done.
    let (server, tail) = rest
        .rsplit_once("\nlab 1:  \nlab 1:  iperf Done.\n")
        .unwrap_or_else(|| panic!("no titled iperf Done.: {text}"));
    let doc: Value = serde_json::from_str(server).unwrap_or_else(|e| panic!("{e}: {server}"));
    assert!(
        doc["end"]["sum_received"]["bytes"]
            .as_u64()
            .is_some_and(|b| b > 0),
        "{doc}"
    );
    assert!(
        tail.is_empty(),
        "nothing after iperf Done. (strict): {tail:?}"
    );
}
