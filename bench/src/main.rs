//! wirespeed-bench: one invocation runs wirespeed, Debian's iperf3 and
//! bareloop (the copying-loop ceiling) alternately — A/B/C/A/B/C… — on the
//! same path, block size, duration and CPUs, and prints per-contender medians
//! with the ratios wirespeed/iperf3 and wirespeed/bareloop.
//!
//! Sections (all by default; `--only` picks some):
//! * `tcp`    — one TCP stream on loopback, 128 KiB and 1 MiB blocks, copying path;
//! * `zc`     — zero-copy send at 128 KiB: `wirespeed -Z` vs `iperf3 -Z` vs bareloop;
//! * `netns`  — the `tcp` and `zc` runs across a veth pair between two network
//!   namespaces made for the run (root only; skipped with a line otherwise);
//! * `udp`    — 1472-byte datagrams at `-b 0`: receiver goodput and loss;
//! * `paced`  — UDP at `-b 1G` and `-b 5G`: achieved rate vs target;
//! * `nocopy` — one TCP stream without the receiver's copy, each tool with its best flags:
//!   `wirespeed --zerocopy=msg_zerocopy --zerocopy-rx` (maps the data it receives),
//!   `iperf3-3.21 -Z --skip-rx-copy` (discards it), neper `tcp_stream -Z -z` (maps it).
//!
//! The peers (`--peers`: iperf3 3.21, riperf3, xfr, neper's `tcp_stream`) join where they
//! fit: iperf3 3.21, riperf3 and xfr in `tcp`, iperf3 3.21 with `--gsro` in `udp`, iperf3 3.21
//! and neper in `nocopy`. A peer that is missing is named and skipped.
//!
//! `--scale` replaces the sections with the many-stream comparison sized to the machine (`-P` 1,
//! 2, 4 … up to the CPUs and twice them, TCP and UDP): aggregate Gbit/s, CPU per bit, Gbit/s
//! per busy core, where the aggregate stops growing and the cores a 100 Gbit/s link needs (see
//! `scale`).
//!
//! See bench/README.md for how to read the output.

mod netns;
mod observer;
mod parse;
mod proc;
mod scale;
mod stats;

use clap::Parser;
use parse::Sample;
use proc::Proc;
use stats::{fmt_opt, median, ratio};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "wirespeed-bench",
    about = "Alternating wirespeed / iperf3 / bareloop benchmark"
)]
struct Args {
    /// Rounds: each contender runs once per round, in turn.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Seconds per run (whole seconds: iperf3 3.12's -t takes an integer).
    #[arg(long, default_value_t = 3)]
    duration: u32,
    /// The wirespeed binary (default: target/release/wirespeed of this workspace,
    /// or $CARGO_TARGET_DIR/release/wirespeed).
    #[arg(long)]
    wirespeed: Option<PathBuf>,
    /// The iperf3 binary.
    #[arg(long, default_value = "iperf3")]
    iperf3: String,
    /// bareloop's C source (default: ../shared/bench/bareloop.c beside the repository).
    #[arg(long)]
    bareloop_src: Option<PathBuf>,
    /// Sections to run, comma-separated: tcp,zc,netns,udp,paced,streams,nocopy.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "tcp,zc,netns,udp,paced,streams,nocopy"
    )]
    only: Vec<String>,
    /// The peers' directory (default: ../shared/bench/peers beside the repository): its
    /// `iperf3` (3.21, a thread per stream) joins the many-stream section as `iperf3-3.21`.
    #[arg(long)]
    peers: Option<PathBuf>,
    /// CPU for the client (sender) and for the server (receiver).
    #[arg(long, default_value_t = 0)]
    client_cpu: u32,
    #[arg(long, default_value_t = 1)]
    server_cpu: u32,
    /// Pause between runs, milliseconds (lets TIME_WAIT and caches settle).
    #[arg(long, default_value_t = 300)]
    pause_ms: u64,
    /// Also write every sample as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Many-core mode: instead of the sections, the many-stream comparison sized to this
    /// machine — `-P` 1, 2, 4 … up to the online CPUs and twice them, TCP (128 KiB, copy) and
    /// UDP (1472 B, `-b 0`), no CPUs given, wirespeed vs iperf3 3.21 (and Debian's iperf3) — with
    /// CPU per bit, Gbit/s per busy core, where the aggregate stops growing, the cores a
    /// 100 Gbit/s link needs, issue 23's goal (CPU per bit <= 0.8 x iperf3's, every round)
    /// and issue 38's (<= 0.9 x with at least twice as many streams as CPUs).
    #[arg(long)]
    scale: bool,
    /// `--scale`'s `-P` values instead of the ladder sized to the machine (`1,2,3,4,8`: more
    /// streams than twice the CPUs on a small machine).
    #[arg(long, value_delimiter = ',')]
    parallel: Vec<u32>,
    /// The observer's cost instead of the sections: synthetic host trees (2-512 CPUs, 100-4,000
    /// interrupt vectors, 1-1,024 worker threads) read through `Root` as on a live host, each
    /// read and parse of an interval timed (thread CPU) with its allocations, and `doctor
    /// --root` on the same trees (wall time, peak RSS) when the wirespeed binary is there.
    #[arg(long)]
    observer: bool,
    /// `--observer`'s CPU counts, a subset of 2,64,192,512 (all by default).
    #[arg(long, value_delimiter = ',')]
    observer_cpus: Vec<u32>,
    /// `--observer`'s vector counts, a subset of 100,1000,4000 (all by default).
    #[arg(long, value_delimiter = ',')]
    observer_vectors: Vec<u32>,
}

