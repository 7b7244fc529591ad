//! Links put in mail: HMAC-signed tokens for the open pixel, click redirects and the
//! unsubscribe, subscribe and manage pages (appliance.md section 8), and the rewriting of an HTML
//! body's links for click tracking.
//!
//! A token is `base64url(payload).base64url(HMAC-SHA256(link secret, payload))`; nothing in it
//! can be guessed or altered without the secret, and a bad token is simply not found.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Open {
        email: String,
    },
    Click {
        email: String,
        url: String,
    },
    /// `email`: the message the link came in, when it should be credited with the unsubscribe
    /// (campaign mail counts its unsubscribes).
    Unsubscribe {
        contact: String,
        email: Option<String>,
    },
    Subscribe {
        contact: String,
    },
    Manage {
        contact: String,
    },
    /// A request for a subscription with confirmation (double opt-in), by its id.
    Confirm {
        confirmation: String,
    },
    /// The web version of a campaign as `contact` got it (`contact` empty: sent to an address
    /// without one, such as a test).
    View {
        campaign: String,
        contact: String,
    },
}

impl Link {
    fn payload(&self) -> String {
        match self {
            Link::Open { email } => format!("o\n{email}"),
            Link::Click { email, url } => format!("c\n{email}\n{url}"),
            Link::Unsubscribe { contact, email: None } => format!("u\n{contact}"),
            Link::Unsubscribe { contact, email: Some(email) } => format!("u\n{contact}\n{email}"),
            Link::Subscribe { contact } => format!("s\n{contact}"),
            Link::Manage { contact } => format!("m\n{contact}"),
            Link::Confirm { confirmation } => format!("k\n{confirmation}"),
            Link::View { campaign, contact } => format!("v\n{campaign}\n{contact}"),
        }
    }

    fn from_payload(payload: &str) -> Option<Link> {
        let mut parts = payload.splitn(3, '\n');
        let (kind, id) = (parts.next()?, parts.next()?.to_string());
        Some(match (kind, parts.next()) {
            ("o", None) => Link::Open { email: id },
            ("c", Some(url)) => Link::Click { email: id, url: url.to_string() },
            ("u", None) => Link::Unsubscribe { contact: id, email: None },
            ("u", Some(email)) => Link::Unsubscribe { contact: id, email: Some(email.to_string()) },
            ("s", None) => Link::Subscribe { contact: id },
            ("m", None) => Link::Manage { contact: id },
            ("k", None) => Link::Confirm { confirmation: id },
            ("v", Some(contact)) => Link::View { campaign: id, contact: contact.to_string() },
            _ => return None,
        })
    }

    /// The path under `public_url` that serves this link, up to its token.
    fn path(&self) -> String {
        match self {
            Link::Open { .. } => "/t/o/".into(),
            Link::Click { .. } => "/t/c/".into(),
            Link::Unsubscribe { .. } => "/unsubscribe/".into(),
            Link::Subscribe { .. } => "/subscribe/".into(),
            Link::Manage { .. } => "/manage/".into(),
            Link::Confirm { .. } => "/confirm/".into(),
            Link::View { campaign, .. } => format!("/c/{campaign}/"),
        }
    }
}

fn mac(secret: &str, payload: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(payload);
    mac
}

/// The signed token for a link.
pub fn token(secret: &str, link: &Link) -> String {
    let payload = link.payload();
    let signature = mac(secret, payload.as_bytes()).finalize().into_bytes();
    format!("{}.{}", URL_SAFE_NO_PAD.encode(payload), URL_SAFE_NO_PAD.encode(signature))
}

/// The link a token stands for, if its signature holds.
pub fn verify(secret: &str, token: &str) -> Option<Link> {
    let (payload, signature) = token.split_once('.')?;
    let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    mac(secret, &payload).verify_slice(&signature).ok()?;
    Link::from_payload(std::str::from_utf8(&payload).ok()?)
}

