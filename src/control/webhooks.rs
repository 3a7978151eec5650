//! Webhook deliveries for the operator: list them, re-drive one or every dead one.

use super::{Error, Services};
use crate::webhooks::DeliveryRow;

pub async fn list_webhooks(
    s: &Services,
    state: Option<String>,
    before: Option<i64>,
    first: Option<usize>,
) -> Result<Vec<DeliveryRow>, Error> {
    Ok(s.webhooks.list(state, before, first.unwrap_or(50)).await?)
}

pub async fn retry_webhook(s: &Services, seq: i64) -> Result<DeliveryRow, Error> {
    Ok(s.webhooks.retry(seq).await?)
}

/// Re-drives every dead delivery; returns how many.
pub async fn retry_dead_webhooks(s: &Services) -> Result<usize, Error> {
    Ok(s.webhooks.retry_dead().await?)
}
