//! wirespeed's protocol extension: one namespaced key, `"wirespeed"`, in the parameters
//! (client to server) and in the results (both directions).
//!
//! iperf3 looks keys up by name and ignores the rest, so an iperf3 peer never notices the
//! extension; a wirespeed peer sees it and knows its peer is wirespeed. The client announces
//! itself in the parameters; the server announces itself in its results (the only message an
//! iperf3 server sends that can carry JSON), so each end learns what the other is.
//!
//! What the extension carries is typed: the workers, the observation and the IRQ move are the
//! types of `wirespeed-model`, the same ones the report holds. Unknown keys from a newer peer
//! are kept aside (`extra`) and otherwise ignored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wirespeed_model::cpuset::{self, CpuSet};
use wirespeed_model::{EndObservation, MoveReport, SendPath};

pub use wirespeed_model::Worker;

use crate::WireError;

/// One worker thread of an end (the model's [`Worker`], under its older protocol name).
pub type WorkerInfo = Worker;

/// The key under which everything wirespeed adds travels.
pub const EXT_KEY: &str = "wirespeed";

/// Version of the extension's own layout (not of the program).
pub const EXT_PROTOCOL_VERSION: u32 = 1;

/// Most CPUs one CPU list in the extension may name.
pub const MAX_CPU_LIST: usize = 8192;

fn is_false(b: &bool) -> bool {
    !*b
}

/// The send path a client asks a server for (`send_path`), as it crossed the wire: one this
/// version knows, or the name as sent. A server refuses an unknown one by name; it never runs
/// its default in its place. Written as the path's name either way, so the key keeps its shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WireSendPath {
    Known(SendPath),
    Unknown(String),
}

impl WireSendPath {
    /// The path, when this version knows it.
    pub fn known(&self) -> Option<SendPath> {
        match self {
            WireSendPath::Known(p) => Some(*p),
            WireSendPath::Unknown(_) => None,
        }
    }
}

impl From<SendPath> for WireSendPath {
    fn from(p: SendPath) -> WireSendPath {
        WireSendPath::Known(p)
    }
}

/// A pre-shared-key tag (`--psk`, see [`crate::psk`]): when it was made (Unix seconds) and
/// its HMAC-SHA256, hex. It travels as the extension's `psk` key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PskTag {
    pub ts: i64,
    pub mac: String,
}

/// What a wirespeed client asks of a wirespeed server, beyond iperf3's parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParamsExt {
    /// The client program's version, e.g. `"0.1.0"`.
    pub version: String,
    /// Extension layout version ([`EXT_PROTOCOL_VERSION`]).
    #[serde(default)]
    pub protocol: u32,
    /// `--server-cpus`: one pinned worker per CPU on the server, streams spread round-robin.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "cpuset::as_array::option"
    )]
    pub server_cpus: Option<CpuSet>,
    /// Each stream's two ends on one CPU (a TCP test over loopback with many streams): the
    /// client pins its worker of stream k, in either direction, to the k mod len'th of these
    /// CPUs and asks the server to pin its worker of the same stream there too. A server that
    /// places its workers otherwise (`server_cpus`, `-A`, its own options), runs the test over
    /// another path, or may not use one of these CPUs runs them unpinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_cpus: Option<Vec<u32>>,
    /// Ask the server to observe where the work runs and return it in its results.
    #[serde(default, skip_serializing_if = "is_false")]
    pub observe: bool,
    /// The server's receive path: `"copy"`, `"skip"` (`--skip-rx-copy` applies to whichever
    /// end receives) or `"zerocopy"` (`--zerocopy-rx`: TCP_ZEROCOPY_RECEIVE, copying where the
    /// kernel cannot map).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_path: Option<String>,
    /// The server's send path in `-R`/`--bidir` when the client asked for zero-copy:
    /// `"copy"`, `"sendfile"`, `"splice"`, `"msg_zerocopy"` (any other name is kept to be
    /// refused by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path: Option<WireSendPath>,
    /// Both ends half-close their sending data connections when they stop, so the receiver
    /// counts every byte that was sent before it reports (totals agree exactly).
    #[serde(default, skip_serializing_if = "is_false")]
    pub drain: bool,
    /// A tune request: move the queue IRQs of the server's NIC for this test (the interface
    /// that carries the test) to these CPUs, one CPU per IRQ in turn, before the data phase,
    /// and put them back after it. A server does this only when started with `--allow-tune`;
    /// otherwise it refuses the test. The server reports what it did in its results
    /// ([`ResultsExt::irq_move`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "cpuset::as_array::option"
    )]
    pub irq_cpus: Option<CpuSet>,
    /// The client reads live frames ([`crate::live`]): the server sends its observation of
    /// each interval while the test runs, and the client answers with its own once the first
    /// one arrived.
    #[serde(default, skip_serializing_if = "is_false")]
    pub live: bool,
    /// `--psk`: the tag over the cookie, these parameters and the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psk: Option<PskTag>,
    /// The client puts the test's token after each UDP connect word
    /// ([`crate::udp::connect_msg_with_token`]): the server attaches only words that carry it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub udp_token: bool,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a wirespeed end reports about itself next to iperf3's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultsExt {
    pub version: String,
    #[serde(default)]
    pub protocol: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<Worker>,
    /// The send path that actually ran on this end (after any fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path: Option<String>,
    /// The receive path that actually ran on this end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_path: Option<String>,
    /// This end's observation of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<EndObservation>,
    /// Why the peer's `observation` was dropped on decode (it did not parse); a bad
    /// observation never fails the results. Never sent.
    #[serde(skip)]
    pub observation_error: Option<String>,
    /// What a server did with the client's tune request (`irq_cpus`): the interface, the IRQs
    /// moved, where the kernel put them, the journal and whether it was reverted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_move: Option<MoveReport>,
    /// `--psk`: the tag over the cookie, these results and the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psk: Option<PskTag>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A CPU list of `len` CPUs under `key` is within [`MAX_CPU_LIST`].
