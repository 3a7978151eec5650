//! Money moved per minute, for the Overview: the minutes that ended summed once and kept, the open ones read a
//! little at a time ([`Moved`], which [`super::Ledger`] keeps between looks).

use super::LedgerError;
use crate::store::{self, Store};

/// Minutes (`YYYY-MM-DDTHH:MM`) of money moved, summed per asset: (asset code, asset scale, sum).
pub(super) type SummedMinutes = std::collections::BTreeMap<String, Vec<(String, u8, i64)>>;

/// What [`super::Ledger::moved_per_minute`] keeps between looks.
#[derive(Debug, Default)]
pub(super) struct Moved {
    /// Minutes that ended, summed once.
    pub(super) summed: SummedMinutes,
    open: OpenMinutes,
}

/// The open minutes, read a little at a time: each look reads the transfers stamped at or after the newest
/// stamp the last look saw (the transfers at that very stamp again, as one committed since may share it).
/// A transfer committed after a look with an older stamp is missed here; its minute is summed in full once
/// it ended.
#[derive(Debug, Default)]
struct OpenMinutes {
    /// The newest stamp read so far (empty: nothing read).
    newest: String,
    /// What was counted at `newest`, per asset: taken back before it is read again.
    at_newest: Vec<(String, u8, i64)>,
    minutes: SummedMinutes,
}

impl OpenMinutes {
    /// Where the next look reads from, when the open minutes begin at `open`: minutes that ended are
    /// forgotten (they are summed in full), and a reading that fell behind `open` starts over.
    fn read_from(&mut self, open: &str) -> String {
        self.minutes.retain(|minute, _| minute.as_str() >= open);
        if self.newest.as_str() < open {
            *self = Self::default();
            return open.to_owned();
        }
        let minute = self.newest.get(..16).unwrap_or_default().to_owned();
        for (code, scale, sum) in std::mem::take(&mut self.at_newest) {
            add(self.minutes.entry(minute.clone()).or_default(), &code, scale, -sum);
        }
        self.newest.clone()
    }

    /// Adds what a look read: (asset code, asset scale, stamp, sum) from [`store::ledger::moved_since`].
    fn add(&mut self, rows: Vec<(String, u8, String, i64)>) {
        let Some(newest) = rows.iter().map(|r| &r.2).max().cloned() else {
            return;
        };
        for (code, scale, at, sum) in rows {
            if at == newest {
                add(&mut self.at_newest, &code, scale, sum);
            }
            let Some(minute) = at.get(..16) else { continue };
            add(self.minutes.entry(minute.to_owned()).or_default(), &code, scale, sum);
        }
        self.newest = newest;
    }
}

/// Adds `sum` to the asset's entry of `sums`.
fn add(sums: &mut Vec<(String, u8, i64)>, code: &str, scale: u8, sum: i64) {
    match sums.iter_mut().find(|(c, s, _)| c == code && *s == scale) {
        Some(entry) => entry.2 = entry.2.saturating_add(sum),
        None => sums.push((code.to_owned(), scale, sum)),
    }
}

/// A minute is summed for good this long after it ended: a transaction may take its time before it was
/// stamped in a minute and committed after.
const MINUTE_GRACE: time::Duration = time::Duration::seconds(10);
/// Past minutes summed per look at most, newest first (a console that just attached fills its fifteen over a
/// few looks instead of holding the store for all of them at once).
const MINUTES_PER_LOOK: usize = 3;

impl Moved {
    /// Money moved from `since` until `now`: per asset and minute (see [`store::ledger::moved_per_minute`]).
    /// Minutes that ended (with [`MINUTE_GRACE`]) are summed once and kept; each look reads at most
    /// [`MINUTES_PER_LOOK`] past ones not yet summed, and of the open minutes only what was stamped since the
    /// last look ([`OpenMinutes`]). Under load the Overview's fifteen minutes are millions of transfers and an
    /// open minute hundreds of thousands: read on every look, they held the store thread.
    pub(super) async fn look(
        &mut self,
        store: &Store,
        now: time::OffsetDateTime,
        since: time::OffsetDateTime,
    ) -> Result<Vec<(String, u8, String, i64)>, LedgerError> {
        let label = |t: time::OffsetDateTime| crate::clock::format_ts(t).chars().take(16).collect::<String>();
        let open = label(now - MINUTE_GRACE);
        let first = label(since);
        // the past minutes wanted, newest first, that are not summed yet
        let missing: Vec<(String, String)> = {
            let mut out = Vec::new();
            let mut t = since
                .replace_second(0)
                .unwrap_or(since)
                .replace_nanosecond(0)
                .unwrap_or(since);
            while label(t) < open {
                if !self.summed.contains_key(&label(t)) {
                    out.push((label(t), label(t + time::Duration::minutes(1))));
                }
                t += time::Duration::minutes(1);
            }
            out.into_iter().rev().take(MINUTES_PER_LOOK).collect()
        };
        let from = self.open.read_from(&open);
        let (summed, fresh) = store
            .call(move |conn| {
                let mut summed = Vec::new();
                for (from, to) in &missing {
                    summed.push((from.clone(), store::ledger::moved_per_minute(conn, from, to)?));
                }
                Ok::<_, LedgerError>((summed, store::ledger::moved_since(conn, &from)?))
            })
            .await?;
        for (minute, rows) in summed {
            let sums = rows.into_iter().map(|(code, scale, _, sum)| (code, scale, sum));
            self.summed.insert(minute, sums.collect());
        }
        self.summed.retain(|minute, _| *minute >= first);
        self.open.add(fresh);
        let past = self.summed.range(first..open.clone());
        let open_minutes = self.open.minutes.range(open..);
        let mut out: Vec<(String, u8, String, i64)> = past
            .chain(open_minutes)
            .flat_map(|(minute, rows)| rows.iter().map(|(c, s, sum)| (c.clone(), *s, minute.clone(), *sum)))
            .collect();
        out.sort_by(|a, b| (&a.2, &a.0, a.1).cmp(&(&b.2, &b.0, b.1)));
        Ok(out)
    }
}
