//! One budget for a whole render, checked by every filter and `capture`: each value is at most
//! [`MAX_VALUE_BYTES`], all the values a render makes add up to at most [`RENDER_BYTES`], and a
//! render stops after [`RENDER_BUDGET`]. Filters whose output can be a product of their inputs'
//! sizes (`replace`, `join`, `split`, ...) have that size computed from the inputs *before* they
//! run, so a value of a gigabyte is never built to be measured; every other filter's output is
//! linear in its inputs and measured after. Every filter of the parser is registered through
//! [`budgeted`], so a new one meets the same checks.

use std::fmt;
use std::time::Instant;

use liquid_core::model::{Value as LiquidValue, ValueView};
use liquid_core::parser::{FilterArguments, FilterReflection, ParseFilter};
use liquid_core::runtime::Runtime;
use liquid_core::{Expression, Filter};

use super::{LIMIT, MAX_VALUE_BYTES, RENDER_BUDGET};

/// The most all of a render's filter results and captures may add up to.
pub const RENDER_BYTES: usize = 32 * 1024 * 1024;
/// What an element of an array or object costs beyond its own text (the value's slot).
const ELEMENT_BYTES: usize = 32;

/// What a render has spent, kept in the runtime's registers (one set per render).
#[derive(Default)]
pub(super) struct Spent {
    started: Option<Instant>,
    bytes: usize,
}

fn limit(message: impl fmt::Display) -> liquid_core::Error {
    liquid_core::Error::with_msg(format!("{LIMIT}: {message}"))
}

/// Checks the render's clock, starting it on the first check.
pub(super) fn check_time(runtime: &dyn Runtime) -> liquid_core::Result<()> {
    let mut spent = runtime.registers().get_mut::<Spent>();
    let started = *spent.started.get_or_insert_with(Instant::now);
    if started.elapsed() > RENDER_BUDGET {
        return Err(limit(format!(
            "the template took longer than {} ms to render",
            RENDER_BUDGET.as_millis()
        )));
    }
    Ok(())
}

/// Counts `bytes` more made by the render: a value over [`MAX_VALUE_BYTES`], or a render over
/// [`RENDER_BYTES`] in all, is an error (before the value is made, when the size is known
/// before).
pub(super) fn spend(runtime: &dyn Runtime, bytes: usize) -> liquid_core::Result<()> {
    if bytes > MAX_VALUE_BYTES {
        return Err(limit(format!("a value grew past {MAX_VALUE_BYTES} bytes")));
    }
    let mut spent = runtime.registers().get_mut::<Spent>();
    spent.bytes = spent.bytes.saturating_add(bytes);
    if spent.bytes > RENDER_BYTES {
        return Err(limit(format!("the template made more than {RENDER_BYTES} bytes of values")));
    }
    Ok(())
}

/// What a value holds, in bytes: its text, and a slot for each element of an array or object
/// (walked with a stack, so no nesting reaches the thread's own).
pub fn size_of(value: &dyn ValueView) -> usize {
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        if let Some(array) = v.as_array() {
            total = total.saturating_add(ELEMENT_BYTES.saturating_mul(array.size().max(0) as usize));
            stack.extend(array.values());
        } else if let Some(object) = v.as_object() {
            for (key, item) in object.iter() {
                total = total.saturating_add(ELEMENT_BYTES + key.len());
                stack.push(item);
            }
        } else if let Some(scalar) = v.as_scalar() {
            total = total.saturating_add(scalar.to_kstr().len());
        }
    }
    total
}

/// The text of a scalar argument (empty for nil), as a filter reads it.
fn text(value: &dyn ValueView) -> String {
    if value.is_nil() { String::new() } else { value.to_kstr().to_string() }
}

/// How often `needle` stands in `haystack`, as `str::replace` and `split` count it: between
/// every two characters when it is empty.
fn occurrences(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() { haystack.chars().count() + 1 } else { haystack.matches(needle).count() }
}

/// The filters whose result's size [`predicted`] knows before they run.
const PREDICTED: &[&str] = &["replace", "replace_first", "append", "prepend", "join", "split", "concat"];

