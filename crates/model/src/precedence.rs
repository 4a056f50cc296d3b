//! Which finding leads a verdict when several hold: one table, as data.
//!
//! Every rule of the verdict (`wirespeed_verdict`) reports each finding with how its
//! own evidence relates to this test ([`Bound`]) and how strongly ([`Finding::strength`] in
//! the verdict crate, `strength` in `-J`). The headline is the first finding by
//! [`Bound`] (a limit whose evidence shows it bound the test, before one that is only
//! consistent with the figures, before a fact about the setup), then by its row here, then by
//! strength. A fact about the setup (both ends on one host, MTUs that differ) is a row like any
//! other, but its rule says `Binding` only where its own evidence shows it bound this test (a
//! CPU both ends used was saturated; a CPU paid for the smaller frames), and `Fact` otherwise:
//! a fact never outranks a limit that bound. With no finding that bound or is consistent, the
//! headline is `no-cpu-saturated`.
//!
//! docs/explain.md's precedence table is [`markdown`]'s output (a test keeps them equal), and
//! [`crate::VerdictId::ALL`] is read from the table: every id once, in the order of its first row.

pub use crate::rank::{Bound, Rank};
use crate::verdict::VerdictId;

/// One row: its rank, the ids its rules give, and why it leads the rows below it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    pub rank: Rank,
    pub ids: &'static [VerdictId],
    pub reason: &'static str,
}

/// The ids of the saturated-CPU row, one for each cause of a saturated CPU; the verdict's rule
/// for a saturated CPU reports these.
pub const SATURATED_CPU_IDS: &[VerdictId] = &[
    VerdictId::ReceiverSharesCpuWithSoftirq,
    VerdictId::IrqNumaRemote,
    VerdictId::AppNumaRemote,
    VerdictId::IrqCrossL3,
    VerdictId::ReceiverCpuBound,
    VerdictId::SenderCpuBound,
    VerdictId::SoftirqCpuBound,
    VerdictId::CpuSteal,
];

/// The table, first row first.
pub const PRECEDENCE: &[Row] = &[
    Row {
        rank: Rank::ForeignDatagrams,
        ids: &[VerdictId::UdpForeignDatagrams],
        reason: "datagrams that were not this test's make its loss figures wrong: nothing they would explain can be judged",
    },
    Row {
        rank: Rank::TestEnded,
        ids: &[VerdictId::MtuBlackhole, VerdictId::PeerSilent],
        reason: "the test ended before its figures were complete: what it measured is cut short",
    },
    Row {
        rank: Rank::AtLineRate,
        ids: &[VerdictId::LineRate],
        reason: "at the link's speed no host or path limit could have moved more",
    },
    Row {
        rank: Rank::BondMember,
        ids: &[VerdictId::BondMemberLimited],
        reason: "at one bond member's speed on a bond that hashes flows: the member is the line the flows had, whatever else is found on the host",
    },
    Row {
        rank: Rank::FrameSize,
        ids: &[VerdictId::PmtuBelowMtu, VerdictId::MtuMismatch],
        reason: "smaller frames than the link carries set the per-packet work a saturated CPU paid: the cause before its symptom (bound only with a saturated CPU on TCP; otherwise a fact)",
    },
    Row {
        rank: Rank::CpuQuota,
        ids: &[VerdictId::CpuQuota],
        reason: "a cgroup that ran out of CPU time makes its CPUs look idle: it comes before every CPU and path reading",
    },
    Row {
        rank: Rank::UdpLoss,
        ids: &[VerdictId::UdpReceiverCpuBound, VerdictId::UdpPathLoss],
        reason: "a UDP test that lost its datagrams did not get its rate: where they were lost is the limit",
    },
    Row {
        rank: Rank::OwnPacing,
        ids: &[VerdictId::AtTargetRate],
        reason: "the test asked for this rate and got it: its own pacing set the figure",
    },
    Row {
        rank: Rank::Shaper,
        ids: &[VerdictId::PathLimited],
        reason: "a rate held flat while the path dropped or queued is a shaper's, and its drops also fit the loss model (a flat rate alone is only consistent)",
    },
    Row {
        rank: Rank::SharedCpus,
        ids: &[VerdictId::SameHost],
        reason: "both ends on one host: bound only where a CPU both ends' workers used was saturated (the ends took it from each other), after a shaper's drops (the path's, on any host); otherwise a fact",
    },
    Row {
        rank: Rank::TcpWindow,
        ids: &[VerdictId::WindowLimited, VerdictId::SndbufLimited],
        reason: "the kernel's own account of what held the sender (a marginal one under a contended CPU is only consistent); after the ends' shared CPUs, whose saturation keeps a receiver from draining its window",
    },
    Row {
        rank: Rank::Loss,
        ids: &[VerdictId::LossLimited],
        reason: "the path's loss allows about the rate measured (Mathis, or Padhye with the connection's timeouts)",
    },
    Row {
        rank: Rank::OwnSoftirq,
        ids: &[VerdictId::ReceiverSharesCpuWithSoftirq],
        reason: "the receive softirq took a quarter of the receiver's saturated CPU: the worker waits for its own packets, before other tasks' contention",
    },
    Row {
        rank: Rank::Contention,
        ids: &[VerdictId::CpuContended],
        reason: "another task held a worker's CPU: a CPU it saturated is not the worker's limit",
    },
    Row {
        rank: Rank::SaturatedCpu,
        ids: SATURATED_CPU_IDS,
        reason: "a saturated CPU: the busiest decides (a receiver's on a tie); steal on a CPU that did not saturate is only consistent",
    },
    Row {
        rank: Rank::Nothing,
        ids: &[VerdictId::NoCpuSaturated],
        reason: "no rule found a limit: the path or the peer, with what could not be seen said",
    },
];

