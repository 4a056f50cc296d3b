//! A wirespeed JSON document of any kind, recognised from its content: the input of the HTML
//! report, CSV and diff renderers.
//!
//! Kinds and how each is recognised (the keys each command's JSON output always has):
//! - test (`client -J`, iperf3's `-J`): an object with `start` and `intervals` or `end`;
//! - repeat (`client --repeat N -J`): an object with `runs` (an array) and `repeat`;
//! - sweep (`sweep -J`): an object whose `matrix` is an object with `cells`;
//! - latency (`latency --json`): an object with `cpus` and a `matrix` array;
//! - doctor (`doctor --json`): an object with `schema_version`, `findings` and `facts`.
//!
//! Repeat, sweep and latency documents are written by the explain crate, which sits above this
//! one; their readers here ([`RepeatDoc`], [`SweepDoc`], [`LatencyDoc`]) take only the keys the
//! renderers draw and ignore the rest, so documents of other versions still render. An optional
//! `topology` key (NUMA nodes and L3 groups) lets the heatmaps outline the groups.
//!
//! Documents are hostile input: [`Document::parse`] refuses more than [`MAX_DOCUMENT_BYTES`],
//! never panics, and says in one line what is wrong. Bytes alone do not bound memory (a 57 MiB
//! array of 30 million zeros is a gigabyte of JSON values), so values are capped too, before
//! any is kept: a counting pass that holds nothing refuses a document with more than
//! [`MAX_ARRAY_ELEMENTS`] in one array (intervals, streams, runs, cells) or more JSON values
//! than its [`Budget`] has left, and one budget ([`MAX_VALUES`]) is shared by every document a
//! command reads ([`Document::parse_within`]).

use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use wirespeed_model::{CpuSet, Topology};

use crate::model::TestResult;

/// The largest document [`Document::parse`] reads (a 1 h test with 128 streams is ~40 MiB).
pub const MAX_DOCUMENT_BYTES: usize = 64 << 20;

/// Most JSON values (numbers, strings, arrays, objects, ...) the documents of one command may
/// hold together: a 1 h test with 32 streams at 1 s intervals is ~1.5 M values; parsed and
/// rendered, a value costs ~240 bytes, so this bounds a command to ~500 MiB.
pub const MAX_VALUES: u64 = 2_000_000;

/// Most elements one array may have (intervals, streams, runs, cells): a day of 1 s
/// intervals is 86,400.
pub const MAX_ARRAY_ELEMENTS: usize = 100_000;

/// The JSON values the documents of one command may still hold ([`MAX_VALUES`] at first).
#[derive(Debug, Clone)]
pub struct Budget {
    values_left: u64,
    max_array: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new(MAX_VALUES, MAX_ARRAY_ELEMENTS)
    }
}

impl Budget {
    /// A budget of `values` JSON values in all, at most `max_array` elements in one array.
    pub fn new(values: u64, max_array: usize) -> Budget {
        Budget {
            values_left: values,
            max_array,
        }
    }

    /// Count the values of `bytes` (one JSON text) against the budget without keeping any;
    /// memory is that of the nesting depth only.
    fn spend(&mut self, bytes: &[u8]) -> Result<(), DocError> {
        use serde::de::DeserializeSeed;
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let start = self.values_left;
        let counted = Count {
            left: &mut self.values_left,
            max_array: self.max_array,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        match counted {
            Ok(()) => Ok(()),
            Err(e) if e.is_data() => Err(DocError::TooMany(e.to_string())),
            Err(e) => {
                // not JSON: nothing was kept, give the values back for the message's sake
                self.values_left = start;
                Err(DocError::NotJson(e.to_string()))
            }
        }
    }
}

/// The counting pass: every value takes one from `left`; an array longer than `max_array`
/// or a budget spent is a data error (`is_data`), before the value would be kept.
struct Count<'a> {
    left: &'a mut u64,
    max_array: usize,
}

