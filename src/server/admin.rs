//! The operator API under `/admin`: served only to loopback peers presenting the bearer token kept in the
//! data dir. Handlers are thin calls into the command layer ([`crate::control`]) the CLI and the console use
//! too; `crate::admin` is the typed HTTP client the CLI drives it with (bodies in `control::dto`).

use std::net::SocketAddr;

use axum::{
    Router,
    extract::{ConnectInfo, Path, Query, Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{delete, get, post},
};

use crate::{
    control::{
        self, Command,
        dto::{AddKey, CreateWallet, GrantFilter, LiquidityMove, Move, NewPeer, NewSettlement, PaymentFilter, Reject},
    },
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

/// `POST /admin/commands`: runs one [`Command`] and answers its [`control::Outcome`] (`{"outcome", "value"}`).
/// What the admin client, attached consoles and the CLI send.
async fn run_command(s: State<AppState>, Caller(by): Caller, Json(cmd): Json<Command>) -> Result<Response, ApiError> {
    Ok(Json(control::execute(&s, cmd, by).await?).into_response())
}

/// `POST /admin/queries`: reads one [`control::Query`] and answers what it found (`{"found", "value"}`). What
/// attached consoles send.
async fn run_query(s: State<AppState>, Json(q): Json<control::Query>) -> Result<Response, ApiError> {
    Ok(Json(control::answer(&s, q).await?).into_response())
}

/// A REST path onto a command: the outcome's own body, `201 Created` for what the command creates, `204 No
/// Content` when it has nothing to show.
async fn command(s: &AppState, Caller(by): Caller, cmd: Command) -> Result<Response, ApiError> {
    let status = if cmd.creates() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(match control::execute(s, cmd, by).await?.body() {
        Some(json) => (
            status,
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            json,
        )
            .into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

/// Admin routes (nested under `/admin`), guarded by loopback + bearer token.
pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/commands", post(run_command))
        .route("/queries", post(run_query))
        .route("/wallets", get(list_wallets).post(create_wallet))
        .route("/wallets/{name}", get(show_wallet))
        .route("/wallets/{name}/keys", get(list_keys).post(add_key))
        .route("/wallets/{name}/keys/{kid}", delete(remove_key))
        .route("/wallets/{name}/deposit", post(deposit))
        .route("/wallets/{name}/withdraw", post(withdraw))
        .route("/balances", get(balances))
        .route("/overview", get(overview))
        .route("/server", get(server_view))
        .route("/wallet-summaries", get(wallet_summaries))
        .route("/grants/spending", get(grant_spending))
        .route("/peers", get(list_peers).post(create_peer))
        .route("/peers/{name}", get(show_peer).patch(update_peer).delete(remove_peer))
        .route("/peers/{name}/liquidity", post(peer_liquidity))
        .route("/peers/{name}/settlements", post(settle_peer))
        .route("/incoming-payments", get(list_incoming))
        .route("/incoming-payments/{id}", get(show_incoming))
        .route("/incoming-payments/{id}/complete", post(complete_incoming))
        .route("/outgoing-payments", get(list_outgoing))
        .route("/outgoing-payments/{id}", get(show_outgoing))
        .route("/outgoing-payments/{id}/cancel", post(cancel_outgoing))
        .route("/outgoing-payments/{id}/retry", post(retry_outgoing))
        .route("/quotes", get(list_quotes))
        .route("/quotes/{id}", get(show_quote))
        .route("/grants", get(list_grants))
        .route("/grants/{id}", get(show_grant))
        .route("/grants/{id}/approve", post(approve_grant))
        .route("/grants/{id}/reject", post(reject_grant))
        .route("/grants/{id}/revoke", post(revoke_grant))
        .route("/events", get(events))
        .route("/requests", get(list_requests))
        .route("/requests/{id}", get(show_request))
        .route("/webhooks", get(list_webhooks))
        .route("/webhooks/retry-dead", post(retry_dead_webhooks))
        .route("/webhooks/{seq}/retry", post(retry_webhook))
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

/// `GET /admin/events`: the event stream as Server-Sent Events. `after=SEQ` (or `Last-Event-ID`) replays
/// the durable events after it first; `live=true` adds the live-only ones (the request log with exchanges,
/// progress, balances). Each message is `id: SEQ` (durable events only), `event: TYPE` and `data:` one line
/// of [`crate::events::EventRecord`] JSON; `event: resync` says events were missed (reload); a comment
/// keeps the connection alive every 15 s.
async fn events(
    State(s): State<AppState>,
    Query(q): Query<EventsQuery>,
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
    let rx = control::events::stream(s.services.clone(), q.after.or(last_id), q.live.unwrap_or(false));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
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
        Some((Ok::<_, std::convert::Infallible>(event), rx))
    });
    Ok(Sse::new(stream).keep_alive(
        KeepAlive::new()
            .interval(std::time::Duration::from_secs(15))
            .text("keep-alive"),
    ))
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsQuery {
    after: Option<i64>,
    live: Option<bool>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookQuery {
    state: Option<String>,
    before: Option<i64>,
    first: Option<usize>,
}

async fn list_webhooks(
    State(s): State<AppState>,
    Query(q): Query<WebhookQuery>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_webhooks(&s, q.state, q.before, q.first).await?))
}

async fn retry_webhook(s: State<AppState>, by: Caller, Path(seq): Path<i64>) -> Result<Response, ApiError> {
    command(&s, by, Command::RetryWebhook { seq }).await
}

async fn retry_dead_webhooks(s: State<AppState>, by: Caller) -> Result<Response, ApiError> {
    command(&s, by, Command::RetryDeadWebhooks).await
}

async fn list_wallets(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_wallets(&s).await?))
}

async fn create_wallet(s: State<AppState>, by: Caller, Json(body): Json<CreateWallet>) -> Result<Response, ApiError> {
    command(&s, by, Command::CreateWallet(body)).await
}

async fn show_wallet(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::show_wallet(&s, &name).await?))
}

