//! `--observer`: what the observer costs as hosts grow. Synthetic host trees (2, 64, 192 and 512
//! CPUs; 100, 1,000 and 4,000 interrupt vectors, one column per CPU; 1, 64 and 1,024 worker
//! threads) are written into a temporary directory and read through the same `Root` the
//! observer reads a live host with: each read and parse of an interval on its own, then whole
//! intervals (`Observer::sample`) with the NIC's counts from its per-IRQ files and from
//! `/proc/interrupts`. Per interval: the thread's CPU time (median of the repetitions) and the
//! allocations (count and bytes, from the bench's counting allocator). `doctor --root` runs on
//! the same trees when the wirespeed binary is there: wall time and peak RSS.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Serialize;
use wirespeed_host::interrupts::{self, Interrupts};
use wirespeed_host::{softirqs, stack, stat, Root};
use wirespeed_model::observation::Role;
use wirespeed_observe::observer::{thread_cpu_ns, NicSpec, Observer, Reader, ThreadWatch};

use crate::alloc_count;

pub const CPUS: [u32; 4] = [2, 64, 192, 512];
pub const VECTORS: [u32; 3] = [100, 1_000, 4_000];
pub const THREADS: [u32; 3] = [1, 64, 1_024];
/// The NIC's queue vectors among them (a 100G NIC's 64 queues; fewer on a small host).
const NIC_QUEUES: u32 = 64;
/// The first IRQ number of the synthetic vectors.
const FIRST_IRQ: u32 = 24;
/// The goal of issue 38: one interval at 512 CPUs and 4,000 vectors, per end.
pub const GOAL_MS: f64 = 5.0;

/// A count of the size the kernel prints on a busy host (10 digits: `%10u ` fills the column).
fn count(seed: u64) -> u64 {
    let x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    1_000_000_000 + (x >> 33) % 3_000_000_000
}

/// A vector's count on a CPU. A NIC queue's vector is affined to one CPU (`irqbalance` or
/// doctor's placement): its count is there, and 0 on the others; `/proc/interrupts` still prints
/// every column ten wide. Every other vector has a count on every CPU (the worst case for the
/// text's size).
fn vector_count(nic: &[u32], irq: u32, cpu: u32, cpus: u32) -> u64 {
    let n = count(u64::from(irq) << 20 | u64::from(cpu));
    match nic.iter().position(|&q| q == irq) {
        Some(q) if q as u32 % cpus != cpu => 0,
        _ => n,
    }
}

fn nic_irqs(vectors: u32) -> Vec<u32> {
    (FIRST_IRQ..FIRST_IRQ + NIC_QUEUES.min(vectors)).collect()
}

