//! One worker thread of an end, as both ends report it.

use serde::{Deserialize, Serialize};

use crate::cpuset::{self, CpuSet};

/// One pinned worker thread and the streams it carried: where it was asked to run, where it
/// ran, what it carried. The same type travels in the protocol extension (`workers`) and sits
/// in the report (`wirespeed.workers`, `wirespeed.remote_workers`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worker {
    /// The CPU it was asked to run on; `None` when not pinned.
    #[serde(default)]
    pub cpu_requested: Option<u32>,
    /// The CPUs it was actually seen running on (sched_getcpu samples), written as an array
    /// of numbers, ascending.
    #[serde(default, with = "cpuset::as_array")]
    pub cpus_seen: CpuSet,
    /// Stream ids (`socket` values) it carried.
    #[serde(default)]
    pub streams: Vec<u32>,
}
