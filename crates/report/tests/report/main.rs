//! Integration tests of wirespeed-report in one test binary (one build and link instead of one per file): one module per area.
//! Shared helpers live in `common`.

mod builder_render;
mod common;
mod iperf3_fixtures;
mod kinds;
