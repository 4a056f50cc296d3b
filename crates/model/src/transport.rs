//! The transport of a test's data streams: the one TCP/UDP type of every crate (the test
//! parameters on the wire, the result builder, the text and JSON reports).

/// Transport of the data streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    #[default]
    Tcp,
    Udp,
}

impl Transport {
    /// iperf3's name in `test_start.protocol`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "TCP",
            Transport::Udp => "UDP",
        }
    }
}
