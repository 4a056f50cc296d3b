//! The control connection's `TCP_INFO`, as the test-run core reads it for its rules on
//! black-holed results and silent peers (`wirespeed_run::control_stalled`,
//! `wirespeed_run::peer_silent`).

use wirespeed_datapath as dp;
use wirespeed_run::ControlInfo;

pub use wirespeed_run::{control_stalled, STALL_AFTER, STALL_RETRANSMITS};

/// What the core needs of a `TCP_INFO` reading.
pub fn control_info(i: &dp::tcp::TcpInfo) -> ControlInfo {
    ControlInfo {
        unacked: i.unacked,
        retransmits_total: i.retransmits_total,
        snd_mss: i.snd_mss,
        pmtu: i.pmtu,
    }
}
