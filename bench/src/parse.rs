//! Turning each contender's output into one [`Sample`].

use serde_json::Value;

/// One run's figures. Rates in bits per second.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// What the receiving end counted (iperf3's `sum_received`).
    pub recv_bps: f64,
    /// What the sending end counted (`sum_sent`).
    pub sent_bps: f64,
    /// UDP, receiver side.
    pub lost_packets: Option<u64>,
    pub packets: Option<u64>,
    pub lost_percent: Option<f64>,
    pub jitter_ms: Option<f64>,
    /// UDP, datagrams the receiver counted (bytes / datagram length).
    pub received_packets: Option<u64>,
    pub retransmits: Option<u64>,
    /// Paths that ran, as the tool reported them (wirespeed only).
    pub paths: Option<String>,
    /// CPU seconds both ends spent per Gbit received, from iperf3's own figures (the same for
    /// every iperf3-shaped tool): (`cpu_utilization_percent` `host_total` + `remote_total`) / 100
    /// × the receiver's seconds / its Gbit.
    pub cpu_s_per_gbit: Option<f64>,
    /// Cores both ends kept busy: (`host_total` + `remote_total`) / 100 — process-wide figures
    /// (every thread, every stream), so they hold for `-P` many streams as for one.
    pub busy_cores: Option<f64>,
}

fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_f64()
}

/// iperf3 `-J` output (wirespeed's is the same shape, with a `wirespeed` key).
/// `udp_len` is the datagram length for UDP runs (to count received datagrams).
pub fn parse_iperf_json(text: &str, udp_len: Option<usize>) -> Result<Sample, String> {
    let v: Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("output is not JSON ({e})"))?;
    if let Some(err) = v.get("error").and_then(Value::as_str) {
        return Err(format!("tool reported: {err}"));
    }
    let end = v.get("end").ok_or("no \"end\" section in the JSON")?;
    let recv_bps = f(end, &["sum_received", "bits_per_second"])
        .or_else(|| f(end, &["sum", "bits_per_second"]))
        .ok_or("no end.sum_received.bits_per_second")?;
    let sent_bps = f(end, &["sum_sent", "bits_per_second"]).unwrap_or(recv_bps);
    let mut s = Sample {
        recv_bps,
        sent_bps,
        ..Sample::default()
    };
    s.retransmits = f(end, &["sum_sent", "retransmits"]).map(|x| x as u64);
    s.cpu_s_per_gbit = cpu_per_gbit(end);
    s.busy_cores = busy_cores(end);
    if let Some(len) = udp_len {
        let r = end
            .get("sum_received")
            .or_else(|| end.get("sum"))
            .ok_or("no UDP receiver sum")?;
        s.lost_packets = f(r, &["lost_packets"]).map(|x| x as u64);
        s.packets = f(r, &["packets"]).map(|x| x as u64);
        s.lost_percent = f(r, &["lost_percent"]);
        s.jitter_ms = f(r, &["jitter_ms"]);
        s.received_packets = f(r, &["bytes"]).map(|b| (b / len as f64).round() as u64);
    }
    if let Some(w) = v.get("wirespeed") {
        let get = |k: &str| w.get(k).and_then(Value::as_str).map(str::to_string);
        let parts: Vec<String> = [("send", get("send_path")), ("recv", get("recv_path"))]
            .into_iter()
            .filter_map(|(k, p)| p.map(|p| format!("{k}={p}")))
            .collect();
        if !parts.is_empty() {
            s.paths = Some(parts.join(" "));
        }
    }
    Ok(s)
}

/// (host + remote CPU utilisation) / 100: the cores both ends kept busy. iperf3 takes each end's
/// `getrusage(RUSAGE_SELF)` over the wall time, so every thread and stream of the process counts.
fn busy_cores(end: &Value) -> Option<f64> {
    let util = end.get("cpu_utilization_percent")?;
    Some((f(util, &["host_total"])? + f(util, &["remote_total"])?) / 100.0)
}

/// (host + remote CPU utilisation) × seconds / Gbit received (`sum_received`: every stream's
/// bytes, so with `-P` it is the aggregate's cost); `None` when a figure is missing or nothing
/// arrived.
fn cpu_per_gbit(end: &Value) -> Option<f64> {
    let cpu = busy_cores(end)?;
    let secs = f(end, &["sum_received", "seconds"])?;
    let gbit = f(end, &["sum_received", "bytes"])? * 8.0 / 1e9;
    (gbit > 0.0 && cpu > 0.0).then(|| cpu * secs / gbit)
}

