//! What a move of a NIC's queue IRQs did (a sweep's step, or a server's answer to a tune
//! request). The drive crate makes the move (`wirespeed_drive::irq_sweep`).

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;

/// One IRQ of the NIC to move: its number and action name (recorded in the journal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueIrq {
    pub irq: u32,
    pub name: Option<String>,
}

/// What a move of a NIC's queue IRQs did: the sweep's steps and a server's tune request
/// (`wirespeed server --allow-tune`) report it; the server sends it to its client in the
/// results' extension (`irq_move`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveReport {
    pub iface: String,
    /// The queue IRQs of the interface, in the order they were placed.
    pub irqs: Vec<QueueIrq>,
    /// The CPUs asked for: IRQ k goes to `cpus[k mod n]`.
    #[serde(with = "crate::cpuset::as_array")]
    pub cpus: CpuSet,
    /// What became of each IRQ (its keys stand beside the ones above).
    #[serde(flatten)]
    pub outcome: MoveOutcome,
}

/// What a move of queue IRQs did to each of them, and whether its journal was put back: a whole
/// move ([`MoveReport`]) and a sweep's step ([`crate::doc::StepOutcome`]) report it alike.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveOutcome {
    /// Host path of the journal.
    pub journal: String,
    /// IRQs whose affinity was written (or already held their CPU).
    pub moved: Vec<u32>,
    /// IRQs the kernel manages (EIO or read-only): left where they are.
    pub not_movable: Vec<u32>,
    /// IRQs whose write failed, with the reason.
    pub failed: Vec<(u32, String)>,
    /// IRQs whose effective affinity, read back after the move, is not the CPU asked for.
    pub elsewhere: Vec<(u32, CpuSet)>,
    /// The journal was reverted completely.
    pub reverted: bool,
}

impl MoveOutcome {
    /// The move took effect: it moved some IRQ and every IRQ it moved runs where it was asked to.
    pub fn took_effect(&self) -> bool {
        !self.moved.is_empty() && self.elsewhere.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::StepOutcome;

    #[test]
    fn a_move_and_a_step_write_their_outcome_where_they_always_had_it() {
        let outcome = MoveOutcome {
            journal: "/j/1".into(),
            moved: vec![40],
            not_movable: vec![41],
            failed: vec![(42, "EBUSY".into())],
            elsewhere: vec![(40, CpuSet::from_cpus([5]))],
            reverted: true,
        };
        let m = MoveReport {
            iface: "eth0".into(),
            irqs: vec![QueueIrq {
                irq: 40,
                name: None,
            }],
            cpus: CpuSet::from_cpus([3]),
            outcome: outcome.clone(),
        };
        let tail = r#""journal":"/j/1","moved":[40],"not_movable":[41],"failed":[[42,"EBUSY"]],"elsewhere":[[40,"5"]],"reverted":true}"#;
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(
            text,
            format!(r#"{{"iface":"eth0","irqs":[{{"irq":40,"name":null}}],"cpus":[3],{tail}"#)
        );
        assert_eq!(serde_json::from_str::<MoveReport>(&text).unwrap(), m);
        let step = StepOutcome::from_move(3, &m);
        let text = serde_json::to_string(&step).unwrap();
        assert_eq!(text, format!(r#"{{"irq_cpu":3,{tail}"#));
        assert_eq!(serde_json::from_str::<StepOutcome>(&text).unwrap(), step);
        assert!(!step.outcome.took_effect(), "IRQ 40 ran on CPU 5");
    }
}
