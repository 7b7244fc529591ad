//! Integration tests: the real server in process (Rocket's local client on a temporary SQLite
//! file) and the built binary on a free loopback port. One test crate, so it links once.

mod common;

mod account_mail;
mod accounts;
mod analytics;
mod billing;
mod binary;
mod bounces;
mod browser;
mod campaign_crash;
mod campaigns;
mod contacts;
mod crash;
mod dashboard_api;
mod dkim;
mod dns;
mod domains;
mod envelope;
mod events;
mod feedback;
mod github_sign_in;
mod hostile;
mod idempotency;
mod imports;
mod jobs;
mod keys;
mod metrics;
mod onboarding;
mod openapi;
mod project_wipes;
mod ratelimit;
mod relays;
mod segments;
mod send;
mod sessions;
mod sns;
mod sso;
mod templates;
mod tracking;
mod uploads;
mod verify;
mod webhooks;
mod workflow_crash;
mod workflow_runs;
mod workflows;
