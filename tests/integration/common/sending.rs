//! The built server sending mail, for the crash tests: a project made with the CLI, a verified
//! sender domain on a loopback DNS server, a relay on loopback; killed and started again.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::binary::{Server, run, stdout};
use super::dns_server::DnsServer;

/// The built server sending through an SMTP relay on loopback, for a project made with the CLI,
/// with `example.test` verified through a DNS server on loopback: what the crash tests start,
/// kill and start again.
pub struct Sending {
    pub server: Server,
    pub key: String,
    pub public_key: String,
    /// The id of the verified `example.test`.
    pub domain_id: String,
    env: Vec<(String, String)>,
}

impl Sending {
    /// Creates the owner and the project, starts the server with `extra` settings, and verifies
    /// `example.test`. Mail in flight at a kill is taken back at once by the next server (it
    /// holds the data lock), and leases are short (`timeout_secs` 2).
    pub async fn start(dir: &Path, dns: &DnsServer, relay_port: u16, extra: &[(&str, &str)]) -> Sending {
        let mut env: Vec<(String, String)> = vec![
            ("TIDINGS_DNS__NAMESERVERS".into(), format!("[\"{}\"]", dns.nameserver())),
            ("TIDINGS_SMTP__HOST".into(), "127.0.0.1".into()),
            ("TIDINGS_SMTP__PORT".into(), relay_port.to_string()),
            ("TIDINGS_SMTP__SECURITY".into(), "none".into()),
            ("TIDINGS_SMTP__TIMEOUT_SECS".into(), "2".into()),
            // A provider that defers a message rests a second, not a minute.
            ("TIDINGS_SMTP__PROVIDERS__BACKOFF_SECS".into(), "1".into()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let path = dir.to_path_buf();
        let created = tokio::task::spawn_blocking(move || {
            run(&path, &["user", "create", "--email", "owner@example.com", "--password", "password123"], &[]);
            stdout(&run(
                &path,
                &["project", "create", "--name", "Crash", "--owner", "owner@example.com"],
                &[],
            ))
        })
        .await
        .unwrap();
        let project: Value = serde_json::from_str(&created).unwrap();
        let key = project["secretKey"].as_str().unwrap().to_string();
        let public_key = project["publicKey"].as_str().unwrap().to_string();
        let server = tokio::task::block_in_place(|| Self::serve(dir, &env));
        let domain = tokio::task::block_in_place(|| {
            server.post_keyed("/domains", &key, serde_json::json!({ "domain": "example.test" })).1
        });
        for record in domain["records"].as_array().unwrap() {
            dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
        }
        let path = format!("/domains/{}/verify", domain["id"].as_str().unwrap());
        let verified = tokio::task::block_in_place(|| server.get_keyed(&path, &key));
        assert_eq!(verified["status"], serde_json::json!("verified"), "{verified}");
        let domain_id = domain["id"].as_str().unwrap().to_string();
        Sending { server, key, public_key, domain_id, env }
    }

    fn serve(dir: &Path, env: &[(String, String)]) -> Server {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut server = Server::start(dir, &env);
        server.wait_healthy(Duration::from_secs(30));
        server
    }

    /// Kills the server with SIGKILL and waits for it to be gone.
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// Starts the server again on the same data, with the same settings.
    pub fn restart(&mut self) {
        self.server = Self::serve(&self.server.dir.clone(), &self.env);
    }

    /// Stops the server and starts it again with `changed` settings over the ones it had.
    pub fn restart_with(&mut self, changed: &[(&str, &str)]) {
        self.server.terminate(Duration::from_secs(15));
        for (key, value) in changed {
            self.env.retain(|(k, _)| k != key);
            self.env.push((key.to_string(), value.to_string()));
        }
        self.restart();
    }
}
