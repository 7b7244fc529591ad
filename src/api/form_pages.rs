//! Signup forms in public (issue 32, item 4): the hosted page (`/f/:id`), the embed script
//! (`/f/:id/embed.js`), the proof-of-work challenge and the submission, as a form post (the
//! hosted page) or JSON (the embed, custom fronts). Other sites reach a form only from the
//! origins it allows (CORS); every submission is rate-limited per form and per address, and
//! answers the same whether its address was a contact or not.

use std::io::Cursor;

use rocket::http::{ContentType, Header, Status};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::response::{self, Responder, Response};
use rocket::serde::json::Json;
use rocket::{State, get, options, post};
use serde_json::{Map, Value, json};

use super::guards::{ClientIp, UserAgent};
use super::ids::Param;
use super::public_page::{Page, Reader, Shell};
use crate::clock;
use crate::core::confirmations::Mailer;
use crate::core::form_submissions::{self, Submission, Visitor};
use crate::core::ids::FormId;
use crate::core::links::escape_html;
use crate::db::forms::{self as rows, Form};
use crate::error::{ApiError, Envelope};
use crate::state::AppState;
use crate::views::forms::Submitted;

documented_routes!(
    script,
    hosted,
    embed,
    challenge,
    submit_preflight,
    challenge_preflight,
    submit_form,
    submit_json
);

/// The shared script of hosted and embedded forms.
const SCRIPT: &str = include_str!("../../assets/forms/form.js");

/// The `Origin` a browser sent, if any.
pub struct RequestOrigin(Option<String>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for RequestOrigin {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        Outcome::Success(RequestOrigin(req.headers().get_one("Origin").map(|o| o.to_ascii_lowercase())))
    }
}

/// A response other sites' pages may read when their origin is allowed (`origin`).
pub struct Cors<R> {
    inner: R,
    origin: Option<String>,
}

impl<'r, R: Responder<'r, 'static>> Responder<'r, 'static> for Cors<R> {
    fn respond_to(self, req: &'r Request<'_>) -> response::Result<'static> {
        let mut res = self.inner.respond_to(req)?;
        if let Some(origin) = self.origin {
            res.set_header(Header::new("Access-Control-Allow-Origin", origin));
            res.set_header(Header::new("Access-Control-Allow-Methods", "GET, POST"));
            res.set_header(Header::new("Access-Control-Allow-Headers", "Content-Type"));
            res.set_header(Header::new("Access-Control-Max-Age", "600"));
        }
        res.set_header(Header::new("Vary", "Origin"));
        Ok(res)
    }
}

/// Some text with its content type, never cached.
pub struct Text(ContentType, String);

impl<'r> Responder<'r, 'static> for Text {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        Response::build()
            .header(self.0)
            .header(Header::new("Cache-Control", "no-store"))
            .sized_body(self.1.len(), Cursor::new(self.1))
            .ok()
    }
}

/// The form of that id, any project's. An id that is none Tidings makes is the envelope's 404
/// (the path cannot be read); an unknown one, the caller's.
async fn form_of(state: &AppState, id: Param<FormId>) -> Result<Form, ApiError> {
    let id = id?.to_string();
    let form = state.db.run(move |conn| rows::get(conn, None, &id)).await?;
    form.ok_or_else(|| ApiError::not_found("Form not found"))
}

/// Whether a browser at `origin` may use the form: this server's own pages, the form's allowed
/// origins, or no browser at all (no `Origin`).
fn allowed(state: &AppState, form: &Form, origin: &Option<String>) -> bool {
    match origin {
        None => true,
        Some(o) => *o == own_origin(state) || form.allowed_origins.contains(o),
    }
}

fn own_origin(state: &AppState) -> String {
    let url = state.config.public_url().to_ascii_lowercase();
    let rest = url.split_once("://").map_or("", |(_, r)| r);
    let host = rest.split('/').next().unwrap_or_default();
    format!("{}://{host}", url.split("://").next().unwrap_or("http"))
}

/// The allowed origin to name in CORS headers.
fn cors_origin(state: &AppState, form: &Form, origin: &Option<String>) -> Option<String> {
    origin.clone().filter(|o| form.allowed_origins.contains(o) || *o == own_origin(state))
}

