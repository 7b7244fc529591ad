//! Submissions of signup forms (issue 32, item 4), and the checks that keep scripts out without
//! a third party: an ALTCHA proof-of-work challenge, signed by the server and spent once, whose
//! signed issue time also gives the minimum fill time, and a honeypot field people never see.
//! A submission answers the same whether its address was a contact or not.

use std::collections::BTreeMap;

use altcha::{Challenge, CreateChallengeOptions, Payload, VerifySolutionOptions};
use base64::Engine;
use serde_json::{Map, Value, json};

use super::confirmations::{self, Mailer};
use super::contacts::{self, Upsert};
use super::data::DataPatch;
use super::error::{Error, FieldError, Result};
use super::fields::FieldChanges;
use crate::db::Tx;
use crate::db::consent::{Consent, Proof};
use crate::db::contacts::Indexing;
use crate::db::forms::{self as rows, Form};

/// How long a challenge may be solved and used.
pub const CHALLENGE_MINUTES: i64 = 10;
/// The range the server's secret counter is drawn from: a browser tries about half of it
/// (SHA-256 once per try), well under a second; a script pays the same for every submission.
pub const COUNTER: std::ops::RangeInclusive<u32> = 5_000..=25_000;
/// Longest text a field takes, in characters.
pub const MAX_VALUE: usize = 1_000;

/// The key challenges are signed with, apart from every other use of the link secret.
fn key(secret: &str) -> String {
    format!("tidings form challenge\n{secret}")
}

/// A new challenge for `form`, issued at `now`.
pub fn challenge(secret: &str, form: &str, now: i64) -> Result<Challenge> {
    let mut data = BTreeMap::new();
    data.insert("form".to_string(), json!(form));
    data.insert("issued".to_string(), json!(now));
    let options = CreateChallengeOptions {
        algorithm: "SHA-256".into(),
        cost: 1,
        counter: Some(rand::Rng::gen_range(&mut rand::thread_rng(), COUNTER)),
        data: Some(data),
        expires_at: Some(now / 1000 + CHALLENGE_MINUTES * 60),
        hmac_signature_secret: Some(key(secret)),
        hmac_key_signature_secret: Some(key(secret)),
        key_prefix_length: Some(4),
        ..CreateChallengeOptions::default()
    };
    altcha::create_challenge(options)
        .map_err(|e| Error::permanent(format!("no challenge could be made: {e}")))
}

/// Why a submission was taken for a script's.
fn refused(why: &str) -> Error {
    Error::forbidden(format!("The submission failed the spam checks: {why}"))
}

/// A verified proof: the challenge's signature (to spend it) and when it expires.
#[derive(Debug, Clone, PartialEq)]
pub struct Proven {
    pub signature: String,
    pub expires_at: i64,
}

/// Checks a submission's proof of work (`payload`: base64 of the solved challenge, as the
/// ALTCHA widget sends it) for `form`, issued at least `min_fill_ms` before `now`. Spending
/// it is [`submit`]'s, in the submission's transaction.
pub fn verify(secret: &str, form: &str, payload: Option<&str>, min_fill_ms: i64, now: i64) -> Result<Proven> {
    let Some(payload) = payload.map(str::trim).filter(|p| !p.is_empty() && p.len() <= 8_192) else {
        return Err(refused("the proof of work is missing"));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|_| refused("the proof of work cannot be read"))?;
    let payload: Payload =
        serde_json::from_slice(&bytes).map_err(|_| refused("the proof of work cannot be read"))?;
    let mut options = VerifySolutionOptions::new(&payload.challenge, &payload.solution, key(secret));
    options.hmac_key_signature_secret = Some(key(secret));
    let result = altcha::verify_solution(options).map_err(|_| refused("the proof of work is wrong"))?;
    if result.expired {
        return Err(refused("the challenge expired; load the form again"));
    }
    if !result.verified {
        return Err(refused("the proof of work is wrong"));
    }
    let params = &payload.challenge.parameters;
    let data = params.data.clone().unwrap_or_default();
    if data.get("form").and_then(Value::as_str) != Some(form) {
        return Err(refused("the challenge is another form's"));
    }
    let issued = data.get("issued").and_then(Value::as_i64).unwrap_or(i64::MAX);
    if now - issued < min_fill_ms {
        return Err(refused("the form was sent too fast after it was loaded"));
    }
    let signature = payload.challenge.signature.clone().unwrap_or_default();
    Ok(Proven { signature, expires_at: params.expires_at.unwrap_or(0).saturating_mul(1000) })
}

