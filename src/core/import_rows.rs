//! Reading an import file: what each column becomes, each cell's type, and each record as a row
//! checked and ready for the writer. A job reads its file ahead of the writer on a thread of its
//! own ([`ReadAhead`]): parsing, typing and the new contacts' data then cost the writer nothing,
//! so a batch holds the database for its writes only, and what the writer is done with goes back
//! to be freed there ([`Spent`]). [`FileRows`] reads in the caller's thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde_json::{Number, Value};

use super::data::{self, DataPatch, NewData};
use super::fields;
use super::import_options::{self, Options, Subscription};
use crate::core::error::{Error, Result};

/// Columns dropped without an error (api.md CSV rule 3), compared case-insensitively.
const DROPPED_COLUMNS: &[&str] = &["id", "subscribed", "createdat", "updatedat"];
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What a column becomes.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Column {
    Email,
    /// A custom field: its key, and the type the import's mapping chose (else the rules').
    Data(String, Option<String>),
    /// The `subscribed` column, read when the import's subscription is `from_column`.
    Subscribed,
    Dropped,
}

pub(super) fn columns(header: &csv::StringRecord, options: Option<&Options>) -> Vec<Column> {
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

pub(super) fn reader(bytes: &[u8], headers: bool) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(headers).flexible(true).from_reader(bytes)
}

/// The file without a UTF-8 byte-order mark.
pub(super) fn body(content: &[u8]) -> &[u8] {
    content.strip_prefix(BOM).unwrap_or(content)
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

/// A record of the file, read.
#[derive(Debug)]
pub struct Row {
    /// Where the file's next record starts (a byte offset into the file without its byte-order
    /// mark, as a job's cursor counts).
    pub next: u64,
    pub read: std::result::Result<Cells, Refused>,
}

/// A record whose cells are good.
#[derive(Debug)]
pub struct Cells {
    /// Normalised.
    pub email: String,
    /// The email cell as the file has it, when that is not `email`.
    pub raw_email: Option<String>,
    pub patch: DataPatch,
    /// The `subscribed` column's answer (read with `from_column`).
    pub subscribed: Option<bool>,
    /// The data the contact gets if it is new, when made ahead (else the upsert makes it).
    pub made: Option<NewData>,
}

/// A record skipped: why, and its email cell as the file has it.
#[derive(Debug)]
pub struct Refused {
    pub reason: &'static str,
    pub email: String,
}

/// What a reader gives next.
#[derive(Debug)]
pub enum Next {
    Row(Row),
    /// The file ended; where its reading stopped.
    End(u64),
    /// The file cannot be read on (the CSV is broken), or the reader stopped.
    Failed(Error),
}

/// Where an import's rows come from: [`FileRows`] or [`ReadAhead`].
pub trait Source {
    /// Where the next record starts.
    fn position(&self) -> u64;
    /// Whether the next record is the one at a job's `cursor` (0: the first after the header).
    fn is_at(&self, cursor: i64) -> bool;
    fn next_row(&mut self) -> Next;
    /// Told after each row whether it made a new contact: the rows after it are likely to as well.
    fn made_new(&mut self, new: bool);
    /// The choices the file is read with.
    fn options(&self) -> Option<&Options>;
    /// Takes what the writer is done with, to be freed where it was made.
    fn spent(&mut self, spent: Spent) {
        drop(spent);
    }
}

/// What the writer is done with: a row's cells, the contact it made or changed.
#[derive(Debug)]
pub enum Spent {
    Cells(Cells),
    Contact(crate::db::contacts::Contact),
}

/// An import file's records from a byte offset, read in the caller's thread.
pub struct FileRows<'a> {
    columns: Vec<Column>,
    email_index: usize,
    bounds: Bounds,
    start: u64,
    rows: csv::Reader<&'a [u8]>,
    record: csv::StringRecord,
    options: Option<Options>,
}

