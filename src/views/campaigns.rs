//! Campaigns: the view, its stats, and the bodies of its actions.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::campaigns;
use crate::db::campaigns::Campaign as Row;
use crate::views::conditions::ConditionTree;
use crate::views::present;
use crate::views::templates::{BodyFormat, MailKind};

/// A campaign: one email to an audience, now or at a time.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub subject: String,
    /// What the author wrote, in `format`, with Liquid placeholders.
    pub body: String,
    /// `html`, `mjml`, `markdown` or `blocks` (the block editor's JSON document).
    #[schema(value_type = BodyFormat)]
    pub format: String,
    /// The HTML `body` compiles to (still with its placeholders); only when `format` is not
    /// `html`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    #[schema(format = Email)]
    pub from: String,
    pub from_name: Option<String>,
    #[schema(format = Email)]
    pub reply_to: Option<String>,
    /// `TRANSACTIONAL`, `MARKETING` or `HEADLESS`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `DRAFT`, `SCHEDULED`, `SENDING`, `SENT` or `CANCELLED`.
    pub status: String,
    /// `ALL`, `SEGMENT` or `FILTERED`.
    pub audience_type: String,
    /// With `FILTERED`.
    #[schema(value_type = Option<ConditionTree>)]
    pub audience_condition: Option<Value>,
    /// With `SEGMENT`.
    pub segment_id: Option<String>,
    pub template_id: Option<String>,
    /// MARKETING mail only to the contacts subscribed to this topic (and to marketing).
    pub topic_id: Option<String>,
    #[schema(format = DateTime)]
    pub scheduled_for: Option<String>,
    /// Sent at this wall-clock time in each contact's time zone (`2026-12-01T09:00:00`);
    /// `scheduledFor` is then when it happens first.
    pub local_time: Option<String>,
    /// Clicks on its links are tracked.
    pub track_links: bool,
    pub total_recipients: i64,
    pub sent_count: i64,
    pub delivered_count: i64,
    pub opened_count: i64,
    pub clicked_count: i64,
    pub bounced_count: i64,
    pub complained_count: i64,
    pub unsubscribed_count: i64,
    /// Emails their recipient replied to (received by the inbound listener).
    pub replied_count: i64,
    pub failed_count: i64,
    pub project_id: String,
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    /// Why sending stopped early (a monthly limit met).
    pub stopped_reason: Option<String>,
    /// Listed in the project's public archive once it has gone out.
    pub public: bool,
    /// What the archived copy is rendered with in place of a contact's data.
    #[schema(value_type = Option<Object>)]
    pub archive_data: Option<Value>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&Row> for Campaign {
    fn from(c: &Row) -> Self {
        Campaign {
            id: c.id.clone(),
            name: c.name.clone(),
            description: c.description.clone(),
            subject: c.subject.clone(),
            body: c.source.clone().unwrap_or_else(|| c.body.clone()),
            format: c.format.clone(),
            html: c.source.as_ref().map(|_| c.body.clone()),
            from: c.from_email.clone(),
            from_name: c.from_name.clone(),
            reply_to: c.reply_to.clone(),
            kind: c.kind.clone(),
            status: c.status.clone(),
            audience_type: c.audience_type.clone(),
            audience_condition: c
                .audience_condition
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok())
                .map(|tree| crate::core::conditions::canonical(&tree)),
            segment_id: c.segment_id.clone(),
            template_id: c.template_id.clone(),
            topic_id: c.topic_id.clone(),
            scheduled_for: c.scheduled_for.map(iso),
            local_time: c.local_time.clone(),
            track_links: c.track_links,
            total_recipients: c.total_recipients,
            sent_count: c.counts.sent,
            delivered_count: c.counts.delivered,
            opened_count: c.counts.opened,
            clicked_count: c.counts.clicked,
            bounced_count: c.counts.bounced,
            complained_count: c.counts.complained,
            unsubscribed_count: c.counts.unsubscribed,
            replied_count: c.counts.replied,
            failed_count: c.counts.failed,
            project_id: c.project_id.clone(),
            sent_at: c.sent_at.map(iso),
            finished_at: c.finished_at.map(iso),
            stopped_reason: c.stopped_reason.clone(),
            public: c.public,
            archive_data: c.archive_data.as_deref().and_then(|d| serde_json::from_str(d).ok()),
            created_at: iso(c.created_at),
            updated_at: iso(c.updated_at),
        }
    }
}

/// Shares of the emails sent, to 4 decimals.
#[derive(Debug, Serialize, ToSchema)]
pub struct Rates {
    pub open: f64,
    pub click: f64,
    /// Opens and clicks by people only (a privacy proxy's fetch and a scanner's click left out).
    #[serde(rename = "peopleOpen")]
    pub people_open: f64,
    #[serde(rename = "peopleClick")]
    pub people_click: f64,
    pub bounce: f64,
    pub complaint: f64,
    pub unsubscribe: f64,
}

