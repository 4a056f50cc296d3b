//! What TCP and UDP workers share that is not about bytes: a thread pinned before it reports
//! ready, the live counters of its streams, their sockets borrowed while it runs, and the join.

use crate::{cpu, DatapathError};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::Arc;

/// A running worker thread with report `R` and per-stream live counters `C`
/// (see [`crate::WorkerHandle`] and [`crate::udp::UdpWorkerHandle`]).
pub struct WorkerThread<R, C> {
    thread: std::thread::JoinHandle<R>,
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
    /// True once every stream of this worker has ended (stop, EOF, budget, error).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
    /// Wait for the worker to end and collect its report (and the sockets).
    pub fn join(self) -> Result<R, DatapathError> {
        self.thread
            .join()
            .map_err(|_| DatapathError::WorkerPanicked)
    }
}

/// Start `run` on a thread named `{prefix}-cpu{N}` (or `{prefix}` when not pinned), with a
/// fresh counter per stream of `streams` (stream id, socket fd; in spec order, the order `run`
/// gets the counters in). Returns once the thread runs, pinned to `cpu` if asked. A pin failure
/// is returned here: the thread then ends with `unpinned` without calling `run`, and drops
/// what `run` captured (the spec's sockets are closed).
pub(crate) fn spawn_pinned<R, C>(
    prefix: &str,
    cpu: Option<u32>,
    streams: Vec<(u32, RawFd)>,
    unpinned: R,
    run: impl FnOnce(Vec<Arc<C>>) -> R + Send + 'static,
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
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<(), DatapathError>>(1);
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
            let _ = tx.send(Ok(()));
            run(ctrs)
        })
        .map_err(DatapathError::Spawn)?;
    match rx.recv() {
        Ok(Ok(())) => Ok(WorkerThread {
            thread,
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
