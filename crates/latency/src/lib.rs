//! Core-to-core latency: two threads pinned to two CPUs ping-pong one cache line.
//!
//! The line holds a counter, alone on its own 128-byte aligned block (two 64-byte lines, so the
//! adjacent-line prefetcher of x86 parts does not drag a neighbour in). The pinger moves it from
//! `2i` to `2i+1` with compare-and-swap, the responder from `2i+1` to `2i+2`; each side spins on
//! its CAS until it succeeds, so every step is one cache-line transfer between the two cores. The
//! pinger times batches of round trips; one sample is (batch time / round trips / 2), the one-way
//! latency; a pair's figure is the mean over samples ± its standard error (sd / √n).
//!
//! The figure says how much to trust it: a pair whose standard error is above
//! [`Options::max_rel_stderr`] of its mean (5 % by default) is measured again — another round of
//! samples joins the first — up to [`Options::max_rounds`] rounds; a pair still above it is
//! `noisy` (another thread on the CPU, a hypervisor's steal), and the matrix counts them.
//!
//! The diagonal (a CPU with itself) is not measured: two threads on one CPU ping-pong through
//! the scheduler, which says nothing about caches.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirespeed_host::CpuSet;

pub use wirespeed_model::doc::{ClassMean, LatencyMatrix, PairLatency, PairRef};
use wirespeed_model::topology::{Relation, Topology};

/// A counter alone on its cache lines.
#[repr(C, align(128))]
struct Line {
    v: AtomicU64,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error("CPU {cpu}: cannot pin a thread there: {source}")]
    Pin {
        cpu: u32,
        source: wirespeed_datapath::DatapathError,
    },
    #[error("CPUs {a} and {b}: no progress for {secs} s (is one of them saturated or offline?)")]
    Stalled { a: u32, b: u32, secs: u64 },
    #[error("need at least two CPUs, got {0}")]
    TooFewCpus(String),
    #[error("a measuring thread panicked")]
    Thread,
}

/// How much to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Samples per pair.
    pub samples: usize,
    /// Round trips per sample.
    pub round_trips: usize,
    /// Give up on a pair that makes no progress for this long.
    pub stall_timeout: Duration,
    /// A pair is converged when its standard error is at most this share of its mean.
    pub max_rel_stderr: f64,
    /// Rounds of `samples` samples at most, while a pair has not converged.
    pub max_rounds: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            samples: 300,
            round_trips: 100,
            stall_timeout: Duration::from_secs(10),
            max_rel_stderr: DEFAULT_MAX_REL_STDERR,
            max_rounds: DEFAULT_MAX_ROUNDS,
        }
    }
}

/// A standard error above 5 % of the mean is noise worth a warning.
pub const DEFAULT_MAX_REL_STDERR: f64 = 0.05;

/// Up to 5 rounds of samples per pair while it has not converged.
pub const DEFAULT_MAX_ROUNDS: usize = 5;

/// One pair's progress, for a line on stderr.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The pair (pinger, responder).
    pub a: u32,
    pub b: u32,
    /// Its number among the pairs (from 1) and how many pairs there are.
    pub index: usize,
    pub pairs: usize,
    /// The figure so far, and whether another round follows.
    pub latency: PairLatency,
    pub again: bool,
}

impl std::fmt::Display for Progress {
    /// The progress line `wirespeed latency` writes on stderr after each round of a pair.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.latency;
        write!(
            f,
            "latency: CPUs {},{} (pair {} of {}), round {}: {:.1} ± {:.1} ns ({:.1} % of the mean){}",
            self.a,
            self.b,
            self.index,
            self.pairs,
            l.rounds,
            l.mean_ns,
            l.stderr_ns,
            l.rel_stderr() * 100.0,
            if self.again {
                ", measuring again"
            } else if l.noisy {
                ", still noise: giving up"
            } else {
                ""
            }
        )
    }
}

/// Whether the samples so far call for another round: not converged, and rounds left.
pub fn needs_another_round(p: &PairLatency, opts: &Options) -> bool {
    p.rel_stderr() > opts.max_rel_stderr && p.rounds < opts.max_rounds.max(1)
}

