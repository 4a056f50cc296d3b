//! The values doctor's fixes suggest and `wirespeed tune` sets, from one place so the two agree:
//! socket buffers from link speed × RTT, and the softnet backlog and budget; and the one way
//! doctor's findings and tune's plans write a size in bytes ([`human_bytes`]). (iperf3's
//! `KBytes`/`Mbits/sec` columns are a different format, iperf3's own: the report crate's.)

/// Largest value the kernel accepts for the socket buffer sysctls (they are C ints).
pub const BUFFER_CAP: u64 = i32::MAX as u64;

/// `netdev_max_backlog` for a host whose softnet backlog drops packets (the figure ESnet's host
/// tuning gives for 100 Gbit/s hosts). Never lowered.
pub const NETDEV_MAX_BACKLOG: u64 = 250_000;

/// `netdev_budget` for a host whose softirq runs out of budget (time squeezes). Never lowered.
pub const NETDEV_BUDGET: u64 = 600;

/// `netdev_budget_usecs` doctor suggests with time squeezes (the kernel's default is 2000).
pub const NETDEV_BUDGET_USECS: u64 = 4000;

/// Deepest descriptor ring doctor suggests and tune sets: deeper rings add latency under load
/// without helping throughput further.
pub const RING_CAP: u32 = 8192;

/// The ring size for a ring of `cur` descriptors whose driver allows `max`: the maximum up to
/// [`RING_CAP`], never below what is set.
pub fn ring_target(cur: u32, max: u32) -> u32 {
    max.min(RING_CAP).max(cur)
}

/// The bandwidth-delay product in bytes: link speed (Mbit/s) × RTT (ms).
pub fn bdp_bytes(speed_mbps: u64, rtt_ms: f64) -> u64 {
    (speed_mbps as f64 * 1e6 / 8.0 * rtt_ms / 1000.0).ceil() as u64
}

/// The socket buffer maximum for a link: 2 × BDP rounded up to a power of two, capped at
/// [`BUFFER_CAP`].
pub fn buffer_target(speed_mbps: u64, rtt_ms: f64) -> u64 {
    let bdp = speed_mbps as f64 * 1e6 / 8.0 * rtt_ms / 1000.0;
    let want = (2.0 * bdp).ceil().max(1.0);
    if want >= BUFFER_CAP as f64 {
        return BUFFER_CAP;
    }
    (want as u64).next_power_of_two().min(BUFFER_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_twice_the_bdp_as_a_power_of_two() {
        assert_eq!(bdp_bytes(100_000, 10.0), 125_000_000);
        assert_eq!(buffer_target(100_000, 10.0), 1 << 28);
        assert_eq!(buffer_target(100_000, 100.0), BUFFER_CAP);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(wirespeed_model::units::bytes(512), "512 B");
        assert_eq!(wirespeed_model::units::bytes(256 << 20), "256 MiB");
        assert_eq!(wirespeed_model::units::bytes(3 << 19), "1.5 MiB");
    }
}
