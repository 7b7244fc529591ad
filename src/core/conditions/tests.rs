//! Every operator on both paths, and a property test that SQL and memory always agree.

mod agreement;

use serde_json::{Value, json};

use super::eval::{DbFacts, matches};
use super::resolve::resolve;
use super::*;
use crate::db::contacts::Contact;
use crate::db::{Tx, audience, testing};

pub(crate) const PROJECT: &str = "p1";
pub(crate) const NOW: i64 = 1_800_000_000_000;
const DAY: i64 = 86_400_000;

/// A database with contacts (data, times), events and two segments: `static1` (static, with
/// stored members) and `dynamic1` (dynamic: `data.plan equals pro`).
pub(crate) struct Fixture {
    pub(crate) conn: Tx,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let conn = testing::memory();
        testing::segment(&conn, PROJECT, "static1", "STATIC", None);
        let pro = json!({ "logic": "AND", "groups": [{ "filters": [
            { "field": "data.plan", "operator": "equals", "value": "pro" }] }] });
        testing::segment(&conn, PROJECT, "dynamic1", "DYNAMIC", Some(&pro));
        // Events without a contact exist (the service may emit them); `NOT IN` must not see them.
        for name in ["e1", "e2", "login"] {
            testing::event(&conn, PROJECT, None, name, NOW - 1000);
        }
        Fixture { conn }
    }

    /// Adds a contact; returns its seq.
    pub(crate) fn contact(&self, email: &str, subscribed: bool, data: Value, created_at: i64) -> i64 {
        testing::contact(&self.conn, PROJECT, email, subscribed, &data, created_at)
    }

    pub(crate) fn event(&self, seq: i64, name: &str, at: i64) {
        testing::event(&self.conn, PROJECT, Some(seq), name, at);
    }

    fn member(&self, seq: i64) {
        crate::db::segments::add_member(&self.conn, "static1", seq, 0).unwrap();
    }

    fn contacts(&self) -> Vec<Contact> {
        testing::all_contacts(&self.conn)
    }

    /// Parses and resolves a tree (panics on a bad tree).
    pub(crate) fn condition(&self, tree: &Value) -> Condition {
        let mut condition = Condition::parse(tree, "condition").unwrap();
        resolve(&self.conn, PROJECT, &mut condition, None, "condition").unwrap();
        condition
    }

    pub(crate) fn by_sql(&self, condition: &Condition) -> Vec<i64> {
        let page = audience::matching_page(&self.conn, PROJECT, (condition, NOW), i64::MAX, 0).unwrap();
        page.iter().rev().map(|c| c.seq).collect()
    }

    pub(crate) fn in_memory(&self, condition: &Condition) -> Vec<i64> {
        self.contacts()
            .into_iter()
            .filter(|c| {
                let facts =
                    DbFacts { conn: &self.conn, contact_id: &c.id, contact_seq: c.seq, context: None };
                matches(condition, c, &facts, NOW)
            })
            .map(|c| c.seq)
            .collect()
    }

    /// The contacts matching one filter, after checking both paths agree.
    fn matching(&self, filter: Value) -> Vec<i64> {
        self.matching_tree(json!({ "logic": "AND", "groups": [{ "filters": [filter] }] }))
    }

    fn matching_tree(&self, tree: Value) -> Vec<i64> {
        let condition = self.condition(&tree);
        let (sql, memory) = (self.by_sql(&condition), self.in_memory(&condition));
        assert_eq!(sql, memory, "SQL and memory disagree on {tree}");
        sql
    }
}

fn f(field: &str, operator: &str, value: Value) -> Value {
    json!({ "field": field, "operator": operator, "value": value })
}

fn fu(field: &str, operator: &str, value: Value, unit: &str) -> Value {
    json!({ "field": field, "operator": operator, "value": value, "unit": unit })
}

fn iso(ms: i64) -> String {
    crate::clock::iso(ms)
}

