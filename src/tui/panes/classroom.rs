//! The Classroom pane: the instructor's view of a class (`opdesk workshop --seats N`). One row per seat, one
//! column per step of the flow (wallet read, incoming payment, quote, grant requested, approved, paid) with the
//! time it first happened, and what the seat does next; the title counts the seats that paid and those waiting
//! for their owner. It asks for the whole class (`Query::Class`: a workshop's desks each answer for their part,
//! merged; a desk of a running workshop answers for all, so an attached console sees the whole class too). It
//! reloads a second after events and every two seconds anyway — while seats exist even out of view, so that
//! a seat's first payment reaches the flash line wherever the instructor is.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::Line,
    widgets::Cell,
};
use time::{Duration, OffsetDateTime};

use super::{Cx, Level, Out, Row, Table, View};
use crate::{
    control::{
        Found, Query,
        classroom::{SeatProgress, Step},
    },
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

/// What the seat does next, in words.
fn next_words(p: &SeatProgress) -> String {
    match p.next() {
        None => "done: it paid".to_owned(),
        Some(s) => format!("waiting for {}", s.words()),
    }
}

/// The flash line's news: how many have paid, and who just did (`seat14`, `seat14, seat15`, or `seat14 and 4
/// more`).
fn paid_news(first: &[String], paid: usize, seats: usize) -> String {
    let who = match first {
        [one] => one.clone(),
        [a, b] => format!("{a}, {b}"),
        [a, b, c] => format!("{a}, {b}, {c}"),
        [a, rest @ ..] => format!("{a} and {} more", rest.len()),
        [] => String::new(),
    };
    format!("{paid} of {seats} seats have paid · {who} just paid")
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
        Some(paid_news(&first, self.paid(), self.table.items.len()))
    }

    fn paid(&self) -> usize {
        self.table.items.iter().filter(|p| p.next().is_none()).count()
    }
}

impl View for Classroom {
    listed_by_table!();
    fn query(&self, _cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        Some(Query::Class)
    }
    fn found(&mut self, found: Found, _append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        match found {
            Found::Classroom(rows) => self
                .on_loaded(rows)
                .map(|t| Out::Flash(Level::Info, t))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// While seats exist it keeps loading out of view too (their first payments reach the flash line).
    fn pace(&self, _cx: &Cx<'_>) -> Option<(Pace, bool)> {
        Some((PACE, self.table.items.is_empty()))
    }

    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        let now = cx.now;
        let waiting = w.items.iter().filter(|p| p.awaits_owner(now)).count();
        let expired = w.items.iter().filter(|p| p.must_ask_again(now)).count();
        let mut tags = Vec::new();
        if !w.items.is_empty() {
            tags.push(format!("{}/{} paid", self.paid(), w.items.len()));
        }
        if waiting > 0 {
            tags.push(format!("{waiting} waiting for their owner"));
        }
        if expired > 0 {
            tags.push(format!("{expired} to ask again"));
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
                    Some(Step::Approved) if p.must_ask_again(now) => theme.danger,
                    Some(Step::Approved) => theme.pending,
                    Some(_) => theme.dim,
                };
                cells.push(Cell::from(p.what_next(now, true)).style(style));
                cells
            },
        );
    }

    fn detail(&self, cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let p = self.table.selection()?;
        let next = if p.must_ask_again(cx.now) {
            "its grant expired (or was rejected) before the owner approved: its app has to ask again".to_owned()
        } else {
            next_words(p)
        };
        let mut lines = vec![kv(theme, "next", next)];
        if p.failed_sign_ins > 0 {
            let mut t = format!("{} failed owner sign-in(s) on its open grant", p.failed_sign_ins);
            if p.locked_out {
                t.push_str(&format!(
                    " — locked out: `U` on the grant (Grants), or `opdesk grants unlock --wallet {}`",
                    p.name()
                ));
            }
            lines.push(kv(theme, "sign-ins", t));
        }
        if let Some(by) = p.decide_by.filter(|_| p.awaits_owner(cx.now)) {
            lines.push(kv(
                theme,
                "decide by",
                format!("{} ({})", clock(by), relative(&by, cx.now)),
            ));
        }
        for s in Step::ALL {
            let text = match p.step(s) {
                None => "not yet".to_owned(),
                Some(d) => {
                    let mut t = format!("{} ({})", clock(d.first_at), relative(&d.first_at, cx.now));
                    if d.count > 1 {
                        let what = if s == Step::WalletRead { "reads" } else { "times" };
                        t.push_str(&format!(", {} {what}", d.count));
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
            decide_by: None,
            failed_sign_ins: 0,
            locked_out: false,
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
        assert_eq!(news, "2 of 3 seats have paid · seat02 just paid");
        assert_eq!(c.on_loaded(vec![seat(1, 6), seat(2, 6), seat(3, 1)]), None);
        assert_eq!(seat(3, 0).what_next(now(), true), "not started");
    }

    fn now() -> OffsetDateTime {
        crate::clock::ts("2026-11-21T12:00:00Z")
    }

    #[test]
    fn the_news_summarises_a_class_that_pays_at_once() {
        let mut c = Classroom::default();
        c.on_loaded((1..=30).map(|n| seat(n, 4)).collect());
        let news = c.on_loaded((1..=30).map(|n| seat(n, if n <= 15 { 6 } else { 4 })).collect());
        assert_eq!(
            news.as_deref(),
            Some("15 of 30 seats have paid · seat01 and 14 more just paid")
        );
    }

    #[test]
    fn a_grant_past_its_deadline_asks_again_and_no_longer_waits_for_the_owner() {
        let mut waiting = seat(3, 4);
        waiting.decide_by = Some(now() + Duration::minutes(5));
        assert_eq!(waiting.what_next(now(), true), "owner to approve");
        assert!(waiting.awaits_owner(now()));
        let mut expired = waiting.clone();
        expired.decide_by = Some(now() - Duration::seconds(1));
        assert_eq!(expired.what_next(now(), true), "expired — ask again");
        assert!(!expired.awaits_owner(now()) && expired.must_ask_again(now()));
        let rejected = seat(3, 4);
        assert_eq!(rejected.what_next(now(), true), "expired — ask again");
        let mut locked = waiting.clone();
        locked.locked_out = true;
        assert_eq!(locked.what_next(now(), true), "locked out — unlock");
    }
}
