//! SQL and memory agree on random contacts and trees.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{DAY, Fixture, NOW, PROJECT, iso};
use crate::core::conditions::resolve::resolve;
use crate::core::conditions::{Condition, EVENT_OPERATORS, FIELD_OPERATORS, SEGMENT_OPERATORS};

fn scalar_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(|n| json!(n)),
        (-8i64..8).prop_map(|n| json!(n as f64 / 4.0)),
        prop::sample::select(vec!["pro", "Pro", "free", "", "1", "2.5", "true", "x pro y", "PRO plan"])
            .prop_map(|s| json!(s)),
        (-3i64..4).prop_map(|d| json!(iso(NOW + d * DAY / 2))),
        (-3i64..4).prop_map(|d| json!(iso(NOW + d * DAY)[..10].to_string())),
    ]
}

fn stored_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => scalar_value(),
        1 => prop::collection::vec(scalar_value(), 0..3).prop_map(Value::Array),
        1 => scalar_value().prop_map(|v| json!({ "d": v })),
    ]
}

#[derive(Debug, Clone)]
struct RandomContact {
    email: String,
    subscribed: bool,
    data: Value,
    created: i64,
    events: Vec<(String, i64)>,
    member: bool,
}

fn random_contact() -> impl Strategy<Value = RandomContact> {
    (
        prop::sample::select(vec!["ada@pro.io", "grace@x.io", "Alan@Free.io", "linus@pro.dev"]),
        any::<bool>(),
        prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c"]), stored_value(), 0..3),
        -4i64..4,
        prop::collection::vec((prop::sample::select(vec!["e1", "e2"]), -60i64..2), 0..3),
        any::<bool>(),
    )
        .prop_map(|(email, subscribed, data, created, events, member)| RandomContact {
            email: email.to_lowercase(),
            subscribed,
            data: Value::Object(data.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            created: NOW + created * DAY / 2,
            events: events.into_iter().map(|(n, h)| (n.to_string(), NOW + h * 3_600_000)).collect(),
            member,
        })
}

fn random_filter() -> impl Strategy<Value = Value> {
    let field = prop::sample::select(vec![
        "email",
        "subscribed",
        "createdAt",
        "updatedAt",
        "data.a",
        "data.b",
        "data.c",
        "data.a.d",
        "data.c.d",
    ]);
    let op = prop::sample::select(FIELD_OPERATORS.to_vec());
    let unit = prop::sample::select(vec![None, Some("minutes"), Some("hours"), Some("days")]);
    let field_filter = (field, op, scalar_value(), unit).prop_map(|(field, op, value, unit)| {
        let mut f = json!({ "field": field, "operator": op, "value": value });
        if let (Some(unit), "within" | "olderThan") = (unit, op) {
            f["unit"] = json!(unit);
            f["value"] = json!(value.as_f64().map(f64::abs).filter(|v| *v > 0.0).unwrap_or(1.0) * 12.0);
        }
        f
    });
    let event_filter =
        (prop::sample::select(vec!["e1", "e2"]), prop::sample::select(EVENT_OPERATORS.to_vec()), 1i64..50)
            .prop_map(
                |(name, op, hours)| json!({ "field": name, "operator": op, "value": hours, "unit": "hours" }),
            );
    let segment_filter =
        (prop::sample::select(SEGMENT_OPERATORS.to_vec()), prop::sample::select(vec!["static1", "dynamic1"]))
            .prop_map(|(op, id)| json!({ "operator": op, "value": id }));
    prop_oneof![6 => field_filter, 2 => event_filter, 1 => segment_filter]
}

fn random_tree() -> impl Strategy<Value = Value> {
    let group = |inner: BoxedStrategy<Option<Value>>| {
        (prop::collection::vec(random_filter(), 1..4), inner).prop_map(|(filters, conditions)| {
            match conditions {
                Some(c) => json!({ "filters": filters, "conditions": c }),
                None => json!({ "filters": filters }),
            }
        })
    };
    let logic = || prop::sample::select(vec!["AND", "OR"]);
    let leaf = (logic(), prop::collection::vec(group(Just(None).boxed()), 0..3))
        .prop_map(|(logic, groups)| json!({ "logic": logic, "groups": groups }));
    let nested = prop::option::of(leaf).boxed();
    (logic(), prop::collection::vec(group(nested), 1..4))
        .prop_map(|(logic, groups)| json!({ "logic": logic, "groups": groups }))
}

/// The tree without the filters that do not parse on their own (a random filter may pair an
/// operator with a value it does not take), so most generated trees are tested, not skipped.
fn valid_only(tree: &Value) -> Value {
    let mut tree = tree.clone();
    for group in tree["groups"].as_array_mut().into_iter().flatten() {
        if let Some(filters) = group["filters"].as_array_mut() {
            filters.retain(|f| Condition::parse(&json!({ "groups": [{ "filters": [f] }] }), "c").is_ok());
        }
        if group.get("conditions").is_some() {
            group["conditions"] = valid_only(&group["conditions"]);
        }
    }
    tree
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn sql_and_memory_agree(contacts in prop::collection::vec(random_contact(), 3..12), trees in prop::collection::vec(random_tree(), 4)) {
        let fx = Fixture::new();
        for (i, c) in contacts.iter().enumerate() {
            let seq = fx.contact(&format!("{i}{}", c.email), c.subscribed, c.data.clone(), c.created);
            for (name, at) in &c.events {
                fx.event(seq, name, *at);
            }
            if c.member {
                fx.member(seq);
            }
        }
        for tree in &trees {
            let tree = &valid_only(tree);
            let mut condition = Condition::parse(tree, "condition").unwrap();
            resolve(&fx.conn, PROJECT, &mut condition, None, "condition").unwrap();
            prop_assert_eq!(fx.by_sql(&condition), fx.in_memory(&condition), "tree {}", tree);
        }
    }
}
