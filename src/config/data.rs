//! `[retention]`: how long the data of mail and events is kept (issue 35). Each project may keep
//! its own periods (`PATCH /retention`); these are the defaults.

use serde::{Deserialize, Serialize};

/// `[retention]`, in days.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// An email's content (body, one-off variables, headers, attachments) and the captured
    /// messages of the outbox; the email row, its status and its events stay.
    pub email_content_days: u32,
    /// Events, and the opens and clicks recorded with them; the hourly counts analytics read
    /// are kept for ever.
    pub events_days: u32,
    /// Received mail (its record and stored content).
    pub inbound_days: u32,
    /// The log of webhook deliveries that are over.
    pub webhook_deliveries_days: u32,
    /// How often the pruning runs, in seconds.
    pub interval_secs: u32,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            email_content_days: 30,
            events_days: 365,
            inbound_days: 30,
            webhook_deliveries_days: 30,
            interval_secs: 3600,
        }
    }
}

/// `[backup]`: copies of the database made on a schedule, each checked, with the uploaded
/// images beside them, the oldest removed past `keep`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackupConfig {
    /// When: `"daily HH:MM"` (UTC), `"every N hours"` or `"every N minutes"`; none: no
    /// scheduled backups (`tidings backup --to FILE` still makes one by hand).
    pub schedule: Option<String>,
    /// The directory the copies go to; default `<data_dir>/backups`.
    pub path: Option<std::path::PathBuf>,
    /// Scheduled copies kept; older ones are removed once a newer one is checked.
    pub keep: u32,
}

impl Default for BackupConfig {
    fn default() -> Self {
        BackupConfig { schedule: None, path: None, keep: 7 }
    }
}

/// A backup schedule, read from `[backup] schedule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Every day at this minute of the day, UTC.
    Daily { minute: u32 },
    /// Every this many minutes, counted from midnight UTC.
    Every { minutes: u32 },
}

impl Schedule {
    /// Reads `"daily 03:30"`, `"every 6 hours"`, `"every 30 minutes"`.
    pub fn parse(text: &str) -> Result<Schedule, String> {
        let words: Vec<String> = text.split_whitespace().map(str::to_ascii_lowercase).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let bad =
            || format!("must be \"daily HH:MM\", \"every N hours\" or \"every N minutes\" (found {text:?})");
        match words.as_slice() {
            ["daily", time] => {
                let (h, m) = time.split_once(':').ok_or_else(bad)?;
                let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
                if h > 23 || m > 59 || time.len() != 5 {
                    return Err(bad());
                }
                Ok(Schedule::Daily { minute: h * 60 + m })
            }
            ["every", n, unit] => {
                let n: u32 = n.parse().map_err(|_| bad())?;
                let minutes = match *unit {
                    "hour" | "hours" => n.checked_mul(60),
                    "minute" | "minutes" => Some(n),
                    _ => None,
                }
                .ok_or_else(bad)?;
                if !(1..=7 * 24 * 60).contains(&minutes) {
                    return Err(format!("must be from 1 minute to 7 days (found {text:?})"));
                }
                Ok(Schedule::Every { minutes })
            }
            _ => Err(bad()),
        }
    }

    /// The latest time (ms) at or before `now` when a copy was due.
    pub fn last_due(&self, now: i64) -> i64 {
        const MINUTE: i64 = 60_000;
        const DAY: i64 = 1_440 * MINUTE;
        match *self {
            Schedule::Daily { minute } => {
                let today = now.div_euclid(DAY) * DAY + i64::from(minute) * MINUTE;
                if today <= now { today } else { today - DAY }
            }
            Schedule::Every { minutes } => {
                let every = i64::from(minutes) * MINUTE;
                now.div_euclid(every) * every
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Schedule;

    #[test]
    fn schedules_read_and_say_when_a_copy_was_last_due() {
        assert_eq!(Schedule::parse("daily 03:30"), Ok(Schedule::Daily { minute: 210 }));
        assert_eq!(Schedule::parse("Every 6 hours"), Ok(Schedule::Every { minutes: 360 }));
        assert_eq!(Schedule::parse("every 1 minute"), Ok(Schedule::Every { minutes: 1 }));
        for bad in
            ["daily 3:30", "daily 24:00", "weekly", "every 0 hours", "every 9999 hours", "every x hours"]
        {
            assert!(Schedule::parse(bad).is_err(), "{bad}");
        }
        let day = 86_400_000;
        let daily = Schedule::Daily { minute: 210 };
        // 02:00 on day 10: the copy of 03:30 on day 9 was the last due; at 04:00, day 10's.
        assert_eq!(daily.last_due(10 * day + 7_200_000), 9 * day + 12_600_000);
        assert_eq!(daily.last_due(10 * day + 14_400_000), 10 * day + 12_600_000);
        assert_eq!(Schedule::Every { minutes: 360 }.last_due(day + 7 * 3_600_000), day + 6 * 3_600_000);
    }
}
