//! wirespeed's own JSON documents, as typed data: what `sweep`, `sweep --irq-cpus`,
//! `client --repeat` and `latency` write and the report crate reads and draws. The drive and latency crates
//! computes them (its functions fill these types); every reader takes these types, never a
//! copy of them. The documents carry an explicit `kind` (`wirespeed_report::doc::Document`
//! writes and reads it).

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::irq::{MoveOutcome, MoveReport, QueueIrq};
use crate::observation::{BitsPerSecond, Percent};
use crate::topology::Relation;
use crate::verdict::VerdictId;
use crate::CpuSet;

/// The median of a non-empty slice (mean of the two middle values for even lengths).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// What the rows and columns of a sweep are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axes {
    /// Rows: client CPU; columns: server CPU.
    ClientServer,
    /// Rows: the receiver's app CPU; columns: the CPU its NIC's queue IRQs were moved to.
    AppIrq,
}

impl Axes {
    /// How a column CPU sits relative to its row CPU, in words that fit the axes.
    pub fn relation_words(self, r: Relation) -> &'static str {
        match (self, r) {
            (Axes::AppIrq, r) => r.describe(),
            (Axes::ClientServer, Relation::SameCpu) => "client and server on the same CPU",
            (Axes::ClientServer, Relation::SmtSibling) => {
                "client and server on SMT siblings of one core"
            }
            (Axes::ClientServer, Relation::SameL3) => {
                "client and server on two cores of one L3 group"
            }
            (Axes::ClientServer, Relation::OtherL3) => "client and server on different L3 groups",
            (Axes::ClientServer, Relation::OtherNode) => {
                "client and server on different NUMA nodes"
            }
            (Axes::ClientServer, Relation::Unknown) => "client and server at an unknown distance",
        }
    }

    pub fn labels(self) -> (&'static str, &'static str) {
        match self {
            Axes::ClientServer => ("client CPU", "server CPU"),
            Axes::AppIrq => ("app CPU", "IRQ CPU"),
        }
    }
}

/// One cell: the throughputs of its runs (bits/s) and their median.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub runs: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<f64>,
    /// Why the cell has no runs (a failed test), when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each run's full-length interval rates (bits/s), in run order: the spread within a run.
    /// Empty in documents of earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Vec<f64>>,
    /// Each run's verdict, in run order (runs without one are left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<VerdictId>,
}

/// Where a cell's spread comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpreadFrom {
    /// The cell's runs (`--repeat`): how much a run differs from the next.
    Runs,
    /// One run's interval rates: how much the rate moved within the run.
    Intervals,
}

impl SpreadFrom {
    pub fn words(self) -> &'static str {
        match self {
            SpreadFrom::Runs => "repeated runs",
            SpreadFrom::Intervals => "per-interval rates",
        }
    }
}

/// A cell's noise: the sample standard deviation of what it measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Bits/s.
    pub sd: f64,
    pub from: SpreadFrom,
    /// Samples behind it.
    pub samples: usize,
}