#[test]
fn numbers_compare_as_numbers() {
    let fx = Fixture::new();
    let a = fx.contact("a@x.io", true, json!({ "age": 30 }), 0);
    let b = fx.contact("b@x.io", true, json!({ "age": 41.5 }), 0);
    let c = fx.contact("c@x.io", true, json!({ "age": "50" }), 0); // a string, not a number
    let d = fx.contact("d@x.io", true, json!({}), 0);
    assert_eq!(fx.matching(f("data.age", "equals", json!(30))), [a]);
    assert_eq!(fx.matching(f("data.age", "equals", json!("30"))), [a], "a numeric string equals the number");
    assert_eq!(fx.matching(f("data.age", "equals", json!(30.0))), [a]);
    assert_eq!(fx.matching(f("data.age", "notEquals", json!(30))), [b, c, d]);
    assert_eq!(fx.matching(f("data.age", "greaterThan", json!(30))), [b]);
    assert_eq!(fx.matching(f("data.age", "gt", json!("9"))), [a, b], "9 < 30 as numbers, not as text");
    assert_eq!(fx.matching(f("data.age", "lt", json!(41.5))), [a]);
    assert_eq!(fx.matching(f("data.age", "lessThan", json!(100))), [a, b]);
    assert_eq!(fx.matching(f("data.age", "greaterThanOrEqual", json!(41.5))), [b]);
    assert_eq!(fx.matching(f("data.age", "lessThanOrEqual", json!(30))), [a]);
    assert_eq!(fx.matching(f("data.age", "exists", Value::Null)), [a, b, c]);
    assert_eq!(fx.matching(f("data.age", "notExists", Value::Null)), [d]);
}

#[test]
fn strings_and_contains() {
    let fx = Fixture::new();
    let a = fx.contact("ada@lovelace.io", true, json!({ "plan": "Pro", "tags": ["vip", "beta", 7] }), 0);
    let b = fx.contact("grace@hopper.io", false, json!({ "plan": "pro plus", "tags": "vip-ish" }), 0);
    let c = fx.contact("alan@turing.io", true, json!({ "plan": null }), 0);
    assert_eq!(fx.matching(f("data.plan", "equals", json!("Pro"))), [a], "equals keeps letter case");
    assert_eq!(fx.matching(f("data.plan", "notEquals", json!("Pro"))), [b, c]);
    assert_eq!(fx.matching(f("data.plan", "contains", json!("PRO"))), [a, b], "contains ignores case");
    assert_eq!(fx.matching(f("data.plan", "notContains", json!("plus"))), [a, c]);
    assert_eq!(fx.matching(f("data.tags", "contains", json!("vip"))), [a, b], "array element, or substring");
    assert_eq!(fx.matching(f("data.tags", "contains", json!(7))), [a]);
    assert_eq!(
        fx.matching(f("data.tags", "contains", json!("bet"))),
        Vec::<i64>::new(),
        "elements match whole"
    );
    assert_eq!(fx.matching(f("data.plan", "exists", Value::Null)), [a, b], "null is missing");
    assert_eq!(fx.matching(f("email", "equals", json!("ADA@Lovelace.io"))), [a]);
    assert_eq!(fx.matching(f("email", "contains", json!("HOPPER"))), [b]);
    assert_eq!(fx.matching(f("email", "notContains", json!(".io"))), Vec::<i64>::new());
    assert_eq!(fx.matching(f("subscribed", "equals", json!(false))), [b]);
    assert_eq!(fx.matching(f("subscribed", "notEquals", json!("false"))), [a, c]);
}

