//! The small HTML pages contacts and visitors see (unsubscribe, manage, confirm, forms): in the
//! reader's language (`core::i18n`), dressed in the project's name, logo and colour
//! (`core::branding`), never cached.

use std::io::Cursor;

use rocket::http::{ContentType, Header, Status};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::response::{self, Responder, Response};

use crate::core::branding::{INK, Look};
use crate::core::i18n::{Texts, Wishes};
use crate::core::links::escape_html;
use crate::state::AppState;

/// A transparent 1x1 GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff,
    0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// A small HTML page, or a GIF, never cached; or a campaign's copy, or the archive's feed.
pub enum Page {
    Html(Status, String),
    Gif,
    /// A campaign's HTML as its author wrote it: sandboxed (no script runs, no form posts, and
    /// the document has an origin of its own, so it can reach nothing of this server's), sending
    /// no referrer (a web version's address holds its reader's token). `public`: the archive's
    /// copy, which caches may keep for a while.
    Mail {
        html: String,
        public: bool,
    },
    /// The Atom feed of an archive.
    Feed(String),
}

/// How long caches may keep the archive's pages and feed.
const ARCHIVE_CACHE: &str = "public, max-age=300";

impl<'r> Responder<'r, 'static> for Page {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        let mut response = Response::build();
        response.header(Header::new("Cache-Control", "no-store"));
        match self {
            Page::Html(status, body) => {
                if status == Status::TooManyRequests {
                    // The public share of a project's limit refills over the minute.
                    response.header(Header::new("Retry-After", "60"));
                }
                response.status(status).header(ContentType::HTML).sized_body(body.len(), Cursor::new(body));
            }
            Page::Gif => {
                response.header(ContentType::GIF).sized_body(PIXEL.len(), Cursor::new(PIXEL));
            }
            Page::Mail { html, public } => {
                if public {
                    response.header(Header::new("Cache-Control", ARCHIVE_CACHE));
                } else {
                    response.header(Header::new("X-Robots-Tag", "noindex"));
                }
                response
                    .header(ContentType::HTML)
                    .header(Header::new(
                        "Content-Security-Policy",
                        "sandbox allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation",
                    ))
                    .header(Header::new("Referrer-Policy", "no-referrer"))
                    .sized_body(html.len(), Cursor::new(html));
            }
            Page::Feed(xml) => {
                // Opened in a browser, it is a document of ours: never sniffed, never run. Its
                // title and language follow the reader's, so a cache keeps one per language.
                response
                    .header(Header::new("Cache-Control", ARCHIVE_CACHE))
                    .header(Header::new("Vary", "Accept-Language"))
                    .header(ContentType::new("application", "atom+xml"))
                    .header(Header::new("X-Content-Type-Options", "nosniff"))
                    .header(Header::new("Content-Security-Policy", "default-src 'none'; sandbox"))
                    .sized_body(xml.len(), Cursor::new(xml));
            }
        }
        response.ok()
    }
}

/// What a request says of its reader's language: a `?lang=` on the link and the browser's
/// `Accept-Language`.
pub struct Reader {
    accept: Option<String>,
    chosen: Option<String>,
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for Reader {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        Outcome::Success(Reader {
            accept: req.headers().get_one("Accept-Language").map(str::to_string),
            chosen: req.query_value::<&str>("lang").and_then(Result::ok).map(str::to_string),
        })
    }
}

impl Reader {
    /// The shipped language the link or the browser asked for, if any.
    pub fn named(&self) -> Option<crate::core::i18n::Lang> {
        self.wishes(None).named()
    }

    /// The reader's wishes, with the contact's `locale` when the page is a contact's.
    pub fn wishes<'a>(&'a self, contact: Option<&'a str>) -> Wishes<'a> {
        Wishes { chosen: self.chosen.as_deref(), contact, accept: self.accept.as_deref(), project: None }
    }
}

/// A page's dress and words: the project's look and the reader's texts.
pub struct Shell {
    pub look: Look,
    pub texts: Texts,
}

impl Shell {
    pub fn new(look: Look, wishes: Wishes<'_>) -> Self {
        let texts = look.texts(wishes);
        Shell { look, texts }
    }

