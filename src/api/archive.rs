//! The campaign archive and web version in public (issue 32, item 8): `/archive/<slug>` lists a
//! project's public campaigns, `/archive/<slug>/<campaign>` shows one rendered for no one,
//! `/archive/<slug>/feed.atom` is their Atom feed, and `/c/<campaign>/<token>` is the web
//! version a campaign's mail links to (`{{ viewInBrowserUrl }}`).
//!
//! A copy is rendered once per version and then served from memory (`core::archive::Copies`);
//! a request that has to render draws on its project's public share of the request limit, and
//! past it gets a "too many requests" page, so neither a crowd nor a tenant's own slow template
//! can spend the time other projects need.

use std::sync::Arc;

use rocket::http::Status;
use rocket::{State, get};

use super::ids::Param;
use super::public_page::{Page, Reader, Shell};
use crate::clock::iso;
use crate::core::archive::{self, Archive, CopyOf, FeedEntry, MAX_PAGE, PAGE_SIZE};
use crate::core::blocking::blocking;
use crate::core::i18n::locale_of;
use crate::core::ids::CampaignId;
use crate::core::links::{self, Link, escape_html};
use crate::core::outbound::Rendered;
use crate::db::campaigns::{self, Archived};
use crate::error::{ApiError, Envelope};
use crate::state::AppState;

documented_routes!(archive_page, archive_feed, archived_campaign, web_version);

/// Whether project `project` may cause another render now (its public share of the limit).
fn may_render(state: &AppState, project: &str) -> bool {
    state.limiter.check_public(project).is_ok()
}

/// The archive at `address` with `limit` of its campaigns from `offset`, and how many it has,
/// if it answers and that part of it lists any.
async fn listing(
    state: &AppState,
    address: &str,
    offset: usize,
    limit: usize,
) -> Result<Option<(Archive, Vec<Archived>, i64)>, crate::core::Error> {
    let address = address.to_string();
    state
        .db
        .run(move |conn| {
            let Some(archive) = archive::find(conn, &address)? else { return Ok(None) };
            let (rows, total) = campaigns::archived(conn, &archive.project, offset, limit)?;
            Ok(Some((archive, rows, total)).filter(|(_, rows, _)| !rows.is_empty()))
        })
        .await
}

/// The subjects of `rows` as the archive shows them: from memory, or rendered now when the
/// project may; `None` when it may not.
async fn subjects(state: &AppState, archive: &Archive, rows: &[Archived]) -> Option<Vec<String>> {
    let key = |a: &Archived| CopyOf::Subject {
        campaign: a.id.clone(),
        version: a.updated_at,
        address: archive.address.clone(),
    };
    let known: Vec<Option<Arc<Rendered>>> = rows.iter().map(|a| state.copies.get(&key(a))).collect();
    if known.iter().all(Option::is_some) {
        return Some(known.into_iter().flatten().map(|r| r.subject.clone()).collect());
    }
    if !may_render(state, &archive.project) {
        return None;
    }
    let public_url = state.config.public_url();
    let (listed, all) = (archive.clone(), rows.to_vec());
    let rendered = blocking(move || {
        all.iter()
            .map(|a| archive::archived_subject(a, &listed.campaign_url(&public_url, &a.id)))
            .collect::<Vec<_>>()
    })
    .await
    .ok()?;
    Some(rows.iter().zip(rendered).map(|(a, r)| state.copies.put(key(a), r).subject.clone()).collect())
}

