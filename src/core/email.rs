//! Email address syntax: the practical subset of RFC 5321/5322 that mail relays accept.

/// Longest address a relay must accept (RFC 5321 path limit minus the angle brackets).
pub const MAX_LEN: usize = 254;

/// Lowercases and trims an address if it is well formed; otherwise says what is wrong.
pub fn normalize(address: &str) -> Result<String, &'static str> {
    let address = address.trim();
    if address.is_empty() {
        return Err("is empty");
    }
    if address.len() > MAX_LEN {
        return Err("is longer than 254 characters");
    }
    let (local, domain) = address.rsplit_once('@').ok_or("has no @")?;
    if local.is_empty() || local.len() > 64 {
        return Err("has an empty or too long local part");
    }
    let local_ok = local.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&b))
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..");
    if !local_ok {
        return Err("has characters not allowed in the local part");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && labels.last().is_some_and(|tld| tld.len() >= 2 && !tld.bytes().all(|b| b.is_ascii_digit()));
    if !domain_ok {
        return Err("has an invalid domain");
    }
    Ok(address.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn accepts_common_addresses() {
        assert_eq!(normalize(" Ada.Lovelace+news@Example.COM ").unwrap(), "ada.lovelace+news@example.com");
        assert!(normalize("x@sub.domain.io").is_ok());
        assert!(normalize("o'brien@example.ie").is_ok());
    }

    #[test]
    fn rejects_malformed_addresses() {
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a@b",
            "a b@example.com",
            "a..b@example.com",
            ".a@example.com",
            "a@-x.com",
            "a@x.123",
            "a@exa_mple.com",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(normalize(&format!("{}@example.com", "a".repeat(65))).is_err());
    }
}
