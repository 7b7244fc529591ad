//! Routes of inbound mail: `{match: "support@example.com" | "*@example.com", actions}`. An action
//! posts the message to a webhook (a webhook endpoint of the project, made for the route, so it
//! is signed, retried and logged like any other), forwards it to an address, or stores it for
//! `GET /inbound/:id`.
//!
//! An address takes the route of its own local part, else of the part before a `+`
//! (`support+tag@` → `support@`), else the domain's catch-all.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::domains::require_verified_sender;
use super::super::error::{Error, FieldError, Limit, Result, on_duplicate};
use super::super::ids::InboundRouteId;
use super::super::webhooks;
use crate::db::Tx;
use crate::db::inbound::{self as rows, Route};
use crate::db::webhooks::{self as endpoints, Endpoint};

/// Most actions of one route.
const MAX_ACTIONS: usize = 10;

/// What a route does with a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", rename_all_fields = "camelCase")]
pub enum Action {
    /// Posts the message to `url` through the webhook endpoint `endpoint_id` made for it.
    Webhook { url: String, endpoint_id: String },
    /// Sends the message on to `to`, from the address it came to.
    Forward { to: String },
    /// Keeps the message's content for `GET /inbound/:id` until it expires.
    Store,
}

/// A route's actions as stored.
pub fn actions(route: &Route) -> Vec<Action> {
    serde_json::from_str(&route.actions).unwrap_or_default()
}

/// The local parts whose routes take `local` (lowercase), most specific first.
pub fn candidates(local: &str) -> Vec<&str> {
    let mut out = vec![local];
    if let Some((base, _)) = local.split_once('+').filter(|(base, _)| !base.is_empty()) {
        out.push(base);
    }
    out.push("*");
    out
}

/// A route as asked for: the `match` and the `actions`, checked for shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub local_part: String,
    pub domain: String,
    /// Webhook actions carry their URL only until the route is saved.
    pub actions: Vec<Action>,
}

fn field_error(field: &str, code: &str, message: impl Into<String>) -> Error {
    Error::Invalid(vec![FieldError::new(field, code, message)])
}

/// Checks `match` (`local@domain` or `*@domain`) and `actions` as a client sent them.
pub fn check(matching: Option<&str>, actions: Option<&Value>) -> Result<Asked> {
    let Some(matching) = matching.map(str::trim) else {
        return Err(field_error("match", "required", "match is required: an address, or *@domain"));
    };
    let shape = "match is an address of an inbound domain (support@example.com) or *@example.com";
    let Some((local, domain)) = matching.rsplit_once('@') else {
        return Err(field_error("match", "invalid_string", shape));
    };
    let local_part = if local == "*" {
        "*".to_string()
    } else {
        let address = crate::core::email::normalize(matching)
            .map_err(|why| field_error("match", "invalid_string", format!("the address {why}")))?;
        address.rsplit_once('@').map(|(l, _)| l.to_string()).unwrap_or_default()
    };
    let domain = super::super::domains::normalize(domain)
        .map_err(|_| field_error("match", "invalid_string", shape))?;
    let Some(Value::Array(items)) = actions else {
        return Err(field_error(
            "actions",
            "invalid_type",
            "actions is an array of {type: webhook, url}, {type: forward, to} or {type: store}",
        ));
    };
    if items.is_empty() || items.len() > MAX_ACTIONS {
        return Err(field_error("actions", "too_big", format!("a route has 1 to {MAX_ACTIONS} actions")));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("actions[{i}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let action = match kind {
            "webhook" => {
                let url = item.get("url").and_then(Value::as_str).unwrap_or_default();
                let url = webhooks::check_url(url).map_err(|_| {
                    field_error(
                        &format!("{field}.url"),
                        "invalid_string",
                        "url is an http:// or https:// address",
                    )
                })?;
                Action::Webhook { url, endpoint_id: String::new() }
            }
            "forward" => {
                let to = item.get("to").and_then(Value::as_str).unwrap_or_default();
                let to = crate::core::email::normalize(to).map_err(|why| {
                    field_error(&format!("{field}.to"), "invalid_string", format!("to {why}"))
                })?;
                Action::Forward { to }
            }
            "store" => Action::Store,
            _ => {
                return Err(field_error(
                    &format!("{field}.type"),
                    "invalid_enum_value",
                    "type is webhook, forward or store",
                ));
            }
        };
        if out.contains(&action) {
            return Err(field_error(&field, "invalid_string", "the same action is given twice"));
        }
        out.push(action);
    }
    Ok(Asked { local_part, domain, actions: out })
}

