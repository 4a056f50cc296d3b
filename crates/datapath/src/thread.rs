//! What TCP and UDP workers share that is not about bytes: a thread pinned before it reports
//! ready, the live counters of its streams, their sockets borrowed while it runs, and the join.

use crate::cpu::{self, CpuNow, ThreadWatch};
use crate::DatapathError;
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// A running worker thread with report `R` and per-stream live counters `C`
/// (see [`crate::WorkerHandle`] and [`crate::udp::UdpWorkerHandle`]).
///
/// The thread outlives its work: once `run` returns it waits, idle, until the handle is joined
/// or dropped, so that its scheduling counters (`/proc/self/task/TID`) can still be read at
/// their final values after its streams ended (by a stop, at the peer's end of stream, or on an
/// error).
pub struct WorkerThread<R, C> {
    thread: std::thread::JoinHandle<R>,
    tid: u32,
    /// Where it runs now, as it notes at each I/O call.
    cpu_now: Arc<CpuNow>,
    /// Set when `run` has returned.
    done: Arc<AtomicBool>,
    /// Gets a message (or closes) when `run` has returned.
    done_rx: Receiver<()>,
    /// Dropped to let the thread end.
    release: Option<SyncSender<()>>,
    counters: Vec<(u32, Arc<C>)>,
    fds: Vec<(u32, RawFd)>,
}

impl<R, C> WorkerThread<R, C> {
    /// Live counters of every stream (cheap to read at any time).
    pub fn counters(&self) -> Vec<(u32, Arc<C>)> {
        self.counters.clone()
    }
    /// Stream `id`'s socket, borrowed for as long as this handle lives (e.g. for
    /// [`crate::tcp::tcp_info`] while the worker runs); `None` for a stream it does not run.
    pub fn stream_fd(&self, id: u32) -> Option<BorrowedFd<'_>> {
        let fd = self.fds.iter().find(|(i, _)| *i == id)?.1;
        // SAFETY: the worker owns each of its sockets from spawn until its report hands them
        // back through `join`, which consumes this handle; so while `&self` lives the fd is
        // open and refers to this stream's socket.
        Some(unsafe { BorrowedFd::borrow_raw(fd) })
    }
    /// The thread's kernel id (its `/proc/self/task` entry while it runs).
    pub fn tid(&self) -> u32 {
        self.tid
    }
    /// The thread as an observer is told of it: its id, and where it runs now.
    pub fn watch(&self) -> ThreadWatch {
        ThreadWatch {
            tid: self.tid,
            cpu: Arc::clone(&self.cpu_now),
            role: None,
        }
    }
    /// True once every stream of this worker has ended (stop, EOF, budget, error).
    pub fn is_finished(&self) -> bool {
        self.done.load(Ordering::Acquire) || self.thread.is_finished()
    }
    /// Wait until every stream of this worker has ended (after a [`crate::Control::stop`],
    /// within about [`crate::POLL_INTERVAL`]); the thread still exists, idle, until
    /// [`WorkerThread::join`].
    pub fn wait_finished(&self) {
        if !self.is_finished() {
            // Err: the thread ended without a word (a panic); either way it is finished
            let _ = self.done_rx.recv();
        }
    }
    /// [`WorkerThread::wait_finished`], giving up at `deadline`; whether it finished.
    pub fn wait_finished_until(&self, deadline: std::time::Instant) -> bool {
        if self.is_finished() {
            return true;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        // Disconnected: the thread ended without a word (a panic); finished either way
        !matches!(
            self.done_rx.recv_timeout(left),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        ) || self.is_finished()
    }
    /// Wait for the worker to end and collect its report (and the sockets).
    pub fn join(mut self) -> Result<R, DatapathError> {
        drop(self.release.take());
        self.thread
            .join()
            .map_err(|_| DatapathError::WorkerPanicked)
    }
}

/// Start `run` on a thread named `{prefix}-cpu{N}` (or `{prefix}` when not pinned), with a
/// fresh counter per stream of `streams` (stream id, socket fd; in spec order, the order `run`
/// gets the counters in), and the cell `run` notes where it runs in ([`CpuNow`]). Returns once
/// the thread runs, pinned to `cpu` if asked. A pin failure
/// is returned here: the thread then ends with `unpinned` without calling `run`, and drops
/// what `run` captured (the spec's sockets are closed).
pub(crate) fn spawn_pinned<R, C>(
    prefix: &str,
    cpu: Option<u32>,
    streams: Vec<(u32, RawFd)>,
    unpinned: R,
    run: impl FnOnce(Vec<Arc<C>>, Arc<CpuNow>) -> R + Send + 'static,
) -> Result<WorkerThread<R, C>, DatapathError>
where
    R: Send + 'static,
    C: Default + Send + Sync + 'static,
{
    let counters: Vec<(u32, Arc<C>)> = streams
        .iter()
        .map(|&(id, _)| (id, Arc::new(C::default())))
        .collect();
    let ctrs: Vec<Arc<C>> = counters.iter().map(|(_, c)| Arc::clone(c)).collect();
    let (tx, rx) = sync_channel::<Result<u32, DatapathError>>(1);
    let done = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = sync_channel::<()>(1);
    let (release, released) = sync_channel::<()>(0);
    let done_here = Arc::clone(&done);
    let cpu_now = Arc::new(CpuNow::default());
    let cpu_here = Arc::clone(&cpu_now);
    let name = match cpu {
        Some(c) => format!("{prefix}-cpu{c}"),
        None => prefix.to_string(),
    };
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            if let Some(c) = cpu {
                if let Err(e) = cpu::pin_current_thread(c) {
                    let _ = tx.send(Err(e));
                    return unpinned;
                }
            }
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let _ = tx.send(Ok(u32::try_from(tid).unwrap_or(0)));
            let report = run(ctrs, cpu_here);
            done_here.store(true, Ordering::Release);
            let _ = done_tx.send(());
            // idle until joined (or the handle is dropped): see the type's docs
            let _ = released.recv();
            report
        })
        .map_err(DatapathError::Spawn)?;
    match rx.recv() {
        Ok(Ok(tid)) => Ok(WorkerThread {
            thread,
            tid,
            cpu_now,
            done,
            done_rx,
            release: Some(release),
            counters,
            fds: streams,
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(DatapathError::WorkerPanicked)
        }
    }
}
