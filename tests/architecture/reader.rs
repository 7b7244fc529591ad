//! How the architecture test reads the sources: each file's code without comments and string
//! contents, the string literals apart, and the module paths its code names, resolved to files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::root;

/// One source file: its module path and its code without comments and string contents.
pub struct Source {
    pub file: String,
    pub module: Vec<String>,
    pub code: String,
    pub strings: Vec<String>,
    /// The file as written, for the rules that read string literals where they stand.
    pub text: String,
    pub is_mod_file: bool,
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn strip(text: &str) -> (String, Vec<String>) {
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

pub fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

pub fn sources() -> Vec<Source> {
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
            Source { file: format!("src/{rel}"), module, code, strings, text, is_mod_file }
        })
        .collect()
}

/// The paths a `use` tree names, brace groups expanded (`a::{b, c::d}` → `a::b`, `a::c::d`).
pub fn expand(tree: &str) -> Vec<String> {
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

pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// How many inline `mod name { .. }` blocks enclose each byte of `code`.
pub fn inline_depths(code: &str) -> Vec<usize> {
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
pub fn within(mut path: Vec<String>, depth: usize) -> Vec<String> {
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
pub fn paths(code: &str) -> Vec<Vec<String>> {
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
pub fn resolve(from: &Source, path: &[String], modules: &BTreeMap<Vec<String>, String>) -> Option<String> {
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
