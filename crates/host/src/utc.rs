//! UTC calendar time from the system clock, for the time stamps wirespeed writes (journals, JSON
//! documents). UTC only, proleptic Gregorian calendar; the calendar arithmetic is the `time`
//! crate's, this module only gives wirespeed's callers the fields and the two text forms they use.

use std::time::{SystemTime, UNIX_EPOCH};

use time::{Date, OffsetDateTime, PrimitiveDateTime};

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

    /// Seconds since 1970-01-01T00:00:00Z (negative before) in UTC; a time beyond the years
    /// -9999..=9999 counts as the nearest end of that range.
    pub fn from_unix(secs: i64) -> Utc {
        let t = OffsetDateTime::from_unix_timestamp(secs).unwrap_or_else(|_| {
            if secs < 0 {
                PrimitiveDateTime::MIN.assume_utc()
            } else {
                PrimitiveDateTime::MAX.assume_utc()
            }
        });
        Utc {
            year: i64::from(t.year()),
            month: u32::from(u8::from(t.month())),
            day: u32::from(t.day()),
            hour: u32::from(t.hour()),
            minute: u32::from(t.minute()),
            second: u32::from(t.second()),
            millis: 0,
            weekday: u32::from(t.weekday().number_days_from_monday()),
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

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (clamped to the years
/// -9999..=9999).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // The Julian day number of 1970-01-01.
    const EPOCH_JULIAN_DAY: i64 = 2_440_588;
    let jd = days.saturating_add(EPOCH_JULIAN_DAY).clamp(
        i64::from(Date::MIN.to_julian_day()),
        i64::from(Date::MAX.to_julian_day()),
    );
    let d = Date::from_julian_day(jd as i32).unwrap_or(Date::MIN);
    (
        i64::from(d.year()),
        u32::from(u8::from(d.month())),
        u32::from(d.day()),
    )
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
        assert_eq!(Utc::from_unix(-1).rfc3339(), "1969-12-31T23:59:59.000Z");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn out_of_range_times_clamp_instead_of_panicking() {
        assert_eq!(Utc::from_unix(i64::MAX).year, 9999);
        assert_eq!(Utc::from_unix(i64::MIN).year, -9999);
        assert_eq!(civil_from_days(i64::MAX).0, 9999);
        assert_eq!(civil_from_days(i64::MIN).0, -9999);
        let far = Utc::from_system(UNIX_EPOCH + Duration::from_secs(1 << 40));
        assert_eq!(far.year, 9999);
    }
}
