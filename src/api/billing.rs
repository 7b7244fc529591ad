//! Billing: monthly caps and consumption (`/users/@me/projects/:id/billing-limits` and
//! `billing-consumption`: any member reads them, owners and admins change the caps), and with
//! Stripe configured, checkout, the billing portal, invoices and Stripe's events. Without Stripe
//! those answer 404 saying so.

use rocket::request::{FromRequest, Outcome, Request};
use rocket::serde::json::Json;
use rocket::{State, get, post, put};
use serde_json::{Value, json};

use super::json::{JsonBody, Medium, OptionalJsonBody, RawBody, Small};
use super::roles::{ProjectAdmin, ProjectMember};
use crate::adapters::stripe::{self, Stripe};
use crate::clock;
use crate::core::billing;
use crate::db::DbError;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::billing::{
    CheckoutBody, CheckoutSession, Consumption, Invoice, Invoices, Limits, PortalSession, SubscriptionState,
};
use crate::views::receivers::StripeAnswer;

documented_routes!(limits, set_limits, consumption, checkout, portal, invoices, stripe_event);

/// Stripe's client; 404 when billing is off.
fn stripe_of(state: &AppState) -> Result<&Stripe, ApiError> {
    state.stripe.as_deref().ok_or_else(|| {
        ApiError::not_found(
            "Billing is not configured on this server: set [billing] stripe_secret_key, stripe_webhook_secret and price_ids",
        )
    })
}

/// The project's monthly caps; any member may read them.
#[utoipa::path(
    get,
    path = "/users/@me/projects/{projectId}/billing-limits",
    tag = "Account",
    operation_id = "getBillingLimits",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The caps", body = Limits)),
)]
#[get("/users/@me/projects/<_>/billing-limits")]
async fn limits(state: &State<AppState>, member: ProjectMember) -> Result<Json<Limits>, ApiError> {
    let id = member.project.id;
    Ok(Json(state.db.run(move |conn| billing::limits(conn, &id)).await?.into()))
}

/// Replaces the caps (owners and admins): each category a whole number or null (no cap); one
/// left out has none. A lower cap than what is used already refuses what comes next, not what
/// was sent.
#[utoipa::path(
    put,
    path = "/users/@me/projects/{projectId}/billing-limits",
    tag = "Account",
    operation_id = "setBillingLimits",
    request_body = Limits,
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The caps", body = Limits)),
)]
#[put("/users/@me/projects/<_>/billing-limits", data = "<body>")]
async fn set_limits(
    state: &State<AppState>,
    admin: ProjectAdmin,
    body: JsonBody<Value, Small>,
) -> Result<Json<Limits>, ApiError> {
    let caps = billing::check_limits(&body.0)?;
    let id = admin.0.project.id;
    let saved = state.db.write(move |tx| billing::set_limits(tx, &id, &caps)).await?;
    Ok(Json(saved.into()))
}

/// What the project used this month, by category, against its caps; with billing on, the subscription too.
#[utoipa::path(
    get,
    path = "/users/@me/projects/{projectId}/billing-consumption",
    tag = "Account",
    operation_id = "getBillingConsumption",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "This month's use", body = Consumption)),
)]
#[get("/users/@me/projects/<_>/billing-consumption")]
async fn consumption(state: &State<AppState>, member: ProjectMember) -> Result<Json<Consumption>, ApiError> {
    let id = member.project.id;
    let now = clock::now_ms();
    let billing_on = state.stripe.is_some();
    let view = state
        .db
        .run(move |conn| {
            let mut view = Consumption::from(billing::consumption(conn, &id, now)?);
            if billing_on {
                let subscription = billing::subscription(conn, &id)?;
                view.subscription = Some(subscription.map(|s| SubscriptionState { status: s.status }));
            }
            Ok::<_, DbError>(view)
        })
        .await?;
    Ok(Json(view))
}

/// Starts a Stripe Checkout for a subscription to one of the configured prices (the first by
/// default): the page to send the user to. 404 without billing.
#[utoipa::path(
    post,
    path = "/users/@me/projects/{projectId}/checkout",
    tag = "Account",
    operation_id = "startCheckout",
    request_body(content = Option<CheckoutBody>),
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The checkout session", body = CheckoutSession)),
)]
#[post("/users/@me/projects/<_>/checkout", data = "<body>")]
async fn checkout(
    state: &State<AppState>,
    admin: ProjectAdmin,
    body: OptionalJsonBody<CheckoutBody, Small>,
) -> Result<Json<CheckoutSession>, ApiError> {
    let stripe = stripe_of(state)?;
    let prices = &state.config.billing.price_ids;
    let price = match body.0.and_then(|b| b.price_id) {
        Some(price) if prices.contains(&price) => price,
        Some(price) => {
            return Err(ApiError::invalid_field(
                "priceId",
                "invalid_enum_value",
                format!("priceId is one of {}", prices.join(", ")),
            )
            .with_details(json!({ "received": price })));
        }
        None => prices.first().cloned().unwrap_or_default(),
    };
    let (project, user) = (admin.0.project, admin.0.user);
    let id = project.id.clone();
    let known = state.db.run(move |conn| billing::subscription(conn, &id)).await?;
    let settings = format!("{}/app/p/{}/settings", state.config.public_url(), project.id);
    let mut form = vec![
        ("mode", "subscription".to_string()),
        ("line_items[0][price]", price),
        ("line_items[0][quantity]", "1".into()),
        ("client_reference_id", project.id.clone()),
        ("metadata[project_id]", project.id.clone()),
        ("success_url", format!("{settings}?billing=success")),
        ("cancel_url", format!("{settings}?billing=cancelled")),
    ];
    match known {
        Some(s) => form.push(("customer", s.customer)),
        None => form.push(("customer_email", user.email)),
    }
    let session = stripe.post("checkout/sessions", &form).await?;
    Ok(Json(CheckoutSession { id: text(&session["id"]), url: text(&session["url"]) }))
}

