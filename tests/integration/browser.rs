//! The dashboard in a real browser: Debian's Chromium, headless, driven by playwright-core, with
//! axe-core checking every page for accessibility.
//!
//! Needs `chromium` (apt) and `npm ci --prefix tests/browser`; `.ci/run` installs both. Where
//! they are missing the test says so and passes, except under CI, where it fails.
//!
//! The built binary serves on loopback with the capture transport, its bounce listener and a DNS
//! server on loopback, so `example.test` can be verified. The test seeds a project through the
//! CLI and the API (contacts, a tracked event, a template, captured messages, a complaint over
//! SMTP); after the scripts of single features (audience, forms, branding, archive, sending and
//! data: retention, a contact's export and erasure), `dashboard.mjs` signs in and works every page, checking what it does through the
//! API; `pages.mjs` then opens every page at 1400 and 375 px with axe and saves each. Then a hard bounce takes the project over its (lowered) bounce threshold, and
//! `suspended.mjs` reads the suspension in Settings and enables the project again. Then
//! `accounts.mjs` opens the links of the mail the server sent itself (read from the capture
//! outbox): a password reset, an invitation and an address verification, and `sso.mjs` signs in
//! through a single sign-on provider on loopback. Last, `wipes.mjs` resets the project and
//! deletes it from the danger zone.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::bounces::{arf, deliver, dsn, report};
use crate::common::binary::{Server, agent, free_port, run, stdout, wait_until};
use crate::common::dns_server::DnsServer;
use crate::common::http_receiver::HttpReceiver;
use crate::common::store::Store;

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

/// The envelope sender the captured message to `to` left with: its VERP bounce address.
fn bounce_address(server: &Server, key: &str, to: &str) -> String {
    let to = json!(to);
    let outbox = wait_until(server, key, "/outbox?limit=100", Duration::from_secs(30), |b| {
        b["data"].as_array().is_some_and(|d| d.iter().any(|m| m["to"] == to))
    });
    let message = outbox["data"].as_array().unwrap().iter().find(|m| m["to"] == to).unwrap();
    message["from"].as_str().unwrap().to_string()
}

/// Seeds what the pages should show, through the API as an app would, and a complaint about
/// dee's mail through the bounce listener on `bounces`. Returns the bounce address of ada's
/// welcome mail, which bounces later.
async fn seed(server: &Server, dns: &DnsServer, key: &str, public_key: &str, ports: (u16, u16)) -> String {
    let (bounces, inbound) = ports;
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
        ("dee@example.com", json!({ "firstName": "Dee" })),
    ] {
        let (status, _) =
            blocking(&|| server.post_keyed("/contacts", key, json!({ "email": email, "data": data })));
        assert_eq!(status, 200);
    }
    // Dee's mailbox provider reports her mail as spam: she is unsubscribed and suppressed.
    let mail = json!({ "to": "dee@example.com", "subject": "Hi Dee", "body": "<p>Hi</p>", "from": "hello@example.test" });
    let (status, sent) = blocking(&|| server.post_keyed("/v1/send", key, mail.clone()));
    assert_eq!(status, 200, "{sent}");
    let dee = tokio::task::block_in_place(|| bounce_address(server, key, "dee@example.com"));
    assert!(dee.ends_with("@bounces.example.test"), "{dee}");
    report(bounces, &dee, &arf("abuse")).await.unwrap();
    // Ada writes to support@in.example.test: the Inbound page and her contact page show it.
    let (status, domain) =
        blocking(&|| server.post_keyed("/inbound-domains", key, json!({ "domain": "in.example.test" })));
    assert_eq!(status, 200, "{domain}");
    for record in domain["records"].as_array().unwrap() {
        let (owner, value) = (record["name"].as_str().unwrap(), record["value"].as_str().unwrap());
        match record["type"].as_str().unwrap() {
            "MX" => dns.mx(owner, 10, value).await,
            _ => dns.txt(owner, value).await,
        }
    }
    let path = format!("/inbound-domains/{}/verify", domain["id"].as_str().unwrap());
    let verified = tokio::task::block_in_place(|| server.get_keyed(&path, key));
    assert_eq!(verified["status"], json!("verified"), "{verified}");
    let route = json!({ "match": "support@in.example.test", "actions": [{ "type": "store" }] });
    let (status, route) = blocking(&|| server.post_keyed("/inbound-routes", key, route.clone()));
    assert_eq!(status, 200, "{route}");
    // example.com lets loopback send for it, so Ada's message passes SPF and DMARC.
    dns.txt("example.com", "v=spf1 ip4:127.0.0.1 -all").await;
    dns.txt("_dmarc.example.com", "v=DMARC1; p=none").await;
    deliver(inbound, Some("ada@example.com"), "support@in.example.test", QUESTION).await.unwrap();
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
    tokio::task::block_in_place(|| bounce_address(server, key, "ada@example.com"))
}

