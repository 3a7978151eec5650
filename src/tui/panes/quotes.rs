//! The Quotes pane: quotes with their debit and receive amounts, the rate they come to (what one unit of
//! the debit asset delivers, fees included) and an expiry countdown (expired in the failed style).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    widgets::Cell,
};

use super::{Cx, Out, Row, Table, View, list::page_of};
use crate::{
    ase::quotes::QuoteDto,
    control::{Found, Query},
    tui::{
        pane::Pane,
        theme::Theme,
        widgets::{short_id, table::table, time::relative},
    },
};

/// The Quotes pane's state.
#[derive(Debug, Clone, Default)]
pub struct Quotes {
    pub table: Table<QuoteDto>,
}

impl Row for QuoteDto {
    fn haystack(&self) -> String {
        format!("{} {} {}", self.id, self.wallet_address, self.receiver)
    }
    fn key(&self) -> String {
        self.id.clone()
    }
}

impl View for Quotes {
    listed_by_table!();
    fn searches_store(&self) -> bool {
        true
    }
    fn query(&self, cursor: Option<String>, q: Option<String>) -> Option<Query> {
        Some(Query::Quotes {
            filter: page_of(cursor, q),
        })
    }
    fn found(&mut self, found: Found, append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Quotes(l) = found {
            self.table.set(l.items, l.next_cursor, append);
        }
        Vec::new()
    }

    /// Draws the quotes table into `area`.
    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        table(
            &w.view(Pane::Quotes, &[], "nothing here yet"),
            theme,
            f,
            area,
            &["ID", "FROM", "DEBIT", "RECEIVE", "RATE", "EXPIRES"],
            &[
                Constraint::Length(9),
                Constraint::Length(10),
                Constraint::Length(14),
                Constraint::Length(14),
                Constraint::Length(8),
                Constraint::Min(10),
            ],
            (w.loaded, w.loading, w.items.len()),
            |i| {
                let q = &w.items[i];
                let exp = relative(&q.expires_at, cx.now);
                let style = if exp.ends_with("ago") {
                    theme.failed
                } else {
                    theme.pending
                };
                vec![
                    Cell::from(short_id(&q.id)),
                    Cell::from(short_id(&q.wallet_address)),
                    Cell::from(q.debit_amount.to_string()),
                    Cell::from(q.receive_amount.to_string()),
                    Cell::from(rate(q)),
                    Cell::from(exp).style(style),
                ]
            },
        );
    }
}

/// What one major unit of the debit asset delivers in major units of the receive asset, fees included, to
/// four places (rounded down).
pub fn rate(q: &QuoteDto) -> String {
    let (d, r) = (&q.debit_amount, &q.receive_amount);
    let pow = |s: u8| 10u128.checked_pow(u32::from(s));
    let ten_thousandths = pow(d.asset_scale).zip(pow(r.asset_scale)).and_then(|(ds, rs)| {
        u128::from(r.value.get())
            .checked_mul(ds)?
            .checked_mul(10_000)?
            .checked_div(u128::from(d.value.get()).checked_mul(rs)?)
    });
    match ten_thousandths {
        Some(v) => format!("{}.{:04}", v / 10_000, v % 10_000),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::{Amount, Asset, Value};

    fn quote(debit: (u64, &str, u8), receive: (u64, &str, u8)) -> QuoteDto {
        let amount = |(v, c, s): (u64, &str, u8)| Amount::new(Value::new(v).unwrap(), &Asset::new(c, s).unwrap());
        QuoteDto {
            id: "q".into(),
            wallet_address: "w".into(),
            receiver: "r".into(),
            receive_amount: amount(receive),
            debit_amount: amount(debit),
            method: "ilp".into(),
            expires_at: crate::clock::ts("2026-01-01T00:00:00Z"),
            created_at: crate::clock::ts("2026-01-01T00:00:00Z"),
        }
    }

    #[test]
    fn the_rate_is_what_one_debit_unit_delivers() {
        assert_eq!(rate(&quote((1148, "USD", 2), (900, "EUR", 2))), "0.7839");
        assert_eq!(rate(&quote((1000, "USD", 2), (1000, "USD", 2))), "1.0000");
        assert_eq!(rate(&quote((100, "USD", 2), (150, "JPY", 0))), "150.0000");
    }
}
