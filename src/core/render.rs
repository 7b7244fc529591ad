//! Rendering subjects and bodies: the Liquid language (the `liquid` crate) plus the spec's
//! extras, with limits so a template can never hang or exhaust the server.
//!
//! Extras, rewritten before Liquid parses the text (line numbers are kept):
//! - `{{ name ?? "default" }}`: the default when `name` is missing or null (not when it is empty);
//! - `{{ first name }}`: a name with spaces, read from `data` (`{{ data["first name"] }}` works too).
//!
//! Variables that do not exist render as nothing instead of failing, at any depth
//! (`{{ profile.tier }}` for a contact without a profile).
//!
//! Limits: the source is at most [`MAX_SOURCE_BYTES`]; the output at most [`MAX_OUTPUT_BYTES`];
//! every `for` and `tablerow` runs at most [`MAX_LOOP`] times, ranges must be literal
//! (`(1..10)`), and loops nest at most [`MAX_LOOP_DEPTH`] deep; strings made by filters and
//! `capture` are at most [`MAX_VALUE_BYTES`].

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex};

use liquid_core::model::{
    ArrayView, DisplayCow, KStringCow, ObjectView, Scalar, ScalarCow, State, Value as LiquidValue, ValueView,
};
use liquid_core::parser::{FilterArguments, FilterReflection, ParameterReflection, ParseFilter};
use liquid_core::runtime::{Renderable, Runtime};
use liquid_core::{BlockReflection, Filter, Language, ParseBlock, TagBlock, TagTokenIter, Template as Body};
use serde_json::{Map, Value};

use crate::error::{ApiError, FieldError};

pub const MAX_SOURCE_BYTES: usize = 256 * 1024;
pub const MAX_OUTPUT_BYTES: usize = 5 * 1024 * 1024;
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
pub const MAX_LOOP: u32 = 1000;
pub const MAX_LOOP_DEPTH: usize = 2;

// ---------------------------------------------------------------------------------------------
// Values: JSON data seen by Liquid, where anything missing is nil instead of an error.

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

// ---------------------------------------------------------------------------------------------
// The `??` filter and the limits on filters and `capture`.

/// `x | fallback: d` — `d` when `x` is missing or null (what `??` becomes).
#[derive(Clone)]
struct FallbackFilter;

const FALLBACK_PARAMS: &[ParameterReflection] = &[ParameterReflection {
    name: "default",
    description: "used when the input is missing or null",
    is_optional: false,
}];

impl FilterReflection for FallbackFilter {
    fn name(&self) -> &str {
        "fallback"
    }

    fn description(&self) -> &str {
        "the input, or the default when the input is missing or null"
    }

    fn positional_parameters(&self) -> &'static [ParameterReflection] {
        FALLBACK_PARAMS
    }

    fn keyword_parameters(&self) -> &'static [ParameterReflection] {
        &[]
    }
}

impl ParseFilter for FallbackFilter {
    fn parse(&self, mut arguments: FilterArguments<'_>) -> liquid_core::Result<Box<dyn Filter>> {
        let default = arguments
            .positional
            .next()
            .ok_or_else(|| liquid_core::Error::with_msg("?? needs a default value"))?;
        Ok(Box::new(Fallback { default }))
    }

    fn reflection(&self) -> &dyn FilterReflection {
        self
    }
}

#[derive(Debug)]
struct Fallback {
    default: liquid_core::Expression,
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fallback: {}", self.default)
    }
}

impl Filter for Fallback {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> liquid_core::Result<LiquidValue> {
        if input.is_nil() { Ok(self.default.evaluate(runtime)?.into_owned()) } else { Ok(input.to_value()) }
    }
}

/// A filter whose results are checked against [`MAX_VALUE_BYTES`].
#[derive(Clone)]
struct Capped<F: Clone>(F);

impl<F: ParseFilter + Clone + 'static> ParseFilter for Capped<F> {
    fn parse(&self, arguments: FilterArguments<'_>) -> liquid_core::Result<Box<dyn Filter>> {
        Ok(Box::new(CappedFilter(self.0.parse(arguments)?)))
    }

    fn reflection(&self) -> &dyn FilterReflection {
        self.0.reflection()
    }
}

#[derive(Debug)]
struct CappedFilter(Box<dyn Filter>);

impl fmt::Display for CappedFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

