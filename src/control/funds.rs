//! Deposits and withdrawals: money entering or leaving the ASE through a wallet (idempotent per transfer id).

use super::{
    Error, Services,
    dto::{Move, Moved},
};
use crate::{ledger::Movement, money::Asset};

pub async fn move_funds(s: &Services, name: &str, m: Move, movement: Movement) -> Result<Moved, Error> {
    let wallet = s.wallets.get(name).await?;
    let expect = match (m.asset_code, m.asset_scale) {
        (None, None) => None,
        (Some(code), Some(scale)) => Some(Asset { code, scale }),
        _ => {
            return Err(Error::invalid(
                "invalid_amount",
                "give both assetCode and assetScale, or neither",
            ));
        }
    };
    let (transfer, balance) = s
        .ledger
        .move_funds(wallet.account_id, movement, m.value, expect, m.transfer_id)
        .await?;
    Ok(Moved { transfer, balance })
}
