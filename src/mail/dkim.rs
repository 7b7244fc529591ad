//! DKIM signing with mail-auth on ring: RSA-SHA256, relaxed/relaxed canonicalization, constant-time
//! signing (the `rsa` crate that lettre's `dkim` feature uses carries a timing advisory,
//! RUSTSEC-2023-0071). Signers are parsed once per domain key and cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mail_auth::common::crypto::{RsaKey, Sha256};
use mail_auth::common::headers::HeaderWriter;
use mail_auth::dkim::{Canonicalization, DkimSigner, Done};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Headers covered by the signature (absent ones are signed as absent).
pub const SIGNED_HEADERS: &[&str] = &[
    "From",
    "To",
    "Subject",
    "Date",
    "Message-ID",
    "Reply-To",
    "MIME-Version",
    "Content-Type",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

type Signer = DkimSigner<RsaKey<Sha256>, Done>;

/// Parsed signers by (domain, selector, key).
#[derive(Default, Clone)]
pub struct Signers {
    cache: Arc<Mutex<HashMap<String, Arc<Signer>>>>,
}

impl Signers {
    fn signer(&self, domain: &str, selector: &str, pem: &str) -> Result<Arc<Signer>, String> {
        let cache_key = format!("{domain}\n{selector}\n{}", pem.len());
        if let Some(signer) = self.cache.lock().ok().and_then(|c| c.get(&cache_key).cloned()) {
            return Ok(signer);
        }
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| format!("DKIM key: {e}"))?;
        let key = RsaKey::<Sha256>::from_key_der(PrivateKeyDer::Pkcs8(der))
            .map_err(|e| format!("DKIM key: {e}"))?;
        let signer = Arc::new(
            DkimSigner::from_key(key)
                .domain(domain)
                .selector(selector)
                .headers(SIGNED_HEADERS.iter().copied())
                .header_canonicalization(Canonicalization::Relaxed)
                .body_canonicalization(Canonicalization::Relaxed),
        );
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() > 1024 {
                cache.clear();
            }
            cache.insert(cache_key, signer.clone());
        }
        Ok(signer)
    }

    /// The message with a `DKIM-Signature` header in front.
    pub fn sign(&self, domain: &str, selector: &str, pem: &str, message: &[u8]) -> Result<Vec<u8>, String> {
        let signature =
            self.signer(domain, selector, pem)?.sign(message).map_err(|e| format!("DKIM signing: {e}"))?;
        let header = signature.to_header();
        let mut signed = Vec::with_capacity(header.len() + message.len());
        signed.extend_from_slice(header.as_bytes());
        signed.extend_from_slice(message);
        Ok(signed)
    }
}