/// Write a host tree with `cpus` CPUs and `vectors` interrupt vectors (the first 64 the NIC's,
/// each affined to one CPU, with their `/sys/kernel/irq/N/per_cpu_count`; see
/// [`vector_count`]), no worker threads yet.
pub fn write_tree(dir: &Path, cpus: u32, vectors: u32) -> std::io::Result<()> {
    let w = |p: &str, s: &str| -> std::io::Result<()> {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().expect("a file in a directory"))?;
        std::fs::write(p, s)
    };
    // /proc/stat: the cpu lines, then `intr` with one count per IRQ number as the kernel has it
    let mut s = String::from("cpu  1000 10 2000 90000 50 0 300 0 0 0\n");
    for c in 0..cpus {
        let _ = writeln!(
            s,
            "cpu{c} {} 1 {} {} 5 0 {} 0 0 0",
            100 + c,
            200 + c,
            9000 + c,
            30
        );
    }
    s.push_str("intr 123456789");
    for i in 0..FIRST_IRQ + vectors {
        let _ = write!(s, " {}", count(u64::from(i)) % 100_000);
    }
    s.push_str("\nctxt 987654321\nbtime 1700000000\nprocesses 12345\nprocs_running 3\n");
    s.push_str("procs_blocked 0\nsoftirq 1 2 3 4 5 6 7 8 9 10 11\n");
    w("proc/stat", &s)?;
    // /proc/softirqs
    let header: String = (0..cpus)
        .map(|c| format!("{:>11}", format!("CPU{c}")))
        .collect();
    let mut s = format!("          {header}\n");
    for name in [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ] {
        let _ = write!(s, "{name:>9}:");
        for c in 0..cpus {
            let _ = write!(s, " {:>10}", count(u64::from(c)) % 10_000_000);
        }
        s.push('\n');
    }
    w("proc/softirqs", &s)?;
    // /proc/interrupts: 11 bytes per CPU per vector, as the kernel prints them
    let mut s = String::with_capacity((cpus as usize * 11 + 80) * (vectors as usize + 12));
    s.push_str("     ");
    for c in 0..cpus {
        let _ = write!(s, " {:>10}", format!("CPU{c}"));
    }
    s.push('\n');
    let nic = nic_irqs(vectors);
    for v in 0..vectors {
        let irq = FIRST_IRQ + v;
        let _ = write!(s, "{irq:>4}:");
        for c in 0..cpus {
            let _ = write!(s, " {:>10}", vector_count(&nic, irq, c, cpus));
        }
        let name = if nic.contains(&irq) {
            format!("mlx5_comp{}@pci:0000:01:00.0", irq - FIRST_IRQ)
        } else {
            format!("nvme{}q{}", v / 128, v % 128)
        };
        let _ = writeln!(s, "  IR-PCI-MSIX-0000:01:00.0 {v}-edge      {name}");
    }
    for (name, what) in [
        ("NMI", "Non-maskable interrupts"),
        ("LOC", "Local timer interrupts"),
        ("RES", "Rescheduling interrupts"),
        ("CAL", "Function call interrupts"),
        ("TLB", "TLB shootdowns"),
    ] {
        let _ = write!(s, "{name:>4}:");
        for c in 0..cpus {
            let _ = write!(s, " {:>10}", count(u64::from(c)));
        }
        let _ = writeln!(s, "   {what}");
    }
    s.push_str(" ERR:          0\n MIS:          0\n");
    w("proc/interrupts", &s)?;
    for &irq in &nic {
        let counts: Vec<String> = (0..cpus)
            .map(|c| vector_count(&nic, irq, c, cpus).to_string())
            .collect();
        let mut text = counts.join(",");
        text.push('\n');
        // the kernel writes the file into one page: a longer one is cut (no newline)
        if text.len() > 4096 {
            text.truncate(4095);
        }
        w(&format!("sys/kernel/irq/{irq}/per_cpu_count"), &text)?;
    }
    w(
        "sys/devices/system/cpu/possible",
        &format!("0-{}\n", cpus - 1),
    )?;
    // softnet_stat: 13 hex columns per online CPU
    let mut s = String::new();
    for c in 0..cpus {
        let _ = writeln!(
            s,
            "{:08x} 00000000 {:08x} 00000000 00000000 00000000 00000000 00000000 00000000 \
             00000000 00000000 {:08x} {c:08x}",
            count(u64::from(c)) % 0xffff_ffff,
            c,
            c
        );
    }
    w("proc/net/softnet_stat", &s)?;
    w(
        "proc/net/netstat",
        "TcpExt: PruneCalled RcvPruned OfoPruned TCPBacklogDrop TCPRcvQDrop TCPZeroWindowDrop\n\
         TcpExt: 10 0 0 3 0 0\n",
    )?;
    w(
        "proc/net/snmp",
        "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
         Udp: 1000 0 0 1000 0 0\n",
    )?;
    w("proc/sys/kernel/hostname", "synthetic\n")?;
    Ok(())
}

/// The ids of [`write_threads`]' `n` threads.
fn thread_ids(n: u32) -> Vec<u32> {
    (10_000..10_000 + n).collect()
}

/// Threads `tids` as the engine tells its observer of its workers, each having noted the CPU
/// it runs on (the calling thread's, standing in for each).
fn noted(tids: &[u32]) -> Vec<ThreadWatch> {
    tids.iter()
        .map(|&tid| {
            let w = ThreadWatch::unnoted(tid);
            w.cpu.note();
            w
        })
        .collect()
}

