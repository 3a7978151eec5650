//! The operator API under `/admin`: served only to loopback peers presenting the bearer token kept in the
//! data dir. Handlers are thin calls into the same services the console uses; [`client`] is the typed HTTP
//! client the CLI drives it with, and [`dto`] the request/response bodies both sides share.

pub mod client;
pub mod dto;

use std::net::SocketAddr;

use axum::{
    Router,
    extract::{ConnectInfo, Path, Query, Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
};

use crate::{
    ase::wallet::NewWallet,
    httpsig::jwk,
    ledger::Movement,
    money::Asset,
    server::{error::ApiError, extract::Json, state::AppState},
};
use dto::{
    AddKey, CreateWallet, GrantFilter, KeyAdded, Listed, Move, Moved, NewPeer, PaymentFilter, PeerView, Reject,
    WalletDetail,
};

/// Admin routes (nested under `/admin`), guarded by loopback + bearer token.
pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/wallets", get(list_wallets).post(create_wallet))
        .route("/wallets/{name}", get(show_wallet))
        .route("/wallets/{name}/keys", get(list_keys).post(add_key))
        .route("/wallets/{name}/keys/{kid}", delete(remove_key))
        .route("/wallets/{name}/deposit", post(deposit))
        .route("/wallets/{name}/withdraw", post(withdraw))
        .route("/balances", get(balances))
        .route("/peers", get(list_peers).post(create_peer))
        .route("/peers/{name}", get(show_peer).patch(update_peer).delete(remove_peer))
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

/// The operations behind the admin API, callable in-process too (the CLI uses them when no server runs).
pub mod ops {
    use super::*;
    use crate::{
        ase::{
            incoming::IncomingView,
            outgoing::OutgoingView,
            peers::{PeerPatch, Saved},
            quotes::QuoteDto,
            wallet::Wallet,
        },
        gnap::service::GrantView,
        httpsig::jwk::Jwks,
        ledger::Balance,
        states::GrantState,
        store::payments::{Page, PageQuery},
    };

    pub async fn list_wallets(s: &AppState) -> Result<Vec<Wallet>, ApiError> {
        Ok(s.wallets.list().await?)
    }

    pub async fn create_wallet(s: &AppState, body: CreateWallet) -> Result<Wallet, ApiError> {
        let asset = Asset::new(&body.asset_code, body.asset_scale)?;
        let new = NewWallet {
            name: body.name,
            asset,
            public_name: body.public_name,
            demo: false,
        };
        Ok(s.wallets.create(new).await?)
    }

    pub async fn show_wallet(s: &AppState, name: &str) -> Result<WalletDetail, ApiError> {
        let wallet = s.wallets.get(name).await?;
        let keys = s.wallets.keys(name).await?.keys;
        let balance = s.ledger.balance(&wallet.account_id).await?;
        Ok(WalletDetail { wallet, keys, balance })
    }

    pub async fn list_keys(s: &AppState, name: &str) -> Result<Jwks, ApiError> {
        Ok(s.wallets.keys(name).await?)
    }

    pub async fn add_key(s: &AppState, name: &str, body: AddKey) -> Result<KeyAdded, ApiError> {
        match body {
            AddKey {
                jwk: Some(j),
                generate: false,
            } => Ok(KeyAdded {
                jwk: s.wallets.add_key(name, j).await?,
                private_key_pem: None,
            }),
            AddKey {
                jwk: None,
                generate: true,
            } => {
                let (public, secret) = s.wallets.generate_key(name).await?;
                Ok(KeyAdded {
                    jwk: public,
                    private_key_pem: Some(jwk::to_pkcs8_pem(&secret)),
                })
            }
            _ => Err(ApiError::bad_request(
                "invalid_request",
                "give exactly one of \"jwk\" or \"generate\": true",
            )),
        }
    }

    pub async fn remove_key(s: &AppState, name: &str, kid: &str) -> Result<(), ApiError> {
        Ok(s.wallets.remove_key(name, kid).await?)
    }

    pub async fn move_funds(s: &AppState, name: &str, m: Move, movement: Movement) -> Result<Moved, ApiError> {
        let wallet = s.wallets.get(name).await?;
        let expect = match (m.asset_code, m.asset_scale) {
            (None, None) => None,
            (Some(code), Some(scale)) => Some(Asset { code, scale }),
            _ => {
                return Err(ApiError::bad_request(
                    "invalid_amount",
                    "give both assetCode and assetScale, or neither",
                ));
            }
        };
        let (transfer, balance) = s
            .ledger
            .move_funds(wallet.account_id, movement, m.value, expect, m.transfer_id)
            .await?;
        Ok(Moved { transfer, balance })
    }

    pub async fn balances(s: &AppState) -> Result<Vec<Balance>, ApiError> {
        Ok(s.ledger.balances().await?)
    }

    fn page_of(f: &PaymentFilter) -> Result<PageQuery, ApiError> {
        if let Some(c) = &f.cursor
            && !crate::ids::is_id(c)
        {
            return Err(ApiError::bad_request("invalid_request", "cursor is not an id"));
        }
        let limit = f.first.unwrap_or(50);
        if !(1..=500).contains(&limit) {
            return Err(ApiError::bad_request("invalid_request", "first must be from 1 to 500"));
        }
        Ok(PageQuery {
            cursor: f.cursor.clone(),
            backward: false,
            limit,
        })
    }

    async fn wallet_id(s: &AppState, f: &PaymentFilter) -> Result<Option<String>, ApiError> {
        match &f.wallet {
            None => Ok(None),
            Some(name) => Ok(Some(s.wallets.get(name).await?.id)),
        }
    }

    fn listed<R, T>(page: Page<R>, id: impl Fn(&R) -> String, view: impl Fn(&R) -> T) -> Listed<T> {
        let next_cursor = if page.has_next {
            page.items.last().map(&id)
        } else {
            None
        };
        Listed {
            items: page.items.iter().map(view).collect(),
            next_cursor,
        }
    }

    pub async fn list_incoming(s: &AppState, f: PaymentFilter) -> Result<Listed<IncomingView>, ApiError> {
        let wallet = wallet_id(s, &f).await?;
        let page = s
            .incoming
            .list(wallet.as_deref(), None, f.state.as_deref(), page_of(&f)?)
            .await?;
        Ok(listed(page, |r| r.id.clone(), |r| s.incoming.view(r)))
    }

    pub async fn show_incoming(s: &AppState, id: &str) -> Result<IncomingView, ApiError> {
        Ok(s.incoming.view(&s.incoming.get(id).await?))
    }

    pub async fn complete_incoming(s: &AppState, id: &str) -> Result<IncomingView, ApiError> {
        Ok(s.incoming.view(&s.incoming.complete(id).await?))
    }

    pub async fn list_outgoing(s: &AppState, f: PaymentFilter) -> Result<Listed<OutgoingView>, ApiError> {
        let wallet = wallet_id(s, &f).await?;
        let page = s
            .outgoing
            .list(wallet.as_deref(), None, f.state.clone(), page_of(&f)?)
            .await?;
        Ok(listed(page, |r| r.id.clone(), |r| s.outgoing.view(r)))
    }

    pub async fn show_outgoing(s: &AppState, id: &str) -> Result<OutgoingView, ApiError> {
        Ok(s.outgoing.view(&s.outgoing.get(id).await?))
    }

    pub async fn cancel_outgoing(s: &AppState, id: &str) -> Result<OutgoingView, ApiError> {
        let p = s.outgoing.get(id).await?;
        Ok(s.outgoing.view(&s.engine.cancel(&p.id).await?))
    }

    pub async fn retry_outgoing(s: &AppState, id: &str) -> Result<OutgoingView, ApiError> {
        let p = s.outgoing.get(id).await?;
        Ok(s.outgoing.view(&s.engine.retry(&p.id).await?))
    }

    pub async fn list_quotes(s: &AppState, f: PaymentFilter) -> Result<Listed<QuoteDto>, ApiError> {
        if f.state.is_some() {
            return Err(ApiError::bad_request("invalid_request", "quotes have no state filter"));
        }
        let wallet = wallet_id(s, &f).await?;
        let page = s.quotes.list(wallet.as_deref(), page_of(&f)?).await?;
        Ok(listed(page, |r| r.id.clone(), |r| s.quotes.dto(r)))
    }

    pub async fn show_quote(s: &AppState, id: &str) -> Result<QuoteDto, ApiError> {
        Ok(s.quotes.dto(&s.quotes.get(id).await?))
    }

    /// The ILP peers, from config.toml and added here (tokens never shown), with their account balances.
    pub async fn list_peers(s: &AppState) -> Result<Vec<PeerView>, ApiError> {
        let balances = balances(s).await?;
        let set = s.peers.current();
        Ok(set.all().iter().map(|p| PeerView::of(p, &balances)).collect())
    }

    pub async fn show_peer(s: &AppState, name: &str) -> Result<PeerView, ApiError> {
        let peer = s
            .peers
            .current()
            .get(name)
            .ok_or_else(|| ApiError::not_found(format!("no peer named {name:?}")))?;
        Ok(PeerView::of(&peer, &balances(s).await?))
    }

    pub async fn create_peer(s: &AppState, body: NewPeer) -> Result<PeerView, ApiError> {
        let (def, generate) = body.into_settings();
        let saved = s.peers.create(def, generate).await?;
        saved_view(s, saved).await
    }

    pub async fn update_peer(s: &AppState, name: &str, patch: PeerPatch) -> Result<PeerView, ApiError> {
        let saved = s.peers.update(name, patch).await?;
        saved_view(s, saved).await
    }

    pub async fn remove_peer(s: &AppState, name: &str) -> Result<(), ApiError> {
        Ok(s.peers.remove(name).await?)
    }

    /// A saved peer's view; a peer that can send needs the ASE's client wallet (created on first need).
    async fn saved_view(s: &AppState, saved: Saved) -> Result<PeerView, ApiError> {
        if saved.peer.outgoing().is_some() {
            crate::app::ensure_client_wallet(s, &saved.peer.asset).await?;
        }
        let mut view = PeerView::of(&saved.peer, &balances(s).await?);
        view.generated_incoming_tokens = saved.generated_tokens;
        Ok(view)
    }

    pub async fn list_grants(s: &AppState, state: Option<String>) -> Result<Vec<GrantView>, ApiError> {
        let state = state.map(|st| st.parse::<GrantState>()).transpose().map_err(|_| {
            ApiError::bad_request(
                "invalid_request",
                format!("state must be one of {:?}", GrantState::NAMES),
            )
        })?;
        Ok(s.gnap.list(state, 200).await?)
    }

    pub async fn show_grant(s: &AppState, id: &str) -> Result<GrantView, ApiError> {
        Ok(s.gnap.show(id).await?)
    }

    pub async fn approve_grant(s: &AppState, id: &str) -> Result<GrantView, ApiError> {
        Ok(s.gnap.approve(id).await?)
    }

    pub async fn reject_grant(s: &AppState, id: &str, body: Reject) -> Result<GrantView, ApiError> {
        Ok(s.gnap.reject(id, body.reason).await?)
    }

    pub async fn revoke_grant(s: &AppState, id: &str) -> Result<GrantView, ApiError> {
        s.gnap.revoke_grant(id).await?;
        Ok(s.gnap.show(id).await?)
    }
}

async fn list_wallets(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_wallets(&s).await?))
}

