//! The command line's integration tests, in one test binary (one build, one link, one run):
//! each module is one area, and the helpers are shared modules.
//!
//! Run one area with `cargo test -p wirespeed --test cli interop::`.

mod agent_common;
mod host_common;
mod measure_common;
mod need;

mod abuse;
mod agent;
mod agent_front_door;
mod agent_prometheus;
mod agent_shares;
mod auth;
mod client_options;
mod cpu_quota;
mod deploy_files;
mod doctor;
mod explain_cli;
mod help_cli;
mod image;
mod interop;
mod interop_udp;
mod interrupt;
mod iperf3_flags;
mod lab_cli;
mod live;
mod live_frames;
mod measure_errors;
mod module_circles;
mod mtu_blackhole;
mod observe_cli;
mod one_target;
mod packaging;
mod pictures;
mod pscheduler_plugin;
mod robustness;
mod scale;
mod server_tune;
mod setup_programs;
mod strict;
mod sweep_cli;
mod top;
mod truth_table;
mod tune_cli;
mod tune_fixtures;
mod tune_live;
mod upper_live;
mod verdict_matrix;
