//! What a path allows one TCP stream, from its rate, round-trip time, loss and segment size:
//! the bandwidth-delay product, the socket buffers to set (the [`sizing`] rule doctor and tune
//! use), the Mathis ceiling of loss-based congestion control, and how long slow start takes.
//!
//! The Mathis et al. (1997) ceiling for Reno-style congestion control is
//! `MSS / RTT × C / √p` with `C ≈ 1.22` (√(3/2)): one loss in `1/p` packets halves the window,
//! so the window averages a size that no link speed can raise. ESnet's measurements show the
//! same shape, with loss-tolerant algorithms (HTCP, and BBR, which does not treat loss as
//! congestion) far above Reno's line: 1 loss in 22,000 packets on a 90 ms path left a 10 Gbit/s
//! path at about 0.5 Gbit/s with HTCP.
//!
//! Pure: numbers in, numbers out.

use serde::Serialize;

use crate::sizing;

/// Mathis et al.'s constant, √(3/2).
pub const MATHIS_C: f64 = 1.22;

/// The initial congestion window of Linux, in segments (RFC 6928).
pub const INITIAL_WINDOW: u64 = 10;

/// The MSS of a 1500-byte MTU with TCP timestamps (1500 − 20 − 20 − 12).
pub const DEFAULT_MSS: u32 = 1448;

/// A path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Path {
    /// The bottleneck rate, bit/s.
    pub rate_bps: u64,
    /// Round-trip time, ms.
    pub rtt_ms: f64,
    /// Packet loss as a fraction, if any.
    pub loss: Option<f64>,
    /// TCP maximum segment size, bytes.
    pub mss: u32,
}

/// Slow start from the initial window to the window the rate needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SlowStart {
    /// Round trips of doubling.
    pub round_trips: u32,
    /// Their duration, seconds.
    pub seconds: f64,
}

/// What the model says about a [`Path`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Model {
    pub rate_bps: u64,
    pub rtt_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    pub mss: u32,
    /// Bandwidth-delay product, bytes.
    pub bdp_bytes: u64,
    /// The socket buffer maximum to set (rmem_max, wmem_max, tcp_rmem/tcp_wmem's maximum):
    /// [`sizing::buffer_target`], the value doctor's fix and tune's plan give.
    pub buffer_bytes: u64,
    /// The window in segments the rate needs.
    pub window_segments: u64,
    /// Slow start to that window, when nothing is lost on the way.
    pub slow_start: SlowStart,
    /// The Mathis ceiling, bit/s, when a loss is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mathis_bps: Option<f64>,
    /// What one stream of loss-based congestion control can expect: the smaller of the rate
    /// and the Mathis ceiling.
    pub expected_bps: f64,
    /// The loss, not the rate, is the limit.
    pub loss_limited: bool,
}

/// The Mathis ceiling, bit/s: `MSS × 8 / RTT × 1.22 / √p`.
pub fn mathis_bps(mss: u32, rtt_ms: f64, loss: f64) -> f64 {
    if loss <= 0.0 || rtt_ms <= 0.0 {
        return f64::INFINITY;
    }
    mss as f64 * 8.0 / (rtt_ms / 1000.0) * MATHIS_C / loss.sqrt()
}

/// The rate in whole Mbit/s [`sizing`] takes (rounded up, at least 1).
pub fn speed_mbps(rate_bps: u64) -> u64 {
    rate_bps.div_ceil(1_000_000).max(1)
}

/// The model of a path.
pub fn model(p: &Path) -> Model {
    let mbps = speed_mbps(p.rate_bps);
    let bdp_bytes = sizing::bdp_bytes(mbps, p.rtt_ms);
    let buffer_bytes = sizing::buffer_target(mbps, p.rtt_ms);
    let mss = p.mss.max(1) as u64;
    let window_segments = bdp_bytes.div_ceil(mss).max(1);
    let mut round_trips = 0u32;
    let mut cwnd = INITIAL_WINDOW;
    while cwnd < window_segments {
        cwnd = cwnd.saturating_mul(2);
        round_trips += 1;
    }
    let mathis = p.loss.map(|l| mathis_bps(p.mss, p.rtt_ms, l));
    let rate = p.rate_bps as f64;
    let expected_bps = mathis.map_or(rate, |m| m.min(rate));
    Model {
        rate_bps: p.rate_bps,
        rtt_ms: p.rtt_ms,
        loss: p.loss,
        mss: p.mss,
        bdp_bytes,
        buffer_bytes,
        window_segments,
        slow_start: SlowStart {
            round_trips,
            seconds: round_trips as f64 * p.rtt_ms / 1000.0,
        },
        mathis_bps: mathis,
        expected_bps,
        loss_limited: mathis.is_some_and(|m| m < rate),
    }
}

