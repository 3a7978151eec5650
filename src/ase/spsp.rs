//! SPSP receive (RFC 9, as the reference ASE serves it): STREAM credentials for a wallet address itself, the money
//! paid over them credited to the wallet, and `walletReceived` events announcing it, one per connection and
//! second at most.
//!
//! A packet's credit is one `BEGIN IMMEDIATE` transaction: a ledger transfer from the account of the peer that
//! carried it to the wallet's account, and the connection's total in `spsp_connections` (what RFC 39 receipts
//! carry). The announcement comes after, from committed state: [`Spsp::report`] claims what no event has announced
//! yet and appends the events in one transaction, so a crash between the two delays an event and never loses
//! one, and a connection of thousands of packets makes a handful of events rather than thousands.

use base64::{
    Engine,
    engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig},
};
use serde::Serialize;
use std::sync::Arc;

use crate::{
    ase::exchange::{Inflow, Unvalued},
    clock::SharedClock,
    events::{DomainEvent, EventBus},
    ilp::{
        crypto::ReceiptSetup,
        receiver::{StreamServer, Target},
    },
    ledger::{self, Balance, LedgerError},
    money::{Asset, Value as Money},
    store::{self, Store, outbox, spsp as repo, wallets::WalletRow},
    wallet::Wallet,
};

/// The media type of SPSP queries and answers.
pub const SPSP_MEDIA_TYPE: &str = "application/spsp4+json";

/// Connections one report claims at most (the next round takes the rest).
const REPORT_BATCH: u32 = 500;

/// Why SPSP credentials were not made.
#[derive(Debug, thiserror::Error)]
pub enum SpspError {
    /// `Receipt-Nonce` and `Receipt-Secret` are not a pair of 16 and 32 bytes in base64.
    #[error("{0}")]
    ReceiptHeaders(&'static str),
    /// The OS random source failed (a server fault).
    #[error("STREAM credentials: {0}")]
    Credentials(String),
}

/// The SPSP answer (RFC 9 §"Response Body"): where to send STREAM packets, and the connection's secret.
#[derive(Debug, Clone, Serialize)]
pub struct SpspResponse {
    pub destination_account: String,
    /// base64url, as the reference ASE answers (every SPSP client decodes it like base64).
    pub shared_secret: String,
    pub receipts_enabled: bool,
}

/// What crediting one SPSP packet did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalletCredit {
    /// Credited; what the connection has paid in all now, and the wallet's asset.
    Credited(u64, Asset),
    /// Nothing written: the amount does not fit the wallet's balance or the connection's total.
    Overflow(u64, Asset),
    /// Nothing written: the packet would take the peer past its credit limit (said in words; answered `T04`).
    OverCreditLimit(String),
    /// Nothing written: the packet is worth nothing in the wallet's asset, or less than the sender's minimum.
    BelowMinimum(u64, Asset),
    /// Nothing written: no exchange rate from the link's asset into the wallet's (answered with a final `F07`).
    NoRate(String),
    /// No such wallet.
    Unknown,
}

/// The SPSP service. Cheap to clone.
#[derive(Clone)]
pub struct Spsp {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    stream: Arc<StreamServer>,
    enabled: bool,
}

/// base64 with or without padding, standard or URL-safe alphabet (what `Buffer.from(s, 'base64')` reads).
fn lenient_base64(s: &str) -> Option<Vec<u8>> {
    let config = GeneralPurposeConfig::new().with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent);
    let standard = GeneralPurpose::new(&base64::alphabet::STANDARD, config);
    let url = GeneralPurpose::new(&base64::alphabet::URL_SAFE, config);
    let s = s.trim();
    standard.decode(s).or_else(|_| url.decode(s)).ok()
}

