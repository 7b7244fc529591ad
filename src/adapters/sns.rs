//! Amazon SNS messages (`POST /webhooks/sns`): read, checked against the configured topics and
//! for a `Timestamp` within an hour of now, and verified with the certificate their
//! `SigningCertURL` names, fetched only over https from an allowed host and port
//! (`[webhooks] sns_cert_hosts`, AWS's SNS endpoints on 443 by default) at a path of SNS's own
//! form, at most [`FETCHES_PER_MINUTE`] times a minute, and cached.
//!
//! The signature is RSA over the message's canonical string (its fields in a fixed order, each
//! name and value on a line): SHA-1 for `SignatureVersion` 1, SHA-256 for 2.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, SignatureVerificationAlgorithm, alg_id,
};
use serde_json::Value;

use crate::config::WebhooksConfig;

/// Signing certificates kept at most (SNS rotates them rarely; a flood of made-up URLs is refused
/// by the host rule before anything is fetched).
const MAX_CERTS: usize = 32;
/// Largest certificate file read.
const MAX_CERT_BYTES: usize = 16 * 1024;
/// How far a message's `Timestamp` may be from now (SNS's retries of a delivery come within
/// minutes; a message older than this is a replay).
pub const MAX_AGE_MS: i64 = 3_600_000;
/// Certificates fetched at most per minute, whatever the URLs: a flood of messages naming new
/// certificates costs the server a few requests a minute, not one each.
pub const FETCHES_PER_MINUTE: u32 = 10;

/// An SNS message, as posted.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `Notification`, `SubscriptionConfirmation` or `UnsubscribeConfirmation`.
    pub kind: String,
    pub message_id: String,
    pub topic_arn: String,
    pub subject: Option<String>,
    pub message: String,
    pub timestamp: String,
    pub token: Option<String>,
    pub subscribe_url: Option<String>,
    pub signature_version: String,
    pub signature: String,
    pub signing_cert_url: String,
}

impl Message {
    /// Reads the posted JSON; an error names what is missing.
    pub fn parse(body: &Value) -> Result<Message, String> {
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
        let need = |key: &str| text(key).ok_or_else(|| format!("the message has no {key}"));
        let kind = need("Type")?;
        let confirmation = kind == "SubscriptionConfirmation" || kind == "UnsubscribeConfirmation";
        if kind != "Notification" && !confirmation {
            return Err(format!("unknown message type {kind:?}"));
        }
        Ok(Message {
            message_id: need("MessageId")?,
            topic_arn: need("TopicArn")?,
            subject: text("Subject"),
            message: need("Message")?,
            timestamp: need("Timestamp")?,
            token: if confirmation { Some(need("Token")?) } else { None },
            subscribe_url: if confirmation { Some(need("SubscribeURL")?) } else { None },
            signature_version: need("SignatureVersion")?,
            signature: need("Signature")?,
            signing_cert_url: need("SigningCertURL")?,
            kind,
        })
    }

    /// The string SNS signs: the fields of the message's type, in order, `name\nvalue\n` each.
    pub fn string_to_sign(&self) -> String {
        let mut fields: Vec<(&str, &str)> = vec![("Message", &self.message), ("MessageId", &self.message_id)];
        if self.kind == "Notification" {
            if let Some(subject) = &self.subject {
                fields.push(("Subject", subject));
            }
        } else {
            fields.push(("SubscribeURL", self.subscribe_url.as_deref().unwrap_or_default()));
        }
        fields.push(("Timestamp", &self.timestamp));
        if self.kind != "Notification" {
            fields.push(("Token", self.token.as_deref().unwrap_or_default()));
        }
        fields.push(("TopicArn", &self.topic_arn));
        fields.push(("Type", &self.kind));
        fields.iter().map(|(name, value)| format!("{name}\n{value}\n")).collect()
    }
}

/// Checks and verifies messages; holds the fetched certificates.
pub struct Verifier {
    client: reqwest::Client,
    hosts: Vec<String>,
    topics: Vec<String>,
    certs: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    fetches: governor::DefaultDirectRateLimiter,
}

