//! Quotes: what a payment to a receiver will debit and deliver, valid until `expiresAt`. Local receivers
//! (incoming payments on this ASE) are quoted from the operator's rate table and fees; receivers on other
//! hosts need STREAM and are refused with a clear error until it lands.

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::{Deserialize, Serialize};
use time::Duration;

use super::{
    auth::RsAuth,
    incoming::{IncomingPayments, parse_body, state_of, wallet_of},
    rates::{RateError, Rates},
    wallet::Wallet,
};
use crate::{
    clock::{SharedClock, format_ts, parse_ts},
    events::{DomainEvent, EventBus},
    gnap::model::{Action, check_receiver},
    ids,
    money::{Amount, Asset, Value},
    server::{AppState, error::ApiError},
    store::{
        Store,
        payments::{self as repo, IncomingRow, Page, PageQuery, QuoteRow},
    },
};

/// `POST /quotes` body (the three spec variants in one shape; both amounts at once is refused).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateQuote {
    pub wallet_address: String,
    pub receiver: String,
    pub method: String,
    #[serde(default)]
    pub debit_amount: Option<Amount>,
    #[serde(default)]
    pub receive_amount: Option<Amount>,
}

/// The spec's `quote`: exactly these fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuoteDto {
    pub id: String,
    pub wallet_address: String,
    pub receiver: String,
    pub receive_amount: Amount,
    pub debit_amount: Amount,
    pub method: String,
    pub expires_at: String,
    pub created_at: String,
}

/// What a quote amounts to before it is stored (shared with outgoing payments created without a quote).
#[derive(Debug, Clone)]
pub struct Priced {
    pub receiver: IncomingRow,
    pub debit: u64,
    pub receive: u64,
    pub fee: u64,
}

fn bad(code: &'static str, d: impl Into<String>) -> ApiError {
    ApiError::bad_request(code, d)
}

impl From<RateError> for ApiError {
    fn from(e: RateError) -> Self {
        bad("invalid_amount", e.to_string())
    }
}

#[derive(Clone)]
pub struct Quotes {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    rates: Rates,
    incoming: IncomingPayments,
    public_url: String,
    lifetime: Duration,
}

impl Quotes {
    pub fn new(
        store: Store,
        bus: EventBus,
        clock: SharedClock,
        rates: Rates,
        incoming: IncomingPayments,
        public_url: &str,
        lifetime_secs: u64,
    ) -> Self {
        Self {
            store,
            bus,
            clock,
            rates,
            incoming,
            public_url: public_url.trim_end_matches('/').to_owned(),
            lifetime: Duration::seconds(i64::try_from(lifetime_secs).unwrap_or(3600)),
        }
    }

    pub fn url_of(&self, id: &str) -> String {
        format!("{}/quotes/{id}", self.public_url)
    }

