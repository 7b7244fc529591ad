//! Inbound mail (issue 31): the domains a project receives mail for, the routes that say what
//! becomes of each message, and what receiving one does ([`receive`]).
//!
//! A domain is the project's once its MX names this server and its ownership record
//! (`_tidings-inbound.<domain> TXT tidings-inbound=<token>`) is published: the token is the
//! project's own, so no other project can claim a domain whose MX already points here. Only one
//! project has a domain verified at a time.

pub mod auth;
pub mod receive;
pub mod routes;

use hickory_resolver::proto::rr::RecordType;
use rand::Rng;
use rand::distributions::Alphanumeric;
use serde::{Deserialize, Serialize};

use super::domains::squeeze;
use super::error::{Error, Limit, Result, on_duplicate};
use super::ids::InboundDomainId;
use crate::adapters::dns::{Answer, Dns};
use crate::clock;
use crate::db::Tx;
use crate::db::inbound::{self as rows, Domain};

/// The MX preference suggested.
pub const MX_PRIORITY: u16 = 10;

/// What a record proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// Mail for the domain comes here.
    Mx,
    /// The domain is this project's.
    Ownership,
}

/// A record the domain's owner publishes.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSpec {
    pub purpose: Purpose,
    /// `MX` or `TXT`.
    pub kind: &'static str,
    pub name: String,
    pub value: String,
    pub priority: Option<u16>,
}

/// The records of `domain`, whose MX names `host`.
pub fn records(domain: &Domain, host: &str) -> Vec<RecordSpec> {
    vec![
        RecordSpec {
            purpose: Purpose::Mx,
            kind: "MX",
            name: domain.domain.clone(),
            value: host.to_string(),
            priority: Some(MX_PRIORITY),
        },
        RecordSpec {
            purpose: Purpose::Ownership,
            kind: "TXT",
            name: format!("_tidings-inbound.{}", domain.domain),
            value: format!("tidings-inbound={}", domain.token),
            priority: None,
        },
    ]
}

/// What one check found of one record.
pub type RecordCheck = super::domains::RecordCheck<Purpose>;

/// What the last check found, as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checks {
    pub records: Vec<RecordCheck>,
    /// Why the domain is not verified although its records are there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Checks {
    pub fn read(domain: &Domain) -> Checks {
        domain.checks.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default()
    }
}

/// A new pending domain of `project`, first checked at a random point of the interval.
pub fn new_domain(project: &str, name: &str, interval_ms: i64) -> Domain {
    let now = clock::now_ms();
    let token: String = rand::thread_rng().sample_iter(&Alphanumeric).take(32).map(char::from).collect();
    Domain {
        id: InboundDomainId::fresh().into(),
        project_id: project.into(),
        domain: name.into(),
        token,
        status: "pending".into(),
        checks: None,
        created_at: now,
        verified_at: None,
        last_checked_at: None,
        next_check_at: now + rand::thread_rng().gen_range(0..interval_ms.max(1)),
    }
}

/// Adds `domain` to its project: at most `cap` a project, each name once.
pub fn add(tx: &Tx, domain: &Domain, cap: u32) -> Result<()> {
    if rows::count_domains(tx, &domain.project_id)? >= u64::from(cap) {
        return Err(Error::OverLimit(Limit::InboundDomains { cap }));
    }
    rows::insert_domain(tx, domain).map_err(|e| {
        on_duplicate(e, &format!("{} is already an inbound domain of this project", domain.domain))
    })
}

/// Inbound domain `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &InboundDomainId) -> Result<Domain> {
    rows::domain(conn, project, id)?.ok_or_else(|| InboundDomainId::missing(id))
}

/// Removes a domain, its routes and the webhook endpoints they made.
pub fn remove(tx: &Tx, project: &str, id: &InboundDomainId) -> Result<()> {
    let domain = find(tx, project, id)?;
    for route in rows::routes(tx, project)?.into_iter().filter(|r| r.domain_id == domain.id) {
        routes::forget_endpoints(tx, &route)?;
    }
    rows::delete_domain(tx, &domain.id)?;
    Ok(())
}

/// Looks the records up now (bypassing cached answers).
pub async fn check(dns: &Dns, domain: &Domain, host: &str) -> Vec<RecordCheck> {
    let mut out = Vec::new();
    for spec in records(domain, host) {
        let (found, failure) = if spec.purpose == Purpose::Mx {
            dns.fresh(&spec.name, &[RecordType::MX]);
            let answer = dns.mx(&spec.name).await;
            let found = answer.records().iter().any(|mx| mx.exchange.eq_ignore_ascii_case(host));
            (found, failure_of(&answer))
        } else {
            dns.fresh(&spec.name, &[RecordType::TXT]);
            let answer = dns.txt(&spec.name).await;
            let found = answer.records().iter().any(|v| squeeze(v) == squeeze(&spec.value));
            (found, failure_of(&answer))
        };
        out.push(RecordCheck { purpose: spec.purpose, found, error: failure.filter(|_| !found) });
    }
    out
}

fn failure_of<T>(answer: &Answer<T>) -> Option<String> {
    answer.failure().map(|f| f.code().to_string())
}

/// The status after a check: verified when both records are there; pending when one is
/// definitely missing; unchanged when DNS could not answer.
pub fn status_after(domain: &Domain, checks: &[RecordCheck]) -> &'static str {
    if checks.iter().all(|c| c.found) {
        "verified"
    } else if checks.iter().any(|c| !c.found && c.error.is_none()) {
        "pending"
    } else if domain.status == "verified" {
        "verified"
    } else {
        "pending"
    }
}

/// Checks a domain and stores the outcome (next check `interval_secs` later). A domain another
/// project has verified stays pending, with the reason.
pub async fn check_and_save(
    dns: &Dns,
    db: &crate::db::Db,
    (host, interval_secs): (&str, u32),
    domain: Domain,
) -> Result<Domain> {
    let records = check(dns, &domain, host).await;
    let now = clock::now_ms();
    let next = now + i64::from(interval_secs) * 1000;
    let status = status_after(&domain, &records);
    db.write(move |tx| {
        let mut checks = Checks { records, problem: None };
        let mut status = status;
        if status == "verified" && rows::verified_elsewhere(tx, &domain.project_id, &domain.domain)? {
            status = "pending";
            checks.problem = Some("another project on this server receives this domain's mail".into());
        }
        let verified_at = (status == "verified").then(|| domain.verified_at.unwrap_or(now));
        let json = serde_json::to_string(&checks).unwrap_or_default();
        rows::save_check(tx, &domain.id, status, verified_at, &json, (now, next))?;
        Ok::<_, Error>(Domain {
            status: status.into(),
            verified_at,
            checks: Some(json),
            last_checked_at: Some(now),
            next_check_at: next,
            ..domain
        })
    })
    .await
}
