//! A small writer of Prometheus' text exposition format (version 0.0.4), the format
//! `promtool check metrics` and every Prometheus version read.
//!
//! Families are written whole: `# HELP`, `# TYPE`, then their samples. Label values are escaped
//! (`\\`, `"`, newline); names are `&'static str` chosen in this crate, so they are valid by
//! construction (checked in debug builds). Values are written in Rust's shortest round-trip form,
//! with Prometheus' spellings for the non-finite ones.

use std::fmt::Write;

/// The `Content-Type` of [`Exposition::finish`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Metric type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

/// Text being built.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

/// One family being written; samples go through [`Family::sample`].
pub struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_value(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else if v.fract() == 0.0 {
        // whole numbers (counters, bytes) exactly
        format!("{v}")
    } else {
        // a fraction to 12 significant digits: arithmetic's noise in the last bits
        // (3.0239197470000008) is no part of what was measured
        let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
        format!("{rounded}")
    }
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Start a family. A counter's `name` ends in `_total` (Prometheus' convention).
    pub fn family(&mut self, name: &'static str, kind: Kind, help: &str) -> Family<'_> {
        debug_assert!(valid_name(name), "metric name {name}");
        debug_assert!(kind != Kind::Counter || name.ends_with("_total"), "{name}");
        let t = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {t}");
        Family {
            out: &mut self.out,
            name,
        }
    }

    /// The exposition text.
    pub fn finish(self) -> String {
        self.out
    }
}

impl Family<'_> {
    /// One sample with `labels` (name, value) in the given order.
    pub fn sample(&mut self, labels: &[(&'static str, &str)], value: f64) -> &mut Self {
        self.out.push_str(self.name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                debug_assert!(valid_name(k), "label name {k}");
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_value(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", format_value(value));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_label_values_and_help() {
        let mut e = Exposition::new();
        e.family("x_info", Kind::Gauge, "a\nb \\ c")
            .sample(&[("v", "q\"u\\o\nte")], 1.0);
        assert_eq!(
            e.finish(),
            "# HELP x_info a\\nb \\\\ c\n# TYPE x_info gauge\nx_info{v=\"q\\\"u\\\\o\\nte\"} 1\n"
        );
    }

    #[test]
    fn values() {
        assert_eq!(format_value(1e10), "10000000000");
        assert_eq!(format_value(0.25), "0.25");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(-3.0), "-3");
        // float noise is rounded away; whole numbers stay exact however large
        assert_eq!(format_value(3.0239197470000008), "3.023919747");
        assert_eq!(format_value(0.1 + 0.2), "0.3");
        assert_eq!(format_value(-0.1 - 0.2), "-0.3");
        assert_eq!(format_value(9_007_199_254_740_992.0), "9007199254740992");
        assert_eq!(format_value(26_512_345_678.9), "26512345678.9");
        assert_eq!(format_value(1.5e-9), "0.0000000015");
    }

    #[test]
    fn names() {
        assert!(valid_name("wirespeed_probe_success"));
        assert!(!valid_name("1abc"));
        assert!(!valid_name("a-b"));
    }
}
