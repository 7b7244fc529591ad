//! The house rules of design.md "The application layer", read off the sources.
//!
//! Each file of `src/` is a module (`src/core/workflows/engine.rs` is `core::workflows::engine`);
//! its imports are its `use` lines and the `crate::…`, `super::…` and child-module paths in its
//! code (comments and strings left out), each resolved to the file of the longest module prefix
//! it names. The rules:
//! - an import goes down the layer list of [`LAYERS`], or to a sibling of the same layer;
//! - no two files import each other, directly or through others (a circle);
//! - `src/core` names neither `ApiError` nor `rocket`, and nothing outside `src/db` names
//!   `rusqlite` (db is the only module that knows it is SQLite);
//! - no SQL outside `src/db`, and `src/api` makes no jobs; in tests and benchmarks, SQL only in
//!   `tests/integration/common/store.rs` (the tests' one view of the database);
//! - a route takes a row's id as a typed id (`Param<ContactId>`), never as text;
//! - no source or test file passes 600 lines;
//! - a file that inserts into `contacts` counts what it inserts (`db::contacts::count_inserted`:
//!   no trigger does since migration V48).
//!
//! What stands against a rule today is listed in `tolerated.txt` beside this file, one line a
//! breach; the list may only shrink: a new breach fails, and so does a listed one that is gone
//! (take its line out). A listed circle tolerates any circle made of some of its files.

#[path = "architecture/graph.rs"]
mod graph;
#[path = "architecture/reader.rs"]
mod reader;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

use graph::{circles, shortest_path};
use reader::{is_ident, paths, resolve, rust_files, sources, strip};

/// Floors, top to bottom, and the top-level modules on each.
const LAYERS: &[(&str, &[&str])] = &[
    ("wiring", &["main", "cli", "lib"]),
    ("api", &["api", "error"]),
    ("scheduler and listeners", &["scheduler", "listeners", "state"]),
    ("views", &["views"]),
    ("core", &["core"]),
    ("adapters", &["mail", "adapters", "lock", "memory"]),
    ("db", &["db"]),
    ("leaves", &["config", "clock", "metrics", "bounded_json"]),
];

const MAX_LINES: usize = 600;

/// The test files that may hold SQL: the tests' one view of the database, and this test's own
/// examples of what SQL looks like.
const SQL_IN_TESTS: &[&str] = &["tests/integration/common/store.rs", "tests/architecture.rs"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layer(file: &str) -> usize {
    let top = file.trim_start_matches("src/").split(['/', '.']).next().unwrap_or("");
    LAYERS
        .iter()
        .position(|(_, tops)| tops.contains(&top))
        .unwrap_or_else(|| panic!("{file}: its top module `{top}` is on no floor of LAYERS; add it"))
}

fn has_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().last();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Whether a string literal is SQL.
fn is_sql(s: &str) -> bool {
    let s = s.trim_start();
    [
        "SELECT ",
        "INSERT ",
        "UPDATE ",
        "DELETE FROM",
        "REPLACE INTO",
        "PRAGMA ",
        "CREATE ",
        "DROP ",
        "WITH ",
        "SAVEPOINT ",
        "RELEASE ",
        "ROLLBACK",
        "VACUUM ",
        "BEGIN",
        "COMMIT",
    ]
    .iter()
    .any(|k| s.starts_with(k))
        || (s.contains(" FROM ") && s.contains("SELECT"))
        || s.contains(" WHERE ")
}

/// Path parameters that are names, not rows' ids: text is what they are.
const NAME_PARAMS: &[&str] = &["name", "field", "token", "path", "slug"];

/// Route parameters called an id that name no row: a sign-in provider is a name in the
/// configuration (`github`, an OIDC provider's key).
const NOT_ROW_IDS: &[(&str, &str)] = &[("src/api/sso.rs", "id")];

/// The path parameters of each route in `text` (`#[get("/contacts/<id>")]`) that its handler
/// takes as text (`&str` or `String`), with the type written; names ([`NAME_PARAMS`]) aside.
fn untyped_ids(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for method in ["#[get(\"", "#[post(\"", "#[put(\"", "#[patch(\"", "#[delete(\""] {
        for (at, _) in text.match_indices(method) {
            let rest = &text[at + method.len()..];
            let Some(end) = rest.find('"') else { continue };
            let path = rest[..end].split('?').next().unwrap_or_default();
            let params: Vec<&str> = path
                .split('/')
                .filter_map(|seg| seg.strip_prefix('<')?.strip_suffix('>'))
                .filter(|p| *p != "_" && !p.ends_with("..") && !NAME_PARAMS.contains(p))
                .collect();
            let Some(sig) = rest.find("fn ").map(|f| &rest[f..]) else { continue };
            let Some(args) = sig.find('(').map(|o| &sig[o + 1..]) else { continue };
            let mut depth = 0;
            let close = args
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' | '<' => depth += 1,
                        ')' | '>' if depth > 0 => depth -= 1,
                        ')' => return true,
                        _ => {}
                    }
                    false
                })
                .map_or(args.len(), |(i, _)| i);
            for arg in args[..close].split(',') {
                let Some((name, ty)) = arg.split_once(':') else { continue };
                let (name, ty) = (name.trim(), ty.trim());
                if params.contains(&name) && matches!(ty, "&str" | "String" | "&'r str" | "&'a str") {
                    out.push((name.to_string(), ty.to_string()));
                }
            }
        }
    }
    out
}

