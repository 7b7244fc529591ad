//! CSV contact import: checking an upload, typing cells, and importing in resumable batches.
//!
//! The file is kept with its job. Each batch reads records from the job's byte offset, upserts
//! them, and commits the contacts together with the new offset and counters, so a crash resumes
//! at the first record not yet committed and nothing is imported twice.

use crate::db::Tx;
use serde_json::{Number, Value, json};

use super::contacts::{self as core_contacts, Upsert};
use super::data::{self, DataPatch};
use super::fields::{self, FieldChanges};
use super::import_options::{self, Options, Subscription};
use crate::core::error::{Error, FieldError, Result};
use crate::db::contact_jobs::{self, ContactJob};
use crate::db::contacts::{self, Indexing};

/// Columns dropped without an error (api.md CSV rule 3), compared case-insensitively.
const DROPPED_COLUMNS: &[&str] = &["id", "subscribed", "createdat", "updatedat"];
/// Most error items kept on a job; `errorCount` has the full number.
pub const MAX_ERRORS: usize = 1000;
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What a column becomes.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    Email,
    /// A custom field: its key, and the type the import's mapping chose (else the rules').
    Data(String, Option<String>),
    /// The `subscribed` column, read when the import's subscription is `from_column`.
    Subscribed,
    Dropped,
}

fn columns(header: &csv::StringRecord, options: Option<&Options>) -> Vec<Column> {
    let mut seen_email = false;
    let from_column = options.is_some_and(|o| o.subscription == Subscription::FromColumn);
    header
        .iter()
        .map(|name| {
            let name = name.trim();
            let lower = name.to_ascii_lowercase();
            let map = options.and_then(|o| o.mapping.get(name));
            if map.is_some_and(|m| m.skip) {
                Column::Dropped
            } else if lower == "email" && !seen_email {
                seen_email = true;
                Column::Email
            } else if lower == "subscribed" && from_column {
                Column::Subscribed
            } else if let Some(key) = map.and_then(|m| m.rename.clone()) {
                Column::Data(key, map.and_then(|m| m.kind.clone()))
            } else if name.is_empty() || DROPPED_COLUMNS.contains(&lower.as_str()) || data::is_reserved(name)
            {
                Column::Dropped
            } else {
                Column::Data(name.to_string(), map.and_then(|m| m.kind.clone()))
            }
        })
        .collect()
}

fn reader(bytes: &[u8], headers: bool) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(headers).flexible(true).from_reader(bytes)
}

/// The file without a UTF-8 byte-order mark.
fn body(content: &[u8]) -> &[u8] {
    content.strip_prefix(BOM).unwrap_or(content)
}

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

/// The JSON value of one cell (api.md CSV rule 4); `None` for an empty cell.
pub fn type_cell(raw: &str) -> Option<Value> {
    let cell = raw.trim();
    if cell.is_empty() {
        return None;
    }
    let is = |word: &str| cell.eq_ignore_ascii_case(word);
    if is("true") || is("yes") {
        return Some(Value::Bool(true));
    }
    if is("false") || is("no") {
        return Some(Value::Bool(false));
    }
    if let Some(number) = plain_number(cell) {
        return Some(Value::Number(number));
    }
    Some(Value::String(iso_date(cell).unwrap_or_else(|| cell.to_string())))
}

/// A plain integer or decimal: optional minus, digits without a leading zero (except `0`
/// itself), optional fraction. Leading zeros, a plus sign and exponents stay strings, and so do
/// numbers with more digits than a double holds exactly.
fn plain_number(cell: &str) -> Option<Number> {
    let digits = cell.strip_prefix('-').unwrap_or(cell);
    let (int, frac) = match digits.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || (int.len() > 1 && int.starts_with('0')) || frac.is_some_and(|f| !all_digits(f)) {
        return None;
    }
    if int.len() + frac.map_or(0, str::len) > 15 {
        return None;
    }
    match frac {
        None => cell.parse::<i64>().ok().map(Number::from),
        Some(_) => cell.parse::<f64>().ok().and_then(Number::from_f64),
    }
}