/// The size a filter's result will have, from its input and arguments, for the filters whose
/// result can be a product of their sizes ([`PREDICTED`]); `None` for the others (linear in
/// their inputs).
fn predicted(name: &str, input: &dyn ValueView, args: &[LiquidValue]) -> Option<usize> {
    let arg = |i: usize| args.get(i).map(|v| text(v.as_view())).unwrap_or_default();
    let input_text = || if input.is_scalar() || input.is_nil() { text(input) } else { String::new() };
    match name {
        "replace" => {
            let s = input_text();
            let (search, with) = (arg(0), arg(1));
            Some(s.len().saturating_add(occurrences(&s, &search).saturating_mul(with.len())))
        }
        "replace_first" | "append" | "prepend" => {
            Some(size_of(input).saturating_add(args.iter().map(|a| size_of(a.as_view())).sum::<usize>()))
        }
        "join" => {
            let separator = if args.is_empty() { " ".to_string() } else { arg(0) };
            let items = input.as_array().map_or(1, |a| a.size().max(0) as usize);
            Some(size_of(input).saturating_add(separator.len().saturating_mul(items)))
        }
        "split" => {
            let s = input_text();
            let pieces = occurrences(&s, &arg(0));
            Some(s.len().saturating_add(pieces.saturating_mul(ELEMENT_BYTES)))
        }
        "concat" => {
            Some(size_of(input).saturating_add(args.iter().map(|a| size_of(a.as_view())).sum::<usize>()))
        }
        _ => None,
    }
}

/// Whether an integer filter's result lies past 64 bits: liquid computes `plus`, `minus`,
/// `times`, `divided_by`, `modulo` and `abs` on integers unchecked (a panic with overflow checks,
/// and `i64::MIN / -1` panics in any build), so the result is checked first and the render fails
/// with the reason instead.
fn out_of_range(name: &str, input: &dyn ValueView, args: &[LiquidValue]) -> bool {
    let integer = |v: &dyn ValueView| v.as_scalar().and_then(|s| s.to_integer());
    let Some(a) = integer(input) else { return false };
    let b = args.first().and_then(|v| integer(v.as_view()));
    match (name, b) {
        ("plus", Some(b)) => a.checked_add(b).is_none(),
        ("minus", Some(b)) => a.checked_sub(b).is_none(),
        ("times", Some(b)) => a.checked_mul(b).is_none(),
        ("divided_by", Some(b)) => b != 0 && a.checked_div(b).is_none(),
        ("modulo", Some(b)) => b != 0 && a.checked_rem(b).is_none(),
        ("abs", _) => a.checked_abs().is_none(),
        _ => false,
    }
}

/// The filters [`out_of_range`] checks.
const INTEGER: &[&str] = &["plus", "minus", "times", "divided_by", "modulo", "abs"];

/// A filter of the parser, held to the render's budget.
#[derive(Clone)]
pub(super) struct Budgeted<F: Clone>(pub(super) F);

impl<F: ParseFilter + Clone + 'static> ParseFilter for Budgeted<F> {
    fn parse(&self, arguments: FilterArguments<'_>) -> liquid_core::Result<Box<dyn Filter>> {
        let positional: Vec<Expression> = arguments.positional.collect();
        let keyword: Vec<(&str, Expression)> = arguments.keyword.collect();
        let name = self.0.reflection().name();
        let inner = self.0.parse(FilterArguments {
            positional: Box::new(positional.clone().into_iter()),
            keyword: Box::new(keyword.into_iter()),
        })?;
        Ok(Box::new(BudgetedFilter { name: name.to_string(), positional, inner }))
    }

    fn reflection(&self) -> &dyn FilterReflection {
        self.0.reflection()
    }
}

#[derive(Debug)]
struct BudgetedFilter {
    name: String,
    /// The positional arguments, evaluated again to predict the result's size.
    positional: Vec<Expression>,
    inner: Box<dyn Filter>,
}

impl fmt::Display for BudgetedFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

