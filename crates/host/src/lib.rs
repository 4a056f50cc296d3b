//! Host facts, read through a root directory.
//!
//! Every read or write of host state in wirespeed goes through a [`Root`]: `/` on a live host, a
//! directory holding a captured tree (`proc/...`, `sys/...`) in tests and offline diagnosis. Parsers
//! take `&str` and never touch the file system, so each one is tested on recorded text; the
//! collectors join the two.

pub mod cpuset;
pub mod interrupts;
pub mod root;
pub mod softirqs;
pub mod stat;

pub use cpuset::{CpuId, CpuSet, CpuSetError};
pub use interrupts::{Interrupts, InterruptsError, IrqKind, IrqLabel, IrqRow};
pub use root::{Root, RootError};
