//! The dashboard in a real browser: Debian's Chromium, headless, driven by playwright-core.
//!
//! Needs `chromium` (apt) and `npm ci --prefix tests/browser`; `.ci/run` installs both. Where
//! they are missing the test says so and passes, except under CI, where it fails.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::common::binary::Server;

#[test]
fn dashboard_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let mut missing = Vec::new();
    if !Path::new(&chromium).exists() {
        missing.push("Chromium (apt-get install chromium)");
    }
    if !root.join("node_modules/playwright-core").exists() {
        missing.push("playwright-core (npm ci --prefix tests/browser)");
    }
    if Command::new("node").arg("--version").output().is_err() {
        missing.push("Node.js");
    }
    if !missing.is_empty() {
        let message = format!("the browser test needs {}", missing.join(", "));
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("skipped: {message}");
        return;
    }

    let dir = TempDir::new().unwrap();
    let mut server = Server::start(dir.path(), &[]);
    server.wait_healthy(Duration::from_secs(30));
    let out = Command::new("node")
        .arg(root.join("dashboard.mjs"))
        .arg(server.url(""))
        .env("CHROMIUM", &chromium)
        .output()
        .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the dashboard script failed:\n{report}\nserver log:\n{}", server.log());
    assert!(report.contains("dashboard ok"), "{report}");
    server.terminate(Duration::from_secs(15));
}
