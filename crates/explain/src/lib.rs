//! Where the work ran, and what limited a test.
//!
//! - [`observe`]: the [`observe::Observer`] the engine runs beside every test, at each end:
//!   per-interval deltas of `/proc/stat` (per-CPU user/system/irq/softirq/steal/idle shares),
//!   `/proc/softirqs` (NET_RX/NET_TX per CPU) and the test NIC's rows of `/proc/interrupts`,
//!   with the CPUs the workers ran on and `TCP_INFO` limits passed in by the engine.
//! - [`model`]: the serialisable observation ([`model::EndObservation`],
//!   [`model::TestObservation`]); it carries the host's [`topology::Topology`] so a verdict can
//!   be computed from it anywhere (the server's observation travels to the client).
//! - [`cost`]: what a bit cost at each end (CPU-seconds per Gbit, cycles per byte) and the
//!   cores the link's rate needs there ([`cost::cost_of`]); the CPU-bound verdicts quote it.
//! - [`route`], [`nic`]: the interface carrying the test and its IRQs.
//! - [`drive`]: the sweeps and `--repeat`, run through the engine test by test.
//! - [`hooks`]: the engine's hooks over a `Root`: observation with verdicts
//!   ([`hooks::HostObserve`]) and a server's IRQ move on a client's request
//!   ([`hooks::IrqTune`]); the command line wires them into the engine.
//!
//! Everything that decides (verdicts, modes, sweep recommendations) is a pure function of
//! observations and topology, tested on recorded data.

pub mod cost;
pub mod drive;
pub mod hooks;
pub mod irq_sweep;
pub mod latency;
pub mod model;
pub mod modes;
pub mod nic;
pub mod observe;
pub mod placement;
pub mod render;
pub mod route;
pub mod sweep;
pub mod topology;
pub mod verdict;