impl Count<'_> {
    fn take<E: serde::de::Error>(&mut self) -> Result<(), E> {
        if *self.left == 0 {
            return Err(E::custom(format_args!(
                "more JSON values than the {MAX_VALUES} the documents of one command may hold"
            )));
        }
        *self.left -= 1;
        Ok(())
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: serde::de::Error>(mut self, _: bool) -> Result<(), E> {
        self.take()
    }
    fn visit_i64<E: serde::de::Error>(mut self, _: i64) -> Result<(), E> {
        self.take()
    }
    fn visit_u64<E: serde::de::Error>(mut self, _: u64) -> Result<(), E> {
        self.take()
    }
    fn visit_f64<E: serde::de::Error>(mut self, _: f64) -> Result<(), E> {
        self.take()
    }
    fn visit_str<E: serde::de::Error>(mut self, _: &str) -> Result<(), E> {
        self.take()
    }
    fn visit_unit<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.take()
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        let mut n = 0usize;
        while seq
            .next_element_seed(Count {
                left: &mut *self.left,
                max_array: self.max_array,
            })?
            .is_some()
        {
            n += 1;
            if n > self.max_array {
                return Err(serde::de::Error::custom(format_args!(
                    "an array of more than {} elements",
                    self.max_array
                )));
            }
        }
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(Count {
                left: &mut *self.left,
                max_array: self.max_array,
            })?;
        }
        Ok(())
    }
}

/// What kind of result a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Test,
    Repeat,
    Sweep,
    Latency,
    Doctor,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Test => "test",
            Kind::Repeat => "repeat",
            Kind::Sweep => "sweep",
            Kind::Latency => "latency",
            Kind::Doctor => "doctor",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a document cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DocError {
    #[error("larger than {max} bytes")]
    TooLarge { max: usize },
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error(
        "not a wirespeed result (no test, repeat, sweep, latency or doctor document recognised)"
    )]
    Unknown,
    #[error("too many values: {0}")]
    TooMany(String),
    #[error("a {kind} document that does not parse: {reason}")]
    Invalid { kind: Kind, reason: String },
}

/// One document, typed by kind.
#[derive(Debug, Clone)]
pub enum Document {
    Test(Box<TestResult>),
    Repeat(Box<RepeatDoc>),
    Sweep(Box<SweepDoc>),
    Latency(Box<LatencyDoc>),
    Doctor(Box<wirespeed_doctor::report::Report>),
}

impl Document {
    /// Recognise and parse one document (with a budget of its own).
    pub fn parse(bytes: &[u8]) -> Result<Document, DocError> {
        Document::parse_within(bytes, &mut Budget::default())
    }

    /// Recognise and parse one of several documents: its values are counted against `budget`
    /// (shared by all of them) before any is kept.
    pub fn parse_within(bytes: &[u8], budget: &mut Budget) -> Result<Document, DocError> {
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(DocError::TooLarge {
                max: MAX_DOCUMENT_BYTES,
            });
        }
        budget.spend(bytes)?;
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| DocError::NotJson(e.to_string()))?;
        Document::from_value(v)
    }

    /// Recognise and parse an already decoded document.
    pub fn from_value(mut v: Value) -> Result<Document, DocError> {
        lift_irq_sweep(&mut v);
        let kind = kind_of(&v).ok_or(DocError::Unknown)?;
        let invalid = |e: serde_json::Error| DocError::Invalid {
            kind,
            reason: e.to_string(),
        };
        Ok(match kind {
            Kind::Test => Document::Test(Box::new(serde_json::from_value(v).map_err(invalid)?)),
            Kind::Repeat => Document::Repeat(Box::new(serde_json::from_value(v).map_err(invalid)?)),
            Kind::Sweep => Document::Sweep(Box::new(serde_json::from_value(v).map_err(invalid)?)),
            Kind::Latency => {
                Document::Latency(Box::new(serde_json::from_value(v).map_err(invalid)?))
            }
            Kind::Doctor => Document::Doctor(Box::new(serde_json::from_value(v).map_err(invalid)?)),
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            Document::Test(_) => Kind::Test,
            Document::Repeat(_) => Kind::Repeat,
            Document::Sweep(_) => Kind::Sweep,
            Document::Latency(_) => Kind::Latency,
            Document::Doctor(_) => Kind::Doctor,
        }
    }

    /// The topology the document carries, if any (the heatmaps outline its groups).
    pub fn topology(&self) -> Option<&Topology> {
        match self {
            Document::Test(t) => t
                .wirespeed
                .as_ref()
                .and_then(|w| w.observation.as_ref())
                .map(|o| &o.local.topology),
            Document::Sweep(s) => s.topology.as_ref(),
            Document::Latency(l) => l.topology.as_ref(),
            _ => None,
        }
    }

    /// Give a sweep or latency document without a topology of its own this one.
    pub fn set_topology_if_missing(&mut self, topo: &Topology) {
        match self {
            Document::Sweep(s) if s.topology.is_none() => s.topology = Some(topo.clone()),
            Document::Latency(l) if l.topology.is_none() => l.topology = Some(topo.clone()),
            _ => {}
        }
    }
}