    pub fn id_from_url<'a>(&self, url: &'a str) -> Option<&'a str> {
        url.strip_prefix(self.public_url.as_str())?
            .strip_prefix("/quotes/")
            .filter(|id| ids::is_id(id))
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
            expires_at: q.expires_at.clone(),
            created_at: q.created_at.clone(),
        }
    }

    /// Resolves and checks a receiver, then prices the payment (`debit` xor `receive`, or the remainder).
    pub async fn price(
        &self,
        wallet: &Wallet,
        receiver: &str,
        debit: Option<&Amount>,
        receive: Option<&Amount>,
    ) -> Result<Priced, ApiError> {
        check_receiver(receiver).map_err(|e| bad("invalid_receiver", e.description))?;
        let Some(id) = self.incoming.id_from_url(receiver) else {
            return Err(bad(
                "invalid_receiver",
                format!(
                    "{receiver} is not an incoming payment of this ASE; paying other ASEs needs STREAM, which this build does not do yet"
                ),
            ));
        };
        let r = self
            .incoming
            .get(id)
            .await
            .map_err(|_| bad("invalid_receiver", "unknown receiver"))?;
        match state_of(&r, self.clock.now()) {
            "completed" => {
                return Err(bad("invalid_receiver", "the receiver is already completed"));
            }
            "expired" => return Err(bad("invalid_receiver", "the receiver has expired")),
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
        let (debit, receive, fee) = match (debit, receive) {
            (Some(_), Some(_)) => {
                return Err(bad("invalid_request", "give debitAmount or receiveAmount, not both"));
            }
            (Some(d), None) => {
                let d = d.expect_asset(&from)?.get();
                let (receive, fee) = self.rates.fixed_send(d, &from, &to)?;
                (d, receive, fee)
            }
            (None, Some(x)) => {
                let x = x.expect_asset(&to)?.get();
                if x == 0 {
                    return Err(bad("invalid_amount", "receiveAmount must be greater than zero"));
                }
                let (debit, fee) = self.rates.fixed_receive(x, &from, &to)?;
                (debit, x, fee)
            }
            (None, None) => {
                let x = remaining.ok_or_else(|| {
                    bad(
                        "invalid_amount",
                        "No amount was provided and no amount could be inferred from the receiver.",
                    )
                })?;
                let (debit, fee) = self.rates.fixed_receive(x, &from, &to)?;
                (debit, x, fee)
            }
        };
        if let Some(rem) = remaining
            && receive > rem
        {
            return Err(bad(
                "invalid_amount",
                format!("the receiver expects only {} more", to.format(i128::from(rem))),
            ));
        }
        Ok(Priced {
            receiver: r,
            debit,
            receive,
            fee,
        })
    }

    /// When a quote priced now expires: its lifetime, never after the receiver's expiry.
    pub fn expiry(&self, receiver: &IncomingRow) -> String {
        let mut t = self.clock.now() + self.lifetime;
        if let Some(e) = receiver.expires_at.as_deref().and_then(|e| parse_ts(e).ok()) {
            t = t.min(e);
        }
        format_ts(t)
    }

    pub async fn create(
        &self,
        wallet: &Wallet,
        client: Option<String>,
        req: CreateQuote,
    ) -> Result<QuoteRow, ApiError> {
        if req.method != "ilp" {
            return Err(bad("invalid_request", "method must be \"ilp\""));
        }
        let p = self
            .price(
                wallet,
                &req.receiver,
                req.debit_amount.as_ref(),
                req.receive_amount.as_ref(),
            )
            .await?;
        let row = QuoteRow {
            id: ids::new_id(),
            wallet_id: wallet.id.clone(),
            wallet_name: wallet.name.clone(),
            asset_code: wallet.asset_code.clone(),
            asset_scale: wallet.asset_scale,
            client,
            receiver: req.receiver.clone(),
            incoming_payment_id: Some(p.receiver.id.clone()),
            debit_amount: Value::new(p.debit)?.as_i64(),
            receive_amount: Value::new(p.receive)?.as_i64(),
            receive_asset_code: p.receiver.asset_code.clone(),
            receive_asset_scale: p.receiver.asset_scale,
            fee: Value::new(p.fee)?.as_i64(),
            expires_at: self.expiry(&p.receiver),
            created_at: format_ts(self.clock.now()),
        };
        let stored = row.clone();
        self.store
            .call(move |c| repo::insert_quote(c, &stored))
            .await
            .map_err(|e| ApiError::internal(&e))?;
        self.bus.publish(DomainEvent::QuoteCreated {
            id: row.id.clone(),
            wallet: row.wallet_name.clone(),
        });
        Ok(row)
    }

    /// Lists newest first, one wallet's or all.
    pub async fn list(&self, wallet_id: Option<&str>, page: PageQuery) -> Result<Page<QuoteRow>, ApiError> {
        let w = wallet_id.map(str::to_owned);
        self.store
            .call(move |c| repo::list_quotes(c, w.as_deref(), &page))
            .await
            .map_err(|e| ApiError::internal(&e))
    }

    pub async fn get(&self, id: &str) -> Result<QuoteRow, ApiError> {
        let not_found = || ApiError::not_found("unknown quote");
        if !ids::is_id(id) {
            return Err(not_found());
        }
        let i = id.to_owned();
        self.store
            .call(move |c| repo::quote(c, &i))
            .await
            .map_err(|e| ApiError::internal(&e))?
            .ok_or_else(not_found)
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/quotes", post(create))
        .route("/quotes/{id}", get(read))
}

async fn create(State(s): State<AppState>, auth: RsAuth) -> Result<Response, ApiError> {
    let req: CreateQuote = parse_body(&auth)?;
    let wallet_url = req.wallet_address.trim_end_matches('/').to_owned();
    auth.require("quote", Action::Create, &wallet_url)?;
    let wallet = wallet_of(&s, &wallet_url).await?;
    let q = s.quotes.create(&wallet, Some(auth.client_id.clone()), req).await?;
    Ok((StatusCode::CREATED, Json(s.quotes.dto(&q))).into_response())
}

async fn read(State(s): State<AppState>, Path(id): Path<String>, auth: RsAuth) -> Result<Response, ApiError> {
    let q = s.quotes.get(&id).await?;
    let wallet_url = format!("{}/{}", s.settings.public_url, q.wallet_name);
    let scope = auth.require("quote", Action::Read, &wallet_url)?;
    if !scope.all && q.client.as_deref() != Some(auth.client_id.as_str()) {
        return Err(ApiError::not_found("unknown quote"));
    }
    Ok(Json(s.quotes.dto(&q)).into_response())
}
