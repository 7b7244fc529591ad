//! The budget met through whole renders: filters, loops and values past their limits.

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
