//! CSV contact import: checking an upload, typing cells, and importing in resumable batches.
//!
//! The file is kept with its job. Each batch reads records from the job's byte offset, upserts
//! them, and commits the contacts together with the new offset and counters, so a crash resumes
//! at the first record not yet committed and nothing is imported twice.

use crate::db::Tx;
use serde_json::{Value, json};

use super::contacts::{self as core_contacts, Upsert};
use super::fields::FieldChanges;
use super::import_options::{self, Options};
use super::import_rows::{Column, FileRows, Next, Source, Spent, body, columns, reader, type_cell};
use crate::core::error::{Error, FieldError, Result};
use crate::db::contact_jobs::{self, ContactJob};
use crate::db::contacts::{self, Indexing};

/// Most error items kept on a job; `errorCount` has the full number.
pub const MAX_ERRORS: usize = 1000;

/// Checks an upload: UTF-8, a header row with an `email` column, well-formed CSV. Returns the
/// number of data rows.
pub fn inspect(content: &[u8]) -> Result<u64> {
    let invalid = |message: String| Error::Invalid(vec![FieldError::new("file", "invalid_file", message)]);
    let text = body(content);
    if std::str::from_utf8(text).is_err() {
        return Err(invalid("the file is not UTF-8 text".into()));
    }
    let mut rows = reader(text, true);
    let header = rows.headers().map_err(|e| invalid(format!("the header row cannot be read: {e}")))?.clone();
    if header.iter().all(|h| h.trim().is_empty()) {
        return Err(invalid("the file is empty; the first row must name the columns".into()));
    }
    if !columns(&header, None).contains(&Column::Email) {
        return Err(invalid("the header row has no `email` column".into()));
    }
    let mut count = 0;
    let mut record = csv::ByteRecord::new();
    loop {
        match rows.read_byte_record(&mut record) {
            Ok(true) => count += 1,
            Ok(false) => break,
            Err(e) => return Err(invalid(format!("row {} is not valid CSV: {e}", count + 2))),
        }
    }
    Ok(count)
}

/// How many rows [`preview`] shows.
pub const PREVIEW_ROWS: usize = 5;

/// What an import would do: its rows, each column with what it becomes, the first rows typed.
#[derive(Debug)]
pub struct Preview {
    pub total_rows: u64,
    /// Each column's name and what it becomes: `email`, `data.<name>`, or `None` when dropped.
    pub columns: Vec<(String, Option<String>)>,
    pub rows: Vec<Vec<Value>>,
}

/// What an import of `content` would do, without doing it: the number of rows, each column and
/// what it becomes (`email`, `data.<name>`, or null when it is dropped), and the first rows'
/// cells typed as the import types them. The file is checked as [`inspect`] checks it.
pub fn preview(content: &[u8], options: Option<&Options>) -> Result<Preview> {
    let total = inspect(content)?;
    let mut rows = reader(body(content), true);
    let header = rows.headers().map_err(|e| Error::malformed(e.to_string()))?.clone();
    if let Some(options) = options {
        options.check_header(&header.iter().map(str::to_string).collect::<Vec<_>>())?;
    }
    let kinds = columns(&header, options);
    let columns: Vec<(String, Option<String>)> = header
        .iter()
        .zip(&kinds)
        .map(|(name, kind)| {
            let becomes = match kind {
                Column::Email => Some("email".to_string()),
                Column::Data(name, _) => Some(format!("data.{name}")),
                Column::Subscribed => Some("subscribed".to_string()),
                Column::Dropped => None,
            };
            (name.to_string(), becomes)
        })
        .collect();
    let first: Vec<Vec<Value>> = rows
        .records()
        .take(PREVIEW_ROWS)
        .filter_map(Result::ok)
        .map(|record| {
            let cells = kinds.iter().enumerate().map(|(i, kind)| {
                let raw = record.get(i).unwrap_or("");
                match kind {
                    Column::Email => json!(raw.trim()),
                    Column::Data(_, None) => type_cell(raw).unwrap_or(Value::Null),
                    Column::Data(_, Some(kind)) => import_options::typed(kind, raw).unwrap_or(Value::Null),
                    Column::Subscribed => {
                        import_options::subscribed_cell(raw).ok().flatten().map_or(Value::Null, Value::Bool)
                    }
                    Column::Dropped => Value::Null,
                }
            });
            cells.collect()
        })
        .collect();
    Ok(Preview { total_rows: total, columns, rows: first })
}