/// The figure of a pair from all its samples after `rounds` rounds.
pub fn pair_from_samples(samples: &[f64], rounds: usize, opts: &Options) -> PairLatency {
    let (mean_ns, stderr_ns) = mean_stderr(samples);
    let mut p = PairLatency {
        mean_ns,
        stderr_ns,
        samples: samples.len(),
        rounds,
        noisy: false,
    };
    p.noisy = p.rel_stderr() > opts.max_rel_stderr;
    p
}

/// Pin the calling thread with the workspace's one pinning function (the datapath's).
fn pin(cpu: u32) -> Result<(), LatencyError> {
    wirespeed_datapath::cpu::pin_current_thread(cpu)
        .map_err(|source| LatencyError::Pin { cpu, source })
}

/// Spin until the line moves from `from` to `from + 1` by our CAS; `false` when `stop` was set.
#[inline]
fn step(line: &Line, from: u64, stop: &AtomicBool) -> bool {
    let mut spins: u32 = 0;
    while line
        .v
        .compare_exchange(from, from + 1, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        spin_loop();
        spins = spins.wrapping_add(1);
        if spins % 4096 == 0 && stop.load(Ordering::Relaxed) {
            return false;
        }
    }
    true
}

/// Mean and standard error of the mean.
pub fn mean_stderr(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Measure the one-way latency between CPUs `a` (pinger) and `b` (responder), in rounds until
/// it converges (see [`Options::max_rel_stderr`]).
pub fn measure_pair(a: u32, b: u32, opts: &Options) -> Result<PairLatency, LatencyError> {
    measure_pair_with(a, b, opts, &mut |_, _| {})
}

/// [`measure_pair`], calling `round` after each round with the figure so far and whether
/// another round follows.
pub fn measure_pair_with(
    a: u32,
    b: u32,
    opts: &Options,
    round: &mut dyn FnMut(PairLatency, bool),
) -> Result<PairLatency, LatencyError> {
    let mut all = Vec::new();
    let mut rounds = 0;
    loop {
        all.extend(sample_pair(a, b, opts)?);
        rounds += 1;
        let p = pair_from_samples(&all, rounds, opts);
        let again = needs_another_round(&p, opts);
        round(p, again);
        if !again {
            return Ok(p);
        }
    }
}

/// One round: `opts.samples` samples of the one-way latency between `a` and `b`.
fn sample_pair(a: u32, b: u32, opts: &Options) -> Result<Vec<f64>, LatencyError> {
    let line = Arc::new(Line {
        v: AtomicU64::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let warmup = opts.round_trips.min(100) as u64;
    let total = warmup + (opts.samples * opts.round_trips) as u64;

    // Pin the responder first and report its failure before the pinger starts spinning.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), LatencyError>>();
    let responder = {
        let line = Arc::clone(&line);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let r = pin(b);
            let ok = r.is_ok();
            let _ = ready_tx.send(r);
            if !ok {
                return;
            }
            for i in 0..total {
                if !step(&line, 2 * i + 1, &stop) {
                    return;
                }
            }
        })
    };
    let ready = ready_rx.recv().map_err(|_| LatencyError::Thread)?;
    if let Err(e) = ready {
        let _ = responder.join();
        return Err(e);
    }

    let (res_tx, res_rx) = std::sync::mpsc::channel::<Result<Vec<f64>, LatencyError>>();
    let pinger = {
        let line = Arc::clone(&line);
        let stop = Arc::clone(&stop);
        let opts = *opts;
        std::thread::spawn(move || {
            if let Err(e) = pin(a) {
                stop.store(true, Ordering::Relaxed);
                let _ = res_tx.send(Err(e));
                return;
            }
            let mut i = 0u64;
            for _ in 0..warmup {
                if !step(&line, 2 * i, &stop) {
                    return;
                }
                i += 1;
            }
            let mut samples = Vec::with_capacity(opts.samples);
            for _ in 0..opts.samples {
                let t0 = Instant::now();
                for _ in 0..opts.round_trips {
                    if !step(&line, 2 * i, &stop) {
                        return;
                    }
                    i += 1;
                }
                // The last round trip completes when the responder has answered.
                while line.v.load(Ordering::Acquire) != 2 * i {
                    spin_loop();
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                }
                let ns = t0.elapsed().as_nanos() as f64;
                samples.push(ns / opts.round_trips as f64 / 2.0);
            }
            let _ = res_tx.send(Ok(samples));
        })
    };

    // Watch for progress; a pair that stalls (a CPU taken by something else) is abandoned.
    let mut last = line.v.load(Ordering::Relaxed);
    let mut since = Instant::now();
    let result = loop {
        match res_rx.recv_timeout(Duration::from_millis(200)) {
            Ok(r) => break r,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Err(LatencyError::Thread)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let now = line.v.load(Ordering::Relaxed);
                if now != last {
                    last = now;
                    since = Instant::now();
                } else if since.elapsed() >= opts.stall_timeout {
                    break Err(LatencyError::Stalled {
                        a,
                        b,
                        secs: opts.stall_timeout.as_secs(),
                    });
                }
            }
        }
    };
    stop.store(true, Ordering::Relaxed);
    let _ = pinger.join();
    let _ = responder.join();
    result
}