/// The sample standard deviation of at least two finite values.
pub fn std_dev(v: &[f64]) -> Option<f64> {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    Some((v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

impl Cell {
    /// The cell's noise: the spread of its runs when it has two or more, else the spread of
    /// its one run's interval rates; `None` when neither has two values.
    pub fn spread(&self) -> Option<Spread> {
        if let Some(sd) = std_dev(&self.runs) {
            return Some(Spread {
                sd,
                from: SpreadFrom::Runs,
                samples: self.runs.len(),
            });
        }
        let iv = self.intervals.first()?;
        std_dev(iv).map(|sd| Spread {
            sd,
            from: SpreadFrom::Intervals,
            samples: iv.len(),
        })
    }

    /// The verdict every run of the cell had, when they agree.
    pub fn verdict(&self) -> Option<VerdictId> {
        let first = *self.verdicts.first()?;
        self.verdicts.iter().all(|v| *v == first).then_some(first)
    }
}

/// The colour scale of a sweep's heatmap reaches down to at least this share of the best cell
/// below it: differences up to half the best use the whole scale, and a 1 % difference is 2 %
/// of it (never darkest against brightest).
pub const SCALE_FLOOR: f64 = 0.5;

/// The colour scale's ends for cells between `lo` and `hi`: from `min(lo, hi × SCALE_FLOOR)`
/// to `hi`, so a shade's step is a share of the best, not of the cells' own spread.
pub fn scale_range(lo: f64, hi: f64) -> (f64, f64) {
    (lo.min(hi * SCALE_FLOOR).max(0.0), hi)
}

/// The sweep's matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub axes: Axes,
    /// Row CPUs, ascending (written as an array of CPU numbers).
    #[serde(with = "crate::cpuset::as_array")]
    pub rows: CpuSet,
    /// Column CPUs, ascending.
    #[serde(with = "crate::cpuset::as_array")]
    pub cols: CpuSet,
    /// `cells[r][c]` for the `r`-th row CPU and the `c`-th column CPU.
    pub cells: Vec<Vec<Cell>>,
}

/// A cell named by its CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub row: u32,
    pub col: u32,
    pub median: BitsPerSecond,
}

/// Best, worst and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub best: Pair,
    pub worst: Pair,
    /// Pairs within 2 % of the best.
    pub near_best: Vec<Pair>,
    /// Median of the cells of each topology relation between row and column CPU (when the
    /// row and column CPUs live on one host: `AppIrq`, or a loopback client/server sweep).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_relation: Vec<(Relation, BitsPerSecond)>,
    pub recommendation: String,
    /// Whether the best cell is better than the next beyond their noise; absent when a cell's
    /// spread is unknown (one run of one interval) and in documents of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
    /// The verdict every cell agreed on, when they all had the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictId>,
}

/// The best cell against the next, with their spreads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub best_spread: Spread,
    /// The second-fastest cell and its spread.
    pub next: Pair,
    pub next_spread: Spread,
    /// The best cell's median exceeds the next's by more than the sum of their spreads.
    pub beyond: bool,
    /// The cells (the best among them) whose median lies within the best's and their own
    /// spread of the best's: those the sweep cannot tell apart from the best.
    pub tied: Vec<Pair>,
    /// The smallest and the largest spread of any cell, as a share of its median (percent).
    pub spread_pct: (f64, f64),
}

/// The one-way latency of one pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairLatency {
    pub mean_ns: f64,
    pub stderr_ns: f64,
    /// Samples behind the figure (every round's).
    #[serde(default)]
    pub samples: usize,
    /// Rounds of samples measured.
    #[serde(default)]
    pub rounds: usize,
    /// The standard error stayed above [`Options::max_rel_stderr`] of the mean.
    #[serde(default)]
    pub noisy: bool,
}

impl PairLatency {
    /// The standard error as a share of the mean (0 for a zero mean).
    pub fn rel_stderr(&self) -> f64 {
        if self.mean_ns > 0.0 {
            self.stderr_ns / self.mean_ns
        } else {
            0.0
        }
    }
}

/// A pair and its latency, for the extremes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairRef {
    pub a: u32,
    pub b: u32,
    pub mean_ns: f64,
}

/// Mean latency of the pairs in one relation class (same L3, other L3, other node...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassMean {
    pub relation: Relation,
    pub pairs: usize,
    pub mean_ns: f64,
}

/// The matrix over a set of CPUs: symmetric, `None` on the diagonal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyMatrix {
    /// The CPUs, ascending (written as an array of CPU numbers).
    #[serde(with = "crate::cpuset::as_array")]
    pub cpus: CpuSet,
    pub samples: usize,
    pub round_trips: usize,
    /// `matrix[i][j]`: the `i`-th and the `j`-th CPU of `cpus`.
    pub matrix: Vec<Vec<Option<PairLatency>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<PairRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<PairRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ns: Option<f64>,
    /// Means per topology relation, when a topology was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_relation: Vec<ClassMean>,
    /// The share of the mean a pair's standard error may reach before it is noisy.
    #[serde(default)]
    pub max_rel_stderr: f64,
    /// Pairs whose standard error stayed above it after every round.
    #[serde(default)]
    pub noisy_pairs: usize,
}

