//! `GET /metrics`: the format, the named series moving as mail is sent, the optional token, and
//! turning it off.

use rocket::http::{Header, Status};
use serde_json::json;

use crate::common::TestApp;
use crate::send::Mailroom;

async fn scrape(app: &TestApp, token: Option<&str>) -> (Status, String, Option<String>) {
    let mut req = app.client.get("/metrics");
    if let Some(token) = token {
        req = req.header(Header::new("Authorization", format!("Bearer {token}")));
    }
    let res = req.dispatch().await;
    let (status, kind) = (res.status(), res.content_type().map(|t| t.to_string()));
    (status, res.into_string().await.unwrap_or_default(), kind)
}

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse().ok()))
}

#[rocket::async_test]
async fn the_named_series_move_when_mail_is_sent() {
    let room = Mailroom::new().await;
    let (status, text, kind) = scrape(&room.app, None).await;
    assert_eq!(status, Status::Ok);
    assert!(kind.unwrap().starts_with("application/openmetrics-text"), "Prometheus scrapes OpenMetrics");
    for family in [
        "tidings_http_requests counter",
        "tidings_http_request_duration_seconds histogram",
        "tidings_emails counter",
        "tidings_delivery_queue gauge",
        "tidings_relay_handoff_seconds histogram",
        "tidings_webhook_deliveries counter",
    ] {
        assert!(text.contains(&format!("# TYPE {family}")), "{family} in\n{text}");
    }
    assert!(text.trim_end().ends_with("# EOF"));

    room.send_ok(
        json!({ "to": "ada@example.test", "from": "h@example.test", "subject": "Hi", "body": "<p>x</p>" }),
    )
    .await;
    let (_, text, _) = scrape(&room.app, None).await;
    assert_eq!(
        value(&text, r#"tidings_delivery_queue{state="due"}"#),
        Some(1.0),
        "queued, not yet sent:\n{text}"
    );
    assert_eq!(value(&text, r#"tidings_http_requests_total{route="/v1/send",status="200"}"#), Some(1.0));
    assert!(text.contains(r#"tidings_http_request_duration_seconds_count{route="/v1/send"} 1"#), "{text}");

    room.deliver(1).await;
    let (_, text, _) = scrape(&room.app, None).await;
    assert_eq!(value(&text, r#"tidings_emails_total{status="sent"}"#), Some(1.0), "{text}");
    assert_eq!(value(&text, "tidings_relay_handoff_seconds_count"), Some(1.0));
    assert_eq!(value(&text, r#"tidings_delivery_queue{state="due"}"#), Some(0.0), "the queue is empty");
    assert!(text.contains("tidings_jobs{kind="), "the periodic jobs are counted:\n{text}");
    // Ids never become series: a request for one contact counts under the route's template.
    room.app.get("/contacts/some-id", &room.keys.secret_key).await;
    let (_, text, _) = scrape(&room.app, None).await;
    assert_eq!(
        value(&text, r#"tidings_http_requests_total{route="/contacts/<id>",status="404"}"#),
        Some(1.0),
        "{text}"
    );
}

#[rocket::async_test]
async fn a_token_guards_the_endpoint_and_it_can_be_turned_off() {
    let app = TestApp::with(|c| c.metrics.token = Some("scrape-secret-1234".into())).await;
    assert_eq!(scrape(&app, None).await.0, Status::Unauthorized);
    assert_eq!(scrape(&app, Some("wrong")).await.0, Status::Unauthorized);
    let (status, text, _) = scrape(&app, Some("scrape-secret-1234")).await;
    assert_eq!(status, Status::Ok);
    assert!(!text.contains("scrape-secret"), "the token is not a series");

    let off = TestApp::with(|c| c.metrics.enabled = false).await;
    let (status, body, _) = scrape(&off, None).await;
    assert_eq!(status, Status::NotFound);
    assert!(body.contains("NOT_FOUND"), "the JSON envelope: {body}");
}

/// Every series the packaged Grafana dashboard graphs is one the server registers (a family
/// with no series yet, such as the jobs' gauge on an idle server, is not in a scrape).
#[test]
fn the_grafana_dashboard_graphs_registered_series() {
    let source = include_str!("../../src/metrics.rs");
    let registered: Vec<String> = source
        .split("registry.register(")
        .skip(1)
        .filter_map(|call| Some(format!("tidings_{}", call.split('"').nth(1)?)))
        .collect();
    assert!(registered.len() >= 10, "{registered:?}");
    let dashboard = include_str!("../../packaging/grafana-dashboard.json");
    let mut graphed = 0;
    for (at, _) in dashboard.match_indices("tidings_") {
        let name: String =
            dashboard[at..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
        let family = ["_bucket", "_total", "_count", "_sum"]
            .iter()
            .fold(name.as_str(), |n, s| n.strip_suffix(s).unwrap_or(n));
        assert!(
            registered.iter().any(|r| r == family),
            "{name} is graphed but not registered: {registered:?}"
        );
        graphed += 1;
    }
    assert!(graphed >= 10, "{graphed}");
}
