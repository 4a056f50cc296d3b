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
//! Repeat, sweep and latency documents are written by the drive and latency crates, which sit above this
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

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use wirespeed_model::doc::{IrqSweepReport, LatencyMatrix, Matrix, RepeatAnalysis, Summary};
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
    /// `sweep --irq-cpus` (read, and drawn, as a sweep).
    IrqSweep,
    Latency,
    Doctor,
}

impl Kind {
    /// The `kind` a wirespeed document carries.
    fn tag(self) -> &'static str {
        match self {
            Kind::IrqSweep => "irq-sweep",
            k => k.as_str(),
        }
    }

    fn of_tag(tag: &str) -> Option<Kind> {
        [Kind::Repeat, Kind::Sweep, Kind::IrqSweep, Kind::Latency]
            .into_iter()
            .find(|k| k.tag() == tag)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Test => "test",
            Kind::Repeat => "repeat",
            Kind::Sweep | Kind::IrqSweep => "sweep",
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

    /// Parse an already decoded document: wirespeed's own documents by their `kind`; an
    /// iperf3 `-J` test document (which has none), a doctor report (its `schema_version`) and
    /// the documents earlier versions wrote without `kind` by their shape, here and nowhere
    /// else ([`legacy_kind`]).
    pub fn from_value(mut v: Value) -> Result<Document, DocError> {
        let kind = match v.get("kind").and_then(Value::as_str) {
            Some(_) => None,
            None => Some(legacy_kind(&v).ok_or(DocError::Unknown)?),
        };
        let invalid = |kind: Kind| {
            move |e: serde_json::Error| DocError::Invalid {
                kind,
                reason: e.to_string(),
            }
        };
        match kind {
            Some(Kind::Test) => {
                return Ok(Document::Test(Box::new(
                    serde_json::from_value(v).map_err(invalid(Kind::Test))?,
                )))
            }
            Some(Kind::Doctor) => {
                return Ok(Document::Doctor(Box::new(
                    serde_json::from_value(v).map_err(invalid(Kind::Doctor))?,
                )))
            }
            Some(k) => {
                if let Some(o) = v.as_object_mut() {
                    o.insert("kind".into(), Value::from(k.tag()));
                }
            }
            None => {}
        }
        let tag = v.get("kind").and_then(Value::as_str).unwrap_or_default();
        let k = Kind::of_tag(tag).ok_or(DocError::Unknown)?;
        let w: Written = serde_json::from_value(v).map_err(invalid(k))?;
        Ok(w.into())
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

/// The kind of a document without a `kind` key, from its shape: iperf3's test document (an
/// object with `start` and `intervals` or `end`), doctor's report (`schema_version`,
/// `findings`, `facts`), and the repeat, sweep, IRQ sweep and latency documents written before
/// they carried `kind`.
fn legacy_kind(v: &Value) -> Option<Kind> {
    let o = v.as_object()?;
    if o.contains_key("schema_version") && o.contains_key("findings") && o.contains_key("facts") {
        Some(Kind::Doctor)
    } else if o.get("runs").is_some_and(Value::is_array) && o.contains_key("repeat") {
        Some(Kind::Repeat)
    } else if o.get("irq_sweep").is_some_and(Value::is_object) {
        Some(Kind::IrqSweep)
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

/// wirespeed's own documents as they are written: each with its `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Written {
    /// `client --repeat N -J`.
    Repeat(RepeatDoc),
    /// `sweep -J`.
    Sweep(SweepDoc),
    /// `sweep --irq-cpus -J`.
    IrqSweep(IrqSweepDoc),
    /// `latency --json`.
    Latency(LatencyDoc),
}

impl From<Written> for Document {
    fn from(w: Written) -> Document {
        match w {
            Written::Repeat(r) => Document::Repeat(Box::new(r)),
            Written::Sweep(s) => Document::Sweep(Box::new(s)),
            // an IRQ sweep is drawn as the matrix it is
            Written::IrqSweep(i) => Document::Sweep(Box::new(SweepDoc {
                tests_run: i
                    .irq_sweep
                    .matrix
                    .cells
                    .iter()
                    .flatten()
                    .map(|c| c.runs.len())
                    .sum(),
                interrupted: i.irq_sweep.interrupted,
                matrix: i.irq_sweep.matrix,
                summary: i.summary,
                topology: None,
            })),
            Written::Latency(l) => Document::Latency(Box::new(l)),
        }
    }
}

/// `client --repeat N -J`: every run's test document and the analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// `sweep -J`: the matrix, its summary and how the sweep went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepDoc {
    pub matrix: Matrix,
    pub summary: Option<Summary>,
    #[serde(default)]
    pub tests_run: usize,
    #[serde(default)]
    pub interrupted: bool,
    /// The host's topology when client and server shared it (the heatmap outlines groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
}

/// `sweep --irq-cpus -J`: the moves, the matrix and its summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqSweepDoc {
    pub irq_sweep: IrqSweepReport,
    pub summary: Option<Summary>,
    /// Steps whose move did not take effect (left out of the summary).
    #[serde(default)]
    pub ineffective_steps: usize,
}

/// `latency --json`: the matrix and, when known, the host's topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyDoc {
    #[serde(flatten)]
    pub matrix: LatencyMatrix,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_verdict_id_a_newer_build_wrote_still_reads() {
        let id = |doc: &[u8]| {
            let Document::Test(t) = Document::parse(doc).unwrap() else {
                panic!("not a test")
            };
            let v = t.wirespeed.unwrap().verdict.unwrap();
            (v.id, v.line)
        };
        let known = br#"{"start":{},"intervals":[],"end":{},"wirespeed":{"verdict":{"id":"irq-cross-l3","line":"l"}}}"#;
        assert_eq!(
            id(known),
            (wirespeed_model::VerdictId::IrqCrossL3, "l".into())
        );
        // an id this build does not know: the report still reads, its line intact
        let newer = br#"{"start":{},"intervals":[],"end":{},"wirespeed":{"verdict":{"id":"some-newer-limit","line":"a newer limit"}}}"#;
        assert_eq!(
            id(newer),
            (wirespeed_model::VerdictId::Unknown, "a newer limit".into())
        );
    }

    #[test]
    fn kinds_are_recognised_from_content() {
        // iperf3's test document has no `kind`: its shape says it
        let t = Document::parse(br#"{"start":{},"intervals":[],"end":{}}"#).unwrap();
        assert_eq!(t.kind(), Kind::Test);
        // wirespeed's own documents carry `kind`; written by a version before `kind`, the same
        // document is read by its shape
        for (w, kind) in written_samples() {
            let mut v = serde_json::to_value(&w).unwrap();
            let back = Document::from_value(v.clone()).unwrap();
            assert_eq!(back.kind(), kind);
            assert_eq!(Document::from(w.clone()).kind(), kind);
            v.as_object_mut().unwrap().remove("kind");
            assert_eq!(Document::from_value(v).unwrap().kind(), kind);
        }
        // a kind this version does not know, or a field of the wrong type: one line, no guess
        assert_eq!(
            Document::parse(br#"{"kind":"weather","cpus":[0]}"#).unwrap_err(),
            DocError::Unknown
        );
        let e = Document::parse(br#"{"kind":"sweep","matrix":{"axes":"x","rows":[],"cols":[],"cells":[]},"summary":null}"#)
            .unwrap_err();
        assert!(
            matches!(
                e,
                DocError::Invalid {
                    kind: Kind::Sweep,
                    ..
                }
            ),
            "{e}"
        );
    }

    /// One document of each of wirespeed's own kinds, as the drive and latency crates fill them.
    pub(crate) fn written_samples() -> Vec<(Written, Kind)> {
        use wirespeed_model::doc::{Axes, LatencyMatrix, Matrix, RepeatAnalysis, Stats};
        use wirespeed_model::observation::{BitsPerSecond, Percent};
        let mut m = Matrix::new(
            Axes::ClientServer,
            CpuSet::from_cpus([0, 1]),
            CpuSet::from_cpus([2]),
        );
        m.record(0, 2, BitsPerSecond(9e9));
        let stats = Stats {
            runs: 1,
            min: BitsPerSecond(9e9),
            median: BitsPerSecond(9e9),
            max: BitsPerSecond(9e9),
            mean: BitsPerSecond(9e9),
            spread: Percent::new(0.0),
        };
        let irq = IrqSweepReport {
            iface: "eth0".into(),
            irqs: Vec::new(),
            matrix: m.clone(),
            steps: Vec::new(),
            interrupted: false,
        };
        vec![
            (
                Written::Repeat(RepeatDoc {
                    runs: Vec::new(),
                    repeat: RepeatAnalysis {
                        stats,
                        method: "gaps".into(),
                        modes: Vec::new(),
                        conclusion: None,
                        recommendation: None,
                    },
                }),
                Kind::Repeat,
            ),
            (
                Written::Sweep(SweepDoc {
                    matrix: m,
                    summary: None,
                    tests_run: 1,
                    interrupted: false,
                    topology: None,
                }),
                Kind::Sweep,
            ),
            (
                Written::IrqSweep(IrqSweepDoc {
                    irq_sweep: irq,
                    summary: None,
                    ineffective_steps: 0,
                }),
                Kind::Sweep,
            ),
            (
                Written::Latency(LatencyDoc {
                    matrix: LatencyMatrix {
                        cpus: CpuSet::from_cpus([0, 1]),
                        samples: 10,
                        round_trips: 100,
                        matrix: vec![vec![None, None], vec![None, None]],
                        min: None,
                        max: None,
                        mean_ns: None,
                        by_relation: Vec::new(),
                        max_rel_stderr: 0.05,
                        noisy_pairs: 0,
                    },
                    topology: None,
                }),
                Kind::Latency,
            ),
        ]
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
        let e = Document::parse(
            br#"{"kind":"latency","cpus":[0],"samples":1,"round_trips":1,"matrix":[["x"]]}"#,
        )
        .unwrap_err();
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
