//! The campaign archive and the web version (issue 32, item 8).
//!
//! - A campaign marked public is listed, once it has gone out, in its project's archive
//!   (`/archive/<slug>`, or the project's id when it chose no slug) and its Atom feed. Its copy
//!   there is rendered for no one: the campaign's `archiveData` in place of a contact's data, no
//!   address, no personal links, no tracking.
//! - Every campaign's mail carries `{{ viewInBrowserUrl }}`: a signed link to the web version,
//!   the campaign rendered as that contact got it, again without tracking.
//!
//! Public pages must not let a tenant, or a crowd of readers, spend the server's time: each copy
//! is rendered once per version of its content ([`Copies`], keyed by the campaign's and the
//! contact's `updated_at`) and served from memory after that, and the renders a project causes
//! are drawn from its share of the request limit by the caller.

use std::str::FromStr;
use std::sync::Arc;

use atom_syndication::{Content, Entry, Feed, FixedDateTime, Link, Text};
use serde_json::{Map, Value};

use super::outbound::{self, LinkBase, Rendered};
use crate::clock::iso;
use crate::core::error::Result;
use crate::db::Tx;
use crate::db::campaigns::{self, Archived, Campaign};
use crate::db::contacts::{self, Contact};
use crate::db::{branding, emails, projects};

/// Campaigns on one page of the archive.
pub const PAGE_SIZE: usize = 20;
/// Campaigns in the feed: the newest.
pub const FEED_SIZE: usize = 20;
/// The furthest page the archive shows (a bound on the offset a request can ask for).
pub const MAX_PAGE: usize = 10_000;
/// Memory the rendered copies may take, all projects together; the least used go first.
const COPIES_BYTES: u64 = 32 * 1024 * 1024;

/// A project's archive: the project and the address it answers at (its slug, or its id).
#[derive(Debug, Clone)]
pub struct Archive {
    pub project: String,
    pub address: String,
}

/// The archive answering at `address`: the project that chose it as its slug, or the project
/// with that id. Not a disabled project's, nor one being reset or deleted.
pub fn find(conn: &Tx, address: &str) -> Result<Option<Archive>> {
    let id = match branding::project_of_slug(conn, address)? {
        Some(id) => id,
        None => address.to_string(),
    };
    let Some(project) = serving(conn, &id)? else { return Ok(None) };
    let (found, _) = branding::get(conn, &project.id)?;
    Ok(Some(Archive { address: found.slug.unwrap_or_else(|| project.id.clone()), project: project.id }))
}

/// Project `id`, when its public pages answer: not disabled, not being reset or deleted, not
/// the appliance's own.
fn serving(conn: &Tx, id: &str) -> Result<Option<projects::Project>> {
    Ok(projects::get(conn, id)?.filter(|p| !p.disabled && p.wiping.is_none() && p.id != projects::SYSTEM))
}

/// Where the archive and its parts are read.
impl Archive {
    pub fn url(&self, public_url: &str) -> String {
        format!("{public_url}/archive/{}", self.address)
    }

    pub fn campaign_url(&self, public_url: &str, campaign: &str) -> String {
        format!("{}/{campaign}", self.url(public_url))
    }

    pub fn feed_url(&self, public_url: &str) -> String {
        format!("{}/feed.atom", self.url(public_url))
    }
}

/// Which copy of a campaign a render made, by the versions of what went into it (an archived
/// copy names its own address, so the archive's address is one of them).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CopyOf {
    /// The archived copy's subject alone (the archive's list).
    Subject { campaign: String, version: i64, address: String },
    /// The archived copy, whole.
    Archived { campaign: String, version: i64, address: String },
    /// The web version for a contact (empty: for no one, its contact gone).
    Web { campaign: String, version: i64, contact: String, contact_version: i64 },
}

/// Copies already rendered, in memory up to [`COPIES_BYTES`].
pub struct Copies(moka::sync::Cache<CopyOf, Arc<Rendered>>);

