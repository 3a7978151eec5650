//! The HTTP server: one axum router for every route of the embedded ASE, its layers, and serving with
//! graceful shutdown. `router` is pure (no I/O) so tests drive it with `oneshot`; `serve` binds nothing itself.

pub mod admin;
pub mod error;
pub mod extract;
pub mod ilp_http;
pub mod pagination;
pub mod request_log;
pub mod routes;
pub mod rs_auth;
pub mod signed;
pub mod state;

use std::{net::SocketAddr, time::Duration};

use axum::{Router, extract::DefaultBodyLimit, http::StatusCode, middleware, routing::get};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::TimeoutLayer;

pub use state::AppState;

/// Every route, with the body limit, timeout and request-log layers.
pub fn router(state: AppState) -> Router {
    let limit = state.settings.server.body_limit_bytes;
    let timeout = Duration::from_secs(state.settings.server.request_timeout_secs.max(1));
    Router::new()
        .route("/healthz", get(healthz))
        .nest("/admin", admin::routes(state.clone()))
        .merge(routes::gnap::routes())
        .merge(routes::incoming::routes())
        .merge(routes::quotes::routes())
        .merge(routes::outgoing::routes())
        .merge(ilp_http::routes())
        .merge(routes::wallet::routes())
        .fallback(error::not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), request_log::emit))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .with_state(state)
}

async fn healthz() -> &'static str {
    "ok"
}

/// Serves `router` on `listener` until `shutdown` is cancelled; in-flight requests finish first.
pub async fn serve(listener: TcpListener, router: Router, shutdown: CancellationToken) -> std::io::Result<()> {
    axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
