//! DKIM signing with mail-auth on aws-lc-rs: RSA-SHA256, relaxed/relaxed canonicalization, constant-time
//! signing (the `rsa` crate that lettre's `dkim` feature uses carries a timing advisory,
//! RUSTSEC-2023-0071). Signers are parsed once per key and cached by the key's digest.
//!
//! mail-auth canonicalizes the headers and body, hashes and signs; the `DKIM-Signature` header
//! itself is written here in the most conservative form verifiers agree on: `b=` last, nothing
//! after its value (no trailing `;`, no folding whitespace). mail-auth's own header ends in `;`
//! and can fold right before it, which Python's dkimpy (dkimpy-milter and others) fails, while
//! mail-auth, Mail::DKIM and Node's mailauth pass it. Since the signature covers this header with
//! an empty `b=`, the header is canonicalized (by mail-auth) from exactly the text that is sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mail_auth::common::crypto::{RsaKey, Sha256, SigningKey};
use mail_auth::common::headers::{HeaderStream, Writable, Writer};
use mail_auth::dkim::canonicalize::CanonicalHeaders;
use mail_auth::dkim::{Canonicalization, DkimSigner, Done};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::Digest;

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

/// How long a folded line of the signature may be.
const LINE: usize = 72;

type Signer = DkimSigner<RsaKey<Sha256>, Done>;

/// Parsed signers by the SHA-256 of (domain, selector, key): a domain deleted and added again
/// has a new key, and so a new signer.
#[derive(Default, Clone)]
pub struct Signers {
    cache: Arc<Mutex<HashMap<[u8; 32], Arc<Signer>>>>,
}

/// What the signature signs: the canonical signed headers, then the canonical `DKIM-Signature`
/// header with an empty `b=` and no line break at its end (RFC 6376 §3.7).
struct SignedData<'a> {
    headers: CanonicalHeaders<'a>,
    signature_header: &'a [u8],
}

impl Writable for SignedData<'_> {
    fn write(self, writer: &mut impl Writer) {
        self.headers.write(writer);
        writer.write(self.signature_header);
    }
}

/// The header fields and body of a message we built (lettre writes CRLF line ends and folds with
/// leading whitespace), as mail-auth's canonicalization reads them: each field's name, and its
/// value after the colon up to and including its final CRLF. mail-auth's own reader is private
/// to the crate; its trait is public.
struct Fields<'a> {
    message: &'a [u8],
    pos: usize,
    body: usize,
}

impl<'a> Fields<'a> {
    fn new(message: &'a [u8]) -> Self {
        let body = memchr::memmem::find(message, b"\r\n\r\n").map_or(message.len(), |at| at + 4);
        Fields { message, pos: 0, body }
    }
}

impl<'a> HeaderStream<'a> for Fields<'a> {
    fn next_header(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        let header_end = self.body.saturating_sub(2);
        if self.pos >= header_end {
            return None;
        }
        let start = self.pos;
        let mut end = start;
        // A field ends at a CRLF that is not followed by folding whitespace.
        while let Some(at) = memchr::memmem::find(&self.message[end..header_end], b"\r\n") {
            end += at + 2;
            if !matches!(self.message.get(end), Some(b' ' | b'\t')) {
                break;
            }
        }
        if end == start {
            end = header_end;
        }
        self.pos = end;
        let field = &self.message[start..end];
        let colon = memchr::memchr(b':', field)?;
        Some((&field[..colon], &field[colon + 1..]))
    }

    fn body(&mut self) -> &'a [u8] {
        &self.message[self.body.min(self.message.len())..]
    }
}

impl Signers {
    fn signer(&self, domain: &str, selector: &str, pem: &str) -> Result<Arc<Signer>, String> {
        let mut hasher = sha2::Sha256::new();
        for part in [domain, selector, pem] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        let cache_key: [u8; 32] = hasher.finalize().into();
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
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.sign_at(domain, selector, pem, message, now)
    }

    fn sign_at(
        &self,
        domain: &str,
        selector: &str,
        pem: &str,
        message: &[u8],
        now: u64,
    ) -> Result<Vec<u8>, String> {
        let signer = self.signer(domain, selector, pem)?;
        let (_, headers, signed, body) = signer.template.canonicalize(Fields::new(message));
        if signed.is_empty() {
            return Err("DKIM signing: the message has none of the signed headers".into());
        }
        let body_hash = STANDARD.encode(signer.key.hash(body).as_ref());
        // In mail-auth's order (the canonical headers are written in the same order).
        let names = fold_list("h=", &signed);
        // Everything but the signature itself; `b=` is last and empty here.
        let unsigned = format!(
            " v=1; a=rsa-sha256; c=relaxed/relaxed;\r\n\td={domain}; s={selector}; t={now};\r\n\t{names}\r\n\tbh={body_hash};\r\n\tb="
        );
        let mut canonical = Vec::with_capacity(unsigned.len());
        Canonicalization::Relaxed.canonicalize_headers(
            std::iter::once((&b"DKIM-Signature"[..], unsigned.as_bytes())),
            &mut canonical,
        );
        let signature = signer
            .key
            .sign(SignedData { headers, signature_header: &canonical })
            .map_err(|e| format!("DKIM signing: {e}"))?;
        let b = fold(&STANDARD.encode(signature), "\t");
        let mut signed_message = Vec::with_capacity(unsigned.len() + b.len() + message.len() + 32);
        signed_message.extend_from_slice(b"DKIM-Signature:");
        signed_message.extend_from_slice(unsigned.as_bytes());
        signed_message.extend_from_slice(b.as_bytes());
        signed_message.extend_from_slice(b"\r\n");
        signed_message.extend_from_slice(message);
        Ok(signed_message)
    }
}

