//! The languages of the public pages and of the mail sent to contacts (issue 32, item 7): the
//! translation files embedded from `assets/i18n`, which language a reader gets, and a project's
//! own wording on top.
//!
//! A text is Liquid without markup (`{{ project }}`), rendered as plain text: the caller escapes
//! the result where it lands, so neither a variable nor a project's override can add markup.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value};

use super::render::{self, Globals, Mode, Node};

/// A shipped language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lang {
    En,
    De,
    Fr,
    Es,
    Pt,
    Nl,
}

/// The embedded translation files, English first: the reference the others follow.
const FILES: [(Lang, &str); 6] = [
    (Lang::En, include_str!("../../assets/i18n/en.toml")),
    (Lang::De, include_str!("../../assets/i18n/de.toml")),
    (Lang::Fr, include_str!("../../assets/i18n/fr.toml")),
    (Lang::Es, include_str!("../../assets/i18n/es.toml")),
    (Lang::Pt, include_str!("../../assets/i18n/pt.toml")),
    (Lang::Nl, include_str!("../../assets/i18n/nl.toml")),
];

/// The longest `Accept-Language` read: a browser sends a few dozen bytes, and the parser
/// allocates per entry, so a longer header is cut before it is read.
const MAX_ACCEPT: usize = 256;

impl Lang {
    pub const ALL: [Lang; 6] = [Lang::En, Lang::De, Lang::Fr, Lang::Es, Lang::Pt, Lang::Nl];

    /// Its ISO 639-1 code, as `<html lang>` and `locale` write it.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::De => "de",
            Lang::Fr => "fr",
            Lang::Es => "es",
            Lang::Pt => "pt",
            Lang::Nl => "nl",
        }
    }

    /// Its name in itself, for a chooser.
    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::De => "Deutsch",
            Lang::Fr => "Français",
            Lang::Es => "Español",
            Lang::Pt => "Português",
            Lang::Nl => "Nederlands",
        }
    }

    /// The shipped language a BCP 47 tag names (`pt-BR`, `de_AT`, `FR`), if any: its
    /// language subtag, as ICU reads it.
    pub fn of_tag(tag: &str) -> Option<Lang> {
        let tag = tag.trim();
        if tag.is_empty() || tag.len() > 64 {
            return None;
        }
        let id = icu_locale_core::LanguageIdentifier::try_from_str(&tag.replace('_', "-")).ok()?;
        Lang::ALL.into_iter().find(|l| l.code() == id.language.as_str())
    }
}

/// What is known of a reader's language, each tried in turn: a choice on the link (`?lang=`),
/// the contact's `locale`, the browser's `Accept-Language`, the project's default. English
/// when none names a shipped language.
#[derive(Debug, Default, Clone, Copy)]
pub struct Wishes<'a> {
    pub chosen: Option<&'a str>,
    pub contact: Option<&'a str>,
    pub accept: Option<&'a str>,
    pub project: Option<&'a str>,
}

impl Wishes<'_> {
    pub fn pick(&self) -> Lang {
        self.named().or_else(|| self.project.and_then(Lang::of_tag)).unwrap_or(Lang::En)
    }

    /// The language the reader asked for (the link, the contact, the browser), if any named a
    /// shipped one: what a new contact's `locale` may be taken from.
    pub fn named(&self) -> Option<Lang> {
        let tag = |t: Option<&str>| t.and_then(Lang::of_tag);
        tag(self.chosen).or_else(|| tag(self.contact)).or_else(|| self.accept.and_then(from_accept))
    }
}

/// The best shipped language of an `Accept-Language` header (`q=0` is a refusal).
fn from_accept(header: &str) -> Option<Lang> {
    let mut cut = header.len().min(MAX_ACCEPT);
    while !header.is_char_boundary(cut) {
        cut -= 1;
    }
    let header = &header[..cut];
    accept_language::parse_with_quality(header)
        .into_iter()
        .filter(|(_, q)| *q > 0.0)
        .find_map(|(tag, _)| Lang::of_tag(&tag))
}

/// The locale a contact's `data` names (api.md: `locale` is a soft-reserved key of `data`).
pub fn locale_of(data: &Map<String, Value>) -> Option<&str> {
    data.get("locale").and_then(Value::as_str)
}

/// A shipped text: as written, and parsed once (kept out of the renderer's cache, which the
/// mail's templates use).
struct Shipped {
    source: String,
    parsed: Arc<liquid::Template>,
}

/// Each language's texts by key (`section.name`).
static CATALOGUE: LazyLock<BTreeMap<Lang, BTreeMap<String, Shipped>>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(lang, source)| {
            let table: toml::Table = source.parse().unwrap_or_else(|e| panic!("{}.toml: {e}", lang.code()));
            let mut texts = BTreeMap::new();
            for (section, entries) in table {
                let Some(entries) = entries.as_table() else { continue };
                for (name, text) in entries {
                    if let Some(text) = text.as_str() {
                        let key = format!("{section}.{name}");
                        let parsed = render::parse_alone(text, Mode::Text)
                            .unwrap_or_else(|e| panic!("{}.toml: {key}: {e}", lang.code()));
                        texts.insert(key, Shipped { source: text.to_string(), parsed });
                    }
                }
            }
            (*lang, texts)
        })
        .collect()
});

/// Every key, in order, with its English text: what a project may override.
pub fn keys() -> impl Iterator<Item = (&'static str, &'static str)> {
    CATALOGUE[&Lang::En].iter().map(|(k, v)| (k.as_str(), v.source.as_str()))
}