/// Every breach of the rules, one line each.
fn breaches() -> BTreeSet<String> {
    let sources = sources();
    let modules: BTreeMap<Vec<String>, String> =
        sources.iter().map(|s| (s.module.clone(), s.file.clone())).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for s in &sources {
        let targets = edges.entry(s.file.clone()).or_default();
        for path in paths(&s.code) {
            if let Some(file) = resolve(s, &path, &modules).filter(|f| *f != s.file) {
                targets.insert(file);
            }
        }
        for target in targets.iter() {
            if layer(target) < layer(&s.file) {
                out.insert(format!("up: {} -> {}", s.file, target));
            }
        }
        if s.file.starts_with("src/core/") {
            for word in ["ApiError", "rocket"] {
                if has_word(&s.code, word) {
                    out.insert(format!("names: {} {word}", s.file));
                }
            }
        }
        if s.text.contains("INSERT INTO contacts (") && !s.text.contains("count_inserted(") {
            out.insert(format!("uncounted: {} inserts into contacts without count_inserted", s.file));
        }
        if !s.file.starts_with("src/db/") && has_word(&s.code, "rusqlite") {
            out.insert(format!("names: {} rusqlite", s.file));
        }
        if s.file.starts_with("src/api/") {
            for (param, ty) in untyped_ids(&s.text) {
                if !NOT_ROW_IDS.contains(&(s.file.as_str(), param.as_str())) {
                    out.insert(format!("untyped id: {} <{param}>: {ty}", s.file));
                }
            }
        }
        if s.file.starts_with("src/") && !s.file.starts_with("src/db/") && s.strings.iter().any(|l| is_sql(l))
        {
            out.insert(format!("sql: {}", s.file));
        }
        let makes_jobs = ["jobs::enqueue", "Job {", "_job("].iter().any(|k| s.code.contains(k))
            || has_word(&s.code, "JobKind");
        if s.file.starts_with("src/api/") && makes_jobs {
            out.insert(format!("jobs: {}", s.file));
        }
    }
    // `ARCHITECTURE_PATH="src/a.rs src/b.rs" cargo test --test architecture -- --nocapture`
    // prints the shortest chain of imports from one file to the other: what ties a circle.
    if let Some((from, to)) = std::env::var("ARCHITECTURE_PATH").ok().and_then(|v| {
        let mut parts = v.split_whitespace().map(str::to_string);
        Some((parts.next()?, parts.next()?))
    }) {
        println!(
            "{}",
            shortest_path(&edges, &from, &to).unwrap_or_else(|| vec!["(no path)".into()]).join("\n  -> ")
        );
    }
    for circle in circles(&edges) {
        out.insert(format!("circle: {}", circle.into_iter().collect::<Vec<_>>().join(" ")));
    }
    let mut all = Vec::new();
    rust_files(&root().join("src"), &mut all);
    rust_files(&root().join("tests"), &mut all);
    rust_files(&root().join("benches"), &mut all);
    for path in all {
        let text = fs::read_to_string(&path).unwrap();
        let rel = path.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
        if !rel.starts_with("src/")
            && !SQL_IN_TESTS.contains(&rel.as_str())
            && strip(&text).1.iter().any(|l| is_sql(l))
        {
            out.insert(format!("sql: {rel}"));
        }
        let lines = text.lines().count();
        if lines > MAX_LINES {
            out.insert(format!("long: {rel} ({lines} lines)"));
        }
    }
    out
}