/// Replace the tree's `/proc/self/task` with `n` worker threads.
pub fn write_threads(dir: &Path, n: u32) -> std::io::Result<()> {
    let task = dir.join("proc/self/task");
    if task.exists() {
        std::fs::remove_dir_all(&task)?;
    }
    for i in 0..n {
        let tid = 10_000 + i;
        let t = task.join(tid.to_string());
        std::fs::create_dir_all(&t)?;
        std::fs::write(t.join("comm"), format!("ws-dp-cpu{i}\n"))?;
        std::fs::write(
            t.join("schedstat"),
            format!(
                "{} {} {}\n",
                count(u64::from(i)),
                count(u64::from(tid)),
                5677 + i
            ),
        )?;
        let mut stat = format!("{tid} (ws-dp-cpu{i}) R 1 1 1 0 -1 4194560");
        for f in 10..=38 {
            let _ = write!(stat, " {f}");
        }
        let _ = writeln!(stat, " {} 0 0 0 0 0", i % 512);
        std::fs::write(t.join("stat"), stat)?;
    }
    Ok(())
}

/// One figure per interval: median CPU time and the allocations of one repetition.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Figure {
    pub cpu_ms: f64,
    pub allocs: u64,
    pub alloc_kib: f64,
}

impl Figure {
    fn cell(&self) -> String {
        format!("{:.3} ms {}a", self.cpu_ms, self.allocs)
    }
}

/// Run `f` repeatedly (at least 3 times, until 150 ms of CPU or 25 runs) after one warm-up:
/// the median CPU time and the last run's allocations.
fn measure(mut f: impl FnMut()) -> Figure {
    f(); // buffers grow to size, caches warm
    let mut times = Vec::new();
    let mut spent = 0;
    let mut last = (0, 0);
    while times.len() < 3 || (spent < 150_000_000 && times.len() < 25) {
        let a0 = alloc_count::now();
        let t0 = thread_cpu_ns();
        f();
        let dt = thread_cpu_ns().saturating_sub(t0);
        let a1 = alloc_count::now();
        last = (a1.0 - a0.0, a1.1 - a0.1);
        spent += dt;
        times.push(dt);
    }
    times.sort_unstable();
    Figure {
        cpu_ms: times[times.len() / 2] as f64 / 1e6,
        allocs: last.0,
        alloc_kib: last.1 as f64 / 1024.0,
    }
}

/// The figures of one tree.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub cpus: u32,
    pub vectors: u32,
    pub threads: u32,
    pub interrupts_mb: f64,
    pub stat: Figure,
    pub softirqs: Figure,
    /// `/proc/interrupts` read whole and only the NIC's rows parsed (the observer's first
    /// reading when the per-IRQ files are missing or cut, and any reading where the rows moved).
    pub interrupts_nic_rows: Figure,
    /// `/proc/interrupts` read where the NIC's rows lay at the last whole reading: the header
    /// and those rows only (what the observer does after its first reading, while the rows stay
    /// put).
    pub interrupts_rows_only: Figure,
    /// `/proc/interrupts` read and every row parsed, then summed (the observer before issue 38).
    pub interrupts_full_parse: Figure,
    /// The NIC's `/sys/kernel/irq/N/per_cpu_count` files (`None`: cut at this size).
    pub per_irq: Option<Figure>,
    /// The worker threads named by their ids, as the engine names them (`own_threads`), each
    /// noting where it runs as the engine's workers do (`CpuNow`, noted here by the bench's
    /// thread): `schedstat` read, `stat` not.
    pub threads_read: Figure,
    /// The same threads named by id only: where each ran read from its `stat` (an observer not
    /// told where they run: the engine before its workers noted it).
    pub threads_by_stat: Figure,
    /// The worker threads found by listing `/proc/self/task` (an observer not told its
    /// workers' ids: before the engine names them).
    pub threads_listed: Figure,
    pub net: Figure,
    /// One whole interval (`Observer::sample`), the NIC's counts from `/proc/interrupts`.
    pub sample_proc: Figure,
    /// One whole interval with the per-IRQ files (`None`: cut at this size).
    pub sample_per_irq: Option<Figure>,
}

