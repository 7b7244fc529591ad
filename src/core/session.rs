//! Dashboard sessions: a signed JWT kept in the `tidings_session` cookie.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};

/// The session cookie's name.
pub const COOKIE: &str = "tidings_session";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: i64,
    exp: i64,
}

/// A signed session token for `user` valid for `hours`.
pub fn issue(user: &str, secret: &str, hours: u32) -> String {
    let now = crate::clock::now_ms() / 1000;
    let claims = Claims { sub: user.into(), iat: now, exp: now + i64::from(hours) * 3600 };
    encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret.as_bytes()))
        .expect("HS256 signing with an in-memory secret cannot fail")
}

/// The user a token was issued to, if its signature holds and it has not expired.
pub fn verify(token: &str, secret: &str) -> Option<String> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "sub"]);
    decode::<Claims>(token, &DecodingKey::from_secret(secret.as_bytes()), &validation)
        .ok()
        .map(|d| d.claims.sub)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_token_round_trips() {
        let token = issue("user-1", SECRET, 1);
        assert_eq!(verify(&token, SECRET).as_deref(), Some("user-1"));
    }

    #[test]
    fn a_token_signed_elsewhere_or_altered_is_refused() {
        let token = issue("user-1", SECRET, 1);
        assert_eq!(verify(&token, "another secret, also 32 bytes long"), None);
        let mut altered = token.clone();
        altered.replace_range(token.len() - 3.., "AAA");
        assert_eq!(verify(&altered, SECRET), None);
        assert_eq!(verify("garbage", SECRET), None);
    }

    #[test]
    fn an_expired_token_is_refused() {
        let now = crate::clock::now_ms() / 1000;
        let claims = Claims { sub: "u".into(), iat: now - 7200, exp: now - 3600 };
        let token =
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes()))
                .unwrap();
        assert_eq!(verify(&token, SECRET), None);
    }
}