fn members(line: &str) -> Option<BTreeSet<&str>> {
    line.strip_prefix("circle: ").map(|m| m.split(' ').collect())
}

/// `long: file (N lines)` without its count, so a long file may change length while it waits.
fn key(line: &str) -> &str {
    match line.strip_prefix("long: ") {
        Some(_) => line.split(" (").next().unwrap_or(line),
        None => line,
    }
}

#[test]
fn the_house_keeps_its_layers() {
    let tolerated_text =
        fs::read_to_string(root().join("tests/architecture/tolerated.txt")).unwrap_or_default();
    let tolerated: BTreeSet<&str> =
        tolerated_text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let found = breaches();
    let tolerated_keys: BTreeSet<&str> = tolerated.iter().map(|l| key(l)).collect();
    let found_keys: BTreeSet<&str> = found.iter().map(|l| key(l)).collect();
    let new: Vec<&String> = found
        .iter()
        .filter(|line| match members(line) {
            Some(m) => !tolerated.iter().filter_map(|t| members(t)).any(|t| m.is_subset(&t)),
            None => !tolerated_keys.contains(key(line)),
        })
        .collect();
    let gone: Vec<&&str> = tolerated.iter().filter(|line| !found_keys.contains(key(line))).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "design.md \"The application layer\" is broken here:\n  {}\n\nand these lines of \
         tests/architecture/tolerated.txt are mended (take them out):\n  {}\n",
        new.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  "),
        gone.iter().map(|s| **s).collect::<Vec<_>>().join("\n  "),
    );
}

#[test]
fn the_reader_sees_what_the_rules_need() {
    let (code, strings) =
        strip("use crate::a::{b, c::{d, e}}; // crate::x::y\nlet s = \"SELECT 1\"; let c = '\"';");
    assert!(!code.contains("crate::x"), "comments are left out");
    assert_eq!(strings, ["SELECT 1"]);
    let names: Vec<String> = paths(&code).into_iter().map(|p| p.join("::")).collect();
    assert!(
        names.contains(&"crate::a::b".to_string()) && names.contains(&"crate::a::c::e".to_string()),
        "{names:?}"
    );
    let (tested, _) = strip(
        "use super::a;\nmod tests {\n    use super::*;\n    fn f() { super::super::b::c(); }\n}\nmod other;\nuse super::d;",
    );
    let names: Vec<String> = paths(&tested).into_iter().map(|p| p.join("::")).collect();
    let named = |n: &str| names.iter().any(|p| p == n);
    assert!(
        named("self::*")
            && named("super::b::c")
            && named("super::a")
            && named("super::d")
            && !named("super::*"),
        "inside an inline module, super names the file first: {names:?}"
    );
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    edges.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    edges.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(circles(&edges), vec![BTreeSet::from(["a".to_string(), "b".into(), "c".into()])]);
    assert!(is_sql("SELECT id FROM contacts") && !is_sql("Select a project"));
    let route = "#[get(\"/a/<id>/b/<step_id>/<name>?<q>\")]\nasync fn f(\n    s: &State<X>,\n    id: &str,\n    step_id: Param<StepId>,\n    name: &str,\n    q: Option<&str>,\n) {}";
    assert_eq!(untyped_ids(route), [("id".to_string(), "&str".to_string())]);
}