/// What an embedded form is built from, in the reader's language (its submissions say which,
/// so the answer and a new contact's `locale` follow it).
fn spec(state: &AppState, form: &Form, topics: &[(String, String)], shell: &Shell) -> Value {
    let base = format!("{}/f/{}", state.config.public_url(), form.id);
    let lang = shell.texts.lang().code();
    json!({
        "submit": format!("{base}/submit?lang={lang}"),
        "challenge": format!("{base}/challenge"),
        "lang": lang,
        "texts": script_texts(shell),
        "fields": form.fields,
        "topics": topics.iter().map(|(id, name)| json!({ "id": id, "name": name })).collect::<Vec<_>>(),
        "consentText": form.consent_text,
    })
}

/// The words the form script shows, in the page's language.
fn script_texts(shell: &Shell) -> Value {
    let t = |key: &str| Value::String(shell.texts.get(key));
    json!({
        "email": t("form.email"),
        "submit": t("form.submit"),
        "trap": t("form.trap"),
        "sending": t("form.sending"),
        "failed": t("form.failed"),
        "unavailable": t("form.unavailable"),
    })
}

/// The page's dress for a form: its project's look in the reader's language.
async fn shell_of(state: &AppState, form: &Form, reader: &Reader) -> Shell {
    Shell::of_project(state, &form.project_id, reader.wishes(None)).await
}

/// The form's offered topics that still exist, with their names.
async fn offered(state: &AppState, form: &Form) -> Result<Vec<(String, String)>, ApiError> {
    let (project, ids) = (form.project_id.clone(), form.topics.clone());
    let all = state.db.run(move |conn| crate::db::topics::list(conn, &project)).await?;
    Ok(all.into_iter().filter(|t| ids.contains(&t.id)).map(|t| (t.id, t.name)).collect())
}

/// The shared form script.
#[utoipa::path(tag = "Pages", operation_id = "formScript", security(()),
    responses((status = 200, description = "The script", content_type = "text/javascript", body = String)))]
#[get("/f/form.js")]
fn script() -> Text {
    Text(ContentType::JavaScript, SCRIPT.to_string())
}

/// The hosted page of a form.
#[utoipa::path(tag = "Pages", operation_id = "formPage", params(("id" = String, Path)), security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 404, description = "No such form: a page saying so (or the error envelope when the id is none Tidings makes)", content((String = "text/html"), (Envelope = "application/json")))))]
#[get("/f/<id>", rank = 2)]
async fn hosted(state: &State<AppState>, id: Param<FormId>, reader: Reader) -> Result<Page, ApiError> {
    let Ok(form) = form_of(state, Ok(id?)).await else { return Ok(missing(&reader)) };
    let topics = offered(state, &form).await?;
    let shell = shell_of(state, &form, &reader).await;
    Ok(form_page(&form, &topics, &shell, None, &Map::new()))
}

fn missing(reader: &Reader) -> Page {
    let shell = Shell::plain(reader);
    shell.page(Status::NotFound, "form.not_found_title", &shell.p("form.not_found", &[]))
}

