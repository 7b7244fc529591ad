//! The built binary: zero-config start, graceful shutdown, the CLI, configuration, backups.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::binary::{Server, agent, run, stderr, stdout};
use crate::common::store::Store;

fn is_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[test]
fn zero_config_start_from_an_empty_directory_and_sigterm() {
    let dir = TempDir::new().unwrap();
    // With no file and no variables it listens on 127.0.0.1:8080; only if that port is taken on
    // this machine is a free one given instead.
    let mut server =
        if is_free(8080) { Server::start_unconfigured(dir.path()) } else { Server::start(dir.path(), &[]) };
    let took = server.wait_healthy(Duration::from_secs(30));
    eprintln!("first 200 on /health after {took:?}");
    assert!(dir.path().join("data/tidings.db").is_file(), "database under ./data/");

    let (status, health) = server.get_json("/health");
    assert_eq!(status, 200);
    assert_eq!(health["status"], json!("ok"));
    assert_eq!(health["database"], json!("ok"));
    assert_eq!(health["scheduler"], json!("running"));
    assert_eq!(health["version"], json!(env!("CARGO_PKG_VERSION")));
    let mut page = agent().get(&server.url("/")).call().unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers().get("content-type").unwrap().to_str().unwrap().starts_with("text/html"));
    assert!(page.body_mut().read_to_string().unwrap().contains("Tidings"));

    let log = server.log();
    assert!(log.contains("capture outbox"), "says mail is captured:\n{log}");
    let status = server.terminate(Duration::from_secs(15));
    assert!(status.success(), "{status}:\n{}", server.log());
    assert!(server.log().contains("shutdown complete"), "{}", server.log());
}

#[test]
fn sigterm_lets_an_in_flight_request_finish() {
    let dir = TempDir::new().unwrap();
    // bcrypt at cost 13 makes sign-up slow enough to be in flight when the signal comes.
    let mut server = Server::start(
        dir.path(),
        &[("TIDINGS_AUTH__BCRYPT_COST", "13"), ("TIDINGS_SERVER__SHUTDOWN_GRACE_SECS", "10")],
    );
    server.wait_healthy(Duration::from_secs(30));
    let url = server.url("/auth/signup");
    let request = std::thread::spawn(move || {
        let mut res = agent()
            .post(&url)
            .header("content-type", "application/json")
            .send(json!({ "email": "slow@example.com", "password": "password123" }).to_string())
            .unwrap();
        (res.status().as_u16(), res.body_mut().read_to_string().unwrap())
    });
    std::thread::sleep(Duration::from_millis(150));
    let status = server.terminate(Duration::from_secs(30));
    let (code, body) = request.join().unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(status.success(), "{status}:\n{}", server.log());
    assert_eq!(Store::open(&dir.path().join("data/tidings.db")).count("users", &[]), 1);
}