/// Route `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &InboundRouteId) -> Result<Route> {
    rows::route(conn, project, id)?.ok_or_else(|| InboundRouteId::missing(id))
}

/// Makes a route of `project` (at most `cap`).
pub fn create(tx: &Tx, project: &str, asked: Asked, cap: u32, now: i64) -> Result<Route> {
    if rows::count_routes(tx, project)? >= u64::from(cap) {
        return Err(Error::OverLimit(Limit::InboundRoutes { cap }));
    }
    let mut route = Route {
        id: InboundRouteId::fresh().into(),
        project_id: project.into(),
        created_at: now,
        updated_at: now,
        ..Route::default()
    };
    save(tx, &mut route, asked, &[], now)?;
    rows::insert_route(tx, &route).map_err(|e| on_duplicate(e, &duplicate(&route)))?;
    Ok(route)
}

/// Replaces a route's match and actions; webhook endpoints of URLs kept stay (with their log).
pub fn update(tx: &Tx, project: &str, id: &InboundRouteId, asked: Asked, now: i64) -> Result<Route> {
    let mut route = find(tx, project, id)?;
    let before = actions(&route);
    save(tx, &mut route, asked, &before, now)?;
    route.updated_at = now;
    rows::update_route(tx, &route).map_err(|e| on_duplicate(e, &duplicate(&route)))?;
    Ok(route)
}

/// Deletes a route and the webhook endpoints it made.
pub fn remove(tx: &Tx, project: &str, id: &InboundRouteId) -> Result<()> {
    let route = find(tx, project, id)?;
    forget_endpoints(tx, &route)?;
    rows::delete_route(tx, &route.id)?;
    Ok(())
}

/// Deletes the webhook endpoints a route's actions made.
pub fn forget_endpoints(tx: &Tx, route: &Route) -> Result<()> {
    for action in actions(route) {
        if let Action::Webhook { endpoint_id, .. } = action {
            endpoints::delete(tx, &endpoint_id)?;
        }
    }
    Ok(())
}

fn duplicate(route: &Route) -> String {
    format!("{}@{} already has a route", route.local_part, route.domain)
}

