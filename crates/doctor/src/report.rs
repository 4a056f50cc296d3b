//! The doctor report: the versioned JSON document (`docs/doctor.md`); its text is drawn by
//! `wirespeed_report::doctor`.

use crate::{Finding, Options, Severity};
use serde::{Deserialize, Serialize};
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
    /// The resolved target in the words every command prints
    /// ([`crate::target::HostTarget::line`]), when the report was made from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl From<&Options> for ReportOptions {
    fn from(o: &Options) -> Self {
        ReportOptions {
            iface: o.iface.clone(),
            app_cpus: o.app_cpus.as_ref().map(|c| c.to_string()),
            rtt_ms: o.rtt_ms,
            rate_mbps: o.rate_mbps,
            target: None,
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

    /// The target the findings are for, said as every command says it.
    pub fn with_target(mut self, t: &crate::target::HostTarget) -> Report {
        self.options.target = t.line();
        self
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

    /// The JSON document, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}
