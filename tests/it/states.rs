//! Lifecycle state names are written once, in `src/states.rs`: this guard scans `src/**/*.rs` for a state's
//! text as a Rust string literal (`"sending"`) or, outside `src/store/`, as an SQL one (`'sending'`), and fails
//! listing file:line. Test code (`#[cfg(test)]` items and test-only module files) and comments are skipped.

use std::path::Path;

use opdesk::states::{GrantState, IncomingState, OutgoingState, TokenState, TransferState};

use crate::sources;

/// Lines that hold a state's text for another reason: (file, a piece of the line, why).
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "src/tui/theme.rs",
        "\"pending\" => &mut t.pending",
        "the `[theme]` role named pending",
    ),
    (
        "src/tui/theme.rs",
        "\"failed\" => &mut t.failed",
        "the `[theme]` role named failed",
    ),
    (
        "src/ase/remote.rs",
        "body[\"completed\"]",
        "the Open Payments `completed` field",
    ),
    (
        "src/demo.rs",
        "there[\"completed\"]",
        "the Open Payments `completed` field of an incoming payment",
    ),
    (
        "src/demo.rs",
        "here[\"failed\"]",
        "the Open Payments `failed` field of an outgoing payment",
    ),
];

/// The mapping module, where every state's text is written.
const MAPPING: &str = "src/states.rs";

fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = [
        OutgoingState::NAMES,
        IncomingState::NAMES,
        GrantState::NAMES,
        TokenState::NAMES,
        TransferState::NAMES,
    ]
    .concat();
    v.sort_unstable();
    v.dedup();
    v
}

/// Every state literal in `source` (the file at `rel`, relative to the crate root) outside test code, as
/// `rel:line: text`. Also returns the test-only module files `source` declares (`#[cfg(test)] mod x;`).
fn scan(rel: &str, source: &str) -> (Vec<String>, Vec<String>) {
    let names = names();
    let in_store = rel.starts_with("src/store/") || rel == "src/store.rs";
    let scanned = sources::non_test_lines(source);
    let mut hits = Vec::new();
    for line in &scanned.lines {
        let excepted = EXCEPTIONS
            .iter()
            .any(|(f, piece, _)| *f == rel && line.text.contains(piece));
        if excepted {
            continue;
        }
        for n in &names {
            let rust = format!("\"{n}\"");
            let sql = format!("'{n}'");
            if line.code.contains(&rust) || (!in_store && line.code.contains(&sql)) {
                hits.push(format!("{rel}:{}: {}", line.number, line.text.trim()));
                break;
            }
        }
    }
    (hits, scanned.test_modules)
}

#[test]
fn state_literals_appear_only_in_the_mapping() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sources::rust_files(&root.join("src"));
    let rel = |p: &Path| p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
    let mut test_only = Vec::new();
    let mut hits = Vec::new();
    for f in &files {
        let r = rel(f);
        if r == MAPPING {
            continue;
        }
        let (h, mods) = scan(&r, &std::fs::read_to_string(f).unwrap());
        hits.extend(h.into_iter().map(|h| (r.clone(), h)));
        let dir = r.strip_suffix(".rs").unwrap().to_owned();
        test_only.extend(mods.into_iter().map(|m| format!("{dir}/{m}.rs")));
    }
    assert!(!files.is_empty() && files.len() > 20, "found the sources");
    let left: Vec<String> = hits
        .into_iter()
        .filter(|(file, _)| !test_only.contains(file))
        .map(|(_, h)| h)
        .collect();
    assert!(
        left.is_empty(),
        "state text belongs in {MAPPING} (use the state types and their as_str/predicates):\n{}",
        left.join("\n")
    );
}

#[test]
fn the_guard_catches_a_literal_and_skips_tests_and_comments() {
    let src = r#"
//! A module.
fn a() -> bool {
    let s = "sending"; // here
    s == "x"
}
// a comment with "failed" in it
fn b() -> &'static str {
    "SELECT 1 WHERE state = 'pending'"
}
fn c(c: char) -> bool {
    c == '{' || c == '"'
}
fn d() -> &'static str {
    "revoked"
}
#[cfg(test)]
mod tests {
    fn t() {
        let s = "completed";
        let f = format!("{s}");
    }
}
fn e() -> &'static str {
    "cancelled"
}
#[cfg(test)]
mod snapshots;
"#;
    let (hits, mods) = scan("src/cli.rs", src);
    let lines: Vec<&str> = hits.iter().map(|h| h.split(": ").next().unwrap()).collect();
    assert_eq!(
        lines,
        ["src/cli.rs:4", "src/cli.rs:9", "src/cli.rs:15", "src/cli.rs:25"],
        "{hits:#?}"
    );
    assert_eq!(mods, ["snapshots"]);
    let (store_hits, _) = scan("src/store/payments.rs", "const Q: &str = \"WHERE state = 'sending'\";");
    assert!(store_hits.is_empty(), "SQL literals stay allowed in the store");
    let (theme, _) = scan("src/tui/theme.rs", "    \"pending\" => &mut t.pending,");
    assert!(theme.is_empty(), "listed exceptions pass");
}
