//! Opens and clicks of sent mail (appliance.md section 8): the email moves forward (OPENED,
//! CLICKED; a status never goes back) and its events are emitted: `email.opened` on the first
//! open of a sent email, `email.clicked` on every click, with the link.
//!
//! Each open and click is also recorded as it came (for the campaign report), with whether a
//! machine made it ([`machine`]): a privacy proxy that fetches every image when the mail is
//! delivered (Apple Mail Privacy Protection sends only `Mozilla/5.0`), a link scanner or a
//! crawler (a known bot's User-Agent, none at all, a `HEAD` request, which checks a link without
//! reading it, a request from a known scanner network, a click within seconds of sending,
//! before a person could have read the mail, or clicks on several links of one email within
//! [`BURST_MS`], which no person does). The status and counters stay as they were: they are
//! the API's contract, and a person's open behind a proxy looks the same.
//!
//! A machine's `email.opened` and `email.clicked` events carry `machine` (why) in their data
//! and are marked in the store: webhooks receive them, condition filters skip them unless
//! they ask (`includeMachine`), and they never start or resume a workflow. When the first open
//! was a machine's (an open or a click), a person's first open later emits `email.opened`
//! again, unmarked, unless the person's own click came first. At most
//! [`RECORDED`] opens and as many clicks are kept an email (and a person's first beyond
//! that), so a pixel fetched in a loop cannot grow the table.

use std::net::IpAddr;
use std::sync::LazyLock;

use ipnet::IpNet;

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
    /// Where the request came from, and the networks where only scanners are.
    pub ip: Option<IpAddr>,
    pub scanner_networks: &'a [IpNet],
}

/// Opens, and clicks, recorded an email.
pub const RECORDED: i64 = 20;
/// A click sooner than this after sending was a scanner's: no person reads that fast.
pub const HUMAN_DELAY_MS: i64 = 5_000;
/// Clicks on two different links of one email within this time were a scanner's following
/// every link: a person goes back to the mail between two links.
pub const BURST_MS: i64 = 2_000;

static BOTS: LazyLock<isbot::Bots> = LazyLock::new(isbot::Bots::default);

/// Why a machine made an open or click by `client`, `after_send` ms after the email was sent, if
/// one did.
pub fn machine(what: &Engagement, client: Client<'_>, after_send: Option<i64>) -> Option<&'static str> {
    if client.head || client.ip.is_some_and(|ip| client.scanner_networks.iter().any(|n| n.contains(&ip))) {
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
    let mut made_by = machine(&what, client, row.sent_at.map(|at| now - at));
    if let (Engagement::Click(url), None) = (&what, made_by) {
        // A scanner following every link: this click and the other links' just before it.
        if engagements::other_link_since(tx, id, url, now - BURST_MS)? {
            made_by = Some("scanner");
            engagements::mark_machine(tx, id, now - BURST_MS, "scanner")?;
            if let Some(contact) = &row.contact_id {
                crate::db::events::mark_machine(tx, contact, "email.clicked", id, now - BURST_MS, "scanner")?;
            }
        }
    }
    let (recorded, by_people) = engagements::count(tx, id, kind)?;
    let first_by_a_person = made_by.is_none() && by_people == 0;
    let recording = row.sent_at.is_some() && (recorded < RECORDED || first_by_a_person);
    // A person's click waits for a second link that would show a scanner; one not recorded
    // (past the cap) cannot be held and is emitted now.
    let held =
        (recording && made_by.is_none() && matches!(what, Engagement::Click(_))).then_some(now + BURST_MS);
    if recording {
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
                machine: made_by,
                at: now,
                held_until: held,
            },
        )?;
    }
    if let Some(at) = held {
        crate::db::jobs::enqueue_unless_queued(tx, &super::jobs::click_release(&row.project_id, at))?;
    }
    let first_open = row.opened_at.is_none();
    let status = match what {
        Engagement::Open => EmailStatus::Opened,
        Engagement::Click(_) => EmailStatus::Clicked,
    };
    emails::advance(tx, id, status.as_str(), now)?;
    let mut data = events::email_data(&row, &row.subject);
    if let Some(why) = made_by {
        data["machine"] = json!(why);
    }
    let name = match what {
        Engagement::Click(_) if held.is_some() => None,
        Engagement::Click(link) => {
            data["link"] = json!(link);
            Some("email.clicked")
        }
        // The first open, and a person's first after a machine's open or click. After the
        // person's own click it is not: that click was their open.
        Engagement::Open
            if row.sent_at.is_some()
                && (first_open || first_by_a_person && engagements::count(tx, id, "click")?.1 == 0) =>
        {
            Some("email.opened")
        }
        Engagement::Open => None,
    };
    if let Some(name) = name {
        events::emit_by(tx, &row.project_id, row.contact_id.as_deref(), name, &data, now, made_by)?;
    }
    Ok(())
}

/// Held clicks emitted a run, at most.
pub const RELEASE_BATCH: i64 = 500;

/// Emits the `email.clicked` events of project `project`'s held clicks due by `now` (as a
/// machine's when a burst showed them to be): at most [`RELEASE_BATCH`]. Returns when the
/// next held click is due, if one is held.
pub fn release_held(tx: &Tx, project: &str, now: i64) -> Result<Option<i64>> {
    for click in engagements::held_due(tx, project, now, RELEASE_BATCH)? {
        engagements::released(tx, click.id)?;
        let Some(row) = emails::get(tx, &click.email_id)? else { continue };
        let mut data = events::email_data(&row, &row.subject);
        data["link"] = json!(click.url);
        if let Some(why) = &click.machine {
            data["machine"] = json!(why);
        }
        let contact = row.contact_id.as_deref();
        events::emit_by(tx, &row.project_id, contact, "email.clicked", &data, now, click.machine.as_deref())?;
    }
    Ok(engagements::next_held(tx, project)?)
}

#[cfg(test)]
mod tests {
    use super::{Client, Engagement};

    fn machine(what: &Engagement, user_agent: Option<&str>, after_send: Option<i64>) -> Option<&'static str> {
        super::machine(what, Client { user_agent, ..Client::default() }, after_send)
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
        let checked = Client { user_agent: Some(CHROME), head: true, ..Client::default() };
        assert_eq!(super::machine(&click, checked, Some(60_000)), Some("scanner"), "a HEAD reads nothing");
        assert_eq!(super::machine(&Engagement::Open, checked, Some(60_000)), Some("scanner"));
        let networks: Vec<ipnet::IpNet> = vec!["40.92.0.0/15".parse().unwrap()];
        let from = |ip: &str| Client {
            user_agent: Some(CHROME),
            ip: Some(ip.parse().unwrap()),
            scanner_networks: &networks,
            ..Client::default()
        };
        assert_eq!(
            super::machine(&click, from("40.93.1.2"), Some(60_000)),
            Some("scanner"),
            "a scanner network"
        );
        assert_eq!(super::machine(&click, from("40.94.1.2"), Some(60_000)), None);
    }
}
