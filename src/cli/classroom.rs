//! `opdesk classroom`: a class's seats (`opdesk workshop --seats N`), one row per seat with the time of each step
//! of the flow and what it does next, as the console's Classroom shows them. On a desk of a running workshop
//! the whole class (both desks' parts); on the data dir alone, that desk's part. Prints only through
//! [`super::print`].

use time::OffsetDateTime;

use super::print::{Columns, Human};
use crate::control::classroom::{SeatProgress, Step};

/// A step's cell: its time of day (UTC), `-` when not taken.
fn at(p: &SeatProgress, s: Step) -> String {
    p.step(s)
        .map(|d| {
            crate::clock::format_ts(d.first_at)
                .get(11..19)
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_else(|| "-".to_owned())
}

/// What the seat does next, at `now`.
fn next(p: &SeatProgress, now: OffsetDateTime) -> String {
    if p.must_ask_again(now) {
        return "expired — ask again".to_owned();
    }
    if p.locked_out && p.awaits_owner(now) {
        return format!("locked out — opdesk grants unlock --wallet {}", p.name());
    }
    match p.next() {
        None => match p.step(Step::Paid).map_or(0, |d| d.count) {
            1 => "paid".to_owned(),
            n => format!("paid ×{n}"),
        },
        Some(Step::Approved) => "owner to approve".to_owned(),
        Some(Step::WalletRead) => "not started".to_owned(),
        Some(s) => format!("waiting for {}", s.words()),
    }
}

impl Human for SeatProgress {
    const COLUMNS: Columns<Self> = &[
        ("SEAT", |p| p.name()),
        ("WALLET", |p| at(p, Step::WalletRead)),
        ("INCOMING", |p| at(p, Step::Incoming)),
        ("QUOTE", |p| at(p, Step::Quote)),
        ("GRANT", |p| at(p, Step::GrantRequested)),
        ("APPROVED", |p| at(p, Step::Approved)),
        ("PAID", |p| at(p, Step::Paid)),
        ("NEXT", |p| next(p, OffsetDateTime::now_utc())),
    ];
}
