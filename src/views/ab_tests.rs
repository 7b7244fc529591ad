//! A campaign's A/B test: the body that sets it, and the view of its settings, state and
//! variants with their results.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::ab_tests::{LABELS, TestInput, VariantInput, awaits_pick, measured};
use crate::db::ab_tests::{AbTest, Variant};
use crate::db::campaigns::Campaign;

/// One variant: what it changes of the campaign's content; what it leaves out is the
/// campaign's.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VariantBody {
    pub subject: Option<String>,
    pub from_name: Option<String>,
    /// In `format` (`html` when left out).
    pub body: Option<String>,
    pub format: Option<String>,
    /// A template of the project: the variant takes its body, and its subject when the
    /// variant gives none (copied when the test is saved).
    pub template_id: Option<String>,
}

/// The body of `PUT /campaigns/{id}/ab-test`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(example = json!({ "variants": [{}, { "subject": "Last chance: 20 % off" }], "testShare": 20, "metric": "humanClicks", "waitHours": 4 }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AbTestBody {
    /// 2 to 5; the first is usually `{}`, the campaign as written.
    pub variants: Option<Vec<VariantBody>>,
    /// Percent of the audience the variants are tried on (1 to 100), split evenly between them
    /// at random; the rest get the winner.
    pub test_share: Option<i64>,
    /// `opens`, `humanOpens`, `clicks` (the default) or `humanClicks`: the share of each
    /// variant's sent emails opened or clicked (by a person, for the `human` ones).
    pub metric: Option<String>,
    /// Hours from when the test share is queued to the decision (1 to 72).
    pub wait_hours: Option<i64>,
    /// `auto` (the default: the metric picks at the end of the wait) or `manual`.
    pub pick: Option<String>,
}

impl From<AbTestBody> for TestInput {
    fn from(b: AbTestBody) -> Self {
        TestInput {
            variants: b.variants.map(|vs| {
                vs.into_iter()
                    .map(|v| VariantInput {
                        subject: v.subject,
                        from_name: v.from_name,
                        body: v.body,
                        format: v.format,
                        template_id: v.template_id,
                    })
                    .collect()
            }),
            test_share: b.test_share,
            metric: b.metric,
            wait_hours: b.wait_hours,
            pick: b.pick,
        }
    }
}

/// The body of `POST /campaigns/{id}/ab-test/winner`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WinnerBody {
    /// The variant's index, from 0 (A).
    pub variant: Option<i64>,
}

/// What happened to one variant's emails in the test share.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantResults {
    pub recipients: i64,
    pub sent: i64,
    pub delivered: i64,
    pub bounced: i64,
    pub opened: i64,
    pub clicked: i64,
    pub opened_by_people: i64,
    pub clicked_by_people: i64,
    pub unsubscribed: i64,
    /// The test's metric for this variant: its share of the sent emails, to 4 decimals.
    pub score: f64,
}

/// A variant and its results.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantView {
    /// From 0.
    pub index: i64,
    /// `A` to `E`.
    pub label: String,
    /// `null`: the campaign's.
    pub subject: Option<String>,
    pub from_name: Option<String>,
    /// What the author wrote, in `format`; `null`: the campaign's.
    pub body: Option<String>,
    pub format: Option<String>,
    /// The HTML `body` compiles to, when `format` is not `html`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    pub template_id: Option<String>,
    pub results: VariantResults,
}

/// A campaign's A/B test.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AbTestView {
    pub campaign_id: String,
    pub test_share: i64,
    pub metric: String,
    pub wait_hours: i64,
    pub pick: String,
    /// `READY` (not sent yet), `TESTING` (the test share goes out and the wait runs) or
    /// `DECIDED` (the winner goes to the rest).
    pub phase: String,
    /// When the wait ends: set once the whole test share is queued.
    #[schema(format = DateTime)]
    pub decide_at: Option<String>,
    /// Whether a winner may be picked by hand now.
    pub can_pick: bool,
    /// The winner's index.
    pub winner: Option<i64>,
    /// `metric` or `hand`.
    pub decided_by: Option<String>,
    #[schema(format = DateTime)]
    pub decided_at: Option<String>,
    pub variants: Vec<VariantView>,
}

fn score(metric: &str, v: &Variant) -> f64 {
    let n = &v.counts;
    let count = measured(metric, n);
    if n.sent == 0 { 0.0 } else { (count as f64 / n.sent as f64 * 10_000.0).round() / 10_000.0 }
}

impl AbTestView {
    /// The view of campaign `c`'s test, when it has one.
    pub fn of(c: &Campaign, variants: &[Variant]) -> Option<Self> {
        let t: &AbTest = c.ab.as_ref()?;
        Some(AbTestView {
            campaign_id: c.id.clone(),
            test_share: t.share,
            metric: t.metric.clone(),
            wait_hours: t.wait_hours,
            pick: t.pick.clone(),
            phase: t.phase.clone(),
            decide_at: t.decide_at.map(iso),
            can_pick: awaits_pick(c, t),
            winner: t.winner,
            decided_by: t.decided_by.clone(),
            decided_at: t.decided_at.map(iso),
            variants: variants
                .iter()
                .map(|v| {
                    let n = &v.counts;
                    VariantView {
                        index: v.position,
                        label: LABELS.get(v.position as usize).copied().unwrap_or("?").to_string(),
                        subject: v.subject.clone(),
                        from_name: v.from_name.clone(),
                        body: v.source.clone().or_else(|| v.body.clone()),
                        format: v.format.clone(),
                        html: v.source.as_ref().and(v.body.clone()),
                        template_id: v.template_id.clone(),
                        results: VariantResults {
                            recipients: n.recipients,
                            sent: n.sent,
                            delivered: n.delivered,
                            bounced: n.bounced,
                            opened: n.opened,
                            clicked: n.clicked,
                            opened_by_people: n.opened_by_people,
                            clicked_by_people: n.clicked_by_people,
                            unsubscribed: n.unsubscribed,
                            score: score(&t.metric, v),
                        },
                    }
                })
                .collect(),
        })
    }
}