/// Imports up to `max_rows` records of an import job in the caller's transaction, read in this
/// thread. Returns whether the file is finished.
pub fn run_batch(conn: &Tx, job: &ContactJob, content: &[u8], max_rows: usize, now: i64) -> Result<bool> {
    let mut rows = FileRows::open(content, job.cursor, options_of(conn, &job.id)?)?;
    write_batch(conn, job, &mut rows, max_rows, now)
}

/// The choices an import job was made with (a column mapping, the subscription, topics).
pub fn options_of(conn: &Tx, job: &str) -> Result<Option<Options>> {
    Ok(contact_jobs::options(conn, job)?.and_then(|text| serde_json::from_str(&text).ok()))
}

/// Imports up to `max_rows` of `rows`, which must be at the job's cursor, in the caller's
/// transaction, and commits the cursor after the last of them with the counters. Returns
/// whether the file is finished.
pub fn write_batch(
    conn: &Tx,
    job: &ContactJob,
    rows: &mut dyn Source,
    max_rows: usize,
    now: i64,
) -> Result<bool> {
    if !rows.is_at(job.cursor) {
        return Err(Error::Retryable(format!("the import's rows are not at its cursor {}", job.cursor)));
    }
    let options = rows.options().cloned();
    let joins = match &options {
        Some(o) if !o.topics.is_empty() => {
            let topics = crate::db::topics::list(conn, &job.project_id)?;
            topics.into_iter().filter(|t| o.topics.contains(&t.id)).map(|t| (t, true)).collect()
        }
        _ => Vec::new(),
    };
    let subscription = options.as_ref().map(|o| o.subscription).unwrap_or_default();
    let erased = super::erasure::Erased::of(conn, &job.project_id)?;
    let mut progress = job.clone();
    let deferred = contacts::Deferred::start(conn, &job.project_id)?;
    let mut errors: Vec<Value> = serde_json::from_str(&job.errors).unwrap_or_default();
    let mut fields = FieldChanges::default();
    let mut done = false;
    let mut skip = |progress: &mut ContactJob, row: i64, email: &str, reason: &str| {
        progress.skipped += 1;
        progress.error_count += 1;
        if errors.len() < MAX_ERRORS {
            errors.push(json!({ "row": row, "email": email, "reason": reason }));
        }
    };
    // Files are mostly new contacts or mostly known ones: each row is looked up first, or
    // inserted first, as the row before it turned out.
    let mut new_likely = true;
    for _ in 0..max_rows {
        let read = match rows.next_row() {
            Next::Row(row) => row.read,
            Next::End(_) => {
                done = true;
                break;
            }
            Next::Failed(e) => return Err(e),
        };
        let row = progress.processed + 2;
        progress.processed += 1;
        let mut cells = match read {
            Err(refused) => {
                skip(&mut progress, row, &refused.email, refused.reason);
                continue;
            }
            Ok(cells) => cells,
        };
        // An address erased at its owner's request stays out until the operator lifts it.
        if erased.contains(conn, &cells.email)? {
            skip(&mut progress, row, cells.raw_email.as_deref().unwrap_or(&cells.email), "erased");
            continue;
        }
        let (subscribed, default_subscribed) = subscription.upsert(cells.subscribed);
        let request = Upsert {
            email: &cells.email,
            subscribed,
            default_subscribed,
            data: &cells.patch,
            source: "import",
            indexing: Indexing::Deferred(&deferred),
            new_likely,
        };
        let upserted =
            core_contacts::upsert_made(conn, &job.project_id, &request, cells.made.take(), &mut fields, now);
        if let (Ok(upserted), Some(options)) = (&upserted, options.as_ref().filter(|o| o.records_consent)) {
            // Granted by this import: a new contact subscribed, or the row's column said yes.
            let granted = upserted.contact.subscribed && (upserted.is_new || subscribed == Some(true));
            consent_of_row(conn, &upserted.contact, granted && options.records_consent, &joins, now)?;
        }
        new_likely = upserted.as_ref().is_ok_and(|u| u.is_new);
        rows.made_new(new_likely);
        match upserted {
            Ok(upserted) => {
                if upserted.is_new {
                    progress.imported += 1;
                } else {
                    progress.updated += 1;
                }
                rows.spent(Spent::Contact(upserted.contact));
            }
            Err(Error::Invalid(_)) => skip(&mut progress, row, &cells.email, "invalid_data"),
            Err(e) => return Err(e),
        }
        rows.spent(Spent::Cells(cells));
    }
    deferred.finish(conn)?;
    progress.cursor = rows.position() as i64;
    progress.errors = Value::Array(errors).to_string();
    fields.save(conn, &job.project_id)?;
    contact_jobs::save_progress(conn, &progress, done, now)?;
    Ok(done)
}

