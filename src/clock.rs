//! Wall-clock time as stored in the database (milliseconds since the Unix epoch) and as shown in
//! the API (RFC 3339 in UTC with milliseconds, like JavaScript's `toISOString`).

use std::sync::atomic::{AtomicI64, Ordering};

use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;

const ISO: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// What `[scheduler] clock_offset_secs` shifts the clock by, in ms (0 unless `serve` set it).
static OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// Shifts [`now_ms`] by `ms` for the rest of the process (`serve`, from the configuration).
pub fn set_offset_ms(ms: i64) {
    OFFSET_MS.store(ms, Ordering::Relaxed);
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let now = OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as i64 + OFFSET_MS.load(Ordering::Relaxed)
}

/// `2026-11-21T12:34:56.789Z` for a millisecond timestamp.
pub fn iso(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(ISO).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".into())
}

/// `Fri, 27 Nov 2026 12:34:56 +0000` (RFC 5322 section 3.3) for a millisecond timestamp.
pub fn rfc2822(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc2822).ok())
        .unwrap_or_else(|| "Thu, 01 Jan 1970 00:00:00 +0000".into())
}

/// The last millisecond of year 9999: no instant a request names lies outside `0..=MAX_MS`,
/// so any two subtract, add a span or turn into a bucket count without overflowing.
pub const MAX_MS: i64 = 253_402_300_799_999;

/// An instant a request names: milliseconds since the epoch (`0..=MAX_MS`), or a date as
/// [`parse_date`] reads it (years 0000 to 9999).
pub fn instant(raw: &str) -> Option<i64> {
    let raw = raw.trim();
    match raw.parse::<i64>() {
        Ok(ms) => Some(ms).filter(|ms| (0..=MAX_MS).contains(ms)),
        Err(_) => parse_date(raw).map(|(ms, _)| ms),
    }
}

/// The current time as [`iso`] renders it.
pub fn now_iso() -> String {
    iso(now_ms())
}

/// A date as api.md's type table has it: `YYYY-MM-DD` (midnight UTC) or the full
/// `YYYY-MM-DDTHH:MM:SS[.sss]Z`, as milliseconds since the epoch, with whether it was the full
/// form (the only one `within` and `olderThan` take). `None` for anything else, including
/// calendar dates that do not exist.
pub fn parse_date(s: &str) -> Option<(i64, bool)> {
    let b = s.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let month = time::Month::try_from(u8::try_from(month).ok()?).ok()?;
    let date = time::Date::from_calendar_date(year as i32, month, u8::try_from(day).ok()?).ok()?;
    let days = i64::from(date.to_julian_day()) - 2_440_588; // the Julian day of 1970-01-01
    let midnight = days * 86_400_000;
    let full = match b.len() {
        10 => return Some((midnight, false)),
        20 if b[19] == b'Z' => 0,
        24 if b[19] == b'.' && b[23] == b'Z' => digits(20..23)?,
        _ => return None,
    };
    if b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some((midnight + ((hour * 60 + minute) * 60 + second) * 1000 + full, true))
}

#[cfg(test)]
mod instant_tests {
    use super::*;

    #[test]
    fn an_instant_is_a_date_or_milliseconds_within_ten_thousand_years() {
        assert_eq!(instant("0"), Some(0));
        assert_eq!(instant(&MAX_MS.to_string()), Some(MAX_MS));
        assert_eq!(instant("2026-11-24"), parse_date("2026-11-24").map(|(ms, _)| ms));
        for bad in ["-1", "-4611686018427387904", "4611686018427387904", "253402300800000", "soon", ""] {
            assert_eq!(instant(bad), None, "{bad}");
        }
        assert!(parse_date("9999-12-31T23:59:59.999Z").is_some_and(|(ms, _)| ms == MAX_MS));
        assert!(parse_date("0000-01-01").is_some_and(|(ms, _)| ms.unsigned_abs() < MAX_MS as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_both_forms() {
        assert_eq!(parse_date("1970-01-01"), Some((0, false)));
        assert_eq!(parse_date("2026-11-18T11:06:40.123Z"), Some((1_795_000_000_123, true)));
        assert_eq!(parse_date("2026-11-18T11:06:40Z"), Some((1_795_000_000_000, true)));
        assert_eq!(parse_date("1969-12-31T23:59:59Z"), Some((-1000, true)));
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "2026-1-01",
            "2026-11-18T24:00:00Z",
            "2026-11-18T11:06:40",
            "2026-11-18 11:06:40Z",
            "2026-11-18T11:06:40.12Z",
            "2026-11-18T11:06:40+01:00",
            "",
            "soon",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn iso_has_fixed_millisecond_precision() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_000_000_123), "2026-11-18T11:06:40.123Z");
    }
}
