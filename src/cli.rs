//! The command line: `serve`, `migrate`, `user create|password`, `project create|list`,
//! `config check`, `backup --to`, `restore`. Every command takes `--config FILE`; failures are one sentence
//! on stderr.

use std::io::Read;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::config::{Config, ConfigError};
use crate::db::{self, DbError, projects, users};
use crate::error::ApiError;
use crate::state::AppState;
use crate::{build_rocket, scheduler};

#[derive(Debug, Parser)]
#[command(
    name = "tidings",
    version,
    about = "Self-hosted email platform: API, dashboard and scheduler in one binary"
)]
pub struct Cli {
    /// Configuration file (default: $TIDINGS_CONFIG, else ./tidings.toml when present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations, then run the API, dashboard and scheduler until SIGINT or SIGTERM.
    Serve,
    /// Apply pending database migrations and exit.
    Migrate {
        /// List the migrations that would run, and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Manage dashboard users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage projects.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Read the capture outbox (mail kept instead of sent when no relay is configured), the
    /// server's own mail included: sign-up confirmations, password resets, invitations.
    #[command(subcommand)]
    Outbox(OutboxCommand),
    /// Write a consistent copy of the database to FILE, also while `serve` runs; the copy is
    /// checked, and the uploaded images are copied beside it (FILE.uploads/).
    Backup {
        /// The new file; it must not exist yet.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
    /// Put a backup in place of the database, with the server stopped; the database it
    /// replaces is kept aside (<database>.before-restore-<time>).
    Restore {
        /// The backup (a file `tidings backup` or the schedule made).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// The newest captured messages, one a line: id, time, recipient, subject.
    List {
        /// Only messages to this address.
        #[arg(long, value_name = "EMAIL")]
        to: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One captured message's source, as a relay would have received it.
    Show { id: i64 },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a dashboard user.
    Create(UserCredentials),
    /// Set a user's password; every dashboard session of the user ends.
    Password(UserCredentials),
}

/// A user's email and a password, given on the command line or on standard input.
#[derive(Debug, clap::Args)]
pub struct UserCredentials {
    #[arg(long)]
    email: String,
    /// The password (visible to other local users in the process list; see --password-stdin).
    #[arg(long, required_unless_present = "password_stdin", conflicts_with = "password_stdin")]
    password: Option<String>,
    /// Read the password from the first line of standard input.
    #[arg(long)]
    password_stdin: bool,
}

impl UserCredentials {
    /// The normalised email and a password that meets the rules.
    fn checked(self) -> Result<(String, String), CliError> {
        let password = match self.password {
            Some(p) => p,
            None if self.password_stdin => read_password()?,
            None => return Err(CliError("give --password or --password-stdin".into())),
        };
        Ok(crate::core::accounts::credentials(Some(&self.email), Some(&password), true)?)
    }
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Create a project owned by an existing user; prints its id and both keys as JSON.
    Create {
        #[arg(long)]
        name: String,
        /// Email of the owning user.
        #[arg(long)]
        owner: String,
    },
    /// One line per project: id, name, public key, owners, state.
    List,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate the configuration and print the effective values, secrets masked.
    Check,
}

/// A command's failure: one sentence for stderr.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError(format!("invalid configuration: {e}"))
    }
}

impl From<DbError> for CliError {
    fn from(e: DbError) -> Self {
        CliError(format!("database error: {e}"))
    }
}

impl From<crate::core::Error> for CliError {
    fn from(e: crate::core::Error) -> Self {
        match e.fields() {
            [] => CliError(e.to_string()),
            items => CliError(items.iter().map(|i| i.message.clone()).collect::<Vec<_>>().join("; ")),
        }
    }
}

impl From<ApiError> for CliError {
    fn from(e: ApiError) -> Self {
        match e.errors.as_slice() {
            [] => CliError(e.message.clone()),
            items => CliError(items.iter().map(|i| i.message.clone()).collect::<Vec<_>>().join("; ")),
        }
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Config(ConfigCommand::Check) => {
            print!("{}", config.to_masked_toml());
            if !config.smtp_enabled() {
                println!("# no [smtp] host: mail goes to the capture outbox");
            }
            eprintln!("configuration is valid");
            Ok(())
        }
        Command::Serve => serve(config),
        Command::Migrate { dry_run: true } => {
            let database = config.database_path();
            if !database.is_file() {
                return Err(CliError(format!("there is no database at {}", database.display())));
            }
            let (applied, pending) = db::migrate::dry_run(&database)?;
            println!(
                "{} is at schema version {applied}; this binary's is {}",
                database.display(),
                db::migrate::latest()
            );
            for name in &pending {
                println!("would apply {name}");
            }
            println!("{} migration(s) would run", pending.len());
            Ok(())
        }
        Command::Migrate { dry_run: false } => {
            init_tracing(&config);
            let db = db::Db::open(&config.database_path(), 1, config.database.busy_timeout_ms)?;
            let applied = db::migrate::run(&mut *db.conn()?)?;
            println!("applied {applied} migration(s); {} is up to date", config.database_path().display());
            // An older, large database is rewritten once so that retention gives space back;
            // not under a running server, which it would hold for as long as the copy takes.
            match crate::lock::acquire(&config.database_path()) {
                Ok(_lock) => {
                    if !db::retention::free_pages(&*db.conn()?)?.1 {
                        println!("rewriting the database so that it gives freed space back (VACUUM)...");
                        db::retention::enable_space_return(&*db.conn()?, None)?;
                    }
                }
                Err(why) => eprintln!("the database was not rewritten: {why}"),
            }
            Ok(())
        }
        Command::User(UserCommand::Password(credentials)) => {
            let (email, password) = credentials.checked()?;
            let state = AppState::open(config)?;
            let hash = crate::core::accounts::hash_password(&password, state.config.auth.bcrypt_cost)
                .map_err(CliError)?;
            let ended = db::write_tx(&mut *state.db.conn()?, |tx| {
                let user = users::by_email(tx, &email)?
                    .ok_or_else(|| CliError(format!("no user has the email {email}")))?;
                Ok::<_, CliError>(crate::core::accounts::change_password(tx, &user.id, &hash)?)
            })?;
            println!("{}", json!({ "email": email, "sessionsEnded": ended }));
            Ok(())
        }
        Command::User(UserCommand::Create(credentials)) => {
            let (email, password) = credentials.checked()?;
            let state = AppState::open(config)?;
            let hash = crate::core::accounts::hash_password(&password, state.config.auth.bcrypt_cost)
                .map_err(CliError)?;
            let user = db::write_tx(&mut *state.db.conn()?, |tx| {
                crate::core::accounts::insert_user(tx, &email, &hash)
            })?;
            println!(
                "{}",
                json!({ "id": user.id, "email": user.email, "createdAt": crate::clock::iso(user.created_at) })
            );
            Ok(())
        }
        Command::Project(ProjectCommand::Create { name, owner }) => {
            let state = AppState::open(config)?;
            let name = crate::core::projects::check_name(&name)
                .map_err(|why| CliError(format!("the name {why}")))?;
            let owner = crate::core::email::normalize(&owner)
                .map_err(|why| CliError(format!("the owner's email {why}")))?;
            let created = db::write_tx(&mut *state.db.conn()?, |tx| {
                let user = users::by_email(tx, &owner)?.ok_or_else(|| {
                    CliError(format!("no user has the email {owner}; create one with `tidings user create`"))
                })?;
                Ok::<_, CliError>(crate::core::projects::create(tx, &name, &user.id)?)
            })?;
            println!(
                "{}",
                json!({
                    "id": created.project.id,
                    "name": created.project.name,
                    "publicKey": created.keys.public_key,
                    "secretKey": created.keys.secret_key,
                })
            );
            Ok(())
        }
        Command::Project(ProjectCommand::List) => {
            let state = AppState::open(config)?;
            let conn = state.db.conn()?;
            for (project, owners) in projects::all_with_owners(&conn)? {
                let public_key = db::keys::public_key(&conn, &project.id)?.unwrap_or_default();
                let status = if project.disabled { "disabled" } else { "enabled" };
                println!("{}\t{}\t{}\t{}\t{}", project.id, project.name, public_key, owners, status);
            }
            Ok(())
        }
        Command::Outbox(OutboxCommand::List { to, limit }) => {
            let state = AppState::open(config)?;
            let to = to.map(|t| t.trim().to_ascii_lowercase());
            for m in db::outbox::list(&*state.db.conn()?, None, to.as_deref(), None, limit.clamp(1, 10_000))?
            {
                println!("{}\t{}\t{}\t{}", m.id, crate::clock::iso(m.created_at), m.to, m.subject);
            }
            Ok(())
        }
        Command::Outbox(OutboxCommand::Show { id }) => {
            let state = AppState::open(config)?;
            let found = db::outbox::get(&*state.db.conn()?, id, None)?;
            let (_, raw) = found.ok_or_else(|| CliError(format!("no captured message has the id {id}")))?;
            std::io::Write::write_all(&mut std::io::stdout(), &raw)
                .map_err(|e| CliError(format!("could not write the message: {e}")))?;
            Ok(())
        }
        Command::Backup { to } => {
            let made = crate::core::backups::copy(
                &config.database_path(),
                &to,
                &config.uploads_dir(),
                config.database.busy_timeout_ms,
            )
            .map_err(CliError)?;
            println!(
                "backed up {} to {} ({} bytes, integrity ok)",
                config.database_path().display(),
                made.path.display(),
                made.bytes
            );
            if made.uploads > 0 {
                println!(
                    "copied {} uploaded images to {}",
                    made.uploads,
                    crate::core::backups::uploads_beside(&made.path).display()
                );
            }
            Ok(())
        }
        Command::Restore { file } => {
            let restored =
                crate::core::backups::restore(&config, &file, crate::clock::now_ms()).map_err(CliError)?;
            if let Some(previous) = &restored.previous {
                println!("the database it replaces is kept at {}", previous.display());
            }
            println!(
                "restored {} to {} (schema version {}, {} uploaded images); start the server to use it",
                file.display(),
                config.database_path().display(),
                restored.version,
                restored.uploads
            );
            Ok(())
        }
    }
}

fn read_password() -> Result<String, CliError> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| CliError(format!("could not read standard input: {e}")))?;
    Ok(input.lines().next().unwrap_or_default().to_string())
}

