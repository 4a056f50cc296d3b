//! The doctor report: a readable text rendering (worst first, evidence and fix under each
//! finding) and the versioned JSON document (`docs/doctor.md`).

use crate::{Finding, Options, Severity};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use wirespeed_host::text::terminal as t;
use wirespeed_host::HostFacts;

/// Version of the JSON document. Bumped when a member changes meaning or is removed; new members
/// may appear without a bump.
pub const SCHEMA_VERSION: u32 = 1;

/// Which host was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    /// `live`, `root` or `snapshot`.
    pub source: String,
    /// The root directory or snapshot file; absent for `live`.
    pub path: Option<String>,
}

/// The options as the report shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportOptions {
    pub iface: Option<String>,
    pub app_cpus: Option<String>,
    pub rtt_ms: f64,
    /// `--rate`, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<u64>,
}

impl From<&Options> for ReportOptions {
    fn from(o: &Options) -> Self {
        ReportOptions {
            iface: o.iface.clone(),
            app_cpus: o.app_cpus.as_ref().map(|c| c.to_string()),
            rtt_ms: o.rtt_ms,
            rate_mbps: o.rate_mbps,
        }
    }
}

/// Counts by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub critical: usize,
    pub warning: usize,
    pub info: usize,
}

/// The whole report (`--json` prints it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    /// `wirespeed <version>`.
    pub tool: String,
    pub host: HostInfo,
    pub options: ReportOptions,
    pub counts: Counts,
    pub findings: Vec<Finding>,
    /// What was not checked and why, and vectors listed but not judged ([`crate::notes`]).
    #[serde(default)]
    pub notes: Vec<String>,
    pub facts: HostFacts,
}

impl Report {
    pub fn new(
        tool: impl Into<String>,
        host: HostInfo,
        opts: &Options,
        findings: Vec<Finding>,
        facts: HostFacts,
    ) -> Report {
        let mut counts = Counts::default();
        for f in &findings {
            match f.severity {
                Severity::Critical => counts.critical += 1,
                Severity::Warning => counts.warning += 1,
                Severity::Info => counts.info += 1,
            }
        }
        Report {
            schema_version: SCHEMA_VERSION,
            tool: tool.into(),
            host,
            options: opts.into(),
            counts,
            findings,
            notes: Vec::new(),
            facts,
        }
    }

    /// The report with the lines of [`crate::notes`].
    pub fn with_notes(mut self, notes: Vec<String>) -> Report {
        self.notes = notes;
        self
    }

    fn render_notes(&self, w: &mut dyn Write) -> io::Result<()> {
        if self.notes.is_empty() {
            return Ok(());
        }
        writeln!(w)?;
        writeln!(w, "notes:")?;
        for n in &self.notes {
            writeln!(w, "  {}", t(n))?;
        }
        Ok(())
    }

    /// The worst severity found, `None` without findings.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// Whether a finding at or above `threshold` was found (doctor's `--fail-on`: the exit
    /// status says so).
    pub fn fails_at(&self, threshold: Severity) -> bool {
        self.worst().is_some_and(|w| w >= threshold)
    }

    /// The RTT behind the buffer advice, as the summary line says it.
    fn rtt_words(&self) -> String {
        let rtt = self.options.rtt_ms;
        if rtt == crate::DEFAULT_RTT_MS {
            format!("buffer advice for an RTT of {rtt} ms, the default: --rtt MS for your paths")
        } else {
            format!("buffer advice for an RTT of {rtt} ms")
        }
    }

    /// The JSON document, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The text rendering.
    pub fn render_text(&self, w: &mut dyn Write) -> io::Result<()> {
        let h = &self.host;
        let what = match (&h.source[..], &h.path) {
            ("live", _) => "this host".to_string(),
            (s, Some(p)) => format!("{s} {p}"),
            (s, None) => s.to_string(),
        };
        writeln!(
            w,
            "wirespeed doctor: {} ({}{})",
            t(h.hostname.as_deref().unwrap_or("unknown host")),
            t(&what),
            t(&h.kernel
                .as_deref()
                .map(|k| format!(", kernel {k}"))
                .unwrap_or_default())
        )?;
        let o = &self.options;
        writeln!(
            w,
            "  interface: {}   app CPUs: {}   RTT: {} ms{}",
            o.iface.as_deref().unwrap_or("all PCI NICs"),
            o.app_cpus.as_deref().unwrap_or("not given"),
            o.rtt_ms,
            o.rate_mbps
                .and_then(wirespeed_model::units::Rate::from_mbps)
                .map(|r| format!("   rate: {}", r.from_source("--rate")))
                .unwrap_or_default()
        )?;
        writeln!(w)?;
        if self.findings.is_empty() {
            writeln!(w, "No findings.")?;
            return self.render_notes(w);
        }
        let c = &self.counts;
        writeln!(
            w,
            "{} finding{}: {} critical, {} warning, {} info ({})",
            self.findings.len(),
            if self.findings.len() == 1 { "" } else { "s" },
            c.critical,
            c.warning,
            c.info,
            self.rtt_words()
        )?;
        for f in &self.findings {
            writeln!(w)?;
            let tag = match f.severity {
                Severity::Critical => "CRITICAL",
                Severity::Warning => "WARNING ",
                Severity::Info => "INFO    ",
            };
            writeln!(w, "{tag} {}", t(&f.id))?;
            writeln!(w, "  {}", t(&f.summary))?;
            if !f.evidence.is_empty() {
                writeln!(w, "  evidence:")?;
                // values line up after the labels of up to 40 characters; a longer label
                // (an IRQ with its full action name) runs past them
                let width = f
                    .evidence
                    .iter()
                    .map(|e| e.what.chars().count())
                    .filter(|&n| n <= 40)
                    .max()
                    .unwrap_or(0);
                for e in &f.evidence {
                    writeln!(
                        w,
                        "    {:<width$}  {}",
                        format!("{}:", t(&e.what)),
                        t(&e.value),
                        width = width + 1
                    )?;
                    writeln!(w, "      from {}", t(&e.source))?;
                }
            }
            if !f.fix.is_empty() {
                writeln!(w, "  fix:")?;
                for line in &f.fix {
                    // a fix is copied into a shell: never raw escapes from a file
                    let line = t(line);
                    if line.starts_with('#') {
                        writeln!(w, "    {line}")?;
                    } else {
                        writeln!(w, "    $ {line}")?;
                    }
                }
            }
        }
        self.render_notes(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Evidence, Finding};

    /// Issue 22, item 9: every string of the text report came from the host or a snapshot;
    /// a file's terminal escapes (a title change, a screen clear) are written as text, in
    /// the fix lines people paste into a shell too.
    #[test]
    fn text_report_escapes_what_came_from_files() {
        let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[2J";
        let finding = Finding {
            id: "pcie-downtrained".into(),
            severity: Severity::Warning,
            iface: Some(evil.into()),
            summary: format!("link of {evil}"),
            evidence: vec![Evidence {
                what: "speed".into(),
                value: evil.into(),
                source: format!("/sys/{evil}"),
            }],
            fix: vec![format!("ethtool -L {evil} combined 8")],
            writes: vec![],
        };
        let host = HostInfo {
            hostname: Some(evil.into()),
            kernel: Some(evil.into()),
            source: "snapshot".into(),
            path: None,
        };
        let r = Report::new(
            "wirespeed test",
            host,
            &Options::default(),
            vec![finding],
            HostFacts::default(),
        );
        let mut out = Vec::new();
        r.render_text(&mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.contains("$ ethtool -L x\\u{1b}]0;pwned"), "{out}");
    }
}
