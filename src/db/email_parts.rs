//! The large parts of mail: the attachments a `/v1/send` request's emails share, a message
//! submitted over SMTP (or forwarded) kept as written for all its recipients, and an email's own
//! body. A claimed batch of emails reads only the parts of at most [`WITH_BATCH_BYTES`]; a larger
//! part is measured, and read when its email is sent, under the body memory budget, so a batch of
//! large messages is never held at once.

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Result;

/// The largest part read with a claimed batch.
pub const WITH_BATCH_BYTES: i64 = 64 * 1024;

/// A part as a batch reads it: its content, or its size when it is read only at the send.
#[derive(Debug, Clone, PartialEq)]
pub enum Part<T> {
    Read(T),
    Later { bytes: u64 },
}

impl<T> Part<T> {
    /// `content` when the query read it, else the size it measured.
    fn of(bytes: i64, content: Option<T>) -> Part<T> {
        match content {
            Some(content) => Part::Read(content),
            None => Part::Later { bytes: bytes.max(0) as u64 },
        }
    }
}

/// Stores a request's attachments once; returns the set's id for its emails to name.
pub fn insert_attachment_set(conn: &Connection, project: &str, content: &str, now: i64) -> Result<String> {
    let id = super::ids::new_id();
    conn.prepare_cached(
        "INSERT INTO attachment_sets (id, project_id, content, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![id, project, content, now])?;
    Ok(id)
}

/// The attachments of a set (JSON), if it still exists.
pub fn attachment_set(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT content FROM attachment_sets WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// The attachments of a set when they are small, else their size; `None` once the set is gone.
pub fn attachment_set_if_small(conn: &Connection, id: &str) -> Result<Option<Part<String>>> {
    Ok(conn
        .prepare_cached(
            "SELECT octet_length(content), CASE WHEN octet_length(content) <= ?2 THEN content END
             FROM attachment_sets WHERE id = ?1",
        )?
        .query_row(params![id, WITH_BATCH_BYTES], |r| Ok(Part::of(r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Drops a set once no queued email names it any more (its messages are sent or failed).
pub fn drop_attachment_set_when_done(conn: &Connection, id: &str) -> Result<bool> {
    drop_shared_when_done(conn, ("attachment_sets", "attachment_set"), id)
}

/// Drops row `id` of `table`, a part its emails share (attachments, a submitted message), once no
/// queued email names it in `column` any more.
fn drop_shared_when_done(conn: &Connection, (table, column): (&str, &str), id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(&format!(
            "DELETE FROM {table} WHERE id = ?1
               AND NOT EXISTS (SELECT 1 FROM emails WHERE {column} = ?1 AND status = 'QUEUED')"
        ))?
        .execute([id])?
        > 0)
}

/// A submitted message as kept: its bytes as written, and what its mail tracks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawMessage {
    pub content: Vec<u8>,
    /// `opens`, `clicks`.
    pub track: Vec<String>,
}

/// Keeps a submitted message as written, once; returns its id for its emails to name.
pub fn insert_raw_message(
    conn: &Connection,
    project: &str,
    message: &RawMessage,
    now: i64,
) -> Result<String> {
    let id = super::ids::new_id();
    conn.prepare_cached(
        "INSERT INTO raw_messages (id, project_id, content, track, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, project, message.content, message.track.join(","), now])?;
    Ok(id)
}

/// A submitted message, if it is still kept.
pub fn raw_message(conn: &Connection, id: &str) -> Result<Option<RawMessage>> {
    Ok(conn
        .prepare_cached("SELECT content, track FROM raw_messages WHERE id = ?1")?
        .query_row([id], |r| Ok(RawMessage { content: r.get(0)?, track: tracks(&r.get::<_, String>(1)?) }))
        .optional()?)
}

/// A submitted message when it is small, else its size; `None` once it is gone.
pub fn raw_message_if_small(conn: &Connection, id: &str) -> Result<Option<Part<RawMessage>>> {
    Ok(conn
        .prepare_cached(
            "SELECT octet_length(content), CASE WHEN octet_length(content) <= ?2 THEN content END, track
             FROM raw_messages WHERE id = ?1",
        )?
        .query_row(params![id, WITH_BATCH_BYTES], |r| {
            let content: Option<Vec<u8>> = r.get(1)?;
            let track = tracks(&r.get::<_, String>(2)?);
            Ok(Part::of(r.get(0)?, content.map(|content| RawMessage { content, track })))
        })
        .optional()?)
}

/// Drops a submitted message once no queued email names it any more.
pub fn drop_raw_message_when_done(conn: &Connection, id: &str) -> Result<bool> {
    drop_shared_when_done(conn, ("raw_messages", "raw_message"), id)
}

/// What a submitted message's mail tracks, as kept (`opens,clicks`).
fn tracks(kept: &str) -> Vec<String> {
    kept.split(',').filter(|t| !t.is_empty()).map(str::to_string).collect()
}

/// The body and own attachments of an email whose claim left them out
/// ([`super::emails::Email::left_out`]); `None` once the row is gone.
pub fn left_out(conn: &Connection, email: &str) -> Result<Option<(String, Option<String>)>> {
    Ok(conn
        .prepare_cached("SELECT body, attachments FROM emails WHERE id = ?1")?
        .query_row([email], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_part_is_read_and_a_large_one_only_measured() {
        let conn = crate::db::testing::memory();
        let small = insert_attachment_set(&conn, "p", "[]", 1).unwrap();
        let large = "x".repeat(WITH_BATCH_BYTES as usize + 1);
        let big = insert_attachment_set(&conn, "p", &large, 1).unwrap();
        assert_eq!(attachment_set_if_small(&conn, &small).unwrap(), Some(Part::Read("[]".to_string())));
        assert_eq!(
            attachment_set_if_small(&conn, &big).unwrap(),
            Some(Part::Later { bytes: large.len() as u64 })
        );
        assert_eq!(attachment_set(&conn, &big).unwrap().as_deref(), Some(large.as_str()));
        assert_eq!(attachment_set_if_small(&conn, "gone").unwrap(), None);

        let message =
            RawMessage { content: vec![b'y'; WITH_BATCH_BYTES as usize * 2], track: vec!["opens".into()] };
        let id = insert_raw_message(&conn, "p", &message, 1).unwrap();
        assert_eq!(
            raw_message_if_small(&conn, &id).unwrap(),
            Some(Part::Later { bytes: message.content.len() as u64 })
        );
        assert_eq!(raw_message(&conn, &id).unwrap(), Some(message));
        let small = RawMessage { content: b"Subject: hi\r\n\r\nhi\r\n".to_vec(), track: vec![] };
        let id = insert_raw_message(&conn, "p", &small, 1).unwrap();
        assert_eq!(raw_message_if_small(&conn, &id).unwrap(), Some(Part::Read(small)));
    }
}
