//! Deciding one contact in memory (workflow conditions, and the other half of the agreement
//! test with the SQL `db::audience` compiles).

use serde_json::{Map, Value};

use super::{Bound, CampaignTest, Condition, EventTest, Field, Filter, Logic, Target, Test};
use crate::clock;
use crate::db::contacts::Contact;
use crate::db::engagements::Received;
use crate::db::{Tx, events, segments, topics};

/// What a condition needs to know about a contact beyond its own fields.
pub trait Facts {
    /// The first and last time the contact triggered `name`: by people only, or by machines too.
    fn event_times(&self, name: &str, machines: bool) -> Option<(i64, i64)>;
    /// What the contact did with campaign `id`'s email, if it was sent to them.
    fn campaign_email(&self, _campaign: &str) -> Option<Received> {
        None
    }
    /// Whether the contact is a stored member of the (static) segment `id`.
    fn member_of(&self, segment: &str) -> bool;
    /// The contact's own choice for topic `id`, if it made one.
    fn topic_choice(&self, _topic: &str) -> Option<bool> {
        None
    }
    /// The workflow execution's context, for `event.*` and `workflow.*` fields: `event.<path>`
    /// reads `<path>` under its `event` key, `workflow.<path>` reads `<path>` from the top.
    fn context(&self) -> Option<&Map<String, Value>> {
        None
    }
}

/// Whether `contact` matches `condition` at `now` (ms).
pub fn matches(condition: &Condition, contact: &Contact, facts: &dyn Facts, now: i64) -> bool {
    let group = |g: &super::Group| {
        g.filters.iter().all(|f| filter(f, contact, facts, now))
            && g.conditions.as_ref().is_none_or(|c| matches(c, contact, facts, now))
    };
    match condition.logic {
        _ if condition.groups.is_empty() => true,
        Logic::And => condition.groups.iter().all(group),
        Logic::Or => condition.groups.iter().any(group),
    }
}

fn filter(filter: &Filter, contact: &Contact, facts: &dyn Facts, now: i64) -> bool {
    match filter {
        Filter::Field { field, test } => field_test(field, test, contact, facts, now),
        Filter::Event { name, test, machines } => {
            let times = facts.event_times(name, *machines);
            match test {
                EventTest::Triggered => times.is_some(),
                EventTest::NotTriggered => times.is_none(),
                EventTest::Within(span) => times.is_some_and(|(_, last)| last >= now - span),
                EventTest::NotWithin(span) => times.is_none_or(|(_, last)| last < now - span),
                EventTest::OlderThan(span) => times.is_some_and(|(first, _)| first < now - span),
            }
        }
        Filter::Segment { id, member, target } => {
            let is_member = match target {
                Target::Unresolved => false,
                Target::Static => facts.member_of(id),
                Target::Dynamic(condition) => matches(condition, contact, facts, now),
            };
            is_member == *member
        }
        Filter::Campaign { id, test, machines } => {
            let got = facts.campaign_email(id);
            let opened = got.is_some_and(|r| if *machines { r.opened } else { r.opened_by_people });
            let clicked = got.is_some_and(|r| if *machines { r.clicked } else { r.clicked_by_people });
            match test {
                CampaignTest::Received => got.is_some(),
                CampaignTest::NotReceived => got.is_none(),
                CampaignTest::Opened => opened,
                CampaignTest::NotOpened => got.is_some() && !opened,
                CampaignTest::Clicked => clicked,
                CampaignTest::NotClicked => got.is_some() && !clicked,
            }
        }
    }
}

