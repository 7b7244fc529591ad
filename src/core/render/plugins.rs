//! What Tidings adds to Liquid's standard library: the `??` filter (`fallback`), `raw`, a size cap
//! on `capture`, a depth count on every block, and the loop tick that holds each render to its
//! budget ([`super::budget`], which every filter also meets).

use std::cell::Cell;
use std::fmt;
use std::io::Write;
use std::sync::LazyLock;

use liquid_core::model::{ScalarCow, Value as LiquidValue, ValueView};
use liquid_core::parser::{FilterArguments, FilterReflection, ParameterReflection, ParseFilter};
use liquid_core::runtime::{Renderable, Runtime};
use liquid_core::{
    BlockReflection, Filter, Language, ParseBlock, ParseTag, TagBlock, TagReflection, TagTokenIter,
    Template as Body,
};

use super::budget::Budgeted;
use super::limits::{LIMIT, MAX_LOOP, MAX_LOOP_DEPTH, MAX_NESTING, MAX_VALUE_BYTES};

// ---------------------------------------------------------------------------------------------
// The `??` filter and the limits on filters and `capture`.

/// `x | fallback: d` — `d` when `x` is missing or null (what `??` becomes).
#[derive(Clone)]
struct FallbackFilter;

const FALLBACK_PARAMS: &[ParameterReflection] = &[ParameterReflection {
    name: "default",
    description: "used when the input is missing or null",
    is_optional: false,
}];

impl FilterReflection for FallbackFilter {
    fn name(&self) -> &str {
        "fallback"
    }

    fn description(&self) -> &str {
        "the input, or the default when the input is missing or null"
    }

    fn positional_parameters(&self) -> &'static [ParameterReflection] {
        FALLBACK_PARAMS
    }

    fn keyword_parameters(&self) -> &'static [ParameterReflection] {
        &[]
    }
}

impl ParseFilter for FallbackFilter {
    fn parse(&self, mut arguments: FilterArguments<'_>) -> liquid_core::Result<Box<dyn Filter>> {
        let default = arguments
            .positional
            .next()
            .ok_or_else(|| liquid_core::Error::with_msg("?? needs a default value"))?;
        Ok(Box::new(Fallback { default }))
    }

    fn reflection(&self) -> &dyn FilterReflection {
        self
    }
}

#[derive(Debug)]
struct Fallback {
    default: liquid_core::Expression,
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fallback: {}", self.default)
    }
}

impl Filter for Fallback {
    fn evaluate(&self, input: &dyn ValueView, runtime: &dyn Runtime) -> liquid_core::Result<LiquidValue> {
        if input.is_nil() { Ok(self.default.evaluate(runtime)?.into_owned()) } else { Ok(input.to_value()) }
    }
}

/// `capture`, with the captured text limited to [`MAX_VALUE_BYTES`].
#[derive(Clone, Copy)]
struct CappedCaptureBlock;

impl BlockReflection for CappedCaptureBlock {
    fn start_tag(&self) -> &str {
        "capture"
    }

    fn end_tag(&self) -> &str {
        "endcapture"
    }

    fn description(&self) -> &str {
        "captures the rendered text into a variable"
    }
}

impl ParseBlock for CappedCaptureBlock {
    fn parse(
        &self,
        mut arguments: TagTokenIter<'_>,
        mut tokens: TagBlock<'_, '_>,
        options: &Language,
    ) -> liquid_core::Result<Box<dyn Renderable>> {
        let id = arguments.expect_next("Identifier expected")?.expect_identifier().into_result()?.to_owned();
        arguments.expect_nothing()?;
        let body = Body::new(tokens.parse_all(options)?);
        tokens.assert_empty();
        Ok(Box::new(CappedCapture { id: id.into(), body }))
    }

    fn reflection(&self) -> &dyn BlockReflection {
        self
    }
}

#[derive(Debug)]
struct CappedCapture {
    id: liquid_core::model::KString,
    body: Body,
}

impl Renderable for CappedCapture {
    fn render_to(&self, _writer: &mut dyn Write, runtime: &dyn Runtime) -> liquid_core::Result<()> {
        let mut captured = Limited::new(MAX_VALUE_BYTES);
        self.body.render_to(&mut captured, runtime)?;
        super::budget::spend(runtime, captured.buffer.len())?;
        let text = String::from_utf8(captured.buffer)
            .map_err(|_| liquid_core::Error::with_msg("capture is not UTF-8"))?;
        runtime.set_global(self.id.clone(), LiquidValue::scalar(text));
        Ok(())
    }
}

/// A buffer that refuses to grow past its limit.
pub(super) struct Limited {
    pub(super) buffer: Vec<u8>,
    limit: usize,
}

impl Limited {
    pub(super) fn new(limit: usize) -> Self {
        Limited { buffer: Vec::new(), limit }
    }
}

impl Write for Limited {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.buffer.len() + bytes.len() > self.limit {
            return Err(std::io::Error::other(format!("{LIMIT}: the output grew past {} bytes", self.limit)));
        }
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// `raw`: marks an output that must not be HTML-escaped (the preprocessor drops the escape).

#[derive(Clone)]
struct RawFilter;

impl FilterReflection for RawFilter {
    fn name(&self) -> &str {
        "raw"
    }

    fn description(&self) -> &str {
        "prints the value as it is, without HTML escaping"
    }

    fn positional_parameters(&self) -> &'static [ParameterReflection] {
        &[]
    }

