//! Webhooks: the service that owns webhook deliveries. Every durable event (the outbox) is POSTed as JSON
//! to the configured URL, signed with `Opdesk-Signature: t=<unix seconds>, v1=<hex HMAC-SHA256(secret,
//! "<t>.<body>")>`. Deliveries are rows in the database, taken from the outbox in order: at least once (the
//! body carries the event's `id` for the receiver to de-duplicate by), retried with doubling backoff across
//! restarts, dead after the retry budget until the operator re-drives them. Only a 2xx answer counts.

use std::{sync::Arc, time::Duration};

use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderValue, Method, header};
use serde_json::json;
use sha2::Sha256;
use tokio::{sync::Notify, task::JoinSet};
use tokio_util::sync::CancellationToken;

use crate::{
    clock::SharedClock,
    egress::{self, Egress},
    events::{EventBus, EventRecord},
    settings::WebhookSettings,
    states::DeliveryState,
    store::{
        self, Store,
        webhooks::{self as repo, Attempt},
    },
};

pub use repo::DeliveryRow;

/// Deliveries attempted at once.
const CONCURRENCY: usize = 16;
/// Outbox events turned into deliveries per transaction.
const TAKE: usize = 500;
/// How long a node's claim on the deliveries it attempts lasts (PostgreSQL): longer than an attempt with its
/// timeouts; a dead node's deliveries are attempted again after it.
const LEASE_SECS: i64 = 60;

/// The signature header value for `body` sent at unix time `t`.
pub fn signature(secret: &[u8], t: i64, body: &[u8]) -> String {
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("t={t}, v1={hex}")
}