#[cfg(test)]
thread_local! {
    /// Filters evaluated through [`BudgetedFilter`] on this thread, by name (for the test that
    /// every filter of the parser is one).
    pub(super) static EVALUATED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Filter for BudgetedFilter {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> liquid_core::Result<LiquidValue> {
        #[cfg(test)]
        EVALUATED.with(|e| e.borrow_mut().push(self.name.clone()));
        check_time(runtime)?;
        if PREDICTED.contains(&self.name.as_str()) || INTEGER.contains(&self.name.as_str()) {
            let args = self
                .positional
                .iter()
                .map(|e| e.evaluate(runtime).map(|v| v.into_owned()))
                .collect::<liquid_core::Result<Vec<_>>>()?;
            if out_of_range(&self.name, input, &args) {
                return Err(liquid_core::Error::with_msg(format!(
                    "{}: the result lies past the 64-bit integers",
                    self.name
                )));
            }
            if let Some(size) = predicted(&self.name, input, &args)
                && size > MAX_VALUE_BYTES
            {
                return Err(limit(format!(
                    "{} would make a value of {size} bytes, past {MAX_VALUE_BYTES}",
                    self.name
                )));
            }
        }
        let value = self.inner.evaluate(input, runtime)?;
        spend(runtime, size_of(&value))?;
        Ok(value)
    }
}

/// Registers every filter of Liquid's standard library with `builder`, each [`Budgeted`].
pub(super) fn budgeted(builder: liquid::ParserBuilder) -> liquid::ParserBuilder {
    use liquid_lib::stdlib::*;
    macro_rules! all {
        ($builder:expr, $($filter:expr),+ $(,)?) => { $builder $(.filter(Budgeted($filter)))+ };
    }
    all!(
        builder,
        Abs,
        Append,
        AtLeast,
        AtMost,
        Capitalize,
        Ceil,
        Compact,
        Concat,
        Date,
        Default,
        DividedBy,
        Downcase,
        Escape,
        EscapeOnce,
        First,
        Floor,
        Join,
        Last,
        Lstrip,
        Map,
        Minus,
        Modulo,
        NewlineToBr,
        Plus,
        Prepend,
        Remove,
        RemoveFirst,
        Replace,
        ReplaceFirst,
        Reverse,
        Round,
        Rstrip,
        Size,
        Slice,
        Sort,
        SortNatural,
        Split,
        Strip,
        StripHtml,
        StripNewlines,
        Times,
        Truncate,
        TruncateWords,
        Uniq,
        Upcase,
        UrlDecode,
        UrlEncode,
        Where,
    )
}

/// The names [`budgeted`] registers, for the test that every filter of the parser is one.
#[cfg(test)]
pub(super) const STDLIB_FILTERS: &[&str] = &[
    "abs",
    "append",
    "at_least",
    "at_most",
    "capitalize",
    "ceil",
    "compact",
    "concat",
    "date",
    "default",
    "divided_by",
    "downcase",
    "escape",
    "escape_once",
    "first",
    "floor",
    "join",
    "last",
    "lstrip",
    "map",
    "minus",
    "modulo",
    "newline_to_br",
    "plus",
    "prepend",
    "remove",
    "remove_first",
    "replace",
    "replace_first",
    "reverse",
    "round",
    "rstrip",
    "size",
    "slice",
    "sort",
    "sort_natural",
    "split",
    "strip",
    "strip_html",
    "strip_newlines",
    "times",
    "truncate",
    "truncatewords",
    "uniq",
    "upcase",
    "url_decode",
    "url_encode",
    "where",
];

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::core::render::{Mode, TemplateError, render, scope};

    fn with(source: &str, data: Value) -> Result<String, TemplateError> {
        render(source, Mode::Text, &scope(data.as_object().unwrap(), "a@b.co", "c1", &[]))
    }

    #[test]
    fn integer_filters_past_64_bits_fail_the_render_with_the_reason() {
        let min = "{% assign m = -9223372036854775807 | minus: 1 %}";
        for (source, filter) in [
            ("{{ 9223372036854775807 | plus: 1 }}".to_string(), "plus"),
            ("{{ -9223372036854775807 | minus: 2 }}".to_string(), "minus"),
            ("{{ 4611686018427387904 | times: 2 }}".to_string(), "times"),
            (format!("{min}{{{{ m | divided_by: -1 }}}}"), "divided_by"),
            (format!("{min}{{{{ m | modulo: -1 }}}}"), "modulo"),
            (format!("{min}{{{{ m | abs }}}}"), "abs"),
        ] {
            let e = with(&source, json!({})).unwrap_err();
            assert!(e.message.contains(&format!("{filter}: the result lies past")), "{source}: {e:?}");
        }
        assert_eq!(with("{{ 9223372036854775806 | plus: 1 }}", json!({})).unwrap(), "9223372036854775807");
        assert_eq!(
            with("{{ 7 | modulo: 0 }}", json!({})).is_err(),
            with("{{ 7 | divided_by: 0 }}", json!({})).is_err()
        );
    }

    #[test]
    fn every_filter_of_the_parser_is_budgeted() {
        // The standard library's filters as liquid 0.26 registers them (compare on an upgrade),
        // and ours: each evaluates through the budget.
        for name in STDLIB_FILTERS.iter().chain(&["fallback", "raw"]) {
            EVALUATED.with(|e| e.borrow_mut().clear());
            for args in [": 1, 2", ": 1", ""] {
                let _ = with(&format!("{{{{ x | {name}{args} }}}}"), json!({ "x": "1" }));
            }
            let seen = EVALUATED.with(|e| e.borrow().iter().any(|n| n == name));
            assert!(seen, "{name} is not evaluated through the budget");
        }
    }

    #[test]
    fn no_filter_grows_a_value_past_its_inputs_unless_its_size_is_known_first() {
        // Each filter on inputs made to multiply (a long run of one character, a long argument):
        // a result more than 8 times its inputs must come from a filter whose size is predicted
        // (and refused before it is made when too big), or the next filter that multiplies would
        // build gigabytes before anything measured them.
        // (500 by 500 stays under the value cap, so only the prediction can stop it.)
        let long = "b".repeat(500);
        let data = json!({ "s": "a".repeat(500), "xs": vec!["a"; 500], "long": long });
        let inputs = 500 + 500;
        for name in STDLIB_FILTERS.iter().chain(&["fallback", "raw"]) {
            for args in ["", ": long", ": \"a\", long", ": long, long", ": 500"] {
                for input in ["s", "xs"] {
                    let source = format!("{{% assign r = {input} | {name}{args} %}}{{{{ r }}}}");
                    if let Ok(out) = with(&source, data.clone())
                        && out.len() > 8 * inputs
                    {
                        assert!(PREDICTED.contains(name), "{source} made {} bytes from {inputs}", out.len());
                    }
                }
            }
        }
    }

    #[test]
    fn products_of_sizes_are_refused_before_they_are_made() {
        // Item 2 of issue 29: 100,000 "a" and a 100,000-byte replacement asked for 10 GB.
        let a = "a".repeat(100_000);
        for source in [
            "{{ a | replace: \"a\", a }}",
            "{{ a | split: \"\" | join: a }}",
            "{{ a | split: \"\" }}",
            "{{ a | append: a | append: a | append: a | append: a | append: a | append: a | append: a | append: a | append: a | append: a }}",
        ] {
            let started = Instant::now();
            let e = with(source, json!({ "a": a })).unwrap_err();
            assert!(e.is_limit(), "{source}: {e}");
            assert!(
                started.elapsed() < std::time::Duration::from_millis(500),
                "{source}: {:?}",
                started.elapsed()
            );
        }
        // Within the caps, the same filters work.
        assert_eq!(with("{{ s | replace: \"a\", \"bb\" }}", json!({ "s": "aXa" })).unwrap(), "bbXbb");
    }

    #[test]
    fn a_render_without_loops_is_held_to_its_bytes_and_its_time() {
        // No loop, so no loop tick: 40 distinct values of 1 MB each is over the render's bytes.
        let big = "x".repeat(1_000_000);
        let source: String = (0..40).map(|i| format!("{{% assign v{i} = big | append: \"\" %}}")).collect();
        let e = with(&source, json!({ "big": big })).unwrap_err();
        assert!(e.is_limit() && e.message.contains("bytes of values"), "{e}");
        // And time: thousands of costly filters one after the other stop at the budget.
        let source = "{% assign t = big | split: \"x\" | size %}".repeat(3000);
        let started = Instant::now();
        let result = with(&source, json!({ "big": "x".repeat(300_000) }));
        assert!(started.elapsed() < RENDER_BUDGET * 3, "{:?}", started.elapsed());
        assert!(result.is_err_and(|e| e.is_limit()), "stopped by a limit");
    }
}
