//! The engine's hooks, implemented over a [`Root`] (the live host, or a captured tree in tests
//! and offline runs): [`HostObserve`] observes where the work ran at one end of a test and
//! decides the verdict; [`IrqTune`] carries out a client's tune request on a server (move the
//! queue IRQs of the test's NIC through tune's journal, put them back). The command line wires
//! them into the engine's configurations.

use std::net::IpAddr;
use std::sync::Arc;

use wirespeed_engine::hooks::{
    AppliedChange, EndObserver, HostChange, Observe, PreparedChange, Refusal, ThreadWatch,
};
use wirespeed_host::{CpuSet, Root};
use wirespeed_model::observation::{
    EndObservation, IntervalObservation, Role, TcpLimits, WorkerRun,
};
use wirespeed_model::verdict::{Measured, PathCeiling};
use wirespeed_model::{MoveReport, TestObservation, Verdict};
use wirespeed_report::where_ran::cpus_text;
use wirespeed_tune::{ApplyOptions, TuneError};

use crate::irq_sweep::{self, IrqMove, IrqSweepError, QueueIrq};
use wirespeed_observe::observer::{NicSpec, Observer};
use wirespeed_observe::route;

/// Observation of the host under `root`.
#[derive(Debug, Clone)]
pub struct HostObserve {
    pub root: Root,
}

impl HostObserve {
    pub fn new(root: Root) -> HostObserve {
        HostObserve { root }
    }
}

struct Running(Observer);

impl Observe for HostObserve {
    fn start(
        &self,
        role: Role,
        peer: IpAddr,
        local: Option<IpAddr>,
    ) -> Option<Box<dyn EndObserver>> {
        let o = Observer::new(self.root.clone(), role, NicSpec::Peer { peer, local }).ok()?;
        Some(Box::new(Running(o)))
    }

    fn verdict(&self, test: &TestObservation, measured: &Measured) -> Verdict {
        wirespeed_verdict::verdict_of(test, measured)
    }

    fn ceiling(&self, test: &TestObservation, measured: &Measured) -> Option<PathCeiling> {
        wirespeed_verdict::ceiling_for(test, measured)
    }

    fn cost(&self, test: &TestObservation, measured: &Measured) -> Option<wirespeed_model::Cost> {
        wirespeed_verdict::cost::cost_of(test, measured)
    }
}

impl EndObserver for Running {
    fn tick(&mut self, start: f64, end: f64) -> Option<IntervalObservation> {
        self.0.sample(Some((start, end)), &[], None).ok().cloned()
    }

    fn head(&self) -> Option<EndObservation> {
        Some(self.0.head())
    }

    fn own_threads(&mut self, threads: &[ThreadWatch]) {
        self.0.own_threads(threads);
    }

    fn hold_threads(&mut self) {
        self.0.hold_threads();
    }

    fn close(
        self: Box<Self>,
        workers: &[WorkerRun],
        tcp: Option<TcpLimits>,
    ) -> Option<EndObservation> {
        self.0.close(workers, tcp).ok()
    }
}

/// Runs after every affinity write and every revert: nothing on the live host (the kernel
/// reacts by itself); tests on a copied tree emulate the kernel there.
pub type KernelHook = Arc<dyn Fn(&Root) + Send + Sync>;

/// What a server started with `--allow-tune` may change, and where.
#[derive(Clone)]
pub struct IrqTune {
    /// The host state (`/`, or a copied tree in tests).
    pub root: Root,
    /// The interface whose IRQs move; default: the interface of the route to the client.
    pub iface: Option<String>,
    /// Journal directory and tool name.
    pub apply: ApplyOptions,
    pub kernel: Option<KernelHook>,
}

impl IrqTune {
    /// Tune the host under `root` with tune's default journal directory.
    pub fn new(root: Root) -> IrqTune {
        IrqTune {
            root,
            iface: None,
            apply: ApplyOptions {
                tool: format!("wirespeed server {}", wirespeed_engine::assemble::VERSION),
                ..ApplyOptions::default()
            },
            kernel: None,
        }
    }

    fn kernel(&self) {
        if let Some(k) = &self.kernel {
            k(&self.root);
        }
    }
}

impl std::fmt::Debug for IrqTune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IrqTune")
            .field("root", &self.root)
            .field("iface", &self.iface)
            .field("apply", &self.apply)
            .field("kernel", &self.kernel.as_ref().map(|_| "hook"))
            .finish()
    }
}

/// A checked IRQ move: the interface and its queue IRQs.
struct PreparedMove {
    tune: IrqTune,
    iface: String,
    irqs: Vec<QueueIrq>,
    cpus: CpuSet,
}

