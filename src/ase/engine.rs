//! The payment engine: settles outgoing payments to local receivers in packets, drives them to completed or
//! failed, announces incoming-payment expiries, and carries out the operator's cancel and retry.
//!
//! Every step is one `BEGIN IMMEDIATE` transaction that leaves the ledger consistent: a packet moves money
//! sender-side (payment account → the ASE's settlement account of the debit asset) and receiver-side
//! (settlement account of the receive asset → receiver wallet), credits the incoming payment and records
//! progress together. A crash between steps loses nothing: on start the engine resumes every `sending`
//! payment from what was committed. Money flow per payment: the creation reserves the debit (a pending
//! transfer sender → payment account), the first packet posts it, packets drain the payment account, and a
//! failure returns whatever was not sent to the sender (voiding the reservation if nothing was posted).
//!
//! A store that is full (disk or `store.max_db_pages`) is no payment failure: the step's transaction rolls
//! back, the engine logs once, pauses every payment (they stay `sending`, no attempt is counted) and tries
//! again with a backoff until a write succeeds. A fulfilled STREAM packet whose record was refused is kept
//! in memory and recorded before the payment sends anything else.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration as StdDuration, Instant},
};

use rusqlite::Connection as SqlConnection;
use time::{Duration, OffsetDateTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{incoming::state_of, outgoing::OutgoingError, remote::Remote};
use crate::{
    clock::{SharedClock, format_ts, parse_ts},
    events::{DomainEvent, EventBus},
    gnap::model::AccessItem,
    ilp::{
        Address,
        sender::{Connection, Rate, SendError, Verdict, next_packet},
    },
    interval::RepeatingInterval,
    ledger::{self, AccountKind, Balance, LedgerError, NewTransfer},
    money::{Asset, MoneyError, Value},
    settings::EngineSettings,
    states::{IncomingState, OutgoingState},
    store::{
        self, Store, ledger as ledger_repo,
        payments::{self as repo, OutgoingRow},
        stream::StreamPlanRow,
    },
};

/// Why a payment failed: a machine-readable reason and a sentence for people.
pub type Failure = (&'static str, String);

/// Events are coalesced to at most one progress event per payment per this interval.
const PROGRESS_EVERY: StdDuration = StdDuration::from_millis(100);

/// The first and the longest pause while the store is full.
const FULL_BACKOFF_MIN: StdDuration = StdDuration::from_secs(1);
const FULL_BACKOFF_MAX: StdDuration = StdDuration::from_secs(30);

/// The engine's pause while the store is full.
#[derive(Debug, Clone, Copy)]
struct FullPause {
    /// No payment step before this.
    until: Instant,
    backoff: StdDuration,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error(transparent)]
    Money(#[from] MoneyError),
}

impl EngineError {
    /// Whether the store refused the write for lack of space.
    pub fn is_full(&self) -> bool {
        match self {
            Self::Store(s) | Self::Ledger(LedgerError::Store(s)) => s.is_full(),
            Self::Ledger(_) | Self::Money(_) => false,
        }
    }
}

impl From<rusqlite::Error> for EngineError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Store(e.into())
    }
}

/// Reserves `amount` of `sender`'s balance for payment `payment_id`: a pending transfer into a payment
/// account (created here, or `reuse`d on retry). `Ok(Err(failure))` when the balance does not cover it.
pub fn reserve(
    tx: &SqlConnection,
    payment_id: &str,
    sender: &str,
    asset: &Asset,
    amount: i64,
    now: &str,
) -> Result<Result<(String, String), Failure>, LedgerError> {
    reserve_into(tx, payment_id, sender, asset, amount, None, 0, now)
}

