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

use super::limits::{LIMIT, MAX_VALUE_BYTES, RENDER_BUDGET};

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
mod tests;
