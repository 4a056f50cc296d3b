//! What a move of a NIC's queue IRQs did (a sweep's step, or a server's answer to a tune
//! request). The drive crate makes the move (`wirespeed_drive::irq_sweep`).

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;

/// One IRQ of the NIC to move: its number and action name (recorded in the journal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueIrq {
    pub irq: u32,
    pub name: Option<String>,
}

/// What a move of a NIC's queue IRQs did: the sweep's steps and a server's tune request
/// (`wirespeed server --allow-tune`) report it; the server sends it to its client in the
/// results' extension (`irq_move`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveReport {
    pub iface: String,
    /// The queue IRQs of the interface, in the order they were placed.
    pub irqs: Vec<QueueIrq>,
    /// The CPUs asked for: IRQ k goes to `cpus[k mod n]`.
    #[serde(with = "crate::cpuset::as_array")]
    pub cpus: CpuSet,
    /// Host path of the journal.
    pub journal: String,
    /// IRQs whose affinity was written (or already held their CPU).
    pub moved: Vec<u32>,
    /// IRQs the kernel manages (EIO or read-only): left where they are.
    pub not_movable: Vec<u32>,
    /// IRQs whose write failed, with the reason.
    pub failed: Vec<(u32, String)>,
    /// IRQs whose effective affinity, read back after the move, is not the CPU asked for.
    pub elsewhere: Vec<(u32, CpuSet)>,
    /// The journal was reverted completely.
    pub reverted: bool,
}