/// A project's archive: its public campaigns that went out, newest first, a page at a time.
#[utoipa::path(
    tag = "Pages",
    operation_id = "archivePage",
    params(
        ("slug" = String, Path, description = "The project's slug (`PATCH /branding`), or its id"),
        ("page" = Option<i64>, Query, description = "From 1"),
    ),
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 404, description = "No archive here, or no campaign on this page: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json"))),
        (status = 429, description = "The project's pages are asked for too often: a page saying so", content_type = "text/html", body = String),
        (status = 500, description = "The archive could not be read: a page saying so", content_type = "text/html", body = String),
    ),
)]
#[get("/archive/<slug>?<page>")]
async fn archive_page(state: &State<AppState>, slug: &str, page: Option<&str>, reader: Reader) -> Page {
    let number =
        page.and_then(|p| p.parse::<usize>().ok()).filter(|p| (1..=MAX_PAGE).contains(p)).unwrap_or(1);
    let (archive, rows, total) = match listing(state, slug, (number - 1) * PAGE_SIZE, PAGE_SIZE).await {
        Ok(Some(found)) => found,
        Ok(None) => return Shell::plain(&reader).not_found(),
        Err(e) => return failed(Shell::plain(&reader), e),
    };
    let shell = Shell::of_project(state, &archive.project, reader.wishes(None)).await;
    let Some(subjects) = subjects(state, &archive, &rows).await else { return shell.busy() };
    let base = format!("/archive/{}", archive.address);
    let items: String = rows
        .iter()
        .zip(subjects)
        .map(|(a, subject)| {
            let when = iso(a.sent_at);
            format!(
                "<li><a href=\"{base}/{id}\">{subject}</a><time datetime=\"{when}\">{day}</time></li>",
                base = escape_html(&base),
                id = escape_html(&a.id),
                subject = escape_html(&subject),
                day = &when[..10],
            )
        })
        .collect();
    let mut pages = Vec::new();
    if number > 1 {
        pages.push(format!(
            "<a rel=\"prev\" href=\"?page={}\">{}</a>",
            number - 1,
            shell.t("archive.newer", &[])
        ));
    }
    if (number * PAGE_SIZE) < usize::try_from(total).unwrap_or(0) && number < MAX_PAGE {
        pages.push(format!(
            "<a rel=\"next\" href=\"?page={}\">{}</a>",
            number + 1,
            shell.t("archive.older", &[])
        ));
    }
    let feed = format!("{}/feed.atom", escape_html(&base));
    let head = format!(
        "<link rel=\"alternate\" type=\"application/atom+xml\" href=\"{feed}\">\
         <style>ul.archive{{list-style:none;padding:0}}ul.archive li{{margin:0 0 1rem}}\
         ul.archive time{{display:block;color:#4b5563;font-size:.9rem}}nav.pages{{display:flex;gap:1rem}}</style>"
    );
    let body = format!(
        "{intro}<ul class=\"archive\">{items}</ul><nav class=\"pages\">{pages}</nav>\
         <p><a href=\"{feed}\" type=\"application/atom+xml\">{follow}</a></p>",
        intro = shell.p("archive.intro", &[]),
        pages = pages.join(""),
        follow = shell.t("archive.feed", &[]),
    );
    shell.document(Status::Ok, &shell.texts.get("archive.title"), &head, &body)
}

/// The Atom feed of a project's archive: its newest public campaigns, whole.
#[utoipa::path(
    tag = "Pages",
    operation_id = "archiveFeed",
    params(("slug" = String, Path, description = "The project's slug (`PATCH /branding`), or its id")),
    security(()),
    responses(
        (status = 200, description = "The feed", content_type = "application/atom+xml", body = String),
        (status = 404, description = "No archive here: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json"))),
        (status = 429, description = "The project's pages are asked for too often: a page saying so", content_type = "text/html", body = String),
        (status = 500, description = "The archive could not be read: a page saying so", content_type = "text/html", body = String),
    ),
)]
#[get("/archive/<slug>/feed.atom")]
async fn archive_feed(state: &State<AppState>, slug: &str, reader: Reader) -> Page {
    let (archive, rows, _) = match listing(state, slug, 0, archive::FEED_SIZE).await {
        Ok(Some(found)) => found,
        Ok(None) => return Shell::plain(&reader).not_found(),
        Err(e) => return failed(Shell::plain(&reader), e),
    };
    let shell = Shell::of_project(state, &archive.project, reader.wishes(None)).await;
    let mut copies = Vec::with_capacity(rows.len());
    let mut charged = false;
    for listed in &rows {
        match copy_of(state, &archive, &listed.id, listed.updated_at, &mut charged).await {
            Ok(Some(copy)) => copies.push((listed, copy)),
            // Taken out of the archive since it was listed, or failing to render: left out.
            Ok(None) | Err(Refused::Failed) => {}
            Err(Refused::Busy) => return shell.busy(),
        }
    }
    let entries: Vec<FeedEntry<'_>> =
        copies.iter().map(|(listed, copy)| FeedEntry { listed, copy: copy.as_ref() }).collect();
    let intro = shell.texts.fill("archive.intro", &[]);
    let titles = (shell.look.name.as_str(), intro.as_str(), shell.texts.lang().code());
    Page::Feed(archive::feed(&archive, &state.config.public_url(), titles, &entries))
}

