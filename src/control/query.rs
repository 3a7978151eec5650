//! What operators read, as data: one [`Query`] per view the console loads or the CLI shows, and [`answer`], the
//! one place that reads it from the [`Services`]. The admin API answers queries at `POST /admin/queries` (and
//! its `GET` paths as a table onto them), its client sends them, and every console desk — embedded, attached,
//! the workshop's two — and the CLI read through `ask(Query)`, as they act through `run(Command)`
//! ([`super::command`]). The server's recent requests live in its memory, not the services: the admin API
//! answers those two queries itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    Error, Services,
    classroom::SeatProgress,
    dto::{
        GrantFilter, Listed, Overview, PaymentFilter, PeerView, RequestPage, ServerView, WalletDetail, WalletSummary,
        WebhookPage,
    },
};
use crate::{
    ase::{incoming::IncomingView, outgoing::GrantSpent, outgoing::OutgoingView, quotes::QuoteDto},
    events::requests::{RequestDetail, RequestSummary},
    gnap::service::GrantView,
    httpsig::jwk::Jwks,
    ledger::Balance,
    wallet::Wallet,
    webhooks::DeliveryRow,
};

/// A view to read. Serialised as `{"query": "grants", "all": true}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "query", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Query {
    Overview,
    /// What the server is (version, pid, addresses, database).
    Server,
    /// Every wallet with its balance and key count.
    Wallets,
    /// Every wallet address.
    WalletAddresses,
    /// One wallet address with its keys and balance.
    Wallet {
        name: String,
    },
    /// The keys a wallet address publishes.
    Keys {
        wallet: String,
    },
    /// Every account's balance.
    Balances,
    /// The grants in `state`, or every one (`all`), else the open ones.
    Grants(GrantFilter),
    /// What each active outgoing-payment grant has spent in its current interval, by grant id.
    GrantSpending,
    /// One grant with its timeline.
    Grant {
        id: String,
    },
    Incoming {
        filter: PaymentFilter,
    },
    IncomingPayment {
        id: String,
    },
    Outgoing {
        filter: PaymentFilter,
    },
    OutgoingPayment {
        id: String,
    },
    Quotes {
        filter: PaymentFilter,
    },
    Quote {
        id: String,
    },
    /// Webhook deliveries newest first, optionally in one state, before sequence number `before`.
    Webhooks(WebhookPage),
    /// The ILP peers with their account balances (tokens never shown).
    Peers,
    Peer {
        name: String,
    },
    /// Every alert threshold (peers' liquidity and credit used, wallets' balances) with its value now.
    Thresholds,
    /// The server's recent requests, newest first, after request `cursor`.
    Requests(RequestPage),
    /// One recent request with its signature report.
    Request {
        id: String,
    },
    /// A class's seats and the steps of the flow each has taken here (`opdesk workshop --seats N`).
    Classroom,
    /// The whole class: on a desk of a running workshop, every desk's part merged; elsewhere this desk's part
    /// (`opdesk classroom`, the console's Classroom, the class page).
    Class,
}

