//! Email verification (`POST /v1/verify`, appliance.md section 7): syntax, DNS facts about the
//! domain, and what the bundled lists say of it.

use serde::Serialize;

use super::lists::{contains_with_parents, lists};
use crate::adapters::dns::{Answer, Dns};

/// The verification result of api.md.
/// What `POST /v1/verify` found out about an address.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    pub email: String,
    pub valid: bool,
    pub is_disposable: bool,
    pub is_alias: bool,
    pub is_typo: bool,
    pub is_plus_addressed: bool,
    pub is_personal_email: bool,
    pub domain_exists: bool,
    pub has_website: bool,
    pub has_mx_records: bool,
    pub reasons: Vec<String>,
}

/// The popular provider `domain` is one typing mistake away from, unless it is a known
/// provider itself. One mistake: a letter added, dropped, changed, or two swapped.
pub fn typo_of(domain: &str) -> Option<&'static str> {
    let lists = lists();
    if lists.popular.contains(&domain) || lists.personal.contains(domain) {
        return None;
    }
    lists.popular.iter().copied().find(|popular| strsim::osa_distance(domain, popular) == 1)
}

/// Verifies an address that already passed the syntax check (normalised, lowercase).
pub async fn verify(dns: &Dns, email: &str) -> Verification {
    let (local, domain) = email.rsplit_once('@').unwrap_or((email, ""));
    let lists = lists();
    let is_plus_addressed =
        local.split_once('+').is_some_and(|(base, tag)| !base.is_empty() && !tag.is_empty());
    let is_disposable = contains_with_parents(&lists.disposable, domain);
    let is_alias = contains_with_parents(&lists.aliases, domain);
    let is_personal_email = lists.personal.contains(domain);
    let typo = typo_of(domain);

    let www = format!("www.{domain}");
    let (mx, a, aaaa, www_a, www_aaaa) =
        tokio::join!(dns.mx(domain), dns.a(domain), dns.aaaa(domain), dns.a(&www), dns.aaaa(&www));
    let mail_hosts: Vec<_> = mx.records().iter().filter(|m| !m.is_null()).collect();
    let null_mx = !mx.records().is_empty() && mail_hosts.is_empty();
    let has_mx_records = !mail_hosts.is_empty();
    let has_address = !a.records().is_empty() || !aaaa.records().is_empty();
    let domain_exists = has_address || !mx.records().is_empty();
    let has_website = has_address || !www_a.records().is_empty() || !www_aaaa.records().is_empty();
    // RFC 5321: without MX records, mail goes to the domain's own address; a null MX refuses mail.
    let no_mx = matches!(mx, Answer::NoData | Answer::NxDomain);
    let accepts_mail = has_mx_records || (no_mx && has_address);
    let failure = [mx.failure(), a.failure(), aaaa.failure()].into_iter().flatten().next().cloned();

    let mut reasons = Vec::new();
    if let Some(failure) = &failure
        && !domain_exists
    {
        reasons.push(format!("Could not check the domain {domain}: {}", failure.describe()));
    } else if matches!(mx, Answer::NxDomain) && !has_address {
        reasons.push(format!("The domain {domain} does not exist"));
    } else if !domain_exists {
        reasons.push(format!("The domain {domain} has no mail (MX) or address (A/AAAA) records"));
    } else if null_mx {
        reasons.push(format!("The domain {domain} declares that it accepts no email (null MX)"));
    } else if !accepts_mail {
        reasons.push(format!("The domain {domain} has no mail servers"));
    }
    if is_disposable {
        reasons.push(format!("{domain} is a disposable email provider"));
    }
    if let Some(suggestion) = typo {
        reasons.push(format!("The domain {domain} looks like a typo of {suggestion}"));
    }
    let valid = domain_exists && accepts_mail && !is_disposable && typo.is_none();
    if valid {
        reasons.push(format!("The address is well formed and {domain} accepts email"));
    }
    if is_alias {
        reasons.push(format!("{domain} is a forwarding-alias service"));
    }
    if is_plus_addressed {
        reasons.push("The address uses a +tag (sub-addressing)".into());
    }
    Verification {
        email: email.to_string(),
        valid,
        is_disposable,
        is_alias,
        is_typo: typo.is_some(),
        is_plus_addressed,
        is_personal_email,
        domain_exists,
        has_website,
        has_mx_records,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::typo_of;

    #[test]
    fn typos_of_popular_providers() {
        assert_eq!(typo_of("gmial.com"), Some("gmail.com"));
        assert_eq!(typo_of("gmai.com"), Some("gmail.com"));
        assert_eq!(typo_of("hotmial.com"), Some("hotmail.com"));
        assert_eq!(typo_of("gmail.con"), Some("gmail.com"));
        assert_eq!(typo_of("gmail.com"), None, "a popular domain is not a typo");
        assert_eq!(typo_of("mail.com"), None, "a known provider is not a typo");
        assert_eq!(typo_of("example.com"), None);
    }
}
