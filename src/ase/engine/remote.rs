//! Paying receivers on other ASEs: one STREAM connection per sending payment through the peer that routes
//! to the receiver, each fulfilled packet recorded in one transaction (kept in memory while the store is
//! full, and recorded before anything else is sent).

use super::*;

impl Engine {
    pub(super) async fn drop_connection(&self, id: &str) {
        let taken = self.connections.lock().ok().and_then(|mut m| m.remove(id));
        if let Some(mut c) = taken {
            c.conn.close().await;
        }
    }

    pub(super) fn keep_connection(&self, id: &str, c: RemoteConnection) {
        if let Ok(mut m) = self.connections.lock() {
            m.insert(id.to_owned(), c);
        }
    }

    /// Opens a STREAM connection for a remote payment.
    pub(super) async fn open_connection(
        &self,
        remote: &Remote,
        peer: &crate::ase::peers::Peer,
        plan: &StreamPlanRow,
    ) -> Result<RemoteConnection, (&'static str, String, bool)> {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT};
        let address = Address::new(plan.ilp_address.as_str())
            .map_err(|e| ("internal", format!("The stored ILP address is invalid: {e}"), false))?;
        let secret = URL_SAFE_NO_PAD_INDIFFERENT
            .decode(&plan.shared_secret)
            .map_err(|e| ("internal", format!("The stored shared secret is invalid: {e}"), false))?;
        let max = plan.max_packet_amount.and_then(|m| u64::try_from(m).ok());
        let mut conn = remote.connection(peer, address, &secret, max).ok_or_else(|| {
            let m = format!("The ILP peer {} no longer sends to other ASEs.", peer.name);
            ("receiver_unreachable", m, false)
        })?;
        match conn.connect().await {
            Ok(_) => Ok(RemoteConnection {
                conn,
                room: None,
                stalls: 0,
                unrecorded: None,
            }),
            Err(SendError::Closed(m)) => Err((
                "receiver_completed",
                format!("The receiver closed the connection ({m}) and accepts no more money."),
                false,
            )),
            Err(e) => Err(("receiver_unreachable", e.to_string(), true)),
        }
    }

