//! Recording what a remote payment's packets did: the fulfilled packets of a window committed in one
//! transaction ([`Engine::record_remote`], [`remote_progress_tx`]), a fixed-send payment whose receiver is full
//! completed ([`filled_fixed_send`]), and the durable flight bound that lets a restart reconcile packets whose
//! outcome a crash left unrecorded ([`FlightBound`]). It names nothing of `remote` (which sends and imports
//! this).

use std::time::Duration as StdDuration;

use time::{Duration, OffsetDateTime};

use super::{
    Engine, EngineError, RemoteConnection, StepOutcome, asset,
    tx::{complete_tx, fail_tx, plan_id, reread},
};
use crate::ase::liquidity::ClaimId;
use crate::{
    ilp::sender::Rate,
    ledger::{self, NewTransfer},
    money::{MoneyError, Value},
    store::{
        self, Connection as SqlConnection, ledger as ledger_repo,
        payments::{self as repo, OutgoingRow},
        stream::StreamPlanRow,
    },
};

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

/// Completes a fixed-send payment to a receiver on another ASE that takes no more money after it delivered at
/// least the quoted amount (inside the caller's transaction); `None` when it is not such a payment.
pub(super) fn filled_fixed_send(
    tx: &SqlConnection,
    p: &OutgoingRow,
    now: OffsetDateTime,
) -> Result<Option<StepOutcome>, EngineError> {
    let Some(plan) = store::stream::plan(tx, plan_id(p))? else {
        return Ok(None);
    };
    if !plan.fixed_send || p.delivered_amount < p.receive_amount {
        return Ok(None);
    }
    let committed = plan.link.as_ref().map_or(p.sent_amount, |l| l.sent);
    let nothing = Sent {
        from: u64::try_from(committed).unwrap_or(0),
        source: 0,
        delivered: 0,
        closed: false,
        claim: None,
        filled: true,
    };
    remote_progress_tx(tx, &p.id, &plan.id, nothing, now, 0).map(Some)
}

/// A sending payment to a receiver on another ASE, with its STREAM plan.
pub(super) fn remote_of(c: &SqlConnection, id: &str) -> Result<Option<(OutgoingRow, StreamPlanRow)>, store::Error> {
    let Some(p) = repo::outgoing(c, id)? else {
        return Ok(None);
    };
    if !p.state.is_sending() || p.incoming_payment_id.is_some() {
        return Ok(None);
    }
    Ok(store::stream::plan(c, plan_id(&p))?.map(|plan| (p, plan)))
}

/// Fulfilled STREAM packets (their sum): `source` sent, `delivered` arrived; `closed`: the receiver closed the
/// connection with them; `claim`: their claim on the peer's room, ended when they are recorded; `from`: the
/// committed sent (in the peer's asset) they were sent on top of: they are recorded only on top of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent {
    pub(super) from: u64,
    pub(super) source: u64,
    pub(super) delivered: u64,
    pub(super) closed: bool,
    pub(super) claim: Option<ClaimId>,
    /// The receiver takes no more (fixed-send: the payment is done once it delivered the quoted amount).
    pub(super) filled: bool,
}