fn check_cpus(key: &str, len: Option<usize>) -> Result<(), WireError> {
    match len {
        Some(n) if n > MAX_CPU_LIST => Err(WireError::field(
            key,
            format!("{n} CPUs, more than {MAX_CPU_LIST}"),
        )),
        _ => Ok(()),
    }
}

impl ParamsExt {
    pub(crate) fn from_value(v: &Value) -> Result<ParamsExt, WireError> {
        let e: ParamsExt = serde_json::from_value(v.clone())
            .map_err(|e| WireError::field(EXT_KEY, e.to_string()))?;
        check_cpus(
            "wirespeed.server_cpus",
            e.server_cpus.as_ref().map(CpuSet::len),
        )?;
        check_cpus("wirespeed.irq_cpus", e.irq_cpus.as_ref().map(CpuSet::len))?;
        check_cpus(
            "wirespeed.paired_cpus",
            e.paired_cpus.as_ref().map(Vec::len),
        )?;
        Ok(e)
    }
}

impl ResultsExt {
    /// Decode a peer's extension. The observation is decoded on its own: when it does not
    /// parse, it is dropped with the reason in [`ResultsExt::observation_error`] and the rest
    /// of the results still count.
    pub(crate) fn from_value(v: &Value) -> Result<ResultsExt, WireError> {
        let mut v = v.clone();
        let observation = v.as_object_mut().and_then(|o| o.remove("observation"));
        let mut e: ResultsExt =
            serde_json::from_value(v).map_err(|e| WireError::field(EXT_KEY, e.to_string()))?;
        match observation.map(serde_json::from_value::<EndObservation>) {
            None => {}
            Some(Ok(o)) => e.observation = Some(o),
            Some(Err(err)) => e.observation_error = Some(err.to_string()),
        }
        if e.workers.len() > MAX_CPU_LIST {
            return Err(WireError::field("wirespeed.workers", "too many workers"));
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_model::MoveOutcome;

    #[test]
    fn a_tune_request_travels_and_its_size_is_capped() {
        let v = serde_json::json!({"version": "0.1.0", "protocol": 1, "irq_cpus": [3, 8]});
        let e = ParamsExt::from_value(&v).unwrap();
        assert_eq!(e.irq_cpus, Some(CpuSet::from_cpus([3, 8])));
        assert_eq!(
            serde_json::to_value(&e).unwrap()["irq_cpus"],
            serde_json::json!([3, 8])
        );
        // Absent: no key written, so older servers see nothing new.
        let plain = ParamsExt::from_value(&serde_json::json!({"version": "0.1.0"})).unwrap();
        assert!(plain.irq_cpus.is_none());
        assert!(serde_json::to_value(&plain)
            .unwrap()
            .get("irq_cpus")
            .is_none());
        let many: Vec<u32> = (0..=MAX_CPU_LIST as u32).collect();
        let big = serde_json::json!({"version": "x", "irq_cpus": many});
        let err = ParamsExt::from_value(&big).unwrap_err().to_string();
        assert!(err.contains("wirespeed.irq_cpus"), "{err}");
        let bad = serde_json::json!({"version": "x", "irq_cpus": [-1]});
        assert!(ParamsExt::from_value(&bad).is_err());
    }

    /// The CPUs each stream's two ends are paired on travel as an ordered list (the client's
    /// rotation kept), are absent unless set, and a list past [`MAX_CPU_LIST`] or of
    /// non-CPUs is refused by its key.
    #[test]
    fn paired_cpus_travel_in_order_and_are_bounded() {
        let e = ParamsExt {
            paired_cpus: Some(vec![3, 0, 1, 2]),
            ..ParamsExt::default()
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["paired_cpus"], serde_json::json!([3, 0, 1, 2]));
        assert_eq!(
            ParamsExt::from_value(&v).unwrap().paired_cpus,
            e.paired_cpus
        );
        assert!(serde_json::to_value(ParamsExt::default())
            .unwrap()
            .get("paired_cpus")
            .is_none());
        let many: Vec<u32> = std::iter::repeat_n(0, MAX_CPU_LIST + 1).collect();
        let big = serde_json::json!({"version": "x", "paired_cpus": many});
        let err = ParamsExt::from_value(&big).unwrap_err().to_string();
        assert!(err.contains("wirespeed.paired_cpus"), "{err}");
        for bad in [serde_json::json!([-1]), serde_json::json!("0-3")] {
            let v = serde_json::json!({"version": "x", "paired_cpus": bad});
            assert!(ParamsExt::from_value(&v).is_err(), "{v}");
        }
    }

    #[test]
    fn the_send_path_travels_by_its_name_and_an_unknown_one_is_kept_by_name() {
        for p in SendPath::ALL {
            let e = ParamsExt {
                send_path: Some(p.into()),
                ..ParamsExt::default()
            };
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["send_path"], serde_json::json!(p.as_str()));
            let back = ParamsExt::from_value(&v).unwrap();
            assert_eq!(back.send_path, Some(WireSendPath::Known(p)));
            assert_eq!(back.send_path.unwrap().known(), Some(p));
        }
        let v = serde_json::json!({"version": "9.0.0", "send_path": "io_uring"});
        let e = ParamsExt::from_value(&v).unwrap();
        assert_eq!(
            e.send_path,
            Some(WireSendPath::Unknown("io_uring".into())),
            "kept to be refused by name, never read as the default"
        );
        assert_eq!(e.send_path.as_ref().unwrap().known(), None);
        assert_eq!(serde_json::to_value(&e).unwrap()["send_path"], "io_uring");
        // Not a name at all: the parameters are unreadable.
        let bad = serde_json::json!({"version": "x", "send_path": 7});
        assert!(ParamsExt::from_value(&bad).is_err());
    }

    #[test]
    fn the_servers_irq_report_is_typed() {
        let m = MoveReport {
            iface: "eth1".into(),
            cpus: CpuSet::from_cpus([3]),
            outcome: MoveOutcome {
                moved: vec![99],
                ..MoveOutcome::default()
            },
            ..MoveReport::default()
        };
        let v = serde_json::to_value(ResultsExt {
            version: "0.1.0".into(),
            irq_move: Some(m.clone()),
            ..ResultsExt::default()
        })
        .unwrap();
        assert_eq!(v["irq_move"]["cpus"], serde_json::json!([3]));
        let e = ResultsExt::from_value(&v).unwrap();
        assert_eq!(e.irq_move, Some(m));
        // A report of the wrong shape is a protocol error, not silently dropped.
        let bad = serde_json::json!({"version": "0.1.0", "irq_move": {"iface": 7}});
        assert!(ResultsExt::from_value(&bad).is_err());
    }

    #[test]
    fn a_bad_observation_is_dropped_with_its_reason_and_unknown_keys_are_ignored() {
        let v = serde_json::json!({
            "version": "0.1.0",
            "workers": [{"cpu_requested": 2, "cpus_seen": [2, 1], "streams": [1]}],
            "observation": {"role": "sideways"},
            "from_the_future": {"x": 1}
        });
        let e = ResultsExt::from_value(&v).unwrap();
        assert!(e.observation.is_none());
        assert!(e.observation_error.unwrap().contains("sideways"));
        assert_eq!(e.workers[0].cpus_seen, CpuSet::from_cpus([1, 2]));
        assert_eq!(
            serde_json::to_value(&e.workers[0]).unwrap()["cpus_seen"],
            serde_json::json!([1, 2])
        );
    }
}