/// Every allocation of the bench, counted (for `--observer`'s allocations per interval).
mod alloc_count {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU64, Ordering};

    static COUNT: AtomicU64 = AtomicU64::new(0);
    static BYTES: AtomicU64 = AtomicU64::new(0);

    pub struct Counting;

    // SAFETY: every call is passed to the system allocator unchanged; only counters are added.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            COUNT.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            COUNT.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// Allocations (and reallocations) so far, and their bytes.
    pub fn now() -> (u64, u64) {
        (COUNT.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed))
    }
}

#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Wirespeed,
    Iperf3,
    Bareloop,
    /// The peers' iperf3 3.21.
    Iperf3Peer,
    /// The peers' riperf3 (iperf3's flags and `-J`).
    Riperf3,
    /// The peers' xfr (`xfr serve`; `--json` with `throughput_mbps`).
    Xfr,
    /// The peers' neper `tcp_stream` (`remote_throughput=` in bits/s).
    Neper,
}

/// The peers' binaries, by kind, as found in the peers' directory.
const PEER_FILES: [(Kind, &str); 4] = [
    (Kind::Iperf3Peer, "iperf3"),
    (Kind::Riperf3, "riperf3"),
    (Kind::Xfr, "xfr"),
    (Kind::Neper, "tcp_stream"),
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Wirespeed => "wirespeed",
            Kind::Iperf3 => "iperf3",
            Kind::Bareloop => "bareloop",
            Kind::Iperf3Peer => "iperf3-3.21",
            Kind::Riperf3 => "riperf3",
            Kind::Xfr => "xfr",
            Kind::Neper => "neper",
        }
    }
}

/// One comparison: every contender runs it `rounds` times, alternating.
#[derive(Debug, Clone)]
struct Test {
    title: String,
    section: &'static str,
    udp: bool,
    block: usize,
    zerocopy: bool,
    /// UDP -b in bits/s (0 = unlimited)
    rate: u64,
    netns: bool,
    kinds: Vec<Kind>,
    /// `-P`: streams.
    parallel: u32,
    /// Pin with `-A CLIENT_CPU,SERVER_CPU` (the many-stream section runs unpinned).
    pinned: bool,
    /// No receiver copy: each contender's own flags for it (see the `nocopy` section).
    nocopy: bool,
}

struct Env {
    args: Args,
    wirespeed: Option<PathBuf>,
    bareloop: Option<PathBuf>,
    /// The peers found (iperf3 3.21, riperf3, xfr, neper).
    peers: Vec<(Kind, PathBuf)>,
    veth: Option<netns::VethPair>,
    interrupted: std::sync::Arc<AtomicBool>,
    _tmp: Option<tempfile::TempDir>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn find_wirespeed(arg: &Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(p) = arg {
        return if p.is_file() {
            Ok(p.clone())
        } else {
            Err(format!("--wirespeed {}: no such file", p.display()))
        };
    }
    let mut cands = Vec::new();
    if let Ok(t) = std::env::var("CARGO_TARGET_DIR") {
        cands.push(PathBuf::from(t).join("release/wirespeed"));
    }
    cands.push(repo_root().join("target/release/wirespeed"));
    cands.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        "no release wirespeed binary found (run `cargo build --release -p wirespeed`, or pass --wirespeed PATH)".into()
    })
}

fn build_bareloop(src: &Path, dir: &Path) -> Result<PathBuf, String> {
    if !src.is_file() {
        return Err(format!("{} does not exist", src.display()));
    }
    let out = dir.join("bareloop");
    let st = std::process::Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if st.success() {
        Ok(out)
    } else {
        Err(format!("cc -O2 {} failed ({st})", src.display()))
    }
}