impl<'a> FileRows<'a> {
    /// Opens `content` (a whole import file) at a job's `cursor`, read with `options`.
    pub fn open(content: &'a [u8], cursor: i64, options: Option<Options>) -> Result<FileRows<'a>> {
        let text = body(content);
        let mut header_reader = reader(text, true);
        let header = header_reader.headers().map_err(|e| Error::permanent(format!("csv header: {e}")))?;
        let columns = columns(header, options.as_ref());
        let email_index = columns.iter().position(|c| *c == Column::Email).unwrap_or(0);
        let bounds = Bounds { header_end: header_reader.position().byte(), text_len: text.len() as u64 };
        let start = bounds.at(cursor);
        let rows = reader(&text[start as usize..], false);
        Ok(FileRows { columns, email_index, bounds, start, rows, record: csv::StringRecord::new(), options })
    }

    /// The next record; with `make`, a good one's new-contact data is made too.
    fn read(&mut self, make: bool) -> Next {
        match self.rows.read_record(&mut self.record) {
            Err(e) => Next::Failed(Error::permanent(format!("csv: {e}"))),
            Ok(false) => Next::End(self.position()),
            Ok(true) => {
                let mut read = cells(&self.columns, &self.record, self.email_index);
                if let (Ok(cells), true) = (read.as_mut(), make) {
                    cells.made = cells.patch.new_data().ok();
                }
                Next::Row(Row { next: self.position(), read })
            }
        }
    }
}

impl Source for FileRows<'_> {
    fn position(&self) -> u64 {
        self.start + self.rows.position().byte()
    }
    fn is_at(&self, cursor: i64) -> bool {
        self.position() == self.bounds.at(cursor)
    }
    fn next_row(&mut self) -> Next {
        // In the writer's own thread the upsert makes a new contact's data when it is one.
        self.read(false)
    }
    fn made_new(&mut self, _new: bool) {}
    fn options(&self) -> Option<&Options> {
        self.options.as_ref()
    }
}

/// Where an import file's header ends, and its length.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    header_end: u64,
    text_len: u64,
}

impl Bounds {
    /// Where a job's `cursor` points (0: the first record after the header).
    fn at(self, cursor: i64) -> u64 {
        let at = if cursor == 0 { self.header_end } else { u64::try_from(cursor).unwrap_or(self.text_len) };
        at.min(self.text_len)
    }
}

/// The cells of a record checked, in the order the errors are reported: the email, a cell its
/// column's type refuses, the `subscribed` column.
fn cells(
    columns: &[Column],
    record: &csv::StringRecord,
    email_index: usize,
) -> std::result::Result<Cells, Refused> {
    let mut email = None;
    let mut pairs = Vec::with_capacity(columns.len());
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
    let raw = record.get(email_index).unwrap_or("");
    let refused = |reason| Err(Refused { reason, email: raw.to_string() });
    let email = match email.filter(|e| !e.is_empty()) {
        None => return refused("missing_email"),
        Some(cell) => match crate::core::email::normalize(cell) {
            Ok(email) => email,
            Err(_) => return refused("invalid_email"),
        },
    };
    if let Some(reason) = bad_cell {
        return refused(reason);
    }
    let subscribed = match subscribed_cell {
        Ok(subscribed) => subscribed,
        Err(reason) => return refused(reason),
    };
    let raw_email = (raw != email).then(|| raw.to_string());
    Ok(Cells { email, raw_email, patch: DataPatch::from_pairs(pairs), subscribed, made: None })
}

/// Rows a [`ReadAhead`] hands over at a time: one exchange between the threads per chunk, not
/// per row (a row each cost two futex calls, with no gain over reading in the writer's thread).
const CHUNK: usize = 64;
/// Chunks a [`ReadAhead`] keeps ready at most (a few hundred KiB of rows).
const CHUNKS_AHEAD: usize = 4;

