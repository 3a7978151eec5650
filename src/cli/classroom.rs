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

impl Human for SeatProgress {
    const COLUMNS: Columns<Self> = &[
        ("SEAT", |p| p.name()),
        ("WALLET", |p| at(p, Step::WalletRead)),
        ("INCOMING", |p| at(p, Step::Incoming)),
        ("QUOTE", |p| at(p, Step::Quote)),
        ("GRANT", |p| at(p, Step::GrantRequested)),
        ("APPROVED", |p| at(p, Step::Approved)),
        ("PAID", |p| at(p, Step::Paid)),
        ("NEXT", |p| p.what_next(OffsetDateTime::now_utc(), false)),
    ];
}