/// An import with choices: the row's contact joins the import's topics, and what it was granted
/// (marketing mail when `granted`, the topics) is kept as proof of consent, made by the import.
fn consent_of_row(
    conn: &Tx,
    contact: &crate::db::contacts::Contact,
    granted: bool,
    joins: &[(crate::db::topics::Topic, bool)],
    now: i64,
) -> Result<()> {
    if !joins.is_empty() {
        super::topics::choose(conn, contact, joins, "import", now)?;
    }
    let proof = crate::db::consent::Proof { method: "import".into(), ..Default::default() };
    if granted {
        super::confirmations::keep_proof(conn, contact, None, proof.clone(), now)?;
    }
    for (topic, _) in joins {
        super::confirmations::keep_proof(conn, contact, Some(topic), proof.clone(), now)?;
    }
    Ok(())
}

/// Checks an import's choices against its file and project before it is queued: the mapped
/// columns and, for `from_column`, a `subscribed` column are in the header; the topics are the
/// project's (422 naming what is wrong).
pub fn check_options(conn: &Tx, project: &str, content: &[u8], options: &Options) -> Result<()> {
    let mut rows = reader(body(content), true);
    let header = rows.headers().map_err(|e| Error::malformed(e.to_string()))?;
    options.check_header(&header.iter().map(str::to_string).collect::<Vec<_>>())?;
    let known = crate::db::topics::list(conn, project)?;
    for (i, id) in options.topics.iter().enumerate() {
        if !known.iter().any(|t| t.id == *id) {
            return Err(Error::invalid(
                &format!("topics[{i}]"),
                "not_found",
                "no topic with this id in the project",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::import_rows::ReadAhead;
    use std::sync::Arc;

    /// A file of new contacts, bad rows among them, then the same addresses again.
    fn file() -> Vec<u8> {
        let mut csv = String::from("email,plan,age,subscribed\n");
        for n in 0..40 {
            match n % 9 {
                4 => csv.push_str(",pro,3,yes\n"),
                7 => csv.push_str("not-an-address,pro,3,no\n"),
                _ => csv.push_str(&format!(" User{n}@Example.com ,pro{n},{n},\n")),
            }
        }
        for n in 0..12 {
            csv.push_str(&format!("user{n}@example.com,again,{},\n", n + 100));
        }
        csv.push_str(&format!("big@example.com,{},1,\n", "x".repeat(crate::core::data::MAX_DATA_BYTES)));
        csv.into_bytes()
    }

    /// The job and the contacts of `project` after importing `content` in batches of 7, its rows
    /// read ahead or in this thread.
    fn imported(
        conn: &Tx,
        project: &str,
        content: &[u8],
        ahead: bool,
    ) -> (ContactJob, Vec<(String, String)>) {
        let job = contact_jobs::insert(conn, project, "import", content, 53, 1).unwrap();
        let mut rows = ahead.then(|| ReadAhead::start(Arc::new(content.to_vec()), 0, None).unwrap());
        for batch in 0.. {
            assert!(batch < 20, "the file ends");
            let job = contact_jobs::by_id(conn, &job.id).unwrap().unwrap();
            let done = match rows.as_mut() {
                Some(rows) => write_batch(conn, &job, rows, 7, 1).unwrap(),
                None => run_batch(conn, &job, content, 7, 1).unwrap(),
            };
            if done {
                break;
            }
        }
        let contacts = crate::db::testing::all_contacts(conn)
            .into_iter()
            .filter(|c| c.project_id == project)
            .map(|c| (c.email, serde_json::to_string(&c.data).unwrap()))
            .collect();
        (contact_jobs::by_id(conn, &job.id).unwrap().unwrap(), contacts)
    }

    #[test]
    fn a_file_read_ahead_imports_as_one_read_in_the_writers_thread() {
        let conn = crate::db::testing::memory();
        let content = file();
        let (inline, inline_contacts) = imported(&conn, "a", &content, false);
        let (ahead, ahead_contacts) = imported(&conn, "b", &content, true);
        let counters =
            |j: &ContactJob| (j.status.clone(), j.processed, j.imported, j.updated, j.skipped, j.cursor);
        assert_eq!(counters(&ahead), counters(&inline));
        let len = content.len() as i64;
        assert_eq!(counters(&inline), ("completed".into(), 53, 34, 10, 9, len));
        assert_eq!(ahead.errors, inline.errors);
        let errors: Vec<Value> = serde_json::from_str(&inline.errors).unwrap();
        assert_eq!(errors[0], json!({ "row": 6, "email": "", "reason": "missing_email" }));
        assert_eq!(errors[1], json!({ "row": 9, "email": "not-an-address", "reason": "invalid_email" }));
        assert_eq!(errors[8], json!({ "row": 54, "email": "big@example.com", "reason": "invalid_data" }));
        assert_eq!(ahead_contacts, inline_contacts);
        assert_eq!(inline_contacts.len(), 34);
        assert!(
            inline_contacts.contains(&("user3@example.com".into(), r#"{"age":103,"plan":"again"}"#.into()))
        );
        assert!(
            inline_contacts.contains(&("user4@example.com".into(), r#"{"age":104,"plan":"again"}"#.into()))
        );
    }

    #[test]
    fn rows_not_at_the_jobs_cursor_are_refused_and_change_nothing() {
        let conn = crate::db::testing::memory();
        let content = file();
        let job = contact_jobs::insert(&conn, "a", "import", &content, 53, 1).unwrap();
        let mut rows = ReadAhead::start(Arc::new(content.clone()), 0, None).unwrap();
        {
            // A batch rolled back (its commit failed): the reader is past the job's cursor.
            let tx = conn.unchecked_transaction().unwrap();
            assert!(!write_batch(&tx, &job, &mut rows, 7, 1).unwrap());
        }
        let before = (job.processed, job.cursor, crate::db::testing::all_contacts(&conn).len());
        assert_eq!(before, (0, 0, 0));
        let refused = write_batch(&conn, &job, &mut rows, 7, 1).unwrap_err();
        assert!(matches!(refused, Error::Retryable(_)), "{refused}");
        let job = contact_jobs::by_id(&conn, &job.id).unwrap().unwrap();
        assert_eq!((job.processed, job.cursor, crate::db::testing::all_contacts(&conn).len()), before);
        // A reader started at the job's cursor goes on from there.
        let mut resumed = ReadAhead::start(Arc::new(content), job.cursor, None).unwrap();
        assert!(!write_batch(&conn, &job, &mut resumed, 7, 1).unwrap());
        let job = contact_jobs::by_id(&conn, &job.id).unwrap().unwrap();
        assert_eq!((job.processed, crate::db::testing::all_contacts(&conn).len()), (7, 6));
    }

    #[test]
    fn a_broken_file_fails_at_its_broken_row_either_way() {
        let conn = crate::db::testing::memory();
        let content = b"email,name\na@x.io,Ada\nb@x.io,\xffBo\n".to_vec();
        let job = contact_jobs::insert(&conn, "a", "import", &content, 2, 1).unwrap();
        let inline = run_batch(&conn, &job, &content, 10, 1);
        let mut rows = ReadAhead::start(Arc::new(content), 0, None).unwrap();
        let ahead = write_batch(&conn, &job, &mut rows, 10, 1);
        for result in [inline, ahead] {
            let failed = result.map(|_| ()).unwrap_err();
            assert!(matches!(failed, Error::Permanent(_)), "{failed}");
        }
    }

    #[test]
    fn a_preview_shows_columns_and_typed_first_rows() {
        let csv = "\u{feff}Email,age,id,Name,email\nada@x.io,36,7,Ada,b@x.io\n,,,\nc@x.io,0042\n";
        let shown = preview(csv.as_bytes(), None).unwrap();
        assert_eq!(shown.total_rows, 3);
        let becomes: Vec<_> = shown.columns.iter().map(|(_, becomes)| becomes.as_deref()).collect();
        assert_eq!(becomes, [Some("email"), Some("data.age"), None, Some("data.Name"), None]);
        assert_eq!(json!(shown.rows[0]), json!(["ada@x.io", 36, null, "Ada", null]));
        assert_eq!(json!(shown.rows[2]), json!(["c@x.io", "0042", null, null, null]));
        assert!(preview(b"name\nada\n", None).is_err(), "checked like an import");
    }

    #[test]
    fn uploads_are_checked() {
        assert_eq!(inspect(b"email,name\na@example.com,Ada\nb@example.com,Bo\n").unwrap(), 2);
        assert_eq!(inspect(b"\xEF\xBB\xBFEmail,name\r\na@example.com,Ada\r\n").unwrap(), 1, "BOM and CRLF");
        assert_eq!(inspect(b"email\n").unwrap(), 0);
        for bad in [&b""[..], b"name,age\nAda,3\n", b"email,name\n\xff\xfe,x\n"] {
            let e = inspect(bad).unwrap_err();
            assert_eq!((e.kind(), e.fields()[0].field.as_str()), ("invalid", "file"), "{bad:?}");
        }
    }
}