fn row(dir: &Path, cpus: u32, vectors: u32, threads: u32) -> Row {
    let root = Root::new(dir);
    let irqs = nic_irqs(vectors);
    let mut buf = String::new();
    let mut r = Row {
        cpus,
        vectors,
        threads,
        interrupts_mb: std::fs::metadata(dir.join("proc/interrupts"))
            .map(|m| m.len() as f64 / 1e6)
            .unwrap_or(0.0),
        ..Row::default()
    };
    r.stat = measure(|| {
        root.read_into("/proc/stat", &mut buf).expect("stat");
        std::hint::black_box(stat::parse(&buf).expect("stat parses"));
    });
    r.softirqs = measure(|| {
        root.read_into("/proc/softirqs", &mut buf)
            .expect("softirqs");
        std::hint::black_box(softirqs::parse(&buf).expect("softirqs parse"));
    });
    r.interrupts_nic_rows = measure(|| {
        root.read_into("/proc/interrupts", &mut buf)
            .expect("interrupts");
        std::hint::black_box(interrupts::sum_rows(&buf, &irqs).expect("parses"));
    });
    // the rows only: a reader without the per-IRQ files, after one whole reading
    let mut rows_reader = Reader::default();
    let whole = interrupts::sum_rows(&root.read("/proc/interrupts").expect("interrupts"), &irqs)
        .expect("parses");
    let whole: std::collections::BTreeMap<u32, u64> = whole.0.into_iter().zip(whole.1).collect();
    assert_eq!(rows_reader.nic(&root, &irqs).as_ref(), Some(&whole));
    assert!(rows_reader.nic_rows_known(), "the NIC's rows found");
    r.interrupts_rows_only = measure(|| {
        let m = rows_reader.nic(&root, &irqs);
        assert!(
            m.as_ref() == Some(&whole),
            "the rows read alone sum as the whole text"
        );
    });
    assert!(rows_reader.nic_rows_known(), "the rows stayed put");
    r.interrupts_full_parse = measure(|| {
        let text = root.read("/proc/interrupts").expect("interrupts");
        let i = Interrupts::parse(&text).expect("parses");
        std::hint::black_box(i.sum_per_cpu(&irqs));
    });
    let mut reader = Reader::new(&root, &irqs);
    let per_irq = reader.per_irq();
    if per_irq {
        r.per_irq = Some(measure(|| {
            assert!(reader.nic(&root, &irqs).is_some());
        }));
    }
    // the engine names its workers (`Observer::own_threads`): their ids, not a listing, and
    // where each notes it runs (here the bench's thread stands in for each worker)
    let tids = thread_ids(threads);
    let watches = noted(&tids);
    let mut reader = Reader::default();
    reader.watch(&watches);
    r.threads_read = measure(|| {
        let t = reader.threads(&root, Some(&tids));
        assert_eq!(t.len(), threads as usize, "every worker read");
        assert!(t.iter().all(|t| t.cpu.is_some()), "where each ran");
    });
    let mut reader = Reader::default();
    r.threads_by_stat = measure(|| {
        let t = reader.threads(&root, Some(&tids));
        assert_eq!(t.len(), threads as usize, "every worker read");
        assert!(t.iter().all(|t| t.cpu.is_some()), "where each ran");
    });
    let mut reader = Reader::default();
    r.threads_listed = measure(|| {
        let t = reader.threads(&root, None);
        assert_eq!(t.len(), threads as usize, "every worker listed and read");
    });
    r.net = measure(|| {
        let online: wirespeed_host::CpuSet = (0..cpus).collect();
        std::hint::black_box(stack::read_softnet(&root, Some(&online)).expect("softnet"));
        std::hint::black_box(stack::read_tcp_rx_drops(&root).expect("netstat"));
        std::hint::black_box(stack::read_udp_rx(&root).expect("snmp"));
    });
    // whole intervals, through the observer
    let sample = |per_irq: bool| {
        let kernel = dir.join("sys/kernel");
        let hidden = dir.join("sys/kernel-hidden");
        if !per_irq {
            std::fs::rename(&kernel, &hidden).expect("hide the per-IRQ files");
        }
        let mut obs = Observer::new(root.clone(), Role::Receiver, NicSpec::Irqs(irqs.clone()))
            .expect("observer starts");
        assert_eq!(
            obs.per_irq(),
            per_irq,
            "the NIC's counts come from where expected"
        );
        obs.own_threads(&watches);
        let mut i = 0.0;
        let f = measure(|| {
            let iv = obs.sample(Some((i, i + 1.0)), &[], None).expect("sample");
            assert_eq!(iv.threads.len(), threads as usize);
            i += 1.0;
        });
        if !per_irq {
            std::fs::rename(&hidden, &kernel).expect("restore the per-IRQ files");
        }
        f
    };
    r.sample_proc = sample(false);
    if per_irq {
        r.sample_per_irq = Some(sample(true));
    }
    r
}

