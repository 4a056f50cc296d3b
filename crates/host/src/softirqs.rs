//! `/proc/softirqs`: how many times each softirq ran on each CPU.
//!
//! The first line names the CPU columns (`CPU0 CPU1 ...`, possible CPUs); each further line is
//! `NAME: count count ...`. Row names vary by kernel (`BLOCK_IOPOLL` on 2.6/3.x, `IRQ_POLL`
//! later), so every row is kept; [`NET_RX`] and [`NET_TX`] are the ones network tests watch.

use std::collections::BTreeMap;

pub const NET_RX: &str = "NET_RX";
pub const NET_TX: &str = "NET_TX";

/// A line of `/proc/softirqs` that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SoftirqsError {
    #[error("/proc/softirqs line {line}: {reason}: {text:?}")]
    BadLine {
        line: usize,
        reason: &'static str,
        text: String,
    },
    #[error("/proc/softirqs: no CPU header line")]
    NoHeader,
}

/// The table of `/proc/softirqs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Softirqs {
    /// CPU numbers of the columns, in order.
    pub cpus: Vec<u32>,
    /// Rows in file order: name (without the colon) and one count per column.
    pub rows: Vec<(String, Vec<u64>)>,
}

impl Softirqs {
    /// The counts of one row (`NET_RX`), in column order.
    pub fn row(&self, name: &str) -> Option<&[u64]> {
        self.rows
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// The counts of one row by CPU number; empty when the row is absent.
    pub fn per_cpu(&self, name: &str) -> BTreeMap<u32, u64> {
        match self.row(name) {
            Some(v) => self.cpus.iter().copied().zip(v.iter().copied()).collect(),
            None => BTreeMap::new(),
        }
    }
}

/// Parse the text of `/proc/softirqs`.
pub fn parse(text: &str) -> Result<Softirqs, SoftirqsError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (hi, header) = lines.next().ok_or(SoftirqsError::NoHeader)?;
    let mut out = Softirqs {
        cpus: crate::interrupts::cpu_columns(header).map_err(|_| SoftirqsError::BadLine {
            line: hi + 1,
            reason: "header column is not CPUn",
            text: header.to_string(),
        })?,
        ..Softirqs::default()
    };
    if out.cpus.is_empty() {
        return Err(SoftirqsError::NoHeader);
    }
    for (i, line) in lines {
        let bad = |reason| SoftirqsError::BadLine {
            line: i + 1,
            reason,
            text: line.to_string(),
        };
        let (name, counts) = line.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("empty row name"));
        }
        let counts = counts
            .split_whitespace()
            .map(|c| c.parse::<u64>().map_err(|_| bad("bad counter")))
            .collect::<Result<Vec<_>, _>>()?;
        if counts.len() != out.cpus.len() {
            return Err(bad("count of columns differs from the header"));
        }
        out.rows.push((name.to_string(), counts));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "                    CPU0       CPU1       \n\
          HI:          0          0\n\
       TIMER:      12614      12969\n\
      NET_TX:          4          0\n\
      NET_RX:     308377     260610\n\
BLOCK_IOPOLL:          0          0\n";

    #[test]
    fn parses_every_row() {
        let s = parse(SAMPLE).unwrap();
        assert_eq!(s.cpus, vec![0, 1]);
        assert_eq!(s.rows.len(), 5);
        assert_eq!(s.row(NET_RX), Some(&[308377, 260610][..]));
        assert_eq!(s.per_cpu(NET_TX)[&0], 4);
        assert_eq!(s.row("BLOCK_IOPOLL"), Some(&[0, 0][..]));
        assert!(s.row("IRQ_POLL").is_none());
        assert!(s.per_cpu("IRQ_POLL").is_empty());
    }

    #[test]
    fn rejects_broken_tables() {
        assert_eq!(parse("").unwrap_err(), SoftirqsError::NoHeader);
        assert!(parse("CPU0 CPUx\n").is_err());
        let e = parse("CPU0 CPU1\nNET_RX: 1\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(parse("CPU0\nNET_RX 1\n").is_err());
        assert!(parse("CPU0\nNET_RX: -1\n").is_err());
    }
}
