//! The project-wide analytics views that need more than a query: the heatmap's weekdays and
//! hours in the reader's time zone (an IANA name, daylight saving included). Deliverability is
//! grouped by provider as a campaign's report is ([`super::campaign_report::providers`]).

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// The time zone named `name` (`Europe/Berlin`, `UTC`, or a fixed offset such as `+02:00`),
/// if it is one.
pub fn zone(name: &str) -> Option<TimeZone> {
    let name = name.trim();
    if name.is_empty() || name.eq_ignore_ascii_case("utc") || name == "Z" {
        return Some(TimeZone::UTC);
    }
    if let Some(offset) = fixed_offset(name) {
        return Some(TimeZone::fixed(offset));
    }
    TimeZone::get(name).ok()
}

fn fixed_offset(name: &str) -> Option<jiff::tz::Offset> {
    let sign = match name.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = name[1..].split_once(':').unwrap_or((&name[1..], "0"));
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 14 || minutes > 59 {
        return None;
    }
    jiff::tz::Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()
}

/// Opens and clicks per local weekday (0 for Monday) and hour, every one of the 168 cells:
/// `(weekday, hour, opens, clicks)`, from hourly counts `(hour start ms, opens, clicks)`.
pub fn heatmap(zone: &TimeZone, hourly: &[(i64, i64, i64)]) -> Vec<(i64, i64, i64, i64)> {
    let mut cells: Vec<(i64, i64, i64, i64)> =
        (0..7).flat_map(|d| (0..24).map(move |h| (d, h, 0, 0))).collect();
    for &(at, opens, clicks) in hourly {
        let Ok(instant) = Timestamp::from_millisecond(at) else { continue };
        let local = instant.to_zoned(zone.clone());
        let day = i64::from(local.weekday().to_monday_zero_offset());
        let cell = &mut cells[(day * 24 + i64::from(local.hour())) as usize];
        cell.2 += opens;
        cell.3 += clicks;
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heatmap_follows_the_zone_and_its_daylight_saving() {
        // Monday 2026-07-06 10:00 UTC is 12:00 in Berlin (summer); 2026-01-05 10:00 UTC is 11:00.
        let summer = 1_783_332_000_000;
        let winter = 1_767_607_200_000;
        let berlin = zone("Europe/Berlin").expect("a zone");
        let cells = heatmap(&berlin, &[(summer, 2, 1), (winter, 1, 0)]);
        assert_eq!(cells.len(), 168);
        assert_eq!(cells[12], (0, 12, 2, 1));
        assert_eq!(cells[11], (0, 11, 1, 0));
        let utc = heatmap(&zone("UTC").unwrap(), &[(summer, 2, 1)]);
        assert_eq!(utc[10], (0, 10, 2, 1));
        assert!(zone("+05:30").is_some() && zone("Mars/Olympus").is_none() && zone("+99:00").is_none());
    }
}