/// Fills `route` from `asked`: its domain must be one of the project's inbound domains; a
/// forward needs the domain verified for sending (the forward goes out from it, DKIM-signed)
/// and may not point back at an inbound domain of the project (a loop); each webhook URL gets an
/// endpoint, or keeps the one it had in `before`.
fn save(tx: &Tx, route: &mut Route, asked: Asked, before: &[Action], now: i64) -> Result<()> {
    let project = route.project_id.clone();
    let inbound = rows::domains(tx, &project)?;
    let domain = inbound.iter().find(|d| d.domain == asked.domain).cloned().ok_or_else(|| {
        field_error(
            "match",
            "invalid_string",
            format!("{} is not an inbound domain of this project; add it first", asked.domain),
        )
    })?;
    let mut kept = Vec::with_capacity(asked.actions.len());
    for (i, action) in asked.actions.into_iter().enumerate() {
        match action {
            Action::Forward { to } => {
                let to_domain = to.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
                if inbound.iter().any(|d| d.domain == to_domain) {
                    return Err(field_error(
                        &format!("actions[{i}].to"),
                        "invalid_string",
                        format!("{to} is on an inbound domain of this project: forwarding there would loop"),
                    ));
                }
                if require_verified_sender(tx, &project, &format!("postmaster@{}", domain.domain)).is_err() {
                    return Err(field_error(
                        &format!("actions[{i}].to"),
                        "invalid_string",
                        format!(
                            "forwarded mail is sent from {}: add and verify it as a sender domain first (POST /domains)",
                            domain.domain
                        ),
                    ));
                }
                kept.push(Action::Forward { to });
            }
            Action::Webhook { url, .. } => {
                let reused = before.iter().find_map(|a| match a {
                    Action::Webhook { url: old, endpoint_id } if *old == url => Some(endpoint_id.clone()),
                    _ => None,
                });
                let endpoint_id = match reused {
                    Some(id) => id,
                    None => {
                        let endpoint = Endpoint {
                            id: crate::core::ids::WebhookId::fresh().into(),
                            project_id: project.clone(),
                            url: url.clone(),
                            events: Vec::new(),
                            enabled: true,
                            description: Some(format!(
                                "Inbound route {}@{}",
                                asked.local_part, domain.domain
                            )),
                            secret: webhooks::new_secret(),
                            created_at: now,
                            updated_at: now,
                            ..Endpoint::default()
                        };
                        endpoints::insert(tx, &endpoint)?;
                        endpoint.id
                    }
                };
                kept.push(Action::Webhook { url, endpoint_id });
            }
            Action::Store => kept.push(Action::Store),
        }
    }
    // Endpoints of URLs no longer named go.
    for old in before {
        if let Action::Webhook { endpoint_id, .. } = old
            && !kept.iter().any(|a| matches!(a, Action::Webhook { endpoint_id: id, .. } if id == endpoint_id))
        {
            endpoints::delete(tx, endpoint_id)?;
        }
    }
    route.domain_id = domain.id;
    route.domain = domain.domain;
    route.local_part = asked.local_part;
    route.actions = serde_json::to_string(&kept).unwrap_or_else(|_| "[]".into());
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_address_takes_its_own_route_then_its_base_then_the_catch_all() {
        assert_eq!(candidates("support+urgent"), ["support+urgent", "support", "*"]);
        assert_eq!(candidates("ada"), ["ada", "*"]);
        assert_eq!(candidates("+x"), ["+x", "*"]);
    }

    #[test]
    fn routes_are_checked_for_shape() {
        let ok = check(
            Some("Support@Example.com"),
            Some(&json!([{"type": "store"}, {"type": "forward", "to": "Me@Elsewhere.org"}])),
        )
        .unwrap();
        assert_eq!((ok.local_part.as_str(), ok.domain.as_str()), ("support", "example.com"));
        assert_eq!(ok.actions[1], Action::Forward { to: "me@elsewhere.org".into() });
        assert_eq!(check(Some("*@example.com"), Some(&json!([{"type": "store"}]))).unwrap().local_part, "*");
        for (matching, actions, field) in [
            (None, json!([{"type": "store"}]), "match"),
            (Some("example.com"), json!([{"type": "store"}]), "match"),
            (Some("a@b@example.com"), json!([{"type": "store"}]), "match"),
            (Some("a@example.com"), json!([]), "actions"),
            (Some("a@example.com"), json!({"type": "store"}), "actions"),
            (Some("a@example.com"), json!([{"type": "drop"}]), "actions[0].type"),
            (Some("a@example.com"), json!([{"type": "webhook", "url": "ftp://x"}]), "actions[0].url"),
            (Some("a@example.com"), json!([{"type": "forward", "to": "nobody"}]), "actions[0].to"),
            (Some("a@example.com"), json!([{"type": "store"}, {"type": "store"}]), "actions[1]"),
        ] {
            let e = check(matching, Some(&actions)).unwrap_err();
            assert_eq!(e.fields()[0].field, field, "{matching:?} {actions}");
        }
    }

    #[test]
    fn stored_actions_read_back() {
        let action = Action::Webhook { url: "https://x.test/in".into(), endpoint_id: "e".into() };
        let text = serde_json::to_string(&[action.clone(), Action::Store]).unwrap();
        assert_eq!(
            text,
            r#"[{"type":"webhook","url":"https://x.test/in","endpointId":"e"},{"type":"store"}]"#
        );
        let route = Route { actions: text, ..Route::default() };
        assert_eq!(actions(&route), [action, Action::Store]);
    }
}
