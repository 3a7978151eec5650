//! Quotes: what a payment to a receiver will debit and deliver, valid until `expiresAt`. Local receivers
//! (incoming payments on this ASE) are quoted from the operator's rate table and fees. Receivers on other
//! hosts are resolved over Open Payments and quoted by a STREAM rate probe through the peer that routes to
//! them ([`super::remote`]): the probed rate must reach the operator's rate less the slippage, and the quote
//! delivers at that minimum rate; the plan (peer, credentials, rates) is stored in `stream_plans`.
//!
//! The types (bodies, wire resources, views, errors) are in `model`; the handlers in `crate::server::routes`.

use time::{Duration, OffsetDateTime};

use super::{
    exchange::Exchange,
    incoming::{IncomingPayments, state_of},
    remote::{Link, Remote, RemoteError, RemotePlan},
};
use crate::{
    clock::SharedClock,
    events::{DomainEvent, EventBus},
    gnap::model::check_receiver,
    ids,
    money::{Amount, Asset, Value},
    rates::RateError,
    states::IncomingState,
    store::{
        self, Store,
        payments::{self as repo, Page, PageQuery, QuoteRow},
    },
    wallet::Wallet,
};

mod model;

pub use model::{CreateQuote, Priced, QuoteDto, QuoteError};

#[derive(Clone)]
pub struct Quotes {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    exchange: Exchange,
    incoming: IncomingPayments,
    public_url: String,
    lifetime: Duration,
    remote: Option<Remote>,
}

impl Quotes {
    pub fn new(
        store: Store,
        bus: EventBus,
        clock: SharedClock,
        exchange: Exchange,
        incoming: IncomingPayments,
        public_url: &str,
        lifetime_secs: u64,
    ) -> Self {
        Self {
            store,
            bus,
            clock,
            exchange,
            incoming,
            public_url: crate::names::base_url(public_url),
            lifetime: Duration::seconds(i64::try_from(lifetime_secs).unwrap_or(3600)),
            remote: None,
        }
    }

    /// Enables quoting receivers on other ASEs.
    pub fn with_remote(mut self, remote: Remote) -> Self {
        self.remote = Some(remote);
        self
    }

    pub fn url_of(&self, id: &str) -> String {
        format!("{}/quotes/{id}", self.public_url)
    }

