//! When marketing mail may go (issue 34, item 3): at a wall-clock time in each contact's time
//! zone, and never in the project's quiet hours or on its quiet days, read in the contact's
//! zone too. A contact's zone is `data.timezone` (an IANA name, checked wherever data is
//! written); without one, the project's.
//!
//! Everything here is arithmetic on instants: the emails carry the instant they are due
//! (`next_attempt_at`), so the schedule is durable, survives restarts, and is exact to the
//! millisecond the delivery worker wakes at.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

use super::analytics_views::zone;
use super::error::{Error, FieldError, Result};
use crate::db::sending::Settings;

/// Quiet days: Monday = 1, Tuesday = 2, ... Sunday = 64.
pub const DAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// A project's windows, read once per batch.
#[derive(Debug, Clone)]
pub struct Windows {
    /// The zone of contacts without their own.
    pub zone: TimeZone,
    pub quiet_hours: Option<(u16, u16)>,
    pub quiet_days: u8,
}

impl Windows {
    pub fn of(settings: &Settings) -> Windows {
        Windows {
            zone: zone(&settings.timezone).unwrap_or(TimeZone::UTC),
            quiet_hours: settings.quiet_hours,
            quiet_days: settings.quiet_days,
        }
    }

    /// Whether marketing mail ever waits.
    pub fn has_quiet_time(&self) -> bool {
        self.quiet_days != 0 || self.quiet_hours.is_some_and(|(start, end)| start != end)
    }

    /// The zone of a contact whose `data.timezone` is `own`.
    pub fn zone_of(&self, own: Option<&str>) -> TimeZone {
        own.and_then(zone).unwrap_or_else(|| self.zone.clone())
    }

    /// The first instant at or after `at` (ms) when marketing mail may go to a contact in
    /// `zone`: `at` itself unless it falls in quiet hours or on a quiet day there.
    pub fn next_open(&self, zone: &TimeZone, at: i64) -> i64 {
        if !self.has_quiet_time() {
            return at;
        }
        let Ok(instant) = Timestamp::from_millisecond(at) else { return at };
        let mut local = instant.to_zoned(zone.clone());
        // Each step moves to the end of one quiet stretch; a week of them covers every case.
        for _ in 0..16 {
            let day_bit = 1u8 << local.weekday().to_monday_zero_offset();
            if self.quiet_days & day_bit != 0 {
                local = start_of_next_day(&local, zone);
                continue;
            }
            let minute =
                u16::try_from(local.hour()).unwrap_or(0) * 60 + u16::try_from(local.minute()).unwrap_or(0);
            match self.quiet_hours {
                Some((start, end)) if start < end && (start..end).contains(&minute) => {
                    local = at_minute(&local, zone, end);
                }
                Some((start, end)) if start > end && minute >= start => {
                    local = at_minute(&start_of_next_day(&local, zone), zone, end);
                }
                Some((start, end)) if start > end && minute < end => local = at_minute(&local, zone, end),
                _ => return local.timestamp().as_millisecond().max(at),
            }
        }
        local.timestamp().as_millisecond().max(at)
    }
}

/// Midnight starting the day after `local`'s, in `zone`.
fn start_of_next_day(local: &Zoned, zone: &TimeZone) -> Zoned {
    let next = local.date().tomorrow().unwrap_or(local.date());
    next.to_zoned(zone.clone()).unwrap_or_else(|_| local.clone())
}

/// `local`'s day at `minute` of the day (the first valid instant after a daylight-saving gap).
fn at_minute(local: &Zoned, zone: &TimeZone, minute: u16) -> Zoned {
    let (hour, minute) = (i8::try_from(minute / 60).unwrap_or(0), i8::try_from(minute % 60).unwrap_or(0));
    local.date().at(hour, minute, 0, 0).to_zoned(zone.clone()).unwrap_or_else(|_| local.clone())
}

