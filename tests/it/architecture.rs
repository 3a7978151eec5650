//! The import rules of `docs/ARCHITECTURE.md`, read from the `crate::` paths in `src/` (test code and
//! comments skipped): HTTP lives at the edge, the console goes through the command layer, leaves stay leaves,
//! and the top-level modules import each other without cycles.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use crate::sources;

/// Modules that speak HTTP: the server, the admin API's client, the wiring, the CLI and the demo client.
const EDGE: &[&str] = &["server", "admin", "app", "cli", "demo", "lib", "main"];

/// Modules that import no other module of the crate except each other.
const LEAVES: &[&str] = &[
    "money",
    "interval",
    "ids",
    "clock",
    "text",
    "states",
    "egress",
    "files",
    "events",
    "names",
    "rates",
    "passphrase",
];

/// Every non-test file of `src/` (test-only module files left out): its path from the crate root and its
/// non-test lines (number, code without comments).
fn scan_src() -> Vec<(String, Vec<(usize, String)>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sources::rust_files(&root.join("src"));
    assert!(files.len() > 40, "found the sources");
    let mut test_only = BTreeSet::new();
    let mut scanned = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        let source = std::fs::read_to_string(f).unwrap();
        let s = sources::non_test_lines(&source);
        let dir = rel.strip_suffix(".rs").unwrap().to_owned();
        test_only.extend(s.test_modules.iter().map(|m| format!("{dir}/{m}.rs")));
        let code: Vec<(usize, String)> = s.lines.into_iter().map(|l| (l.number, l.code)).collect();
        scanned.push((rel, code));
    }
    scanned.retain(|(rel, _)| !test_only.contains(rel));
    scanned
}

/// The top-level modules each top-level module imports, with a file that does it: module → (imported →
/// file). Also every non-edge file that names `axum`, `StatusCode` or `crate::server`.
fn read_src() -> (BTreeMap<String, BTreeMap<String, String>>, Vec<String>) {
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut http = Vec::new();
    for (rel, code) in scan_src() {
        let module = module_of(&rel);
        for (number, line) in &code {
            if !EDGE.contains(&module.as_str())
                && (line.contains("axum") || line.contains("StatusCode") || line.contains("crate::server"))
            {
                http.push(format!("{rel}:{number}: {}", line.trim()));
            }
        }
        let text: String = code.iter().map(|(_, l)| format!("{l}\n")).collect();
        for target in imports(&text) {
            if target != module {
                graph
                    .entry(module.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| rel.clone());
            }
        }
    }
    (graph, http)
}

/// `src/ase/engine.rs` → `ase`.
fn module_of(rel: &str) -> String {
    let path = rel.strip_prefix("src/").unwrap();
    let first = path.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_owned()
}

/// The top-level modules `code` names after `crate::`, including each first item of `crate::{a, b::{..}}`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut item) = (0, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(item.trim()));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            out.insert(ident(item.trim()));
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(edges) = t.g.get(v) {
            for w in edges.keys() {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                scc.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn http_stays_above_the_services() {
    let (_, http) = read_src();
    assert!(
        http.is_empty(),
        "only the edge ({EDGE:?}) may use axum, HTTP statuses or crate::server:\n{}",
        http.join("\n")
    );
}

#[test]
fn the_console_and_the_command_layer_stay_off_the_edge() {
    let (graph, _) = read_src();
    for (module, banned) in [
        ("tui", &["admin", "server"][..]),
        ("control", &["admin", "server", "app", "cli", "tui"][..]),
    ] {
        let edges = graph.get(module).unwrap_or_else(|| panic!("{module} imports nothing?"));
        for b in banned {
            assert!(
                !edges.contains_key(*b),
                "{module} must not import {b} ({} does)",
                edges[*b]
            );
        }
    }
}

#[test]
fn leaves_import_only_leaves() {
    let (graph, _) = read_src();
    for leaf in LEAVES {
        for (target, file) in graph.get(*leaf).into_iter().flatten() {
            assert!(
                LEAVES.contains(&target.as_str()),
                "{leaf} is a leaf but {file} imports {target}"
            );
        }
    }
}

#[test]
fn top_level_modules_import_each_other_without_cycles() {
    let (graph, _) = read_src();
    let found = cycles(&graph);
    assert!(found.is_empty(), "import cycles:\n{}", explain(&graph, &found));
}

/// Each circle with the imports that close it and a file that makes each.
fn explain(graph: &BTreeMap<String, BTreeMap<String, String>>, found: &[Vec<String>]) -> String {
    let lines: Vec<String> = found
        .iter()
        .map(|scc| {
            let inner: Vec<String> = scc
                .iter()
                .flat_map(|m| {
                    graph[m]
                        .iter()
                        .filter(|(t, _)| scc.contains(t))
                        .map(move |(t, f)| format!("  {m} -> {t} ({f})"))
                })
                .collect();
            format!("{scc:?}:\n{}", inner.join("\n"))
        })
        .collect();
    lines.join("\n")
}

/// The paths a piece of code names from `crate::`, `super::` and `self::`, each as its segments, with the groups
/// of `use` trees spread out: `super::{a::B, c}` gives `[super, a, B]` and `[super, c]`.
fn paths(code: &str) -> Vec<Vec<String>> {
    fn ident(s: &str) -> (String, &str) {
        let n = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        (s[..n].to_owned(), &s[n..])
    }
    /// One use tree at `s`: its paths, and the text after it.
    fn tree(mut s: &str) -> (Vec<Vec<String>>, &str) {
        let mut prefix = Vec::new();
        loop {
            s = s.trim_start();
            if let Some(group) = s.strip_prefix('{') {
                let mut out = Vec::new();
                let mut rest = group;
                loop {
                    rest = rest.trim_start();
                    if let Some(after) = rest.strip_prefix('}') {
                        return (out, after);
                    }
                    let (sub, after) = tree(rest);
                    out.extend(sub.into_iter().map(|p| [prefix.clone(), p].concat()));
                    rest = after.trim_start();
                    rest = rest.strip_prefix(',').unwrap_or(rest);
                    if rest.is_empty() {
                        return (out, rest);
                    }
                }
            }
            let (id, after) = ident(s);
            if id.is_empty() {
                return (vec![prefix], s);
            }
            prefix.push(id);
            match after.strip_prefix("::") {
                Some(more) => s = more,
                None => return (vec![prefix], after),
            }
        }
    }
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            out.extend(tree(&code[i..]).0.into_iter().filter(|p| p.len() > 1));
        }
    }
    out
}

