//! `/proc/interrupts`: per-IRQ, per-CPU interrupt counts, the interrupt chip, hardware IRQ number,
//! flow type and the action (handler) names; and the classification of a NIC's vectors by those
//! names into queue (completion) and control (async, admin, link) vectors.
//!
//! The header names the CPU of each count column (`CPU0 CPU1 CPU3` when CPU 2 is offline), so a
//! count is always attributed through [`Interrupts::cpus`], never by column position alone.
//!
//! Row shapes the kernel prints (all handled):
//! ```text
//!  98:   0 ...  23274  0  IR-PCI-MSIX-0000:01:00.0    0-edge      mlx5_async0@pci:0000:01:00.0
//! 105:   223 ... 0       PCI-MSI-edge      mlx4-comp-0@pci:0000:20:00.0      (2.6/3.x: chip-flow)
//!  11:   12  34          GICv3  30 Level     arch_timer                      (SHOW_LEVEL arches)
//!  56:   0 ...           IR-PCI-MSI-0000:00:01.1    0-edge      PCIe PME, aerdrv (two actions)
//! NMI:   19347 ...       Non-maskable interrupts
//! ERR:   0                                                                   (one global count)
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;

/// The label of a `/proc/interrupts` row: an IRQ number or a named (architecture) row such as
/// `NMI`, `LOC`, `RES`, `IPI0`, `ERR`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IrqLabel {
    Irq(u32),
    Named(String),
}

impl fmt::Display for IrqLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IrqLabel::Irq(n) => write!(f, "{n}"),
            IrqLabel::Named(s) => f.write_str(s),
        }
    }
}

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqRow {
    pub label: IrqLabel,
    /// Counts in column order; column `i` belongs to CPU `Interrupts::cpus[i]`. Rows such as
    /// `ERR:`/`MIS:` carry a single global count.
    pub counts: Vec<u64>,
    /// Interrupt chip (`IR-PCI-MSIX-0000:01:00.0`, `IO-APIC`, `PCI-MSI`, `GICv3`); numbered rows only.
    pub chip: Option<String>,
    /// Hardware IRQ number within the chip's domain (`0` of `0-edge`), when printed.
    pub hwirq: Option<String>,
    /// Flow handler / trigger (`edge`, `fasteoi`, `Level`), when printed.
    pub flow: Option<String>,
    /// Action (handler) names, in order (`["PCIe PME", "aerdrv"]`); numbered rows only.
    pub actions: Vec<String>,
    /// Description of a named row (`Local timer interrupts`).
    pub description: Option<String>,
}

impl IrqRow {
    /// Sum over all columns.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The IRQ number of a numbered row.
    pub fn irq(&self) -> Option<u32> {
        match self.label {
            IrqLabel::Irq(n) => Some(n),
            IrqLabel::Named(_) => None,
        }
    }

    /// The action names joined as the kernel prints them (`PCIe PME, aerdrv`).
    pub fn action_text(&self) -> String {
        self.actions.join(", ")
    }
}

/// The parsed `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Interrupts {
    /// CPU number of each count column, from the header (`CPU0 CPU1 ...`).
    pub cpus: Vec<u32>,
    pub rows: Vec<IrqRow>,
}

/// `/proc/interrupts` text that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterruptsError {
    #[error("/proc/interrupts: no CPU header line")]
    NoHeader,
    #[error("/proc/interrupts: bad header token {0:?}")]
    BadHeader(String),
    #[error("/proc/interrupts line {line}: {reason}")]
    BadRow { line: usize, reason: String },
}

/// Flow handler names the kernel appends to the hardware IRQ number (`0-edge`) or, on old kernels,
/// to the chip name (`PCI-MSI-edge`).
const FLOWS: &[&str] = &[
    "edge",
    "level",
    "fasteoi",
    "simple",
    "percpu",
    "percpu_devid",
    "untracked",
    "none",
    "bad",
    "fasteoi_ack",
    "eoi",
];

fn split_flow(token: &str) -> Option<(&str, &str)> {
    let (prefix, flow) = token.rsplit_once('-')?;
    let lower = flow.to_ascii_lowercase();
    FLOWS.contains(&lower.as_str()).then_some((prefix, flow))
}

