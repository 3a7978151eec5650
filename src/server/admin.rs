//! The operator API under `/admin`: served only to loopback peers presenting the bearer token kept in the
//! data dir. `POST /admin/commands` and `/admin/queries` carry the command layer's [`Command`]s and [`Query`]s
//! ([`crate::control`]), which the CLI and the console use too; every other path but the event stream is a thin
//! table onto one of them. `crate::admin` is the typed HTTP client the CLI and attached consoles drive it with.

use std::net::SocketAddr;

use axum::{
    Router,
    extract::{ConnectInfo, Path, Query as Params, Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{delete, get, post},
};

use crate::{
    control::{self, Command, Query, dto::Reject},
    gnap::timeline::{ACTOR_HEADER, Actor, Cause},
    server::{error::ApiError, extract::Json, request_log::RequestId, state::AppState},
};

/// Who calls: the CLI or a console when their client says so (`opdesk-actor`), else a direct admin API call;
/// with this request's id.
struct Caller(Cause);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        let actor = Actor::of_admin_header(parts.headers.get(ACTOR_HEADER).and_then(|v| v.to_str().ok()));
        let rid = parts.extensions.get::<RequestId>().map(|r| r.id.clone());
        Ok(Self(Cause::new(actor, rid)))
    }
}

/// `POST /admin/commands`: runs one [`Command`] and answers its [`control::Outcome`] with the sentence that words
/// it (`{"outcome", "value", "message"}`). What the admin client, attached consoles and the CLI send.
async fn run_command(s: State<AppState>, Caller(by): Caller, Json(cmd): Json<Command>) -> Result<Response, ApiError> {
    let outcome = control::execute(&s, cmd.clone(), by).await?;
    let mut body = serde_json::to_value(&outcome).map_err(|e| ApiError::internal(&e))?;
    body["message"] = outcome.sentence(&cmd).into();
    Ok(Json(body).into_response())
}

/// `POST /admin/queries`: reads one [`Query`] and answers what it found (`{"found", "value"}`). What attached
/// consoles and the CLI send.
async fn run_query(State(s): State<AppState>, Json(q): Json<Query>) -> Result<Response, ApiError> {
    Ok(Json(control::answer(&s, q).await?).into_response())
}

/// A REST path onto a query: what it found, the payload alone.
async fn read(State(s): State<AppState>, q: Query) -> Result<Response, ApiError> {
    let body = control::answer(&s, q)
        .await?
        .body()
        .map_err(|e| ApiError::internal(&e))?;
    Ok(json(StatusCode::OK, body))
}

