//! `cargo run -p xtask -- module-cycles <src-dir>`: the module import graph of one crate and
//! its cycles.
//!
//! Nodes are the crate's file modules: every `.rs` file under `src` except the crate root
//! (`lib.rs`, `main.rs`), named by path (`a.rs` and `a/mod.rs` → `a`, `a/b.rs` → `a::b`).
//! Inline modules (`mod tests { … }`) belong to their file's node. An edge `m → n` is a path in
//! `m`'s text that names an item of `n`: `crate::…`, `super::…`, `self::…`, and paths that
//! start with the name of one of `m`'s child modules; each path is resolved to the longest
//! prefix that is a file module (a path into the crate root, such as `crate::VERSION`, is no
//! edge). `use` groups (`use crate::{a::X, b::{Y, Z}}`) give one path per item. Comments,
//! strings and character literals are skipped. It is a text scan, not name resolution: a
//! macro that builds paths from pieces is not seen.
//!
//! A cycle is a strongly connected set of two or more modules; each is reported with one
//! concrete loop through it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module import graph: module → modules it refers to.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module import graph of the crate whose source directory is `src`.
pub fn module_graph(src: &Path) -> Result<Graph, String> {
    let mut files = Vec::new();
    collect(src, src, &mut files)?;
    let modules: BTreeSet<String> = files.iter().filter_map(|(m, _)| m.clone()).collect();
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (module, text) in &files {
        let Some(module) = module else { continue };
        let segs: Vec<String> = module.split("::").map(str::to_string).collect();
        for path in paths(&tokens(text), &segs, &modules) {
            if let Some(target) = resolve(&path, &modules)
                && &target != module
            {
                graph.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    Ok(graph)
}

/// Every `.rs` file under `dir` with its module name (`None` for the crate root).
fn collect(root: &Path, dir: &Path, out: &mut Vec<(Option<String>, String)>) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(root, &p, out)?;
            continue;
        }
        if p.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let rel = p.strip_prefix(root).map_err(|e| e.to_string())?;
        let mut parts: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        let file = parts.pop().unwrap_or_default();
        let stem = file.trim_end_matches(".rs").to_string();
        let module = if parts.is_empty() && (stem == "lib" || stem == "main") {
            None
        } else {
            if stem != "mod" {
                parts.push(stem);
            }
            Some(parts.join("::"))
        };
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        out.push((module, text));
    }
    Ok(())
}

