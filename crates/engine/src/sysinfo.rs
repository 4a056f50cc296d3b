//! `start.system_info` and `start.timestamp`, as iperf3 prints them.

use std::time::{SystemTime, UNIX_EPOCH};

use wirespeed_host::utc::Utc;
use wirespeed_report::Timestamp;

/// `uname -a`-like line: sysname nodename release version machine.
pub fn system_info() -> String {
    let u = rustix::system::uname();
    format!(
        "{} {} {} {} {}",
        u.sysname().to_string_lossy(),
        u.nodename().to_string_lossy(),
        u.release().to_string_lossy(),
        u.version().to_string_lossy(),
        u.machine().to_string_lossy()
    )
}

/// The kernel release (`uname -r`).
pub fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

/// One line about the host a loopback test runs on: its kernel and the CPUs this process may
/// use.
pub fn host_summary() -> String {
    let cpus = wirespeed_datapath::cpu::allowed_cpus().unwrap_or_default();
    let kernel = kernel_release();
    format!("host: Linux {kernel}, {} CPUs usable ({cpus})", cpus.len())
}

/// RFC 1123 form of a Unix time: `Sun, 22 Nov 2026 07:56:40 GMT`.
pub fn rfc1123(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = Utc::from_unix(secs);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[t.weekday as usize],
        t.day,
        MONTHS[(t.month - 1) as usize],
        t.year,
        t.hour,
        t.minute,
        t.second
    )
}

/// The current time as iperf3's `start.timestamp`.
pub fn timestamp_now() -> Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(0);
    Timestamp {
        time: rfc1123(secs),
        timesecs: secs,
        timemillisecs: Some(i64::try_from(d.as_millis()).unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1123_matches_known_dates() {
        assert_eq!(rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(rfc1123(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(rfc1123(1_700_000_000), "Tue, 14 Nov 2023 22:13:20 GMT");
    }
}