/// The full URL of a link under `public_url`.
pub fn url(public_url: &str, secret: &str, link: &Link) -> String {
    format!("{public_url}{}{}", link.path(), token(secret, link))
}

/// The per-contact links every message can use, as template variables; `email` is the message
/// they go in, when its unsubscribes are counted (campaign mail), and `campaign` the campaign
/// whose web version `viewInBrowserUrl` opens (empty in other mail).
pub fn contact_links(
    public_url: &str,
    secret: &str,
    contact: &str,
    (email, campaign): (Option<&str>, Option<&str>),
) -> Vec<(&'static str, String)> {
    let unsubscribe = Link::Unsubscribe { contact: contact.into(), email: email.map(str::to_string) };
    let view = campaign
        .map(|c| url(public_url, secret, &Link::View { campaign: c.into(), contact: contact.into() }));
    vec![
        ("unsubscribeUrl", url(public_url, secret, &unsubscribe)),
        ("subscribeUrl", url(public_url, secret, &Link::Subscribe { contact: contact.into() })),
        ("manageUrl", url(public_url, secret, &Link::Manage { contact: contact.into() })),
        ("viewInBrowserUrl", view.unwrap_or_default()),
    ]
}

/// The links of a copy rendered for no one (the public archive): no personal page to point
/// to, and `viewInBrowserUrl` the copy's own address.
pub fn impersonal_links(page: &str) -> Vec<(&'static str, String)> {
    vec![
        ("unsubscribeUrl", String::new()),
        ("subscribeUrl", String::new()),
        ("manageUrl", String::new()),
        ("viewInBrowserUrl", page.to_string()),
    ]
}

