//! What a bit cost: the CPU each end spent moving the test's bytes, and the cores the link's
//! rate would need at that cost. The verdict crate computes it from the observation
//! (`wirespeed_verdict::cost`); the report carries it under `wirespeed.cost`, the text output
//! prints it in one line and the CPU-bound verdicts quote its projection.

use serde::{Deserialize, Serialize};

use crate::cpuset::{self, CpuSet};
use crate::observation::{ObserverUse, Role};

pub use crate::observation::CpuFreq;

/// The CPU one end spent on the test's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndCost {
    /// `sender` or `receiver`.
    pub role: Role,
    /// The data path that ran at this end (`copy`, `sendfile`, `msg_trunc`, ...), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Bytes this end moved (sent or received) over the test.
    pub bytes: u64,
    /// CPU time of the end's worker threads over the test (their `schedstat` run time), s.
    pub thread_cpu_s: f64,
    /// softirq + irq time on the CPUs that served this end's flows, s.
    pub softirq_cpu_s: f64,
    /// Those CPUs.
    #[serde(default, with = "cpuset::as_array")]
    pub softirq_cpus: CpuSet,
    /// (thread + softirq CPU seconds) per Gbit moved.
    pub cpu_s_per_gbit: f64,
    /// What one fully busy core moves at this cost, Gbit/s (1 / `cpu_s_per_gbit`).
    pub gbps_per_core: f64,
    /// CPU cycles per byte moved (CPU seconds × frequency / bytes), when the frequency is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_per_byte: Option<f64>,
    /// The frequency used for the cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq: Option<CpuFreq>,
    /// What observing this end cost (not counted in `cpu_s_per_gbit`: the tool's own
    /// overhead, beside the test's), when it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<ObserverUse>,
}

/// The cores the link's rate needs at the measured cost, and where they should run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// The rate projected for, bit/s.
    pub rate_bps: f64,
    /// Where it came from: `interface eth1 speed` or `--rate`.
    pub rate_source: String,
    /// Cores needed to send and to receive that rate (each: the rate over what one core moves,
    /// rounded up), when that end's cost is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cores: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cores: Option<u32>,
    /// The CPUs those cores should be (doctor's placement: the NIC's node, away from its IRQ
    /// CPUs; the receiver's after the sender's when both ends share the host), as many as the
    /// host has.
    #[serde(default, with = "cpuset::as_array")]
    pub sender_cpus: CpuSet,
    #[serde(default, with = "cpuset::as_array")]
    pub receiver_cpus: CpuSet,
    /// The placement rule that chose them, in words.
    pub rule: String,
    /// CPUs' worth of time the sending and the receiving end's cgroup allows (its CPU quota),
    /// when it has one: cores the projection needs beyond it are cores that end cannot use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_quota_cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_quota_cpus: Option<f64>,
}

/// Both ends' cost and the projection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<EndCost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<EndCost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projection>,
    /// How the figures were counted where it matters (softirq charged to one end on a shared
    /// host, an end not observed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A send path that hands the kernel references to pages instead of copying them
/// (`sendfile`, `splice`, `msg_zerocopy`).
pub fn is_zero_copy_send(path: &str) -> bool {
    matches!(path, "sendfile" | "splice" | "msg_zerocopy")
}

impl EndCost {
    /// The cost of moving `bytes` with `thread_cpu_s` + `softirq_cpu_s` CPU seconds; `None`
    /// when nothing moved or no CPU time was counted.
    pub fn new(
        role: Role,
        bytes: u64,
        thread_cpu_s: f64,
        softirq_cpu_s: f64,
        freq: Option<CpuFreq>,
    ) -> Option<EndCost> {
        let cpu_s = thread_cpu_s + softirq_cpu_s;
        let gbit = bytes as f64 * 8.0 / 1e9;
        if gbit <= 0.0 || !cpu_s.is_finite() || cpu_s <= 0.0 {
            return None;
        }
        let cycles_per_byte = freq
            .as_ref()
            .filter(|f| f.mhz > 0.0)
            .map(|f| cpu_s * f.mhz * 1e6 / bytes as f64);
        Some(EndCost {
            role,
            path: None,
            bytes,
            thread_cpu_s,
            softirq_cpu_s,
            softirq_cpus: CpuSet::new(),
            cpu_s_per_gbit: cpu_s / gbit,
            gbps_per_core: gbit / cpu_s,
            cycles_per_byte,
            freq,
            observer: None,
        })
    }

    /// CPU seconds in all.
    pub fn cpu_s(&self) -> f64 {
        self.thread_cpu_s + self.softirq_cpu_s
    }

    /// Cores needed to move `rate_bps` at this cost, rounded up (at least 1).
    pub fn cores_for(&self, rate_bps: f64) -> u32 {
        let need = rate_bps / 1e9 / self.gbps_per_core;
        if !need.is_finite() {
            return 1;
        }
        (need - 1e-9).ceil().clamp(1.0, f64::from(u32::MAX)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_per_gbit_and_cycles_follow_from_the_counters() {
        // 10 GB moved with 4 s of thread time and 1 s of softirq at 2500 MHz.
        let f = CpuFreq {
            mhz: 2500.0,
            source: "test".into(),
            cpus: CpuSet::from_cpus([0]),
        };
        let c = EndCost::new(Role::Sender, 10_000_000_000, 4.0, 1.0, Some(f)).unwrap();
        assert!((c.cpu_s_per_gbit - 5.0 / 80.0).abs() < 1e-12);
        assert!((c.gbps_per_core - 16.0).abs() < 1e-12);
        assert!((c.cycles_per_byte.unwrap() - 1.25).abs() < 1e-12);
        assert_eq!(c.cores_for(100e9), 7);
        assert_eq!(c.cores_for(16e9), 1);
        assert_eq!(c.cores_for(1e6), 1);
        assert!(EndCost::new(Role::Sender, 0, 1.0, 0.0, None).is_none());
        assert!(EndCost::new(Role::Sender, 1000, 0.0, 0.0, None).is_none());
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["role"], "sender");
        assert_eq!(json["softirq_cpus"], serde_json::json!([]));
    }
}
