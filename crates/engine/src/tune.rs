//! A client's tune request on the server (`wirespeed server --allow-tune`): move the queue IRQs
//! of the NIC that carries the test to the CPUs the client asked for (`irq_cpus` in the
//! parameters' extension) before the data phase, and put them back after it.
//!
//! The change itself is a [`HostChange`] hook (the command line wires in the drive crate's,
//! which is the sweep's own move: a tune plan applied through tune's journal). One host has one
//! IRQ layout at a time, so a server holds at most one change: a [`TuneSlot`] names the test
//! holding it and its journal. The change is reverted when the test's data phase ends, when the
//! test fails (the client vanished, a refusal, a limit), when its thread unwinds from a panic
//! ([`HeldTune`] reverts on drop), and when the server stops ([`TuneSlot::close`] reverts
//! whatever is still held). Only a `kill -9` of the server leaves a change behind; its journal
//! stays for `wirespeed tune revert`.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use wirespeed_host::CpuSet;
use wirespeed_model::MoveReport;
use wirespeed_report::where_ran::cpus_text;

pub use crate::hooks::Refusal as TuneRefusal;
use crate::hooks::{AppliedChange, HostChange};

/// What a server started with `--allow-tune` may change: the hook that changes it.
#[derive(Clone)]
pub struct TuneConfig {
    pub change: Arc<dyn HostChange>,
}

impl TuneConfig {
    pub fn new(change: impl HostChange + 'static) -> TuneConfig {
        TuneConfig {
            change: Arc::new(change),
        }
    }
}

impl std::fmt::Debug for TuneConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TuneConfig")
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
            cfg.change.revert_journal(&journal);
        }
        Some(journal)
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
    number: u64,
    change: Box<dyn AppliedChange>,
    released: bool,
}

impl HeldTune<'_> {
    /// What the move did so far.
    pub fn report(&self) -> &MoveReport {
        self.change.report()
    }

    /// Revert now (once); the report says whether everything is back.
    pub fn release(&mut self) -> &MoveReport {
        if !self.released {
            self.released = true;
            let mut s = self.slot.lock();
            if s.holder.as_ref().map(|h| h.0) == Some(self.number) {
                self.change.revert();
                s.holder = None;
            } else {
                // The server's shutdown reverted it already.
                self.change.disarm();
            }
        }
        self.change.report()
    }
}