/// An applied IRQ move.
struct AppliedMove {
    tune: IrqTune,
    mv: IrqMove,
}

impl HostChange for IrqTune {
    fn prepare_irq_move(
        &self,
        cpus: &CpuSet,
        peer: IpAddr,
        local: Option<IpAddr>,
    ) -> Result<Box<dyn PreparedChange>, Refusal> {
        let root = &self.root;
        if let Some(online) = root.cpu_list_opt("/sys/devices/system/cpu/online") {
            let off = cpus.difference(&online);
            if !off.is_empty() {
                return Err(Refusal(format!(
                    "cannot move IRQs to {}: not online on this server (online: {online})",
                    off.words()
                )));
            }
        }
        let iface = match &self.iface {
            Some(i) => i.clone(),
            None => route::iface_for_peer(root, peer, local).ok_or_else(|| {
                Refusal(format!(
                    "cannot tell which interface carries this test (no route to {peer}); start \
                     the server with --tune-iface IF"
                ))
            })?,
        };
        let irqs = irq_sweep::queue_irqs(root, &iface).map_err(|e| {
            Refusal(match e {
                IrqSweepError::NoNic { .. } if iface == "lo" => {
                    "this test runs over lo, which has no NIC interrupts to move".to_string()
                }
                IrqSweepError::NoNic { .. } => format!(
                    "this test runs over {iface}, which is not a PCI network interface: no NIC \
                     queue IRQs to move"
                ),
                other => format!("this test runs over {iface}: {other}"),
            })
        })?;
        Ok(Box::new(PreparedMove {
            tune: self.clone(),
            iface,
            irqs,
            cpus: cpus.clone(),
        }))
    }

    fn revert_journal(&self, journal: &str) {
        let _ = wirespeed_tune::engine::revert(&self.root, journal, false);
        self.kernel();
    }
}

impl PreparedChange for PreparedMove {
    fn apply(self: Box<Self>) -> Result<Box<dyn AppliedChange>, Refusal> {
        let PreparedMove {
            tune,
            iface,
            irqs,
            cpus,
        } = *self;
        let mut kernel = |r: &Root| {
            if let Some(k) = &tune.kernel {
                k(r);
            }
        };
        let mut mv =
            irq_sweep::apply_irq_move(&tune.root, &iface, &irqs, &cpus, &tune.apply, &mut kernel)
                .map_err(|e| {
                Refusal(match e {
                    IrqSweepError::Tune(TuneError::NotPrivileged) => {
                        "the server cannot move IRQs: it does not run as root".to_string()
                    }
                    other => format!("moving {iface}'s queue IRQs failed: {other}"),
                })
            })?;
        if mv.report().outcome.moved.is_empty() {
            let r = mv.report().outcome.clone();
            let _ = mv.revert();
            tune.kernel();
            let why = r
                .failed
                .first()
                .map(|(irq, e)| format!("; IRQ {irq}: {e}"))
                .unwrap_or_default();
            return Err(Refusal(format!(
                "no queue IRQ of {iface} could be moved to {} ({} managed by the kernel, {} \
                 failed{why})",
                cpus_text(&cpus),
                r.not_movable.len(),
                r.failed.len()
            )));
        }
        Ok(Box::new(AppliedMove { tune, mv }))
    }
}

impl AppliedChange for AppliedMove {
    fn report(&self) -> &MoveReport {
        self.mv.report()
    }

    fn journal(&self) -> &str {
        self.mv.journal()
    }

    fn revert(&mut self) {
        let _ = self.mv.revert();
        self.tune.kernel();
    }

    fn disarm(&mut self) {
        self.mv.disarm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observation_runs_against_a_captured_tree() {
        let root = Root::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/hosts/crow-9900x-cx5-x4"
        ));
        let hook = HostObserve::new(root);
        let mut end = hook
            .start(Role::Receiver, "192.0.2.1".parse().unwrap(), None)
            .expect("the tree has /proc/stat");
        end.tick(0.0, 1.0);
        let e = end.close(&[], None).expect("the observation closes");
        assert_eq!(e.role, Role::Receiver);
        assert_eq!(e.intervals.len(), 1);
        // The tree's topology (a Ryzen with two L3 groups), not this host's.
        assert_eq!(e.topology.l3_groups.len(), 2);
        let v = hook.verdict(
            &TestObservation::local_only(e, "test"),
            &Measured::default(),
        );
        assert!(wirespeed_model::VerdictId::ALL.contains(&v.id), "{v:?}");
    }
}