/// Logs to stderr at `[server] log_level`, or as `RUST_LOG` says when it is set. Rocket's and
/// refinery's own chatter is kept to warnings and errors unless `RUST_LOG` asks for more, and
/// Rocket's notes on failed request guards (a Debug dump of the error at WARN for every refused
/// request, with targets ending in `::_`) are dropped: every refused request is logged once, in
/// one line with its request id, at DEBUG (`error::ApiError`'s responder). WARN and ERROR are
/// kept for what an operator must act on.
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let quiet = "rocket=error,refinery_core=warn,hyper=warn";
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(format!("{},{quiet}", config.server.log_level)))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("info,{quiet}")));
    // The hint keeps the most verbose level enabled known to `log` too: without it, every
    // `log::debug!` of html5ever's tokenizer (the text part of each message) was formatted and
    // handed to the subscriber only to be dropped.
    let hint = tracing_subscriber::layer::Filter::<tracing_subscriber::Registry>::max_level_hint(&filter);
    let guard_notes = tracing_subscriber::filter::filter_fn(|meta| {
        !(meta.target().ends_with("::_") && *meta.level() > tracing::Level::ERROR)
    })
    .with_max_level_hint(hint.unwrap_or(tracing::level_filters::LevelFilter::TRACE));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter)
        .with_filter(guard_notes);
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// Threads for blocking work (SQLite reads, rendering and signing, request checks) per core.
/// Tokio's default of 512 let a load peak start a hundred threads, each holding on to its own
/// malloc arena afterwards (88 MiB resident after the perf harness's load, 2 cores); all of that
/// work is CPU or a local file, so a few threads per core keep the cores as busy.
const BLOCKING_THREADS_PER_CORE: usize = 8;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn serve(config: Config) -> Result<(), CliError> {
    crate::memory::configure();
    init_tracing(&config);
    crate::db::configure_library();
    if config.scheduler.clock_offset_secs != 0 {
        crate::clock::set_offset_ms(config.scheduler.clock_offset_secs.saturating_mul(1000));
        tracing::warn!(
            offset_secs = config.scheduler.clock_offset_secs,
            "the clock is shifted ([scheduler] clock_offset_secs): for rehearsals, not for production"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tidings")
        .max_blocking_threads(BLOCKING_THREADS_PER_CORE * cores())
        .build()
        .map_err(|e| CliError(format!("could not start the async runtime: {e}")))?;
    let database = config.database_path();
    if let Some(dir) = database.parent().filter(|d| !d.as_os_str().is_empty()) {
        db::files::create_private_dir(dir)
            .map_err(|e| CliError(format!("could not create {}: {e}", dir.display())))?;
    }
    // Held until serve returns: one server per database.
    let _lock = crate::lock::acquire(&database).map_err(CliError)?;
    let state = AppState::open(config)?;
    scheduler::take_over(&state)?;
    let config = state.config.clone();
    tracing::info!(database = %state.db.path().display(), "database ready");
    if config.smtp_enabled() {
        for (n, relay) in config.smtp.relays().iter().enumerate() {
            tracing::info!(
                host = relay.host,
                port = relay.port,
                pool_size = relay.pool_size,
                "mail goes to the SMTP relay{}",
                if n == 0 { String::new() } else { format!(" (in turn {})", n + 1) }
            );
        }
        if !config.smtp.relays.is_empty() && config.smtp.host.is_some() {
            tracing::warn!("[[smtp.relays]] is set, so [smtp] host is not used");
        }
    } else {
        tracing::warn!(
            "no [smtp] host is configured: mail is kept in the capture outbox (GET /outbox) instead of being sent"
        );
    }
    if config.bounces.listen.is_some() && config.bounces.verp_domain().is_none() {
        tracing::error!("[bounces] listen is set without [bounces] domain: the bounce listener stays off");
    }
    runtime.block_on(async move {
        let scheduler = scheduler::start(state.clone(), scheduler::registry(&config));
        tokio::spawn(scheduler::watch_storage(state.clone()));
        let (stop_bounces, bounces_stopped) = tokio::sync::watch::channel(false);
        // One address for both: the inbound listener takes the bounces too.
        let shared = config.inbound.listen.is_some() && config.inbound.listen == config.bounces.listen;
        if let (Some(listen), Some(domain), false) =
            (config.bounces.listen, config.bounces.verp_domain(), shared)
        {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|e| CliError(format!("the bounce listener could not listen on {listen}: {e}")))?;
            tracing::info!(%listen, domain, "bounce listener taking reports for b-…@{domain}");
            crate::listeners::smtp::bounces::start(state.clone(), listener, bounces_stopped.clone());
        }
        if let Some(listen) = config.inbound.listen {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|e| CliError(format!("the inbound listener could not listen on {listen}: {e}")))?;
            tracing::info!(%listen, mx = config.inbound_host(), bounces = shared, "inbound mail listening");
            crate::listeners::smtp::inbound::start(state.clone(), listener, bounces_stopped.clone());
        }
        start_submission(&state, &config, bounces_stopped).await?;
        let rocket = build_rocket(state).attach(rocket::fairing::AdHoc::on_liftoff("announce", |rocket| {
            Box::pin(async move {
                let c = rocket.config();
                tracing::info!(
                    "Tidings {} listening on http://{}:{}",
                    env!("CARGO_PKG_VERSION"),
                    c.address,
                    c.port
                );
            })
        }));
        let launched = rocket.launch().await;
        tracing::info!("HTTP server stopped; stopping the scheduler");
        let _ = stop_bounces.send(true);
        scheduler.shutdown().await;
        match launched {
            Ok(_) => {
                tracing::info!("shutdown complete");
                Ok(())
            }
            Err(e) => Err(CliError(launch_error(&e, &config))),
        }
    })
}

