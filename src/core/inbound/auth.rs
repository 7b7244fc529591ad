//! Who a received message is from, as far as DNS can tell: SPF for the sending server and the
//! envelope sender, DKIM for the signatures, DMARC for the From domain's policy over both, all
//! computed by `mail-auth` through our resolver (`[dns]`).

use std::net::IpAddr;

use mail_auth::dmarc::verify::DmarcParameters;
use mail_auth::spf::verify::SpfParameters;
use mail_auth::{AuthenticatedMessage, DkimResult, DmarcResult, SpfResult};

use crate::adapters::dns::Dns;

/// The three results, each as a word: `pass`, `fail`, `softfail`, `neutral`, `none`,
/// `temperror` or `permerror`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdicts {
    pub spf: String,
    pub dkim: String,
    pub dmarc: String,
}

impl Verdicts {
    /// When the message could not even be read for checking.
    pub fn unreadable() -> Verdicts {
        Verdicts { spf: "none".into(), dkim: "none".into(), dmarc: "none".into() }
    }

    /// Whether the From domain's DMARC policy failed: the message may be forged.
    pub fn dmarc_failed(&self) -> bool {
        self.dmarc == "fail"
    }
}

/// Checks `raw`, received from `peer` that greeted as `helo` with envelope sender `mail_from`
/// (empty for a bounce) at the server named `host`.
pub async fn check(dns: &Dns, peer: IpAddr, helo: &str, mail_from: &str, host: &str, raw: &[u8]) -> Verdicts {
    let Some(message) = AuthenticatedMessage::parse(raw) else { return Verdicts::unreadable() };
    let authenticator = dns.authenticator();
    let dkim = authenticator.verify_dkim(&message).await;
    let sender_domain = mail_from.rsplit_once('@').map(|(_, d)| d).filter(|d| !d.is_empty());
    let spf = match sender_domain {
        Some(_) => {
            authenticator.verify_spf(SpfParameters::verify_mail_from(peer, helo, host, mail_from)).await
        }
        None => authenticator.verify_spf(SpfParameters::verify_ehlo(peer, helo, host)).await,
    };
    let dmarc_domain = sender_domain.unwrap_or(helo);
    let dmarc = authenticator.verify_dmarc(DmarcParameters::new(&message, &dkim, dmarc_domain, &spf)).await;
    let dkim_word = dkim
        .iter()
        .map(|d| dkim_result(d.result()))
        .min_by_key(|word| RANK.iter().position(|r| r == word).unwrap_or(RANK.len()))
        .unwrap_or("none");
    Verdicts {
        spf: spf_result(spf.result()).into(),
        dkim: dkim_word.into(),
        dmarc: dmarc_result(&dmarc.result()).into(),
    }
}

/// Which of several DKIM results stands for the message: the best one.
const RANK: [&str; 6] = ["pass", "fail", "neutral", "temperror", "permerror", "none"];

fn dkim_result(result: &DkimResult) -> &'static str {
    match result {
        DkimResult::Pass => "pass",
        DkimResult::Neutral(_) => "neutral",
        DkimResult::Fail(_) => "fail",
        DkimResult::PermError(_) => "permerror",
        DkimResult::TempError(_) => "temperror",
        DkimResult::None => "none",
    }
}

fn spf_result(result: SpfResult) -> &'static str {
    match result {
        SpfResult::Pass => "pass",
        SpfResult::Fail => "fail",
        SpfResult::SoftFail => "softfail",
        SpfResult::Neutral => "neutral",
        SpfResult::TempError => "temperror",
        SpfResult::PermError => "permerror",
        SpfResult::None => "none",
    }
}

fn dmarc_result(result: &DmarcResult) -> &'static str {
    match result {
        DmarcResult::Pass => "pass",
        DmarcResult::Fail(_) => "fail",
        DmarcResult::TempError(_) => "temperror",
        DmarcResult::PermError(_) => "permerror",
        DmarcResult::None => "none",
    }
}
