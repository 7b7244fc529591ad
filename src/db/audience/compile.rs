//! Compiling a condition to an SQL expression over `contacts c`, with its parameters.
//!
//! Custom fields are read with SQLite's JSON functions: `json_type` says what is stored (absent
//! and `null` both count as missing) and `json_extract` gives the value; dates go through the
//! `tidings_date` function (db::functions), which shares its parser with the in-memory path, and
//! equality tests with a text value first look for its bytes in the stored JSONB with
//! `tidings_has`.
//! A negated filter is `NOT coalesce(…, 0)`, so a missing value (NULL) is false before the
//! negation and `notEquals`/`notContains`/`notExists` match missing fields, as in
//! `core::conditions::eval`.
//! Elsewhere NULL may stay: AND and OR of tests where NULL means false give the same rows as
//! with every NULL read as false.

use super::tree::{
    Bound, CampaignTest, Comparison, Condition, EventTest, Field, Filter, Logic, Scalar, Target, Test,
};
use crate::db::fields::json_path;

/// A value bound to a statement's parameter.
type SqlValue = rusqlite::types::Value;

/// A condition compiled to an SQL expression over `contacts c`, and its positional (`?`)
/// parameters in order.
#[derive(Debug, Clone, Default)]
pub(super) struct Compiled {
    pub(super) sql: String,
    pub(super) params: Vec<SqlValue>,
}

/// Compiles `condition` for the contacts of `project` at `now` (ms).
pub(super) fn compile(condition: &Condition, project: &str, now: i64) -> Compiled {
    let mut out = Builder { compiled: Compiled::default(), project, now };
    out.condition(condition);
    out.compiled
}

/// Most values one prefilter call looks for.
const MAX_NEEDLES: usize = 16;

/// The bytes a contact's stored JSONB holds when a field equals `scalar`, if there are such:
/// only text without escapes (stored data is written by serde_json, which escapes nothing else,
/// and JSONB keeps a string with an escape escaped). Numbers have several spellings and
/// booleans are a bare type byte in JSONB: a value that may be either has none.
fn needle(scalar: &Scalar) -> Option<String> {
    let safe = |t: &str| !t.chars().any(|c| c == '"' || c == '\\' || c.is_control());
    let text = scalar.text.as_deref().filter(|t| !t.is_empty() && safe(t))?;
    (scalar.number.is_none() && scalar.boolean.is_none()).then(|| text.to_string())
}

/// An ordering operator in SQL.
fn operator(op: Comparison) -> &'static str {
    match op {
        Comparison::Greater => ">",
        Comparison::Less => "<",
        Comparison::GreaterOrEqual => ">=",
        Comparison::LessOrEqual => "<=",
    }
}

struct Builder<'a> {
    compiled: Compiled,
    project: &'a str,
    now: i64,
}

/// Where a value comes from: a custom field, or an element of a stored array (`json_each` as `j`).
#[derive(Clone, Copy)]
enum Operand<'p> {
    Data(&'p str),
    Element,
}

