//! What the console reads, as data: one [`Query`] per view it loads, and [`answer`], the one place that reads it
//! from the [`Services`]. The admin API answers queries at `POST /admin/queries`, its client sends them, and every
//! console desk — embedded, attached, the workshop's two — reads through `ask(Query)`, as it acts through
//! `run(Command)` ([`super::command`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    Error, Services,
    dto::{Listed, Overview, PaymentFilter, PeerView, WalletSummary},
};
use crate::{
    ase::{incoming::IncomingView, outgoing::GrantSpent, outgoing::OutgoingView, quotes::QuoteDto},
    gnap::service::GrantView,
    webhooks::DeliveryRow,
};

/// A view the console loads. Serialised as `{"query": "grants", "all": true}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "query", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Query {
    Overview,
    /// Every wallet with its balance and key count.
    Wallets,
    /// The grants (every one with `all`, else the open ones) and what each outgoing-payment grant has spent.
    Grants {
        all: bool,
    },
    /// One grant with its timeline.
    Grant {
        id: String,
    },
    Incoming {
        filter: PaymentFilter,
    },
    Outgoing {
        filter: PaymentFilter,
    },
    Quotes {
        filter: PaymentFilter,
    },
    /// Webhook deliveries newest first, optionally in one state, before sequence number `before`.
    Webhooks {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<i64>,
        first: usize,
    },
    /// The ILP peers with their account balances (tokens never shown).
    Peers,
}

/// What a query found. Serialised as `{"found": "grants", "value": …}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "found", content = "value", rename_all = "camelCase")]
pub enum Found {
    Overview(Box<Overview>),
    Wallets(Vec<WalletSummary>),
    Grants(Vec<GrantView>, BTreeMap<String, GrantSpent>),
    Grant(Box<GrantView>),
    Incoming(Listed<IncomingView>),
    Outgoing(Listed<OutgoingView>),
    Quotes(Listed<QuoteDto>),
    Webhooks(Vec<DeliveryRow>),
    Peers(Vec<PeerView>),
}

/// Reads what `q` asks for.
pub async fn answer(s: &Services, q: Query) -> Result<Found, Error> {
    Ok(match q {
        Query::Overview => Found::Overview(Box::new(super::overview(s).await?)),
        Query::Wallets => Found::Wallets(super::wallet_summaries(s).await?),
        Query::Grants { all } => {
            let grants = super::list_grants(s, None, all).await?;
            Found::Grants(grants, super::grant_spending(s).await?)
        }
        Query::Grant { id } => Found::Grant(Box::new(super::show_grant(s, &id).await?)),
        Query::Incoming { filter } => Found::Incoming(super::list_incoming(s, filter).await?),
        Query::Outgoing { filter } => Found::Outgoing(super::list_outgoing(s, filter).await?),
        Query::Quotes { filter } => Found::Quotes(super::list_quotes(s, filter).await?),
        Query::Webhooks { state, before, first } => {
            let rows = super::list_webhooks(s, state, before, Some(first)).await?;
            // as the admin API answers them: without the body they send (not part of the operator's view)
            Found::Webhooks(
                rows.into_iter()
                    .map(|mut d| {
                        d.body.clear();
                        d
                    })
                    .collect(),
            )
        }
        Query::Peers => Found::Peers(super::list_peers(s).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_tagged_json() {
        let q: Query = serde_json::from_value(serde_json::json!({"query": "grants", "all": true})).unwrap();
        assert_eq!(q, Query::Grants { all: true });
        let q = Query::Webhooks {
            state: None,
            before: Some(7),
            first: 50,
        };
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(v, serde_json::json!({"query": "webhooks", "before": 7, "first": 50}));
        assert_eq!(serde_json::from_value::<Query>(v).unwrap(), q);
        let f = serde_json::to_value(Found::Peers(Vec::new())).unwrap();
        assert_eq!(f, serde_json::json!({"found": "peers", "value": []}));
    }
}
