//! The limits of a template and its render, what a template renders as ([`Mode`]), and the
//! error a template meets ([`TemplateError`]): what the parser, the preprocessor, the budget and
//! the plugins all share.

use std::fmt;
use std::time::Duration;

pub const MAX_SOURCE_BYTES: usize = 256 * 1024;
pub const MAX_OUTPUT_BYTES: usize = 5 * 1024 * 1024;
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
pub const MAX_LOOP: u32 = 1000;
pub const MAX_LOOP_DEPTH: usize = 2;
pub const MAX_NESTING: usize = 32;
pub const RENDER_BUDGET: Duration = Duration::from_secs(1);

/// Starts the message of every error that a limit caused (as opposed to the template's syntax or
/// its data), so callers can tell them apart.
pub(super) const LIMIT: &str = "template limit";

/// What a template renders: a subject or plain text, or an HTML body (escaped variables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Text,
    Html,
}

/// A problem found before, while parsing or while rendering, with the line it is on (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    pub line: Option<usize>,
    /// The column on that line (1-based, in characters of the author's text).
    pub column: Option<usize>,
    /// The author's text there: the `{{ … }}` or `{% … %}` at fault, or the line.
    pub text: Option<String>,
    pub message: String,
    /// What usually fixes it.
    pub hint: Option<String>,
}

impl TemplateError {
    pub(super) fn new(line: Option<usize>, message: impl Into<String>) -> Self {
        TemplateError { line, column: None, text: None, message: message.into(), hint: None }
    }

    /// Where the error is, for an error's `received`: `{line, column, text, hint}` as known.
    pub fn place(&self) -> Option<serde_json::Value> {
        self.line?;
        let mut place = serde_json::Map::new();
        place.insert("line".into(), self.line.into());
        if let Some(column) = self.column {
            place.insert("column".into(), column.into());
        }
        if let Some(text) = &self.text {
            place.insert("text".into(), text.clone().into());
        }
        if let Some(hint) = &self.hint {
            place.insert("hint".into(), hint.clone().into());
        }
        Some(place.into())
    }

    /// Whether a limit (time, size, loop count) stopped the template, rather than its syntax.
    pub fn is_limit(&self) -> bool {
        self.message.contains(LIMIT)
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: {}", self.message)?,
            (Some(line), None) => write!(f, "line {line}: {}", self.message)?,
            _ => f.write_str(&self.message)?,
        }
        if let Some(text) = &self.text {
            write!(f, " (at `{text}`)")?;
        }
        match &self.hint {
            Some(hint) => write!(f, ". {hint}"),
            None => Ok(()),
        }
    }
}
