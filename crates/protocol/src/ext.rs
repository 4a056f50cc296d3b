//! wirespeed's protocol extension: one namespaced key, `"wirespeed"`, in the parameters
//! (client to server) and in the results (both directions).
//!
//! iperf3 looks keys up by name and ignores the rest, so an iperf3 peer never notices the
//! extension; a wirespeed peer sees it and knows its peer is wirespeed. The client announces
//! itself in the parameters; the server announces itself in its results (the only message an
//! iperf3 server sends that can carry JSON), so each end learns what the other is.
//!
//! Unknown keys inside the extension are kept (`extra`), so a newer peer's additions survive
//! and other crates can add sections (for example the per-CPU observation of a test) without
//! changing this crate.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::WireError;

/// The key under which everything wirespeed adds travels.
pub const EXT_KEY: &str = "wirespeed";

/// Version of the extension's own layout (not of the program).
pub const EXT_PROTOCOL_VERSION: u32 = 1;

/// Most CPUs one CPU list in the extension may name.
pub const MAX_CPU_LIST: usize = 8192;

fn is_false(b: &bool) -> bool {
    !*b
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<Vec<u32>>,
    /// Ask the server to observe where the work runs and return it in its results.
    #[serde(default, skip_serializing_if = "is_false")]
    pub observe: bool,
    /// The server's receive path: `"copy"` or `"skip"` (`--skip-rx-copy` applies to whichever
    /// end receives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_path: Option<String>,
    /// The server's send path in `-R`/`--bidir` when the client asked for zero-copy:
    /// `"copy"`, `"sendfile"`, `"splice"`, `"msg_zerocopy"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path: Option<String>,
    /// Both ends half-close their sending data connections when they stop, so the receiver
    /// counts every byte that was sent before it reports (totals agree exactly).
    #[serde(default, skip_serializing_if = "is_false")]
    pub drain: bool,
    /// A tune request: move the queue IRQs of the server's NIC for this test (the interface
    /// that carries the test) to these CPUs, one CPU per IRQ in turn, before the data phase,
    /// and put them back after it. A server does this only when started with `--allow-tune`;
    /// otherwise it refuses the test. The server reports what it did in its results
    /// ([`ResultsExt::irq_move`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_cpus: Option<Vec<u32>>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One worker thread of an end: where it was asked to run, where it ran, what it carried.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerInfo {
    #[serde(default)]
    pub cpu_requested: Option<u32>,
    #[serde(default)]
    pub cpus_seen: Vec<u32>,
    #[serde(default)]
    pub streams: Vec<u32>,
}

/// What a wirespeed end reports about itself next to iperf3's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultsExt {
    pub version: String,
    #[serde(default)]
    pub protocol: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerInfo>,
    /// The send path that actually ran on this end (after any fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path: Option<String>,
    /// The receive path that actually ran on this end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_path: Option<String>,
    /// This end's observation of the test (filled by the observation code; opaque here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Value>,
    /// What a server did with the client's tune request (`irq_cpus`): the interface, the IRQs
    /// moved, where the kernel put them, the journal and whether it was reverted (filled by
    /// the engine; opaque here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_move: Option<Value>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn check_cpus(key: &str, list: Option<&Vec<u32>>) -> Result<(), WireError> {
    if let Some(l) = list {
        if l.len() > MAX_CPU_LIST {
            return Err(WireError::field(
                key,
                format!("{} CPUs, more than {MAX_CPU_LIST}", l.len()),
            ));
        }
    }
    Ok(())
}

impl ParamsExt {
    pub(crate) fn from_value(v: &Value) -> Result<ParamsExt, WireError> {
        let e: ParamsExt = serde_json::from_value(v.clone())
            .map_err(|e| WireError::field(EXT_KEY, e.to_string()))?;
        check_cpus("wirespeed.server_cpus", e.server_cpus.as_ref())?;
        check_cpus("wirespeed.irq_cpus", e.irq_cpus.as_ref())?;
        Ok(e)
    }
}

impl ResultsExt {
    pub(crate) fn from_value(v: &Value) -> Result<ResultsExt, WireError> {
        let e: ResultsExt = serde_json::from_value(v.clone())
            .map_err(|e| WireError::field(EXT_KEY, e.to_string()))?;
        if e.workers.len() > MAX_CPU_LIST {
            return Err(WireError::field("wirespeed.workers", "too many workers"));
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tune_request_travels_and_its_size_is_capped() {
        let v = serde_json::json!({"version": "0.1.0", "protocol": 1, "irq_cpus": [3, 8]});
        let e = ParamsExt::from_value(&v).unwrap();
        assert_eq!(e.irq_cpus, Some(vec![3, 8]));
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
        let big = serde_json::json!({"version": "x", "irq_cpus": vec![1; MAX_CPU_LIST + 1]});
        let err = ParamsExt::from_value(&big).unwrap_err().to_string();
        assert!(err.contains("wirespeed.irq_cpus"), "{err}");
        let bad = serde_json::json!({"version": "x", "irq_cpus": [-1]});
        assert!(ParamsExt::from_value(&bad).is_err());
    }

    #[test]
    fn the_servers_irq_report_is_kept_opaque() {
        let v =
            serde_json::json!({"version": "0.1.0", "irq_move": {"iface": "eth1", "moved": [99]}});
        let e = ResultsExt::from_value(&v).unwrap();
        assert_eq!(e.irq_move.unwrap()["iface"], "eth1");
    }
}