/// `GET /campaigns/{id}/stats`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignStats {
    pub id: String,
    pub status: String,
    pub total_recipients: i64,
    /// Not yet sent or failed.
    pub queued: i64,
    pub sent: i64,
    pub failed: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    /// Emails opened, and clicked, by a person at least once; `opened` and `clicked` count
    /// machines' too (a privacy proxy fetches every image on delivery).
    pub opened_by_people: i64,
    pub clicked_by_people: i64,
    pub bounced: i64,
    pub complained: i64,
    pub unsubscribed: i64,
    pub rates: Rates,
    /// Whether every recipient has been queued.
    pub expanded: bool,
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    pub stopped_reason: Option<String>,
    /// Its A/B test, with each variant's results in the test share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab_test: Option<crate::views::ab_tests::AbTestView>,
}

impl From<&Row> for CampaignStats {
    fn from(c: &Row) -> Self {
        let n = &c.counts;
        let rate = |count: i64| {
            if n.sent == 0 { 0.0 } else { (count as f64 / n.sent as f64 * 10_000.0).round() / 10_000.0 }
        };
        CampaignStats {
            id: c.id.clone(),
            status: c.status.clone(),
            total_recipients: c.total_recipients,
            queued: (c.total_recipients - n.sent - n.failed).max(0),
            sent: n.sent,
            failed: n.failed,
            delivered: n.delivered,
            opened: n.opened,
            clicked: n.clicked,
            opened_by_people: n.opened_by_people,
            clicked_by_people: n.clicked_by_people,
            bounced: n.bounced,
            complained: n.complained,
            unsubscribed: n.unsubscribed,
            rates: Rates {
                open: rate(n.opened),
                click: rate(n.clicked),
                people_open: rate(n.opened_by_people),
                people_click: rate(n.clicked_by_people),
                bounce: rate(n.bounced),
                complaint: rate(n.complained),
                unsubscribe: rate(n.unsubscribed),
            },
            expanded: c.expanded,
            sent_at: c.sent_at.map(iso),
            finished_at: c.finished_at.map(iso),
            stopped_reason: c.stopped_reason.clone(),
            ab_test: None,
        }
    }
}

/// Who a campaign goes to: every contact, a segment's members, or those a condition matches.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum AudienceType {
    #[schema(rename = "ALL")]
    All,
    #[schema(rename = "SEGMENT")]
    Segment,
    #[schema(rename = "FILTERED")]
    Filtered,
}

/// The body of `POST /campaigns` and `PUT /campaigns/{id}`: `name`, `subject`, `body`, `from`
/// and `audienceType` required (or a template's subject, body and sender).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "November news", "subject": "What is new", "body": "<p>Hello {{ data.firstName ?? \"there\" }}</p>", "from": "news@acme.test", "audienceType": "FILTERED", "audienceCondition": { "logic": "AND", "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] } }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    /// On a verified domain (403 otherwise).
    #[schema(format = Email)]
    pub from: Option<String>,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    /// `MARKETING` (the default), `TRANSACTIONAL` or `HEADLESS`.
    #[serde(rename = "type")]
    #[schema(value_type = Option<MailKind>)]
    pub kind: Option<String>,
    /// `ALL`, `SEGMENT` or `FILTERED`.
    #[schema(value_type = Option<AudienceType>)]
    pub audience_type: Option<String>,
    /// Required with `SEGMENT`.
    pub segment_id: Option<String>,
    /// Required with `FILTERED`.
    #[schema(value_type = Option<ConditionTree>)]
    pub audience_condition: Option<Value>,
    /// A template whose content the campaign takes.
    pub template_id: Option<String>,
    /// MARKETING only: the campaign goes only to contacts subscribed to this topic.
    pub topic_id: Option<String>,
    /// List it in the project's public archive once it has gone out (default false).
    pub public: Option<bool>,
    /// What the archived copy is rendered with in place of a contact's data, such as
    /// `{"firstName": "reader"}`: an object of at most 64 KiB.
    #[schema(value_type = Option<Object>)]
    pub archive_data: Option<Value>,
    /// What `body` is written in: `html` (the default), `mjml`, `markdown` or `blocks`.
    #[schema(value_type = Option<BodyFormat>)]
    pub format: Option<String>,
    /// Track clicks on its links (default true); per link, `data-notrack` on the `<a>`.
    pub track_links: Option<bool>,
}

/// The body of `PUT /campaigns/{id}`: the fields of `POST /campaigns`, each left out keeping its
/// value (a partial update, as Plunk's clients send it); `null` clears `description`,
/// `fromName`, `replyTo`, `segmentId`, `audienceCondition`, `templateId` and `topicId`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(example = json!({ "subject": "What is new this month" }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignChanges {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub subject: Option<String>,
    pub body: Option<String>,
    /// On a verified domain (403 otherwise).
    #[schema(format = Email)]
    pub from: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub from_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub reply_to: Option<Option<String>>,
    #[serde(rename = "type")]
    #[schema(value_type = Option<MailKind>)]
    pub kind: Option<String>,
    #[schema(value_type = Option<AudienceType>)]
    pub audience_type: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub segment_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ConditionTree>)]
    pub audience_condition: Option<Option<Value>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub template_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub topic_id: Option<Option<String>>,
    /// Listed in the archive or not; with `archiveData`, the only changes a campaign that has
    /// left DRAFT and SCHEDULED takes.
    pub public: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>)]
    pub archive_data: Option<Option<Value>>,
    /// What `body` is written in; a new format alone recompiles the campaign's body.
    #[schema(value_type = Option<BodyFormat>)]
    pub format: Option<String>,
    /// Track clicks on its links (default true); per link, `data-notrack` on the `<a>`.
    pub track_links: Option<bool>,
}

