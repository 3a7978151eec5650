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
//!
//! This file holds the loop and the operator's actions; `tx` the store transactions of a payment's money,
//! `remote` the STREAM sending to receivers on other ASEs.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration as StdDuration, Instant},
};

use crate::store::Connection as SqlConnection;
use time::{Duration, OffsetDateTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::remote::Remote;
use crate::{
    clock::SharedClock,
    events::{DomainEvent, EventBus, EventRecord},
    ilp::sender::Connection,
    ledger::{Balance, LedgerError},
    money::{Asset, MoneyError},
    settings::EngineSettings,
    states::OutgoingState,
    store::{
        self, Store,
        payments::{self as repo, OutgoingRow},
        stream::StreamPlanRow,
    },
};

mod liquidity;
mod record;
mod remote;
mod tx;

use record::{Sent, remote_of};
pub use tx::reserve;
use tx::{blocked, check_grant_room, fail_tx, packet_tx, release, reread, reserve_into};

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
    /// STREAM packets were to be recorded on top of progress that has moved since they were sent: they are
    /// on the books already (see `remote`).
    #[error("outgoing payment {0} moved on since its packets were sent")]
    Moved(String),
    /// No such outgoing payment (an operator's cancel or retry).
    #[error("unknown outgoing payment")]
    NotFound,
    /// The payment's state refuses the operator's action (`reason` is the error code).
    #[error("{message}")]
    Refused { reason: &'static str, message: String },
    /// Stored data that does not read back (a server fault).
    #[error("{0}")]
    Internal(String),
}

impl EngineError {
    /// Whether the store refused the write for lack of space.
    pub fn is_full(&self) -> bool {
        match self {
            Self::Store(s) | Self::Ledger(LedgerError::Store(s)) => s.is_full(),
            Self::Ledger(_)
            | Self::Money(_)
            | Self::Moved(_)
            | Self::NotFound
            | Self::Refused { .. }
            | Self::Internal(_) => false,
        }
    }
}

impl From<crate::store::db::Error> for EngineError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::Store(e.into())
    }
}

/// What one step did, for events.
#[derive(Debug, Default)]
struct StepOutcome {
    payment: Option<OutgoingRow>,
    finished: Option<Result<(), String>>,
    received: Option<(crate::ids::IncomingPaymentId, i64, bool)>,
    balances: Vec<Balance>,
    /// The durable events [`seal`] appended to the outbox in the step's transaction.
    recorded: Vec<EventRecord>,
}

/// Appends the step's durable events (a payment finished, an incoming payment completed) to the outbox in
/// the step's transaction, just before it commits.
fn seal(tx: &SqlConnection, mut out: StepOutcome, now: OffsetDateTime) -> Result<StepOutcome, store::Error> {
    let mut events = Vec::new();
    if let (Some(p), Some(finished)) = (&out.payment, &out.finished) {
        events.push(match finished {
            Ok(()) => DomainEvent::OutgoingPaymentCompleted {
                id: p.id.clone().into(),
            },
            Err(reason) => DomainEvent::OutgoingPaymentFailed {
                id: p.id.clone().into(),
                reason: reason.clone(),
            },
        });
    }
    if let Some((id, _, true)) = &out.received {
        events.push(DomainEvent::IncomingPaymentCompleted { id: id.clone().into() });
    }
    for e in events {
        out.recorded.push(store::outbox::append(tx, now, e)?);
    }
    Ok(out)
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
    /// Peer liquidity: room is claimed before a remote packet is sent (see `ase::liquidity`).
    liquidity: Option<crate::ase::liquidity::PeerLiquidity>,
}