/// The hosted form, with `problem` said above it and `given` values kept.
fn form_page(
    form: &Form,
    topics: &[(String, String)],
    shell: &Shell,
    problem: Option<&str>,
    given: &Map<String, Value>,
) -> Page {
    let value = |key: &str| given.get(key).and_then(Value::as_str).map(escape_html).unwrap_or_default();
    let mut body = String::new();
    if let Some(problem) = problem {
        body.push_str(&format!("<p role=\"alert\" class=\"problem\">{}</p>", escape_html(problem)));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/f/{id}/submit?lang={lang}\" data-tidings-challenge=\"/f/{id}/challenge\" data-tidings-texts=\"{texts}\">\
         <label>{email}<input type=\"email\" name=\"email\" required autocomplete=\"email\" value=\"{}\"></label>",
        value("email"),
        id = escape_html(&form.id),
        lang = shell.texts.lang().code(),
        texts = escape_html(&script_texts(shell).to_string()),
        email = shell.t("form.email", &[]),
    ));
    for field in &form.fields {
        let kind = match field.kind.as_str() {
            "number" => "number",
            "boolean" => "checkbox",
            "date" => "date",
            _ => "text",
        };
        let required = if field.required && kind != "checkbox" { " required" } else { "" };
        body.push_str(&format!(
            "<label>{}<input type=\"{kind}\" name=\"{}\"{required} value=\"{}\"></label>",
            escape_html(&field.label),
            escape_html(&field.key),
            if kind == "checkbox" { "on".to_string() } else { value(&field.key) }
        ));
    }
    for (id, name) in topics {
        body.push_str(&format!(
            "<label class=\"topic\"><input type=\"checkbox\" name=\"topic\" value=\"{}\"> {}</label>",
            escape_html(id),
            escape_html(name)
        ));
    }
    body.push_str(&format!(
        "<div class=\"trap\" aria-hidden=\"true\"><label>{}<input type=\"text\" name=\"_hp\" tabindex=\"-1\" autocomplete=\"off\"></label></div>\
         <input type=\"hidden\" name=\"altcha\">",
        shell.t("form.trap", &[])
    ));
    if let Some(text) = &form.consent_text {
        body.push_str(&format!("<p class=\"consent\">{}</p>", escape_html(text)));
    }
    body.push_str(&format!(
        "<p data-tidings-status role=\"status\"></p><button type=\"submit\">{}</button></form>\
         <noscript><p>{}</p></noscript>",
        shell.t("form.submit", &[]),
        shell.t("form.noscript", &[])
    ));
    body.push_str(
        "<script src=\"/f/form.js\"></script>\
         <style>form label{display:block;margin:.75rem 0}form input[type=email],form input[type=text],form input[type=number],form input[type=date]{display:block;width:100%;box-sizing:border-box;font:inherit;padding:.4rem;margin-top:.25rem}\
         .trap{position:absolute;left:-9999px}.problem{color:#a11}.consent{font-size:.9rem;color:#444}</style>",
    );
    let status = if problem.is_some() { Status::UnprocessableEntity } else { Status::Ok };
    shell.titled(status, &form.name, &body)
}

/// The script that builds the form into another site's page.
#[utoipa::path(tag = "Pages", operation_id = "formEmbed", params(("id" = String, Path)), security(()),
    responses((status = 200, description = "The script", content_type = "text/javascript", body = String), (status = 404, description = "No such form")))]
#[get("/f/<id>/embed.js")]
async fn embed(state: &State<AppState>, id: Param<FormId>, reader: Reader) -> Result<Text, ApiError> {
    let form = form_of(state, id).await?;
    let topics = offered(state, &form).await?;
    let shell = shell_of(state, &form, &reader).await;
    let spec = spec(state, &form, &topics, &shell).to_string().replace('<', "\\u003c");
    let holder = serde_json::to_string(&format!("[data-tidings-form=\"{}\"]", form.id)).unwrap_or_default();
    Ok(Text(
        ContentType::JavaScript,
        format!(
            "{SCRIPT}\n(function () {{\n  const go = () => {{ const holder = document.querySelector({holder}); if (holder) TidingsForms.build({spec}, holder); }};\n  if (document.readyState === \"loading\") document.addEventListener(\"DOMContentLoaded\", go); else go();\n}})();\n"
        ),
    ))
}

/// A new proof-of-work challenge for the form, issued now.
#[utoipa::path(tag = "Pages", operation_id = "formChallenge", params(("id" = String, Path)), security(()),
    responses((status = 200, description = "An ALTCHA PoW v2 challenge", body = Object), (status = 404, description = "No such form")))]
#[get("/f/<id>/challenge")]
async fn challenge(
    state: &State<AppState>,
    id: Param<FormId>,
    origin: RequestOrigin,
) -> Cors<Result<Text, ApiError>> {
    let form = match form_of(state, id).await {
        Ok(form) => form,
        Err(e) => return Cors { inner: Err(e), origin: None },
    };
    let cors = cors_origin(state, &form, &origin.0);
    let made = form_submissions::challenge(&state.secrets.link, &form.id, clock::now_ms())
        .map_err(ApiError::from)
        .map(|c| Text(ContentType::JSON, serde_json::to_string(&c).unwrap_or_default()));
    Cors { inner: made, origin: cors }
}