/// The JSON body every attempt for `e` sends.
pub fn body_of(e: &EventRecord) -> String {
    json!({
        "id": e.id,
        "seq": e.seq,
        "createdAt": crate::clock::format_ts(e.at),
        "type": e.event.kind(),
        "event": e.event,
    })
    .to_string()
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("no webhook delivery for event {0}")]
    NotFound(i64),
    #[error("the webhook for event {0} was already delivered")]
    Delivered(i64),
    #[error("unknown delivery state {0:?}: use pending, delivered or dead")]
    BadState(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The deliveries service. Cheap to clone.
#[derive(Clone)]
pub struct Webhooks {
    store: Store,
    clock: SharedClock,
    settings: WebhookSettings,
    /// Wakes the deliverer when the operator re-drives deliveries.
    wake: Arc<Notify>,
    /// Attempts by result, for the metrics.
    attempts: crate::metrics::WebhookAttempts,
}

impl Webhooks {
    pub fn new(store: Store, clock: SharedClock, settings: WebhookSettings) -> Self {
        Self {
            store,
            clock,
            settings,
            wake: Arc::default(),
            attempts: crate::metrics::WebhookAttempts::default(),
        }
    }

    /// The delivery attempts of this process, by result (`delivered`, `retrying`, `dead`).
    pub fn meters(&self) -> &crate::metrics::WebhookAttempts {
        &self.attempts
    }

    /// Whether a webhook URL is configured.
    pub fn enabled(&self) -> bool {
        !self.settings.url.is_empty()
    }

    /// Deliveries newest first, optionally in one state, before sequence number `before`.
    pub async fn list(
        &self,
        state: Option<String>,
        before: Option<i64>,
        first: usize,
    ) -> Result<Vec<DeliveryRow>, WebhookError> {
        let state = state
            .map(|s| s.parse::<DeliveryState>().map_err(|_| WebhookError::BadState(s)))
            .transpose()?;
        Ok(self
            .store
            .call(move |c| repo::list(c, state, before, first.clamp(1, 1000)))
            .await?)
    }

    /// How many deliveries are in `state`.
    pub async fn count(&self, state: DeliveryState) -> Result<usize, WebhookError> {
        Ok(self.store.call(move |c| repo::count(c, state)).await?)
    }

    /// Re-drives one delivery (dead or pending): due now with a fresh attempt budget.
    pub async fn retry(&self, seq: i64) -> Result<DeliveryRow, WebhookError> {
        let now = self.clock.now();
        let row = self
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let row = repo::get(&tx, seq)?.ok_or(WebhookError::NotFound(seq))?;
                if !repo::redrive(&tx, seq, now)? {
                    return Err(WebhookError::Delivered(row.event_seq));
                }
                let row = repo::get(&tx, seq)?.ok_or(WebhookError::NotFound(seq))?;
                tx.commit()?;
                Ok(row)
            })
            .await?;
        self.wake.notify_one();
        Ok(row)
    }

    /// Re-drives every dead delivery; returns how many.
    pub async fn retry_dead(&self) -> Result<usize, WebhookError> {
        let now = self.clock.now();
        let n = self.store.call(move |c| repo::redrive_dead(c, now)).await?;
        self.wake.notify_one();
        Ok(n)
    }

    /// Starts delivering from the newest event on the first run with a URL (history is not replayed);
    /// call before the server answers so nothing it accepts is missed.
    pub async fn start(&self) -> Result<(), WebhookError> {
        // it may number the outbox's waiting events: never in a commit group
        Ok(self.store.call_alone(|c| repo::start(c)).await?)
    }

    /// When the attempt after `attempts` failed ones is due, or none when the budget is spent.
    fn next_attempt(&self, attempts: i64) -> Option<time::OffsetDateTime> {
        if attempts + 1 >= i64::from(self.settings.max_attempts.max(1)) {
            return None;
        }
        let shift = u32::try_from(attempts.clamp(0, 20)).unwrap_or(20);
        let ms = self
            .settings
            .retry_base_ms
            .saturating_mul(1u64 << shift)
            .min(self.settings.retry_max_ms);
        let wait = time::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX / 2));
        Some(self.clock.now() + wait)
    }

    /// Delivers until `shutdown`. Does nothing when no URL is configured. An attempt cut short by shutdown
    /// is not counted: its delivery stays pending and goes out after the restart.
    pub async fn run(self, secret: Vec<u8>, bus: EventBus, shutdown: CancellationToken) {
        if !self.enabled() {
            return;
        }
        // The operator chose the URL: private addresses are fine; answers are not read beyond a small cap.
        let timeout = Duration::from_millis(self.settings.timeout_ms.max(100));
        let http = match Egress::new(egress::Policy::operator(timeout, 16 * 1024)) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "webhooks disabled: cannot build the HTTP client");
                return;
            }
        };
        tracing::info!(url = %self.settings.url, "delivering webhooks");
        let mut events = bus.subscribe();
        let secret = Arc::new(secret);
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            let now = self.clock.now();
            // the first take may number the outbox's waiting events (see `start`): never in a commit group
            let taken = self
                .store
                .call_alone(move |c| {
                    let tx = store::immediate(c)?;
                    let n = repo::take_from_outbox(&tx, now, TAKE, body_of)?;
                    tx.commit()?;
                    Ok::<_, store::Error>(n)
                })
                .await;
            let now = self.clock.now();
            let full = matches!(taken, Ok(n) if n == TAKE);
            let due = match taken {
                Ok(_) => {
                    // several nodes on one database: what this node attempts is leased to it meanwhile
                    let lease = self
                        .store
                        .shared_by_nodes()
                        .then(|| self.clock.now() + time::Duration::seconds(LEASE_SECS));
                    self.store.call(move |c| repo::due(c, now, CONCURRENCY, lease)).await
                }
                Err(e) => Err(e),
            };
            let due = match due {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(error = %e, "webhook deliveries cannot be read; trying again");
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    }
                }
            };
            if !due.is_empty() {
                if !self.attempt_all(&http, &secret, due, &shutdown).await {
                    break;
                }
                continue;
            }
            if full {
                continue;
            }
            let next = self.store.call(|c| repo::next_due(c)).await.ok().flatten();
            let wait = next
                .map(|t| (t - self.clock.now()).clamp(time::Duration::ZERO, time::Duration::seconds(5)))
                .and_then(|d| Duration::try_from(d).ok())
                .unwrap_or(Duration::from_secs(5));
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                _ = durable(&mut events) => {
                    // let a burst of events gather into one transaction
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    /// Attempts `due` concurrently and records each outcome; false when shutdown cut it short.
    async fn attempt_all(
        &self,
        http: &Egress,
        secret: &Arc<Vec<u8>>,
        due: Vec<DeliveryRow>,
        shutdown: &CancellationToken,
    ) -> bool {
        let mut set = JoinSet::new();
        for d in due {
            let (http, url, secret, clock) = (
                http.clone(),
                self.settings.url.clone(),
                secret.clone(),
                self.clock.clone(),
            );
            set.spawn(async move {
                let t = clock.now().unix_timestamp();
                let mut headers = HeaderMap::new();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                if let Ok(v) = HeaderValue::from_str(&signature(&secret, t, d.body.as_bytes())) {
                    headers.insert("opdesk-signature", v);
                }
                let result = http.send(Method::POST, &url, headers, d.body.into_bytes()).await;
                (d.event_seq, d.attempts, result)
            });
        }
        loop {
            let joined = tokio::select! {
                _ = shutdown.cancelled() => {
                    set.abort_all();
                    return false;
                }
                j = set.join_next() => j,
            };
            let Some(joined) = joined else {
                return true;
            };
            let Ok((seq, attempts, result)) = joined else {
                continue;
            };
            let attempt = match result {
                // a large answer is no success: only a 2xx within the cap counts
                Ok(r) if (200..300).contains(&r.status) => Attempt::Delivered(i64::from(r.status)),
                Ok(r) => Attempt::Failed {
                    status: Some(i64::from(r.status)),
                    error: format!("HTTP {}", r.status),
                    next: self.next_attempt(attempts),
                },
                Err(e) => Attempt::Failed {
                    status: None,
                    error: e.to_string(),
                    next: self.next_attempt(attempts),
                },
            };
            let result = match &attempt {
                Attempt::Delivered(_) => "delivered",
                Attempt::Failed { next: None, .. } => "dead",
                Attempt::Failed { .. } => "retrying",
            };
            self.attempts
                .get_or_create(&crate::metrics::WebhookLabels { result })
                .inc();
            match &attempt {
                Attempt::Delivered(_) => tracing::debug!(event = seq, "webhook delivered"),
                Attempt::Failed { next: None, error, .. } => {
                    tracing::warn!(event = seq, attempts = attempts + 1, error = %error, "webhook dead: retry budget spent")
                }
                Attempt::Failed { error, .. } => {
                    tracing::info!(event = seq, error = %error, "webhook not delivered; will retry")
                }
            }
            let now = self.clock.now();
            if let Err(e) = self.store.call(move |c| repo::settle(c, seq, &attempt, now)).await {
                tracing::warn!(event = seq, error = %e, "cannot record a webhook attempt; it will be sent again");
            }
        }
    }
}

/// Resolves when a durable event arrives on the bus (or the bus lagged: the outbox has them all).
async fn durable(rx: &mut tokio::sync::broadcast::Receiver<EventRecord>) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match rx.recv().await {
            Ok(r) if r.seq.is_some() => return,
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => return,
            Err(RecvError::Closed) => return std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_over_timestamp_dot_body() {
        // HMAC-SHA256("key", "1.{}")
        let s = signature(b"key", 1, b"{}");
        assert!(s.starts_with("t=1, v1="));
        assert_eq!(s.len(), "t=1, v1=".len() + 64);
        assert_ne!(s, signature(b"key", 2, b"{}"));
        assert_ne!(s, signature(b"other", 1, b"{}"));
    }
}