    fn keyword_parameters(&self) -> &'static [ParameterReflection] {
        &[]
    }
}

impl ParseFilter for RawFilter {
    fn parse(&self, _arguments: FilterArguments<'_>) -> liquid_core::Result<Box<dyn Filter>> {
        Ok(Box::new(Raw))
    }

    fn reflection(&self) -> &dyn FilterReflection {
        self
    }
}

#[derive(Debug)]
struct Raw;

impl fmt::Display for Raw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw")
    }
}

impl Filter for Raw {
    fn evaluate(&self, input: &dyn ValueView, _runtime: &dyn Runtime) -> liquid_core::Result<LiquidValue> {
        Ok(input.to_value())
    }
}

// ---------------------------------------------------------------------------------------------
// Block depth, counted by Liquid's own parser as it descends, so no input can nest deeper than
// MAX_NESTING whatever its text looks like (the parser recurses once per level and a few
// thousand levels overflow a thread's stack).

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static LOOPS: Cell<usize> = const { Cell::new(0) };
}

/// Leaves a level when dropped, also when the inner parse fails or panics.
struct Level {
    is_loop: bool,
}

impl Level {
    fn enter(is_loop: bool) -> Result<Level, String> {
        let depth = DEPTH.get() + 1;
        if depth > MAX_NESTING {
            return Err(format!("blocks may nest at most {MAX_NESTING} deep"));
        }
        let loops = LOOPS.get() + usize::from(is_loop);
        if loops > MAX_LOOP_DEPTH {
            return Err(format!("loops may nest at most {} deep", MAX_LOOP_DEPTH));
        }
        DEPTH.set(depth);
        LOOPS.set(loops);
        Ok(Level { is_loop })
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get().saturating_sub(1));
        if self.is_loop {
            LOOPS.set(LOOPS.get().saturating_sub(1));
        }
    }
}

/// Resets the counters before a parse (a panic in an earlier one on this thread may have left
/// them anywhere; `Level` undoes its own step on unwinding, so this is belt and braces).
pub(super) fn reset_depth() {
    DEPTH.set(0);
    LOOPS.set(0);
}

/// A standard block whose parse counts toward the nesting limits.
#[derive(Clone)]
struct Counted<B: Clone>(B);

impl<B: ParseBlock + Clone + 'static> ParseBlock for Counted<B> {
    fn parse(
        &self,
        arguments: TagTokenIter<'_>,
        block: TagBlock<'_, '_>,
        options: &Language,
    ) -> liquid_core::Result<Box<dyn Renderable>> {
        let start = self.0.reflection().start_tag();
        let _level =
            Level::enter(matches!(start, "for" | "tablerow")).map_err(liquid_core::Error::with_msg)?;
        self.0.parse(arguments, block, options)
    }

    fn reflection(&self) -> &dyn BlockReflection {
        self.0.reflection()
    }
}

// ---------------------------------------------------------------------------------------------
// The loop tick: the preprocessor puts `{% tidings_tick forloop %}` (or `tablerowloop`) first in
// every loop body. Each step checks the loop's count (a `limit:` given as a variable can ask for
// more than MAX_LOOP) and the render's time budget.

#[derive(Clone)]
struct TickTag;

impl TagReflection for TickTag {
    fn tag(&self) -> &str {
        "tidings_tick"
    }

    fn description(&self) -> &str {
        "one step of a loop, checked against the loop cap and the render budget"
    }
}

impl ParseTag for TickTag {
    fn parse(
        &self,
        mut arguments: TagTokenIter<'_>,
        _options: &Language,
    ) -> liquid_core::Result<Box<dyn Renderable>> {
        let name = arguments.expect_next("the loop variable")?.expect_identifier().into_result()?.to_owned();
        arguments.expect_nothing()?;
        Ok(Box::new(Tick { name }))
    }

    fn reflection(&self) -> &dyn TagReflection {
        self
    }
}

#[derive(Debug)]
struct Tick {
    name: String,
}

impl Renderable for Tick {
    fn render_to(&self, _writer: &mut dyn Write, runtime: &dyn Runtime) -> liquid_core::Result<()> {
        let path = [ScalarCow::new(self.name.as_str()), ScalarCow::new("index")];
        let index = runtime.try_get(&path).and_then(|v| v.as_scalar().and_then(|s| s.to_integer()));
        if index.is_some_and(|i| i > i64::from(MAX_LOOP)) {
            return Err(liquid_core::Error::with_msg(format!(
                "{LIMIT}: a loop may run at most {MAX_LOOP} times"
            )));
        }
        super::budget::check_time(runtime)?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------

/// The parser: the standard library, every block counted, with our filters and tags.
pub(super) static PARSER: LazyLock<liquid::Parser> = LazyLock::new(|| {
    use liquid_lib::stdlib;
    super::budget::budgeted(liquid::ParserBuilder::with_stdlib())
        .filter(Budgeted(FallbackFilter))
        .filter(Budgeted(RawFilter))
        .block(Counted(stdlib::RawBlock))
        .block(Counted(stdlib::IfBlock))
        .block(Counted(stdlib::UnlessBlock))
        .block(Counted(stdlib::IfChangedBlock))
        .block(Counted(stdlib::ForBlock))
        .block(Counted(stdlib::TableRowBlock))
        .block(Counted(stdlib::CommentBlock))
        .block(Counted(stdlib::CaseBlock))
        .block(Counted(CappedCaptureBlock))
        .tag(TickTag)
        .build()
        .expect("the standard library with our filters builds")
});
