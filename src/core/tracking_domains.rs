//! A project's custom tracking domain (issue 34, item 6): tracked links and the open pixel of
//! its mail on its own host (`track.example.com`), behind the reverse proxy with this server.
//! Two records prove it, as a sender domain's do: a CNAME to this server's host (so the links
//! reach it) and a TXT record with the project's token (so no other project of the server can
//! claim a host that already points here). Until both are found, mail uses the server's URL.

use std::net::IpAddr;

use hickory_resolver::proto::rr::RecordType;

use crate::adapters::dns::{Answer, Dns};
use crate::db::Tx;
use crate::db::tracking_domains::{self as rows, TrackingDomain};

use super::error::{Error, Result};

/// Where the TXT record goes, under the domain.
pub const TXT_PREFIX: &str = "_tidings-tracking";

/// A record to publish: (type, name, value).
pub type Record = (&'static str, String, String);

/// What must be published for `d`, for a server whose public host is `host`: a CNAME to it,
/// or, when the server is known by an address only, an A or AAAA record of that address.
pub fn records(d: &TrackingDomain, host: &str) -> Vec<Record> {
    let kind = match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => "A",
        Ok(IpAddr::V6(_)) => "AAAA",
        Err(_) => "CNAME",
    };
    vec![
        (kind, d.domain.clone(), host.to_string()),
        ("TXT", format!("{TXT_PREFIX}.{}", d.domain), format!("tidings-tracking={}", d.token)),
    ]
}

/// The host of a public URL (`https://mail.example.com:8443/x` → `mail.example.com`).
pub fn host_of(public_url: &str) -> String {
    let rest = public_url.split_once("://").map_or(public_url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.to_ascii_lowercase()
}

/// Sets `project`'s tracking domain to `name` (unverified, with a new token). 409 when another
/// project of this server holds it; 422 for a name that is no domain.
pub fn set(tx: &Tx, project: &str, name: &str, now: i64) -> Result<TrackingDomain> {
    let domain = super::domains::normalize(name)?;
    if rows::holder(tx, &domain)?.is_some_and(|p| p != project) {
        return Err(Error::conflict("Another project of this server uses this tracking domain"));
    }
    let d = TrackingDomain {
        project_id: project.to_string(),
        domain,
        token: super::keys::random_token(),
        verified_at: None,
        checked_at: None,
        last_error: None,
        created_at: now,
    };
    rows::put(tx, &d)?;
    Ok(d)
}

/// Why `d`'s records do not prove it yet, or `None` when both are published as asked.
pub async fn check(dns: &Dns, d: &TrackingDomain, host: &str) -> Option<String> {
    dns.fresh(&d.domain, &[RecordType::CNAME, RecordType::A, RecordType::AAAA]);
    let (kind, found): (&str, Answer<String>) = match host.parse::<IpAddr>() {
        Ok(ip) => {
            let answer = if ip.is_ipv4() { dns.a(&d.domain).await } else { dns.aaaa(&d.domain).await };
            let kind = if ip.is_ipv4() { "an A record of" } else { "an AAAA record of" };
            (kind, addresses(answer))
        }
        Err(_) => ("a CNAME to", dns.cname(&d.domain).await),
    };
    if let Some(failure) = found.failure() {
        return Some(failure.describe());
    }
    if !found.records().iter().any(|target| target.eq_ignore_ascii_case(host)) {
        let seen = match &found {
            Answer::Found(targets) => format!("it points to {}", targets.join(", ")),
            _ => "there is none".into(),
        };
        return Some(format!("{} must be {kind} {host}; {seen}", d.domain));
    }
    let name = format!("{TXT_PREFIX}.{}", d.domain);
    dns.fresh(&name, &[RecordType::TXT]);
    let txt = dns.txt(&name).await;
    if let Some(failure) = txt.failure() {
        return Some(failure.describe());
    }
    let expected = format!("tidings-tracking={}", d.token);
    if !txt.records().iter().any(|t| t.trim() == expected) {
        return Some(format!("the TXT record at {name} must be {expected}"));
    }
    None
}

/// An answer of addresses as text, to compare with the host.
fn addresses(answer: Answer<IpAddr>) -> Answer<String> {
    match answer {
        Answer::Found(ips) => Answer::Found(ips.iter().map(IpAddr::to_string).collect()),
        Answer::NoData => Answer::NoData,
        Answer::NxDomain => Answer::NxDomain,
        Answer::Failed(f) => Answer::Failed(f),
    }
}

/// The URL `project`'s mailed links start with when it has a verified tracking domain:
/// `https://<domain>`.
pub fn link_base(conn: &Tx, project: &str) -> crate::db::Result<Option<String>> {
    Ok(rows::verified(conn, project)?.map(|d| format!("https://{d}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_to_publish_follows_how_the_server_is_known() {
        let d = TrackingDomain {
            project_id: "p".into(),
            domain: "track.example.com".into(),
            token: "t0k".into(),
            verified_at: None,
            checked_at: None,
            last_error: None,
            created_at: 0,
        };
        let kinds = |host: &str| records(&d, host).into_iter().map(|(kind, ..)| kind).collect::<Vec<_>>();
        assert_eq!(kinds("mail.example.com"), ["CNAME", "TXT"]);
        assert_eq!(kinds("203.0.113.7"), ["A", "TXT"]);
        assert_eq!(kinds("2001:db8::7"), ["AAAA", "TXT"]);
        assert_eq!(records(&d, "x")[1].2, "tidings-tracking=t0k");
        assert_eq!(host_of("https://Mail.Example.com:8443/path"), "mail.example.com");
        assert_eq!(host_of("http://[2001:db8::7]:8000"), "2001:db8::7");
        assert_eq!(host_of("http://127.0.0.1:8000"), "127.0.0.1");
    }
}