    /// The quote id in a `quoteId` as clients write it: a URL under this ASE's public URL whose path ends in
    /// `/quotes/{id}`, with or without a trailing slash — `{public}/quotes/{id}` as quotes are named, or
    /// `{wallet}/quotes/{id}` as the reference ASE's Bruno collection builds it (the reference takes the
    /// last path segment). No query or fragment. Whose quote it is, the store says.
    pub fn id_from_url<'a>(&self, url: &'a str) -> Option<&'a str> {
        let path = url.strip_prefix(self.public_url.as_str())?;
        if !path.starts_with('/') || path.contains(['?', '#']) {
            return None;
        }
        let path = path.strip_suffix('/').unwrap_or(path);
        let (before, id) = path.rsplit_once('/')?;
        (before.ends_with("/quotes") && ids::is_id(id)).then_some(id)
    }

    pub fn dto(&self, q: &QuoteRow) -> QuoteDto {
        let debit_asset = Asset {
            code: q.asset_code.clone(),
            scale: q.asset_scale,
        };
        let receive_asset = Asset {
            code: q.receive_asset_code.clone(),
            scale: q.receive_asset_scale,
        };
        QuoteDto {
            id: self.url_of(&q.id),
            wallet_address: format!("{}/{}", self.public_url, q.wallet_name),
            receiver: q.receiver.clone(),
            receive_amount: Amount::new(Value::from_i64(q.receive_amount).unwrap_or_default(), &receive_asset),
            debit_amount: Amount::new(Value::from_i64(q.debit_amount).unwrap_or_default(), &debit_asset),
            method: "ilp".into(),
            expires_at: q.expires_at,
            created_at: q.created_at,
        }
    }

    /// Resolves and checks a receiver, then prices the payment (`debit` xor `receive`, or the remainder).
    pub async fn price(
        &self,
        wallet: &Wallet,
        receiver: &str,
        debit: Option<&Amount>,
        receive: Option<&Amount>,
    ) -> Result<Priced, QuoteError> {
        check_receiver(receiver).map_err(|e| QuoteError::Receiver(e.description))?;
        let Some(id) = self.incoming.id_from_url(receiver) else {
            return self.price_remote(wallet, receiver, debit, receive).await;
        };
        let r = self
            .incoming
            .get(id)
            .await
            .map_err(|_| QuoteError::Receiver("unknown receiver".into()))?;
        match state_of(&r, self.clock.now()) {
            IncomingState::Completed => {
                return Err(QuoteError::Receiver("the receiver is already completed".into()));
            }
            IncomingState::Expired => return Err(QuoteError::Receiver("the receiver has expired".into())),
            _ => {}
        }
        let from = wallet.asset();
        let to = Asset {
            code: r.asset_code.clone(),
            scale: r.asset_scale,
        };
        let remaining = r
            .incoming_amount
            .map(|i| u64::try_from(i - r.received_amount).unwrap_or(0));
        let rates = self.exchange.rates(&from).await;
        let (debit, receive, fee) = match (debit, receive) {
            (Some(_), Some(_)) => {
                return Err(QuoteError::Request(
                    "give debitAmount or receiveAmount, not both".into(),
                ));
            }
            (Some(d), None) => {
                let d = d.expect_asset(&from)?.get();
                let (receive, fee) = rates.fixed_send(d, &from, &to).map_err(|e| match e {
                    RateError::TooSmall => QuoteError::TooSmall {
                        reason: e.to_string(),
                        min_send: rates.min_send(&from, &to),
                        asset: from.clone(),
                    },
                    e => e.into(),
                })?;
                (d, receive, fee)
            }
            (None, Some(x)) => {
                let x = x.expect_asset(&to)?.get();
                if x == 0 {
                    return Err(QuoteError::Amount("receiveAmount must be greater than zero".into()));
                }
                let (debit, fee) = rates.fixed_receive(x, &from, &to)?;
                (debit, x, fee)
            }
            (None, None) => {
                let x = remaining.ok_or_else(|| {
                    QuoteError::Amount(
                        "No amount was provided and no amount could be inferred from the receiver.".into(),
                    )
                })?;
                let (debit, fee) = rates.fixed_receive(x, &from, &to)?;
                (debit, x, fee)
            }
        };
        if let Some(rem) = remaining
            && receive > rem
        {
            return Err(QuoteError::Amount(format!(
                "the receiver expects only {} more",
                to.format(i128::from(rem))
            )));
        }
        Ok(Priced {
            receiver_expires_at: r.expires_at,
            receiver: Some(r),
            remote: None,
            receive_asset: to,
            debit,
            receive,
            fee,
            payee_wallet: None,
            payee_name: None,
        })
    }

    /// A receiver on another ASE: resolve it, probe the rate through its peer, price at the minimum rate
    /// (fixed-send: what the debit less the fee buys; fixed-receive: the source that buys it, plus the fee).
    async fn price_remote(
        &self,
        wallet: &Wallet,
        receiver: &str,
        debit: Option<&Amount>,
        receive: Option<&Amount>,
    ) -> Result<Priced, QuoteError> {
        let Some(remote) = &self.remote else {
            return Err(QuoteError::Remote(RemoteError::NoSendingPeer));
        };
        let remote_err = QuoteError::Remote;
        if debit.is_some() && receive.is_some() {
            return Err(QuoteError::Request(
                "give debitAmount or receiveAmount, not both".into(),
            ));
        }
        let r = remote.resolve(receiver).await.map_err(remote_err)?;
        if r.completed {
            return Err(QuoteError::Receiver("the receiver is already completed".into()));
        }
        if r.expires_at.is_some_and(|e| e <= self.clock.now()) {
            return Err(QuoteError::Receiver("the receiver has expired".into()));
        }
        let payee_name = match &r.wallet_address {
            Some(w) => remote.public_name(w).await,
            None => None,
        };
        let from = wallet.asset();
        let to = r.asset.clone();
        let remaining = r.incoming_amount.map(|i| i.saturating_sub(r.received_amount));
        let probed = remote.probe(&r, &from).await.map_err(remote_err)?;
        let minimum = probed.minimum;
        let fee_rule = remote.fee(&from);
        let too_large = || QuoteError::Amount("the amount is too large".into());
        // debit-asset units → peer-asset units (the same when the peer holds the wallet's asset)
        let to_peer = |a: u64| match &probed.link {
            Some(l) => l.dest_floor(a),
            None => Some(a),
        };
        let from_peer = |s: u64| match &probed.link {
            Some(l) => l.source_ceil(s),
            None => Some(s),
        };
        let fixed_send = debit.is_some();
        let (debit, receive, fee, source, debit_source) = match (debit, receive) {
            (Some(d), _) => {
                let d = d.expect_asset(&from)?.get();
                // (receive, fee, source, net), or None when `d` delivers nothing
                // (a conversion that does not fit is too large, never "too small")
                let send = |d: u64| -> Result<Option<(u64, u64, u64, u64)>, RateError> {
                    let fee = fee_rule.on(d)?;
                    let Some(net) = d.checked_sub(fee).filter(|s| *s > 0) else {
                        return Ok(None);
                    };
                    let source = to_peer(net).ok_or(RateError::TooLarge)?;
                    if source == 0 {
                        return Ok(None);
                    }
                    let receive = minimum.dest_floor(source).ok_or(RateError::TooLarge)?;
                    Ok((receive > 0).then_some((receive, fee, source, net)))
                };
                let Some((receive, fee, source, net)) = send(d)? else {
                    return Err(QuoteError::TooSmall {
                        reason: "the amount is too small to deliver anything at the minimum rate".into(),
                        min_send: crate::rates::smallest(|d| send(d).ok().map(|s| s.is_some())),
                        asset: from.clone(),
                    });
                };
                (d, receive, fee, source, net)
            }
            (None, x) => {
                let x = match x {
                    Some(x) => x.expect_asset(&to)?.get(),
                    None => remaining.ok_or_else(|| {
                        QuoteError::Amount(
                            "No amount was provided and no amount could be inferred from the receiver.".into(),
                        )
                    })?,
                };
                if x == 0 {
                    return Err(QuoteError::Amount("receiveAmount must be greater than zero".into()));
                }
                let source = minimum.source_ceil(x).ok_or_else(too_large)?;
                let net = from_peer(source).ok_or_else(too_large)?;
                let fee = fee_rule.on(net)?;
                let d = net
                    .checked_add(fee)
                    .filter(|d| *d <= i64::MAX as u64)
                    .ok_or_else(too_large)?;
                (d, x, fee, source, net)
            }
        };
        if let Some(rem) = remaining
            && receive > rem
        {
            return Err(QuoteError::Amount(format!(
                "the receiver expects only {} more",
                to.format(i128::from(rem))
            )));
        }
        Ok(Priced {
            receiver: None,
            payee_wallet: r.wallet_address.clone(),
            payee_name,
            receiver_expires_at: r.expires_at,
            remote: Some(RemotePlan {
                peer: probed.peer.name.clone(),
                ilp_address: r.ilp_address.as_str().to_owned(),
                shared_secret: r.shared_secret_base64url(),
                estimated: probed.estimated,
                minimum,
                max_packet_amount: probed.max_packet,
                source_amount: source,
                link: probed.link.map(|rate| Link {
                    peer_asset: probed.peer.asset.clone(),
                    rate,
                    debit_source,
                }),
                fixed_send,
            }),
            receive_asset: to,
            debit,
            receive,
            fee,
        })
    }

    /// When a quote priced now expires: its lifetime, never after the receiver's expiry.
    pub fn expiry(&self, priced: &Priced) -> OffsetDateTime {
        let mut t = self.clock.now() + self.lifetime;
        if let Some(e) = priced.receiver_expires_at {
            t = t.min(e);
        }
        t
    }

    pub async fn create(
        &self,
        wallet: &Wallet,
        client: Option<String>,
        req: CreateQuote,
    ) -> Result<QuoteRow, QuoteError> {
        if req.method != "ilp" {
            return Err(QuoteError::Request("method must be \"ilp\"".into()));
        }
        let p = self
            .price(
                wallet,
                &req.receiver,
                req.debit_amount.as_ref(),
                req.receive_amount.as_ref(),
            )
            .await?;
        let now = self.clock.now();
        let row = QuoteRow {
            id: ids::QuoteId::generate(),
            wallet_id: wallet.id.clone(),
            wallet_name: wallet.name.clone(),
            asset_code: wallet.asset_code.clone(),
            asset_scale: wallet.asset_scale,
            client,
            receiver: req.receiver.clone(),
            incoming_payment_id: p.receiver.as_ref().map(|r| r.id.clone()),
            debit_amount: Value::new(p.debit)?.as_i64(),
            receive_amount: Value::new(p.receive)?.as_i64(),
            receive_asset_code: p.receive_asset.code.clone(),
            receive_asset_scale: p.receive_asset.scale,
            fee: Value::new(p.fee)?.as_i64(),
            expires_at: self.expiry(&p),
            created_at: now,
            receiver_wallet: p.payee_wallet.clone(),
            receiver_public_name: p.payee_name.clone(),
        };
        let plan = p.plan_row(&row.id, &row.receiver, now);
        let stored = row.clone();
        let recorded = self
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                repo::insert_quote(&tx, &stored)?;
                if let Some(plan) = &plan {
                    store::stream::insert_plan(&tx, plan)?;
                }
                let event = DomainEvent::QuoteCreated {
                    id: stored.id.clone().into(),
                    wallet: stored.wallet_name.clone(),
                };
                let recorded = store::outbox::append(&tx, stored.created_at, event)?;
                tx.commit()?;
                Ok::<_, store::Error>(recorded)
            })
            .await?;
        self.bus.publish_recorded([recorded]);
        Ok(row)
    }

    /// Lists newest first, one wallet's or all.
    pub async fn list(&self, wallet_id: Option<&str>, page: PageQuery) -> Result<Page<QuoteRow>, QuoteError> {
        let w = wallet_id.map(str::to_owned);
        self.store
            .call(move |c| repo::list_quotes(c, w.as_deref(), &page))
            .await
            .map_err(QuoteError::from)
    }

    pub async fn get(&self, id: &str) -> Result<QuoteRow, QuoteError> {
        if !ids::is_id(id) {
            return Err(QuoteError::NotFound);
        }
        let i = id.to_owned();
        self.store
            .call(move |c| repo::quote(c, &i))
            .await?
            .ok_or(QuoteError::NotFound)
    }
}
