//! The condition tree as checked (`core::conditions` parses and checks it, and says what each
//! part means): the query language of an audience, which [`super::compile`] turns into SQL and
//! `core::conditions::eval` decides in memory.

/// How a condition combines its groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logic {
    And,
    Or,
}

/// A checked condition tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub logic: Logic,
    pub groups: Vec<Group>,
}

/// Filters ANDed together, and an optional nested condition ANDed with them.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub filters: Vec<Filter>,
    pub conditions: Option<Box<Condition>>,
}

/// One checked filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// A test on a contact field.
    Field { field: Field, test: Test },
    /// A test on this contact's events of one name: people's only, or machines' too when
    /// `machines` (an open by a privacy proxy, a scanner's click).
    Event { name: String, test: EventTest, machines: bool },
    /// Membership of another segment.
    Segment { id: String, member: bool, target: Target },
    /// What the contact did with campaign `id`'s email: people's opens and clicks only, or
    /// machines' too when `machines`.
    Campaign { id: String, test: CampaignTest, machines: bool },
}

/// What a campaign filter tests. Every test but `NotReceived` is about a contact the campaign
/// was sent to: `NotOpened` is sent and not opened (a click counts as an open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignTest {
    Received,
    NotReceived,
    Opened,
    NotOpened,
    Clicked,
    NotClicked,
}

/// A contact field a filter reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Email,
    Subscribed,
    /// Whether the contact has paused marketing mail at the moment of the test
    /// (`snoozedUntil` after it).
    Snoozed,
    CreatedAt,
    UpdatedAt,
    /// A custom field: the dotted path under `data`, split.
    Data(Vec<String>),
    /// Whether the contact is subscribed to a topic (`topic.<id>`): its own choice, else the
    /// topic's default, which `core::conditions::resolve` reads.
    Topic {
        id: String,
        default_opt_in: bool,
    },
    /// In a workflow's CONDITION step: a value of the execution's context, `event.<path>` (the
    /// data of the event that started or resumed it) or `workflow.<path>` (its variables).
    Context {
        event: bool,
        path: Vec<String>,
    },
}

/// What a field filter tests, with its value already read.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// `equals` (or, negated, `notEquals`).
    Equals { value: Scalar, negated: bool },
    /// `equals` on `createdAt`/`updatedAt`: the instant, or the whole UTC day of a date.
    EqualsTime { from: i64, to: i64, negated: bool },
    /// `contains` / `notContains`: ASCII-lowercased text to find, and the element to look for in
    /// arrays.
    Contains { needle: String, element: Scalar, negated: bool },
    /// The ordering operators.
    Compare { op: Comparison, bound: Bound },
    /// `exists` / `notExists`.
    Exists { negated: bool },
    /// `within` (`older: false`) or `olderThan` (`older: true`) a span of milliseconds.
    Age { span: i64, older: bool },
}

/// A filter value as what it can equal: a string, a number, a boolean, or several of these
/// (the string `"42"` also equals the number 42).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scalar {
    pub text: Option<String>,
    pub number: Option<f64>,
    pub boolean: Option<bool>,
}

/// The ordering operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Greater,
    Less,
    GreaterOrEqual,
    LessOrEqual,
}

impl Comparison {
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Comparison::Greater => ordering == Greater,
            Comparison::Less => ordering == Less,
            Comparison::GreaterOrEqual => ordering != Less,
            Comparison::LessOrEqual => ordering != Greater,
        }
    }
}

/// What an ordering operator compares with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Number(f64),
    /// Milliseconds since the epoch.
    Date(i64),
}

/// What an event filter tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventTest {
    Triggered,
    NotTriggered,
    /// An occurrence at or after now minus the span.
    Within(i64),
    NotWithin(i64),
    /// An occurrence before now minus the span.
    OlderThan(i64),
}

/// What a segment filter refers to, once `core::conditions::resolve` looked it up.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Not looked up yet: matches no contact.
    Unresolved,
    /// A static segment: its stored members.
    Static,
    /// A dynamic segment: its condition.
    Dynamic(Box<Condition>),
}
