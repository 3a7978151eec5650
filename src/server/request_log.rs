//! Middleware that publishes one `HttpRequest` event per request (method, path, status, latency) for the
//! console's request log. It never alters the request or response.

use std::time::Instant;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};

use super::AppState;
use crate::events::DomainEvent;

pub async fn emit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let res = next.run(req).await;
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let status = res.status().as_u16();
    tracing::debug!(%method, %path, status, latency_us, "request");
    state.bus.publish(DomainEvent::HttpRequest {
        method,
        path,
        status,
        latency_us,
    });
    res
}
