//! A client's tune request on the server (`wirespeed server --allow-tune`): move the queue IRQs
//! of the NIC that carries the test to the CPUs the client asked for (`irq_cpus` in the
//! parameters' extension) before the data phase, and put them back after it.
//!
//! The move is the sweep's own ([`wirespeed_explain::irq_sweep::apply_irq_move`]: a tune plan
//! applied through tune's journal). One host has one IRQ layout at a time, so a server holds at
//! most one tune change: a [`TuneSlot`] names the test holding it and its journal. The change is
//! reverted when the test's data phase ends, when the test fails (the client vanished, a
//! refusal, a limit), when its thread unwinds from a panic ([`HeldTune`] reverts on drop), and
//! when the server stops ([`TuneSlot::close`] reverts whatever is still held). Only a `kill -9`
//! of the server leaves a change behind; its journal stays for `wirespeed tune revert`.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use wirespeed_explain::irq_sweep::{self, IrqMove, IrqSweepError, MoveReport};
use wirespeed_explain::route;
use wirespeed_host::{CpuSet, Root};
use wirespeed_tune::{ApplyOptions, TuneError};

/// Runs after every affinity write and every revert: nothing on the live host (the kernel
/// reacts by itself); tests on a copied tree emulate the kernel there.
pub type KernelHook = Arc<dyn Fn(&Root) + Send + Sync>;

/// What a server started with `--allow-tune` may change, and where.
#[derive(Clone)]
pub struct TuneConfig {
    /// The host state (`/`, or a copied tree in tests).
    pub root: Root,
    /// The interface whose IRQs move; default: the interface of the route to the client.
    pub iface: Option<String>,
    /// Journal directory and tool name.
    pub apply: ApplyOptions,
    pub kernel: Option<KernelHook>,
}

impl TuneConfig {
    /// Tune the host under `root` with tune's default journal directory.
    pub fn new(root: Root) -> TuneConfig {
        TuneConfig {
            root,
            iface: None,
            apply: ApplyOptions {
                tool: format!("wirespeed server {}", crate::assemble::VERSION),
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

impl std::fmt::Debug for TuneConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuneConfig")
            .field("root", &self.root)
            .field("iface", &self.iface)
            .field("apply", &self.apply)
            .field("kernel", &self.kernel.as_ref().map(|_| "hook"))
            .finish()
    }
}

#[derive(Debug, Default)]
struct SlotState {
    /// The test holding the host's tune change, and its journal.
    holder: Option<(u64, String)>,
    /// The server is stopping: no new change.
    closed: bool,
}

/// The server's one tune change at a time.
#[derive(Debug, Default)]
pub struct TuneSlot(Mutex<SlotState>);

impl TuneSlot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The test number holding a change, if any.
    pub fn holder(&self) -> Option<u64> {
        self.lock().holder.as_ref().map(|h| h.0)
    }

    /// The server stops: refuse new changes and revert the one still held (its test may still
    /// be running; it finds the change gone and leaves it). Returns the journal reverted.
    pub fn close(&self, cfg: Option<&TuneConfig>) -> Option<String> {
        let mut s = self.lock();
        s.closed = true;
        let (_, journal) = s.holder.take()?;
        if let Some(cfg) = cfg {
            let _ = wirespeed_tune::engine::revert(&cfg.root, &journal, false);
            cfg.kernel();
        }
        Some(journal)
    }
}

/// Why a tune request is refused; the words go to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuneRefusal(pub String);

fn cpus_text(cpus: &CpuSet) -> String {
    if cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    }
}

/// The message a server without `--allow-tune` answers a tune request with.
pub fn not_allowed(cpus: &CpuSet) -> TuneRefusal {
    TuneRefusal(format!(
        "this server changes its host only when started with --allow-tune (the client asked \
         to move its NIC's queue IRQs to {})",
        cpus_text(cpus)
    ))
}

/// A test's tune change: reverted by [`HeldTune::release`] or when dropped.
pub struct HeldTune<'a> {
    slot: &'a TuneSlot,
    cfg: &'a TuneConfig,
    number: u64,
    mv: IrqMove,
    released: bool,
}

impl HeldTune<'_> {
    /// What the move did so far.
    pub fn report(&self) -> &MoveReport {
        self.mv.report()
    }

    /// Revert now (once); the report says whether everything is back.
    pub fn release(&mut self) -> &MoveReport {
        if !self.released {
            self.released = true;
            let mut s = self.slot.lock();
            if s.holder.as_ref().map(|h| h.0) == Some(self.number) {
                let _ = self.mv.revert();
                self.cfg.kernel();
                s.holder = None;
            } else {
                // The server's shutdown reverted it already.
                self.mv.disarm();
            }
        }
        self.mv.report()
    }
}

