//! The observer the engine runs beside every test, at each end.
//!
//! [`Observer::new`] takes a first snapshot of `/proc/stat`, `/proc/softirqs` and the NIC's rows
//! of `/proc/interrupts`; [`Observer::sample`] takes another at each interval and keeps the
//! difference ([`delta`], a pure function of two snapshots); [`Observer::finish`] adds the
//! difference over the whole test and returns the [`EndObservation`]. Reading costs three small
//! procfs reads per interval.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
pub use wirespeed_datapath::{CpuNow, ThreadWatch};
use wirespeed_host::cgroup::{self, CpuLimit, CpuStat};
use wirespeed_host::interrupts;
use wirespeed_host::softirqs::{self, Softirqs, NET_RX, NET_TX};
use wirespeed_host::stack::{self, TcpRxDrops, UdpRx};
use wirespeed_host::stat::{self, CpuTimes, ProcStat};
use wirespeed_host::{CpuSet, Root, RootError};

use crate::nic::{iface_facts, IfaceFacts};
use crate::route::iface_for_peer;
use crate::topology::Topology;
use wirespeed_model::observation::{CpuQuota, ObserverUse, ThreadUse};
use wirespeed_model::observation::{
    CpuUse, EndObservation, IntervalObservation, Percent, Role, RxDrops, SoftnetUse, TcpLimits,
    WorkerRun,
};

/// Why an observation could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error(transparent)]
    Read(#[from] RootError),
    #[error(transparent)]
    Stat(#[from] stat::StatError),
}

/// How the observer finds the NIC whose interrupts it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicSpec {
    /// The interface that routes to the peer (`local`: the test's own address, a fallback).
    Peer { peer: IpAddr, local: Option<IpAddr> },
    /// A named interface.
    Iface(String),
    /// Explicit IRQ numbers (no interface facts).
    Irqs(Vec<u32>),
    /// Count no NIC interrupts.
    None,
}

/// One reading of the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub stat: ProcStat,
    pub softirqs: Option<Softirqs>,
    /// The NIC's interrupts per CPU (summed over its IRQs); `None` when not counted.
    pub nic: Option<BTreeMap<u32, u64>>,
    /// This process's worker threads (see [`worker_threads`]).
    pub threads: Vec<ThreadSample>,
    /// `/proc/net/softnet_stat` by CPU: (backlog drops, time squeezes); `None` when unreadable.
    pub softnet: Option<BTreeMap<u32, (u64, u64)>>,
    /// TCP's receive-side drop counters of this network namespace; `None` when unreadable.
    pub tcp_rx: Option<TcpRxDrops>,
    /// UDP's receive counters of this network namespace; `None` when unreadable.
    pub udp_rx: Option<UdpRx>,
    /// When it was read (monotonic): the wall time between two snapshots for the threads'
    /// shares, finer than `/proc/stat`'s ticks. `None` for a snapshot built from texts.
    pub taken: Option<std::time::Instant>,
}

/// One worker thread's scheduling counters at a snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadSample {
    pub tid: u32,
    /// Its name (`comm`), read once per thread and shared by every reading of it.
    pub name: Arc<str>,
    /// `schedstat`: nanoseconds run and waited on a run queue.
    pub run_ns: u64,
    pub wait_ns: u64,
    /// The CPU it last ran on: where it noted it runs ([`CpuNow`]), else `stat`'s `processor`.
    pub cpu: Option<u32>,
    /// Which way its streams carry data, where the engine said ([`ThreadWatch::role`]).
    pub role: Option<Role>,
}

/// Names of the engine's worker threads (`ws-dp`, `ws-dp-cpuN`, `ws-udp`, `ws-udp-cpuN`).
pub fn is_worker_thread(name: &str) -> bool {
    // `ws-udp-setup` hands out UDP connect words: a helper, not a data worker
    (name.starts_with("ws-dp") || name.starts_with("ws-udp")) && name != "ws-udp-setup"
}

/// `/proc/PID/task/TID/schedstat`: nanoseconds on the CPU and waiting on a run queue.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    parse_schedstat_bytes(text.as_bytes())
}

/// [`parse_schedstat`] of the bytes as read (no copy, nothing allocated).
pub fn parse_schedstat_bytes(text: &[u8]) -> Option<(u64, u64)> {
    let mut f = words(text);
    Some((number(f.next()?)?, number(f.next()?)?))
}

/// `/proc/PID/task/TID/stat`'s `processor` (field 39), read after the command's closing
/// parenthesis (a name may hold spaces and parentheses).
pub fn parse_stat_processor(text: &str) -> Option<u32> {
    parse_stat_processor_bytes(text.as_bytes())
}

/// [`parse_stat_processor`] of the bytes as read (no copy, nothing allocated; a name that is
/// not UTF-8 does not matter: only what follows it is read).
pub fn parse_stat_processor_bytes(text: &[u8]) -> Option<u32> {
    let rest = &text[text.iter().rposition(|&b| b == b')')? + 1..];
    // fields 3.. follow; `processor` is field 39
    number(words(rest).nth(36)?)
}

/// The words of a text split at ASCII whitespace (`str::split_ascii_whitespace` of bytes).
fn words(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
}

/// A decimal word, read as `str::parse` reads it.
fn number<T: std::str::FromStr>(word: &[u8]) -> Option<T> {
    std::str::from_utf8(word).ok()?.parse().ok()
}

/// What a read of `n` bytes into a buffer of `len` gave, without a word the buffer may have
/// cut: when it filled the buffer, the text up to its last whitespace.
fn whole_words(buf: &[u8], n: usize) -> &[u8] {
    let text = &buf[..n];
    if n < buf.len() {
        return text;
    }
    match text.iter().rposition(u8::is_ascii_whitespace) {
        Some(i) => &text[..=i],
        None => &[],
    }
}

/// The most a worker's `schedstat` and `stat` are read of (`stat`'s 52 fields are under 1,100
/// bytes; `processor` is the 39th).
const TASK_FILE_BYTES: usize = 2048;

/// This process's worker threads and their counters, through `root` (none on a captured tree
/// without `/proc/self/task`): those of `only` when given, else every thread named as a worker.
/// A thread that ends while read is left out.
pub fn worker_threads(root: &Root, only: Option<&[u32]>) -> Vec<ThreadSample> {
    worker_threads_with(root, only, &mut Reader::default())
}

/// [`worker_threads`] with `reader`'s buffers and the threads it knows: a worker's `comm` is
/// read once, and its `schedstat` and `stat` are held open ([`Root::open_held`]) and read again
/// at each interval, one `pread` each into one buffer the reader keeps, parsed where they lie
/// (as many as [`Reader`]'s share of the open-file limit allows; past it, and on a recording
/// root, they are opened by path each time). A worker that notes where it runs
/// ([`Reader::watch`]: the engine's do, at each I/O call) is not asked: its `stat` is neither
/// held nor read, nor its affinity looked at, until it has noted a CPU. Else, on the live host
/// a worker pinned to one CPU is there: its `stat` is not read (see [`pinned_cpu`]). A thread
/// whose files no longer read has ended: left out, its files closed. The ids listed (`only` not
/// given) are in numeric order.
fn worker_threads_with(
    root: &Root,
    only: Option<&[u32]>,
    reader: &mut Reader,
) -> Vec<ThreadSample> {
    let budget = reader.held_budget(root);
    let live = root.is_live();
    let Reader {
        tasks,
        small,
        path,
        held,
        tids,
        task_bytes,
        noted,
        ..
    } = reader;
    match only {
        Some(t) => {
            tids.clear();
            tids.extend_from_slice(t);
        }
        None => {
            // sorted, as numbers
            root.list_ids("/proc/self/task", tids);
            // an id no longer listed may come back as another thread: forgotten, its files
            // closed and no longer counted
            tasks.retain(|t, task| {
                let listed = tids.binary_search(t).is_ok();
                if !listed {
                    *held -= task.held_files();
                    noted.remove(t);
                }
                listed
            });
        }
    }
    if task_bytes.len() != TASK_FILE_BYTES {
        task_bytes.resize(TASK_FILE_BYTES, 0);
    }
    let mut read = |n: u32, file: &str, buf: &mut String| {
        use std::fmt::Write;
        path.clear();
        let _ = write!(path, "/proc/self/task/{n}/{file}");
        root.read_into(path, buf).is_ok()
    };
    let mut out = Vec::with_capacity(tids.len());
    for &n in tids.iter() {
        let task = match tasks.entry(n) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                if !read(n, "comm", small) {
                    continue;
                }
                let name: Arc<str> = Arc::from(small.trim());
                if !is_worker_thread(&name) {
                    // not remembered: a thread may name itself a moment after it starts
                    continue;
                }
                // a worker that notes its CPU needs no `stat`
                let noting = noted.contains_key(&n);
                let open = |f: &str| root.open_held(&format!("/proc/self/task/{n}/{f}")).ok();
                let files = (*held + 2 - usize::from(noting) <= budget)
                    .then(|| {
                        let sched = open("schedstat")?;
                        let stat = if noting { None } else { Some(open("stat")?) };
                        Some((sched, stat))
                    })
                    .flatten();
                let task = e.insert(Task {
                    name,
                    files,
                    pinned: None,
                    readings: 0,
                });
                *held += task.held_files();
                task
            }
        };
        // on the live host, a thread allowed one CPU only is there: its `stat` (the kernel's
        // dearest file to print, for `processor` alone) is not read. A pinned thread's
        // affinity is looked at each reading (it may be let go); a floating one's at its first
        // and every `AFFINITY_EVERY`th (its `stat` is read meanwhile: nothing is missed)
        // and a worker that notes where it runs is not asked at all
        let (noted_cpu, role) = noted
            .get(&n)
            .map_or((None, None), |(c, role)| (c.get(), *role));
        if noted_cpu.is_none()
            && live
            && (task.pinned.is_some() || task.readings % AFFINITY_EVERY == 0)
        {
            task.pinned = pinned_cpu(n, task.pinned);
        }
        task.readings = task.readings.wrapping_add(1);
        let pinned = noted_cpu.or(task.pinned);
        let counters = match &task.files {
            // one `pread` each into the one buffer, the words parsed where they lie
            Some((sched, stat)) => {
                let buf = &mut task_bytes[..];
                let run_wait = sched
                    .pread(0, &mut buf[..128])
                    .ok()
                    .filter(|&k| k > 0)
                    .and_then(|k| parse_schedstat_bytes(whole_words(&buf[..128], k)));
                run_wait.map(|rw| {
                    let cpu = pinned.or_else(|| match stat {
                        Some(stat) => stat
                            .pread(0, buf)
                            .ok()
                            .and_then(|k| parse_stat_processor_bytes(whole_words(buf, k))),
                        // a noting worker before its first note: its `stat` by path
                        None => read(n, "stat", small)
                            .then(|| parse_stat_processor(small))
                            .flatten(),
                    });
                    (rw, cpu)
                })
            }
            None => read(n, "schedstat", small)
                .then(|| parse_schedstat(small))
                .flatten()
                .map(|rw| {
                    let cpu = pinned.or_else(|| {
                        read(n, "stat", small)
                            .then(|| parse_stat_processor(small))
                            .flatten()
                    });
                    (rw, cpu)
                }),
        };
        let Some(((run_ns, wait_ns), cpu)) = counters else {
            // ended: its files closed, its id forgotten (it may come back as another thread)
            noted.remove(&n);
            if let Some(t) = tasks.remove(&n) {
                *held -= t.held_files();
            }
            continue;
        };
        out.push(ThreadSample {
            tid: n,
            name: Arc::clone(&task.name),
            run_ns,
            wait_ns,
            cpu,
            role,
        });
    }
    out
}

