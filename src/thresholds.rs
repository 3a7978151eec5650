//! Alert thresholds on money that runs low (or, for credit, high): what may still be sent through a peer (its
//! liquidity less what we owe it), what a peer owes us (its credit used), and a wallet's balance less its
//! reservations. Each is set by the operator (a `Command`, or `[[ilp.peers]]` in config.toml) in minor
//! units of the peer's or wallet's asset.
//!
//! **Crossing**: the ledger ([`crate::ledger::ops`]) calls [`after_transfer`] in every transaction that moves a
//! wallet's or a peer's money, after the balances changed; a threshold whose value is now past it and was not
//! crossed is flipped to crossed and appends one durable event (`peerLiquidityLow`, `peerCreditHigh`,
//! `walletBalanceLow`) in that same transaction; one whose value is back over it is flipped back, without an
//! event. The flag is a column, guarded in SQL: the next event comes only after a recovery, across restarts
//! and across nodes. Setting a threshold evaluates it at once: one set past the current value fires then.
//! Nothing here holds state in memory or speaks HTTP.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{
    events::{DomainEvent, EventRecord},
    money::Asset,
    store::{
        self, Connection, ledger as ledger_repo, peers as peers_repo,
        thresholds::{self as repo, ThresholdRow},
    },
};

pub use crate::events::Measure;

/// A threshold as reported: what it watches, the value now (none when it does not apply: a peer whose
/// sending is not limited has no liquidity to run low) and whether it is crossed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdView {
    pub measure: Measure,
    /// The peer's or the wallet's name.
    pub subject: String,
    pub threshold: i64,
    pub asset_code: String,
    pub asset_scale: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    /// Past the threshold since the transaction that crossed it (its event sent).
    pub crossed: bool,
}

impl ThresholdView {
    /// The threshold in words: `peer happy-life: liquidity threshold 50.00 USD (now 12.00 USD, under it)`.
    pub fn words(&self) -> String {
        let asset = self.asset();
        let kind = if self.measure == Measure::WalletBalance {
            "wallet"
        } else {
            "peer"
        };
        let now = match self.value {
            Some(v) if self.crossed => {
                let side = if self.measure == Measure::PeerCredit {
                    "over"
                } else {
                    "under"
                };
                format!(" (now {}, {side} it)", asset.format(v.into()))
            }
            Some(v) => format!(" (now {})", asset.format(v.into())),
            None => " (not watched: sending through it is not limited)".to_owned(),
        };
        format!(
            "{kind} {}: {} threshold {}{now}",
            crate::text::sanitize(&self.subject),
            self.measure.words(),
            asset.format(self.threshold.into())
        )
    }

    pub fn asset(&self) -> Asset {
        Asset {
            code: self.asset_code.clone(),
            scale: self.asset_scale,
        }
    }
}

/// The value `measure` watches on `subject` now, in `asset` (none: it does not apply).
fn value_of(conn: &Connection, measure: Measure, subject: &str, asset: &Asset) -> Result<Option<i64>, store::Error> {
    let balance = |id: Option<String>| -> Result<i64, store::Error> {
        Ok(match id {
            Some(id) => ledger_repo::account(conn, &id)?.map_or(0, |a| a.balance),
            None => 0,
        })
    };
    Ok(match measure {
        Measure::WalletBalance => repo::wallet_available(conn, subject)?
            .filter(|(_, code, scale)| *code == asset.code && *scale == asset.scale)
            .map(|(v, _, _)| v),
        Measure::PeerLiquidity => {
            if !peers_repo::limits(conn, subject)?.send_limited {
                return Ok(None);
            }
            let liquidity = balance(ledger_repo::liquidity_account(conn, subject, &asset.code, asset.scale)?)?;
            let position = balance(ledger_repo::peer_account(conn, subject, &asset.code, asset.scale)?)?;
            Some(liquidity.saturating_sub(position))
        }
        Measure::PeerCredit => {
            let position = balance(ledger_repo::peer_account(conn, subject, &asset.code, asset.scale)?)?;
            Some(position.saturating_neg().max(0))
        }
    })
}

fn view(row: &ThresholdRow, measure: Measure, value: Option<i64>) -> ThresholdView {
    ThresholdView {
        measure,
        subject: row.subject.clone(),
        threshold: row.threshold,
        asset_code: row.asset_code.clone(),
        asset_scale: row.asset_scale,
        value,
        crossed: row.crossed,
    }
}

/// The event a crossing appends.
fn crossed_event(v: &ThresholdView, value: i64) -> DomainEvent {
    let (peer, asset_code, asset_scale, threshold) =
        (v.subject.clone(), v.asset_code.clone(), v.asset_scale, v.threshold);
    match v.measure {
        Measure::PeerLiquidity => DomainEvent::PeerLiquidityLow {
            peer,
            liquidity: value,
            threshold,
            asset_code,
            asset_scale,
        },
        Measure::PeerCredit => DomainEvent::PeerCreditHigh {
            peer,
            credit_used: value,
            threshold,
            asset_code,
            asset_scale,
        },
        Measure::WalletBalance => DomainEvent::WalletBalanceLow {
            wallet: peer,
            balance: value,
            threshold,
            asset_code,
            asset_scale,
        },
    }
}