#[test]
fn booleans_and_nested_paths() {
    let fx = Fixture::new();
    let a = fx.contact("a@x.io", true, json!({ "vip": true, "profile": { "tier": "gold", "n": 3 } }), 0);
    let b = fx.contact("b@x.io", true, json!({ "vip": false, "profile": { "tier": "silver" } }), 0);
    let c = fx.contact("c@x.io", true, json!({ "vip": "true", "profile": "gold" }), 0);
    assert_eq!(fx.matching(f("data.vip", "equals", json!(true))), [a]);
    assert_eq!(
        fx.matching(f("data.vip", "equals", json!("true"))),
        [a, c],
        "the string also equals a stored string"
    );
    assert_eq!(fx.matching(f("data.vip", "equals", json!(false))), [b]);
    assert_eq!(fx.matching(f("data.vip", "equals", json!(1))), Vec::<i64>::new(), "true is not 1");
    assert_eq!(fx.matching(f("data.vip", "gt", json!(0))), Vec::<i64>::new(), "booleans are not numbers");
    assert_eq!(fx.matching(f("data.profile.tier", "equals", json!("gold"))), [a]);
    assert_eq!(fx.matching(f("data.profile.n", "greaterThanOrEqual", json!(3))), [a]);
    assert_eq!(fx.matching(f("data.profile.tier.x", "exists", Value::Null)), Vec::<i64>::new());
}

#[test]
fn dates_within_and_older_than_in_each_unit() {
    let fx = Fixture::new();
    let recent = fx.contact(
        "a@x.io",
        true,
        json!({ "seen": iso(NOW - 30 * 60_000), "day": "2027-01-10" }),
        NOW - 30 * 60_000,
    );
    let hours = fx.contact("b@x.io", true, json!({ "seen": iso(NOW - 5 * 3_600_000) }), NOW - 5 * 3_600_000);
    let days = fx.contact("c@x.io", true, json!({ "seen": iso(NOW - 10 * DAY) }), NOW - 10 * DAY);
    let date_only =
        fx.contact("d@x.io", true, json!({ "seen": crate::clock::iso(NOW - DAY)[..10].to_string() }), NOW);
    let future = fx.contact("e@x.io", true, json!({ "seen": iso(NOW + DAY) }), NOW);
    let none = fx.contact("f@x.io", true, json!({ "seen": "last week" }), NOW);
    assert_eq!(fx.matching(fu("data.seen", "within", json!(45), "minutes")), [recent]);
    assert_eq!(fx.matching(fu("data.seen", "within", json!(6), "hours")), [recent, hours]);
    assert_eq!(fx.matching(fu("data.seen", "within", json!(11), "days")), [recent, hours, days]);
    assert_eq!(fx.matching(f("data.seen", "within", json!(11))), [recent, hours, days], "days by default");
    assert_eq!(fx.matching(fu("data.seen", "olderThan", json!(60), "minutes")), [hours, days]);
    assert_eq!(fx.matching(fu("data.seen", "olderThan", json!(1), "hours")), [hours, days]);
    assert_eq!(fx.matching(fu("data.seen", "olderThan", json!(2), "days")), [days]);
    // Only full ISO 8601 strings take within/olderThan; a date-only string does not.
    assert!(!fx.matching(fu("data.seen", "within", json!(3), "days")).contains(&date_only));
    assert!(!fx.matching(fu("data.seen", "within", json!(3), "days")).contains(&future));
    // Ordering operators take either form, and dates as values.
    assert_eq!(fx.matching(f("data.day", "greaterThan", json!("2027-01-09"))), [recent]);
    assert_eq!(fx.matching(f("data.seen", "lessThan", json!(iso(NOW - 6 * DAY)))), [days]);
    assert_eq!(fx.matching(f("data.seen", "greaterThanOrEqual", json!(iso(NOW)))), [future]);
    // createdAt and updatedAt.
    assert_eq!(fx.matching(fu("createdAt", "within", json!(1), "hours")), [recent, date_only, future, none]);
    assert_eq!(fx.matching(fu("createdAt", "olderThan", json!(1), "days")), [days]);
    assert_eq!(fx.matching(f("updatedAt", "lt", json!(iso(NOW - DAY)))), [days]);
    let day = &iso(NOW - 10 * DAY)[..10];
    assert_eq!(fx.matching(f("createdAt", "equals", json!(day))), [days], "a date equals its whole day");
    assert_eq!(fx.matching(f("createdAt", "equals", json!(iso(NOW)))), [date_only, future, none]);
}

