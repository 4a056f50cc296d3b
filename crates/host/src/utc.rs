//! UTC calendar time from the system clock, for the time stamps wirespeed writes (journals, JSON
//! documents). No time zone database: UTC only, proleptic Gregorian calendar.

use std::time::{SystemTime, UNIX_EPOCH};

/// A moment broken down into UTC calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    /// 1..=12.
    pub month: u32,
    /// 1..=31.
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
    /// Days since Monday: 0 = Monday ... 6 = Sunday.
    pub weekday: u32,
}

impl Utc {
    /// `t` in UTC; a time before 1970 counts as 1970-01-01.
    pub fn from_system(t: SystemTime) -> Utc {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        Utc {
            millis: d.subsec_millis(),
            ..Utc::from_unix(secs)
        }
    }

    /// Seconds since 1970-01-01T00:00:00Z (negative before) in UTC.
    pub fn from_unix(secs: i64) -> Utc {
        let days = secs.div_euclid(86_400);
        let s = secs.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Utc {
            year,
            month,
            day,
            hour: s / 3600,
            minute: s / 60 % 60,
            second: s % 60,
            millis: 0,
            // 1970-01-01 was a Thursday
            weekday: (days + 3).rem_euclid(7) as u32,
        }
    }

    /// RFC 3339 with milliseconds: `2025-11-22T07:55:01.123Z`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }

    /// Basic ISO 8601 to the second, for file names: `20251122T075501Z`.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_dates() {
        let t = Utc::from_system(UNIX_EPOCH + Duration::from_millis(1_763_798_101_123));
        assert_eq!(t.rfc3339(), "2025-11-22T07:55:01.123Z");
        assert_eq!(t.compact(), "20251122T075501Z");
        assert_eq!(t.weekday, 5); // a Saturday
        assert_eq!(Utc::from_unix(0).rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Utc::from_unix(0).weekday, 3); // a Thursday
        let leap = Utc::from_unix(951_782_400);
        assert_eq!(
            (leap.year, leap.month, leap.day, leap.weekday),
            (2000, 2, 29, 1)
        );
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}
