//! Calls this server makes to addresses its users give it (WEBHOOK steps), with the rule of
//! appliance.md §11: private, loopback and link-local addresses are refused unless
//! `[webhooks] allow_private = true`.
//!
//! The rule holds for the address actually connected to: names are resolved by our resolver
//! ([`crate::adapters::dns`]), the refused addresses are dropped from the answer, and the connection can
//! only go to what is left, so a name that answers a public address to a first lookup and
//! 127.0.0.1 to a second (DNS rebinding) gains nothing. Addresses written in the URL are checked
//! before the request; redirects are not followed (a 3xx is an answer like any other) and no
//! proxy from the environment is used.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::adapters::dns::Dns;

/// Most bytes of an answer's body read (the rest is dropped).
const MAX_BODY: usize = 64 * 1024;

/// A request to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// The answer: status and the start of the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// The client; cheap to clone.
#[derive(Clone)]
pub struct Caller {
    client: reqwest::Client,
    allow_private: bool,
    dns: Dns,
}

impl Caller {
    /// A client that resolves through `dns` and gives up on a call after `timeout`.
    pub fn new(dns: Dns, allow_private: bool, timeout: Duration) -> Caller {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(Checked { dns: dns.clone(), allow_private }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("Tidings/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|e| {
                tracing::error!("cannot build the HTTP client ({e}); webhook calls will fail");
                reqwest::Client::new()
            });
        Caller { client, allow_private, dns }
    }

    /// Whether `url` names a host calls may reach, asked when it is saved so a loopback or
    /// private address is refused then rather than on every call: an IP literal or `localhost`
    /// judged as written, a name by the addresses it resolves to now (all refused: refused; a
    /// name that does not resolve yet passes, and every call is checked again anyway).
    pub async fn may_call(&self, url: &str) -> Result<(), String> {
        if self.allow_private {
            return Ok(());
        }
        let Some(host) = reqwest::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)) else {
            return Ok(());
        };
        let lower = host.to_ascii_lowercase();
        if lower == "localhost" || lower.ends_with(".localhost") {
            return Err(refused(&host));
        }
        if let Some(ip) = literal(&host) {
            return if is_public(ip) { Ok(()) } else { Err(refused(&host)) };
        }
        // A slow resolver does not hold the request up: the calls check again.
        let lookup = async { tokio::join!(self.dns.a(&host), self.dns.aaaa(&host)) };
        let Ok((v4, v6)) = tokio::time::timeout(Duration::from_secs(2), lookup).await else { return Ok(()) };
        let found: Vec<IpAddr> = v4.records().iter().chain(v6.records()).copied().collect();
        if !found.is_empty() && !found.iter().any(|ip| is_public(*ip)) {
            return Err(refused(&host));
        }
        Ok(())
    }

    /// Makes the call; an error says why no answer came (refused address, timeout, connection).
    pub async fn call(&self, call: &Call) -> Result<Answer, String> {
        let url = reqwest::Url::parse(&call.url)
            .map_err(|e| format!("the url {:?} is not valid: {e}", call.url))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(format!("the url {:?} is not http or https", call.url));
        }
        let Some(host) = url.host_str() else {
            return Err(format!("the url {:?} names no host", call.url));
        };
        if let Some(ip) = literal(host)
            && !self.allow_private
            && !is_public(ip)
        {
            return Err(refused(&ip.to_string()));
        }
        let method = reqwest::Method::from_bytes(call.method.as_bytes()).map_err(|e| e.to_string())?;
        let mut request = self.client.request(method, url);
        for (name, value) in &call.headers {
            request = request.header(name, value);
        }
        if let Some(body) = &call.body {
            request = request.body(body.clone());
        }
        let mut response = request.send().await.map_err(describe)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while body.len() < MAX_BODY {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk[..chunk.len().min(MAX_BODY - body.len())]),
                Ok(None) => break,
                Err(e) => return Err(describe(e)),
            }
        }
        Ok(Answer { status, body: String::from_utf8_lossy(&body).into_owned() })
    }
}

fn refused(host: &str) -> String {
    format!(
        "{host} is a private, loopback or link-local address, which webhooks may not call \
         (set [webhooks] allow_private = true to allow it)"
    )
}

/// The error and its causes in one line.
fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "no answer within the time limit".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The resolver the client connects through: our DNS, less the refused addresses.
struct Checked {
    dns: Dns,
    allow_private: bool,
}

impl Resolve for Checked {
    fn resolve(&self, name: Name) -> Resolving {
        let dns = self.dns.clone();
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let (v4, v6) = tokio::join!(dns.a(&host), dns.aaaa(&host));
            let found: Vec<IpAddr> = v4.records().iter().chain(v6.records()).copied().collect();
            if found.is_empty() {
                let why = v4.failure().map(|f| f.describe()).unwrap_or_else(|| "no address".into());
                return Err(format!("{host}: {why}").into());
            }
            let usable: Vec<SocketAddr> = found
                .into_iter()
                .filter(|ip| allow_private || is_public(*ip))
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if usable.is_empty() {
                return Err(refused(&host).into());
            }
            let addrs: Addrs = Box::new(usable.into_iter());
            Ok(addrs)
        })
    }
}

/// Whether an address is on the public internet: not private, loopback, link-local, shared
/// (CGNAT), unspecified, multicast, broadcast, reserved or documentation space, in IPv4 or IPv6
/// (IPv4 inside IPv6 judged as IPv4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return is_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || s[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible and the rest of ::/96
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || a >= 240 // reserved
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b))) // benchmarking
}

/// An address from a URL's host text, if it is an address.
pub fn literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_rule() {
        let public = ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"];
        for ip in public {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        let refused = [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::7f00:1",
            "::127.0.0.1",
            "ff02::1",
            "2001:db8::1",
        ];
        for ip in refused {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        assert_eq!(literal("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(literal("example.com"), None);
    }
}
