//! Segments over a large project: counting a 3-filter dynamic segment, and computing a tracked
//! segment's membership from nothing and again after 10% of its contacts changed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocket::http::Header;
use rocket::local::blocking::Client;
use serde_json::{Value, json};
use tidings::core::segments::{self as core_segments, COMPUTE_BATCH, Step};
use tidings::{AppState, build_rocket, clock, db};

use crate::{Scratch, filter, report, seed, three_filters};

pub fn segments_bench(contacts: usize, repeat: usize, churn: f64, dir: Option<PathBuf>) {
    let scratch = Scratch::open(dir);
    let (state, project, secret_key) = (&scratch.state, scratch.project.clone(), scratch.secret_key.clone());
    let started = Instant::now();
    seed(state, &project, contacts);
    println!("seeded {contacts} contacts in {:.1} s", started.elapsed().as_secs_f64());
    let client = Client::untracked(build_rocket(state.clone())).expect("rocket");
    let auth = Header::new("Authorization", format!("Bearer {secret_key}"));
    let post = |path: &str, body: Value| crate::post(&client, &auth, path, body);
    let segment = post("/segments", json!({ "name": "Pro in Oslo over 30", "condition": three_filters() }));
    println!("3-filter dynamic segment: {} members", segment["memberCount"]);
    let refresh = format!("/segments/{}/refresh", segment["id"].as_str().unwrap());
    let mut samples = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t = Instant::now();
        post(&refresh, json!({}));
        samples.push(t.elapsed());
    }
    report("count (POST /segments/:id/refresh), 3 filters", &mut samples);
    let either = json!({ "logic": "OR", "groups": [
        { "filters": [filter("data.plan", "equals", json!("enterprise")), filter("data.vip", "equals", json!(true))] },
        { "filters": [filter("data.profile.tier", "equals", json!("gold")), filter("data.score", "greaterThanOrEqual", json!(50))] },
    ] });
    let segment = post("/segments", json!({ "name": "OR of two groups", "condition": either }));
    let refresh = format!("/segments/{}/refresh", segment["id"].as_str().unwrap());
    let mut samples = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t = Instant::now();
        post(&refresh, json!({}));
        samples.push(t.elapsed());
    }
    report(&format!("count, OR of two 2-filter groups ({} members)", segment["memberCount"]), &mut samples);

    // A tracked segment: the first computation enters every member, the second only the churn.
    let pro = json!({ "groups": [{ "filters": [filter("data.plan", "equals", json!("pro"))] }] });
    let tracked = post("/segments", json!({ "name": "Pro", "condition": pro, "trackMembership": true }));
    let id = tracked["id"].as_str().unwrap().to_string();
    let (took, done) = compute(state, &id);
    println!(
        "compute from nothing: {:.2} s, {} entered ({:.0} contacts/s visited)",
        took.as_secs_f64(),
        done.compute_entered,
        contacts as f64 / took.as_secs_f64()
    );
    let changed = churn_contacts(state, &project, churn);
    let (took, done) = compute(state, &id);
    println!(
        "compute after {changed} contacts ({:.0}%) moved in or out: {:.2} s, {} entered, {} exited, {} members",
        churn * 100.0,
        took.as_secs_f64(),
        done.compute_entered,
        done.compute_exited,
        done.member_count
    );
    drop(client);
    scratch.close();
}

/// Runs a membership computation to the end, batch by batch, as the job does.
fn compute(state: &AppState, id: &str) -> (Duration, tidings::db::segments::Segment) {
    let mut conn = state.db.conn().unwrap();
    let started = Instant::now();
    loop {
        let step =
            db::write_tx(&mut conn, |tx| core_segments::compute_step(tx, id, COMPUTE_BATCH, clock::now_ms()))
                .expect("compute step");
        if let Step::Done(segment) = step {
            return (started.elapsed(), *segment);
        }
    }
}

/// Moves a share of all contacts into or out of the `pro` plan.
fn churn_contacts(state: &AppState, project: &str, share: f64) -> usize {
    let mut conn = state.db.conn().unwrap();
    let every = (1.0 / share).round().max(1.0) as i64;
    db::write_tx(&mut conn, |tx| {
        tx.execute(
            "UPDATE contacts SET data = jsonb_set(data, '$.plan',
                 CASE WHEN json_extract(data, '$.plan') = 'pro' THEN 'free' ELSE 'pro' END)
             WHERE project_id = ?1 AND seq % ?2 = 0",
            rusqlite::params![project, every],
        )
        .map_err(db::DbError::from)
    })
    .expect("churn")
}