/// Reading `n` worker threads of this process on the live host (`/proc/self/task`, printed by
/// the kernel at each read, where a tree's files are only copied): real threads named as the
/// engine's workers, waiting on a barrier, read by their ids as the engine has the observer read
/// them — floating (`stat` read for the CPU each ran on last), then each pinned to one of the
/// CPUs this process may use (that CPU, from `sched_getaffinity`).
#[derive(Debug, Clone, Serialize)]
pub struct LiveThreads {
    pub threads: u32,
    pub floating: Figure,
    pub pinned: Option<Figure>,
    /// Floating, each having noted where it runs (as the engine's workers do): `schedstat` only.
    pub noted: Figure,
}

fn live_threads(n: u32) -> Result<LiveThreads, String> {
    use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
    let mine = sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
    let allowed: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| mine.is_set(c)).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let go = std::sync::Arc::new(std::sync::Barrier::new(n as usize + 1));
    let mut handles = Vec::new();
    for i in 0..n {
        let (tx, go) = (tx.clone(), go.clone());
        let h = std::thread::Builder::new()
            .name(format!("ws-dp-{i}"))
            .stack_size(64 * 1024)
            .spawn(move || {
                let w =
                    ThreadWatch::unnoted(rustix::thread::gettid().as_raw_nonzero().get() as u32);
                w.cpu.note();
                let _ = tx.send(w);
                go.wait();
            });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                // the threads started wait for n + 1: they cannot be let go; the bench ends soon
                return Err(format!("thread {i} of {n} did not start: {e}"));
            }
        }
    }
    let watches: Vec<ThreadWatch> = (0..n).filter_map(|_| rx.recv().ok()).collect();
    let tids: Vec<u32> = watches.iter().map(|w| w.tid).collect();
    let root = Root::live();
    // `watches`: the threads that note where they run (none: each one's `stat` is read)
    let read = |tids: &[u32], watches: &[ThreadWatch]| -> Result<Figure, String> {
        let mut reader = Reader::default();
        reader.watch(watches);
        let got = reader.threads(&root, Some(tids)).len();
        if got != tids.len() {
            return Err(format!(
                "{got} of {} threads read in /proc/self/task",
                tids.len()
            ));
        }
        Ok(measure(|| {
            std::hint::black_box(reader.threads(&root, Some(tids)));
        }))
    };
    let floating = read(&tids, &[]);
    let noted = read(&tids, &watches);
    let pinned = tids.iter().enumerate().all(|(i, &t)| {
        let mut one = CpuSet::new();
        one.set(allowed[i % allowed.len()]);
        let pid = i32::try_from(t)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        pid.is_some() && sched_setaffinity(pid, &one).is_ok()
    });
    let pinned = if pinned { read(&tids, &[]).ok() } else { None };
    go.wait();
    for h in handles {
        let _ = h.join();
    }
    Ok(LiveThreads {
        threads: n,
        floating: floating?,
        pinned,
        noted: noted?,
    })
}

/// `doctor --root` on one tree: wall seconds and the child's own peak RSS (`wait4`'s rusage).
#[derive(Debug, Clone, Serialize)]
pub struct DoctorRun {
    pub cpus: u32,
    pub vectors: u32,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_mb: f64,
    pub exit: Option<i32>,
}