#[allow(clippy::too_many_arguments)]
fn reserve_into(
    tx: &SqlConnection,
    payment_id: &str,
    sender: &str,
    asset: &Asset,
    amount: i64,
    reuse: Option<&str>,
    attempt: i64,
    now: &str,
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

/// What one step did, for events.
#[derive(Debug, Default)]
struct StepOutcome {
    payment: Option<OutgoingRow>,
    finished: Option<Result<(), String>>,
    received: Option<(String, i64, bool)>,
    balances: Vec<Balance>,
}

/// The engine. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    settings: EngineSettings,
    wake: Arc<Notify>,
    last_event: Arc<Mutex<HashMap<String, Instant>>>,
    remote: Option<Remote>,
    /// Open STREAM connections of remote payments, taken out while a packet is in flight.
    connections: Arc<Mutex<HashMap<String, RemoteConnection>>>,
    /// Set while the store is full.
    full: Arc<Mutex<Option<FullPause>>>,
}

/// A remote payment's connection and what its receiver said about its room.
struct RemoteConnection {
    conn: Connection,
    room: Option<u64>,
    /// Packets in a row that made no progress (F08 shrinks, room answers); bounded.
    stalls: u32,
    /// A fulfilled packet whose record the store refused (it was full): recorded before anything is sent.
    unrecorded: Option<Sent>,
}

/// Packets in a row without progress before a remote payment fails.
const MAX_STALLS: u32 = 32;

fn asset(code: &str, scale: u8) -> Asset {
    Asset {
        code: code.to_owned(),
        scale,
    }
}

impl Engine {
    pub fn new(store: Store, bus: EventBus, clock: SharedClock, settings: EngineSettings, wake: Arc<Notify>) -> Self {
        Self {
            store,
            bus,
            clock,
            settings,
            wake,
            last_event: Arc::new(Mutex::new(HashMap::new())),
            remote: None,
            connections: Arc::new(Mutex::new(HashMap::new())),
            full: Arc::new(Mutex::new(None)),
        }
    }

    /// The store refused a write for lack of space: every payment step pauses (payments stay `sending`,
    /// nothing is counted as an attempt) for a backoff that doubles up to 30 s. Logged once per episode.
    fn pause_for_space(&self, error: &dyn std::fmt::Display) {
        let Ok(mut full) = self.full.lock() else {
            return;
        };
        let backoff = match &*full {
            Some(prev) => (prev.backoff * 2).min(FULL_BACKOFF_MAX),
            None => {
                tracing::error!(
                    error = %error,
                    "the database or the disk is full: the payment engine pauses; payments stay sending and \
                     resume once there is room (free disk space or raise store.max_db_pages)"
                );
                FULL_BACKOFF_MIN
            }
        };
        tracing::debug!(?backoff, "the store is still full");
        *full = Some(FullPause {
            until: Instant::now() + backoff,
            backoff,
        });
    }

    /// A write succeeded: the pause, if any, ends.
    fn has_room(&self) {
        let ended = self.full.lock().ok().and_then(|mut f| f.take()).is_some();
        if ended {
            tracing::warn!("the store has room again: the payment engine resumes");
        }
    }

    /// How long the pause for space still lasts, if the engine is paused.
    fn paused_for(&self) -> Option<StdDuration> {
        let until = self.full.lock().ok()?.as_ref()?.until;
        let now = Instant::now();
        (until > now).then(|| until - now)
    }

    /// Whether the engine is paused because the store is full (even if a retry is due).
    pub fn storage_full(&self) -> bool {
        self.full.lock().is_ok_and(|f| f.is_some())
    }

    /// Enables paying receivers on other ASEs by STREAM.
    pub fn with_remote(mut self, remote: Remote) -> Self {
        self.remote = Some(remote);
        self
    }

    /// Runs until `shutdown`: due payments get one packet each per round; sleeps until the next is due,
    /// a new payment arrives or a second passes.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut last_sweep = Instant::now() - StdDuration::from_secs(10);
        loop {
            if last_sweep.elapsed() >= StdDuration::from_secs(1) && self.paused_for().is_none() {
                self.announce_expiries().await;
                last_sweep = Instant::now();
            }
            let worked = match self.step().await {
                Ok(n) => n,
                Err(e) => {
                    tracing::error!(error = %e, "payment engine step failed");
                    0
                }
            };
            if worked > 0 {
                tokio::task::yield_now().await;
                continue;
            }
            let wait = match self.paused_for() {
                Some(left) => left,
                None => self.until_next_due().await.unwrap_or(StdDuration::from_secs(1)),
            }
            .min(StdDuration::from_secs(1));
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
        tracing::info!("payment engine stopped");
    }

