//! The state every handler gets: the running ASE's [`Services`] plus what only the HTTP edge needs (the
//! signature verifier, the admin token). Cheap to clone; derefs to the services.

use std::sync::Arc;

use super::{request_log::RequestLog, signed::Verifier};
use crate::control::Services;

/// Shared by every request: cloning is one reference-count increment.
#[derive(Clone)]
pub struct AppState(Arc<Edge>);

/// The services and the edge's own parts.
pub struct Edge {
    pub services: Arc<Services>,
    /// Checks request signatures against client keys.
    pub verifier: Arc<Verifier>,
    /// The admin API bearer token.
    pub admin_token: Arc<str>,
    /// The last requests served, for `GET /admin/requests`.
    pub request_log: Arc<RequestLog>,
    /// What `/metrics` shows.
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl AppState {
    pub fn new(services: Arc<Services>, verifier: Arc<Verifier>, admin_token: Arc<str>) -> Self {
        let request_log = Arc::new(RequestLog::new(services.settings.server.request_log_size));
        // the command layer reads the ring too (the embedded console's Requests pane); set once per server
        let _ = services.requests.set(request_log.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(super::request_log::publish_updates(
                Arc::downgrade(&request_log),
                services.bus.clone(),
                services.stopping.clone(),
            ));
        }
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let metrics = Arc::new(crate::metrics::Metrics::new(
            services.store.meters(),
            services.peers.traffic().meters(),
            services.webhooks.meters(),
            started,
        ));
        Self(Arc::new(Edge {
            request_log,
            metrics,
            services,
            verifier,
            admin_token,
        }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Edge;

    fn deref(&self) -> &Edge {
        &self.0
    }
}

impl std::ops::Deref for Edge {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}