impl Drop for HeldTune<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Apply test `number`'s request to move the queue IRQs of its NIC to `cpus`. `peer` and
/// `local` are the control connection's addresses (the route to the peer names the NIC).
pub fn apply<'a>(
    slot: &'a TuneSlot,
    cfg: &'a TuneConfig,
    number: u64,
    cpus: &CpuSet,
    peer: IpAddr,
    local: Option<IpAddr>,
) -> Result<HeldTune<'a>, TuneRefusal> {
    let root = &cfg.root;
    if cpus.is_empty() {
        return Err(TuneRefusal(
            "the tune request names no CPU for the IRQs".into(),
        ));
    }
    if let Some(online) = root.cpu_list_opt("/sys/devices/system/cpu/online") {
        let off = cpus.difference(&online);
        if !off.is_empty() {
            return Err(TuneRefusal(format!(
                "cannot move IRQs to CPU {off}: not online on this server (online: {online})"
            )));
        }
    }
    let iface = match &cfg.iface {
        Some(i) => i.clone(),
        None => route::iface_for_peer(root, peer, local).ok_or_else(|| {
            TuneRefusal(format!(
                "cannot tell which interface carries this test (no route to {peer}); start the \
                 server with --tune-iface IF"
            ))
        })?,
    };
    let irqs = irq_sweep::queue_irqs(root, &iface).map_err(|e| {
        TuneRefusal(match e {
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
    let mut s = slot.lock();
    if s.closed {
        return Err(TuneRefusal("the server is shutting down".into()));
    }
    if let Some((n, _)) = &s.holder {
        return Err(TuneRefusal(format!(
            "another test (#{n}) holds a tune change on this server; one IRQ layout at a time: \
             try again when it ends"
        )));
    }
    let mut kernel = |r: &Root| {
        if let Some(k) = &cfg.kernel {
            k(r);
        }
    };
    let order: Vec<u32> = cpus.iter().collect();
    let mut mv = irq_sweep::apply_irq_move(root, &iface, &irqs, &order, &cfg.apply, &mut kernel)
        .map_err(|e| {
            TuneRefusal(match e {
                IrqSweepError::Tune(TuneError::NotPrivileged) => {
                    "the server cannot move IRQs: it does not run as root".to_string()
                }
                other => format!("moving {iface}'s queue IRQs failed: {other}"),
            })
        })?;
    if mv.report().moved.is_empty() {
        let r = mv.report().clone();
        let _ = mv.revert();
        cfg.kernel();
        let why = r
            .failed
            .first()
            .map(|(irq, e)| format!("; IRQ {irq}: {e}"))
            .unwrap_or_default();
        return Err(TuneRefusal(format!(
            "no queue IRQ of {iface} could be moved to {} ({} managed by the kernel, {} failed{why})",
            cpus_text(cpus),
            r.not_movable.len(),
            r.failed.len()
        )));
    }
    s.holder = Some((number, mv.journal().to_string()));
    drop(s);
    Ok(HeldTune {
        slot,
        cfg,
        number,
        mv,
        released: false,
    })
}

/// One line about a move for text output: `tune: 12 queue IRQs of enp1s0f0np0 moved to CPU 3
/// for this test (journal ...), reverted`.
pub fn describe(r: &MoveReport) -> String {
    let mut s = format!(
        "tune: {} queue IRQ{} of {} moved to {} for this test",
        r.moved.len(),
        if r.moved.len() == 1 { "" } else { "s" },
        r.iface,
        cpus_text(&r.cpus)
    );
    if !r.not_movable.is_empty() {
        s.push_str(&format!(
            "; {} managed by the kernel stayed put",
            r.not_movable.len()
        ));
    }
    if !r.failed.is_empty() {
        s.push_str(&format!("; {} failed", r.failed.len()));
    }
    if !r.elsewhere.is_empty() {
        let shown: Vec<String> = r
            .elsewhere
            .iter()
            .take(3)
            .map(|(irq, e)| format!("IRQ {irq} on CPU {e}"))
            .collect();
        s.push_str(&format!(
            "; the kernel reports {} of them effective elsewhere ({}{})",
            r.elsewhere.len(),
            shown.join(", "),
            if r.elsewhere.len() > 3 { ", ..." } else { "" }
        ));
    }
    if r.reverted {
        s.push_str(", reverted");
    } else {
        s.push_str(&format!(
            ", NOT reverted: run `wirespeed tune revert {}`",
            r.journal
        ));
    }
    s
}