/// A remote payment's connection and what its receiver said about its room.
struct RemoteConnection {
    conn: Connection,
    room: Option<u64>,
    /// Packets in a row that made no progress (F08 shrinks, room answers); bounded.
    stalls: u32,
    /// Fulfilled packets (their sum) whose record the store refused (it was full): recorded before anything
    /// is sent.
    unrecorded: Option<Sent>,
    /// How many packets may be in flight at once: doubles while windows are fulfilled and the receiver's
    /// totals match, one after a refusal.
    window: u32,
    /// Whether the receiver's total for the connection, in its last fulfillments, was exactly what the books
    /// say it delivered. Only then may more than one packet be in flight (see `remote`).
    totals_match: bool,
    /// Whether the payment's durable flight bound is stored, as this connection last wrote or read it.
    bound_stored: bool,
}

impl RemoteConnection {
    /// A connection nothing was learned on yet; `bound_stored`: whether the payment's flight bound is stored.
    fn new(conn: Connection, bound_stored: bool) -> Self {
        Self {
            conn,
            room: None,
            stalls: 0,
            unrecorded: None,
            window: FIRST_WINDOW,
            totals_match: false,
            bound_stored,
        }
    }
}

/// Due payments one round takes (one store call settles the local ones among them).
const DUE_PER_ROUND: u32 = 32;

/// How long a node may work on one step of a payment to another ASE before another node may take it over
/// (PostgreSQL), renewed before each packet: longer than a packet's round trip with its timeouts.
const REMOTE_LEASE: Duration = Duration::seconds(60);

/// What a round did with one due payment.
enum Worked {
    /// A local payment's packet, committed.
    Settled(StepOutcome),
    /// A payment to a receiver on another ASE: sent after the round's store call.
    Remote(OutgoingRow, StreamPlanRow),
    /// The payment's step failed (its transaction rolled back).
    Failed(String, EngineError),
}

