//! The IRQ-moving sweep (`sweep --irq-cpus`): for each IRQ CPU, move the receiving NIC's queue
//! IRQs there through tune's journal, run a test for every app CPU, and revert before the next
//! step — ESnet's "application core vs NIC interrupt core" plot as a procedure.
//!
//! One move is [`apply_irq_move`]: a tune plan of `IrqAffinity` steps applied with tune's
//! journal, held as an [`IrqMove`] that reverts the journal when asked or when dropped. The
//! sweep on this host (`-R`) and a wirespeed server serving a client's tune request
//! (`--allow-tune`, the sweep without `-R`) both move IRQs through it.
//!
//! The function is generic over how a test is run (a closure: the CLI passes the engine's
//! client, tests a model), over how the kernel reacts to affinity writes (a hook: a no-op on the
//! live host; tests emulate `effective_affinity_list` following `smp_affinity_list`) and over
//! when to stop (an [`AtomicBool`] the CLI's Ctrl-C handler sets). Every journal it applies is
//! reverted: after each step, on an error, on a panic in a test (a guard), and when stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use wirespeed_host::interrupts::Interrupts;
use wirespeed_host::nic::collect_nics;
use wirespeed_host::{CpuSet, IrqKind, Root};
use wirespeed_tune::engine::{self, ApplyOptions, StepStatus};
use wirespeed_tune::plan::{command_for, irq_affinity_path, Change, Plan, Step, REQUESTED};

use crate::sweep::{Axes, Matrix};
pub use wirespeed_model::doc::{IrqSweepReport, StepOutcome};
use wirespeed_model::observation::BitsPerSecond;

/// Why the sweep could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum IrqSweepError {
    #[error("{iface}: no such PCI network interface under {root}")]
    NoNic { iface: String, root: String },
    #[error("{iface}: no queue IRQs found (msi_irqs and /proc/interrupts names)")]
    NoQueueIrqs { iface: String },
    #[error(transparent)]
    Tune(#[from] wirespeed_tune::TuneError),
    #[error("no CPU to move the IRQs to")]
    NoCpus,
    #[error("revert of {journal} incomplete ({detail}): run `wirespeed tune revert {journal}`")]
    RevertIncomplete { journal: String, detail: String },
}