fn field_test(field: &Field, test: &Test, contact: &Contact, facts: &dyn Facts, now: i64) -> bool {
    let time = match field {
        Field::CreatedAt => Some(contact.created_at),
        Field::UpdatedAt => Some(contact.updated_at),
        _ => None,
    };
    if let Some(ms) = time {
        return match test {
            Test::EqualsTime { from, to, negated } => (*from <= ms && ms < *to) != *negated,
            Test::Compare { op, bound: Bound::Date(bound) } => op.holds(ms.cmp(bound)),
            Test::Exists { negated } => !negated,
            Test::Age { span, older } => age(ms, *span, *older, now),
            _ => false,
        };
    }
    let owned;
    let value: Option<&Value> = match field {
        Field::Email => {
            owned = Value::String(contact.email.clone());
            Some(&owned)
        }
        Field::Subscribed => {
            owned = Value::Bool(contact.subscribed);
            Some(&owned)
        }
        Field::Snoozed => {
            owned = Value::Bool(contact.snoozed_until.is_some_and(|until| until > now));
            Some(&owned)
        }
        Field::Topic { id, default_opt_in } => {
            owned = Value::Bool(facts.topic_choice(id).unwrap_or(*default_opt_in));
            Some(&owned)
        }
        Field::Data(path) => lookup(&contact.data, path),
        Field::Context { event: false, path } => facts.context().and_then(|c| lookup(c, path)),
        Field::Context { event: true, path } => {
            facts.context().and_then(|c| c.get("event")?.as_object()).and_then(|e| lookup(e, path))
        }
        Field::CreatedAt | Field::UpdatedAt => None,
    };
    match test {
        Test::Equals { value: scalar, negated } => value.is_some_and(|v| scalar.equals(v)) != *negated,
        Test::Contains { needle, element, negated } => {
            let found = match value {
                Some(Value::String(text)) => text.to_ascii_lowercase().contains(needle.as_str()),
                Some(Value::Array(items)) => items.iter().any(|item| element.equals(item)),
                _ => false,
            };
            found != *negated
        }
        Test::Compare { op, bound } => match (value, bound) {
            (Some(Value::Number(n)), Bound::Number(b)) => {
                n.as_f64().and_then(|n| n.partial_cmp(b)).is_some_and(|o| op.holds(o))
            }
            (Some(Value::String(s)), Bound::Date(b)) => {
                clock::parse_date(s).is_some_and(|(ms, _)| op.holds(ms.cmp(b)))
            }
            _ => false,
        },
        Test::Exists { negated } => value.is_some() != *negated,
        Test::Age { span, older } => match value {
            Some(Value::String(s)) => {
                clock::parse_date(s).is_some_and(|(ms, full)| full && age(ms, *span, *older, now))
            }
            _ => false,
        },
        Test::EqualsTime { .. } => false,
    }
}

/// `within` (in `[now - span, now]`) or `olderThan` (before `now - span`).
fn age(ms: i64, span: i64, older: bool, now: i64) -> bool {
    if older { ms < now - span } else { now - span <= ms && ms <= now }
}

/// The value at a dotted path; `None` when absent or null.
pub fn lookup<'a>(data: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (last, parents) = path.split_last()?;
    let mut object = data;
    for part in parents {
        object = object.get(part)?.as_object()?;
    }
    object.get(last).filter(|v| !v.is_null())
}

/// [`Facts`] read from the database, for one contact.
pub struct DbFacts<'a> {
    pub conn: &'a Tx,
    pub contact_id: &'a str,
    pub contact_seq: i64,
    /// A workflow execution's context, when deciding a CONDITION step.
    pub context: Option<&'a Map<String, Value>>,
}

impl Facts for DbFacts<'_> {
    fn context(&self) -> Option<&Map<String, Value>> {
        self.context
    }

    fn event_times(&self, name: &str, machines: bool) -> Option<(i64, i64)> {
        events::first_and_last(self.conn, self.contact_id, name, machines).unwrap_or_else(|e| {
            tracing::error!("reading a contact's events for a condition: {e}");
            None
        })
    }

    fn campaign_email(&self, campaign: &str) -> Option<Received> {
        crate::db::engagements::received(self.conn, campaign, self.contact_id).unwrap_or_else(|e| {
            tracing::error!("reading a contact's campaign email for a condition: {e}");
            None
        })
    }

    fn member_of(&self, segment: &str) -> bool {
        segments::is_member(self.conn, segment, self.contact_seq).unwrap_or_else(|e| {
            tracing::error!("reading a segment's members for a condition: {e}");
            false
        })
    }

    fn topic_choice(&self, topic: &str) -> Option<bool> {
        topics::choice(self.conn, topic, self.contact_seq).unwrap_or_else(|e| {
            tracing::error!("reading a contact's topics for a condition: {e}");
            None
        })
    }
}
