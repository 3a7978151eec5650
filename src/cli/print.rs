//! How operator commands print: JSON, or text and tables with control characters stripped from every line
//! and cell (grants, payments and peers carry client- and peer-supplied text). Nothing else in the CLI
//! writes to stdout for an operator command.

use color_eyre::eyre::Result;
use serde::Serialize;

use crate::{control::dto::Listed, text};

/// Prints `value` as JSON, or the text `human` builds with control characters stripped from every line.
pub(super) fn emit<T: Serialize>(json: bool, value: &T, human: impl FnOnce() -> String) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", text::sanitize_lines(&human()));
    }
    Ok(())
}

/// Prints `items` as JSON, or as a table of `headers` with one `row` per item.
pub(super) fn list<T: Serialize>(
    json: bool,
    items: &[T],
    headers: &[&str],
    row: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    emit(json, &items, || table(headers, items.iter().map(row).collect()))
}

/// Prints a page of a list as JSON, or as a table of `headers` with one `row` per item, followed by the
/// option that fetches the next page when there is one.
pub(super) fn page<T: Serialize>(
    json: bool,
    listed: &Listed<T>,
    headers: &[&str],
    row: impl Fn(&T) -> Vec<String>,
) -> Result<()> {
    emit(json, listed, || {
        let next = listed
            .next_cursor
            .as_ref()
            .map(|c| format!("(more: --cursor {c})\n"))
            .unwrap_or_default();
        table(headers, listed.items.iter().map(row).collect()) + &next
    })
}

/// Renders rows as left-aligned columns separated by two spaces; cells are sanitised before they are
/// measured, so hostile text neither reaches the terminal nor skews the columns.
pub(super) fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.iter().map(|c| text::sanitize(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ");
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(headers.iter().map(|h| (*h).to_owned()).collect());
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let t = table(&["A", "BB"], vec![vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "A    BB\nxxx  y\n");
    }

    #[test]
    fn table_cells_are_sanitised_before_measuring() {
        let t = table(&["A", "B"], vec![vec!["x\u{1b}[2J\u{7}".into(), "y\u{9b}\nz".into()]]);
        assert_eq!(t, "A     B\nx[2J  yz\n");
    }
}
