//! Several servers tested at once (`wirespeed client HOST -p PORT,PORT`): each target's
//! report or error and the sums over them, as one typed document with its kind
//! (`{"kind": "targets", "targets": [...], "sum": {...}}`), and its text.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::model::TestResult;
use crate::text::{render_text, TextOptions};
use crate::units::{format_bytes, format_rate};

/// The kind of a multi-target document (its `kind` key).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetsKind {
    #[default]
    Targets,
}

/// One run against several servers at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetsDoc {
    pub kind: TargetsKind,
    /// Each target, in the order asked for.
    pub targets: Vec<Target>,
    /// The sums over the targets that reported.
    pub sum: TargetsSum,
}

/// One server of the run and what its test gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// `result` (the target's report) or `error` (why its test failed).
    #[serde(flatten)]
    pub outcome: TargetOutcome,
}

/// What one target's test gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetOutcome {
    Result(Box<TestResult>),
    Error(String),
}

/// The bytes every target sent and received (both directions with `--bidir`), over the
/// longest sending time among them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetsSum {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub seconds: f64,
    pub bits_per_second_sent: f64,
    pub bits_per_second_received: f64,
}

impl TargetsDoc {
    /// The document of these targets' outcomes, with their sums.
    pub fn of(targets: Vec<Target>) -> TargetsDoc {
        let (mut sent, mut received, mut seconds) = (0u64, 0u64, 0f64);
        for t in &targets {
            let TargetOutcome::Result(r) = &t.outcome else {
                continue;
            };
            let e = &r.end;
            let bytes = |s: &Option<crate::model::Summary>| s.as_ref().map_or(0, |s| s.bytes);
            sent += bytes(&e.sum_sent) + bytes(&e.sum_sent_bidir_reverse);
            received += bytes(&e.sum_received) + bytes(&e.sum_received_bidir_reverse);
            seconds = seconds.max(e.sum_sent.as_ref().map_or(0.0, |s| s.seconds));
        }
        let bps = |b: u64| {
            if seconds > 0.0 {
                b as f64 * 8.0 / seconds
            } else {
                0.0
            }
        };
        TargetsDoc {
            kind: TargetsKind::Targets,
            sum: TargetsSum {
                bytes_sent: sent,
                bytes_received: received,
                seconds,
                bits_per_second_sent: bps(sent),
                bits_per_second_received: bps(received),
            },
            targets,
        }
    }
}

/// The `targets` document as JSON (pretty, a newline after it): what `-J` prints for several
/// hosts or ports, read back by `report` and `diff`.
pub fn write_targets_json<W: Write + ?Sized>(w: &mut W, doc: &TargetsDoc) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, doc)?;
    writeln!(w)
}

/// The text of a multi-target run: each target's report under `== HOST port PORT` (or its
/// error on that line), then one `[SUM]` line.
pub fn render_targets_text<W: Write + ?Sized>(
    w: &mut W,
    doc: &TargetsDoc,
    opts: TextOptions,
) -> io::Result<()> {
    for t in &doc.targets {
        match &t.outcome {
            TargetOutcome::Result(r) => {
                writeln!(w, "== {} port {}", t.host, t.port)?;
                render_text(
                    w,
                    r,
                    TextOptions {
                        done_line: false,
                        ..opts
                    },
                )?;
            }
            TargetOutcome::Error(e) => writeln!(w, "== {} port {}: error - {e}", t.host, t.port)?,
        }
    }
    let s = &doc.sum;
    writeln!(
        w,
        "[SUM] {} targets: sent {} ({}), received {} ({})",
        doc.targets.len(),
        format_bytes(s.bytes_sent as f64),
        format_rate(s.bits_per_second_sent, opts.format),
        format_bytes(s.bytes_received as f64),
        format_rate(s.bits_per_second_received, opts.format),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{End, Summary};

    fn result(sent: u64, received: u64, seconds: f64) -> TestResult {
        TestResult {
            end: End {
                sum_sent: Some(Summary {
                    bytes: sent,
                    seconds,
                    ..Default::default()
                }),
                sum_received: Some(Summary {
                    bytes: received,
                    seconds,
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn doc() -> TargetsDoc {
        TargetsDoc::of(vec![
            Target {
                host: "192.0.2.1".into(),
                port: 5201,
                outcome: TargetOutcome::Result(Box::new(result(1000, 900, 1.0))),
            },
            Target {
                host: "192.0.2.1".into(),
                port: 5202,
                outcome: TargetOutcome::Error("connection refused".into()),
            },
            Target {
                host: "192.0.2.1".into(),
                port: 5203,
                outcome: TargetOutcome::Result(Box::new(result(3000, 3000, 2.0))),
            },
        ])
    }

    #[test]
    fn the_sums_cover_the_targets_that_reported_over_the_longest_time() {
        let d = doc();
        assert_eq!(
            d.sum,
            TargetsSum {
                bytes_sent: 4000,
                bytes_received: 3900,
                seconds: 2.0,
                bits_per_second_sent: 16000.0,
                bits_per_second_received: 15600.0,
            }
        );
        assert_eq!(TargetsDoc::of(vec![]).sum, TargetsSum::default());
    }

    #[test]
    fn the_document_has_its_kind_and_the_shape_it_always_had() {
        // as -J writes it: pretty, one newline after it
        let mut written = Vec::new();
        write_targets_json(&mut written, &doc()).unwrap();
        let text = String::from_utf8(written).unwrap();
        assert!(
            text.starts_with("{\n  \"kind\": \"targets\"") && text.ends_with("}\n"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["kind", "targets", "sum"]);
        assert_eq!(v["kind"], "targets");
        let t = v["targets"].as_array().unwrap();
        let keys =
            |i: usize| -> Vec<String> { t[i].as_object().unwrap().keys().cloned().collect() };
        assert_eq!(keys(0), ["host", "port", "result"]);
        assert_eq!(keys(1), ["host", "port", "error"]);
        assert_eq!(t[1]["error"], "connection refused");
        assert_eq!(v["sum"]["bytes_sent"], 4000);
        let sum_keys: Vec<&str> = v["sum"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            sum_keys,
            [
                "bytes_sent",
                "bytes_received",
                "seconds",
                "bits_per_second_sent",
                "bits_per_second_received"
            ]
        );
        // Read back through the same type; another kind is not this document.
        let back: TargetsDoc = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, doc());
        let mut other = v;
        other["kind"] = "sweep".into();
        assert!(serde_json::from_value::<TargetsDoc>(other).is_err());
    }

    #[test]
    fn the_text_names_each_target_and_sums_them() {
        let mut out = Vec::new();
        render_targets_text(&mut out, &doc(), TextOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("== 192.0.2.1 port 5201\n"), "{text}");
        assert!(
            text.contains("== 192.0.2.1 port 5202: error - connection refused\n"),
            "{text}"
        );
        assert!(text.contains("== 192.0.2.1 port 5203\n"), "{text}");
        assert!(!text.contains("iperf Done."), "{text}");
        let last = text.lines().last().unwrap();
        assert!(last.starts_with("[SUM] 3 targets: sent "), "{last}");
    }
}