#[test]
fn missing_fields_match_only_the_negative_operators() {
    let fx = Fixture::new();
    let only = fx.contact("a@x.io", true, json!({ "other": 1 }), 0);
    for (op, value, matched) in [
        ("equals", json!("x"), false),
        ("notEquals", json!("x"), true),
        ("contains", json!("x"), false),
        ("notContains", json!("x"), true),
        ("greaterThan", json!(1), false),
        ("lessThan", json!(1), false),
        ("gt", json!(1), false),
        ("lt", json!(1), false),
        ("greaterThanOrEqual", json!(1), false),
        ("lessThanOrEqual", json!(1), false),
        ("exists", Value::Null, false),
        ("notExists", Value::Null, true),
        ("within", json!(1), false),
        ("olderThan", json!(1), false),
    ] {
        let expected = if matched { vec![only] } else { vec![] };
        assert_eq!(fx.matching(f("data.missing", op, value)), expected, "{op}");
    }
}

#[test]
fn nested_and_or_trees() {
    let fx = Fixture::new();
    let a = fx.contact("a@x.io", true, json!({ "plan": "pro", "age": 20 }), 0);
    let b = fx.contact("b@x.io", false, json!({ "plan": "free", "age": 40 }), 0);
    let c = fx.contact("c@x.io", true, json!({ "plan": "free", "age": 60 }), 0);
    let or = json!({ "logic": "OR", "groups": [
        { "filters": [f("data.plan", "equals", json!("pro"))] },
        { "filters": [f("data.age", "gt", json!(50))] },
    ]});
    assert_eq!(fx.matching_tree(or.clone()), [a, c]);
    let and = json!({ "logic": "AND", "groups": [
        { "filters": [f("subscribed", "equals", json!(true))], "conditions": or },
        { "filters": [f("data.age", "lt", json!(50))] },
    ]});
    assert_eq!(fx.matching_tree(and), [a]);
    let nested_or = json!({ "groups": [{ "filters": [f("data.plan", "equals", json!("free"))], "conditions":
    { "logic": "OR", "groups": [
        { "filters": [f("subscribed", "equals", json!(false))] },
        { "filters": [f("data.age", "equals", json!(60))] },
    ]}}]});
    assert_eq!(fx.matching_tree(nested_or), [b, c]);
    assert_eq!(fx.matching_tree(json!({ "logic": "OR", "groups": [] })), [a, b, c], "an empty tree matches");
    assert_eq!(fx.matching_tree(json!({ "groups": [{ "filters": [] }] })), [a, b, c]);
}

#[test]
fn event_operators() {
    let fx = Fixture::new();
    let recent = fx.contact("a@x.io", true, json!({}), 0);
    let old = fx.contact("b@x.io", true, json!({}), 0);
    let both = fx.contact("c@x.io", true, json!({}), 0);
    let never = fx.contact("d@x.io", true, json!({}), 0);
    fx.event(recent, "login", NOW - 3_600_000);
    fx.event(old, "login", NOW - 40 * DAY);
    fx.event(both, "login", NOW - 40 * DAY);
    fx.event(both, "login", NOW - 60_000);
    fx.event(never, "signup", NOW - 60_000);
    let e = |op: &str| json!({ "field": "login", "operator": op });
    let eu =
        |op: &str, n: i64, unit: &str| json!({ "field": "login", "operator": op, "value": n, "unit": unit });
    assert_eq!(fx.matching(e("triggered")), [recent, old, both]);
    assert_eq!(fx.matching(e("notTriggered")), [never]);
    assert_eq!(fx.matching(eu("triggeredWithin", 2, "hours")), [recent, both]);
    assert_eq!(fx.matching(eu("triggeredWithin", 5, "minutes")), [both]);
    assert_eq!(fx.matching(eu("notTriggeredWithin", 30, "days")), [old, never]);
    assert_eq!(fx.matching(eu("triggeredOlderThan", 30, "days")), [old, both]);
}

