//! Paying receivers on other ASEs: one STREAM connection per sending payment through the peer that routes
//! to the receiver, a window of packets in flight at once, the fulfilled packets of a window recorded in one
//! transaction (kept in memory while the store is full, and recorded before anything else is sent). The
//! window grows (up to 16) only while the receiver's total for the connection matches the books, and falls to
//! one packet after any refusal; a receiver that reports no total, or one that counts other money, gets one
//! packet at a time. A durable flight bound (committed + the window in flight) and that total reconcile
//! packets whose outcome a crash left unrecorded, never attributing more than that window.

use super::liquidity::Room;

use time::OffsetDateTime;

use super::{
    Engine, EngineError, Failure, MAX_IN_FLIGHT, MAX_STALLS, RemoteConnection,
    record::{FLIGHT_MARGIN, FlightBound, Sent, flight_key, unix_ms},
    tx::{blocked, plan_asset},
};
use crate::ase::liquidity::{Claimed, WAIT_REASON};
use crate::{
    ase::remote::Remote,
    ilp::{
        Address,
        sender::{Connection, Rate, SendError, Verdict, next_packet},
    },
    store::{
        self, Connection as SqlConnection,
        payments::{self as repo, OutgoingRow},
        stream::StreamPlanRow,
    },
};

impl Engine {
    /// A STREAM connection for a remote payment, not yet opened (nothing sent).
    fn new_connection(
        &self,
        remote: &Remote,
        peer: &crate::ase::peers::Peer,
        plan: &StreamPlanRow,
    ) -> Result<Connection, (&'static str, String, bool)> {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT};
        let address = Address::new(plan.ilp_address.as_str())
            .map_err(|e| ("internal", format!("The stored ILP address is invalid: {e}"), false))?;
        let secret = URL_SAFE_NO_PAD_INDIFFERENT
            .decode(&plan.shared_secret)
            .map_err(|e| ("internal", format!("The stored shared secret is invalid: {e}"), false))?;
        let max = plan.max_packet_amount.and_then(|m| u64::try_from(m).ok());
        remote.connection(peer, address, &secret, max).ok_or_else(|| {
            let m = format!("The ILP peer {} no longer sends to other ASEs.", peer.name);
            ("receiver_unreachable", m, false)
        })
    }

    /// Opens a STREAM connection for a remote payment.
    pub(super) async fn open_connection(
        &self,
        remote: &Remote,
        peer: &crate::ase::peers::Peer,
        plan: &StreamPlanRow,
    ) -> Result<RemoteConnection, (&'static str, String, bool)> {
        let conn = self.new_connection(remote, peer, plan)?;
        Self::connect(conn).await
    }

    /// Says hello on a connection (learning the receiver's asset).
    async fn connect(mut conn: Connection) -> Result<RemoteConnection, (&'static str, String, bool)> {
        match conn.connect().await {
            Ok(_) => Ok(RemoteConnection::new(conn, false)),
            Err(SendError::Closed(m)) => Err((
                "receiver_completed",
                format!("The receiver closed the connection ({m}) and accepts no more money."),
                false,
            )),
            Err(e) => Err(("receiver_unreachable", e.to_string(), true)),
        }
    }

