//! Outgoing payments: creation from a quote or from an incoming payment plus a debit amount, read, list, and
//! the grant's spent amounts. Creation is one `BEGIN IMMEDIATE` transaction that checks the quote, the grant's
//! limits for the current interval and the sender's balance, reserves the debit (a pending ledger transfer)
//! and inserts the payment — so concurrent creates can never overspend a grant or a wallet. A payment the
//! sender cannot fund is created failed (`insufficient_balance`) with nothing reserved.
//!
//! Creation is idempotent per signed request: the same transaction records the SHA-256 of the request's
//! signature with the answer, so a replay of that exact request (an attacker's or a client's retry) within
//! the signature window gets the original answer and moves no money — across restarts too.
//!
//! The types (bodies, wire resources, views, errors) are in `model`; the handlers in `crate::server::routes`.

use std::sync::Arc;

use tokio::sync::Notify;

use serde_json::{Map, Value as JsonValue};
use time::OffsetDateTime;

use super::quotes::{Priced, Quotes};
use crate::{
    ase::metadata::Metadata,
    clock::{SharedClock, format_ts},
    events::{DomainEvent, EventBus},
    gnap::model::Limits,
    ids,
    interval::RepeatingInterval,
    ledger,
    money::{Amount, Asset, Value},
    states::OutgoingState,
    store::{
        self, Store,
        payments::{self as repo, OutgoingRow, Page, PageQuery},
    },
    wallet::Wallet,
};

mod model;

pub use model::{
    CREATED, CreateOutgoing, GrantContext, GrantSpent, OutgoingError, OutgoingPaymentDto, OutgoingView, RequestKey,
    Source,
};

/// What a create transaction did.
enum Created {
    New(
        Box<(
            OutgoingPaymentDto,
            Vec<ledger::Balance>,
            Vec<crate::events::EventRecord>,
        )>,
    ),
    /// The request was answered before: the stored status and body.
    Replayed(u16, String),
}

fn internal(e: impl std::fmt::Display) -> OutgoingError {
    OutgoingError::Internal(e.to_string())
}

/// The stored answer to a replayed request: the payment it created, or the refusal it got, as it was.
fn replayed(status: u16, body: String) -> Result<OutgoingPaymentDto, OutgoingError> {
    tracing::info!(
        status,
        "a signed outgoing-payment request was replayed; answering as the first time"
    );
    if status == CREATED {
        return serde_json::from_str(&body).map_err(internal);
    }
    Err(OutgoingError::Replayed { status, body })
}

fn forbidden(d: impl Into<String>) -> OutgoingError {
    OutgoingError::Grant(d.into())
}

/// The [start, end) window of a limit's interval at `now` as stored timestamps; all time without one.
fn window(limits: Option<&Limits>, now: OffsetDateTime) -> Result<(String, String), OutgoingError> {
    match limits.and_then(|l| l.interval.as_deref()) {
        None => Ok((String::new(), "~".into())),
        Some(i) => {
            let iv: RepeatingInterval = i.parse().map_err(|e| internal(format!("stored interval {i:?}: {e}")))?;
            match iv.window_at(now) {
                Ok(Some((s, e))) => Ok((format_ts(s), format_ts(e))),
                Ok(None) => Err(forbidden("the grant's interval does not cover the current time")),
                Err(e) => Err(forbidden(format!("the grant's interval cannot be applied now: {e}"))),
            }
        }
    }
}

fn amount(v: i128, asset: &Asset) -> Amount {
    let v = u64::try_from(v.max(0)).unwrap_or(u64::MAX).min(i64::MAX as u64);
    Amount::new(Value::new(v).unwrap_or_default(), asset)
}

#[derive(Clone)]
pub struct OutgoingPayments {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    quotes: Quotes,
    public_url: String,
    /// Wakes the payment engine when a payment is ready to send.
    wake: Arc<Notify>,
}

impl OutgoingPayments {
    pub fn new(
        store: Store,
        bus: EventBus,
        clock: SharedClock,
        quotes: Quotes,
        public_url: &str,
        wake: Arc<Notify>,
    ) -> Self {
        Self {
            store,
            bus,
            clock,
            quotes,
            public_url: crate::names::base_url(public_url),
            wake,
        }
    }

    pub fn url_of(&self, id: &str) -> String {
        format!("{}/outgoing-payments/{id}", self.public_url)
    }