/// Every id of the table once, in the order of its first row ([`VerdictId::ALL`]); `N` must be
/// the number of distinct ids, or the build fails.
pub(crate) const fn ids_in_table_order<const N: usize>() -> [VerdictId; N] {
    let mut out = [VerdictId::Unknown; N];
    let mut n = 0;
    let mut r = 0;
    while r < PRECEDENCE.len() {
        let ids = PRECEDENCE[r].ids;
        let mut i = 0;
        while i < ids.len() {
            let mut seen = false;
            let mut j = 0;
            while j < n {
                seen |= out[j] as u8 == ids[i] as u8;
                j += 1;
            }
            if !seen {
                assert!(n < N, "the table has more ids than VerdictId::ALL's length");
                out[n] = ids[i];
                n += 1;
            }
            i += 1;
        }
        r += 1;
    }
    assert!(
        n == N,
        "the table has fewer ids than VerdictId::ALL's length"
    );
    out
}

// Evaluated by every build (an associated const is only where it is used).
const _: &[VerdictId] = &VerdictId::ALL;

// The list of ids and the reading of one lie here, beside the table they come from: the
// verdict module defines the ids and knows nothing of the table.
impl VerdictId {
    /// Every id a verdict can have, in the order of their first rows in the precedence table
    /// ([`PRECEDENCE`], read from it when this builds; not [`VerdictId::Unknown`]).
    pub const ALL: [VerdictId; 26] = ids_in_table_order();
}

impl std::str::FromStr for VerdictId {
    type Err = crate::verdict::UnknownVerdictId;

    /// One of [`VerdictId::ALL`] by its string; anything else (`unknown` too) is an error.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VerdictId::ALL
            .into_iter()
            .find(|id| id.as_str() == s)
            .ok_or_else(|| crate::verdict::UnknownVerdictId(s.to_string()))
    }
}

/// The row of `rank`.
pub fn row(rank: Rank) -> &'static Row {
    PRECEDENCE
        .iter()
        .find(|r| r.rank == rank)
        .unwrap_or(&PRECEDENCE[PRECEDENCE.len() - 1])
}

impl VerdictId {
    /// Whether this verdict says the test ended before its figures were complete (its row is
    /// [`Rank::TestEnded`]): a client's error line then points at the verdict.
    pub fn ended_the_test(self) -> bool {
        row(Rank::TestEnded).ids.contains(&self)
    }
}

/// The position of `rank` in the table (0 first).
pub fn position(rank: Rank) -> usize {
    PRECEDENCE
        .iter()
        .position(|r| r.rank == rank)
        .unwrap_or(PRECEDENCE.len())
}

/// The table as docs/explain.md shows it: a Markdown table, first row first.
pub fn markdown() -> String {
    let mut s = String::from("| # | ids | why it leads the rows below |\n|---|---|---|\n");
    for (i, r) in PRECEDENCE.iter().enumerate() {
        let ids: Vec<String> = r.ids.iter().map(|id| format!("`{id}`")).collect();
        s.push_str(&format!(
            "| {} | {} | {} |\n",
            i + 1,
            ids.join(", "),
            r.reason
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_has_a_row_and_all_follows_the_table() {
        let mut first: Vec<VerdictId> = Vec::new();
        for r in PRECEDENCE {
            for id in r.ids {
                if !first.contains(id) {
                    first.push(*id);
                }
            }
        }
        assert_eq!(first, VerdictId::ALL, "VerdictId::ALL is the table's order");
    }

    #[test]
    fn every_rank_has_one_row() {
        for (i, r) in PRECEDENCE.iter().enumerate() {
            assert_eq!(position(r.rank), i);
            assert_eq!(row(r.rank).rank, r.rank);
            assert!(!r.reason.is_empty() && !r.ids.is_empty());
        }
    }

    #[test]
    fn bound_orders_binding_before_consistent_before_fact() {
        assert!(Bound::Binding < Bound::Consistent && Bound::Consistent < Bound::Fact);
        assert_eq!(serde_json::to_value(Bound::Binding).unwrap(), "binding");
    }

    #[test]
    fn only_the_test_ended_row_ends_the_test() {
        assert!(VerdictId::PeerSilent.ended_the_test());
        assert!(VerdictId::MtuBlackhole.ended_the_test());
        for r in PRECEDENCE.iter().filter(|r| r.rank != Rank::TestEnded) {
            for id in r.ids {
                assert!(!id.ended_the_test(), "{id} is in row {:?}", r.rank);
            }
        }
    }
}
