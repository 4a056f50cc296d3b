//! wirespeed-report: one result model for a test and pure renderers.
//!
//! Architecture:
//! - [`model`]: [`TestResult`] and its parts, shaped exactly like iperf3's `-J`
//!   output (field names, nesting, which keys appear for TCP/UDP/bidir), with
//!   wirespeed's additions under the single top-level key `"wirespeed"`.
//!   Serde Serialize + Deserialize, so the same types parse iperf3's JSON.
//! - [`num`]: how floats are written (integral values as integers, never NaN).
//!
//! Renderers never touch sockets, clocks or the host: they take the model and
//! write to any `io::Write`.

pub mod model;
pub mod num;

pub use model::*;
pub mod builder;
pub mod sizes;
pub mod units;