/// Whitespace-separated tokens with their byte offsets in `s`.
fn tokens(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if let Some(st) = start.take() {
                out.push((st, &s[st..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        out.push((st, &s[st..]));
    }
    out
}

fn split_actions(s: &str) -> Vec<String> {
    s.split(", ")
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parse the text after the counts of a numbered row: chip, hwirq, flow, actions.
type ChipFields = (Option<String>, Option<String>, Option<String>, Vec<String>);

fn parse_chip_tail(tail: &str) -> ChipFields {
    let toks = tokens(tail);
    if toks.is_empty() {
        return (None, None, None, Vec::new());
    }
    // Find the flow token: `<hwirq>-<flow>`, `<chip>-<flow>`, or a bare `Edge`/`Level`.
    for (i, &(off, tok)) in toks.iter().enumerate() {
        let rest = tail[off + tok.len()..].trim();
        if let Some((prefix, flow)) = split_flow(tok) {
            let before: Vec<&str> = toks[..i].iter().map(|t| t.1).collect();
            let digits = !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit());
            let (chip, hwirq) = if digits {
                (before.join(" "), Some(prefix.to_string()))
            } else if before.is_empty() {
                (prefix.to_string(), None)
            } else {
                // `chip  hwirq-ish-flow`: keep what is there.
                (before.join(" "), Some(prefix.to_string()))
            };
            let chip = (!chip.is_empty()).then_some(chip);
            return (chip, hwirq, Some(flow.to_string()), split_actions(rest));
        }
        if i > 0 && (tok.eq_ignore_ascii_case("edge") || tok.eq_ignore_ascii_case("level")) {
            let chip = toks[0].1.to_string();
            let hwirq: Vec<&str> = toks[1..i].iter().map(|t| t.1).collect();
            let hwirq = (!hwirq.is_empty()).then(|| hwirq.join(" "));
            return (
                Some(chip),
                hwirq,
                Some(tok.to_string()),
                split_actions(rest),
            );
        }
    }
    // No recognisable flow: first token is the chip, the rest are actions.
    let (off, chip) = toks[0];
    let rest = tail[off + chip.len()..].trim();
    if rest.is_empty() {
        // A lone token: more likely an action name (no chip printed) than a chip with no action.
        return (None, None, None, split_actions(chip));
    }
    (Some(chip.to_string()), None, None, split_actions(rest))
}

/// The CPU numbers of a `CPU0 CPU1 ...` header (`/proc/interrupts`, `/proc/softirqs`); the first
/// token that is not `CPUn` as the error.
pub(crate) fn cpu_columns(header: &str) -> Result<Vec<u32>, &str> {
    header
        .split_whitespace()
        .map(|tok| {
            tok.strip_prefix("CPU")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or(tok)
        })
        .collect()
}

impl Interrupts {
    /// Parse the text of `/proc/interrupts`.
    pub fn parse(text: &str) -> Result<Interrupts, InterruptsError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or(InterruptsError::NoHeader)?;
        let cpus =
            cpu_columns(header).map_err(|tok| InterruptsError::BadHeader(tok.to_string()))?;
        if cpus.is_empty() {
            return Err(InterruptsError::NoHeader);
        }
        let mut rows = Vec::new();
        for (idx, line) in lines {
            let bad = |reason: &str| InterruptsError::BadRow {
                line: idx + 1,
                reason: reason.to_string(),
            };
            let (label, rest) = line
                .split_once(':')
                .ok_or_else(|| bad("no ':' after the label"))?;
            let label = label.trim();
            if label.is_empty() || label.contains(char::is_whitespace) {
                return Err(bad("bad label"));
            }
            let label = match label.parse::<u32>() {
                Ok(n) => IrqLabel::Irq(n),
                Err(_) => IrqLabel::Named(label.to_string()),
            };
            // Counts: up to one per CPU column.
            let toks = tokens(rest);
            let mut counts = Vec::new();
            let mut tail_at = rest.len();
            for &(off, tok) in &toks {
                if counts.len() == cpus.len() {
                    tail_at = off;
                    break;
                }
                match tok.parse::<u64>() {
                    Ok(v) => counts.push(v),
                    Err(_) => {
                        tail_at = off;
                        break;
                    }
                }
            }
            if counts.is_empty() {
                return Err(bad("no counts"));
            }
            let tail = rest[tail_at.min(rest.len())..].trim();
            let row = match label {
                IrqLabel::Irq(_) => {
                    let (chip, hwirq, flow, actions) = parse_chip_tail(tail);
                    IrqRow {
                        label,
                        counts,
                        chip,
                        hwirq,
                        flow,
                        actions,
                        description: None,
                    }
                }
                IrqLabel::Named(_) => IrqRow {
                    label,
                    counts,
                    chip: None,
                    hwirq: None,
                    flow: None,
                    actions: Vec::new(),
                    description: (!tail.is_empty()).then(|| tail.to_string()),
                },
            };
            rows.push(row);
        }
        Ok(Interrupts { cpus, rows })
    }

    /// The row of a numbered IRQ.
    pub fn irq(&self, irq: u32) -> Option<&IrqRow> {
        self.rows.iter().find(|r| r.label == IrqLabel::Irq(irq))
    }

    /// A named row (`NMI`, `LOC`, `RES`, ...).
    pub fn named(&self, name: &str) -> Option<&IrqRow> {
        self.rows
            .iter()
            .find(|r| matches!(&r.label, IrqLabel::Named(n) if n == name))
    }

    /// The count of `row` on `cpu`; `None` when the CPU has no column (offline) or the row has no
    /// per-CPU counts.
    pub fn count_on(&self, row: &IrqRow, cpu: u32) -> Option<u64> {
        if row.counts.len() != self.cpus.len() {
            return None;
        }
        let col = self.cpus.iter().position(|&c| c == cpu)?;
        row.counts.get(col).copied()
    }

    /// `(cpu, count)` pairs of a row with per-CPU counts (empty for single-count rows).
    pub fn per_cpu<'a>(&'a self, row: &'a IrqRow) -> impl Iterator<Item = (u32, u64)> + 'a {
        let ok = row.counts.len() == self.cpus.len();
        self.cpus
            .iter()
            .copied()
            .zip(row.counts.iter().copied())
            .filter(move |_| ok)
    }

    /// Per-CPU sum over the numbered IRQs in `irqs` (e.g. one NIC's vectors), indexed like
    /// [`Interrupts::cpus`]. IRQs absent from the table contribute nothing.
    pub fn sum_per_cpu(&self, irqs: &[u32]) -> Vec<u64> {
        let mut out = vec![0u64; self.cpus.len()];
        for row in &self.rows {
            if row.irq().is_some_and(|n| irqs.contains(&n)) && row.counts.len() == out.len() {
                for (o, c) in out.iter_mut().zip(&row.counts) {
                    *o += c;
                }
            }
        }
        out
    }

    /// Numbered IRQs one of whose action names satisfies `pred`.
    pub fn irqs_where(&self, mut pred: impl FnMut(&str) -> bool) -> Vec<u32> {
        self.rows
            .iter()
            .filter(|r| r.actions.iter().any(|a| pred(a)))
            .filter_map(IrqRow::irq)
            .collect()
    }
}

/// Per-CPU sums over the numbered IRQs in `irqs` (one NIC's vectors), straight from the text of
/// `/proc/interrupts`: the same figures as [`Interrupts::parse`] then
/// [`Interrupts::sum_per_cpu`], without parsing the rows that are not asked for. On a host with
/// 512 CPUs and 4,000 vectors the text is some 22 MB; a row whose label is not one of `irqs` is
/// passed over at the cost of finding its end. Returns the CPU of each column (the header) and
/// the sums indexed like it.
pub fn sum_rows(text: &str, irqs: &[u32]) -> Result<(Vec<u32>, Vec<u64>), InterruptsError> {
    sum_rows_at(text, irqs).map(|(cpus, sums, _)| (cpus, sums))
}

/// What [`sum_rows_at`] returns: the CPU of each column, the sums indexed like it, and where the
/// rows lie.
pub type RowSums = (Vec<u32>, Vec<u64>, Option<RowSpans>);

/// [`sum_rows`], and where in the text the rows of `irqs` lie ([`RowSpans`]; `None` unless every
/// one of them is there once, whole, with a count per column), so that the next reading reads
/// only those bytes.
pub fn sum_rows_at(text: &str, irqs: &[u32]) -> Result<RowSums, InterruptsError> {
    let mut pos = 0;
    // the header: the first line that is not blank
    let (header, header_end) = loop {
        if pos >= text.len() {
            return Err(InterruptsError::NoHeader);
        }
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = &text[pos..end];
        pos = (end + 1).min(text.len());
        if !line.trim().is_empty() {
            break (line, end);
        }
    };
    let cpus = cpu_columns(header).map_err(|tok| InterruptsError::BadHeader(tok.to_string()))?;
    if cpus.is_empty() {
        return Err(InterruptsError::NoHeader);
    }
    let mut sums = vec![0u64; cpus.len()];
    let mut row = Vec::with_capacity(cpus.len());
    // (irq, first byte, one past its newline) of each row counted
    let mut found: Vec<(u32, usize, usize)> = Vec::new();
    let mut whole = true;
    while pos < text.len() {
        let start = pos;
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        pos = end + 1;
        let Some(irq) = row_label(&text.as_bytes()[start..end]) else {
            continue; // a named row (`NMI`, `LOC`), a blank line, or one the full parser refuses
        };
        if !irqs.contains(&irq) {
            continue;
        }
        let rest = &text.as_bytes()[start..end];
        let colon = rest.iter().position(|&b| b == b':').unwrap_or(0);
        if parse_counts(&rest[colon + 1..], cpus.len(), &mut row) {
            for (s, c) in sums.iter_mut().zip(&row) {
                *s += c;
            }
            found.push((irq, start, pos));
            whole &= end < text.len();
        }
    }
    let complete = whole
        && irqs
            .iter()
            .all(|i| found.iter().filter(|f| f.0 == *i).count() == 1)
        && found.len() == irqs.len();
    let spans = complete.then(|| {
        let mut runs: Vec<RowRun> = Vec::new();
        for (irq, start, end) in found {
            match runs.last_mut() {
                Some(r) if r.offset as usize + r.len == start => {
                    r.len = end - r.offset as usize;
                    r.irqs.push(irq);
                }
                _ => runs.push(RowRun {
                    offset: start as u64,
                    len: end - start,
                    irqs: vec![irq],
                }),
            }
        }
        RowSpans {
            header: text.as_bytes()[..=header_end.min(text.len() - 1)].to_vec(),
            cpus: cpus.clone(),
            runs,
        }
    });
    Ok((cpus, sums, spans))
}

/// The number before a row's colon (` 40:` → 40), as [`sum_rows`] reads it: spaces before it,
/// nothing between it and the colon; `None` for a named row or anything else.
fn row_label(line: &[u8]) -> Option<u32> {
    let colon = line.iter().position(|&b| b == b':')?;
    std::str::from_utf8(&line[..colon])
        .ok()?
        .trim_start()
        .parse()
        .ok()
}

/// The first `n` whitespace-separated counts of a row (after its colon) into `row`; false when
/// there are fewer, or one is not a number (a row cut short counts nothing, as in the full
/// parse).
fn parse_counts(mut text: &[u8], n: usize, row: &mut Vec<u64>) -> bool {
    row.clear();
    while row.len() < n {
        let Some(s) = text.iter().position(|b| !b.is_ascii_whitespace()) else {
            return false;
        };
        text = &text[s..];
        let len = text
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(text.len());
        let mut v: u64 = 0;
        for &d in &text[..len] {
            if !d.is_ascii_digit() {
                return false;
            }
            let Some(x) = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
            else {
                return false;
            };
            v = x;
        }
        row.push(v);
        text = &text[len..];
    }
    true
}

/// Adjacent rows of one reading of `/proc/interrupts`: where the first starts, how many bytes
/// they take (the last one's newline included), and their IRQs in order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RowRun {
    offset: u64,
    len: usize,
    irqs: Vec<u32>,
}

/// Where one NIC's rows lie in `/proc/interrupts` ([`sum_rows_at`]): the next reading reads the
/// header and those rows only, a few hundred KB of the 22 MB a host with 512 CPUs and 4,000
/// vectors prints. The kernel prints every count ten wide, so the rows stay where they were
/// until a vector comes or goes before them, or a CPU goes on- or offline; a reading checks
/// that the header is the same, that each run starts a line and holds the same IRQs' rows, each
/// whole, and that the run ends where it did; where one does not, the counts of that reading
/// are not to be trusted and the whole text is read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSpans {
    header: Vec<u8>,
    cpus: Vec<u32>,
    runs: Vec<RowRun>,
}

