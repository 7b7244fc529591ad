//! Outbound webhooks (appliance.md §12): which of a project's events go to which endpoint, the
//! payload, the Standard Webhooks signature, and when a failed delivery is tried again.
//!
//! Deliveries are queued in the transaction that records the event ([`on_event`], called by
//! [`super::events::emit`]), so an event is never recorded without its deliveries or the other
//! way round; the worker ([`crate::scheduler::webhooks`]) sends them.

use crate::db::Tx;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::clock;
use crate::core::error::{Error, FieldError, Result};
use crate::db::contacts;
use crate::db::effects::{Wake, wake};
use crate::db::events::Listed;
use crate::db::webhooks::{self, Delivery, Endpoint};

/// Most event patterns of one endpoint.
const MAX_PATTERNS: usize = 50;
/// How long a delivery is tried, and an endpoint may fail before it is disabled.
pub const GIVE_UP_MS: i64 = 24 * 3600 * 1000;
/// The waits between tries: the first retry within 30 s, then longer, every 4 hours at most.
const RETRY_SECS: &[i64] = &[5, 30, 120, 600, 1800, 3600, 7200, 14_400];

/// A new signing secret: `whsec_` and 24 random bytes in base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// The Standard Webhooks signature of a body: `v1,` and the base64 HMAC-SHA256, under the
/// secret's bytes, of `id.timestamp.body`.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    let key = STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap_or_default();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes keys of any length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Whether an event name matches an endpoint's patterns (`name`, `prefix*`, or `*`).
pub fn matches(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name,
    })
}

/// Checks an endpoint's events: a non-empty list of names or prefixes ending in `*`.
pub fn check_events(value: &Value) -> Result<Vec<String>> {
    let bad = |message: &str| Error::invalid("events", "invalid_type", message);
    let items =
        value.as_array().ok_or_else(|| bad("events is a list of event names or prefixes ending in *"))?;
    if items.is_empty() || items.len() > MAX_PATTERNS {
        return Err(bad(&format!("events names 1 to {MAX_PATTERNS} event names or prefixes")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let text = item.as_str().map(str::trim).unwrap_or_default();
            let ok = !text.is_empty()
                && text.chars().count() <= 200
                && !text.chars().any(char::is_control)
                && !text.strip_suffix('*').unwrap_or(text).contains('*');
            if ok {
                Ok(text.to_string())
            } else {
                Err(Error::Invalid(vec![
                    FieldError::new(
                        format!("events[{i}]"),
                        "invalid_string",
                        "an event name, or a prefix ending in *",
                    )
                    .received(item.clone()),
                ]))
            }
        })
        .collect()
}

/// Checks an endpoint's URL: http or https, at most 2,048 characters. (Where it may point is
/// checked when it is called, on the address connected to.)
pub fn check_url(url: &str) -> Result<String> {
    let url = url.trim();
    let parsed = reqwest::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if parsed.is_none() || url.len() > 2048 {
        return Err(Error::invalid("url", "invalid_string", "url is an http:// or https:// address"));
    }
    Ok(url.to_string())
}

/// Queues a delivery of the event to each enabled endpoint of the project that wants it, in the
/// caller's transaction.
pub fn on_event(
    conn: &Tx,
    project: &str,
    event_id: &str,
    name: &str,
    contact: Option<&str>,
    data: &Value,
    now: i64,
) -> crate::db::Result<()> {
    let endpoints: Vec<Endpoint> =
        webhooks::enabled(conn, project)?.into_iter().filter(|e| matches(&e.events, name)).collect();
    if endpoints.is_empty() {
        return Ok(());
    }
    let email = match contact {
        Some(id) => contacts::by_id(conn, project, id)?.map(|c| c.email),
        None => None,
    };
    let event = Listed {
        id: event_id.to_string(),
        name: name.to_string(),
        contact_id: contact.map(str::to_string),
        email,
        data: data.clone(),
        created_at: now,
    };
    let payload =
        json!({ "type": name, "timestamp": clock::iso(now), "data": event_data(&event) }).to_string();
    for endpoint in endpoints {
        queue(conn, &endpoint, name, &payload, now)?;
    }
    Ok(())
}

/// An event as a webhook's `data` carries it: the shape `GET /events` lists (`views::events::Event`,
/// held equal to this by its test), frozen when the event happens.
pub fn event_data(e: &Listed) -> Value {
    json!({
        "id": e.id,
        "name": e.name,
        "contact": e.contact_id.as_ref().map(|id| json!({ "id": id, "email": e.email })),
        "data": e.data,
        "createdAt": clock::iso(e.created_at),
    })
}

/// Queues one delivery of `payload` to `endpoint`; returns its id (the `webhook-id`).
pub fn queue(
    conn: &Tx,
    endpoint: &Endpoint,
    kind: &str,
    payload: &str,
    now: i64,
) -> crate::db::Result<String> {
    let delivery = Delivery {
        id: format!("msg_{}", uuid::Uuid::now_v7().simple()),
        endpoint_id: endpoint.id.clone(),
        project_id: endpoint.project_id.clone(),
        event_type: kind.to_string(),
        payload: payload.to_string(),
        created_at: now,
        ..Delivery::default()
    };
    webhooks::insert_delivery(conn, &delivery)?;
    wake(Wake::Webhooks);
    Ok(delivery.id)
}

/// When a delivery that failed its `attempts`-th try is tried next; `None` once it has been
/// tried for 24 hours.
pub fn next_try(created_at: i64, attempts: i64, now: i64) -> Option<i64> {
    let wait = RETRY_SECS[(attempts.max(1) as usize - 1).min(RETRY_SECS.len() - 1)] * 1000;
    let at = now + wait;
    (at - created_at < GIVE_UP_MS).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_webhooks_test_vector() {
        // From the Standard Webhooks specification's reference implementations.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn patterns_and_retries() {
        let p = vec!["email.*".to_string(), "signup".to_string()];
        assert!(matches(&p, "email.bounced") && matches(&p, "signup"));
        assert!(!matches(&p, "signup.done") && !matches(&p, "contact.subscribed"));
        assert!(matches(&["*".to_string()], "anything"));
        assert_eq!(next_try(0, 1, 1000), Some(6000), "the first retry within 30 s");
        assert_eq!(next_try(0, 2, 10_000), Some(40_000));
        assert_eq!(next_try(0, 20, GIVE_UP_MS - 1000), None, "given up after 24 hours");
        assert!(check_events(&json!(["email.*", "signup"])).is_ok());
        assert_eq!(check_events(&json!(["é", "ü*"])).unwrap(), ["é", "ü*"], "names are text, not bytes");
        for bad in [json!([]), json!("x"), json!(["a*b"]), json!(["é*é"]), json!([""]), json!([1])] {
            assert!(check_events(&bad).is_err(), "{bad}");
        }
        assert!(check_url("https://example.com/hook").is_ok());
        assert!(check_url("ftp://example.com").is_err() && check_url("not a url").is_err());
    }
}
