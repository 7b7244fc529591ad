//! The envelope sender every message leaves with when the bounce listener is on (appliance.md
//! §12): `b-<email id>-<signature>@<[bounces] domain>`. The signature (an HMAC of the email's id
//! under the link secret, cut to 80 bits) means a bounce can only name an email this server
//! sent: made-up or altered addresses are refused at RCPT. Lower-case hex only, so relays that
//! fold the local part's case change nothing; 55 characters, under SMTP's 64.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of the HMAC kept in the address.
const SIGNATURE_BYTES: usize = 10;

fn mac(secret: &str, id: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(b"bounce\n");
    mac.update(id.as_bytes());
    mac
}

/// The envelope sender for the email `id` (a UUID).
pub fn address(secret: &str, id: &str, domain: &str) -> String {
    let compact: String = id.chars().filter(|c| *c != '-').collect::<String>().to_ascii_lowercase();
    let signature = mac(secret, &compact).finalize().into_bytes();
    format!("b-{compact}-{}@{}", hex::encode(&signature[..SIGNATURE_BYTES]), domain.to_ascii_lowercase())
}

/// The email id an address stands for, if it is one of ours for `domain` and its signature holds.
pub fn email_of(secret: &str, address: &str, domain: &str) -> Option<String> {
    let address = address.trim().trim_start_matches('<').trim_end_matches('>');
    let (local, at) = address.rsplit_once('@')?;
    if !at.eq_ignore_ascii_case(domain) {
        return None;
    }
    let local = local.to_ascii_lowercase();
    let rest = local.strip_prefix("b-")?;
    let (compact, signature) = rest.split_once('-')?;
    if compact.len() != 32 || !compact.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let signature = hex::decode(signature).ok()?;
    if signature.len() != SIGNATURE_BYTES {
        return None;
    }
    mac(secret, compact).verify_truncated_left(&signature).ok()?;
    let c = compact;
    Some(format!("{}-{}-{}-{}-{}", &c[..8], &c[8..12], &c[12..16], &c[16..20], &c[20..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_names_its_email_and_nothing_else_passes() {
        let id = "01a20c36-e034-771e-998e-9fad4b71bfdf";
        let address = address("secret", id, "Bounces.Example.test");
        assert!(address.starts_with("b-01a20c36e034771e998e9fad4b71bfdf-"), "{address}");
        assert!(address.split('@').next().unwrap().len() <= 64);
        assert_eq!(email_of("secret", &address, "bounces.example.test").as_deref(), Some(id));
        assert_eq!(
            email_of("secret", &format!("<{}>", address.to_uppercase()), "BOUNCES.example.test").as_deref(),
            Some(id)
        );
        assert_eq!(email_of("other secret", &address, "bounces.example.test"), None);
        assert_eq!(email_of("secret", &address, "elsewhere.test"), None);
        let altered = address.replacen("01a2", "01a3", 1);
        assert_eq!(email_of("secret", &altered, "bounces.example.test"), None);
        for junk in [
            "b-@bounces.example.test",
            "postmaster@bounces.example.test",
            "b-xyz-00@bounces.example.test",
            "@",
            "",
        ] {
            assert_eq!(email_of("secret", junk, "bounces.example.test"), None, "{junk}");
        }
    }
}