/// A REST path onto a command: the outcome's own body, `201 Created` for what the command creates, `204 No
/// Content` when it has nothing to show.
async fn command(State(s): State<AppState>, Caller(by): Caller, cmd: Command) -> Result<Response, ApiError> {
    let status = if cmd.creates() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(match control::execute(&s, cmd, by).await?.body() {
        Some(body) => json(status, body),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

fn json(status: StatusCode, body: String) -> Response {
    let content_type = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    (status, content_type, body).into_response()
}

type S = State<AppState>;
type Id = Path<String>;

/// Admin routes (nested under `/admin`), guarded by loopback + bearer token. Besides `/commands` and
/// `/queries`, each path is a [`read`] of one query or a [`command`]: a table, nothing more.
pub fn routes(state: AppState) -> Router<AppState> {
    use Command as C;
    use Query as Q;
    Router::new()
        .route("/commands", post(run_command))
        .route("/queries", post(run_query))
        .route("/events", get(events))
        .route(
            "/wallets",
            get(|s: S| read(s, Q::WalletAddresses))
                .post(|s: S, by, Json(w): Json<_>| command(s, by, C::CreateWallet(w))),
        )
        .route("/wallets/{name}", get(|s: S, Path(name)| read(s, Q::Wallet { name })))
        .route(
            "/wallets/{name}/keys",
            get(|s: S, Path(wallet)| read(s, Q::Keys { wallet }))
                .post(|s: S, by, Path(wallet), Json(key)| command(s, by, C::AddKey { wallet, key })),
        )
        .route(
            "/wallets/{name}/keys/{kid}",
            delete(|s: S, by, Path((wallet, kid))| command(s, by, C::RemoveKey { wallet, kid })),
        )
        .route(
            "/wallets/{name}/deposit",
            post(|s: S, by, Path(wallet), Json(funds)| command(s, by, C::Deposit { wallet, funds })),
        )
        .route(
            "/wallets/{name}/withdraw",
            post(|s: S, by, Path(wallet), Json(funds)| command(s, by, C::Withdraw { wallet, funds })),
        )
        .route("/balances", get(|s: S| read(s, Q::Balances)))
        .route("/overview", get(|s: S| read(s, Q::Overview)))
        .route("/server", get(|s: S| read(s, Q::Server)))
        .route("/wallet-summaries", get(|s: S| read(s, Q::Wallets)))
        .route("/grants", get(|s: S, Params(filter)| read(s, Q::Grants(filter))))
        .route("/grants/spending", get(|s: S| read(s, Q::GrantSpending)))
        .route("/grants/{id}", get(|s: S, Path(id)| read(s, Q::Grant { id })))
        .route(
            "/grants/{id}/approve",
            post(|s: S, by, Path(id)| command(s, by, C::ApproveGrant { id })),
        )
        .route("/grants/{id}/reject", post(reject_grant))
        .route(
            "/grants/{id}/revoke",
            post(|s: S, by, Path(id)| command(s, by, C::RevokeGrant { id })),
        )
        .route(
            "/peers",
            get(|s: S| read(s, Q::Peers)).post(|s: S, by, Json(p): Json<_>| command(s, by, C::CreatePeer(p))),
        )
        .route(
            "/peers/{name}",
            get(|s: S, Path(name)| read(s, Q::Peer { name }))
                .patch(|s: S, by, Path(name), Json(patch)| command(s, by, C::UpdatePeer { name, patch }))
                .delete(|s: S, by, Path(name)| command(s, by, C::RemovePeer { name })),
        )
        .route(
            "/peers/{name}/liquidity",
            post(|s: S, by, Path(peer), Json(liquidity)| command(s, by, C::MovePeerLiquidity { peer, liquidity })),
        )
        .route(
            "/peers/{name}/settlements",
            post(|s: S, by, Path(peer), Json(settlement)| command(s, by, C::SettlePeer { peer, settlement })),
        )
        .route(
            "/thresholds",
            get(|s: S| read(s, Q::Thresholds)).put(|s: S, by, Json(t)| command(s, by, C::SetThreshold(t))),
        )
        .route(
            "/incoming-payments",
            get(|s: S, Params(filter)| read(s, Q::Incoming { filter })),
        )
        .route(
            "/incoming-payments/{id}",
            get(|s: S, Path(id)| read(s, Q::IncomingPayment { id })),
        )
        .route(
            "/incoming-payments/{id}/complete",
            post(|s: S, by, Path(id)| command(s, by, C::CompleteIncoming { id })),
        )
        .route(
            "/outgoing-payments",
            get(|s: S, Params(filter)| read(s, Q::Outgoing { filter })),
        )
        .route(
            "/outgoing-payments/{id}",
            get(|s: S, Path(id)| read(s, Q::OutgoingPayment { id })),
        )
        .route(
            "/outgoing-payments/{id}/cancel",
            post(|s: S, by, Path(id)| command(s, by, C::CancelOutgoing { id })),
        )
        .route(
            "/outgoing-payments/{id}/retry",
            post(|s: S, by, Path(id)| command(s, by, C::RetryOutgoing { id })),
        )
        .route("/quotes", get(|s: S, Params(filter)| read(s, Q::Quotes { filter })))
        .route("/quotes/{id}", get(|s: S, Path(id)| read(s, Q::Quote { id })))
        .route("/requests", get(|s: S, Params(page)| read(s, Q::Requests(page))))
        .route("/requests/{id}", get(|s: S, Path(id)| read(s, Q::Request { id })))
        .route("/webhooks", get(|s: S, Params(page)| read(s, Q::Webhooks(page))))
        .route(
            "/webhooks/retry-dead",
            post(|s: S, by| command(s, by, C::RetryDeadWebhooks)),
        )
        .route(
            "/webhooks/{seq}/retry",
            post(|s: S, by, Path(seq)| command(s, by, C::RetryWebhook { seq })),
        )
        .fallback(crate::server::error::not_found)
        .layer(middleware::from_fn_with_state(state, guard))
}

async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    // A dual-stack listener (`[::]`) sees IPv4 clients as IPv4-mapped addresses (`::ffff:127.0.0.1`).
    if !peer.is_some_and(|p| p.ip().to_canonical().is_loopback()) {
        tracing::warn!(?peer, "admin API refused to a non-loopback peer");
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the admin API is served to loopback clients only",
        )
        .into_response();
    }
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    // constant time: timing does not reveal how much of a token matched
    if !presented.is_some_and(|t| {
        bool::from(subtle::ConstantTimeEq::ct_eq(
            t.as_bytes(),
            state.admin_token.as_bytes(),
        ))
    }) {
        let mut res = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong admin token (see admin.token in the data dir)",
        )
        .into_response();
        res.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"opdesk-admin\""),
        );
        return res;
    }
    next.run(req).await
}

