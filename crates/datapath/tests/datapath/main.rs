//! Integration tests of wirespeed-datapath in one test binary (one build and link instead of one per file): one module per area.
//! Shared helpers live in `common`.

mod common;
mod recv_zerocopy;
mod send_paths;
mod tcp_worker;
mod udp_worker;
