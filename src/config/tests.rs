use super::accounts::{default_github_api, default_github_name, default_github_web, default_oidc_scopes};
use super::*;

#[test]
fn defaults_are_valid_and_derive_paths() {
    let config = Config::defaults();
    config.validate().unwrap();
    assert_eq!(config.database_path(), PathBuf::from("./data/tidings.db"));
    assert_eq!(config.public_url(), "http://127.0.0.1:8080");
    assert!(!config.secure_cookies());
    assert!(!config.smtp_enabled());
    assert!(!config.billing.enabled());
}

#[test]
fn system_mail_comes_from_system_from_or_the_public_host() {
    let mut config = Config::defaults();
    assert_eq!(config.system_sender().to_string(), "Tidings <tidings@localhost>");
    config.server.public_url = Some("https://mail.example.com:8443/base".into());
    assert_eq!(config.system_sender().email.to_string(), "tidings@mail.example.com");
    config.server.system_from = Some("Acme <noreply@acme.test>".into());
    assert_eq!(config.system_sender().to_string(), "Acme <noreply@acme.test>");
    assert!(config.validate().is_ok());
    config.server.system_from = Some("not an address".into());
    assert!(config.validate().is_err());
}

#[test]
fn masked_toml_hides_secrets() {
    let mut config = Config::defaults();
    config.smtp.username = Some("me".into());
    config.smtp.password = Some("hunter2".into());
    config.auth.jwt_secret = Some("x".repeat(40));
    let shown = config.to_masked_toml();
    assert!(!shown.contains("hunter2"));
    assert!(!shown.contains(&"x".repeat(40)));
    assert!(shown.contains("password = \"***\""));
    assert!(shown.contains("public_url = \"http://127.0.0.1:8080\""));
}