/// A worker thread a [`Reader`] knows: its name (`comm`, read once) and, when held open, its
/// `schedstat` and (for a worker that did not note where it runs when first read) its `stat`.
#[derive(Debug)]
struct Task {
    name: Arc<str>,
    files: Option<(wirespeed_host::HeldFile, Option<wirespeed_host::HeldFile>)>,
    /// The one CPU it was allowed at the last look at its affinity (live host only).
    pinned: Option<u32>,
    /// How many times it was read.
    readings: u32,
}

impl Task {
    /// How many files it holds open.
    fn held_files(&self) -> usize {
        self.files
            .as_ref()
            .map_or(0, |(_, stat)| 1 + usize::from(stat.is_some()))
    }
}

/// A floating worker's affinity is looked at once in this many readings (a pinned one's at each).
const AFFINITY_EVERY: u32 = 16;

/// The one CPU thread `tid` of this process may run on, if it may run on one only
/// (`sched_getaffinity`: a cheaper call than printing its `stat`); `last`, the one it had at the
/// reading before, is looked at first.
fn pinned_cpu(tid: u32, last: Option<u32>) -> Option<u32> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(tid).ok()?)?;
    let set = rustix::thread::sched_getaffinity(Some(pid)).ok()?;
    if set.count() != 1 {
        return None;
    }
    let max = rustix::thread::CpuSet::MAX_CPU;
    last.filter(|&c| (c as usize) < max && set.is_set(c as usize))
        .or_else(|| {
            (0..max)
                .find(|&i| set.is_set(i))
                .and_then(|i| u32::try_from(i).ok())
        })
}

/// What the observer keeps from one reading to the next so that an interval costs little on a
/// large host: the texts' buffers (reused, never reallocated once large enough), where the NIC's
/// counts come from (and where its rows lie in `/proc/interrupts`), and the worker threads'
/// names and open files.
#[derive(Debug, Default)]
pub struct Reader {
    stat: String,
    softirqs: String,
    interrupts: String,
    small: String,
    path: String,
    /// Bytes read at an offset of a held file, and one row's counts.
    bytes: Vec<u8>,
    counts: Vec<u64>,
    /// The worker threads' ids being read, and the buffer their held files are read into
    /// ([`TASK_FILE_BYTES`], one `pread` a file).
    tids: Vec<u32>,
    task_bytes: Vec<u8>,
    /// The possible CPUs, when every NIC IRQ's `/sys/kernel/irq/N/per_cpu_count` was read whole
    /// at the start: the NIC's counts come from those files (a few KB each) instead of the
    /// whole of `/proc/interrupts` (one to twenty MB on a host with hundreds of CPUs and
    /// thousands of vectors, every row printed by the kernel at each read).
    per_irq: Option<Vec<u32>>,
    /// Where the NIC's rows lay in `/proc/interrupts` at its last whole reading: the readings
    /// after it read the header and those rows only (see [`interrupts::RowSpans`]), and read
    /// the whole text again where they moved.
    rows: Option<interrupts::RowSpans>,
    /// Worker threads by id: `comm` is read once per thread, its counters' files held open.
    tasks: BTreeMap<u32, Task>,
    /// Where the workers the reader was told of note they run ([`Reader::watch`]), and which
    /// way their streams carry data, by id.
    noted: BTreeMap<u32, (Arc<CpuNow>, Option<Role>)>,
    /// Files held open for threads now, and how many may be ([`Reader::held_budget`]).
    held: usize,
    budget: Option<usize>,
}

impl Reader {
    /// A reader for the NIC IRQs `irqs` under `root`: the per-IRQ files when every one of them
    /// reads whole, else `/proc/interrupts` (only the NIC's rows parsed).
    pub fn new(root: &Root, irqs: &[u32]) -> Reader {
        let mut r = Reader::default();
        if irqs.is_empty() {
            return r;
        }
        let Some(possible) = root.cpu_list_opt("/sys/devices/system/cpu/possible") else {
            return r;
        };
        let possible: Vec<u32> = possible.iter().collect();
        r.per_irq = Some(possible);
        if r.per_irq_counts(root, irqs).is_none() {
            r.per_irq = None;
        }
        r
    }

    /// How many files the reader may hold open for worker threads: an eighth of the open-file
    /// limit (the test's sockets need the rest; 2,500 at the usual 20,000, 128 at 1,024), none
    /// on a recording root (what a held file reads is not recorded).
    fn held_budget(&mut self, root: &Root) -> usize {
        if root.is_recording() {
            return 0;
        }
        *self.budget.get_or_insert_with(|| {
            let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
            usize::try_from(limit.unwrap_or(8192) / 8).unwrap_or(usize::MAX)
        })
    }

    /// Whether the NIC's counts are read per IRQ (`/sys/kernel/irq/N/per_cpu_count`).
    pub fn per_irq(&self) -> bool {
        self.per_irq.is_some()
    }

    /// Whether the next reading of `/proc/interrupts` reads only the NIC's rows (where the
    /// last whole reading found them).
    pub fn nic_rows_known(&self) -> bool {
        self.rows.is_some()
    }

    /// The sums over `irqs` of their `per_cpu_count` files; `None` when one is missing or cut.
    fn per_irq_counts(&mut self, root: &Root, irqs: &[u32]) -> Option<BTreeMap<u32, u64>> {
        use std::fmt::Write;
        let possible = self.per_irq.as_deref()?;
        let mut sums = vec![0u64; possible.len()];
        for irq in irqs {
            self.path.clear();
            let _ = write!(self.path, "/sys/kernel/irq/{irq}/per_cpu_count");
            root.read_into(&self.path, &mut self.small).ok()?;
            interrupts::add_per_cpu_count(&self.small, &mut sums)?;
        }
        Some(possible.iter().copied().zip(sums).collect())
    }

    /// The NIC's rows of `/proc/interrupts` where `rows` says they lie: the header and each
    /// run of rows read at its offset; `None` where they are not there any more.
    fn read_rows(
        &mut self,
        root: &Root,
        rows: &interrupts::RowSpans,
    ) -> Option<BTreeMap<u32, u64>> {
        let f = root.open_held("/proc/interrupts").ok()?;
        let header = rows.header();
        f.read_at(0, header.len(), &mut self.bytes).ok()?;
        if self.bytes != header {
            return None;
        }
        let mut sums = vec![0u64; rows.cpus().len()];
        for (i, (offset, len)) in rows.ranges().enumerate() {
            f.read_at(offset, len, &mut self.bytes).ok()?;
            if !rows.add_run(i, &self.bytes, &mut self.counts, &mut sums) {
                return None;
            }
        }
        Some(rows.cpus().iter().copied().zip(sums).collect())
    }

    /// This process's worker threads (see [`worker_threads`]), with the names this reader knows.
    pub fn threads(&mut self, root: &Root, only: Option<&[u32]>) -> Vec<ThreadSample> {
        worker_threads_with(root, only, self)
    }

    /// Where these threads note they run: read from them instead of their `stat` (and their
    /// affinity) from the next reading that first meets each of them.
    pub fn watch(&mut self, threads: &[ThreadWatch]) {
        for t in threads {
            self.noted.insert(t.tid, (Arc::clone(&t.cpu), t.role));
        }
    }

    /// The NIC's interrupts per CPU, summed over `irqs`: per IRQ when the start found those
    /// files whole (and this reading did too), else from `/proc/interrupts` — its NIC rows only
    /// where the last whole reading found them, else the whole text (its buffer kept only while
    /// the rows do not stay put: 22 MB at 512 CPUs and 4,000 vectors).
    pub fn nic(&mut self, root: &Root, irqs: &[u32]) -> Option<BTreeMap<u32, u64>> {
        if irqs.is_empty() {
            return None;
        }
        if self.per_irq.is_some() {
            if let Some(m) = self.per_irq_counts(root, irqs) {
                return Some(m);
            }
        }
        let mut moved = false;
        if let Some(rows) = self.rows.take() {
            if let Some(m) = self.read_rows(root, &rows) {
                self.rows = Some(rows);
                return Some(m);
            }
            moved = true;
        }
        root.read_into("/proc/interrupts", &mut self.interrupts)
            .ok()?;
        let (cpus, sums, rows) = interrupts::sum_rows_at(&self.interrupts, irqs).ok()?;
        if !root.is_recording() {
            self.rows = rows;
            if self.rows.is_some() && !moved {
                self.interrupts = String::new();
            }
        }
        Some(cpus.into_iter().zip(sums).collect())
    }
}

impl Snapshot {
    /// Build a snapshot from file texts (`interrupts` only matters when `irqs` is not empty).
    pub fn from_texts(
        stat_text: &str,
        softirqs_text: Option<&str>,
        interrupts_text: Option<&str>,
        irqs: &[u32],
    ) -> Result<Snapshot, ObserveError> {
        let stat = stat::parse(stat_text)?;
        let softirqs = softirqs_text.and_then(|t| softirqs::parse(t).ok());
        let nic = if irqs.is_empty() {
            None
        } else {
            interrupts_text
                .and_then(|t| interrupts::sum_rows(t, irqs).ok())
                .map(|(cpus, sums)| cpus.into_iter().zip(sums).collect())
        };
        Ok(Snapshot {
            stat,
            softirqs,
            nic,
            ..Snapshot::default()
        })
    }

    /// Read a snapshot from the host under `root`, with the worker threads of `threads` (see
    /// [`worker_threads`]).
    pub fn read(
        root: &Root,
        irqs: &[u32],
        threads: Option<&[u32]>,
    ) -> Result<Snapshot, ObserveError> {
        Snapshot::read_with(root, irqs, threads, &mut Reader::new(root, irqs))
    }

    /// [`Snapshot::read`] with the buffers and choices `reader` keeps between readings.
    pub fn read_with(
        root: &Root,
        irqs: &[u32],
        threads: Option<&[u32]>,
        reader: &mut Reader,
    ) -> Result<Snapshot, ObserveError> {
        root.read_into("/proc/stat", &mut reader.stat)?;
        let stat = stat::parse(&reader.stat)?;
        let softirqs = root
            .read_into("/proc/softirqs", &mut reader.softirqs)
            .ok()
            .and_then(|()| softirqs::parse(&reader.softirqs).ok());
        let nic = reader.nic(root, irqs);
        let mut s = Snapshot {
            stat,
            softirqs,
            nic,
            ..Snapshot::default()
        };
        s.threads = worker_threads_with(root, threads, reader);
        s.taken = Some(std::time::Instant::now());
        let online: CpuSet = s.stat.cpus.keys().copied().collect();
        s.softnet = stack::read_softnet(root, Some(&online)).map(|rows| {
            rows.iter()
                .filter_map(|r| Some((r.cpu?, (r.dropped, r.time_squeeze))))
                .collect()
        });
        s.tcp_rx = stack::read_tcp_rx_drops(root);
        s.udp_rx = stack::read_udp_rx(root);
        Ok(s)
    }
}

/// Did this CPU do anything worth a line: ≥ 1 % busy, a NIC interrupt, a network softirq, or a
/// worker on it.
fn did_work(c: &CpuUse, app: &wirespeed_host::CpuSet) -> bool {
    c.busy().get() >= 1.0 || c.nic_irqs > 0 || c.net_rx > 0 || c.net_tx > 0 || app.contains(c.cpu)
}

fn shares(d: &CpuTimes) -> Option<[Percent; 6]> {
    let total = d.total();
    if total == 0 {
        return None;
    }
    Some([
        Percent::of(d.user + d.nice, total),
        Percent::of(d.system, total),
        Percent::of(d.irq, total),
        Percent::of(d.softirq, total),
        Percent::of(d.steal, total),
        Percent::of(d.idle + d.iowait, total),
    ])
}

