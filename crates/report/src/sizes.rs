//! Size and rate arguments the way iperf3 reads them.
//!
//! iperf3 accepts a decimal number with an optional one-letter suffix
//! `K`, `M`, `G`, `T` (either case). For sizes (`-n`, `-l`, `-w`, `--cport`
//! buffers) the suffixes are powers of 1024; for rates (`-b`, `--fq-rate`)
//! they are powers of 1000. `-b` also takes `RATE/BURST` (a packet burst count).
//! Unlike iperf3 (which ignores trailing junk), anything else is an error
//! that names the text.

use std::fmt;

/// A byte count (`-n`, `-l`, `-w`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A rate in bits per second (`-b`, `--fq-rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BitsPerSecond(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.0)
    }
}

impl fmt::Display for BitsPerSecond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bit/s", self.0)
    }
}

impl BitsPerSecond {
    /// Bytes per second (rounded down), e.g. for `SO_MAX_PACING_RATE`.
    pub fn bytes_per_second(self) -> u64 {
        self.0 / 8
    }
}

/// Why a size or rate argument was refused; always names the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("invalid {what} '{text}': expected a number with an optional K, M, G or T suffix")]
    Syntax { what: &'static str, text: String },
    #[error("invalid {what} '{text}': must not be negative")]
    Negative { what: &'static str, text: String },
    #[error("invalid {what} '{text}': too large")]
    TooLarge { what: &'static str, text: String },
    #[error("invalid burst in '{text}': expected RATE/PACKETS with PACKETS a whole number from 1")]
    Burst { text: String },
}

fn parse_scaled(text: &str, what: &'static str, base: f64) -> Result<u64, SizeError> {
    let t = text.trim();
    let syntax = || SizeError::Syntax {
        what,
        text: text.to_string(),
    };
    let (num, mult) = match t.char_indices().last() {
        None => return Err(syntax()),
        Some((i, c)) => match c.to_ascii_uppercase() {
            'K' => (&t[..i], base),
            'M' => (&t[..i], base * base),
            'G' => (&t[..i], base * base * base),
            'T' => (&t[..i], base * base * base * base),
            _ => (t, 1.0),
        },
    };
    // Only plain decimal numbers: digits, one optional point, optional sign.
    let body = num.strip_prefix('+').unwrap_or(num);
    let (neg, body) = match body.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, body),
    };
    let digits = body.chars().filter(|c| c.is_ascii_digit()).count();
    let points = body.chars().filter(|&c| c == '.').count();
    if digits == 0 || points > 1 || digits + points != body.len() {
        return Err(syntax());
    }
    let v: f64 = body.parse().map_err(|_| syntax())?;
    if neg && v != 0.0 {
        return Err(SizeError::Negative {
            what,
            text: text.to_string(),
        });
    }
    let scaled = v * mult;
    // u64::MAX as f64 rounds up to 2^64, so compare with >=.
    if !scaled.is_finite() || scaled >= u64::MAX as f64 {
        return Err(SizeError::TooLarge {
            what,
            text: text.to_string(),
        });
    }
    Ok(scaled as u64)
}

/// Parse a size (`-n`, `-l`, `-w`): `K`=1024, `M`=1024², `G`=1024³, `T`=1024⁴.
/// `what` names the option in errors, e.g. `"-n"` or `"length"`.
pub fn parse_bytes(text: &str, what: &'static str) -> Result<Bytes, SizeError> {
    parse_scaled(text, what, 1024.0).map(Bytes)
}

/// Parse a rate (`-b`, `--fq-rate`): `K`=1000, `M`=10⁶, `G`=10⁹, `T`=10¹².
pub fn parse_rate(text: &str, what: &'static str) -> Result<BitsPerSecond, SizeError> {
    parse_scaled(text, what, 1000.0).map(BitsPerSecond)
}

