//! Integration tests of wirespeed-doctor in one test binary (one build and link instead of one per file): one module per area.

mod fixtures;
mod knobs;
mod synthetic;