/// The interval between two snapshots: per-CPU shares and event counts, for the CPUs that did
/// work. Pure.
pub fn delta(
    before: &Snapshot,
    after: &Snapshot,
    workers: &[WorkerRun],
    tcp: Option<TcpLimits>,
) -> IntervalObservation {
    let diff = |a: Option<&BTreeMap<u32, u64>>, b: Option<&BTreeMap<u32, u64>>, cpu: u32| {
        let a = a.and_then(|m| m.get(&cpu)).copied().unwrap_or(0);
        let b = b.and_then(|m| m.get(&cpu)).copied();
        b.map_or(0, |b| b.saturating_sub(a))
    };
    let rx = |s: &Snapshot| s.softirqs.as_ref().map(|x| x.per_cpu(NET_RX));
    let tx = |s: &Snapshot| s.softirqs.as_ref().map(|x| x.per_cpu(NET_TX));
    let (rx0, rx1, tx0, tx1) = (rx(before), rx(after), tx(before), tx(after));
    let mut obs = IntervalObservation {
        workers: workers.to_vec(),
        tcp,
        ..Default::default()
    };
    obs.threads = thread_uses(before, after);
    obs.rx_drops = rx_drops(before, after);
    let app = obs.app_cpus();
    for (&cpu, now) in &after.stat.cpus {
        let then = before.stat.cpus.get(&cpu).copied().unwrap_or_default();
        let Some([user, system, irq, softirq, steal, idle]) = shares(&now.since(&then)) else {
            continue;
        };
        let c = CpuUse {
            cpu,
            user,
            system,
            irq,
            softirq,
            steal,
            idle,
            nic_irqs: diff(before.nic.as_ref(), after.nic.as_ref(), cpu),
            net_rx: diff(rx0.as_ref(), rx1.as_ref(), cpu),
            net_tx: diff(tx0.as_ref(), tx1.as_ref(), cpu),
        };
        if did_work(&c, &app) {
            obs.cpus.push(c);
        }
    }
    obs
}

/// The receive path's drops between two snapshots: the CPUs whose backlog dropped or whose
/// NET_RX softirq was squeezed, and TCP's receive-side drops; `None` when neither file was read
/// at both ends of the interval.
pub fn rx_drops(before: &Snapshot, after: &Snapshot) -> Option<RxDrops> {
    let cpus = match (&before.softnet, &after.softnet) {
        (Some(b), Some(a)) => Some(
            a.iter()
                .map(|(&cpu, &(d, q))| {
                    let (d0, q0) = b.get(&cpu).copied().unwrap_or((d, q));
                    SoftnetUse {
                        cpu,
                        dropped: d.saturating_sub(d0),
                        time_squeeze: q.saturating_sub(q0),
                    }
                })
                .filter(|c| c.dropped > 0 || c.time_squeeze > 0)
                .collect(),
        ),
        _ => None,
    };
    let tcp = match (&before.tcp_rx, &after.tcp_rx) {
        (Some(b), Some(a)) => Some(a.since(b)),
        _ => None,
    };
    let udp = match (&before.udp_rx, &after.udp_rx) {
        (Some(b), Some(a)) => Some(a.since(b)),
        _ => None,
    };
    (cpus.is_some() || tcp.is_some() || udp.is_some()).then(|| RxDrops {
        cpus: cpus.unwrap_or_default(),
        tcp,
        udp,
    })
}

/// The worker threads' scheduling between two snapshots, as shares of the wall time: the
/// monotonic clock's between the two readings when both have it (an interval can be shorter
/// than a tick: the final one, closed just after the one before), else one CPU's jiffies
/// between the two `/proc/stat` readings, at `USER_HZ` 100. A thread new since `before` counts
/// from zero.
pub fn thread_uses(before: &Snapshot, after: &Snapshot) -> Vec<ThreadUse> {
    let wall_ns = match (before.taken, after.taken) {
        (Some(a), Some(b)) => {
            u64::try_from(b.saturating_duration_since(a).as_nanos()).unwrap_or(u64::MAX)
        }
        _ => {
            let cpus = after.stat.cpus.len().max(1) as u64;
            after.stat.total.since(&before.stat.total).total() / cpus * 10_000_000
        }
    };
    if wall_ns == 0 {
        return Vec::new();
    }
    let pct = |ns: u64| Percent::new(ns as f64 * 100.0 / wall_ns as f64);
    // the same thread at the same place in both readings (the threads read in the same order),
    // else by id: one look-up per thread, not a scan (1,024 workers are a million comparisons)
    let mut by_id: Option<std::collections::HashMap<u32, &ThreadSample>> = None;
    after
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let then = match before.threads.get(i) {
                Some(b) if b.tid == t.tid => Some(b),
                _ => by_id
                    .get_or_insert_with(|| before.threads.iter().map(|b| (b.tid, b)).collect())
                    .get(&t.tid)
                    .copied(),
            };
            let (r0, w0) = then.map_or((0, 0), |b| (b.run_ns, b.wait_ns));
            ThreadUse {
                tid: t.tid,
                name: t.name.to_string(),
                cpu: t.cpu,
                run: pct(t.run_ns.saturating_sub(r0)),
                wait: pct(t.wait_ns.saturating_sub(w0)),
                role: t.role,
            }
        })
        .collect()
}

/// Add to `now` the worker threads read in `held` (just before the engine let them go) that
/// have ended since, except those in `counted`; returns the ids added. A thread's counters stop
/// with it, so its last reading is its final one: the interval it ended in lists it with all it
/// ran, and the intervals after do not (pass the ids added before as `counted`); the totals take
/// every ended thread (`counted` empty). Pure.
pub fn keep_ended(now: &mut Snapshot, held: &[ThreadSample], counted: &[u32]) -> Vec<u32> {
    let mut added = Vec::new();
    if held.is_empty() {
        return added;
    }
    // read now or counted before: sorted, a look-up each (not a scan: 1,024 workers)
    let mut skip: Vec<u32> = now.threads.iter().map(|t| t.tid).collect();
    skip.extend_from_slice(counted);
    skip.sort_unstable();
    for h in held {
        if skip.binary_search(&h.tid).is_ok() {
            continue;
        }
        now.threads.push(h.clone());
        added.push(h.tid);
    }
    added
}

/// The observation's account of a CPU-time limit: the limit, and the throttling between two
/// readings of its cgroup's counters (start, end) when both were read. Pure.
pub fn cpu_quota(limit: &CpuLimit, counters: Option<(CpuStat, CpuStat)>) -> CpuQuota {
    let d = counters.map(|(a, b)| b.since(&a));
    CpuQuota {
        cgroup: limit.cgroup.clone(),
        quota_us: limit.bandwidth.quota_us,
        period_us: limit.bandwidth.period_us,
        periods: d.map(|d| d.nr_periods),
        throttled_periods: d.map(|d| d.nr_throttled),
        throttled_s: d.map(|d| d.throttled_us as f64 / 1e6),
    }
}

/// Per-test observer of one end.
#[derive(Debug)]
pub struct Observer {
    root: Root,
    role: Role,
    facts: Option<IfaceFacts>,
    irqs: Vec<u32>,
    topology: Topology,
    first: Snapshot,
    last: Snapshot,
    intervals: Vec<IntervalObservation>,
    max_kept: usize,
    notes: Vec<String>,
    /// This end's worker threads, once the engine named them ([`Observer::own_threads`]).
    own: Option<Vec<u32>>,
    /// The worker threads as read just before the engine stopped them ([`Observer::hold_threads`]).
    held: Vec<ThreadSample>,
    /// The held threads an interval has counted as ended.
    ended: Vec<u32>,
    /// The tightest CPU-time limit on this process's cgroup, and its counters at the start.
    quota: Option<(CpuLimit, Option<CpuStat>)>,
    /// Buffers and choices kept between readings.
    reader: Reader,
    /// What every reading so far cost, and where it ran.
    cost: ObserverUse,
    /// The affinity this thread had before the observer kept it off the pinned workers' CPUs.
    affinity: Affinity,
}

/// The observer thread's CPU clock, ns (0 where it cannot be read).
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// One reading's cost: the thread's CPU clock since `t0`, on the CPU it runs on now.
fn reading_since(t0: u64) -> ObserverUse {
    ObserverUse {
        cpu_s: thread_cpu_ns().saturating_sub(t0) as f64 / 1e9,
        readings: 1,
        cpus: wirespeed_datapath::cpu::current_cpu().into_iter().collect(),
        ..ObserverUse::default()
    }
}

/// A thread's CPU affinity (`None`: the calling thread).
fn affinity_of(tid: Option<u32>) -> Option<CpuSet> {
    let pid = tid.and_then(|t| rustix::process::Pid::from_raw(i32::try_from(t).ok()?));
    let set = rustix::thread::sched_getaffinity(pid).ok()?;
    Some(
        (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&i| set.is_set(i))
            .filter_map(|i| u32::try_from(i).ok())
            .collect(),
    )
}