fn first_line(cmd: &str, arg: &str) -> String {
    std::process::Command::new(cmd)
        .arg(arg)
        .output()
        .ok()
        .map(|o| {
            let t = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&t)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_else(|| "unavailable".into())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn size_arg(n: usize) -> String {
    if n % (1 << 20) == 0 {
        format!("{}M", n >> 20)
    } else if n % 1024 == 0 {
        format!("{}K", n >> 10)
    } else {
        n.to_string()
    }
}

impl Env {
    fn peer(&self, k: Kind) -> Option<&PathBuf> {
        self.peers.iter().find(|(kk, _)| *kk == k).map(|(_, p)| p)
    }
}

/// Client and server command lines of an iperf3-flag-compatible tool (`kind` adds its best
/// flags: iperf3 3.21's `--gsro` for UDP; the `nocopy` section's flags).
fn iperf_like_cmds(
    kind: Kind,
    bin: &str,
    t: &Test,
    host: &str,
    port: u16,
    a: &Args,
) -> (Vec<String>, Vec<String>) {
    let server = vec![
        bin.to_string(),
        "-s".into(),
        "-p".into(),
        port.to_string(),
        "-1".into(),
    ];
    let mut client = vec![
        bin.to_string(),
        "-c".into(),
        host.to_string(),
        "-p".into(),
        port.to_string(),
        "-t".into(),
        a.duration.to_string(),
        "-l".into(),
        size_arg(t.block),
        "-J".into(),
    ];
    if t.pinned {
        client.extend(["-A".into(), format!("{},{}", a.client_cpu, a.server_cpu)]);
    }
    if t.parallel > 1 {
        client.extend(["-P".into(), t.parallel.to_string()]);
    }
    if t.zerocopy {
        client.push("-Z".into());
    }
    if t.udp {
        client.extend(["-u".into(), "-b".into(), t.rate.to_string()]);
        if kind == Kind::Iperf3Peer {
            client.push("--gsro".into());
        }
    }
    if t.nocopy {
        match kind {
            Kind::Wirespeed => {
                client.extend(["--zerocopy=msg_zerocopy".into(), "--zerocopy-rx".into()])
            }
            _ => client.extend(["-Z".into(), "--skip-rx-copy".into()]),
        }
    }
    (client, server)
}

/// `taskset -c CPU` before a command line (for a tool without its own pinning), or nothing.
fn pin(cpu: Option<u32>, args: Vec<String>) -> Vec<String> {
    match cpu {
        Some(c) => ["taskset".to_string(), "-c".into(), c.to_string()]
            .into_iter()
            .chain(args)
            .collect(),
        None => args,
    }
}

/// xfr and neper: a server, then a client; the sample from the client's output.
fn run_other(env: &Env, kind: Kind, t: &Test, port: u16) -> Result<Sample, String> {
    let a = &env.args;
    let bin = env
        .peer(kind)
        .ok_or_else(|| format!("{} not found among the peers", kind.name()))?
        .display()
        .to_string();
    let (scpu, ccpu) = if t.pinned {
        (Some(a.server_cpu), Some(a.client_cpu))
    } else {
        (None, None)
    };
    let dur = a.duration.to_string();
    let (server, client, listen) = match kind {
        Kind::Xfr => (
            vec![bin.clone(), "serve".into(), "-p".into(), port.to_string()],
            vec![
                bin,
                format!("127.0.0.1:{port}"),
                "-t".into(),
                format!("{dur}s"),
                // xfr's -l is for UDP only (16..=65507): TCP runs with its own buffer size
                "--json".into(),
                "--no-tui".into(),
                "--no-update-check".into(),
            ],
            port,
        ),
        _ => {
            // neper: control port `port`, data port `port + 1`
            let (cport, dport) = (port.to_string(), (port + 1).to_string());
            let block = t.block.to_string();
            // --logtostderr: neper otherwise writes a log file into the working directory
            let mut s = vec![
                bin.clone(),
                "--logtostderr".into(),
                "-C".into(),
                cport.clone(),
                "-P".into(),
                dport.clone(),
                "-l".into(),
                dur.clone(),
                "-B".into(),
                block.clone(),
            ];
            let mut c = vec![
                bin,
                "--logtostderr".into(),
                "-c".into(),
                "-H".into(),
                "127.0.0.1".into(),
                "-C".into(),
                cport,
                "-P".into(),
                dport,
                "-l".into(),
                dur,
                "-B".into(),
                block,
            ];
            if t.nocopy {
                s.push("-z".into()); // the receiver maps what it can
                c.push("-Z".into()); // MSG_ZEROCOPY: on loopback the only data that maps
            }
            if t.parallel > 1 {
                // -F flows over -T threads (a thread per flow up to the CPUs), both ends
                let threads = t.parallel.min(num_cpus() as u32).to_string();
                let flows = t.parallel.to_string();
                for v in [&mut s, &mut c] {
                    v.extend(["-T".into(), threads.clone(), "-F".into(), flows.clone()]);
                }
            }
            (s, c, port)
        }
    };
    let limit = Duration::from_secs(u64::from(a.duration) + 20);
    let stop = &env.interrupted;
    let mut s = Proc::spawn(&pin(scpu, server), None)?;
    if !proc::wait_listening(&mut s, listen, Duration::from_secs(5)) {
        return Err(s.failure(&format!("server did not listen on port {listen}")));
    }
    let mut c = Proc::spawn(&pin(ccpu, client), None)?;
    let (ok, why) = c.wait_or_kill(limit, stop);
    let out = c.stdout();
    // xfr's server keeps serving: stop it (neper's ends with its test)
    let _ = s.wait_or_kill(
        Duration::from_secs(if kind == Kind::Xfr { 0 } else { 3 }),
        stop,
    );
    if !ok {
        return Err(c.failure(&why));
    }
    let parsed = match kind {
        Kind::Xfr => parse::parse_xfr_json(&out),
        _ => parse::parse_neper_ends(&out, &s.stdout()),
    };
    parsed.map_err(|e| c.failure(&e))
}

/// One run of one contender.
fn run_one(env: &Env, kind: Kind, t: &Test) -> Result<Sample, String> {
    let a = &env.args;
    let (ns_a, ns_b, host) = match (&env.veth, t.netns) {
        (Some(v), true) => (
            Some(v.ns_a.as_str()),
            Some(v.ns_b.as_str()),
            v.addr_b.clone(),
        ),
        (None, true) => return Err("no veth pair".into()),
        _ => (None, None, "127.0.0.1".to_string()),
    };
    let port = if t.netns { 5201 } else { proc::free_port()? };
    let limit = Duration::from_secs(u64::from(a.duration) + 20);
    let stop = &env.interrupted;
    match kind {
        Kind::Bareloop => {
            let bin = env
                .bareloop
                .as_ref()
                .ok_or("bareloop not built")?
                .display()
                .to_string();
            let blk = t.block.to_string();
            if !t.netns {
                let mut c = Proc::spawn(
                    &[
                        bin,
                        "local".into(),
                        blk,
                        a.duration.to_string(),
                        a.client_cpu.to_string(),
                        a.server_cpu.to_string(),
                    ],
                    None,
                )?;
                let (ok, why) = c.wait_or_kill(limit, stop);
                if !ok {
                    return Err(c.failure(&why));
                }
                return parse::parse_bareloop(&c.stdout());
            }
            let mut s = Proc::spawn(
                &[
                    bin.clone(),
                    "recv".into(),
                    host.clone(),
                    port.to_string(),
                    blk.clone(),
                    a.server_cpu.to_string(),
                ],
                ns_b,
            )?;
            if !proc::wait_listening(&mut s, port, Duration::from_secs(5)) {
                return Err(s.failure(&format!("did not listen on port {port}")));
            }
            let mut c = Proc::spawn(
                &[
                    bin,
                    "send".into(),
                    host,
                    port.to_string(),
                    blk,
                    a.duration.to_string(),
                    a.client_cpu.to_string(),
                ],
                ns_a,
            )?;
            let (ok, why) = c.wait_or_kill(limit, stop);
            let _ = s.wait_or_kill(Duration::from_secs(5), stop);
            if !ok {
                return Err(c.failure(&why));
            }
            parse::parse_bareloop(&(s.stdout() + &c.stdout()))
        }
        Kind::Xfr | Kind::Neper => {
            if t.netns {
                return Err(format!("{} runs on loopback only here", kind.name()));
            }
            run_other(env, kind, t, port)
        }
        Kind::Wirespeed | Kind::Iperf3 | Kind::Iperf3Peer | Kind::Riperf3 => {
            let bin = match kind {
                Kind::Wirespeed => env
                    .wirespeed
                    .as_ref()
                    .ok_or("wirespeed binary not found")?
                    .display()
                    .to_string(),
                Kind::Iperf3Peer | Kind::Riperf3 => env
                    .peer(kind)
                    .ok_or_else(|| format!("{} not found among the peers", kind.name()))?
                    .display()
                    .to_string(),
                _ => a.iperf3.clone(),
            };
            let (client, server) = iperf_like_cmds(kind, &bin, t, &host, port, a);
            let mut s = Proc::spawn(&server, ns_b)?;
            if !proc::wait_listening(&mut s, port, Duration::from_secs(5)) {
                return Err(s.failure(&format!("server did not listen on port {port}")));
            }
            let mut c = Proc::spawn(&client, ns_a)?;
            let (ok, why) = c.wait_or_kill(limit, stop);
            let out = c.stdout();
            // -1 servers exit after the test; give them a moment, then stop them.
            let _ = s.wait_or_kill(Duration::from_secs(3), stop);
            let parsed = parse::parse_iperf_json(&out, if t.udp { Some(t.block) } else { None });
            match (ok, parsed) {
                (true, Ok(smp)) => Ok(smp),
                (_, Err(e)) => Err(c.failure(&format!("{why}: {e}"))),
                (false, Ok(_)) => Err(c.failure(&why)),
            }
        }
    }
}

struct Outcome {
    test: Test,
    /// per kind: samples (None = that round failed)
    samples: Vec<(Kind, Vec<Result<Sample, String>>)>,
}

fn run_test(env: &Env, t: &Test) -> Outcome {
    let a = &env.args;
    let mut samples: Vec<(Kind, Vec<Result<Sample, String>>)> =
        t.kinds.iter().map(|&k| (k, Vec::new())).collect();
    for round in 0..a.rounds {
        for (kind, v) in samples.iter_mut() {
            if env.interrupted.load(Ordering::Relaxed) {
                return Outcome {
                    test: t.clone(),
                    samples,
                };
            }
            let r = run_one(env, *kind, t);
            match &r {
                Ok(s) => eprintln!(
                    "  round {}/{} {:<9} {:>7.2} Gbit/s{}{}",
                    round + 1,
                    a.rounds,
                    kind.name(),
                    s.recv_bps / 1e9,
                    s.cpu_s_per_gbit
                        .map(|c| format!("  {c:.4} CPU-s/Gbit"))
                        .unwrap_or_default(),
                    s.paths
                        .as_ref()
                        .map(|p| format!("  ({p})"))
                        .unwrap_or_default()
                ),
                Err(e) => eprintln!(
                    "  round {}/{} {:<9} FAILED: {e}",
                    round + 1,
                    a.rounds,
                    kind.name()
                ),
            }
            v.push(r);
            std::thread::sleep(Duration::from_millis(a.pause_ms));
        }
    }
    Outcome {
        test: t.clone(),
        samples,
    }
}

fn med_of(v: &[Result<Sample, String>], f: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
    let xs: Vec<f64> = v
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter_map(f)
        .collect();
    median(&xs)
}

fn print_outcome(o: &Outcome) {
    let t = &o.test;
    println!("\n== {} ==", t.title);
    let gb = |x: Option<f64>| fmt_opt(x.map(|v| v / 1e9), 2);
    let get = |k: Kind| {
        o.samples
            .iter()
            .find(|(kk, _)| *kk == k)
            .map(|(_, v)| v.as_slice())
    };
    let rounds_str = |v: &[Result<Sample, String>], f: &dyn Fn(&Sample) -> f64| {
        v.iter()
            .map(|r| {
                r.as_ref()
                    .map(|s| format!("{:.2}", f(s)))
                    .unwrap_or_else(|_| "FAIL".into())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !t.udp {
        println!(
            "{:<11} {:>12} {:>11}  {:<28} notes",
            "contender", "median Gb/s", "CPU-s/Gbit", "rounds (receiver Gbit/s)"
        );
        for (k, v) in &o.samples {
            let paths = v
                .iter()
                .filter_map(|r| r.as_ref().ok())
                .find_map(|s| s.paths.clone())
                .unwrap_or_default();
            let retr = med_of(v, |s| s.retransmits.map(|x| x as f64));
            let notes = format!(
                "{}{}",
                paths,
                retr.map(|r| format!(
                    "{}retransmits(median) {r:.0}",
                    if paths.is_empty() { "" } else { ", " }
                ))
                .unwrap_or_default()
            );
            println!(
                "{:<11} {:>12} {:>11}  {:<28} {}",
                k.name(),
                gb(med_of(v, |s| Some(s.recv_bps))),
                fmt_opt(med_of(v, |s| s.cpu_s_per_gbit), 4),
                rounds_str(v, &|s| s.recv_bps / 1e9),
                notes
            );
        }
    } else if t.rate == 0 {
        println!(
            "{:<10} {:>14} {:>12} {:>10} {:>22} {:>10}  rounds (receiver Gbit/s)",
            "contender", "goodput Gb/s", "sent Gb/s", "loss %", "lost/packets(recv'd)", "jitter ms"
        );
        for (k, v) in &o.samples {
            let lp = med_of(v, |s| s.lost_percent);
            let last = v.iter().rev().find_map(|r| r.as_ref().ok());
            let counts = last
                .map(|s| {
                    format!(
                        "{}/{}({})",
                        s.lost_packets.map(|x| x.to_string()).unwrap_or("-".into()),
                        s.packets.map(|x| x.to_string()).unwrap_or("-".into()),
                        s.received_packets
                            .map(|x| x.to_string())
                            .unwrap_or("-".into())
                    )
                })
                .unwrap_or_default();
            println!(
                "{:<10} {:>14} {:>12} {:>10} {:>22} {:>10}  {}",
                k.name(),
                gb(med_of(v, |s| Some(s.recv_bps))),
                gb(med_of(v, |s| Some(s.sent_bps))),
                fmt_opt(lp, 2),
                counts,
                fmt_opt(med_of(v, |s| s.jitter_ms), 4),
                rounds_str(v, &|s| s.recv_bps / 1e9)
            );
        }
    } else {
        println!(
            "{:<10} {:>10} {:>14} {:>16} {:>14} {:>8}  rounds (achieved/target)",
            "contender", "target", "achieved Gb/s", "achieved/target", "goodput Gb/s", "loss %"
        );
        for (k, v) in &o.samples {
            let ach = med_of(v, |s| Some(s.sent_bps));
            println!(
                "{:<10} {:>10} {:>14} {:>16} {:>14} {:>8}  {}",
                k.name(),
                format!("{}G", t.rate as f64 / 1e9),
                gb(ach),
                fmt_opt(ach.map(|x| x / t.rate as f64), 4),
                gb(med_of(v, |s| Some(s.recv_bps))),
                fmt_opt(med_of(v, |s| s.lost_percent), 2),
                rounds_str(v, &|s| s.sent_bps / t.rate as f64)
            );
        }
    }
    let m = |k: Kind| get(k).and_then(|v| med_of(v, |s| Some(s.recv_bps)));
    let (w, i, b) = (m(Kind::Wirespeed), m(Kind::Iperf3), m(Kind::Bareloop));
    let mut line = format!(
        "ratios (medians of receiver rate): wirespeed/iperf3 = {}",
        fmt_opt(ratio(w, i), 3)
    );
    if t.kinds.contains(&Kind::Bareloop) {
        line.push_str(&format!(
            "   wirespeed/bareloop = {}",
            fmt_opt(ratio(w, b), 3)
        ));
    }
    if t.kinds.contains(&Kind::Iperf3Peer) {
        line.push_str(&format!(
            "   wirespeed/iperf3-3.21 = {}",
            fmt_opt(ratio(w, m(Kind::Iperf3Peer)), 3)
        ));
    }
    println!("{line}");
    if !t.udp {
        let c = |k: Kind| get(k).and_then(|v| med_of(v, |s| s.cpu_s_per_gbit));
        let mut line = format!(
            "CPU per bit (medians; both ends, iperf3's utilisation): wirespeed/iperf3 = {}",
            fmt_opt(ratio(c(Kind::Wirespeed), c(Kind::Iperf3)), 3)
        );
        if t.kinds.contains(&Kind::Iperf3Peer) {
            line.push_str(&format!(
                "   wirespeed/iperf3-3.21 = {}",
                fmt_opt(ratio(c(Kind::Wirespeed), c(Kind::Iperf3Peer)), 3)
            ));
        }
        println!("{line}");
    }
}

fn sample_json(s: &Result<Sample, String>) -> serde_json::Value {
    match s {
        Ok(s) => serde_json::json!({
            "recv_bps": s.recv_bps, "sent_bps": s.sent_bps, "lost_packets": s.lost_packets, "packets": s.packets,
            "received_packets": s.received_packets, "lost_percent": s.lost_percent, "jitter_ms": s.jitter_ms,
            "retransmits": s.retransmits, "paths": s.paths, "cpu_s_per_gbit": s.cpu_s_per_gbit,
            "busy_cores": s.busy_cores,
        }),
        Err(e) => serde_json::json!({ "error": e }),
    }
}

fn tests_for(a: &Args, veth: bool) -> Vec<Test> {
    use Kind::*;
    let tcp3 = vec![Wirespeed, Iperf3, Bareloop];
    // the copying path: every contender that has one (peers missing are dropped at the start)
    let tcp_all = vec![Wirespeed, Iperf3, Bareloop, Iperf3Peer, Riperf3, Xfr];
    let mut v = Vec::new();
    let mut tcp = |section: &'static str, where_: &str, netns: bool| {
        let dur = a.duration;
        let place = format!(
            "client CPU {}, server CPU {}, {dur} s",
            a.client_cpu, a.server_cpu
        );
        if section == "tcp" || section == "netns" {
            for block in [128 << 10, 1 << 20] {
                v.push(Test {
                    title: format!(
                        "TCP {where_}, 1 stream, {} blocks, copy; {place}",
                        size_arg(block)
                    ),
                    section,
                    udp: false,
                    block,
                    zerocopy: false,
                    rate: 0,
                    netns,
                    kinds: if netns { tcp3.clone() } else { tcp_all.clone() },
                    parallel: 1,
                    pinned: true,
                    nocopy: false,
                });
            }
        }
        if section == "zc" || section == "netns" {
            v.push(Test {
                title: format!("TCP {where_}, 1 stream, 128K blocks, zero-copy send (-Z; bareloop copies); {place}"),
                section,
                udp: false,
                block: 128 << 10,
                zerocopy: true,
                rate: 0,
                netns,
                kinds: tcp3.clone(),
                parallel: 1,
                pinned: true,
                nocopy: false,
            });
        }
    };
    let on = |s: &str| a.only.iter().any(|o| o == s);
    if on("tcp") {
        tcp("tcp", "loopback", false);
    }
    if on("zc") {
        tcp("zc", "loopback", false);
    }
    if on("netns") && veth {
        tcp("netns", "veth between two netns", true);
    }
    if on("udp") {
        v.push(Test {
            title: format!(
                "UDP loopback, 1472-byte datagrams, -b 0 (unlimited); {} s",
                a.duration
            ),
            section: "udp",
            udp: true,
            block: 1472,
            zerocopy: false,
            rate: 0,
            netns: false,
            kinds: vec![Wirespeed, Iperf3, Iperf3Peer],
            parallel: 1,
            pinned: true,
            nocopy: false,
        });
    }
    if on("nocopy") {
        for block in [128 << 10, 1 << 20] {
            v.push(Test {
                title: format!(
                    "TCP loopback, 1 stream, {} blocks, no receiver copy (wirespeed \
                     --zerocopy=msg_zerocopy --zerocopy-rx, iperf3-3.21 -Z --skip-rx-copy, neper \
                     -Z -z); client CPU {}, server CPU {}, {} s",
                    size_arg(block),
                    a.client_cpu,
                    a.server_cpu,
                    a.duration
                ),
                section: "nocopy",
                udp: false,
                block,
                zerocopy: false,
                rate: 0,
                netns: false,
                kinds: vec![Wirespeed, Iperf3Peer, Neper],
                parallel: 1,
                pinned: true,
                nocopy: true,
            });
        }
    }
    if on("paced") {
        for rate in [1_000_000_000u64, 5_000_000_000] {
            v.push(Test {
                title: format!(
                    "UDP loopback, 1472-byte datagrams, paced -b {}G; {} s",
                    rate / 1_000_000_000,
                    a.duration
                ),
                section: "paced",
                udp: true,
                block: 1472,
                zerocopy: false,
                rate,
                netns: false,
                kinds: vec![Wirespeed, Iperf3],
                parallel: 1,
                pinned: true,
                nocopy: false,
            });
        }
    }
    if on("streams") {
        // -P 1, 2, 4, ... up to twice the CPUs, unpinned (each tool places its own threads)
        let top = 2 * num_cpus() as u32;
        let mut p = 1u32;
        while p <= top.max(1) {
            v.push(Test {
                title: format!(
                    "TCP loopback, {p} stream(s), 128K blocks, copy, unpinned; {} s",
                    a.duration
                ),
                section: "streams",
                udp: false,
                block: 128 << 10,
                zerocopy: false,
                rate: 0,
                netns: false,
                kinds: vec![Wirespeed, Iperf3, Iperf3Peer],
                parallel: p,
                pinned: false,
                nocopy: false,
            });
            p *= 2;
        }
    }
    v
}

/// `--scale`'s `-P` values: `--parallel`'s (at most iperf3's 128 streams each), else the
/// ladder for this machine.
fn scale_parallels(a: &Args) -> Vec<u32> {
    let mut v: Vec<u32> = a
        .parallel
        .iter()
        .map(|&p| p.clamp(1, scale::MAX_PARALLEL))
        .collect();
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        scale::parallels(num_cpus() as u32)
    } else {
        v
    }
}

/// `--scale`: TCP then UDP, each up the `-P` ladder for this machine, unpinned.
fn scale_tests(a: &Args, kinds: &[Kind]) -> Vec<Test> {
    let mut v = Vec::new();
    for (udp, block, section) in [(false, 128 << 10, "scale-tcp"), (true, 1472, "scale-udp")] {
        // `--only tcp` or `--only udp` keeps one ladder (both by default)
        if !a.only.iter().any(|o| o == if udp { "udp" } else { "tcp" }) {
            continue;
        }
        for p in scale_parallels(a) {
            v.push(Test {
                title: format!(
                    "scale: {} loopback, -P {p}, {} blocks{}, unpinned; {} s",
                    if udp { "UDP" } else { "TCP" },
                    size_arg(block),
                    if udp { ", -b 0" } else { ", copy" },
                    a.duration
                ),
                section,
                udp,
                block,
                zerocopy: false,
                rate: 0,
                netns: false,
                // neper (`tcp_stream -T -F`) joins the TCP ladder; the UDP one is iperf3's
                kinds: kinds
                    .iter()
                    .copied()
                    .filter(|k| !udp || *k != Kind::Neper)
                    .collect(),
                parallel: p,
                pinned: false,
                nocopy: false,
            });
        }
    }
    v
}

/// The `--scale` outcomes as one ladder per protocol.
fn scale_ladders(outcomes: &[Outcome]) -> Vec<scale::Ladder> {
    let mut out = Vec::new();
    for (section, proto) in [("scale-tcp", "tcp"), ("scale-udp", "udp")] {
        let mine: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.test.section == section)
            .collect();
        let Some(first) = mine.first() else { continue };
        let cells = mine
            .iter()
            .flat_map(|o| {
                o.samples.iter().map(|(k, v)| {
                    let rounds = v
                        .iter()
                        .map(|r| match r {
                            Ok(s) => scale::Round {
                                gbps: Some(s.recv_bps / 1e9),
                                cpu_s_per_gbit: s.cpu_s_per_gbit,
                                busy_cores: s.busy_cores,
                                error: None,
                            },
                            Err(e) => scale::Round {
                                error: Some(e.clone()),
                                ..scale::Round::default()
                            },
                        })
                        .collect();
                    scale::Cell::new(k.name(), o.test.parallel, rounds)
                })
            })
            .collect();
        out.push(scale::Ladder::new(
            proto,
            first.test.block,
            cells,
            &[Kind::Iperf3Peer.name(), Kind::Iperf3.name()],
            num_cpus() as u32,
        ));
    }
    out
}

fn main() {
    let args = Args::parse();
    if args.rounds == 0 || args.duration == 0 {
        eprintln!("wirespeed-bench: --rounds and --duration must be at least 1");
        std::process::exit(2);
    }
    let known = ["tcp", "zc", "netns", "udp", "paced", "streams", "nocopy"];
    if let Some(bad) = args.only.iter().find(|o| !known.contains(&o.as_str())) {
        eprintln!(
            "wirespeed-bench: unknown section {bad:?} in --only (known: {})",
            known.join(",")
        );
        std::process::exit(2);
    }
    if args.observer {
        let bin = find_wirespeed(&args.wirespeed).ok();
        let pick = |asked: &[u32], all: &[u32], what: &str| -> Vec<u32> {
            if let Some(bad) = asked.iter().find(|a| !all.contains(a)) {
                eprintln!("wirespeed-bench: --observer-{what} {bad} is not one of {all:?}");
                std::process::exit(2);
            }
            if asked.is_empty() {
                all.to_vec()
            } else {
                all.iter().copied().filter(|a| asked.contains(a)).collect()
            }
        };
        let cpus = pick(&args.observer_cpus, &observer::CPUS, "cpus");
        let vectors = pick(&args.observer_vectors, &observer::VECTORS, "vectors");
        let rep = observer::run(bin.as_ref(), &cpus, &vectors);
        if let Some(path) = &args.json {
            let doc = serde_json::json!({ "observer": rep });
            if let Err(e) = std::fs::write(path, format!("{doc:#}\n")) {
                eprintln!("wirespeed-bench: cannot write {}: {e}", path.display());
                std::process::exit(1);
            }
        }
        return;
    }
    let interrupted = proc::interrupt_flag();

    println!(
        "wirespeed-bench: {} round(s) x {} s per run, alternating contenders",
        args.rounds, args.duration
    );
    println!(
        "host: {} | {} CPUs online | load average at start: {}",
        first_line("uname", "-sr"),
        num_cpus(),
        loadavg()
    );
    let wirespeed = match find_wirespeed(&args.wirespeed) {
        Ok(p) => {
            println!(
                "wirespeed: {} ({})",
                p.display(),
                first_line(&p.display().to_string(), "--version")
            );
            Some(p)
        }
        Err(e) => {
            println!("wirespeed: NOT AVAILABLE — {e}; its rows will show FAIL");
            None
        }
    };
    println!("iperf3: {}", first_line(&args.iperf3, "--version"));
    let peers = args
        .peers
        .clone()
        .unwrap_or_else(|| repo_root().join("../shared/bench/peers"));
    let mut found = Vec::new();
    for (kind, file) in PEER_FILES {
        let p = peers.join(file);
        if p.is_file() {
            let version = match kind {
                Kind::Neper => "neper".to_string(), // prints no version
                _ => first_line(&p.display().to_string(), "--version"),
            };
            println!("{}: {} ({version})", kind.name(), p.display());
            found.push((kind, p));
        } else {
            println!(
                "{}: NOT AVAILABLE — no {file} in {}; skipped",
                kind.name(),
                peers.display()
            );
        }
    }
    let src = args
        .bareloop_src
        .clone()
        .unwrap_or_else(|| repo_root().join("../shared/bench/bareloop.c"));
    let tmp = tempfile::tempdir().ok();
    let bareloop = match tmp
        .as_ref()
        .ok_or_else(|| "no temp dir".to_string())
        .and_then(|d| build_bareloop(&src, d.path()))
    {
        Ok(p) => {
            println!("bareloop: built from {} with cc -O2", src.display());
            Some(p)
        }
        Err(e) => {
            println!("bareloop: NOT AVAILABLE — {e}; bareloop rows and wirespeed/bareloop ratios will be empty");
            None
        }
    };

    let mut veth = None;
    if !args.scale && args.only.iter().any(|o| o == "netns") {
        if !netns::is_root() {
            println!("SKIP netns: the veth runs need root (creating network namespaces); run as root to include them");
        } else {
            match netns::VethPair::create() {
                Ok(v) => {
                    println!(
                        "netns: {} ({}) <-veth-> {} ({})",
                        v.ns_a, v.addr_a, v.ns_b, v.addr_b
                    );
                    veth = Some(v);
                }
                Err(e) => println!("SKIP netns: could not create the veth pair: {e}"),
            }
        }
    }
    let tests = if args.scale {
        // Debian's iperf3 joins when it is installed; the peers' 3.21 and neper (TCP) when found
        let mut kinds = vec![Kind::Wirespeed, Kind::Iperf3Peer, Kind::Neper];
        // starts: iperf3 (Debian's, or the one --iperf3 names)
        if std::process::Command::new(&args.iperf3)
            .arg("--version")
            .output()
            .is_ok()
        {
            kinds.push(Kind::Iperf3);
        } else {
            println!("iperf3 ({}): NOT AVAILABLE; skipped", args.iperf3);
        }
        println!(
            "scale mode: -P {:?} ({} CPUs online), TCP 128K copy and UDP 1472 B -b 0 (of them: \
             {}), unpinned",
            scale_parallels(&args),
            num_cpus(),
            args.only.join(",")
        );
        scale_tests(&args, &kinds)
    } else {
        tests_for(&args, veth.is_some())
    };
    let env = Env {
        args,
        wirespeed,
        bareloop,
        peers: found,
        veth,
        interrupted,
        _tmp: tmp,
    };

    let mut outcomes = Vec::new();
    for t in &tests {
        if env.interrupted.load(Ordering::Relaxed) {
            break;
        }
        let mut t = t.clone();
        if env.bareloop.is_none() {
            t.kinds.retain(|k| *k != Kind::Bareloop);
        }
        t.kinds
            .retain(|k| !PEER_FILES.iter().any(|(p, _)| p == k) || env.peer(*k).is_some());
        eprintln!("-- {}", t.title);
        let o = run_test(&env, &t);
        if !env.args.scale {
            print_outcome(&o);
        }
        outcomes.push(o);
    }
    let ladders = if env.args.scale {
        scale_ladders(&outcomes)
    } else {
        Vec::new()
    };
    for l in &ladders {
        scale::print(l);
    }
    println!("\nload average at end: {}", loadavg());
    if env.interrupted.load(Ordering::Relaxed) {
        println!("INTERRUPTED: figures above are partial");
    }
    if let Some(path) = &env.args.json {
        let doc = serde_json::json!({
            "rounds": env.args.rounds,
            "duration_s": env.args.duration,
            "tests": outcomes.iter().map(|o| serde_json::json!({
                "title": o.test.title, "section": o.test.section, "udp": o.test.udp, "block": o.test.block,
                "zerocopy": o.test.zerocopy, "nocopy": o.test.nocopy, "rate_bps": o.test.rate, "netns": o.test.netns,
                "parallel": o.test.parallel, "pinned": o.test.pinned,
                "contenders": o.samples.iter().map(|(k, v)| serde_json::json!({
                    "name": k.name(),
                    "median_recv_bps": med_of(v, |s| Some(s.recv_bps)),
                    "median_sent_bps": med_of(v, |s| Some(s.sent_bps)),
                    "median_cpu_s_per_gbit": med_of(v, |s| s.cpu_s_per_gbit),
                    "samples": v.iter().map(sample_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        let mut doc = doc;
        if env.args.scale {
            doc["scale"] = serde_json::to_value(&ladders).unwrap_or_default();
        }
        match serde_json::to_string_pretty(&doc)
            .map_err(|e| e.to_string())
            .and_then(|s| std::fs::write(path, s + "\n").map_err(|e| e.to_string()))
        {
            Ok(()) => println!("samples written to {}", path.display()),
            Err(e) => {
                eprintln!("wirespeed-bench: cannot write {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    }
    drop(env); // tears down the veth pair
}

fn num_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
