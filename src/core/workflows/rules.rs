//! The limits of a workflow and the checks of its plain fields (names, texts), which the
//! config checks, the graph's rules and the use cases share.

use crate::core::error::{Error, Result};

/// The step types `POST /workflows/:id/steps` adds (the TRIGGER step comes with the workflow).
pub const STEP_TYPES: &[&str] =
    &["SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"];
/// How long a WEBHOOK step waits for its answer (appliance.md §11).
pub const WEBHOOK_TIMEOUT_SECS: u64 = 10;
/// Most steps in one workflow.
pub const MAX_STEPS: usize = 200;
/// Most workflows in one project: each can hold 200 steps, and a copy is one request.
pub const MAX_WORKFLOWS: u64 = 1000;
/// The longest DELAY, and the longest timeout of a WAIT_FOR_EVENT.
pub const MAX_WAIT_SECS: i64 = 365 * 24 * 3600;
const MAX_TEXT: usize = 500;

/// One field's problem (a shorthand for [`Error::invalid`]).
pub fn invalid(field: &str, code: &str, message: impl Into<String>) -> Error {
    Error::invalid(field, code, message)
}

/// `field` is missing.
pub fn required(field: &str) -> Error {
    invalid(field, "required", format!("{field} is required"))
}

/// A name: 1 to 200 characters.
pub fn check_name(name: &str, field: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(invalid(field, "invalid_string", format!("{field} must be 1 to 200 characters")));
    }
    Ok(name.to_string())
}

/// An optional text of at most 500 characters; empty clears it.
pub fn check_text(text: Option<String>, field: &str) -> Result<Option<String>> {
    let text = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    if text.as_ref().is_some_and(|t| t.chars().count() > MAX_TEXT) {
        return Err(invalid(field, "too_big", format!("{field} is at most {MAX_TEXT} characters")));
    }
    Ok(text)
}
