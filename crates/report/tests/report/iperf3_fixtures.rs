//! The model and renderers against real iperf3 output recorded in tests/data
//! (see tests/data/README.md for how and with which iperf3 version).

use crate::common;

use common::{assert_same_layout, data, text};
use serde_json::Value;
use wirespeed_model::End;
use wirespeed_report::json::{to_json_string, write_json_stream};
use wirespeed_report::text::{render_text, TextContext, TextOptions, TextRenderer};
use wirespeed_report::TestResult;

const CASES: &[&str] = &[
    "tcp",
    "tcp_p2",
    "tcp_rev",
    "tcp_bidir",
    "tcp_omit_p2",
    "udp",
    "udp_p2",
    "udp_rev",
    "udp_bidir",
    "error_refused",
];

fn parse(name: &str) -> TestResult {
    TestResult::from_json_str(&data(&format!("{name}.json")))
        .unwrap_or_else(|e| panic!("{name}.json does not parse into the model: {e}"))
}

/// Same keys at every level (and same array lengths), numbers equal as f64,
/// other scalars equal. Returns the first difference as a path.
fn same_shape(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            if kx != ky {
                return Err(format!("{path}: keys {kx:?} != {ky:?}"));
            }
            for (k, v) in x {
                same_shape(v, &y[k], &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Err(format!("{path}: {} items != {}", x.len(), y.len()));
            }
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                same_shape(v, w, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Number(x), Value::Number(y)) => {
            if x.as_f64() == y.as_f64() {
                Ok(())
            } else {
                Err(format!("{path}: {x} != {y}"))
            }
        }
        _ if a == b => Ok(()),
        _ => Err(format!("{path}: {a} != {b}")),
    }
}

#[test]
fn key_sets_compare_recursively() {
    // The comparison itself must notice a missing key, an extra key, a
    // changed number and a changed array length.
    let base: Value = serde_json::from_str(r#"{"a":{"b":1,"c":[1,2]},"d":"x"}"#).unwrap();
    assert!(same_shape(&base, &base, "$").is_ok());
    for other in [
        r#"{"a":{"b":1},"d":"x"}"#,
        r#"{"a":{"b":1,"c":[1,2],"e":0},"d":"x"}"#,
        r#"{"a":{"b":2,"c":[1,2]},"d":"x"}"#,
        r#"{"a":{"b":1,"c":[1]},"d":"x"}"#,
        r#"{"a":{"c":[1,2],"b":1},"d":"x"}"#,
    ] {
        let v: Value = serde_json::from_str(other).unwrap();
        assert!(same_shape(&base, &v, "$").is_err(), "{other}");
    }
}

#[test]
fn iperf3_json_round_trips_through_the_model() {
    for name in CASES {
        let raw = data(&format!("{name}.json"));
        let original: Value = serde_json::from_str(&raw).unwrap();
        let model = parse(name);
        // A model serialized by us parses strictly too: no duplicate keys.
        let strict: Result<TestResult, _> = serde_json::from_str(&to_json_string(&model));
        assert!(strict.is_ok(), "{name}: {strict:?}");
        let again = serde_json::to_value(&model).unwrap();
        if let Err(e) = same_shape(&original, &again, "$") {
            panic!("{name}.json: {e}");
        }
        // Every key of iperf3 3.12 is a modelled field, not a leftover in `extra`.
        assert!(model.extra.is_empty(), "{name}: top {:?}", model.extra);
        assert!(
            model.start.extra.is_empty(),
            "{name}: start {:?}",
            model.start.extra
        );
        if let Some(t) = &model.start.test_start {
            assert!(t.extra.is_empty(), "{name}: test_start {:?}", t.extra);
        }
        for iv in &model.intervals {
            assert!(
                iv.extra.is_empty() && iv.sum.extra.is_empty(),
                "{name}: interval"
            );
            for s in &iv.streams {
                assert!(s.extra.is_empty(), "{name}: interval stream {:?}", s.extra);
            }
        }
        assert!(
            model.end.extra.is_empty(),
            "{name}: end {:?}",
            model.end.extra
        );
        for s in &model.end.streams {
            assert!(s.extra.is_empty(), "{name}: end stream {:?}", s.extra);
            for x in [&s.sender, &s.receiver, &s.udp].into_iter().flatten() {
                assert!(x.extra.is_empty(), "{name}: end stream entry {:?}", x.extra);
            }
        }
    }
}

/// iperf3 3.12 writes some `start` keys once per stream; a JSON object keeps
/// one. Drop the later repeats (single-line members) from iperf3's text.
fn without_repeated_keys(text: &str) -> Vec<&str> {
    let mut seen: Vec<std::collections::HashSet<String>> = vec![Default::default()];
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start_matches('\t');
        if t.starts_with('}') || t.starts_with("]") {
            seen.pop();
        }
        let mut keep = true;
        if let Some((key, value)) = t.split_once(":\t") {
            let scalar = !value.starts_with('{') && !value.starts_with('[');
            let set = seen.last_mut().expect("object stack");
            if !set.insert(key.to_string()) && scalar {
                keep = false;
            }
        }
        if t.ends_with('{') || t.ends_with("[{") {
            seen.push(Default::default());
        }
        if t.starts_with("}, {") {
            seen.push(Default::default());
        }
        if keep {
            out.push(line);
        }
    }
    out
}