/// An import file read on a thread of its own, at most [`CHUNKS_AHEAD`] chunks of [`CHUNK`]
/// rows before the writer that takes them. The thread ends with the file, or when this is
/// dropped (a job's batch that fails drops it, and the job's next try reads from its cursor).
pub struct ReadAhead {
    chunks: mpsc::Receiver<Vec<Next>>,
    /// What the writer is done with, handed back to the reader's thread a chunk at a time.
    spent: Vec<Spent>,
    give_back: mpsc::Sender<Vec<Spent>>,
    chunk: std::vec::IntoIter<Next>,
    position: u64,
    bounds: Bounds,
    /// Whether the rows are likely new contacts: the reader makes their data only then.
    new_likely: Arc<AtomicBool>,
    options: Option<Options>,
}

impl ReadAhead {
    /// Starts reading `content` at a job's `cursor` with `options`.
    pub fn start(content: Arc<Vec<u8>>, cursor: i64, options: Option<Options>) -> Result<ReadAhead> {
        let opened = FileRows::open(&content, cursor, options.clone())?;
        let (position, bounds) = (opened.position(), opened.bounds);
        drop(opened);
        let (send, chunks) = mpsc::sync_channel(CHUNKS_AHEAD);
        let (give_back, given_back) = mpsc::channel::<Vec<Spent>>();
        let new_likely = Arc::new(AtomicBool::new(true));
        let likely = new_likely.clone();
        let reading = options.clone();
        std::thread::Builder::new()
            .name("tidings-import".into())
            .spawn(move || {
                let mut file = match FileRows::open(&content, cursor, reading) {
                    Ok(file) => file,
                    Err(e) => return drop(send.send(vec![Next::Failed(e)])),
                };
                loop {
                    // Freed in the thread that made it: a block another thread frees goes back
                    // to its maker's malloc arena under that arena's lock, contended by both.
                    while let Ok(spent) = given_back.try_recv() {
                        drop(spent);
                    }
                    let mut chunk = Vec::with_capacity(CHUNK);
                    let mut last = false;
                    while chunk.len() < CHUNK && !last {
                        let next = file.read(likely.load(Ordering::Relaxed));
                        last = !matches!(next, Next::Row(_));
                        chunk.push(next);
                    }
                    if send.send(chunk).is_err() || last {
                        return;
                    }
                }
            })
            .map_err(|e| Error::Retryable(format!("the import's reader did not start: {e}")))?;
        let chunk = Vec::new().into_iter();
        Ok(ReadAhead { chunks, spent: Vec::new(), give_back, chunk, position, bounds, new_likely, options })
    }
}

impl Source for ReadAhead {
    fn position(&self) -> u64 {
        self.position
    }
    fn is_at(&self, cursor: i64) -> bool {
        self.position == self.bounds.at(cursor)
    }
    fn next_row(&mut self) -> Next {
        let next = match self.chunk.next() {
            Some(next) => next,
            None => match self.chunks.recv() {
                Ok(chunk) => {
                    if !self.spent.is_empty() {
                        // The reader may have ended with the file: then it is freed here.
                        drop(self.give_back.send(std::mem::take(&mut self.spent)));
                    }
                    self.chunk = chunk.into_iter();
                    self.chunk
                        .next()
                        .unwrap_or_else(|| Next::Failed(Error::Retryable("an empty chunk".into())))
                }
                Err(_) => Next::Failed(Error::Retryable("the import's reader stopped".into())),
            },
        };
        match &next {
            Next::Row(row) => self.position = row.next,
            Next::End(at) => self.position = *at,
            Next::Failed(_) => {}
        }
        next
    }
    fn made_new(&mut self, new: bool) {
        self.new_likely.store(new, Ordering::Relaxed);
    }
    fn options(&self) -> Option<&Options> {
        self.options.as_ref()
    }
    fn spent(&mut self, spent: Spent) {
        self.spent.push(spent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