/// A wall-clock time without a zone, `YYYY-MM-DDTHH:MM` (seconds allowed), as `localTime`.
pub fn parse_local_time(text: &str, field: &str) -> Result<DateTime> {
    text.trim().parse::<DateTime>().map_err(|_| {
        Error::Invalid(vec![
            FieldError::new(
                field,
                "invalid_date",
                "a wall-clock time without a zone, such as 2026-12-01T09:00",
            )
            .received(serde_json::json!(text)),
        ])
    })
}

/// The instant `wall` happens in `zone` (ms); in a daylight-saving gap, just after it.
pub fn instant_of(wall: DateTime, zone: &TimeZone) -> i64 {
    wall.to_zoned(zone.clone()).map(|z| z.timestamp().as_millisecond()).unwrap_or(i64::MAX)
}

/// The earliest instant `wall` happens anywhere (UTC+14, Kiribati): when a campaign sent at a
/// wall-clock time starts.
pub fn earliest_instant_of(wall: DateTime) -> i64 {
    let kiribati = jiff::tz::Offset::from_hours(14).map(TimeZone::fixed).unwrap_or(TimeZone::UTC);
    instant_of(wall, &kiribati)
}

/// What `PATCH /sending-settings` asks for; what is left out stays.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub timezone: Option<String>,
    /// `Some(None)` ends the quiet hours; `Some(Some((start, end)))` as `HH:MM` texts.
    pub quiet_hours: Option<Option<(String, String)>>,
    /// Day names, `monday` to `sunday`.
    pub quiet_days: Option<Vec<String>>,
}

/// Changes project `project`'s delivery windows; 422 naming the field for a zone that is
/// none, a time of day that is not `HH:MM`, an unknown day, or every day of the week quiet.
pub fn update(tx: &crate::db::Tx, project: &str, changes: Changes, now: i64) -> Result<Settings> {
    let mut settings = crate::db::sending::get(tx, project)?;
    if let Some(name) = changes.timezone {
        let name = name.trim();
        if !check_zone(name) {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    "timezone",
                    "invalid_timezone",
                    "an IANA time zone name, such as Europe/Berlin",
                )
                .received(serde_json::json!(name)),
            ]));
        }
        settings.timezone = name.to_string();
    }
    if let Some(hours) = changes.quiet_hours {
        settings.quiet_hours = match hours {
            None => None,
            Some((start, end)) => {
                Some((parse_minute(&start, "quietHours.start")?, parse_minute(&end, "quietHours.end")?))
            }
        };
    }
    if let Some(days) = changes.quiet_days {
        let mut mask = 0u8;
        for (i, day) in days.iter().enumerate() {
            let Some(at) = DAYS.iter().position(|d| d.eq_ignore_ascii_case(day.trim())) else {
                return Err(Error::Invalid(vec![
                    FieldError::new(
                        format!("quietDays[{i}]"),
                        "invalid_enum_value",
                        "a day: monday to sunday",
                    )
                    .received(serde_json::json!(day)),
                ]));
            };
            mask |= 1 << at;
        }
        if mask == 127 {
            return Err(Error::invalid(
                "quietDays",
                "too_big",
                "at least one day of the week must let mail go",
            ));
        }
        settings.quiet_days = mask;
    }
    crate::db::sending::put(tx, project, &settings, now)?;
    Ok(settings)
}

/// `HH:MM` as minutes of the day.
pub fn parse_minute(text: &str, field: &str) -> Result<u16> {
    let bad = || {
        Error::Invalid(vec![
            FieldError::new(field, "invalid_string", "a time of day, HH:MM (00:00 to 23:59)")
                .received(serde_json::json!(text)),
        ])
    };
    let (hours, minutes) = text.trim().split_once(':').ok_or_else(bad)?;
    let (hours, minutes): (u16, u16) =
        (hours.parse().map_err(|_| bad())?, minutes.parse().map_err(|_| bad())?);
    if hours > 23 || minutes > 59 || text.trim().len() != 5 {
        return Err(bad());
    }
    Ok(hours * 60 + minutes)
}