impl Verifier {
    pub fn new(config: &WebhooksConfig) -> Verifier {
        let mut builder = reqwest::Client::builder()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(Duration::from_secs(10));
        if let Some(path) = &config.sns_ca_file {
            let read = std::fs::read(path)
                .map_err(|e| e.to_string())
                .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string()));
            match read {
                Ok(certs) => builder = builder.tls_certs_merge(certs),
                Err(e) => tracing::error!("cannot read [webhooks] sns_ca_file {}: {e}", path.display()),
            }
        }
        let client = builder.build().unwrap_or_else(|e| {
            tracing::error!("cannot build the SNS client ({e}); SNS messages will not verify");
            reqwest::Client::new()
        });
        Verifier {
            client,
            hosts: config.sns_cert_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
            topics: config.sns_topic_arns.clone(),
            certs: Mutex::default(),
            fetches: governor::RateLimiter::direct(governor::Quota::per_minute(
                std::num::NonZeroU32::new(FETCHES_PER_MINUTE).expect("not zero"),
            )),
        }
    }

    /// The URL if SNS may name it: https, on an allowed host, on the port the host's pattern
    /// names (`localhost:8443`), else the default one.
    pub fn allowed_url(&self, url: &str) -> Result<reqwest::Url, String> {
        let parsed = reqwest::Url::parse(url).map_err(|_| format!("{url:?} is not a URL"))?;
        let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
        let at = match parsed.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        };
        if parsed.scheme() != "https" || !self.hosts.iter().any(|pattern| host_matches(pattern, &at)) {
            return Err(format!("{url:?} is not an https URL on an allowed SNS host and port"));
        }
        Ok(parsed)
    }

    /// A `SigningCertURL` if SNS may name it: an allowed URL whose path is SNS's own form,
    /// `/SimpleNotificationService-<hex>.pem`, with no query.
    pub fn certificate_url(&self, url: &str) -> Result<reqwest::Url, String> {
        let parsed = self.allowed_url(url)?;
        let file =
            parsed.path().strip_prefix("/SimpleNotificationService-").and_then(|f| f.strip_suffix(".pem"));
        if !file.is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_hexdigit()))
            || parsed.query().is_some()
        {
            return Err(format!("{url:?} is not an SNS signing certificate's address"));
        }
        Ok(parsed)
    }

    /// Checks the topic, the time and the signature.
    pub async fn verify(&self, message: &Message) -> Result<(), String> {
        if !self.topics.iter().any(|t| t == &message.topic_arn) {
            return Err(format!("the topic {} is not one of [webhooks] sns_topic_arns", message.topic_arn));
        }
        fresh(&message.timestamp, crate::clock::now_ms())?;
        let url = self.certificate_url(&message.signing_cert_url)?;
        let pem = self.certificate(url).await?;
        let signature =
            STANDARD.decode(message.signature.trim()).map_err(|_| "the signature is not base64")?;
        verify_signature(&pem, &message.signature_version, message.string_to_sign().as_bytes(), &signature)
    }

    /// Confirms a subscription by visiting its `SubscribeURL` (held to the same host rule).
    pub async fn confirm(&self, message: &Message) -> Result<(), String> {
        let url = self.allowed_url(message.subscribe_url.as_deref().unwrap_or_default())?;
        let answer = self.client.get(url).send().await.map_err(|e| format!("confirming: {e}"))?;
        if !answer.status().is_success() {
            return Err(format!("confirming: SNS answered {}", answer.status()));
        }
        Ok(())
    }

    async fn certificate(&self, url: reqwest::Url) -> Result<Arc<Vec<u8>>, String> {
        let key = url.to_string();
        if let Some(pem) = self.certs.lock().map_err(|_| "certificate cache poisoned")?.get(&key) {
            return Ok(pem.clone());
        }
        if self.fetches.check().is_err() {
            return Err(format!(
                "more than {FETCHES_PER_MINUTE} signing certificates asked for in a minute; SNS will retry"
            ));
        }
        let mut answer =
            self.client.get(url).send().await.map_err(|e| format!("fetching the certificate: {e}"))?;
        if !answer.status().is_success() {
            return Err(format!("fetching the certificate: {}", answer.status()));
        }
        let mut pem = Vec::new();
        while let Some(chunk) = answer.chunk().await.map_err(|e| e.to_string())? {
            pem.extend_from_slice(&chunk);
            if pem.len() > MAX_CERT_BYTES {
                return Err("the certificate file is too large".into());
            }
        }
        let pem = Arc::new(pem);
        let mut certs = self.certs.lock().map_err(|_| "certificate cache poisoned")?;
        if certs.len() >= MAX_CERTS {
            certs.clear();
        }
        certs.insert(key, pem.clone());
        Ok(pem)
    }
}

/// Whether a message's `Timestamp` is within [`MAX_AGE_MS`] of `now`, either way.
pub fn fresh(timestamp: &str, now: i64) -> Result<(), String> {
    match crate::clock::parse_date(timestamp) {
        Some((at, true)) if (now - at).abs() <= MAX_AGE_MS => Ok(()),
        Some((_, true)) => Err(format!("the message's Timestamp {timestamp} is more than an hour from now")),
        _ => Err(format!("the message's Timestamp {timestamp:?} is not an ISO 8601 time")),
    }
}

/// Whether `host` matches `pattern`, where `*` is exactly one DNS label.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let (p, h): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), host.split('.').collect());
    p.len() == h.len() && p.iter().zip(&h).all(|(p, h)| (*p == "*" && !h.is_empty()) || p == h)
}

/// RSA PKCS#1 v1.5 with SHA-1 (version 1) or SHA-256 (version 2), checked against the key of
/// the PEM certificate.
pub fn verify_signature(pem: &[u8], version: &str, message: &[u8], signature: &[u8]) -> Result<(), String> {
    let algorithm: &dyn SignatureVerificationAlgorithm = match version {
        "1" => &RsaPkcs1(&aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY),
        "2" => &RsaPkcs1(&aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256),
        other => return Err(format!("unknown SignatureVersion {other:?}")),
    };
    let der = CertificateDer::from_pem_slice(pem)
        .map_err(|_| "the signing certificate is not a PEM certificate")?;
    let cert = webpki::EndEntityCert::try_from(&der).map_err(|e| format!("the signing certificate: {e}"))?;
    cert.verify_signature(algorithm, message, signature)
        .map_err(|_| "the signature does not verify".to_string())
}

