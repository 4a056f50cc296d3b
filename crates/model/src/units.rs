//! Figures for people, one way everywhere: bit rates, link speeds and byte counts in the unit
//! that fits, and CPUs' worth of time. (iperf3's own `%g`-style columns, which strict output must match byte for byte,
//! are `wirespeed_report::units`; these are wirespeed's words around them.)

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

/// A link speed as the kernel gives it (Mbit/s): `100 Gbit/s`, `2.5 Gbit/s`, `100 Mbit/s`.
pub fn speed_mbps(mbps: u64) -> String {
    if mbps >= 1000 {
        let g = mbps as f64 / 1000.0;
        if (g - g.round()).abs() < 0.05 {
            format!("{} Gbit/s", g.round() as u64)
        } else {
            format!("{g:.1} Gbit/s")
        }
    } else {
        format!("{mbps} Mbit/s")
    }
}

/// A buffer size: `64 MiB`, `1.5 MiB`, `4096 B`.
pub fn bytes(b: u64) -> String {
    const MIB: u64 = 1 << 20;
    if b >= MIB && b % MIB == 0 {
        format!("{} MiB", b / MIB)
    } else if b >= MIB {
        format!("{:.1} MiB", b as f64 / MIB as f64)
    } else {
        format!("{b} B")
    }
}

/// CPUs' worth of time (a cgroup's allowance): `0.5 CPU`, `1 CPU`, `4 CPUs`, `1.25 CPUs` (at
/// most two decimals).
pub fn cpus(v: f64) -> String {
    let n = format!("{v:.2}");
    let n = n.trim_end_matches('0').trim_end_matches('.');
    format!("{n} CPU{}", if v > 1.0 { "s" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(bytes(4096), "4096 B");
        assert_eq!(cpus(0.5), "0.5 CPU");
        assert_eq!(cpus(1.0), "1 CPU");
        assert_eq!(cpus(4.0), "4 CPUs");
        assert_eq!(cpus(1.25), "1.25 CPUs");
        assert_eq!(cpus(0.333), "0.33 CPU");
    }
}
