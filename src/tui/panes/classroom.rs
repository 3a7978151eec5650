//! The Classroom pane: the instructor's view of a class (`opdesk workshop --seats N`). One row per seat, one
//! column per step of the flow (wallet read, incoming payment, quote, grant requested, approved, paid) with the
//! time it first happened, and what the seat does next; the title counts the seats that paid and those waiting
//! for their owner. Every desk of the console answers for its part of the class (`Query::Classroom`). It
//! reloads a second after events and every two seconds anyway — while seats exist even out of view, so that
//! a seat's first payment reaches the flash line wherever the instructor is.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::Line,
    widgets::Cell,
};
use time::{Duration, OffsetDateTime};

use super::{Cx, Row, Table, View};
use crate::{
    control::classroom::{SeatProgress, Step},
    tui::{
        pane::{Pace, Pane},
        theme::Theme,
        widgets::{kv::kv, table::table, time::relative},
    },
};

const PACE: Pace = Pace {
    after_events: Duration::seconds(1),
    poll: Some(Duration::seconds(2)),
    give_up: Duration::seconds(10),
};

/// The Classroom pane's state.
#[derive(Debug, Clone, Default)]
pub struct Classroom {
    pub table: Table<SeatProgress>,
}

impl Row for SeatProgress {
    fn haystack(&self) -> String {
        format!("{} {}", self.name(), next_words(self))
    }
    fn key(&self) -> String {
        self.name()
    }
}

/// A time of day as the table shows it (UTC, to the second).
fn clock(t: OffsetDateTime) -> String {
    crate::clock::format_ts(t).get(11..19).unwrap_or_default().to_owned()
}

/// What the seat does next, short for the table.
fn next_short(p: &SeatProgress) -> String {
    match p.next() {
        None => match p.step(Step::Paid).map_or(0, |d| d.count) {
            1 => "paid".to_owned(),
            n => format!("paid ×{n}"),
        },
        Some(Step::WalletRead) => "not started".to_owned(),
        Some(Step::Incoming) => "incoming payment".to_owned(),
        Some(Step::Quote) => "quote".to_owned(),
        Some(Step::GrantRequested) => "grant".to_owned(),
        Some(Step::Approved) => "owner to approve".to_owned(),
        Some(Step::Paid) => "paying".to_owned(),
    }
}

/// What the seat does next, in words.
fn next_words(p: &SeatProgress) -> String {
    match p.next() {
        None => "done: it paid".to_owned(),
        Some(s) => format!("waiting for {}", s.words()),
    }
}

impl Classroom {
    /// A load's rows; the flash line's news when seats paid for the first time since the last load.
    pub fn on_loaded(&mut self, rows: Vec<SeatProgress>) -> Option<String> {
        let had_paid: std::collections::HashSet<u8> = self
            .table
            .items
            .iter()
            .filter(|p| p.step(Step::Paid).is_some())
            .map(|p| p.seat)
            .collect();
        let first: Vec<String> = if self.table.loaded {
            rows.iter()
                .filter(|p| p.step(Step::Paid).is_some() && !had_paid.contains(&p.seat))
                .map(SeatProgress::name)
                .collect()
        } else {
            Vec::new()
        };
        self.table.set(rows, None, false);
        if first.is_empty() {
            return None;
        }
        let paid = self.paid();
        let seats = self.table.items.len();
        Some(format!(
            "{} completed {} first payment ({paid} of {seats} seats have paid)",
            first.join(", "),
            if first.len() == 1 { "its" } else { "their" }
        ))
    }

    fn paid(&self) -> usize {
        self.table.items.iter().filter(|p| p.next().is_none()).count()
    }
}

impl View for Classroom {
    listed_by_table!();

    /// While seats exist it keeps loading out of view too (their first payments reach the flash line).
    fn pace(&self, _cx: &Cx<'_>) -> Option<(Pace, bool)> {
        Some((PACE, self.table.items.is_empty()))
    }

