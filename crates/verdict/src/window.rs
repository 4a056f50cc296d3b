//! How full a sender kept the receiver's window.

use wirespeed_model::observation::{BitsPerSecond, Percent};

/// How full a sender kept the receiver's window: the bandwidth-delay product (the rate times
/// the mean RTT: the data in flight on average, by Little's law) against the largest window
/// the peer advertised (a window that swings with unread data is not full at its low point).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct WindowFill {
    pub(super) in_flight: f64,
    pub(super) window: u64,
    pub(super) rate: BitsPerSecond,
    pub(super) rtt_us: u64,
}

impl WindowFill {
    /// The product as a share of the window (over 100 % where the RTT samples, delayed ACKs
    /// and the receiver's late reads included, ran above the RTT the data itself saw).
    pub(super) fn share(&self) -> Percent {
        Percent::new(self.ratio() * 100.0)
    }

    fn ratio(&self) -> f64 {
        self.in_flight / self.window as f64
    }
}

impl std::fmt::Display for WindowFill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the bandwidth-delay product ({} × {} µs mean RTT = {}) is ",
            self.rate,
            self.rtt_us,
            ByteSize(self.in_flight),
        )?;
        match self.ratio() {
            r if r >= 1.0 => write!(f, "{r:.1}×")?,
            _ => write!(f, "{} of", self.share())?,
        }
        write!(
            f,
            " the largest window advertised ({})",
            ByteSize(self.window as f64)
        )
    }
}

/// Bytes in the unit a window is read in (B, KiB, MiB).
pub(super) struct ByteSize(f64);

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            b if b >= 1024.0 * 1024.0 => write!(f, "{:.1} MiB", b / (1024.0 * 1024.0)),
            b if b >= 1024.0 => write!(f, "{:.1} KiB", b / 1024.0),
            b => write!(f, "{b:.0} B"),
        }
    }
}

/// The window fill of a sender's `TCP_INFO` at the test's rate: `None` without the advertised
/// window (kernels before 6.2), an RTT or a rate, or with a window of 0 at the last reading.
pub(super) fn window_fill(
    t: &wirespeed_model::observation::TcpLimits,
    rate: Option<BitsPerSecond>,
) -> Option<WindowFill> {
    let window = t.snd_wnd.filter(|w| *w > 0)?;
    let rtt_us = t
        .rtt_us
        .map(|(_, mean, _)| mean)
        .filter(|r| *r > 0)
        .or(t.srtt_us.map(u64::from))
        .filter(|r| *r > 0)?;
    let rate = rate.filter(|r| r.0 > 0.0)?;
    Some(WindowFill {
        in_flight: rate.0 / 8.0 * rtt_us as f64 / 1e6,
        window,
        rate,
        rtt_us,
    })
}
