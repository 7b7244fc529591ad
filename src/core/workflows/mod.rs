//! Workflows (appliance.md §11): checking a workflow's fields, its steps' configs and the
//! changes to its graph, and the view the API answers with.
//!
//! The graph's rules: one TRIGGER step, made with the workflow and never added or deleted; a
//! step leads to at most one next step per branch (CONDITION: `yes`/`no`, WAIT_FOR_EVENT:
//! `event`/`timeout`, every other step: none), so an execution's path is never ambiguous;
//! nothing leads back to the trigger or away from an EXIT; and every cycle holds a DELAY or a
//! WAIT_FOR_EVENT, so no execution can loop without waiting.

pub mod config;
pub mod edit;
pub mod engine;
pub mod executions;
pub mod graph;
pub mod start;
pub mod status;
pub mod step;
pub mod webhook;

pub use config::{check_config, check_trigger_config, with_template};
pub use graph::{auto_connect, branch_named, branches, check_transition, splice};
pub use step::{StepConfig, StepRefs};

use crate::core::error::{Error, Result};

/// The step types `POST /workflows/:id/steps` adds (the TRIGGER step comes with the workflow).
pub const STEP_TYPES: &[&str] =
    &["SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"];
/// How long a WEBHOOK step waits for its answer (appliance.md §11).
pub const WEBHOOK_TIMEOUT_SECS: u64 = 10;
/// Most steps in one workflow.
pub const MAX_STEPS: usize = 200;
/// The longest DELAY, and the longest timeout of a WAIT_FOR_EVENT.
pub const MAX_WAIT_SECS: i64 = 365 * 24 * 3600;
const MAX_TEXT: usize = 500;

pub(super) fn invalid(field: &str, code: &str, message: impl Into<String>) -> Error {
    Error::invalid(field, code, message)
}

pub(super) fn required(field: &str) -> Error {
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
