//! Variables as Liquid sees them: JSON data where anything missing is nil instead of an error.

use std::collections::HashMap;
use std::fmt;

use liquid_core::model::{
    ArrayView, DisplayCow, KStringCow, ObjectView, Scalar, ScalarCow, State, Value as LiquidValue, ValueView,
};
use serde_json::{Map, Value};

/// A variable's value: JSON turned into Liquid's view of it.
#[derive(Debug, Clone)]
pub enum Node {
    /// Missing or null: renders as nothing, and any key of it is missing too.
    Nil,
    Scalar(Scalar),
    Array(Vec<Node>),
    Object(HashMap<String, Node>),
}

static NIL: Node = Node::Nil;

impl Node {
    pub fn from_json(value: &Value) -> Node {
        match value {
            Value::Null => Node::Nil,
            Value::Bool(b) => Node::Scalar(Scalar::new(*b)),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Node::Scalar(Scalar::new(i)),
                None => Node::Scalar(Scalar::new(n.as_f64().unwrap_or(0.0))),
            },
            Value::String(s) => Node::Scalar(Scalar::new(s.clone())),
            Value::Array(items) => Node::Array(items.iter().map(Node::from_json).collect()),
            Value::Object(map) => {
                Node::Object(map.iter().map(|(k, v)| (k.clone(), Node::from_json(v))).collect())
            }
        }
    }

    pub fn object(map: &Map<String, Value>) -> Node {
        Node::Object(map.iter().map(|(k, v)| (k.clone(), Node::from_json(v))).collect())
    }
}

struct Empty;

impl fmt::Display for Empty {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

impl ValueView for Node {
    fn as_debug(&self) -> &dyn fmt::Debug {
        self
    }

    fn render(&self) -> DisplayCow<'_> {
        match self {
            Node::Nil => DisplayCow::Owned(Box::new(Empty)),
            Node::Scalar(s) => s.render(),
            _ => DisplayCow::Owned(Box::new(self.to_value().render().to_string())),
        }
    }

    fn source(&self) -> DisplayCow<'_> {
        match self {
            Node::Nil => DisplayCow::Owned(Box::new("nil")),
            Node::Scalar(s) => s.source(),
            _ => DisplayCow::Owned(Box::new(self.to_value().source().to_string())),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Node::Nil => "nil",
            Node::Scalar(s) => s.type_name(),
            Node::Array(_) => "array",
            Node::Object(_) => "object",
        }
    }

    fn query_state(&self, state: State) -> bool {
        match self {
            Node::Nil => !matches!(state, State::Truthy),
            Node::Scalar(s) => s.query_state(state),
            Node::Array(items) => match state {
                State::Truthy => true,
                State::DefaultValue | State::Empty | State::Blank => items.is_empty(),
            },
            Node::Object(map) => match state {
                State::Truthy => true,
                State::DefaultValue | State::Empty | State::Blank => map.is_empty(),
            },
        }
    }

    fn to_kstr(&self) -> KStringCow<'_> {
        match self {
            Node::Nil => KStringCow::from_static(""),
            Node::Scalar(s) => s.to_kstr(),
            _ => KStringCow::from_string(self.render().to_string()),
        }
    }

    fn to_value(&self) -> LiquidValue {
        match self {
            Node::Nil => LiquidValue::Nil,
            Node::Scalar(s) => LiquidValue::Scalar(s.clone()),
            Node::Array(items) => LiquidValue::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(map) => {
                LiquidValue::Object(map.iter().map(|(k, v)| (k.clone().into(), v.to_value())).collect())
            }
        }
    }

    fn as_scalar(&self) -> Option<ScalarCow<'_>> {
        match self {
            Node::Scalar(s) => Some(s.as_ref()),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&dyn ArrayView> {
        match self {
            Node::Array(_) => Some(self),
            _ => None,
        }
    }

    fn as_object(&self) -> Option<&dyn ObjectView> {
        match self {
            Node::Object(_) | Node::Nil => Some(self),
            _ => None,
        }
    }

    fn is_nil(&self) -> bool {
        matches!(self, Node::Nil)
    }
}

impl ObjectView for Node {
    fn as_value(&self) -> &dyn ValueView {
        self
    }

    fn size(&self) -> i64 {
        match self {
            Node::Object(map) => map.len() as i64,
            _ => 0,
        }
    }

