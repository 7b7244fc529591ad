//! Sender domains: names, the DNS records to publish, DKIM keys, verification checks, and the
//! sender rule every sending path applies.

use std::net::IpAddr;

use crate::db::Tx;
use hickory_resolver::proto::rr::{Name, RecordType};
use rand::Rng;
use rand::distributions::Alphanumeric;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::adapters::dns::{Answer, Dns};
use crate::clock;
use crate::core::error::{Error, FieldError, Forbidden, Limit, Result, on_duplicate};
use crate::core::ids::DomainId;
use crate::db::domains::{self, Domain};
use crate::db::{refs, templates};

/// The DKIM selector: keys are published at `tidings._domainkey.<domain>`.
pub const DKIM_SELECTOR: &str = "tidings";
/// The SPF record suggested (not required: the relay's own SPF include belongs in it too).
pub const SPF_SUGGESTION: &str = "v=spf1 a mx ~all";

fn invalid(message: impl Into<String>, received: &str) -> Error {
    Error::Invalid(vec![
        FieldError::new("domain", "invalid_string", message)
            .received(json!(received.chars().take(300).collect::<String>())),
    ])
}

/// The domain as stored: lowercase ASCII (an IDN becomes punycode), no trailing dot; 422 for a
/// URL, an address, an IP, a single label or a malformed name.
pub fn normalize(input: &str) -> Result<String> {
    let text = input.trim().trim_end_matches('.');
    if text.is_empty() {
        return Err(invalid("domain must not be empty", input));
    }
    if text.contains("://") || text.contains(['/', '@', ':', '?', '#', ' ']) {
        return Err(invalid(
            "give the bare domain name, like example.com, without a scheme, path, port or address",
            input,
        ));
    }
    if text.parse::<IpAddr>().is_ok() {
        return Err(invalid("an IP address is not a domain", input));
    }
    let ascii = Name::from_utf8(text)
        .map_err(|e| invalid(format!("not a valid domain name: {e}"), input))?
        .to_ascii()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let labels: Vec<&str> = ascii.split('.').collect();
    let labels_ok = labels.iter().all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    let tld_ok = labels.last().is_some_and(|t| {
        t.len() >= 2 && (t.bytes().all(|b| b.is_ascii_alphabetic()) || t.starts_with("xn--"))
    });
    if super::sandbox::is_sandbox_name(&ascii) {
        return Err(invalid(
            "names under sandbox.invalid are the projects' sandbox domains, verified while mail is captured; add a domain you own",
            input,
        ));
    }
    if labels.len() < 2 || !labels_ok || !tld_ok || ascii.len() > 253 {
        return Err(invalid(
            "not a valid domain name; it needs at least a name and a top-level domain, like example.com",
            input,
        ));
    }
    Ok(ascii)
}

/// What a record is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    Verification,
    Dkim,
    Spf,
}

/// A DNS record the domain's owner publishes.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSpec {
    pub purpose: Purpose,
    pub name: String,
    pub value: String,
    pub required: bool,
}

/// The records of appliance.md section 6, in order: verification, DKIM, SPF.
pub fn records(domain: &Domain) -> Vec<RecordSpec> {
    vec![
        RecordSpec {
            purpose: Purpose::Verification,
            name: format!("_tidings.{}", domain.domain),
            value: format!("tidings-verification={}", domain.token),
            required: true,
        },
        RecordSpec {
            purpose: Purpose::Dkim,
            name: format!("{}._domainkey.{}", domain.dkim_selector, domain.domain),
            value: format!("v=DKIM1; k=rsa; p={}", domain.dkim_public_key),
            required: true,
        },
        RecordSpec {
            purpose: Purpose::Spf,
            name: domain.domain.clone(),
            value: SPF_SUGGESTION.into(),
            required: false,
        },
    ]
}