impl RowSpans {
    /// The header as it was read (its newline included): the first bytes of the text.
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// The CPU of each column.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The byte ranges to read: for each run of rows, the offset of the newline before it and
    /// the length from there to the run's last newline (that first byte shows the run starts a
    /// line).
    pub fn ranges(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.runs.iter().map(|r| (r.offset - 1, r.len + 1))
    }

    /// Add the counts of run `i` into `sums` (indexed like [`RowSpans::cpus`]) from `bytes`, the
    /// range [`RowSpans::ranges`] gave for it, read now; `row` is scratch. False where the
    /// bytes are not those rows (a vector came or went before them, a row changed length): then
    /// `sums` may hold part of them, and the whole text is to be read again.
    pub fn add_run(&self, i: usize, bytes: &[u8], row: &mut Vec<u64>, sums: &mut [u64]) -> bool {
        let Some(run) = self.runs.get(i) else {
            return false;
        };
        if bytes.len() != run.len + 1 || bytes[0] != b'\n' || sums.len() != self.cpus.len() {
            return false;
        }
        let mut rest = &bytes[1..];
        for &irq in &run.irqs {
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                return false;
            };
            let line = &rest[..end];
            if row_label(line) != Some(irq) {
                return false;
            }
            let colon = line.iter().position(|&b| b == b':').unwrap_or(0);
            if !parse_counts(&line[colon + 1..], self.cpus.len(), row) {
                return false;
            }
            for (s, c) in sums.iter_mut().zip(row.iter()) {
                *s += c;
            }
            rest = &rest[end + 1..];
        }
        rest.is_empty()
    }
}