impl LatencyMatrix {
    /// The warning for noisy pairs, when there are any.
    pub fn noise_warning(&self) -> Option<String> {
        if self.noisy_pairs == 0 {
            return None;
        }
        let total = self
            .matrix
            .iter()
            .enumerate()
            .map(|(i, r)| r.iter().take(i).filter(|p| p.is_some()).count())
            .sum::<usize>();
        Some(format!(
            "warning: {} of {} pairs are noise, not a measurement: their standard error stayed above {:.0} % of the mean after every round (another thread on those CPUs, or a hypervisor's steal time); marked * in the table",
            self.noisy_pairs,
            total,
            self.max_rel_stderr * 100.0
        ))
    }
}

/// min / median / max / spread of a set of throughputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub runs: usize,
    pub min: BitsPerSecond,
    pub median: BitsPerSecond,
    pub max: BitsPerSecond,
    pub mean: BitsPerSecond,
    /// (max − min) / median, in percent.
    pub spread: Percent,
}

/// A group of runs with close throughputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mode {
    /// Run numbers, 1-based, in run order.
    pub runs: Vec<usize>,
    pub stats: Stats,
    /// The signature most of its runs share; `None` when no run was observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
    /// How many of the runs share it.
    pub agreeing: usize,
    /// The placement of the first run with that signature (CPU numbers for the text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<IrqPlacement>,
    /// One line: throughput, runs, placement.
    pub description: String,
}

/// The whole `--repeat` analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatAnalysis {
    pub stats: Stats,
    /// How modes were found.
    pub method: String,
    /// Slowest first.
    pub modes: Vec<Mode>,
    /// What distinguishes the modes, when their signatures differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<String>,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
}

/// Where one kind of event ran: the dominant relation, its share of the events and its CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub relation: Relation,
    pub share: Percent,
    /// The CPUs of the dominant relation that carried at least 5 % of the events.
    pub cpus: CpuSet,
    /// Events counted.
    pub events: u64,
}

/// Where an end's network work (the NIC's interrupts, `NET_RX` softirqs) ran relative to its app
/// CPUs: observed (where the IRQs should go is doctor's `IrqAssignment`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqPlacement {
    pub app_cpus: CpuSet,
    /// The NIC's interrupts; `None` when none were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<Share>,
    /// `NET_RX` softirqs; `None` when none were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq: Option<Share>,
}

/// The comparable part of a placement (no CPU numbers), for grouping runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Signature {
    pub irq: Option<Relation>,
    pub softirq: Option<Relation>,
}

impl IrqPlacement {
    pub fn signature(&self) -> Signature {
        Signature {
            irq: self.irq.as_ref().map(|s| s.relation),
            softirq: self.softirq.as_ref().map(|s| s.relation),
        }
    }

    /// Where the receive work ran: the interrupts when counted, else the softirqs.
    pub fn rx_work(&self) -> Option<&Share> {
        self.irq.as_ref().or(self.softirq.as_ref())
    }

    /// One sentence: `NIC interrupts on CPU 3 (other-l3, 98 %), NET_RX on CPU 3 (other-l3, 97 %)`.
    pub fn describe(&self) -> String {
        let part = |what: &str, s: &Option<Share>| match s {
            Some(s) => format!(
                "{what} on {}, {} ({} of them)",
                s.cpus.words(),
                s.relation.describe(),
                s.share
            ),
            None => format!("no {what} counted"),
        };
        format!(
            "app {}: {}; {}",
            self.app_cpus.words(),
            part("NIC interrupts", &self.irq),
            part("NET_RX softirqs", &self.softirq)
        )
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = |x: Option<Relation>| x.map_or("none", Relation::as_str);
        write!(f, "irq={} softirq={}", r(self.irq), r(self.softirq))
    }
}

impl Signature {
    /// In words, for people (the `Display` form `irq=… softirq=…` is the key runs are grouped
    /// by): `no NIC interrupts counted, RX softirq on the app's own CPU`.
    pub fn words(&self) -> String {
        let w = |what: &str, r: Option<Relation>| match r {
            Some(r) => format!("{what} on {}", r.describe()),
            None => format!("no {what} counted"),
        };
        format!(
            "{}, {}",
            w("NIC interrupts", self.irq),
            w("RX softirq", self.softirq)
        )
    }
}

/// What one step did: the move of the queue IRQs to its one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepOutcome {
    pub irq_cpu: u32,
    /// What the move did (the step's journal, the IRQs moved or not).
    #[serde(flatten)]
    pub outcome: MoveOutcome,
}

