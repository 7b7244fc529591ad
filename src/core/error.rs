//! What a use case answers instead of its result: [`Error`], in the product's words.
//!
//! Core knows no HTTP: the API layer turns an [`Error`] into a status and the error envelope in
//! one place (`From<core::Error> for ApiError`), and the scheduler and the workflow engine decide
//! from the variant whether to try again ([`Error::is_retryable`]).

use serde::Serialize;
use serde_json::Value;

use crate::db::DbError;

/// A use case's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One field-level problem of an input, such as `email`, `data.plan` or `to[1]`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FieldError {
    /// The field's path: `email`, `data.plan`, `to[1]`.
    pub field: String,
    pub message: String,
    /// `invalid_string`, `required`, `reserved_event`, `too_big`, ...
    pub code: String,
    /// The value that was refused, when it helps to see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received: Option<Value>,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), code: code.into(), message: message.into(), received: None }
    }

    pub fn received(mut self, value: Value) -> Self {
        self.received = Some(value);
        self
    }
}

/// Why a use case did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input breaks a rule, field by field; nothing was done.
    #[error("{}", summary(.0))]
    Invalid(Vec<FieldError>),
    /// The request as a whole cannot be acted on as written (a schedule that is no date, a
    /// splice that cannot reconnect); nothing was done.
    #[error("{0}")]
    Malformed(String),
    /// A link's token is unknown, used or expired.
    #[error("This link is invalid, already used or expired; ask for a new one")]
    StaleToken,
    /// What was named does not exist (in this project).
    #[error("{0}")]
    NotFound(String),
    /// The change collides with the current state (a duplicate, a thing in use); `details`
    /// names what it collides with.
    #[error("{message}")]
    Conflict { message: String, details: Option<Value> },
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(Forbidden),
    /// A limit of the project or the server would be passed; nothing was kept.
    #[error("{0}")]
    OverLimit(Limit),
    /// A failure that may pass: try again later.
    #[error("{0}")]
    Retryable(String),
    /// A failure that trying again will not mend.
    #[error("{0}")]
    Permanent(String),
    /// The database failed.
    #[error("database: {0}")]
    Db(DbError),
}

/// Why the caller may not do something.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Forbidden {
    #[error("{0}")]
    Denied(String),
    /// The from address's domain (nor any parent of it) is not verified in this project; while
    /// mail is captured, the project's sandbox domain that is (`core::sandbox`).
    #[error("The sender domain {domain} is not verified in this project")]
    UnverifiedSender { domain: String, sandbox: Option<String> },
}

/// Which limit a write would pass.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Limit {
    /// The server's disk is full: nothing was stored, and writes work again once there is room.
    #[error("The server has no room left to store this; nothing was stored. Try again later")]
    Storage,
    /// This month's cap of a billing category (`transactional`, `marketing`, `workflow`, `events`).
    #[error("This project has reached its monthly limit of {}; nothing was queued or recorded", billing_noun(.category))]
    Billing { category: String },
    /// A part of the input is larger than `bytes` allows.
    #[error("The request body is larger than the limit of {bytes} bytes")]
    Bytes { bytes: u64, field: &'static str, suggestion: &'static str },
    /// An answer would hold more than `rows` rows of one kind (`what`); nothing was made.
    #[error("This {what} has more than {rows} rows to answer with at once")]
    Rows { rows: usize, what: &'static str, suggestion: &'static str },
    /// The project's stored images would pass their total.
    #[error(
        "This project's images would take more than the {cap} bytes it may keep ([limits] upload_total_bytes); {kept} are used"
    )]
    UploadSpace { cap: u64, kept: i64 },
    /// The project has `cap` sender domains, the most one may have.
    #[error("This project has {cap} sender domains, the most one project may have")]
    Domains { cap: u32 },
    /// The project has `cap` inbound domains, the most one may have (`[inbound] domains_per_project`).
    #[error("This project has {cap} inbound domains, the most one project may have")]
    InboundDomains { cap: u32 },
    /// The project has `cap` inbound routes (`[inbound] routes_per_project`).
    #[error("This project has {cap} inbound routes, the most one project may have")]
    InboundRoutes { cap: u32 },
    /// Too many requests of a kind for now (sign-in failures, bodies being read): room comes
    /// back after `wait`.
    #[error("{message}")]
    Rate { message: String, wait: std::time::Duration },
}

