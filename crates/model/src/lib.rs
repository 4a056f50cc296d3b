//! wirespeed's own result types: what wirespeed adds to iperf3's results, as plain typed data.
//!
//! Both ends need these (a wirespeed server sends its workers, observation and IRQ move to its
//! client in the protocol extension) and every crate above uses them (the engine fills them,
//! the report carries them under the `wirespeed` key, explain decides verdicts from them, the
//! CLI prints them). They live here, below all of those, so no crate passes wirespeed's own
//! data around as untyped JSON.
//!
//! - [`cpuset`]: [`CpuSet`], a set of CPUs in the kernel's list and mask forms (the host crate
//!   re-exports it as `wirespeed_host::CpuSet`); [`cpuset::as_array`] writes one as an array
//!   of numbers, the form the extension and the reports use.
//! - [`cost`]: [`Cost`], what a bit cost at each end and the cores the link's rate needs.
//! - [`worker`]: [`Worker`], one worker thread of an end.
//! - [`path`]: [`SendPath`], which path moves a sending stream's bytes, named one way on the
//!   wire and in the results.
//! - [`observation`]: where the work ran, per interval and for the whole test, at each end.
//! - [`topology`]: the host's CPU topology an observation carries, and CPU relations.
//! - [`verdict`]: [`Verdict`], what limited a test.
//! - [`irq`]: [`MoveReport`], what a move of a NIC's queue IRQs did.
//! - [`units`]: bit rates, link speeds and byte counts for people, one way everywhere.
//! - [`text`]: peer- and file-sourced text made safe for a terminal.
//!
//! Nothing here reads the host, opens sockets or reads clocks.

pub mod cost;
pub mod cpuset;
pub mod doc;
pub mod irq;
pub mod observation;
pub mod path;
pub mod precedence;
pub mod rank;
pub mod text;
pub mod topology;
pub mod transport;
pub mod units;
pub mod verdict;
pub mod worker;

pub use cost::{Cost, CpuFreq, EndCost, Projection};
pub use cpuset::{CpuId, CpuSet, CpuSetError, UnusableCpus};
pub use irq::{MoveOutcome, MoveReport, QueueIrq};
pub use observation::{
    EndObservation, IfaceStack, RunningEnd, StackBond, StackMember, TestObservation,
};
pub use path::SendPath;
pub use rank::{Bound, Rank};
pub use topology::Topology;
pub use transport::Transport;
pub use verdict::{
    Agreement, Also, AlsoKind, BusyCpu, Confidence, ControlStall, End, Evidence, Flow, HostLoad,
    LoadedEnd, Measured, PathCeiling, PeerSilent, SilentPhase, Standing, UnknownVerdictId, Verdict,
    VerdictEnd, VerdictId,
};
pub use worker::{RxZerocopy, Worker};
