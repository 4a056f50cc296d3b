//! Where the work ran: the observer the engine runs beside every test, at each end, and what it
//! reads from the host through a `Root`.
//!
//! - [`observer`]: the [`Observer`]: per-interval deltas of `/proc/stat` (per-CPU
//!   user/system/irq/softirq/steal/idle shares), `/proc/softirqs` (NET_RX/NET_TX per CPU) and the
//!   test NIC's rows of `/proc/interrupts`, with the CPUs the workers ran on and `TCP_INFO` limits
//!   passed in by the engine. The observation it returns is `wirespeed_model::observation`'s.
//! - [`route`], [`nic`]: the interface carrying the test and its IRQs.
//! - [`topology`]: the host's CPU topology (read from the host crate's CPU facts).
//! - [`placement`]: where the NIC's interrupts and softirqs ran relative to the app's CPUs (a
//!   test's placement signature), a pure function of an observation and its topology.
//!
//! Verdicts are `wirespeed-verdict`'s; the engine's hooks that join the two are
//! `wirespeed-drive`'s.

pub mod nic;
pub mod observer;
pub mod placement;
pub mod route;
pub mod topology;

pub use observer::{NicSpec, Observer};