async fn list_keys(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_keys(&s, &name).await?))
}

async fn add_key(
    s: State<AppState>,
    by: Caller,
    Path(wallet): Path<String>,
    Json(key): Json<AddKey>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::AddKey { wallet, key }).await
}

async fn remove_key(
    s: State<AppState>,
    by: Caller,
    Path((wallet, kid)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::RemoveKey { wallet, kid }).await
}

async fn deposit(
    s: State<AppState>,
    by: Caller,
    Path(wallet): Path<String>,
    Json(funds): Json<Move>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::Deposit { wallet, funds }).await
}

async fn withdraw(
    s: State<AppState>,
    by: Caller,
    Path(wallet): Path<String>,
    Json(funds): Json<Move>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::Withdraw { wallet, funds }).await
}

async fn balances(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::balances(&s).await?))
}

async fn overview(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::overview(&s).await?))
}

async fn server_view(State(s): State<AppState>) -> impl IntoResponse {
    Json(control::server_view(&s))
}

async fn wallet_summaries(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::wallet_summaries(&s).await?))
}

async fn grant_spending(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::grant_spending(&s).await?))
}

async fn list_peers(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_peers(&s).await?))
}

async fn show_peer(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::show_peer(&s, &name).await?))
}

async fn create_peer(s: State<AppState>, by: Caller, Json(body): Json<NewPeer>) -> Result<Response, ApiError> {
    command(&s, by, Command::CreatePeer(body)).await
}

async fn update_peer(
    s: State<AppState>,
    by: Caller,
    Path(name): Path<String>,
    Json(patch): Json<crate::ase::peers::PeerPatch>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::UpdatePeer { name, patch }).await
}

async fn peer_liquidity(
    s: State<AppState>,
    by: Caller,
    Path(peer): Path<String>,
    Json(liquidity): Json<LiquidityMove>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::MovePeerLiquidity { peer, liquidity }).await
}

async fn settle_peer(
    s: State<AppState>,
    by: Caller,
    Path(peer): Path<String>,
    Json(settlement): Json<NewSettlement>,
) -> Result<Response, ApiError> {
    command(&s, by, Command::SettlePeer { peer, settlement }).await
}

async fn remove_peer(s: State<AppState>, by: Caller, Path(name): Path<String>) -> Result<Response, ApiError> {
    command(&s, by, Command::RemovePeer { name }).await
}

async fn list_incoming(
    State(s): State<AppState>,
    Query(f): Query<PaymentFilter>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_incoming(&s, f).await?))
}

async fn show_incoming(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::show_incoming(&s, &id).await?))
}

async fn complete_incoming(s: State<AppState>, by: Caller, Path(id): Path<String>) -> Result<Response, ApiError> {
    command(&s, by, Command::CompleteIncoming { id }).await
}

async fn list_outgoing(
    State(s): State<AppState>,
    Query(f): Query<PaymentFilter>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_outgoing(&s, f).await?))
}

async fn show_outgoing(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::show_outgoing(&s, &id).await?))
}

async fn cancel_outgoing(s: State<AppState>, by: Caller, Path(id): Path<String>) -> Result<Response, ApiError> {
    command(&s, by, Command::CancelOutgoing { id }).await
}

async fn retry_outgoing(s: State<AppState>, by: Caller, Path(id): Path<String>) -> Result<Response, ApiError> {
    command(&s, by, Command::RetryOutgoing { id }).await
}

async fn list_quotes(State(s): State<AppState>, Query(f): Query<PaymentFilter>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_quotes(&s, f).await?))
}

async fn show_quote(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::show_quote(&s, &id).await?))
}

/// `GET /admin/requests?cursor=ID&limit=N`: the server's recent requests, newest first.
#[derive(Debug, serde::Deserialize)]
struct RequestPage {
    cursor: Option<String>,
    limit: Option<usize>,
}

async fn list_requests(State(s): State<AppState>, Query(q): Query<RequestPage>) -> impl IntoResponse {
    let (items, next_cursor) = s
        .request_log
        .list(q.cursor.as_deref(), q.limit.unwrap_or(100).min(1000));
    Json(control::dto::Listed { items, next_cursor })
}

/// `GET /admin/requests/{id}`: a request with its exchange (when captured) and its signature report.
async fn show_request(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    s.request_log.detail(&id).map(axum::Json).ok_or_else(|| {
        ApiError::not_found(format!(
            "no request {id} in the server's recent requests (it keeps the last {})",
            s.settings.server.request_log_size
        ))
    })
}

async fn list_grants(State(s): State<AppState>, Query(q): Query<GrantFilter>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::list_grants(&s, q.state, q.all).await?))
}

async fn show_grant(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(control::show_grant(&s, &id).await?))
}

async fn approve_grant(s: State<AppState>, by: Caller, Path(id): Path<String>) -> Result<Response, ApiError> {
    command(&s, by, Command::ApproveGrant { id }).await
}

async fn reject_grant(
    s: State<AppState>,
    by: Caller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let body: Reject = if body.iter().all(u8::is_ascii_whitespace) {
        Reject::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?
    };
    command(
        &s,
        by,
        Command::RejectGrant {
            id,
            reason: body.reason,
        },
    )
    .await
}

async fn revoke_grant(s: State<AppState>, by: Caller, Path(id): Path<String>) -> Result<Response, ApiError> {
    command(&s, by, Command::RevokeGrant { id }).await
}
