//! Reads that compose several services for the console (embedded or attached) and the admin API: the
//! overview's counters and what needs attention, wallets with their balance and key count, what each outgoing-payment grant has
//! spent, and what the server is (for a console's header). One definition, so both console modes show the
//! same numbers.

use std::collections::BTreeMap;

use super::{
    Error, Services,
    dto::{
        ACTIVITY_MINUTES, Activity, AssetMoved, Attention, AttentionKind, FailedPayment, Overview, RejectedPacket,
        ServerView, WalletSummary,
    },
};
use crate::{
    ase::outgoing::GrantSpent,
    gnap::model::AccessItem,
    states::{DeliveryState, GrantState, OutgoingState},
    store::payments::PageQuery,
    text::sanitize,
    thresholds::Measure,
};

/// Pending grants, open incoming payments, failed outgoing payments and the balances of the accounts that
/// stand (not each payment's own).
pub async fn overview(s: &Services) -> Result<Overview, Error> {
    let pending = s.gnap.list(Some(GrantState::Pending), false, 200).await?.len();
    let mut o = Overview {
        pending_grants: pending,
        open_incoming: s.incoming.count_open().await?,
        failed_outgoing: s.outgoing.count_in_state(OutgoingState::Failed).await?,
        balances: s.ledger.standing_balances().await?,
        activity: activity(s).await?,
        wal: s.store.meters().wal.state(),
        attention: Vec::new(),
    };
    o.attention = attention(s, &o).await?;
    Ok(o)
}

/// What needs the operator's attention, in the order of [`AttentionKind`]: peers and wallets past their
/// thresholds, dead webhooks, grants waiting past half their window, payments failed in the last hour, a WAL
/// over 80 % of its ceiling, a node that does not trust its caches.
pub async fn attention(s: &Services, o: &Overview) -> Result<Vec<Attention>, Error> {
    let now = s.clock.now();
    let window = time::Duration::seconds(i64::from(s.settings.gnap.interaction_expires_in_secs));
    let (thresholds, waiting, failed) = s
        .store
        .call(move |c| {
            Ok::<_, crate::store::Error>((
                crate::thresholds::all(c)?,
                crate::store::stats::waiting(c, now, now - window)?,
                crate::store::stats::failed_since(c, now - time::Duration::HOUR)?,
            ))
        })
        .await?;
    let mut out = Vec::new();
    for t in thresholds {
        let Some(value) = t.value.filter(|v| t.measure.past(*v, t.threshold)) else {
            continue;
        };
        let asset = t.asset();
        let (kind, who, side) = match t.measure {
            Measure::PeerLiquidity => (AttentionKind::PeerLiquidityLow, "peer", "under"),
            Measure::PeerCredit => (AttentionKind::PeerCreditHigh, "peer", "over"),
            Measure::WalletBalance => (AttentionKind::WalletBalanceLow, "wallet", "under"),
        };
        out.push(Attention {
            kind,
            what: format!(
                "{who} {}: {} {}, {side} threshold {}",
                sanitize(&t.subject),
                t.measure.words(),
                asset.format(value.into()),
                asset.format(t.threshold.into())
            ),
        });
    }
    let plural = |n: u64, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let dead = u64::try_from(o.activity.webhooks_dead).unwrap_or(u64::MAX);
    if dead > 0 {
        out.push(Attention {
            kind: AttentionKind::DeadWebhooks,
            what: format!(
                "{} dead: retry once the receiver is fixed",
                plural(dead, "webhook delivery", "webhook deliveries")
            ),
        });
    }
    if waiting.past_half_window > 0 {
        out.push(Attention {
            kind: AttentionKind::GrantsWaiting,
            what: format!(
                "{} waiting past half their window (oldest {} min)",
                plural(waiting.past_half_window, "grant", "grants"),
                waiting.oldest_seconds / 60
            ),
        });
    }
    if failed > 0 {
        out.push(Attention {
            kind: AttentionKind::FailedPayments,
            what: format!(
                "{} failed in the last hour",
                plural(failed, "outgoing payment", "outgoing payments")
            ),
        });
    }
    if let Some(w) = o
        .wal
        .as_ref()
        .filter(|w| w.ceiling_bytes > 0 && w.file_bytes > w.ceiling_bytes / 5 * 4)
    {
        out.push(Attention {
            kind: AttentionKind::WalNearCeiling,
            what: format!(
                "WAL at {} % of its ceiling: a reader holds an old snapshot",
                w.file_bytes.saturating_mul(100) / w.ceiling_bytes
            ),
        });
    }
    if !s.store.coherence().trusted() {
        out.push(Attention {
            kind: AttentionKind::CachesNotTrusted,
            what: "not hearing the other nodes: reading everything from the database".into(),
        });
    }
    Ok(out)
}

