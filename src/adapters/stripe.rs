//! Stripe, when `[billing]` is configured: the calls the billing endpoints make (checkout,
//! billing portal, invoices) and the check of the `Stripe-Signature` header on the events Stripe
//! sends to `POST /webhooks/incoming/stripe`.
//!
//! Stripe signs `<t>.<body>` with HMAC-SHA256 under the endpoint's secret (the whole `whsec_…`
//! string is the key) and sends `t=<unix seconds>,v1=<hex>[,v1=<hex>…]`; while a secret is being
//! rolled, one header carries a signature under each secret. The event is taken when any `v1`
//! matches and `t` is within [`TOLERANCE_SECS`] of now (older ones could be replays).

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::config::BillingConfig;

/// How far from now a signature's timestamp may be.
pub const TOLERANCE_SECS: i64 = 300;

/// Stripe could not be reached or refused a call; the message says which (the API answers 502).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Failure(pub String);

/// Why a `Stripe-Signature` header was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureError {
    /// No `t=` or no `v1=` in the header.
    Malformed,
    /// The timestamp is further than the tolerance from now.
    Stale,
    /// No `v1` signature matches the body.
    Mismatch,
}

/// Checks `header` for `body` under `secret` at `now` (unix seconds).
pub fn verify(header: &str, body: &[u8], secret: &str, now: i64) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let (Some(timestamp), false) = (timestamp, signatures.is_empty()) else {
        return Err(SignatureError::Malformed);
    };
    if (now - timestamp).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    // The body is hashed once, whatever number of signatures the header lists.
    let expected = signature(body, secret, timestamp);
    let matches = signatures
        .iter()
        .any(|candidate| aws_lc_rs::constant_time::verify_slices_are_equal(candidate, &expected).is_ok());
    if matches { Ok(()) } else { Err(SignatureError::Mismatch) }
}

/// HMAC-SHA256 of `<timestamp>.<body>` under `secret`: Stripe's `v1`.
fn signature(body: &[u8], secret: &str, timestamp: i64) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

/// The header Stripe would send for `body` at `timestamp` (for tests and the test double).
pub fn sign(body: &[u8], secret: &str, timestamp: i64) -> String {
    format!("t={timestamp},v1={}", hex::encode(signature(body, secret, timestamp)))
}

/// Stripe's API under the configured secret key.
pub struct Stripe {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Stripe {
    /// The client, when billing is on.
    pub fn new(config: &BillingConfig) -> Option<Stripe> {
        if !config.enabled() {
            return None;
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(Stripe {
            client,
            base: config.stripe_api_base.trim_end_matches('/').to_string(),
            key: config.stripe_secret_key.clone().unwrap_or_default(),
        })
    }

    /// `POST /v1/<path>` with a form body.
    pub async fn post(&self, path: &str, form: &[(&str, String)]) -> Result<Value, Failure> {
        let request = self.client.post(format!("{}/v1/{path}", self.base)).bearer_auth(&self.key).form(form);
        answer(request).await
    }

    /// `GET /v1/<path>` with a query.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Failure> {
        let request = self.client.get(format!("{}/v1/{path}", self.base)).bearer_auth(&self.key).query(query);
        answer(request).await
    }
}

/// Stripe's JSON answer; its error (status and message) otherwise.
async fn answer(request: reqwest::RequestBuilder) -> Result<Value, Failure> {
    let unreachable =
        |e: reqwest::Error| Failure(format!("Stripe could not be reached: {}", e.without_url()));
    let response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(unreachable)?;
    let body: Value =
        crate::bounded_json::from_slice(&bytes, crate::bounded_json::REQUEST).unwrap_or(Value::Null);
    if status.is_success() && body.is_object() {
        return Ok(body);
    }
    let message = body["error"]["message"].as_str().unwrap_or("no message");
    Err(Failure(format!("Stripe answered {}: {message}", status.as_u16())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"checkout.session.completed"}"#;

    #[test]
    fn a_signature_made_elsewhere_is_accepted() {
        // HMAC-SHA256 under "whsec_test_secret" of "1700000000." + BODY, computed with Python's
        // hmac module, not with this code.
        let header = "t=1700000000,v1=a13d4b1f9003bc2fb6c06224e878b6056185eaa50d40e1e7dc05517f8af41d7b";
        assert_eq!(verify(header, BODY, SECRET, 1_700_000_100), Ok(()));
        assert_eq!(sign(BODY, SECRET, 1_700_000_000), header);
    }

    #[test]
    fn signatures_are_checked_like_stripe_does() {
        let now = 1_700_000_000;
        let good = sign(BODY, SECRET, now);
        let v1 = good.split_once(",v1=").unwrap().1;
        assert_eq!(verify(&good, BODY, SECRET, now + TOLERANCE_SECS), Ok(()));
        // A secret being rolled: one of several v1 signatures matches, in any order.
        let rolled = format!("t={now},v1={},v1={v1},v0=ignored", "ab".repeat(32));
        assert_eq!(verify(&rolled, BODY, SECRET, now), Ok(()));
        assert_eq!(verify(&good, BODY, "whsec_other", now), Err(SignatureError::Mismatch));
        assert_eq!(verify(&good, b"{\"id\":\"evt_2\"}", SECRET, now), Err(SignatureError::Mismatch));
        assert_eq!(verify(&good, BODY, SECRET, now + TOLERANCE_SECS + 1), Err(SignatureError::Stale));
        assert_eq!(verify(&good, BODY, SECRET, now - TOLERANCE_SECS - 1), Err(SignatureError::Stale));
        // Only v0 (Stripe's test scheme), no timestamp, or nothing usable.
        assert_eq!(verify(&format!("t={now},v0={v1}"), BODY, SECRET, now), Err(SignatureError::Malformed));
        assert_eq!(verify(&format!("v1={v1}"), BODY, SECRET, now), Err(SignatureError::Malformed));
        for junk in ["", "garbage", "t=abc,v1=zz", &"t=1,".repeat(1000)] {
            assert!(verify(junk, BODY, SECRET, now).is_err(), "{junk}");
        }
    }
}