    fn keys<'k>(&'k self) -> Box<dyn Iterator<Item = KStringCow<'k>> + 'k> {
        match self {
            Node::Object(map) => Box::new(map.keys().map(|k| KStringCow::from_ref(k.as_str()))),
            _ => Box::new(std::iter::empty()),
        }
    }

    fn values<'k>(&'k self) -> Box<dyn Iterator<Item = &'k dyn ValueView> + 'k> {
        match self {
            Node::Object(map) => Box::new(map.values().map(|v| v as &dyn ValueView)),
            Node::Array(items) => Box::new(items.iter().map(|v| v as &dyn ValueView)),
            _ => Box::new(std::iter::empty()),
        }
    }

    fn iter<'k>(&'k self) -> Box<dyn Iterator<Item = (KStringCow<'k>, &'k dyn ValueView)> + 'k> {
        match self {
            Node::Object(map) => {
                Box::new(map.iter().map(|(k, v)| (KStringCow::from_ref(k.as_str()), v as &dyn ValueView)))
            }
            _ => Box::new(std::iter::empty()),
        }
    }

    fn contains_key(&self, index: &str) -> bool {
        matches!(self, Node::Object(map) if map.contains_key(index))
    }

    fn get<'s>(&'s self, index: &str) -> Option<&'s dyn ValueView> {
        match self {
            Node::Object(map) => Some(map.get(index).unwrap_or(&NIL)),
            _ => Some(&NIL),
        }
    }
}

impl ArrayView for Node {
    fn as_value(&self) -> &dyn ValueView {
        self
    }

    fn size(&self) -> i64 {
        match self {
            Node::Array(items) => items.len() as i64,
            _ => 0,
        }
    }

    fn values<'k>(&'k self) -> Box<dyn Iterator<Item = &'k dyn ValueView> + 'k> {
        ObjectView::values(self)
    }

    fn contains_key(&self, index: i64) -> bool {
        matches!(self, Node::Array(items) if index >= 0 && (index as usize) < items.len())
    }

    fn get(&self, index: i64) -> Option<&dyn ValueView> {
        let Node::Array(items) = self else { return None };
        let index = if index < 0 { items.len() as i64 + index } else { index };
        usize::try_from(index).ok().and_then(|i| <[Node]>::get(items, i)).map(|v| v as &dyn ValueView)
    }
}

/// The top-level variables: like an object [`Node`], but every name is known, so a missing one
/// is nil instead of an error.
#[derive(Debug, Clone)]
pub struct Globals(Node);

impl Globals {
    pub fn new(top: Node) -> Self {
        Globals(top)
    }

    /// No variables at all: every name is nil.
    pub fn empty() -> Self {
        Globals(Node::Object(HashMap::new()))
    }
}

impl ValueView for Globals {
    fn as_debug(&self) -> &dyn fmt::Debug {
        self
    }

    fn render(&self) -> DisplayCow<'_> {
        self.0.render()
    }

    fn source(&self) -> DisplayCow<'_> {
        self.0.source()
    }

    fn type_name(&self) -> &'static str {
        "object"
    }

    fn query_state(&self, state: State) -> bool {
        self.0.query_state(state)
    }

    fn to_kstr(&self) -> KStringCow<'_> {
        self.0.to_kstr()
    }

    fn to_value(&self) -> LiquidValue {
        self.0.to_value()
    }

    fn as_object(&self) -> Option<&dyn ObjectView> {
        Some(self)
    }
}

impl ObjectView for Globals {
    fn as_value(&self) -> &dyn ValueView {
        self
    }

    fn size(&self) -> i64 {
        ObjectView::size(&self.0)
    }

    fn keys<'k>(&'k self) -> Box<dyn Iterator<Item = KStringCow<'k>> + 'k> {
        self.0.keys()
    }

    fn values<'k>(&'k self) -> Box<dyn Iterator<Item = &'k dyn ValueView> + 'k> {
        ObjectView::values(&self.0)
    }

    fn iter<'k>(&'k self) -> Box<dyn Iterator<Item = (KStringCow<'k>, &'k dyn ValueView)> + 'k> {
        self.0.iter()
    }

    fn contains_key(&self, _index: &str) -> bool {
        true
    }

    fn get<'s>(&'s self, index: &str) -> Option<&'s dyn ValueView> {
        ObjectView::get(&self.0, index)
    }
}