/// The receipt setup an SPSP query asks for with `Receipt-Nonce` and `Receipt-Secret` (RFC 39 §SPSP): both or
/// neither, 16 and 32 bytes of base64.
pub fn receipt_setup(nonce: Option<&str>, secret: Option<&str>) -> Result<Option<ReceiptSetup>, SpspError> {
    match (nonce, secret) {
        (None, None) => Ok(None),
        (Some(nonce), Some(secret)) => {
            let nonce = lenient_base64(nonce)
                .and_then(|b| <[u8; 16]>::try_from(b).ok())
                .ok_or(SpspError::ReceiptHeaders("Receipt-Nonce must be 16 bytes in base64"))?;
            let secret = lenient_base64(secret)
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or(SpspError::ReceiptHeaders("Receipt-Secret must be 32 bytes in base64"))?;
            Ok(Some(ReceiptSetup { nonce, secret }))
        }
        _ => Err(SpspError::ReceiptHeaders(
            "Receipt-Nonce and Receipt-Secret must accompany each other",
        )),
    }
}

impl Spsp {
    pub fn new(store: Store, bus: EventBus, clock: SharedClock, stream: Arc<StreamServer>, enabled: bool) -> Self {
        Self {
            store,
            bus,
            clock,
            stream,
            enabled,
        }
    }

    /// Whether wallet addresses answer SPSP queries (`[ilp] spsp`) and take money over SPSP credentials.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Fresh credentials for a connection paying into `wallet` (a new ILP address on every call), with
    /// receipts when `receipt` is given.
    pub fn credentials(&self, wallet: &Wallet, receipt: Option<ReceiptSetup>) -> Result<SpspResponse, SpspError> {
        let receipts_enabled = receipt.is_some();
        let creds = self
            .stream
            .credentials_for(
                &Target::Wallet(wallet.id.to_string()),
                &wallet.asset_code,
                wallet.asset_scale,
                receipt,
            )
            .map_err(|e| SpspError::Credentials(e.to_string()))?;
        Ok(SpspResponse {
            destination_account: creds.ilp_address.to_string(),
            shared_secret: creds.shared_secret_base64url(),
            receipts_enabled,
        })
    }

    /// The wallet `wallet_id`, if it exists, with what connection `connection` has paid into it.
    pub async fn find(&self, wallet_id: &str, connection: &str) -> Result<Option<(Asset, u64)>, store::Error> {
        let (w, c) = (wallet_id.to_owned(), connection.to_owned());
        self.store
            .call(move |conn| {
                let Some(row) = store::wallets::by_id(conn, &w)? else {
                    return Ok(None);
                };
                let paid = u64::try_from(repo::received(conn, &c)?).unwrap_or(0);
                Ok(Some((asset_of(&row), paid)))
            })
            .await
    }

    /// Credits one packet that brought `inflow` through `peer`, worth its value in the wallet's asset (at
    /// least `min`, the sender's minimum), in one `BEGIN IMMEDIATE` transaction (see the module). Balances go
    /// out after the commit; a refusal or an error writes nothing.
    pub async fn credit(
        &self,
        wallet_id: &str,
        connection: &str,
        peer: &str,
        inflow: Inflow,
        min: u64,
        memo: String,
    ) -> Result<WalletCredit, LedgerError> {
        let now = self.clock.now();
        let (wid, connection, peer) = (wallet_id.to_owned(), connection.to_owned(), peer.to_owned());
        // every packet through a peer credits from the peer's account: they queue for it (on PostgreSQL)
        let queue = format!("peer:{peer}");
        let (credit, balances) = self
            .store
            .call_queued(&queue, move |conn| {
                let tx = store::immediate(conn)?;
                let Some(wallet) = store::wallets::by_id(&tx, &wid)? else {
                    return Ok((WalletCredit::Unknown, Vec::new()));
                };
                let asset = asset_of(&wallet);
                let paid = u64::try_from(repo::received(&tx, &connection)?).unwrap_or(0);
                let amount = match inflow.credit(&asset, min) {
                    Ok(v) => v,
                    Err(Unvalued::NoRate(why)) => {
                        tracing::info!(wallet = %wallet.name, peer = %peer, "SPSP packet refused: {why}");
                        return Ok((WalletCredit::NoRate(why), Vec::new()));
                    }
                    Err(Unvalued::TooLarge) => return Ok((WalletCredit::Overflow(paid, asset), Vec::new())),
                    Err(Unvalued::BelowMinimum) => return Ok((WalletCredit::BelowMinimum(paid, asset), Vec::new())),
                };
                let credit = || -> Result<_, LedgerError> {
                    let value = Money::new(amount)?;
                    let memo = format!("{memo} to wallet {} (SPSP)", wallet.name);
                    let settlement = ledger::ops::credit_from_peer(
                        &tx,
                        &peer,
                        &inflow.link,
                        Money::new(inflow.amount)?,
                        &asset,
                        &wallet.account_id,
                        value,
                        memo,
                        now,
                    )?;
                    i64::try_from(paid)
                        .ok()
                        .and_then(|p| p.checked_add(value.as_i64()))
                        .ok_or(crate::money::MoneyError::Overflow)?;
                    let total = repo::add_received(&tx, &connection, &wallet.id, value.as_i64(), now)?;
                    let balances = ledger::ops::balances(&tx, &[settlement.as_str(), wallet.account_id.as_str()])?;
                    Ok((total, balances))
                };
                let (total, balances) = match credit() {
                    Ok(done) => done,
                    Err(LedgerError::Money(e)) => {
                        tracing::info!(wallet = %wallet.name, amount, error = %e, "SPSP packet refused: the amount does not fit");
                        return Ok((WalletCredit::Overflow(paid, asset), Vec::new()));
                    }
                    Err(e) => return Err(e),
                };
                if let Some(why) = crate::ase::liquidity::credit_refusal(&tx, &peer, &inflow.link)? {
                    tracing::info!(wallet = %wallet.name, peer = %peer, amount, "SPSP packet refused: {why}");
                    return Ok((WalletCredit::OverCreditLimit(why), Vec::new()));
                }
                tx.commit()?;
                Ok::<_, LedgerError>((
                    WalletCredit::Credited(u64::try_from(total).unwrap_or(0), asset),
                    balances,
                ))
            })
            .await?;
        self.bus.publish_all(balances.iter().map(Balance::event));
        Ok(credit)
    }