/// Why a copy was not served.
enum Refused {
    /// The project's share of the limit is spent.
    Busy,
    /// It could not be read or rendered (logged).
    Failed,
}

/// The archived copy of `campaign` at `version`: from memory, or read and rendered now (the
/// first render of a request is charged to the project, once). `None` when it is not in the
/// archive (any more).
async fn copy_of(
    state: &AppState,
    archive: &Archive,
    campaign: &str,
    version: i64,
    charged: &mut bool,
) -> Result<Option<Arc<Rendered>>, Refused> {
    let key = CopyOf::Archived { campaign: campaign.to_string(), version, address: archive.address.clone() };
    if let Some(copy) = state.copies.get(&key) {
        return Ok(Some(copy));
    }
    if !*charged && !may_render(state, &archive.project) {
        return Err(Refused::Busy);
    }
    *charged = true;
    let (project, id) = (archive.project.clone(), campaign.to_string());
    let read = state.db.run(move |conn| campaigns::archived_one(conn, &project, &id)).await;
    let Some(c) = read.map_err(|e| log(e.to_string()))? else { return Ok(None) };
    let page = archive.campaign_url(&state.config.public_url(), campaign);
    let key =
        CopyOf::Archived { campaign: c.id.clone(), version: c.updated_at, address: archive.address.clone() };
    let rendered =
        blocking(move || archive::archived_copy(&c, &page)).await.map_err(|e| log(e.to_string()))?;
    Ok(Some(state.copies.put(key, rendered.map_err(log)?)))
}

fn log(reason: String) -> Refused {
    tracing::warn!("a campaign's public copy could not be made: {reason}");
    Refused::Failed
}

/// A public campaign of the archive, rendered for no one: its `archiveData` in place of a
/// contact's, no personal links, no tracking. Sandboxed: no script in it runs.
#[utoipa::path(
    tag = "Pages",
    operation_id = "archivedCampaign",
    params(
        ("slug" = String, Path, description = "The project's slug (`PATCH /branding`), or its id"),
        ("campaign" = String, Path, description = "The campaign's id"),
    ),
    security(()),
    responses(
        (status = 200, description = "The campaign's HTML", content_type = "text/html", body = String),
        (status = 404, description = "Not a campaign of this archive: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json"))),
        (status = 429, description = "The project's pages are asked for too often: a page saying so", content_type = "text/html", body = String),
        (status = 500, description = "It could not be shown: a page saying so", content_type = "text/html", body = String),
    ),
)]
#[get("/archive/<slug>/<campaign>", rank = 2)]
async fn archived_campaign(
    state: &State<AppState>,
    slug: &str,
    campaign: Param<CampaignId>,
    reader: Reader,
) -> Result<Page, ApiError> {
    // Like every route's id: one that is no id at all is the envelope's 404.
    Ok(archived_page(state, slug, campaign?.to_string(), &reader).await)
}

