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
    pub message: String,
}

impl TemplateError {
    pub(super) fn new(line: Option<usize>, message: impl Into<String>) -> Self {
        TemplateError { line, message: message.into() }
    }

    /// Whether a limit (time, size, loop count) stopped the template, rather than its syntax.
    pub fn is_limit(&self) -> bool {
        self.message.contains(LIMIT)
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}
