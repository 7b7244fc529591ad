//! A/B tests (issue 34, item 1): a campaign tries 2 to 5 variants of its content (subject, sender
//! name, body, or a template's body) on a share of its audience, waits, and sends the variant
//! that did best by the chosen metric (or the one picked by hand) to the rest.
//!
//! The expansion queues the test share first, each email with its variant (`core::ab_variants`
//! draws them); when it is all queued the wait starts, in the transaction of the last batch,
//! with the job that decides at its end. The decision enqueues the expansion again, from the
//! first contact: every contact of the audience without an email gets one with the winner (the
//! unique index on campaign and contact skips the test share's), so each contact gets exactly
//! one message, whatever was interrupted where.

use serde_json::json;

use super::campaign_state::CampaignStatus;
use super::compose;
use super::error::{Error, FieldError, Result};
use super::formats;
use super::jobs;
use crate::db::Tx;
use crate::db::ab_tests::{self, AbTest, Variant, VariantCounts};
use crate::db::campaigns::{self, Campaign};
use crate::db::jobs as queue;
use crate::db::templates;

/// Variants a test has at least and at most.
pub const MIN_VARIANTS: usize = 2;
pub const MAX_VARIANTS: usize = 5;
/// The longest wait, in hours.
pub const MAX_WAIT_HOURS: i64 = 72;
/// What picks the winner: its share of the test's sent emails opened, opened by a person,
/// clicked, or clicked by a person (a link scanner's clicks apart).
pub const METRICS: [&str; 4] = ["opens", "humanOpens", "clicks", "humanClicks"];
const PICKS: [&str; 2] = ["auto", "manual"];
/// The variants' letters.
pub const LABELS: [&str; MAX_VARIANTS] = ["A", "B", "C", "D", "E"];

/// A variant as a client gives it: what it changes of the campaign's content.
#[derive(Debug, Default, Clone)]
pub struct VariantInput {
    pub subject: Option<String>,
    pub from_name: Option<String>,
    pub body: Option<String>,
    pub format: Option<String>,
    /// A template whose body (and subject, when the variant gives none) the variant takes.
    pub template_id: Option<String>,
}

/// A test as a client gives it.
#[derive(Debug, Default, Clone)]
pub struct TestInput {
    pub variants: Option<Vec<VariantInput>>,
    pub test_share: Option<i64>,
    pub metric: Option<String>,
    pub wait_hours: Option<i64>,
    pub pick: Option<String>,
}

/// A test checked without the database (bodies compiled: CPU work); [`save`] finishes it.
#[derive(Debug, Clone)]
pub struct Checked {
    test: AbTest,
    variants: Vec<Variant>,
}

fn one_of(field: &str, value: Option<String>, allowed: &[&str], default: &str) -> Result<String> {
    let value = value.unwrap_or_else(|| default.to_string());
    if allowed.contains(&value.as_str()) {
        return Ok(value);
    }
    Err(Error::Invalid(vec![
        FieldError::new(field, "invalid_enum_value", format!("{field} is one of {}", allowed.join(", ")))
            .received(json!(value)),
    ]))
}

fn within(field: &str, value: Option<i64>, range: std::ops::RangeInclusive<i64>, unit: &str) -> Result<i64> {
    let value = value.ok_or_else(|| Error::invalid(field, "required", format!("{field} is required")))?;
    if range.contains(&value) {
        return Ok(value);
    }
    Err(Error::Invalid(vec![
        FieldError::new(
            field,
            if value < *range.start() { "too_small" } else { "too_big" },
            format!("{field} is {} to {} {unit}", range.start(), range.end()),
        )
        .received(json!(value)),
    ]))
}

