//! The text Liquid parses: the spec's extras rewritten, loops capped, HTML escaping added, and
//! expressions checked before Liquid sees them. Line numbers are kept (nothing inserted holds a
//! newline), so Liquid's errors point at the author's lines.
//!
//! Elements (`{{ … }}` and `{% … %}`) end at the first closing marker outside a quoted string, as
//! in Liquid's own grammar, and a `{% raw %}` block ends at the first `{% endraw %}` tag, so the
//! outputs rewritten here are exactly the ones Liquid will print.

use std::collections::HashSet;

use super::limits::{MAX_LOOP, MAX_NESTING, MAX_SOURCE_BYTES, Mode, TemplateError};

/// Line numbers of offsets met in increasing order, counted as the scan moves on (counting from
/// the start each time made a large template quadratic).
struct Lines<'a> {
    source: &'a str,
    offset: usize,
    line: usize,
}

impl Lines<'_> {
    fn at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.source.len());
        if offset > self.offset {
            self.line += memchr::memchr_iter(b'\n', &self.source.as_bytes()[self.offset..offset]).count();
            self.offset = offset;
        }
        self.line
    }
}

/// Positions of `needle` in `text` outside single or double quotes.
fn outside_quotes(text: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut quote: Option<u8> = None;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if bytes[i..].starts_with(needle.as_bytes()) => {
                found.push(i);
                i += needle.len();
                continue;
            }
            None => {}
        }
        i += 1;
    }
    found
}

/// One `{{ … }}` or `{% … %}` in the source: byte offsets of its start and of the end of its
/// closing marker, and the text between the markers.
struct Element<'a> {
    start: usize,
    end: usize,
    is_tag: bool,
    inner: &'a str,
}

impl Element<'_> {
    /// The tag's name (`if`, `endfor`, ...), or "" for an output.
    fn keyword(&self) -> &str {
        if !self.is_tag {
            return "";
        }
        self.inner.trim_start_matches('-').split_whitespace().next().unwrap_or("").trim_end_matches('-')
    }
}

/// The next element at or after `from`, or None when there is none (or it is never closed).
fn next_element(source: &str, from: usize) -> Option<Element<'_>> {
    // One pass for the first `{{` or `{%` (searching for each separately rescans to the end
    // every time the other comes first).
    let bytes = source.as_bytes();
    let (start, is_tag) =
        memchr::memchr_iter(b'{', &bytes[from..]).find_map(|i| match bytes.get(from + i + 1) {
            Some(b'{') => Some((from + i, false)),
            Some(b'%') => Some((from + i, true)),
            _ => None,
        })?;
    let close = if is_tag { "%}" } else { "}}" };
    let body = start + 2;
    // A quote that is never closed is not a string to Liquid either: fall back to the plain search.
    let end = find_close(&source[body..], close).or_else(|| source[body..].find(close)).map(|e| body + e)?;
    Some(Element { start, end: end + 2, is_tag, inner: &source[body..end] })
}

/// The byte spans of every `{{ … }}` and `{% … %}` in `source`, in order, each from its opening
/// marker to the end of its closing one (an element never closed is not one).
pub fn element_spans(source: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(element) = next_element(source, at) {
        spans.push((element.start, element.end));
        at = element.end;
    }
    spans
}

/// The first `close` in `text` outside a quoted string, if every quote before it is closed.
fn find_close(text: &str, close: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'"' | b'\'') => i += 1 + memchr::memchr(q, &bytes[i + 1..])? + 1,
            _ if bytes[i..].starts_with(close.as_bytes()) => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The block tags (each has an `end…` tag).
const BLOCKS: &[&str] =
    &["if", "unless", "case", "for", "tablerow", "capture", "comment", "ifchanged", "raw"];

/// Names assigned by `{% capture name %}`: in HTML mode their text was escaped as it was
/// captured, so printing them does not escape it twice.
fn captured_names(source: &str) -> HashSet<String> {
    let mut names = HashSet::new();
    let mut at = 0;
    while let Some(element) = next_element(source, at) {
        if element.keyword() == "capture"
            && let Some(name) = element.inner.trim_matches('-').split_whitespace().nth(1)
        {
            names.insert(name.to_string());
        }
        at = element.end;
    }
    names
}

