//! Figures for people, one way everywhere: bit rates, link speeds and byte counts in the unit
//! that fits, and CPUs' worth of time. (iperf3's own `%g`-style columns, which strict output must match byte for byte,
//! are `wirespeed_report::units`; these are wirespeed's words around them.)
//!
//! Also the one reading of the figures a person gives every command: `--rate` ([`Rate`]: a bare
//! number is Mbit/s in every command) and `--rtt` ([`parse_rtt_ms`], [`DEFAULT_RTT_MS`],
//! [`MAX_RTT_MS`]). iperf3's own `-b` keeps iperf3's reading (bit/s; `wirespeed_report::sizes`).

use std::fmt;

/// Why a rate or round-trip time a person gave was refused; always names the flag and the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("{flag} '{text}': {RATE_WHY}")]
    Rate { flag: String, text: String },
    #[error("{flag} '{text}': {RTT_WHY}")]
    Rtt { flag: String, text: String },
}

const RATE_WHY: &str = "expected a rate such as 50G, 2.5G, 400M or 40000 (a bare number is Mbit/s), from 1 Mbit/s to 10 Tbit/s";
const RTT_WHY: &str = "expected a round-trip time in milliseconds, above 0 and at most 10000";

impl UnitError {
    /// What was expected, without the flag and the text (for a parser whose caller names them).
    pub fn why(&self) -> &'static str {
        match self {
            UnitError::Rate { .. } => RATE_WHY,
            UnitError::Rtt { .. } => RTT_WHY,
        }
    }
}

/// A rate a person names (`--rate` of `doctor`, `tune`, `model`, `lab up` and the client's cost
/// projection): whole bit/s, from [`Rate::MIN_BPS`] to [`Rate::MAX_BPS`]. Its `Display` is the
/// one way every command says the rate it understood (`40 Gbit/s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    /// 1 Mbit/s: the least rate a command sizes for or shapes to.
    pub const MIN_BPS: u64 = 1_000_000;
    /// 10 Tbit/s.
    pub const MAX_BPS: u64 = 10_000_000_000_000;

    /// A rate in bit/s, `None` outside the bounds.
    pub fn from_bps(bps: u64) -> Option<Rate> {
        (Self::MIN_BPS..=Self::MAX_BPS)
            .contains(&bps)
            .then_some(Rate(bps))
    }

    /// A rate in Mbit/s (a link's `speed`), `None` outside the bounds.
    pub fn from_mbps(mbps: u64) -> Option<Rate> {
        Self::from_bps(mbps.checked_mul(1_000_000)?)
    }

    /// Read a rate: a decimal number with an optional `K`, `M`, `G` or `T` (powers of 1000,
    /// either case), optionally followed by `bit`, `bit/s`, `bps` or `b/s`: `50G`, `2.5g`,
    /// `400Gbit/s`, `25000M`. A bare number is Mbit/s (`40000` is 40 Gbit/s) in every command;
    /// a unit without a prefix is bit/s (`2000000bit/s`). `flag` names the option in the error.
    pub fn parse(text: &str, flag: &str) -> Result<Rate, UnitError> {
        let bad = || UnitError::Rate {
            flag: flag.to_string(),
            text: text.to_string(),
        };
        let lower = text.trim().to_ascii_lowercase();
        let (body, unit) = ["bit/s", "bps", "b/s", "bit"]
            .iter()
            .find_map(|u| lower.strip_suffix(u).map(|b| (b, true)))
            .unwrap_or((lower.as_str(), false));
        let (num, mult) = match body.char_indices().last() {
            Some((i, 'k')) => (&body[..i], 1e3),
            Some((i, 'm')) => (&body[..i], 1e6),
            Some((i, 'g')) => (&body[..i], 1e9),
            Some((i, 't')) => (&body[..i], 1e12),
            _ if unit => (body, 1.0),
            _ => (body, 1e6),
        };
        // plain decimal numbers only: digits and at most one point
        let digits = num.chars().filter(char::is_ascii_digit).count();
        let points = num.chars().filter(|&c| c == '.').count();
        if digits == 0 || points > 1 || digits + points != num.len() {
            return Err(bad());
        }
        let v: f64 = num.parse().map_err(|_| bad())?;
        let bps = (v * mult).round();
        if !(bps >= Self::MIN_BPS as f64 && bps <= Self::MAX_BPS as f64) {
            return Err(bad());
        }
        Ok(Rate(bps as u64))
    }

    /// bit/s.
    pub fn bps(self) -> u64 {
        self.0
    }

    /// Mbit/s, rounded to the nearest (at least 1): the unit the kernel gives link speeds in.
    pub fn mbps(self) -> u64 {
        ((self.0 + 500_000) / 1_000_000).max(1)
    }

    /// The rate and where it came from, the same words in every command: `40 Gbit/s (--rate)`,
    /// `100 Gbit/s (link speed)`.
    pub fn from_source(self, source: &str) -> String {
        format!("{self} ({source})")
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&speed(self.0))
    }
}