/// `/sys/kernel/irq/N/per_cpu_count`: one IRQ's count on every possible CPU, comma-separated, in
/// the order of the possible CPUs (`/sys/devices/system/cpu/possible`), each paired with its
/// CPU. `None` when the text is not that, or was cut: the kernel writes it into one page, and a
/// host with many CPUs and large counts fills the page before the last CPU (no final newline,
/// fewer counts than CPUs).
pub fn parse_per_cpu_count(text: &str, possible: &[u32]) -> Option<Vec<(u32, u64)>> {
    let body = text.strip_suffix('\n')?;
    let mut out = Vec::with_capacity(possible.len());
    let mut cpus = possible.iter();
    for f in body.split(',') {
        out.push((*cpus.next()?, f.trim().parse().ok()?));
    }
    (out.len() == possible.len()).then_some(out)
}

/// [`parse_per_cpu_count`] added into `sums` (one per possible CPU, in their order) without
/// building pairs: the observer sums a NIC's 64 files of 512 counts every interval. `None`
/// (with `sums` partly added to) when the text is not one count per CPU and a newline.
pub fn add_per_cpu_count(text: &str, sums: &mut [u64]) -> Option<()> {
    let body = text.strip_suffix('\n')?;
    let mut fields = body.split(',');
    for s in sums.iter_mut() {
        *s += fields.next()?.trim().parse::<u64>().ok()?;
    }
    fields.next().is_none().then_some(())
}

/// What a NIC vector serves, judged from its action name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqKind {
    /// Completion / queue vector: carries packet work (RX/TX/combined queue, completion EQ).
    Queue,
    /// Async / control / admin / link / mailbox vector: little or no packet work.
    Control,
    /// A queue or control vector of another interface that shares the PCI function (mlx4's two
    /// ports `p2p1-N`/`p2p2-N` on one function).
    OtherInterface,
    /// No known naming convention matched.
    Unknown,
    /// Allocated (listed in `msi_irqs`) but never requested by a driver: no action name in
    /// `/proc/interrupts`, no interrupt counted, no effective CPU (an `ethtool -L` that shrank the
    /// queues, vectors reserved for an RDMA driver that is not loaded). Listed, never placed.
    Unrequested,
}

fn has_word_number_suffix(s: &str) -> bool {
    // `...-3`, `..._3`, `....3`, `...3` after a letter keyword handled by callers.
    let t = s.trim_end_matches(|c: char| c.is_ascii_digit());
    t.len() < s.len() && (t.ends_with('-') || t.ends_with('_') || t.ends_with('.'))
}

/// Classify one action name of a vector of `iface`'s PCI function. `siblings` are the other
/// interfaces on the same function (whose per-queue vectors are not `iface`'s).
///
/// The rules follow the drivers' own naming conventions, not particular hosts:
/// - Mellanox: `mlx5_comp<N>[@pci:ADDR]`, `mlx4-comp-<N>[@pci:ADDR]` are completion EQs (queue);
///   `mlx5_async<N>`, `mlx5_{cmd,pages,async}_eq`, `mlx4-async` are control.
/// - Intel (igb, igc, ixgbe, i40e, ice, iavf, e1000e), Broadcom bnxt, hns3, nfp, vmxnet3, ena:
///   `<prefix><iface>-TxRx-<N>`, `-rx-<N>`, `-tx-<N>`, `-Tx-Rx-<N>`, `-rxtx-<N>`, `-fp-<N>` are
///   queues; a vector named just `<iface>`, or containing `misc`, `other`, `lsc`, `mgmnt`, `event`,
///   `aeq`, `adminq`, `mbx` is control.
/// - Per-queue vectors named `<iface>-<N>` (mlx4_en, sfc, tg3) are queues.
/// - virtio_net: `virtio<M>-input.<N>` / `virtio<M>-output.<N>` are queues, `virtio<M>-config`
///   and `-control` are control.
/// - Google gve: `gve-ntfy-blk<N>` queue, `gve-mgmnt` control.
/// - Chelsio cxgb4: `<iface>-Rx<N>` queue, `<iface>-FWeventq` and `<iface>` control.
/// - QLogic qede: `<iface>-fp-<N>` queue; qed's slowpath `sp-<N>-<bus>:<slot>.<pf>` control.
/// - Netronome nfp: `<iface>-rxtx-<N>` queue, `<iface>-lsc` / `<iface>-exn` control.
///
/// docs/doctor.md has the table, with the kernel source file each name comes from.
pub fn classify_action(action: &str, iface: &str, siblings: &[&str]) -> IrqKind {
    // Drop the `@pci:ADDR` / `@ADDR` suffix mlx drivers append.
    let name = action.split('@').next().unwrap_or(action).trim();
    let lower = name.to_ascii_lowercase();

    // A vector that names a sibling interface (and not ours) belongs to that interface.
    let names_iface = |n: &str| -> bool {
        !n.is_empty()
            && (lower == n.to_ascii_lowercase()
                || lower.starts_with(&format!("{}-", n.to_ascii_lowercase()))
                || lower.contains(&format!("-{}-", n.to_ascii_lowercase())))
    };
    let ours = names_iface(iface);
    if !ours && siblings.iter().any(|s| names_iface(s)) {
        return IrqKind::OtherInterface;
    }

    // Keywords are looked for in the name without the interface names, so that an interface
    // called `uplink0` or `rx-dmz` does not decide its own vectors' kind.
    let mut bare = lower.clone();
    for n in std::iter::once(iface).chain(siblings.iter().copied()) {
        if !n.is_empty() {
            bare = bare.replace(&n.to_ascii_lowercase(), "");
        }
    }
    let lower_full = lower;
    let lower = bare;

    const CONTROL: &[&str] = &[
        "async", "cmd_eq", "pages_eq", "ctrl", "control", "config", "misc", "other", "lsc",
        "mgmnt", "mgmt", "adminq", "admin", "aeq", "mbx", "mailbox", "fwevt", "fw_evt", "event",
        "link", "hwc", "exn",
    ];
    if CONTROL.iter().any(|k| lower.contains(k)) {
        return IrqKind::Control;
    }
    // qed (qede's core) names its slowpath vector `sp-<hwfn>-<bus>:<slot>.<pf>`
    if lower
        .strip_prefix("sp-")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    {
        return IrqKind::Control;
    }

    const QUEUE: &[&str] = &[
        "comp", "txrx", "tx-rx", "rxtx", "rx-tx", "-rx-", "-tx-", "-rx", "-tx", "input.",
        "output.", "-fp-", "ntfy", "-queue", "-q", "_q", "_rx", "_tx", "rx_", "tx_",
    ];
    if QUEUE.iter().any(|k| lower.contains(k)) {
        return IrqKind::Queue;
    }

    if ours {
        if lower_full == iface.to_ascii_lowercase() {
            // igb/ixgbe/e1000e name the "other causes" (link) vector after the interface.
            return IrqKind::Control;
        }
        if has_word_number_suffix(&lower_full) {
            // `p2p1-5` (mlx4_en), `eth0-0` (sfc, tg3).
            return IrqKind::Queue;
        }
    }
    IrqKind::Unknown
}