    pub fn dto(&self, r: &OutgoingRow) -> OutgoingPaymentDto {
        let debit = Asset {
            code: r.asset_code.clone(),
            scale: r.asset_scale,
        };
        let receive = Asset {
            code: r.receive_asset_code.clone(),
            scale: r.receive_asset_scale,
        };
        OutgoingPaymentDto {
            id: self.url_of(&r.id),
            wallet_address: format!("{}/{}", self.public_url, r.wallet_name),
            quote_id: r.quote_id.as_deref().map(|q| self.quotes.url_of(q)),
            failed: r.state.is_failed(),
            receiver: r.receiver.clone(),
            receive_amount: amount(r.receive_amount.into(), &receive),
            debit_amount: amount(r.debit_amount.into(), &debit),
            sent_amount: amount(r.sent_amount.into(), &debit),
            metadata: r.metadata.as_deref().and_then(Metadata::from_stored),
            created_at: r.created_at,
            grant_spent_debit_amount: None,
            grant_spent_receive_amount: None,
        }
    }

    pub fn view(&self, r: &OutgoingRow) -> OutgoingView {
        let receive = Asset {
            code: r.receive_asset_code.clone(),
            scale: r.receive_asset_scale,
        };
        OutgoingView {
            payment: self.dto(r),
            state: r.state,
            wallet: r.wallet_name.clone(),
            grant_id: r.grant_id.clone().map(Into::into),
            delivered_amount: amount(r.delivered_amount.into(), &receive),
            failure_reason: r.failure_reason.clone(),
            failure_message: r.failure_message.clone(),
            attempts: r.attempts,
            updated_at: r.updated_at,
        }
    }

    /// Creates a payment under `grant`: quote, limits, reservation and insert in one transaction. With a
    /// `request` key, a request already answered gets its original answer (the payment, or the refusal) and
    /// changes nothing. The edge remembers a refusal for its replays ([`OutgoingPayments::remember_refusal`]).
    pub async fn create(
        &self,
        wallet: &Wallet,
        client: Option<String>,
        grant: Option<GrantContext>,
        source: Source,
        metadata: Option<Map<String, JsonValue>>,
        request: Option<RequestKey>,
    ) -> Result<OutgoingPaymentDto, OutgoingError> {
        if let Some(k) = &request
            && let Some((status, body)) = self.answered(k).await?
        {
            return replayed(status, body);
        }
        self.create_new(wallet, client, grant, source, metadata, request).await
    }