/// The round-trip time assumed when a command is given none (`doctor`, `tune`), ms.
pub const DEFAULT_RTT_MS: f64 = 10.0;
/// The longest round-trip time a command accepts, ms (a lab's added delay has the same cap).
pub const MAX_RTT_MS: f64 = 10_000.0;

/// Read `--rtt MS`: a number of milliseconds above 0 and at most [`MAX_RTT_MS`].
pub fn parse_rtt_ms(text: &str, flag: &str) -> Result<f64, UnitError> {
    let bad = || UnitError::Rtt {
        flag: flag.to_string(),
        text: text.to_string(),
    };
    let v: f64 = text.trim().parse().map_err(|_| bad())?;
    check_rtt_ms(v, flag).map_err(|_| bad())
}

/// A round-trip time a library is handed: the bounds of [`parse_rtt_ms`].
pub fn check_rtt_ms(ms: f64, flag: &str) -> Result<f64, UnitError> {
    if ms.is_finite() && ms > 0.0 && ms <= MAX_RTT_MS {
        Ok(ms)
    } else {
        Err(UnitError::Rtt {
            flag: flag.to_string(),
            text: ms.to_string(),
        })
    }
}

/// A bit rate: `8.94 Gbit/s`, `812.4 Mbit/s`, `820 kbit/s`, `12 bit/s`; `–` when not finite.
pub fn rate(bps: f64) -> String {
    if !bps.is_finite() {
        return "–".into();
    }
    let a = bps.abs();
    if a >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if a >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if a >= 1e3 {
        format!("{:.0} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// A nominal rate (a link speed, a rate a person named): `100 Gbit/s`, `2.5 Gbit/s`,
/// `31.5 Gbit/s`, `100 Mbit/s`, `500 kbit/s` — whole numbers where the figure is one, else one
/// decimal. (A measured rate is [`rate`].)
pub fn speed(bps: u64) -> String {
    let (v, unit) = if bps >= 1_000_000_000 {
        (bps as f64 / 1e9, "Gbit/s")
    } else if bps >= 1_000_000 {
        (bps as f64 / 1e6, "Mbit/s")
    } else if bps >= 1_000 {
        (bps as f64 / 1e3, "kbit/s")
    } else {
        (bps as f64, "bit/s")
    };
    if (v - v.round()).abs() < 0.05 {
        format!("{} {unit}", v.round() as u64)
    } else {
        format!("{v:.1} {unit}")
    }
}

/// A link speed as the kernel gives it (Mbit/s): [`speed`].
pub fn speed_mbps(mbps: u64) -> String {
    speed(mbps.saturating_mul(1_000_000))
}

/// A byte size (buffers, bandwidth-delay products), in powers of 1024: `64 MiB`, `1.5 MiB`,
/// `47.7 MiB`, `12 KiB`, `512 B`.
pub fn bytes(b: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    let (unit, name) = match b {
        b if b >= GIB => (GIB, "GiB"),
        b if b >= MIB => (MIB, "MiB"),
        b if b >= KIB => (KIB, "KiB"),
        _ => return format!("{b} B"),
    };
    if b % unit == 0 {
        format!("{} {name}", b / unit)
    } else {
        format!("{:.1} {name}", b as f64 / unit as f64)
    }
}

/// The exact count and, from 1 KiB on, the size as people read it: `8388608 bytes (8 MiB)`,
/// `512 bytes` — for a value a person copies into a command.
pub fn bytes_exact(b: u64) -> String {
    if b >= 1 << 10 {
        format!("{b} bytes ({})", bytes(b))
    } else {
        format!("{b} bytes")
    }
}

/// CPUs' worth of time (a cgroup's allowance): `0.5 CPU`, `1 CPU`, `4 CPUs`, `1.25 CPUs` (at
/// most two decimals).
pub fn cpus(v: f64) -> String {
    let n = format!("{v:.2}");
    let n = n.trim_end_matches('0').trim_end_matches('.');
    format!("{n} CPU{}", if v > 1.0 { "s" } else { "" })
}

/// A CPU list with its noun, one way everywhere: `CPU 3`, `CPUs 2-3`, `CPUs 0,2`, `no CPU` —
/// `list` is the kernel's list text (or anything that displays as one: a [`crate::CpuSet`]);
/// text that is not a list keeps the plural (`CPUs ?`).
pub fn cpu_list(list: impl fmt::Display) -> String {
    let text = list.to_string();
    match crate::CpuSet::parse_list(text.trim()) {
        Ok(set) => set.words(),
        Err(_) => format!("CPUs {text}"),
    }
}

/// A count of CPUs: `1 CPU`, `3 CPUs`, `0 CPUs`.
pub fn cpu_count(n: usize) -> String {
    count(n, "CPU")
}

/// A count with its noun, plural but for one: `1 queue IRQ`, `4 queue IRQs`, `0 queue IRQs`
/// (`noun` takes an `s` for its plural).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_takes_the_plural_but_for_one() {
        assert_eq!(count(1, "queue IRQ"), "1 queue IRQ");
        assert_eq!(count(4, "queue IRQ"), "4 queue IRQs");
        assert_eq!(count(0, "queue IRQ"), "0 queue IRQs");
        assert_eq!(cpu_count(1), "1 CPU");
    }

    #[test]
    fn each_figure_in_the_unit_that_fits() {
        assert_eq!(rate(8.94e9), "8.94 Gbit/s");
        assert_eq!(rate(812.4e6), "812.4 Mbit/s");
        assert_eq!(rate(143.87e6), "143.9 Mbit/s");
        assert_eq!(rate(820e3), "820 kbit/s");
        assert_eq!(rate(12.0), "12 bit/s");
        assert_eq!(rate(f64::NAN), "–");
        assert_eq!(speed_mbps(100_000), "100 Gbit/s");
        assert_eq!(speed_mbps(2_500), "2.5 Gbit/s");
        assert_eq!(speed_mbps(100), "100 Mbit/s");
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(3 << 19), "1.5 MiB");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(50_000_000), "47.7 MiB");
        assert_eq!(bytes(3 << 30), "3 GiB");
        assert_eq!(bytes_exact(8 << 20), "8388608 bytes (8 MiB)");
        assert_eq!(bytes_exact(100), "100 bytes");
        assert_eq!(speed(40_000_000_000), "40 Gbit/s");
        assert_eq!(speed(31_504_000_000), "31.5 Gbit/s");
        assert_eq!(speed(40_000), "40 kbit/s");
        assert_eq!(cpus(0.5), "0.5 CPU");
        assert_eq!(cpus(1.0), "1 CPU");
        assert_eq!(cpus(4.0), "4 CPUs");
        assert_eq!(cpus(1.25), "1.25 CPUs");
        assert_eq!(cpus(0.333), "0.33 CPU");
    }

    #[test]
    fn a_cpu_list_or_count_takes_the_noun_its_size_needs() {
        assert_eq!(cpu_list("3"), "CPU 3");
        assert_eq!(cpu_list("2-3"), "CPUs 2-3");
        assert_eq!(cpu_list("0,2"), "CPUs 0,2");
        assert_eq!(cpu_list("5-5"), "CPU 5");
        assert_eq!(cpu_list(""), "no CPU");
        assert_eq!(cpu_list(crate::CpuSet::from_cpus([7])), "CPU 7");
        assert_eq!(cpu_list(crate::CpuSet::from_cpus([1, 2, 3])), "CPUs 1-3");
        assert_eq!(cpu_list("?"), "CPUs ?");
        assert_eq!(cpu_count(1), "1 CPU");
        assert_eq!(cpu_count(3), "3 CPUs");
        assert_eq!(cpu_count(0), "0 CPUs");
    }

    #[test]
    fn a_bare_rate_is_mbit_s_everywhere() {
        let r = |t| Rate::parse(t, "--rate").map(Rate::bps);
        assert_eq!(r("40000"), Ok(40_000_000_000));
        assert_eq!(r("40000M"), Ok(40_000_000_000));
        assert_eq!(r("40G"), Ok(40_000_000_000));
        assert_eq!(r("40g"), Ok(40_000_000_000));
        assert_eq!(r("2.5G"), Ok(2_500_000_000));
        assert_eq!(r("400Gbit/s"), Ok(400_000_000_000));
        assert_eq!(r("400gbit"), Ok(400_000_000_000));
        assert_eq!(r("50Gbps"), Ok(50_000_000_000));
        assert_eq!(r(" 1T "), Ok(1_000_000_000_000));
        assert_eq!(r("1500k"), Ok(1_500_000));
        assert_eq!(r("2000000bit/s"), Ok(2_000_000));
        assert_eq!(r("10T"), Ok(Rate::MAX_BPS));
        for bad in [
            "",
            "0",
            "-5G",
            "fast",
            "11T",
            "999k",
            "1e3",
            "1..2G",
            "G",
            "40000bit/s",
            "1 G",
        ] {
            let e = Rate::parse(bad, "--rate").expect_err(bad).to_string();
            assert!(e.starts_with(&format!("--rate '{bad}': ")), "{e}");
            assert!(e.contains("a bare number is Mbit/s"), "{e}");
        }
        let r = Rate::parse("40000", "--rate").unwrap();
        assert_eq!(r.to_string(), "40 Gbit/s");
        assert_eq!(r.mbps(), 40_000);
        assert_eq!(r.from_source("--rate"), "40 Gbit/s (--rate)");
        assert_eq!(
            Rate::from_mbps(100_000).map(|r| r.to_string()).as_deref(),
            Some("100 Gbit/s")
        );
        assert_eq!(Rate::from_mbps(0), None);
    }

    #[test]
    fn one_rtt_bound() {
        assert_eq!(parse_rtt_ms("10", "--rtt"), Ok(10.0));
        assert_eq!(parse_rtt_ms("0.5", "--rtt"), Ok(0.5));
        assert_eq!(parse_rtt_ms("10000", "--rtt"), Ok(MAX_RTT_MS));
        for bad in ["0", "-1", "10001", "nan", "inf", "x", ""] {
            let e = parse_rtt_ms(bad, "--rtt").expect_err(bad).to_string();
            assert!(e.starts_with(&format!("--rtt '{bad}': ")), "{e}");
        }
        assert!(check_rtt_ms(DEFAULT_RTT_MS, "--rtt").is_ok());
    }
}
