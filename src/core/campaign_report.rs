//! A campaign's report: opens and clicks over time since it was sent, people's apart from
//! machines'; clicks per link; how many recipients opened and clicked, by a person or only by
//! machines; and results per receiving provider (the big mailbox providers by their domains,
//! the rest by domain).

use super::error::Result;
use crate::db::Tx;
use crate::db::campaigns::Campaign;
use crate::db::engagements::{self, DomainResults, LinkClicks};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// Hourly buckets while the campaign is this young, daily ones after.
const HOURLY_FOR: i64 = 72 * HOUR;
/// Buckets drawn at most (90 days).
const MAX_BUCKETS: i64 = 90;
/// Links listed at most.
pub const MAX_LINKS: i64 = 100;
/// Providers listed by name at most; the rest are summed into one.
pub const MAX_PROVIDERS: usize = 12;

/// Opens and clicks in one bucket.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Point {
    /// The bucket's start.
    pub at: i64,
    pub opens: i64,
    pub clicks: i64,
    pub machine_opens: i64,
    pub machine_clicks: i64,
}

/// Recipients who did something: by a person at least once, or only by machines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Split {
    pub people: i64,
    pub machines_only: i64,
}

/// A receiving provider's results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provider {
    /// `Gmail`, `Outlook`, ... or the domain.
    pub name: String,
    pub domains: Vec<String>,
    pub results: DomainResults,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// When it was sent, and the buckets' width (an hour or a day).
    pub since: Option<i64>,
    pub bucket_ms: i64,
    pub timeline: Vec<Point>,
    pub links: Vec<LinkClicks>,
    pub opened: Split,
    pub clicked: Split,
    pub providers: Vec<Provider>,
    /// Its A/B test's variants with their results, when it has a test.
    pub variants: Vec<crate::db::ab_tests::Variant>,
    /// Its emails per receiving provider's queue, sent, queued and held back.
    pub queues: Vec<engagements::QueueResults>,
}

/// The report of campaign `c` as of `now`.
pub fn report(conn: &Tx, c: &Campaign, now: i64) -> Result<Report> {
    let (bucket_ms, timeline) = match c.sent_at {
        Some(start) => timeline(conn, &c.id, start, now)?,
        None => (HOUR, Vec::new()),
    };
    let (people, machines_only) = engagements::people_and_machines(conn, &c.id, "open")?;
    let opened = Split { people, machines_only };
    let (people, machines_only) = engagements::people_and_machines(conn, &c.id, "click")?;
    let clicked = Split { people, machines_only };
    Ok(Report {
        since: c.sent_at,
        bucket_ms,
        timeline,
        links: engagements::links(conn, &c.id, MAX_LINKS)?,
        opened,
        clicked,
        providers: providers(engagements::domains(conn, &c.id, 500)?, MAX_PROVIDERS),
        queues: engagements::queues(conn, &c.id, MAX_PROVIDERS as i64)?,
        variants: match c.ab {
            Some(_) => crate::db::ab_tests::variants(conn, &c.id)?,
            None => Vec::new(),
        },
    })
}

fn timeline(conn: &Tx, campaign: &str, start: i64, now: i64) -> Result<(i64, Vec<Point>)> {
    let age = (now - start).max(0);
    let bucket_ms = if age <= HOURLY_FOR { HOUR } else { DAY };
    let buckets = (age / bucket_ms + 1).clamp(1, MAX_BUCKETS);
    let mut points: Vec<Point> =
        (0..buckets).map(|i| Point { at: start + i * bucket_ms, ..Point::default() }).collect();
    for (bucket, kind, machine, n) in engagements::timeline(conn, campaign, start, bucket_ms, buckets)? {
        let Some(point) = usize::try_from(bucket).ok().and_then(|b| points.get_mut(b)) else { continue };
        match (kind.as_str(), machine) {
            ("open", false) => point.opens += n,
            ("open", true) => point.machine_opens += n,
            (_, false) => point.clicks += n,
            (_, true) => point.machine_clicks += n,
        }
    }
    Ok((bucket_ms, points))
}

/// The provider a receiving domain belongs to, for the big ones.
pub fn provider_of(domain: &str) -> Option<&'static str> {
    let d = domain.to_ascii_lowercase();
    let first = d.split('.').next().unwrap_or("");
    let name = match d.as_str() {
        "gmail.com" | "googlemail.com" => "Gmail",
        "outlook.com" | "msn.com" => "Outlook",
        "icloud.com" | "me.com" | "mac.com" => "iCloud",
        "aol.com" | "ymail.com" | "rocketmail.com" => "Yahoo",
        "proton.me" | "protonmail.com" | "pm.me" => "Proton",
        "gmx.net" | "gmx.com" | "gmx.de" | "web.de" => "GMX",
        "yandex.ru" | "yandex.com" | "ya.ru" => "Yandex",
        "mail.ru" => "Mail.ru",
        "fastmail.com" | "fastmail.fm" => "Fastmail",
        "zoho.com" => "Zoho",
        _ => match first {
            "hotmail" | "live" | "outlook" => "Outlook",
            "yahoo" => "Yahoo",
            _ => return None,
        },
    };
    Some(name)
}

/// Domains' results grouped by provider, most recipients first, past `max` summed as "Other
/// domains".
pub fn providers(domains: Vec<DomainResults>, max: usize) -> Vec<Provider> {
    let mut grouped: Vec<Provider> = Vec::new();
    for d in domains {
        let name = provider_of(&d.domain).map_or_else(|| d.domain.clone(), str::to_string);
        match grouped.iter_mut().find(|p| p.name == name) {
            Some(p) => {
                p.results.add(&d);
                p.domains.push(d.domain);
            }
            None => grouped.push(Provider { name, domains: vec![d.domain.clone()], results: d }),
        }
    }
    grouped.sort_by(|a, b| b.results.recipients.cmp(&a.results.recipients).then(a.name.cmp(&b.name)));
    if grouped.len() > max {
        let rest = grouped.split_off(max.saturating_sub(1));
        let mut other = Provider { name: "Other domains".into(), ..Provider::default() };
        for p in rest {
            other.results.add(&p.results);
            other.domains.extend(p.domains);
        }
        grouped.push(other);
    }
    for p in &mut grouped {
        p.results.domain = p.domains.first().cloned().unwrap_or_default();
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_group_their_domains_and_the_rest_is_summed() {
        let d = |domain: &str, n: i64| DomainResults {
            domain: domain.into(),
            recipients: n,
            opened: 1,
            ..DomainResults::default()
        };
        let mut list =
            vec![d("gmail.com", 5), d("googlemail.com", 2), d("hotmail.co.uk", 3), d("acme.test", 4)];
        list.extend((0..20).map(|i| d(&format!("d{i}.test"), 1)));
        let out = providers(list, MAX_PROVIDERS);
        assert_eq!(out[0].name, "Gmail");
        assert_eq!((out[0].results.recipients, out[0].results.opened), (7, 2));
        assert_eq!(out[0].domains, ["gmail.com", "googlemail.com"]);
        assert_eq!((out[1].name.as_str(), out[2].name.as_str()), ("acme.test", "Outlook"));
        assert_eq!(out.len(), MAX_PROVIDERS);
        let other = out.last().unwrap();
        assert_eq!((other.name.as_str(), other.results.recipients), ("Other domains", 12));
    }
}
