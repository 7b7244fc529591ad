//! The whole server, the built binary, under `prlimit --as=1G` (issue 29): every input of the
//! issue that once ended the process or grew it past the packaged unit's `MemoryMax=1G`, sent in
//! a row. Each is answered in the envelope (never a 5xx), the one poison email fails with the
//! reason, and the same process answers at the end: an allocation of gigabytes would abort it.
//!
//! glibc reserves 64 MiB of address space per malloc arena, up to eight per core, whatever is
//! used; `MALLOC_ARENA_MAX=2` keeps that reservation from being what the limit measures.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::binary::ADDRESS_SPACE;
use crate::trust::amplifier;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_survives_the_hostile_corpus_in_one_gibibyte() {
    let dir = tempfile::TempDir::new().unwrap();
    let dns = crate::common::dns_server::DnsServer::start(&["test"]).await;
    let sink = crate::common::smtp_sink::SmtpSink::start();
    let extra = [
        (ADDRESS_SPACE, "1073741824"),
        ("MALLOC_ARENA_MAX", "2"),
        ("TIDINGS_LIMITS__REQUESTS_PER_MINUTE", "100000"),
    ];
    let sending = crate::common::sending::Sending::start(dir.path(), &dns, sink.port, &extra).await;
    let (server, key, public) = (&sending.server, sending.key.as_str(), sending.public_key.as_str());
    let pid = server.pid();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let space = limits.lines().find(|l| l.starts_with("Max address space")).unwrap();
    assert!(space.contains("1073741824"), "the server runs in 1 GiB of address space: {space}");
    tokio::task::block_in_place(|| {
        let get =
            |path: &str| server.send_raw("GET", path, &[("Authorization", &format!("Bearer {key}"))], b"");
        let answered = |what: &str, status: u16, body: &Value| {
            assert!((200..500).contains(&status), "{what}: {status} {body}");
            if status >= 400 {
                assert_eq!(body["success"], json!(false), "{what}: in the envelope: {body}");
            }
        };
        // Item 1: ranges that wrapped when subtracted.
        let extremes = "from=-4611686018427387904&to=4611686018427387904";
        for path in
            ["/analytics/timeseries", "/activity/stats", "/analytics/top-events", "/analytics/top-campaigns"]
        {
            let (status, body) = get(&format!("{path}?{extremes}")).unwrap();
            answered(path, status, &body);
        }
        // Item 2: a preview that multiplies sizes without a loop; and a loop over 64 bits.
        for body in [amplifier(None), "{% for i in (1..9223372036854775807) %}{{ i }}{% endfor %}".into()] {
            let (status, answer) =
                server.post_keyed("/templates/preview", key, json!({ "subject": "s", "body": body }));
            assert_eq!(status, 422, "{answer}");
        }
        // Item 3: the same behind `{% if email %}`, queued: its email fails, the worker goes on.
        let send = json!({ "to": "ada@example.com", "from": "hi@example.test", "subject": "s", "body": amplifier(Some("email")) });
        let (status, sent) = server.post_keyed("/v1/send", key, send);
        assert_eq!(status, 200, "{sent}");
        let contact = sent["data"]["emails"][0]["contact"]["id"].as_str().unwrap().to_string();
        let started = Instant::now();
        let failed = loop {
            let emails = server.get_keyed(&format!("/contacts/{contact}/emails"), key);
            let listed =
                emails["data"].as_array().or(emails["emails"].as_array()).cloned().unwrap_or_default();
            if let Some(email) =
                listed.iter().find(|e| e["status"].as_str().is_some_and(|s| s.eq_ignore_ascii_case("failed")))
            {
                break email.clone();
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the poison email fails: {emails}");
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(failed.to_string().contains("template limit"), "{failed}");
        // Item 4: 39 MiB of zeros as `data`.
        let zeros = format!(
            "{{\"to\":\"a@example.com\",\"from\":\"hi@example.test\",\"subject\":\"s\",\"body\":\"x\",\"data\":[{}0]}}",
            "0,".repeat(39 * 1024 * 1024 / 2)
        );
        let (status, body) = server
            .send_raw("POST", "/v1/send", &[("Authorization", &format!("Bearer {key}"))], zeros.as_bytes())
            .unwrap();
        assert_eq!(status, 413, "{body}");
        // Item 12: a public key naming two thousand fields at once.
        let data: serde_json::Map<String, Value> = (0..2000).map(|n| (format!("f{n}"), json!(n))).collect();
        let (status, body) = server.post_keyed(
            "/v1/track",
            public,
            json!({ "email": "x@example.com", "event": "e", "data": data }),
        );
        assert_eq!(
            (status, body["error"]["errors"][0]["code"].clone()),
            (422, json!("too_many_fields")),
            "{body}"
        );
        // Item 13: a pattern that is not ASCII.
        let (status, body) = server.post_keyed(
            "/webhooks",
            key,
            json!({ "url": "https://hooks.example.test/x", "events": ["é"] }),
        );
        answered("webhook é", status, &body);
        // Item 14: a thousand groups.
        let groups: Vec<Value> = (0..1000).map(|_| json!({ "filters": [] })).collect();
        let (status, body) = server.post_keyed(
            "/segments",
            key,
            json!({ "name": "wide", "condition": { "logic": "OR", "groups": groups } }),
        );
        assert_eq!(status, 422, "{body}");

        // The same process answers, and sends.
        assert_eq!(server.pid(), pid);
        assert_eq!(server.get_json("/health").0, 200);
        let (status, sent) = server.post_keyed("/v1/send", key, json!({ "to": "bob@example.com", "from": "hi@example.test", "subject": "ok", "body": "<p>ok</p>" }));
        assert_eq!(status, 200, "{sent}");
    });
    let started = Instant::now();
    while !sink.messages().iter().any(|m| m.to == ["bob@example.com".to_string()]) {
        assert!(started.elapsed() < Duration::from_secs(30), "the next email is delivered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!sending.server.log().contains("memory allocation"), "{}", sending.server.log());
}
