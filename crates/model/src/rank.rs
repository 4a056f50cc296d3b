//! How a verdict's finding stands: how its evidence relates to the test ([`Bound`]) and its row
//! in the precedence table ([`Rank`]; the table itself is [`crate::precedence`]).

use serde::{Deserialize, Serialize};

/// How a finding's own evidence relates to the test it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// Its evidence shows it bound this test (a saturated CPU, a window the data filled, a
    /// shaper's flat rate with its drops or queue, loss at the model's ceiling).
    Binding,
    /// The figures are what it would give, but nothing shows it directly (a flat rate with no
    /// drops or queue, steal on a CPU that did not saturate).
    Consistent,
    /// True of the setup, with no evidence that it bound this test: said, never the headline.
    Fact,
}

impl Bound {
    /// `bound`, `consistent`, `fact`.
    pub fn word(self) -> &'static str {
        match self {
            Bound::Binding => "bound",
            Bound::Consistent => "consistent",
            Bound::Fact => "fact",
        }
    }
}

/// A row of the precedence table: a class of evidence (an id can sit in two rows, as
/// `receiver-shares-cpu-with-softirq` does: first when the softirq takes a quarter of the CPU,
/// else among the saturated CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rank {
    ForeignDatagrams,
    TestEnded,
    AtLineRate,
    BondMember,
    FrameSize,
    CpuQuota,
    UdpLoss,
    OwnPacing,
    Shaper,
    SharedCpus,
    TcpWindow,
    Loss,
    OwnSoftirq,
    Contention,
    SaturatedCpu,
    Nothing,
}