/// A submission as sent: the address, the fields' values by key, the topics chosen, and the
/// honeypot field (empty from a person).
#[derive(Debug, Clone, Default)]
pub struct Submission {
    pub email: Option<String>,
    pub values: Map<String, Value>,
    pub topics: Vec<String>,
    pub honeypot: Option<String>,
    /// The submitter's browser's time zone (`_tz`, set by the form script), which a contact
    /// without a `timezone` takes when it names one.
    pub timezone: Option<String>,
}

/// Who submitted: address and user agent, for the consent record, and the language the form
/// was shown in, which a contact without a `locale` takes.
#[derive(Debug, Clone, Default)]
pub struct Visitor {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub locale: Option<String>,
    pub timezone: Option<String>,
}

/// Checks a submission against `form` without the database: the honeypot, the address, each
/// field's type and whether it is required. Returns the address and the values to store.
pub fn check(form: &Form, submission: &Submission) -> Result<(String, Map<String, Value>)> {
    if submission.honeypot.as_deref().is_some_and(|h| !h.trim().is_empty()) {
        return Err(refused("a field people do not see was filled in"));
    }
    let mut errors = Vec::new();
    let email = match submission.email.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        None => {
            errors.push(FieldError::new("email", "required", "Enter your email address"));
            None
        }
        Some(email) => match contacts::parse_email(email, "email") {
            Ok(email) => Some(email),
            Err(Error::Invalid(items)) => {
                errors.extend(items);
                None
            }
            Err(other) => return Err(other),
        },
    };
    let mut values = Map::new();
    for field in &form.fields {
        let given = submission.values.get(&field.key).filter(|v| !matches!(v, Value::Null));
        let given = given.filter(|v| v.as_str().is_none_or(|s| !s.trim().is_empty()));
        let Some(given) = given else {
            if field.required && field.kind != "boolean" {
                errors.push(FieldError::new(&field.key, "required", format!("{} is required", field.label)));
            }
            continue;
        };
        match typed(&field.kind, given) {
            Some(value) => {
                values.insert(field.key.clone(), value);
            }
            None => errors.push(FieldError::new(
                &field.key,
                "invalid_type",
                format!("{} must be {}", field.label, describe(&field.kind)),
            )),
        }
    }
    match email {
        Some(email) if errors.is_empty() => Ok((email, values)),
        _ => Err(Error::Invalid(errors)),
    }
}

fn describe(kind: &str) -> &'static str {
    match kind {
        "number" => "a number",
        "boolean" => "yes or no",
        "date" => "a date like 2026-01-31",
        _ => "at most 1,000 characters",
    }
}

/// A value as the field's type keeps it: from a JSON value or a form's text.
fn typed(kind: &str, value: &Value) -> Option<Value> {
    let text = value.as_str().map(str::trim);
    match kind {
        "number" => match value {
            Value::Number(_) => Some(value.clone()),
            _ => text?
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number)),
        },
        "boolean" => match (value, text) {
            (Value::Bool(b), _) => Some(Value::Bool(*b)),
            (_, Some("on" | "true" | "1" | "yes")) => Some(Value::Bool(true)),
            (_, Some("off" | "false" | "0" | "no")) => Some(Value::Bool(false)),
            _ => None,
        },
        "date" => {
            let text = text?;
            crate::clock::parse_date(text)
                .map(|(ms, _)| if text.len() == 10 { json!(text) } else { json!(crate::clock::iso(ms)) })
        }
        _ => {
            let text = text?;
            (text.chars().count() <= MAX_VALUE && !text.chars().any(|c| c.is_control() && c != '\n'))
                .then(|| json!(text))
        }
    }
}