async fn create_wallet(
    State(s): State<AppState>,
    Json(body): Json<CreateWallet>,
) -> Result<impl IntoResponse, ApiError> {
    Ok((StatusCode::CREATED, axum::Json(ops::create_wallet(&s, body).await?)))
}

async fn show_wallet(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::show_wallet(&s, &name).await?))
}

async fn list_keys(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_keys(&s, &name).await?))
}

async fn add_key(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Json(body): Json<AddKey>,
) -> Result<impl IntoResponse, ApiError> {
    Ok((StatusCode::CREATED, axum::Json(ops::add_key(&s, &name, body).await?)))
}

async fn remove_key(
    State(s): State<AppState>,
    Path((name, kid)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    ops::remove_key(&s, &name, &kid).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn deposit(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Json(body): Json<Move>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::move_funds(&s, &name, body, Movement::Deposit).await?))
}

async fn withdraw(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Json(body): Json<Move>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(
        ops::move_funds(&s, &name, body, Movement::Withdrawal).await?,
    ))
}

async fn balances(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::balances(&s).await?))
}

async fn list_peers(State(s): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_peers(&s).await?))
}

async fn show_peer(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::show_peer(&s, &name).await?))
}

async fn create_peer(State(s): State<AppState>, Json(body): Json<NewPeer>) -> Result<impl IntoResponse, ApiError> {
    Ok((StatusCode::CREATED, axum::Json(ops::create_peer(&s, body).await?)))
}

