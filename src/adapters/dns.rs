//! DNS lookups for domain verification and email checks, over hickory-resolver with the
//! nameservers of `[dns]` (the system's when none are set).
//!
//! Every answer says which of four things happened: records were found, the name exists but has
//! none of that type, the name does not exist (NXDOMAIN), or the lookup failed (timeout,
//! SERVFAIL, refused, no server reachable). Answers are cached by the resolver for their TTL, so
//! a burst of checks of one domain makes one query; domain verification asks [`Dns::fresh`] to
//! forget the cached answer first.

use std::net::IpAddr;
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{RData, RecordType};

use crate::config::DnsConfig;

/// Why a lookup gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Timeout,
    ServFail,
    Refused,
    /// Anything else (no server reachable, malformed answer, ...), described.
    Other(String),
}

impl Failure {
    /// A short phrase for reasons shown to users.
    pub fn describe(&self) -> String {
        match self {
            Failure::Timeout => "the DNS lookup timed out".into(),
            Failure::ServFail => "the DNS server failed to answer (SERVFAIL)".into(),
            Failure::Refused => "the DNS server refused the query".into(),
            Failure::Other(what) => format!("the DNS lookup failed ({what})"),
        }
    }

    /// The short code stored and shown on records (`timeout`, `servfail`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            Failure::Timeout => "timeout",
            Failure::ServFail => "servfail",
            Failure::Refused => "refused",
            Failure::Other(_) => "error",
        }
    }
}

/// The outcome of one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    Found(Vec<T>),
    /// The name exists but has no records of the type asked.
    NoData,
    /// The name does not exist.
    NxDomain,
    Failed(Failure),
}

impl<T> Answer<T> {
    /// The records, or none whatever the reason.
    pub fn records(&self) -> &[T] {
        match self {
            Answer::Found(records) => records,
            _ => &[],
        }
    }

    /// Whether DNS said something definite (found, no data, no such name).
    pub fn is_definite(&self) -> bool {
        !matches!(self, Answer::Failed(_))
    }

    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Answer::Failed(failure) => Some(failure),
            _ => None,
        }
    }
}

/// An MX record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mx {
    pub preference: u16,
    /// The exchange host without the trailing dot; empty for a null MX (RFC 7505).
    pub exchange: String,
}

impl Mx {
    /// `MX 0 .`: the domain accepts no mail.
    pub fn is_null(&self) -> bool {
        self.exchange.is_empty()
    }
}

/// The resolver, shared by the app (cheap to clone).
#[derive(Clone)]
pub struct Dns {
    resolver: TokioResolver,
}

impl Dns {
    /// A resolver for `[dns]`: its nameservers over UDP with TCP fallback, or the system's.
    pub fn new(config: &DnsConfig) -> Dns {
        let mut options = ResolverOpts::default();
        options.timeout = Duration::from_millis(config.timeout_ms.into());
        options.attempts = 2;
        options.cache_size = 4096;
        options.use_hosts_file = ResolveHosts::Never;
        options.ndots = 0;
        let provider = TokioRuntimeProvider::default();
        let builder = if config.nameservers.is_empty() {
            match TokioResolver::builder_tokio() {
                Ok(builder) => builder,
                Err(e) => {
                    tracing::warn!(
                        "cannot read the system's DNS configuration ({e}); DNS lookups will fail until [dns] nameservers is set"
                    );
                    TokioResolver::builder_with_config(
                        ResolverConfig::from_parts(None, vec![], vec![]),
                        provider,
                    )
                }
            }
        } else {
            let servers = config
                .nameservers
                .iter()
                .map(|addr| {
                    let mut udp = ConnectionConfig::udp();
                    udp.port = addr.port();
                    let mut tcp = ConnectionConfig::tcp();
                    tcp.port = addr.port();
                    let mut server = NameServerConfig::udp_and_tcp(addr.ip());
                    server.connections = vec![udp, tcp];
                    server
                })
                .collect();
            TokioResolver::builder_with_config(ResolverConfig::from_parts(None, vec![], servers), provider)
        };
        let mut builder = builder;
        *builder.options_mut() = options;
        let resolver = builder.build().unwrap_or_else(|e| {
            tracing::warn!("cannot build the DNS resolver ({e}); DNS lookups will fail");
            TokioResolver::builder_with_config(
                ResolverConfig::from_parts(None, vec![], vec![]),
                TokioRuntimeProvider::default(),
            )
            .build()
            .expect("an empty resolver always builds")
        });
        Dns { resolver }
    }

