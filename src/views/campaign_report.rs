//! A campaign's report and its recipients: the views of `GET /campaigns/{id}/report` and
//! `GET /campaigns/{id}/recipients`.

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::campaign_report::{Point, Provider, Report, Split};
use crate::db::campaigns::Campaign;
use crate::db::engagements::{LinkClicks, Recipient as Row};

/// Opens and clicks in one bucket of time since the send.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelinePoint {
    /// The bucket's start.
    #[schema(format = DateTime)]
    pub at: String,
    /// By people.
    pub opens: i64,
    pub clicks: i64,
    /// By privacy proxies, link scanners and crawlers.
    pub machine_opens: i64,
    pub machine_clicks: i64,
}

/// A link of the mail and its clicks.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkReport {
    pub url: String,
    /// By people.
    pub clicks: i64,
    /// Distinct recipients among them.
    pub unique_clicks: i64,
    /// By link scanners and crawlers.
    pub machine_clicks: i64,
}

/// Recipients who opened (or clicked): by a person at least once, or only by machines.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeopleAndMachines {
    pub people: i64,
    pub machines_only: i64,
}

/// A receiving provider's results among the recipients.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderReport {
    /// `Gmail`, `Outlook`, `Yahoo`, `iCloud`, ..., a domain, or `Other domains`.
    pub name: String,
    pub domains: Vec<String>,
    pub recipients: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
    pub failed: i64,
}

/// Where the campaign's recipients stand, from its counters.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportTotals {
    pub recipients: i64,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
    pub unsubscribed: i64,
    pub failed: i64,
}

/// `GET /campaigns/{id}/report`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignReport {
    pub campaign_id: String,
    pub status: String,
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    /// The timeline's buckets: `hour` for the first three days, `day` after.
    pub bucket: String,
    pub timeline: Vec<TimelinePoint>,
    /// Most clicked first, at most 100.
    pub links: Vec<LinkReport>,
    pub opened: PeopleAndMachines,
    pub clicked: PeopleAndMachines,
    pub providers: Vec<ProviderReport>,
    pub totals: ReportTotals,
    /// No relay is configured: the mail stayed on this machine, so no opens, clicks or bounces
    /// will come.
    pub captured: bool,
    /// Its A/B test, with each variant's results in the test share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab_test: Option<crate::views::ab_tests::AbTestView>,
    /// Its emails per receiving provider's queue (`[smtp.providers]`), most first, at most 12.
    pub queues: Vec<QueueReport>,
}

/// A campaign's emails in one receiving provider's queue.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueReport {
    /// `gmail`, `microsoft`, `yahoo`, `apple`, a domain, or `""` for emails not yet looked at.
    pub provider: String,
    /// `Gmail`, ..., the domain, or `Not yet sorted`.
    pub label: String,
    pub sent: i64,
    pub queued: i64,
    /// Queued emails held back by the provider's hourly rate, by its rest after it deferred
    /// mail, or by the sender domain's warm-up.
    pub held_rate: i64,
    pub held_backoff: i64,
    pub held_warmup: i64,
    /// While the provider rests after deferring mail.
    #[schema(format = DateTime)]
    pub resting_until: Option<String>,
}

