//! Tests run through the engine, and the engine's hooks over a `Root`.
//!
//! - [`run`]: the drivers: the client CPU × server CPU sweep, the IRQ sweeps (this host's NIC,
//!   the server's through tune requests) and `client --repeat`, test by test through the engine.
//! - [`sweep`]: a sweep's matrix and its summary; [`irq_sweep`]: the IRQ moves through tune's
//!   journal and their matrix; [`modes`]: `--repeat` statistics and the modes of a series, tied
//!   to where the work ran.
//! - [`hooks`]: the engine's hooks: observation with verdicts ([`hooks::HostObserve`]: the
//!   observer of `wirespeed-observe`, the verdict of `wirespeed-verdict`) and a server's IRQ move
//!   on a client's request ([`hooks::IrqTune`]); the command line wires them into the engine.
//!
//! Everything that decides (modes, sweep recommendations) is a pure function of observations
//! and topology, tested on recorded data.

pub mod hooks;
pub mod irq_sweep;
pub mod modes;
pub mod run;
pub mod sweep;

pub use run::*;
