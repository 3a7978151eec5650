//! Optional webhooks: every domain event but the HTTP request log is POSTed as JSON to the configured URL,
//! signed with `Opdesk-Signature: t=<unix seconds>, v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
//! Deliveries run on their own task with bounded concurrency and retry with exponential backoff (1 s
//! doubling, capped at 60 s); only a 2xx answer counts. The bus is never blocked: a lagging subscriber
//! drops events and says so in the log.

use std::{sync::Arc, time::Duration};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::json;
use sha2::Sha256;
use tokio::sync::{Semaphore, broadcast::error::RecvError};
use tokio_util::sync::CancellationToken;

use http::{HeaderMap, HeaderValue, Method, header};

use crate::{
    clock::{SharedClock, format_ts},
    egress::{self, Egress},
    events::{DomainEvent, EventBus},
    ids,
    settings::WebhookSettings,
};

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

/// Delivers events until `shutdown`. Does nothing when no URL is configured.
pub async fn run(
    settings: WebhookSettings,
    secret: Vec<u8>,
    bus: EventBus,
    clock: SharedClock,
    shutdown: CancellationToken,
) {
    if settings.url.is_empty() {
        return;
    }
    // The operator chose the URL: private addresses are fine; answers are not read beyond a small cap.
    let policy = egress::Policy::operator(Duration::from_millis(settings.timeout_ms.max(100)), 16 * 1024);
    let http = match Egress::new(policy) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "webhooks disabled: cannot build the HTTP client");
            return;
        }
    };
    tracing::info!(url = %settings.url, "delivering webhooks");
    let mut rx = bus.subscribe();
    let slots = Arc::new(Semaphore::new(16));
    let secret = Arc::new(secret);
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => break,
            e = rx.recv() => e,
        };
        let event = match event {
            Ok(DomainEvent::HttpRequest { .. }) => continue,
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(skipped = n, "webhook delivery fell behind; events were dropped");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        let body = json!({ "id": ids::new_id(), "createdAt": format_ts(clock.now()), "event": event }).to_string();
        let (http, url, secret, clock, attempts, stop) = (
            http.clone(),
            settings.url.clone(),
            secret.clone(),
            clock.clone(),
            settings.max_attempts.max(1),
            shutdown.clone(),
        );
        tokio::spawn(async move {
            let _permit = permit;
            let mut backoff = Duration::from_secs(1);
            for attempt in 1..=attempts {
                let t = clock.now().unix_timestamp();
                let mut headers = HeaderMap::new();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                if let Ok(v) = HeaderValue::from_str(&signature(&secret, t, body.as_bytes())) {
                    headers.insert("opdesk-signature", v);
                }
                let result = http.send(Method::POST, &url, headers, body.clone().into_bytes()).await;
                match result {
                    Ok(r) if (200..300).contains(&r.status) => return,
                    // a large answer is no success: only a 2xx within the cap counts
                    Ok(r) => tracing::info!(attempt, status = r.status, "webhook refused"),
                    Err(e) => tracing::info!(attempt, error = %e, "webhook not delivered"),
                }
                if attempt == attempts {
                    tracing::warn!(attempts, "webhook given up");
                    return;
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        });
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
