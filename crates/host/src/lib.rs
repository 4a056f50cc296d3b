//! Host facts, read through a root directory.
//!
//! Every read or write of host state in wirespeed goes through a [`Root`]: `/` on a live host, a
//! directory holding a captured tree (`proc/...`, `sys/...`) in tests and offline diagnosis. Parsers
//! take `&str` and never touch the file system, so each one is tested on recorded text; the
//! collectors join the two.

pub mod cgroup;
pub mod cpu;
pub mod cpuset {
    //! CPU sets live in `wirespeed-model` (the results carry them); re-exported here.
    pub use wirespeed_model::cpuset::*;
}
pub mod ethtool;
pub mod facts;
pub mod interrupts;
pub mod link;
pub mod nic;
pub mod pci;
pub mod root;
pub mod snapshot;
pub mod softirqs;
pub mod stack;
pub mod stat;
/// Peer- and file-sourced text made safe for a terminal (the model's, re-exported for the
/// crates above that use the host crate).
pub mod text {
    pub use wirespeed_model::text::*;
}
pub mod upper;
pub mod utc;

pub use cpu::{CpuFacts, CpuTopo, L3Group};
pub use cpuset::{CpuId, CpuSet, CpuSetError, UnusableCpus};
pub use facts::{collect, HostFacts, PlatformFacts};
pub use interrupts::{Interrupts, InterruptsError, IrqKind, IrqLabel, IrqRow};
pub use nic::{NicFacts, NicIrq, PcieFacts, PcieLink};
pub use root::{HeldFile, Recording, Root, RootError};
pub use snapshot::{capture, Snapshot, SnapshotError};
pub use stack::StackFacts;
pub use upper::{DevKind, StackNode, UpperStack};