/// bareloop's one-JSON-object-per-line output; the receiver's line is the figure.
pub fn parse_bareloop(text: &str) -> Result<Sample, String> {
    let mut recv = None;
    let mut send = None;
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("bad bareloop line {line:?}: {e}"))?;
        let gbps = v
            .get("gbit_per_s")
            .and_then(Value::as_f64)
            .ok_or("bareloop line without gbit_per_s")?;
        match v.get("role").and_then(Value::as_str) {
            Some("recv") => recv = Some(gbps * 1e9),
            Some("send") => send = Some(gbps * 1e9),
            _ => {}
        }
    }
    match (recv, send) {
        (Some(r), s) => Ok(Sample {
            recv_bps: r,
            sent_bps: s.unwrap_or(r),
            ..Sample::default()
        }),
        (None, Some(s)) => Ok(Sample {
            recv_bps: s,
            sent_bps: s,
            ..Sample::default()
        }),
        (None, None) => Err("bareloop printed no result line".into()),
    }
}

/// xfr's `--json` document (after any log lines): `throughput_mbps` of the test.
pub fn parse_xfr_json(text: &str) -> Result<Sample, String> {
    let start = text
        .lines()
        .position(|l| l.trim_start().starts_with('{'))
        .ok_or("xfr printed no JSON")?;
    let doc = text.lines().skip(start).collect::<Vec<_>>().join("\n");
    let v: Value =
        serde_json::from_str(doc.trim()).map_err(|e| format!("xfr output is not JSON ({e})"))?;
    let mbps = f(&v, &["throughput_mbps"]).ok_or("no throughput_mbps in xfr's JSON")?;
    Ok(Sample {
        recv_bps: mbps * 1e6,
        sent_bps: mbps * 1e6,
        retransmits: f(&v, &["tcp_info", "retransmits"]).map(|x| x as u64),
        ..Sample::default()
    })
}

/// neper `tcp_stream`'s client output: `remote_throughput=` (bits/s, what the server received).
pub fn parse_neper(text: &str) -> Result<Sample, String> {
    let bps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("remote_throughput="))
        .ok_or("neper printed no remote_throughput")?
        .trim()
        .parse::<f64>()
        .map_err(|e| format!("neper's remote_throughput: {e}"))?;
    Ok(Sample {
        recv_bps: bps,
        sent_bps: bps,
        ..Sample::default()
    })
}

/// A `key=value` number from neper's output.
fn neper_value(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.trim().parse().ok())
}

/// CPU seconds one neper process spent during its test: its `utime`/`stime` at the start and
/// the end (getrusage of the whole process, as iperf3's utilisation is).
fn neper_cpu_s(text: &str) -> Option<f64> {
    let v = |k| neper_value(text, k);
    Some(v("utime_end")? - v("utime_start")? + v("stime_end")? - v("stime_start")?)
}

