//! The house rules of design.md "The application layer", read off the sources.
//!
//! Each file of `src/` is a module (`src/core/workflows/engine.rs` is `core::workflows::engine`);
//! its imports are its `use` lines and the `crate::…`, `super::…` and child-module paths in its
//! code (comments and strings left out), each resolved to the file of the longest module prefix
//! it names. The rules:
//! - an import goes down the layer list of [`LAYERS`], or to a sibling of the same layer;
//! - no two files import each other, directly or through others (a circle);
//! - `src/core` names neither `ApiError`, `rocket` nor `rusqlite`;
//! - no SQL outside `src/db`, and `src/api` makes no jobs;
//! - no source or test file passes 600 lines.
//!
//! What stands against a rule today is listed in `tolerated.txt` beside this file, one line a
//! breach; the list may only shrink: a new breach fails, and so does a listed one that is gone
//! (take its line out). A listed circle tolerates any circle made of some of its files.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

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

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One source file: its module path and its code without comments and string contents.
struct Source {
    file: String,
    module: Vec<String>,
    code: String,
    strings: Vec<String>,
    is_mod_file: bool,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "node_modules" && n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` with comments blanked and string literals emptied; the literals' contents apart.
fn strip(text: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let (mut code, mut strings) = (String::with_capacity(text.len()), Vec::new());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                code.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let start = j;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    break;
                }
                j += 1;
            }
            strings.push(chars[start..j.min(chars.len())].iter().collect());
            code.push_str("\"\"");
            i = j + 1 + hashes;
        } else if c == '"' {
            let mut j = i + 1;
            let mut s = String::new();
            while j < chars.len() && chars[j] != '"' {
                if chars[j] == '\\' {
                    j += 1;
                }
                if let Some(&ch) = chars.get(j) {
                    s.push(ch);
                }
                j += 1;
            }
            strings.push(s);
            code.push_str("\"\"");
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '"') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                code.push_str("' '");
                i = j + 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                code.push_str("' '");
                i += 3;
            } else {
                code.push(c);
                i += 1;
            }
        } else {
            code.push(c);
            i += 1;
        }
    }
    (code, strings)
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

fn sources() -> Vec<Source> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| !p.starts_with(src.join("bin")))
        .map(|path| {
            let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> =
                rel.trim_end_matches(".rs").split('/').map(str::to_string).collect();
            let is_mod_file = matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main"));
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if rel == "lib.rs" {
                module = vec!["lib".into()];
            }
            let text = fs::read_to_string(&path).unwrap();
            let (code, strings) = strip(&text);
            Source { file: format!("src/{rel}"), module, code, strings, is_mod_file }
        })
        .collect()
}

/// The paths a `use` tree names, brace groups expanded (`a::{b, c::d}` → `a::b`, `a::c::d`).
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else { return vec![tree] };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// How many inline `mod name { .. }` blocks enclose each byte of `code`.
fn inline_depths(code: &str) -> Vec<usize> {
    let bytes = code.as_bytes();
    let mut depths = vec![0; bytes.len() + 1];
    let (mut stack, mut depth, mut pending) = (Vec::new(), 0, false);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' => {
                stack.push(pending);
                depth += usize::from(pending);
                pending = false;
            }
            b'}' => depth -= usize::from(stack.pop() == Some(true)),
            b';' => pending = false,
            _ if code[i..].starts_with("mod ") && (i == 0 || !is_ident(bytes[i - 1] as char)) => {
                pending = true
            }
            _ => {}
        }
        depths[i] = depth;
    }
    depths
}

/// A path named `depth` inline modules deep: each of its leading `super`s climbs out of one of
/// them before it climbs out of the file's module (`use super::*` in `mod tests` is the file).
fn within(mut path: Vec<String>, depth: usize) -> Vec<String> {
    let climbed = path.iter().take(depth).take_while(|s| *s == "super").count();
    if climbed > 0 {
        path.drain(..climbed);
        if path.first().is_none_or(|s| s != "super") {
            path.insert(0, "self".into());
        }
    }
    path
}

/// Every path the code names: `use` trees expanded, and the inline `a::b::c` chains.
fn paths(code: &str) -> Vec<Vec<String>> {
    let depths = inline_depths(code);
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let boundary = at == 0 || !is_ident(rest[..at].chars().last().unwrap());
        let after = &rest[at + 4..];
        let depth = depths[code.len() - rest.len() + at];
        if boundary && let Some(end) = after.find(';') {
            for p in expand(&after[..end]) {
                let p = p.split(" as ").next().unwrap_or(&p).to_string();
                out.push(within(p.split("::").map(str::to_string).collect(), depth));
            }
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    let (offsets, chars): (Vec<usize>, Vec<char>) = code.char_indices().unzip();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            let mut j = i;
            let mut segments = Vec::new();
            loop {
                let start = j;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                segments.push(chars[start..j].iter().collect::<String>());
                if chars.get(j) == Some(&':')
                    && chars.get(j + 1) == Some(&':')
                    && chars.get(j + 2).is_some_and(|c| is_ident(*c))
                {
                    j += 2;
                } else {
                    break;
                }
            }
            if segments.len() > 1 {
                out.push(within(segments, depths[offsets[i]]));
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// The file a path names from `from`, if it names one of `modules`.
fn resolve(from: &Source, path: &[String], modules: &BTreeMap<Vec<String>, String>) -> Option<String> {
    let mut absolute: Vec<String> = match path.first()?.as_str() {
        "crate" => path[1..].to_vec(),
        "super" => {
            let mut base = from.module.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            base
        }
        "self" => from.module.iter().chain(&path[1..]).cloned().collect(),
        child if from.is_mod_file || from.module == ["lib"] => {
            let mut base = if from.module == ["lib"] { Vec::new() } else { from.module.clone() };
            base.push(child.to_string());
            if !modules.contains_key(&base) {
                return None;
            }
            base.extend(path[1..].iter().cloned());
            base
        }
        _ => return None,
    };
    absolute.retain(|s| s != "self");
    while !absolute.is_empty() {
        if let Some(file) = modules.get(&absolute) {
            return Some(file.clone());
        }
        absolute.pop();
    }
    None
}

fn layer(file: &str) -> usize {
    let top = file.trim_start_matches("src/").split(['/', '.']).next().unwrap_or("");
    LAYERS
        .iter()
        .position(|(_, tops)| tops.contains(&top))
        .unwrap_or_else(|| panic!("{file}: its top module `{top}` is on no floor of LAYERS; add it"))
}

/// Strongly connected sets of more than one file (Tarjan's algorithm).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                s.out.push(set);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The shortest chain of imports from `from` to `to` (breadth first).
fn shortest_path(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to.to_string()];
            let mut step = to;
            while let Some(prev) = came_from.get(step) {
                path.push(prev.to_string());
                step = prev;
            }
            path.reverse();
            return Some(path);
        }
        for next in edges.get(at).into_iter().flatten() {
            if next != from && !came_from.contains_key(next.as_str()) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
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
            for word in ["ApiError", "rocket", "rusqlite"] {
                if has_word(&s.code, word) {
                    out.insert(format!("names: {} {word}", s.file));
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
        let lines = fs::read_to_string(&path).unwrap().lines().count();
        if lines > MAX_LINES {
            let rel = path.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
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
}