#[test]
fn machine_events_match_only_filters_that_ask_for_them() {
    let fx = Fixture::new();
    let person = fx.contact("a@x.io", true, json!({}), 0);
    let proxy = fx.contact("b@x.io", true, json!({}), 0);
    let none = fx.contact("c@x.io", true, json!({}), 0);
    fx.event(person, "email.opened", NOW - 60_000);
    testing::machine_event(&fx.conn, PROJECT, proxy, "email.opened", NOW - 60_000, "privacy_proxy");
    let opened = |op: &str, machines: Value| json!({ "field": "email.opened", "operator": op, "value": 1, "unit": "days", "includeMachine": machines });
    assert_eq!(fx.matching(opened("triggered", Value::Null)), [person]);
    assert_eq!(fx.matching(opened("notTriggered", json!(false))), [proxy, none]);
    assert_eq!(fx.matching(opened("triggeredWithin", json!(true))), [person, proxy]);
    assert_eq!(fx.matching(opened("notTriggeredWithin", json!(true))), [none]);
    let e = Condition::parse(&tree_of(opened("triggered", json!("yes"))), "c").unwrap_err();
    assert_eq!(e.fields()[0].field, "c.groups[0].filters[0].includeMachine");
}

#[test]
fn campaign_filters_read_what_each_recipient_did_with_its_email() {
    let fx = Fixture::new();
    testing::campaign(&fx.conn, PROJECT, "c1");
    let person = fx.contact("a@x.io", true, json!({}), 0);
    let proxy = fx.contact("b@x.io", true, json!({}), 0);
    let nothing = fx.contact("c@x.io", true, json!({}), 0);
    let clicker = fx.contact("d@x.io", true, json!({}), 0);
    let scanned = fx.contact("e@x.io", true, json!({}), 0);
    let not_sent = fx.contact("f@x.io", true, json!({}), 0);
    testing::campaign_email(&fx.conn, "c1", person, &[("open", Some("privacy_proxy")), ("open", None)]);
    testing::campaign_email(&fx.conn, "c1", proxy, &[("open", Some("privacy_proxy"))]);
    testing::campaign_email(&fx.conn, "c1", nothing, &[]);
    testing::campaign_email(&fx.conn, "c1", clicker, &[("click", None)]);
    testing::campaign_email(&fx.conn, "c1", scanned, &[("click", Some("scanner"))]);
    let on = |op: &str, machines: bool| json!({ "field": "campaign.c1", "operator": op, "includeMachine": machines });
    assert_eq!(fx.matching(on("received", false)), [person, proxy, nothing, clicker, scanned]);
    assert_eq!(fx.matching(on("notReceived", false)), [not_sent]);
    assert_eq!(fx.matching(on("opened", false)), [person, clicker], "a click is an open");
    assert_eq!(fx.matching(on("notOpened", false)), [proxy, nothing, scanned], "machines' opens are none");
    assert_eq!(fx.matching(on("notOpened", true)), [nothing]);
    assert_eq!(fx.matching(on("clicked", false)), [clicker]);
    assert_eq!(fx.matching(on("clicked", true)), [clicker, scanned]);
    assert_eq!(fx.matching(on("notClicked", false)), [person, proxy, nothing, scanned]);
    let mut unknown =
        Condition::parse(&tree_of(json!({ "field": "campaign.c9", "operator": "opened" })), "c").unwrap();
    let e = resolve(&fx.conn, PROJECT, &mut unknown, None, "c").unwrap_err();
    assert_eq!(e.fields()[0].code, "not_found");
    assert!(Condition::parse(&tree_of(json!({ "field": "c1", "operator": "opened" })), "c").is_err());
}

