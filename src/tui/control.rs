//! The control task: carries out the console's effects with the same operations the admin API runs, off
//! the UI task, and answers with replies. Loads page from the store with keyset cursors.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{
    app::{Effect, Load, OverviewData, PAGE, Reply, WalletRow, short_id},
    pane::Pane,
};
use crate::{
    control::{
        self, Error, Services,
        dto::{PaymentFilter, Reject},
    },
    states::{GrantState, OutgoingState},
};

async fn load(s: &Services, l: Load) -> Result<Reply, Error> {
    let filter = |state: Option<String>| PaymentFilter {
        wallet: None,
        state,
        cursor: l.cursor.clone(),
        first: Some(PAGE),
    };
    let append = l.cursor.is_some();
    Ok(match l.pane {
        Pane::Overview => {
            let grants = control::list_grants(s, Some(GrantState::Pending.to_string())).await?;
            let open = s.incoming.count_open().await?;
            let failed = s.outgoing.count_in_state(OutgoingState::Failed).await?;
            let balances = control::balances(s).await?;
            Reply::Overview(OverviewData {
                pending_grants: grants.len(),
                open_incoming: open,
                failed_outgoing: failed,
                balances,
            })
        }
        Pane::Wallets => {
            let balances = control::balances(s).await?;
            let mut rows = Vec::new();
            for w in control::list_wallets(s).await? {
                let keys = s.wallets.keys(&w.name).await?.keys.len();
                if let Some(b) = balances.iter().find(|b| b.account_id == w.account_id) {
                    rows.push(WalletRow {
                        wallet: w,
                        balance: b.clone(),
                        keys,
                    });
                }
            }
            Reply::Wallets(rows)
        }
        Pane::Incoming => {
            let l = control::list_incoming(s, filter(None)).await?;
            Reply::Incoming {
                rows: l.items,
                next: l.next_cursor,
                append,
            }
        }
        Pane::Grants => {
            let grants = control::list_grants(s, None).await?;
            let mut spent = std::collections::HashMap::new();
            for g in grants.iter().filter(|g| g.state.is_active()) {
                for item in &g.access {
                    if let crate::gnap::model::AccessItem::OutgoingPayment { limits, identifier, .. } = item {
                        let asset = s.wallets.by_url(identifier).await?.map(|w| w.asset());
                        spent.insert(
                            g.id.clone(),
                            s.outgoing.grant_spent(&g.id, limits.as_ref(), asset).await?,
                        );
                    }
                }
            }
            Reply::Grants(grants, spent)
        }
        Pane::Outgoing => {
            let state = l.failed_only.then(|| OutgoingState::Failed.to_string());
            let l = control::list_outgoing(s, filter(state)).await?;
            Reply::Outgoing {
                rows: l.items,
                next: l.next_cursor,
                append,
            }
        }
        Pane::Quotes => {
            let l = control::list_quotes(s, filter(None)).await?;
            Reply::Quotes {
                rows: l.items,
                next: l.next_cursor,
                append,
            }
        }
        Pane::Requests | Pane::Log => Reply::Done(String::new()),
    })
}

/// Runs one effect and returns the reply (none for `Quit`).
pub async fn run_effect(s: &Services, e: Effect) -> Option<Reply> {
    let r = match e {
        Effect::Load(l) => load(s, l).await,
        Effect::Approve(id) => control::approve_grant(s, &id)
            .await
            .map(|_| Reply::Done(format!("grant {} approved", short_id(&id)))),
        Effect::Reject(id, reason) => control::reject_grant(s, &id, Reject { reason })
            .await
            .map(|_| Reply::Done(format!("grant {} rejected", short_id(&id)))),
        Effect::Revoke(id) => control::revoke_grant(s, &id)
            .await
            .map(|_| Reply::Done(format!("grant {} revoked", short_id(&id)))),
        Effect::Complete(id) => control::complete_incoming(s, &id)
            .await
            .map(|_| Reply::Done(format!("incoming payment {} completed", short_id(&id)))),
        Effect::Retry(id) => control::retry_outgoing(s, &id)
            .await
            .map(|_| Reply::Done(format!("outgoing payment {} retried", short_id(&id)))),
        Effect::Cancel(id) => control::cancel_outgoing(s, &id)
            .await
            .map(|_| Reply::Done(format!("outgoing payment {} cancelled", short_id(&id)))),
        Effect::CreateWallet {
            name,
            asset_code,
            asset_scale,
        } => control::create_wallet(
            s,
            crate::control::dto::CreateWallet {
                name,
                asset_code,
                asset_scale,
                public_name: None,
            },
        )
        .await
        .map(|w| Reply::Done(format!("wallet {} created", w.url))),
        Effect::Move {
            wallet,
            deposit,
            amount,
        } => {
            let movement = if deposit {
                crate::ledger::Movement::Deposit
            } else {
                crate::ledger::Movement::Withdrawal
            };
            match crate::money::Value::new(amount) {
                Err(e) => Err(e.into()),
                Ok(value) => control::move_funds(
                    s,
                    &wallet,
                    crate::control::dto::Move {
                        value,
                        asset_code: None,
                        asset_scale: None,
                        transfer_id: None,
                    },
                    movement,
                )
                .await
                .map(|m| {
                    Reply::Done(format!(
                        "{} {}: balance {}",
                        if deposit { "deposited into" } else { "withdrew from" },
                        wallet,
                        crate::money::format_minor(m.balance.balance.into(), m.balance.asset_scale)
                    ))
                }),
            }
        }
        Effect::GenerateKey(wallet) => control::add_key(
            s,
            &wallet,
            crate::control::dto::AddKey {
                jwk: None,
                generate: true,
            },
        )
        .await
        .map(|k| Reply::KeyGenerated {
            wallet,
            kid: k.jwk.kid,
            pem: k.private_key_pem.unwrap_or_default(),
        }),
        Effect::Demo => {
            let settings = s.settings.clone();
            tokio::spawn(async move {
                if let Err(e) = crate::demo::run(&settings).await {
                    tracing::warn!(error = %e, "demo scenario failed");
                }
            });
            return None;
        }
        Effect::Quit => return None,
    };
    Some(r.unwrap_or_else(|e| Reply::Failed(e.to_string())))
}

/// Serves effects from `rx`, sending replies to `tx`, until `rx` closes. Effects run concurrently.
pub async fn serve(s: Arc<Services>, mut rx: mpsc::UnboundedReceiver<Effect>, tx: mpsc::UnboundedSender<Reply>) {
    while let Some(e) = rx.recv().await {
        let (s, tx) = (s.clone(), tx.clone());
        tokio::spawn(async move {
            if let Some(r) = run_effect(&s, e).await {
                let _ = tx.send(r);
            }
        });
    }
}
