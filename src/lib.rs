//! Tidings: a self-hosted email platform in one binary.
//!
//! [`build_rocket`] is the one entry point shared by `tidings serve` and the tests: it builds the
//! HTTP server around an [`AppState`]. The scheduler runs beside it ([`scheduler::start`]).

pub mod adapters;
pub mod api;
pub mod bounded_json;
pub mod cli;
pub mod clock;
pub mod config;
pub mod core;
pub mod db;
pub mod error;
pub mod listeners;
pub mod lock;
pub mod mail;
pub mod memory;
pub mod metrics;
pub mod scheduler;
pub mod state;
pub mod views;

use figment::Figment;
use rocket::config::{LogLevel, Shutdown, Sig};
use rocket::data::{ByteUnit, Limits};
use rocket::{Build, Rocket};

pub use crate::state::AppState;

/// The HTTP server for `state`, configured from `state.config`.
pub fn build_rocket(state: AppState) -> Rocket<Build> {
    let config = &state.config;
    let limits = &config.limits;
    let form_limit = ByteUnit::from(limits.csv_bytes.max(limits.upload_bytes) + 64 * 1024);
    let grace = config.server.shutdown_grace_secs;
    let rocket_config = rocket::Config {
        address: config.server.address,
        port: config.server.port,
        ident: rocket::config::Ident::try_new("Tidings").unwrap_or_default(),
        ip_header: None,
        log_level: LogLevel::Off,
        cli_colors: false,
        limits: Limits::default()
            .limit("json", ByteUnit::from(limits.message_bytes))
            .limit("bytes", ByteUnit::from(limits.message_bytes))
            .limit("string", ByteUnit::from(limits.message_bytes))
            .limit("file", form_limit)
            .limit("data-form", form_limit)
            .limit("form", ByteUnit::from(64 * 1024)),
        shutdown: Shutdown {
            ctrlc: true,
            signals: [Sig::Term, Sig::Int].into_iter().collect(),
            grace,
            mercy: grace.min(3),
            force: true,
            ..Default::default()
        },
        ..rocket::Config::default()
    };
    let rocket = rocket::custom(Figment::from(rocket_config)).manage(state);
    api::mount(rocket)
}
