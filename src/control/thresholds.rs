//! Alert thresholds: set or remove one on a peer's liquidity or credit used, or on a wallet's balance, and
//! list them with their values now. The rules (when one counts as crossed, the event it appends) live in
//! `crate::thresholds`.

use super::{Error, Services, peers::peer};
use crate::{
    money::Value,
    thresholds::{Measure, ThresholdView},
};

/// Sets (or with `None` removes) the threshold on `subject`'s `measure`: a peer's name for the peer
/// measures, a wallet's name for its balance. The threshold after (none once removed).
pub async fn set_threshold(
    s: &Services,
    measure: Measure,
    subject: &str,
    threshold: Option<Value>,
) -> Result<Option<ThresholdView>, Error> {
    match measure {
        Measure::WalletBalance => Ok(s.wallets.set_balance_threshold(subject, threshold).await?),
        Measure::PeerLiquidity | Measure::PeerCredit => {
            let p = peer(s, subject)?;
            Ok(s.liquidity.set_threshold(&p, measure, threshold).await?)
        }
    }
}

/// Every threshold with its value now, by subject and measure.
pub async fn list_thresholds(s: &Services) -> Result<Vec<ThresholdView>, Error> {
    Ok(s.store.call(|c| crate::thresholds::all(c)).await?)
}
