//! `GET /metrics` for Prometheus scrapers (only from the peers `[metrics] allow` names; to anyone else it is
//! absent, a 404 like any unknown path; no CORS), and the two middlewares that count every request by route
//! template: [`track`] around everything (status, latency, unmatched requests too) and [`note_route`] on the
//! routes, which tells it the matched template and where the signature verdict will be.

use std::{
    net::SocketAddr,
    sync::{Arc, OnceLock},
    time::Instant,
};

use axum::{
    Router,
    extract::{ConnectInfo, MatchedPath, Request, State},
    http::{HeaderMap, HeaderValue, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};

use super::{AppState, error::ApiError, request_log::Notes};
use crate::metrics::{OPENMETRICS, PROMETHEUS_TEXT};

/// `/metrics`, when `[metrics] enabled`.
pub fn routes(state: &AppState) -> Router<AppState> {
    if state.settings.metrics.enabled {
        Router::new().route("/metrics", get(scrape))
    } else {
        Router::new()
    }
}

/// What the routing learned about a request for [`track`]: its route template (set before the handler runs,
/// so a request cut short by the timeout still has it) and, once the handler is done, its signature verdict
/// class (read then: the request log takes the notes afterwards).
#[derive(Debug, Default)]
struct Seen {
    route: OnceLock<MatchedPath>,
    verdict: OnceLock<&'static str>,
}

#[derive(Debug, Clone, Default)]
struct Slot(Arc<Seen>);

/// Counts the request once answered: route template (`unmatched` without one), method, status and latency,
/// and the signature verdict class when a signature was checked.
pub async fn track(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = crate::metrics::method_label(req.method());
    let slot = Slot::default();
    req.extensions_mut().insert(slot.clone());
    let res = next.run(req).await;
    state.metrics.request(
        slot.0.route.get().map(MatchedPath::as_str),
        method,
        res.status().as_u16(),
        started.elapsed(),
    );
    if let Some(v) = slot.0.verdict.get() {
        state.metrics.verdict(v);
    }
    res
}

/// On the routes: records the matched template and, after the handler, the verdict class for [`track`].
pub async fn note_route(req: Request, next: Next) -> Response {
    let Some(slot) = req.extensions().get::<Slot>().cloned() else {
        return next.run(req).await;
    };
    if let Some(route) = req.extensions().get::<MatchedPath>() {
        let _ = slot.0.route.set(route.clone());
    }
    let notes = req.extensions().get::<Notes>().cloned();
    let res = next.run(req).await;
    if let Some(v) = notes.as_ref().and_then(Notes::verdict_class) {
        let _ = slot.0.verdict.set(v);
    }
    res
}

/// Whether the scraper asks for OpenMetrics (Prometheus does); otherwise it gets Prometheus text 0.0.4.
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|m| {
            m.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/openmetrics-text"))
        })
}

async fn scrape(State(state): State<AppState>, req: Request) -> Response {
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    if !peer.is_some_and(|ip| state.settings.metrics.allows(ip)) {
        return super::error::not_found(req.uri().clone()).await.into_response();
    }
    let openmetrics = wants_openmetrics(req.headers());
    let now = state.clock.now();
    let window = time::Duration::seconds(i64::from(state.settings.gnap.interaction_expires_in_secs));
    let window_start = now - window;
    let stored = match state
        .store
        .call(move |c| crate::store::stats::snapshot(c, now, window_start))
        .await
    {
        Ok(s) => s,
        Err(e) => return ApiError::internal(&e).into_response(),
    };
    match state.metrics.encode(&stored, openmetrics) {
        Ok(body) => {
            let ct = if openmetrics { OPENMETRICS } else { PROMETHEUS_TEXT };
            ([(header::CONTENT_TYPE, HeaderValue::from_static(ct))], body).into_response()
        }
        Err(e) => ApiError::internal(&e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_when_asked_for() {
        let mut h = HeaderMap::new();
        assert!(!wants_openmetrics(&h));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
            ),
        );
        assert!(wants_openmetrics(&h));
        h.insert(header::ACCEPT, HeaderValue::from_static("text/plain"));
        assert!(!wants_openmetrics(&h));
    }
}