/// neper at both ends: the client's `remote_throughput`, and CPU per bit from both processes'
/// own CPU time over the client's `total_run_time` (the same formula as iperf3's figures).
pub fn parse_neper_ends(client: &str, server: &str) -> Result<Sample, String> {
    let mut s = parse_neper(client)?;
    if let (Some(c), Some(sv), Some(secs)) = (
        neper_cpu_s(client),
        neper_cpu_s(server),
        neper_value(client, "total_run_time").filter(|t| *t > 0.0),
    ) {
        let gbit = s.recv_bps * secs / 1e9;
        s.busy_cores = Some((c + sv) / secs);
        s.cpu_s_per_gbit = (gbit > 0.0).then(|| (c + sv) / gbit);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn iperf3_tcp() {
        let s = parse_iperf_json(&fixture("iperf3-3.12-tcp-128k.json"), None).expect("parse");
        assert!((s.recv_bps - 25050269934.73787).abs() < 1.0);
        assert!((s.sent_bps - 25051096268.07038).abs() < 1.0);
        assert_eq!(s.retransmits, Some(13));
        assert_eq!(s.lost_packets, None);
        assert_eq!(s.paths, None);
        // CPU per bit from the recorded utilisation, seconds and bytes of the same document
        let v: Value = serde_json::from_str(&fixture("iperf3-3.12-tcp-128k.json")).unwrap();
        let (u, r) = (
            &v["end"]["cpu_utilization_percent"],
            &v["end"]["sum_received"],
        );
        let cpu = (u["host_total"].as_f64().unwrap() + u["remote_total"].as_f64().unwrap()) / 100.0
            * r["seconds"].as_f64().unwrap();
        let want = cpu / (r["bytes"].as_f64().unwrap() * 8.0 / 1e9);
        assert!((s.cpu_s_per_gbit.unwrap() - want).abs() < 1e-12);
        let cores =
            (u["host_total"].as_f64().unwrap() + u["remote_total"].as_f64().unwrap()) / 100.0;
        assert!((s.busy_cores.unwrap() - cores).abs() < 1e-12);
    }

    #[test]
    fn cpu_per_bit_of_many_streams_is_the_aggregate_cost() {
        // -P 4: four streams' bytes in sum_received, the processes' CPU in the utilisation
        let j = r#"{"end":{"streams":[{},{},{},{}],
            "sum_sent":{"bits_per_second":4.1e10,"bytes":15375000000,"seconds":3.0},
            "sum_received":{"bits_per_second":4e10,"bytes":15000000000,"seconds":3.0},
            "cpu_utilization_percent":{"host_total":90.0,"remote_total":110.0}}}"#;
        let s = parse_iperf_json(j, None).expect("parse");
        assert!((s.busy_cores.unwrap() - 2.0).abs() < 1e-12);
        // 2 cores x 3 s / 120 Gbit
        assert!((s.cpu_s_per_gbit.unwrap() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn iperf3_udp_receiver_figures() {
        let s = parse_iperf_json(&fixture("iperf3-3.12-udp-1g.json"), Some(1472)).expect("parse");
        assert!((s.recv_bps - 777444088.5751284).abs() < 1.0);
        assert!((s.sent_bps - 998932318.9475348).abs() < 1.0);
        assert_eq!(s.lost_packets, Some(18281));
        assert_eq!(s.packets, Some(84304));
        assert_eq!(s.received_packets, Some(97185856 / 1472));
        // iperf3's receiver: packets = highest sequence, lost = gaps: they agree with the bytes it counted.
        assert_eq!(
            s.packets.unwrap_or(0) - s.lost_packets.unwrap_or(0),
            s.received_packets.unwrap_or(0)
        );
    }

    #[test]
    fn wirespeed_paths_and_errors() {
        let j = r#"{"start":{},"end":{"sum_sent":{"bits_per_second":2e10},"sum_received":{"bits_per_second":1.9e10}},
                    "wirespeed":{"version":"0.1.0","send_path":"sendfile","recv_path":"copy"}}"#;
        let s = parse_iperf_json(j, None).expect("parse");
        assert_eq!(s.paths.as_deref(), Some("send=sendfile recv=copy"));
        assert_eq!(s.recv_bps, 1.9e10);
        let e = parse_iperf_json(
            r#"{"start":{},"error":"unable to connect to server"}"#,
            None,
        );
        assert_eq!(e, Err("tool reported: unable to connect to server".into()));
        assert!(parse_iperf_json("garbage", None).is_err());
        assert!(parse_iperf_json("{}", None).is_err());
    }

    #[test]
    fn xfr_and_neper_outputs() {
        let x = "INFO Connecting to 127.0.0.1:5201...\n{\n  \"bytes_total\": 1928196853,\n  \"throughput_mbps\": 15425.5,\n  \"tcp_info\": {\"retransmits\": 2}\n}\n";
        let s = parse_xfr_json(x).expect("xfr");
        assert!((s.recv_bps - 15425.5e6).abs() < 1.0);
        assert_eq!(s.retransmits, Some(2));
        assert!(parse_xfr_json("error: connection refused").is_err());
        let n = "throughput_opt=Mb\nlocal_throughput=0\nremote_throughput=6957701669\n";
        assert!((parse_neper(n).expect("neper").recv_bps - 6957701669.0).abs() < 1.0);
        assert!(parse_neper("remote_throughput=x").is_err());
        assert!(parse_neper("").is_err());
    }

    #[test]
    fn neper_cpu_per_bit_from_both_ends() {
        // recorded from tcp_stream -T 2 -F 2 -l 2 on loopback (client, then server)
        let client = "total_run_time=2\nutime_start=0.001438\nutime_end=0.064977\n\
                      stime_start=0.000000\nstime_end=0.817155\nremote_throughput=24000000000\n";
        let server = "total_run_time=2\nutime_start=0.000000\nutime_end=0.039918\n\
                      stime_start=0.001775\nstime_end=1.943998\n";
        let s = parse_neper_ends(client, server).expect("neper");
        let cpu = (0.064977 - 0.001438) + 0.817155 + 0.039918 + (1.943998 - 0.001775);
        assert!((s.busy_cores.expect("cores") - cpu / 2.0).abs() < 1e-9);
        assert!((s.cpu_s_per_gbit.expect("cpu") - cpu / 48.0).abs() < 1e-9);
        // a server that printed no times: the rate stands, no CPU figure
        let s = parse_neper_ends(client, "total_run_time=2\n").expect("neper");
        assert_eq!(s.cpu_s_per_gbit, None);
        assert!(parse_neper_ends("", server).is_err());
    }

    #[test]
    fn bareloop_lines() {
        let t = "{\"role\":\"recv\",\"bytes\":2634022912,\"seconds\":1.001591,\"gbit_per_s\":21.039,\"block\":131072}\n\
                 {\"role\":\"send\",\"bytes\":2634022912,\"seconds\":1.001687,\"gbit_per_s\":21.037,\"block\":131072}\n";
        let s = parse_bareloop(t).expect("parse");
        assert!((s.recv_bps - 21.039e9).abs() < 1.0);
        assert!((s.sent_bps - 21.037e9).abs() < 1.0);
        let only_send =
            "{\"role\":\"send\",\"bytes\":1,\"seconds\":1,\"gbit_per_s\":3.5,\"block\":1}";
        assert!((parse_bareloop(only_send).expect("send").recv_bps - 3.5e9).abs() < 1.0);
        assert!(parse_bareloop("bareloop: connect: refused").is_err());
    }
}
