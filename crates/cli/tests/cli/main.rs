//! The command line's integration tests, in one test binary (one build, one link, one run):
//! each module is one area, and the helpers are shared modules.
//!
//! Run one area with `cargo test -p wirespeed --test cli interop::`.

mod host_common;
mod measure_common;
mod need;

mod abuse;
mod auth;
mod client_options;
mod doctor;
mod explain_cli;
mod interop;
mod interop_udp;
mod measure_errors;
mod observe_cli;
mod robustness;
mod scale;
mod server_tune;
mod sweep_cli;
mod tune_cli;
mod tune_fixtures;
mod tune_live;
