//! Single sign-on's rows: the sign-ins under way (`oauth_states`) and the identities linked to
//! users (`user_identities`).

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Result;

/// A sign-in under way.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub state: String,
    pub provider: String,
    pub nonce: String,
    pub verifier: String,
}

/// Forgets the sign-ins started before `before`.
pub fn forget_states_before(conn: &Connection, before: i64) -> Result<()> {
    conn.execute("DELETE FROM oauth_states WHERE created_at < ?1", [before])?;
    Ok(())
}

/// How many sign-ins are under way.
pub fn states_under_way(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT count(*) FROM oauth_states", [], |r| r.get(0))?)
}

pub fn keep_state(conn: &Connection, pending: &Pending, now: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO oauth_states (state, provider, nonce, verifier, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![pending.state, pending.provider, pending.nonce, pending.verifier, now],
    )?;
    Ok(())
}

/// Deletes the sign-in named by `state` and returns it with when it started.
pub fn take_state(conn: &Connection, state: &str) -> Result<Option<(Pending, i64)>> {
    Ok(conn
        .query_row(
            "DELETE FROM oauth_states WHERE state = ?1 RETURNING provider, nonce, verifier, created_at",
            [state],
            |r| {
                Ok((
                    Pending {
                        state: state.to_string(),
                        provider: r.get(0)?,
                        nonce: r.get(1)?,
                        verifier: r.get(2)?,
                    },
                    r.get::<_, i64>(3)?,
                ))
            },
        )
        .optional()?)
}

/// The user a provider's identity is linked to.
pub fn linked_user(conn: &Connection, provider: &str, subject: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT user_id FROM user_identities WHERE provider = ?1 AND subject = ?2",
            params![provider, subject],
            |r| r.get(0),
        )
        .optional()?)
}

/// Links a provider's identity to a user.
pub fn link(conn: &Connection, provider: &str, subject: &str, user: &str, now: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO user_identities (provider, subject, user_id, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![provider, subject, user, now],
    )?;
    Ok(())
}