#[test]
fn cli_creates_users_and_projects() {
    let dir = TempDir::new().unwrap();
    let out = run(dir.path(), &["migrate"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("applied ") && !stdout(&out).starts_with("applied 0"),
        "{}",
        stdout(&out)
    );
    let again = run(dir.path(), &["migrate"], &[]);
    assert!(stdout(&again).starts_with("applied 0 migration(s)"), "{}", stdout(&again));

    let out = run(
        dir.path(),
        &["user", "create", "--email", "Owner@Example.com", "--password", "password123"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let user: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(user["email"], json!("owner@example.com"));

    let out = run(dir.path(), &["project", "create", "--name", "Shop", "--owner", "owner@example.com"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let project: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let keys: Vec<&str> = project.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "name", "publicKey", "secretKey"]);
    assert_eq!(project["name"], json!("Shop"));
    let pk = project["publicKey"].as_str().unwrap();
    let sk = project["secretKey"].as_str().unwrap();
    assert!(pk.starts_with("pk_") && pk.len() == 43 && sk.starts_with("sk_") && sk.len() == 43);

    let out = run(dir.path(), &["project", "list"], &[]);
    assert!(out.status.success());
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1);
    let line = &lines[0];
    assert!(
        line.contains(project["id"].as_str().unwrap()) && line.contains("Shop") && line.contains(pk),
        "{line}"
    );
    assert!(line.contains("owner@example.com") && !line.contains(sk), "{line}");

    // The key made on the command line works against the server.
    let mut server = Server::start(dir.path(), &[]);
    server.wait_healthy(Duration::from_secs(30));
    let res = agent()
        .get(&server.url("/users/@me"))
        .header("Authorization", &format!("Bearer {sk}"))
        .call()
        .unwrap();
    assert_eq!(res.status(), 401, "a key is not a session");
    server.terminate(Duration::from_secs(15));

    // Failures are one sentence and a non-zero exit.
    for (args, expected) in [
        (
            vec!["user", "create", "--email", "owner@example.com", "--password", "password123"],
            "already exists",
        ),
        (vec!["user", "create", "--email", "new@example.com", "--password", "short"], "at least 8"),
        (vec!["project", "create", "--name", "X", "--owner", "ghost@example.com"], "no user has the email"),
        (vec!["project", "create", "--name", "  ", "--owner", "owner@example.com"], "must not be empty"),
    ] {
        let out = run(dir.path(), &args, &[]);
        assert!(!out.status.success(), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("tidings: ") && err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn config_check_names_bad_keys_and_env_wins() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("tidings.toml");

    std::fs::write(&file, "[server]\nport = 1234\nbogus = true\n").unwrap();
    let out = run(dir.path(), &["config", "check"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("`server.bogus` is not a known configuration key"), "{}", stderr(&out));

    std::fs::write(&file, "[server]\nport = \"abc\"\n").unwrap();
    let out = run(dir.path(), &["config", "check"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("`server.port` has a bad value"), "{}", stderr(&out));

    std::fs::write(&file, "[smtp]\nsecurity = \"ssl\"\n").unwrap();
    let out = run(dir.path(), &["config", "check"], &[]);
    assert!(
        stderr(&out).contains("`smtp.security`") && stderr(&out).contains("starttls"),
        "{}",
        stderr(&out)
    );

    std::fs::write(&file, "[limits]\nrequests_per_minute = 0\n").unwrap();
    let out = run(dir.path(), &["serve"], &[]);
    assert_eq!(out.status.code(), Some(1), "serve refuses to start");
    assert!(stderr(&out).contains("limits.requests_per_minute"), "{}", stderr(&out));

    std::fs::write(&file, "[server]\nport = 1234\n[smtp]\nhost = \"relay.example.com\"\nusername = \"me\"\n")
        .unwrap();
    let out = run(
        dir.path(),
        &["config", "check"],
        &[
            ("TIDINGS_SERVER__PORT", "4321"),
            ("TIDINGS_SMTP__PASSWORD", "hunter2"),
            ("DISABLE_SIGNUPS", "true"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    let effective: toml::Value = toml::from_str(&shown).unwrap();
    assert_eq!(effective["server"]["port"].as_integer(), Some(4321), "the variable wins over the file");
    assert_eq!(effective["smtp"]["host"].as_str(), Some("relay.example.com"));
    assert_eq!(effective["smtp"]["password"].as_str(), Some("***"));
    assert_eq!(effective["auth"]["disable_signups"].as_bool(), Some(true));
    assert!(!shown.contains("hunter2"));

    let out = run(dir.path(), &["config", "check"], &[("TIDINGS_SMTP_HOST", "x")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("smtp_host") && stderr(&out).contains("TIDINGS_SMTP_HOST"),
        "{}",
        stderr(&out)
    );

    let out = run(dir.path(), &["config", "check", "--config", "missing.toml"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("missing.toml does not exist"), "{}", stderr(&out));

    let other = dir.path().join("other.toml");
    std::fs::write(&other, "[server]\nport = 7777\n").unwrap();
    let out = run(dir.path(), &["config", "check", "--config", other.to_str().unwrap()], &[]);
    assert!(stdout(&out).contains("port = 7777"), "{}", stdout(&out));
    let out = run(dir.path(), &["config", "check"], &[("TIDINGS_CONFIG", other.to_str().unwrap())]);
    assert!(stdout(&out).contains("port = 7777"), "{}", stdout(&out));
}

#[test]
fn backup_copies_the_database_while_the_server_runs() {
    let dir = TempDir::new().unwrap();
    let mut server = Server::start(dir.path(), &[]);
    server.wait_healthy(Duration::from_secs(30));
    let out = run(
        dir.path(),
        &["user", "create", "--email", "owner@example.com", "--password", "password123"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // Writes keep coming through the server while the backup runs.
    let base = server.url("");
    let writer = std::thread::spawn(move || {
        let agent = agent();
        for n in 0..20 {
            let res = agent
                .post(&format!("{base}/auth/signup"))
                .header("content-type", "application/json")
                .send(
                    json!({ "email": format!("user{n}@example.com"), "password": "password123" }).to_string(),
                )
                .unwrap();
            assert_eq!(res.status(), 200);
        }
    });
    let target = dir.path().join("backups/copy.db");
    let out = run(dir.path(), &["backup", "--to", target.to_str().unwrap()], &[]);
    writer.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let copy = Store::open(&target);
    assert_eq!(copy.integrity(), "ok");
    let users = copy.count("users", &[]);
    assert!((1..=21).contains(&users), "{users}");
    assert_eq!(copy.count("users", &[("email", "owner@example.com".into())]), 1);

    // Secrets stay private whatever the umask: the data directory 0700, the database, its WAL
    // and SHM files and the backup 0600.
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let data = dir.path().join("data");
    assert_eq!(mode(&data), 0o700);
    for file in ["tidings.db", "tidings.db-wal", "tidings.db-shm"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    assert_eq!(mode(&target), 0o600, "the backup");

    let out = run(dir.path(), &["backup", "--to", target.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    server.terminate(Duration::from_secs(15));
}

#[test]
fn a_second_server_on_the_same_data_refuses_to_start_and_names_the_first() {
    let dir = TempDir::new().unwrap();
    let mut first = Server::start(dir.path(), &[]);
    first.wait_healthy(Duration::from_secs(30));
    let mut second = Server::start(dir.path(), &[]);
    let status = second.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1));
    let log = second.log();
    assert!(log.contains(&format!("process {}", first.pid())) && log.contains("already using"), "{log}");
    // The first one is unharmed, and once it stops the data is free again.
    assert_eq!(first.get_json("/health").0, 200);
    first.terminate(Duration::from_secs(15));
    let mut third = Server::start(dir.path(), &[]);
    third.wait_healthy(Duration::from_secs(30));
    third.terminate(Duration::from_secs(15));
}

#[test]
fn refused_requests_are_not_warnings() {
    // At the default level a refused request logs nothing; at debug, one line with its id.
    let dir = TempDir::new().unwrap();
    for (level, expect_lines) in [("info", false), ("debug", true)] {
        let mut server = Server::start(dir.path(), &[("TIDINGS_SERVER__LOG_LEVEL", level)]);
        server.wait_healthy(Duration::from_secs(30));
        let agent = agent();
        let res =
            agent.get(&server.url("/contacts")).header("Authorization", "Bearer sk_nope").call().unwrap();
        let request_id = res.headers().get("X-Request-Id").unwrap().to_str().unwrap().to_string();
        agent.post(&server.url("/auth/login")).send("not json").unwrap();
        agent.get(&server.url("/no/such/page")).call().unwrap();
        server.terminate(Duration::from_secs(15));
        let log = server.log();
        let warnings: Vec<&str> =
            log.lines().filter(|l| l.contains(" WARN ") && !l.contains("capture outbox")).collect();
        assert!(warnings.is_empty(), "{warnings:#?}");
        assert!(!log.contains("ErrorBody") && !log.contains("guard"), "{log}");
        let refused = log.lines().filter(|l| l.contains("refused:")).collect::<Vec<_>>();
        if expect_lines {
            assert!(
                refused.iter().any(|l| l.contains(&request_id) && l.contains("INVALID_API_KEY")),
                "{log}"
            );
        } else {
            assert!(refused.is_empty(), "{log}");
        }
    }
}