    async fn until_next_due(&self) -> Option<StdDuration> {
        let next = self.store.call(|c| repo::next_due(c)).await.ok().flatten()?;
        let at = parse_ts(&next).ok()?;
        let d = at - self.clock.now();
        Some(if d.is_negative() {
            StdDuration::ZERO
        } else {
            StdDuration::try_from(d).unwrap_or(StdDuration::ZERO)
        })
    }

    /// One round: every due payment gets one packet. Returns how many payments were worked on (none
    /// while paused because the store is full).
    pub async fn step(&self) -> Result<usize, EngineError> {
        if self.paused_for().is_some() {
            return Ok(0);
        }
        let now = format_ts(self.clock.now());
        let due = self.store.call(move |c| repo::due_outgoing(c, &now, 64)).await?;
        let mut worked = 0;
        for id in &due {
            if self.paused_for().is_some() {
                break;
            }
            self.packet(id).await;
            worked += 1;
        }
        Ok(worked)
    }

    /// Runs steps until nothing is due (tests and tools).
    pub async fn drain(&self) -> Result<(), EngineError> {
        for _ in 0..100_000 {
            if self.step().await? == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    async fn packet(&self, id: &str) {
        let pid = id.to_owned();
        match self.store.call(move |c| remote_of(c, &pid)).await {
            Ok(Some((p, plan))) => return self.remote_packet(p, plan).await,
            Ok(None) => {}
            Err(e) => return self.transient(id, "internal", &e.to_string()).await,
        }
        let now = self.clock.now();
        let (packets, interval_ms) = self.settings.pacing();
        let pid = id.to_owned();
        let result = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let out = packet_tx(&tx, &pid, now, packets, interval_ms)?;
                tx.commit()?;
                Ok::<_, EngineError>(out)
            })
            .await;
        match result {
            Ok(out) => {
                self.has_room();
                self.publish(out);
            }
            Err(e) if e.is_full() => self.pause_for_space(&e),
            Err(e) => self.transient(id, "internal", &e.to_string()).await,
        }
    }

