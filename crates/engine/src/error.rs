//! The engine's error type: one variant per kind of failure the command line reports with
//! its own exit code.

use std::net::SocketAddr;

use thiserror::Error;
use wirespeed_protocol::Refusal;

/// What went wrong, with the address, flag or CPU involved.
#[derive(Debug, Error)]
pub enum EngineError {
    /// A setting makes no sense (caught before any connection).
    #[error("{0}")]
    Config(String),
    /// The host cannot do what was asked (offline CPU, congestion algorithm missing...).
    #[error("{0}")]
    Host(String),
    /// The server could not be reached: name lookup, refused, unreachable, timeout.
    #[error("cannot connect to {target}: {reason}")]
    Connect { target: String, reason: String },
    /// The server turned the test down.
    #[error("the server refused the test: {0}")]
    Refused(Refusal),
    /// The peer vanished or broke the protocol during the test.
    #[error("{0}")]
    Peer(String),
    /// A local socket or file operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The server could not listen.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// Stopped by the user (Ctrl-C, SIGTERM); iperf3's words for it.
    #[error("interrupt - the client has terminated")]
    Interrupted,
}

impl EngineError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> EngineError {
        EngineError::Io {
            what: what.into(),
            source,
        }
    }
}
