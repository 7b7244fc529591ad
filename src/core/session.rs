//! Dashboard sessions: a signed JWT kept in the `tidings_session` cookie, naming a session row.
//!
//! The token says who the user is and which session (`sid`, random); the `sessions` table says
//! whether that session still exists. Logout deletes the row, and a password change or reset
//! deletes all of the user's rows ([`end_all`]), so a copied cookie stops working at once even
//! though its signature and expiry still hold.

use crate::db::Tx;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};

use crate::clock;
use crate::db::sessions;
use crate::db::users::User;

/// The session cookie's name.
pub const COOKIE: &str = "tidings_session";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    sid: String,
    iat: i64,
    exp: i64,
}

/// What a valid token names: the user and the digest of its session id.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub user: String,
    pub session: String,
}

/// Starts a session of `user` for `hours` in the caller's transaction; returns the token for
/// the cookie.
pub fn start(conn: &Tx, user: &str, secret: &str, hours: u32) -> crate::db::Result<String> {
    let sid = crate::core::keys::random_token();
    let now = clock::now_ms();
    let expires_at = now + i64::from(hours) * 3_600_000;
    sessions::insert(conn, &crate::core::keys::digest(&sid), user, now, expires_at)?;
    Ok(issue(user, &sid, secret, now / 1000, expires_at / 1000))
}

fn issue(user: &str, sid: &str, secret: &str, iat: i64, exp: i64) -> String {
    let claims = Claims { sub: user.into(), sid: sid.into(), iat, exp };
    encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret.as_bytes()))
        .expect("HS256 signing with an in-memory secret cannot fail")
}

/// The user and session a token names, if its signature holds and it has not expired (whether
/// the session still exists is the database's to say: [`user`]).
pub fn verify(token: &str, secret: &str) -> Option<Named> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "sub"]);
    decode::<Claims>(token, &DecodingKey::from_secret(secret.as_bytes()), &validation)
        .ok()
        .map(|d| Named { user: d.claims.sub, session: crate::core::keys::digest(&d.claims.sid) })
}

/// The user of a session that still exists.
pub fn user(conn: &Tx, named: &Named) -> crate::db::Result<Option<User>> {
    sessions::user(conn, &named.session, &named.user, clock::now_ms())
}

/// Ends the session `named`: a copy of its cookie stops working too.
pub fn end(conn: &Tx, named: &Named) -> crate::db::Result<()> {
    sessions::delete(conn, &named.session)?;
    Ok(())
}

/// Ends every session of `user`: after a password change or reset.
pub fn end_all(conn: &Tx, user: &str) -> crate::db::Result<usize> {
    sessions::delete_for_user(conn, user)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn fresh(user: &str) -> String {
        let now = crate::clock::now_ms() / 1000;
        issue(user, "sid-1", SECRET, now, now + 3600)
    }

    #[test]
    fn a_token_round_trips() {
        let named = verify(&fresh("user-1"), SECRET).unwrap();
        assert_eq!(named.user, "user-1");
        assert_eq!(named.session, crate::core::keys::digest("sid-1"));
    }

    #[test]
    fn a_token_signed_elsewhere_or_altered_is_refused() {
        let token = fresh("user-1");
        assert_eq!(verify(&token, "another secret, also 32 bytes long"), None);
        // One character of the signature changed to another (its last character carries
        // padding bits a decoder may ignore, so one well inside it).
        let mut altered = token.clone();
        let at = token.len() - 10;
        let other = if &token[at..at + 1] == "A" { "B" } else { "A" };
        altered.replace_range(at..at + 1, other);
        assert_eq!(verify(&altered, SECRET), None);
        assert_eq!(verify("garbage", SECRET), None);
    }

    #[test]
    fn an_expired_token_is_refused() {
        let now = crate::clock::now_ms() / 1000;
        let claims = Claims { sub: "u".into(), sid: "s".into(), iat: now - 7200, exp: now - 3600 };
        let token =
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes()))
                .unwrap();
        assert_eq!(verify(&token, SECRET), None);
    }
}