    /// A transient failure: retry with backoff, or fail for good (with `reason`) after the last attempt.
    async fn transient(&self, id: &str, reason: &'static str, message: &str) {
        tracing::warn!(payment = id, error = message, "payment step failed; will retry");
        let now = self.clock.now();
        let s = self.settings.clone();
        let (pid, msg) = (id.to_owned(), message.to_owned());
        let result = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let Some(p) = repo::outgoing(&tx, &pid)? else {
                    return Ok::<_, EngineError>(StepOutcome::default());
                };
                if !p.state.is_sending() {
                    return Ok(StepOutcome::default());
                }
                let out = if p.attempts + 1 >= i64::from(s.max_attempts) {
                    let sentence = if reason == "internal" {
                        format!("The payment could not be processed: {msg}")
                    } else {
                        format!("The receiver could not be reached: {msg}")
                    };
                    fail_tx(&tx, &p, (reason, sentence), now)?
                } else {
                    let shift = u32::try_from(p.attempts.clamp(0, 20)).unwrap_or(20);
                    let backoff = s.retry_base_ms.saturating_mul(1u64 << shift).min(s.retry_max_ms);
                    let next = now + Duration::milliseconds(i64::try_from(backoff).unwrap_or(i64::MAX / 2));
                    repo::schedule_retry(&tx, &pid, &format_ts(next), &msg, &format_ts(now))?;
                    StepOutcome::default()
                };
                tx.commit()?;
                Ok(out)
            })
            .await;
        match result {
            Ok(out) => self.publish(out),
            Err(e) if e.is_full() => self.pause_for_space(&e),
            Err(e) => tracing::error!(payment = id, error = %e, "cannot record a retry"),
        }
    }

    fn due_for_event(&self, key: &str, final_event: bool) -> bool {
        let Ok(mut map) = self.last_event.lock() else {
            return true;
        };
        if final_event {
            map.remove(key);
            return true;
        }
        match map.get(key) {
            Some(t) if t.elapsed() < PROGRESS_EVERY => false,
            _ => {
                map.insert(key.to_owned(), Instant::now());
                true
            }
        }
    }

    fn publish(&self, out: StepOutcome) {
        let final_event = out.finished.is_some();
        if let Some(p) = &out.payment {
            let show = self.due_for_event(&p.id, final_event);
            if show {
                self.bus.publish(DomainEvent::OutgoingPaymentProgress {
                    id: p.id.clone(),
                    sent: p.sent_amount,
                });
                self.bus.publish_all(out.balances.iter().map(Balance::event));
            }
            match &out.finished {
                Some(Ok(())) => self
                    .bus
                    .publish(DomainEvent::OutgoingPaymentCompleted { id: p.id.clone() }),
                Some(Err(reason)) => self.bus.publish(DomainEvent::OutgoingPaymentFailed {
                    id: p.id.clone(),
                    reason: reason.clone(),
                }),
                None => {}
            }
        }
        if let Some((id, received, completed)) = out.received {
            if self.due_for_event(&format!("in-{id}"), completed || final_event) {
                self.bus.publish(DomainEvent::IncomingPaymentReceived {
                    id: id.clone(),
                    received,
                });
            }
            if completed {
                self.bus.publish(DomainEvent::IncomingPaymentCompleted { id });
            }
        }
    }

    /// Announces incoming payments whose expiry passed (once each).
    pub async fn announce_expiries(&self) {
        let now = format_ts(self.clock.now());
        match self.store.call(move |c| repo::announce_expired(c, &now, 500)).await {
            Ok(ids) => {
                for id in ids {
                    self.bus.publish(DomainEvent::IncomingPaymentExpired { id });
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot announce expired incoming payments"),
        }
    }

    /// The operator cancels a payment that has not sent anything yet; its reservation is released.
    pub async fn cancel(&self, id: &str) -> Result<OutgoingRow, OutgoingError> {
        let pid = id.to_owned();
        let now = self.clock.now();
        let out = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let p = repo::outgoing(&tx, &pid)?.ok_or(OutgoingError::NotFound)?;
                if !p.state.can_cancel(p.sent_amount == 0) {
                    return Err(OutgoingError::Refused {
                        reason: "invalid_state",
                        message: format!(
                            "only a payment that has sent nothing can be cancelled; this one is {} with {} sent",
                            p.state, p.sent_amount
                        ),
                    });
                }
                let balances = release(&tx, &p, now)?;
                repo::set_state(
                    &tx,
                    &pid,
                    OutgoingState::Sending,
                    OutgoingState::Cancelled,
                    // the failure reason of a cancelled payment is the state's name
                    Some((OutgoingState::Cancelled.as_str(), "Cancelled by the operator.")),
                    &format_ts(now),
                )?;
                let p = reread(&tx, &pid)?;
                tx.commit()?;
                Ok::<_, OutgoingError>((p, balances))
            })
            .await?;
        self.bus
            .publish(DomainEvent::OutgoingPaymentCancelled { id: out.0.id.clone() });
        self.bus.publish_all(out.1.iter().map(Balance::event));
        Ok(out.0)
    }

    /// The operator retries a failed payment: a new attempt with a fresh reservation of what is left to send,
    /// if its quote and receiver still allow it and its grant still has room.
    pub async fn retry(&self, id: &str) -> Result<OutgoingRow, OutgoingError> {
        let pid = id.to_owned();
        let now = self.clock.now();
        let p = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let p = repo::outgoing(&tx, &pid)?.ok_or(OutgoingError::NotFound)?;
                if !p.state.can_retry() {
                    return Err(OutgoingError::Refused {
                        reason: "invalid_state",
                        message: format!("only a failed payment can be retried; this one is {}", p.state),
                    });
                }
                if let Some(reason) = blocked(&tx, &p, now)? {
                    return Err(OutgoingError::Refused {
                        reason: "not_retryable",
                        message: reason.1,
                    });
                }
                check_grant_room(&tx, &p)?;
                let debit_asset = asset(&p.asset_code, p.asset_scale);
                let remaining = p.debit_amount - p.sent_amount;
                match reserve_into(
                    &tx,
                    &p.id,
                    &p.account_id,
                    &debit_asset,
                    remaining,
                    p.payment_account_id.as_deref(),
                    p.attempts + 1,
                    &format_ts(now),
                )? {
                    Err(f) => {
                        return Err(OutgoingError::Refused {
                            reason: f.0,
                            message: f.1,
                        });
                    }
                    Ok((reservation, account)) => {
                        repo::restart(&tx, &p.id, &reservation, &account, &format_ts(now))?;
                    }
                }
                let p = reread(&tx, &p.id)?;
                tx.commit()?;
                Ok::<_, OutgoingError>(p)
            })
            .await?;
        self.wake.notify_one();
        Ok(p)
    }
}

