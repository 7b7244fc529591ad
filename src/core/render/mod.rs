//! Rendering subjects and bodies: the Liquid language (the `liquid` crate) plus the spec's
//! extras, with limits so a template can never crash, hang or exhaust the server.
//!
//! Extras, rewritten before Liquid parses the text ([`preprocess`]; line numbers are kept):
//! - `{{ name ?? "default" }}`: the default when `name` is missing or null (not when it is empty);
//! - `{{ first name }}`: a name with spaces, read from `data` (`{{ data["first name"] }}` works too);
//! - in HTML bodies ([`Mode::Html`]) every `{{ … }}` is HTML-escaped unless its last filter is
//!   `raw` (or `escape`/`escape_once`, already escaped); text captured with `{% capture x %}` is
//!   escaped as it is captured and printed as it is. Subjects ([`Mode::Text`]) are not escaped.
//!
//! Variables that do not exist render as nothing instead of failing, at any depth
//! (`{{ profile.tier }}` for a contact without a profile).
//!
//! Limits: the source is at most [`MAX_SOURCE_BYTES`]; blocks nest at most [`MAX_NESTING`] deep
//! (counted by Liquid's parser itself, see [`plugins`]) and so do lookups (`a[b[c]]`); loops nest
//! at most [`MAX_LOOP_DEPTH`] deep and run at most [`MAX_LOOP`] times whatever `limit:` says;
//! ranges must be literal (`(1..10)`); strings made by filters and `capture` are at most
//! [`MAX_VALUE_BYTES`], and all of a render's values at most [`budget::RENDER_BYTES`] (sizes that
//! are products of the inputs are computed before the filter runs); the output at most
//! [`MAX_OUTPUT_BYTES`]; and a render stops after [`RENDER_BUDGET`], checked at every filter and
//! loop step. A template is rendered once with no variables when it is first parsed, so
//! one that breaks a limit on its own (loops over a literal list, say) is refused at once.
//! A panic inside Liquid becomes an error instead of taking a thread down.

mod budget;
mod explain;
mod limits;
mod plugins;
mod preprocess;
mod values;

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock, Mutex};

use liquid_core::model::Scalar;
use serde_json::{Map, Value};

pub use limits::{
    MAX_LOOP, MAX_LOOP_DEPTH, MAX_NESTING, MAX_OUTPUT_BYTES, MAX_SOURCE_BYTES, MAX_VALUE_BYTES, Mode,
    RENDER_BUDGET, TemplateError,
};
pub use preprocess::{element_spans, preprocess};
pub use values::{Globals, Node};

use crate::core::error::{Error, FieldError, Result};

// ---------------------------------------------------------------------------------------------
// Parsing (cached) and rendering.

/// Parsed templates keyed by the SHA-256 of their mode and source, with the total source size
/// they stand for. Bounded both by count and by bytes: sources are up to 256 KiB each, so a count
/// alone could hold far more memory than a small VPS should spend on a cache.
struct Cache {
    entries: HashMap<[u8; 32], Arc<liquid::Template>>,
    bytes: usize,
}

static CACHE: LazyLock<Mutex<Cache>> =
    LazyLock::new(|| Mutex::new(Cache { entries: HashMap::new(), bytes: 0 }));
const CACHE_ENTRIES: usize = 512;
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Parses a template (or takes it from the cache). A template enters the cache only after a
/// render with no variables stayed within the limits.
pub fn parse(source: &str, mode: Mode) -> Result<Arc<liquid::Template>, TemplateError> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update([mode as u8]);
    hasher.update(source.as_bytes());
    let key: [u8; 32] = hasher.finalize().into();
    if let Some(template) = CACHE.lock().ok().and_then(|c| c.entries.get(&key).cloned()) {
        return Ok(template);
    }
    let template = parse_alone(source, mode)?;
    if let Ok(mut cache) = CACHE.lock() {
        if cache.entries.len() >= CACHE_ENTRIES || cache.bytes + source.len() > CACHE_BYTES {
            cache.entries.clear();
            cache.bytes = 0;
        }
        if cache.entries.insert(key, template.clone()).is_none() {
            cache.bytes += source.len();
        }
    }
    Ok(template)
}

