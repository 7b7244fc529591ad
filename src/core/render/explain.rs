//! A Liquid parse error told the way an author can act on it: the line and column in the
//! author's own text (not in the text the preprocessor rewrote), the `{{ … }}` or `{% … %}` at
//! fault, what is wrong in a sentence, and a hint (the tag or filter they probably meant).
//!
//! The `liquid` crate reports `--> line:column` in the text it parsed, then `= what`, then
//! `with:` lines naming what it was asked for (`requested=iff`) and what exists. The
//! preprocessor keeps lines but rewrites inside elements, so a column is moved back to the
//! author's element by its rank on the line.

use super::limits::TemplateError;
use super::preprocess::element_spans;

/// Explains `error`, raised while parsing `parsed` (the preprocessed form of `source`).
pub(super) fn parse_error(source: &str, parsed: &str, error: &liquid::Error) -> TemplateError {
    let report = error.to_string();
    let what = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("= "))
        .or_else(|| report.lines().next().map(|l| l.trim().trim_start_matches("liquid:").trim()))
        .unwrap_or("the template does not parse")
        .trim_end_matches('.')
        .to_string();
    let requested =
        |key: &str| report.lines().find_map(|l| l.trim().strip_prefix(key)).map(|v| v.trim().to_string());
    let available = |key: &str| requested(key).map(|v| v.split(", ").map(str::to_string).collect::<Vec<_>>());

    let mut place = position(&report).and_then(|(line, column)| locate(source, parsed, line, column));
    let (message, hint) = if let Some(tag) = requested("requested=") {
        let mut names = available("available tags=").unwrap_or_default();
        names.extend(available("available blocks=").unwrap_or_default());
        (format!("`{tag}` is not a tag"), Some(tag_hint(&tag, &names)))
    } else if let Some(filter) = requested("requested filter=") {
        // Liquid names no position for a filter: the first element that uses it is the place.
        place = place.or_else(|| find_filter(source, &filter));
        let names = available("available filters=").unwrap_or_default();
        let hint = closest(&filter, &names).map_or_else(
            || {
                "Filters are written `{{ value | filter }}`; see the Liquid reference for the list."
                    .to_string()
            },
            |near| format!("Did you mean `{near}`?"),
        );
        (format!("`{filter}` is not a filter"), Some(hint))
    } else {
        let hint = general_hint(&what, place.as_ref().map(|p| p.text.as_str()).unwrap_or(""));
        (lowercase_first(&what), hint)
    };
    let (line, column, text) = match place {
        Some(p) => (Some(p.line), Some(p.column), Some(p.text)),
        None => (None, None, None),
    };
    TemplateError { line, column, text, message, hint }
}

/// A place in the author's text.
struct Place {
    line: usize,
    column: usize,
    text: String,
}

/// `line:column` from liquid's `--> 2:6`.
fn position(report: &str) -> Option<(usize, usize)> {
    let rest = report.split("-->").nth(1)?.trim_start();
    let mut numbers = rest.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty());
    Some((numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?))
}

/// The author's place for `column` of `line` in the parsed text: the start of the element there
/// (found by its rank on the line, which the preprocessor keeps), else the same column.
fn locate(source: &str, parsed: &str, line: usize, column: usize) -> Option<Place> {
    let own = source.lines().nth(line.checked_sub(1)?).or(if line == 1 { Some("") } else { None })?;
    let rewritten = parsed.lines().nth(line - 1).unwrap_or("");
    let byte = rewritten.char_indices().nth(column.saturating_sub(1)).map_or(rewritten.len(), |(i, _)| i);
    let ours = element_spans(own);
    let theirs = element_spans(rewritten);
    let element = theirs.iter().rposition(|&(start, _)| start <= byte).and_then(|k| ours.get(k).copied());
    let (own_byte, text) = match element {
        _ if own == rewritten => match ours.iter().find(|&&(s, e)| s <= byte && byte < e) {
            Some(&(start, end)) => (start, own[start..end].to_string()),
            None => (byte.min(own.len()), excerpt(own)),
        },
        Some((start, end)) => (start, own[start..end].to_string()),
        None => (byte.min(own.len()), excerpt(own)),
    };
    let own_byte = (0..=own_byte).rev().find(|&i| own.is_char_boundary(i)).unwrap_or(0);
    Some(Place { line, column: own[..own_byte].chars().count() + 1, text: shorten(&text) })
}

/// The first element of `source` that pipes into `filter`.
fn find_filter(source: &str, filter: &str) -> Option<Place> {
    element_spans(source).into_iter().find_map(|(start, end)| {
        let element = &source[start..end];
        let uses = element.split('|').skip(1).any(|part| part.trim_start().starts_with(filter));
        uses.then(|| {
            let line = source[..start].matches('\n').count() + 1;
            let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
            Place { line, column: source[line_start..start].chars().count() + 1, text: shorten(element) }
        })
    })
}

fn excerpt(line: &str) -> String {
    line.trim().to_string()
}

/// At most 80 characters of `text`, with an ellipsis when cut.
fn shorten(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= 80 {
        return text.to_string();
    }
    format!("{}…", text.chars().take(79).collect::<String>())
}

/// The nearest of `names` to `wanted`, when it is near enough to be a typo.
fn closest<'a>(wanted: &str, names: &'a [String]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(wanted, n), n.as_str()))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn tag_hint(tag: &str, names: &[String]) -> String {
    if let Some(opened) = tag.strip_prefix("end")
        && names.iter().any(|n| n == opened)
    {
        return format!("It closes nothing: there is no open `{{% {opened} %}}` before it.");
    }
    match closest(tag, names) {
        Some(near) => format!("Did you mean `{{% {near} %}}`?"),
        None => "To print a value write `{{ value }}`; tags are `if`, `unless`, `case`, `for`, `assign`, `capture`, `raw` and `comment`.".to_string(),
    }
}

/// A hint for the errors the grammar raises, from their wording.
fn general_hint(what: &str, text: &str) -> Option<String> {
    let what = what.to_lowercase();
    if let Some(close) = what.split("{% ").nth(1).and_then(|r| r.split(" %}").next())
        && what.contains("unclosed")
    {
        return Some(format!("Add `{{% {close} %}}` where the block ends."));
    }
    if text.starts_with("{{") && !text.contains("}}")
        || what.contains("expected literal") && !text.ends_with("}}")
    {
        return Some("Close the output with `}}`.".to_string());
    }
    if what.contains("\"and\" or \"or\"") {
        return Some("Compare with `==` (not `=`) and join conditions with `and` or `or`.".to_string());
    }
    if what.contains("identifier expected") {
        return Some("A loop names its item and its list: `{% for item in items %}`.".to_string());
    }
    if what.contains("expected literal") || what.contains("expected value") {
        return Some(
            "An output holds one value and its filters: `{{ name | upcase }}`; for a name with spaces write `{{ data[\"first name\"] }}`."
                .to_string(),
        );
    }
    None
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