/// The module a file is: `src/ase/engine/tx.rs` → `[ase, engine, tx]`, `src/ase.rs` → `[ase]`.
fn module_path(rel: &str) -> Vec<String> {
    let path = rel.strip_prefix("src/").unwrap().strip_suffix(".rs").unwrap();
    path.split('/').filter(|s| *s != "mod").map(str::to_owned).collect()
}

/// The module `absolute[..=depth]` when it is one (a file or a folder under `src/`).
fn module_at(root: &Path, absolute: &[String], depth: usize) -> Option<String> {
    let parts = absolute.get(..=depth)?;
    let path = parts.join("/");
    (root.join(format!("src/{path}.rs")).exists() || root.join(format!("src/{path}")).is_dir())
        .then(|| parts.join("::"))
}

/// At every depth, inside each folder: which child module imports which sibling (imports of the parent itself
/// are left out: a parent and its own child may import each other), with a file that does it. `ase::engine`
/// and `ase::remote` are siblings under `ase`; `ase::engine::record` and `ase::engine::remote` under
/// `ase::engine`. (A glob `use super::*` names no sibling and is not seen.)
fn child_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (rel, lines) in scan_src() {
        let code: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
        let here = module_path(&rel);
        for p in paths(&code) {
            let mut abs: Vec<String> = here.clone();
            let mut rest = p.as_slice();
            match rest.first().map(String::as_str) {
                Some("crate") => {
                    abs.clear();
                    rest = &rest[1..];
                }
                Some("self") => rest = &rest[1..],
                _ => {}
            }
            while rest.first().map(String::as_str) == Some("super") {
                abs.pop();
                rest = &rest[1..];
            }
            abs.extend(rest.iter().cloned());
            for depth in 1..here.len() {
                if abs.len() <= depth || abs[..depth] != here[..depth] {
                    break;
                }
                let (Some(from), Some(to)) = (module_at(root, &here, depth), module_at(root, &abs, depth)) else {
                    break;
                };
                if from != to {
                    graph.entry(from).or_default().entry(to).or_insert_with(|| rel.clone());
                    break;
                }
            }
        }
    }
    graph
}

#[test]
fn the_store_speaks_for_its_backend() {
    let asked: Vec<String> = scan_src()
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with("src/store"))
        .flat_map(|(rel, lines)| {
            lines
                .into_iter()
                .filter(|(_, l)| l.contains("is_postgres") || l.contains("is_sqlite"))
                .map(move |(n, l)| format!("{rel}:{n}: {}", l.trim()))
        })
        .collect();
    assert!(
        asked.is_empty(),
        "above store/, ask the store for the capability that differs (e.g. shared_by_nodes), not its backend:\n{}",
        asked.join("\n")
    );
}

#[test]
fn child_modules_import_each_other_without_cycles() {
    let graph = child_graph();
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles between child modules:\n{}",
        explain(&graph, &found)
    );
}

#[test]
fn paths_are_read_through_groups_and_super() {
    let code = "use super::{incoming::state_of, remote::{Remote, X}};\nlet x = crate::ase::engine::reserve(a);\nfn f() { my_super::y(); self::z::w(); }";
    let found = paths(code);
    assert_eq!(
        found,
        [
            vec!["crate", "ase", "engine", "reserve"],
            vec!["super", "incoming", "state_of"],
            vec!["super", "remote", "Remote"],
            vec!["super", "remote", "X"],
            vec!["self", "z", "w"],
        ]
    );
    assert_eq!(module_path("src/ase/engine/tx.rs"), ["ase", "engine", "tx"]);
}

/// The most non-test lines a file of `src/` may have: a file a reader can hold.
const MAX_LINES: usize = 800;

#[test]
fn no_file_is_over_800_lines_of_non_test_code() {
    let over: Vec<String> = scan_src()
        .into_iter()
        .filter(|(_, lines)| lines.len() > MAX_LINES)
        .map(|(rel, lines)| format!("{rel}: {}", lines.len()))
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} non-test lines:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_rules_read_imports_and_find_cycles() {
    let code = "use crate::{a::{B, C}, d, self};\nfn f() { crate::e::g(); }\n";
    let found: Vec<String> = imports(code).into_iter().collect();
    assert_eq!(found, ["a", "d", "e"]);
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")] {
        g.entry(a.into()).or_default().insert(b.into(), "f.rs".into());
    }
    assert_eq!(cycles(&g), [["x", "y", "z"]]);
    assert_eq!(module_of("src/ase/engine.rs"), "ase");
    assert_eq!(module_of("src/money.rs"), "money");
}