/// A new pending domain for `project`, first checked at a random time within the check interval
/// so that many domains spread their checks.
pub fn new_domain(project: &str, name: &str, key: (String, String), interval_ms: i64) -> Domain {
    let now = clock::now_ms();
    let token: String = rand::thread_rng().sample_iter(&Alphanumeric).take(32).map(char::from).collect();
    Domain {
        id: DomainId::fresh().into(),
        project_id: project.into(),
        domain: name.into(),
        status: "pending".into(),
        token,
        dkim_selector: DKIM_SELECTOR.into(),
        dkim_private_key: key.0,
        dkim_public_key: key.1,
        checks: None,
        created_at: now,
        verified_at: None,
        last_checked_at: None,
        next_check_at: now + rand::thread_rng().gen_range(0..interval_ms.max(1)),
    }
}

/// The result of checking one record (of a sender domain; an inbound domain's records have
/// purposes of their own, [`crate::core::inbound::Purpose`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordCheck<P = Purpose> {
    pub purpose: P,
    pub found: bool,
    /// Set when DNS gave no answer (`timeout`, `servfail`, ...): the record may still be there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A record's text without white space: how a published value is compared with the expected one.
pub fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Looks up every record now (bypassing cached answers) and says whether each is there with the
/// expected value. SPF counts as found when the domain has any SPF record.
pub async fn check(dns: &Dns, domain: &Domain) -> Vec<RecordCheck> {
    let mut results = Vec::new();
    for spec in records(domain) {
        dns.fresh(&spec.name, &[RecordType::TXT]);
        let answer = dns.txt(&spec.name).await;
        let found = answer.records().iter().any(|value| match spec.purpose {
            Purpose::Spf => value.trim_start().to_ascii_lowercase().starts_with("v=spf1"),
            _ => squeeze(value) == squeeze(&spec.value),
        });
        let error = match &answer {
            Answer::Failed(failure) if !found => Some(failure.code().to_string()),
            _ => None,
        };
        results.push(RecordCheck { purpose: spec.purpose, found, error });
    }
    results
}

/// The status after a check: verified when every required record was found; pending when one
/// is definitely missing; unchanged when DNS could not answer for a missing one.
pub fn status_after(domain: &Domain, checks: &[RecordCheck]) -> String {
    let specs = records(domain);
    let mut all_found = true;
    let mut definitely_missing = false;
    for (spec, check) in specs.iter().zip(checks) {
        if !spec.required || check.found {
            continue;
        }
        all_found = false;
        if check.error.is_none() {
            definitely_missing = true;
        }
    }
    if all_found {
        "verified".into()
    } else if definitely_missing {
        "pending".into()
    } else {
        domain.status.clone()
    }
}

/// Checks a domain and stores the outcome; returns the updated domain.
/// The next check is due `interval_secs` later (`[dns] domain_check_interval_secs`).
pub async fn check_and_save(
    dns: &Dns,
    db: &crate::db::Db,
    interval_secs: u32,
    domain: Domain,
) -> Result<Domain> {
    let checks = check(dns, &domain).await;
    let status = status_after(&domain, &checks);
    let now = clock::now_ms();
    let verified_at = match (status.as_str(), domain.verified_at) {
        ("verified", Some(at)) => Some(at),
        ("verified", None) => Some(now),
        _ => None,
    };
    let interval = i64::from(interval_secs) * 1000;
    let checks_json = serde_json::to_string(&checks).unwrap_or_else(|_| "[]".into());
    let id = domain.id.clone();
    let (saved_status, saved_checks) = (status.clone(), checks_json.clone());
    db.write(move |tx| {
        Ok::<_, Error>(domains::save_check(
            tx,
            &id,
            &saved_status,
            verified_at,
            &saved_checks,
            now,
            now + interval,
        )?)
    })
    .await?;
    if status != domain.status {
        tracing::info!(domain = domain.domain, from = domain.status, to = status, "domain status changed");
    }
    Ok(Domain {
        status,
        verified_at,
        checks: Some(checks_json),
        last_checked_at: Some(now),
        next_check_at: now + interval,
        ..domain
    })
}

/// The domain and its parents, most specific first, down to two labels (`a.b.example.com`,
/// `b.example.com`, `example.com`).
pub fn candidates(domain: &str) -> Vec<String> {
    let labels: Vec<&str> = domain.split('.').collect();
    (0..labels.len().saturating_sub(1)).map(|i| labels[i..].join(".")).collect()
}