/// Checks a test's settings and compiles its variants' bodies.
pub fn check(input: TestInput) -> Result<Checked> {
    let given =
        input.variants.ok_or_else(|| Error::invalid("variants", "required", "variants is required"))?;
    if !(MIN_VARIANTS..=MAX_VARIANTS).contains(&given.len()) {
        return Err(Error::Invalid(vec![
            FieldError::new(
                "variants",
                if given.len() < MIN_VARIANTS { "too_small" } else { "too_big" },
                format!("a test has {MIN_VARIANTS} to {MAX_VARIANTS} variants"),
            )
            .received(json!(given.len())),
        ]));
    }
    let test = AbTest {
        share: within("testShare", input.test_share, 1..=100, "percent")?,
        metric: one_of("metric", input.metric, &METRICS, "clicks")?,
        wait_hours: within("waitHours", input.wait_hours, 1..=MAX_WAIT_HOURS, "hours")?,
        pick: one_of("pick", input.pick, &PICKS, "auto")?,
        phase: "READY".into(),
        ..AbTest::default()
    };
    let mut variants = Vec::with_capacity(given.len());
    for (i, v) in given.into_iter().enumerate() {
        let at = |name: &str| format!("variants[{i}].{name}");
        let subject = v.subject.filter(|s| !s.trim().is_empty());
        if let Some(subject) = &subject {
            compose::check_subject(subject, &at("subject"))?;
        }
        let from_name = v
            .from_name
            .map(|n| compose::check_name(&n, &at("fromName")))
            .transpose()?
            .filter(|n| !n.is_empty());
        let (body, format, source) = match v.body.filter(|b| !b.trim().is_empty()) {
            None => (None, None, None),
            Some(body) => {
                let content = formats::compile_named(v.format.as_deref(), &body, &at("body"))?;
                (Some(content.html), Some(content.format.as_str().to_string()), content.source)
            }
        };
        variants.push(Variant {
            position: i as i64,
            subject,
            from_name,
            body,
            format,
            source,
            template_id: v.template_id.filter(|t| !t.trim().is_empty()),
            ..Variant::default()
        });
    }
    Ok(Checked { test, variants })
}

/// Gives campaign `c` (DRAFT or SCHEDULED) the checked test, in place of any it had. A variant
/// made from a template without a body of its own takes the template's body, and its subject
/// when it has none: copied now, as a campaign made from a template copies it.
pub fn save(tx: &Tx, c: &Campaign, mut checked: Checked, now: i64) -> Result<()> {
    super::campaign_state::require_editable(c)?;
    for v in &mut checked.variants {
        let Some(id) = &v.template_id else { continue };
        let field = format!("variants[{}].templateId", v.position);
        let Some(t) = templates::get(tx, &c.project_id, id)? else {
            return Err(Error::Invalid(vec![
                FieldError::new(&field, "not_found", "no template of this project has this id")
                    .received(json!(id)),
            ]));
        };
        if v.body.is_none() {
            v.body = Some(t.body);
            v.format = Some(t.format);
            v.source = t.source;
        }
        v.subject.get_or_insert(t.subject);
    }
    ab_tests::set(tx, &c.id, &checked.test, &checked.variants, now)?;
    Ok(())
}

/// Takes the test off campaign `c` (DRAFT or SCHEDULED); 404 when it has none.
pub fn remove(tx: &Tx, c: &Campaign, now: i64) -> Result<()> {
    super::campaign_state::require_editable(c)?;
    if !ab_tests::clear(tx, &c.id, now)? {
        return Err(Error::not_found("This campaign has no A/B test"));
    }
    Ok(())
}

/// How many of a variant's emails count by `metric`.
pub fn measured(metric: &str, n: &VariantCounts) -> i64 {
    match metric {
        "opens" => n.opened,
        "humanOpens" => n.opened_by_people,
        "humanClicks" => n.clicked_by_people,
        _ => n.clicked,
    }
}

/// The variant that did best by `metric` among `variants`: the highest share of its sent
/// emails; the first of those tied.
pub fn winner_by(metric: &str, variants: &[Variant]) -> i64 {
    let score = |v: &Variant| (measured(metric, &v.counts), v.counts.sent);
    let mut best: Option<(&Variant, (i64, i64))> = None;
    for v in variants {
        let (count, sent) = score(v);
        let better = match best {
            None => true,
            // count/sent > best_count/best_sent, without division (a variant sent to nobody
            // scores 0).
            Some((_, (best_count, best_sent))) => {
                let mine = if sent == 0 { 0 } else { i128::from(count) * i128::from(best_sent.max(1)) };
                let theirs =
                    if best_sent == 0 { 0 } else { i128::from(best_count) * i128::from(sent.max(1)) };
                mine > theirs
            }
        };
        if better {
            best = Some((v, (count, sent)));
        }
    }
    best.map_or(0, |(v, _)| v.position)
}