fn too_big() -> liquid_core::Error {
    liquid_core::Error::with_msg(format!("a value grew past {MAX_VALUE_BYTES} bytes"))
}

impl Filter for CappedFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> liquid_core::Result<LiquidValue> {
        let value = self.0.evaluate(input, runtime)?;
        let size = match &value {
            LiquidValue::Scalar(s) => s.to_kstr().len(),
            LiquidValue::Array(items) => items.iter().map(|v| v.to_kstr().len() + 1).sum(),
            _ => 0,
        };
        if size > MAX_VALUE_BYTES { Err(too_big()) } else { Ok(value) }
    }
}

/// `capture`, with the captured text limited to [`MAX_VALUE_BYTES`].
#[derive(Clone, Copy)]
struct CappedCaptureBlock;

impl BlockReflection for CappedCaptureBlock {
    fn start_tag(&self) -> &str {
        "capture"
    }

    fn end_tag(&self) -> &str {
        "endcapture"
    }

    fn description(&self) -> &str {
        "captures the rendered text into a variable"
    }
}

impl ParseBlock for CappedCaptureBlock {
    fn parse(
        &self,
        mut arguments: TagTokenIter<'_>,
        mut tokens: TagBlock<'_, '_>,
        options: &Language,
    ) -> liquid_core::Result<Box<dyn Renderable>> {
        let id = arguments.expect_next("Identifier expected")?.expect_identifier().into_result()?.to_owned();
        arguments.expect_nothing()?;
        let body = Body::new(tokens.parse_all(options)?);
        tokens.assert_empty();
        Ok(Box::new(CappedCapture { id: id.into(), body }))
    }

    fn reflection(&self) -> &dyn BlockReflection {
        self
    }
}

#[derive(Debug)]
struct CappedCapture {
    id: liquid_core::model::KString,
    body: Body,
}

impl Renderable for CappedCapture {
    fn render_to(&self, _writer: &mut dyn Write, runtime: &dyn Runtime) -> liquid_core::Result<()> {
        let mut captured = Limited::new(MAX_VALUE_BYTES);
        self.body.render_to(&mut captured, runtime)?;
        let text = String::from_utf8(captured.buffer)
            .map_err(|_| liquid_core::Error::with_msg("capture is not UTF-8"))?;
        runtime.set_global(self.id.clone(), LiquidValue::scalar(text));
        Ok(())
    }
}

/// A buffer that refuses to grow past its limit.
struct Limited {
    buffer: Vec<u8>,
    limit: usize,
}

impl Limited {
    fn new(limit: usize) -> Self {
        Limited { buffer: Vec::new(), limit }
    }
}

impl Write for Limited {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.buffer.len() + bytes.len() > self.limit {
            return Err(std::io::Error::other(format!("the output grew past {} bytes", self.limit)));
        }
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static PARSER: LazyLock<liquid::Parser> = LazyLock::new(|| {
    use liquid_lib::stdlib;
    liquid::ParserBuilder::with_stdlib()
        .filter(FallbackFilter)
        .filter(Capped(stdlib::Append))
        .filter(Capped(stdlib::Prepend))
        .filter(Capped(stdlib::Replace))
        .filter(Capped(stdlib::ReplaceFirst))
        .filter(Capped(stdlib::Join))
        .filter(Capped(stdlib::Concat))
        .block(CappedCaptureBlock)
        .build()
        .expect("the standard library with our filters builds")
});

// ---------------------------------------------------------------------------------------------
// Preprocessing: `??`, names with spaces, loop limits.

/// A problem found before or while parsing, with the line it is on (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())].bytes().filter(|b| *b == b'\n').count() + 1
}

/// Splits `text` at `needle` occurrences outside single or double quotes.
fn outside_quotes(text: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut quote: Option<char> = None;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let c = bytes[i] as char;
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if text[i..].starts_with(needle) => {
                found.push(i);
                i += needle.len();
                continue;
            }
            None => {}
        }
        i += 1;
    }
    found
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Rewrites one `{{ ... }}` expression.
fn rewrite_output(expr: &str) -> String {
    let mut expr = expr.to_string();
    if let Some(&at) = outside_quotes(&expr, "??").first() {
        expr = format!("{} | fallback:{}", &expr[..at].trim_end(), &expr[at + 2..]);
    }
    // A leading name made of several words: `first name` (before any filter).
    let cut = outside_quotes(&expr, "|").first().copied().unwrap_or(expr.len());
    let head = expr[..cut].trim();
    let words: Vec<&str> = head.split_whitespace().collect();
    if words.len() > 1
        && words.iter().all(|w| w.chars().all(is_name_char))
        && !words.iter().any(|w| w.chars().all(|c| c.is_ascii_digit()))
    {
        let name = words.join(" ");
        expr = format!(" data[\"{name}\"] {}", &expr[cut..]);
    }
    expr
}

