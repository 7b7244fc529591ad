//! Receiving providers (issue 34, item 4): the queue a recipient's mail waits in. The big
//! mailbox providers (Gmail, Microsoft, Yahoo, Apple) are one queue each, whatever the domain,
//! since their limits are per sending server, not per domain: a company on Google Workspace is
//! Gmail by its MX hosts. Every other domain is a queue of its own.

/// The big providers' queue names.
pub const GMAIL: &str = "gmail";
pub const MICROSOFT: &str = "microsoft";
pub const YAHOO: &str = "yahoo";
pub const APPLE: &str = "apple";
/// Every named provider, in the order settings and reports list them.
pub const NAMED: [&str; 4] = [GMAIL, MICROSOFT, YAHOO, APPLE];

/// The provider of a consumer domain known without asking DNS.
pub fn by_domain(domain: &str) -> Option<&'static str> {
    let d = domain.trim_end_matches('.').to_ascii_lowercase();
    let first = d.split('.').next().unwrap_or("");
    Some(match d.as_str() {
        "gmail.com" | "googlemail.com" => GMAIL,
        "outlook.com" | "msn.com" | "passport.com" => MICROSOFT,
        "icloud.com" | "me.com" | "mac.com" => APPLE,
        "aol.com" | "ymail.com" | "rocketmail.com" => YAHOO,
        _ => match first {
            "hotmail" | "live" | "outlook" | "windowslive" => MICROSOFT,
            "yahoo" => YAHOO,
            _ => return None,
        },
    })
}

/// The provider whose mail exchangers these are, if a named one.
pub fn by_mx<'a>(hosts: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    hosts.into_iter().find_map(|host| {
        let h = host.trim_end_matches('.').to_ascii_lowercase();
        let under = |zone: &str| h == zone || h.ends_with(&format!(".{zone}"));
        if under("google.com") || under("googlemail.com") {
            Some(GMAIL)
        } else if under("outlook.com") || under("hotmail.com") || under("office365.us") {
            Some(MICROSOFT)
        } else if under("yahoodns.net") || under("yahoo.com") {
            Some(YAHOO)
        } else if under("icloud.com") || under("me.com") || under("apple.com") {
            Some(APPLE)
        } else {
            None
        }
    })
}

/// The queue of mail to `domain` with these mail exchangers: a named provider, or the domain.
pub fn queue_of<'a>(domain: &str, mx: impl IntoIterator<Item = &'a str>) -> String {
    by_domain(domain)
        .or_else(|| by_mx(mx))
        .map_or_else(|| domain.trim_end_matches('.').to_ascii_lowercase(), str::to_string)
}

/// How a queue is shown: `Gmail`, `Microsoft`, `Yahoo`, `Apple`, or the domain.
pub fn label(queue: &str) -> String {
    match queue {
        GMAIL => "Gmail".into(),
        MICROSOFT => "Microsoft".into(),
        YAHOO => "Yahoo".into(),
        APPLE => "Apple".into(),
        domain => domain.to_string(),
    }
}

/// The metrics series of a queue: a named provider, or `other` (domains never become series).
pub fn series(queue: Option<&str>) -> &str {
    match queue {
        Some(q) if is_named(q) => q,
        _ => "other",
    }
}

/// Whether `queue` is a named provider's (not a domain's).
pub fn is_named(queue: &str) -> bool {
    NAMED.contains(&queue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_known_by_their_domains_or_their_mail_exchangers() {
        assert_eq!(queue_of("gmail.com", []), "gmail");
        assert_eq!(queue_of("Hotmail.co.uk", []), "microsoft");
        assert_eq!(queue_of("yahoo.fr", []), "yahoo");
        assert_eq!(queue_of("me.com", []), "apple");
        assert_eq!(queue_of("acme.io", ["aspmx.l.google.com.", "alt1.aspmx.l.google.com"]), "gmail");
        assert_eq!(queue_of("contoso.com", ["contoso-com.mail.protection.outlook.com"]), "microsoft");
        assert_eq!(queue_of("shop.test", ["mta5.am0.yahoodns.net"]), "yahoo");
        assert_eq!(queue_of("family.test", ["mx01.mail.icloud.com"]), "apple");
        assert_eq!(queue_of("Example.ORG.", ["mx.example.org"]), "example.org");
        // A lookalike is not the provider.
        assert_eq!(queue_of("evil.test", ["mx.notgoogle.com"]), "evil.test");
        assert_eq!(label("gmail"), "Gmail");
        assert_eq!(label("example.org"), "example.org");
    }
}