async fn archived_page(state: &AppState, slug: &str, campaign: String, reader: &Reader) -> Page {
    let (address, id) = (slug.to_string(), campaign.clone());
    let found = state
        .db
        .run(move |conn| {
            let Some(archive) = archive::find(conn, &address)? else { return Ok(None) };
            let version = campaigns::archived_version(conn, &archive.project, &id)?;
            Ok::<_, crate::core::Error>(version.map(|v| (archive, v)))
        })
        .await;
    let (archive, version) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return Shell::plain(reader).not_found(),
        Err(e) => return failed(Shell::plain(reader), e),
    };
    match copy_of(state, &archive, &campaign, version, &mut false).await {
        Ok(Some(copy)) => Page::Mail { html: copy.html.clone(), public: true },
        Ok(None) => Shell::plain(reader).not_found(),
        Err(refused) => {
            let shell = Shell::of_project(state, &archive.project, reader.wishes(None)).await;
            match refused {
                Refused::Busy => shell.busy(),
                Refused::Failed => shell.failed(),
            }
        }
    }
}

/// The web version of a campaign: the mail as its contact got it, without tracking (the
/// `viewInBrowserUrl` of every campaign's mail). Sandboxed, and its address never sent on.
#[utoipa::path(
    tag = "Pages",
    operation_id = "webVersion",
    params(
        ("campaign" = String, Path, description = "The campaign's id"),
        ("token" = String, Path, description = "The signed token of the mailed link"),
    ),
    security(()),
    responses(
        (status = 200, description = "The campaign's HTML", content_type = "text/html", body = String),
        (status = 404, description = "A forged or altered link, or a campaign deleted since: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json"))),
        (status = 429, description = "The project's pages are asked for too often: a page saying so", content_type = "text/html", body = String),
        (status = 500, description = "It could not be shown: a page saying so", content_type = "text/html", body = String),
    ),
)]
#[get("/c/<campaign>/<token>")]
async fn web_version(
    state: &State<AppState>,
    campaign: Param<CampaignId>,
    token: &str,
    reader: Reader,
) -> Result<Page, ApiError> {
    Ok(web_version_page(state, campaign?.to_string(), token, &reader).await)
}

async fn web_version_page(state: &AppState, id: String, token: &str, reader: &Reader) -> Page {
    let contact = match links::verify(&state.secrets.link, token) {
        Some(Link::View { campaign: signed, contact }) if signed == id => contact,
        _ => return Shell::plain(reader).not_found(),
    };
    let found = state.db.run(move |conn| archive::web_version(conn, &id, &contact)).await;
    let version = match found {
        Ok(Some(version)) => version,
        Ok(None) => return Shell::plain(reader).not_found(),
        Err(e) => return failed(Shell::plain(reader), e),
    };
    let key = version.copy_of();
    if let Some(copy) = state.copies.get(&key) {
        return Page::Mail { html: copy.html.clone(), public: false };
    }
    let project = version.campaign.project_id.clone();
    let locale = version.contact.as_ref().and_then(|c| locale_of(&c.data)).map(str::to_string);
    if !may_render(state, &project) {
        return Shell::of_project(state, &project, reader.wishes(locale.as_deref())).await.busy();
    }
    let (public_url, secret) = (state.config.public_url(), state.secrets.link.clone());
    match blocking(move || version.render(&public_url, &secret)).await {
        Ok(Ok(copy)) => Page::Mail { html: state.copies.put(key, copy).html.clone(), public: false },
        Ok(Err(reason)) => {
            log(reason);
            Shell::of_project(state, &project, reader.wishes(locale.as_deref())).await.failed()
        }
        Err(e) => failed(Shell::of_project(state, &project, reader.wishes(locale.as_deref())).await, e),
    }
}

fn failed(shell: Shell, e: crate::core::Error) -> Page {
    tracing::error!("an archive page failed: {e}");
    shell.failed()
}