/// The queue IRQs of `iface` under `root` (completion / RX / TX vectors; control vectors and
/// another port's vectors stay where they are). When no vector name is recognised, every vector
/// of the interface that is not another interface's is taken.
pub fn queue_irqs(root: &Root, iface: &str) -> Result<Vec<QueueIrq>, IrqSweepError> {
    let interrupts = root
        .read("/proc/interrupts")
        .ok()
        .and_then(|t| Interrupts::parse(&t).ok());
    let nic = collect_nics(root, interrupts.as_ref())
        .into_iter()
        .find(|n| n.name == iface)
        .ok_or_else(|| IrqSweepError::NoNic {
            iface: iface.to_string(),
            root: root.dir().display().to_string(),
        })?;
    let pick = |want: &dyn Fn(IrqKind) -> bool| -> Vec<QueueIrq> {
        nic.irqs
            .iter()
            .filter(|i| want(i.kind))
            .map(|i| QueueIrq {
                irq: i.irq,
                name: i.actions.first().cloned(),
            })
            .collect()
    };
    let mut irqs = pick(&|k| k == IrqKind::Queue);
    if irqs.is_empty() {
        irqs = pick(&|k| k == IrqKind::Unknown);
    }
    if irqs.is_empty() {
        return Err(IrqSweepError::NoQueueIrqs {
            iface: iface.to_string(),
        });
    }
    Ok(irqs)
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct IrqSweepSpec {
    pub iface: String,
    pub irqs: Vec<QueueIrq>,
    pub app_cpus: CpuSet,
    pub irq_cpus: CpuSet,
    /// Tests per cell.
    pub repeat: u32,
}

pub use wirespeed_model::irq::{MoveOutcome, MoveReport, QueueIrq};

/// A move of a NIC's queue IRQs, applied through tune's journal and reverted by
/// [`IrqMove::revert`] — or, as the last line of defence (a panic, an early return), when
/// dropped.
#[derive(Debug)]
pub struct IrqMove {
    root: Root,
    journal: Option<String>,
    report: MoveReport,
}

impl IrqMove {
    /// What the move did (and, once reverted, `reverted`).
    pub fn report(&self) -> &MoveReport {
        &self.report
    }

    /// Host path of the journal.
    pub fn journal(&self) -> &str {
        &self.report.outcome.journal
    }

    /// Revert the journal now; `Ok(true)` when every value is back (also when reverted
    /// before). A value someone else changed since is left alone and makes it `Ok(false)`.
    pub fn revert(&mut self) -> Result<bool, IrqSweepError> {
        if let Some(j) = self.journal.take() {
            self.report.outcome.reverted = engine::revert(&self.root, &j, false)?.complete();
        }
        Ok(self.report.outcome.reverted)
    }

    /// Give up the duty to revert (someone else reverted the journal, e.g. a server shutting
    /// down while the test was still running).
    pub fn disarm(&mut self) {
        self.journal = None;
    }
}

impl Drop for IrqMove {
    fn drop(&mut self) {
        if let Some(j) = self.journal.take() {
            let _ = engine::revert(&self.root, &j, false);
        }
    }
}

/// Move the queue IRQs `irqs` of `iface` to `cpus` (IRQ k to `cpus[k mod n]`) with a tune plan
/// of `IrqAffinity` steps applied through tune's journal; `kernel` runs after every affinity
/// write (a no-op on the live host). The effective affinity is read back afterwards.
pub fn apply_irq_move(
    root: &Root,
    iface: &str,
    irqs: &[QueueIrq],
    cpus: &CpuSet,
    opts: &ApplyOptions,
    kernel: &mut dyn FnMut(&Root),
) -> Result<IrqMove, IrqSweepError> {
    if cpus.is_empty() {
        return Err(IrqSweepError::NoCpus);
    }
    let order: Vec<u32> = cpus.iter().collect();
    let target = |k: usize| order[k % order.len()];
    let all = cpus.clone();
    let mut plan = Plan::new(&root.dir().display().to_string());
    plan.iface = Some(iface.to_string());
    plan.irq_cpus = Some(all.clone());
    plan.irq_rule = Some(if cpus.len() == 1 {
        format!("every queue IRQ on CPU {all}")
    } else {
        format!("queue IRQs spread in turn over CPUs {all}")
    });
    for (k, q) in irqs.iter().enumerate() {
        let cpu = target(k);
        let change = Change::IrqAffinity {
            irq: q.irq,
            name: q.name.clone(),
            cpus: CpuSet::from_cpus([cpu]),
        };
        plan.steps.push(Step {
            finding: REQUESTED.to_string(),
            summary: format!("IRQ {} to CPU {cpu}", q.irq),
            setting: irq_affinity_path(q.irq),
            current: root.read_opt(&irq_affinity_path(q.irq)).unwrap_or_default(),
            new: cpu.to_string(),
            command: command_for(&change),
            change,
        });
    }
    let applied = engine::apply(root, &plan, opts, &mut |r, _| kernel(r))?;
    let mut mv = IrqMove {
        root: root.clone(),
        journal: Some(applied.journal.clone()),
        report: MoveReport {
            iface: iface.to_string(),
            irqs: irqs.to_vec(),
            cpus: cpus.clone(),
            outcome: MoveOutcome {
                journal: applied.journal.clone(),
                ..MoveOutcome::default()
            },
        },
    };
    let r = &mut mv.report.outcome;
    for s in &applied.steps {
        let irq = irqs[s.step].irq;
        match s.status {
            StepStatus::Applied | StepStatus::AlreadySet => r.moved.push(irq),
            StepStatus::NotMovable => r.not_movable.push(irq),
            StepStatus::Failed | StepStatus::Skipped | StepStatus::NotSupported => {
                r.failed.push((irq, s.detail.clone().unwrap_or_default()))
            }
        }
    }
    for (k, q) in irqs.iter().enumerate() {
        if !r.moved.contains(&q.irq) {
            continue;
        }
        if let Some(e) = effective(root, q.irq) {
            if e != CpuSet::from_cpus([target(k)]) {
                r.elsewhere.push((q.irq, e));
            }
        }
    }
    Ok(mv)
}

fn effective(root: &Root, irq: u32) -> Option<CpuSet> {
    root.read_opt(&format!("/proc/irq/{irq}/effective_affinity_list"))
        .or_else(|| root.read_opt(&irq_affinity_path(irq)))
        .and_then(|s| CpuSet::parse_list(&s).ok())
}

/// Run the sweep. `kernel` runs after every affinity write and after every revert (the live
/// kernel needs nothing; a tree stands in for it there). `run_test(app_cpu, irq_cpu)` runs one
/// test and returns its throughput or why it failed.
pub fn run_irq_sweep(
    root: &Root,
    spec: &IrqSweepSpec,
    opts: &ApplyOptions,
    stop: &AtomicBool,
    kernel: &mut dyn FnMut(&Root),
    run_test: &mut dyn FnMut(u32, u32) -> Result<BitsPerSecond, String>,
) -> Result<IrqSweepReport, IrqSweepError> {
    let mut report = IrqSweepReport {
        iface: spec.iface.clone(),
        irqs: spec.irqs.clone(),
        matrix: Matrix::new(Axes::AppIrq, spec.app_cpus.clone(), spec.irq_cpus.clone()),
        steps: Vec::new(),
        interrupted: false,
    };
    'steps: for cpu in spec.irq_cpus.iter() {
        if stop.load(Ordering::SeqCst) {
            report.interrupted = true;
            break;
        }
        let mut mv = apply_irq_move(
            root,
            &spec.iface,
            &spec.irqs,
            &CpuSet::from_cpus([cpu]),
            opts,
            kernel,
        )?;
        if mv.report().outcome.moved.is_empty() {
            // Nothing could be moved there: every cell of the column says why.
            for app in spec.app_cpus.iter() {
                report.matrix.record_error(
                    app,
                    cpu,
                    format!("no queue IRQ could be moved to CPU {cpu}"),
                );
            }
        } else {
            for app in spec.app_cpus.iter() {
                for _ in 0..spec.repeat.max(1) {
                    if stop.load(Ordering::SeqCst) {
                        report.interrupted = true;
                        mv.revert()?;
                        kernel(root);
                        report.steps.push(StepOutcome::from_move(cpu, mv.report()));
                        break 'steps;
                    }
                    match run_test(app, cpu) {
                        Ok(bps) => {
                            report.matrix.record(app, cpu, bps);
                        }
                        Err(e) => {
                            report.matrix.record_error(app, cpu, e);
                        }
                    }
                }
            }
        }
        let done = mv.revert()?;
        kernel(root);
        report.steps.push(StepOutcome::from_move(cpu, mv.report()));
        if !done {
            return Err(IrqSweepError::RevertIncomplete {
                journal: mv.journal().to_string(),
                detail: "a value was changed by someone else meanwhile".to_string(),
            });
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_irqs_of_the_connectx5_leave_the_control_vector() {
        let root = Root::new(format!(
            "{}/../../tests/fixtures/hosts/crow-9900x-cx5-x4",
            env!("CARGO_MANIFEST_DIR")
        ));
        let q = queue_irqs(&root, "enp1s0f0np0").unwrap();
        let n: Vec<u32> = q.iter().map(|q| q.irq).collect();
        assert_eq!(
            n,
            vec![99, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119]
        );
        assert!(q[0].name.as_deref().unwrap().starts_with("mlx5_comp0"));
        assert!(matches!(
            queue_irqs(&root, "lo"),
            Err(IrqSweepError::NoNic { .. })
        ));
    }

    #[test]
    fn the_two_port_connectx3_keeps_the_other_ports_vectors() {
        let root = Root::new(format!(
            "{}/../../tests/fixtures/hosts/sl-w9-x3650-cx3",
            env!("CARGO_MANIFEST_DIR")
        ));
        let q = queue_irqs(&root, "p2p1").unwrap();
        assert!(!q.is_empty());
        assert!(q
            .iter()
            .all(|q| !q.name.as_deref().unwrap_or("").contains("p2p2")));
    }
}

#[cfg(test)]
mod honest_tests {
    use super::*;
    use crate::sweep::Summarize;

    fn step(cpu: u32, moved: Vec<u32>, elsewhere: Vec<(u32, CpuSet)>) -> StepOutcome {
        StepOutcome {
            irq_cpu: cpu,
            outcome: MoveOutcome {
                journal: String::new(),
                moved,
                not_movable: vec![],
                failed: vec![],
                elsewhere,
                reverted: true,
            },
        }
    }

    #[test]
    fn steps_that_did_not_take_effect_leave_the_summary() {
        let mut matrix = Matrix::new(
            Axes::AppIrq,
            CpuSet::from_cpus([2]),
            CpuSet::from_cpus([0, 1, 3]),
        );
        matrix.record(2, 0, BitsPerSecond(9e9));
        matrix.record(2, 1, BitsPerSecond(5e9));
        matrix.record(2, 3, BitsPerSecond(6e9));
        let mut r = IrqSweepReport {
            iface: "eth0".into(),
            irqs: vec![],
            matrix,
            steps: vec![
                // the kernel kept IRQ 40 on CPU 7: the CPU 0 column measured CPU 7
                step(0, vec![40], vec![(40, CpuSet::from_cpus([7]))]),
                step(1, vec![40], vec![]),
                step(3, vec![], vec![]),
            ],
            interrupted: false,
        };
        assert!(!r.steps[0].outcome.took_effect() && r.steps[1].outcome.took_effect());
        assert_eq!(r.drop_ineffective(), 2);
        let s = r.matrix.summary(None).expect("one effective step");
        assert_eq!((s.best.col, s.worst.col), (1, 1));
        assert_eq!(
            r.matrix.cells[0][0].error.as_deref(),
            Some("the move to CPU 0 did not take effect (IRQ 40 ran on CPU 7)")
        );
        assert_eq!(
            r.matrix.cells[0][2].error.as_deref(),
            Some("no IRQ could be moved to CPU 3")
        );
    }
}
