//! The JSON documents `tune` writes besides a plan on its own: `tune --apply -J` (the plan and
//! what applying it did) and `tune status -J` (the journals found). Each carries its `kind`.

use serde::Serialize;

use crate::engine::ApplyReport;
use crate::journal::{JournalFile, Outcome, State};
use crate::plan::Plan;

/// The documents, each written with its `kind`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Written<'a> {
    /// `tune --apply -J`: `apply` is absent when the plan had no step.
    TuneApplied {
        plan: &'a Plan,
        apply: Option<&'a ApplyReport>,
    },
    /// `tune status -J`.
    TuneJournals { journals: Vec<JournalRow> },
}

/// One journal as `tune status` lists it: read, or why it could not be.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum JournalRow {
    Read {
        journal: String,
        created: String,
        state: State,
        iface: Option<String>,
        /// Changes recorded.
        changes: usize,
        /// IRQs the kernel manages (left where they were).
        not_movable: usize,
        /// Why the journal is cut short, when it is ([`JournalFile::truncated`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        truncated: Option<String>,
    },
    Unreadable {
        journal: String,
        error: String,
    },
}

impl JournalRow {
    /// Every journal in `dir` (host path) of `root`, oldest first, read or not.
    pub fn list(root: &wirespeed_host::Root, dir: &str) -> Vec<JournalRow> {
        crate::journal::list(root, dir)
            .into_iter()
            .map(|path| {
                let jf = JournalFile::read(root, &path);
                JournalRow::of(&path, jf.as_ref().map_err(|e| e.to_string()))
            })
            .collect()
    }

    /// A journal that cannot be read, or is cut short: its changes may still be applied
    /// without anything here naming them all (a finding).
    pub fn damaged(&self) -> bool {
        matches!(
            self,
            JournalRow::Unreadable { .. }
                | JournalRow::Read {
                    truncated: Some(_),
                    ..
                }
        )
    }

    /// The row of the journal at `path` (its host path), read or not.
    pub fn of(path: &str, jf: Result<&JournalFile, String>) -> JournalRow {
        match jf {
            Ok(jf) => JournalRow::Read {
                journal: path.to_string(),
                created: jf.created(),
                state: jf.state(),
                iface: jf.iface(),
                changes: jf.entries().len(),
                not_movable: jf
                    .entries()
                    .iter()
                    .filter(|e| e.outcome == Some(Outcome::NotMovable))
                    .count(),
                truncated: jf.truncated(),
            },
            Err(error) => JournalRow::Unreadable {
                journal: path.to_string(),
                error,
            },
        }
    }
}