#[test]
fn minus_j_layout_matches_iperf3_line_for_line() {
    for name in CASES {
        let original = data(&format!("{name}.json"));
        let ours = to_json_string(&parse(name));
        let a = without_repeated_keys(&original);
        let b: Vec<&str> = ours.lines().collect();
        assert_eq!(a.len(), b.len(), "{name}: line count\n{ours}");
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            if x == y {
                continue;
            }
            // Only a number's spelling may differ (cJSON's %.17g vs shortest
            // round-trip); the key, indentation and punctuation may not.
            let (kx, vx) = x.split_once(":\t").unwrap_or((x, ""));
            let (ky, vy) = y.split_once(":\t").unwrap_or((y, ""));
            assert_eq!(kx, ky, "{name} line {}", i + 1);
            let comma_x = vx.ends_with(',');
            assert_eq!(comma_x, vy.ends_with(','), "{name} line {}", i + 1);
            let nx: f64 = vx.trim_end_matches(',').parse().unwrap_or(f64::NAN);
            let ny: f64 = vy.trim_end_matches(',').parse().unwrap_or(f64::NAN);
            assert_eq!(nx, ny, "{name} line {}: {x:?} vs {y:?}", i + 1);
        }
        assert!(ours.ends_with("}\n"));
    }
}

#[test]
fn json_stream_replays_every_section() {
    for name in CASES {
        let model = parse(name);
        let mut out = Vec::new();
        write_json_stream(&mut out, &model).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut intervals = 0;
        let mut events = Vec::new();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let ev = v["event"].as_str().unwrap().to_string();
            if ev == "interval" {
                let iv: wirespeed_report::Interval =
                    serde_json::from_value(v["data"].clone()).unwrap();
                assert_eq!(iv, model.intervals[intervals]);
                intervals += 1;
            }
            events.push(ev);
        }
        assert_eq!(intervals, model.intervals.len(), "{name}");
        assert_eq!(events.first().map(String::as_str), Some("start"));
        assert_eq!(events.last().map(String::as_str), Some("end"));
        assert_eq!(events.contains(&"error".to_string()), model.error.is_some());
    }
}

