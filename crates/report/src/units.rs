//! iperf3-compatible number formatting for the human output.
//!
//! iperf3 prints transfers with an adaptive byte unit on a 1024 base
//! (`Bytes`, `KBytes`, `MBytes`, `GBytes`, `TBytes`) and rates with an
//! adaptive bit unit on a 1000 base (`bits/sec` … `Tbits/sec`), in four
//! places: `#.##` below 9.995, `##.#` below 99.95, `###`/`####` above.
//! `-f` letters pick a fixed unit instead (`k m g t` bits, `K M G T` bytes).
//! This module reproduces that behaviour, plus the C `printf` conversions the
//! text output needs (`%.Ng` for loss percentages).

/// iperf3's `-f` choice: adaptive or fixed unit, bits or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitFormat {
    /// `a`: adaptive bits, 1000 base (iperf3's default for rates).
    #[default]
    AdaptiveBits,
    /// `A`: adaptive bytes, 1024 base (always used for transfers).
    AdaptiveBytes,
    /// `k`/`m`/`g`/`t`: fixed bit unit; `b` plain bits.
    Bits(Scale),
    /// `K`/`M`/`G`/`T`: fixed byte unit; `B` plain bytes.
    Bytes(Scale),
}

/// A fixed unit scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scale {
    Unit = 0,
    Kilo = 1,
    Mega = 2,
    Giga = 3,
    Tera = 4,
}

impl Scale {
    fn from_index(i: usize) -> Scale {
        match i {
            0 => Scale::Unit,
            1 => Scale::Kilo,
            2 => Scale::Mega,
            3 => Scale::Giga,
            _ => Scale::Tera,
        }
    }
}

/// A `-f` letter that is not one of `a A b B k K m M g G t T`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid format '{0}': use one of k, m, g, t (bits) or K, M, G, T (bytes), a or A (adaptive)"
)]
pub struct BadUnitFormat(pub String);

impl UnitFormat {
    /// Parse iperf3's `-f` argument (one letter).
    pub fn parse(s: &str) -> Result<UnitFormat, BadUnitFormat> {
        let mut chars = s.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(BadUnitFormat(s.to_string()));
        };
        Ok(match c {
            'a' => UnitFormat::AdaptiveBits,
            'A' => UnitFormat::AdaptiveBytes,
            'b' => UnitFormat::Bits(Scale::Unit),
            'k' => UnitFormat::Bits(Scale::Kilo),
            'm' => UnitFormat::Bits(Scale::Mega),
            'g' => UnitFormat::Bits(Scale::Giga),
            't' => UnitFormat::Bits(Scale::Tera),
            'B' => UnitFormat::Bytes(Scale::Unit),
            'K' => UnitFormat::Bytes(Scale::Kilo),
            'M' => UnitFormat::Bytes(Scale::Mega),
            'G' => UnitFormat::Bytes(Scale::Giga),
            'T' => UnitFormat::Bytes(Scale::Tera),
            _ => return Err(BadUnitFormat(s.to_string())),
        })
    }

    fn is_bits(self) -> bool {
        matches!(self, UnitFormat::AdaptiveBits | UnitFormat::Bits(_))
    }
}

const BYTE_LABELS: [&str; 5] = ["Byte", "KByte", "MByte", "GByte", "TByte"];
const BIT_LABELS: [&str; 5] = ["bit", "Kbit", "Mbit", "Gbit", "Tbit"];

/// Format a quantity given in **bytes** in the chosen unit, iperf3 style,
/// with the singular label (e.g. `"2.24 GByte"`, `"19.2 Gbit"`): callers
/// append `"s"` or `"s/sec"` as iperf3 does.
pub fn unit_string(bytes: f64, format: UnitFormat) -> String {
    let bits = format.is_bits();
    let mut n = if bits { bytes * 8.0 } else { bytes };
    if !n.is_finite() {
        n = 0.0;
    }
    let base = if bits { 1000.0 } else { 1024.0 };
    let scale = match format {
        UnitFormat::AdaptiveBits | UnitFormat::AdaptiveBytes => {
            let mut i = 0usize;
            let mut t = n;
            while t >= base && i < Scale::Tera as usize {
                t /= base;
                i += 1;
            }
            Scale::from_index(i)
        }
        UnitFormat::Bits(s) | UnitFormat::Bytes(s) => s,
    };
    let mut v = n;
    for _ in 0..(scale as usize) {
        v /= base;
    }
    let label = if bits {
        BIT_LABELS[scale as usize]
    } else {
        BYTE_LABELS[scale as usize]
    };
    // Fit in four places: #.##, ##.#, ###, ####.
    if v < 9.995 {
        format!("{v:4.2} {label}")
    } else if v < 99.95 {
        format!("{v:4.1} {label}")
    } else {
        format!("{v:4.0} {label}")
    }
}

/// A transfer column: adaptive 1024-based bytes, e.g. `"2.24 GBytes"`, `" 128 KBytes"`.
pub fn format_bytes(bytes: f64) -> String {
    let mut s = unit_string(bytes, UnitFormat::AdaptiveBytes);
    s.push('s');
    s
}

