//! Integration tests of wirespeed-tune in one test binary (one build and link instead of one per file): one module per area.
//! Shared helpers live in `common`.

mod common;
mod doctor_agrees;
mod engine;
mod journal_trust;
mod link;
mod planner;
mod stack;
