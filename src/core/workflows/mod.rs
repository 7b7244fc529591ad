//! Workflows (appliance.md §11): checking a workflow's fields and its steps' configs
//! ([`config`], [`step`], [`rules`]), the rules of its graph ([`graph`]), the use cases that
//! change it ([`edit`], [`executions`]), and the engine that runs it ([`start`], [`engine`]).
//!
//! The graph's rules: one TRIGGER step, made with the workflow and never added or deleted; a
//! step leads to at most one next step per branch (CONDITION: `yes`/`no`, WAIT_FOR_EVENT:
//! `event`/`timeout`, every other step: none), so an execution's path is never ambiguous;
//! nothing leads back to the trigger or away from an EXIT; and every cycle holds a DELAY or a
//! WAIT_FOR_EVENT, so no execution can loop without waiting.

pub mod cause;
pub mod config;
pub mod edit;
pub mod engine;
pub mod executions;
pub mod graph;
mod progress;
pub mod rules;
pub mod start;
pub mod status;
pub mod step;
pub mod webhook;

pub use config::{check_config, check_trigger_config, with_template};
pub use graph::{auto_connect, branch_named, branches, check_transition, splice};
pub use rules::{
    MAX_STEPS, MAX_WAIT_SECS, MAX_WORKFLOWS, STEP_TYPES, WEBHOOK_TIMEOUT_SECS, check_name, check_text,
};
pub use step::{StepConfig, StepRefs};