/// Identifiers and punctuation of `text`, without comments, strings and char literals.
/// `::` is one token.
fn tokens(text: &str) -> Vec<String> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && raw_string(&b, i).is_some()
        {
            i = raw_string(&b, i).unwrap_or(i + 1);
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(b[s..i].iter().collect());
        } else if c == ':' && next == Some(':') {
            out.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The end of a raw string (`r"…"`, `r#"…"#`) starting at `i`, if one starts there.
fn raw_string(b: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut hashes = 0;
    while b.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < b.len() {
        if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

/// Absolute paths (segments from the crate root) named in the tokens of file module `file`.
fn paths(t: &[String], file: &[String], modules: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // Inline modules open at brace depth: (name, depth of its `{`).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        match t[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|s| s == "{") => {
                inline.push((t[i + 1].clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        let starts = i == 0 || (t[i - 1] != "::" && t[i - 1] != ".");
        if starts && t.get(i + 1).is_some_and(|s| s == "::") {
            let here: Vec<String> = file
                .iter()
                .cloned()
                .chain(inline.iter().map(|(n, _)| n.clone()))
                .collect();
            let base: Option<Vec<String>> = match t[i].as_str() {
                "crate" => Some(Vec::new()),
                "self" => Some(here.clone()),
                "super" => {
                    let mut b = here.clone();
                    b.pop();
                    Some(b)
                }
                name if inline.is_empty() && modules.contains(&child(file, name)) => {
                    Some(file.iter().cloned().chain([name.to_string()]).collect())
                }
                _ => None,
            };
            if let Some(mut base) = base {
                let mut j = i + 2;
                // Further `super`s.
                while t.get(j).is_some_and(|s| s == "super")
                    && t.get(j + 1).is_some_and(|s| s == "::")
                {
                    base.pop();
                    j += 2;
                }
                j = path_tail(t, j, &base, &mut out);
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn child(file: &[String], name: &str) -> String {
    file.iter()
        .map(String::as_str)
        .chain([name])
        .collect::<Vec<_>>()
        .join("::")
}

/// Reads the rest of a path from `t[j]` (after a `::`) onto `base`, a `{…}` group giving one
/// path per item; returns the index after it.
fn path_tail(t: &[String], mut j: usize, base: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = base.to_vec();
    loop {
        match t.get(j).map(String::as_str) {
            Some("{") => {
                j += 1;
                loop {
                    match t.get(j).map(String::as_str) {
                        None => return j,
                        Some("}") => return j + 1,
                        Some(",") => j += 1,
                        Some(_) => {
                            j = path_tail(t, j, &segs, out);
                            // Skip a rename (`as x`) or anything else up to the item's end.
                            while let Some(s) = t.get(j) {
                                if s == "," || s == "}" {
                                    break;
                                }
                                j += 1;
                            }
                        }
                    }
                }
            }
            Some(s) if s == "self" || s == "*" => {
                out.push(segs);
                return j + 1;
            }
            Some(s)
                if s.chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_') =>
            {
                segs.push(s.to_string());
                if t.get(j + 1).is_some_and(|s| s == "::") {
                    j += 2;
                } else {
                    out.push(segs);
                    return j + 1;
                }
            }
            _ => {
                out.push(segs);
                return j;
            }
        }
    }
}

/// The file module an absolute path lands in: its longest prefix that is one.
fn resolve(path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|m| modules.contains(m))
}

/// A module import cycle.
#[derive(Debug, PartialEq, Eq)]
pub struct Cycle {
    /// The strongly connected modules, sorted.
    pub modules: Vec<String>,
    /// One shortest loop through the first of them, in edge order, first module repeated at
    /// the end.
    pub path: Vec<String>,
}

/// The cycles of `graph`: each strongly connected set of two or more modules.
pub fn cycles(graph: &Graph) -> Vec<Cycle> {
    let mut out = Vec::new();
    for comp in components(graph) {
        if comp.len() < 2 {
            continue;
        }
        let inside: BTreeSet<&String> = comp.iter().collect();
        let start = &comp[0];
        // Breadth-first from `start` until an edge leads back to it.
        let mut prev: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(m) = queue.pop_front() {
            for n in graph.get(m).into_iter().flatten() {
                if n == start {
                    last = m;
                    break 'search;
                }
                if inside.contains(n) && !prev.contains_key(n) {
                    prev.insert(n, m);
                    queue.push_back(n);
                }
            }
        }
        let mut path = vec![start.clone()];
        let mut m = last;
        while m != start {
            path.push(m.clone());
            m = prev[m];
        }
        path[1..].reverse();
        path.push(start.clone());
        out.push(Cycle {
            modules: comp.clone(),
            path,
        });
    }
    out
}

/// Strongly connected components (Tarjan), each sorted, in order of their first module.
fn components(graph: &Graph) -> Vec<Vec<String>> {
    struct St<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = St {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// The `module-cycles` subcommand: prints the cycles of the crate at `src`; an error when
/// there is one.
pub fn run(src: &Path) -> Result<(), String> {
    let graph = module_graph(src)?;
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    let found = cycles(&graph);
    if found.is_empty() {
        println!(
            "no module import cycle in {} ({} modules, {edges} edges)",
            src.display(),
            graph.len()
        );
        return Ok(());
    }
    for c in &found {
        println!(
            "cycle of {} modules: {}",
            c.modules.len(),
            c.modules.join(", ")
        );
        println!("  loop: {}", c.path.join(" -> "));
    }
    Err(format!(
        "{} module import cycle(s) in {} ({} modules, {edges} edges)",
        found.len(),
        src.display(),
        graph.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch crate `src` with `files` (path, text).
    fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("xtask-modcycles-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (p, text) in files {
            let f = dir.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        }
        dir
    }

    #[test]
    fn capi_src_has_no_module_cycle() {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../capi/src");
        let graph = module_graph(&src).unwrap();
        assert!(graph.contains_key("desc") && graph.contains_key("ops"));
        assert!(graph["desc"].contains("ops"), "the scan sees desc → ops");
        assert_eq!(cycles(&graph), Vec::new());
    }

    #[test]
    fn engines_src_has_no_module_cycle() {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../engines/src");
        let graph = module_graph(&src).unwrap();
        // The scan sees the reference engine's layering: plan → nodes → check.
        assert!(graph["reference::plan"].contains("reference::nodes::conv"));
        assert!(graph["reference::nodes::conv"].contains("reference::check"));
        assert_eq!(cycles(&graph), Vec::new());
    }

    #[test]
    fn a_two_module_cycle_is_found_through_use_groups_super_and_child_paths() {
        let dir = scratch(
            "found",
            &[
                (
                    "lib.rs",
                    "pub mod a; pub mod b; pub mod c; pub mod d;\nuse crate::a::X;",
                ),
                (
                    "a.rs",
                    "use crate::{b::{Y, Z as W}, c};\n// crate::d::nothing\npub struct X;",
                ),
                (
                    "b.rs",
                    "pub struct Y; pub struct Z;\nfn f() { let s = \"crate::d::Q\"; super::a::X; }",
                ),
                (
                    "c.rs",
                    "pub fn c() { let _ = '\"'; }\n#[cfg(test)]\nmod tests { use super::*; }",
                ),
                ("d/mod.rs", "mod e;\nfn g() { e::h(); }"),
                ("d/e.rs", "pub fn h() { crate::d::g(); }"),
            ],
        );
        let g = module_graph(&dir).unwrap();
        assert_eq!(g["a"], BTreeSet::from(["b".to_string(), "c".to_string()]));
        assert_eq!(g["b"], BTreeSet::from(["a".to_string()]));
        assert!(g["c"].is_empty(), "a test module's super is its own file");
        assert_eq!(g["d"], BTreeSet::from(["d::e".to_string()]));
        let c = cycles(&g);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].path, ["a", "b", "a"]);
        assert_eq!(c[1].path, ["d", "d::e", "d"]);
        assert!(run(&dir).unwrap_err().contains("2 module import cycle(s)"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_acyclic_crate_passes() {
        let dir = scratch(
            "acyclic",
            &[
                ("lib.rs", "pub mod a; pub mod b;"),
                ("a.rs", "use crate::b::Y; use crate::VERSION;"),
                ("b.rs", "pub struct Y; fn f() -> hipdnn::log::X { todo!() }"),
            ],
        );
        let g = module_graph(&dir).unwrap();
        assert_eq!(cycles(&g), Vec::new());
        assert!(run(&dir).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
