//! The project's suppression list (issue 32, item 5): addresses and whole domains the project's
//! mail does not go to. Hard bounces and complaints land here and keep MARKETING mail away (as
//! a contact's suppression always did); what an operator adds or imports keeps all mail away.
//! The delivery worker asks [`blocks`] for every message, whoever produced it.

use super::domains::candidates;
use super::error::{Error, FieldError, Result};
use super::vocabulary::EmailKind;
use crate::db::Tx;
use crate::db::suppression_list::{self as rows, Entry};

/// Most rows one CSV import takes.
pub const MAX_IMPORT_ROWS: usize = 100_000;
/// Longest reason kept, in characters.
pub const MAX_REASON: usize = 500;

/// What an entry names: an address, or a domain with its subdomains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Address(String),
    Domain(String),
}

/// Reads `text` as an address (it has an `@`) or a domain, normalised; `field` names it in the
/// 422.
pub fn target(text: &str, field: &str) -> Result<Target> {
    let text = text.trim();
    if text.contains('@') {
        return super::contacts::parse_email(text, field).map(Target::Address);
    }
    let domain = text.trim_start_matches("*.").trim_end_matches('.').to_ascii_lowercase();
    let ok = domain.contains('.')
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if !ok {
        return Err(Error::Invalid(vec![FieldError::new(
            field,
            "invalid_string",
            "give an email address or a domain like example.com",
        )]));
    }
    Ok(Target::Domain(domain))
}

fn reason_of(reason: Option<String>, field: &str) -> Result<Option<String>> {
    let reason = reason.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
    if reason.as_ref().is_some_and(|r| r.chars().count() > MAX_REASON) {
        return Err(Error::invalid(field, "too_big", format!("a reason is at most {MAX_REASON} characters")));
    }
    Ok(reason)
}

/// Lists `target` in `project` (`source`: `manual`, `import`, `bounce`, `complaint`); an entry
/// already there is kept and returned, with `false`.
pub fn add(
    tx: &Tx,
    project: &str,
    target: Target,
    source: &str,
    reason: Option<String>,
    now: i64,
) -> Result<(Entry, bool)> {
    let (kind, value) = match target {
        Target::Address(a) => ("address", a),
        Target::Domain(d) => ("domain", d),
    };
    let entry = Entry {
        id: crate::db::new_id(),
        project_id: project.into(),
        kind: kind.into(),
        value,
        source: source.into(),
        reason: reason_of(reason, "reason")?,
        created_at: now,
    };
    if rows::insert(tx, &entry)? {
        return Ok((entry, true));
    }
    let domains = [entry.value.clone()];
    let found = rows::matching(tx, project, &entry.value, "", if kind == "domain" { &domains } else { &[] })?;
    Ok((found.unwrap_or(entry), false))
}

/// Takes entry `id` off the list. An address that bounced or complained is the contact's
/// suppression too: that goes with it, so marketing mail may reach the contact again.
pub fn remove(tx: &Tx, project: &str, id: &str) -> Result<()> {
    let entry = rows::get(tx, project, id)?.ok_or_else(|| super::ids::SuppressionId::missing(id))?;
    rows::delete(tx, &entry.id)?;
    if entry.kind == "address"
        && let Some(contact) = crate::db::contacts::by_email(tx, project, &entry.value)?
    {
        crate::db::suppressions::delete(tx, &contact.id)?;
    }
    Ok(())
}

/// Why mail of `kind` to `address` must not go out for `project`, if the list says so: an
/// operator's entry keeps all mail away, a bounce's or complaint's only MARKETING mail.
pub fn blocks(conn: &Tx, project: &str, address: &str, kind: &str) -> crate::db::Result<Option<String>> {
    let address = address.to_ascii_lowercase();
    let domain = address.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
    let erased = super::erasure::digest(project, &address);
    let Some(entry) = rows::matching(conn, project, &address, &erased, &candidates(domain))? else {
        return Ok(None);
    };
    let every_kind = matches!(entry.source.as_str(), "manual" | "import" | "erasure");
    if !every_kind && kind != EmailKind::Marketing {
        return Ok(None);
    }
    let what = match entry.kind.as_str() {
        "domain" => format!("the domain {}", entry.value),
        "erased" => "the address, erased at its owner's request,".into(),
        _ => "the address".into(),
    };
    Ok(Some(format!("{what} is on the project's suppression list ({})", entry.source)))
}