fn billing_noun(category: &str) -> &'static str {
    match category {
        "transactional" => "transactional emails",
        "marketing" => "campaign emails",
        "workflow" => "workflow emails",
        _ => "tracked events",
    }
}

fn summary(errors: &[FieldError]) -> String {
    match errors {
        [one] => format!("Validation failed: {}: {}", one.field, one.message),
        _ => format!("Validation failed on {} fields", errors.len()),
    }
}

impl Error {
    /// One field's problem.
    pub fn invalid(field: &str, code: &str, message: impl Into<String>) -> Self {
        Self::Invalid(vec![FieldError::new(field, code, message)])
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict { message: message.into(), details: None }
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::Forbidden(Forbidden::Denied(message.into()))
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    pub fn malformed(message: impl Into<String>) -> Self {
        Self::Malformed(message.into())
    }

    /// A failure of the server's own, which trying again will not mend.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::Permanent(message.into())
    }

    /// Whether a job that met this error should run again later. A database that is busy or
    /// failed may recover; an input that breaks a rule never will.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable(_) | Self::Db(_) | Self::OverLimit(Limit::Storage))
    }

    /// The billing category whose monthly cap a write met, if that is what this is.
    pub fn over_cap(&self) -> Option<&str> {
        match self {
            Self::OverLimit(Limit::Billing { category }) => Some(category),
            _ => None,
        }
    }

    /// The variant's name, for logs and tests: `invalid`, `malformed`, `conflict`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Malformed(_) => "malformed",
            Self::StaleToken => "stale_token",
            Self::NotFound(_) => "not_found",
            Self::Conflict { .. } => "conflict",
            Self::Forbidden(_) => "forbidden",
            Self::OverLimit(_) => "over_limit",
            Self::Retryable(_) => "retryable",
            Self::Permanent(_) => "permanent",
            Self::Db(_) => "db",
        }
    }

    /// The field problems of an [`Error::Invalid`] (none for other errors).
    pub fn fields(&self) -> &[FieldError] {
        match self {
            Self::Invalid(errors) => errors,
            _ => &[],
        }
    }
}

/// A write that broke a unique key is a conflict with `message`; any other failure stays itself.
pub fn on_duplicate(e: DbError, message: &str) -> Error {
    if e.is_unique_violation() { Error::conflict(message) } else { e.into() }
}

impl From<DbError> for Error {
    /// A write the database refused for a rule of its own (a trigger) is that rule's error; a
    /// full disk is [`Limit::Storage`]; anything else is the database failing.
    fn from(e: DbError) -> Self {
        if e.is_disk_full() {
            return Self::OverLimit(Limit::Storage);
        }
        if let Some(category) = e.over_cap() {
            return Self::OverLimit(Limit::Billing { category: category.to_string() });
        }
        match e.trigger() {
            Some("EVENT_NAME_LIMIT_EXCEEDED") => Self::invalid(
                "event",
                "too_many_event_names",
                "this would add an event name beyond the project's limit ([limits] event_names_per_project, \
                 10,000 by default); delete names no longer used (DELETE /events/:name)",
            ),
            Some("FIELD_LIMIT_EXCEEDED") => Self::invalid(
                "data",
                "too_many_fields",
                "this would add a custom field beyond the project's limit ([limits] fields_per_project, 1,000 by default); \
                 delete fields no longer used (DELETE /contacts/fields/:field), or send such values as {value, persistent: false}",
            ),
            _ => Self::Db(e),
        }
    }
}
