//! JSON renderers: the whole document (`-J`) and one-object-per-line events
//! (`--json-stream`).
//!
//! `-J` is laid out the way iperf3 prints it (cJSON's formatted style): tabs
//! for indentation, a tab after each `"key":`, arrays inline as `[a, b]` with
//! objects inside them opened on the same line (`[{` … `}, {` … `}]`), and an
//! empty object as `{` newline `}`. Any JSON parser reads it; people diffing
//! wirespeed's output against iperf3's see the same layout.
//!
//! `--json-stream` follows iperf3 3.17+: one compact object per line,
//! `{"event":"start","data":{…}}`, `{"event":"interval","data":{…}}`,
//! `{"event":"end","data":{…}}`, `{"event":"error","data":"…"}`. wirespeed's
//! extension is streamed as `{"event":"wirespeed","data":{…}}` just before
//! `end`; consumers that only know iperf3's events skip it.
//!
//! Numbers go through the model's serializers, so no NaN or infinity can
//! appear, and each document is built from one value: no duplicated keys,
//! also in the error case.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::model::{End, Interval, Start, TestResult, WirespeedExt};

fn to_value<T: Serialize + ?Sized>(v: &T) -> io::Result<Value> {
    serde_json::to_value(v).map_err(io::Error::other)
}

fn tabs<W: Write + ?Sized>(w: &mut W, n: usize) -> io::Result<()> {
    for _ in 0..n {
        w.write_all(b"\t")?;
    }
    Ok(())
}

fn write_scalar<W: Write + ?Sized>(w: &mut W, v: &Value) -> io::Result<()> {
    serde_json::to_writer(&mut *w, v).map_err(io::Error::other)
}

/// Write `v` in cJSON's formatted layout. `depth` is the indentation of the
/// enclosing line (0 at top level).
fn write_pretty<W: Write + ?Sized>(w: &mut W, v: &Value, depth: usize) -> io::Result<()> {
    match v {
        Value::Object(map) => {
            w.write_all(b"{\n")?;
            let inner = depth + 1;
            let n = map.len();
            for (i, (k, item)) in map.iter().enumerate() {
                tabs(w, inner)?;
                write_scalar(w, &Value::String(k.clone()))?;
                w.write_all(b":\t")?;
                write_pretty(w, item, inner)?;
                if i + 1 < n {
                    w.write_all(b",")?;
                }
                w.write_all(b"\n")?;
            }
            tabs(w, depth)?;
            w.write_all(b"}")
        }
        Value::Array(items) => {
            w.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.write_all(b", ")?;
                }
                write_pretty(w, item, depth + 1)?;
            }
            w.write_all(b"]")
        }
        scalar => write_scalar(w, scalar),
    }
}

/// Write any serializable value in iperf3's `-J` layout, followed by a newline.
pub fn write_pretty_value<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    value: &T,
) -> io::Result<()> {
    let v = to_value(value)?;
    write_pretty(w, &v, 0)?;
    w.write_all(b"\n")
}

/// `-J`: the whole result as iperf3 prints it, with a trailing newline.
pub fn write_json<W: Write + ?Sized>(w: &mut W, result: &TestResult) -> io::Result<()> {
    write_pretty_value(w, result)
}

/// `client --wirespeed-json FILE`: the result's `wirespeed` section on its own, under the same
/// key as in the test's document (pretty JSON and a newline).
pub fn write_wirespeed_section<W: Write + ?Sized>(
    w: &mut W,
    result: &TestResult,
) -> io::Result<()> {
    let doc = crate::model::WirespeedSection {
        wirespeed: result.wirespeed.as_ref(),
    };
    serde_json::to_writer_pretty(&mut *w, &doc)?;
    w.write_all(b"\n")
}

/// `-J` into a string.
pub fn to_json_string(result: &TestResult) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail, and the model always serializes.
    if write_json(&mut out, result).is_err() {
        return String::from("{}\n");
    }
    String::from_utf8(out).unwrap_or_else(|_| String::from("{}\n"))
}