fn doctor(bin: &Path, dir: &Path, cpus: u32, vectors: u32) -> Option<DoctorRun> {
    let t0 = Instant::now();
    // starts: wirespeed (the binary under test, --wirespeed)
    let child = Command::new(bin)
        .arg("doctor")
        .arg("--root")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let pid = libc::pid_t::try_from(child.id()).ok()?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped (`child` is never waited on); both
    // pointers are to live locals of the right types.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    if r != pid {
        return None;
    }
    let wall_s = t0.elapsed().as_secs_f64();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(DoctorRun {
        cpus,
        vectors,
        wall_s,
        cpu_s: tv(ru.ru_utime) + tv(ru.ru_stime),
        max_rss_mb: ru.ru_maxrss as f64 / 1024.0,
        exit: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
    })
}

/// Everything `--observer` measured.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub rows: Vec<Row>,
    pub live_threads: Vec<LiveThreads>,
    pub doctor: Vec<DoctorRun>,
    pub verdict: Vec<VerdictCost>,
    pub goal_met: bool,
}

/// What the verdict costs over two ends' observations of one size (what `-J` and the text
/// compute at the test's end, and the live view at every tick).
#[derive(Debug, Clone, Serialize)]
pub struct VerdictCost {
    pub workers: u32,
    pub cpus: u32,
    pub intervals: u32,
    /// Each worker names its thread (the engine's); else none does and each interval holds one
    /// thread more than the workers, so nothing pairs them (a peer's worst shape).
    pub named: bool,
    pub figure: Figure,
}

/// The intervals of a one-minute test at `-i 1`.
const VERDICT_INTERVALS: u32 = 60;

/// The sizes timed: the engine's tests (60 intervals, named workers), and a peer's worst
/// shape within the results message's caps (its observation is the peer's to size).
const VERDICT_SIZES: [(u32, u32, u32, bool); 4] = [
    (64, 64, VERDICT_INTERVALS, true),
    (1_024, 64, VERDICT_INTERVALS, true),
    (1_024, 512, VERDICT_INTERVALS, true),
    (20_000, 20_000, 3, false),
];

/// The verdict over a synthetic test of `workers` workers an end on `cpus` CPUs (both ends
/// on one host's numbering, each worker its own thread), every CPU 95 % busy (50 % system,
/// 45 % softirq) in each of `intervals` intervals and each worker running half of it: a busy
/// test, where every CPU rule reads every worker and CPU. `named`: see [`VerdictCost`].
pub fn verdict_cost(workers: u32, cpus: u32, intervals: u32, named: bool) -> VerdictCost {
    use wirespeed_model::observation::{
        BitsPerSecond, CpuUse, EndObservation, IntervalObservation, Percent, Role, TestObservation,
        ThreadUse, WorkerRun,
    };
    use wirespeed_model::verdict::Measured;
    let rows: Vec<CpuUse> = (0..cpus)
        .map(|cpu| CpuUse {
            cpu,
            system: Percent::new(50.0),
            softirq: Percent::new(45.0),
            idle: Percent::new(5.0),
            ..CpuUse::default()
        })
        .collect();
    let threads_per_end = workers + u32::from(!named);
    let end = |role: Role, first_tid: u32| {
        let runs: Vec<WorkerRun> = (0..workers)
            .map(|k| WorkerRun {
                worker: k,
                cpu_requested: None,
                cpus_seen: wirespeed_model::CpuSet::from_cpus([k % cpus]),
                streams: vec![i32::try_from(k).unwrap_or(i32::MAX)],
                tid: named.then_some(first_tid + k),
            })
            .collect();
        let interval = IntervalObservation {
            cpus: rows.clone(),
            workers: runs.clone(),
            threads: (0..threads_per_end)
                .map(|k| ThreadUse {
                    tid: first_tid + k,
                    name: "ws-dp".into(),
                    cpu: Some(k % cpus),
                    run: Percent::new(50.0),
                    wait: Percent::new(1.0),
                    role: Some(role),
                })
                .collect(),
            ..IntervalObservation::default()
        };
        EndObservation {
            role,
            host: None,
            iface: Some("eth0".into()),
            iface_mtu: Some(9000),
            iface_speed_mbps: Some(100_000),
            nic_numa_node: None,
            nic_irqs: Vec::new(),
            topology: Default::default(),
            intervals: vec![interval.clone(); intervals as usize],
            total: interval,
            notes: Vec::new(),
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        }
    };
    let test = TestObservation {
        local: end(Role::Sender, 1_000),
        remote: Some(end(Role::Receiver, 1_000 + threads_per_end)),
        remote_absent: None,
    };
    let m = Measured {
        throughput: Some(BitsPerSecond(90e9)),
        interval_bps: vec![90e9; intervals as usize],
        ..Measured::default()
    };
    let figure = measure(|| {
        std::hint::black_box(wirespeed_verdict::verdict_of(&test, &m));
    });
    VerdictCost {
        workers,
        cpus,
        intervals,
        named,
        figure,
    }
}