/// Opens Stripe's billing portal for the project's customer. 404 without billing, 409 before a
/// checkout.
#[utoipa::path(
    post,
    path = "/users/@me/projects/{projectId}/billing-portal",
    tag = "Account",
    operation_id = "openBillingPortal",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The portal session", body = PortalSession)),
)]
#[post("/users/@me/projects/<_>/billing-portal")]
async fn portal(state: &State<AppState>, admin: ProjectAdmin) -> Result<Json<PortalSession>, ApiError> {
    let stripe = stripe_of(state)?;
    let id = admin.0.project.id.clone();
    let known = state.db.run(move |conn| billing::subscription(conn, &id)).await?;
    let Some(known) = known else {
        return Err(ApiError::conflict(
            "This project has no Stripe customer yet; subscribe through checkout first",
        ));
    };
    let return_url = format!("{}/app/p/{}/settings", state.config.public_url(), admin.0.project.id);
    let session = stripe
        .post("billing_portal/sessions", &[("customer", known.customer), ("return_url", return_url)])
        .await?;
    Ok(Json(PortalSession { url: text(&session["url"]) }))
}

/// The project's invoices from Stripe, newest first (none before a checkout). 404 without
/// billing.
#[utoipa::path(
    get,
    path = "/users/@me/projects/{projectId}/billing-invoices",
    tag = "Account",
    operation_id = "listInvoices",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The latest 24 invoices", body = Invoices)),
)]
#[get("/users/@me/projects/<_>/billing-invoices")]
async fn invoices(state: &State<AppState>, admin: ProjectAdmin) -> Result<Json<Invoices>, ApiError> {
    let stripe = stripe_of(state)?;
    let id = admin.0.project.id;
    let known = state.db.run(move |conn| billing::subscription(conn, &id)).await?;
    let Some(known) = known else { return Ok(Json(Invoices { data: Vec::new() })) };
    let list = stripe.get("invoices", &[("customer", known.customer), ("limit", "24".into())]).await?;
    let data = list["data"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| Invoice {
                    id: text(&i["id"]),
                    number: text(&i["number"]),
                    status: text(&i["status"]),
                    currency: text(&i["currency"]),
                    amount_due: i["amount_due"].as_i64(),
                    amount_paid: i["amount_paid"].as_i64(),
                    created_at: i["created"].as_i64().map(|s| clock::iso(s * 1000)),
                    url: text(&i["hosted_invoice_url"]),
                    pdf: text(&i["invoice_pdf"]),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Json(Invoices { data }))
}

/// A string Stripe gave, or `None` for anything else.
fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

/// The `Stripe-Signature` header, when there is one.
struct StripeSignature(Option<String>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for StripeSignature {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        Outcome::Success(StripeSignature(req.headers().get_one("Stripe-Signature").map(str::to_string)))
    }
}

/// Events from Stripe: acted on only when their signature checks out (400 otherwise, and
/// nothing changes); 200 for every signed event, acted on or not, so Stripe does not retry it.
#[utoipa::path(
    tag = "Receivers",
    operation_id = "receiveStripe",
    request_body(content = Object, description = "A Stripe event, exactly as Stripe signed it"),
    params(("Stripe-Signature" = String, Header, description = "`t=<time>,v1=<HMAC-SHA256>`; several `v1` while a secret is rolled")),
    security(()),
    responses((status = 200, description = "Taken", body = StripeAnswer)),
)]
#[post("/webhooks/incoming/stripe", data = "<body>")]
async fn stripe_event(
    state: &State<AppState>,
    signature: StripeSignature,
    body: RawBody<Medium>,
) -> Result<Json<StripeAnswer>, ApiError> {
    stripe_of(state)?;
    let secret = state.config.billing.stripe_webhook_secret.clone().unwrap_or_default();
    let header = signature.0.unwrap_or_default();
    if let Err(why) = stripe::verify(&header, &body.0, &secret, clock::now_ms() / 1000) {
        tracing::warn!("refused a Stripe event: {why:?}");
        return Err(ApiError::bad_request("The Stripe-Signature header does not verify this body"));
    }
    let event: Value = super::json::parse(&body.0)?;
    let changed = state.db.write(move |tx| billing::apply_stripe_event(tx, &event)).await?;
    Ok(Json(StripeAnswer { received: true, applied: changed }))
}
