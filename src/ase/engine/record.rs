//! Recording what a remote payment's packets did: the fulfilled packets of a window committed in one
//! transaction ([`Engine::record_remote`]), and the durable flight bound that lets a restart reconcile packets
//! whose outcome a crash left unrecorded ([`FlightBound`]).

use super::remote::{Sent, remote_progress_tx};
use super::*;

/// The `meta` key of a remote payment's flight bound: how much (in the peer's asset, counted like its sent
/// amount) may have left in all. Written before each window leaves as exactly the committed sent plus that
/// window's packets, so bound − sent is never more than the window in flight; removed when the receiver's
/// totals stop matching and when the payment ends through the engine.
pub(super) fn flight_key(payment: &str) -> String {
    format!("stream-flight:{payment}")
}

/// A payment's flight bound as stored (`"<bound> <until_ms>"`): `bound` see [`flight_key`]; `until_ms` (Unix
/// milliseconds) when the last of its window's packets has expired, so none can be fulfilled after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlightBound {
    pub(super) bound: u64,
    pub(super) until_ms: i64,
}

impl FlightBound {
    pub(super) fn parse(stored: &str) -> Option<Self> {
        let (bound, until) = stored.split_once(' ')?;
        Some(Self {
            bound: bound.parse().ok()?,
            until_ms: until.parse().ok()?,
        })
    }
}

impl std::fmt::Display for FlightBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.bound, self.until_ms)
    }
}

/// Past a packet's expiry, before no packet of a window can still be fulfilled (clocks and transport).
pub(super) const FLIGHT_MARGIN: StdDuration = StdDuration::from_secs(1);

pub(super) fn unix_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

impl Engine {
    /// Commits fulfilled STREAM packets of a remote payment (`sent`: their sum) in one transaction. Returns
    /// the connection when the payment goes on. A full store keeps them in the connection to be recorded
    /// first once there is room (nothing else is sent meanwhile), so the money is neither lost from the books
    /// nor sent twice.
    pub(super) async fn record_remote(
        &self,
        id: &str,
        plan: &StreamPlanRow,
        sent: Sent,
        now: OffsetDateTime,
        mut entry: RemoteConnection,
    ) -> Option<RemoteConnection> {
        let (_, interval_ms) = self.settings.pacing();
        let (pid, plan_id) = (id.to_owned(), plan.id.clone());
        let result = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let out = remote_progress_tx(&tx, &pid, &plan_id, sent, now, interval_ms)?;
                // the packets are on the books: their claim on the peer's room ends with the same commit
                if let Some(claim) = sent.claim {
                    crate::ase::liquidity::unclaim(&tx, claim)?;
                }
                if out.finished.is_some() {
                    store::meta::remove(&tx, &flight_key(&pid))?;
                }
                let out = super::seal(&tx, out, now)?;
                tx.commit()?;
                Ok::<_, EngineError>(out)
            })
            .await;
        match result {
            Ok(out) => {
                self.has_room();
                let finished = out.finished.is_some();
                self.publish(out);
                if finished {
                    entry.conn.close().await;
                    None
                } else {
                    Some(entry)
                }
            }
            Err(EngineError::Moved(_)) => {
                tracing::warn!(payment = %id, source = sent.source, delivered = sent.delivered, "fulfilled STREAM packets were recorded already (the payment moved on since they were sent): the connection is dropped");
                self.release_room(sent.claim).await;
                None
            }
            Err(e) if e.is_full() => {
                tracing::warn!(payment = %id, source = sent.source, delivered = sent.delivered, "fulfilled STREAM packets wait to be recorded until the store has room");
                entry.unrecorded = Some(sent);
                self.keep_connection(id, entry);
                self.pause_for_space(&e);
                None
            }
            Err(e) => {
                // the money moved but the record did not: the flight bound still covers these packets, so the
                // next step, on a new connection (this one dropped, not closed), reconciles them from the
                // receiver's total (see `resume`)
                // (their claim stays: the money is owed through the peer until the claim expires)
                tracing::error!(payment = %id, source = sent.source, delivered = sent.delivered, error = %e, "fulfilled STREAM packets could not be recorded");
                drop(entry);
                self.transient(id, "internal", &e.to_string()).await;
                None
            }
        }
    }
}