/// Minutes of the day as `HH:MM`.
pub fn minute_text(minute: u16) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// Checks a contact's `timezone`: an IANA name (or `UTC`, or a fixed offset such as `+05:30`).
pub fn check_zone(name: &str) -> bool {
    zone(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str, zone_name: &str) -> i64 {
        instant_of(text.parse().unwrap(), &zone(zone_name).unwrap())
    }

    #[test]
    fn nine_in_the_morning_is_each_zones_own() {
        let nine: DateTime = "2026-12-01T09:00".parse().unwrap();
        let berlin = instant_of(nine, &zone("Europe/Berlin").unwrap());
        let new_york = instant_of(nine, &zone("America/New_York").unwrap());
        let tokyo = instant_of(nine, &zone("Asia/Tokyo").unwrap());
        assert_eq!(berlin, ms("2026-12-01T08:00", "UTC"));
        assert_eq!(new_york, ms("2026-12-01T14:00", "UTC"));
        assert_eq!(tokyo, ms("2026-12-01T00:00", "UTC"));
        assert_eq!(earliest_instant_of(nine), ms("2026-11-30T19:00", "UTC"));
        // A wall time in a daylight-saving gap is the first instant after it.
        let gap: DateTime = "2026-03-29T02:30".parse().unwrap();
        assert_eq!(instant_of(gap, &zone("Europe/Berlin").unwrap()), ms("2026-03-29T01:30", "UTC"));
    }

    #[test]
    fn quiet_hours_and_days_hold_mail_until_they_end() {
        let windows = Windows {
            zone: zone("Europe/Berlin").unwrap(),
            quiet_hours: Some((21 * 60, 8 * 60)),
            quiet_days: 64, // Sunday
        };
        let berlin = windows.zone.clone();
        // Tuesday 2026-12-01: 12:00 goes; 22:00 waits for 08:00 the next day; 06:00 for 08:00.
        assert_eq!(
            windows.next_open(&berlin, ms("2026-12-01T12:00", "Europe/Berlin")),
            ms("2026-12-01T12:00", "Europe/Berlin")
        );
        assert_eq!(
            windows.next_open(&berlin, ms("2026-12-01T22:00", "Europe/Berlin")),
            ms("2026-12-02T08:00", "Europe/Berlin")
        );
        assert_eq!(
            windows.next_open(&berlin, ms("2026-12-01T06:00", "Europe/Berlin")),
            ms("2026-12-01T08:00", "Europe/Berlin")
        );
        // Saturday 22:00 waits past Sunday to Monday 08:00.
        assert_eq!(
            windows.next_open(&berlin, ms("2026-12-05T22:00", "Europe/Berlin")),
            ms("2026-12-07T08:00", "Europe/Berlin")
        );
        // In the contact's own zone: 22:00 in Berlin is 16:00 in New York, which may go.
        let new_york = windows.zone_of(Some("America/New_York"));
        let at = ms("2026-12-01T22:00", "Europe/Berlin");
        assert_eq!(windows.next_open(&new_york, at), at);
        assert_eq!(windows.zone_of(Some("Mars/Olympus")), berlin, "an unknown zone is the project's");
        // Quiet hours within a day, and none at all.
        let lunch = Windows { quiet_hours: Some((12 * 60, 13 * 60)), quiet_days: 0, ..windows.clone() };
        assert_eq!(
            lunch.next_open(&berlin, ms("2026-12-01T12:30", "Europe/Berlin")),
            ms("2026-12-01T13:00", "Europe/Berlin")
        );
        let open = Windows { quiet_hours: None, quiet_days: 0, ..windows };
        assert_eq!(open.next_open(&berlin, 5), 5);
    }

    #[test]
    fn times_of_day_are_read_strictly() {
        assert_eq!(parse_minute("08:30", "x").unwrap(), 510);
        for bad in ["8:30", "24:00", "12:60", "noon", "12:00:00"] {
            assert!(parse_minute(bad, "x").is_err(), "{bad}");
        }
        assert_eq!(minute_text(510), "08:30");
        assert!(parse_local_time("2026-12-01T09:00", "localTime").is_ok());
        assert!(parse_local_time("2026-12-01T09:00Z", "localTime").is_err());
    }
}