impl From<CampaignFields> for campaigns::Fields {
    fn from(f: CampaignFields) -> Self {
        let CampaignFields {
            name,
            description,
            subject,
            body,
            from,
            from_name,
            reply_to,
            kind,
            audience_type,
            segment_id,
            audience_condition,
            template_id,
            topic_id,
            public,
            archive_data,
            format,
            track_links,
        } = f;
        campaigns::Fields {
            name,
            description,
            subject,
            body,
            from,
            from_name,
            reply_to,
            kind,
            audience_type,
            segment_id,
            audience_condition,
            template_id,
            topic_id,
            public,
            archive_data,
            format,
            track_links,
        }
    }
}

impl From<CampaignChanges> for campaigns::Changes {
    fn from(c: CampaignChanges) -> Self {
        let CampaignChanges {
            name,
            description,
            subject,
            body,
            from,
            from_name,
            reply_to,
            kind,
            audience_type,
            segment_id,
            audience_condition,
            template_id,
            topic_id,
            public,
            archive_data,
            format,
            track_links,
        } = c;
        campaigns::Changes {
            name,
            description,
            subject,
            body,
            from,
            from_name,
            reply_to,
            kind,
            audience_type,
            segment_id,
            audience_condition,
            template_id,
            topic_id,
            public,
            archive_data,
            format,
            track_links,
        }
    }
}

/// `POST /campaigns/count`: an audience to count.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AudienceBody {
    /// `MARKETING` (the default: subscribed contacts only), `TRANSACTIONAL` or `HEADLESS`.
    #[serde(rename = "type")]
    #[schema(value_type = Option<MailKind>)]
    pub kind: Option<String>,
    /// `ALL` (the default), `SEGMENT` or `FILTERED`.
    #[schema(value_type = Option<AudienceType>)]
    pub audience_type: Option<String>,
    pub segment_id: Option<String>,
    #[schema(value_type = Option<ConditionTree>)]
    pub audience_condition: Option<Value>,
    /// MARKETING only: count only the contacts subscribed to this topic.
    pub topic_id: Option<String>,
}

/// How many contacts an audience has now.
#[derive(Debug, Serialize, ToSchema)]
pub struct Count {
    pub count: i64,
}

/// `POST /campaigns/{id}/follow-up`: a new campaign to the recipients who did not open (or
/// click) a sent one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FollowUpBody {
    /// The new campaign's name; `<name> (follow-up)` when left out.
    pub name: Option<String>,
    /// A new subject; the original's when left out.
    pub subject: Option<String>,
    /// `notOpened` (the default: no person opened it; a privacy proxy's fetch is no open, a
    /// click is one) or `notClicked`.
    pub audience: Option<String>,
    /// Schedule it this many hours (0 to 720) after the original was sent, or now if that has
    /// passed; left out, the follow-up is a DRAFT to edit and send.
    pub delay_hours: Option<i64>,
}

/// `POST /campaigns/{id}/send`: now, or at `scheduledFor`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SendCampaign {
    /// An ISO 8601 time; absent or `null` sends now.
    #[schema(value_type = Option<String>)]
    pub scheduled_for: Option<Value>,
    /// A wall-clock time without a zone (`2026-12-01T09:00`): each contact receives it then in
    /// their own time zone (`data.timezone`, else the project's). Not with `scheduledFor`.
    pub local_time: Option<String>,
}

/// What `POST /campaigns/{id}/send` did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SentCampaign {
    pub id: String,
    pub name: String,
    /// `SENDING` or `SCHEDULED`.
    pub status: String,
    #[schema(format = DateTime)]
    pub scheduled_for: Option<String>,
}

/// `{success: true, data, message}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SendAnswer {
    pub success: bool,
    pub data: SentCampaign,
    pub message: String,
}

/// `POST /campaigns/{id}/test` and `POST /templates/{id}/test`: the address to send the test
/// to, and the contact to render it as.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestBody {
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
    /// Render the test as this contact (its fields and links); by default, as the contact with
    /// the test's address, if there is one.
    pub contact_id: Option<String>,
}

/// The test email queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct TestSent {
    /// The email's id.
    pub email: String,
    #[schema(format = Email)]
    pub to: String,
    pub status: String,
}
impl From<crate::db::emails::Email> for TestSent {
    fn from(queued: crate::db::emails::Email) -> Self {
        TestSent { email: queued.id, to: queued.to_email, status: queued.status }
    }
}