impl Builder<'_> {
    fn text(&mut self, sql: &str) {
        self.compiled.sql.push_str(sql);
    }

    fn bind(&mut self, value: SqlValue) {
        self.compiled.sql.push('?');
        self.compiled.params.push(value);
    }

    fn number(&mut self, n: f64) {
        if n.fract() == 0.0 && n.abs() < 9.0e15 {
            self.bind(SqlValue::Integer(n as i64));
        } else {
            self.bind(SqlValue::Real(n));
        }
    }

    /// Writes the terms `from..to` joined by `joiner` as a balanced tree of parentheses, so
    /// the expression is log2(count) deep, not `count` (SQLite refuses an expression over 1,000
    /// deep); no terms is `1`.
    fn balanced(&mut self, (from, to): (usize, usize), joiner: &str, term: &mut dyn FnMut(&mut Self, usize)) {
        match to.saturating_sub(from) {
            0 => self.text("1"),
            1 => term(self, from),
            n => {
                let mid = from + n / 2;
                self.text("(");
                self.balanced((from, mid), joiner, term);
                self.text(joiner);
                self.balanced((mid, to), joiner, term);
                self.text(")");
            }
        }
    }

    fn condition(&mut self, condition: &Condition) {
        let joiner = if condition.logic == Logic::And { " AND " } else { " OR " };
        self.text("(");
        self.balanced((0, condition.groups.len()), joiner, &mut |b, i| {
            let group = &condition.groups[i];
            let nested = usize::from(group.conditions.is_some());
            b.text("(");
            b.hoisted_prefilters(&group.filters);
            b.balanced((0, group.filters.len() + nested), " AND ", &mut |b, j| match group.filters.get(j) {
                Some(filter) => b.filter(filter),
                None => b.condition(group.conditions.as_deref().expect("the nested condition")),
            });
            b.text(")");
        });
        self.text(")");
    }

    fn filter(&mut self, filter: &Filter) {
        let negated = match filter {
            Filter::Field { test, .. } => match test {
                Test::Equals { negated, .. }
                | Test::EqualsTime { negated, .. }
                | Test::Contains { negated, .. }
                | Test::Exists { negated } => *negated,
                Test::Compare { .. } | Test::Age { .. } => false,
            },
            Filter::Event { test, .. } => matches!(test, EventTest::NotTriggered | EventTest::NotWithin(_)),
            Filter::Segment { member, .. } => !member,
            Filter::Campaign { test, .. } => *test == CampaignTest::NotReceived,
        };
        // A test on a missing value is NULL. Under AND and OR a NULL acts as false, which is
        // what a missing value means, so only negated tests need it turned into 0 first.
        self.text(if negated { "NOT coalesce(" } else { "(" });
        match filter {
            Filter::Field { field, test } => self.field(field, test),
            Filter::Event { name, test, machines } => self.event(name, *test, *machines),
            Filter::Segment { id, target, .. } => match target {
                Target::Unresolved => self.text("0"),
                Target::Static => {
                    self.text("c.seq IN (SELECT contact_seq FROM segment_members WHERE segment_id = ");
                    self.bind(SqlValue::Text(id.clone()));
                    self.text(")");
                }
                Target::Dynamic(condition) => self.condition(condition),
            },
            Filter::Campaign { id, test, machines } => self.campaign(id, *test, *machines),
        }
        self.text(if negated { ", 0)" } else { ")" });
    }

    fn event(&mut self, name: &str, test: EventTest, machines: bool) {
        self.text("c.id IN (SELECT contact_id FROM events WHERE project_id = ");
        self.bind(SqlValue::Text(self.project.to_string()));
        self.text(" AND name = ");
        self.bind(SqlValue::Text(name.to_string()));
        self.text(" AND contact_id IS NOT NULL");
        if !machines {
            self.text(" AND machine IS NULL");
        }
        match test {
            EventTest::Triggered | EventTest::NotTriggered => {}
            EventTest::Within(span) | EventTest::NotWithin(span) => {
                self.text(" AND created_at >= ");
                self.bind(SqlValue::Integer(self.now - span));
            }
            EventTest::OlderThan(span) => {
                self.text(" AND created_at < ");
                self.bind(SqlValue::Integer(self.now - span));
            }
        }
        self.text(")");
    }

    /// The contacts campaign `id` was sent to, narrowed by what they did with it (a
    /// `NotReceived` filter is this set negated by the caller).
    fn campaign(&mut self, id: &str, test: CampaignTest, machines: bool) {
        self.text(
            "c.id IN (SELECT m.contact_id FROM emails m WHERE m.source_type = 'CAMPAIGN' AND m.sent_at IS NOT NULL
             AND m.contact_id IS NOT NULL AND m.campaign_id = ",
        );
        self.bind(SqlValue::Text(id.to_string()));
        let (negated, kinds, column) = match test {
            CampaignTest::Received | CampaignTest::NotReceived => return self.text(")"),
            CampaignTest::Opened => (false, "'open', 'click'", "m.opened_at"),
            CampaignTest::NotOpened => (true, "'open', 'click'", "m.opened_at"),
            CampaignTest::Clicked => (false, "'click'", "m.clicked_at"),
            CampaignTest::NotClicked => (true, "'click'", "m.clicked_at"),
        };
        self.text(if negated { " AND NOT " } else { " AND " });
        if machines {
            self.text(&format!("{column} IS NOT NULL)"));
        } else {
            self.text(&format!(
                "EXISTS (SELECT 1 FROM email_engagements e WHERE e.email_id = m.id AND e.kind IN ({kinds})
                 AND e.machine IS NULL))"
            ));
        }
    }

    fn field(&mut self, field: &Field, test: &Test) {
        let column = match field {
            Field::CreatedAt => Some("c.created_at"),
            Field::UpdatedAt => Some("c.updated_at"),
            _ => None,
        };
        if let Some(column) = column {
            return self.time(column, test);
        }
        match (field, test) {
            (Field::Data(path), _) => {
                let path = json_path(&path.join("."));
                self.data(&path, test);
            }
            (Field::Email, Test::Equals { value, .. }) => match &value.text {
                Some(text) => {
                    self.text("c.email = ");
                    self.bind(SqlValue::Text(text.clone()));
                }
                None => self.text("0"),
            },
            (Field::Email, Test::Contains { needle, .. }) => {
                self.text("instr(lower(c.email), ");
                self.bind(SqlValue::Text(needle.clone()));
                self.text(") > 0");
            }
            (Field::Subscribed, Test::Equals { value, .. }) => match value.boolean {
                Some(b) => self.text(if b { "c.subscribed = 1" } else { "c.subscribed = 0" }),
                None => self.text("0"),
            },
            (Field::Topic { id, default_opt_in }, Test::Equals { value, .. }) => match value.boolean {
                Some(b) => {
                    self.text("coalesce((SELECT ct.subscribed FROM contact_topics ct WHERE ct.topic_id = ");
                    self.bind(SqlValue::Text(id.clone()));
                    self.text(&format!(
                        " AND ct.contact_seq = c.seq), {}) = {}",
                        i32::from(*default_opt_in),
                        i32::from(b)
                    ));
                }
                None => self.text("0"),
            },
            (Field::Snoozed, Test::Equals { value, .. }) => match value.boolean {
                Some(b) => {
                    self.text("coalesce(c.snoozed_until > ");
                    self.bind(SqlValue::Integer(self.now));
                    self.text(&format!(", 0) = {}", i32::from(b)));
                }
                None => self.text("0"),
            },
            (
                Field::Email | Field::Subscribed | Field::Snoozed | Field::Topic { .. },
                Test::Exists { .. },
            ) => self.text("1"),
            _ => self.text("0"),
        }
    }

    fn time(&mut self, column: &str, test: &Test) {
        match test {
            Test::EqualsTime { from, to, .. } => {
                self.text(&format!("({column} >= "));
                self.bind(SqlValue::Integer(*from));
                self.text(&format!(" AND {column} < "));
                self.bind(SqlValue::Integer(*to));
                self.text(")");
            }
            Test::Compare { op, bound: Bound::Date(ms) } => {
                self.text(&format!("{column} {} ", operator(*op)));
                self.bind(SqlValue::Integer(*ms));
            }
            Test::Exists { .. } => self.text("1"),
            Test::Age { span, older } => {
                if *older {
                    self.text(&format!("{column} < "));
                    self.bind(SqlValue::Integer(self.now - span));
                } else {
                    self.text(&format!("{column} BETWEEN "));
                    self.bind(SqlValue::Integer(self.now - span));
                    self.text(" AND ");
                    self.bind(SqlValue::Integer(self.now));
                }
            }
            _ => self.text("0"),
        }
    }

    /// `json_type(...)` of the operand.
    fn kind(&mut self, operand: Operand<'_>) {
        match operand {
            Operand::Data(path) => {
                self.text("json_type(c.data, ");
                self.bind(SqlValue::Text(path.to_string()));
                self.text(")");
            }
            Operand::Element => self.text("j.type"),
        }
    }

    /// The SQL value of the operand.
    fn value(&mut self, operand: Operand<'_>) {
        match operand {
            Operand::Data(path) => {
                self.text("json_extract(c.data, ");
                self.bind(SqlValue::Text(path.to_string()));
                self.text(")");
            }
            Operand::Element => self.text("j.value"),
        }
    }

    /// Whether the operand equals `scalar` (see [`Scalar::equals`]).
    ///
    /// `json_extract` gives a JSON string as SQL text, a number as a number, `true`/`false` as
    /// 1/0, and an array or object as its JSON text, and SQL compares a number with text as never
    /// equal. So the type check (a second JSON call) is needed only where a value could pass for
    /// another type: text that looks like an array or object, the numbers 0 and 1 (booleans),
    /// and booleans themselves. It comes after the cheaper test, which usually decides alone.
    fn equals(&mut self, operand: Operand<'_>, scalar: &Scalar) {
        let mut parts = 0;
        self.text("(");
        if let Some(text) = &scalar.text {
            self.text("(");
            self.value(operand);
            self.text(" = ");
            self.bind(SqlValue::Text(text.clone()));
            if text.starts_with(['[', '{']) {
                self.text(" AND ");
                self.kind(operand);
                self.text(" = 'text'");
            }
            self.text(")");
            parts += 1;
        }
        if let Some(n) = scalar.number {
            if parts > 0 {
                self.text(" OR ");
            }
            self.text("(");
            self.value(operand);
            self.text(" = ");
            self.number(n);
            if n == 0.0 || n == 1.0 {
                self.text(" AND ");
                self.kind(operand);
                self.text(" IN ('integer', 'real')");
            }
            self.text(")");
            parts += 1;
        }
        if let Some(b) = scalar.boolean {
            if parts > 0 {
                self.text(" OR ");
            }
            self.kind(operand);
            self.text(if b { " = 'true'" } else { " = 'false'" });
            parts += 1;
        }
        if parts == 0 {
            self.text("0");
        }
        self.text(")");
    }

    /// A cheap test that every row matching `scalar` at a custom field passes (see
    /// [`Self::needles`]); rows that fail it skip reading `data` at all.
    fn prefilter(&mut self, scalar: &Scalar) {
        self.needles(needle(scalar).into_iter().collect());
    }

    /// `tidings_has(c.data, …) AND ` for bytes the stored JSONB of every matching row holds:
    /// text values as they are (keys are there too, so it only narrows). Longest first, in
    /// one call: a long value rarely occurs by chance, so it usually decides alone. At most
    /// [`MAX_NEEDLES`] (SQLite caps a function's arguments; the rest are only not prefiltered).
    fn needles(&mut self, mut needles: Vec<String>) {
        if needles.is_empty() {
            return;
        }
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.truncate(MAX_NEEDLES);
        self.text("tidings_has(c.data");
        for needle in needles {
            self.text(", ");
            self.bind(SqlValue::Text(needle));
        }
        self.text(") AND ");
    }

    /// The prefilters of a group's equality tests on custom fields, ahead of all its tests: a
    /// group is an AND, so each is necessary for the whole group, and a row that lacks one
    /// value skips every JSON read of the group (at 1,000,000 contacts, one thread, three
    /// filters: 242 ms with each prefilter beside its own test, 192 ms with both in front). A
    /// negated test keeps its prefilter inside its negation ([`Self::data`]).
    fn hoisted_prefilters(&mut self, filters: &[Filter]) {
        let needles = filters.iter().filter_map(|filter| match filter {
            Filter::Field { field: Field::Data(_), test: Test::Equals { value, negated: false } } => {
                needle(value)
            }
            _ => None,
        });
        self.needles(needles.collect());
    }

    fn data(&mut self, path: &str, test: &Test) {
        let operand = Operand::Data(path);
        match test {
            Test::Equals { value, negated } => {
                self.text("(");
                if *negated {
                    self.prefilter(value);
                }
                self.equals(operand, value);
                self.text(")");
            }
            Test::Contains { needle, element, .. } => {
                // lower() of a number or of an array's JSON text could hold the needle too,
                // hence the type check after it.
                self.text("((instr(lower(");
                self.value(operand);
                self.text("), ");
                self.bind(SqlValue::Text(needle.clone()));
                self.text(") > 0 AND ");
                self.kind(operand);
                self.text(" = 'text') OR (");
                self.kind(operand);
                self.text(" = 'array' AND EXISTS (SELECT 1 FROM json_each(c.data, ");
                self.bind(SqlValue::Text(path.to_string()));
                self.text(") AS j WHERE ");
                self.equals(Operand::Element, element);
                self.text(")))");
            }
            Test::Compare { op, bound } => {
                self.text("(");
                match bound {
                    Bound::Number(n) => {
                        // Text sorts after every number in SQL, so the type check stays; it
                        // runs only for values that pass the comparison.
                        self.value(operand);
                        self.text(&format!(" {} ", operator(*op)));
                        self.number(*n);
                        self.text(" AND ");
                        self.kind(operand);
                        self.text(" IN ('integer', 'real')");
                    }
                    Bound::Date(ms) => {
                        // tidings_date is NULL for anything but a date string.
                        self.text("tidings_date(");
                        self.value(operand);
                        self.text(&format!(", 0) {} ", operator(*op)));
                        self.bind(SqlValue::Integer(*ms));
                    }
                }
                self.text(")");
            }
            Test::Exists { .. } => {
                self.text("coalesce(");
                self.kind(operand);
                self.text(", 'null') <> 'null'");
            }
            Test::Age { span, older } => {
                self.text("(tidings_date(");
                self.value(operand);
                if *older {
                    self.text(", 1) < ");
                    self.bind(SqlValue::Integer(self.now - span));
                } else {
                    self.text(", 1) BETWEEN ");
                    self.bind(SqlValue::Integer(self.now - span));
                    self.text(" AND ");
                    self.bind(SqlValue::Integer(self.now));
                }
                self.text(")");
            }
            Test::EqualsTime { .. } => self.text("0"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::audience::tree::Group;

    fn equals(n: usize) -> Filter {
        let value = Scalar { number: Some(n as f64), ..Scalar::default() };
        Filter::Field { field: Field::Data(vec!["n".into()]), test: Test::Equals { value, negated: false } }
    }

    /// How deep the parentheses of an expression go.
    fn depth(sql: &str) -> i32 {
        let steps = sql.chars().map(|c| match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        });
        steps
            .scan(0, |d, step| {
                *d += step;
                Some(*d)
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn long_lists_compile_to_shallow_sql() {
        // 100 groups of one filter each, ORed, and a group of 100 filters ANDed: as a chain either
        // would be an expression 100 deep; balanced, both stay far inside SQLite's 1,000.
        let ored = Condition {
            logic: Logic::Or,
            groups: (0..100).map(|n| Group { filters: vec![equals(n)], conditions: None }).collect(),
        };
        let anded = Condition {
            logic: Logic::And,
            groups: vec![Group { filters: (0..100).map(equals).collect(), conditions: None }],
        };
        for condition in [ored, anded] {
            let deepest = depth(&compile(&condition, "p1", 0).sql);
            assert!(deepest < 40, "{deepest} parentheses deep");
        }
    }

    #[test]
    fn a_groups_text_values_are_looked_for_in_one_call_longest_first() {
        let text = |n: usize| {
            let value = Scalar { text: Some(format!("{}{n}", "x".repeat(n % 7))), ..Scalar::default() };
            Filter::Field {
                field: Field::Data(vec![format!("f{n}")]),
                test: Test::Equals { value, negated: false },
            }
        };
        let condition = Condition {
            logic: Logic::And,
            groups: vec![Group { filters: (0..100).map(text).collect(), conditions: None }],
        };
        let compiled = compile(&condition, "p1", 0);
        assert_eq!(compiled.sql.matches("tidings_has(").count(), 1, "{}", compiled.sql);
        let lengths: Vec<usize> = compiled.params[..MAX_NEEDLES]
            .iter()
            .map(|v| if let SqlValue::Text(t) = v { t.len() } else { 0 })
            .collect();
        assert!(lengths.windows(2).all(|w| w[0] >= w[1]) && lengths[0] == 8, "longest first: {lengths:?}");
        let conn = crate::db::testing::memory();
        crate::db::testing::contact(&conn, "p1", "a@x.io", true, &serde_json::json!({ "f1": "x1" }), 1);
        let sql = format!("SELECT count(*) FROM contacts c WHERE {}", compiled.sql);
        let counted: i64 =
            conn.query_row(&sql, rusqlite::params_from_iter(compiled.params), |r| r.get(0)).unwrap();
        assert_eq!(counted, 0);
    }
}
