//! wirespeed's mid-test frame: one end's observation of each interval, sent to a wirespeed peer
//! on the control connection while the test runs (`TEST_RUNNING` until `TEST_END`).
//!
//! Wire form: the marker byte [`LIVE_MARKER`] (0x57, `W`, not one of iperf3's states), then a
//! length-prefixed JSON object like the parameters and results ([`crate::frame`]), capped at
//! [`MAX_LIVE_LEN`] bytes, [`crate::frame::MAX_JSON_DEPTH`] levels and [`MAX_LIVE_TOKENS`]
//! structural tokens, checked from the header before any payload is buffered.
//!
//! It is negotiated: the client asks with `"live": true` in its parameters' extension; a
//! server that read that sends its frames, and the client sends its own only after the first
//! frame from the server arrived (so neither an iperf3 server nor an older wirespeed server
//! ever sees one). A receiver takes at most [`LiveBudget`]'s rate and skips the rest unparsed.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use wirespeed_model::observation::IntervalObservation;
use wirespeed_model::EndObservation;

use crate::frame::{self, JsonFrame, LEN_PREFIX};
use crate::WireError;

/// The byte that opens a live frame (87; iperf3's states are 1–16, -1 and -2).
pub const LIVE_MARKER: u8 = 0x57;

/// Cap on one frame's JSON: an interval of some 1,000 busy CPUs, or a head with the topology of
/// a large host.
pub const MAX_LIVE_LEN: u32 = 256 * 1024;

/// Cap on the structural tokens of one frame.
pub const MAX_LIVE_TOKENS: usize = 1 << 16;

/// One end's observation of one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveInterval {
    /// The sender's count of intervals (1, 2, ...).
    pub seq: u64,
    /// Seconds since the start of the sender's test.
    pub start: f64,
    pub end: f64,
    /// The end's head (role, interface, NIC IRQs, topology; see
    /// [`EndObservation::head`]): in the first frame, or when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<EndObservation>,
    /// The interval: per-CPU shares and interrupt counts, and where the workers ran. Absent
    /// when the end cannot observe its host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<IntervalObservation>,
}

impl LiveInterval {
    /// The frame: marker, 4-byte big-endian length, compact JSON.
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let v = serde_json::to_value(self).map_err(|e| WireError::Encode(e.to_string()))?;
        let body = frame::encode(&v, MAX_LIVE_LEN)?;
        let mut out = Vec::with_capacity(1 + body.len());
        out.push(LIVE_MARKER);
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Bytes the frame at the start of `buf` occupies, marker included, once it is all there;
    /// checks the marker and the length cap only (the payload is not parsed).
    pub fn frame_len(buf: &[u8]) -> Result<usize, WireError> {
        let Some((&m, rest)) = buf.split_first() else {
            return Err(WireError::Truncated { needed: 1 });
        };
        if m != LIVE_MARKER {
            return Err(WireError::UnknownState(m));
        }
        Ok(1 + JsonFrame::new_checked(rest, MAX_LIVE_LEN)?.total_len())
    }

    /// Decode the frame at the start of `buf`: the frame and the bytes it occupied.
    /// [`WireError::Truncated`] while incomplete (after the length was checked).
    pub fn decode(buf: &[u8]) -> Result<(LiveInterval, usize), WireError> {
        let n = Self::frame_len(buf)?;
        let payload = &buf[1 + LEN_PREFIX..n];
        let obj = frame::parse_object_capped(payload, MAX_LIVE_TOKENS)?;
        let li: LiveInterval = serde_json::from_value(serde_json::Value::Object(obj))
            .map_err(|e| WireError::field("live", e.to_string()))?;
        if !(li.start.is_finite() && li.end.is_finite()) {
            return Err(WireError::field("live", "start and end must be finite"));
        }
        Ok((li, n))
    }
}

/// How many live frames a receiver takes: a bucket of [`LiveBudget::BURST`] frames refilled at
/// [`LiveBudget::PER_SECOND`] a second (a peer sends one per interval; iperf3's shortest
/// interval is 0.1 s). Frames beyond it are skipped without being parsed, so a peer that floods
/// costs the receiver a read of the bytes and nothing more.
#[derive(Debug, Clone)]
pub struct LiveBudget {
    tokens: f64,
    at: Option<Duration>,
}

impl LiveBudget {
    pub const BURST: f64 = 16.0;
    pub const PER_SECOND: f64 = 12.0;

    pub fn new() -> LiveBudget {
        LiveBudget {
            tokens: Self::BURST,
            at: None,
        }
    }