/// Packets in flight at once through one connection, at most; and in its first window (the first packet
/// tries the path and the rate alone: a refusal costs one packet, not a window).
const MAX_IN_FLIGHT: u32 = 16;
const FIRST_WINDOW: u32 = 1;

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
            liquidity: None,
        }
    }

    /// Limits sending through peers by their liquidity.
    pub fn with_liquidity(mut self, liquidity: crate::ase::liquidity::PeerLiquidity) -> Self {
        self.liquidity = Some(liquidity);
        self
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
        let at = self.store.call(|c| repo::next_due(c)).await.ok().flatten()?;
        let d = at - self.clock.now();
        Some(if d.is_negative() {
            StdDuration::ZERO
        } else {
            StdDuration::try_from(d).unwrap_or(StdDuration::ZERO)
        })
    }

    /// One round: every due payment gets one packet. Returns how many payments were worked on (none
    /// while paused because the store is full).
    ///
    /// One store call takes the due payments and settles the packet of each local one in one `BEGIN
    /// IMMEDIATE` transaction, each payment in its own savepoint (a payment whose step fails is rolled back
    /// alone and retried as before), committed once: a round of many payments costs one hand-off to the store
    /// thread and one commit rather than two hand-offs and a commit per payment. Events go out after the
    /// commit. Remote payments are sent after, one by one. A full store rolls the whole round back (nothing
    /// was acknowledged) and pauses the engine.
    pub async fn step(&self) -> Result<usize, EngineError> {
        if self.paused_for().is_some() {
            return Ok(0);
        }
        let clock = self.clock.clone();
        let (packets, interval_ms) = self.settings.pacing();
        // several nodes on one database: a payment to another ASE is leased to this node while it works on
        // it, so that no other node sends its packets meanwhile (a dead node's lease runs out)
        let lease = self.store.shared_by_nodes().then(|| self.clock.now() + REMOTE_LEASE);
        let leased = lease;
        let round = self
            .store
            .call(move |c| {
                let mut tx = store::immediate(c)?;
                let due = repo::due_outgoing(&tx, clock.now(), DUE_PER_ROUND)?;
                let mut round = Vec::with_capacity(due.len());
                for id in due {
                    match remote_of(&tx, &id) {
                        Ok(Some((p, plan))) => {
                            if let Some(until) = leased {
                                repo::lease_outgoing(&tx, &id, until)?;
                            }
                            round.push(Worked::Remote(p, plan));
                            continue;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            round.push(Worked::Failed(id, e.into()));
                            continue;
                        }
                    }
                    let now = clock.now();
                    let settled = (|| {
                        let sp = tx.savepoint()?;
                        let out = seal(&sp, packet_tx(&sp, &id, now, packets, interval_ms)?, now)?;
                        sp.commit()?;
                        Ok::<_, EngineError>(out)
                    })();
                    match settled {
                        Ok(out) => round.push(Worked::Settled(out)),
                        // the store is full: the round rolls back and waits for room
                        Err(e) if e.is_full() => return Err(e),
                        Err(e) => round.push(Worked::Failed(id, e)),
                    }
                }
                tx.commit()?;
                Ok::<_, EngineError>(round)
            })
            .await;
        let round = match round {
            Ok(round) => round,
            Err(e) if e.is_full() => {
                self.pause_for_space(&e);
                return Ok(0);
            }
            Err(e) => return Err(e),
        };
        let worked = round.len();
        let mut settled = false;
        for w in round {
            match w {
                Worked::Settled(out) => {
                    settled = true;
                    self.publish(out);
                }
                Worked::Remote(p, plan) => {
                    let (id, due) = (p.id.clone(), p.next_attempt_at);
                    let mut held = lease;
                    if let Some(until) = lease {
                        // the round's leases began together and packets go out one after another: renew
                        // this one so that it lasts its packet, unless it ran out and another node has it
                        let (pid, renewed) = (id.clone(), self.clock.now() + REMOTE_LEASE);
                        match self
                            .store
                            .call(move |c| repo::renew_outgoing(c, &pid, until, renewed))
                            .await
                        {
                            Ok(true) => held = Some(renewed),
                            Ok(false) => {
                                tracing::warn!(payment = %id, "a payment's lease ran out before its packet; another node sends it");
                                continue;
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, payment = %id, "a payment's lease could not be renewed; its packet waits");
                                continue;
                            }
                        }
                    }
                    if self.paused_for().is_none() {
                        self.remote_packet(p, plan).await;
                    }
                    if let Some(until) = held {
                        let released = self
                            .store
                            .call(move |c| repo::release_outgoing(c, &id, until, due))
                            .await;
                        if let Err(e) = released {
                            tracing::warn!(error = %e, "a payment's lease could not be given back; it runs out");
                        }
                    }
                }
                Worked::Failed(_, e) if e.is_full() => self.pause_for_space(&e),
                Worked::Failed(id, e) => self.transient(&id, "internal", &e.to_string()).await,
            }
        }
        if settled {
            self.has_room();
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
                    repo::schedule_retry(&tx, &pid, next, &msg, now)?;
                    StepOutcome::default()
                };
                let out = seal(&tx, out, now)?;
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
        if let Some(p) = &out.payment
            && self.due_for_event(&p.id, final_event)
        {
            self.bus.publish(DomainEvent::OutgoingPaymentProgress {
                id: p.id.clone().into(),
                sent: p.sent_amount,
            });
            self.bus.publish_all(out.balances.iter().map(Balance::event));
        }
        if let Some((id, received, completed)) = out.received
            && self.due_for_event(&format!("in-{id}"), completed || final_event)
        {
            self.bus.publish(DomainEvent::IncomingPaymentReceived {
                id: id.into(),
                received,
            });
        }
        self.bus.publish_recorded(out.recorded);
    }

    /// Announces incoming payments whose expiry passed (once each).
    pub async fn announce_expiries(&self) {
        let now = self.clock.now();
        let announced = self
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let recorded = repo::announce_expired(&tx, now, 500)?
                    .into_iter()
                    .map(|id| store::outbox::append(&tx, now, DomainEvent::IncomingPaymentExpired { id }))
                    .collect::<Result<Vec<_>, _>>()?;
                tx.commit()?;
                Ok::<_, store::Error>(recorded)
            })
            .await;
        match announced {
            Ok(recorded) => self.bus.publish_recorded(recorded),
            Err(e) => tracing::warn!(error = %e, "cannot announce expired incoming payments"),
        }
    }

    /// The operator cancels a payment that has not sent anything yet; its reservation is released.
    pub async fn cancel(&self, id: &str) -> Result<OutgoingRow, EngineError> {
        let pid = id.to_owned();
        let now = self.clock.now();
        let out = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let p = repo::outgoing(&tx, &pid)?.ok_or(EngineError::NotFound)?;
                if !p.state.can_cancel(p.sent_amount == 0) {
                    return Err(EngineError::Refused {
                        reason: "invalid_state",
                        message: format!(
                            "only a payment that has sent nothing can be cancelled; this one is {} with {} sent",
                            p.state, p.sent_amount
                        ),
                    });
                }
                // a packet on its way may still be fulfilled, and then it must be booked: not while it flies
                if store::peers::payment_in_flight(&tx, &pid, now)? {
                    return Err(EngineError::Refused {
                        reason: "in_flight",
                        message: "a packet of this payment is on its way to the receiver; cancel again once it \
                                  is answered (in a few seconds)"
                            .into(),
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
                    now,
                )?;
                let p = reread(&tx, &pid)?;
                let event = DomainEvent::OutgoingPaymentCancelled {
                    id: p.id.clone().into(),
                };
                let recorded = store::outbox::append(&tx, now, event)?;
                tx.commit()?;
                Ok::<_, EngineError>((p, balances, recorded))
            })
            .await?;
        self.bus.publish_recorded([out.2]);
        self.bus.publish_all(out.1.iter().map(Balance::event));
        Ok(out.0)
    }

    /// The operator retries a failed payment: a new attempt with a fresh reservation of what is left to send,
    /// if its quote and receiver still allow it and its grant still has room.
    pub async fn retry(&self, id: &str) -> Result<OutgoingRow, EngineError> {
        let pid = id.to_owned();
        let now = self.clock.now();
        let p = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let p = repo::outgoing(&tx, &pid)?.ok_or(EngineError::NotFound)?;
                if !p.state.can_retry() {
                    return Err(EngineError::Refused {
                        reason: "invalid_state",
                        message: format!("only a failed payment can be retried; this one is {}", p.state),
                    });
                }
                if let Some(reason) = blocked(&tx, &p, now)? {
                    return Err(EngineError::Refused {
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
                    now,
                )? {
                    Err(f) => {
                        return Err(EngineError::Refused {
                            reason: f.0,
                            message: f.1,
                        });
                    }
                    Ok((reservation, account)) => {
                        repo::restart(&tx, &p.id, &reservation, &account, now)?;
                    }
                }
                let p = reread(&tx, &p.id)?;
                tx.commit()?;
                Ok::<_, EngineError>(p)
            })
            .await?;
        self.wake.notify_one();
        Ok(p)
    }
}

impl Engine {
    /// Closes and forgets the kept STREAM connection of payment `id`, if any.
    async fn drop_connection(&self, id: &str) {
        let taken = self.connections.lock().ok().and_then(|mut m| m.remove(id));
        if let Some(mut c) = taken {
            c.conn.close().await;
        }
    }

    /// Keeps `c` as payment `id`'s STREAM connection for its next step.
    fn keep_connection(&self, id: &str, c: RemoteConnection) {
        if let Ok(mut m) = self.connections.lock() {
            m.insert(id.to_owned(), c);
        }
    }

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
                    // a fixed-send payment whose receiver is full after it got the quoted amount is done
                    Some(p) if p.state.is_sending() && failure.0 == "receiver_completed" => {
                        match record::filled_fixed_send(&tx, &p, now)? {
                            Some(done) => done,
                            None => fail_tx(&tx, &p, failure.clone(), now)?,
                        }
                    }
                    Some(p) if p.state.is_sending() => fail_tx(&tx, &p, failure.clone(), now)?,
                    _ => StepOutcome::default(),
                };
                store::meta::remove(&tx, &record::flight_key(&pid))?;
                let out = seal(&tx, out, now)?;
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
}