impl Default for Copies {
    fn default() -> Self {
        Copies(
            moka::sync::Cache::builder()
                .max_capacity(COPIES_BYTES)
                .weigher(|_, copy: &Arc<Rendered>| {
                    u32::try_from(copy.subject.len() + copy.html.len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }
}

impl Copies {
    pub fn get(&self, key: &CopyOf) -> Option<Arc<Rendered>> {
        self.0.get(key)
    }

    pub fn put(&self, key: CopyOf, copy: Rendered) -> Arc<Rendered> {
        let copy = Arc::new(copy);
        self.0.insert(key, copy.clone());
        copy
    }
}

fn impersonal_vars(archive_data: Option<&str>) -> Map<String, Value> {
    match archive_data.map(serde_json::from_str) {
        Some(Ok(Value::Object(map))) => map,
        _ => Map::new(),
    }
}

/// The campaign's copy for the archive at `page` (its own address there). A copy that fails to
/// render is the reason, for the log.
pub fn archived_copy(c: &Campaign, page: &str) -> std::result::Result<Rendered, String> {
    outbound::render_impersonal(&c.subject, &c.body, &impersonal_vars(c.archive_data.as_deref()), page)
        .map_err(|(part, e)| format!("the {} could not be rendered: {e}", part.field()))
}

/// The subject of an archived campaign as its list shows it (the subject as written when it
/// cannot be rendered).
pub fn archived_subject(a: &Archived, page: &str) -> Rendered {
    let vars = impersonal_vars(a.archive_data.as_deref());
    outbound::render_impersonal(&a.subject, "", &vars, page)
        .unwrap_or_else(|_| Rendered { subject: a.subject.clone(), html: String::new() })
}

/// What the web version of `campaign` for `contact` shows: the campaign, the contact when it is
/// still the project's (gone: the copy is rendered for no one), and the email it got (which an
/// unsubscribe from the copy is credited to).
pub struct WebVersion {
    pub campaign: Campaign,
    pub contact: Option<Contact>,
    pub email: Option<String>,
}

impl WebVersion {
    pub fn copy_of(&self) -> CopyOf {
        CopyOf::Web {
            campaign: self.campaign.id.clone(),
            version: self.campaign.updated_at,
            contact: self.contact.as_ref().map(|c| c.id.clone()).unwrap_or_default(),
            contact_version: self.contact.as_ref().map_or(0, |c| c.updated_at),
        }
    }

    /// The copy, rendered as the contact's mail was (without tracking).
    pub fn render(&self, public_url: &str, secret: &str) -> std::result::Result<Rendered, String> {
        let c = &self.campaign;
        let Some(contact) = &self.contact else {
            let page = crate::core::links::url(
                public_url,
                secret,
                &crate::core::links::Link::View { campaign: c.id.clone(), contact: String::new() },
            );
            return archived_copy(c, &page);
        };
        let base =
            LinkBase { public_url, secret, email: self.email.as_deref(), campaign: Some(c.id.as_str()) };
        outbound::render(&c.subject, &c.body, &contact.email, Some(contact), &Map::new(), &base)
            .map_err(|(part, e)| format!("the {} could not be rendered: {e}", part.field()))
    }
}

/// The web version of `campaign` for contact `contact` (empty for none), if the campaign still
/// exists.
pub fn web_version(conn: &Tx, campaign: &str, contact: &str) -> Result<Option<WebVersion>> {
    let Some(campaign) = campaigns::by_id(conn, campaign)? else { return Ok(None) };
    if serving(conn, &campaign.project_id)?.is_none() {
        return Ok(None);
    }
    let contact = match contact {
        "" => None,
        id => contacts::by_id(conn, &campaign.project_id, id)?,
    };
    let email = match &contact {
        Some(c) => emails::of_campaign_contact(conn, &campaign.id, &c.id)?,
        None => None,
    };
    Ok(Some(WebVersion { campaign, contact, email }))
}

/// One entry of the feed: the campaign listed, and its copy.
pub struct FeedEntry<'a> {
    pub listed: &'a Archived,
    pub copy: &'a Rendered,
}

fn at(ms: i64) -> FixedDateTime {
    FixedDateTime::from_str(&iso(ms)).unwrap_or_default()
}

/// The Atom feed of `archive`: titled `title`, described by `subtitle`, in `lang`, its entries
/// newest first.
pub fn feed(
    archive: &Archive,
    public_url: &str,
    (title, subtitle, lang): (&str, &str, &str),
    entries: &[FeedEntry<'_>],
) -> String {
    let link = |href: String, rel: &str, kind: &str| Link {
        href,
        rel: rel.into(),
        mime_type: Some(kind.into()),
        ..Link::default()
    };
    let updated = entries.first().map_or(0, |e| e.listed.sent_at);
    let feed = Feed {
        title: Text::plain(title),
        subtitle: Some(Text::plain(subtitle)),
        id: format!("urn:uuid:{}", archive.project),
        updated: at(updated),
        lang: Some(lang.into()),
        links: vec![
            link(archive.feed_url(public_url), "self", "application/atom+xml"),
            link(archive.url(public_url), "alternate", "text/html"),
        ],
        entries: entries
            .iter()
            .map(|e| Entry {
                title: Text::plain(e.copy.subject.clone()),
                id: format!("urn:uuid:{}", e.listed.id),
                updated: at(e.listed.sent_at),
                published: Some(at(e.listed.sent_at)),
                links: vec![link(archive.campaign_url(public_url, &e.listed.id), "alternate", "text/html")],
                content: Some(Content {
                    value: Some(e.copy.html.clone()),
                    content_type: Some("html".into()),
                    ..Content::default()
                }),
                ..Entry::default()
            })
            .collect(),
        ..Feed::default()
    };
    feed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feed_escapes_what_campaigns_say_and_reads_back() {
        let archive = Archive { project: "p1".into(), address: "acme".into() };
        let listed = Archived {
            id: "c1".into(),
            subject: String::new(),
            archive_data: None,
            sent_at: 1_796_115_600_000,
            updated_at: 0,
        };
        let copy = Rendered {
            subject: "News <&> \"more\"".into(),
            html: "<p>Hi &amp; welcome</p><script>x</script>]]>".into(),
        };
        let xml = feed(
            &archive,
            "https://m.example",
            ("Acme & Co", "Every campaign", "en"),
            &[FeedEntry { listed: &listed, copy: &copy }],
        );
        let read = Feed::from_str(&xml).expect("the feed parses");
        assert_eq!(read.title.value, "Acme & Co");
        assert_eq!(read.id, "urn:uuid:p1");
        let entry = &read.entries[0];
        assert_eq!(entry.title.value, "News <&> \"more\"");
        assert_eq!(entry.content.as_ref().unwrap().value.as_deref(), Some(copy.html.as_str()));
        assert_eq!(entry.links[0].href, "https://m.example/archive/acme/c1");
        assert_eq!(entry.updated.to_rfc3339(), "2026-12-01T09:00:00+00:00");
        assert_eq!(read.links[0].href, "https://m.example/archive/acme/feed.atom");
    }

    #[test]
    fn an_archived_copy_has_no_personal_data_and_links_to_itself() {
        let c = Campaign {
            subject: "Hi {{ firstName | default: 'there' }}".into(),
            body: "<p>{{ email }}|{{ id }}|{{ plan }}|<a href=\"{{ unsubscribeUrl }}\">u</a>|{{ viewInBrowserUrl }}</p>"
                .into(),
            archive_data: Some(r#"{"plan": "Pro", "email": "spoof@x.y"}"#.into()),
            ..Campaign::default()
        };
        let copy = archived_copy(&c, "https://m.example/archive/acme/c1").unwrap();
        assert_eq!(copy.subject, "Hi there");
        assert_eq!(copy.html, "<p>||Pro|<a href=\"\">u</a>|https://m.example/archive/acme/c1</p>");
    }
}