/// One row of an import, as read.
pub struct Row {
    pub target: String,
    pub reason: Option<String>,
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Imported {
    pub added: usize,
    pub already: usize,
    /// Row numbers (1 is the first after the header) and why each was skipped; the first 100.
    pub errors: Vec<(usize, String)>,
    pub skipped: usize,
}

/// Lists every row (`import`); rows that are no address or domain are skipped and said.
pub fn import(tx: &Tx, project: &str, rows: Vec<Row>, now: i64) -> Result<Imported> {
    let mut done = Imported::default();
    for (i, row) in rows.into_iter().enumerate() {
        let listed =
            target(&row.target, "email").and_then(|t| add(tx, project, t, "import", row.reason, now));
        match listed {
            Ok((_, true)) => done.added += 1,
            Ok((_, false)) => done.already += 1,
            Err(Error::Invalid(items)) => {
                done.skipped += 1;
                if done.errors.len() < 100 {
                    let why = items.into_iter().map(|e| e.message).collect::<Vec<_>>().join("; ");
                    done.errors.push((i + 1, why));
                }
            }
            Err(other) => return Err(other),
        }
    }
    Ok(done)
}

/// Reads a CSV of addresses or domains: the column named `email`, `address`, `domain` or
/// `value` (any case), else the first; and `reason` when there is one. 422 for a file that is
/// no CSV or has more than [`MAX_IMPORT_ROWS`] rows.
pub fn read_csv(bytes: &[u8]) -> Result<Vec<Row>> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).trim(csv::Trim::All).from_reader(bytes);
    let bad = |why: String| Error::invalid("file", "invalid_csv", why);
    let headers = reader.headers().map_err(|e| bad(format!("the file is not CSV: {e}")))?.clone();
    let named =
        |names: &[&str]| headers.iter().position(|h| names.contains(&h.to_ascii_lowercase().as_str()));
    let (column, reason, header_row) = match named(&["email", "address", "domain", "value"]) {
        Some(column) => (column, named(&["reason"]), false),
        // No header of ours: the first line is data too.
        None => (0, None, true),
    };
    let mut rows = Vec::new();
    if header_row && let Some(first) = headers.get(0).filter(|v| !v.is_empty()) {
        rows.push(Row { target: first.to_string(), reason: headers.get(1).map(str::to_string) });
    }
    for record in reader.records() {
        let record = record.map_err(|e| bad(format!("the file is not CSV: {e}")))?;
        let Some(target) = record.get(column).filter(|v| !v.is_empty()) else { continue };
        let reason = match (reason, header_row) {
            (Some(i), _) => record.get(i),
            (None, true) => record.get(1),
            (None, false) => None,
        };
        rows.push(Row { target: target.to_string(), reason: reason.map(str::to_string) });
        if rows.len() > MAX_IMPORT_ROWS {
            return Err(bad(format!("a file has at most {MAX_IMPORT_ROWS} rows")));
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::{Target, target};

    #[test]
    fn a_csv_names_its_column_or_starts_with_data() {
        let rows = super::read_csv(b"Reason,Email\nasked,a@x.example\n,b@x.example\n").unwrap();
        assert_eq!(
            rows.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(),
            ["a@x.example", "b@x.example"]
        );
        assert_eq!(rows[0].reason.as_deref(), Some("asked"));
        let rows = super::read_csv(b"spam.example,bulk\nc@x.example\n").unwrap();
        assert_eq!(
            rows.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(),
            ["spam.example", "c@x.example"]
        );
    }

    #[test]
    fn targets_are_addresses_or_domains() {
        assert_eq!(target(" Ada@Example.com ", "e").unwrap(), Target::Address("ada@example.com".into()));
        assert_eq!(target("*.Spam.Example.", "e").unwrap(), Target::Domain("spam.example".into()));
        for bad in ["localhost", "a..b", "-a.example", "a b.example", ""] {
            assert!(target(bad, "e").is_err(), "{bad}");
        }
    }
}