impl Engine {
    /// Fails a sending payment for good (outside a packet transaction).
    async fn fail(&self, id: &str, failure: Failure) {
        self.drop_connection(id).await;
        let now = self.clock.now();
        let pid = id.to_owned();
        let result = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let out = match repo::outgoing(&tx, &pid)? {
                    Some(p) if p.state.is_sending() => fail_tx(&tx, &p, failure, now)?,
                    _ => StepOutcome::default(),
                };
                tx.commit()?;
                Ok::<_, EngineError>(out)
            })
            .await;
        match result {
            Ok(out) => self.publish(out),
            Err(e) if e.is_full() => self.pause_for_space(&e),
            Err(e) => tracing::error!(payment = id, error = %e, "cannot record a failure"),
        }
    }

    async fn drop_connection(&self, id: &str) {
        let taken = self.connections.lock().ok().and_then(|mut m| m.remove(id));
        if let Some(mut c) = taken {
            c.conn.close().await;
        }
    }

    fn keep_connection(&self, id: &str, c: RemoteConnection) {
        if let Ok(mut m) = self.connections.lock() {
            m.insert(id.to_owned(), c);
        }
    }

    /// Opens a STREAM connection for a remote payment.
    async fn open_connection(
        &self,
        remote: &Remote,
        peer: &super::peers::Peer,
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
    async fn remote_packet(&self, p: OutgoingRow, plan: StreamPlanRow) {
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
            as_u64(p.sent_amount),
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
        let verdict = if source == 0 {
            Ok(Verdict::Fulfilled {
                delivered: 0,
                closed: false,
            })
        } else {
            entry.conn.send_money(source, min_dest).await
        };
        match verdict {
            Ok(Verdict::Fulfilled { delivered, closed }) => {
                entry.stalls = 0;
                entry.room = entry.room.map(|r| r.saturating_sub(delivered));
                let sent = Sent {
                    source,
                    delivered,
                    closed,
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
    async fn record_remote(
        &self,
        id: &str,
        plan: &StreamPlanRow,
        sent: Sent,
        now: OffsetDateTime,
        mut entry: RemoteConnection,
    ) {
        let (_, interval_ms) = self.settings.pacing();
        let source_total = u64::try_from(plan.source_amount).unwrap_or(0);
        let (pid, peer_name) = (id.to_owned(), plan.peer.clone());
        let result = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let out = remote_progress_tx(&tx, &pid, &peer_name, sent, source_total, now, interval_ms)?;
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
                // the money moved but the record did not: the log says what to reconcile
                tracing::error!(payment = %id, source = sent.source, delivered = sent.delivered, error = %e, "a fulfilled STREAM packet could not be recorded");
                self.keep_connection(id, entry);
                self.transient(id, "internal", &e.to_string()).await;
            }
        }
    }
}

/// The plan of a payment: its quote's, or its own when it was created without a quote.
fn plan_id(p: &OutgoingRow) -> &str {
    p.quote_id.as_deref().unwrap_or(&p.id)
}

/// A sending payment to a receiver on another ASE, with its STREAM plan.
fn remote_of(c: &SqlConnection, id: &str) -> Result<Option<(OutgoingRow, StreamPlanRow)>, store::Error> {
    let Some(p) = repo::outgoing(c, id)? else {
        return Ok(None);
    };
    if !p.state.is_sending() || p.incoming_payment_id.is_some() {
        return Ok(None);
    }
    Ok(store::stream::plan(c, plan_id(&p))?.map(|plan| (p, plan)))
}

/// One fulfilled STREAM packet: `source` sent, `delivered` arrived; `closed`: the receiver closed the
/// connection with it.
#[derive(Debug, Clone, Copy)]
struct Sent {
    source: u64,
    delivered: u64,
    closed: bool,
}

/// Records one fulfilled STREAM packet (`source` sent, `delivered` arrived) and completes the payment when
/// it delivered its receive amount or sent its source amount: the fee (debit less source) goes to the
/// settlement account, the rest back to the sender. The source goes to the account of `peer_name`.
fn remote_progress_tx(
    tx: &SqlConnection,
    id: &str,
    peer_name: &str,
    sent: Sent,
    source_total: u64,
    now: OffsetDateTime,
    interval_ms: u64,
) -> Result<StepOutcome, EngineError> {
    let Sent {
        source,
        delivered,
        closed,
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
    if let Some(res) = &p.reservation_id
        && ledger_repo::transfer(tx, res)?.is_some_and(|t| t.state.is_pending())
    {
        ledger::ops::post(tx, res, None, &now_s)?;
    }
    let debit_asset = asset(&p.asset_code, p.asset_scale);
    let source_i = i64::try_from(source).map_err(|_| MoneyError::Overflow)?;
    let delivered_i = i64::try_from(delivered).map_err(|_| MoneyError::Overflow)?;
    let new_sent = p.sent_amount + source_i;
    let new_delivered = p.delivered_amount + delivered_i;
    let mut touched = vec![p.account_id.clone(), payment_account.clone()];
    if source > 0 {
        let peer = ledger::ops::peer_account(tx, peer_name, &debit_asset, &now_s)?;
        ledger::ops::create_transfer(
            tx,
            &NewTransfer {
                id: format!("stream-{}-{}-{new_sent}", p.id, p.attempts),
                debit: payment_account.clone(),
                credit: peer.clone(),
                amount: Value::new(source)?,
                pending: false,
                kind: "payment".into(),
                memo: Some(format!("STREAM to {} ({} delivered)", p.receiver, delivered)),
            },
            &now_s,
        )?;
        touched.push(peer);
    }
    let done = new_delivered >= p.receive_amount || u64::try_from(new_sent).unwrap_or(0) >= source_total;
    let next = (!done).then(|| format_ts(now + Duration::milliseconds(i64::try_from(interval_ms).unwrap_or(0))));
    repo::update_progress(tx, &p.id, new_sent, new_delivered, next.as_deref(), &now_s)?;
    let mut finished = None;
    if done {
        // the fee stays with the ASE
        let fee = p.debit_amount - i64::try_from(source_total).unwrap_or(p.debit_amount);
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
    })
}

/// Whether the payment's quote or receiver forbids going on (a permanent failure).
fn blocked(tx: &SqlConnection, p: &OutgoingRow, now: OffsetDateTime) -> Result<Option<Failure>, EngineError> {
    if let Some(q) = &p.quote_id
        && let Some(q) = repo::quote(tx, q)?
        && parse_ts(&q.expires_at).is_ok_and(|e| e <= now)
        && p.sent_amount == 0
    {
        return Ok(Some((
            "quote_expired",
            format!("The quote expired at {} before the payment was sent.", q.expires_at),
        )));
    }
    let Some(rid) = &p.incoming_payment_id else {
        if store::stream::plan(tx, plan_id(p))?.is_some() {
            // a receiver on another ASE: its state is learned from its STREAM answers
            return Ok(None);
        }
        return Ok(Some((
            "receiver_unreachable",
            format!("The receiver {} is not an incoming payment of this ASE.", p.receiver),
        )));
    };
    let Some(r) = repo::incoming(tx, rid)? else {
        return Ok(Some((
            "receiver_unreachable",
            format!("The receiver {} no longer exists.", p.receiver),
        )));
    };
    Ok(match state_of(&r, now) {
        IncomingState::Completed => Some((
            "receiver_completed",
            "The receiver was already completed and accepts no more money.".to_owned(),
        )),
        IncomingState::Expired => Some((
            "receiver_expired",
            format!(
                "The receiver expired at {} and accepts no more money.",
                r.expires_at.unwrap_or_default()
            ),
        )),
        _ => None,
    })
}

/// A retried payment counts its full debit against its grant again: refuse if that would pass a limit.
fn check_grant_room(tx: &SqlConnection, p: &OutgoingRow) -> Result<(), OutgoingError> {
    let Some(gid) = &p.grant_id else { return Ok(()) };
    let Some(g) = store::grants::grant(tx, gid)? else {
        return Ok(());
    };
    let access: Vec<AccessItem> =
        serde_json::from_str(&g.access).map_err(|e| OutgoingError::Internal(format!("stored access: {e}")))?;
    let Some(limits) = access.iter().find_map(|i| match i {
        AccessItem::OutgoingPayment { limits: Some(l), .. } => Some(l.clone()),
        _ => None,
    }) else {
        return Ok(());
    };
    let created = parse_ts(&p.created_at).map_err(|e| OutgoingError::Internal(format!("stored createdAt: {e}")))?;
    let (from, to) = match limits.interval.as_deref().map(str::parse::<RepeatingInterval>) {
        Some(Ok(iv)) => match iv.window_at(created) {
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
        return Err(OutgoingError::Refused {
            reason: "limit_exceeded",
            message: "retrying would pass the grant's limit for this interval".into(),
        });
    }
    Ok(())
}

/// Returns what was not sent to the sender: voids a still-pending reservation, or moves the payment
/// account's balance back.
/// The payment as this transaction sees it now.
fn reread(tx: &SqlConnection, id: &str) -> Result<OutgoingRow, store::Error> {
    repo::outgoing(tx, id)?.ok_or_else(|| store::Error::Corrupt("payment vanished".into()))
}

/// Completes a sending payment inside `tx`: releases what it still reserves and holds, and marks it completed.
fn complete_tx(
    tx: &SqlConnection,
    id: &str,
    now: OffsetDateTime,
    touched: &mut Vec<String>,
) -> Result<(), EngineError> {
    let p = reread(tx, id)?;
    touched.extend(release(tx, &p, now)?.into_iter().map(|b| b.account_id));
    repo::set_state(
        tx,
        id,
        OutgoingState::Sending,
        OutgoingState::Completed,
        None,
        &format_ts(now),
    )?;
    Ok(())
}

fn release(tx: &SqlConnection, p: &OutgoingRow, now: OffsetDateTime) -> Result<Vec<Balance>, EngineError> {
    let now_s = format_ts(now);
    let mut touched = vec![p.account_id.clone()];
    if let Some(res) = &p.reservation_id
        && let Some(t) = ledger_repo::transfer(tx, res)?
        && t.state.is_pending()
    {
        ledger::ops::void(tx, res, &now_s)?;
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
            ledger::ops::create_transfer(tx, &t, &now_s)?;
        }
        touched.push(acct.clone());
    }
    let ids: Vec<&str> = touched.iter().map(String::as_str).collect();
    Ok(ledger::ops::balances(tx, &ids)?)
}

fn fail_tx(
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
        &format_ts(now),
    )?;
    tracing::info!(payment = %p.id, reason = failure.0, "outgoing payment failed: {}", failure.1);
    Ok(StepOutcome {
        payment: repo::outgoing(tx, &p.id)?,
        finished: Some(Err(failure.0.to_owned())),
        received: None,
        balances,
    })
}

/// One packet of one payment, inside the caller's transaction.
fn packet_tx(
    tx: &SqlConnection,
    id: &str,
    now: OffsetDateTime,
    packets: u32,
    interval_ms: u64,
) -> Result<StepOutcome, EngineError> {
    let now_s = format_ts(now);
    let Some(p) = repo::outgoing(tx, id)? else {
        return Ok(StepOutcome::default());
    };
    if !p.state.is_sending() {
        return Ok(StepOutcome::default());
    }
    if let Some(f) = blocked(tx, &p, now)? {
        return fail_tx(tx, &p, f, now);
    }
    let (Some(rid), Some(payment_account)) = (&p.incoming_payment_id, &p.payment_account_id) else {
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
        ledger::ops::post(tx, res, None, &now_s)?;
    }
    let r = repo::incoming(tx, rid)?.ok_or_else(|| store::Error::Corrupt(format!("receiver {rid} vanished")))?;
    let debit_asset = asset(&p.asset_code, p.asset_scale);
    let receive_asset = asset(&p.receive_asset_code, p.receive_asset_scale);
    let remaining_debit = p.debit_amount - p.sent_amount;
    let chunk = if packets <= 1 {
        remaining_debit
    } else {
        (p.debit_amount + i64::from(packets) - 1) / i64::from(packets)
    };
    let packet_debit = chunk.clamp(1, remaining_debit.max(1)).min(remaining_debit);
    let new_sent = p.sent_amount + packet_debit;
    let target = if new_sent >= p.debit_amount {
        i128::from(p.receive_amount)
    } else {
        i128::from(p.receive_amount) * i128::from(new_sent) / i128::from(p.debit_amount)
    };
    let mut deliver = i64::try_from(target - i128::from(p.delivered_amount))
        .unwrap_or(0)
        .max(0);
    let room = r.incoming_amount.map(|i| i - r.received_amount);
    if let Some(room) = room {
        deliver = deliver.min(room);
    }
    // sender side: payment account → settlement of the debit asset
    if packet_debit > 0 {
        let settle = ledger::ops::settlement_account(tx, &debit_asset, &now_s)?;
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
            &now_s,
        )?;
    }
    // receiver side: settlement of the receive asset → receiver wallet
    let mut touched = vec![p.account_id.clone(), r.account_id.clone()];
    if deliver > 0 {
        let settle = ledger::ops::settlement_account(tx, &receive_asset, &now_s)?;
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
            &now_s,
        )?;
    }
    let new_received = r.received_amount + deliver;
    let receiver_done = r.incoming_amount.is_some_and(|i| new_received >= i);
    if deliver > 0 || receiver_done {
        repo::credit_incoming(tx, &r.id, new_received, receiver_done, &now_s)?;
    }
    let new_delivered = p.delivered_amount + deliver;
    let done = new_sent >= p.debit_amount || new_delivered >= p.receive_amount || receiver_done;
    let next = (!done).then(|| format_ts(now + Duration::milliseconds(i64::try_from(interval_ms).unwrap_or(0))));
    repo::update_progress(tx, &p.id, new_sent, new_delivered, next.as_deref(), &now_s)?;
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
        received: (deliver > 0 || receiver_done).then(|| (r.id.clone(), new_received, receiver_done)),
        balances: ledger::ops::balances(tx, &ids)?,
    })
}
