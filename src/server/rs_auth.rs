//! Resource-server authorization: `Authorization: GNAP <token>` plus a valid signature by the token's client
//! → the grant's access. 401 (with `WWW-Authenticate: GNAP as_uri=…`) for a missing or malformed header and
//! for a bad signature (`Signature validation error: …`); 403 `Inactive Token` for an unknown, expired or
//! revoked token and 403 `Insufficient Grant` for access that does not cover the type, action and wallet.
//! The descriptions are the reference ASE's exact strings, which clients match on (docs/COMPATIBILITY.md);
//! opdesk's own wording goes into `details`. `read`/`list` see the client's own resources; `read-all`/`list-all` the wallet's.
//! `complete` changes the client's own incoming payments only, unless the wallet's owner stands behind the
//! grant (see [`Scope::wallet_owner`]); someone else's resource answers 404, as if it did not exist.

use axum::extract::{FromRequest, Request};

use crate::{
    gnap::{
        model::{AccessItem, Action, Client},
        service::TokenInfo,
    },
    httpsig::{self, jwk},
    server::{
        AppState,
        error::ApiError,
        signed::{Signed, SignedError, gnap_token},
    },
};

/// 403: the token is unknown, expired or revoked (clients rotate the token on it).
pub const INACTIVE_TOKEN: &str = "Inactive Token";
/// 403: the token is live but its access does not cover the request.
pub const INSUFFICIENT_GRANT: &str = "Insufficient Grant";
/// The prefix of every 401 for a signature (clients take it as "key revoked").
pub const SIGNATURE_ERROR: &str = "Signature validation error";
/// 401: the signing key is not among the client's keys (or they could not be fetched).
pub const KEY_NOT_FOUND: &str = "Signature validation error: could not find key in list of client keys";

/// An authenticated resource-server request.
pub struct RsAuth {
    pub signed: Signed,
    pub token: std::sync::Arc<TokenInfo>,
    /// Who the client is, as stored on the resources it creates.
    pub client_id: String,
    as_uri: String,
}

/// What an access check allows.
#[derive(Debug, Clone)]
pub struct Scope {
    /// `read-all` / `list-all`: every resource of the wallet, not only the client's own.
    pub all: bool,
    /// The item names the wallet in `identifier` and the wallet's owner stands behind the grant: the client
    /// is that wallet address itself (it signs with the wallet's keys), or the resource owner approved the
    /// grant interactively. Such a grant acts on every resource of the wallet, not only the client's own.
    /// An `identifier` alone proves nothing: incoming-payment grants are issued to anyone without consent.
    pub wallet_owner: bool,
    pub item: AccessItem,
}

/// The identity stored on resources a client creates.
pub fn client_id(c: &Client) -> String {
    match c {
        Client::Wallet(u) => u.clone(),
        Client::Jwk(j) => match j.verifying_key() {
            Ok(k) => format!("jwk:{}", jwk::thumbprint(&k)),
            Err(_) => format!("jwk:{}", j.kid),
        },
    }
}

impl FromRequest<AppState> for RsAuth {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let as_uri = state.gnap.grant_endpoint();
        let Some(value) = gnap_token(req.headers()).map(str::to_owned) else {
            return Err(ApiError::unauthorized(
                &as_uri,
                "missing or malformed Authorization: GNAP <token>",
            ));
        };
        let signed = Signed::from_request(req, state).await.map_err(|e| match e {
            SignedError::TooLarge => ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "request body is too large",
            ),
            SignedError::Body(d) => ApiError::bad_request("invalid_request", d),
            SignedError::Signature(s) => {
                tracing::info!(error = %s, "resource request signature refused");
                ApiError::unauthorized(&as_uri, format!("{SIGNATURE_ERROR}: {s}"))
            }
        })?;
        let token = state.gnap.introspect(&value).await?.ok_or_else(|| {
            ApiError::forbidden(&as_uri, INACTIVE_TOKEN).because("the access token is unknown, expired or revoked")
        })?;
        state.verifier.verify(&signed, &token.client).await.map_err(|e| {
            tracing::info!(error = %e, "resource request signature refused");
            match e {
                httpsig::Error::KeysUnavailable(_) | httpsig::Error::UnknownKey(_) => {
                    ApiError::unauthorized(&as_uri, KEY_NOT_FOUND).because(e.to_string())
                }
                e => ApiError::unauthorized(&as_uri, format!("{SIGNATURE_ERROR}: {e}")),
            }
        })?;
        Ok(Self {
            client_id: client_id(&token.client),
            signed,
            token,
            as_uri,
        })
    }
}

impl RsAuth {
    /// The access item that allows `action` on `type_name` for `wallet_url`, preferring the `-all` variant.
    pub fn require(&self, type_name: &str, action: Action, wallet_url: &str) -> Result<Scope, ApiError> {
        let all_action = match action {
            Action::Read => Some(Action::ReadAll),
            Action::List => Some(Action::ListAll),
            _ => None,
        };
        let matching = |a: Action| {
            self.token.access.iter().find(|i| {
                i.type_name() == type_name
                    && i.actions().contains(&a)
                    && i.identifier()
                        .is_none_or(|id| crate::names::wallet_url(id) == wallet_url)
            })
        };
        let scope = |item: &AccessItem, all: bool| Scope {
            all,
            wallet_owner: item
                .identifier()
                .is_some_and(|id| crate::names::wallet_url(id) == wallet_url)
                && (self.token.owner_approved
                    || matches!(&self.token.client, Client::Wallet(u) if crate::names::wallet_url(u) == wallet_url)),
            item: item.clone(),
        };
        if let Some(item) = all_action.and_then(matching) {
            return Ok(scope(item, true));
        }
        matching(action).map(|item| scope(item, false)).ok_or_else(|| {
            ApiError::forbidden(&self.as_uri, INSUFFICIENT_GRANT).because(format!(
                "the grant does not allow {type_name} {} on {wallet_url}",
                action.as_str()
            ))
        })
    }

    /// Whether this client created a resource whose stored client is `creator`.
    fn created(&self, creator: Option<&str>) -> bool {
        creator == Some(self.client_id.as_str())
    }

    /// Whether a read under `scope` may see a resource created by `creator`: the client's own, or any with
    /// `read-all`. Callers answer 404 otherwise.
    pub fn sees(&self, scope: &Scope, creator: Option<&str>) -> bool {
        scope.all || self.created(creator)
    }

    /// Whether a change (`complete`) under `scope` may touch a resource created by `creator`: the client's
    /// own, or any of the wallet when its owner stands behind the grant. Callers answer 404 otherwise.
    pub fn manages(&self, scope: &Scope, creator: Option<&str>) -> bool {
        scope.wallet_owner || self.created(creator)
    }

    /// The client filter for reads and lists: `None` when the scope sees every resource.
    pub fn owner_filter(&self, scope: &Scope) -> Option<String> {
        (!scope.all).then(|| self.client_id.clone())
    }
}