/// The preflight of a browser's request from another site: allowed when its origin is.
async fn allow(state: &AppState, id: Param<FormId>, origin: RequestOrigin) -> Cors<Result<Status, ApiError>> {
    match form_of(state, id).await {
        Ok(form) => Cors { inner: Ok(Status::NoContent), origin: cors_origin(state, &form, &origin.0) },
        Err(e) => Cors { inner: Err(e), origin: None },
    }
}

/// The browser's preflight of a JSON submission from another site.
#[utoipa::path(options, path = "/f/{id}/submit", tag = "Pages", operation_id = "submitFormPreflight", params(("id" = String, Path)), security(()),
    responses((status = 204, description = "Allowed when the origin is"), (status = 404, description = "No such form")))]
#[options("/f/<id>/submit")]
async fn submit_preflight(
    state: &State<AppState>,
    id: Param<FormId>,
    origin: RequestOrigin,
) -> Cors<Result<Status, ApiError>> {
    allow(state, id, origin).await
}

/// The browser's preflight of a challenge from another site.
#[utoipa::path(options, path = "/f/{id}/challenge", tag = "Pages", operation_id = "formChallengePreflight", params(("id" = String, Path)), security(()),
    responses((status = 204, description = "Allowed when the origin is"), (status = 404, description = "No such form")))]
#[options("/f/<id>/challenge")]
async fn challenge_preflight(
    state: &State<AppState>,
    id: Param<FormId>,
    origin: RequestOrigin,
) -> Cors<Result<Status, ApiError>> {
    allow(state, id, origin).await
}

/// Checks and stores a submission; the answer says nothing of the address. What is refused is
/// said in the reader's words.
async fn take(
    state: &AppState,
    form: &Form,
    submission: Submission,
    proof: Option<String>,
    (client, agent): (ClientIp, UserAgent),
    (shell, reader): (&Shell, &Reader),
) -> Result<(), ApiError> {
    let locale = reader.named().map(|lang| lang.code().to_string());
    stored(state, form, submission, proof, (client, agent), locale).await.map_err(|mut e| {
        // The visitor reads the message; whoever builds a front reads why in `details.reason`.
        let visitor = said(shell, form, &e);
        let reason = std::mem::replace(&mut e.message, visitor);
        let mut details = match e.details.take() {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        details.insert("reason".into(), Value::String(reason));
        e.details = Some(Value::Object(details));
        e
    })
}

async fn stored(
    state: &AppState,
    form: &Form,
    submission: Submission,
    proof: Option<String>,
    (client, agent): (ClientIp, UserAgent),
    locale: Option<String>,
) -> Result<(), ApiError> {
    state.form_submissions.take(Some(&form.id), client.0)?;
    let (email, values) = form_submissions::check(form, &submission)?;
    let now = clock::now_ms();
    let min_fill = i64::from(state.config.limits.form_min_fill_ms);
    let proven = form_submissions::verify(&state.secrets.link, &form.id, proof.as_deref(), min_fill, now)?;
    let visitor = Visitor {
        ip: client.0.map(|ip| ip.to_string()),
        user_agent: agent.0,
        locale,
        timezone: submission.timezone.clone(),
    };
    let (config, secrets, form, chosen) =
        (state.config.clone(), state.secrets.clone(), form.clone(), submission.topics);
    state
        .db
        .write(move |tx| {
            let mailer = Mailer { config: &config, secret: &secrets.link };
            form_submissions::submit(tx, &mailer, &form, &email, values, &chosen, &proven, visitor, now)
        })
        .await?;
    Ok(())
}

fn thanks(form: &Form, shell: &Shell) -> String {
    form.success_message.clone().unwrap_or_else(|| shell.texts.get("form.thanks"))
}

/// A refusal in the reader's words: each field to fix, the spam checks' refusal (which says no
/// more to a script), the rate limit.
fn said(shell: &Shell, form: &Form, e: &ApiError) -> String {
    let t = &shell.texts;
    match e.status {
        422 if !e.errors.is_empty() => {
            e.errors.iter().map(|problem| field_problem(shell, form, problem)).collect::<Vec<_>>().join(" ")
        }
        403 | 422 => t.get("form.failed"),
        429 => t.get("form.too_many"),
        _ => t.get("page.error"),
    }
}

fn field_problem(shell: &Shell, form: &Form, problem: &crate::error::FieldError) -> String {
    let t = &shell.texts;
    if problem.field == "email" {
        return match problem.code.as_str() {
            "required" => t.fill("form.required", &[("field", &t.get("form.email"))]),
            _ => t.get("form.invalid_email"),
        };
    }
    let Some(field) = form.fields.iter().find(|f| f.key == problem.field) else {
        return t.get("form.failed");
    };
    match problem.code.as_str() {
        "required" => t.fill("form.required", &[("field", &field.label)]),
        _ => {
            let kind =
                t.get(&format!("form.kind_{}", if field.kind == "string" { "text" } else { &field.kind }));
            t.fill("form.invalid", &[("field", &field.label), ("kind", &kind)])
        }
    }
}

/// A submission from the hosted page or a plain HTML form: the page that follows, or a redirect.
#[utoipa::path(tag = "Pages", operation_id = "submitForm", params(("id" = String, Path)), security(()),
    request_body(content((Object = "application/x-www-form-urlencoded"), (Object = "application/json")), description = "A form post (`email`, the fields' keys, `topic` repeated, `_hp`, `_tz` (the browser's time zone), `altcha`) or JSON (`{email, <keys>, topics, _hp, _tz, altcha}`)"),
    responses((status = 200, description = "Taken: the thank-you page for a form post, the answer for JSON", content((String = "text/html"), (Submitted = "application/json"))), (status = 303, description = "A form post, to the form's redirect URL"), (status = 400, description = "A body that cannot be read", content((String = "text/html"), (Envelope = "application/json"))), (status = 403, description = "Refused by the spam checks or the origin", content((String = "text/html"), (Envelope = "application/json"))), (status = 404, description = "No such form", content((String = "text/html"), (Envelope = "application/json"))), (status = 413, description = "Too large a body", content((String = "text/html"), (Envelope = "application/json"))), (status = 422, description = "A field to fix (a form post gets the form again, saying what)", content((String = "text/html"), (Envelope = "application/json"))), (status = 429, description = "Too many submissions", content((String = "text/html"), (Envelope = "application/json")))))]
