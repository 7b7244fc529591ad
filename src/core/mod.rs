//! The application layer: the product's rules and use cases, unit-tested here and shared by the
//! API, the CLI and the scheduler. It knows no HTTP and no SQL text (design.md, "The application
//! layer"); what goes wrong is a [`Error`].

pub mod accounts;
pub mod analytics_views;
pub mod archive;
pub mod billing;
pub mod blocking;
pub mod branding;
pub mod bulk;
pub mod campaign_report;
pub mod campaign_state;
pub mod campaigns;
pub mod compose;
pub mod conditions;
pub mod confirmations;
pub mod consent;
pub mod contact_filters;
pub mod contacts;
pub mod data;
pub mod delivery;
pub mod delivery_windows;
pub mod domains;
pub mod email;
pub mod engagement;
pub mod error;
pub mod events;
pub mod feedback;
pub mod fields;
pub mod follow_ups;
pub mod form_submissions;
pub mod formats;
pub mod forms;
#[cfg(test)]
mod fuzz;
pub mod i18n;
pub mod ids;
pub mod import;
pub mod import_options;
pub mod inbound;
pub mod invitations;
pub mod jobs;
pub mod keys;
pub mod limits;
pub mod links;
pub mod lists;
pub mod members;
#[cfg(test)]
mod never_panic;
pub mod outbound;
pub mod peers;
pub mod projects;
pub mod render;
pub mod reports;
pub mod reputation;
pub mod sandbox;
pub mod segments;
pub mod send;
pub mod ses;
pub mod session;
pub mod smtp_credentials;
pub mod sso;
pub mod submission;
pub mod suppressions;
pub mod system_mail;
pub mod templates;
pub mod topics;
pub mod track;
pub mod tracking_domains;
pub mod uploads;
pub mod verify;
pub mod verp;
pub mod vocabulary;
pub mod webhook_endpoints;
pub mod webhooks;
pub mod workflows;

pub use error::{Error, Result};