    /// One STREAM packet of a payment to a receiver on another ASE: sent through the plan's peer, then its
    /// outcome committed in one transaction (payment account → peer account of the debit asset, progress).
    pub(super) async fn remote_packet(&self, p: OutgoingRow, plan: StreamPlanRow) {
        let now = self.clock.now();
        let mut pending = self.connections.lock().ok().and_then(|mut m| {
            let waiting = m.get(&p.id).is_some_and(|e| e.unrecorded.is_some());
            if waiting { m.remove(&p.id) } else { None }
        });
        if let Some(sent) = pending.as_mut().and_then(|e| e.unrecorded.take())
            && let Some(entry) = pending
        {
            // a fulfilled packet the full store could not record: record it first, send nothing else
            return self.record_remote(&p.id, &plan, sent, now, entry).await;
        }
        let pid = p.id.clone();
        let check = self.store.call(move |c| {
            let p = repo::outgoing(c, &pid)?;
            Ok::<_, EngineError>(match p {
                Some(p) => blocked(c, &p, now)?,
                None => None,
            })
        });
        match check.await {
            Ok(Some(f)) => return self.fail(&p.id, f).await,
            Ok(None) => {}
            Err(e) if e.is_full() => return self.pause_for_space(&e),
            Err(e) => return self.transient(&p.id, "internal", &e.to_string()).await,
        }
        let Some(remote) = self.remote.clone() else {
            return self
                .fail(
                    &p.id,
                    (
                        "receiver_unreachable",
                        "No ILP peer is configured to pay other ASEs.".into(),
                    ),
                )
                .await;
        };
        let Some(peer) = remote.peer(&plan.peer) else {
            let m = format!("The ILP peer {} is no longer configured.", plan.peer);
            return self.fail(&p.id, ("receiver_unreachable", m)).await;
        };
        let (Some(estimated), Some(minimum)) = (Rate::parse(&plan.estimated_rate), Rate::parse(&plan.minimum_rate))
        else {
            return self
                .fail(&p.id, ("internal", "The payment's stored rates are invalid.".into()))
                .await;
        };
        let taken = self.connections.lock().ok().and_then(|mut m| m.remove(&p.id));
        let mut entry = match taken {
            Some(e) => e,
            None => match self.open_connection(&remote, &peer, &plan).await {
                Ok(e) => e,
                Err((reason, m, true)) => return self.transient(&p.id, reason, &m).await,
                Err((reason, m, false)) => return self.fail(&p.id, (reason, m)).await,
            },
        };
        let (packets, _) = self.settings.pacing();
        let source_total = u64::try_from(plan.source_amount).unwrap_or(0);
        let chunk = if packets <= 1 {
            u64::MAX
        } else {
            source_total.div_ceil(u64::from(packets))
        };
        let cap = chunk.min(entry.conn.max_packet.unwrap_or(u64::MAX));
        let as_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
        let next = next_packet(
            source_total,
            as_u64(p.receive_amount),
            as_u64(plan.link.as_ref().map_or(p.sent_amount, |l| l.sent)),
            as_u64(p.delivered_amount),
            &estimated,
            &minimum,
            cap,
            entry.room,
        );
        if next.is_none() && entry.room == Some(0) {
            entry.conn.close().await;
            let m = "The receiver accepts no more money before the payment was complete.".to_owned();
            return self.fail(&p.id, ("receiver_completed", m)).await;
        }
        // nothing left to send (e.g. a crash between the last packet and completion): (0, 0) completes it
        let (source, min_dest) = next.unwrap_or_default();
        let Some(claim) = self.claim_room(&p, &peer, source).await else {
            // no room through the peer: the payment waits (see `engine::liquidity`)
            return self.keep_connection(&p.id, entry);
        };
        let verdict = if source == 0 {
            Ok(Verdict::Fulfilled {
                delivered: 0,
                closed: false,
            })
        } else {
            entry.conn.send_money(source, min_dest).await
        };
        if !matches!(verdict, Ok(Verdict::Fulfilled { .. })) {
            self.release_room(claim).await;
        }
        match verdict {
            Ok(Verdict::Fulfilled { delivered, closed }) => {
                entry.stalls = 0;
                entry.room = entry.room.map(|r| r.saturating_sub(delivered));
                let sent = Sent {
                    source,
                    delivered,
                    closed,
                    claim,
                };
                self.record_remote(&p.id, &plan, sent, now, entry).await;
            }
            Ok(Verdict::ReceiverRoom { room: 0 }) => {
                entry.conn.close().await;
                self.fail(
                    &p.id,
                    ("receiver_completed", "The receiver accepts no more money.".into()),
                )
                .await;
            }
            Ok(v @ (Verdict::TooLarge { .. } | Verdict::ReceiverRoom { .. })) => {
                if let Verdict::ReceiverRoom { room } = v {
                    entry.room = Some(room);
                }
                entry.stalls += 1;
                if entry.stalls > MAX_STALLS {
                    entry.conn.close().await;
                    let m = format!("The payment made no progress after {MAX_STALLS} packets ({v:?}).");
                    self.fail(&p.id, ("receiver_unreachable", m)).await;
                } else {
                    self.keep_connection(&p.id, entry);
                }
            }
            Ok(Verdict::RateTooLow { received }) => {
                entry.conn.close().await;
                let m = format!(
                    "A packet of {source} delivered {received}, less than the minimum of {min_dest} (rate {minimum})."
                );
                self.fail(&p.id, ("rate_too_low", m)).await;
            }
            Ok(Verdict::Temporary(m)) => {
                self.keep_connection(&p.id, entry);
                self.transient(&p.id, "receiver_unreachable", &m).await;
            }
            Ok(Verdict::Closed(m)) => {
                entry.conn.close().await;
                let m = format!("The receiver closed the connection ({m}) and accepts no more money.");
                self.fail(&p.id, ("receiver_completed", m)).await;
            }
            Ok(Verdict::Failed(m)) => {
                entry.conn.close().await;
                self.fail(&p.id, ("receiver_unreachable", format!("The packet was rejected: {m}")))
                    .await;
            }
            Err(e) => {
                self.keep_connection(&p.id, entry);
                self.transient(&p.id, "internal", &e.to_string()).await;
            }
        }
    }
}

