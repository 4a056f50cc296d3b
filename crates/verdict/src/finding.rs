//! What a rule finds, and the rule itself: a unit with its name, the ids it gives and its check
//! over the one [`Context`] every rule reads.

use wirespeed_model::{
    Agreement, Also, Bound, Confidence, Evidence, Rank, Standing, Verdict, VerdictEnd, VerdictId,
};

use super::context::Context;

/// One finding of one rule: the verdict it would be (id, end, line), its row in the precedence
/// table, how its own evidence relates to this test and how strongly, and what it read.
#[derive(Debug, Clone)]
pub(crate) struct Finding {
    pub verdict: Verdict,
    pub rank: Rank,
    pub bound: Bound,
    /// 0 to 1: how strongly the measurement shows that it bound the test (see
    /// [`wirespeed_model::precedence`]); within a row, the stronger leads.
    pub strength: f64,
    /// The counters the rule read (docs/explain.md's "evidence" column, in words).
    pub counters: &'static [&'static str],
    /// The intervals in which its condition held, where the rule has a per-interval reading.
    pub intervals: Option<Agreement>,
    /// The CPU it is about, where it is about one.
    pub cpu: Option<u32>,
    /// Another finding whose line this one's line quotes: that one is said once, here.
    pub quotes: Option<Key>,
    /// Its check sat near its threshold (a marginal verdict under load).
    pub near: Option<Near>,
}

/// Which finding, for saying each once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub id: VerdictId,
    pub end: Option<VerdictEnd>,
    pub cpu: Option<u32>,
}

/// How near its threshold a finding's check sat.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Near {
    /// A `TCP_INFO` limit's share of busy time (%), within the marginal points of its
    /// threshold, or below it for a window found full.
    Share(f64),
    /// Its intervals did not agree.
    Disagreed,
}

impl Finding {
    pub fn new(
        id: VerdictId,
        end: Option<VerdictEnd>,
        line: impl Into<String>,
        rank: Rank,
        bound: Bound,
        strength: f64,
    ) -> Finding {
        Finding {
            verdict: Verdict::new(id, end, line),
            rank,
            bound,
            strength: if strength.is_finite() {
                strength.clamp(0.0, 1.0)
            } else {
                0.0
            },
            counters: &[],
            intervals: None,
            cpu: None,
            quotes: None,
            near: None,
        }
    }

    pub fn reads(mut self, counters: &'static [&'static str]) -> Finding {
        self.counters = counters;
        self
    }

    pub fn agreed(mut self, intervals: Option<Agreement>) -> Finding {
        self.intervals = intervals;
        self
    }

    pub fn on_cpu(mut self, cpu: u32) -> Finding {
        self.cpu = Some(cpu);
        self
    }

    pub fn id(&self) -> VerdictId {
        self.verdict.id
    }

    pub fn key(&self) -> Key {
        Key {
            id: self.verdict.id,
            end: self.verdict.end,
            cpu: self.cpu,
        }
    }

    /// Clear when three quarters of the judged intervals agreed.
    pub fn confidence(&self) -> Confidence {
        match self.intervals {
            Some(a) if a.of > 0 && a.agreed * 4 >= a.of * 3 => Confidence::Clear,
            Some(a) if a.of > 0 => Confidence::Marginal,
            _ => Confidence::WholeTest,
        }
    }

    pub fn evidence(&self) -> Evidence {
        Evidence {
            counters: self.counters.iter().map(|c| c.to_string()).collect(),
            intervals: self.intervals,
            confidence: self.confidence(),
        }
    }

    /// The verdict, with its bound, strength, row and evidence.
    pub fn into_verdict(self) -> Verdict {
        let evidence = self.evidence();
        let mut v = self.verdict;
        v.standing = Standing {
            bound: Some(self.bound),
            strength: Some((self.strength * 1000.0).round() / 1000.0),
            rank: Some(self.rank),
        };
        v.evidence = Some(evidence);
        v
    }

    /// The order of the decision: bound first, then the row, then the stronger.
    pub fn order(&self, other: &Finding) -> std::cmp::Ordering {
        use wirespeed_model::precedence::position;
        self.bound
            .cmp(&other.bound)
            .then(position(self.rank).cmp(&position(other.rank)))
            .then(other.strength.total_cmp(&self.strength))
    }
}

/// What a rule reports.
#[derive(Debug, Clone)]
pub(crate) enum Out {
    Finding(Finding),
    /// A line that is no finding (loss that did not bind, and why).
    Note(Also),
    /// Loss far below its model's ceiling with nothing in the loss counters to explain it:
    /// the decision completes the line with what held the rate lower (the headline), or says
    /// that nothing else was found.
    LossBelowModel(String),
}

/// A rule: its name, the ids its findings have, and its check.
pub(crate) struct Rule {
    pub name: &'static str,
    pub ids: &'static [VerdictId],
    pub check: fn(&Context) -> Vec<Out>,
}