/// `sweep --irq-cpus -J` writes `{"irq_sweep": {"matrix", "steps", "interrupted"}, "summary"}`:
/// read it as a sweep (its matrix's axes are `app-irq`).
fn lift_irq_sweep(v: &mut Value) {
    let Some(o) = v.as_object_mut() else { return };
    if o.contains_key("matrix") {
        return;
    }
    let Some(Value::Object(inner)) = o.remove("irq_sweep") else {
        return;
    };
    for (k, val) in inner {
        o.entry(k).or_insert(val);
    }
}

fn kind_of(v: &Value) -> Option<Kind> {
    let o = v.as_object()?;
    if o.contains_key("schema_version") && o.contains_key("findings") && o.contains_key("facts") {
        Some(Kind::Doctor)
    } else if o.get("runs").is_some_and(Value::is_array) && o.contains_key("repeat") {
        Some(Kind::Repeat)
    } else if o
        .get("matrix")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("cells"))
    {
        Some(Kind::Sweep)
    } else if o.get("matrix").is_some_and(Value::is_array) && o.contains_key("cpus") {
        Some(Kind::Latency)
    } else if o.get("start").is_some_and(Value::is_object)
        && (o.contains_key("intervals") || o.contains_key("end"))
    {
        Some(Kind::Test)
    } else {
        None
    }
}

/// A test's headline throughput (bits/s): the receiver's sum if known, else the sender's.
pub fn headline_throughput(t: &TestResult) -> Option<f64> {
    t.end
        .sum_received
        .as_ref()
        .or(t.end.sum_sent.as_ref())
        .or(t.end.sum.as_ref())
        .map(|s| s.bits_per_second)
}

/// Throughput statistics of a set of runs (bits per second; spread in % of the median).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RunStats {
    #[serde(default)]
    pub runs: usize,
    #[serde(default)]
    pub min: f64,
    #[serde(default)]
    pub median: f64,
    #[serde(default)]
    pub max: f64,
    #[serde(default)]
    pub spread: f64,
}

/// One mode of a `--repeat`: the runs (1-based) that landed near one throughput.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RepeatMode {
    #[serde(default)]
    pub runs: Vec<usize>,
    #[serde(default)]
    pub stats: RunStats,
    /// What the mode's runs share, as the explain crate wrote it.
    #[serde(default)]
    pub placement: Option<Value>,
    #[serde(default)]
    pub description: String,
}

/// The `repeat` section of a `--repeat` document.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RepeatAnalysis {
    #[serde(default)]
    pub stats: RunStats,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub modes: Vec<RepeatMode>,
    #[serde(default)]
    pub conclusion: Option<String>,
}