    /// A page of no project (a link that names none): the shipped look.
    pub fn plain(reader: &Reader) -> Self {
        Shell::new(Look { name: String::new(), ..Look::default() }, reader.wishes(None))
    }

    /// The look of `project`'s pages for this reader (defaults when it cannot be read).
    pub async fn of_project(state: &AppState, project: &str, wishes: Wishes<'_>) -> Self {
        let id = project.to_string();
        let look = state.db.run(move |conn| crate::core::branding::look(conn, &id)).await;
        // A page still answers in the shipped look when the branding cannot be read.
        let look = look.unwrap_or_else(|e| {
            tracing::warn!("could not read a project's branding: {e}");
            Look::default()
        });
        Shell::new(look, wishes)
    }

    /// The text of `key` with `vars`, escaped for HTML.
    pub fn t(&self, key: &str, vars: &[(&str, &str)]) -> String {
        escape_html(&self.texts.fill(key, vars))
    }

    /// `<p>` with the text of `key`.
    pub fn p(&self, key: &str, vars: &[(&str, &str)]) -> String {
        format!("<p>{}</p>", self.t(key, vars))
    }

    /// The page titled with the text of `title`.
    pub fn page(&self, status: Status, title: &str, body: &str) -> Page {
        self.titled(status, &self.texts.get(title), body)
    }

    /// The page titled `title` (plain text, escaped here).
    pub fn titled(&self, status: Status, title: &str, body: &str) -> Page {
        self.document(status, title, "", body)
    }

    /// The page titled `title` (plain text, escaped here), with `head` (markup) added to its head.
    pub fn document(&self, status: Status, title: &str, head: &str, body: &str) -> Page {
        let look = &self.look;
        let p = &look.palette;
        let brand = match (&look.logo, look.name.is_empty()) {
            (Some(logo), _) => format!(
                "<header class=\"brand\"><img src=\"{}\" alt=\"{}\"></header>",
                escape_html(logo),
                escape_html(&look.name)
            ),
            (None, false) => format!("<header class=\"brand\"><p>{}</p></header>", escape_html(&look.name)),
            (None, true) => String::new(),
        };
        let full_title = if look.name.is_empty() {
            escape_html(title)
        } else {
            format!("{} · {}", escape_html(title), escape_html(&look.name))
        };
        Page::Html(
            status,
            format!(
                "<!doctype html><html lang=\"{lang}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                 <title>{full_title}</title><style>:root{{--accent:{accent};--on-accent:{on};--accent-text:{text}}}\
                 body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:{INK};line-height:1.5}}\
                 .brand{{border-bottom:3px solid var(--accent);padding-bottom:.75rem;margin-bottom:1.5rem}}.brand img{{max-height:48px;max-width:200px;display:block}}.brand p{{margin:0;font-weight:600;font-size:1.1rem;color:var(--accent-text)}}\
                 button{{font:inherit;padding:.5rem 1rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:var(--on-accent);cursor:pointer}}\
                 button.secondary{{background:#fff;color:var(--accent-text);border-color:var(--accent-text)}}form{{display:inline-block;margin:.25rem .5rem .25rem 0}}\
                 a{{color:var(--accent-text)}}</style>{head}</head>\
                 <body>{brand}<main><h1>{title}</h1>{body}</main></body></html>",
                lang = self.texts.lang().code(),
                accent = escape_html(&p.accent),
                on = p.on_accent,
                text = escape_html(&p.accent_text),
                title = escape_html(title),
            ),
        )
    }

    /// The page of a link that is not valid.
    pub fn not_found(&self) -> Page {
        self.page(Status::NotFound, "page.not_found_title", &self.p("page.not_found", &[]))
    }

    /// The page of a request over the project's share of the request limit.
    pub fn busy(&self) -> Page {
        self.page(Status::TooManyRequests, "page.busy_title", &self.p("page.busy", &[]))
    }

    /// The page of a change that could not be saved.
    pub fn failed(&self) -> Page {
        self.page(Status::InternalServerError, "page.error_title", &self.p("page.error", &[]))
    }
}

/// A button that posts `action=value` to `action`; `label` is plain text.
pub fn button_form(action: &str, label: &str, class: &str, value: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"action\" value=\"{}\"><button class=\"{class}\" type=\"submit\">{}</button></form>",
        escape_html(action),
        escape_html(value),
        escape_html(label)
    )
}