/// Money moved per asset in each of the last minutes, work waiting, and the latest failed payments.
pub async fn activity(s: &Services) -> Result<Activity, Error> {
    let now = s.clock.now();
    let minute = now
        .replace_second(0)
        .unwrap_or(now)
        .replace_nanosecond(0)
        .unwrap_or(now);
    let minutes = i64::try_from(ACTIVITY_MINUTES).unwrap_or(15);
    let since = minute - time::Duration::minutes(minutes - 1);
    let label = |t: time::OffsetDateTime| crate::clock::format_ts(t).chars().take(16).collect::<String>();
    let labels: Vec<String> = (0..minutes)
        .map(|i| label(since + time::Duration::minutes(i)))
        .collect();
    let mut moved: Vec<AssetMoved> = Vec::new();
    for (code, scale, at, sum) in s.ledger.moved_per_minute(since).await? {
        let Some(i) = labels.iter().position(|l| *l == at) else {
            continue;
        };
        let idx = match moved
            .iter()
            .position(|m| m.asset_code == code && m.asset_scale == scale)
        {
            Some(idx) => idx,
            None => {
                moved.push(AssetMoved {
                    asset_code: code,
                    asset_scale: scale,
                    per_minute: vec![0; ACTIVITY_MINUTES],
                });
                moved.len() - 1
            }
        };
        moved[idx].per_minute[i] = moved[idx].per_minute[i].saturating_add(sum);
    }
    moved.sort_by(|a, b| a.asset_code.cmp(&b.asset_code));
    let failed = s
        .outgoing
        .list(
            None,
            None,
            Some(OutgoingState::Failed.to_string()),
            PageQuery {
                cursor: None,
                backward: false,
                limit: 5,
                search: None,
            },
        )
        .await?;
    let mut rejected_packets: Vec<RejectedPacket> = s
        .peers
        .traffic()
        .last_rejects()
        .into_iter()
        .map(|(peer, reject)| RejectedPacket { peer, reject })
        .collect();
    rejected_packets.sort_by(|a, b| b.reject.at.cmp(&a.reject.at));
    Ok(Activity {
        rejected_packets,
        until: label(minute),
        moved,
        sending: s.outgoing.count_in_state(OutgoingState::Sending).await?,
        webhooks_pending: s.webhooks.count(DeliveryState::Pending).await?,
        webhooks_dead: s.webhooks.count(DeliveryState::Dead).await?,
        recent_failures: failed
            .items
            .iter()
            .map(|p| FailedPayment {
                id: p.id.clone().into(),
                wallet: p.wallet_name.clone(),
                reason: p.failure_reason.clone(),
                at: crate::clock::format_ts(p.updated_at),
            })
            .collect(),
    })
}

/// Every wallet address with its balance and how many keys it publishes.
pub async fn wallet_summaries(s: &Services) -> Result<Vec<WalletSummary>, Error> {
    let balances = s.ledger.standing_balances().await?;
    let mut rows = Vec::new();
    for wallet in s.wallets.list().await? {
        let keys = s.wallets.keys(&wallet.name).await?.keys.len();
        if let Some(b) = balances.iter().find(|b| b.account_id == wallet.account_id) {
            rows.push(WalletSummary {
                wallet,
                balance: b.clone(),
                keys,
            });
        }
    }
    Ok(rows)
}

/// What each active outgoing-payment grant has spent in its current interval, by grant id.
pub async fn grant_spending(s: &Services) -> Result<BTreeMap<String, GrantSpent>, Error> {
    let mut spent = BTreeMap::new();
    for g in s
        .gnap
        .list(None, false, 200)
        .await?
        .iter()
        .filter(|g| g.state.is_active())
    {
        for item in &g.access {
            if let AccessItem::OutgoingPayment { limits, identifier, .. } = item {
                let asset = s.wallets.by_url(identifier).await?.map(|w| w.asset());
                spent.insert(
                    g.id.clone(),
                    s.outgoing.grant_spent(&g.id, limits.as_ref(), asset).await?,
                );
            }
        }
    }
    Ok(spent)
}

/// The running server: version, process, addresses and database.
pub fn server_view(s: &Services) -> ServerView {
    ServerView {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        listen: s.settings.listen.to_string(),
        public_url: s.settings.public_url.clone(),
        ilp_address: Some(s.settings.ilp.address.clone()),
        database: s.settings.store_location(),
        webhooks_enabled: s.webhooks.enabled(),
    }
}
