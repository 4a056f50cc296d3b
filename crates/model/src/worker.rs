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
    /// Zero-copy receive (`--zerocopy-rx`): what its receiving streams took by mapping pages
    /// and what they copied. Absent on the other receive paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_zerocopy: Option<RxZerocopy>,
}

/// The bytes a worker received on the zero-copy receive path, by how they came: the two add
/// up to everything its receiving streams received (after a fallback to copying, the rest is
/// copied).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxZerocopy {
    /// Bytes in pages the kernel mapped into the receiver (no copy).
    #[serde(default)]
    pub mapped_bytes: u64,
    /// Bytes copied: what could not be mapped (a short tail, a buffer not in whole pages).
    #[serde(default)]
    pub copied_bytes: u64,
}