#[test]
fn plunk_names_for_fields_events_and_segments_mean_the_same() {
    let fx = Fixture::new();
    let a = fx.contact("a@x.io", true, json!({ "plan": "pro" }), 0);
    let b = fx.contact("b@x.io", false, json!({ "plan": "free" }), 0);
    fx.event(a, "login", NOW - 60_000);
    fx.member(b);
    for (plunk, ours) in [
        (f("event.login", "triggered", Value::Null), f("login", "triggered", Value::Null)),
        (f("contact.email", "equals", json!("a@x.io")), f("email", "equals", json!("a@x.io"))),
        (f("contact.subscribed", "equals", json!(false)), f("subscribed", "equals", json!(false))),
        (f("contact.data.plan", "equals", json!("pro")), f("data.plan", "equals", json!("pro"))),
        (
            json!({ "field": "segment.static1", "operator": "memberOfSegment" }),
            json!({ "operator": "memberOfSegment", "value": "static1" }),
        ),
    ] {
        assert_eq!(fx.matching(plunk.clone()), fx.matching(ours.clone()), "{plunk}");
        let tree = |filter: Value| json!({ "logic": "AND", "groups": [{ "filters": [filter] }] });
        let stored = canonical(&tree(plunk.clone()));
        let mut expected = canonical(&tree(ours));
        if expected["groups"][0]["filters"][0]["value"].is_null() {
            expected["groups"][0]["filters"][0]["value"] = Value::Null;
        }
        assert_eq!(stored, expected, "stored in our own form: {plunk}");
    }
    assert_eq!(fx.matching(f("event.login", "triggered", Value::Null)), [a]);
    // What is not an alias stays what it was: an unknown field, and a contact field that does not exist.
    assert!(Condition::parse(&tree_of(f("contact.name", "equals", json!("x"))), "c").is_err());
    assert!(Condition::parse(&tree_of(f("segment.static1", "memberOfSegment", json!(""))), "c").is_err());
}

fn tree_of(filter: Value) -> Value {
    json!({ "logic": "AND", "groups": [{ "filters": [filter] }] })
}

#[test]
fn long_lists_match_on_both_paths() {
    // 100 groups of one filter each, ORed, and a group of 100 filters ANDed (the SQL stays
    // shallow: db::audience::compile's tests).
    let fx = Fixture::new();
    let a = fx.contact("a@x.io", true, json!({ "n": 42 }), 0);
    let b = fx.contact("b@x.io", true, json!({ "n": 7 }), 0);
    let groups: Vec<Value> =
        (0..100).map(|n| json!({ "filters": [f("data.n", "equals", json!(n))] })).collect();
    assert_eq!(fx.matching_tree(json!({ "logic": "OR", "groups": groups })), [a, b]);
    let filters: Vec<Value> = (0..100).map(|n| f("data.n", "notEquals", json!(1000 + n))).collect();
    assert_eq!(fx.matching_tree(json!({ "groups": [{ "filters": filters }] })), [a, b]);
}

#[test]
fn segment_of_segment() {
    let fx = Fixture::new();
    let a = fx.contact("a@x.io", true, json!({ "plan": "pro" }), 0);
    let b = fx.contact("b@x.io", true, json!({ "plan": "free" }), 0);
    let c = fx.contact("c@x.io", true, json!({ "plan": "pro" }), 0);
    fx.member(b);
    fx.member(c);
    let seg = |op: &str, id: &str| json!({ "operator": op, "value": id });
    assert_eq!(fx.matching(seg("memberOfSegment", "static1")), [b, c]);
    assert_eq!(fx.matching(seg("notMemberOfSegment", "static1")), [a]);
    assert_eq!(fx.matching(seg("memberOfSegment", "dynamic1")), [a, c]);
    assert_eq!(fx.matching(seg("notMemberOfSegment", "dynamic1")), [b]);
    let both = json!({ "groups": [{ "filters": [seg("memberOfSegment", "static1"), seg("memberOfSegment", "dynamic1")] }] });
    assert_eq!(fx.matching_tree(both), [c]);
}