    /// Take one frame at `now`; `false` when over budget.
    pub fn take(&mut self, now: Duration) -> bool {
        if let Some(at) = self.at {
            let dt = now.saturating_sub(at).as_secs_f64();
            self.tokens = (self.tokens + dt * Self::PER_SECOND).min(Self::BURST);
        }
        self.at = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Default for LiveBudget {
    fn default() -> Self {
        LiveBudget::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::observation::{CpuUse, Percent, Role};

    fn sample() -> LiveInterval {
        LiveInterval {
            seq: 2,
            start: 1.0,
            end: 2.0,
            head: None,
            observation: Some(IntervalObservation {
                start: Some(1.0),
                end: Some(2.0),
                cpus: vec![CpuUse {
                    cpu: 3,
                    system: Percent::new(80.0),
                    softirq: Percent::new(15.0),
                    idle: Percent::new(5.0),
                    nic_irqs: 1200,
                    ..Default::default()
                }],
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_frame_round_trips_and_waits_for_its_bytes() {
        let f = sample().encode().unwrap();
        assert_eq!(f[0], LIVE_MARKER);
        let (back, n) = LiveInterval::decode(&f).unwrap();
        assert_eq!((back, n), (sample(), f.len()));
        for cut in 0..f.len() {
            assert!(
                LiveInterval::decode(&f[..cut]).unwrap_err().is_truncated(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn hostile_frames_are_typed_errors() {
        // Oversized from the header alone.
        let mut big = vec![LIVE_MARKER];
        big.extend_from_slice(&(MAX_LIVE_LEN + 1).to_be_bytes());
        assert_eq!(
            LiveInterval::decode(&big).unwrap_err(),
            WireError::Oversized {
                len: MAX_LIVE_LEN + 1,
                max: MAX_LIVE_LEN
            }
        );
        assert_eq!(
            LiveInterval::decode(&[LIVE_MARKER, 0, 0, 0, 0]).unwrap_err(),
            WireError::EmptyFrame
        );
        assert_eq!(
            LiveInterval::decode(&[4]).unwrap_err(),
            WireError::UnknownState(4)
        );
        let frame_of = |body: &[u8]| {
            let mut f = vec![LIVE_MARKER];
            f.extend_from_slice(&(body.len() as u32).to_be_bytes());
            f.extend_from_slice(body);
            f
        };
        let deep = format!(
            "{{\"seq\":1,\"start\":0,\"end\":1,\"x\":{}{}}}",
            "[".repeat(40),
            "]".repeat(40)
        );
        let mut many = String::from("{\"seq\":1,\"start\":0,\"end\":1,\"x\":[");
        many.push_str(&"0,".repeat(MAX_LIVE_TOKENS));
        many.push_str("0]}");
        for bad in [
            &b"[1]"[..],
            b"{\"seq\":-1,\"start\":0,\"end\":1}",
            b"{\"seq\":1,\"start\":\"a\",\"end\":1}",
            b"{\"seq\":1,\"start\":0,\"end\":1,\"observation\":{\"cpus\":7}}",
            b"{\"seq\":1,\"start\":0,\"end\":1,\"head\":{\"role\":\"sideways\"}}",
            b"{\"seq\":1,\"start\":0,\"end\":1e999}",
            b"\xff\xfe",
            deep.as_bytes(),
            many.as_bytes(),
        ] {
            let e = LiveInterval::decode(&frame_of(bad)).unwrap_err();
            assert!(
                matches!(e, WireError::BadJson(_) | WireError::BadField { .. }),
                "{e:?} for {:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // A head is typed: the model's end observation.
        let mut with_head = sample();
        with_head.head = Some(EndObservation {
            role: Role::Receiver,
            host: None,
            iface: Some("eth0".into()),
            iface_mtu: Some(9000),
            iface_speed_mbps: None,
            nic_numa_node: None,
            nic_irqs: vec![1, 2],
            topology: Default::default(),
            intervals: vec![],
            total: Default::default(),
            notes: vec![],
            cpu_quota: None,
            iface_link: None,
            iface_stack: None,
        });
        let f = with_head.encode().unwrap();
        assert_eq!(LiveInterval::decode(&f).unwrap().0, with_head);
    }

    #[test]
    fn the_budget_refills_with_time_and_bounds_a_flood() {
        let mut b = LiveBudget::new();
        let t0 = Duration::from_secs(5);
        let taken = (0..1000).filter(|_| b.take(t0)).count();
        assert_eq!(taken, LiveBudget::BURST as usize);
        // One second later: PER_SECOND more.
        let t1 = t0 + Duration::from_secs(1);
        let taken = (0..1000).filter(|_| b.take(t1)).count();
        assert_eq!(taken, LiveBudget::PER_SECOND as usize);
        // One frame per interval is always taken.
        let mut b = LiveBudget::new();
        assert!((0..100u64).all(|i| b.take(Duration::from_millis(100 * i))));
    }
}