/// RSA PKCS#1 v1.5 verification for webpki, SHA-1 included: SNS's version 1 signatures use it,
/// and webpki offers no SHA-1 algorithm of its own.
#[derive(Debug)]
struct RsaPkcs1(&'static aws_lc_rs::signature::RsaParameters);

impl SignatureVerificationAlgorithm for RsaPkcs1 {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        aws_lc_rs::signature::UnparsedPublicKey::new(self.0, public_key)
            .verify(message, signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_ENCRYPTION
    }

    /// Not consulted when verifying with a certificate's key (only the key's algorithm is).
    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_PKCS1_SHA256
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hosts_match_one_label_per_star() {
        assert!(host_matches("sns.*.amazonaws.com", "sns.eu-west-1.amazonaws.com"));
        assert!(!host_matches("sns.*.amazonaws.com", "sns.amazonaws.com"));
        assert!(!host_matches("sns.*.amazonaws.com", "sns.a.b.amazonaws.com"));
        assert!(!host_matches("sns.*.amazonaws.com", "sns.eu-west-1.amazonaws.com.evil.test"));
        assert!(!host_matches("sns.*.amazonaws.com", "evil-sns.eu-west-1.amazonaws.com"));
        let verifier = Verifier::new(&WebhooksConfig::default());
        assert!(
            verifier
                .allowed_url("https://sns.us-east-1.amazonaws.com/SimpleNotificationService-x.pem")
                .is_ok()
        );
        assert!(verifier.allowed_url("http://sns.us-east-1.amazonaws.com/x.pem").is_err(), "https only");
        assert!(verifier.allowed_url("https://attacker.test/x.pem").is_err());
        assert!(
            verifier.allowed_url("https://sns.us-east-1.amazonaws.com:8443/x.pem").is_err(),
            "the default port"
        );
        assert!(verifier.allowed_url("https://sns.us-east-1.amazonaws.com:443/x.pem").is_ok());
        let cert = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem";
        assert!(verifier.certificate_url(cert).is_ok());
        for not_a_cert in [
            "https://sns.us-east-1.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-zz.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-ab.pem?x=1",
        ] {
            assert!(verifier.certificate_url(not_a_cert).is_err(), "{not_a_cert}");
        }
        let local = Verifier::new(&WebhooksConfig {
            sns_cert_hosts: vec!["localhost:8443".into()],
            ..WebhooksConfig::default()
        });
        assert!(local.allowed_url("https://localhost:8443/x").is_ok());
        assert!(local.allowed_url("https://localhost/x").is_err(), "a pattern's port is the only one");
        assert!(local.allowed_url("https://localhost:8444/x").is_err());
    }

    #[test]
    fn a_message_is_fresh_within_an_hour_either_way() {
        let now = crate::clock::parse_date("2026-11-24T12:00:00.000Z").unwrap().0;
        assert!(fresh("2026-11-24T11:30:00.000Z", now).is_ok());
        assert!(fresh("2026-11-24T12:59:59.000Z", now).is_ok());
        for stale in [
            "2001-01-01T00:00:00.000Z",
            "2026-11-24T10:59:59.000Z",
            "2026-11-24T13:00:01.000Z",
            "2026-11-24",
            "soon",
        ] {
            assert!(fresh(stale, now).is_err(), "{stale}");
        }
    }

    #[test]
    fn the_string_to_sign_follows_the_type() {
        let notification = Message::parse(&json!({
            "Type": "Notification", "MessageId": "m1", "TopicArn": "arn:t", "Subject": "s", "Message": "hello",
            "Timestamp": "2026-01-01T00:00:00.000Z", "SignatureVersion": "1", "Signature": "x", "SigningCertURL": "u",
        }))
        .unwrap();
        assert_eq!(
            notification.string_to_sign(),
            "Message\nhello\nMessageId\nm1\nSubject\ns\nTimestamp\n2026-01-01T00:00:00.000Z\nTopicArn\narn:t\nType\nNotification\n"
        );
        let confirmation = Message::parse(&json!({
            "Type": "SubscriptionConfirmation", "MessageId": "m2", "TopicArn": "arn:t", "Message": "confirm",
            "Token": "tok", "SubscribeURL": "https://sns/confirm", "Timestamp": "t", "SignatureVersion": "2",
            "Signature": "x", "SigningCertURL": "u",
        }))
        .unwrap();
        assert_eq!(
            confirmation.string_to_sign(),
            "Message\nconfirm\nMessageId\nm2\nSubscribeURL\nhttps://sns/confirm\nTimestamp\nt\nToken\ntok\nTopicArn\narn:t\nType\nSubscriptionConfirmation\n"
        );
        assert!(Message::parse(&json!({ "Type": "Other" })).is_err());
        assert!(Message::parse(&json!({ "Type": "Notification" })).unwrap_err().contains("MessageId"));
    }
}
