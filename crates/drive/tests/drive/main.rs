//! Integration tests of wirespeed-drive in one test binary (one build and link instead of one per file): one module per area.

/// Captured-tree helpers shared with tune's tests.
#[path = "../../../tune/tests/tune/common.rs"]
mod common;

mod irq_sweep;
mod repeat_crow;
mod server_tune_slot;
