//! The dashboard in a real browser: Debian's Chromium, headless, driven by playwright-core, with
//! axe-core checking every page for accessibility.
//!
//! Needs `chromium` (apt) and `npm ci --prefix tests/browser`; `.ci/run` installs both. Where
//! they are missing the test says so and passes, except under CI, where it fails.
//!
//! The built binary serves on loopback with the capture transport and a DNS server on
//! loopback, so `example.test` can be verified. The test seeds a project through the CLI and the
//! API (contacts, a tracked event, a template, a captured message), then the script signs in and
//! works every page, checking what it does through the API.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::binary::{Server, run, stdout};
use crate::common::dns_server::DnsServer;

/// What is missing to run the browser, if anything.
fn missing_tools(root: &Path, chromium: &str) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if !Path::new(chromium).exists() {
        missing.push("Chromium (apt-get install chromium)");
    }
    if !root.join("node_modules/playwright-core").exists() || !root.join("node_modules/axe-core").exists() {
        missing.push("playwright-core and axe-core (npm ci --prefix tests/browser)");
    }
    if Command::new("node").arg("--version").output().is_err() {
        missing.push("Node.js");
    }
    missing
}

/// Seeds what the pages should show, through the API as an app would.
async fn seed(server: &Server, dns: &DnsServer, key: &str, public_key: &str) {
    let blocking = |f: &dyn Fn() -> (u16, Value)| tokio::task::block_in_place(f);
    let (status, domain) =
        blocking(&|| server.post_keyed("/domains", key, json!({ "domain": "example.test" })));
    assert_eq!(status, 200, "{domain}");
    for record in domain["records"].as_array().unwrap() {
        dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
    }
    let path = format!("/domains/{}/verify", domain["id"].as_str().unwrap());
    let verified = tokio::task::block_in_place(|| server.get_keyed(&path, key));
    assert_eq!(verified["status"], json!("verified"), "{verified}");
    for (email, data) in [
        ("ada@example.com", json!({ "firstName": "Ada", "plan": "pro", "city": "London" })),
        ("bob@example.com", json!({ "firstName": "Bob", "plan": "free", "city": "Oslo" })),
        ("cy@example.com", json!({ "firstName": "Cy", "plan": "free", "city": "Paris" })),
    ] {
        let (status, _) =
            blocking(&|| server.post_keyed("/contacts", key, json!({ "email": email, "data": data })));
        assert_eq!(status, 200);
    }
    let track = json!({ "email": "ada@example.com", "event": "signed_up", "data": { "source": "web" } });
    let (status, tracked) = blocking(&|| server.post_keyed("/v1/track", public_key, track.clone()));
    assert_eq!(status, 200, "{tracked}");
    let template = json!({ "name": "Welcome", "subject": "Welcome, {{ firstName ?? \"friend\" }}",
        "body": "<h1>Hello {{ firstName ?? \"friend\" }}</h1><p>You are on {{ plan }}.</p>", "from": "hello@example.test",
        "fromName": "Example", "type": "TRANSACTIONAL" });
    let (status, template) = blocking(&|| server.post_keyed("/templates", key, template.clone()));
    assert_eq!(status, 200, "{template}");
    let send = json!({ "to": "ada@example.com", "template": template["id"] });
    let (status, sent) = blocking(&|| server.post_keyed("/v1/send", key, send.clone()));
    assert_eq!(status, 200, "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let missing = missing_tools(&root, &chromium);
    if !missing.is_empty() {
        let message = format!("the browser test needs {}", missing.join(", "));
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("skipped: {message}");
        return;
    }

    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let path = dir.path().to_path_buf();
    let project: Value = tokio::task::spawn_blocking(move || {
        for email in ["owner@example.com", "member@example.com"] {
            let out = run(&path, &["user", "create", "--email", email, "--password", "password123"], &[]);
            assert!(out.status.success());
        }
        let out = run(&path, &["project", "create", "--name", "Acme", "--owner", "owner@example.com"], &[]);
        serde_json::from_str(&stdout(&out)).unwrap()
    })
    .await
    .unwrap();
    let key = project["secretKey"].as_str().unwrap().to_string();
    let public_key = project["publicKey"].as_str().unwrap().to_string();

    let nameservers = format!("[\"{}\"]", dns.nameserver());
    let mut server = Server::start(dir.path(), &[("TIDINGS_DNS__NAMESERVERS", nameservers.as_str())]);
    tokio::task::block_in_place(|| server.wait_healthy(Duration::from_secs(30)));
    seed(&server, &dns, &key, &public_key).await;

    let fixture = json!({
        "projectId": project["id"], "secretKey": key, "publicKey": public_key,
        "owner": "owner@example.com", "member": "member@example.com", "password": "password123",
    });
    let out = tokio::task::block_in_place(|| {
        Command::new("node")
            .arg(root.join("dashboard.mjs"))
            .arg(server.url(""))
            .env("CHROMIUM", &chromium)
            .env("FIXTURE", fixture.to_string())
            .output()
            .unwrap()
    });
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the dashboard script failed:\n{report}\nserver log:\n{}", server.log());
    assert!(report.contains("dashboard ok"), "{report}");
    tokio::task::block_in_place(|| server.terminate(Duration::from_secs(15)));
}