/// Stores a checked submission of `form` (its proof spent here, so it counts once): the contact
/// is made, or given the fields it has no value for (a stranger cannot overwrite what a contact
/// said). With double opt-in (the form's, else the project's) the subscription and topics wait
/// for the mailed confirmation; without, they are granted now. Either way the consent is
/// recorded with the form's words and the visitor.
#[allow(clippy::too_many_arguments)]
pub fn submit(
    tx: &Tx,
    mailer: &Mailer<'_>,
    form: &Form,
    email: &str,
    values: Map<String, Value>,
    chosen: &[String],
    proven: &Proven,
    visitor: Visitor,
    now: i64,
) -> Result<()> {
    if !rows::spend_challenge(tx, &proven.signature, proven.expires_at, now)? {
        return Err(refused("this challenge was used before; load the form again"));
    }
    let double =
        form.double_opt_in.unwrap_or(crate::db::consent::settings(tx, &form.project_id)?.double_opt_in);
    let existing = crate::db::contacts::by_email(tx, &form.project_id, email)?;
    let mut fresh = values;
    if let Some(locale) = visitor.locale {
        fresh.entry("locale").or_insert(Value::String(locale));
    }
    // A guess the browser made: one that names no zone is dropped, not refused.
    if let Some(zone) = visitor.timezone.filter(|z| crate::core::delivery_windows::check_zone(z)) {
        fresh.entry(crate::core::data::TIMEZONE).or_insert(Value::String(zone));
    }
    if let Some(contact) = &existing {
        fresh.retain(|key, _| !contact.data.contains_key(key));
    }
    let patch = DataPatch::parse(Some(&Value::Object(fresh)), "data")?;
    let upsert = Upsert {
        email,
        subscribed: None,
        default_subscribed: false,
        data: &patch,
        source: "form",
        indexing: Indexing::AtCommit,
        new_likely: false,
    };
    let mut fields = FieldChanges::default();
    let contact = contacts::upsert(tx, &form.project_id, &upsert, &mut fields, now)?.contact;
    fields.save(tx, &form.project_id)?;
    let topics: Vec<_> = crate::db::topics::list(tx, &form.project_id)?
        .into_iter()
        .filter(|t| form.topics.contains(&t.id) && chosen.contains(&t.id))
        .collect();
    let proof = Proof {
        method: "form".into(),
        form_id: Some(form.id.clone()),
        ip: visitor.ip,
        user_agent: visitor.user_agent.map(confirmations::cut_agent),
        consent_text: form.consent_text.clone(),
    };
    if double {
        confirmations::ask(tx, mailer, &contact, &topics, proof, now)?;
    } else {
        confirmations::record(
            tx,
            &contact,
            &topics,
            Consent { proof, requested_at: now, ..Consent::default() },
            now,
        )?;
    }
    rows::count_submission(tx, &form.id)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solved(secret: &str, form: &str, issued: i64) -> String {
        let challenge = challenge(secret, form, issued).unwrap();
        let solution =
            altcha::solve_challenge(altcha::SolveChallengeOptions::new(&challenge)).unwrap().unwrap();
        let payload = serde_json::to_vec(&Payload { challenge, solution }).unwrap();
        base64::engine::general_purpose::STANDARD.encode(payload)
    }

    #[test]
    fn a_solved_challenge_passes_once_filled_slowly_enough_for_its_own_form() {
        let now = crate::clock::now_ms();
        let payload = solved("s", "f1", now - 5_000);
        assert!(verify("s", "f1", Some(&payload), 3_000, now).is_ok());
        let refusal = |r: Result<Proven>| r.unwrap_err().to_string();
        assert!(refusal(verify("s", "f1", Some(&payload), 10_000, now)).contains("too fast"));
        assert!(refusal(verify("s", "f2", Some(&payload), 0, now)).contains("another form"));
        assert!(refusal(verify("other", "f1", Some(&payload), 0, now)).contains("wrong"));
        assert!(refusal(verify("s", "f1", None, 0, now)).contains("missing"));
        assert!(refusal(verify("s", "f1", Some("not base64!"), 0, now)).contains("cannot be read"));
        let old = solved("s", "f1", now - (CHALLENGE_MINUTES + 1) * 60_000);
        assert!(refusal(verify("s", "f1", Some(&old), 0, now)).contains("expired"));
    }

    #[test]
    fn values_take_their_field_type() {
        assert_eq!(typed("number", &json!("42.5")), Some(json!(42.5)));
        assert_eq!(typed("number", &json!("x")), None);
        assert_eq!(typed("boolean", &json!("on")), Some(json!(true)));
        assert_eq!(typed("date", &json!("2026-01-31")), Some(json!("2026-01-31")));
        assert_eq!(typed("date", &json!("soon")), None);
        assert_eq!(typed("string", &json!("a".repeat(1_001))), None);
    }
}