/// Parses a template with the same checks as [`parse`], without the cache: for texts that keep
/// their own parsed copy (the pages' shipped texts) or are too small to be worth a place in it,
/// so they never push the mail's templates out.
pub fn parse_alone(source: &str, mode: Mode) -> Result<Arc<liquid::Template>, TemplateError> {
    let text = preprocess(source, mode)?;
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        plugins::reset_depth();
        plugins::PARSER.parse(&text)
    }));
    let template = match parsed {
        Ok(Ok(template)) => Arc::new(template),
        Ok(Err(e)) => return Err(explain::parse_error(source, &text, &e)),
        Err(_) => return Err(TemplateError::new(None, "the template could not be parsed")),
    };
    if let Err(e) = render_parsed(&template, &Globals::empty())
        && e.is_limit()
    {
        return Err(e);
    }
    Ok(template)
}

/// 422 for a template field that does not parse or breaks a limit on its own, naming the line.
pub fn check(source: &str, mode: Mode, field: &str) -> Result<()> {
    parse(source, mode).map(|_| ()).map_err(|e| refusal(field, e))
}

/// As [`check`], without the cache (see [`parse_alone`]).
pub fn check_alone(source: &str, mode: Mode, field: &str) -> Result<()> {
    parse_alone(source, mode).map(|_| ()).map_err(|e| refusal(field, e))
}

/// The 422 of a template field that does not parse or breaks a limit, naming its line.
fn refusal(field: &str, e: TemplateError) -> Error {
    let mut item = FieldError::new(field, "invalid_template", format!("{field} does not parse: {e}"));
    if e.is_limit() {
        item = FieldError::new(field, "template_limit", format!("{field} cannot be rendered: {e}"));
    }
    if let Some(place) = e.place() {
        item = item.received(place);
    }
    Error::Invalid(vec![item])
}

/// Renders a template with the given variables.
pub fn render(source: &str, mode: Mode, variables: &Globals) -> Result<String, TemplateError> {
    render_parsed(parse(source, mode)?.as_ref(), variables)
}

/// Renders a parsed template with the given variables, within the output and time limits.
pub fn render_parsed(template: &liquid::Template, variables: &Globals) -> Result<String, TemplateError> {
    let mut out = plugins::Limited::new(MAX_OUTPUT_BYTES);
    let rendered = catch_unwind(AssertUnwindSafe(|| template.render_to(&mut out, variables)));
    let first_line = |e: &liquid::Error| e.to_string().lines().next().unwrap_or("render failed").to_string();
    match rendered {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(TemplateError::new(None, first_line(&e))),
        Err(_) => return Err(TemplateError::new(None, "the template could not be rendered")),
    }
    String::from_utf8(out.buffer).map_err(|_| TemplateError::new(None, "output is not UTF-8"))
}

