//! How operator commands print: any value as JSON with `--json`, else as people read it — a list as one table
//! fed by its type's [`Human::COLUMNS`], one value as its [`Human::card`], with control characters stripped
//! from every line and cell (grants, payments and peers carry client- and peer-supplied text). [`found`]
//! prints whatever a query found. Nothing else in the CLI writes to stdout for an operator command.

use color_eyre::eyre::{Result, eyre};
use serde::Serialize;

use crate::{
    control::{Found, dto::Listed},
    text,
};

/// A table's columns: each header with how a value fills its cell.
pub(super) type Columns<T> = &'static [(&'static str, fn(&T) -> String)];

/// How a value reads for people: a row under its type's columns in a list, a card on its own.
pub(super) trait Human: Serialize + 'static {
    const COLUMNS: Columns<Self> = &[];

    fn card(&self) -> String {
        String::new()
    }
}

/// Prints `value` as JSON, or the text `human` builds with control characters stripped from every line.
pub(super) fn emit<T: Serialize + ?Sized>(json: bool, value: &T, human: impl FnOnce() -> String) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", text::sanitize_lines(&human()));
    }
    Ok(())
}

/// Prints one value: JSON, or its card.
pub(super) fn show<T: Human>(json: bool, value: &T) -> Result<()> {
    emit(json, value, || value.card())
}

/// Prints a list: JSON, or a table.
pub(super) fn list<T: Human>(json: bool, items: &[T]) -> Result<()> {
    emit(json, items, || table(items))
}

/// Prints a page of a list: JSON, or a table followed by the option that fetches the next page, if any.
pub(super) fn page<T: Human>(json: bool, listed: &Listed<T>) -> Result<()> {
    emit(json, listed, || {
        let next = listed.next_cursor.as_ref().map(|c| format!("(more: --cursor {c})\n"));
        table(&listed.items) + &next.unwrap_or_default()
    })
}

/// Prints what a query found.
pub(super) fn found(json: bool, found: &Found) -> Result<()> {
    match found {
        Found::WalletAddresses(v) => list(json, v),
        Found::Wallet(v) => show(json, &**v),
        Found::Keys(v) => show(json, v),
        Found::Balances(v) => list(json, v),
        Found::Grants(v) => list(json, v),
        Found::Grant(v) => show(json, &**v),
        Found::Incoming(v) => page(json, v),
        Found::IncomingPayment(v) => show(json, &**v),
        Found::Outgoing(v) => page(json, v),
        Found::OutgoingPayment(v) => show(json, &**v),
        Found::Quotes(v) => page(json, v),
        Found::Quote(v) => show(json, &**v),
        Found::Webhooks(v) => list(json, v),
        Found::Peers(v) => list(json, v),
        Found::Peer(v) => show(json, &**v),
        Found::Requests(v) => page(json, v),
        Found::Request(v) => show(json, &**v),
        Found::Classroom(v) => list(json, v),
        Found::Thresholds(v) => list(json, v),
        Found::Overview(_) | Found::Server(_) | Found::Wallets(_) | Found::GrantSpending(_) => {
            Err(eyre!("the command line shows no such view"))
        }
    }
}

/// `items` under their type's columns.
pub(super) fn table<T: Human>(items: &[T]) -> String {
    let headers: Vec<&str> = T::COLUMNS.iter().map(|(h, _)| *h).collect();
    let rows = items
        .iter()
        .map(|i| T::COLUMNS.iter().map(|(_, cell)| cell(i)).collect());
    render(&headers, rows.collect())
}

/// Renders rows as left-aligned columns separated by two spaces; cells are sanitised before they are
/// measured, so hostile text neither reaches the terminal nor skews the columns.
fn render(headers: &[&str], rows: Vec<Vec<String>>) -> String {
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
        let t = render(&["A", "BB"], vec![vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "A    BB\nxxx  y\n");
    }

    #[test]
    fn a_types_columns_feed_the_table() {
        #[derive(Serialize)]
        struct Row(u8);
        impl Human for Row {
            const COLUMNS: Columns<Self> = &[
                ("N", |r| r.0.to_string()),
                ("TWICE", |r| (2 * u16::from(r.0)).to_string()),
            ];
        }
        assert_eq!(table(&[Row(1), Row(50)]), "N   TWICE\n1   2\n50  100\n");
        assert_eq!(table::<Row>(&[]), "N  TWICE\n");
    }

    #[test]
    fn table_cells_are_sanitised_before_measuring() {
        let t = render(&["A", "B"], vec![vec!["x\u{1b}[2J\u{7}".into(), "y\u{9b}\nz".into()]]);
        assert_eq!(t, "A     B\nx[2J  yz\n");
    }
}