#[test]
fn github_sign_in_takes_defaults_and_its_secret_is_masked() {
    let text = r#"
        [auth]
        github = { client_id = "Iv1.abc", client_secret = "gh-secret-value" }
    "#;
    let mut config: Config =
        Figment::from(Serialized::defaults(Config::defaults())).merge(Toml::string(text)).extract().unwrap();
    let github = config.auth.github.clone().unwrap();
    assert_eq!(
        (github.name.as_str(), github.web_base.as_str(), github.api_base.as_str()),
        ("GitHub", "https://github.com", "https://api.github.com")
    );
    config.validate().unwrap();
    let shown = config.to_masked_toml();
    assert!(!shown.contains("gh-secret-value") && shown.contains("client_secret = \"***\""), "{shown}");

    config.auth.oidc.push(OidcProvider {
        id: GITHUB_ID.into(),
        name: "Not GitHub".into(),
        issuer: "https://sso.example.com".into(),
        client_id: "x".into(),
        client_secret: None,
        scopes: default_oidc_scopes(),
    });
    config.auth.github.as_mut().unwrap().api_base = "api.github.com".into();
    let problems = config.validate().unwrap_err().problems;
    assert!(problems.iter().any(|p| p.contains("may not use the id \"github\"")), "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("`auth.github.api_base` must start with")), "{problems:?}");
}

#[test]
fn the_example_file_documents_every_key_with_its_default() {
    let text = include_str!("../../config.example.toml");
    let parsed: Config = Figment::from(Toml::string(text)).extract().unwrap();
    let as_toml = |c: &Config| toml::to_string(c).unwrap();
    assert_eq!(as_toml(&parsed), as_toml(&Config::defaults()), "uncommented values are the defaults");
    let mut defaults = Config::defaults();
    defaults.server.public_url = Some(String::new());
    defaults.database.path = Some(PathBuf::new());
    defaults.smtp.host = Some(String::new());
    defaults.smtp.username = Some(String::new());
    defaults.smtp.password = Some(String::new());
    defaults.auth.jwt_secret = Some(String::new());
    defaults.auth.github = Some(GithubProvider {
        client_id: String::new(),
        client_secret: String::new(),
        name: default_github_name(),
        web_base: default_github_web(),
        api_base: default_github_api(),
    });
    defaults.billing.stripe_secret_key = Some(String::new());
    defaults.billing.stripe_webhook_secret = Some(String::new());
    defaults.metrics.token = Some(String::new());
    defaults.webhooks.sns_ca_file = Some(PathBuf::new());
    defaults.bounces.listen = Some("0.0.0.0:25".parse().unwrap());
    defaults.bounces.domain = Some(String::new());
    defaults.submission.listen = Some("0.0.0.0:587".parse().unwrap());
    defaults.submission.listen_tls = Some("0.0.0.0:465".parse().unwrap());
    defaults.submission.cert = Some(PathBuf::new());
    defaults.submission.key = Some(PathBuf::new());
    defaults.submission.hostname = Some(String::new());
    let tree: toml::Table = toml::from_str(&toml::to_string(&defaults).unwrap()).unwrap();
    for (section, keys) in tree {
        assert!(text.contains(&format!("[{section}]")), "section [{section}] is documented");
        for (key, value) in keys.as_table().unwrap() {
            let documented = |key: &str| {
                text.lines().any(|l| l.trim_start_matches(['#', ' ']).starts_with(&format!("{key} =")))
            };
            // A table within the section is a section of its own (`[smtp.providers]`), or
            // written inline (`github = { ... }`).
            if let Some(inner) = value.as_table().filter(|_| text.contains(&format!("[{section}.{key}]"))) {
                for inner_key in inner.keys() {
                    assert!(documented(inner_key), "{section}.{key}.{inner_key} is documented");
                }
                continue;
            }
            assert!(documented(key), "{section}.{key} is documented");
        }
    }
}

#[test]
fn several_relays_replace_the_single_one() {
    let text = r#"
        [smtp]
        host = "ignored.example"
        [[smtp.relays]]
        host = "first.example"
        port = 2525
        security = "none"
        password = "pw1"
        username = "u1"
        max_messages_per_second = 10
        [[smtp.relays]]
        host = "second.example"
        security = "tls"
        port = 465
        pool_size = 2
    "#;
    let config: Config =
        Figment::from(Serialized::defaults(Config::defaults())).merge(Toml::string(text)).extract().unwrap();
    config.validate().unwrap();
    assert!(config.smtp_enabled());
    let relays = config.smtp.relays();
    assert_eq!(relays.len(), 2);
    assert_eq!(
        (relays[0].host.as_str(), relays[0].port, relays[0].max_messages_per_second),
        ("first.example", 2525, 10)
    );
    assert_eq!(relays[0].pool_size, DEFAULT_POOL_SIZE);
    assert_eq!((relays[1].security, relays[1].pool_size), (SmtpSecurity::Tls, 2));
    let shown = config.to_masked_toml();
    assert!(!shown.contains("pw1") && shown.contains("[[smtp.relays]]"), "{shown}");

    let mut single = Config::defaults();
    assert!(single.smtp.relays().is_empty(), "no host: the capture outbox");
    single.smtp.host = Some("relay.example".into());
    single.smtp.max_messages_per_second = 5;
    let relays = single.smtp.relays();
    assert_eq!(relays.len(), 1);
    assert_eq!(relays[0].max_messages_per_second, 0, "the single form's limit is per project");

    let mut bad = Config::defaults();
    bad.smtp.relays = vec![
        RelayConfig { host: " ".into(), ..RelayConfig::default() },
        RelayConfig { host: "x".into(), pool_size: 0, password: Some("p".into()), ..RelayConfig::default() },
    ];
    let text = bad.validate().unwrap_err().to_string();
    for key in ["smtp.relays[0].host", "smtp.relays[1].pool_size", "smtp.relays[1].password"] {
        assert!(text.contains(key), "{key}: {text}");
    }
}

#[test]
fn validation_names_every_bad_key() {
    let mut config = Config::defaults();
    config.limits.requests_per_minute = 0;
    config.server.public_url = Some("ftp://x".into());
    config.auth.bcrypt_cost = 2;
    let err = config.validate().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("limits.requests_per_minute"), "{text}");
    assert!(text.contains("server.public_url"), "{text}");
    assert!(text.contains("auth.bcrypt_cost"), "{text}");
}
