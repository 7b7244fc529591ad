//! A project's data as one file (issue 35, item 6): a zip holding `project.json` (what the file
//! is, and when it was made), `contacts.csv`, `events.csv` and `emails.csv`, written by a durable
//! job page by page ([`crate::db::exports`]). A job interrupted by a restart writes the file again
//! from the start; the project keeps its newest export only.

use std::io::Write;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;

use super::error::{Error, Result};
use crate::db::Tx;
use crate::db::exports::Export;

/// Rows read per page.
const PAGE: usize = 2_000;

/// Starts exporting `project`, or gives the export already being made.
pub fn start(tx: &Tx, project: &str, now: i64) -> Result<Export> {
    if let Some(queued) = crate::db::exports::queued(tx, project)? {
        return Ok(queued);
    }
    let export = Export {
        id: crate::db::ids::new_id(),
        project_id: project.to_string(),
        status: "queued".into(),
        bytes: None,
        error: None,
        created_at: now,
        finished_at: None,
    };
    crate::db::exports::insert(tx, &export)?;
    crate::db::jobs::enqueue(tx, &super::jobs::project_export(project, &export.id))?;
    Ok(export)
}

/// Where export `id` of `project` is written.
pub fn file(data_dir: &Path, project: &str, id: &str) -> PathBuf {
    data_dir.join("exports").join(project).join(format!("{id}.zip"))
}

/// Writes `project`'s data to `to` (made 0600, replaced if there); its size in bytes.
pub fn write(conn: &Tx, project: &str, to: &Path, now: i64) -> std::result::Result<u64, String> {
    let failed = |e: &dyn std::fmt::Display| format!("the export could not be written: {e}");
    if let Some(dir) = to.parent() {
        crate::db::files::create_private_dir(dir).map_err(|e| failed(&e))?;
    }
    let _ = std::fs::remove_file(to);
    crate::db::files::create_private_file(to).map_err(|e| failed(&e))?;
    let file = std::fs::OpenOptions::new().write(true).open(to).map_err(|e| failed(&e))?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let db = |e: crate::db::DbError| failed(&e);

    zip.start_file("project.json", options).map_err(|e| failed(&e))?;
    let about = serde_json::json!({
        "project": project,
        "exportedAt": crate::clock::iso(now),
        "files": {
            "contacts.csv": "id, email, subscribed, createdAt and data (the custom fields, as JSON)",
            "events.csv": "id, contactId, name, createdAt and data (as JSON)",
            "emails.csv": "id, to, from, subject, status, source, createdAt and sentAt",
        },
    });
    zip.write_all(serde_json::to_string_pretty(&about).unwrap_or_default().as_bytes())
        .map_err(|e| failed(&e))?;

    zip.start_file("contacts.csv", options).map_err(|e| failed(&e))?;
    {
        let mut csv = csv::Writer::from_writer(&mut zip);
        csv.write_record(["id", "email", "subscribed", "createdAt", "data"]).map_err(|e| failed(&e))?;
        let mut after = (i64::MIN, 0);
        loop {
            let page = crate::db::exports::contacts_after(conn, project, after, PAGE).map_err(db)?;
            for (seq, id, email, subscribed, data, created) in &page {
                after = (*created, *seq);
                let row = [
                    id.as_str(),
                    email,
                    if *subscribed { "true" } else { "false" },
                    &crate::clock::iso(*created),
                    data,
                ];
                csv.write_record(row).map_err(|e| failed(&e))?;
            }
            if page.len() < PAGE {
                break;
            }
        }
        csv.flush().map_err(|e| failed(&e))?;
    }

    zip.start_file("events.csv", options).map_err(|e| failed(&e))?;
    {
        let mut csv = csv::Writer::from_writer(&mut zip);
        csv.write_record(["id", "contactId", "name", "createdAt", "data"]).map_err(|e| failed(&e))?;
        let mut after = (i64::MIN, i64::MIN);
        loop {
            let page = crate::db::exports::events_after(conn, project, after, PAGE).map_err(db)?;
            for (created, rowid, id, contact, name, data) in &page {
                after = (*created, *rowid);
                let row =
                    [id.as_str(), contact.as_deref().unwrap_or(""), name, &crate::clock::iso(*created), data];
                csv.write_record(row).map_err(|e| failed(&e))?;
            }
            if page.len() < PAGE {
                break;
            }
        }
        csv.flush().map_err(|e| failed(&e))?;
    }

    zip.start_file("emails.csv", options).map_err(|e| failed(&e))?;
    {
        let mut csv = csv::Writer::from_writer(&mut zip);
        csv.write_record(["id", "to", "from", "subject", "status", "source", "createdAt", "sentAt"])
            .map_err(|e| failed(&e))?;
        let mut after = (i64::MIN, i64::MIN);
        loop {
            let page = crate::db::exports::emails_after(conn, project, after, PAGE).map_err(db)?;
            for (created, rowid, id, to, from, subject, status, source, sent) in &page {
                after = (*created, *rowid);
                let sent = sent.map(crate::clock::iso).unwrap_or_default();
                let row =
                    [id.as_str(), to, from, subject, status, source, &crate::clock::iso(*created), &sent];
                csv.write_record(row).map_err(|e| failed(&e))?;
            }
            if page.len() < PAGE {
                break;
            }
        }
        csv.flush().map_err(|e| failed(&e))?;
    }
    let mut out = zip.finish().map_err(|e| failed(&e))?;
    out.flush().map_err(|e| failed(&e))?;
    drop(out);
    Ok(std::fs::metadata(to).map(|m| m.len()).unwrap_or(0))
}

/// The file of a finished export of `project`; 404 while it is being made or when it is gone.
pub fn finished(conn: &Tx, data_dir: &Path, project: &str, id: &str) -> Result<PathBuf> {
    match crate::db::exports::get(conn, project, id)? {
        Some(e) if e.status == "done" => Ok(file(data_dir, project, id)),
        Some(_) => Err(Error::conflict("The export is not ready; ask for it again when its status is done")),
        None => Err(Error::not_found("Export not found")),
    }
}
