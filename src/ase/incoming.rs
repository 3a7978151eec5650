//! Incoming payments: create, read (authenticated with `methods`, or the public view), list, complete, and the
//! credit of one STREAM packet arriving at `/ilp`. The service is the only writer of `incoming_payments` besides
//! the payment engine's local settlement; expiry is applied by time: from `expiresAt` on an open payment counts
//! as expired wherever it is read. `methods` carry fresh STREAM credentials (`ilpAddress` = `{node}.{token}`,
//! the token encrypting the payment id) on every authenticated create and read.
//!
//! The types (bodies, wire resources, views, errors) are in `model`; the handlers in `crate::server::routes`.

use std::sync::Arc;

use time::Duration;

use crate::{
    ase::{
        exchange::{Inflow, Unvalued},
        metadata::Metadata,
    },
    clock::{SharedClock, parse_ts},
    events::{DomainEvent, EventBus},
    ids,
    ilp::receiver::{self, PaymentSnapshot, Refusal, StreamServer},
    ledger::{self, Balance, LedgerError},
    money::{Amount, Asset, Value as Money},
    states::IncomingState,
    store::{
        self, Store, outbox,
        payments::{self as repo, IncomingRow, Page, PageQuery},
    },
    wallet::Wallet,
};

mod model;

pub use model::{CreateIncoming, IncomingError, IncomingPaymentDto, IncomingView, StreamCredit, state_of};

/// The incoming-payment service.
#[derive(Clone)]
pub struct IncomingPayments {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    public_url: String,
    max_lifetime: Duration,
    stream: Arc<StreamServer>,
}

impl IncomingPayments {
    pub fn new(
        store: Store,
        bus: EventBus,
        clock: SharedClock,
        public_url: &str,
        max_lifetime_secs: u64,
        stream: Arc<StreamServer>,
    ) -> Self {
        Self {
            store,
            bus,
            clock,
            public_url: crate::names::base_url(public_url),
            max_lifetime: Duration::seconds(i64::try_from(max_lifetime_secs).unwrap_or(i64::MAX / 2)),
            stream,
        }
    }

    pub fn url_of(&self, id: &str) -> String {
        format!("{}/incoming-payments/{id}", self.public_url)
    }

