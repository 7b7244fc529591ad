//! The application state shared by the HTTP handlers, the scheduler and the CLI.

use std::sync::Arc;

use rand::Rng;
use rand::distributions::Alphanumeric;

use crate::adapters::dns::Dns;
use crate::config::Config;
use crate::core::limits::attempts::Attempts;
use crate::core::limits::ratelimit::{self, ProjectLimiter};
use crate::db::{self, Db, DbError, settings};
use crate::scheduler::handles::{JobQueue, SchedulerStatus};

/// Secrets generated on first start and kept in the database (unless configured).
#[derive(Clone)]
pub struct Secrets {
    /// Signs session tokens.
    pub jwt: String,
    /// Signs links put in mail (unsubscribe, manage, tracking).
    pub link: String,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(***)")
    }
}

/// Everything a request or a job may need; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub config: Arc<Config>,
    pub secrets: Arc<Secrets>,
    pub jobs: JobQueue,
    pub limiter: Arc<dyn ProjectLimiter>,
    /// Failed sign-ins and sign-ups, per account and per address.
    pub attempts: Arc<Attempts>,
    /// Requests for password reset and verification mail.
    pub mail_requests: Arc<Attempts>,
    /// Submissions of signup forms, per form and per address (`[limits] form_submissions_*`).
    pub form_submissions: Arc<Attempts>,
    /// API keys already looked up ([`crate::core::limits::key_cache`]).
    pub keys: Arc<crate::core::limits::key_cache::KeyCache>,
    pub scheduler: Arc<SchedulerStatus>,
    pub dns: Dns,
    /// The series of `GET /metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Calls to the addresses WEBHOOK steps name.
    pub http: crate::adapters::outbound_http::Caller,
    /// Verifies SNS messages and keeps their signing certificates.
    pub sns: Arc<crate::adapters::sns::Verifier>,
    /// Stripe's API, when `[billing]` is configured.
    pub stripe: Option<Arc<crate::adapters::stripe::Stripe>>,
    /// Single sign-on providers' metadata, as discovered.
    pub sso: Arc<crate::core::sso::Providers>,
    /// The archive's and web version's rendered copies of campaigns.
    pub copies: Arc<crate::core::archive::Copies>,
    /// The work in progress, for the quarantine of work that crashed the process.
    pub inflight: Arc<crate::scheduler::inflight::Journal>,
    /// The memory JSON bodies being read at once may take.
    pub bodies: Arc<crate::core::limits::bodies::BodyBudget>,
    /// The receiving providers' rates and rests (`[smtp.providers]`, issue 34).
    pub providers: Arc<crate::core::limits::provider_gate::ProviderGate>,
    /// The room the data takes, against `[database] disk_budget_bytes` (issue 35).
    pub storage: Arc<crate::core::storage::Usage>,
}

impl AppState {
    /// Opens the database, applies pending migrations and loads (or makes) the secrets.
    pub fn open(config: Config) -> Result<AppState, DbError> {
        let config_path = config.database_path();
        let db = Db::open(&config_path, config.database.pool_size, config.database.busy_timeout_ms)?;
        let mut conn = db.conn()?;
        db::migrate::run(&mut conn)?;
        let secrets = db::write_tx(&mut conn, |tx| {
            let jwt = match &config.auth.jwt_secret {
                Some(secret) => secret.clone(),
                None => settings::get_or_insert(tx, "jwt_secret", random_secret)?,
            };
            let link = settings::get_or_insert(tx, "link_secret", random_secret)?;
            // Read by the catalogue caps' triggers (migration V22).
            settings::set(tx, "fields_per_project", &config.limits.fields_per_project.to_string())?;
            // Sandbox sender domains are verified only while mail is captured (issue 33).
            let captured = if config.smtp.captures() { "1" } else { "0" };
            settings::set(tx, crate::core::sandbox::CAPTURED_SETTING, captured)?;
            settings::set(tx, "event_names_per_project", &config.limits.event_names_per_project.to_string())?;
            // Read by the workflow engine as events start executions (issue 29).
            let limits = &config.limits;
            settings::set(
                tx,
                "workflow_runs_per_contact_hour",
                &limits.workflow_runs_per_contact_hour.to_string(),
            )?;
            settings::set(
                tx,
                "chained_runs_per_contact_hour",
                &limits.chained_runs_per_contact_hour.to_string(),
            )?;
            Ok::<_, DbError>(Secrets { jwt, link })
        })?;
        drop(conn);
        let limiter = ratelimit::limiter(config.limits.requests_per_minute);
        let dns = Dns::new(&config.dns);
        let http = crate::adapters::outbound_http::Caller::new(
            dns.clone(),
            config.webhooks.allow_private,
            std::time::Duration::from_secs(crate::core::workflows::WEBHOOK_TIMEOUT_SECS),
        );
        crate::core::lists::lists();
        let jobs = JobQueue::new(db.wakers().clone());
        let keys = Arc::new(crate::core::limits::key_cache::KeyCache::watching(db.wakers().keys.clone()));
        let sns = Arc::new(crate::adapters::sns::Verifier::new(&config.webhooks));
        let stripe = crate::adapters::stripe::Stripe::new(&config.billing).map(Arc::new);
        let bodies = Arc::new(crate::core::limits::bodies::BodyBudget::new(config.limits.body_memory_bytes));
        let form_submissions = Arc::new(Attempts::for_forms(
            config.limits.form_submissions_per_form_hour,
            config.limits.form_submissions_per_address_hour,
        ));
        let providers =
            Arc::new(crate::core::limits::provider_gate::ProviderGate::new(&config.smtp.providers));
        let storage = Arc::new(crate::core::storage::Usage::new(config.database.disk_budget_bytes));
        Ok(AppState {
            providers,
            storage,
            db,
            config: Arc::new(config),
            secrets: Arc::new(secrets),
            jobs,
            limiter,
            attempts: Arc::new(Attempts::default()),
            mail_requests: Arc::new(Attempts::for_mail()),
            form_submissions,
            keys,
            scheduler: Arc::new(SchedulerStatus::default()),
            dns,
            metrics: crate::metrics::Metrics::shared(),
            http,
            sns,
            stripe,
            sso: Arc::default(),
            copies: Arc::default(),
            inflight: crate::scheduler::inflight::Journal::new(crate::scheduler::inflight::journal_path(
                &config_path,
            )),
            bodies,
        })
    }
}

fn random_secret() -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(64).map(char::from).collect()
}