/// ISO 8601 dates and times become the text form the `date` type and the date operators read:
/// `YYYY-MM-DD` and `YYYY-MM-DDTHH:MM:SS[.sss]Z` are kept as they are, and a date-time with an
/// offset (`2024-01-15T10:00:00+02:00`) is turned into UTC (`2024-01-15T08:00:00Z`).
fn iso_date(cell: &str) -> Option<String> {
    use time::format_description::well_known::Rfc3339;
    if fields::is_date(cell) {
        return Some(cell.to_string());
    }
    let at = time::OffsetDateTime::parse(cell, &Rfc3339).ok()?.to_offset(time::UtcOffset::UTC);
    let ms = (at.unix_timestamp_nanos() / 1_000_000) as i64;
    let text = crate::clock::iso(ms);
    Some(if at.millisecond() == 0 { text.replace(".000Z", "Z") } else { text })
}

/// Imports up to `max_rows` records of an import job in the caller's transaction. Returns
/// whether the file is finished.
pub fn run_batch(conn: &Tx, job: &ContactJob, content: &[u8], max_rows: usize, now: i64) -> Result<bool> {
    let text = body(content);
    let mut header_reader = reader(text, true);
    let header = header_reader.headers().map_err(|e| Error::permanent(format!("csv header: {e}")))?.clone();
    let options: Option<Options> =
        contact_jobs::options(conn, &job.id)?.and_then(|text| serde_json::from_str(&text).ok());
    let columns = columns(&header, options.as_ref());
    let joins = match &options {
        Some(o) if !o.topics.is_empty() => {
            let topics = crate::db::topics::list(conn, &job.project_id)?;
            topics.into_iter().filter(|t| o.topics.contains(&t.id)).map(|t| (t, true)).collect()
        }
        _ => Vec::new(),
    };
    let email_index = columns.iter().position(|c| *c == Column::Email).unwrap_or(0);
    let erased = super::erasure::Erased::of(conn, &job.project_id)?;
    let start = if job.cursor == 0 { header_reader.position().byte() } else { job.cursor as u64 };
    let start = usize::try_from(start).unwrap_or(text.len()).min(text.len());
    let mut rows = reader(&text[start..], false);

    let mut progress = job.clone();
    let deferred = contacts::Deferred::start(conn, &job.project_id)?;
    let mut errors: Vec<Value> = serde_json::from_str(&job.errors).unwrap_or_default();
    let mut fields = FieldChanges::default();
    let mut record = csv::StringRecord::new();
    let mut done = false;
    // Files are mostly new contacts or mostly known ones: each row is looked up first, or
    // inserted first, as the row before it turned out.
    let mut new_likely = true;
    for _ in 0..max_rows {
        let more = rows.read_record(&mut record).map_err(|e| Error::permanent(format!("csv: {e}")))?;
        if !more {
            done = true;
            break;
        }
        let row = progress.processed + 2;
        progress.processed += 1;
        let mut email = None;
        let mut pairs = Vec::new();
        let mut subscribed_cell = Ok(None);
        let mut bad_cell = None;
        for (column, cell) in columns.iter().zip(record.iter()) {
            match column {
                Column::Email => email = Some(cell.trim()),
                Column::Data(name, None) => {
                    if let Some(value) = type_cell(cell) {
                        pairs.push((name.clone(), value));
                    }
                }
                Column::Data(name, Some(kind)) if !cell.trim().is_empty() => {
                    match import_options::typed(kind, cell) {
                        Some(value) => pairs.push((name.clone(), value)),
                        None => bad_cell = Some("invalid_data"),
                    }
                }
                Column::Data(..) => {}
                Column::Subscribed => subscribed_cell = import_options::subscribed_cell(cell),
                Column::Dropped => {}
            }
        }
        let email = match email.filter(|e| !e.is_empty()) {
            None => Err("missing_email"),
            Some(raw) => crate::core::email::normalize(raw).map_err(|_| "invalid_email"),
        };
        let email = match (email, bad_cell, subscribed_cell) {
            (Err(reason), _, _) => Err(reason),
            (Ok(_), Some(reason), _) => Err(reason),
            (Ok(_), None, Err(reason)) => Err(reason),
            // An address erased at its owner's request stays out until the operator lifts it.
            (Ok(email), None, Ok(_)) if erased.contains(conn, &email)? => Err("erased"),
            (Ok(email), None, Ok(_)) => Ok(email),
        };
        let email = match email {
            Ok(email) => email,
            Err(reason) => {
                progress.skipped += 1;
                progress.error_count += 1;
                if errors.len() < MAX_ERRORS {
                    errors.push(json!({ "row": row, "email": record.get(email_index).unwrap_or(""), "reason": reason }));
                }
                continue;
            }
        };
        let patch = DataPatch::from_pairs(pairs);
        let subscription = options.as_ref().map(|o| o.subscription).unwrap_or_default();
        let (subscribed, default_subscribed) = subscription.upsert(subscribed_cell.unwrap_or(None));
        let request = Upsert {
            email: &email,
            subscribed,
            default_subscribed,
            data: &patch,
            source: "import",
            indexing: Indexing::Deferred(&deferred),
            new_likely,
        };
        let upserted = core_contacts::upsert(conn, &job.project_id, &request, &mut fields, now);
        if let (Ok(upserted), Some(options)) = (&upserted, options.as_ref().filter(|o| o.records_consent)) {
            // Granted by this import: a new contact subscribed, or the row's column said yes.
            let granted = upserted.contact.subscribed && (upserted.is_new || subscribed == Some(true));
            consent_of_row(conn, &upserted.contact, granted && options.records_consent, &joins, now)?;
        }
        new_likely = upserted.as_ref().is_ok_and(|u| u.is_new);
        match upserted {
            Ok(upserted) if upserted.is_new => progress.imported += 1,
            Ok(_) => progress.updated += 1,
            Err(Error::Invalid(_)) => {
                progress.skipped += 1;
                progress.error_count += 1;
                if errors.len() < MAX_ERRORS {
                    errors.push(json!({ "row": row, "email": email, "reason": "invalid_data" }));
                }
            }
            Err(e) => return Err(e),
        }
    }
    deferred.finish(conn)?;
    progress.cursor = (start as u64 + rows.position().byte()) as i64;
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
    fn cells_are_typed_by_the_csv_rules() {
        assert_eq!(type_cell(""), None);
        assert_eq!(type_cell("  "), None);
        assert_eq!(type_cell("42"), Some(json!(42)));
        assert_eq!(type_cell("-7"), Some(json!(-7)));
        assert_eq!(type_cell("0"), Some(json!(0)));
        assert_eq!(type_cell("3.25"), Some(json!(3.25)));
        assert_eq!(type_cell("0.5"), Some(json!(0.5)));
        for kept in ["007", "+44", "1e5", "1E5", "00.5", ".5", "5.", "1,000", "12345678901234567890", "--1"] {
            assert_eq!(type_cell(kept), Some(json!(kept)), "{kept} stays a string");
        }
        for (cell, value) in [("true", true), ("FALSE", false), ("Yes", true), ("no", false)] {
            assert_eq!(type_cell(cell), Some(json!(value)));
        }
        assert_eq!(type_cell("2024-01-15"), Some(json!("2024-01-15")));
        assert_eq!(type_cell("2024-01-15T10:00:00Z"), Some(json!("2024-01-15T10:00:00Z")));
        assert_eq!(type_cell("2024-01-15T10:00:00+02:00"), Some(json!("2024-01-15T08:00:00Z")));
        assert_eq!(type_cell("2024-01-15T10:00:00.250-01:00"), Some(json!("2024-01-15T11:00:00.250Z")));
        assert_eq!(type_cell("2024-13-45"), Some(json!("2024-13-45")), "not a date: kept as text");
        assert_eq!(type_cell(" Ada "), Some(json!("Ada")));
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

    #[test]
    fn columns_are_classified() {
        let header = csv::StringRecord::from(vec![
            "ID",
            "Email",
            "first name",
            "subscribed",
            "createdAt",
            "unsubscribeUrl",
            "plan",
            "email",
        ]);
        assert_eq!(
            columns(&header, None),
            vec![
                Column::Dropped,
                Column::Email,
                Column::Data("first name".into(), None),
                Column::Dropped,
                Column::Dropped,
                Column::Dropped,
                Column::Data("plan".into(), None),
                Column::Dropped,
            ]
        );
    }
}
