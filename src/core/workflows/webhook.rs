//! A WEBHOOK step's request, rendered from its config with the execution's variables, and what
//! its answer means for the execution.

use serde_json::{Map, Value, json};

use super::engine::WebhookCall;
use crate::adapters::outbound_http::{Answer, Call};
use crate::core::render::{self, Mode};

/// Headers the step's config may not set: the client owns them.
const OWNED_HEADERS: &[&str] =
    &["host", "content-length", "transfer-encoding", "connection", "idempotency-key"];
/// Most characters of an answer's body kept in the step's output.
const KEPT_BODY: usize = 1_000;

/// The request of a WEBHOOK step. `url`, header values and every string in `body` are rendered
/// as templates; a `body` that is a string is sent as it renders, any other as JSON. Without a
/// `body`, POST, PUT and PATCH send `{workflowId, executionId, contact, event, context}`.
/// Every call carries `Idempotency-Key: <executionId>:<step run>`, the same on a retry.
/// The templates of one request share one render budget, however many strings its body holds.
pub fn request(call: &WebhookCall) -> Result<Call, String> {
    let scope = render::scope(&call.variables, &call.email, &call.contact_id, &[]);
    let started = std::time::Instant::now();
    let text = |source: &str, what: &str| {
        if started.elapsed() > render::RENDER_BUDGET {
            return Err(format!(
                "template limit: the request's templates took longer than {} ms to render",
                render::RENDER_BUDGET.as_millis()
            ));
        }
        render::render(source, Mode::Text, &scope).map_err(|e| format!("{what} did not render: {e}"))
    };
    let config = &call.config;
    let method = config.method.clone();
    let url = text(&config.url, "url")?.trim().to_string();
    let mut headers = vec![("Idempotency-Key".to_string(), call.key())];
    let mut typed = false;
    if let Some(map) = &config.headers {
        for (name, value) in map {
            if OWNED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                continue;
            }
            let value = text(value.as_str().unwrap_or_default(), &format!("header {name}"))?;
            if value.contains(['\r', '\n']) {
                return Err(format!("header {name} rendered to more than one line"));
            }
            typed |= name.eq_ignore_ascii_case("content-type");
            headers.push((name.clone(), value));
        }
    }
    let body = match config.body.as_ref().filter(|b| !b.is_null()) {
        Some(Value::String(source)) => Some((text(source, "body")?, "text/plain; charset=utf-8")),
        Some(value) => Some((rendered(value, &|s| text(s, "body"))?.to_string(), "application/json")),
        None if matches!(method.as_str(), "POST" | "PUT" | "PATCH") => {
            let context = call.variables.get("workflow").cloned().unwrap_or_else(|| json!({}));
            let payload = json!({
                "workflowId": call.workflow,
                "executionId": call.execution,
                "contact": { "id": call.contact_id, "email": call.email },
                "event": call.variables.get("event").cloned().unwrap_or_else(|| json!({})),
                "context": context,
            });
            Some((payload.to_string(), "application/json"))
        }
        None => None,
    };
    if let Some((_, kind)) = &body
        && !typed
    {
        headers.push(("Content-Type".into(), kind.to_string()));
    }
    Ok(Call { method, url, headers, body: body.map(|(b, _)| b) })
}

/// A JSON body with its strings rendered.
fn rendered(value: &Value, text: &dyn Fn(&str) -> Result<String, String>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => Value::String(text(s)?),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| rendered(v, text)).collect::<Result<_, _>>()?)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), rendered(v, text)?)))
                .collect::<Result<Map<_, _>, String>>()?,
        ),
        other => other.clone(),
    })
}

/// What an answer means: a 2xx is the step's output, anything else fails the execution.
pub fn outcome(answer: Result<Answer, String>) -> Result<Value, String> {
    let answer = answer?;
    let body: String = answer.body.chars().take(KEPT_BODY).collect();
    if (200..300).contains(&answer.status) {
        let parsed = crate::bounded_json::from_slice(body.as_bytes(), crate::bounded_json::REQUEST)
            .unwrap_or(Value::String(body));
        Ok(json!({ "status": answer.status, "body": parsed }))
    } else {
        let start: String = body.chars().take(200).collect();
        Err(format!("the webhook answered {}: {start}", answer.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(config: Value) -> WebhookCall {
        let variables = json!({
            "plan": "pro",
            "event": { "orderId": 7 },
            "workflow": { "event": { "orderId": 7 }, "source": "api" },
        });
        WebhookCall {
            execution: "e1".into(),
            workflow: "w1".into(),
            step: "s1".into(),
            seq: 3,
            config: serde_json::from_value(config).unwrap(),
            variables: variables.as_object().unwrap().clone(),
            email: "ada@example.com".into(),
            contact_id: "c1".into(),
        }
    }

    #[test]
    fn url_headers_and_body_render_with_the_execution() {
        let c = call(json!({
            "url": "https://hooks.example.com/o/{{ event.orderId }}?p={{ plan }}",
            "method": "PUT",
            "headers": { "X-Who": "{{ email }}", "Host": "evil", "Idempotency-Key": "mine" },
            "body": { "order": "{{ event.orderId }}", "tags": ["{{ workflow.source }}", 1] },
        }));
        let r = request(&c).unwrap();
        assert_eq!(r.method, "PUT");
        assert_eq!(r.url, "https://hooks.example.com/o/7?p=pro");
        assert!(r.headers.contains(&("X-Who".into(), "ada@example.com".into())));
        assert!(r.headers.contains(&("Idempotency-Key".into(), "e1:3".into())));
        assert!(!r.headers.iter().any(|(n, v)| n == "Host" || v == "mine"), "{:?}", r.headers);
        assert!(r.headers.contains(&("Content-Type".into(), "application/json".into())));
        let body: Value = serde_json::from_str(r.body.as_deref().unwrap()).unwrap();
        assert_eq!(body, json!({ "order": "7", "tags": ["api", 1] }));
    }

    #[test]
    fn without_a_body_a_post_sends_the_execution() {
        let r = request(&call(json!({ "url": "http://h/x", "method": "POST" }))).unwrap();
        let body: Value = serde_json::from_str(r.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["executionId"], "e1");
        assert_eq!(body["workflowId"], "w1");
        assert_eq!(body["contact"]["email"], "ada@example.com");
        assert_eq!(body["event"]["orderId"], 7);
        let get = request(&call(json!({ "url": "http://h/x", "method": "GET" }))).unwrap();
        assert_eq!(get.body, None);
    }

    #[test]
    fn only_a_2xx_is_a_success() {
        let ok = outcome(Ok(Answer { status: 204, body: String::new() })).unwrap();
        assert_eq!(ok["status"], 204);
        let json_body = outcome(Ok(Answer { status: 200, body: "{\"a\":1}".into() })).unwrap();
        assert_eq!(json_body["body"]["a"], 1);
        let err = outcome(Ok(Answer { status: 302, body: "moved".into() })).unwrap_err();
        assert!(err.contains("302"), "{err}");
        assert_eq!(outcome(Err("timeout".into())).unwrap_err(), "timeout");
    }
}