/// What the decide job found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to decide: the campaign is gone, cancelled, or decided already.
    Nothing,
    /// The wait ends at this time.
    Later(i64),
    /// The wait is over and the winner is the user's to pick.
    ByHand,
    /// The metric picked this variant; the rest is being queued.
    Decided(i64),
}

/// Decides campaign `id`'s test by its metric if its wait is over.
pub fn decide_due(tx: &Tx, id: &str, now: i64) -> Result<Decision> {
    let Some(c) = campaigns::by_id(tx, id)? else { return Ok(Decision::Nothing) };
    let Some(test) = c.ab.as_ref().filter(|t| t.phase == "TESTING") else { return Ok(Decision::Nothing) };
    if CampaignStatus::of(&c) != Some(CampaignStatus::Sending) {
        return Ok(Decision::Nothing);
    }
    let Some(at) = test.decide_at else { return Ok(Decision::Nothing) };
    if at > now {
        return Ok(Decision::Later(at));
    }
    if test.pick == "manual" {
        return Ok(Decision::ByHand);
    }
    let winner = winner_by(&test.metric, &ab_tests::variants(tx, &c.id)?);
    finish(tx, &c, winner, "metric", now)?;
    Ok(Decision::Decided(winner))
}

fn finish(tx: &Tx, c: &Campaign, winner: i64, by: &str, now: i64) -> Result<bool> {
    if !ab_tests::decide(tx, &c.id, winner, by, now)? {
        return Ok(false);
    }
    queue::enqueue_soonest(tx, &jobs::campaign_send(&c.project_id, &c.id, now))?;
    Ok(true)
}

/// Whether campaign `c`'s `test` waits for its winner and may have it picked by hand: the
/// campaign is sending and the whole test share is queued (so its decision time is set).
pub fn awaits_pick(c: &Campaign, test: &AbTest) -> bool {
    CampaignStatus::of(c) == Some(CampaignStatus::Sending)
        && test.phase == "TESTING"
        && test.decide_at.is_some()
}

/// Picks variant `position` by hand as the winner of campaign `c`'s test, once the whole test
/// share is queued and until a winner is known; the rest of the audience gets it.
pub fn pick(tx: &Tx, c: &Campaign, position: i64, now: i64) -> Result<Campaign> {
    let test = c.ab.as_ref().ok_or_else(|| Error::not_found("This campaign has no A/B test"))?;
    let variants = ab_tests::variants(tx, &c.id)?;
    if !variants.iter().any(|v| v.position == position) {
        return Err(Error::Invalid(vec![
            FieldError::new(
                "variant",
                "invalid_value",
                format!("variant is the index of one of the test's {} variants, from 0", variants.len()),
            )
            .received(json!(position)),
        ]));
    }
    if !awaits_pick(c, test) || !finish(tx, c, position, "hand", now)? {
        let why = match test.phase.as_str() {
            "DECIDED" => "the winner is already picked".to_string(),
            _ if CampaignStatus::of(c) != Some(CampaignStatus::Sending) => {
                format!("the campaign is {}", c.status)
            }
            _ => "the test share is still being queued".to_string(),
        };
        return Err(Error::malformed(format!("A winner can be picked once the test has gone out; {why}")));
    }
    campaigns::by_id(tx, &c.id)?.ok_or_else(|| Error::not_found("This campaign no longer exists"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(position: i64, sent: i64, clicked: i64, people: i64) -> Variant {
        Variant {
            position,
            counts: VariantCounts { sent, clicked, clicked_by_people: people, ..VariantCounts::default() },
            ..Variant::default()
        }
    }

    #[test]
    fn the_best_rate_wins_and_ties_go_to_the_first() {
        let vs = [variant(0, 100, 10, 1), variant(1, 50, 6, 5), variant(2, 100, 12, 2)];
        assert_eq!(winner_by("clicks", &vs), 1, "6/50 beats 12/100");
        assert_eq!(winner_by("humanClicks", &vs), 1);
        let tied = [variant(0, 100, 10, 0), variant(1, 10, 1, 0), variant(2, 0, 0, 0)];
        assert_eq!(winner_by("clicks", &tied), 0);
        let none = [variant(0, 0, 0, 0), variant(1, 0, 0, 0)];
        assert_eq!(winner_by("opens", &none), 0);
        assert_eq!(winner_by("clicks", &[variant(0, 0, 0, 0), variant(1, 5, 1, 0)]), 1);
    }
}
