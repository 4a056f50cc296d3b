//! What the engine asks of the layers above it, as traits the binary implements and passes in.
//!
//! The engine measures; it does not decide where the work ran or how to change the host. Two
//! hooks plug those in (the drive crate implements both over a `wirespeed_host::Root`, so a
//! captured tree works as well as the live host; the command line wires them into the
//! configurations):
//! - [`Observe`]: watch one end of a test (per-CPU counters, the NIC's interrupts) from the
//!   start of its data phase to its final tick, and decide the verdict once both ends'
//!   observations are in. Without it a test carries no observation.
//! - [`HostChange`]: a client's tune request on a server (`irq_cpus`): check it, move the queue
//!   IRQs of the test's NIC, and put them back. The engine's [`crate::tune::TuneSlot`] keeps one
//!   change at a time and reverts it when the test ends, fails, unwinds or the server stops.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

pub use wirespeed_datapath::ThreadWatch;

use wirespeed_model::observation::{
    EndObservation, IntervalObservation, Role, TcpLimits, WorkerRun,
};
use wirespeed_model::verdict::{Measured, PathCeiling};
use wirespeed_model::{Cost, CpuSet, MoveReport, TestObservation, Verdict};

/// Observation of the ends of tests.
pub trait Observe: Send + Sync {
    /// Start observing this end of a test (the first snapshot). `peer` and `local` are the
    /// control connection's addresses (the route to the peer names the NIC). `None` when the
    /// host cannot be observed; observation never fails a test.
    fn start(
        &self,
        role: Role,
        peer: IpAddr,
        local: Option<IpAddr>,
    ) -> Option<Box<dyn EndObserver>>;

    /// What limited a test, from both ends' observation and what the test measured (the
    /// receiver's throughput over the test and per interval, retransmits, bytes, MSS, RTT,
    /// UDP loss: whatever this end's report knows).
    fn verdict(&self, test: &TestObservation, measured: &Measured) -> Verdict;

    /// The path model's ceiling for what the test measured, where it informs the verdict
    /// (TCP whose loss bound the rate); `None` by default.
    fn ceiling(&self, _test: &TestObservation, _measured: &Measured) -> Option<PathCeiling> {
        None
    }

    /// What a bit cost at each end and the cores the link's rate needs (`wirespeed.cost`);
    /// `None` by default.
    fn cost(&self, _test: &TestObservation, _measured: &Measured) -> Option<Cost> {
        None
    }
}

/// One end of one test under observation.
pub trait EndObserver: Send {
    /// An interval tick (seconds since the start of the test): the interval's observation,
    /// when there is one (it goes to a wirespeed peer while the test runs).
    fn tick(&mut self, start: f64, end: f64) -> Option<IntervalObservation>;

    /// What is known of this end before any interval (interface, NIC IRQs, topology): see
    /// [`EndObservation::head`]. `None` by default.
    fn head(&self) -> Option<EndObservation> {
        None
    }

    /// This end's worker threads (kernel thread ids, and where each runs now as it notes
    /// itself), once they run: the observer reads these and no other thread of the process
    /// (over `--loopback` the other end's workers run in the same process). Until told, it reads
    /// every worker thread. Nothing by default.
    fn own_threads(&mut self, _threads: &[ThreadWatch]) {}

    /// The engine is about to stop the workers, whose threads then end: read them now, so
    /// that the last interval and the totals still hold what they ran. Nothing by default.
    fn hold_threads(&mut self) {}

    /// The final tick: close the totals with the workers and the senders' `TCP_INFO` limits.
    fn close(
        self: Box<Self>,
        workers: &[WorkerRun],
        tcp: Option<TcpLimits>,
    ) -> Option<EndObservation>;
}

/// A shared [`Observe`] implementation in a configuration.
#[derive(Clone)]
pub struct ObserveHook(pub Arc<dyn Observe>);

impl ObserveHook {
    pub fn new(o: impl Observe + 'static) -> ObserveHook {
        ObserveHook(Arc::new(o))
    }
}

impl fmt::Debug for ObserveHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ObserveHook")
    }
}

/// Why a host change is refused; the words go to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// A server's changes to its host on a client's request.
pub trait HostChange: Send + Sync {
    /// Check a request to move the queue IRQs of the NIC carrying the test (to the peer at
    /// `peer`, from `local`) to `cpus`, and find them; nothing changes yet.
    fn prepare_irq_move(
        &self,
        cpus: &CpuSet,
        peer: IpAddr,
        local: Option<IpAddr>,
    ) -> Result<Box<dyn PreparedChange>, Refusal>;

    /// Revert a change's journal (the server stops while a test still holds it).
    fn revert_journal(&self, journal: &str);
}

/// A checked change, not applied yet.
pub trait PreparedChange: Send {
    /// Apply it (through a journal). A change that moved nothing is reverted and refused.
    fn apply(self: Box<Self>) -> Result<Box<dyn AppliedChange>, Refusal>;
}

/// An applied change: reverted by [`AppliedChange::revert`], or when dropped.
pub trait AppliedChange: Send {
    /// What the change did (and, once reverted, `reverted`).
    fn report(&self) -> &MoveReport;
    /// Host path of its journal.
    fn journal(&self) -> &str;
    /// Revert now (once).
    fn revert(&mut self);
    /// Give up the duty to revert (someone else reverted the journal).
    fn disarm(&mut self);
}