fn decode_entities(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Escapes text for HTML content and attribute values.
pub fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Rewrites the `href` of every `<a>` whose target is an http(s) URL outside `public_url` to go
/// through the click redirect of `email`.
pub fn track_clicks(html: &str, public_url: &str, secret: &str, email: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut out = String::with_capacity(html.len() + 256);
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find("<a") {
        let tag_start = search + found;
        search = tag_start + 2;
        if !lower[search..].starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let Some(tag_len) = lower[tag_start..].find('>') else { break };
        let tag_end = tag_start + tag_len;
        // A link its author asked to leave alone (`data-notrack`, or SendGrid's and
        // Postmark's `clicktracking="off"`).
        let tag = &lower[tag_start..tag_end];
        if tag.contains("data-notrack") || tag.replace(['"', '\'', ' '], "").contains("clicktracking=off") {
            continue;
        }
        let Some((value_start, value_end)) = href_value(&lower[tag_start..tag_end]) else { continue };
        let (value_start, value_end) = (tag_start + value_start, tag_start + value_end);
        let target = decode_entities(html[value_start..value_end].trim());
        let lowered = target.to_ascii_lowercase();
        if !(lowered.starts_with("http://") || lowered.starts_with("https://"))
            || target.starts_with(public_url)
        {
            continue;
        }
        let tracked = url(public_url, secret, &Link::Click { email: email.into(), url: target });
        out.push_str(&html[copied..value_start]);
        out.push_str(&escape_html(&tracked));
        copied = value_end;
        search = tag_end;
    }
    out.push_str(&html[copied..]);
    out
}

/// The byte range of the `href` value inside an `<a ...` tag (already lowercased).
fn href_value(tag: &str) -> Option<(usize, usize)> {
    let mut at = 0;
    while let Some(found) = tag[at..].find("href") {
        let start = at + found;
        at = start + 4;
        let before_ok = tag[..start].ends_with(|c: char| c.is_ascii_whitespace());
        let rest = tag[at..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let value = rest[1..].trim_start();
        let offset = tag.len() - value.len();
        return match value.chars().next()? {
            quote @ ('"' | '\'') => {
                let end = value[1..].find(quote)?;
                Some((offset + 1, offset + 1 + end))
            }
            _ => {
                let end = value.find(|c: char| c.is_ascii_whitespace() || c == '>').unwrap_or(value.len());
                Some((offset, offset + end))
            }
        };
    }
    None
}

/// Adds the open pixel before `</body>` (or at the end).
pub fn add_open_pixel(html: &str, public_url: &str, secret: &str, email: &str) -> String {
    let pixel = format!(
        "<img src=\"{}\" width=\"1\" height=\"1\" alt=\"\" style=\"display:none;border:0\">",
        escape_html(&url(public_url, secret, &Link::Open { email: email.into() }))
    );
    match html.to_ascii_lowercase().rfind("</body>") {
        Some(at) => format!("{}{pixel}{}", &html[..at], &html[at..]),
        None => format!("{html}{pixel}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "a secret of some length";

    #[test]
    fn tokens_round_trip_and_refuse_tampering() {
        for link in [
            Link::Open { email: "e1".into() },
            Link::Click { email: "e1".into(), url: "https://example.com/a?b=c\nd".into() },
            Link::Unsubscribe { contact: "c1".into(), email: None },
            Link::Unsubscribe { contact: "c1".into(), email: Some("e1".into()) },
            Link::Subscribe { contact: "c1".into() },
            Link::Manage { contact: "c1".into() },
            Link::Confirm { confirmation: "k1".into() },
            Link::View { campaign: "c1".into(), contact: "p1".into() },
            Link::View { campaign: "c1".into(), contact: String::new() },
        ] {
            let t = token(SECRET, &link);
            assert_eq!(verify(SECRET, &t), Some(link.clone()));
            assert_eq!(verify("another secret", &t), None);
            let (payload, sig) = t.split_once('.').unwrap();
            let forged = format!("{}.{sig}", URL_SAFE_NO_PAD.encode("u\nsomeone-else"));
            assert_eq!(verify(SECRET, &forged), None);
            assert_eq!(verify(SECRET, &format!("{payload}.{}", &sig[1..])), None);
        }
        assert_eq!(verify(SECRET, "garbage"), None);
        assert_eq!(verify(SECRET, ""), None);
    }

    #[test]
    fn links_are_rewritten_but_not_ours_or_other_schemes() {
        let html = r#"<p><a href="https://example.com/x?a=1&amp;b=2">x</a> <A class='c' HREF='http://example.org'>y</A>
            <a href="mailto:a@b.co">m</a> <a href="https://t.example/unsubscribe/tok">u</a> <abbr>z</abbr> <a name=top>t</a></p>"#;
        let out = track_clicks(html, "https://t.example", SECRET, "e1");
        assert!(!out.contains("https://example.com/x"), "{out}");
        assert!(out.contains("href=\"mailto:a@b.co\""));
        assert!(out.contains("https://t.example/unsubscribe/tok"));
        assert!(out.contains("<abbr>z</abbr>") && out.contains("<a name=top>"));
        let tracked: Vec<&str> = out
            .split("https://t.example/t/c/")
            .skip(1)
            .map(|s| s.split(['"', '\'']).next().unwrap())
            .collect();
        assert_eq!(tracked.len(), 2);
        assert_eq!(
            verify(SECRET, tracked[0]),
            Some(Link::Click { email: "e1".into(), url: "https://example.com/x?a=1&b=2".into() })
        );
        assert_eq!(
            verify(SECRET, tracked[1]),
            Some(Link::Click { email: "e1".into(), url: "http://example.org".into() })
        );
    }

    #[test]
    fn the_pixel_goes_before_the_body_end() {
        let out = add_open_pixel("<html><body>Hi</body></html>", "https://t.example", SECRET, "e1");
        assert!(out.contains("Hi<img src=\"https://t.example/t/o/"), "{out}");
        assert!(out.ends_with("</body></html>"));
        assert!(add_open_pixel("Hi", "https://t.example", SECRET, "e1").starts_with("Hi<img"));
    }
}
