//! Reading `src/` as text for the guards (state literals, the import rules): the code of each line with
//! comments dropped, test code (`#[cfg(test)]` items) skipped, and the test-only module files named.

use std::path::{Path, PathBuf};

/// One line of non-test code: its number (from 1), its code (comments dropped) and its text as written.
pub struct Line<'a> {
    pub number: usize,
    pub code: String,
    pub text: &'a str,
}

/// The non-test lines of a file and the test-only module files it declares (`#[cfg(test)] mod x;`).
pub struct Scanned<'a> {
    pub lines: Vec<Line<'a>>,
    pub test_modules: Vec<String>,
}

/// The code of one line: string literals kept (their text is what we look for), comments dropped, and the
/// net count of `{` minus `}` outside literals. `in_str` carries an open string over lines.
fn code_of(line: &str, in_str: &mut bool) -> (String, i64) {
    let mut out = String::new();
    let mut depth = 0;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if *in_str {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => *in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                *in_str = true;
                out.push(c);
            }
            // a char literal such as '{' or '"' (a lifetime has no closing quote right after)
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                let skip = if rest.starts_with('\\') {
                    rest.find('\'').map(|i| i + 1)
                } else if rest.chars().nth(1) == Some('\'') {
                    Some(2)
                } else {
                    None
                };
                match skip {
                    Some(n) => {
                        for _ in 0..n {
                            chars.next();
                        }
                        out.push_str("' '");
                    }
                    None => out.push(c),
                }
            }
            '{' => {
                depth += 1;
                out.push(c);
            }
            '}' => {
                depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    (out, depth)
}

/// The lines of `source` outside `#[cfg(test)]` items.
pub fn non_test_lines(source: &str) -> Scanned<'_> {
    let mut lines = Vec::new();
    let mut test_modules = Vec::new();
    let mut in_str = false;
    let mut cfg_test = false;
    // brace depth inside a `#[cfg(test)]` item; `Some` while skipping it
    let mut skipping: Option<i64> = None;
    for (i, text) in source.lines().enumerate() {
        let (code, delta) = code_of(text, &mut in_str);
        let trimmed = code.trim();
        if let Some(depth) = skipping.as_mut() {
            *depth += delta;
            if *depth <= 0 && (trimmed.ends_with('}') || trimmed.ends_with("};")) {
                skipping = None;
            }
            continue;
        }
        if cfg_test {
            if trimmed.starts_with("#[") || trimmed.is_empty() {
                continue;
            }
            cfg_test = false;
            if let Some(m) = trimmed.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                test_modules.push(m.trim().to_owned());
                continue;
            }
            if delta > 0 {
                skipping = Some(delta);
            } else if !trimmed.ends_with(';') && !trimmed.ends_with('}') {
                // the item's opening brace is on a later line
                skipping = Some(0);
            }
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        lines.push(Line {
            number: i + 1,
            code,
            text,
        });
    }
    Scanned { lines, test_modules }
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