/// The submission listeners `[submission]` turns on: STARTTLS on `listen`, TLS from the start on
/// `listen_tls`, with the certificate read again on SIGHUP.
async fn start_submission(
    state: &AppState,
    config: &Config,
    stopped: tokio::sync::watch::Receiver<bool>,
) -> Result<(), CliError> {
    use crate::listeners::smtp::{Tls, submission, tls::Certificates};
    let sub = &config.submission;
    if !sub.is_on() {
        return Ok(());
    }
    let certificates = match (&sub.cert, &sub.key) {
        (Some(cert), Some(key)) => {
            let certificates =
                Certificates::load(cert, key).map_err(|e| CliError(format!("[submission]: {e}")))?;
            crate::listeners::smtp::tls::reload_on_hangup(certificates.clone())
                .map_err(|e| CliError(format!("[submission]: SIGHUP: {e}")))?;
            Some(certificates)
        }
        _ => None,
    };
    let bind = async |addr: std::net::SocketAddr| {
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| CliError(format!("the submission listener could not listen on {addr}: {e}")))
    };
    if let Some(listen) = sub.listen {
        let tls = certificates.clone().map_or(Tls::Off, Tls::StartTls);
        tracing::info!(%listen, starttls = certificates.is_some(), "SMTP submission listening");
        submission::start(state.clone(), bind(listen).await?, tls, stopped.clone());
    }
    if let (Some(listen), Some(certificates)) = (sub.listen_tls, certificates) {
        tracing::info!(%listen, "SMTP submission listening (TLS from the start)");
        submission::start(state.clone(), bind(listen).await?, Tls::Implicit(certificates), stopped);
    }
    Ok(())
}

fn launch_error(e: &rocket::Error, config: &Config) -> String {
    match e.kind() {
        rocket::error::ErrorKind::Bind(io) => {
            format!("could not listen on {}:{}: {io}", config.server.address, config.server.port)
        }
        other => format!("the HTTP server failed: {other}"),
    }
}
