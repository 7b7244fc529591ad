//! The HTTP surface: one module per resource, mounted here in one table.
//!
//! Handlers are thin: parse, authorize, call `core`/`db` through the funnel, shape the reply.

/// A module's routes from one list: `routes()` mounts them and `Doc` describes them in the
/// OpenAPI document (`api::openapi` merges every module's `Doc`), so the two cannot differ.
/// Defined before the modules so that each can use it.
macro_rules! documented_routes {
    ($($route:ident),+ $(,)?) => {
        /// This module's routes in the OpenAPI document.
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($route),+))]
        pub struct Doc;

        pub fn routes() -> Vec<rocket::Route> {
            rocket::routes![$($route),+]
        }
    };
}

pub mod ab_tests;
pub mod aliases;
pub mod analytics;
pub mod analytics_views;
mod archive;
pub mod auth;
mod billing;
mod branding;
pub mod campaign_report;
pub mod campaigns;
pub mod confirm;
pub mod consent;
pub mod contact_jobs;
pub mod contacts;
pub mod csv_download;
pub mod dashboard;
pub mod domains;
pub mod emails;
pub mod erasure;
pub mod events;
pub mod executions;
pub mod exports;
pub mod features;
pub mod fields;
pub mod form_pages;
pub mod forms;
pub mod guards;
pub mod gzipped;
pub mod health;
pub mod idempotency;
pub mod ids;
pub mod inbound;
pub mod inbound_domains;
pub mod invitation_links;
pub mod json;
pub mod members;
pub mod metrics;
pub mod openapi;
pub mod outbox;
pub mod pagination;
pub mod preferences;
pub mod preview;
pub mod projects;
pub mod public_page;
pub mod retention;
pub mod roles;
pub mod segments;
pub mod send;
pub mod sending;
pub mod smtp_credentials;
pub mod sns;
mod sso;
pub mod storage;
pub mod suppressions;
pub mod templates;
pub mod topics;
pub mod track;
pub mod tracking;
pub mod tracking_domains;
mod uploads;
pub mod usage;
pub mod verify;
pub mod warmups;
pub mod webhooks;
pub mod workflow_steps;
pub mod workflows;

use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::Header;
use rocket::{Build, Request, Response, Rocket};

use crate::error::RequestId;

/// Mounts every route and the JSON catcher.
pub fn mount(rocket: Rocket<Build>) -> Rocket<Build> {
    let routes = [
        health::routes(),
        metrics::routes(),
        features::routes(),
        openapi::routes(),
        auth::routes(),
        sso::routes(),
        projects::routes(),
        billing::routes(),
        members::routes(),
        invitation_links::routes(),
        contacts::routes(),
        emails::routes(),
        fields::routes(),
        contact_jobs::routes(),
        domains::routes(),
        verify::routes(),
        templates::routes(),
        campaigns::routes(),
        campaign_report::routes(),
        ab_tests::routes(),
        preview::routes(),
        send::routes(),
        track::routes(),
        events::routes(),
        segments::routes(),
        workflows::routes(),
        workflow_steps::routes(),
        executions::routes(),
        sns::routes(),
        webhooks::routes(),
        smtp_credentials::routes(),
        topics::routes(),
        suppressions::routes(),
        branding::routes(),
        forms::routes(),
        form_pages::routes(),
        preferences::routes(),
        consent::routes(),
        retention::routes(),
        storage::routes(),
        erasure::routes(),
        exports::routes(),
        sending::routes(),
        tracking_domains::routes(),
        warmups::routes(),
        confirm::routes(),
        inbound::routes(),
        inbound_domains::routes(),
        analytics::routes(),
        analytics_views::routes(),
        outbox::routes(),
        uploads::routes(),
        tracking::routes(),
        tracking::head_routes(),
        archive::routes(),
        dashboard::routes(),
    ];
    routes
        .into_iter()
        .fold(rocket, |rocket, routes| rocket.mount("/", routes))
        .register("/", rocket::catchers![crate::error::catch_all])
        .attach(ResponseHeaders)
}

/// Adds `X-Request-Id` to every response and `X-RateLimit-*` to every keyed one, and counts
/// every request in the metrics (by route template and status, with its duration).
struct ResponseHeaders;

/// When the request arrived.
struct Arrived(std::time::Instant);

#[rocket::async_trait]
impl Fairing for ResponseHeaders {
    fn info(&self) -> Info {
        Info { name: "response headers", kind: Kind::Request | Kind::Response }
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut rocket::Data<'_>) {
        req.local_cache(|| Arrived(std::time::Instant::now()));
    }

    async fn on_response<'r>(&self, req: &'r Request<'_>, res: &mut Response<'r>) {
        if let Some(state) = req.rocket().state::<crate::state::AppState>() {
            let route = req.route().map_or("unmatched", |r| r.uri.path());
            let took = req.local_cache(|| Arrived(std::time::Instant::now())).0.elapsed();
            state.metrics.request(route, res.status().code, took);
        }
        let request_id = RequestId::of(req);
        if tracing::enabled!(tracing::Level::DEBUG) {
            let client = req.guard::<guards::ClientIp>().await.succeeded().and_then(|ip| ip.0);
            tracing::debug!(request_id, client = ?client, method = %req.method(), path = %req.uri().path(),
                status = res.status().code, "request");
        }
        res.set_header(Header::new("X-Request-Id", request_id.to_string()));
        if let Some((limit, remaining)) = guards::rate_headers(req) {
            res.set_header(Header::new("X-RateLimit-Limit", limit.to_string()));
            res.set_header(Header::new("X-RateLimit-Remaining", remaining.to_string()));
        }
    }
}
