//! Contacts at scale: list, search, field catalogue, CSV import.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rocket::http::Header;
use rocket::local::blocking::Client;
use serde_json::json;
use tidings::db::{self, contact_jobs};
use tidings::{AppState, build_rocket, clock};

use crate::{Lcg, Scratch, person, report, seed};

pub fn contacts_bench(contacts: usize, csv_rows: usize, repeat: usize, dir: Option<PathBuf>) {
    let scratch = Scratch::open(dir);
    let (state, project, secret_key) = (&scratch.state, scratch.project.clone(), scratch.secret_key.clone());

    let started = Instant::now();
    seed(state, &project, contacts);
    let seeded = started.elapsed();
    println!(
        "seeded {contacts} contacts in {:.1} s ({:.0} rows/s)",
        seeded.as_secs_f64(),
        contacts as f64 / seeded.as_secs_f64()
    );
    let size = std::fs::metadata(state.db.path()).map(|m| m.len()).unwrap_or(0);
    println!("database file: {:.0} MiB", size as f64 / 1048576.0);

    let client = Client::untracked(build_rocket(state.clone())).expect("rocket");
    let auth = Header::new("Authorization", format!("Bearer {secret_key}"));
    let time = |label: &str, path: &str| {
        let mut samples = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let t = Instant::now();
            let res = client.get(path.to_string()).header(auth.clone()).dispatch();
            assert_eq!(res.status().code, 200, "{path}");
            let body = res.into_string().unwrap_or_default();
            samples.push(t.elapsed());
            assert!(body.len() > 10);
        }
        report(label, &mut samples);
    };
    time("GET /contacts (first page, with total)", "/contacts");
    time("GET /contacts?subscribed=false", "/contacts?subscribed=false");
    time("GET /contacts?sort=email&dir=asc", "/contacts?sort=email&dir=asc");
    time("GET /contacts?search=hopper4242 (one match)", "/contacts?search=hopper4242");
    time("GET /contacts?search=torvalds99 (~1,100 matches)", "/contacts?search=torvalds99");
    time("GET /contacts?search=gmail (~1/6 of all)", "/contacts?search=gmail");
    time("GET /contacts/fields", "/contacts/fields");

    import_bench(state, &project, csv_rows);
    drop(client);
    scratch.close();
}

/// A CSV file of the contacts numbered `rows` (addresses prefixed with `prefix`): an `email`
/// column and nine fields, and with `source` a tenth (`source`).
pub fn csv_file(rng: &mut Lcg, rows: std::ops::Range<usize>, prefix: &str, source: bool) -> Vec<u8> {
    let mut csv = String::from("email,firstName,lastName,plan,city,age,score,signupDate,vip,company");
    csv.push_str(if source { ",source\n" } else { "\n" });
    for i in rows {
        let (email, d) = person(rng, i, prefix);
        csv.push_str(&format!(
            "{email},{},{},{},{},{},{},{},{},{}",
            d["firstName"].as_str().unwrap(),
            d["lastName"].as_str().unwrap(),
            d["plan"].as_str().unwrap(),
            d["city"].as_str().unwrap(),
            d["age"],
            d["score"],
            d["signupDate"].as_str().unwrap(),
            if d["vip"] == json!(true) { "yes" } else { "no" },
            d["company"].as_str().unwrap_or(""),
        ));
        if source {
            csv.push_str([",signup form\n", ",import\n", ",api\n"][i % 3]);
        } else {
            csv.push('\n');
        }
    }
    csv.into_bytes()
}

/// Imports `bytes` into the project through the import job's batches, as the job runs them;
/// returns the time the batches took (the upload check's excluded) and the finished job.
pub fn import(
    state: &AppState,
    project: &str,
    bytes: &[u8],
    options: Option<&tidings::core::import_options::Options>,
) -> (std::time::Duration, contact_jobs::ContactJob) {
    let counted = tidings::core::import::inspect(bytes).expect("valid csv");
    let mut conn = state.db.conn().unwrap();
    let job = db::write_tx(&mut conn, |tx| {
        let job = contact_jobs::insert(tx, project, "import", bytes, counted as i64, clock::now_ms())?;
        if let Some(options) = options {
            contact_jobs::set_options(tx, &job.id, &serde_json::to_string(options).unwrap())?;
        }
        Ok::<_, db::DbError>(job)
    })
    .unwrap();
    let t = Instant::now();
    // As the job reads its file: ahead of the writer, on a thread of its own.
    let mut rows =
        tidings::core::import_rows::ReadAhead::start(Arc::new(bytes.to_vec()), 0, options.cloned())
            .expect("the reader");
    loop {
        let done = db::write_tx(&mut conn, |tx| {
            let job = contact_jobs::by_id(tx, &job.id)?.unwrap();
            tidings::core::import::write_batch(
                tx,
                &job,
                &mut rows,
                tidings::scheduler::contact_jobs::IMPORT_BATCH,
                clock::now_ms(),
            )
        })
        .expect("batch");
        if done {
            break;
        }
    }
    let took = t.elapsed();
    (took, contact_jobs::by_id(&conn, &job.id).unwrap().unwrap())
}

fn import_bench(state: &AppState, project: &str, rows: usize) {
    let bytes = csv_file(&mut Lcg(7), 0..rows, "csv.", false);
    println!("CSV file: {rows} rows x 10 columns, {:.2} MiB", bytes.len() as f64 / 1048576.0);
    // The third round maps the columns as the dashboard's mapping step would: two renamed, one
    // skipped, two typed by choice, on a file whose contacts are new again.
    let mapping = r#"{"firstName":{"rename":"first_name"},"lastName":{"rename":"last_name"},"company":{"skip":true},"age":{"type":"number"},"vip":{"type":"boolean"}}"#;
    let options = tidings::core::import_options::Options::parse(None, None, Some(mapping)).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let mut lines = text.lines();
    let mut remapped = format!("{}\n", lines.next().unwrap_or_default());
    for line in lines {
        // Another address for every row: the mapped round makes new contacts too.
        remapped.push_str(&format!("mapped.{line}\n"));
    }
    let remapped = remapped.into_bytes();
    for (round, bytes, options) in [
        ("new contacts", &bytes, None),
        ("same file again (updates)", &bytes, None),
        ("new contacts, with a column mapping", &remapped, options.as_ref()),
    ] {
        let t = Instant::now();
        tidings::core::import::inspect(bytes).expect("valid csv");
        let inspected = t.elapsed();
        let (took, job) = import(state, project, bytes, options);
        println!(
            "CSV import, {round}: {:.0} ms job time ({:.0} rows/s; upload check {:.0} ms); imported {} updated {} skipped {}",
            took.as_secs_f64() * 1000.0,
            rows as f64 / took.as_secs_f64(),
            inspected.as_secs_f64() * 1000.0,
            job.imported,
            job.updated,
            job.skipped
        );
    }
}