    /// The row id a receiver URL names, if it is one of ours.
    pub fn id_from_url<'a>(&self, url: &'a str) -> Option<&'a str> {
        url.strip_prefix(self.public_url.as_str())?
            .strip_prefix("/incoming-payments/")
            .filter(|id| ids::is_id(id))
    }

    /// The resource with `methods`: fresh STREAM credentials (a new token IV each time; all of them name this
    /// payment).
    pub fn dto_with_methods(&self, r: &IncomingRow) -> Result<IncomingPaymentDto, IncomingError> {
        let creds = self
            .stream
            .credentials(&r.id, &r.asset_code, r.asset_scale)
            .map_err(|e| IncomingError::Credentials(e.to_string()))?;
        let mut dto = self.dto(r);
        dto.methods = Some(vec![serde_json::json!({
            "type": "ilp",
            "ilpAddress": creds.ilp_address.as_str(),
            "sharedSecret": creds.shared_secret_base64url(),
        })]);
        Ok(dto)
    }

    /// The resource without `methods` (list items, the complete response, operator views).
    pub fn dto(&self, r: &IncomingRow) -> IncomingPaymentDto {
        let asset = Asset {
            code: r.asset_code.clone(),
            scale: r.asset_scale,
        };
        let amount = |v: i64| Amount::new(Money::from_i64(v).unwrap_or_default(), &asset);
        IncomingPaymentDto {
            id: self.url_of(&r.id),
            wallet_address: format!("{}/{}", self.public_url, r.wallet_name),
            completed: r.completed,
            incoming_amount: r.incoming_amount.map(amount),
            received_amount: amount(r.received_amount),
            expires_at: r.expires_at,
            metadata: r.metadata.as_deref().and_then(Metadata::from_stored),
            created_at: r.created_at,
            methods: None,
        }
    }

    /// The operator's view: the resource (with its `methods` if asked), its state, wallet and creating client.
    pub fn view(&self, r: &IncomingRow, methods: bool) -> IncomingView {
        let payment = if methods {
            self.dto_with_methods(r).unwrap_or_else(|_| self.dto(r))
        } else {
            self.dto(r)
        };
        IncomingView {
            payment,
            state: state_of(r, self.clock.now()),
            wallet: r.wallet_name.clone(),
            client: r.client.clone(),
        }
    }

    /// Creates an incoming payment on `wallet` for `client`.
    pub async fn create(
        &self,
        wallet: &Wallet,
        client: Option<String>,
        req: CreateIncoming,
    ) -> Result<IncomingRow, IncomingError> {
        let now = self.clock.now();
        let incoming_amount = match &req.incoming_amount {
            None => None,
            Some(a) => {
                let v = a.expect_asset(&wallet.asset())?;
                if v.is_zero() {
                    return Err(IncomingError::ZeroAmount);
                }
                Some(v.as_i64())
            }
        };
        let latest = now + self.max_lifetime;
        let expires_at = match &req.expires_at {
            None => latest,
            Some(s) => {
                let t = parse_ts(s).map_err(|e| IncomingError::BadExpiry(format!("expiresAt {s:?}: {e}")))?;
                if t <= now {
                    return Err(IncomingError::BadExpiry("expiresAt must be in the future".into()));
                }
                if t > latest {
                    return Err(IncomingError::BadExpiry(format!(
                        "expiresAt may be at most {} s from now",
                        self.max_lifetime.whole_seconds()
                    )));
                }
                // stored and sent to the millisecond: the row returned is the row read back
                crate::clock::to_millis(t)
            }
        };
        let metadata = req
            .metadata
            .and_then(Metadata::of_object)
            .map(|m| m.as_str().to_owned());
        let row = IncomingRow {
            id: ids::IncomingPaymentId::generate(),
            wallet_id: wallet.id.clone(),
            wallet_name: wallet.name.clone(),
            account_id: wallet.account_id.clone(),
            asset_code: wallet.asset_code.clone(),
            asset_scale: wallet.asset_scale,
            client,
            incoming_amount,
            received_amount: 0,
            completed: false,
            expires_at: Some(expires_at),
            metadata,
            created_at: now,
            updated_at: now,
        };
        let stored = row.clone();
        let recorded = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                repo::insert_incoming(&tx, &stored)?;
                let event = DomainEvent::IncomingPaymentCreated {
                    id: stored.id.clone().into(),
                    wallet: stored.wallet_name.clone(),
                };
                let recorded = outbox::append(&tx, stored.created_at, event)?;
                tx.commit()?;
                Ok::<_, store::Error>(recorded)
            })
            .await?;
        self.bus.publish_recorded([recorded]);
        Ok(row)
    }

    /// The payment `id`, if it exists, with what STREAM connection `connection` has paid into it (store
    /// errors are the caller's to map).
    pub async fn find_for_stream(
        &self,
        id: &str,
        connection: &str,
    ) -> Result<Option<(IncomingRow, u64)>, store::Error> {
        if !ids::is_id(id) {
            return Ok(None);
        }
        let (i, c) = (id.to_owned(), connection.to_owned());
        self.store
            .call(move |conn| {
                let Some(row) = repo::incoming(conn, &i)? else {
                    return Ok(None);
                };
                let paid = repo::connection_received(conn, &i, &c)?;
                Ok(Some((row, u64::try_from(paid).unwrap_or(0))))
            })
            .await
    }

    /// Credits one STREAM packet that brought `inflow` through `peer`, in one `BEGIN IMMEDIATE` transaction:
    /// the packet's value in the payment's asset ([`Inflow::value_in`], refused when there is no rate or it
    /// is below `min`, the sender's minimum), [`receiver::money_check`] on the row as read inside it, the
    /// ledger transfers from the peer's account in the link's asset to the receiver's wallet in its own
    /// ([`ledger::ops::credit_from_peer`]), `receivedAmount += value`, the connection's own total, and
    /// completion when `incomingAmount` is reached. Events go out after the commit. A refusal or an error
    /// writes nothing.
    pub async fn credit_stream_packet(
        &self,
        id: &str,
        connection: &str,
        peer: &str,
        inflow: Inflow,
        min: u64,
        memo: String,
    ) -> Result<StreamCredit, LedgerError> {
        if !ids::is_id(id) {
            return Ok(StreamCredit::Unknown);
        }
        let now = self.clock.now();
        let pid = id.to_owned();
        let peer = peer.to_owned();
        let connection = connection.to_owned();
        // every packet through a peer credits from the peer's account: they queue for it (on PostgreSQL)
        let queue = format!("peer:{peer}");
        let (credit, balances, recorded) = self
            .store
            .call_queued(&queue, move |conn| {
                let tx = store::immediate(conn)?;
                let Some(row) = repo::incoming(&tx, &pid)? else {
                    return Ok((StreamCredit::Unknown, Vec::new(), None));
                };
                let paid = u64::try_from(repo::connection_received(&tx, &pid, &connection)?).unwrap_or(0);
                let asset = Asset {
                    code: row.asset_code.clone(),
                    scale: row.asset_scale,
                };
                let amount = match inflow.credit(&asset, min) {
                    Ok(v) => v,
                    Err(Unvalued::NoRate(why)) => {
                        tracing::info!(payment = %pid, peer = %peer, "STREAM packet refused: {why}");
                        return Ok((StreamCredit::NoRate(why), Vec::new(), None));
                    }
                    Err(Unvalued::TooLarge) => {
                        return Ok((StreamCredit::Refused(row, paid, Refusal::Overflow), Vec::new(), None));
                    }
                    Err(Unvalued::BelowMinimum) => {
                        return Ok((StreamCredit::Refused(row, paid, Refusal::BelowMinimum), Vec::new(), None));
                    }
                };
                if let Err(refusal) = receiver::money_check(&PaymentSnapshot::of(&row, now, paid), amount) {
                    return Ok((StreamCredit::Refused(row, paid, refusal), Vec::new(), None));
                }
                // Every sum below is checked; one that does not fit (an absurd amount on top of earlier
                // receipts) refuses the packet for good, and the dropped transaction writes nothing.
                let credit = || -> Result<_, LedgerError> {
                    let value = Money::new(amount)?;
                    let memo = format!("{memo} to incoming payment {pid}");
                    let settlement = ledger::ops::credit_from_peer(
                        &tx,
                        &peer,
                        &inflow.link,
                        Money::new(inflow.amount)?,
                        &asset,
                        &row.account_id,
                        value,
                        memo,
                        now,
                    )?;
                    let received = row
                        .received_amount
                        .checked_add(value.as_i64())
                        .ok_or(crate::money::MoneyError::Overflow)?;
                    let completed = row.incoming_amount.is_some_and(|target| received >= target);
                    if !repo::credit_incoming(&tx, &pid, received, completed, now)? {
                        return Err(LedgerError::Store(store::Error::Corrupt(format!(
                            "incoming payment {pid} changed under a write lock"
                        ))));
                    }
                    let balances = ledger::ops::balances(&tx, &[settlement.as_str(), row.account_id.as_str()])?;
                    // the row as `credit_incoming` left it (read under this transaction's write lock)
                    let row = IncomingRow {
                        received_amount: received,
                        completed,
                        updated_at: now,
                        ..row.clone()
                    };
                    let paid = repo::add_connection_received(&tx, &pid, &connection, value.as_i64(), now)?;
                    Ok((row, paid, balances))
                };
                let (row, paid, balances) = match credit() {
                    Ok(done) => done,
                    Err(LedgerError::Money(e)) => {
                        tracing::info!(payment = %pid, amount, error = %e, "STREAM packet refused: the amount does not fit");
                        return Ok((StreamCredit::Refused(row, paid, Refusal::Overflow), Vec::new(), None));
                    }
                    Err(e) => return Err(e),
                };
                // the peer's credit limit, on the position this packet leaves (race-free: same transaction)
                if let Some(why) = crate::ase::liquidity::credit_refusal(&tx, &peer, &inflow.link)? {
                    tracing::info!(payment = %pid, peer = %peer, amount, "STREAM packet refused: {why}");
                    return Ok((StreamCredit::OverCreditLimit(why), Vec::new(), None));
                }
                let recorded = if row.completed {
                    let event = DomainEvent::IncomingPaymentCompleted { id: row.id.clone().into() };
                    Some(outbox::append(&tx, now, event)?)
                } else {
                    None
                };
                tx.commit()?;
                let credit = StreamCredit::Credited(row, u64::try_from(paid).unwrap_or(0));
                Ok::<_, LedgerError>((credit, balances, recorded))
            })
            .await?;
        if let StreamCredit::Credited(row, _) = &credit {
            self.bus.publish(DomainEvent::IncomingPaymentReceived {
                id: row.id.clone().into(),
                received: row.received_amount,
            });
            self.bus.publish_recorded(recorded);
            self.bus.publish_all(balances.iter().map(Balance::event));
        }
        Ok(credit)
    }

    pub async fn get(&self, id: &str) -> Result<IncomingRow, IncomingError> {
        if !ids::is_id(id) {
            return Err(IncomingError::NotFound);
        }
        let i = id.to_owned();
        self.store
            .call(move |c| repo::incoming(c, &i))
            .await?
            .ok_or(IncomingError::NotFound)
    }

    /// Lists newest first: one wallet's or all, one client's or all, optionally in one state.
    pub async fn list(
        &self,
        wallet_id: Option<&str>,
        client: Option<String>,
        state: Option<&str>,
        page: PageQuery,
    ) -> Result<Page<IncomingRow>, IncomingError> {
        let w = wallet_id.map(str::to_owned);
        let condition = match state {
            None => None,
            Some(st) => {
                let st: IncomingState = st.parse().map_err(|_| IncomingError::BadStateFilter)?;
                Some(repo::incoming_state_condition(st, self.clock.now()))
            }
        };
        self.store
            .call(move |c| repo::list_incoming(c, w.as_deref(), client.as_deref(), condition.clone(), &page))
            .await
            .map_err(IncomingError::from)
    }

    /// How many incoming payments are open now.
    pub async fn count_open(&self) -> Result<usize, IncomingError> {
        let now = self.clock.now();
        self.store
            .call(move |c| repo::count_open_incoming(c, now))
            .await
            .map_err(IncomingError::from)
    }

    /// Completes a pending incoming payment; completing a completed one returns it unchanged.
    pub async fn complete(&self, id: &str) -> Result<IncomingRow, IncomingError> {
        let row = self.get(id).await?;
        let now = self.clock.now();
        match state_of(&row, now) {
            IncomingState::Completed => return Ok(row),
            IncomingState::Expired => return Err(IncomingError::Expired),
            _ => {}
        }
        let i = row.id.clone();
        let recorded = self
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let recorded = if repo::complete_incoming(&tx, &i, now)? {
                    let event = DomainEvent::IncomingPaymentCompleted { id: i.clone().into() };
                    Some(outbox::append(&tx, now, event)?)
                } else {
                    None
                };
                tx.commit()?;
                Ok::<_, store::Error>(recorded)
            })
            .await?;
        self.bus.publish_recorded(recorded);
        self.get(&row.id).await
    }
}