#[test]
fn bad_trees_name_the_node() {
    let fx = Fixture::new();
    let check = |tree: Value, field: &str, code: &str| {
        let e = Condition::parse(&tree, "condition")
            .and_then(|mut c| resolve(&fx.conn, PROJECT, &mut c, None, "condition").map(|()| c))
            .unwrap_err();
        assert_eq!(e.kind(), "invalid", "{tree}");
        assert_eq!((e.fields()[0].field.as_str(), e.fields()[0].code.as_str()), (field, code), "{tree}");
    };
    let one = |filter: Value| json!({ "groups": [{ "filters": [filter] }] });
    check(json!([]), "condition", "invalid_type");
    check(json!({ "logic": "XOR", "groups": [] }), "condition.logic", "invalid_enum_value");
    check(json!({ "logic": "AND" }), "condition.groups", "required");
    let many_groups: Vec<Value> = (0..1000).map(|_| json!({ "filters": [] })).collect();
    check(json!({ "logic": "OR", "groups": many_groups }), "condition.groups", "too_big");
    check(json!({ "groups": [{ "filter": [] }] }), "condition.groups[0].filter", "unrecognized_key");
    check(
        one(f("data.plan", "is", json!("x"))),
        "condition.groups[0].filters[0].operator",
        "unknown_operator",
    );
    check(one(f("plan", "equals", json!("x"))), "condition.groups[0].filters[0].field", "unknown_field");
    check(one(f("data.", "equals", json!("x"))), "condition.groups[0].filters[0].field", "unknown_field");
    check(one(f("data.plan", "equals", Value::Null)), "condition.groups[0].filters[0].value", "required");
    check(one(f("data.plan", "gt", json!("soon"))), "condition.groups[0].filters[0].value", "required");
    check(
        one(fu("data.seen", "within", json!(3), "weeks")),
        "condition.groups[0].filters[0].unit",
        "invalid_enum_value",
    );
    check(one(f("data.seen", "within", json!(-3))), "condition.groups[0].filters[0].value", "invalid_value");
    check(
        one(f("subscribed", "gt", json!(1))),
        "condition.groups[0].filters[0].operator",
        "invalid_operator",
    );
    check(one(f("email", "within", json!(1))), "condition.groups[0].filters[0].operator", "invalid_operator");
    check(one(f("createdAt", "gt", json!(5))), "condition.groups[0].filters[0].value", "required");
    check(
        one(json!({ "field": "", "operator": "triggered" })),
        "condition.groups[0].filters[0].field",
        "invalid_string",
    );
    check(one(json!({ "operator": "memberOfSegment", "value": "nope" })), "condition", "not_found");
    check(
        json!({ "groups": [{ "filters": [f("data.a", "exists", Value::Null)], "conditions":
            { "groups": [{ "conditions": { "groups": [{ "conditions": { "groups": [{ "conditions":
            { "groups": [{ "conditions": { "groups": [{ "conditions": { "groups": [] } }] } }] } }] } }] } }] } }] }),
        "condition.groups[0].conditions.groups[0].conditions.groups[0].conditions.groups[0].conditions.groups[0].conditions.groups[0].conditions",
        "too_deep",
    );
}

#[test]
fn segments_cannot_refer_to_themselves() {
    let fx = Fixture::new();
    let itself =
        json!({ "groups": [{ "filters": [{ "operator": "memberOfSegment", "value": "dynamic1" }] }] });
    testing::set_condition(&fx.conn, "dynamic1", &itself);
    let tree = json!({ "groups": [{ "filters": [{ "operator": "memberOfSegment", "value": "dynamic1" }] }] });
    let mut condition = Condition::parse(&tree, "condition").unwrap();
    let e = resolve(&fx.conn, PROJECT, &mut condition, None, "condition").unwrap_err();
    assert_eq!(e.fields()[0].code, "cycle");
}

/// Facts of a workflow execution: its context, and nothing else.
struct InContext(serde_json::Map<String, Value>);

impl super::eval::Facts for InContext {
    fn event_times(&self, _: &str, _: bool) -> Option<(i64, i64)> {
        None
    }
    fn member_of(&self, _: &str) -> bool {
        false
    }
    fn context(&self) -> Option<&serde_json::Map<String, Value>> {
        Some(&self.0)
    }
}