/// `tag` and the names separated by `:`, ending in `;`, folded only between names (whitespace
/// inside a name would change it).
fn fold_list(tag: &str, names: &[String]) -> String {
    let mut out = String::from(tag);
    let mut line = tag.len();
    for (n, name) in names.iter().enumerate() {
        if n > 0 {
            if line + name.len() + 2 > LINE {
                out.push_str("\r\n\t");
                line = 1;
            }
            out.push(':');
            line += 1;
        }
        out.push_str(name);
        line += name.len();
    }
    out.push(';');
    out
}

/// Breaks `text` (no spaces of its own) into lines of at most [`LINE`] characters, each after
/// the first starting with `indent`.
fn fold(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / LINE * 3);
    for (n, chunk) in text.as_bytes().chunks(LINE).enumerate() {
        if n > 0 {
            out.push_str("\r\n");
            out.push_str(indent);
        }
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
    }
    out
}

/// DKIM keys are RSA-2048: what every receiver accepts and a DNS TXT record holds.
const KEY_SIZE: aws_lc_rs::rsa::KeySize = aws_lc_rs::rsa::KeySize::Rsa2048;

/// A new DKIM key pair: the private key as PKCS#8 PEM and the public key as base64 DER
/// (SubjectPublicKeyInfo), the form DKIM's `p=` takes. Made by aws-lc-rs, the library that signs
/// with it (this module); still tens of milliseconds, so run it on a blocking thread. A project
/// may have at most `[limits] domains_per_project` of them.
pub fn generate_key() -> Result<(String, String), String> {
    use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
    use aws_lc_rs::signature::KeyPair as _;
    let pair = aws_lc_rs::rsa::KeyPair::generate(KEY_SIZE).map_err(|e| format!("DKIM key: {e}"))?;
    let private: Pkcs8V1Der = pair.as_der().map_err(|e| format!("DKIM key: {e}"))?;
    let public: PublicKeyX509Der = pair.public_key().as_der().map_err(|e| format!("DKIM key: {e}"))?;
    Ok((pem("PRIVATE KEY", private.as_ref()), STANDARD.encode(public.as_ref())))
}

/// DER bytes as PEM: base64 in lines of 64 between the labelled armour.
fn pem(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &[u8] = b"From: a@example.test\r\nTo: b@example.test\r\nSubject: Hi\r\n\r\nHello\r\n";

    #[test]
    fn the_header_ends_with_the_signature() {
        let (pem, _) = generate_key().unwrap();
        let signed =
            Signers::default().sign_at("example.test", "tidings", &pem, MESSAGE, 1_700_000_000).unwrap();
        let text = String::from_utf8(signed).unwrap();
        let header = text.split("\r\nFrom:").next().unwrap();
        assert!(header.starts_with(
            "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed;\r\n\td=example.test; s=tidings; t=1700000000;"
        ));
        let names: String =
            header.split("h=").nth(1).unwrap().split(';').next().unwrap().split_whitespace().collect();
        assert_eq!(
            names,
            "Subject:To:From:Date:Message-ID:Reply-To:MIME-Version:Content-Type:List-Unsubscribe:List-Unsubscribe-Post"
        );
        let b = header.rsplit_once("b=").unwrap().1;
        assert!(!b.ends_with(';') && !b.ends_with(char::is_whitespace), "nothing after the signature: {b:?}");
        assert!(header.lines().all(|l| l.len() <= 80), "{header}");
        assert!(text.ends_with("\r\n\r\nHello\r\n"));
    }

    #[test]
    fn fields_are_read_with_their_folded_lines() {
        let message = b"From: a@x\r\nSubject: one\r\n two\r\nTo: b@x\r\n\r\nBody\r\n";
        let mut fields = Fields::new(message);
        assert_eq!(fields.next_header(), Some((&b"From"[..], &b" a@x\r\n"[..])));
        assert_eq!(fields.next_header(), Some((&b"Subject"[..], &b" one\r\n two\r\n"[..])));
        assert_eq!(fields.next_header(), Some((&b"To"[..], &b" b@x\r\n"[..])));
        assert_eq!(fields.next_header(), None);
        assert_eq!(fields.body(), b"Body\r\n");
    }

    #[test]
    fn a_new_key_for_the_same_domain_signs_with_the_new_key() {
        let signers = Signers::default();
        // Two keys of the same PEM length (most are; the encoding varies by a byte now and then),
        // the case the cache got wrong when it was keyed by the length.
        // Keys are drawn until two share a length: the first may be one of the rare lengths, and
        // there are far fewer lengths than draws, so a pair always turns up.
        let mut by_length = std::collections::HashMap::new();
        let (old, new) = (0..64)
            .find_map(|_| {
                let key = generate_key().unwrap().0;
                by_length.insert(key.len(), key.clone()).map(|earlier| (earlier, key))
            })
            .expect("two keys of the same length");
        let a = signers.signer("example.test", "tidings", &old).unwrap();
        let b = signers.signer("example.test", "tidings", &new).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(&a, &signers.signer("example.test", "tidings", &old).unwrap()));
    }
}