    /// Announces what SPSP connections paid since the last report: one durable `walletReceived` event per
    /// connection, appended in the transaction that marks the money announced. Returns the number of events.
    pub async fn report(&self) -> Result<usize, store::Error> {
        let now = self.clock.now();
        let mut total = 0;
        loop {
            let recorded = self
                .store
                .call(move |conn| {
                    let tx = store::immediate(conn)?;
                    let taken = repo::take_unreported(&tx, REPORT_BATCH)?;
                    let mut recorded = Vec::with_capacity(taken.len());
                    for t in &taken {
                        let Some(wallet) = store::wallets::by_id(&tx, &t.wallet_id)? else {
                            continue;
                        };
                        let event = DomainEvent::WalletReceived {
                            wallet: wallet.name,
                            connection: t.connection_id.clone(),
                            amount: t.amount,
                            received: t.received,
                            asset_code: wallet.asset_code,
                            asset_scale: wallet.asset_scale,
                        };
                        recorded.push(outbox::append(&tx, now, event)?);
                    }
                    tx.commit()?;
                    Ok::<_, store::Error>((taken.len(), recorded))
                })
                .await?;
            let (taken, recorded) = recorded;
            total += recorded.len();
            self.bus.publish_recorded(recorded);
            if taken < REPORT_BATCH as usize {
                return Ok(total);
            }
        }
    }
}

fn asset_of(w: &WalletRow) -> Asset {
    Asset {
        code: w.asset_code.clone(),
        scale: w.asset_scale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipt_headers_come_in_pairs_of_the_right_length() {
        let nonce = base64::engine::general_purpose::STANDARD.encode([1u8; 16]);
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xfbu8; 32]);
        let setup = receipt_setup(Some(&nonce), Some(&secret)).unwrap().unwrap();
        assert_eq!((setup.nonce, setup.secret), ([1; 16], [0xfb; 32]));
        assert!(receipt_setup(None, None).unwrap().is_none());
        for (n, s) in [
            (Some(nonce.as_str()), None),
            (None, Some(secret.as_str())),
            (Some(secret.as_str()), Some(secret.as_str())),
            (Some(nonce.as_str()), Some(nonce.as_str())),
            (Some("not base64!"), Some(secret.as_str())),
        ] {
            assert!(
                matches!(receipt_setup(n, s), Err(SpspError::ReceiptHeaders(_))),
                "{n:?} {s:?}"
            );
        }
    }
}