/// Parse `-b` with iperf3's optional burst: `RATE[/PACKETS]`.
pub fn parse_rate_burst(
    text: &str,
    what: &'static str,
) -> Result<(BitsPerSecond, Option<u32>), SizeError> {
    match text.split_once('/') {
        None => Ok((parse_rate(text, what)?, None)),
        Some((rate, burst)) => {
            let rate = parse_rate(rate, what).map_err(|e| match e {
                SizeError::Syntax { what, .. } => SizeError::Syntax {
                    what,
                    text: text.to_string(),
                },
                other => other,
            })?;
            let burst: u32 = burst.trim().parse().map_err(|_| SizeError::Burst {
                text: text.to_string(),
            })?;
            if burst == 0 {
                return Err(SizeError::Burst {
                    text: text.to_string(),
                });
            }
            Ok((rate, Some(burst)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_1024() {
        assert_eq!(parse_bytes("128K", "-l"), Ok(Bytes(131072)));
        assert_eq!(parse_bytes("128k", "-l"), Ok(Bytes(131072)));
        assert_eq!(parse_bytes("1M", "-n"), Ok(Bytes(1 << 20)));
        assert_eq!(parse_bytes("2G", "-n"), Ok(Bytes(2 << 30)));
        assert_eq!(parse_bytes("1T", "-n"), Ok(Bytes(1 << 40)));
        assert_eq!(parse_bytes("1.5M", "-n"), Ok(Bytes(1_572_864)));
        assert_eq!(parse_bytes("1472", "-l"), Ok(Bytes(1472)));
        assert_eq!(parse_bytes(" 64K ", "-w"), Ok(Bytes(65536)));
        assert_eq!(parse_bytes("0", "-n"), Ok(Bytes(0)));
    }

    #[test]
    fn rates_use_1000() {
        assert_eq!(parse_rate("1M", "-b"), Ok(BitsPerSecond(1_000_000)));
        assert_eq!(parse_rate("10G", "-b"), Ok(BitsPerSecond(10_000_000_000)));
        assert_eq!(parse_rate("2.5g", "-b"), Ok(BitsPerSecond(2_500_000_000)));
        assert_eq!(parse_rate("100k", "-b"), Ok(BitsPerSecond(100_000)));
        assert_eq!(parse_rate("0", "-b"), Ok(BitsPerSecond(0)));
        assert_eq!(parse_rate("1T", "-b"), Ok(BitsPerSecond(1_000_000_000_000)));
        assert_eq!(BitsPerSecond(8_000).bytes_per_second(), 1000);
    }

    #[test]
    fn burst() {
        assert_eq!(
            parse_rate_burst("1G/32", "-b"),
            Ok((BitsPerSecond(1_000_000_000), Some(32)))
        );
        assert_eq!(
            parse_rate_burst("1G", "-b"),
            Ok((BitsPerSecond(1_000_000_000), None))
        );
        assert!(matches!(
            parse_rate_burst("1G/0", "-b"),
            Err(SizeError::Burst { .. })
        ));
        assert!(matches!(
            parse_rate_burst("1G/x", "-b"),
            Err(SizeError::Burst { .. })
        ));
        let e = parse_rate_burst("x/3", "-b").unwrap_err().to_string();
        assert!(e.contains("'x/3'"), "{e}");
    }

    #[test]
    fn errors_name_the_text() {
        for bad in [
            "", "K", "abc", "12Q", "1..2M", "1e3", "--1", "0x10", "1 M", "M1",
        ] {
            let e = parse_bytes(bad, "-n").expect_err(bad);
            let msg = e.to_string();
            assert!(msg.contains(&format!("'{bad}'")), "{msg}");
            assert!(msg.contains("-n"), "{msg}");
        }
        let e = parse_bytes("-5K", "-l").unwrap_err();
        assert!(matches!(e, SizeError::Negative { .. }), "{e:?}");
        assert!(e.to_string().contains("'-5K'"));
        let e = parse_bytes("99999999T", "-n").unwrap_err();
        assert!(matches!(e, SizeError::TooLarge { .. }), "{e:?}");
        let e = parse_rate("1e400", "-b").unwrap_err();
        assert!(matches!(e, SizeError::Syntax { .. }), "{e:?}");
    }
}