impl CampaignReport {
    pub fn new(c: &Campaign, r: Report, captured: bool) -> Self {
        let split = |s: Split| PeopleAndMachines { people: s.people, machines_only: s.machines_only };
        CampaignReport {
            campaign_id: c.id.clone(),
            status: c.status.clone(),
            sent_at: r.since.map(iso),
            bucket: if r.bucket_ms >= 86_400_000 { "day" } else { "hour" }.into(),
            timeline: r.timeline.into_iter().map(TimelinePoint::from).collect(),
            links: r.links.into_iter().map(LinkReport::from).collect(),
            opened: split(r.opened),
            clicked: split(r.clicked),
            providers: r.providers.into_iter().map(ProviderReport::from).collect(),
            totals: ReportTotals {
                recipients: c.total_recipients,
                sent: c.counts.sent,
                delivered: c.counts.delivered,
                opened: c.counts.opened,
                clicked: c.counts.clicked,
                bounced: c.counts.bounced,
                complained: c.counts.complained,
                unsubscribed: c.counts.unsubscribed,
                failed: c.counts.failed,
            },
            captured,
            ab_test: crate::views::ab_tests::AbTestView::of(c, &r.variants),
            queues: r
                .queues
                .into_iter()
                .map(|q| QueueReport {
                    label: if q.provider.is_empty() {
                        "Not yet sorted".into()
                    } else {
                        crate::core::providers::label(&q.provider)
                    },
                    resting_until: None,
                    provider: q.provider,
                    sent: q.sent,
                    queued: q.queued,
                    held_rate: q.held_rate,
                    held_backoff: q.held_backoff,
                    held_warmup: q.held_warmup,
                })
                .collect(),
        }
    }
}

impl From<Point> for TimelinePoint {
    fn from(p: Point) -> Self {
        TimelinePoint {
            at: iso(p.at),
            opens: p.opens,
            clicks: p.clicks,
            machine_opens: p.machine_opens,
            machine_clicks: p.machine_clicks,
        }
    }
}

impl From<LinkClicks> for LinkReport {
    fn from(l: LinkClicks) -> Self {
        LinkReport { url: l.url, clicks: l.clicks, unique_clicks: l.unique, machine_clicks: l.machine }
    }
}

impl From<Provider> for ProviderReport {
    fn from(p: Provider) -> Self {
        let r = p.results;
        ProviderReport {
            name: p.name,
            domains: p.domains,
            recipients: r.recipients,
            delivered: r.delivered,
            opened: r.opened,
            clicked: r.clicked,
            bounced: r.bounced(),
            complained: r.complained,
            failed: r.failed,
        }
    }
}

/// A recipient of a campaign and what became of its email.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRecipient {
    pub email_id: String,
    pub contact_id: Option<String>,
    #[schema(format = Email)]
    pub email: String,
    /// The furthest it went: `queued`, `sent`, `delivered`, `opened`, `clicked`, `bounced`,
    /// `complained`, `unsubscribed` or `failed`.
    pub status: String,
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    #[schema(format = DateTime)]
    pub opened_at: Option<String>,
    #[schema(format = DateTime)]
    pub clicked_at: Option<String>,
    /// `hard` or `soft`, for a bounce.
    pub bounce_type: Option<String>,
    #[schema(format = DateTime)]
    pub unsubscribed_at: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

impl From<&Row> for CampaignRecipient {
    fn from(r: &Row) -> Self {
        CampaignRecipient {
            email_id: r.email_id.clone(),
            contact_id: r.contact_id.clone(),
            email: r.email.clone(),
            status: r.status.clone(),
            sent_at: r.sent_at.map(iso),
            opened_at: r.opened_at.map(iso),
            clicked_at: r.clicked_at.map(iso),
            bounce_type: r.bounce_type.clone(),
            unsubscribed_at: r.unsubscribed_at.map(iso),
            error: r.error.clone(),
        }
    }
}

impl CampaignRecipient {
    /// The CSV export's header and a recipient's line.
    pub const CSV_HEADER: [&'static str; 9] = [
        "email",
        "status",
        "sentAt",
        "openedAt",
        "clickedAt",
        "bounceType",
        "unsubscribedAt",
        "error",
        "contactId",
    ];

    pub fn csv_fields(&self) -> [String; 9] {
        let o = |v: &Option<String>| v.clone().unwrap_or_default();
        [
            self.email.clone(),
            self.status.clone(),
            o(&self.sent_at),
            o(&self.opened_at),
            o(&self.clicked_at),
            o(&self.bounce_type),
            o(&self.unsubscribed_at),
            o(&self.error),
            o(&self.contact_id),
        ]
    }
}
