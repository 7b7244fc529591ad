//! API key generation and digests.
//!
//! A key is `pk_` or `sk_` followed by 40 characters from `[A-Za-z0-9]` (about 238 bits), so a
//! plain SHA-256 digest is enough to store it: there is nothing to brute-force.

use rand::Rng;
use rand::distributions::Alphanumeric;
use sha2::{Digest, Sha256};

use crate::db::keys::KeyKind;

pub const PUBLIC_PREFIX: &str = "pk_";
pub const SECRET_PREFIX: &str = "sk_";
const BODY_LEN: usize = 40;

/// A new random key of `kind`.
pub fn generate(kind: KeyKind) -> String {
    let prefix = match kind {
        KeyKind::Public => PUBLIC_PREFIX,
        KeyKind::Secret => SECRET_PREFIX,
    };
    format!("{prefix}{}", random_token())
}

/// 40 random characters from `[A-Za-z0-9]`: the body of a key, a session id, a token mailed
/// to a user. Stored only as its [`digest`].
pub fn random_token() -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(BODY_LEN).map(char::from).collect()
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a.as_bytes(), b.as_bytes()).is_ok()
}

/// The hex SHA-256 digest under which a key is stored.
pub fn digest(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The kind a key claims to be by its prefix, if it is well formed.
pub fn kind_of(key: &str) -> Option<KeyKind> {
    let (kind, body) = if let Some(body) = key.strip_prefix(PUBLIC_PREFIX) {
        (KeyKind::Public, body)
    } else if let Some(body) = key.strip_prefix(SECRET_PREFIX) {
        (KeyKind::Secret, body)
    } else {
        return None;
    };
    (body.len() == BODY_LEN && body.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(kind)
}

/// A freshly issued pair; the secret key is never stored and is shown only now.
#[derive(Debug, Clone)]
pub struct IssuedKeys {
    pub public_key: String,
    pub secret_key: String,
}

/// Replaces a project's keys by a new pair.
pub fn issue(conn: &crate::db::Tx, project: &str) -> crate::db::Result<IssuedKeys> {
    let public_key = generate(KeyKind::Public);
    let secret_key = generate(KeyKind::Secret);
    crate::db::keys::replace(conn, project, &public_key, &digest(&public_key), &digest(&secret_key))?;
    Ok(IssuedKeys { public_key, secret_key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shape() {
        let pk = generate(KeyKind::Public);
        let sk = generate(KeyKind::Secret);
        assert!(pk.starts_with("pk_") && pk.len() == 43, "{pk}");
        assert!(sk.starts_with("sk_") && sk.len() == 43, "{sk}");
        assert_eq!(kind_of(&pk), Some(KeyKind::Public));
        assert_eq!(kind_of(&sk), Some(KeyKind::Secret));
        assert_ne!(generate(KeyKind::Secret), sk);
    }

    #[test]
    fn malformed_keys_have_no_kind() {
        assert_eq!(kind_of("sk_short"), None);
        assert_eq!(kind_of("xx_0123456789012345678901234567890123456789"), None);
        assert_eq!(kind_of(&format!("sk_{}!", "a".repeat(39))), None);
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