    /// SPF, DKIM and DMARC checks of received mail through this resolver (and its cache).
    pub fn authenticator(&self) -> mail_auth::MessageAuthenticator {
        mail_auth::MessageAuthenticator(self.resolver.clone())
    }

    /// Forgets cached answers for `name` of these types, so the next lookups ask the server.
    pub fn fresh(&self, name: &str, types: &[RecordType]) {
        for record_type in types {
            self.resolver.clear_lookup_cache(fqdn(name), *record_type);
        }
    }

    async fn lookup<T>(
        &self,
        name: &str,
        record_type: RecordType,
        pick: impl Fn(&RData) -> Option<T>,
    ) -> Answer<T> {
        match self.resolver.lookup(fqdn(name), record_type).await {
            Ok(lookup) => {
                let records: Vec<T> = lookup.answers().iter().filter_map(|r| pick(&r.data)).collect();
                if records.is_empty() { Answer::NoData } else { Answer::Found(records) }
            }
            Err(e) => classify(&e),
        }
    }

    /// TXT records, each one's strings joined.
    pub async fn txt(&self, name: &str) -> Answer<String> {
        self.lookup(name, RecordType::TXT, |data| match data {
            RData::TXT(txt) => {
                Some(txt.txt_data.iter().map(|part| String::from_utf8_lossy(part)).collect::<String>())
            }
            _ => None,
        })
        .await
    }

    pub async fn mx(&self, name: &str) -> Answer<Mx> {
        self.lookup(name, RecordType::MX, |data| match data {
            RData::MX(mx) => Some(Mx {
                preference: mx.preference,
                exchange: mx.exchange.to_ascii().trim_end_matches('.').to_string(),
            }),
            _ => None,
        })
        .await
    }

    /// A records.
    pub async fn a(&self, name: &str) -> Answer<IpAddr> {
        self.lookup(name, RecordType::A, |data| match data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            _ => None,
        })
        .await
    }

    /// AAAA records.
    pub async fn aaaa(&self, name: &str) -> Answer<IpAddr> {
        self.lookup(name, RecordType::AAAA, |data| match data {
            RData::AAAA(aaaa) => Some(IpAddr::V6(aaaa.0)),
            _ => None,
        })
        .await
    }

    /// CNAME records: the names `name` is an alias of.
    pub async fn cname(&self, name: &str) -> Answer<String> {
        self.lookup(name, RecordType::CNAME, |data| match data {
            RData::CNAME(cname) => Some(cname.0.to_ascii().trim_end_matches('.').to_ascii_lowercase()),
            _ => None,
        })
        .await
    }

    pub async fn ns(&self, name: &str) -> Answer<String> {
        self.lookup(name, RecordType::NS, |data| match data {
            RData::NS(ns) => Some(ns.0.to_ascii().trim_end_matches('.').to_string()),
            _ => None,
        })
        .await
    }
}

fn fqdn(name: &str) -> String {
    if name.ends_with('.') { name.to_string() } else { format!("{name}.") }
}

fn classify<T>(error: &NetError) -> Answer<T> {
    match error {
        NetError::Dns(DnsError::NoRecordsFound(none)) if none.response_code == ResponseCode::NXDomain => {
            Answer::NxDomain
        }
        NetError::Dns(DnsError::NoRecordsFound(_)) => Answer::NoData,
        NetError::Dns(DnsError::ResponseCode(ResponseCode::ServFail)) => Answer::Failed(Failure::ServFail),
        NetError::Dns(DnsError::ResponseCode(ResponseCode::Refused)) => Answer::Failed(Failure::Refused),
        NetError::Timeout => Answer::Failed(Failure::Timeout),
        other => {
            let text = other.to_string();
            if text.contains("timed out") {
                Answer::Failed(Failure::Timeout)
            } else {
                Answer::Failed(Failure::Other(text))
            }
        }
    }
}