/// The distances of the loss × distance table, with the round-trip times wirespeed uses for
/// them (typical fibre paths: within a building, a city, a region, across a continent, between
/// continents).
pub const DISTANCES: [(&str, f64); 5] = [
    ("LAN", 0.5),
    ("metro", 5.0),
    ("regional", 20.0),
    ("continental", 60.0),
    ("international", 150.0),
];

/// The loss rates of the table: 1 in 1,000 to 1 in 1,000,000, and ESnet's 1 in 22,000.
pub const LOSSES: [f64; 5] = [1e-3, 1e-4, 1.0 / 22_000.0, 1e-5, 1e-6];

/// One row of the table: a distance and the expected rate (the smaller of the link's rate and
/// the Mathis ceiling) at each loss of [`LOSSES`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableRow {
    pub distance: &'static str,
    pub rtt_ms: f64,
    pub expected_bps: Vec<f64>,
}

/// The loss × distance table for a link of `rate_bps` and segments of `mss`.
pub fn table(rate_bps: u64, mss: u32) -> Vec<TableRow> {
    DISTANCES
        .iter()
        .map(|&(distance, rtt_ms)| TableRow {
            distance,
            rtt_ms,
            expected_bps: LOSSES
                .iter()
                .map(|&l| mathis_bps(mss, rtt_ms, l).min(rate_bps as f64))
                .collect(),
        })
        .collect()
}

/// `model --table -J`: the table with the link it is for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableDoc {
    pub rate_bps: u64,
    pub mss: u32,
    /// The loss rate of each column of `rows[].expected_bps`.
    pub losses: [f64; 5],
    pub rows: Vec<TableRow>,
}

impl TableDoc {
    /// The table for a link of `rate_bps` and segments of `mss`.
    pub fn new(rate_bps: u64, mss: u32) -> TableDoc {
        TableDoc {
            rate_bps,
            mss,
            losses: LOSSES,
            rows: table(rate_bps, mss),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esnet_s_example_one_loss_in_22000_at_90_ms() {
        let m = |mss| {
            model(&Path {
                rate_bps: 10_000_000_000,
                rtt_ms: 90.0,
                loss: Some(0.0000455),
                mss,
            })
        };
        let jumbo = m(8948);
        let mbps = jumbo.mathis_bps.unwrap() / 1e6;
        assert!((143.0..145.0).contains(&mbps), "{mbps}");
        assert!(jumbo.loss_limited);
        assert_eq!(jumbo.expected_bps, jumbo.mathis_bps.unwrap());
        let small = m(1448).mathis_bps.unwrap() / 1e6;
        assert!((23.0..23.5).contains(&small), "{small}");
    }

    #[test]
    fn buffers_are_the_sizing_rule_and_slow_start_doubles_from_ten() {
        let m = model(&Path {
            rate_bps: 100_000_000_000,
            rtt_ms: 10.0,
            loss: None,
            mss: 8948,
        });
        assert_eq!(m.bdp_bytes, sizing::bdp_bytes(100_000, 10.0));
        assert_eq!(m.buffer_bytes, sizing::buffer_target(100_000, 10.0));
        assert_eq!(m.buffer_bytes, 1 << 28);
        // 125 MB / 8948 = 13970 segments: 10 → 20480 in 11 doublings
        assert_eq!(m.window_segments, 13_970);
        assert_eq!(m.slow_start.round_trips, 11);
        assert!((m.slow_start.seconds - 0.11).abs() < 1e-9);
        assert_eq!(m.mathis_bps, None);
        assert!(!m.loss_limited);
        assert_eq!(m.expected_bps, 1e11);
    }

    #[test]
    fn the_table_caps_at_the_link_and_falls_with_distance_and_loss() {
        let t = table(10_000_000_000, 1448);
        assert_eq!(t.len(), DISTANCES.len());
        for row in &t {
            assert_eq!(row.expected_bps.len(), LOSSES.len());
            assert!(row.expected_bps.iter().all(|&v| v <= 1e10));
        }
        // LAN at 1 in a million: the link; international at 1 in 1,000: a few Mbit/s
        assert_eq!(t[0].expected_bps[4], 1e10);
        assert!(t[4].expected_bps[0] < 5e6, "{}", t[4].expected_bps[0]);
        for w in t.windows(2) {
            assert!(w[1].expected_bps[2] <= w[0].expected_bps[2]);
        }
    }

    #[test]
    fn no_loss_or_no_rtt_is_no_ceiling() {
        assert_eq!(mathis_bps(1448, 10.0, 0.0), f64::INFINITY);
        assert_eq!(speed_mbps(1), 1);
        assert_eq!(speed_mbps(10_000_000_000), 10_000);
    }
}