#[post("/f/<id>/submit", format = "form", data = "<body>")]
async fn submit_form(
    state: &State<AppState>,
    id: Param<FormId>,
    origin: RequestOrigin,
    client: ClientIp,
    agent: UserAgent,
    reader: Reader,
    body: String,
) -> Result<rocket::Either<Page, rocket::response::Redirect>, rocket::Either<Page, ApiError>> {
    let id = id.map_err(rocket::Either::Right)?;
    let Ok(form) = form_of(state, Ok(id)).await else { return Err(rocket::Either::Left(missing(&reader))) };
    let shell = shell_of(state, &form, &reader).await;
    if !allowed(state, &form, &origin.0) {
        let refused =
            shell.page(Status::Forbidden, "form.not_allowed_title", &shell.p("form.not_allowed", &[]));
        return Err(rocket::Either::Left(refused));
    }
    let (submission, proof, given) = from_form(&body);
    match take(state, &form, submission, proof, (client, agent), (&shell, &reader)).await {
        Ok(()) => Ok(match &form.redirect_url {
            Some(url) => rocket::Either::Right(rocket::response::Redirect::to(url.clone())),
            None => {
                let said = format!("<p>{}</p>", escape_html(&thanks(&form, &shell)));
                rocket::Either::Left(shell.titled(Status::Ok, &form.name, &said))
            }
        }),
        Err(e) if e.status == 422 => {
            let topics = offered(state, &form).await.map_err(rocket::Either::Right)?;
            Err(rocket::Either::Left(form_page(&form, &topics, &shell, Some(&e.message), &given)))
        }
        Err(e) => {
            let said = format!("<p>{}</p>", escape_html(&e.message));
            Err(rocket::Either::Left(shell.titled(Status::new(e.status), &form.name, &said)))
        }
    }
}