impl Drop for HeldTune<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Apply test `number`'s request to move the queue IRQs of its NIC to `cpus`. `peer` and
/// `local` are the control connection's addresses (the route to the peer names the NIC). The
/// request is checked first (its refusals come before a busy slot's), then applied while the
/// slot is held.
pub fn apply<'a>(
    slot: &'a TuneSlot,
    cfg: &TuneConfig,
    number: u64,
    cpus: &CpuSet,
    peer: IpAddr,
    local: Option<IpAddr>,
) -> Result<HeldTune<'a>, TuneRefusal> {
    if cpus.is_empty() {
        return Err(TuneRefusal(
            "the tune request names no CPU for the IRQs".into(),
        ));
    }
    let prepared = cfg.change.prepare_irq_move(cpus, peer, local)?;
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
    let change = prepared.apply()?;
    s.holder = Some((number, change.journal().to_string()));
    drop(s);
    Ok(HeldTune {
        slot,
        number,
        change,
        released: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::PreparedChange;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use wirespeed_model::MoveOutcome;

    /// A host change that records what happens to it.
    #[derive(Default)]
    struct Fake {
        applied: AtomicUsize,
        reverted: Arc<AtomicUsize>,
        journals_reverted: Mutex<Vec<String>>,
    }

    struct FakePrepared(Arc<AtomicUsize>, CpuSet);
    struct FakeApplied(Arc<AtomicUsize>, MoveReport, bool);

    impl HostChange for Arc<Fake> {
        fn prepare_irq_move(
            &self,
            cpus: &CpuSet,
            _peer: IpAddr,
            _local: Option<IpAddr>,
        ) -> Result<Box<dyn PreparedChange>, TuneRefusal> {
            if cpus.contains(99) {
                return Err(TuneRefusal("CPU 99 is not online".into()));
            }
            self.applied.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(FakePrepared(self.reverted.clone(), cpus.clone())))
        }

        fn revert_journal(&self, journal: &str) {
            self.journals_reverted
                .lock()
                .unwrap()
                .push(journal.to_string());
        }
    }

    impl PreparedChange for FakePrepared {
        fn apply(self: Box<Self>) -> Result<Box<dyn AppliedChange>, TuneRefusal> {
            let report = MoveReport {
                iface: "eth9".into(),
                cpus: self.1,
                outcome: MoveOutcome {
                    journal: "/j/1".into(),
                    moved: vec![40],
                    ..MoveOutcome::default()
                },
                ..MoveReport::default()
            };
            Ok(Box::new(FakeApplied(self.0, report, false)))
        }
    }

    impl AppliedChange for FakeApplied {
        fn report(&self) -> &MoveReport {
            &self.1
        }
        fn journal(&self) -> &str {
            &self.1.outcome.journal
        }
        fn revert(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.outcome.reverted = true;
        }
        fn disarm(&mut self) {
            self.2 = true;
        }
    }

    fn ip() -> IpAddr {
        "192.0.2.7".parse().unwrap()
    }

    #[test]
    fn one_change_at_a_time_reverted_on_release_and_drop() {
        let fake = Arc::new(Fake::default());
        let cfg = TuneConfig::new(fake.clone());
        let slot = TuneSlot::default();
        let mut held = apply(&slot, &cfg, 1, &CpuSet::from_cpus([3]), ip(), None).unwrap();
        assert_eq!(slot.holder(), Some(1));
        let busy = apply(&slot, &cfg, 2, &CpuSet::from_cpus([4]), ip(), None)
            .err()
            .unwrap();
        assert!(busy.0.contains("another test (#1)"), "{}", busy.0);
        // A bad request is refused for what it is, even while the slot is busy.
        let bad = apply(&slot, &cfg, 3, &CpuSet::from_cpus([99]), ip(), None)
            .err()
            .unwrap();
        assert!(bad.0.contains("not online"), "{}", bad.0);
        assert!(held.release().outcome.reverted);
        assert!(held.release().outcome.reverted, "released once");
        assert_eq!(fake.reverted.load(Ordering::SeqCst), 1);
        assert_eq!(slot.holder(), None);
        drop(held);
        assert_eq!(fake.reverted.load(Ordering::SeqCst), 1);
        {
            let _again = apply(&slot, &cfg, 4, &CpuSet::from_cpus([5]), ip(), None).unwrap();
        }
        assert_eq!(fake.reverted.load(Ordering::SeqCst), 2, "dropped: reverted");
        let none = apply(&slot, &cfg, 5, &CpuSet::new(), ip(), None)
            .err()
            .unwrap();
        assert!(none.0.contains("names no CPU"));
    }

    #[test]
    fn closing_the_slot_reverts_the_held_journal_and_refuses_new_changes() {
        let fake = Arc::new(Fake::default());
        let cfg = TuneConfig::new(fake.clone());
        let slot = TuneSlot::default();
        let mut held = apply(&slot, &cfg, 7, &CpuSet::from_cpus([3]), ip(), None).unwrap();
        assert_eq!(slot.close(Some(&cfg)).as_deref(), Some("/j/1"));
        assert_eq!(*fake.journals_reverted.lock().unwrap(), vec!["/j/1"]);
        // The test ends later: it finds the change gone and does not revert again.
        assert!(!held.release().outcome.reverted);
        assert_eq!(fake.reverted.load(Ordering::SeqCst), 0);
        let e = apply(&slot, &cfg, 8, &CpuSet::from_cpus([3]), ip(), None)
            .err()
            .unwrap();
        assert_eq!(e.0, "the server is shutting down");
        assert!(not_allowed(&CpuSet::from_cpus([3, 4]))
            .0
            .contains("--allow-tune (the client asked to move its NIC's queue IRQs to CPUs 3-4)"));
    }
}