fn set_affinity(tid: u32, cpus: &CpuSet) -> bool {
    let mut set = rustix::thread::CpuSet::new();
    for c in cpus.iter() {
        if (c as usize) < rustix::thread::CpuSet::MAX_CPU {
            set.set(c as usize);
        }
    }
    let pid = i32::try_from(tid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    pid.is_some() && rustix::thread::sched_setaffinity(pid, &set).is_ok()
}

/// The affinity the observer's thread had before it was kept off the workers' CPUs: put back
/// when the observer is done (or dropped), on that thread.
#[derive(Debug, Default)]
struct Affinity(Option<(u32, CpuSet)>);

impl Affinity {
    fn restore(&mut self) {
        if let Some((tid, cpus)) = self.0.take() {
            set_affinity(tid, &cpus);
        }
    }
}

impl Drop for Affinity {
    fn drop(&mut self) {
        self.restore();
    }
}

/// Where the observer may run beside `pinned` (the CPUs the test's pinned workers hold), from
/// the CPUs it may run on now: those without a pinned worker, or all of them (`shared`) when
/// every one holds one. Pure.
pub fn observer_cpus(allowed: &CpuSet, pinned: &CpuSet) -> (CpuSet, bool) {
    let free = allowed.difference(pinned);
    if free.is_empty() {
        (allowed.clone(), true)
    } else {
        (free, false)
    }
}

impl Observer {
    /// Start observing: find the NIC, read the topology, take the first snapshot.
    pub fn new(root: Root, role: Role, nic: NicSpec) -> Result<Observer, ObserveError> {
        let mut notes = Vec::new();
        let iface = match &nic {
            NicSpec::Peer { peer, local } => {
                let i = iface_for_peer(&root, *peer, *local);
                if i.is_none() {
                    notes.push(format!(
                        "no route to {peer} found: NIC interrupts not counted"
                    ));
                }
                i
            }
            NicSpec::Iface(i) => Some(i.clone()),
            NicSpec::Irqs(_) | NicSpec::None => None,
        };
        let facts = iface.map(|i| iface_facts(&root, &i));
        let irqs = match (&nic, &facts) {
            (NicSpec::Irqs(v), _) => v.clone(),
            (_, Some(f)) => {
                notes.extend(f.notes.iter().cloned());
                f.irqs.clone()
            }
            _ => Vec::new(),
        };
        let topology = crate::topology::read(&root);
        let quota = cgroup::cpu_limit(&root, "self").map(|l| {
            let at_start = cgroup::read_cpu_stat(&root, &l.dir);
            (l, at_start)
        });
        let t0 = thread_cpu_ns();
        let mut reader = Reader::new(&root, &irqs);
        let first = Snapshot::read_with(&root, &irqs, None, &mut reader)?;
        if first.softirqs.is_none() {
            notes.push("/proc/softirqs unreadable: NET_RX/NET_TX not counted".to_string());
        }
        if !irqs.is_empty() && first.nic.is_none() {
            notes.push("/proc/interrupts unreadable: NIC interrupts not counted".to_string());
        }
        Ok(Observer {
            root,
            role,
            facts,
            irqs,
            topology,
            last: first.clone(),
            first,
            intervals: Vec::new(),
            max_kept: wirespeed_report::builder::MAX_KEPT_INTERVALS,
            notes,
            own: None,
            held: Vec::new(),
            ended: Vec::new(),
            quota,
            reader,
            cost: reading_since(t0),
            affinity: Affinity::default(),
        })
    }

    /// What the readings so far cost, and where they ran.
    pub fn cost(&self) -> &ObserverUse {
        &self.cost
    }

    /// Whether the NIC's counts are read per IRQ (see [`Reader`]).
    pub fn per_irq(&self) -> bool {
        self.reader.per_irq()
    }

    /// The interface found for the test, if any.
    pub fn iface(&self) -> Option<&str> {
        self.facts.as_ref().map(|f| f.iface.as_str())
    }

    /// The devices beneath the test's interface, when it is an upper device (a VLAN, a bond, a
    /// bridge): whose IRQs are counted, the bond's hash policy, the members' speeds.
    pub fn stack(&self) -> Option<&wirespeed_model::IfaceStack> {
        self.facts.as_ref().and_then(|f| f.stack.as_ref())
    }

    /// The NIC IRQs being counted.
    pub fn irqs(&self) -> &[u32] {
        &self.irqs
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Close an interval: snapshot, and keep the difference from the previous one. `span` is
    /// the interval's start and end in seconds since the test began, when the engine has them.
    pub fn sample(
        &mut self,
        span: Option<(f64, f64)>,
        workers: &[WorkerRun],
        tcp: Option<TcpLimits>,
    ) -> Result<&IntervalObservation, ObserveError> {
        let t0 = thread_cpu_ns();
        let mut now = Snapshot::read_with(
            &self.root,
            &self.irqs,
            self.own.as_deref(),
            &mut self.reader,
        )?;
        let ended = keep_ended(&mut now, &self.held, &self.ended);
        self.ended.extend(ended);
        self.push(now, span, workers, tcp);
        let mut reading = reading_since(t0);
        reading.kept_off = self.cost.kept_off.clone();
        reading.shared = self.cost.shared;
        self.cost = self.cost.then(&reading);
        let last = self.intervals.last_mut().expect("just pushed");
        last.observer = Some(reading);
        Ok(last)
    }

    /// Close an interval with a snapshot taken elsewhere (tests, replays).
    pub fn push(
        &mut self,
        now: Snapshot,
        span: Option<(f64, f64)>,
        workers: &[WorkerRun],
        tcp: Option<TcpLimits>,
    ) {
        let mut obs = delta(&self.last, &now, workers, tcp);
        if let Some((s, e)) = span {
            obs.start = Some(s);
            obs.end = Some(e);
        }
        self.intervals.push(obs);
        self.last = now;
        // Bounded like the report's intervals (the same cap, the same pairing): past it the
        // kept ones but the newest are merged in adjacent pairs. The totals come from the
        // first and last snapshots and do not change.
        wirespeed_report::builder::keep_capped(
            &mut self.intervals,
            self.max_kept,
            IntervalObservation::then,
        );
    }

    /// Read only these worker threads from now on: this end's (kernel thread ids). Over
    /// `--loopback` both ends run in one process, and each end's observation would otherwise
    /// hold the other end's workers as its own.
    /// On the live host, the observer's thread (the one calling) is also kept off the CPUs the
    /// pinned workers among them hold, from now until the observer is done; where every CPU it
    /// may use holds one it stays, and says so ([`ObserverUse::shared`]).
    pub fn own_threads(&mut self, threads: &[ThreadWatch]) {
        let tids: Vec<u32> = threads.iter().map(|t| t.tid).collect();
        self.reader.watch(threads);
        if self.root.is_live() {
            self.keep_off(&tids);
        }
        self.own = Some(tids);
    }

    fn keep_off(&mut self, tids: &[u32]) {
        let pinned: CpuSet = tids
            .iter()
            .filter_map(|&t| affinity_of(Some(t)))
            .filter(|a| a.len() == 1)
            .fold(CpuSet::new(), |a, b| a.union(&b));
        let Some(mine) = affinity_of(None) else {
            return;
        };
        self.cost.kept_off = pinned.intersection(&mine);
        if self.cost.kept_off.is_empty() {
            return;
        }
        let (cpus, shared) = observer_cpus(&mine, &pinned);
        self.cost.shared = shared;
        if shared {
            self.cost.kept_off = CpuSet::new();
            return;
        }
        let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        if self.affinity.0.is_none() && set_affinity(tid, &cpus) {
            self.affinity.0 = Some((tid, mine));
        }
    }

    /// Read the worker threads now: the engine is about to stop them, and a thread that has
    /// ended is gone from `/proc`. The next snapshots take an ended thread's counters from this
    /// reading, so the interval it ended in, and the totals, still hold what it ran. A thread
    /// still running is read afresh as always. Reading is best effort (nothing when the root has
    /// no `/proc/self/task`).
    pub fn hold_threads(&mut self) {
        let t0 = thread_cpu_ns();
        let mut at: std::collections::HashMap<u32, usize> = self
            .held
            .iter()
            .enumerate()
            .map(|(i, h)| (h.tid, i))
            .collect();
        for t in worker_threads_with(&self.root, self.own.as_deref(), &mut self.reader) {
            match at.get(&t.tid) {
                Some(&i) => self.held[i] = t,
                None => {
                    at.insert(t.tid, self.held.len());
                    self.held.push(t);
                }
            }
        }
        let mut reading = reading_since(t0);
        reading.readings = 0; // part of the reading that closes the interval, not one itself
        self.cost = self.cost.then(&reading);
    }

    /// Keep at most `max` intervals (at least 2) instead of the report's
    /// [`wirespeed_report::builder::MAX_KEPT_INTERVALS`].
    pub fn with_max_kept(mut self, max: usize) -> Observer {
        self.max_kept = max.max(2);
        self
    }

    /// The intervals so far.
    pub fn intervals(&self) -> &[IntervalObservation] {
        &self.intervals
    }

    /// What is known of this end before any interval: interface, NIC IRQs, topology, notes
    /// (no host name, no intervals, an empty total).
    pub fn head(&self) -> EndObservation {
        let facts = self.facts.clone().unwrap_or_default();
        EndObservation {
            role: self.role,
            host: None,
            iface: (!facts.iface.is_empty()).then_some(facts.iface),
            iface_mtu: facts.mtu,
            iface_speed_mbps: facts.speed_mbps,
            nic_numa_node: facts.numa_node,
            iface_link: facts.link,
            iface_stack: facts.stack.clone(),
            nic_irqs: self.irqs.clone(),
            topology: self.topology.clone(),
            intervals: Vec::new(),
            total: IntervalObservation::default(),
            notes: self.notes.clone(),
            cpu_quota: None,
        }
    }

    /// End the test now: a last snapshot closes the totals (without adding an interval), then
    /// [`Observer::finish`]. The host name is read from the root.
    pub fn close(
        mut self,
        workers: &[WorkerRun],
        tcp: Option<TcpLimits>,
    ) -> Result<EndObservation, ObserveError> {
        let t0 = thread_cpu_ns();
        let mut last = Snapshot::read_with(
            &self.root,
            &self.irqs,
            self.own.as_deref(),
            &mut self.reader,
        )?;
        // the totals run from the first snapshot: every held thread that has ended counts
        keep_ended(&mut last, &self.held, &[]);
        self.last = last;
        let reading = reading_since(t0);
        self.cost = self.cost.then(&reading);
        self.affinity.restore();
        let host = self.root.read_opt("/proc/sys/kernel/hostname");
        let root = self.root.clone();
        let quota = self.quota.take().map(|(l, at_start)| {
            let at_end = cgroup::read_cpu_stat(&root, &l.dir);
            cpu_quota(&l, at_start.zip(at_end))
        });
        let mut end = self.finish(host, workers, tcp);
        end.cpu_quota = quota;
        // the frequency the workers' CPUs ran at, read while the test's load is still on them
        end.total.cpu_freq = wirespeed_host::cpu::current_freq(&root, &end.total.app_cpus());
        Ok(end)
    }

    /// End the test: the observation of this end, with the totals from the first snapshot to
    /// the last one taken (take a final [`Observer::sample`] first to include the tail).
    pub fn finish(
        self,
        host: Option<String>,
        workers: &[WorkerRun],
        tcp: Option<TcpLimits>,
    ) -> EndObservation {
        let mut total = delta(&self.first, &self.last, workers, tcp);
        if let (Some(a), Some(b)) = (self.intervals.first(), self.intervals.last()) {
            total.start = a.start;
            total.end = b.end;
        }
        total.observer = Some(self.cost.clone());
        let facts = self.facts.unwrap_or_default();
        EndObservation {
            role: self.role,
            host,
            iface: (!facts.iface.is_empty()).then_some(facts.iface),
            iface_mtu: facts.mtu,
            iface_speed_mbps: facts.speed_mbps,
            nic_numa_node: facts.numa_node,
            iface_link: facts.link,
            iface_stack: facts.stack.clone(),
            nic_irqs: self.irqs,
            topology: self.topology,
            intervals: self.intervals,
            total,
            notes: self.notes,
            cpu_quota: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_host::CpuSet;

    fn worker(cpu: u32) -> WorkerRun {
        WorkerRun {
            worker: 0,
            cpu_requested: Some(cpu),
            cpus_seen: CpuSet::from_cpus([cpu]),
            streams: vec![5],
            tid: None,
        }
    }

    #[test]
    fn receive_path_drops_between_snapshots() {
        let stat = "cpu0 1 0 0 1\ncpu1 1 0 0 1\n";
        let mut a = Snapshot::from_texts(stat, None, None, &[]).unwrap();
        let mut b = a.clone();
        // nothing read: no account at all (not zero drops)
        assert_eq!(rx_drops(&a, &b), None);
        a.softnet = Some([(0, (5, 1)), (1, (0, 0))].into_iter().collect());
        b.softnet = Some(
            [(0, (5, 3)), (1, (40, 2)), (2, (7, 0))]
                .into_iter()
                .collect(),
        );
        a.tcp_rx = Some(TcpRxDrops {
            backlog: 10,
            ..Default::default()
        });
        b.tcp_rx = Some(TcpRxDrops {
            backlog: 14,
            rcvq: 2,
            ..Default::default()
        });
        let d = rx_drops(&a, &b).unwrap();
        // CPU 2 appeared (hot-plugged): it counts from its first reading, not from zero
        assert_eq!(
            d.cpus,
            vec![
                SoftnetUse {
                    cpu: 0,
                    dropped: 0,
                    time_squeeze: 2
                },
                SoftnetUse {
                    cpu: 1,
                    dropped: 40,
                    time_squeeze: 2
                },
            ]
        );
        assert_eq!(d.tcp.map(|t| (t.backlog, t.rcvq)), Some((4, 2)));
        assert_eq!(d.udp, None);
        assert_eq!((d.backlog_dropped(), d.total()), (40, 46));
        // a counter that went backwards (a new namespace) reads 0, not a wrap
        let d = rx_drops(&b, &a).unwrap();
        assert_eq!(d.total(), 0);
        assert_eq!(delta(&a, &b, &[], None).rx_drops, rx_drops(&a, &b));
    }

    #[test]
    fn thread_counters_parse_and_become_shares() {
        assert_eq!(
            parse_schedstat("450604054 930342084 5677\n"),
            Some((450604054, 930342084))
        );
        assert_eq!(parse_schedstat("garbage"), None);
        // a name with spaces and a parenthesis; `processor` is field 39
        let stat = "4242 (ws (x) y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 \
                    23 24 25 26 27 28 29 30 31 32 33 34 35 7 0 0";
        assert_eq!(parse_stat_processor(stat), Some(7));
        assert_eq!(parse_stat_processor("no paren"), None);
        assert!(is_worker_thread("ws-dp-cpu3") && is_worker_thread("ws-udp"));
        assert!(!is_worker_thread("ws-test-1"));
        assert!(!is_worker_thread("ws-udp-setup") && is_worker_thread("ws-udp-cpu1"));
        // one second on two CPUs (200 jiffies): ran 0.25 s, waited 0.5 s
        let stat0 =
            "cpu 0 0 0 1000 0 0 0 0 0 0\ncpu0 0 0 0 500 0 0 0 0 0 0\ncpu1 0 0 0 500 0 0 0 0 0 0\n";
        let stat1 =
            "cpu 0 0 0 1200 0 0 0 0 0 0\ncpu0 0 0 0 600 0 0 0 0 0 0\ncpu1 0 0 0 600 0 0 0 0 0 0\n";
        let th = |run_ns, wait_ns| ThreadSample {
            tid: 9,
            name: "ws-dp-cpu1".into(),
            run_ns,
            wait_ns,
            cpu: Some(1),
            role: Some(Role::Receiver),
        };
        let mut a = Snapshot::from_texts(stat0, None, None, &[]).unwrap();
        a.threads = vec![th(1_000_000_000, 0)];
        let mut b = Snapshot::from_texts(stat1, None, None, &[]).unwrap();
        b.threads = vec![th(1_250_000_000, 500_000_000)];
        let u = thread_uses(&a, &b);
        assert_eq!(u.len(), 1);
        assert_eq!((u[0].run.get(), u[0].wait.get()), (25.0, 50.0));
        assert_eq!((u[0].cpu, u[0].role), (Some(1), Some(Role::Receiver)));
    }

    /// Issue 38: a worker's files are parsed from the bytes of one read into a buffer kept
    /// from one reading to the next: the same numbers as the text parsers, nothing of a longer
    /// text before, and a word the buffer cut is not read as a number.
    #[test]
    fn the_workers_files_parse_from_one_read_into_a_reused_buffer() {
        let sched = "450604054 930342084 5677\n";
        let stat = "4242 (ws (x) y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 \
                    23 24 25 26 27 28 29 30 31 32 33 34 35 7 0 0\n";
        for (text, bytes) in [
            (
                parse_schedstat(sched),
                parse_schedstat_bytes(sched.as_bytes()),
            ),
            (
                parse_schedstat("garbage"),
                parse_schedstat_bytes(b"garbage"),
            ),
            (parse_schedstat("1"), parse_schedstat_bytes(b"1")),
        ] {
            assert_eq!(text, bytes);
        }
        assert_eq!(parse_stat_processor_bytes(stat.as_bytes()), Some(7));
        assert_eq!(parse_stat_processor(stat), Some(7));
        // a name that is not UTF-8: only what follows it is read
        let mut odd = b"4242 (ws\xff\xfe) S".to_vec();
        odd.extend_from_slice(&stat.as_bytes()[stat.find(") S").unwrap() + 3..]);
        assert_eq!(parse_stat_processor_bytes(&odd), Some(7));
        // a read that filled the buffer may have cut its last word: it is left out
        let buf = b"450604054 930342084 56";
        assert_eq!(whole_words(buf, buf.len()), b"450604054 930342084 ");
        assert_eq!(whole_words(&buf[..], 9), b"450604054");
        assert_eq!(whole_words(b"12345", 5), b"");
        // the buffer filled right after `processor` and its space: read; filled in the middle
        // of it (`7` of `71`?): not read
        let at = stat.find(" 7 0 0").unwrap();
        let whole = &stat.as_bytes()[..at + 3];
        assert_eq!(
            parse_stat_processor_bytes(whole_words(whole, whole.len())),
            Some(7)
        );
        let cut = &stat.as_bytes()[..at + 2];
        assert_eq!(
            parse_stat_processor_bytes(whole_words(cut, cut.len())),
            None
        );
        assert_eq!(
            parse_stat_processor_bytes(cut),
            Some(7),
            "what a whole text says"
        );
        // through a tree: a worker's files rewritten shorter read as they are now
        let t = tempfile::tempdir().unwrap();
        let task = t.path().join("proc/self/task/10000");
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("comm"), "ws-dp-cpu3\n").unwrap();
        std::fs::write(task.join("schedstat"), sched).unwrap();
        std::fs::write(task.join("stat"), stat).unwrap();
        let root = Root::new(t.path());
        let mut reader = Reader::default();
        let first = reader.threads(&root, None);
        assert_eq!(first.len(), 1);
        assert_eq!(
            (
                first[0].tid,
                &*first[0].name,
                first[0].run_ns,
                first[0].wait_ns,
                first[0].cpu
            ),
            (10000, "ws-dp-cpu3", 450604054, 930342084, Some(7))
        );
        assert_eq!(reader.held, 2, "schedstat and stat held open");
        std::fs::write(task.join("schedstat"), "12 34 5\n").unwrap();
        std::fs::write(task.join("stat"), stat.replace(" 7 0 0", " 1 0 0")).unwrap();
        let again = reader.threads(&root, Some(&[10000]));
        assert_eq!(
            (again[0].run_ns, again[0].wait_ns, again[0].cpu),
            (12, 34, Some(1))
        );
        assert!(
            Arc::ptr_eq(&first[0].name, &again[0].name),
            "the name is read once and shared"
        );
    }

    /// Ids listed from `/proc/self/task` are read in numeric order (not as text: 9 before
    /// 10000), and a thread read at the same place in both readings is matched there or, where
    /// the order changed, by id.
    #[test]
    fn listed_threads_are_in_numeric_order_and_matched_by_id() {
        let t = tempfile::tempdir().unwrap();
        for (tid, run) in [(10000u32, 500u64), (9, 100)] {
            let task = t.path().join(format!("proc/self/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), "ws-dp\n").unwrap();
            std::fs::write(task.join("schedstat"), format!("{run} 0 1\n")).unwrap();
        }
        let root = Root::new(t.path());
        let threads = worker_threads(&root, None);
        assert_eq!(
            threads.iter().map(|t| t.tid).collect::<Vec<_>>(),
            vec![9, 10000]
        );
        assert!(threads.iter().all(|t| t.cpu.is_none()), "no stat: no CPU");
        let stat = "cpu 0 0 0 100 0 0 0 0 0 0\ncpu0 0 0 0 100 0 0 0 0 0 0\n";
        let mut a = Snapshot::from_texts(stat, None, None, &[]).unwrap();
        a.threads = threads.clone();
        let mut b = a.clone();
        b.threads = threads.iter().rev().cloned().collect();
        b.threads[0].run_ns += 1_000_000;
        let t0 = std::time::Instant::now();
        a.taken = Some(t0);
        b.taken = Some(t0 + std::time::Duration::from_millis(10));
        let u = thread_uses(&a, &b);
        assert_eq!((u[0].tid, u[0].run.get()), (10000, 10.0));
        assert_eq!((u[1].tid, u[1].run.get()), (9, 0.0));
    }

    /// A worker that notes where it runs is read from its note, not its `stat` (the tree's says
    /// CPU 777, which no test machine's thread runs on); before its first note, and for a worker
    /// not told of, from its `stat`; with no `stat` at all a noting worker still has its CPU.
    #[test]
    fn a_worker_that_notes_its_cpu_is_read_from_the_note_not_its_stat() {
        let t = tempfile::tempdir().unwrap();
        let stat = |cpu: u32| {
            // fields after the name: state (3) ... processor (39)
            let mut f: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
            f[0] = "S".into();
            f[39 - 3] = cpu.to_string();
            format!("1 (ws-dp (x)) {}\n", f.join(" "))
        };
        for tid in [21u32, 22, 23] {
            let task = t.path().join(format!("proc/self/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), "ws-dp\n").unwrap();
            std::fs::write(task.join("schedstat"), "100 50 1\n").unwrap();
            if tid != 23 {
                std::fs::write(task.join("stat"), stat(777)).unwrap();
            }
        }
        let root = Root::new(t.path());
        let noting = ThreadWatch {
            role: Some(Role::Sender),
            ..ThreadWatch::unnoted(21)
        };
        let late = ThreadWatch {
            role: Some(Role::Receiver),
            ..ThreadWatch::unnoted(22)
        };
        let bare = ThreadWatch::unnoted(23);
        noting.cpu.note();
        bare.cpu.note();
        // each note is where the test's thread ran at that moment (it may move between them)
        let (here, there) = (noting.cpu.get().unwrap(), bare.cpu.get().unwrap());
        assert_ne!(here, 777);
        let mut reader = Reader::default();
        reader.watch(&[noting.clone(), late.clone(), bare.clone()]);
        let cpus = |r: &mut Reader| {
            r.threads(&root, Some(&[21, 22, 23]))
                .iter()
                .map(|t| (t.tid, t.cpu, t.wait_ns))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cpus(&mut reader),
            vec![
                (21, Some(here), 50),
                (22, Some(777), 50),
                (23, Some(there), 50)
            ]
        );
        // the way each one's streams carry data, as told (none where not told)
        let roles = |r: &mut Reader| {
            r.threads(&root, Some(&[21, 22, 23]))
                .iter()
                .map(|t| t.role)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            roles(&mut reader),
            [Some(Role::Sender), Some(Role::Receiver), None]
        );
        // its first note: read from it from then on
        late.cpu.note();
        assert_eq!(cpus(&mut reader)[1], (22, late.cpu.get(), 50));
        // a reader not told reads every `stat`
        let mut plain = Reader::default();
        assert_eq!(
            cpus(&mut plain),
            vec![(21, Some(777), 50), (22, Some(777), 50), (23, None, 50)]
        );
        assert_eq!(roles(&mut plain), [None, None, None]);
        // told later: the note wins from the next reading
        plain.watch(&[noting]);
        assert_eq!(cpus(&mut plain)[0], (21, Some(here), 50));
        assert_eq!(roles(&mut plain)[0], Some(Role::Sender));
    }

    #[test]
    fn an_ended_thread_keeps_its_last_reading_for_the_interval_it_ended_in() {
        let stat = |idle: u64| {
            format!(
                "cpu 0 0 0 {} 0 0 0 0 0 0\ncpu0 0 0 0 {idle} 0 0 0 0 0 0\n",
                idle
            )
        };
        let th = |tid, run_ns| ThreadSample {
            tid,
            name: "ws-dp".into(),
            run_ns,
            wait_ns: 0,
            cpu: Some(0),
            role: None,
        };
        // tick 1: both workers running
        let mut a = Snapshot::from_texts(&stat(100), None, None, &[]).unwrap();
        a.threads = vec![th(7, 1_000_000_000), th(8, 2_000_000_000)];
        // read once 7 had ended, before it went: it ran 0.4 s more; 8 still runs
        let held = vec![th(7, 1_400_000_000), th(8, 2_100_000_000)];
        // tick 2 (one second later): 7 is gone, 8 runs on
        let mut b = Snapshot::from_texts(&stat(200), None, None, &[]).unwrap();
        b.threads = vec![th(8, 2_500_000_000)];
        let counted = keep_ended(&mut b, &held, &[]);
        assert_eq!(counted, vec![7]);
        let u = thread_uses(&a, &b);
        let run = |tid| u.iter().find(|t| t.tid == tid).map(|t| t.run.get());
        // 7's last reading gives its run in the interval it ended in; 8 is read afresh
        assert_eq!((run(7), run(8)), (Some(40.0), Some(50.0)));
        // the interval after: 7 is not listed again (with a zero run)
        let mut c = Snapshot::from_texts(&stat(300), None, None, &[]).unwrap();
        c.threads = vec![th(8, 2_900_000_000)];
        assert!(keep_ended(&mut c, &held, &counted).is_empty());
        assert_eq!(c.threads.len(), 1);
        // a thread that ended having run nothing since the last tick is still listed there:
        // the interval saw it (to its end)
        let mut d = Snapshot::from_texts(&stat(300), None, None, &[]).unwrap();
        keep_ended(&mut d, &[th(8, 2_500_000_000)], &counted);
        assert_eq!(thread_uses(&b, &d)[0].run.get(), 0.0);
        // the totals take every ended thread
        let mut e = Snapshot::from_texts(&stat(300), None, None, &[]).unwrap();
        keep_ended(&mut e, &held, &[]);
        assert_eq!(e.threads.len(), 2);
        // an interval shorter than a tick (no jiffy between the /proc/stat readings) still
        // has its threads' shares, over the monotonic clock's wall time: 1 ms run of 2 ms
        let t0 = std::time::Instant::now();
        let mut g = Snapshot::from_texts(&stat(300), None, None, &[]).unwrap();
        g.threads = vec![th(8, 2_900_000_000)];
        g.taken = Some(t0);
        let mut h = g.clone();
        h.threads = vec![th(8, 2_901_000_000)];
        h.taken = Some(t0 + std::time::Duration::from_millis(2));
        assert_eq!(thread_uses(&g, &h)[0].run.get(), 50.0);
        h.taken = None;
        assert!(thread_uses(&g, &h).is_empty());
        // without the held reading the ended thread is missing from its last interval
        let mut f = Snapshot::from_texts(&stat(200), None, None, &[]).unwrap();
        f.threads = vec![th(8, 2_500_000_000)];
        assert!(thread_uses(&a, &f).iter().all(|t| t.tid != 7));
    }

    #[test]
    fn delta_of_two_texts() {
        let s0 = "cpu0 100 0 100 800 0 0 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0 0 0\ncpu2 0 0 0 1000 0 0 0 0 0 0\n";
        let s1 = "cpu0 110 0 150 830 10 0 0 0 0 0\ncpu1 0 0 10 1050 0 0 40 0 0 0\ncpu2 0 0 0 1100 0 0 0 0 0 0\n";
        let q0 = "CPU0 CPU1 CPU2\nNET_TX: 1 2 0\nNET_RX: 10 20 0\n";
        let q1 = "CPU0 CPU1 CPU2\nNET_TX: 1 7 0\nNET_RX: 15 920 0\n";
        let i0 = "   CPU0 CPU1 CPU2\n 40: 0 100 0 PCI-MSI 1-edge eth0-rx-0\n 41: 3 0 0 PCI-MSI 2-edge eth0-tx-0\n 50: 0 0 9 PCI-MSI 3-edge nvme0q1\n";
        let i1 = "   CPU0 CPU1 CPU2\n 40: 0 600 0 PCI-MSI 1-edge eth0-rx-0\n 41: 4 0 0 PCI-MSI 2-edge eth0-tx-0\n 50: 0 0 99 PCI-MSI 3-edge nvme0q1\n";
        let a = Snapshot::from_texts(s0, Some(q0), Some(i0), &[40, 41]).unwrap();
        let b = Snapshot::from_texts(s1, Some(q1), Some(i1), &[40, 41]).unwrap();
        let d = delta(&a, &b, &[worker(0)], None);
        // CPU 2 was idle, took only the other device's interrupts: left out.
        assert_eq!(d.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), vec![0, 1]);
        let c0 = d.cpu(0).unwrap();
        assert_eq!(
            (c0.user.get(), c0.system.get(), c0.idle.get()),
            (10.0, 50.0, 40.0)
        );
        assert_eq!((c0.nic_irqs, c0.net_rx, c0.net_tx), (1, 5, 0));
        let c1 = d.cpu(1).unwrap();
        assert_eq!(
            (c1.system.get(), c1.softirq.get(), c1.idle.get()),
            (10.0, 40.0, 50.0)
        );
        assert_eq!((c1.nic_irqs, c1.net_rx, c1.net_tx), (500, 900, 5));
        assert_eq!(d.app_cpus().to_string(), "0");
        assert_eq!(d.nic_irq_total(), 501);
    }

    #[test]
    fn a_cpu_that_went_offline_or_has_no_ticks_is_skipped() {
        let a = Snapshot::from_texts("cpu0 1 0 0 1\ncpu1 1 0 0 1\n", None, None, &[]).unwrap();
        let b = Snapshot::from_texts("cpu0 1 0 0 1\n", None, None, &[]).unwrap();
        assert!(delta(&a, &b, &[], None).cpus.is_empty());
    }

    /// The fixture with the three files the test rewrites copied and everything else (read only)
    /// linked: copying thousands of small files takes seconds on a loaded machine.
    fn fixture_copy(src: &std::path::Path) -> tempfile::TempDir {
        let src = src.canonicalize().unwrap();
        let t = tempfile::tempdir().unwrap();
        let link =
            |a: &std::path::Path, b: &std::path::Path| std::os::unix::fs::symlink(a, b).unwrap();
        link(&src.join("sys"), &t.path().join("sys"));
        std::fs::create_dir(t.path().join("proc")).unwrap();
        for e in std::fs::read_dir(src.join("proc")).unwrap() {
            let e = e.unwrap();
            let to = t.path().join("proc").join(e.file_name());
            if ["stat", "softirqs", "interrupts"].contains(&e.file_name().to_str().unwrap()) {
                std::fs::copy(e.path(), to).unwrap();
            } else {
                link(&e.path(), &to);
            }
        }
        t
    }

    /// Add `add[cpu]` to the counts of `row` (a softirqs name or an IRQ number) in a table.
    fn bump(text: &str, row: &str, add: &[(usize, u64)]) -> String {
        let mut out = String::new();
        for line in text.lines() {
            let label = line.split(':').next().unwrap_or("").trim();
            if label == row {
                let (head, rest) = line.split_once(':').unwrap();
                let mut toks: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
                for &(cpu, n) in add {
                    let v: u64 = toks[cpu].parse().unwrap();
                    toks[cpu] = (v + n).to_string();
                }
                out.push_str(&format!("{head}: {}\n", toks.join(" ")));
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// Issue 22, item 5: an observed day-long test kept every interval's per-CPU observation.
    /// Past the cap (4 here) they are merged in pairs: bounded, contiguous, the newest as is.
    #[test]
    fn observed_intervals_are_bounded() {
        let root = Root::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/hosts/crow-9900x-cx5-x4"),
        );
        let mut obs = Observer::new(root, Role::Receiver, NicSpec::None)
            .unwrap()
            .with_max_kept(4);
        for i in 0..50 {
            let iv = obs
                .sample(Some((i as f64, (i + 1) as f64)), &[], None)
                .unwrap();
            assert_eq!(iv.start, Some(i as f64), "the newest interval is as it was");
            assert!(obs.intervals().len() <= 4);
        }
        let v = obs.intervals();
        assert_eq!(v[0].start, Some(0.0));
        assert_eq!(v.last().unwrap().end, Some(50.0));
        for w in v.windows(2) {
            assert_eq!(w[0].end, w[1].start, "contiguous");
        }
    }

    #[test]
    fn observer_on_a_fixture_copy_counts_only_the_nics_interrupts() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hosts/crow-9900x-cx5-x4");
        let t = fixture_copy(&src);
        let root = Root::unconfined(t.path()); // links into the fixture, on purpose
        let mut obs = Observer::new(
            root.clone(),
            Role::Receiver,
            NicSpec::Iface("enp1s0f0np0".into()),
        )
        .unwrap();
        assert_eq!(obs.irqs().len(), 13);
        assert_eq!(obs.topology().l3_groups.len(), 2);

        // One second at USER_HZ 100 on CPU 6 (receiver: 55 system, 44 softirq) and CPU 3.
        let stat = std::fs::read_to_string(t.path().join("proc/stat")).unwrap();
        let mut new_stat = String::new();
        for line in stat.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let add: Option<[u64; 7]> = match f.first().copied() {
                Some("cpu6") => Some([0, 0, 55, 1, 0, 0, 44]),
                Some("cpu3") => Some([0, 0, 0, 70, 0, 0, 30]),
                Some(c) if c.starts_with("cpu") && c != "cpu" => Some([0, 0, 0, 100, 0, 0, 0]),
                _ => None,
            };
            match add {
                Some(add) => {
                    let mut v: Vec<u64> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
                    for (i, a) in add.iter().enumerate() {
                        v[i] += a;
                    }
                    let v: Vec<String> = v.iter().map(u64::to_string).collect();
                    new_stat.push_str(&format!("{} {}\n", f[0], v.join(" ")));
                }
                None => {
                    new_stat.push_str(line);
                    new_stat.push('\n');
                }
            }
        }
        std::fs::write(t.path().join("proc/stat"), new_stat).unwrap();
        let soft = std::fs::read_to_string(t.path().join("proc/softirqs")).unwrap();
        std::fs::write(
            t.path().join("proc/softirqs"),
            bump(&soft, "NET_RX", &[(6, 80_000), (3, 20_000)]),
        )
        .unwrap();
        let ints = std::fs::read_to_string(t.path().join("proc/interrupts")).unwrap();
        // The NIC's IRQ 111 on CPU 3, and nvme0q7 (IRQ 68, not the NIC's) on CPU 6.
        let ints = bump(&ints, "111", &[(3, 20_000)]);
        let ints = bump(&ints, "68", &[(6, 5_000)]);
        std::fs::write(t.path().join("proc/interrupts"), ints).unwrap();

        let w = [worker(6)];
        let iv = obs.sample(Some((0.0, 1.0)), &w, None).unwrap().clone();
        let c6 = iv.cpu(6).unwrap();
        assert_eq!((c6.system.get(), c6.softirq.get()), (55.0, 44.0));
        assert_eq!((c6.nic_irqs, c6.net_rx), (0, 80_000));
        let c3 = iv.cpu(3).unwrap();
        assert_eq!(
            (c3.nic_irqs, c3.net_rx, c3.softirq.get()),
            (20_000, 20_000, 30.0)
        );
        assert_eq!(iv.cpus.len(), 2, "idle CPUs are left out: {:?}", iv.cpus);
        let end = obs.finish(Some("crow".into()), &w, None);
        assert_eq!(end.total.cpus, iv.cpus);
        assert_eq!(end.total.start, Some(0.0));
        assert_eq!(end.iface.as_deref(), Some("enp1s0f0np0"));
        assert_eq!(end.iface_mtu, Some(9000));
        assert!(end.notes.is_empty(), "{:?}", end.notes);
        let j = serde_json::to_value(&end).unwrap();
        assert_eq!(j["total"]["cpus"][1]["cpu"], 6);
        assert_eq!(j["role"], "receiver");
    }

    #[test]
    fn observer_counts_a_bonds_members_interrupts_through_a_vlan() {
        // the route's interface is VLAN 100 on a bond of two ConnectX-6 ports: their vectors
        // are the ones counted, each member's on the CPU it ran on
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hosts/bond-cx6-lacp");
        let t = fixture_copy(&src);
        let root = Root::unconfined(t.path()); // links into the fixture, on purpose
        let mut obs =
            Observer::new(root, Role::Receiver, NicSpec::Iface("bond0.100".into())).unwrap();
        assert_eq!(obs.irqs().len(), 18);
        let stack = obs.stack().unwrap();
        assert_eq!(stack.bond.as_ref().unwrap().name, "bond0");
        assert_eq!(stack.one_member_ceiling_mbps(), Some(100_000));
        let ints = std::fs::read_to_string(t.path().join("proc/interrupts")).unwrap();
        // member 1's mlx5_comp4 (IRQ 125, CPU 4) and member 2's mlx5_comp2 (IRQ 143, CPU 2)
        let ints = bump(&ints, "125", &[(4, 30_000)]);
        let ints = bump(&ints, "143", &[(2, 12_000)]);
        std::fs::write(t.path().join("proc/interrupts"), ints).unwrap();
        let soft = std::fs::read_to_string(t.path().join("proc/softirqs")).unwrap();
        std::fs::write(
            t.path().join("proc/softirqs"),
            bump(&soft, "NET_RX", &[(4, 50_000), (2, 20_000)]),
        )
        .unwrap();
        // one second at USER_HZ 100 on every CPU: softirq time on 4 and 2, idle elsewhere
        let stat = std::fs::read_to_string(t.path().join("proc/stat")).unwrap();
        let mut new_stat = String::new();
        for line in stat.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.first().copied() {
                Some(c) if c.starts_with("cpu") && c != "cpu" => {
                    let add: [u64; 7] = match c {
                        "cpu4" => [0, 0, 0, 40, 0, 0, 60],
                        "cpu2" => [0, 0, 0, 75, 0, 0, 25],
                        _ => [0, 0, 0, 100, 0, 0, 0],
                    };
                    let mut v: Vec<u64> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
                    for (i, a) in add.iter().enumerate() {
                        v[i] += a;
                    }
                    let v: Vec<String> = v.iter().map(u64::to_string).collect();
                    new_stat.push_str(&format!("{c} {}\n", v.join(" ")));
                }
                _ => {
                    new_stat.push_str(line);
                    new_stat.push('\n');
                }
            }
        }
        std::fs::write(t.path().join("proc/stat"), new_stat).unwrap();
        let iv = obs.sample(Some((0.0, 1.0)), &[], None).unwrap().clone();
        assert_eq!(
            iv.cpus.len(),
            2,
            "only the two CPUs that worked: {:?}",
            iv.cpus
        );
        let c4 = iv.cpu(4).unwrap();
        assert_eq!((c4.nic_irqs, c4.net_rx), (30_000, 50_000));
        let c2 = iv.cpu(2).unwrap();
        assert_eq!((c2.nic_irqs, c2.net_rx), (12_000, 20_000));
        let end = obs.finish(None, &[], None);
        assert_eq!(end.iface.as_deref(), Some("bond0.100"));
        assert_eq!(end.iface_speed_mbps, Some(200_000));
        assert_eq!(end.nic_numa_node, Some(1));
        assert_eq!(end.nic_irqs.len(), 18);
        assert!(end.notes.is_empty(), "{:?}", end.notes);
    }

    #[test]
    fn live_observer_on_this_host() {
        let mut obs = Observer::new(
            Root::live(),
            Role::Sender,
            NicSpec::Peer {
                peer: "127.0.0.1".parse().unwrap(),
                local: None,
            },
        )
        .unwrap();
        assert_eq!(obs.iface(), Some("lo"));
        // Burn a little CPU so the interval has ticks to share.
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let iv = obs.sample(None, &[], None).unwrap();
        for c in &iv.cpus {
            let sum = c.user.get()
                + c.system.get()
                + c.irq.get()
                + c.softirq.get()
                + c.steal.get()
                + c.idle.get();
            assert!((99.0..=101.0).contains(&sum), "shares sum to {sum}: {c:?}");
        }
        let end = obs.close(&[], None).unwrap();
        assert!(end.host.is_some());
        assert!(
            end.total.cpus.iter().any(|c| c.busy().get() > 0.0),
            "{:?}",
            end.total
        );
        assert!(end.nic_irqs.is_empty());
        assert!(
            end.notes.iter().any(|n| n.contains("virtual")),
            "{:?}",
            end.notes
        );
    }

    /// A synthetic host tree: `cpus` CPUs, `vectors` interrupt vectors (the first `nic` the
    /// NIC's, from IRQ 24), `threads` worker threads; `tick` moves every counter on by one
    /// interval's worth (the NIC's IRQ `24 + i` fires `i + 1` times on CPU `i % cpus`, every other
    /// vector 1,000 times on every CPU, worker `k` runs 0.5 s). With `per_irq`, the NIC's
    /// `/sys/kernel/irq/N/per_cpu_count` too.
    struct Synthetic {
        dir: tempfile::TempDir,
        cpus: u32,
        vectors: u32,
        nic: u32,
        threads: u32,
        per_irq: bool,
    }

    impl Synthetic {
        fn new(cpus: u32, vectors: u32, threads: u32, per_irq: bool) -> Synthetic {
            let s = Synthetic {
                dir: tempfile::tempdir().unwrap(),
                cpus,
                vectors,
                nic: vectors.min(8),
                threads,
                per_irq,
            };
            s.write(0);
            s
        }

        fn root(&self) -> Root {
            Root::new(self.dir.path())
        }

        fn nic_irqs(&self) -> Vec<u32> {
            (24..24 + self.nic).collect()
        }

        /// The NIC's count of IRQ `irq` on `cpu` after `t` intervals.
        fn nic_count(&self, irq: u32, cpu: u32, t: u64) -> u64 {
            let i = irq - 24;
            1_000_000_000
                + u64::from(cpu)
                + if i % self.cpus == cpu {
                    t * u64::from(i + 1)
                } else {
                    0
                }
        }

        fn write(&self, t: u64) {
            use std::fmt::Write;
            let w = |p: &str, text: &str| {
                let p = self.dir.path().join(p);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            };
            let mut st = format!("cpu  0 0 {} {} 0 0 0 0 0 0\n", t * 10, t * 90);
            for c in 0..self.cpus {
                let _ = writeln!(st, "cpu{c} 0 0 {} {} 0 0 {} 0 0 0", t * 20, t * 70, t * 10);
            }
            st.push_str("intr 0 0 0\nctxt 1\n");
            w("proc/stat", &st);
            let head: String = (0..self.cpus).map(|c| format!(" CPU{c}")).collect();
            let mut so = format!("   {head}\n");
            for name in ["HI", "NET_TX", "NET_RX"] {
                let _ = write!(so, "{name}:");
                for c in 0..self.cpus {
                    let add = if name == "NET_RX" {
                        t * u64::from(c + 1)
                    } else {
                        0
                    };
                    let _ = write!(so, " {}", 100 + add);
                }
                so.push('\n');
            }
            w("proc/softirqs", &so);
            let mut it = format!("   {head}\n");
            for irq in 24..24 + self.vectors {
                let _ = write!(it, "{irq:>4}:");
                for c in 0..self.cpus {
                    let n = if irq < 24 + self.nic {
                        self.nic_count(irq, c, t)
                    } else {
                        5 + t * 1000
                    };
                    let _ = write!(it, " {n:>10}");
                }
                let name = if irq < 24 + self.nic {
                    format!("mlx5_comp{}@pci:0000:01:00.0", irq - 24)
                } else {
                    format!("nvme0q{irq}")
                };
                let _ = writeln!(it, "  IR-PCI-MSIX-0000:01:00.0 {irq}-edge {name}");
            }
            let _ = writeln!(
                it,
                " LOC: {}   Local timer interrupts",
                vec!["7"; self.cpus as usize].join(" ")
            );
            w("proc/interrupts", &it);
            w(
                "sys/devices/system/cpu/possible",
                &format!("0-{}\n", self.cpus - 1),
            );
            if self.per_irq {
                for irq in self.nic_irqs() {
                    let c: Vec<String> = (0..self.cpus)
                        .map(|c| self.nic_count(irq, c, t).to_string())
                        .collect();
                    w(
                        &format!("sys/kernel/irq/{irq}/per_cpu_count"),
                        &format!("{}\n", c.join(",")),
                    );
                }
            }
            for k in 0..self.threads {
                let tid = 5000 + k;
                let d = format!("proc/self/task/{tid}");
                w(&format!("{d}/comm"), &format!("ws-dp-cpu{k}\n"));
                w(
                    &format!("{d}/schedstat"),
                    &format!("{} {} 1\n", t * 500_000_000, t * 100_000_000),
                );
                let mut stat = format!("{tid} (ws-dp-cpu{k}) R");
                for f in 4..=38 {
                    let _ = write!(stat, " {f}");
                }
                let _ = writeln!(stat, " {} 0 0", k % self.cpus);
                w(&format!("{d}/stat"), &stat);
            }
            // one helper thread that is not a worker
            w("proc/self/task/4999/comm", "wirespeed\n");
            w("proc/self/task/4999/schedstat", "1 1 1\n");
        }
    }

    /// Issue 38: the observer reads host trees of every size (here the small ones) right, the
    /// NIC's counts the same from its per-IRQ files and from `/proc/interrupts`.
    #[test]
    fn observer_reads_synthetic_trees_of_every_size() {
        for cpus in [2, 64, 192] {
            for vectors in [10, 100] {
                for threads in [1, 64] {
                    let mut seen = Vec::new();
                    for per_irq in [true, false] {
                        let at = format!(
                            "{cpus} CPUs, {vectors} vectors, {threads} threads, per_irq {per_irq}"
                        );
                        let s = Synthetic::new(cpus, vectors, threads, per_irq);
                        let mut obs =
                            Observer::new(s.root(), Role::Receiver, NicSpec::Irqs(s.nic_irqs()))
                                .unwrap();
                        assert_eq!(obs.per_irq(), per_irq, "{at}");
                        for t in 1..=3u64 {
                            s.write(t);
                            let iv = obs
                                .sample(Some((t as f64 - 1.0, t as f64)), &[], None)
                                .unwrap()
                                .clone();
                            assert_eq!(iv.cpus.len(), cpus as usize, "{at}: every CPU worked");
                            for c in &iv.cpus {
                                let want: u64 = s
                                    .nic_irqs()
                                    .iter()
                                    .filter(|&&irq| (irq - 24) % cpus == c.cpu)
                                    .map(|&irq| u64::from(irq - 24 + 1))
                                    .sum();
                                assert_eq!(c.nic_irqs, want, "{at}: CPU {}", c.cpu);
                                assert_eq!(c.net_rx, u64::from(c.cpu + 1), "{at}");
                                assert_eq!(
                                    (c.system.get(), c.softirq.get(), c.idle.get()),
                                    (20.0, 10.0, 70.0),
                                    "{at}"
                                );
                            }
                            assert_eq!(iv.threads.len(), threads as usize, "{at}");
                            assert!(iv.threads.iter().all(|u| u.name.starts_with("ws-dp")));
                            assert!(iv.observer.as_ref().is_some_and(|o| o.readings == 1));
                            seen.push((iv.cpus.clone(), iv.threads.len()));
                        }
                        let end = obs.close(&[], None).unwrap();
                        let nic: u64 = end.total.cpus.iter().map(|c| c.nic_irqs).sum();
                        let per_interval: u64 = (0..s.nic).map(|i| u64::from(i + 1)).sum();
                        assert_eq!(nic, 3 * per_interval, "{at}");
                    }
                    // per-IRQ files and /proc/interrupts: the same intervals
                    let (a, b) = seen.split_at(seen.len() / 2);
                    assert_eq!(a, b, "{cpus} CPUs {vectors} vectors");
                }
            }
        }
    }

    /// Issue 38: without the per-IRQ files, at 512 CPUs and 4,000 vectors (22 MB of
    /// `/proc/interrupts`, the NIC's 64 queues), the readings after the first read the NIC's rows
    /// only, where the first found them, and count what the whole text says; a vector that comes
    /// before them moves them: that reading reads the whole text again, counts right, and finds
    /// them anew.
    #[test]
    fn the_proc_interrupts_fallback_at_512_cpus_reads_the_nics_rows_where_they_are() {
        let (cpus, vectors) = (512, 4_000);
        let mut s = Synthetic::new(cpus, vectors, 2, false);
        s.nic = 64;
        s.write(0);
        let irqs = s.nic_irqs();
        let mut obs = Observer::new(s.root(), Role::Receiver, NicSpec::Irqs(irqs.clone())).unwrap();
        assert!(!obs.per_irq());
        assert!(
            obs.reader.nic_rows_known(),
            "the first reading found the rows"
        );
        assert!(
            obs.reader.interrupts.capacity() == 0,
            "the whole text's buffer is not kept"
        );
        let interrupts = s.dir.path().join("proc/interrupts");
        for t in 1..=4u64 {
            s.write(t);
            if t == 3 {
                // a vector comes before the NIC's rows (a device's queue, a VF)
                let text = std::fs::read_to_string(&interrupts).unwrap();
                let (head, rows) = text.split_once('\n').unwrap();
                let row: String = (0..cpus).map(|_| format!(" {:>10}", 3)).collect();
                std::fs::write(
                    &interrupts,
                    format!("{head}\n  23:{row}  IR-IO-APIC 23-fasteoi  new\n{rows}"),
                )
                .unwrap();
            }
            let whole = wirespeed_host::interrupts::sum_rows(
                &std::fs::read_to_string(&interrupts).unwrap(),
                &irqs,
            )
            .unwrap()
            .1;
            let iv = obs
                .sample(Some((t as f64 - 1.0, t as f64)), &[], None)
                .unwrap()
                .clone();
            assert!(obs.reader.nic_rows_known(), "interval {t}: the rows known");
            // the rows alone read while they stay put (the whole text's buffer never grown
            // again); where they moved the whole text was read, and its buffer is kept
            assert_eq!(
                obs.reader.interrupts.capacity() > 0,
                t >= 3,
                "interval {t}: the whole text read only where the rows moved"
            );
            assert_eq!(
                obs.last
                    .nic
                    .as_ref()
                    .unwrap()
                    .values()
                    .copied()
                    .collect::<Vec<_>>(),
                whole,
                "interval {t}: the counts the whole text has"
            );
            assert_eq!(iv.cpus.len(), cpus as usize);
            for c in &iv.cpus {
                let want: u64 = irqs
                    .iter()
                    .filter(|&&irq| (irq - 24) % cpus == c.cpu)
                    .map(|&irq| u64::from(irq - 24 + 1))
                    .sum();
                assert_eq!(c.nic_irqs, want, "interval {t}: CPU {}", c.cpu);
            }
            assert_eq!(iv.threads.len(), 2);
        }
        let end = obs.close(&[], None).unwrap();
        let nic: u64 = end.total.cpus.iter().map(|c| c.nic_irqs).sum();
        assert_eq!(nic, 4 * (1..=64).sum::<u64>());
    }

    /// Issue 38: a worker thread's `schedstat` and `stat` are held open and read at each
    /// interval; a thread that has ended reads no more: it is left out and its files closed.
    #[test]
    fn a_live_workers_files_are_held_open_until_it_ends() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("ws-dp-held".into())
            .spawn(move || {
                tx.send(rustix::thread::gettid().as_raw_nonzero().get() as u32)
                    .unwrap();
                let _ = done_rx.recv();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        let root = Root::live();
        let mut reader = Reader::default();
        let first = reader.threads(&root, Some(&[tid]));
        if first.is_empty() {
            eprintln!(
                "SKIP: a_live_workers_files_are_held_open_until_it_ends because \
                 /proc/self/task/{tid} cannot be read here"
            );
            done_tx.send(()).unwrap();
            worker.join().unwrap();
            return;
        }
        assert_eq!(&*first[0].name, "ws-dp-held");
        assert_eq!(reader.held, 2, "schedstat and stat held open");
        let again = reader.threads(&root, Some(&[tid]));
        assert_eq!(again.len(), 1);
        assert!(again[0].run_ns >= first[0].run_ns);
        // a recording root holds nothing open: what it reads is recorded
        let mut by_path = Reader::default();
        assert_eq!(by_path.threads(&root.recording(), Some(&[tid])).len(), 1);
        assert_eq!(by_path.held, 0);
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        assert!(reader.threads(&root, Some(&[tid])).is_empty(), "ended");
        assert_eq!(reader.held, 0, "its files closed");
        assert!(reader.tasks.is_empty());
    }

    /// Issue 38: on the live host a worker pinned to one CPU is read without its `stat`: its
    /// CPU is the one it may run on; let go, its `stat` says where it ran.
    #[test]
    fn a_live_worker_pinned_to_one_cpu_is_there_without_its_stat() {
        let Some(allowed) = affinity_of(None).filter(|a| !a.is_empty()) else {
            eprintln!("SKIP: a_live_worker_pinned_to_one_cpu_is_there_without_its_stat because this thread's affinity cannot be read");
            return;
        };
        let cpu = allowed.iter().last().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("ws-dp-pinned".into())
            .spawn(move || {
                tx.send(rustix::thread::gettid().as_raw_nonzero().get() as u32)
                    .unwrap();
                let _ = done_rx.recv();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        let root = Root::live();
        let mut reader = Reader::default();
        if reader.threads(&root, Some(&[tid])).is_empty() {
            eprintln!(
                "SKIP: a_live_worker_pinned_to_one_cpu_is_there_without_its_stat because \
                 /proc/self/task/{tid} cannot be read here"
            );
            done_tx.send(()).unwrap();
            worker.join().unwrap();
            return;
        }
        assert!(set_affinity(tid, &[cpu].into_iter().collect::<CpuSet>()));
        // a floating thread's affinity is looked at again within `AFFINITY_EVERY` readings
        let mut seen = None;
        for _ in 0..=AFFINITY_EVERY {
            let t = reader.threads(&root, Some(&[tid]));
            assert_eq!(t.len(), 1);
            seen = t[0].cpu;
            if reader.tasks[&tid].pinned.is_some() {
                break;
            }
        }
        assert_eq!(reader.tasks[&tid].pinned, Some(cpu), "seen pinned");
        assert_eq!(seen, Some(cpu));
        assert_eq!(reader.threads(&root, Some(&[tid]))[0].cpu, Some(cpu));
        // let go: looked at again at once, and its CPU read from its `stat` again
        if allowed.len() > 1 {
            assert!(set_affinity(tid, &allowed));
            let t = reader.threads(&root, Some(&[tid]));
            assert_eq!(reader.tasks[&tid].pinned, None);
            assert!(t[0].cpu.is_some_and(|c| allowed.contains(c)));
        }
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }

    /// A per-IRQ file cut at a page (many CPUs, large counts) is not trusted: the counts come
    /// from `/proc/interrupts`, and a file that goes missing later falls back for that reading.
    #[test]
    fn a_cut_per_irq_file_falls_back_to_proc_interrupts() {
        let s = Synthetic::new(4, 10, 1, true);
        let cut = s.dir.path().join("sys/kernel/irq/25/per_cpu_count");
        let text = std::fs::read_to_string(&cut).unwrap();
        std::fs::write(&cut, text.trim_end()).unwrap();
        assert!(!Reader::new(&s.root(), &s.nic_irqs()).per_irq());
        let s = Synthetic::new(4, 10, 1, true);
        let mut r = Reader::new(&s.root(), &s.nic_irqs());
        assert!(r.per_irq());
        let from_files = r.nic(&s.root(), &s.nic_irqs()).unwrap();
        std::fs::remove_file(s.dir.path().join("sys/kernel/irq/24/per_cpu_count")).unwrap();
        let from_proc = r.nic(&s.root(), &s.nic_irqs()).unwrap();
        assert_eq!(from_files, from_proc);
        assert!(r.per_irq(), "a later reading may find the files again");
    }

    /// Issue 38, item 2: what observing cost is in every interval and the totals, and it is the
    /// observer's own share of its thread's CPU time: never more than the thread spent.
    #[test]
    fn the_observers_cost_is_its_own_threads_cpu_time() {
        let s = Synthetic::new(64, 100, 8, false);
        let t0 = thread_cpu_ns();
        let mut obs = Observer::new(s.root(), Role::Sender, NicSpec::Irqs(s.nic_irqs())).unwrap();
        let mut intervals = 0.0;
        for t in 1..=4u64 {
            s.write(t);
            let iv = obs
                .sample(Some((t as f64 - 1.0, t as f64)), &[], None)
                .unwrap();
            let o = iv.observer.clone().unwrap();
            assert_eq!(o.readings, 1);
            assert!(o.cpu_s > 0.0, "a reading takes some CPU time: {o:?}");
            assert!(!o.cpus.is_empty(), "where it ran is known");
            intervals += o.cpu_s;
        }
        obs.hold_threads();
        let end = obs.close(&[], None).unwrap();
        let spent = (thread_cpu_ns() - t0) as f64 / 1e9;
        let total = end.total.observer.clone().unwrap();
        // the first reading, four intervals, the last
        assert_eq!(total.readings, 6);
        assert!(
            total.cpu_s > intervals && total.cpu_s <= spent,
            "intervals {intervals} s < total {} s <= the thread's {spent} s",
            total.cpu_s
        );
        assert!(
            !total.shared && total.kept_off.is_empty(),
            "nothing pinned on a tree"
        );
        // merged intervals (a long test) keep the sum
        let merged = end.intervals[0].clone().then(end.intervals[1].clone());
        let m = merged.observer.unwrap();
        assert_eq!(m.readings, 2);
        let pair = end.intervals[0].observer.as_ref().unwrap().cpu_s
            + end.intervals[1].observer.as_ref().unwrap().cpu_s;
        assert!((m.cpu_s - pair).abs() < 1e-12);
        // the cost carries it to the Cost line and -J
        let j = serde_json::to_value(&end.total).unwrap();
        assert_eq!(j["observer"]["readings"], 6);
    }

    #[test]
    fn the_observer_keeps_off_pinned_workers_cpus_or_says_it_shared() {
        let all: CpuSet = [0, 1, 2, 3].into_iter().collect();
        let (cpus, shared) = observer_cpus(&all, &[1, 2].into_iter().collect());
        assert_eq!((cpus.to_string().as_str(), shared), ("0,3", false));
        let (cpus, shared) = observer_cpus(&all, &all);
        assert_eq!((cpus, shared), (all.clone(), true));
        let (cpus, shared) = observer_cpus(&all, &CpuSet::new());
        assert_eq!((cpus, shared), (all, false));
    }

    /// On the live host: a worker pinned to one CPU, the observer's thread leaves that CPU while
    /// it observes and gets its affinity back when done.
    #[test]
    fn the_live_observer_leaves_a_pinned_workers_cpu() {
        let Some(mine) = affinity_of(None) else {
            return;
        };
        let Some(cpu) = mine.iter().last() else {
            return;
        };
        if mine.len() < 2 {
            eprintln!(
                "SKIP: the_live_observer_leaves_a_pinned_workers_cpu because one CPU is allowed"
            );
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            wirespeed_datapath::cpu::pin_current_thread(cpu).unwrap();
            tx.send(rustix::thread::gettid().as_raw_nonzero().get() as u32)
                .unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let mut obs = Observer::new(Root::live(), Role::Sender, NicSpec::None).unwrap();
        obs.own_threads(&[ThreadWatch::unnoted(tid)]);
        let now = affinity_of(None).unwrap();
        assert!(!now.contains(cpu), "kept off CPU {cpu}: {now}");
        assert_eq!(obs.cost().kept_off, CpuSet::from_cpus([cpu]));
        let iv = obs.sample(None, &[], None).unwrap();
        let o = iv.observer.clone().unwrap();
        assert!(!o.cpus.contains(cpu), "it ran on {}", o.cpus);
        let end = obs.close(&[], None).unwrap();
        assert_eq!(affinity_of(None).unwrap(), mine, "put back");
        assert_eq!(
            end.total.observer.unwrap().kept_off,
            CpuSet::from_cpus([cpu])
        );
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