    /// One window of STREAM packets of a payment to a receiver on another ASE: up to
    /// [`RemoteConnection::window`] packets in flight at once through the plan's peer (one claim on its room
    /// for all of them), then the fulfilled ones committed together in one transaction (payment account →
    /// peer account of the debit asset, progress). Before a window of a receiver whose totals match leaves,
    /// the payment's flight bound (what may have been sent in all) is durable, so a crash with packets in
    /// flight is reconciled from the receiver's total when the payment resumes on a new connection
    /// ([`Engine::resume`]).
    pub(super) async fn remote_packet(&self, p: OutgoingRow, plan: StreamPlanRow) {
        let now = self.clock.now();
        let mut pending = self.connections.lock().ok().and_then(|mut m| {
            let waiting = m.get(p.id.as_str()).is_some_and(|e| e.unrecorded.is_some());
            if waiting { m.remove(p.id.as_str()) } else { None }
        });
        if let Some(sent) = pending.as_mut().and_then(|e| e.unrecorded.take())
            && let Some(entry) = pending
        {
            // fulfilled packets the full store could not record: record them first, send nothing else
            if let Some(entry) = self.record_remote(&p.id, &plan, sent, now, entry).await {
                self.keep_connection(&p.id, entry);
            }
            return;
        }
        // a new connection (after a restart, or a record that failed) first reads the payment's flight bound,
        // with the check whether the payment may go on; on a kept connection that check rides with the
        // window's bound write (one store call per window besides its record)
        let fresh = !self.connections.lock().is_ok_and(|m| m.contains_key(p.id.as_str()));
        // whether a fresh connection found a bound stored (it writes over it or removes it with its first window)
        let mut stored_bound = false;
        if fresh {
            let (pid, key) = (p.id.clone(), flight_key(&p.id));
            let check = self.store.call(move |c| {
                let bound = store::meta::get(c, &key)?.and_then(|v| FlightBound::parse(&v));
                Ok::<_, EngineError>((blocked_now(c, &pid, now)?, bound))
            });
            let (blocked, bound) = match check.await {
                Ok(checked) => checked,
                Err(e) if e.is_full() => return self.pause_for_space(&e),
                Err(e) => return self.transient(&p.id, "internal", &e.to_string()).await,
            };
            // packets a crash left unrecorded are reconciled before anything else: even a payment that may not
            // go on (its quote expired before anything was committed) may have sent them
            if let Some(bound) = bound
                && self.resume(&p, &plan, bound, now).await
            {
                return;
            }
            stored_bound = bound.is_some();
            if let Some(f) = blocked {
                return self.fail(&p.id, f).await;
            }
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
        // a peer re-created or re-configured in another asset or scale than planned: never the wrong unit
        let planned = plan_asset(&p, &plan);
        if peer.asset != planned {
            let m = format!(
                "The ILP peer {} now carries {}/{}, not the {}/{} this payment was planned in.",
                plan.peer, peer.asset.code, peer.asset.scale, planned.code, planned.scale
            );
            return self.fail(&p.id, ("peer_changed", m)).await;
        }
        let (Some(estimated), Some(minimum)) = (Rate::parse(&plan.estimated_rate), Rate::parse(&plan.minimum_rate))
        else {
            return self
                .fail(&p.id, ("internal", "The payment's stored rates are invalid.".into()))
                .await;
        };
        let taken = self.connections.lock().ok().and_then(|mut m| m.remove(p.id.as_str()));
        let mut entry = match taken {
            Some(e) => e,
            None => match self.open_connection(&remote, &peer, &plan).await {
                Ok(e) => e,
                Err((reason, m, true)) => return self.transient(&p.id, reason, &m).await,
                Err((reason, m, false)) => return self.fail(&p.id, (reason, m)).await,
            },
        };
        if fresh {
            entry.bound_stored = stored_bound;
        }
        let (packets, interval_ms) = self.settings.pacing();
        let source_total = u64::try_from(plan.source_amount).unwrap_or(0);
        let chunk = if packets <= 1 {
            u64::MAX
        } else {
            source_total.div_ceil(u64::from(packets))
        };
        let cap = chunk.min(entry.conn.max_packet.unwrap_or(u64::MAX));
        // paced payments (the demo presets) keep one packet in flight, so their progress stays visible
        let window = if packets > 1 || interval_ms > 0 || !entry.totals_match {
            1
        } else {
            entry.window.clamp(1, MAX_IN_FLIGHT)
        };
        let as_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
        let sent = as_u64(plan.link.as_ref().map_or(p.sent_amount, |l| l.sent));
        let delivered = as_u64(p.delivered_amount);
        // fixed-receive stops at the receive amount; fixed-send spends its whole source (the receiver's room
        // still bounds it) and the receiver gets what it buys, at least the quoted amount
        let target = if plan.fixed_send {
            u64::MAX
        } else {
            as_u64(p.receive_amount)
        };
        // the window: each packet planned as if those before it arrive at the estimated rate, so the sum in
        // flight never passes what may be sent nor (at the estimate) what is left to deliver or the room
        let mut window_packets: Vec<(u64, u64)> = Vec::new();
        let (mut planned_source, mut planned_dest) = (0u64, 0u64);
        for i in 0..window {
            let room = entry.room.map(|r| r.saturating_sub(planned_dest));
            if i > 0 && room == Some(0) {
                break;
            }
            let Some((source, min_dest)) = next_packet(
                source_total,
                target,
                sent.saturating_add(planned_source),
                delivered.saturating_add(planned_dest),
                &estimated,
                &minimum,
                cap,
                room,
            ) else {
                break;
            };
            window_packets.push((source, min_dest));
            planned_source = planned_source.saturating_add(source);
            planned_dest = planned_dest.saturating_add(estimated.dest_floor(source).unwrap_or(min_dest).max(min_dest));
        }
        if window_packets.is_empty() {
            // a fixed-send payment whose receiver is full after it delivered at least what was quoted is done
            let filled = plan.fixed_send && delivered >= as_u64(p.receive_amount);
            if entry.room == Some(0) && !filled {
                entry.conn.close().await;
                let m = "The receiver accepts no more money before the payment was complete.".to_owned();
                return self.fail(&p.id, ("receiver_completed", m)).await;
            }
            // nothing left to send (e.g. a crash between the last packet and completion): (0, 0) completes it
            let nothing = Sent {
                from: sent,
                source: 0,
                delivered: 0,
                closed: false,
                claim: None,
                filled,
            };
            if let Some(entry) = self.record_remote(&p.id, &plan, nothing, now, entry).await {
                self.keep_connection(&p.id, entry);
            }
            return;
        }
        // one claim on the peer's room for the whole window, ended in the transaction that records it
        let claim = match self.claim_window(&p, &peer, &mut window_packets).await {
            Room::Go(claim) => claim,
            // no room through the peer: the payment waits (see `engine::liquidity`)
            Room::Wait => return self.keep_connection(&p.id, entry),
            Room::Stop => return entry.conn.close().await,
        };
        let planned_source = window_packets.iter().fold(0u64, |a, (s, _)| a.saturating_add(*s));
        // the flight bound is durable before any of the window leaves: exactly what is committed plus this
        // window, so a reconciliation never attributes more than the window that was in flight. Only a receiver
        // whose totals matched the books gets one: without it, a total after a crash (none, or one counting
        // other senders' money) is not trusted, and at most the one packet in flight is unaccounted for.
        // (written for every such window: its packets' expiry moves on even when the bound does not)
        let needed = entry.totals_match.then(|| FlightBound {
            bound: sent.saturating_add(planned_source),
            until_ms: unix_ms(now + entry.conn.expiry() + FLIGHT_MARGIN),
        });
        let write = match needed {
            Some(b) => Some(Some(b)),
            None => entry.bound_stored.then_some(None),
        };
        if !fresh || write.is_some() {
            let (pid, key, check) = (p.id.clone(), flight_key(&p.id), !fresh);
            let written = self.store.call(move |c| {
                if check && let Some(f) = blocked_now(c, &pid, now)? {
                    return Ok(Some(f));
                }
                match write {
                    Some(Some(bound)) => store::meta::set(c, &key, &bound.to_string())?,
                    Some(None) => store::meta::remove(c, &key)?,
                    None => {}
                }
                Ok::<_, EngineError>(None)
            });
            match written.await {
                Ok(None) => entry.bound_stored = needed.is_some(),
                Ok(Some(f)) => {
                    self.release_room(claim).await;
                    self.keep_connection(&p.id, entry);
                    return self.fail(&p.id, f).await;
                }
                Err(e) => {
                    self.release_room(claim).await;
                    self.keep_connection(&p.id, entry);
                    if e.is_full() {
                        return self.pause_for_space(&e);
                    }
                    return self.transient(&p.id, "internal", &e.to_string()).await;
                }
            }
        }
        let mut built = Vec::with_capacity(window_packets.len());
        for (source, min_dest) in &window_packets {
            match entry.conn.money_packet(*source, *min_dest) {
                Ok(b) => built.push(b),
                Err(e) => {
                    self.release_room(claim).await;
                    self.keep_connection(&p.id, entry);
                    return self.transient(&p.id, "internal", &e.to_string()).await;
                }
            }
        }
        let pipe = entry.conn.pipe();
        let verdicts: Vec<Verdict> = if built.len() == 1 {
            vec![pipe.send_money(&built[0]).await]
        } else {
            futures_util::future::join_all(built.iter().map(|b| pipe.send_money(b))).await
        };
        // what the window did: the fulfilled packets together, and the most serious other answer
        let mut fulfilled = Sent {
            from: sent,
            source: 0,
            delivered: 0,
            closed: false,
            claim,
            filled: false,
        };
        let mut any_fulfilled = false;
        let mut reported: Option<u64> = None;
        let mut worst: Option<Verdict> = None;
        for (verdict, (source, _)) in verdicts.into_iter().zip(&window_packets) {
            entry.conn.learn(&verdict);
            match verdict {
                Verdict::Fulfilled {
                    delivered,
                    closed,
                    total,
                } => {
                    any_fulfilled = true;
                    // the receiver's largest total: the one it gave for the last of them it took
                    reported = reported.max(total);
                    fulfilled.source += source;
                    fulfilled.delivered = fulfilled.delivered.saturating_add(delivered);
                    fulfilled.closed |= closed;
                }
                other => {
                    if worst.as_ref().is_none_or(|w| severity(&other) > severity(w)) {
                        worst = Some(other);
                    }
                }
            }
        }
        if !any_fulfilled {
            self.release_room(claim).await;
        }
        if any_fulfilled {
            entry.stalls = 0;
            entry.room = entry.room.map(|r| r.saturating_sub(fulfilled.delivered));
            entry.totals_match = reported == Some(delivered.saturating_add(fulfilled.delivered));
            entry.window = if worst.is_none() && entry.totals_match {
                entry.window.saturating_mul(2).clamp(1, MAX_IN_FLIGHT)
            } else {
                1
            };
            match self.record_remote(&p.id, &plan, fulfilled, now, entry).await {
                Some(e) => entry = e,
                None => return,
            }
        }
        let Some(verdict) = worst else {
            return self.keep_connection(&p.id, entry);
        };
        // back off to one packet in flight until the path takes packets again
        entry.window = 1;
        let minimum_s = minimum.to_string();
        self.remote_refusal(&p.id, entry, verdict, any_fulfilled, &minimum_s)
            .await;
    }

    /// Claims the peer's room for a window of packets, in one claim. When the peer has no room for the whole
    /// window, the window shrinks to its first packet, claimed as a lone packet is (and waiting for liquidity
    /// when there is none for it).
    async fn claim_window(
        &self,
        p: &OutgoingRow,
        peer: &crate::ase::peers::Peer,
        packets: &mut Vec<(u64, u64)>,
    ) -> Room {
        if packets.len() > 1
            && let Some(l) = &self.liquidity
            && p.failure_reason.as_deref() != Some(WAIT_REASON)
        {
            let sum = packets.iter().fold(0u64, |a, (s, _)| a.saturating_add(*s));
            match l.claim(peer, sum, &p.id).await {
                Ok(Claimed::Room(claim)) => return Room::Go(Some(claim)),
                Ok(Claimed::Stopped) => return Room::Stop,
                Ok(Claimed::NoRoom(_)) | Err(_) => {}
            }
        }
        packets.truncate(1);
        let first = packets.first().map_or(0, |(s, _)| *s);
        self.claim_room(p, peer, first).await
    }

    /// What a window's most serious answer other than a fulfillment means for the payment (its fulfilled
    /// packets are committed already). `after_fulfilled`: some packets of the window were fulfilled, so a
    /// room the receiver gave may predate them and is not trusted.
    async fn remote_refusal(
        &self,
        id: &str,
        mut entry: RemoteConnection,
        verdict: Verdict,
        after_fulfilled: bool,
        minimum: &str,
    ) {
        match verdict {
            Verdict::Fulfilled { .. } => self.keep_connection(id, entry),
            Verdict::ReceiverRoom { room: 0 } if !after_fulfilled => {
                entry.conn.close().await;
                self.fail(id, ("receiver_completed", "The receiver accepts no more money.".into()))
                    .await;
            }
            v @ (Verdict::TooLarge { .. } | Verdict::ReceiverRoom { .. }) => {
                if let Verdict::ReceiverRoom { room } = v {
                    entry.room = if after_fulfilled { None } else { Some(room) };
                }
                entry.stalls += 1;
                if entry.stalls > MAX_STALLS {
                    entry.conn.close().await;
                    let m = format!("The payment made no progress after {MAX_STALLS} packets ({v:?}).");
                    self.fail(id, ("receiver_unreachable", m)).await;
                } else {
                    self.keep_connection(id, entry);
                }
            }
            Verdict::RateTooLow { received } => {
                entry.conn.close().await;
                let m = format!("A packet delivered {received}, less than its minimum at the rate {minimum}.");
                self.fail(id, ("rate_too_low", m)).await;
            }
            Verdict::Temporary(m) => {
                self.keep_connection(id, entry);
                self.transient(id, "receiver_unreachable", &m).await;
            }
            Verdict::Closed(m) => {
                entry.conn.close().await;
                let m = format!("The receiver closed the connection ({m}) and accepts no more money.");
                self.fail(id, ("receiver_completed", m)).await;
            }
            Verdict::Failed(m) => {
                entry.conn.close().await;
                self.fail(id, ("receiver_unreachable", format!("The packet was rejected: {m}")))
                    .await;
            }
        }
    }

    /// Before a payment sends on a new connection (after a restart, or after a record that failed): packets
    /// of an earlier connection may have been fulfilled without their outcome being committed. The durable
    /// flight bound says whether any can have been (a bound above the committed sent); then the receiver's
    /// total for the connection (the same address, so the same connection to it) says what arrived. It is
    /// asked before the hello, so that a receiver the lost window completed still answers (with its close).
    /// What arrived beyond the committed delivery is recorded; its source at the estimated rate, and never
    /// more than the bound less the committed sent: the sum of the lost window's packets. So that money is
    /// neither sent again nor lost from the books. Returns true when this step is over (something recorded,
    /// or a retry scheduled); false to go on as usual. `bound`: the durable flight bound.
    ///
    /// The receiver is asked only once the lost window's packets have expired (until then some may still be
    /// on their way, and a total without them would send them again): the payment waits until then. A
    /// receiver that gives no total, or one below the books, is not sent anything more: the step is retried
    /// (and the payment fails when its attempts run out) rather than risk paying the window twice.
    async fn resume(&self, p: &OutgoingRow, plan: &StreamPlanRow, bound: FlightBound, now: OffsetDateTime) -> bool {
        let as_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
        let sent = as_u64(plan.link.as_ref().map_or(p.sent_amount, |l| l.sent));
        let delivered = as_u64(p.delivered_amount);
        let FlightBound { bound, until_ms } = bound;
        if bound <= sent {
            // nothing can have left beyond what is committed
            return false;
        }
        if unix_ms(now) < until_ms {
            let until = OffsetDateTime::from_unix_timestamp_nanos(i128::from(until_ms) * 1_000_000).unwrap_or(now);
            let (pid, at) = (p.id.clone(), until);
            tracing::info!(payment = %p.id, until = %at, "packets sent before a restart may still be in flight: the payment waits until they expired");
            if let Err(e) = self.store.call(move |c| repo::lease_outgoing(c, &pid, at)).await {
                self.transient(&p.id, "internal", &e.to_string()).await;
            }
            return true;
        }
        // (anything missing here makes the usual path fail the payment)
        let (Some(remote), Some(estimated)) = (self.remote.clone(), Rate::parse(&plan.estimated_rate)) else {
            return false;
        };
        let Some(peer) = remote.peer(&plan.peer) else {
            return false;
        };
        let Ok(mut conn) = self.new_connection(&remote, &peer, plan) else {
            return false;
        };
        let total = match conn.totals().await {
            Ok(t) => t,
            Err(e) => {
                self.transient(&p.id, "receiver_unreachable", &e.to_string()).await;
                return true;
            }
        };
        let Some(unrecorded) = total.and_then(|t| t.checked_sub(delivered)) else {
            let m = format!(
                "The receiver gives no usable total for the connection ({total:?}, {delivered} delivered on the books), and packets of up to {} sent before a restart may have arrived: nothing more is sent.",
                bound - sent
            );
            tracing::error!(payment = %p.id, "{m}");
            self.transient(&p.id, "receiver_unreachable", &m).await;
            return true;
        };
        if unrecorded == 0 {
            // none of the lost window arrived, and none of it can any more: it is sent again
            return false;
        }
        let source = estimated
            .source_ceil(unrecorded)
            .unwrap_or(u64::MAX)
            .clamp(1, bound - sent);
        tracing::warn!(payment = %p.id, source, delivered = unrecorded, "packets fulfilled before a restart are recorded from the receiver's total");
        let entry = RemoteConnection::new(conn, true);
        // (the money left already: it claims no room, its record moves the peer's position)
        let sent = Sent {
            from: sent,
            source,
            delivered: unrecorded,
            closed: false,
            claim: None,
            filled: false,
        };
        // when the payment goes on, the next step opens a new connection (with a hello): dropped, not closed
        drop(self.record_remote(&p.id, plan, sent, now, entry).await);
        true
    }
}

/// The order in which a window's answers other than fulfillments are handled: the most serious first.
fn severity(v: &Verdict) -> u8 {
    match v {
        Verdict::Fulfilled { .. } => 0,
        Verdict::TooLarge { .. } => 1,
        Verdict::ReceiverRoom { .. } => 2,
        Verdict::Temporary(_) => 3,
        Verdict::RateTooLow { .. } => 4,
        Verdict::Failed(_) => 5,
        Verdict::Closed(_) => 6,
    }
}

/// Whether payment `id`, as stored now, may not go on (see [`blocked`]); `None` also when it is gone.
fn blocked_now(c: &SqlConnection, id: &str, now: OffsetDateTime) -> Result<Option<Failure>, EngineError> {
    match repo::outgoing(c, id)? {
        Some(p) => blocked(c, &p, now),
        None => Ok(None),
    }
}