/// Run the section over the trees of `cpus` × `vectors` (subsets of [`CPUS`] and [`VECTORS`];
/// every thread count of [`THREADS`]); `wirespeed` is the binary for `doctor --root` (skipped
/// when `None`).
pub fn run(wirespeed: Option<&PathBuf>, cpus: &[u32], vectors: &[u32]) -> Report {
    let mut rep = Report::default();
    println!(
        "observer: per interval, median CPU ms of the thread and allocations (a) of one run; \
         NIC = {NIC_QUEUES} queue vectors"
    );
    println!(
        "{:>5} {:>6} {:>5} {:>7} | {:>15} {:>15} {:>17} {:>17} {:>17} {:>15} {:>16} {:>15} | {:>17} {:>17}",
        "CPUs",
        "vecs",
        "thr",
        "intr MB",
        "stat",
        "softirqs",
        "intr: whole,NIC",
        "intr: rows only",
        "intr: full parse",
        "per-IRQ files",
        "threads",
        "softnet+net",
        "interval /proc",
        "interval per-IRQ"
    );
    for &cpus in cpus {
        for &vectors in vectors {
            let tmp = tempfile::tempdir().expect("a temporary directory");
            if let Err(e) = write_tree(tmp.path(), cpus, vectors) {
                println!("observer: cannot write a tree: {e}");
                return rep;
            }
            for &threads in &THREADS {
                if let Err(e) = write_threads(tmp.path(), threads) {
                    println!("observer: cannot write threads: {e}");
                    return rep;
                }
                let r = row(tmp.path(), cpus, vectors, threads);
                let opt = |f: &Option<Figure>| f.map_or("cut (>1 page)".to_string(), |f| f.cell());
                println!(
                    "{:>5} {:>6} {:>5} {:>7.2} | {:>15} {:>15} {:>17} {:>17} {:>17} {:>15} {:>16} {:>15} | {:>17} {:>17}",
                    cpus,
                    vectors,
                    threads,
                    r.interrupts_mb,
                    r.stat.cell(),
                    r.softirqs.cell(),
                    r.interrupts_nic_rows.cell(),
                    r.interrupts_rows_only.cell(),
                    r.interrupts_full_parse.cell(),
                    opt(&r.per_irq),
                    r.threads_read.cell(),
                    r.net.cell(),
                    r.sample_proc.cell(),
                    opt(&r.sample_per_irq),
                );
                rep.rows.push(r);
            }
            if let Some(bin) = wirespeed {
                if let Some(d) = doctor(bin, tmp.path(), cpus, vectors) {
                    rep.doctor.push(d);
                }
            }
        }
    }
    // growth: the interval over CPUs (4,000 vectors, 1 thread), over vectors (512 CPUs), over
    // threads (512 CPUs, 4,000 vectors)
    let find = |c, v, t| {
        rep.rows
            .iter()
            .find(|r| r.cpus == c && r.vectors == v && r.threads == t)
    };
    let line = |what: &str, cells: Vec<(String, Option<&Row>)>| {
        let parts: Vec<String> = cells
            .iter()
            .filter_map(|(k, r)| {
                let r = (*r)?;
                Some(format!(
                    "{k}: {:.3} ms ({:.3} ms /proc)",
                    r.sample_per_irq.unwrap_or(r.sample_proc).cpu_ms,
                    r.sample_proc.cpu_ms
                ))
            })
            .collect();
        println!("growth over {what}: {}", parts.join(", "));
    };
    line(
        "CPUs (4,000 vectors, 1 thread)",
        CPUS.iter()
            .map(|&c| (format!("{c}"), find(c, 4_000, 1)))
            .collect(),
    );
    line(
        "vectors (512 CPUs, 1 thread)",
        VECTORS
            .iter()
            .map(|&v| (format!("{v}"), find(512, v, 1)))
            .collect(),
    );
    line(
        "threads (512 CPUs, 4,000 vectors)",
        THREADS
            .iter()
            .map(|&t| (format!("{t}"), find(512, 4_000, t)))
            .collect(),
    );
    if let Some(r) = find(512, 4_000, 1) {
        // the path the observer takes there: the per-IRQ files when they read whole
        let (path, ms) = match r.sample_per_irq {
            Some(f) => ("per-IRQ files", f.cpu_ms),
            None => ("/proc/interrupts", r.sample_proc.cpu_ms),
        };
        // met on both paths: the per-IRQ files, and /proc/interrupts where they are cut or missing
        rep.goal_met = ms < GOAL_MS && r.sample_proc.cpu_ms < GOAL_MS;
        println!(
            "goal (issue 38): one interval at 512 CPUs and 4,000 vectors under {GOAL_MS} ms of CPU \
             per end, on both paths: {} ({ms:.3} ms, the NIC's counts from its {path}; from \
             /proc/interrupts, where those files are cut or missing: {:.3} ms; with 1,024 \
             threads: {})",
            if rep.goal_met { "MET" } else { "NOT MET" },
            r.sample_proc.cpu_ms,
            find(512, 4_000, 1_024).map_or("-".to_string(), |r| format!(
                "{:.3} ms",
                r.sample_per_irq.unwrap_or(r.sample_proc).cpu_ms
            )),
        );
    }
    // one figure of the largest tree at each thread count
    let over_threads = |what: &str, figure: fn(&Row) -> Figure| {
        let cells: Vec<String> = THREADS
            .iter()
            .filter_map(|&t| Some(format!("{t}: {}", figure(find(512, 4_000, t)?).cell())))
            .collect();
        println!("{what}, 512 CPUs, 4,000 vectors: {}", cells.join(", "));
    };
    over_threads(
        "worker threads named by id, where each ran read from its stat (not noted by the workers)",
        |r| r.threads_by_stat,
    );
    over_threads(
        "worker threads found by listing /proc/self/task (not named by the engine)",
        |r| r.threads_listed,
    );
    let mut live = Vec::new();
    for &n in &THREADS {
        match live_threads(n) {
            Ok(l) => live.push(l),
            Err(e) => println!("live threads: NOT MEASURED at {n}: {e}"),
        }
    }
    println!(
        "worker threads of this process on the live host (/proc/self/task, by id): {}",
        live.iter()
            .map(|l| format!(
                "{}: {} floating, {} pinned, {} noting where they run",
                l.threads,
                l.floating.cell(),
                l.pinned.map_or("-".to_string(), |f| f.cell()),
                l.noted.cell()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    rep.live_threads = live;
    rep.verdict = VERDICT_SIZES
        .into_iter()
        .map(|(w, c, i, named)| verdict_cost(w, c, i, named))
        .collect();
    println!(
        "the verdict over two ends, every CPU 95 % busy: {}",
        rep.verdict
            .iter()
            .map(|v| format!(
                "{} workers an end on {} CPUs, {} intervals{}: {}",
                v.workers,
                v.cpus,
                v.intervals,
                if v.named { "" } else { ", threads not named" },
                v.figure.cell()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    match wirespeed {
        None => println!("doctor --root: NOT RUN — no wirespeed binary (see --wirespeed)"),
        Some(bin) => {
            println!("doctor --root on the same trees ({}):", bin.display());
            for d in &rep.doctor {
                println!(
                    "  {:>4} CPUs {:>5} vectors: {:.3} s wall, {:.3} s CPU, peak RSS {:.1} MB, exit {}",
                    d.cpus,
                    d.vectors,
                    d.wall_s,
                    d.cpu_s,
                    d.max_rss_mb,
                    d.exit.map_or("signal".to_string(), |c| c.to_string())
                );
            }
        }
    }
    rep
}