/// One `--json-stream` line: `{"event":NAME,"data":DATA}` and a newline,
/// flushed so a reader sees it at once.
pub fn write_event<W: Write + ?Sized, T: Serialize + ?Sized>(
    w: &mut W,
    event: &str,
    data: &T,
) -> io::Result<()> {
    let mut obj = serde_json::Map::new();
    obj.insert("event".into(), Value::String(event.into()));
    obj.insert("data".into(), to_value(data)?);
    serde_json::to_writer(&mut *w, &Value::Object(obj)).map_err(io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush()
}

/// `--json-stream` `start` event.
pub fn stream_start<W: Write + ?Sized>(w: &mut W, start: &Start) -> io::Result<()> {
    write_event(w, "start", start)
}

/// `--json-stream` `interval` event.
pub fn stream_interval<W: Write + ?Sized>(w: &mut W, interval: &Interval) -> io::Result<()> {
    write_event(w, "interval", interval)
}

/// `--json-stream` `wirespeed` event (wirespeed's extension, before `end`).
pub fn stream_wirespeed<W: Write + ?Sized>(w: &mut W, ext: &WirespeedExt) -> io::Result<()> {
    write_event(w, "wirespeed", ext)
}

/// `--json-stream` `wirespeed_interval` event (wirespeed's extension, after `interval`).
pub fn stream_live<W: Write + ?Sized>(w: &mut W, live: &crate::LiveEvent) -> io::Result<()> {
    write_event(w, "wirespeed_interval", live)
}

/// `--json-stream` `end` event.
pub fn stream_end<W: Write + ?Sized>(w: &mut W, end: &End) -> io::Result<()> {
    write_event(w, "end", end)
}

/// `--json-stream` `error` event; `data` is the message string.
pub fn stream_error<W: Write + ?Sized>(w: &mut W, message: &str) -> io::Result<()> {
    write_event(w, "error", message)
}

/// The closing events of a finished (or failed) test in iperf3's order:
/// `error` (if any), `server_output_json`/`server_output_text` (if any),
/// `wirespeed` (if any), then `end`.
pub fn stream_finish<W: Write + ?Sized>(w: &mut W, result: &TestResult) -> io::Result<()> {
    if let Some(e) = &result.error {
        stream_error(w, e)?;
    }
    if let Some(j) = &result.server_output_json {
        write_event(w, "server_output_json", j)?;
    }
    if let Some(t) = &result.server_output_text {
        write_event(w, "server_output_text", t)?;
    }
    if let Some(x) = &result.wirespeed {
        stream_wirespeed(w, x)?;
    }
    stream_end(w, &result.end)
}

/// A whole result replayed as a `--json-stream` (start, intervals, finish).
pub fn write_json_stream<W: Write + ?Sized>(w: &mut W, result: &TestResult) -> io::Result<()> {
    stream_start(w, &result.start)?;
    for iv in &result.intervals {
        stream_interval(w, iv)?;
    }
    stream_finish(w, result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Connected;

    #[test]
    fn layout_is_cjson_formatted() {
        let v: Value = serde_json::from_str(
            r#"{"a":{"b":[{"c":1,"d":"x"},{"c":2.5}],"e":[]},"f":{},"g":[1,2]}"#,
        )
        .unwrap();
        let mut out = Vec::new();
        write_pretty_value(&mut out, &v).unwrap();
        let s = String::from_utf8(out).unwrap();
        let want = "{\n\t\"a\":\t{\n\t\t\"b\":\t[{\n\t\t\t\t\"c\":\t1,\n\t\t\t\t\"d\":\t\"x\"\n\t\t\t}, {\n\t\t\t\t\"c\":\t2.5\n\t\t\t}],\n\t\t\"e\":\t[]\n\t},\n\t\"f\":\t{\n\t},\n\t\"g\":\t[1, 2]\n}\n";
        assert_eq!(s, want);
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn error_document_is_valid_and_has_one_of_each_key() {
        let r = TestResult {
            start: Start {
                version: "wirespeed 0.1.0".into(),
                system_info: "Linux x".into(),
                ..Start::default()
            },
            error: Some("unable to connect to server: Connection refused".into()),
            ..TestResult::default()
        };
        let s = to_json_string(&r);
        let v: Value = serde_json::from_str(&s).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["start", "intervals", "end", "error"]);
        assert!(s.contains("\"end\":\t{\n\t}"), "{s}");
        assert!(s.contains("\"connected\":\t[]"), "{s}");
        for key in ["\"start\"", "\"intervals\"", "\"end\"", "\"error\""] {
            assert_eq!(s.matches(key).count(), 1, "{key} in {s}");
        }
    }

    #[test]
    fn stream_lines_are_compact_events() {
        let mut r = TestResult::default();
        r.start.connected.push(Connected {
            socket: 5,
            local_host: "127.0.0.1".into(),
            local_port: 1,
            remote_host: "127.0.0.1".into(),
            remote_port: 5201,
            extra: Default::default(),
        });
        r.intervals.push(Interval::default());
        r.error = Some("boom \"quoted\"\nline".into());
        let mut out = Vec::new();
        write_json_stream(&mut out, &r).unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 4, "{s}");
        let events: Vec<String> = lines
            .iter()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["event"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(events, ["start", "interval", "error", "end"]);
        let err: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(err["data"], "boom \"quoted\"\nline");
        assert!(lines[0].starts_with(r#"{"event":"start","data":{"connected":[{"socket":5"#));
    }
}
