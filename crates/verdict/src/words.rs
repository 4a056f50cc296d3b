//! Words the rules' lines share.

use wirespeed_model::observation::{CpuUse, EndObservation, Role};
use wirespeed_model::VerdictEnd;

/// The end `e` is in a verdict: its role, or for a `--bidir` end the side the finding concerns.
pub(super) fn end_of(e: &EndObservation, as_receiver: bool) -> VerdictEnd {
    match e.role {
        Role::Sender => VerdictEnd::Sender,
        Role::Receiver => VerdictEnd::Receiver,
        Role::Both if as_receiver => VerdictEnd::Receiver,
        Role::Both => VerdictEnd::Sender,
    }
}

pub(super) fn parts(c: &CpuUse) -> String {
    // the busy shares: all but idle, the last
    let mut v: Vec<(&str, f64)> = c.shares()[..5]
        .iter()
        .map(|(name, p)| (*name, p.get()))
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = v
        .iter()
        .filter(|(_, p)| *p >= 5.0)
        .take(2)
        .map(|(n, p)| format!("{} {n}", wirespeed_model::observation::Percent::new(*p)))
        .collect();
    if shown.is_empty() {
        format!("{} busy", c.busy())
    } else {
        shown.join(", ")
    }
}

pub(super) fn l3_words(e: &EndObservation, cpu: u32) -> String {
    match e.topology.l3_cpus(cpu) {
        Some(g) => format!("L3 {g}"),
        None => "L3 unknown".to_string(),
    }
}
