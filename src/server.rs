//! The HTTP server: one axum router for every route of the embedded ASE, its layers, and serving with
//! graceful shutdown, in plain HTTP or over TLS ([`tls`]). `router` is pure (no I/O) so tests drive it with
//! `oneshot`; `serve` binds nothing itself.

pub mod admin;
pub mod error;
pub mod extract;
pub mod ilp_http;
pub mod metrics;
pub mod pagination;
pub mod request_log;
pub mod routes;
pub mod rs_auth;
pub mod signed;
pub mod state;
pub mod tls;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{Router, extract::DefaultBodyLimit, http::StatusCode, middleware, routing::get, serve::ListenerExt as _};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::TimeoutLayer;

pub use state::AppState;

/// Every route, with the body limit, timeout, request-log and metrics layers.
pub fn router(state: AppState) -> Router {
    let signer = if state.settings.workshop_signer {
        routes::workshop::routes()
    } else {
        Router::new()
    };
    let public = Router::new()
        .merge(signer)
        .merge(routes::gnap::routes())
        .merge(routes::incoming::routes())
        .merge(routes::quotes::routes())
        .merge(routes::outgoing::routes())
        .merge(ilp_http::routes())
        .merge(routes::wallet::routes())
        .layer(cors(&state.settings.server.cors_origins));
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .merge(metrics::routes(&state))
        .nest("/admin", admin::routes(state.clone()))
        .merge(public);
    layered(routes, state)
}

/// Browser clients (wallet web apps, Web Monetization in a page) may call the Open Payments and GNAP routes
/// from the origins `[server] cors_origins` names — by default any, as at the reference ASE: preflights are
/// answered here, without credentials (requests are authorised by signatures and tokens, not cookies), and
/// the request headers asked for are allowed (`*` would not cover `Authorization`). The admin API sends no
/// CORS headers.
fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use axum::http::{HeaderValue, Method};
    use tower_http::cors::{AllowHeaders, AllowOrigin, Any, CorsLayer};
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::from(Any)
    } else {
        // checked when the settings were read
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers(AllowHeaders::mirror_request())
        .max_age(Duration::from_secs(3600))
}

/// Only `/admin`, `/healthz` and `/metrics`, with the same layers: what the plain-HTTP loopback listener
/// serves next to an HTTPS public listener.
pub fn admin_router(state: AppState) -> Router {
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .merge(metrics::routes(&state))
        .nest("/admin", admin::routes(state.clone()));
    layered(routes, state)
}

fn layered(routes: Router<AppState>, state: AppState) -> Router {
    let limit = state.settings.server.body_limit_bytes;
    let timeout = Duration::from_secs(state.settings.server.request_timeout_secs.max(1));
    routes
        .route_layer(middleware::from_fn(metrics::note_route))
        .fallback(error::not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), request_log::emit))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .layer(middleware::from_fn_with_state(state.clone(), metrics::track))
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

/// [`serve`] over TLS with whatever certificate `certs` holds when each connection's handshake starts.
pub async fn serve_tls(
    listener: TcpListener,
    router: Router,
    certs: &Arc<tls::Certs>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let listener = tls::TlsListener::new(listener, certs, shutdown.clone()).map_err(std::io::Error::other)?;
    // tap_io: axum's ConnectInfo<SocketAddr> comes with any listener whose address is one through TapIo
    axum::serve(
        listener.tap_io(|_| {}),
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move { shutdown.cancelled().await })
    .await
}
