//! The store transactions of a payment's money: reserving the debit, settling one packet to a local
//! receiver, failing, completing and releasing what was not sent, and the checks a retry must pass. Each
//! runs inside the caller's `BEGIN IMMEDIATE` transaction.

use time::{Duration, OffsetDateTime};

use super::{EngineError, Failure, StepOutcome, asset};
use crate::{
    ase::incoming::state_of,
    clock::format_ts,
    gnap::model::AccessItem,
    interval::RepeatingInterval,
    ledger::{self, AccountKind, Balance, LedgerError, NewTransfer},
    money::{Asset, Value},
    states::{IncomingState, OutgoingState},
    store::{
        self, Connection as SqlConnection, ledger as ledger_repo,
        payments::{self as repo, OutgoingRow},
        stream::StreamPlanRow,
    },
};

/// Reserves `amount` of `sender`'s balance for payment `payment_id`: a pending transfer into a payment
/// account (created here, or `reuse`d on retry). `Ok(Err(failure))` when the balance does not cover it.
pub fn reserve(
    tx: &SqlConnection,
    payment_id: &str,
    sender: &str,
    asset: &Asset,
    amount: i64,
    now: OffsetDateTime,
) -> Result<Result<(String, String), Failure>, LedgerError> {
    reserve_into(tx, payment_id, sender, asset, amount, None, 0, now)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn reserve_into(
    tx: &SqlConnection,
    payment_id: &str,
    sender: &str,
    asset: &Asset,
    amount: i64,
    reuse: Option<&str>,
    attempt: i64,
    now: OffsetDateTime,
) -> Result<Result<(String, String), Failure>, LedgerError> {
    let account = ledger::ops::account(tx, sender)?;
    let available = account.balance.saturating_sub(account.pending_debits);
    if available < amount {
        return Ok(Err((
            "insufficient_balance",
            format!(
                "The sender's available balance of {} does not cover the {} to send.",
                asset.format(available.into()),
                asset.format(amount.into())
            ),
        )));
    }
    let payment_account = match reuse {
        Some(a) => a.to_owned(),
        None => ledger::ops::create_account(tx, AccountKind::Payment, asset, now)?,
    };
    let id = if attempt == 0 {
        format!("reserve-{payment_id}")
    } else {
        format!("reserve-{payment_id}-{attempt}")
    };
    let t = NewTransfer {
        id: id.clone(),
        debit: sender.to_owned(),
        credit: payment_account.clone(),
        amount: Value::from_i64(amount)?,
        pending: true,
        kind: "reservation".into(),
        memo: Some(format!("outgoing payment {payment_id}")),
    };
    ledger::ops::create_transfer(tx, &t, now)?;
    Ok(Ok((id, payment_account)))
}

/// Whether the payment's quote or receiver forbids going on (a permanent failure).
pub(super) fn blocked(
    tx: &SqlConnection,
    p: &OutgoingRow,
    now: OffsetDateTime,
) -> Result<Option<Failure>, EngineError> {
    Ok(receiver(tx, p, now)?.err())
}

/// The payment's local receiver as this transaction sees it (`None` for a receiver on another ASE), or the
/// failure that forbids going on (its quote expired before anything was sent, its receiver is gone,
/// completed or expired).
pub(super) fn receiver(
    tx: &SqlConnection,
    p: &OutgoingRow,
    now: OffsetDateTime,
) -> Result<Result<Option<repo::IncomingRow>, Failure>, EngineError> {
    if let Some(q) = &p.quote_id
        && let Some(q) = repo::quote(tx, q)?
        && q.expires_at <= now
        && p.sent_amount == 0
    {
        return Ok(Err((
            "quote_expired",
            format!(
                "The quote expired at {} before the payment was sent.",
                format_ts(q.expires_at)
            ),
        )));
    }
    let Some(rid) = &p.incoming_payment_id else {
        if store::stream::plan(tx, plan_id(p))?.is_some() {
            // a receiver on another ASE: its state is learned from its STREAM answers
            return Ok(Ok(None));
        }
        return Ok(Err((
            "receiver_unreachable",
            format!("The receiver {} is not an incoming payment of this ASE.", p.receiver),
        )));
    };
    let Some(r) = repo::incoming(tx, rid)? else {
        return Ok(Err((
            "receiver_unreachable",
            format!("The receiver {} no longer exists.", p.receiver),
        )));
    };
    Ok(match state_of(&r, now) {
        IncomingState::Completed => Err((
            "receiver_completed",
            "The receiver was already completed and accepts no more money.".to_owned(),
        )),
        IncomingState::Expired => Err((
            "receiver_expired",
            format!(
                "The receiver expired at {} and accepts no more money.",
                r.expires_at.map(format_ts).unwrap_or_default()
            ),
        )),
        _ => Ok(Some(r)),
    })
}

/// A retried payment counts its full debit against its grant again: refuse if that would pass a limit.
pub(super) fn check_grant_room(tx: &SqlConnection, p: &OutgoingRow) -> Result<(), EngineError> {
    let Some(gid) = &p.grant_id else { return Ok(()) };
    let Some(g) = store::grants::grant(tx, gid)? else {
        return Ok(());
    };
    let access: Vec<AccessItem> =
        serde_json::from_str(&g.access).map_err(|e| EngineError::Internal(format!("stored access: {e}")))?;
    let Some(limits) = access.iter().find_map(|i| match i {
        AccessItem::OutgoingPayment { limits: Some(l), .. } => Some(l.clone()),
        _ => None,
    }) else {
        return Ok(());
    };
    let (from, to) = match limits.interval.as_deref().map(str::parse::<RepeatingInterval>) {
        Some(Ok(iv)) => match iv.window_at(p.created_at) {
            Ok(Some((s, e))) => (format_ts(s), format_ts(e)),
            _ => return Ok(()),
        },
        _ => (String::new(), "~".to_owned()),
    };
    let (sd, sr, _, _) = repo::grant_spent(tx, gid, &from, &to)?.unwrap_or((0, 0, String::new(), 0));
    let extra_debit = i128::from(p.debit_amount - p.sent_amount);
    let extra_receive = i128::from(p.receive_amount - p.delivered_amount);
    let over = |limit: &Option<crate::money::Amount>, spent: i128, extra: i128| {
        limit
            .as_ref()
            .is_some_and(|l| spent + extra > i128::from(l.value.get()))
    };
    if over(&limits.debit_amount, sd, extra_debit) || over(&limits.receive_amount, sr, extra_receive) {
        return Err(EngineError::Refused {
            reason: "limit_exceeded",
            message: "retrying would pass the grant's limit for this interval".into(),
        });
    }
    Ok(())
}

/// Returns what was not sent to the sender: voids a still-pending reservation, or moves the payment
/// account's balance back.
/// The payment as this transaction sees it now.
pub(super) fn reread(tx: &SqlConnection, id: &str) -> Result<OutgoingRow, store::Error> {
    repo::outgoing(tx, id)?.ok_or_else(|| store::Error::Corrupt("payment vanished".into()))
}

/// Completes a sending payment inside `tx`: releases what it still reserves and holds, and marks it completed.
pub(super) fn complete_tx(
    tx: &SqlConnection,
    id: &str,
    now: OffsetDateTime,
    touched: &mut Vec<String>,
) -> Result<(), EngineError> {
    let p = reread(tx, id)?;
    touched.extend(release(tx, &p, now)?.into_iter().map(|b| b.account_id));
    repo::set_state(tx, id, OutgoingState::Sending, OutgoingState::Completed, None, now)?;
    Ok(())
}

pub(super) fn release(tx: &SqlConnection, p: &OutgoingRow, now: OffsetDateTime) -> Result<Vec<Balance>, EngineError> {
    let mut touched = vec![p.account_id.clone()];
    if let Some(res) = &p.reservation_id
        && let Some(t) = ledger_repo::transfer(tx, res)?
        && t.state.is_pending()
    {
        ledger::ops::void(tx, res, now)?;
    }
    if let Some(acct) = &p.payment_account_id {
        let a = ledger::ops::account(tx, acct)?;
        if a.balance > 0 {
            let t = NewTransfer {
                id: format!("refund-{}-{}", p.id, p.attempts),
                debit: acct.clone(),
                credit: p.account_id.clone(),
                amount: Value::from_i64(a.balance)?,
                pending: false,
                kind: "refund".into(),
                memo: Some(format!("unsent part of outgoing payment {}", p.id)),
            };
            ledger::ops::create_transfer(tx, &t, now)?;
        }
        touched.push(acct.clone());
    }
    let ids: Vec<&str> = touched.iter().map(String::as_str).collect();
    Ok(ledger::ops::balances(tx, &ids)?)
}

pub(super) fn fail_tx(
    tx: &SqlConnection,
    p: &OutgoingRow,
    failure: Failure,
    now: OffsetDateTime,
) -> Result<StepOutcome, EngineError> {
    let balances = release(tx, p, now)?;
    repo::set_state(
        tx,
        &p.id,
        OutgoingState::Sending,
        OutgoingState::Failed,
        Some((failure.0, &failure.1)),
        now,
    )?;
    tracing::info!(payment = %p.id, reason = failure.0, "outgoing payment failed: {}", failure.1);
    Ok(StepOutcome {
        payment: repo::outgoing(tx, &p.id)?,
        finished: Some(Err(failure.0.to_owned())),
        received: None,
        balances,
        recorded: Vec::new(),
    })
}

/// One packet of one payment, inside the caller's transaction.
pub(super) fn packet_tx(
    tx: &SqlConnection,
    id: &str,
    now: OffsetDateTime,
    packets: u32,
    interval_ms: u64,
) -> Result<StepOutcome, EngineError> {
    let Some(p) = repo::outgoing(tx, id)? else {
        return Ok(StepOutcome::default());
    };
    if !p.state.is_sending() {
        return Ok(StepOutcome::default());
    }
    let r = match receiver(tx, &p, now)? {
        Err(f) => return fail_tx(tx, &p, f, now),
        Ok(r) => r,
    };
    let (Some(r), Some(payment_account)) = (r, &p.payment_account_id) else {
        return fail_tx(
            tx,
            &p,
            ("internal", "The payment has no receiver or funds record.".into()),
            now,
        );
    };
    // fund: the first packet posts the reservation into the payment account
    if let Some(res) = &p.reservation_id
        && ledger_repo::transfer(tx, res)?.is_some_and(|t| t.state.is_pending())
    {
        ledger::ops::post(tx, res, None, now)?;
    }
    let debit_asset = asset(&p.asset_code, p.asset_scale);
    let receive_asset = asset(&p.receive_asset_code, p.receive_asset_scale);
    // a packet buys the next share of the receive amount and debits what the receiver got so far costs at the
    // payment's own price (the smallest sent total whose share of the receive amount covers it; all of the
    // debit amount once everything is delivered): a packet that delivers nothing debits nothing, and a payment
    // stopped early has paid only for what arrived
    let costs = |delivered: i64| -> i64 {
        let (num, den) = (
            i128::from(delivered) * i128::from(p.debit_amount),
            i128::from(p.receive_amount.max(1)),
        );
        i64::try_from((num + den - 1) / den)
            .unwrap_or(p.debit_amount)
            .min(p.debit_amount)
    };
    let remaining = (p.receive_amount - p.delivered_amount).max(0);
    let share = if packets <= 1 {
        remaining
    } else {
        (p.receive_amount + i64::from(packets) - 1) / i64::from(packets)
    };
    let mut deliver = share.clamp(1, remaining.max(1)).min(remaining);
    // the receiver cannot take all this packet buys: deliver its room, then stop as the remote path does
    // (`receiver_completed`, the rest refunded)
    let room = r.incoming_amount.map(|i| (i - r.received_amount).max(0));
    let short = room.is_some_and(|room| room < deliver);
    if let Some(room) = room.filter(|_| short) {
        deliver = room;
    }
    let new_delivered = p.delivered_amount + deliver;
    let new_sent = if new_delivered >= p.receive_amount {
        p.debit_amount
    } else {
        costs(new_delivered).max(p.sent_amount)
    };
    let packet_debit = new_sent - p.sent_amount;
    // sender side: payment account → settlement of the debit asset
    let mut debit_settlement = None;
    if packet_debit > 0 {
        let settle = ledger::ops::settlement_account(tx, &debit_asset, now)?;
        debit_settlement = Some(settle.clone());
        ledger::ops::create_transfer(
            tx,
            &NewTransfer {
                id: format!("send-{}-{}-{new_sent}", p.id, p.attempts),
                debit: payment_account.clone(),
                credit: settle,
                amount: Value::from_i64(packet_debit)?,
                pending: false,
                kind: "payment".into(),
                memo: None,
            },
            now,
        )?;
    }
    // receiver side: settlement of the receive asset → receiver wallet
    let mut touched = vec![p.account_id.clone(), r.account_id.clone()];
    if deliver > 0 {
        let settle = match debit_settlement {
            Some(s) if receive_asset == debit_asset => s,
            _ => ledger::ops::settlement_account(tx, &receive_asset, now)?,
        };
        ledger::ops::create_transfer(
            tx,
            &NewTransfer {
                id: format!("deliver-{}-{}-{new_sent}", p.id, p.attempts),
                debit: settle,
                credit: r.account_id.clone(),
                amount: Value::from_i64(deliver)?,
                pending: false,
                kind: "payment".into(),
                memo: None,
            },
            now,
        )?;
    }
    let new_received = r.received_amount + deliver;
    let receiver_done = r.incoming_amount.is_some_and(|i| new_received >= i);
    if deliver > 0 || receiver_done {
        repo::credit_incoming(tx, &r.id, new_received, receiver_done, now)?;
    }
    let done = new_sent >= p.debit_amount || new_delivered >= p.receive_amount || receiver_done;
    let next = (!done).then(|| now + Duration::milliseconds(i64::try_from(interval_ms).unwrap_or(0)));
    repo::update_progress(tx, &p.id, new_sent, new_delivered, next, now)?;
    let received = (deliver > 0 || receiver_done).then(|| (r.id.clone(), new_received, receiver_done));
    if short {
        let m = format!(
            "The receiver accepted only {} more before the payment was complete; the rest was not sent.",
            receive_asset.format(deliver.into())
        );
        let mut out = fail_tx(tx, &reread(tx, &p.id)?, ("receiver_completed", m), now)?;
        out.received = received;
        out.balances
            .extend(ledger::ops::balances(tx, &[r.account_id.as_str()])?);
        return Ok(out);
    }
    let mut finished = None;
    if done {
        complete_tx(tx, &p.id, now, &mut touched)?;
        finished = Some(Ok(()));
    }
    touched.sort();
    touched.dedup();
    let ids: Vec<&str> = touched.iter().map(String::as_str).collect();
    Ok(StepOutcome {
        payment: repo::outgoing(tx, &p.id)?,
        finished,
        received,
        balances: ledger::ops::balances(tx, &ids)?,
        recorded: Vec::new(),
    })
}

/// The asset and scale the payment's packets travel in: the plan's link's, else the payment's own.
pub(super) fn plan_asset(p: &OutgoingRow, plan: &StreamPlanRow) -> Asset {
    match &plan.link {
        Some(l) => Asset {
            code: l.asset_code.clone(),
            scale: l.asset_scale,
        },
        None => Asset {
            code: p.asset_code.clone(),
            scale: p.asset_scale,
        },
    }
}

/// The plan of a payment: its quote's, or its own when it was created without a quote.
pub(super) fn plan_id(p: &OutgoingRow) -> &str {
    p.quote_id.as_deref().unwrap_or(&p.id)
}