/// A bitrate column from **bits per second**, e.g. `"19.2 Gbits/sec"`
/// (default format) or `" 153 MBytes/sec"` with `-f M`.
pub fn format_rate(bits_per_second: f64, format: UnitFormat) -> String {
    let mut s = unit_string(bits_per_second / 8.0, format);
    s.push_str("s/sec");
    s
}

/// C's `%.{precision}g` (precision 0 behaves as 1), as iperf3 prints loss
/// percentages (`%.2g`): `0`, `0.5`, `12`, `1e+02`.
pub fn c_g(value: f64, precision: usize) -> String {
    let p = precision.max(1);
    if value == 0.0 {
        return "0".to_string();
    }
    if !value.is_finite() {
        return if value.is_nan() {
            "nan".into()
        } else if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // Round to p significant digits in scientific form to learn the exponent.
    let sci = format!("{:.*e}", p - 1, value);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// An interval's `start-end` as iperf3 prints it (`%6.2f-%-6.2f`).
pub fn interval_span(start: f64, end: f64) -> String {
    let s = crate::num::finite(start);
    let e = crate::num::finite(end);
    format!("{s:6.2}-{e:<6.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Pairs (value from iperf3 3.12's -J output, string from the same run's
    // text output), see tests/data/README.md.
    #[test]
    fn bytes_match_iperf3() {
        assert_eq!(format_bytes(1457520640.0), "1.36 GBytes");
        assert_eq!(format_bytes(2916352000.0), "2.72 GBytes");
        assert_eq!(format_bytes(131072.0), " 128 KBytes");
        assert_eq!(format_bytes(262144.0), " 256 KBytes");
        assert_eq!(format_bytes(916762.0), " 895 KBytes");
        assert_eq!(format_bytes(1047728.0), "1023 KBytes");
        assert_eq!(format_bytes(1_700_000.0), "1.62 MBytes");
        assert_eq!(format_bytes(0.0), "0.00 Bytes");
        assert_eq!(format_bytes(1023.0), "1023 Bytes");
        assert_eq!(format_bytes(1024.0), "1.00 KBytes");
        assert_eq!(format_bytes(765_460_480.0), " 730 MBytes");
    }

    #[test]
    fn rates_match_iperf3() {
        let a = UnitFormat::AdaptiveBits;
        assert_eq!(format_rate(11642677817.91749, a), "11.6 Gbits/sec");
        assert_eq!(format_rate(23295825669.8439, a), "23.3 Gbits/sec");
        assert_eq!(format_rate(1048476.3947424995, a), "1.05 Mbits/sec");
        assert_eq!(format_rate(2096483.2218522292, a), "2.10 Mbits/sec");
        assert_eq!(format_rate(9_180_000_000.0, a), "9.18 Gbits/sec");
        assert_eq!(format_rate(0.0, a), "0.00 bits/sec");
        assert_eq!(format_rate(999.0, a), " 999 bits/sec");
        assert_eq!(format_rate(1000.0, a), "1.00 Kbits/sec");
        // Rounding boundaries of the four-place rule.
        assert_eq!(format_rate(9_994_000.0, a), "9.99 Mbits/sec");
        assert_eq!(format_rate(9_996_000.0, a), "10.0 Mbits/sec");
        assert_eq!(format_rate(99_940_000.0, a), "99.9 Mbits/sec");
        assert_eq!(format_rate(99_960_000.0, a), " 100 Mbits/sec");
        assert_eq!(format_rate(999_600_000.0, a), "1000 Mbits/sec");
    }

    #[test]
    fn fixed_formats() {
        let f = UnitFormat::parse("m").expect("m");
        assert_eq!(format_rate(23_295_825_669.8, f), "23296 Mbits/sec");
        let f = UnitFormat::parse("K").expect("K");
        assert_eq!(format_rate(8.0 * 2048.0, f), "2.00 KBytes/sec");
        assert!(UnitFormat::parse("x").is_err());
        assert!(UnitFormat::parse("").is_err());
        assert!(UnitFormat::parse("mm").is_err());
        let err = UnitFormat::parse("x").unwrap_err().to_string();
        assert!(err.contains("'x'"), "{err}");
    }

    #[test]
    fn c_g_matches_printf() {
        assert_eq!(c_g(0.0, 2), "0");
        assert_eq!(c_g(0.5, 2), "0.5");
        assert_eq!(c_g(12.345, 2), "12");
        assert_eq!(c_g(100.0, 2), "1e+02");
        assert_eq!(c_g(0.0123, 2), "0.012");
        assert_eq!(c_g(0.00001234, 2), "1.2e-05");
        assert_eq!(c_g(3.0, 2), "3");
        assert_eq!(c_g(99.5, 2), "1e+02");
        assert_eq!(c_g(1.05, 2), "1.1"); // 1.05 is 1.0500000000000000444 in binary
    }

    #[test]
    fn seconds_columns() {
        assert_eq!(interval_span(0.0, 1.000241), "  0.00-1.00  ");
        assert_eq!(interval_span(123.456, 1000.0), "123.46-1000.00");
        assert_eq!(interval_span(f64::NAN, 1.0), "  0.00-1.00  ");
    }
}