/// `Found` with one variant per payload, and [`Found::body`]: the payload alone as JSON.
macro_rules! found {
    ($($(#[$doc:meta])* $variant:ident($t:ty),)*) => {
        /// What a query found. Serialised as `{"found": "grants", "value": …}`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "found", content = "value", rename_all = "camelCase")]
        pub enum Found {
            $($(#[$doc])* $variant($t),)*
        }

        impl Found {
            /// The payload alone, as the admin API's `GET` path for the query answers it.
            pub fn body(&self) -> serde_json::Result<String> {
                match self {
                    $(Self::$variant(v) => serde_json::to_string(v),)*
                }
            }
        }
    };
}

found! {
    Overview(Box<Overview>),
    Server(ServerView),
    Wallets(Vec<WalletSummary>),
    WalletAddresses(Vec<Wallet>),
    Wallet(Box<WalletDetail>),
    Keys(Jwks),
    Balances(Vec<Balance>),
    Grants(Vec<GrantView>),
    GrantSpending(BTreeMap<String, GrantSpent>),
    Grant(Box<GrantView>),
    Incoming(Listed<IncomingView>),
    IncomingPayment(Box<IncomingView>),
    Outgoing(Listed<OutgoingView>),
    OutgoingPayment(Box<OutgoingView>),
    Quotes(Listed<QuoteDto>),
    Quote(Box<QuoteDto>),
    Webhooks(Vec<DeliveryRow>),
    Peers(Vec<PeerView>),
    Peer(Box<PeerView>),
    Thresholds(Vec<crate::thresholds::ThresholdView>),
    Requests(Listed<RequestSummary>),
    Request(Box<RequestDetail>),
    Classroom(Vec<SeatProgress>),
}

/// The running server's recent requests.
fn ring(s: &Services) -> Result<&dyn super::RequestRing, Error> {
    s.requests.get().map(|r| &**r).ok_or_else(|| {
        Error::invalid(
            "invalid_request",
            "the request log lives in the running server's memory",
        )
    })
}

/// Reads what `q` asks for.
pub async fn answer(s: &Services, q: Query) -> Result<Found, Error> {
    use super::{classroom, grants, payments, peers, views, wallets};
    Ok(match q {
        Query::Overview => Found::Overview(Box::new(views::overview(s).await?)),
        Query::Server => Found::Server(views::server_view(s)),
        Query::Wallets => Found::Wallets(views::wallet_summaries(s).await?),
        Query::WalletAddresses => Found::WalletAddresses(wallets::list_wallets(s).await?),
        Query::Wallet { name } => Found::Wallet(Box::new(wallets::show_wallet(s, &name).await?)),
        Query::Keys { wallet } => Found::Keys(super::keys::list_keys(s, &wallet).await?),
        Query::Balances => Found::Balances(wallets::balances(s).await?),
        Query::Grants(GrantFilter { all, state }) => Found::Grants(grants::list_grants(s, state, all).await?),
        Query::GrantSpending => Found::GrantSpending(views::grant_spending(s).await?),
        Query::Grant { id } => Found::Grant(Box::new(grants::show_grant(s, &id).await?)),
        Query::Incoming { filter } => Found::Incoming(payments::list_incoming(s, filter).await?),
        Query::IncomingPayment { id } => Found::IncomingPayment(Box::new(payments::show_incoming(s, &id).await?)),
        Query::Outgoing { filter } => Found::Outgoing(payments::list_outgoing(s, filter).await?),
        Query::OutgoingPayment { id } => Found::OutgoingPayment(Box::new(payments::show_outgoing(s, &id).await?)),
        Query::Quotes { filter } => Found::Quotes(payments::list_quotes(s, filter).await?),
        Query::Quote { id } => Found::Quote(Box::new(payments::show_quote(s, &id).await?)),
        Query::Webhooks(WebhookPage { state, before, first }) => {
            let mut rows = super::webhooks::list_webhooks(s, state, before, Some(first)).await?;
            // as the admin API answers them: without the body they send (not part of the operator's view)
            rows.iter_mut().for_each(|d| d.body.clear());
            Found::Webhooks(rows)
        }
        Query::Classroom => Found::Classroom(classroom::progress(s).await?),
        Query::Class => match s.room.progress().await {
            Some(class) => Found::Classroom(class?),
            None => Found::Classroom(classroom::progress(s).await?),
        },
        Query::Peers => Found::Peers(peers::list_peers(s).await?),
        Query::Peer { name } => Found::Peer(Box::new(peers::show_peer(s, &name).await?)),
        Query::Thresholds => Found::Thresholds(super::thresholds::list_thresholds(s).await?),
        Query::Requests(RequestPage { cursor, limit }) => {
            let (items, next_cursor) = ring(s)?.page(cursor.as_deref(), limit.min(1000));
            Found::Requests(super::dto::Listed { items, next_cursor })
        }
        Query::Request { id } => Found::Request(Box::new(ring(s)?.detail(&id).ok_or_else(|| {
            Error::NotFound(format!(
                "no request {id} in the server's recent requests (it keeps the last {})",
                s.settings.server.request_log_size
            ))
        })?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_tagged_json() {
        let q: Query = serde_json::from_value(serde_json::json!({"query": "grants", "all": true})).unwrap();
        assert_eq!(q, Query::Grants(GrantFilter { all: true, state: None }));
        let q = Query::Webhooks(WebhookPage {
            state: None,
            before: Some(7),
            first: 50,
        });
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(v, serde_json::json!({"query": "webhooks", "before": 7, "first": 50}));
        assert_eq!(serde_json::from_value::<Query>(v).unwrap(), q);
        let f = serde_json::to_value(Found::Peers(Vec::new())).unwrap();
        assert_eq!(f, serde_json::json!({"found": "peers", "value": []}));
        assert_eq!(Found::Peers(Vec::new()).body().unwrap(), "[]");
    }
}