/// Render each recorded client `-J` document as text and compare with the
/// text output iperf3 printed for the same command (another run): the same
/// lines in the same order, every label ending in the same column.
#[test]
fn text_reads_like_iperf3_client_output() {
    for name in CASES {
        let model = parse(name);
        let ours = text(&model);
        let real = data(&format!("{name}.txt"));
        if *name == "error_refused" {
            // iperf3 prints only its error line; ours is the CLI's job.
            assert_eq!(
                real,
                "iperf3: error - unable to connect to server: Connection refused\n"
            );
            let mut e = Vec::new();
            wirespeed_report::text::write_error(&mut e, "iperf3", model.error.as_deref().unwrap())
                .unwrap();
            assert_eq!(String::from_utf8(e).unwrap(), real);
            continue;
        }
        assert_same_layout(name, &real, &ours);
        // Lines with nothing run-specific must be identical.
        for (x, y) in real.lines().zip(ours.lines()) {
            if x.starts_with("[ ID]")
                || x.starts_with("- -")
                || x.starts_with("Connecting")
                || x.starts_with("Reverse")
                || x.starts_with("iperf Done")
                || x.is_empty()
            {
                assert_eq!(x, y, "{name}");
            }
        }
    }
}

/// Exact values: the server's text output of the same test
/// (`server_output_text`, iperf3 `--get-server-output`) prints the receiver
/// summary from the same numbers as the client's `-J` `receiver`/`udp`
/// entries. Rendering those from the server's side must give the very same
/// lines.
#[test]
fn receiver_summary_matches_iperf3_server_text_exactly() {
    for name in ["tcp", "tcp_p2", "udp", "udp_p2"] {
        let mut model = parse(name);
        let server_text = model.server_output_text.clone().expect("server text");
        // Server stream ids, by the client's local port.
        let mut ids = std::collections::HashMap::new();
        for line in server_text.lines() {
            if let (Some(id), Some(port)) = (
                line.strip_prefix('[').and_then(|l| l.split(']').next()),
                line.strip_suffix("").and_then(|l| l.rsplit(' ').next()),
            ) {
                if line.contains(" connected to ") {
                    ids.insert(
                        port.parse::<u16>().unwrap(),
                        id.trim().parse::<u32>().unwrap(),
                    );
                }
            }
        }
        let map: Vec<(u32, u32)> = model
            .start
            .connected
            .iter()
            .map(|c| (c.socket, ids[&c.local_port]))
            .collect();
        let to_server = |s: &mut Option<u32>| {
            if let Some(x) = s {
                *x = map.iter().find(|(c, _)| c == x).map(|(_, s)| *s).unwrap();
            }
        };
        // The server's view: it received on every stream; iperf3 3.12's
        // server has not heard the client's retransmits when it prints.
        for es in &mut model.end.streams {
            for x in [&mut es.sender, &mut es.receiver, &mut es.udp]
                .into_iter()
                .flatten()
            {
                x.sender = false;
                x.retransmits = None;
                to_server(&mut x.socket);
            }
        }
        for x in [
            &mut model.end.sum_sent,
            &mut model.end.sum_received,
            &mut model.end.sum,
        ]
        .into_iter()
        .flatten()
        {
            x.sender = false;
            x.retransmits = None;
        }
        let mut ctx = TextContext::from_result(&model);
        ctx.role = End::Server;
        ctx.sender_has_retransmits = false;
        let mut r = TextRenderer::new(ctx, TextOptions::default());
        let mut out = Vec::new();
        r.end(&mut out, &model).unwrap();
        let ours = String::from_utf8(out).unwrap();
        let sep = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
        let tail = &server_text[server_text.rfind(sep).expect("separator")..];
        assert_eq!(ours, tail, "{name}");
    }
}

#[test]
fn streaming_renderer_equals_whole_render() {
    for name in CASES {
        let model = parse(name);
        let mut whole = Vec::new();
        render_text(&mut whole, &model, TextOptions::default()).unwrap();
        let mut live = Vec::new();
        let mut r = TextRenderer::new(TextContext::from_result(&model), TextOptions::default());
        r.start(&mut live, &model.start).unwrap();
        for iv in &model.intervals {
            r.interval(&mut live, iv).unwrap();
        }
        if !model.end.streams.is_empty() {
            r.end(&mut live, &model).unwrap();
        }
        assert_eq!(whole, live, "{name}");
    }
}