/// Applies the extras, caps loops and (in HTML mode) escapes outputs; returns the text Liquid
/// parses.
pub fn preprocess(source: &str, mode: Mode) -> Result<String, TemplateError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(TemplateError::new(
            None,
            format!("the template is larger than {MAX_SOURCE_BYTES} bytes"),
        ));
    }
    let captured = match mode {
        Mode::Html => captured_names(source),
        Mode::Text => HashSet::new(),
    };
    let mut out = String::with_capacity(source.len() + 64);
    let mut copied = 0;
    let mut in_raw = false;
    // A first count of block depth, so a deep template is refused before Liquid spends time on
    // it; Liquid's parser counts again, exactly (see `plugins::Counted`).
    let mut depth = 0usize;
    let mut lines = Lines { source, offset: 0, line: 1 };
    let mut at = 0;
    while let Some(element) = next_element(source, at) {
        at = element.end;
        let keyword = element.keyword();
        if in_raw {
            in_raw = keyword != "endraw";
            continue;
        }
        let line = lines.at(element.start);
        check_brackets(element.inner, line)?;
        if BLOCKS.contains(&keyword) {
            depth += 1;
            if depth > MAX_NESTING {
                return Err(TemplateError::new(
                    Some(line),
                    format!("blocks may nest at most {MAX_NESTING} deep"),
                ));
            }
        } else if keyword.strip_prefix("end").is_some_and(|block| BLOCKS.contains(&block)) {
            depth = depth.saturating_sub(1);
        }
        let replacement = match keyword {
            "raw" => {
                in_raw = true;
                continue;
            }
            "for" | "tablerow" => {
                check_range(element.inner, line)?;
                let counter = if keyword == "for" { "forloop" } else { "tablerowloop" };
                let trimmed = element.inner.ends_with('-');
                let tick = if trimmed {
                    format!("{{%- tidings_tick {counter} -%}}")
                } else {
                    format!("{{% tidings_tick {counter} %}}")
                };
                let tag = element.inner.strip_suffix('-').unwrap_or(element.inner);
                format!("{{%{}{}%}}{tick}", cap_limit(tag), if trimmed { "-" } else { "" })
            }
            "" => {
                let (lead, body, trail) = split_trim_markers(element.inner);
                let mut expr = rewrite_output(body);
                if mode == Mode::Html {
                    expr = escape_output(&expr, &captured);
                }
                format!("{{{{{lead}{expr}{trail}}}}}")
            }
            _ => continue,
        };
        out.push_str(&source[copied..element.start]);
        out.push_str(&replacement);
        copied = element.end;
    }
    out.push_str(&source[copied..]);
    Ok(out)
}

