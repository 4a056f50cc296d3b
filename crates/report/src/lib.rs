//! wirespeed-report: one result model for a test and pure renderers.
//!
//! Architecture:
//! - [`model`]: [`TestResult`] and its parts, shaped exactly like iperf3's `-J`
//!   output (field names, nesting, which keys appear for TCP/UDP/bidir), with
//!   wirespeed's additions under the single top-level key `"wirespeed"`
//!   ([`WirespeedExt`]). Serde Serialize + Deserialize, so the same types
//!   parse iperf3's JSON (tests round-trip real iperf3 output).
//! - [`builder`]: [`ResultBuilder`], the one place where counters become
//!   intervals, rates, sums and the end section (iperf3's arithmetic).
//! - Renderers, pure functions of the model writing to any `io::Write`:
//!   [`text`] (iperf3's human output, streaming), [`json`] (`-J` in iperf3's
//!   layout, and `--json-stream` events), [`where_ran`] (where the work ran, the verdict,
//!   a server's IRQ move; the `--get-server-output` text's tail), [`html`] (one
//!   self-contained HTML page of any documents), [`csv`] (tests, repeats, sweeps), [`diff`]
//!   (what changed between two documents), [`targets`] (several servers tested at once: the
//!   typed document and its text), the other documents' text — [`doctor`] (findings and
//!   topology), [`plan`] (tune's plan and what `--apply` did), [`sweep`] (heatmap and summary),
//!   [`latency`] (the core-to-core table), [`repeat`] (a `--repeat` series), [`path`] (the path
//!   model) — and [`render`] (each document kind in each format it has, from one place).
//!   Every renderer is generic over `W: Write + ?Sized`. [`doc`] recognises a JSON document's kind; [`strict`]
//!   (a report with only iperf3 3.20's keys, for strict consumers).
//! - [`units`]: iperf3's unit formatting; [`sizes`]: K/M/G/T arguments;
//!   [`num`]: how floats are written (integral values as integers, never NaN).
//!
//! Renderers never touch sockets, clocks or the host.

pub mod builder;
pub mod csv;
pub mod diff;
pub mod doc;
pub mod doctor;
pub mod html;
pub mod json;
pub mod latency;
pub mod model;
pub mod num;
pub mod path;
pub mod plan;
pub mod render;
pub mod repeat;
pub mod sizes;
pub mod strict;
pub mod sweep;
pub mod targets;
pub mod text;
pub mod units;
pub mod where_ran;
pub mod why;

pub use builder::{
    BuildError, EndInput, EndReport, PeerStream, ResultBuilder, StreamSample, TcpSample, UdpSample,
};
pub use model::*;
pub use sizes::{parse_bytes, parse_rate, parse_rate_burst, BitsPerSecond, Bytes, SizeError};
pub use text::{render_text, TextContext, TextOptions, TextRenderer};
pub use units::UnitFormat;