    async fn create_new(
        &self,
        wallet: &Wallet,
        client: Option<String>,
        grant: Option<GrantContext>,
        source: Source,
        metadata: Option<Map<String, JsonValue>>,
        request: Option<RequestKey>,
    ) -> Result<OutgoingPaymentDto, OutgoingError> {
        let now = self.clock.now();
        // a payment without a quote is priced now (fixed-send)
        let priced: Option<Priced> = match &source {
            Source::Incoming { receiver, debit } => Some(self.quotes.price(wallet, receiver, Some(debit), None).await?),
            Source::Quote(_) => None,
        };
        let quote_id = match &source {
            Source::Quote(url) => Some(
                self.quotes
                    .id_from_url(url)
                    .ok_or(OutgoingError::UnknownQuote)?
                    .to_owned(),
            ),
            Source::Incoming { .. } => None,
        };
        let receiver_url = match &source {
            Source::Incoming { receiver, .. } => Some(receiver.clone()),
            Source::Quote(_) => None,
        };
        let (win_from, win_to) = window(grant.as_ref().and_then(|g| g.limits.as_ref()), now)?;
        let w = wallet.clone();
        let id = ids::OutgoingPaymentId::generate();
        let metadata = metadata.and_then(Metadata::of_object).map(|m| m.as_str().to_owned());
        let this = self.clone();
        let created = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                if let Some(k) = &request
                    && let Some((status, body)) = repo::answered_outgoing_request(&tx, &k.signature_digest)?
                {
                    return Ok(Created::Replayed(status, body));
                }
                let (receiver, incoming_id, debit, receive, recv_code, recv_scale) = match (&quote_id, &priced) {
                    (Some(qid), _) => {
                        let q = repo::quote(&tx, qid)?.ok_or(OutgoingError::UnknownQuote)?;
                        if q.wallet_id != w.id {
                            return Err(OutgoingError::Quote("the quote belongs to another wallet".into()));
                        }
                        if q.expires_at <= now {
                            return Err(OutgoingError::Quote("the quote has expired".into()));
                        }
                        if repo::outgoing_by_quote(&tx, qid)?.is_some() {
                            return Err(OutgoingError::Quote("the quote was already used".into()));
                        }
                        (
                            q.receiver,
                            q.incoming_payment_id,
                            q.debit_amount,
                            q.receive_amount,
                            q.receive_asset_code,
                            q.receive_asset_scale,
                        )
                    }
                    (None, Some(p)) => {
                        let url = receiver_url.clone().unwrap_or_default();
                        if let Some(plan) = p.plan_row(&id, &url, now) {
                            store::stream::insert_plan(&tx, &plan)?;
                        }
                        (
                            url,
                            p.receiver.as_ref().map(|r| r.id.clone()),
                            Value::new(p.debit)?.as_i64(),
                            Value::new(p.receive)?.as_i64(),
                            p.receive_asset.code.clone(),
                            p.receive_asset.scale,
                        )
                    }
                    (None, None) => return Err(internal("outgoing payment without a source")),
                };
                let debit_asset = w.asset();
                let receive_asset = Asset {
                    code: recv_code.clone(),
                    scale: recv_scale,
                };
                // grant limits, counted in the current interval
                let spent = match &grant {
                    None => None,
                    Some(g) => {
                        let (sd, sr, _, _) = repo::grant_spent(&tx, &g.grant_id, &win_from, &win_to)?.unwrap_or((
                            0,
                            0,
                            String::new(),
                            0,
                        ));
                        if let Some(l) = &g.limits {
                            if let Some(r) = &l.receiver
                                && r != &receiver
                            {
                                return Err(forbidden("the grant only allows payments to its receiver"));
                            }
                            if let Some(limit) = &l.debit_amount {
                                if limit.asset() != debit_asset {
                                    return Err(forbidden("the grant's debitAmount limit is in another asset"));
                                }
                                if sd + i128::from(debit) > i128::from(limit.value.get()) {
                                    return Err(forbidden("the payment exceeds the grant's debitAmount limit"));
                                }
                            }
                            if let Some(limit) = &l.receive_amount {
                                if limit.asset() != receive_asset {
                                    return Err(forbidden("the grant's receiveAmount limit is in another asset"));
                                }
                                if sr + i128::from(receive) > i128::from(limit.value.get()) {
                                    return Err(forbidden("the payment exceeds the grant's receiveAmount limit"));
                                }
                            }
                        }
                        Some((sd, sr))
                    }
                };
                // reserve the debit from the sender's balance
                let (state, reservation_id, payment_account_id, failure) =
                    match super::engine::reserve(&tx, &id, &w.account_id, &debit_asset, debit, now)? {
                        Ok((r, a)) => (OutgoingState::Sending, Some(r), Some(a), None),
                        Err(f) => (OutgoingState::Failed, None, None, Some(f)),
                    };
                let row = OutgoingRow {
                    id: id.clone(),
                    wallet_id: w.id.clone(),
                    wallet_name: w.name.clone(),
                    account_id: w.account_id.clone(),
                    asset_code: w.asset_code.clone(),
                    asset_scale: w.asset_scale,
                    client: client.clone(),
                    grant_id: grant.as_ref().map(|g| g.grant_id.clone().into()),
                    quote_id: quote_id.clone().map(Into::into),
                    receiver,
                    incoming_payment_id: incoming_id,
                    debit_amount: debit,
                    receive_amount: receive,
                    receive_asset_code: recv_code,
                    receive_asset_scale: recv_scale,
                    sent_amount: 0,
                    delivered_amount: 0,
                    state,
                    reservation_id,
                    payment_account_id,
                    failure_reason: failure.as_ref().map(|f| f.0.to_owned()),
                    failure_message: failure.as_ref().map(|f| f.1.clone()),
                    attempts: 0,
                    next_attempt_at: state.is_sending().then_some(now),
                    metadata: metadata.clone(),
                    created_at: now,
                    updated_at: now,
                };
                repo::insert_outgoing(&tx, &row, grant.as_ref().map(|_| win_from.as_str()))?;
                let balance = ledger::ops::balances(&tx, &[&w.account_id])?;
                let dto = this.created_dto(&row, spent);
                if let Some(k) = &request {
                    let answer = serde_json::to_string(&dto).map_err(internal)?;
                    repo::remember_outgoing_request(
                        &tx,
                        &k.signature_digest,
                        Some(&row.id),
                        CREATED,
                        &answer,
                        k.created,
                        k.forget_before(now.unix_timestamp()),
                    )?;
                }
                let mut events = vec![DomainEvent::OutgoingPaymentCreated {
                    id: row.id.clone().into(),
                    wallet: row.wallet_name.clone(),
                }];
                if row.state == OutgoingState::Failed {
                    events.push(DomainEvent::OutgoingPaymentFailed {
                        id: row.id.clone().into(),
                        reason: row.failure_reason.clone().unwrap_or_default(),
                    });
                }
                let recorded = events
                    .into_iter()
                    .map(|e| store::outbox::append(&tx, now, e))
                    .collect::<Result<Vec<_>, _>>()?;
                tx.commit()?;
                Ok::<_, OutgoingError>(Created::New(Box::new((dto, balance, recorded))))
            })
            .await?;
        let (dto, balance, recorded) = match created {
            Created::New(c) => *c,
            Created::Replayed(status, body) => return replayed(status, body),
        };
        self.bus.publish_recorded(recorded);
        self.wake.notify_one();
        self.bus.publish_all(balance.iter().map(ledger::Balance::event));
        Ok(dto)
    }

    /// The original answer (status, body) to an already answered signed request, if any.
    async fn answered(&self, request: &RequestKey) -> Result<Option<(u16, String)>, OutgoingError> {
        let digest = request.signature_digest;
        Ok(self
            .store
            .call(move |c| repo::answered_outgoing_request(c, &digest))
            .await?)
    }

    /// Remembers a refusal, so that a replay of the request is refused alike even once the reason is gone
    /// (a new interval of the grant, a deposit). Best effort: a request that was not remembered is checked
    /// anew when replayed, as it was the first time. `status` and `body` are the refusal as the edge answered it.
    pub async fn remember_refusal(&self, request: &RequestKey, status: u16, body: String) {
        let k = request.clone();
        let now = self.clock.now().unix_timestamp();
        let stored = self
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                repo::remember_outgoing_request(
                    &tx,
                    &k.signature_digest,
                    None,
                    status,
                    &body,
                    k.created,
                    k.forget_before(now),
                )?;
                tx.commit()?;
                Ok::<_, store::Error>(())
            })
            .await;
        if let Err(e) = stored {
            tracing::warn!(error = %e, "a refused outgoing-payment request could not be remembered");
        }
    }

    /// The create answer: the payment with the grant's spent amounts (before this payment), if under a grant.
    fn created_dto(&self, row: &OutgoingRow, spent: Option<(i128, i128)>) -> OutgoingPaymentDto {
        let mut dto = self.dto(row);
        if let Some((sd, sr)) = spent {
            let debit_asset = Asset {
                code: row.asset_code.clone(),
                scale: row.asset_scale,
            };
            let receive_asset = Asset {
                code: row.receive_asset_code.clone(),
                scale: row.receive_asset_scale,
            };
            dto.grant_spent_debit_amount = Some(amount(sd, &debit_asset));
            dto.grant_spent_receive_amount = Some(amount(sr, &receive_asset));
        }
        dto
    }

    pub async fn get(&self, id: &str) -> Result<OutgoingRow, OutgoingError> {
        if !ids::is_id(id) {
            return Err(OutgoingError::NotFound);
        }
        let i = id.to_owned();
        self.store
            .call(move |c| repo::outgoing(c, &i))
            .await?
            .ok_or(OutgoingError::NotFound)
    }

    /// Lists newest first: one wallet's or all, one client's or all, optionally in one state.
    pub async fn list(
        &self,
        wallet_id: Option<&str>,
        client: Option<String>,
        state: Option<String>,
        page: PageQuery,
    ) -> Result<Page<OutgoingRow>, OutgoingError> {
        let state = state
            .map(|st| st.parse::<OutgoingState>())
            .transpose()
            .map_err(|_| OutgoingError::Request(format!("state must be one of {:?}", OutgoingState::NAMES)))?;
        let w = wallet_id.map(str::to_owned);
        self.store
            .call(move |c| repo::list_outgoing(c, w.as_deref(), client.as_deref(), state, &page))
            .await
            .map_err(OutgoingError::from)
    }

    /// How many outgoing payments are in `state`.
    pub async fn count_in_state(&self, state: OutgoingState) -> Result<usize, OutgoingError> {
        self.store
            .call(move |c| repo::count_outgoing(c, state))
            .await
            .map_err(OutgoingError::from)
    }

    /// What a grant has spent in its current interval (`null`s when it never paid anything).
    pub async fn grant_spent(
        &self,
        grant_id: &str,
        limits: Option<&Limits>,
        debit_asset: Option<Asset>,
    ) -> Result<GrantSpent, OutgoingError> {
        // outside the interval nothing is spent in "the current" one: an empty window
        let (from, to) = window(limits, self.clock.now()).unwrap_or_default();
        let g = grant_id.to_owned();
        let (ever, now) = self
            .store
            .call(move |c| {
                let ever = repo::grant_spent(c, &g, "", "~")?;
                let now = repo::grant_spent(c, &g, &from, &to)?;
                Ok::<_, store::Error>((ever, now))
            })
            .await?;
        let Some((_, _, code, scale)) = ever else {
            return Ok(GrantSpent {
                spent_debit_amount: None,
                spent_receive_amount: None,
            });
        };
        let (sd, sr) = now.map(|(d, r, _, _)| (d, r)).unwrap_or((0, 0));
        let receive_asset = limits
            .and_then(|l| l.receive_amount.as_ref().map(Amount::asset))
            .unwrap_or(Asset { code, scale });
        let debit_asset = limits
            .and_then(|l| l.debit_amount.as_ref().map(Amount::asset))
            .or(debit_asset)
            .unwrap_or_else(|| receive_asset.clone());
        Ok(GrantSpent {
            spent_debit_amount: Some(amount(sd, &debit_asset)),
            spent_receive_amount: Some(amount(sr, &receive_asset)),
        })
    }
}
