//! One worker thread of an end, as both ends report it.

use serde::{Deserialize, Serialize};

use crate::cpuset::{self, CpuSet};

/// One pinned worker thread and the streams it carried: where it was asked to run, where it
/// ran, what it carried. The same type travels in the protocol extension (`workers`) and sits
/// in the report (`wirespeed.workers`, `wirespeed.remote_workers`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worker {
    /// The CPU it was asked to run on; `None` when not pinned.
    #[serde(default)]
    pub cpu_requested: Option<u32>,
    /// Pinned by wirespeed, not by the user: over loopback each stream's two ends on one CPU
    /// (the engine's pairing rule). Absent when false, and from peers that do not say.
    #[serde(default, skip_serializing_if = "is_false")]
    pub paired: bool,
    /// The CPUs it was actually seen running on (sched_getcpu samples), written as an array
    /// of numbers, ascending.
    #[serde(default, with = "cpuset::as_array")]
    pub cpus_seen: CpuSet,
    /// Stream ids (`socket` values) it carried.
    #[serde(default)]
    pub streams: Vec<u32>,
    /// Zero-copy receive (`--zerocopy-rx`): what its receiving streams took by mapping pages
    /// and what they copied. Absent on the other receive paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_zerocopy: Option<RxZerocopy>,
    /// How a TCP worker was woken for its streams; absent for UDP workers and from peers that
    /// do not say, or say a word this version does not know.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_word"
    )]
    pub wake: Option<Wake>,
    /// Its thread's kernel id (its `/proc/self/task` entry, `top -H`'s PID): what ties it to its
    /// thread's scheduling in the observation. Absent from peers that do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How a TCP worker is woken for its streams: the rule the engine picks for each test end
/// from how its workers sit on its CPUs, and what the worker ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wake {
    /// Receivers on a short path set a wake-up mark (`SO_RCVLOWAT`): woken once per read
    /// instead of once per segment, at the price of an ACK for every second segment below the
    /// mark (the kernel acknowledges at once while a reader waits for its mark). What a worker
    /// with a CPU of its own gains from.
    #[default]
    Mark,
    /// The worker runs under `SCHED_BATCH` and its copying receivers set no mark: a woken
    /// worker waits for the running one to block or spend its slice instead of preempting it,
    /// so a receiver finds a batch queued when it runs, and no early ACKs are sent. What
    /// workers that share their CPUs with each other and the other end's over loopback gain
    /// from (the engine's rule says where). A zero-copy receiver keeps its mark (a mapping
    /// call maps what is queued).
    Batch,
}

/// A peer's word for one of this version's enums (`wake`, a thread's `role`): `None` when
/// absent, not a string, or not one this version knows (a newer peer's word does not cost the
/// rest of its report).
pub(crate) fn known_word<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Word {
        Text(String),
        Other(serde::de::IgnoredAny),
    }
    use serde::de::IntoDeserializer;
    Ok(match Option::<Word>::deserialize(d)? {
        // serde's own names for the variants: no second list of them
        Some(Word::Text(w)) => T::deserialize(
            IntoDeserializer::<serde::de::value::Error>::into_deserializer(w.as_str()),
        )
        .ok(),
        Some(Word::Other(_)) | None => None,
    })
}

impl Wake {
    /// The word `-J` and the protocol extension carry (serde's lowercase name; the round-trip
    /// test holds the two together).
    pub fn as_str(self) -> &'static str {
        match self {
            Wake::Mark => "mark",
            Wake::Batch => "batch",
        }
    }
}

/// The bytes a worker received on the zero-copy receive path, by how they came: the two add
/// up to everything its receiving streams received (after a fallback to copying, the rest is
/// copied).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxZerocopy {
    /// Bytes in pages the kernel mapped into the receiver (no copy).
    #[serde(default)]
    pub mapped_bytes: u64,
    /// Bytes copied: what could not be mapped (a short tail, a buffer not in whole pages).
    #[serde(default)]
    pub copied_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker says how it was woken in one lowercase word, and a peer that says nothing
    /// (or a UDP worker) has no wake at all rather than a made-up one.
    #[test]
    fn a_workers_wake_is_one_word_and_absent_when_unsaid() {
        let w = Worker {
            streams: vec![1],
            wake: Some(Wake::Batch),
            ..Worker::default()
        };
        let text = serde_json::to_string(&w).expect("serialize");
        assert!(text.contains(r#""wake":"batch""#), "{text}");
        assert_eq!(serde_json::from_str::<Worker>(&text).expect("parse"), w);
        let old: Worker =
            serde_json::from_str(r#"{"cpu_requested":null,"cpus_seen":[0],"streams":[1]}"#)
                .expect("parse");
        assert_eq!(old.wake, None);
        assert!(!serde_json::to_string(&old)
            .expect("serialize")
            .contains("wake"));
        // a newer peer's word costs nothing else of its report
        let newer: Worker =
            serde_json::from_str(r#"{"streams":[1],"wake":"spin"}"#).expect("parse");
        assert_eq!((newer.wake, newer.streams), (None, vec![1]));
        let odd: Worker = serde_json::from_str(r#"{"streams":[1],"wake":7}"#).expect("parse");
        assert_eq!(odd.wake, None);
    }

    /// A worker the pairing rule pinned says so; one the user pinned, or a peer that does not
    /// say, writes nothing of it.
    #[test]
    fn a_paired_worker_says_so_and_others_say_nothing() {
        let w = Worker {
            cpu_requested: Some(1),
            paired: true,
            streams: vec![1],
            ..Worker::default()
        };
        let text = serde_json::to_string(&w).expect("serialize");
        assert!(text.contains(r#""paired":true"#), "{text}");
        assert_eq!(serde_json::from_str::<Worker>(&text).expect("parse"), w);
        let user = Worker { paired: false, ..w };
        assert!(!serde_json::to_string(&user)
            .expect("serialize")
            .contains("paired"));
        let old: Worker =
            serde_json::from_str(r#"{"cpu_requested":1,"cpus_seen":[1],"streams":[1]}"#)
                .expect("parse");
        assert!(!old.paired);
    }
}