/// Applies the extras and checks the loop limits; returns the text Liquid parses.
pub fn preprocess(source: &str) -> Result<String, TemplateError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(TemplateError {
            line: None,
            message: format!("the template is larger than {MAX_SOURCE_BYTES} bytes"),
        });
    }
    let mut out = String::with_capacity(source.len() + 64);
    let mut depth = 0usize;
    let mut rest = source;
    let mut offset = 0;
    loop {
        let next_output = rest.find("{{");
        let next_tag = rest.find("{%");
        let (start, is_tag) = match (next_output, next_tag) {
            (None, None) => break,
            (Some(o), Some(t)) if t < o => (t, true),
            (Some(o), _) => (o, false),
            (None, Some(t)) => (t, true),
        };
        let close = if is_tag { "%}" } else { "}}" };
        let Some(end) = rest[start + 2..].find(close).map(|e| start + 2 + e) else { break };
        out.push_str(&rest[..start + 2]);
        let inner = &rest[start + 2..end];
        let line = line_of(source, offset + start);
        if is_tag {
            let trimmed = inner.trim_start_matches('-').trim();
            let keyword = trimmed.split_whitespace().next().unwrap_or("");
            match keyword {
                "raw" => {
                    // Copy everything up to {% endraw %} untouched.
                    let body_start = end + 2;
                    let stop =
                        rest[body_start..].find("endraw").map(|e| body_start + e).unwrap_or(rest.len());
                    out.push_str(inner);
                    out.push_str(&rest[end..stop]);
                    offset += stop;
                    rest = &rest[stop..];
                    continue;
                }
                "for" | "tablerow" => {
                    depth += 1;
                    if depth > MAX_LOOP_DEPTH {
                        return Err(TemplateError {
                            line: Some(line),
                            message: format!("loops may nest at most {MAX_LOOP_DEPTH} deep"),
                        });
                    }
                    check_range(trimmed, line)?;
                    out.push_str(inner.trim_end_matches('-'));
                    if !trimmed.contains("limit:") {
                        out.push_str(&format!(" limit: {MAX_LOOP}"));
                    }
                    if inner.ends_with('-') {
                        out.push('-');
                    }
                }
                "endfor" | "endtablerow" => {
                    depth = depth.saturating_sub(1);
                    out.push_str(inner);
                }
                _ => out.push_str(inner),
            }
        } else {
            let (lead, body, trail) = split_trim_markers(inner);
            out.push_str(lead);
            out.push_str(&rewrite_output(body));
            out.push_str(trail);
        }
        out.push_str(close);
        offset += end + 2;
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn split_trim_markers(inner: &str) -> (&str, &str, &str) {
    let lead = if inner.starts_with('-') { "-" } else { "" };
    let trail = if inner.ends_with('-') && inner.len() > lead.len() { "-" } else { "" };
    (lead, &inner[lead.len()..inner.len() - trail.len()], trail)
}

/// A range in a loop must be literal and short: `(1..10)`.
fn check_range(tag: &str, line: usize) -> Result<(), TemplateError> {
    let Some(open) = tag.find('(') else { return Ok(()) };
    let Some(close) = tag[open..].find(')') else { return Ok(()) };
    let range = &tag[open + 1..open + close];
    let Some((a, b)) = range.split_once("..") else { return Ok(()) };
    let (Ok(a), Ok(b)) = (a.trim().parse::<i64>(), b.trim().parse::<i64>()) else {
        return Err(TemplateError {
            line: Some(line),
            message: "loop ranges must be written with numbers, like (1..10)".into(),
        });
    };
    if b.saturating_sub(a) >= i64::from(MAX_LOOP) {
        return Err(TemplateError {
            line: Some(line),
            message: format!("a loop range may have at most {MAX_LOOP} steps"),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Parsing (cached) and rendering.

/// Parsed templates keyed by the SHA-256 of their source, with the total source size they
/// stand for. Bounded both by count and by bytes: sources are up to 256 KiB each, so a count
/// alone could hold far more memory than a small VPS should spend on a cache.
struct Cache {
    entries: HashMap<[u8; 32], Arc<liquid::Template>>,
    bytes: usize,
}

static CACHE: LazyLock<Mutex<Cache>> =
    LazyLock::new(|| Mutex::new(Cache { entries: HashMap::new(), bytes: 0 }));
const CACHE_ENTRIES: usize = 512;
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Parses a template (or takes it from the cache).
pub fn parse(source: &str) -> Result<Arc<liquid::Template>, TemplateError> {
    use sha2::Digest;
    let key: [u8; 32] = sha2::Sha256::digest(source.as_bytes()).into();
    if let Some(template) = CACHE.lock().ok().and_then(|c| c.entries.get(&key).cloned()) {
        return Ok(template);
    }
    let text = preprocess(source)?;
    let template = Arc::new(PARSER.parse(&text).map_err(|e| parse_error(source, &e))?);
    if let Ok(mut cache) = CACHE.lock() {
        if cache.entries.len() >= CACHE_ENTRIES || cache.bytes + source.len() > CACHE_BYTES {
            cache.entries.clear();
            cache.bytes = 0;
        }
        if cache.entries.insert(key, template.clone()).is_none() {
            cache.bytes += source.len();
        }
    }
    Ok(template)
}

fn parse_error(source: &str, error: &liquid::Error) -> TemplateError {
    let text = error.to_string();
    // liquid reports positions as `--> line:column`.
    let line = text
        .split("-->")
        .nth(1)
        .and_then(|rest| rest.trim().split(':').next())
        .and_then(|n| n.trim().parse::<usize>().ok())
        .filter(|n| *n >= 1 && *n <= source.lines().count().max(1));
    let message = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("the template does not parse")
        .trim()
        .to_string();
    TemplateError { line, message }
}

/// 422 for a template field that does not parse, naming the line.
pub fn check(source: &str, field: &str) -> Result<(), ApiError> {
    parse(source).map(|_| ()).map_err(|e| {
        let mut item = FieldError::new(field, "invalid_template", format!("{field} does not parse: {e}"));
        if let Some(line) = e.line {
            item = item.received(serde_json::json!({ "line": line }));
        }
        ApiError::validation(vec![item])
    })
}

/// Renders a template with the given variables.
pub fn render(source: &str, variables: &Globals) -> Result<String, TemplateError> {
    let template = parse(source)?;
    let mut out = Limited::new(MAX_OUTPUT_BYTES);
    template.render_to(&mut out, variables).map_err(|e| TemplateError {
        line: None,
        message: e.to_string().lines().next().unwrap_or("render failed").to_string(),
    })?;
    String::from_utf8(out.buffer)
        .map_err(|_| TemplateError { line: None, message: "output is not UTF-8".into() })
}

/// The variables a message for a contact sees: its custom fields at the top level and under
/// `data`, this request's values on top, `email`, `id`, and the generated links.
pub fn scope(data: &Map<String, Value>, email: &str, id: &str, links: &[(&str, String)]) -> Globals {
    let mut top = Node::object(data);
    if let Node::Object(map) = &mut top {
        map.insert("data".into(), Node::object(data));
        map.insert("email".into(), Node::Scalar(Scalar::new(email.to_string())));
        map.insert("id".into(), Node::Scalar(Scalar::new(id.to_string())));
        for (name, url) in links {
            map.insert((*name).to_string(), Node::Scalar(Scalar::new(url.clone())));
        }
    }
    Globals(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(source: &str, data: Value) -> String {
        let data = data.as_object().unwrap().clone();
        render(source, &scope(&data, "ada@example.com", "c1", &[("unsubscribeUrl", "https://x/u".into())]))
            .unwrap()
    }

    #[test]
    fn variables_paths_and_scope() {
        let data = json!({ "name": "Ada", "profile": { "tier": "gold" }, "first name": "Ada L", "n": 3 });
        assert_eq!(run("Hi {{ name }}!", data.clone()), "Hi Ada!");
        assert_eq!(run("{{profile.tier}}", data.clone()), "gold");
        assert_eq!(
            run("{{ data.name }} {{ email }} {{ id }} {{ unsubscribeUrl }}", data.clone()),
            "Ada ada@example.com c1 https://x/u"
        );
        assert_eq!(run("{{ first name }}|{{ data[\"first name\"] }}", data.clone()), "Ada L|Ada L");
        assert_eq!(run("[{{ missing }}][{{ profile.nope }}][{{ nope.deeper.still }}]", data), "[][][]");
    }

    #[test]
    fn defaults_apply_to_missing_and_null_only() {
        let data = json!({ "name": "Ada", "empty": "", "nothing": null });
        assert_eq!(run("{{ name ?? \"friend\" }}", data.clone()), "Ada");
        assert_eq!(run("{{ missing ?? \"friend\" }}", data.clone()), "friend");
        assert_eq!(run("{{ nothing ?? 'friend' }}", data.clone()), "friend");
        assert_eq!(run("[{{ empty ?? \"friend\" }}]", data.clone()), "[]");
        assert_eq!(run("{{ missing ?? \"friend\" | upcase }}", data.clone()), "FRIEND");
        assert_eq!(run("{{ first name ?? \"you\" }}", data), "you");
    }

    #[test]
    fn conditionals_loops_and_filters() {
        let data =
            json!({ "plan": "pro", "n": 3, "items": [{ "name": "a", "qty": 2 }, { "name": "b", "qty": 1 }] });
        assert_eq!(run("{% if plan == \"pro\" and n > 2 %}yes{% else %}no{% endif %}", data.clone()), "yes");
        assert_eq!(
            run("{% for i in items %}{{ i.name }}x{{ i.qty }};{% endfor %}", data.clone()),
            "ax2;bx1;"
        );
        assert_eq!(
            run(
                "{{ plan | upcase | append: \"!\" }} {{ n | plus: 2 }} {{ \"a,b\" | split: \",\" | join: \"-\" }}",
                data.clone()
            ),
            "PRO! 5 a-b"
        );
        assert_eq!(run("{% for i in (1..3) %}{{ i }}{% endfor %}", data.clone()), "123");
        assert_eq!(run("{% unless missing %}none{% endunless %}", data.clone()), "none");
        assert_eq!(run("{% capture x %}{{ plan }}-{{ n }}{% endcapture %}{{ x }}", data.clone()), "pro-3");
        assert_eq!(run("{% raw %}{{ not a var }}{% endraw %}", data), "{{ not a var }}");
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert!(parse("line one\nline two {{ name\n").is_err());
        let e = parse("a\nb\n{% if x %}unclosed").err().expect("an unclosed if does not parse");
        assert!(!e.message.is_empty());
        let e = check("ok\n{% nosuchtag %}", "body").unwrap_err();
        assert_eq!(
            (e.status, e.errors[0].field.as_str(), e.errors[0].code.as_str()),
            (422, "body", "invalid_template")
        );
        assert!(e.errors[0].message.contains("line 2"), "{}", e.errors[0].message);
    }

    #[test]
    fn limits_hold() {
        assert!(preprocess(&"x".repeat(MAX_SOURCE_BYTES + 1)).is_err());
        let rejects = |source: &str| parse(source).is_err();
        assert!(rejects("{% for i in (1..1000000000) %}{% endfor %}"), "huge ranges are refused");
        assert!(rejects("{% for i in (1..n) %}{% endfor %}"), "ranges must be literal");
        assert!(rejects(
            "{% for a in x %}{% for b in y %}{% for c in z %}{% endfor %}{% endfor %}{% endfor %}"
        ));
        // Loops stop after MAX_LOOP items.
        let many: Vec<i64> = (0..5000).collect();
        let out = run("{% for i in many %}.{% endfor %}", json!({ "many": many }));
        assert_eq!(out.len(), MAX_LOOP as usize);
        // Doubling a string fails instead of eating memory.
        let doubling = "{% assign s = \"xxxxxxxxxxxxxxxx\" %}{% for i in (1..100) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}";
        let data = json!({}).as_object().unwrap().clone();
        assert!(render(doubling, &scope(&data, "a@b.co", "1", &[])).is_err());
        let capture = "{% assign s = \"xxxxxxxxxxxxxxxx\" %}{% for i in (1..100) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}";
        assert!(render(capture, &scope(&data, "a@b.co", "1", &[])).is_err());
        // Output is bounded.
        let big = "x".repeat(200_000);
        let out = render(
            "{% for i in (1..100) %}{{ big }}{% endfor %}",
            &scope(json!({ "big": big }).as_object().unwrap(), "a@b.co", "1", &[]),
        );
        assert!(out.is_err());
    }
}