/// Evaluates one threshold inside the caller's transaction: flips it when its value went past it (appending
/// the event) or back over it. Returns its view after, and the event appended.
fn evaluate(
    conn: &Connection,
    row: &ThresholdRow,
    now: OffsetDateTime,
) -> Result<(Option<ThresholdView>, Option<EventRecord>), store::Error> {
    let Some(measure) = Measure::parse(&row.measure) else {
        return Ok((None, None));
    };
    let asset = Asset {
        code: row.asset_code.clone(),
        scale: row.asset_scale,
    };
    let value = value_of(conn, measure, &row.subject, &asset)?;
    let mut v = view(row, measure, value);
    let Some(value) = value else {
        return Ok((Some(v), None));
    };
    let past = measure.past(value, row.threshold);
    if past == row.crossed {
        return Ok((Some(v), None));
    }
    // guarded: of two transactions that cross it at once, one flips it (and appends the event)
    if !repo::flip(conn, measure.as_str(), &row.subject, past)? {
        return Ok((Some(v), None));
    }
    v.crossed = past;
    let recorded = if past {
        Some(store::outbox::append(conn, now, crossed_event(&v, value))?)
    } else {
        None
    };
    Ok((Some(v), recorded))
}

/// The ledger's hook: after a transfer moved the accounts `touched` (rows as read before it; their kind,
/// wallet, peer and asset are what matter), evaluates the thresholds of the wallets and peers they belong to.
/// One indexed lookup per wallet or peer account when none is set.
pub fn after_transfer(
    conn: &Connection,
    touched: &[&ledger_repo::AccountRow],
    now: OffsetDateTime,
) -> Result<(), store::Error> {
    let mut seen: Vec<&str> = Vec::with_capacity(touched.len());
    for a in touched {
        let subject = match a.kind.as_str() {
            "wallet" => a.wallet.as_deref(),
            "peer" | "liquidity" => a.peer.as_deref(),
            _ => None,
        };
        let Some(subject) = subject else { continue };
        if seen.contains(&subject) {
            continue;
        }
        seen.push(subject);
        for row in repo::of(conn, subject)? {
            let applies = match row.measure.as_str() {
                "wallet_balance" => a.kind == "wallet",
                _ => a.kind != "wallet",
            };
            if applies && row.asset_code == a.asset_code && row.asset_scale == a.asset_scale {
                evaluate(conn, &row, now)?;
            }
        }
    }
    Ok(())
}

/// Sets (or with `None` removes) the threshold on `subject`'s `measure`, in `asset`, inside the caller's
/// transaction, with its durable `thresholdChanged` event; evaluates it at once (a threshold set past the
/// value now appends its event too). Returns the threshold after, and the events appended.
pub fn set(
    conn: &Connection,
    measure: Measure,
    subject: &str,
    asset: &Asset,
    threshold: Option<i64>,
    now: OffsetDateTime,
) -> Result<(Option<ThresholdView>, Vec<EventRecord>), store::Error> {
    let changed = DomainEvent::ThresholdChanged {
        measure,
        subject: subject.to_owned(),
        threshold,
        asset_code: asset.code.clone(),
        asset_scale: asset.scale,
    };
    let Some(threshold) = threshold else {
        let removed = repo::remove(conn, measure.as_str(), subject)?;
        let recorded = if removed {
            vec![store::outbox::append(conn, now, changed)?]
        } else {
            Vec::new()
        };
        return Ok((None, recorded));
    };
    // the same threshold again (config.toml at every start): nothing changes, nothing fires again
    if let Some(same) = repo::of(conn, subject)?.into_iter().find(|r| {
        r.measure == measure.as_str()
            && r.threshold == threshold
            && r.asset_code == asset.code
            && r.asset_scale == asset.scale
    }) {
        let value = value_of(conn, measure, subject, asset)?;
        return Ok((Some(view(&same, measure, value)), Vec::new()));
    }
    let row = ThresholdRow {
        measure: measure.as_str().into(),
        subject: subject.to_owned(),
        asset_code: asset.code.clone(),
        asset_scale: asset.scale,
        threshold,
        crossed: false,
        updated_at: now,
    };
    repo::set(conn, &row)?;
    let mut recorded = vec![store::outbox::append(conn, now, changed)?];
    let (view, crossed) = evaluate(conn, &row, now)?;
    recorded.extend(crossed);
    Ok((view, recorded))
}

/// The thresholds set on `subject` (a peer's or a wallet's name), without their values.
pub fn set_on(conn: &Connection, subject: &str) -> Result<Vec<(Measure, i64)>, store::Error> {
    Ok(repo::of(conn, subject)?
        .into_iter()
        .filter_map(|r| Measure::parse(&r.measure).map(|m| (m, r.threshold)))
        .collect())
}

/// Every threshold with its value now (for the console's attention list and the metrics).
pub fn all(conn: &Connection) -> Result<Vec<ThresholdView>, store::Error> {
    let mut out = Vec::new();
    for row in repo::all(conn)? {
        let Some(measure) = Measure::parse(&row.measure) else {
            continue;
        };
        let asset = Asset {
            code: row.asset_code.clone(),
            scale: row.asset_scale,
        };
        let value = value_of(conn, measure, &row.subject, &asset)?;
        out.push(view(&row, measure, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