/// The variables a message for a contact sees: its custom fields at the top level and under
/// `data`, this request's values on top, `email`, `id`, and the generated links.
pub fn scope(data: &Map<String, Value>, email: &str, id: &str, links: &[(&str, String)]) -> Globals {
    let mut top = Node::object(data);
    if let Node::Object(map) = &mut top {
        map.insert("data".into(), Node::object(data));
        map.insert("email".into(), Node::Scalar(Scalar::new(email.to_string())));
        map.insert("id".into(), Node::Scalar(Scalar::new(id.to_string())));
        for (name, url) in links {
            map.insert((*name).to_string(), Node::Scalar(Scalar::new(url.clone())));
        }
    }
    Globals::new(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(source: &str, data: Value) -> String {
        let data = data.as_object().unwrap().clone();
        render(
            source,
            Mode::Text,
            &scope(&data, "ada@example.com", "c1", &[("unsubscribeUrl", "https://x/u".into())]),
        )
        .unwrap()
    }

    #[test]
    fn variables_paths_and_scope() {
        let data = json!({ "name": "Ada", "profile": { "tier": "gold" }, "first name": "Ada L", "n": 3 });
        assert_eq!(run("Hi {{ name }}!", data.clone()), "Hi Ada!");
        assert_eq!(run("{{profile.tier}}", data.clone()), "gold");
        assert_eq!(
            run("{{ data.name }} {{ email }} {{ id }} {{ unsubscribeUrl }}", data.clone()),
            "Ada ada@example.com c1 https://x/u"
        );
        assert_eq!(run("{{ first name }}|{{ data[\"first name\"] }}", data.clone()), "Ada L|Ada L");
        assert_eq!(run("[{{ missing }}][{{ profile.nope }}][{{ nope.deeper.still }}]", data), "[][][]");
    }

    #[test]
    fn defaults_apply_to_missing_and_null_only() {
        let data = json!({ "name": "Ada", "empty": "", "nothing": null });
        assert_eq!(run("{{ name ?? \"friend\" }}", data.clone()), "Ada");
        assert_eq!(run("{{ missing ?? \"friend\" }}", data.clone()), "friend");
        assert_eq!(run("{{ nothing ?? 'friend' }}", data.clone()), "friend");
        assert_eq!(run("[{{ empty ?? \"friend\" }}]", data.clone()), "[]");
        assert_eq!(run("{{ missing ?? \"friend\" | upcase }}", data.clone()), "FRIEND");
        assert_eq!(run("{{ first name ?? \"you\" }}", data), "you");
    }

    #[test]
    fn conditionals_loops_and_filters() {
        let data =
            json!({ "plan": "pro", "n": 3, "items": [{ "name": "a", "qty": 2 }, { "name": "b", "qty": 1 }] });
        assert_eq!(run("{% if plan == \"pro\" and n > 2 %}yes{% else %}no{% endif %}", data.clone()), "yes");
        assert_eq!(
            run("{% for i in items %}{{ i.name }}x{{ i.qty }};{% endfor %}", data.clone()),
            "ax2;bx1;"
        );
        assert_eq!(
            run(
                "{{ plan | upcase | append: \"!\" }} {{ n | plus: 2 }} {{ \"a,b\" | split: \",\" | join: \"-\" }}",
                data.clone()
            ),
            "PRO! 5 a-b"
        );
        assert_eq!(run("{% for i in (1..3) %}{{ i }}{% endfor %}", data.clone()), "123");
        assert_eq!(run("{% unless missing %}none{% endunless %}", data.clone()), "none");
        assert_eq!(run("{% capture x %}{{ plan }}-{{ n }}{% endcapture %}{{ x }}", data.clone()), "pro-3");
        assert_eq!(run("{% raw %}{{ not a var }}{% endraw %}", data), "{{ not a var }}");
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert!(parse("line one\nline two {{ name\n", Mode::Text).is_err());
        let e = parse("a\nb\n{% if x %}unclosed", Mode::Html).err().expect("an unclosed if does not parse");
        assert!(!e.message.is_empty());
        let e = check("ok\n{% nosuchtag %}", Mode::Html, "body").unwrap_err();
        assert_eq!(
            (e.kind(), e.fields()[0].field.as_str(), e.fields()[0].code.as_str()),
            ("invalid", "body", "invalid_template")
        );
        assert!(e.fields()[0].message.contains("line 2"), "{}", e.fields()[0].message);
    }

    #[test]
    fn limits_hold() {
        assert!(preprocess(&"x".repeat(MAX_SOURCE_BYTES + 1), Mode::Text).is_err());
        let rejects = |source: &str| parse(source, Mode::Html).is_err();
        assert!(rejects("{% for i in (1..1000000000) %}{% endfor %}"), "huge ranges are refused");
        assert!(rejects("{% for i in (1..n) %}{% endfor %}"), "ranges must be literal");
        assert!(rejects(
            "{% for a in x %}{% for b in y %}{% for c in z %}{% endfor %}{% endfor %}{% endfor %}"
        ));
        // Loops stop after MAX_LOOP items.
        let many: Vec<i64> = (0..5000).collect();
        let out = run("{% for i in many %}.{% endfor %}", json!({ "many": many }));
        assert_eq!(out.len(), MAX_LOOP as usize);
        // Doubling a string fails instead of eating memory.
        let doubling = "{% assign s = \"xxxxxxxxxxxxxxxx\" %}{% for i in (1..100) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}";
        let data = json!({}).as_object().unwrap().clone();
        assert!(render(doubling, Mode::Text, &scope(&data, "a@b.co", "1", &[])).is_err());
        let capture = "{% assign s = \"xxxxxxxxxxxxxxxx\" %}{% for i in (1..100) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}";
        assert!(render(capture, Mode::Html, &scope(&data, "a@b.co", "1", &[])).is_err());
        // Output is bounded.
        let big = "x".repeat(200_000);
        let out = render(
            "{% for i in (1..100) %}{{ big }}{% endfor %}",
            Mode::Html,
            &scope(json!({ "big": big }).as_object().unwrap(), "a@b.co", "1", &[]),
        );
        assert!(out.is_err());
    }

    fn html(source: &str, data: Value) -> Result<String, TemplateError> {
        render(source, Mode::Html, &scope(data.as_object().unwrap(), "a@b.co", "c1", &[]))
    }

    #[test]
    fn html_bodies_escape_variables_unless_raw() {
        let data = json!({ "name": "<a href=\"https://evil\">Reset</a> & co", "safe": "<b>ok</b>" });
        let out = html("<p>Hi {{ name }}</p>{{ safe | raw }}", data.clone()).unwrap();
        assert_eq!(out, "<p>Hi &lt;a href=&quot;https://evil&quot;&gt;Reset&lt;/a&gt; &amp; co</p><b>ok</b>");
        // Captured text is escaped once, as it is captured.
        let out = html("{% capture c %}<i>{{ name }}</i>{% endcapture %}{{ c }}", data.clone()).unwrap();
        assert!(out.starts_with("<i>&lt;a href") && !out.contains("&amp;lt;"), "{out}");
        // Subjects are plain text.
        assert_eq!(run("{{ safe }}", data), "<b>ok</b>");
    }

    #[test]
    fn deep_nesting_is_refused_without_harm() {
        // Each of these took the process down (stack overflow) or panicked inside the parser.
        let deep = |open: &str, close: &str, n: usize| format!("{}x{}", open.repeat(n), close.repeat(n));
        // As deep as fits in the size limit.
        let deepest =
            |open: &str, close: &str| deep(open, close, MAX_SOURCE_BYTES / (open.len() + close.len()) - 1);
        let cases = [
            deep("{% if a %}", "{% endif %}", 12_000),
            deepest("{%if a%}", "{%endif%}"),
            deepest("{% unless a %}", "{% endunless %}"),
            deepest("{% case a %}{% when 1 %}", "{% endcase %}"),
            deepest("{% comment %}", "{% endcomment %}"),
            deepest("{% capture a %}", "{% endcapture %}"),
            deepest("{% ifchanged %}", "{% endifchanged %}"),
            format!("{{% comment %}}{}x{{% endcomment %}}", "{{ {%if a%}".repeat(20_000)),
            format!(
                "{{% comment %}}{{{{ {{% endcomment %}}{} }}}}{{% endcomment %}}",
                "{% if a %}".repeat(12_000)
            ),
            format!("{{{{ {}a{} }}}}", "a[".repeat(3000), "]".repeat(3000)),
            format!("{{% if {}a{} %}}x{{% endif %}}", "a[".repeat(3000), "]".repeat(3000)),
            deep("{% if a %}", "{% endif %}", 33),
        ];
        for source in &cases {
            for mode in [Mode::Text, Mode::Html] {
                let result = catch_unwind(|| parse(source, mode).map(|_| ()));
                assert!(result.is_ok(), "parse panicked on {}", &source[..40]);
            }
        }
        for source in [&cases[0], &cases[11]] {
            let e = parse(source, Mode::Html).err().expect("refused");
            assert!(e.message.contains("nest at most 32"), "{}", e.message);
        }
        assert!(parse(&deep("{% if a %}", "{% endif %}", 32), Mode::Html).is_ok(), "32 levels are fine");
    }

    #[test]
    fn loops_are_capped_whatever_limit_says() {
        // A literal limit is clamped...
        let many: Vec<i64> = (0..5000).collect();
        let out = run("{% for i in many limit: 999999 %}.{% endfor %}", json!({ "many": many.clone() }));
        assert_eq!(out.len(), MAX_LOOP as usize);
        // ...and one taken from the data stops the render.
        let e = html("{% for i in many limit: n %}.{% endfor %}", json!({ "many": many, "n": 5000 }))
            .unwrap_err();
        assert!(e.is_limit() && e.message.contains("at most 1000 times"), "{e}");
    }

    #[test]
    fn a_render_has_a_time_budget() {
        // Loops over a literal list: refused when first parsed, since they run without any data.
        let list = (0..1000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        let pair = "{% for a in xs %}{% for b in xs %}{% endfor %}{% endfor %}";
        let source = format!("{{% assign xs = \"{list}\" | split: \",\" %}}{}", pair.repeat(50));
        let started = std::time::Instant::now();
        let e = check(&source, Mode::Html, "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "template_limit", "{:?}", e.fields());
        assert!(started.elapsed() < RENDER_BUDGET * 10, "stopped near the budget: {:?}", started.elapsed());
        // Loops over the contact's data: parse fine, and the render stops at the budget.
        let source = pair.repeat(50);
        assert!(parse(&source, Mode::Html).is_ok());
        let xs: Vec<i64> = (0..1000).collect();
        let e = html(&source, json!({ "xs": xs })).unwrap_err();
        assert!(e.is_limit() && e.message.contains("longer than 1000 ms"), "{e}");
    }

    // Parse errors told the author's way (explain.rs).

    fn fails(source: &str) -> TemplateError {
        parse(source, Mode::Html).err().expect("does not parse")
    }

    #[test]
    fn an_unknown_tag_is_placed_and_a_near_one_suggested() {
        let e = fails("<p>Hello</p>\n<p>{{ name }} {% iff plan %}pro{% endif %}</p>");
        assert_eq!((e.line, e.column), (Some(2), Some(15)), "{e:?}");
        assert_eq!(e.text.as_deref(), Some("{% iff plan %}"));
        assert_eq!(e.message, "`iff` is not a tag");
        assert_eq!(e.hint.as_deref(), Some("Did you mean `{% if %}`?"));
        assert!(e.to_string().starts_with("line 2, column 15: `iff` is not a tag"), "{e}");
    }

    #[test]
    fn a_stray_end_tag_an_unclosed_block_and_a_bad_filter() {
        let e = fails("x {% endif %}");
        assert_eq!(e.hint.as_deref(), Some("It closes nothing: there is no open `{% if %}` before it."));
        let e = fails("a\n{% if plan %}pro");
        assert_eq!(e.line, Some(2));
        assert!(e.hint.as_deref().unwrap().contains("{% endif %}"), "{e:?}");
        let e = fails("<p>\n<p>{% iff plan %}pro{% endif %}</p>");
        assert_eq!((e.line, e.column), (Some(2), Some(4)), "an unrewritten line: the element's start");
        let e = fails("<p>\n  {{ name | upcasee }}</p>");
        assert_eq!((e.line, e.column, e.text.as_deref()), (Some(2), Some(3), Some("{{ name | upcasee }}")));
        assert_eq!(e.hint.as_deref(), Some("Did you mean `upcase`?"));
        let e = fails("{% if plan = \"pro\" %}x{% endif %}");
        assert!(e.hint.as_deref().unwrap().contains("=="), "{e:?}");
    }
}
