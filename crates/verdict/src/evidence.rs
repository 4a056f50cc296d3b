//! Per-interval readings a rule's finding rests on: in how many intervals its condition held.

use wirespeed_model::observation::IntervalObservation;
use wirespeed_model::{Agreement, Measured, VerdictEnd};

use wirespeed_model::observation::TestObservation;

/// Of the intervals of the ends `end` names (both when `None`), those where `held`.
pub(super) fn per_interval(
    test: &TestObservation,
    end: Option<VerdictEnd>,
    held: &dyn Fn(&IntervalObservation) -> bool,
) -> Option<Agreement> {
    let named = |e: &&wirespeed_model::observation::EndObservation| match end {
        Some(VerdictEnd::Sender) => e.role.sends(),
        Some(VerdictEnd::Receiver) => e.role.receives(),
        None => true,
    };
    let (mut agreed, mut of) = (0u32, 0u32);
    for e in test.ends().filter(named) {
        for i in &e.intervals {
            of += 1;
            agreed += u32::from(held(i));
        }
    }
    (of > 0).then_some(Agreement { agreed, of })
}

/// Of the measured intervals after the first (slow start), those whose rate `held`.
pub(super) fn rates(m: &Measured, held: &dyn Fn(f64) -> bool) -> Option<Agreement> {
    let v: Vec<f64> = m.interval_bps.iter().skip(1).copied().collect();
    (!v.is_empty()).then(|| Agreement {
        agreed: v.iter().filter(|x| held(**x)).count() as u32,
        of: v.len() as u32,
    })
}

/// Some CPU of the interval saturated.
pub(super) fn saturated(i: &IntervalObservation, saturated: f64) -> bool {
    i.cpus.iter().any(|c| c.busy().get() >= saturated)
}