async fn update_peer(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Json(body): Json<crate::ase::peers::PeerPatch>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::update_peer(&s, &name, body).await?))
}

async fn remove_peer(State(s): State<AppState>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    ops::remove_peer(&s, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_incoming(
    State(s): State<AppState>,
    Query(f): Query<PaymentFilter>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_incoming(&s, f).await?))
}

async fn show_incoming(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::show_incoming(&s, &id).await?))
}

async fn complete_incoming(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::complete_incoming(&s, &id).await?))
}

async fn list_outgoing(
    State(s): State<AppState>,
    Query(f): Query<PaymentFilter>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_outgoing(&s, f).await?))
}

async fn show_outgoing(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::show_outgoing(&s, &id).await?))
}

async fn cancel_outgoing(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::cancel_outgoing(&s, &id).await?))
}

async fn retry_outgoing(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::retry_outgoing(&s, &id).await?))
}

async fn list_quotes(State(s): State<AppState>, Query(f): Query<PaymentFilter>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_quotes(&s, f).await?))
}

async fn show_quote(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::show_quote(&s, &id).await?))
}

async fn list_grants(State(s): State<AppState>, Query(q): Query<GrantFilter>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::list_grants(&s, q.state).await?))
}

async fn show_grant(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::show_grant(&s, &id).await?))
}

async fn approve_grant(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::approve_grant(&s, &id).await?))
}

async fn reject_grant(
    State(s): State<AppState>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let body: Reject = if body.iter().all(u8::is_ascii_whitespace) {
        Reject::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request("invalid_request", e.to_string()))?
    };
    Ok(axum::Json(ops::reject_grant(&s, &id, body).await?))
}

async fn revoke_grant(State(s): State<AppState>, Path(id): Path<String>) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(ops::revoke_grant(&s, &id).await?))
}