impl StepOutcome {
    /// A sweep step as a move of the queue IRQs to its one CPU reports it.
    pub fn from_move(irq_cpu: u32, m: &MoveReport) -> StepOutcome {
        StepOutcome {
            irq_cpu,
            outcome: m.outcome.clone(),
        }
    }
}

/// The whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqSweepReport {
    pub iface: String,
    pub irqs: Vec<QueueIrq>,
    /// Rows: app CPUs; columns: IRQ CPUs.
    pub matrix: Matrix,
    pub steps: Vec<StepOutcome>,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
}

impl IrqSweepReport {
    /// Leave the steps whose move did not take effect (see [`MoveOutcome::took_effect`]) out of
    /// the matrix: their cells lose their runs and say why, so the summary and its
    /// recommendation rest only on moves that happened. Returns how many steps did not take
    /// effect.
    pub fn drop_ineffective(&mut self) -> usize {
        let mut n = 0;
        for s in &self.steps {
            if s.outcome.took_effect() {
                continue;
            }
            n += 1;
            let why = match s.outcome.elsewhere.first() {
                Some((irq, cpus)) => format!(
                    "the move to CPU {} did not take effect (IRQ {irq} ran on CPU {cpus})",
                    s.irq_cpu
                ),
                None => format!("no IRQ could be moved to CPU {}", s.irq_cpu),
            };
            let Some(c) = self.matrix.cols.iter().position(|c| c == s.irq_cpu) else {
                continue;
            };
            for row in &mut self.matrix.cells {
                let cell = &mut row[c];
                cell.runs.clear();
                cell.median = None;
                cell.error = Some(why.clone());
            }
        }
        n
    }
}

impl Matrix {
    pub fn new(axes: Axes, rows: CpuSet, cols: CpuSet) -> Matrix {
        let cells = vec![vec![Cell::default(); cols.len()]; rows.len()];
        Matrix {
            axes,
            rows,
            cols,
            cells,
        }
    }

    fn index(&self, row: u32, col: u32) -> Option<(usize, usize)> {
        Some((
            self.rows.iter().position(|r| r == row)?,
            self.cols.iter().position(|c| c == col)?,
        ))
    }

    /// Record one run's throughput; `false` when the pair is not on the grid.
    pub fn record(&mut self, row: u32, col: u32, bps: BitsPerSecond) -> bool {
        let Some((r, c)) = self.index(row, col) else {
            return false;
        };
        let cell = &mut self.cells[r][c];
        if bps.0.is_finite() {
            cell.runs.push(bps.0);
            cell.median = median(&cell.runs);
        }
        true
    }

    /// Record one run with its interval rates (bits/s) and its verdict, when it had one;
    /// `false` when the pair is not on the grid.
    pub fn record_run(
        &mut self,
        row: u32,
        col: u32,
        bps: BitsPerSecond,
        intervals: Vec<f64>,
        verdict: Option<VerdictId>,
    ) -> bool {
        if !self.record(row, col, bps) {
            return false;
        }
        let Some((r, c)) = self.index(row, col) else {
            return false;
        };
        let cell = &mut self.cells[r][c];
        if bps.0.is_finite() {
            cell.intervals.push(intervals);
            cell.verdicts.extend(verdict);
        }
        true
    }

    /// The cell of a pair.
    pub fn cell(&self, row: u32, col: u32) -> Option<&Cell> {
        let (r, c) = self.index(row, col)?;
        Some(&self.cells[r][c])
    }

    /// Record that a pair's test failed.
    pub fn record_error(&mut self, row: u32, col: u32, error: impl Into<String>) -> bool {
        let Some((r, c)) = self.index(row, col) else {
            return false;
        };
        self.cells[r][c].error = Some(error.into());
        true
    }

    pub fn median(&self, row: u32, col: u32) -> Option<f64> {
        let (r, c) = self.index(row, col)?;
        self.cells[r][c].median
    }

    /// Every cell with a result, as a pair.
    pub fn pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.rows.iter().enumerate().flat_map(move |(ri, row)| {
            self.cols.iter().enumerate().filter_map(move |(ci, col)| {
                self.cells[ri][ci].median.map(|m| Pair {
                    row,
                    col,
                    median: BitsPerSecond(m),
                })
            })
        })
    }
}