/// What Ada writes to support: HTML with a script (which the sandboxed frame never runs) and an
/// attachment.
const QUESTION: &str = "From: Ada <ada@example.com>\r\nTo: support@in.example.test\r\nSubject: Question about my plan\r\n\
Message-ID: <q1@example.com>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
Content-Type: text/html; charset=utf-8\r\n\r\n<p>Can I <b>upgrade</b> mid-month?</p><script>parent.document.title='owned'</script>\r\n\
--b\r\nContent-Type: text/plain; name=plan.txt\r\nContent-Disposition: attachment; filename=plan.txt\r\n\r\npro\r\n--b--\r\n";

/// The path and query of the link to `page` in the newest system mail to `to`, read with
/// `tidings outbox` (as an operator in capture mode would) once every such mail has left the queue.
fn captured_link(dir: &Path, to: &str, page: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        let queued = Store::open(&dir.join("data/tidings.db")).count(
            "emails",
            &[("project_id", "system".into()), ("to_email", to.into()), ("status", "QUEUED".into())],
        );
        let listed = stdout(&run(dir, &["outbox", "list", "--to", to, "--limit", "1"], &[]));
        if let (0, Some(id)) = (queued, listed.split('\t').next().filter(|id| !id.trim().is_empty())) {
            let raw = run(dir, &["outbox", "show", id.trim()], &[]).stdout;
            let message = mail_parser::MessageParser::default().parse(&raw).unwrap();
            let html = message.body_html(0).unwrap().to_string();
            let at =
                html.find(&format!("/{page}?token=")).unwrap_or_else(|| panic!("no /{page} link: {html}"));
            return html[at..].chars().take_while(|c| *c != '"' && !c.is_whitespace() && *c != '<').collect();
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no system mail to {to} was captured");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The decoded query of a request path.
fn query_of(path: &str) -> std::collections::HashMap<String, String> {
    crate::sso::form(path.split_once('?').map(|(_, q)| q).unwrap_or_default())
}

/// Runs the browser script `name` against the server; fails with its report and the server's log.
fn drive(root: &Path, chromium: &str, server: &Server, name: &str, fixture: &Value) {
    let out = Command::new("node")
        .arg(root.join(format!("{name}.mjs")))
        .arg(server.url(""))
        .env("CHROMIUM", chromium)
        .env("FIXTURE", fixture.to_string())
        .output()
        .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name}.mjs failed:\n{report}\nserver log:\n{}", server.log());
    assert!(report.contains(&format!("{name} ok")), "{report}");
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
    let dns = DnsServer::start(&["test", "com"]).await;
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

    // A single sign-on provider on loopback: its authorization page sends the browser straight
    // back with a code, and its token endpoint signs an ID token with that sign-in's nonce.
    let sso = HttpReceiver::start();
    let issuer = crate::sso::provider(&sso);
    sso.handle("/authorize", |request, _| {
        let query = query_of(&request.path);
        let back = format!("{}?code=browser-code&state={}", query["redirect_uri"], query["state"]);
        (302, vec![("Location".into(), back)], String::new())
    });
    let token_issuer = issuer.clone();
    sso.handle("/token", move |_, earlier| {
        let asked =
            earlier.iter().rev().find(|r| r.path.starts_with("/authorize")).map(|r| query_of(&r.path));
        let nonce = asked.map(|q| q["nonce"].clone()).unwrap_or_default();
        let claims =
            json!({ "sub": "sso-1", "email": "sso@example.com", "email_verified": true, "nonce": nonce });
        (200, Vec::new(), crate::sso::token_answer(&token_issuer, claims))
    });
    // And GitHub on loopback, for a verified primary address; and Stripe, whose checkout pays
    // at once.
    let github = HttpReceiver::start();
    let account = std::sync::Arc::new(std::sync::Mutex::new((
        4242,
        json!([
            { "email": "octo@example.com", "primary": true, "verified": true },
        ]),
    )));
    crate::github_sign_in::github(&github, account);
    let stripe = HttpReceiver::start();
    crate::billing::stripe_for_browsers(&stripe);
    std::fs::write(
        dir.path().join("tidings.toml"),
        format!(
            r#"
            [[auth.oidc]]
            id = "acme"
            name = "Loopback SSO"
            issuer = "{issuer}"
            client_id = "tidings"
            client_secret = "client-secret"

            [auth.github]
            client_id = "Iv1.loopback"
            client_secret = "github-secret"
            web_base = "{github}"
            api_base = "{github}"

            [billing]
            stripe_secret_key = "sk_test_loopback"
            stripe_webhook_secret = "{webhook_secret}"
            price_ids = ["price_browser"]
            stripe_api_base = "{stripe}"
            "#,
            github = github.url(""),
            stripe = stripe.url(""),
            webhook_secret = crate::billing::WEBHOOK_SECRET,
        ),
    )
    .unwrap();

    let nameservers = format!("[\"{}\"]", dns.nameserver());
    let bounces = free_port();
    let listen = format!("127.0.0.1:{bounces}");
    let submission = format!("127.0.0.1:{}", free_port());
    let inbound = free_port();
    let inbound_listen = format!("127.0.0.1:{inbound}");
    // One hard bounce in the few mails the test sends is over 1 %; complaints never suspend here.
    let env = [
        ("TIDINGS_DNS__NAMESERVERS", nameservers.as_str()),
        ("TIDINGS_BOUNCES__LISTEN", listen.as_str()),
        ("TIDINGS_BOUNCES__DOMAIN", "bounces.example.test"),
        // The SMTP page shows the listener's settings (no certificate on loopback).
        ("TIDINGS_SUBMISSION__LISTEN", submission.as_str()),
        ("TIDINGS_SUBMISSION__ALLOW_PLAINTEXT_AUTH", "true"),
        ("TIDINGS_INBOUND__LISTEN", inbound_listen.as_str()),
        ("TIDINGS_INBOUND__HOSTNAME", "mx.example.test"),
        ("TIDINGS_REPUTATION__MIN_SENT", "1"),
        ("TIDINGS_REPUTATION__BOUNCE_RATE", "0.01"),
        ("TIDINGS_REPUTATION__COMPLAINT_RATE", "1"),
        // A budget the data passes at once: every page shows (and is audited with) the banner
        // that warns of a disk filling up.
        ("TIDINGS_DATABASE__DISK_BUDGET_BYTES", "1"),
    ];
    let mut server = Server::start(dir.path(), &env);
    tokio::task::block_in_place(|| server.wait_healthy(Duration::from_secs(30)));
    let ada = seed(&server, &dns, &key, &public_key, (bounces, inbound)).await;

    let mut fixture = json!({
        "projectId": project["id"], "secretKey": key, "publicKey": public_key,
        "owner": "owner@example.com", "member": "member@example.com", "password": "password123",
        "invitee": "invitee@example.com",
    });
    // Before dashboard.mjs, which rotates the keys the fixture names.
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "audience", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "forms", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "branding", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "archive", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "sending", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "data", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "editor", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "dashboard", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "sandbox", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "pages", &fixture));

    // Ada's welcome mail bounces for good: over the threshold, the project is suspended.
    let bounce =
        dsn("failed", "5.1.1", "smtp; 550 5.1.1 <ada@example.com>: Recipient address rejected: User unknown");
    report(bounces, &ada, &bounce).await.unwrap();
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "suspended", &fixture));

    // The links of the mail the server sent itself meanwhile, and of a reset asked for now.
    let links = tokio::task::block_in_place(|| {
        let asked = agent()
            .post(&server.url("/auth/request-password-reset"))
            .send_json(json!({ "email": "member@example.com" }));
        assert_eq!(asked.unwrap().status(), 200);
        json!({
            "reset": captured_link(dir.path(), "member@example.com", "reset-password"),
            "invitation": captured_link(dir.path(), "invitee@example.com", "invitation"),
            "verify": captured_link(dir.path(), "newbie@example.com", "verify-email"),
        })
    });
    fixture["links"] = links;
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "accounts", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "sso", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "billing", &fixture));
    tokio::task::block_in_place(|| drive(&root, &chromium, &server, "wipes", &fixture));
    tokio::task::block_in_place(|| server.terminate(Duration::from_secs(15)));
}