/// `client --repeat N -J`: every run's test document and the analysis.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RepeatDoc {
    pub runs: Vec<TestResult>,
    pub repeat: RepeatAnalysis,
}

impl RepeatDoc {
    /// The mode (index into `repeat.modes`) a 1-based run belongs to.
    pub fn mode_of(&self, run: usize) -> Option<usize> {
        self.repeat.modes.iter().position(|m| m.runs.contains(&run))
    }
}

/// One cell of a sweep: the runs' throughput (bits/s) and their median.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SweepCell {
    #[serde(default)]
    pub runs: Vec<f64>,
    #[serde(default)]
    pub median: Option<f64>,
    #[serde(default)]
    pub error: Option<String>,
}

/// The matrix of a sweep; rows and columns are CPU numbers.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SweepMatrix {
    /// `client-server` or `app-irq`.
    #[serde(default)]
    pub axes: String,
    pub rows: Vec<u32>,
    pub cols: Vec<u32>,
    pub cells: Vec<Vec<Option<SweepCell>>>,
}

impl SweepMatrix {
    /// The names of the row and column axes.
    pub fn labels(&self) -> (&'static str, &'static str) {
        if self.axes == "app-irq" {
            ("app CPU", "IRQ CPU")
        } else {
            ("client CPU", "server CPU")
        }
    }

    /// The median of the cell at row CPU `r`, column CPU `c`.
    pub fn median(&self, r: u32, c: u32) -> Option<f64> {
        let i = self.rows.iter().position(|&x| x == r)?;
        let j = self.cols.iter().position(|&x| x == c)?;
        self.cells.get(i)?.get(j)?.as_ref()?.median
    }
}

/// A pair of a sweep (row CPU, column CPU) and its median.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct SweepPair {
    pub row: u32,
    pub col: u32,
    #[serde(default)]
    pub median: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SweepSummary {
    #[serde(default)]
    pub best: Option<SweepPair>,
    #[serde(default)]
    pub worst: Option<SweepPair>,
    #[serde(default)]
    pub recommendation: Option<String>,
}

/// `sweep -J`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SweepDoc {
    pub matrix: SweepMatrix,
    #[serde(default)]
    pub summary: Option<SweepSummary>,
    #[serde(default)]
    pub interrupted: bool,
    #[serde(default)]
    pub topology: Option<Topology>,
}

/// One pair of a latency matrix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct PairLatency {
    pub mean_ns: f64,
    #[serde(default)]
    pub stderr_ns: f64,
}

/// A pair named by its CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct LatencyPair {
    pub a: u32,
    pub b: u32,
    pub mean_ns: f64,
}

/// The mean of the pairs of one relation (`same-l3`, `other-l3`, …).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RelationMean {
    pub relation: String,
    #[serde(default)]
    pub pairs: usize,
    pub mean_ns: f64,
}

/// `latency --json`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct LatencyDoc {
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub samples: usize,
    #[serde(default)]
    pub round_trips: usize,
    pub matrix: Vec<Vec<Option<PairLatency>>>,
    #[serde(default)]
    pub min: Option<LatencyPair>,
    #[serde(default)]
    pub max: Option<LatencyPair>,
    #[serde(default)]
    pub mean_ns: Option<f64>,
    #[serde(default)]
    pub by_relation: Vec<RelationMean>,
    #[serde(default)]
    pub topology: Option<Topology>,
}