    fn draw(&self, _cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        let waiting = w.items.iter().filter(|p| p.next() == Some(Step::Approved)).count();
        let mut tags = Vec::new();
        if !w.items.is_empty() {
            tags.push(format!("{}/{} paid", self.paid(), w.items.len()));
        }
        if waiting > 0 {
            tags.push(format!("{waiting} waiting for their owner"));
        }
        let mut header = vec!["SEAT"];
        header.extend(Step::ALL.iter().map(|s| s.title()));
        header.push("NEXT");
        let mut widths = vec![Constraint::Length(6)];
        widths.extend(Step::ALL.iter().map(|_| Constraint::Length(8)));
        widths.push(Constraint::Min(8));
        table(
            &w.view(
                Pane::Classroom,
                &tags,
                "no seats here: `opdesk workshop --seats N` seats a class",
            ),
            theme,
            f,
            area,
            &header,
            &widths,
            (w.loaded, w.loading, w.items.len()),
            |i| {
                let p = &w.items[i];
                let next = p.next();
                let mut cells = vec![Cell::from(p.name())];
                cells.extend(Step::ALL.iter().map(|s| match p.step(*s) {
                    Some(d) => Cell::from(clock(d.first_at)).style(theme.ok),
                    None if next == Some(*s) => Cell::from("…").style(theme.pending),
                    None => Cell::from("·").style(theme.dim),
                }));
                let style = match next {
                    None => theme.ok,
                    Some(Step::Approved) => theme.pending,
                    Some(_) => theme.dim,
                };
                cells.push(Cell::from(next_short(p)).style(style));
                cells
            },
        );
    }

    fn detail(&self, cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let p = self.table.selection()?;
        let mut lines = vec![kv(theme, "next", next_words(p))];
        for s in Step::ALL {
            let text = match p.step(s) {
                None => "not yet".to_owned(),
                Some(d) => {
                    let mut t = format!("{} ({})", clock(d.first_at), relative(&d.first_at, cx.now));
                    if d.count > 1 {
                        t.push_str(&format!(", {} times", d.count));
                    }
                    if s == Step::Approved {
                        t.push_str(&match p.approved_by_owner {
                            0 => " — by the operator".to_owned(),
                            n if n == d.count => " — by the owner on the interaction page".to_owned(),
                            n => format!(" — {n} by the owner on the interaction page, the rest by the operator"),
                        });
                    }
                    t
                }
            };
            lines.push(kv(theme, s.title(), text));
        }
        Some((format!(" {} ", p.name()), lines))
    }

    fn crumb(&self) -> Option<String> {
        self.table.selection().map(SeatProgress::name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::classroom::Done;

    fn seat(n: u8, steps: usize) -> SeatProgress {
        let at = crate::clock::ts("2026-11-21T11:58:00Z");
        let mut p = SeatProgress {
            seat: n,
            steps: [None; 6],
            approved_by_owner: 0,
        };
        for (i, slot) in p.steps.iter_mut().enumerate().take(steps) {
            *slot = Some(Done {
                first_at: at + Duration::seconds(i64::try_from(i).unwrap() * 7),
                count: 1,
            });
        }
        p
    }

    #[test]
    fn a_seats_first_payment_is_news_once_and_not_on_the_first_load() {
        let mut c = Classroom::default();
        assert_eq!(
            c.on_loaded(vec![seat(1, 6), seat(2, 4)]),
            None,
            "the first load is no news"
        );
        assert_eq!(c.on_loaded(vec![seat(1, 6), seat(2, 4)]), None);
        let news = c.on_loaded(vec![seat(1, 6), seat(2, 6), seat(3, 1)]).unwrap();
        assert_eq!(news, "seat02 completed its first payment (2 of 3 seats have paid)");
        assert_eq!(c.on_loaded(vec![seat(1, 6), seat(2, 6), seat(3, 1)]), None);
        assert_eq!(next_short(&seat(3, 4)), "owner to approve");
        assert_eq!(next_short(&seat(3, 0)), "not started");
    }
}