/// The sender rule: the from address's domain, or a parent of it, is verified in this project,
/// or it is the project's sandbox domain while mail is captured. Otherwise [`Forbidden::UnverifiedSender`] (the API answers it as appliance.md section 11 says).
pub fn require_verified_sender(conn: &Tx, project: &str, from: &str) -> Result<()> {
    let domain = from
        .rsplit_once('@')
        .map(|(_, d)| d)
        .unwrap_or(from)
        .trim()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if domains::verified_among(conn, project, &candidates(&domain))?.is_some() {
        return Ok(());
    }
    // While mail is captured, the project's sandbox domain is verified (and named otherwise).
    let sandbox = super::sandbox::captured(conn)?.then(|| super::sandbox::domain_of(project));
    if sandbox.as_deref() == Some(domain.as_str()) {
        return Ok(());
    }
    Err(Error::Forbidden(Forbidden::UnverifiedSender { domain, sandbox }))
}

/// Domain `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &DomainId) -> Result<Domain> {
    domains::get(conn, project, id)?.ok_or_else(|| DomainId::missing(id))
}

/// Whether `project` may add the domain `name`: not one of its domains yet, and fewer than
/// `cap` of them. Asked before a key is made for it, and again by [`add`].
pub fn may_add(conn: &Tx, project: &str, name: &str, cap: u32) -> Result<()> {
    if domains::exists(conn, project, name)? {
        return Err(Error::conflict(format!("{name} is already a domain of this project")));
    }
    if domains::count(conn, project)? >= u64::from(cap) {
        return Err(Error::OverLimit(Limit::Domains { cap }));
    }
    Ok(())
}

/// Adds `domain` (made by [`new_domain`]) to its project, checked again in the write: requests
/// made at the same time all passed the first check.
pub fn add(tx: &Tx, domain: &Domain, cap: u32) -> Result<()> {
    if domains::count(tx, &domain.project_id)? >= u64::from(cap) {
        return Err(Error::OverLimit(Limit::Domains { cap }));
    }
    domains::insert(tx, domain)
        .map_err(|e| on_duplicate(e, &format!("{} is already a domain of this project", domain.domain)))
}

/// Removes domain `id`, unless a template or an unfinished campaign sends from it (or a subdomain
/// of it): 409 naming which.
pub fn remove(tx: &Tx, project: &str, id: &DomainId) -> Result<()> {
    let domain = &find(tx, project, id)?;
    if let Some(template) = templates::one_sending_from(tx, &domain.project_id, &domain.domain)? {
        return Err(Error::conflict(format!(
            "The template {template:?} sends from {}; change its sender before removing the domain",
            domain.domain
        )));
    }
    if let Some((_, campaign)) = refs::active_campaign_on_domain(tx, &domain.project_id, &domain.domain)? {
        return Err(Error::conflict(format!(
            "The campaign {campaign:?} sends from {}; cancel it or wait until it has sent",
            domain.domain
        )));
    }
    domains::delete(tx, &domain.id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalized_and_checked() {
        assert_eq!(normalize(" Example.COM. ").unwrap(), "example.com");
        assert_eq!(normalize("mail.example.co.uk").unwrap(), "mail.example.co.uk");
        assert_eq!(normalize("bücher.de").unwrap(), "xn--bcher-kva.de");
        for bad in [
            "",
            "localhost",
            "https://example.com",
            "example.com/path",
            "user@example.com",
            "example.com:25",
            "192.168.1.1",
            "-bad.com",
            "bad-.com",
            "a..b.com",
            "exa mple.com",
            "example.123",
            &format!("{}.com", "a".repeat(64)),
        ] {
            let e = normalize(bad).unwrap_err();
            assert_eq!((e.kind(), e.fields()[0].code.as_str()), ("invalid", "invalid_string"), "{bad:?}");
        }
    }

    #[test]
    fn parents_are_candidates() {
        assert_eq!(candidates("a.b.example.com"), ["a.b.example.com", "b.example.com", "example.com"]);
        assert_eq!(candidates("example.com"), ["example.com"]);
    }
}