fn split_trim_markers(inner: &str) -> (&str, &str, &str) {
    let lead = if inner.starts_with('-') { "-" } else { "" };
    let trail = if inner.ends_with('-') && inner.len() > lead.len() { "-" } else { "" };
    (lead, &inner[lead.len()..inner.len() - trail.len()], trail)
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Rewrites one `{{ ... }}` expression: `??` and names with spaces.
fn rewrite_output(expr: &str) -> String {
    let mut expr = expr.to_string();
    if let Some(&at) = outside_quotes(&expr, "??").first() {
        expr = format!("{} | fallback:{}", &expr[..at].trim_end(), &expr[at + 2..]);
    }
    // A leading name made of several words: `first name` (before any filter).
    let cut = outside_quotes(&expr, "|").first().copied().unwrap_or(expr.len());
    let head = expr[..cut].trim();
    let words: Vec<&str> = head.split_whitespace().collect();
    if words.len() > 1
        && words.iter().all(|w| w.chars().all(is_name_char))
        && !words.iter().any(|w| w.chars().all(|c| c.is_ascii_digit()))
    {
        let name = words.join(" ");
        expr = format!(" data[\"{name}\"] {}", &expr[cut..]);
    }
    expr
}

/// In HTML: `x` → `x | escape`, unless the last filter is `raw` (dropped), `escape` or
/// `escape_once`, or `x` is a name a `capture` block set.
fn escape_output(expr: &str, captured: &HashSet<String>) -> String {
    let pipes = outside_quotes(expr, "|");
    let Some(&last) = pipes.last() else {
        if captured.contains(expr.trim()) {
            return expr.to_string();
        }
        return format!("{} | escape ", expr.trim_end());
    };
    let filter = expr[last + 1..].trim_start();
    let name = filter.split(|c: char| c == ':' || c.is_whitespace()).next().unwrap_or("");
    match name {
        "raw" => format!("{} ", expr[..last].trim_end()),
        "escape" | "escape_once" => expr.to_string(),
        _ => format!("{} | escape ", expr.trim_end()),
    }
}

/// A literal `limit:` above the loop cap becomes the cap; a loop without one gets the cap. (A
/// `limit:` given as a variable is held to the cap by the loop tick while the loop runs.)
fn cap_limit(tag: &str) -> String {
    let Some(&at) = outside_quotes(tag, "limit").iter().find(|&&at| {
        let before = tag[..at].chars().next_back();
        let after = tag[at + 5..].trim_start();
        before.is_some_and(|c| !is_name_char(c)) && after.starts_with(':')
    }) else {
        return format!("{} limit: {MAX_LOOP} ", tag.trim_end());
    };
    let colon = at + 5 + tag[at + 5..].find(':').unwrap_or(0);
    let value_start = colon + 1 + (tag[colon + 1..].len() - tag[colon + 1..].trim_start().len());
    let value_len =
        tag[value_start..].find(|c: char| c.is_whitespace() || c == ',').unwrap_or(tag.len() - value_start);
    match tag[value_start..value_start + value_len].parse::<i64>() {
        Ok(n) if n > i64::from(MAX_LOOP) => {
            format!("{}{MAX_LOOP}{}", &tag[..value_start], &tag[value_start + value_len..])
        }
        _ => tag.to_string(),
    }
}

/// A range in a loop must be literal and short: `(1..10)`.
fn check_range(tag: &str, line: usize) -> Result<(), TemplateError> {
    let Some(open) = tag.find('(') else { return Ok(()) };
    let Some(close) = tag[open..].find(')') else { return Ok(()) };
    let range = &tag[open + 1..open + close];
    let Some((a, b)) = range.split_once("..") else { return Ok(()) };
    let (Ok(a), Ok(b)) = (a.trim().parse::<i64>(), b.trim().parse::<i64>()) else {
        return Err(TemplateError::new(Some(line), "loop ranges must be written with numbers, like (1..10)"));
    };
    if b.saturating_sub(a) >= i64::from(MAX_LOOP) {
        return Err(TemplateError::new(
            Some(line),
            format!("a loop range may have at most {MAX_LOOP} steps"),
        ));
    }
    Ok(())
}

/// Lookups nest at most MAX_NESTING deep (`a[b[c]]`): Liquid's grammar recurses per level.
fn check_brackets(inner: &str, line: usize) -> Result<(), TemplateError> {
    let mut depth = 0usize;
    let mut quote = None;
    for c in inner.bytes() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(c),
            (None, b'[') => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(TemplateError::new(
                        Some(line),
                        format!("lookups like a[b] may nest at most {MAX_NESTING} deep"),
                    ));
                }
            }
            (None, b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(source: &str) -> String {
        preprocess(source, Mode::Html).unwrap()
    }

    #[test]
    fn outputs_are_escaped_in_html_only() {
        assert_eq!(html("<b>{{ name }}</b>"), "<b>{{ name | escape }}</b>");
        assert_eq!(preprocess("{{ name }}", Mode::Text).unwrap(), "{{ name }}");
        assert_eq!(html("{{ name | raw }}"), "{{ name }}");
        assert_eq!(html("{{- name | upcase -}}"), "{{- name | upcase | escape -}}");
        assert_eq!(html("{{ name | escape }}"), "{{ name | escape }}");
        assert_eq!(html("{{ x | append: \"|raw\" }}"), "{{ x | append: \"|raw\" | escape }}");
        assert_eq!(html("{{ n ?? \"a\" }}"), "{{ n | fallback: \"a\" | escape }}");
        assert_eq!(
            html("{% capture c %}<i>{{ n }}</i>{% endcapture %}{{ c }}"),
            "{% capture c %}<i>{{ n | escape }}</i>{% endcapture %}{{ c }}"
        );
        // Inside raw nothing is touched, and raw ends at the endraw tag, not at the word.
        assert_eq!(
            html("{% raw %}endraw {{ a }}{% endraw %}{{ b }}"),
            "{% raw %}endraw {{ a }}{% endraw %}{{ b | escape }}"
        );
        // A closing marker inside a string does not end the element.
        assert_eq!(html("{{ \"}}\" | append: x }}"), "{{ \"}}\" | append: x | escape }}");
    }

    #[test]
    fn loops_are_capped_and_ticked() {
        let text = |s: &str| preprocess(s, Mode::Text).unwrap();
        assert_eq!(
            text("{% for a in xs %}x{% endfor %}"),
            "{% for a in xs limit: 1000 %}{% tidings_tick forloop %}x{% endfor %}"
        );
        assert_eq!(
            text("{%- for a in xs limit:999999 -%} x"),
            "{%- for a in xs limit:1000 -%}{%- tidings_tick forloop -%} x"
        );
        assert_eq!(
            text("{% for a in xs limit: 5 %}"),
            "{% for a in xs limit: 5 %}{% tidings_tick forloop %}"
        );
        assert_eq!(
            text("{% tablerow a in xs limit: n cols:2 %}"),
            "{% tablerow a in xs limit: n cols:2 %}{% tidings_tick tablerowloop %}"
        );
    }

    #[test]
    fn deep_lookups_are_refused() {
        let deep = format!("{{{{ {}a{} }}}}", "a[".repeat(40), "]".repeat(40));
        assert!(preprocess(&deep, Mode::Text).is_err());
        let fine = format!("{{{{ {}a{} }}}}", "a[".repeat(5), "]".repeat(5));
        assert!(preprocess(&fine, Mode::Text).is_ok());
    }
}
