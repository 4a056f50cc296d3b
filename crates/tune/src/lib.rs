//! `tune`: turn doctor's findings into a plan, apply it with a journal, revert it exactly.
//!
//! Architecture:
//! - [`plan`]: the plan as data: steps (each names the doctor finding it fixes, the setting, the
//!   current and new value, the equivalent shell command, and a [`plan::Change`] the engine can
//!   perform) and notes for what software cannot fix. Renders as a table or a shell script.
//! - [`planner`]: host facts (through a `Root`) + options → plan. IRQ placement policies,
//!   socket buffers from link speed × RTT, congestion control, qdisc, MTU probing, MTU,
//!   txqueuelen, governor, rings, interrupt coalescing (only as requested), irqbalance,
//!   persistence files.
//! - [`engine`]: apply a plan through the root with a [`journal`] (append + fsync before every
//!   write; IRQ effective affinity read back; EIO = not movable), and revert a journal in
//!   reverse, leaving alone what someone else changed since.
//! - [`value`]: normalized comparison (`0-3` = `0,1,2,3`, masks, white space).
//!
//! Every read and write goes through [`wirespeed_host::Root`], so a captured tree is a complete
//! stand-in for a host: plan, apply and revert work on a copy of a fixture exactly as on `/`.
//! Services (`systemctl`), ring sizes and interrupt coalescing (the host crate's ethtool ioctl)
//! exist only on the live host and are skipped, with a reason, elsewhere.

pub mod collect;
pub mod doc;
pub mod engine;
pub mod journal;
pub mod plan;
pub mod planner;
pub mod service;
pub mod value;
pub mod view;

pub use engine::{apply, revert, ApplyOptions, ApplyReport, RevertReport, StepStatus};
pub use journal::{JournalFile, State};
pub use plan::{Change, Note, Plan, Step};
pub use value::Form;

use wirespeed_host::RootError;

/// Errors of the tune library; each names the path or value that failed.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error(transparent)]
    Root(#[from] RootError),
    #[error("journal {path}: {source}")]
    Journal {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("journal {path}: {reason}")]
    BadJournal { path: String, reason: String },
    #[error("another tune run is changing this root: {holder} holds the lock on {lock}; wait for it to finish and try again")]
    Busy { lock: String, holder: String },
    #[error("changing the live host needs root (effective uid 0)")]
    NotPrivileged,
    /// The plan has a step the kernel allows only with `capability` (checked before anything is
    /// journaled or written, so a plan is never half applied for the lack of it).
    #[error("{step} needs {capability}, which this process does not have (a container needs --cap-add {short}); nothing was changed")]
    MissingCapability {
        capability: &'static str,
        short: &'static str,
        step: String,
    },
    #[error("cannot write {path}: {source}")]
    NotWritable {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
