//! wirespeed-engine: the client and server runners.
//!
//! Architecture: the protocol crate's sans-I/O sessions decide *what* to send and when the
//! test moves on; this crate owns the sockets and the clock. [`client::run_client`] and
//! [`server::Server`] drive a session over the control connection, open or accept the data
//! connections (each announced by the cookie), and hand them to [`data::DataPhase`], which
//! runs datapath workers (sending and receiving streams on separate workers, placed by
//! [`placement`]) and samples their counters at the interval ticks of [`timeline`]. The report
//! crate's `ResultBuilder` turns the samples and the peer's results into iperf3's `-J` model;
//! [`output::Reporter`] receives the live events (the command line renders them).
//!
//! The engine measures and nothing more: what it needs from the layers above (observing where
//! the work ran and deciding the verdict; changing the host on a client's tune request) are the
//! [`hooks`] traits, which the binary implements (with the drive crate) and passes in through
//! the configurations. Each end's observation travels typed in the protocol extension
//! (`wirespeed_protocol::ResultsExt::observation`) and lands in the report
//! (`WirespeedExt::observation`); `assemble::results_ext` is where an end puts its own.
//! The engine renders nothing itself: [`output::StandardReporter`] hands the events to the
//! report crate's renderers.

pub mod assemble;
pub mod client;
pub mod data;
pub mod drive;
mod error;
pub mod extras;
pub mod feed;
pub mod hooks;
pub mod live;
pub mod measurement;
pub mod net;
pub mod observe;
pub mod output;
pub mod placement;
pub mod server;
pub mod shell;
pub mod stall;
pub mod sysinfo;
pub mod targets;
pub mod timeline;
pub mod tune;
pub mod usage;
pub mod values;

pub use client::{run_client, ClientConfig};
pub use error::EngineError;
pub use extras::{Extras, Keepalive};
pub use hooks::{HostChange, Observe, ObserveHook};
pub use net::Family;
pub use output::{Format, NullReporter, Reporter, StandardReporter};
pub use server::{Limits, ReporterFactory, Server, ServerConfig, ServerHandle, Stopper};
pub use targets::run_targets;