/// How often at most the event stream writes to a reader that keeps up (a burst is one write).
const WRITE_PACE: std::time::Duration = std::time::Duration::from_millis(50);

/// `GET /admin/events`: the event stream as Server-Sent Events. `after=SEQ` (or `Last-Event-ID`) replays
/// the durable events after it first; `live=summary` adds the live-only ones a console shows (the request
/// log coalesced as `requestsServed`, progress, balances), `live=true` those and an `httpRequest` event per
/// request with its exchange (which costs the server a capture per request while the reader listens). Each message is `id: SEQ` (durable events only), `event: TYPE` and `data:` one line
/// of [`crate::events::EventRecord`] JSON; `event: resync` says events were missed (reload); a comment
/// keeps the connection alive every 15 s.
async fn events(
    State(s): State<AppState>,
    Params(q): Params<control::events::Follow>,
    headers: axum::http::HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let last_id = headers
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| ApiError::bad_request("invalid_request", "Last-Event-ID must be a sequence number"))
        })
        .transpose()?;
    let rx = control::events::stream(s.services.clone(), q.after.or(last_id), q.live).await;
    // what is queued goes out back to back (one write); once the queue is empty the next read waits until
    // WRITE_PACE after the last one, so a flood of events is a few writes a second, not one per event
    let paced = (rx, tokio::time::Instant::now());
    let stream = futures_util::stream::unfold(paced, |(mut rx, mut next)| async move {
        let item = match rx.try_recv() {
            Ok(item) => item,
            Err(_) => {
                tokio::time::sleep_until(next).await;
                let item = rx.recv().await?;
                next = tokio::time::Instant::now() + WRITE_PACE;
                item
            }
        };
        let event = match item {
            control::events::Item::Event(r) => {
                let e = Event::default().event(r.event.kind());
                let e = match r.seq {
                    Some(seq) => e.id(seq.to_string()),
                    None => e,
                };
                e.json_data(&r)
                    .unwrap_or_else(|_| Event::default().comment("unencodable event"))
            }
            control::events::Item::Resync(reason) => Event::default()
                .event("resync")
                .data(serde_json::json!({ "reason": reason }).to_string()),
        };
        Some((Ok::<_, std::convert::Infallible>(event), (rx, next)))
    });
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(std::time::Duration::from_secs(15))
            .text("keep-alive"),
    ))
}

/// `POST /admin/grants/{id}/reject`: the body (`{"reason"}`) may be left out.
async fn reject_grant(s: S, by: Caller, Path(id): Id, body: axum::body::Bytes) -> Result<Response, ApiError> {
    let body: Reject = if body.iter().all(u8::is_ascii_whitespace) {
        Reject::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?
    };
    let reason = body.reason;
    command(s, by, Command::RejectGrant { id, reason }).await
}