/// A matrix from measured pairs (the type is the model's).
pub trait FromPairs {
    /// Build from measured pairs (`pairs[(i, j)]` with `i > j`, indices into `cpus` in
    /// ascending order).
    fn from_pairs(
        cpus: CpuSet,
        opts: &Options,
        pairs: &[((usize, usize), PairLatency)],
        topo: Option<&Topology>,
    ) -> LatencyMatrix;
}

impl FromPairs for LatencyMatrix {
    fn from_pairs(
        cpus: CpuSet,
        opts: &Options,
        pairs: &[((usize, usize), PairLatency)],
        topo: Option<&Topology>,
    ) -> LatencyMatrix {
        let list: Vec<u32> = cpus.iter().collect();
        let n = list.len();
        let mut matrix = vec![vec![None; n]; n];
        let mut refs = Vec::new();
        for &((i, j), p) in pairs {
            matrix[i][j] = Some(p);
            matrix[j][i] = Some(p);
            refs.push(PairRef {
                a: list[i],
                b: list[j],
                mean_ns: p.mean_ns,
            });
        }
        let min = refs
            .iter()
            .copied()
            .min_by(|x, y| x.mean_ns.total_cmp(&y.mean_ns));
        let max = refs
            .iter()
            .copied()
            .max_by(|x, y| x.mean_ns.total_cmp(&y.mean_ns));
        let mean_ns = (!refs.is_empty())
            .then(|| refs.iter().map(|r| r.mean_ns).sum::<f64>() / refs.len() as f64);
        let mut by_relation = Vec::new();
        if let Some(t) = topo {
            let mut classes: std::collections::BTreeMap<Relation, Vec<f64>> = Default::default();
            for r in &refs {
                classes
                    .entry(t.relation(r.a, r.b))
                    .or_default()
                    .push(r.mean_ns);
            }
            for (relation, v) in classes {
                by_relation.push(ClassMean {
                    relation,
                    pairs: v.len(),
                    mean_ns: v.iter().sum::<f64>() / v.len() as f64,
                });
            }
        }
        LatencyMatrix {
            cpus,
            samples: opts.samples,
            round_trips: opts.round_trips,
            matrix,
            min,
            max,
            mean_ns,
            by_relation,
            max_rel_stderr: opts.max_rel_stderr,
            noisy_pairs: pairs.iter().filter(|(_, p)| p.noisy).count(),
        }
    }
}

/// Measure every pair of `cpus` (lower triangle), one pair at a time.
pub fn measure(
    cpus: &CpuSet,
    opts: &Options,
    topo: Option<&Topology>,
) -> Result<LatencyMatrix, LatencyError> {
    measure_with(cpus, opts, topo, &mut |_| {})
}