impl Engine {
    /// Commits one fulfilled STREAM packet of a remote payment. A full store keeps it in the connection to
    /// be recorded first once there is room (nothing else is sent meanwhile), so the money is neither lost
    /// from the books nor sent twice.
    pub(super) async fn record_remote(
        &self,
        id: &str,
        plan: &StreamPlanRow,
        sent: Sent,
        now: OffsetDateTime,
        mut entry: RemoteConnection,
    ) {
        let (_, interval_ms) = self.settings.pacing();
        let (pid, plan_id) = (id.to_owned(), plan.id.clone());
        let result = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let out = remote_progress_tx(&tx, &pid, &plan_id, sent, now, interval_ms)?;
                // the packet is on the books: its claim on the peer's room ends with the same commit
                if let Some(claim) = sent.claim {
                    crate::ase::liquidity::unclaim(&tx, claim)?;
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
                } else {
                    self.keep_connection(id, entry);
                }
            }
            Err(e) if e.is_full() => {
                tracing::warn!(payment = %id, source = sent.source, delivered = sent.delivered, "a fulfilled STREAM packet waits to be recorded until the store has room");
                entry.unrecorded = Some(sent);
                self.keep_connection(id, entry);
                self.pause_for_space(&e);
            }
            Err(e) => {
                // the money moved but the record did not: the log says what to reconcile, and the packet stays
                // in flight through its peer (it is owed) until its claim expires
                tracing::error!(payment = %id, source = sent.source, delivered = sent.delivered, error = %e, "a fulfilled STREAM packet could not be recorded");
                self.keep_connection(id, entry);
                self.transient(id, "internal", &e.to_string()).await;
            }
        }
    }
}

/// The plan of a payment: its quote's, or its own when it was created without a quote.
pub(super) fn plan_id(p: &OutgoingRow) -> &str {
    p.quote_id.as_deref().unwrap_or(&p.id)
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

/// One fulfilled STREAM packet: `source` sent, `delivered` arrived; `closed`: the receiver closed the
/// connection with it; `claim`: its claim on the peer's room, ended when it is recorded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent {
    source: u64,
    delivered: u64,
    closed: bool,
    claim: Option<crate::ase::liquidity::ClaimId>,
}

/// Records one fulfilled STREAM packet (`source` sent in the peer's asset, `delivered` arrived) and completes
/// the payment when it delivered its receive amount or sent its source amount: the fee (debit less source)
/// goes to the settlement account, the rest back to the sender. The source goes to the account of the plan's
/// peer. Through a peer in another asset (a cross-currency link) the ASE converts: the debit units the
/// packet stands for (counted on the cumulative amount, so rounding never drifts) go from the payment to the
/// settlement account of the debit asset, and the packet from the settlement account of the peer's asset to
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
        source,
        delivered,
        closed,
        ..
    } = sent;
    let now_s = format_ts(now);
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
        ledger::ops::post(tx, res, None, &now_s)?;
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
        let peer = ledger::ops::peer_account(tx, &plan.peer, &peer_asset, &now_s)?;
        let memo = Some(format!("STREAM to {} ({} delivered)", p.receiver, delivered));
        let from = if link_rate.is_some() {
            // the conversion: the debit units into the ASE's side of the debit asset, the packet out of its
            // side of the peer's asset
            let converted = new_sent - p.sent_amount;
            if converted > 0 {
                let settle = ledger::ops::settlement_account(tx, &debit_asset, &now_s)?;
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
                    &now_s,
                )?;
                touched.push(settle);
            }
            ledger::ops::settlement_account(tx, &peer_asset, &now_s)?
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
            &now_s,
        )?;
        touched.push(from);
        touched.push(peer);
    }
    let done = new_delivered >= p.receive_amount || u64::try_from(new_peer_sent).unwrap_or(0) >= source_total;
    let next = (!done).then(|| format_ts(now + Duration::milliseconds(i64::try_from(interval_ms).unwrap_or(0))));
    repo::update_progress(tx, &p.id, new_sent, new_delivered, next.as_deref(), &now_s)?;
    let mut finished = None;
    if done {
        // the fee stays with the ASE
        let fee = p.debit_amount - i64::try_from(debit_source_total).unwrap_or(p.debit_amount);
        let held = ledger::ops::account(tx, &payment_account)?.balance;
        let fee = fee.min(held);
        if fee > 0 {
            let settle = ledger::ops::settlement_account(tx, &debit_asset, &now_s)?;
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
                &now_s,
            )?;
            repo::update_progress(tx, &p.id, new_sent + fee, new_delivered, None, &now_s)?;
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