/// Classify a vector by all its action names (a shared line has several): a queue name wins over
/// control, control over unknown; a vector only other interfaces claim is theirs.
pub fn classify_actions(actions: &[String], iface: &str, siblings: &[&str]) -> IrqKind {
    let kinds: Vec<IrqKind> = actions
        .iter()
        .map(|a| classify_action(a, iface, siblings))
        .collect();
    for k in [IrqKind::Queue, IrqKind::Control, IrqKind::OtherInterface] {
        if kinds.contains(&k) {
            return k;
        }
    }
    IrqKind::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(host: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hosts")
            .join(host)
            .join("proc/interrupts");
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn parses_a_modern_x86_table() {
        let t = Interrupts::parse(&fixture("crow-9900x-cx5-x4")).unwrap();
        assert_eq!(t.cpus, (0..12).collect::<Vec<_>>());
        let r = t.irq(98).unwrap();
        assert_eq!(r.chip.as_deref(), Some("IR-PCI-MSIX-0000:01:00.0"));
        assert_eq!(r.hwirq.as_deref(), Some("0"));
        assert_eq!(r.flow.as_deref(), Some("edge"));
        assert_eq!(r.actions, vec!["mlx5_async0@pci:0000:01:00.0"]);
        assert_eq!(t.count_on(r, 10), Some(23274));
        assert_eq!(t.count_on(r, 9), Some(0));
        let r = t.irq(114).unwrap();
        assert_eq!(t.count_on(r, 8), Some(1024467));
        assert_eq!(t.count_on(r, 6), Some(10));
        assert_eq!(r.total(), 1024477);
        // two actions on one line
        assert_eq!(t.irq(56).unwrap().actions, vec!["PCIe PME", "aerdrv"]);
        // named rows
        let loc = t.named("LOC").unwrap();
        assert_eq!(loc.description.as_deref(), Some("Local timer interrupts"));
        assert_eq!(t.count_on(loc, 1), Some(39641880));
        let err = t.named("ERR").unwrap();
        assert_eq!(err.counts, vec![0]);
        assert_eq!(t.count_on(err, 0), None);
        assert_eq!(t.per_cpu(err).count(), 0);
        assert!(t.named("RES").is_some() && t.named("NMI").is_some());
        // per-CPU sums over a NIC's vectors
        let sums = t.sum_per_cpu(&[109, 114, 119]);
        assert_eq!(sums[8], 395218 + 1024467 + 146064);
        assert_eq!(sums[6], 10);
        let comp = t.irqs_where(|a| a.starts_with("mlx5_comp") && a.ends_with("0000:01:00.0"));
        assert_eq!(comp.len(), 12);
    }

    #[test]
    fn parses_an_old_kernel_table() {
        let t = Interrupts::parse(&fixture("sl-w9-x3650-cx3")).unwrap();
        assert_eq!(t.cpus.len(), 16);
        let r = t.irq(108).unwrap();
        assert_eq!(r.chip.as_deref(), Some("PCI-MSI"));
        assert_eq!(r.hwirq, None);
        assert_eq!(r.flow.as_deref(), Some("edge"));
        assert_eq!(r.actions, vec!["mlx4-async@pci:0000:20:00.0"]);
        let r = t.irq(111).unwrap();
        assert_eq!(t.count_on(r, 14), Some(1313334604));
        assert_eq!(r.actions, vec!["p2p1-2"]);
        assert_eq!(t.irq(16).unwrap().actions, vec!["ehci_hcd:usb1"]);
    }

    #[test]
    fn header_names_the_cpus_of_columns_and_other_shapes_parse() {
        let text = "           CPU0       CPU2       CPU3\n\
             \x20 11:        10         20         30     GICv3  30 Level     arch_timer\n\
             \x20 28:          0          0          5 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config\n\
             IPI0:         1          2          3       Rescheduling interrupts\n\
             \x20 40:          1          2          3  dummy\n\
             Err:          0\n";
        let t = Interrupts::parse(text).unwrap();
        assert_eq!(t.cpus, vec![0, 2, 3]);
        let r = t.irq(11).unwrap();
        assert_eq!(r.chip.as_deref(), Some("GICv3"));
        assert_eq!(r.hwirq.as_deref(), Some("30"));
        assert_eq!(r.flow.as_deref(), Some("Level"));
        assert_eq!(r.actions, vec!["arch_timer"]);
        assert_eq!(t.count_on(r, 2), Some(20));
        assert_eq!(t.count_on(r, 1), None);
        assert_eq!(t.irq(28).unwrap().actions, vec!["virtio0-config"]);
        assert_eq!(
            t.irq(28).unwrap().chip.as_deref(),
            Some("PCI-MSIX-0000:00:01.0")
        );
        assert_eq!(t.named("IPI0").unwrap().counts, vec![1, 2, 3]);
        assert_eq!(t.irq(40).unwrap().actions, vec!["dummy"]);
        assert_eq!(t.irq(40).unwrap().chip, None);
        assert_eq!(t.named("Err").unwrap().total(), 0);
    }

    #[test]
    fn live_table_parses_when_present() {
        match std::fs::read_to_string("/proc/interrupts") {
            Ok(text) => {
                let t = Interrupts::parse(&text).unwrap();
                assert!(!t.cpus.is_empty());
                assert!(t.rows.iter().any(|r| r.irq().is_some()));
            }
            Err(e) => eprintln!("SKIP: live /proc/interrupts unreadable because {e}"),
        }
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(Interrupts::parse(""), Err(InterruptsError::NoHeader));
        assert!(matches!(
            Interrupts::parse("CPU0 foo\n"),
            Err(InterruptsError::BadHeader(_))
        ));
        assert!(matches!(
            Interrupts::parse("CPU0\n 1 2 3\n"),
            Err(InterruptsError::BadRow { line: 2, .. })
        ));
        assert!(matches!(
            Interrupts::parse("CPU0\n 1: x\n"),
            Err(InterruptsError::BadRow { .. })
        ));
    }

    /// `/proc/interrupts` lines as each driver's `request_irq` names its vectors (the formats
    /// of the kernel sources listed in docs/doctor.md), parsed and classified: every queue
    /// vector a queue, every control vector control, on a 4-CPU header.
    #[test]
    fn every_drivers_vectors_as_proc_interrupts_shows_them() {
        use IrqKind::*;
        struct Case {
            driver: &'static str,
            iface: &'static str,
            rows: &'static [(&'static str, IrqKind)],
        }
        let cases = [
            Case {
                driver: "mlx5_core",
                iface: "enp1s0f0np0",
                rows: &[
                    ("mlx5_async0@pci:0000:01:00.0", Control),
                    ("mlx5_comp0@pci:0000:01:00.0", Queue),
                    ("mlx5_comp11@pci:0000:01:00.0", Queue),
                ],
            },
            Case {
                driver: "mlx4_core/mlx4_en",
                iface: "p2p1",
                rows: &[
                    ("mlx4-async@pci:0000:20:00.0", Control),
                    ("mlx4-comp-0@pci:0000:20:00.0", Queue),
                    ("p2p1-5", Queue),
                ],
            },
            Case {
                driver: "cxgb4",
                iface: "ens1f4",
                rows: &[
                    ("ens1f4", Control),
                    ("ens1f4-FWeventq", Control),
                    ("ens1f4-Rx0", Queue),
                    ("ens1f4-Rx7", Queue),
                ],
            },
            Case {
                driver: "ice",
                iface: "ens1f0",
                rows: &[
                    ("ice-0000:81:00.0:misc", Control),
                    ("ice-ens1f0-TxRx-0", Queue),
                    ("ice-ens1f0-rx-3", Queue),
                    ("ice-ens1f0-tx-3", Queue),
                ],
            },
            Case {
                driver: "i40e",
                iface: "ens3f0",
                rows: &[
                    ("i40e-0000:3b:00.0:misc", Control),
                    ("i40e-ens3f0-TxRx-0", Queue),
                    ("i40e-ens3f0-TxRx-15", Queue),
                ],
            },
            Case {
                driver: "ixgbe",
                iface: "eth2",
                rows: &[
                    ("eth2", Control),
                    ("eth2-TxRx-0", Queue),
                    ("eth2-rx-1", Queue),
                    ("eth2-tx-1", Queue),
                ],
            },
            Case {
                driver: "bnxt_en",
                iface: "ens2f0np0",
                rows: &[
                    ("ens2f0np0-TxRx-0", Queue),
                    ("ens2f0np0-rx-1", Queue),
                    ("ens2f0np0-tx-2", Queue),
                ],
            },
            Case {
                driver: "ena",
                iface: "ens5",
                rows: &[
                    ("ena-mgmnt@pci:0000:00:05.0", Control),
                    ("ens5-Tx-Rx-0", Queue),
                    ("ens5-Tx-Rx-7", Queue),
                ],
            },
            Case {
                driver: "gve",
                iface: "ens4",
                rows: &[
                    ("gve-mgmnt@pci:0000:00:04.0", Control),
                    ("gve-ntfy-blk0@pci:0000:00:04.0", Queue),
                    ("gve-ntfy-blk15@pci:0000:00:04.0", Queue),
                ],
            },
            Case {
                driver: "virtio_net",
                iface: "eth0",
                rows: &[
                    ("virtio1-config", Control),
                    ("virtio1-input.0", Queue),
                    ("virtio1-output.0", Queue),
                    ("virtio1-control", Control),
                ],
            },
            Case {
                driver: "qede",
                iface: "ens2f0",
                rows: &[
                    ("sp-0-04:00.00", Control),
                    ("ens2f0-fp-0", Queue),
                    ("ens2f0-fp-7", Queue),
                ],
            },
            Case {
                driver: "sfc",
                iface: "ens1f0np0",
                rows: &[("ens1f0np0-0", Queue), ("ens1f0np0-7", Queue)],
            },
            Case {
                driver: "nfp",
                iface: "enp5s0np0",
                rows: &[
                    ("enp5s0np0-lsc", Control),
                    ("enp5s0np0-exn", Control),
                    ("enp5s0np0-rxtx-0", Queue),
                    ("enp5s0np0-rxtx-7", Queue),
                ],
            },
        ];
        for case in &cases {
            let mut text = String::from(
                "           CPU0       CPU1       CPU2       CPU3
",
            );
            for (k, (name, _)) in case.rows.iter().enumerate() {
                text.push_str(&format!(
                    " {:>3}:          0       1234          0          0  IR-PCI-MSIX-0000:81:00.0  {k}-edge      {name}\n",
                    100 + k
                ));
            }
            let t = Interrupts::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", case.driver));
            for (k, (name, want)) in case.rows.iter().enumerate() {
                let row = t.irq(100 + k as u32).unwrap();
                assert_eq!(row.actions, vec![name.to_string()], "{}", case.driver);
                assert_eq!(t.count_on(row, 1), Some(1234), "{}", case.driver);
                assert_eq!(
                    classify_actions(&row.actions, case.iface, &[]),
                    *want,
                    "{}: {name}",
                    case.driver
                );
            }
        }
    }

    #[test]
    fn classifies_by_driver_naming_conventions() {
        use IrqKind::*;
        let c = |a: &str, i: &str| classify_action(a, i, &[]);
        // Mellanox
        assert_eq!(c("mlx5_comp3@pci:0000:01:00.0", "enp1s0f0np0"), Queue);
        assert_eq!(c("mlx5_async0@pci:0000:01:00.0", "enp1s0f0np0"), Control);
        assert_eq!(c("mlx5_comp12", "eth2"), Queue);
        assert_eq!(c("mlx5_pages_eq", "eth2"), Control);
        assert_eq!(c("mlx5_cmd_eq", "eth2"), Control);
        assert_eq!(c("mlx4-comp-0@pci:0000:20:00.0", "p2p1"), Queue);
        assert_eq!(c("mlx4-async@pci:0000:20:00.0", "p2p1"), Control);
        assert_eq!(c("p2p1-13", "p2p1"), Queue);
        // Intel / Broadcom / others
        assert_eq!(c("eth0-TxRx-3", "eth0"), Queue);
        assert_eq!(c("ice-ens1f0-TxRx-7", "ens1f0"), Queue);
        assert_eq!(c("iavf-ens1f0v0-TxRx-0", "ens1f0v0"), Queue);
        assert_eq!(c("ice-0000:3b:00.0:misc", "ens1f0"), Control);
        assert_eq!(c("i40e-0000:3b:00.0:misc", "ens1f0"), Control);
        assert_eq!(c("eth0", "eth0"), Control);
        assert_eq!(c("eth0-rx-0", "eth0"), Queue);
        assert_eq!(c("eth0-tx-0", "eth0"), Queue);
        assert_eq!(c("enp5s0-Tx-Rx-2", "enp5s0"), Queue);
        assert_eq!(c("ena-mgmnt@pci:0000:00:05.0", "ens5"), Control);
        assert_eq!(c("eth1-rxtx-0", "eth1"), Queue);
        assert_eq!(c("eth1-event-0", "eth1"), Control);
        assert_eq!(c("ens2f0-fp-4", "ens2f0"), Queue);
        assert_eq!(c("eth0-0", "eth0"), Queue);
        // virtio / gve
        assert_eq!(c("virtio2-input.0", "eth0"), Queue);
        assert_eq!(c("virtio2-output.3", "eth0"), Queue);
        assert_eq!(c("virtio2-config", "eth0"), Control);
        assert_eq!(c("virtio2-control", "eth0"), Control);
        assert_eq!(c("gve-ntfy-blk3@pci:0000:00:04.0", "ens4"), Queue);
        assert_eq!(c("gve-mgmnt@pci:0000:00:04.0", "ens4"), Control);
        // the interface's own name never decides the kind
        assert_eq!(c("uplink0-TxRx-3", "uplink0"), Queue);
        assert_eq!(c("uplink0", "uplink0"), Control);
        assert_eq!(c("rxq-eth-5", "rxq-eth"), Queue);
        assert_eq!(c("othernet-rx-0", "othernet"), Queue);
        // Azure MANA
        assert_eq!(c("mana_q3@pci:7870:00:00.0", "eth1"), Queue);
        assert_eq!(c("mana_hwc@pci:7870:00:00.0", "eth1"), Control);
        // unknown names stay unknown rather than guessed
        assert_eq!(c("nvme0q7", "eth0"), Unknown);
        // a sibling port's vectors on a shared function
        assert_eq!(classify_action("p2p2-3", "p2p1", &["p2p2"]), OtherInterface);
        assert_eq!(classify_action("p2p1-3", "p2p1", &["p2p2"]), Queue);
        assert_eq!(classify_action("mlx4-comp-1", "p2p1", &["p2p2"]), Queue);
        // a shared line: queue wins
        assert_eq!(
            classify_actions(&["eth0".into(), "eth0-TxRx-0".into()], "eth0", &[]),
            Queue
        );
        assert_eq!(classify_actions(&[], "eth0", &[]), Unknown);
    }

    #[test]
    fn sum_rows_agrees_with_the_full_parse_and_skips_other_rows() {
        let text = "           CPU0       CPU1       CPU3\n\
          0:         12          0          0   IO-APIC   2-edge      timer\n\
         40:          1        100          7   PCI-MSI 1-edge eth0-rx-0\n\
         41:          3          0          0   PCI-MSI 2-edge eth0-tx-0\n\
         50:          0          0          9   PCI-MSI 3-edge nvme0q1\n\
        NMI:         19         20         21   Non-maskable interrupts\n\
        ERR:          0\n";
        let full = Interrupts::parse(text).unwrap();
        let (cpus, sums) = sum_rows(text, &[40, 41, 99]).unwrap();
        assert_eq!(cpus, vec![0, 1, 3]);
        assert_eq!(sums, full.sum_per_cpu(&[40, 41, 99]));
        assert_eq!(sums, vec![4, 100, 7]);
        assert_eq!(sum_rows(text, &[]).unwrap().1, vec![0, 0, 0]);
        assert_eq!(sum_rows("", &[40]), Err(InterruptsError::NoHeader));
        assert!(matches!(
            sum_rows("CPU0 x\n", &[40]),
            Err(InterruptsError::BadHeader(_))
        ));
        // a row cut short (fewer counts than columns) counts nothing, as in the full parse
        let cut = "CPU0 CPU1\n 40: 5\n 41: 1 2 PCI-MSI eth0\n";
        assert_eq!(sum_rows(cut, &[40, 41]).unwrap().1, vec![1, 2]);
        assert_eq!(
            Interrupts::parse(cut).unwrap().sum_per_cpu(&[40, 41]),
            vec![1, 2]
        );
    }

    /// Rows as the kernel prints them: every count ten wide.
    fn kernel_text(rows: &[(u32, [u32; 3], &str)]) -> String {
        let mut t = String::from("           CPU0       CPU1       CPU3\n");
        for (irq, c, name) in rows {
            t.push_str(&format!(
                "{irq:>4}: {:>10} {:>10} {:>10}  PCI-MSI {name}\n",
                c[0], c[1], c[2]
            ));
        }
        t.push_str(" NMI:         19         20         21   Non-maskable interrupts\n");
        t
    }

    /// Read `spans`' ranges of `text` as the observer reads them from the file: the sums, or
    /// `None` where a run is not what it was.
    fn read_spans(spans: &RowSpans, text: &str) -> Option<Vec<u64>> {
        let b = text.as_bytes();
        if !b.starts_with(spans.header()) {
            return None;
        }
        let mut sums = vec![0; spans.cpus().len()];
        let mut row = Vec::new();
        for (i, (off, len)) in spans.ranges().enumerate() {
            let off = off as usize;
            let bytes = &b[off.min(b.len())..(off + len).min(b.len())];
            if !spans.add_run(i, bytes, &mut row, &mut sums) {
                return None;
            }
        }
        Some(sums)
    }

    #[test]
    fn the_nics_rows_are_found_again_where_they_were_and_only_there() {
        let rows = [
            (0, [12, 0, 0], "2-edge timer"),
            (40, [1, 100, 7], "1-edge eth0-rx-0"),
            (41, [3, 0, 0], "2-edge eth0-tx-0"),
            (50, [0, 0, 9], "3-edge nvme0q1"),
            (60, [5, 5, 5], "4-edge eth0-rx-1"),
        ];
        let text = kernel_text(&rows);
        let irqs = [40, 41, 60];
        let (cpus, sums, spans) = sum_rows_at(&text, &irqs).unwrap();
        assert_eq!(
            (cpus.clone(), sums.clone()),
            sum_rows(&text, &irqs).unwrap()
        );
        assert_eq!(sums, Interrupts::parse(&text).unwrap().sum_per_cpu(&irqs));
        let spans = spans.expect("every row found whole");
        assert_eq!(spans.cpus(), cpus.as_slice());
        assert!(text.starts_with(std::str::from_utf8(spans.header()).unwrap()));
        // 40 and 41 are adjacent: one range; 60 another; each starts at a newline
        let ranges: Vec<_> = spans.ranges().collect();
        assert_eq!(ranges.len(), 2);
        for &(off, len) in &ranges {
            let r = &text[off as usize..off as usize + len];
            assert!(r.starts_with('\n') && r.ends_with('\n'), "{r:?}");
        }
        assert_eq!(read_spans(&spans, &text), Some(sums));
        // the counts moved on (the same widths): the same rows, the new counts
        let mut later = rows;
        later[1].1 = [2, 4_000_000_000, 8];
        later[4].1 = [6, 5, 1_234_567];
        let text2 = kernel_text(&later);
        assert_eq!(text2.len(), text.len());
        assert_eq!(
            read_spans(&spans, &text2),
            Some(sum_rows(&text2, &irqs).unwrap().1)
        );
        // a vector came before them, one went, a name grew, a CPU went offline: not trusted
        let mut more = rows.to_vec();
        more.insert(1, (33, [1, 1, 1], "9-edge xhci"));
        let mut fewer = rows.to_vec();
        fewer.remove(0);
        let mut longer = rows;
        longer[1].2 = "1-edge eth0-rx-0-renamed";
        for (what, t) in [
            ("a vector before", kernel_text(&more)),
            ("a vector gone", kernel_text(&fewer)),
            ("a longer row", kernel_text(&longer)),
            ("another header", text.replacen("CPU3", "CPU2", 1)),
            ("the rows swapped", text.replacen("  40:", "  41:", 1)),
            ("cut short", text[..text.len() - 80].to_string()),
        ] {
            assert_eq!(read_spans(&spans, &t), None, "{what}");
        }
        // no spans where a row is missing, cut, or twice there
        assert!(sum_rows_at(&text, &[40, 99]).unwrap().2.is_none());
        let cut = "CPU0 CPU1\n 40: 5\n 41: 1 2 PCI-MSI eth0\n";
        assert!(sum_rows_at(cut, &[40, 41]).unwrap().2.is_none());
        assert!(sum_rows_at(cut, &[41]).unwrap().2.is_some());
        let twice = "CPU0 CPU1\n 41: 1 2 a\n 41: 1 2 b\n";
        assert!(sum_rows_at(twice, &[41]).unwrap().2.is_none());
        let no_newline = "CPU0 CPU1\n 41: 1 2 a";
        assert_eq!(sum_rows(no_newline, &[41]).unwrap().1, vec![1, 2]);
        assert!(sum_rows_at(no_newline, &[41]).unwrap().2.is_none());
    }

    #[test]
    fn per_cpu_count_pairs_counts_with_possible_cpus_and_refuses_a_cut_page() {
        assert_eq!(
            parse_per_cpu_count("5,0,7\n", &[0, 1, 2]),
            Some(vec![(0, 5), (1, 0), (2, 7)])
        );
        // possible CPUs need not be contiguous
        assert_eq!(
            parse_per_cpu_count("1,2\n", &[0, 4]),
            Some(vec![(0, 1), (4, 2)])
        );
        // the page filled before the last CPU: no newline, too few counts
        assert_eq!(parse_per_cpu_count("5,0,7", &[0, 1, 2]), None);
        assert_eq!(parse_per_cpu_count("5,0\n", &[0, 1, 2]), None);
        assert_eq!(parse_per_cpu_count("5,0,7,8\n", &[0, 1, 2]), None);
        assert_eq!(parse_per_cpu_count("5,x,7\n", &[0, 1, 2]), None);
        let mut sums = [1, 1, 1];
        assert_eq!(add_per_cpu_count("5,0,7\n", &mut sums), Some(()));
        assert_eq!(sums, [6, 1, 8]);
        for bad in ["5,0,7", "5,0\n", "5,0,7,8\n", "5,x,7\n"] {
            assert_eq!(add_per_cpu_count(bad, &mut [0; 3]), None, "{bad:?}");
        }
    }
}
