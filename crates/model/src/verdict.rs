//! The verdict on a test: what limited it, in one line with the evidence. The explain crate
//! decides it (`wirespeed_explain::verdict`); both ends' reports carry it.

use serde::{Deserialize, Serialize};

/// What limited a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Stable id (see the module docs).
    pub id: String,
    /// The end it concerns: `sender` or `receiver`, when it concerns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// The verdict in one line with the evidence.
    pub line: String,
    /// Further findings that also hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
}