/// The CPUs in drawing order: by NUMA node, then L3 group, then number, so each group is one
/// contiguous band of a heatmap's axis. CPUs the topology does not know come last.
pub fn group_order(cpus: &[u32], topo: Option<&Topology>) -> Vec<u32> {
    let mut v = cpus.to_vec();
    v.sort_by_key(|&c| {
        let key = |groups: &[CpuSet]| {
            groups
                .iter()
                .position(|g| g.contains(c))
                .unwrap_or(usize::MAX)
        };
        match topo {
            Some(t) => (key(&t.nodes), key(&t.l3_groups), c),
            None => (0, 0, c),
        }
    });
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_recognised_from_content() {
        let cases = [
            (r#"{"start":{},"intervals":[],"end":{}}"#, Kind::Test),
            (r#"{"runs":[],"repeat":{"modes":[]}}"#, Kind::Repeat),
            (
                r#"{"matrix":{"axes":"client-server","rows":[0],"cols":[1],"cells":[[null]]}}"#,
                Kind::Sweep,
            ),
            (
                r#"{"cpus":[0,1],"matrix":[[null,null],[null,null]]}"#,
                Kind::Latency,
            ),
        ];
        for (json, kind) in cases {
            assert_eq!(
                Document::parse(json.as_bytes()).unwrap().kind(),
                kind,
                "{json}"
            );
        }
    }

    #[test]
    fn hostile_documents_get_one_line_errors() {
        assert_eq!(Document::parse(b"[1,2]").unwrap_err(), DocError::Unknown);
        assert_eq!(
            Document::parse(b"{\"hello\":1}").unwrap_err(),
            DocError::Unknown
        );
        assert!(matches!(
            Document::parse(b"{\"start\":").unwrap_err(),
            DocError::NotJson(_)
        ));
        let e = Document::parse(br#"{"cpus":[0],"matrix":[["x"]]}"#).unwrap_err();
        assert!(
            matches!(
                e,
                DocError::Invalid {
                    kind: Kind::Latency,
                    ..
                }
            ),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'));
        let deep = "[".repeat(100_000);
        assert!(matches!(
            Document::parse(deep.as_bytes()).unwrap_err(),
            DocError::NotJson(_)
        ));
        let big = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        assert!(matches!(
            Document::parse(&big).unwrap_err(),
            DocError::TooLarge { .. }
        ));
    }

    /// Issue 22's amplification, bounded: values are capped before any is kept, per array
    /// and across every document of a command.
    #[test]
    fn values_are_capped_across_documents() {
        let zeros = |n: usize| {
            let mut s = String::from("{\"start\":{},\"intervals\":[");
            s.push_str(&vec!["0"; n].join(","));
            s.push_str("]}");
            s
        };
        // one array past the cap
        let e = Document::parse_within(zeros(11).as_bytes(), &mut Budget::new(1000, 10));
        assert!(
            matches!(&e, Err(DocError::TooMany(m)) if m.contains("more than 10 elements")),
            "{e:?}"
        );
        // the budget is spent by the documents together: the second of two is refused
        let mut b = Budget::new(100, 1000);
        let one = zeros(60);
        assert!(matches!(
            Document::parse_within(one.as_bytes(), &mut b),
            Err(DocError::Invalid { .. })
        ));
        let e = Document::parse_within(one.as_bytes(), &mut b).unwrap_err();
        assert!(matches!(e, DocError::TooMany(_)), "{e:?}");
        assert!(!e.to_string().contains('\n'));
        // the default holds a normal document and refuses a million-element array
        assert!(Document::parse(zeros(1000).as_bytes()).is_err());
        let e = Document::parse(zeros(MAX_ARRAY_ELEMENTS + 1).as_bytes()).unwrap_err();
        assert!(matches!(e, DocError::TooMany(_)), "{e:?}");
    }

    #[test]
    fn group_order_makes_groups_contiguous() {
        let topo = Topology {
            nodes: vec![CpuSet::from_cpus(0..8)],
            l3_groups: vec![
                CpuSet::from_cpus([0, 1, 4, 5]),
                CpuSet::from_cpus([2, 3, 6, 7]),
            ],
            smt_cores: vec![],
        };
        assert_eq!(
            group_order(&[0, 1, 2, 3, 4, 5, 6, 7, 9], Some(&topo)),
            vec![0, 1, 4, 5, 2, 3, 6, 7, 9]
        );
    }
}
