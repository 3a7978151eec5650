//! A webhook receiver for the tests that follow events out of a real server, and `eventually`, the bounded
//! wait those tests share.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU16, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::Value;

/// Longer than a delivery's lease (60 s on PostgreSQL): a node killed while it held one waits it out.
const PATIENCE: Duration = Duration::from_secs(90);

/// Waits until `check` holds, at most [`PATIENCE`].
pub async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A receiver on a fixed address: it answers `status` (204 unless told otherwise), and keeps each event it
/// accepted once, by its `seq` (webhooks are delivered at least once), and how many times it took it.
pub struct Receiver {
    by_seq: Arc<Mutex<BTreeMap<i64, (Value, usize)>>>,
    status: Arc<AtomicU16>,
    stop: tokio_util::sync::CancellationToken,
}

impl Receiver {
    pub async fn start(addr: SocketAddr) -> Self {
        let stop = tokio_util::sync::CancellationToken::new();
        let by_seq = Arc::new(Mutex::new(BTreeMap::new()));
        let status = Arc::new(AtomicU16::new(204));
        let (seen, answer) = (by_seq.clone(), status.clone());
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
                let (seen, answer) = (seen.clone(), answer.clone());
                async move {
                    assert!(headers.contains_key("opdesk-signature"), "a delivery is signed");
                    let status = answer.load(Ordering::SeqCst);
                    if status == 204 {
                        let v: Value = serde_json::from_str(&body).unwrap();
                        let seq = v["seq"].as_i64().unwrap();
                        seen.lock().unwrap().entry(seq).or_insert((v, 0)).1 += 1;
                    }
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let token = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { token.cancelled().await })
                .await
                .unwrap();
        });
        Self { by_seq, status, stop }
    }

    /// From now on the receiver answers `status` (and keeps nothing unless it is 204).
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    /// The distinct events of type `kind` it took, in sequence order.
    pub fn of(&self, kind: &str) -> Vec<Value> {
        self.by_seq
            .lock()
            .unwrap()
            .values()
            .filter(|(v, _)| v["type"] == kind)
            .map(|(v, _)| v.clone())
            .collect()
    }

    /// Whether it took the event with this `id`.
    pub fn seen(&self, id: &str) -> bool {
        self.by_seq.lock().unwrap().values().any(|(v, _)| v["id"] == id)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