#[test]
fn workflow_conditions_read_the_execution_context_and_only_they_may() {
    let tree = json!({ "groups": [{ "filters": [
        { "field": "event.order.total", "operator": "greaterThan", "value": 10 },
        { "field": "workflow.source", "operator": "equals", "value": "ads" }] }] });
    let err = Condition::parse(&tree, "condition").unwrap_err();
    assert_eq!(err.kind(), "invalid", "segments and audiences have no execution context");
    let condition = Condition::parse_in_workflow(&tree, "condition").unwrap();
    assert!(condition.references().fields.is_empty(), "context values are not contact fields");
    let contact = Contact {
        seq: 1,
        id: "c1".into(),
        project_id: PROJECT.into(),
        email: "a@x.test".into(),
        subscribed: true,
        snoozed_until: None,
        data: serde_json::Map::new(),
        created_at: 0,
        updated_at: 0,
    };
    let context = |total: i64, source: &str| {
        let value = json!({ "event": { "order": { "total": total } }, "source": source });
        InContext(value.as_object().unwrap().clone())
    };
    assert!(matches(&condition, &contact, &context(11, "ads"), 0));
    assert!(!matches(&condition, &contact, &context(9, "ads"), 0));
    assert!(!matches(&condition, &contact, &context(11, "mail"), 0));
    // A value the context lacks is missing.
    let missing = Condition::parse_in_workflow(
        &json!({ "groups": [{ "filters": [{ "field": "workflow.source", "operator": "notExists" }] }] }),
        "condition",
    )
    .unwrap();
    assert!(matches(&missing, &contact, &InContext(serde_json::Map::new()), 0));
    assert!(!matches(&missing, &contact, &context(1, "x"), 0));
}

#[test]
fn topics_read_a_choice_else_the_default_on_both_paths() {
    let fx = Fixture::new();
    let topic = |id: &str, default_opt_in: bool| crate::db::topics::Topic {
        id: id.into(),
        project_id: PROJECT.into(),
        name: id.into(),
        default_opt_in,
        ..Default::default()
    };
    // Topic ids as the API makes them.
    let (opt_in, opt_out) = ("01a21b9d-c440-71d0-805d-18a50047944f", "01a21b9d-c440-71d0-805d-18a500479450");
    crate::db::topics::insert(&fx.conn, &topic(opt_in, true)).unwrap();
    crate::db::topics::insert(&fx.conn, &topic(opt_out, false)).unwrap();
    let a = fx.contact("a@x.io", true, json!({}), 0);
    let b = fx.contact("b@x.io", true, json!({}), 0);
    let c = fx.contact("c@x.io", false, json!({}), 0);
    crate::db::topics::choose(&fx.conn, opt_in, a, false, 0).unwrap();
    crate::db::topics::choose(&fx.conn, opt_out, b, true, 0).unwrap();
    let on = |id: &str, value: bool| f(&format!("topic.{id}"), "equals", json!(value));
    assert_eq!(fx.matching(on(opt_in, true)), [b, c], "the default, except a's opt-out");
    assert_eq!(fx.matching(on(opt_in, false)), [a]);
    assert_eq!(fx.matching(f(&format!("topic.{opt_in}"), "notEquals", json!(true))), [a]);
    assert_eq!(fx.matching(on(opt_out, true)), [b], "only b's opt-in");
    assert_eq!(fx.matching(f(&format!("topic.{opt_out}"), "exists", Value::Null)), [a, b, c]);

    let check = |filter: Value, field: &str, code: &str| {
        let tree = json!({ "groups": [{ "filters": [filter] }] });
        let e = Condition::parse(&tree, "condition")
            .and_then(|mut c| resolve(&fx.conn, PROJECT, &mut c, None, "condition").map(|()| c))
            .unwrap_err();
        assert_eq!((e.fields()[0].field.as_str(), e.fields()[0].code.as_str()), (field, code), "{tree}");
    };
    let at = "condition.groups[0].filters[0]";
    check(f("topic.news", "equals", json!(true)), &format!("{at}.field"), "unknown_field");
    check(f(&format!("topic.{opt_in}"), "equals", json!("yes")), &format!("{at}.value"), "required");
    check(
        f(&format!("topic.{opt_in}"), "contains", json!("x")),
        &format!("{at}.operator"),
        "invalid_operator",
    );
    check(on("01a21b9d-c440-71d0-805d-18a500479999", true), "condition", "not_found");
}