/// The shipped text of `key` in `lang`.
pub fn shipped(lang: Lang, key: &str) -> Option<&'static str> {
    CATALOGUE.get(&lang)?.get(key).map(|t| t.source.as_str())
}

/// The variables a text may use: the names between `{{ }}` in its English version.
pub fn variables(key: &str) -> Vec<String> {
    shipped(Lang::En, key).map(names_in).unwrap_or_default()
}

/// The variables a shipped text prints (they are plain `{{ name }}`, without filters).
fn names_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else { break };
        names.push(rest[start + 2..start + end].trim().to_string());
        rest = &rest[start + end + 2..];
    }
    names
}

/// The texts of one language for one reader: the project's overrides of that language over the
/// shipped ones.
#[derive(Debug, Clone)]
pub struct Texts {
    lang: Lang,
    overrides: BTreeMap<String, String>,
    /// The name every text may print as `{{ project }}`.
    project: String,
}

impl Texts {
    /// `overrides` maps a language code to `{key: text}` (the project's `texts`).
    pub fn new(lang: Lang, overrides: &Map<String, Value>) -> Self {
        let overrides = overrides
            .get(lang.code())
            .and_then(Value::as_object)
            .map(|texts| {
                texts.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect()
            })
            .unwrap_or_default();
        Texts { lang, overrides, project: String::new() }
    }

    /// The texts with `{{ project }}` naming `project` in every one of them.
    pub fn for_project(self, project: &str) -> Self {
        Texts { project: project.to_string(), ..self }
    }

    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// The text of `key` with no variables.
    pub fn get(&self, key: &str) -> String {
        self.fill(key, &[])
    }

    /// The text of `key` with `vars` (and `project`) filled in, as plain text (escape it where
    /// it lands). An override that does not render falls back to the shipped text.
    pub fn fill(&self, key: &str, vars: &[(&str, &str)]) -> String {
        let mut values: Map<String, Value> = Map::new();
        values.insert("project".into(), Value::String(self.project.clone()));
        for (name, value) in vars {
            values.insert((*name).to_string(), Value::String((*value).to_string()));
        }
        let globals = Globals::new(Node::object(&values));
        // A project's text is parsed where it is used, never cached: a tenant's wording cannot
        // push the mail's templates out of the renderer's cache.
        if let Some(own) = self.overrides.get(key)
            && let Ok(text) =
                render::parse_alone(own, Mode::Text).and_then(|t| render::render_parsed(&t, &globals))
        {
            return text;
        }
        let text = CATALOGUE[&self.lang].get(key).or_else(|| CATALOGUE[&Lang::En].get(key));
        match text {
            Some(text) => {
                render::render_parsed(&text.parsed, &globals).unwrap_or_else(|_| text.source.clone())
            }
            None => key.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_has_every_key_with_the_same_variables_and_each_text_renders() {
        let english: Vec<_> = keys().map(|(k, _)| k.to_string()).collect();
        assert!(english.len() > 50);
        for lang in Lang::ALL {
            let texts: Vec<_> = CATALOGUE[&lang].keys().cloned().collect();
            assert_eq!(texts, english, "{} has other keys than en", lang.code());
            for key in &english {
                let text = shipped(lang, key).unwrap();
                assert!(!text.contains('<'), "{}: {key} has markup", lang.code());
                let (mut own, mut reference) = (names_in(text), variables(key));
                own.sort();
                reference.sort();
                assert_eq!(own, reference, "{}: {key} uses other variables than en", lang.code());
            }
        }
    }

    #[test]
    fn the_reader_gets_the_first_wish_that_names_a_shipped_language() {
        let pick = |chosen, contact, accept, project| Wishes { chosen, contact, accept, project }.pick();
        assert_eq!(pick(None, None, None, None), Lang::En);
        assert_eq!(pick(None, Some("pt-BR"), Some("de"), Some("fr")), Lang::Pt);
        assert_eq!(pick(Some("nl"), Some("pt-BR"), None, None), Lang::Nl);
        assert_eq!(pick(None, Some("de_AT"), None, None), Lang::De);
        assert_eq!(pick(None, Some("klingon!"), Some("ja, fr-CA;q=0.8, de;q=0.9"), None), Lang::De);
        assert_eq!(pick(None, None, Some("de;q=0, es;q=0.1"), None), Lang::Es);
        assert_eq!(pick(None, None, Some("ja, zh"), Some("FR")), Lang::Fr);
        let long = format!("{}, de", "x".repeat(10_000));
        assert_eq!(pick(None, None, Some(&long), None), Lang::En);
        assert_eq!(pick(None, None, Some("é,é,é"), None), Lang::En);
    }

    #[test]
    fn a_project_override_wins_in_its_own_language_and_a_broken_one_falls_back() {
        let overrides = serde_json::json!({
            "de": { "manage.title": "Ihre Post von {{ project }}", "manage.saved": "{% if %}" }
        });
        let overrides = overrides.as_object().unwrap();
        let de = Texts::new(Lang::De, overrides);
        assert_eq!(de.fill("manage.title", &[("project", "Acme")]), "Ihre Post von Acme");
        assert_eq!(de.get("manage.saved"), "Ihre Einstellung ist gespeichert.");
        assert_eq!(Texts::new(Lang::En, overrides).get("manage.title"), "Email preferences");
        assert_eq!(
            de.fill("unsubscribe.done", &[("email", "<a@b.c>"), ("project", "{{ x }}")]),
            "<a@b.c> erhält keine E-Mails mehr von {{ x }}."
        );
    }
}
