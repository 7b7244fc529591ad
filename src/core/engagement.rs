//! Opens and clicks of sent mail (appliance.md section 8): the email moves forward (OPENED,
//! CLICKED; a status never goes back) and its events are emitted: `email.opened` on the first
//! open of a sent email, `email.clicked` on every click, with the link.
//!
//! Each open and click is also recorded as it came (for the campaign report), with whether a
//! machine made it ([`machine`]): a privacy proxy that fetches every image when the mail is
//! delivered (Apple Mail Privacy Protection sends only `Mozilla/5.0`), a link scanner or a
//! crawler (a known bot's User-Agent, none at all, a `HEAD` request, which checks a link without
//! reading it, or a click within seconds of sending, before a person could have read the mail). The status, counters and events stay as they were: they
//! are the API's contract, and a person's open behind a proxy looks the same. At most
//! [`RECORDED`] opens and as many clicks are kept an email, so a pixel fetched in a loop cannot
//! grow the table.

use std::sync::LazyLock;

use serde_json::json;

use super::error::Result;
use super::events;
use super::vocabulary::{EmailSource, EmailStatus};
use crate::db::Tx;
use crate::db::{emails, engagements};

/// What a recipient did with an email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engagement {
    /// The open pixel was fetched.
    Open,
    /// A tracked link was followed to this address.
    Click(String),
}

/// Who fetched a tracked link or the open pixel.
#[derive(Debug, Clone, Copy, Default)]
pub struct Client<'a> {
    pub user_agent: Option<&'a str>,
    /// The request was a `HEAD`: the headers only, as a link checker asks. No person reads that way.
    pub head: bool,
}

/// Opens, and clicks, recorded an email.
pub const RECORDED: i64 = 20;
/// A click sooner than this after sending was a scanner's: no person reads that fast.
pub const HUMAN_DELAY_MS: i64 = 5_000;

static BOTS: LazyLock<isbot::Bots> = LazyLock::new(isbot::Bots::default);

/// Why a machine made an open or click by `client`, `after_send` ms after the email was sent, if
/// one did.
pub fn machine(what: &Engagement, client: Client<'_>, after_send: Option<i64>) -> Option<&'static str> {
    if client.head {
        return Some("scanner");
    }
    let agent = client.user_agent.map(str::trim).unwrap_or("");
    if matches!(what, Engagement::Open) && agent == "Mozilla/5.0" {
        return Some("privacy_proxy");
    }
    // The mail providers' image proxies fetch on a person's open.
    let mail_proxy = ["GoogleImageProxy", "YahooMailProxy", "ggpht.com"].iter().any(|p| agent.contains(p));
    if agent.is_empty() || !mail_proxy && BOTS.is_bot(agent) {
        return Some(if matches!(what, Engagement::Open) { "crawler" } else { "scanner" });
    }
    if matches!(what, Engagement::Click(_)) && after_send.is_some_and(|ms| ms < HUMAN_DELAY_MS) {
        return Some("scanner");
    }
    None
}

/// Records `what` the recipient of email `id` did, through `client`; an email that is gone is
/// nothing to record.
pub fn record(tx: &Tx, id: &str, what: Engagement, client: Client<'_>, now: i64) -> Result<()> {
    let Some(row) = emails::get(tx, id)? else { return Ok(()) };
    let kind = if matches!(what, Engagement::Open) { "open" } else { "click" };
    if row.sent_at.is_some() && engagements::count(tx, id, kind)? < RECORDED {
        engagements::insert(
            tx,
            &engagements::Engagement {
                project_id: row.project_id.clone(),
                email_id: row.id.clone(),
                // A test send is the campaign's too, but no part of its report.
                campaign_id: row
                    .campaign_id
                    .clone()
                    .filter(|_| row.source_type == EmailSource::Campaign.as_str()),
                kind,
                url: match &what {
                    Engagement::Click(url) => Some(url.clone()),
                    Engagement::Open => None,
                },
                machine: machine(&what, client, row.sent_at.map(|at| now - at)),
                at: now,
            },
        )?;
    }
    let first_open = row.opened_at.is_none();
    let status = match what {
        Engagement::Open => EmailStatus::Opened,
        Engagement::Click(_) => EmailStatus::Clicked,
    };
    emails::advance(tx, id, status.as_str(), now)?;
    let mut data = events::email_data(&row, &row.subject);
    let name = match what {
        Engagement::Click(link) => {
            data["link"] = json!(link);
            Some("email.clicked")
        }
        Engagement::Open if first_open && row.sent_at.is_some() => Some("email.opened"),
        Engagement::Open => None,
    };
    if let Some(name) = name {
        events::emit(tx, &row.project_id, row.contact_id.as_deref(), name, &data, now)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Client, Engagement};

    fn machine(what: &Engagement, user_agent: Option<&str>, after_send: Option<i64>) -> Option<&'static str> {
        super::machine(what, Client { user_agent, head: false }, after_send)
    }

    const CHROME: &str =
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120 Safari/537.36";

    #[test]
    fn machines_are_told_from_people() {
        let click = Engagement::Click("https://a.test".into());
        assert_eq!(machine(&Engagement::Open, Some("Mozilla/5.0"), Some(1000)), Some("privacy_proxy"));
        assert_eq!(machine(&Engagement::Open, Some(CHROME), Some(1000)), None);
        assert_eq!(machine(&Engagement::Open, None, Some(1000)), Some("crawler"));
        assert_eq!(
            machine(&Engagement::Open, Some("Googlebot/2.1 (+http://www.google.com/bot.html)"), None),
            Some("crawler")
        );
        let gmail =
            "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)";
        assert_eq!(
            machine(&Engagement::Open, Some(gmail), Some(1000)),
            None,
            "Gmail fetches on a person's open"
        );
        assert_eq!(machine(&click, Some("python-requests/2.31"), Some(60_000)), Some("scanner"));
        assert_eq!(machine(&click, Some(CHROME), Some(1_000)), Some("scanner"), "too soon for a reader");
        assert_eq!(machine(&click, Some(CHROME), Some(60_000)), None);
        let checked = Client { user_agent: Some(CHROME), head: true };
        assert_eq!(super::machine(&click, checked, Some(60_000)), Some("scanner"), "a HEAD reads nothing");
        assert_eq!(super::machine(&Engagement::Open, checked, Some(60_000)), Some("scanner"));
    }
}