/// The fields of a form post: the submission, its proof of work, and the values to show again.
fn from_form(body: &str) -> (Submission, Option<String>, Map<String, Value>) {
    let mut submission = Submission::default();
    let (mut proof, mut given) = (None, Map::new());
    for field in rocket::form::Form::<()>::values(body) {
        let decode =
            |raw: &str| rocket::http::RawStr::new(&raw.replace('+', " ")).url_decode_lossy().into_owned();
        let name = decode(field.name.source().as_str());
        let name = name.as_str();
        let value = decode(field.value);
        match name {
            "email" => submission.email = Some(value.clone()),
            "topic" => submission.topics.push(value.clone()),
            "_hp" => submission.honeypot = Some(value.clone()),
            "_tz" => submission.timezone = Some(value.chars().take(64).collect()),
            "altcha" => proof = Some(value.clone()),
            _ => {
                submission.values.insert(name.to_string(), json!(value));
            }
        }
        given.insert(name.to_string(), json!(value));
    }
    (submission, proof, given)
}

/// A submission as JSON (`{email, <field keys>, topics, _hp, altcha}`), from the embed or a
/// custom front; CORS for the form's allowed origins.
#[utoipa::path(tag = "Pages", operation_id = "submitFormJson", params(("id" = String, Path)), security(()),
    request_body(content((Object = "application/x-www-form-urlencoded"), (Object = "application/json")), description = "A form post (`email`, the fields' keys, `topic` repeated, `_hp`, `_tz` (the browser's time zone), `altcha`) or JSON (`{email, <keys>, topics, _hp, _tz, altcha}`)"),
    responses((status = 200, description = "Taken: the thank-you page for a form post, the answer for JSON", content((String = "text/html"), (Submitted = "application/json"))), (status = 303, description = "A form post, to the form's redirect URL"), (status = 400, description = "A body that cannot be read", content((String = "text/html"), (Envelope = "application/json"))), (status = 403, description = "Refused by the spam checks or the origin", content((String = "text/html"), (Envelope = "application/json"))), (status = 404, description = "No such form", content((String = "text/html"), (Envelope = "application/json"))), (status = 413, description = "Too large a body", content((String = "text/html"), (Envelope = "application/json"))), (status = 422, description = "A field to fix (a form post gets the form again, saying what)", content((String = "text/html"), (Envelope = "application/json"))), (status = 429, description = "Too many submissions", content((String = "text/html"), (Envelope = "application/json")))))]
#[post("/f/<id>/submit", format = "json", data = "<body>", rank = 2)]
async fn submit_json(
    state: &State<AppState>,
    id: Param<FormId>,
    origin: RequestOrigin,
    client: ClientIp,
    agent: UserAgent,
    reader: Reader,
    body: super::json::JsonBody<Map<String, Value>, super::json::Small>,
) -> Cors<Result<Json<Submitted>, ApiError>> {
    let form = match form_of(state, id).await {
        Ok(form) => form,
        Err(e) => return Cors { inner: Err(e), origin: None },
    };
    let cors = cors_origin(state, &form, &origin.0);
    let shell = shell_of(state, &form, &reader).await;
    if !allowed(state, &form, &origin.0) {
        let refused = ApiError::forbidden(shell.texts.get("form.not_allowed"));
        return Cors { inner: Err(refused), origin: None };
    }
    let mut values = body.0;
    let text = |v: Option<Value>| v.and_then(|v| v.as_str().map(str::to_string));
    let submission = Submission {
        email: text(values.remove("email")),
        topics: match values.remove("topics") {
            Some(Value::Array(ids)) => {
                ids.into_iter().filter_map(|v| v.as_str().map(str::to_string)).take(50).collect()
            }
            _ => Vec::new(),
        },
        honeypot: text(values.remove("_hp")),
        timezone: text(values.remove("_tz")).map(|z| z.chars().take(64).collect()),
        values: Map::new(),
    };
    let proof = text(values.remove("altcha"));
    let submission = Submission { values, ..submission };
    let answer = take(state, &form, submission, proof, (client, agent), (&shell, &reader)).await.map(|()| {
        Json(Submitted { success: true, message: thanks(&form, &shell), redirect: form.redirect_url.clone() })
    });
    Cors { inner: answer, origin: cors }
}