/// Records fulfilled STREAM packets (a window's sum: `source` sent in the peer's asset, `delivered` arrived)
/// on top of the committed progress they were sent on (else [`EngineError::Moved`]), and completes the payment
/// when it delivered its receive amount or sent its source amount: the fee (debit less source) goes to the
/// settlement account, the rest back to the sender. The source goes to the account of the plan's peer.
/// Through a peer in another asset (a cross-currency link) the ASE converts: the debit units the packets
/// stand for (counted on the cumulative amount, so rounding never drifts) go from the payment to the
/// settlement account of the debit asset, and the packets from the settlement account of the peer's asset to
/// the peer's account.
pub(super) fn remote_progress_tx(
    tx: &SqlConnection,
    id: &str,
    plan_id: &str,
    sent: Sent,
    now: OffsetDateTime,
    interval_ms: u64,
) -> Result<StepOutcome, EngineError> {
    let Sent {
        from,
        source,
        delivered,
        closed,
        filled,
        ..
    } = sent;
    let Some(p) = repo::outgoing(tx, id)? else {
        return Ok(StepOutcome::default());
    };
    if !p.state.is_sending() {
        tracing::warn!(payment = id, source, delivered, state = %p.state, "a STREAM packet was fulfilled for a payment no longer sending");
        return Ok(StepOutcome::default());
    }
    let Some(payment_account) = p.payment_account_id.clone() else {
        return fail_tx(tx, &p, ("internal", "The payment has no funds record.".into()), now);
    };
    let Some(plan) = store::stream::plan(tx, plan_id)? else {
        return fail_tx(tx, &p, ("internal", "The payment has no STREAM plan.".into()), now);
    };
    // the packets went out on top of what was committed then: if that moved (another node reconciled them
    // from the receiver's total, or an earlier attempt of this record committed after all), they are on the
    // books already
    let committed = plan.link.as_ref().map_or(p.sent_amount, |l| l.sent);
    if u64::try_from(committed).ok() != Some(from) {
        return Err(EngineError::Moved(p.id.clone().into()));
    }
    let link_rate = match &plan.link {
        Some(l) => match Rate::parse(&l.rate) {
            Some(r) => Some((l, r)),
            None => {
                return fail_tx(
                    tx,
                    &p,
                    ("internal", "The payment's stored link rate is invalid.".into()),
                    now,
                );
            }
        },
        None => None,
    };
    if let Some(res) = &p.reservation_id
        && ledger_repo::transfer(tx, res)?.is_some_and(|t| t.state.is_pending())
    {
        ledger::ops::post(tx, res, None, now)?;
    }
    let debit_asset = asset(&p.asset_code, p.asset_scale);
    let source_total = u64::try_from(plan.source_amount).unwrap_or(0);
    let source_i = i64::try_from(source).map_err(|_| MoneyError::Overflow)?;
    let delivered_i = i64::try_from(delivered).map_err(|_| MoneyError::Overflow)?;
    let new_delivered = p.delivered_amount + delivered_i;
    let mut touched = vec![p.account_id.clone(), payment_account.clone()];
    // (sent in the peer's asset after this packet, sent in the debit asset after it, the debit units the
    // whole source stands for)
    let (new_peer_sent, new_sent, debit_source_total) = match &link_rate {
        None => (p.sent_amount + source_i, p.sent_amount + source_i, source_total),
        Some((l, rate)) => {
            let peer_sent = l.sent + source_i;
            let debit_total = u64::try_from(l.debit_source).unwrap_or(0);
            let debit_sent = rate
                .source_ceil(u64::try_from(peer_sent).unwrap_or(0))
                .unwrap_or(debit_total)
                .min(debit_total);
            let debit_sent = i64::try_from(debit_sent)
                .map_err(|_| MoneyError::Overflow)?
                .max(p.sent_amount);
            store::stream::set_link_sent(tx, &plan.id, peer_sent)?;
            (peer_sent, debit_sent, debit_total)
        }
    };
    if source > 0 {
        let peer_asset = match &link_rate {
            Some((l, _)) => asset(&l.asset_code, l.asset_scale),
            None => debit_asset.clone(),
        };
        let peer = ledger::ops::peer_account(tx, &plan.peer, &peer_asset, now)?;
        let memo = Some(format!("STREAM to {} ({} delivered)", p.receiver, delivered));
        let from = if link_rate.is_some() {
            // the conversion: the debit units into the ASE's side of the debit asset, the packet out of its
            // side of the peer's asset
            let converted = new_sent - p.sent_amount;
            if converted > 0 {
                let settle = ledger::ops::settlement_account(tx, &debit_asset, now)?;
                ledger::ops::create_transfer(
                    tx,
                    &NewTransfer {
                        id: format!("fx-{}-{}-{new_peer_sent}", p.id, p.attempts),
                        debit: payment_account.clone(),
                        credit: settle.clone(),
                        amount: Value::from_i64(converted)?,
                        pending: false,
                        kind: "payment".into(),
                        memo: Some(format!(
                            "converted to {} for STREAM through {}",
                            peer_asset.code, plan.peer
                        )),
                    },
                    now,
                )?;
                touched.push(settle);
            }
            ledger::ops::settlement_account(tx, &peer_asset, now)?
        } else {
            payment_account.clone()
        };
        ledger::ops::create_transfer(
            tx,
            &NewTransfer {
                id: format!("stream-{}-{}-{new_peer_sent}", p.id, p.attempts),
                debit: from.clone(),
                credit: peer.clone(),
                amount: Value::new(source)?,
                pending: false,
                kind: "payment".into(),
                memo,
            },
            now,
        )?;
        touched.push(from);
        touched.push(peer);
    }
    // fixed-receive: done at the receive amount; fixed-send: when the whole source went out, or the receiver
    // is full (or closed) after taking at least the quoted amount
    let quoted = new_delivered >= p.receive_amount;
    let done = u64::try_from(new_peer_sent).unwrap_or(0) >= source_total
        || if plan.fixed_send {
            quoted && (filled || closed)
        } else {
            quoted
        };
    let next = (!done).then(|| now + Duration::milliseconds(i64::try_from(interval_ms).unwrap_or(0)));
    repo::update_progress(tx, &p.id, new_sent, new_delivered, next, now)?;
    let mut finished = None;
    if done {
        // the fee stays with the ASE
        let fee = p.debit_amount - i64::try_from(debit_source_total).unwrap_or(p.debit_amount);
        let held = ledger::ops::account(tx, &payment_account)?.balance;
        let fee = fee.min(held);
        if fee > 0 {
            let settle = ledger::ops::settlement_account(tx, &debit_asset, now)?;
            ledger::ops::create_transfer(
                tx,
                &NewTransfer {
                    id: format!("fee-{}-{}", p.id, p.attempts),
                    debit: payment_account.clone(),
                    credit: settle.clone(),
                    amount: Value::from_i64(fee)?,
                    pending: false,
                    kind: "fee".into(),
                    memo: Some(format!("fee of outgoing payment {}", p.id)),
                },
                now,
            )?;
            repo::update_progress(tx, &p.id, new_sent + fee, new_delivered, None, now)?;
            touched.push(settle);
        }
        complete_tx(tx, &p.id, now, &mut touched)?;
        finished = Some(Ok(()));
    } else if closed {
        let p2 = reread(tx, &p.id)?;
        return fail_tx(
            tx,
            &p2,
            (
                "receiver_completed",
                "The receiver closed the connection before the payment was complete.".into(),
            ),
            now,
        );
    }
    touched.sort();
    touched.dedup();
    let ids: Vec<&str> = touched.iter().map(String::as_str).collect();
    Ok(StepOutcome {
        payment: repo::outgoing(tx, &p.id)?,
        finished,
        received: None,
        balances: ledger::ops::balances(tx, &ids)?,
        recorded: Vec::new(),
    })
}