/// [`measure`], calling `progress` after every round of every pair.
pub fn measure_with(
    cpus: &CpuSet,
    opts: &Options,
    topo: Option<&Topology>,
    progress: &mut dyn FnMut(Progress),
) -> Result<LatencyMatrix, LatencyError> {
    if cpus.len() < 2 {
        return Err(LatencyError::TooFewCpus(cpus.to_string()));
    }
    let list: Vec<u32> = cpus.iter().collect();
    let n_pairs = list.len() * (list.len() - 1) / 2;
    let mut pairs = Vec::new();
    for i in 0..list.len() {
        for j in 0..i {
            let (a, b) = (list[i], list[j]);
            let index = pairs.len() + 1;
            let p = measure_pair_with(a, b, opts, &mut |latency, again| {
                progress(Progress {
                    a,
                    b,
                    index,
                    pairs: n_pairs,
                    latency,
                    again,
                })
            })?;
            pairs.push(((i, j), p));
        }
    }
    Ok(LatencyMatrix::from_pairs(cpus.clone(), opts, &pairs, topo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_line_says_the_pair_the_round_and_what_follows() {
        let latency = PairLatency {
            mean_ns: 80.0,
            stderr_ns: 2.0,
            samples: 100,
            rounds: 2,
            noisy: false,
        };
        let p = Progress {
            a: 0,
            b: 3,
            index: 1,
            pairs: 6,
            latency,
            again: true,
        };
        assert_eq!(
            p.to_string(),
            "latency: CPUs 0,3 (pair 1 of 6), round 2: 80.0 ± 2.0 ns (2.5 % of the mean), measuring again"
        );
        let done = Progress {
            again: false,
            latency: PairLatency {
                noisy: true,
                ..latency
            },
            ..p
        };
        assert!(done.to_string().ends_with(", still noise: giving up"));
    }

    #[test]
    fn the_line_is_alone_on_its_cache_lines() {
        assert_eq!(std::mem::align_of::<Line>(), 128);
        assert_eq!(std::mem::size_of::<Line>(), 128);
    }

    #[test]
    fn mean_and_standard_error() {
        let (m, se) = mean_stderr(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((se - (1.6666666666666667f64 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_stderr(&[]), (0.0, 0.0));
        assert_eq!(mean_stderr(&[7.0]), (7.0, 0.0));
    }

    #[test]
    fn matrix_from_pairs_renders_lower_triangle_csv_and_json() {
        let topo = Topology::from_groups(
            vec![CpuSet::parse_list("0-11").unwrap()],
            vec![
                CpuSet::parse_list("0-5").unwrap(),
                CpuSet::parse_list("6-11").unwrap(),
            ],
            vec![],
        );
        let p = |m| PairLatency {
            mean_ns: m,
            stderr_ns: 0.5,
            samples: 10,
            rounds: 1,
            noisy: false,
        };
        let m = LatencyMatrix::from_pairs(
            CpuSet::from_cpus([0, 6, 7]),
            &Options {
                samples: 10,
                round_trips: 5,
                ..Default::default()
            },
            &[((1, 0), p(220.0)), ((2, 0), p(218.0)), ((2, 1), p(25.0))],
            Some(&topo),
        );
        assert_eq!(m.matrix[0][1], m.matrix[1][0]);
        assert!(m.matrix[1][1].is_none());
        assert_eq!((m.min.unwrap().a, m.min.unwrap().b), (7, 6));
        assert_eq!((m.max.unwrap().a, m.max.unwrap().b), (6, 0));
        assert_eq!(m.by_relation.len(), 2);
        assert_eq!(m.by_relation[0].relation, Relation::SameL3);
        assert_eq!(m.by_relation[1].mean_ns, 219.0);
        let mut out = Vec::new();
        wirespeed_report::latency::write_table(&mut out, &m).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["CPU", "0", "6"]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["6", "220.0±0.5"]
        );
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            ["7", "218.0±0.5", "25.0±0.5"]
        );
        assert!(
            lines[4].starts_with("min 25.0 ns (CPUs 7,6)  max 220.0 ns (CPUs 6,0)"),
            "{t}"
        );
        let mut out = Vec::new();
        wirespeed_report::csv::latency(&m, &mut out).unwrap();
        let csv = String::from_utf8(out).unwrap();
        assert_eq!(csv.lines().count(), 4);
        assert_eq!(csv.lines().nth(3), Some("7,6,25.00,0.50,10,5,false"));
        assert_eq!(m.noisy_pairs, 0);
        assert!(m.noise_warning().is_none());
        assert!(!t.contains("warning"), "{t}");
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(
            j["cpus"],
            serde_json::json!([0, 6, 7]),
            "an array, as before"
        );
        assert!(j["matrix"][0][0].is_null());
        assert_eq!(j["matrix"][0][1]["mean_ns"], 220.0);
    }

    #[test]
    fn this_machine_gives_a_positive_matrix() {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| CpuSet::parse_list(&s).ok())
            .unwrap_or_default();
        if online.len() < 2 {
            eprintln!(
                "SKIP: this_machine_gives_a_positive_matrix because fewer than 2 CPUs are online"
            );
            return;
        }
        let cpus: CpuSet = online.iter().take(2).collect();
        let opts = Options {
            samples: 20,
            round_trips: 20,
            stall_timeout: Duration::from_secs(20),
            ..Options::default()
        };
        let m = measure(&cpus, &opts, None).unwrap();
        assert_eq!(m.matrix.len(), 2);
        assert!(m.matrix.iter().all(|r| r.len() == 2));
        let p = m.matrix[1][0].unwrap();
        assert!(p.mean_ns > 0.0 && p.mean_ns.is_finite(), "{p:?}");
        assert!(p.stderr_ns >= 0.0);
        assert!(m.matrix[0][0].is_none() && m.matrix[1][1].is_none());
    }

    #[test]
    fn a_noisy_pair_gets_more_rounds_then_is_marked_and_warned_about() {
        let opts = Options {
            max_rounds: 3,
            ..Options::default()
        };
        // 1094±1028 ns (three runs gave 1094, 225 and 56 ns): noise
        let noisy = pair_from_samples(&[56.0, 225.0, 3000.0, 60.0, 2130.0], 1, &opts);
        assert!(noisy.noisy && noisy.rel_stderr() > 0.05, "{noisy:?}");
        assert!(needs_another_round(&noisy, &opts));
        let last = PairLatency { rounds: 3, ..noisy };
        assert!(!needs_another_round(&last, &opts), "bounded by max_rounds");
        // 5 % of the mean is the line: 100 ± 4.9 converged, 100 ± 5.1 not
        let steady = pair_from_samples(&[100.0, 101.0, 99.0, 100.5, 99.5], 1, &opts);
        assert!(!steady.noisy && !needs_another_round(&steady, &opts));
        let p = |m, noisy| PairLatency {
            mean_ns: m,
            stderr_ns: if noisy { m } else { 1.0 },
            samples: 300,
            rounds: 3,
            noisy,
        };
        let m = LatencyMatrix::from_pairs(
            CpuSet::from_cpus([0, 1, 2]),
            &opts,
            &[
                ((1, 0), p(1094.0, true)),
                ((2, 0), p(60.0, false)),
                ((2, 1), p(58.0, false)),
            ],
            None,
        );
        assert_eq!(m.noisy_pairs, 1);
        let w = m.noise_warning().unwrap();
        assert!(w.starts_with("warning: 1 of 3 pairs are noise"), "{w}");
        assert!(w.contains("above 5 % of the mean"), "{w}");
        let mut out = Vec::new();
        wirespeed_report::latency::write_table(&mut out, &m).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("1094.0±1094.0*"), "{t}");
        assert!(
            t.lines().last().unwrap().starts_with("warning: 1 of 3"),
            "{t}"
        );
        let mut out = Vec::new();
        wirespeed_report::csv::latency(&m, &mut out).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("1,0,1094.00,1094.00,300,100,true"));
    }

    #[test]
    fn an_impossible_cpu_is_an_error_not_a_hang() {
        let e = measure_pair(0, 100_000, &Options::default()).unwrap_err();
        assert!(matches!(e, LatencyError::Pin { cpu: 100_000, .. }), "{e}");
        assert!(measure(&CpuSet::from_cpus([0]), &Options::default(), None).is_err());
    }
}
