//! Signed requests (RFC 9421 + RFC 9530) as Open Payments uses them. [`Signed`] buffers the body and checks
//! everything that needs no key — coverage, `Content-Digest` over the raw bytes, `created` window — with
//! `@target-uri` rebuilt from the configured public URL plus the raw path and query. [`Verifier::verify`] then
//! checks the signature with the key of the client the handler names (wallet JWKS or directed-identity JWK)
//! and refuses replays of state-changing requests.
//!
//! Replay protection covers the non-idempotent requests (POST): replaying one could act twice. Idempotent
//! methods (GET, HEAD, DELETE) are exempt, because Ed25519 is deterministic and the official SDK sends no
//! nonce, so two identical reads or revocations signed within the same second carry the same signature
//! legitimately, and repeating them changes nothing.

use axum::{
    body::Bytes,
    extract::{FromRequest, Request},
    http::{HeaderMap, Method, StatusCode},
};
use ed25519_dalek::VerifyingKey;

use super::{AppState, request_log::Notes};
use crate::{
    clock::SharedClock,
    gnap::model::Client,
    httpsig::{self, Policy, SignatureParams, keys::KeyResolver, replay::ReplayCache},
};

/// A request whose signature parameters passed the key-independent checks.
#[derive(Debug, Clone)]
pub struct Signed {
    pub method: Method,
    pub target_uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub sig: SignatureParams,
    /// Where the request log learns the client and the verdict.
    pub notes: Notes,
}

/// Why a request could not be taken as signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedError {
    /// The body exceeded the limit.
    TooLarge,
    /// The body could not be read.
    Body(String),
    /// A signature problem (missing, malformed, not covering enough, bad digest, stale).
    Signature(httpsig::Error),
}

impl Signed {
    /// Buffers the body and runs the key-independent checks.
    pub async fn from_request(req: Request, state: &AppState) -> Result<Self, SignedError> {
        let (parts, body) = req.into_parts();
        let notes = parts.extensions.get::<Notes>().cloned().unwrap_or_default();
        // The Bytes extractor honours the router's DefaultBodyLimit.
        let body = Bytes::from_request(Request::from_parts(parts.clone(), body), &())
            .await
            .map_err(|r| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    SignedError::TooLarge
                } else {
                    SignedError::Body(r.body_text())
                }
            })?;
        let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let target_uri = format!("{}{path}", state.settings.public_url);
        let refused = |e: httpsig::Error| {
            notes.verdict(format!("refused: {e}"));
            SignedError::Signature(e)
        };
        let sig = httpsig::parse_signature(&parts.headers).map_err(refused)?;
        let signed = Self {
            method: parts.method,
            target_uri,
            headers: parts.headers,
            body,
            sig,
            notes: notes.clone(),
        };
        let now = state.clock.now().unix_timestamp();
        httpsig::check_policy(&signed.request(), &signed.sig, now, &state.verifier.policy).map_err(refused)?;
        Ok(signed)
    }

    pub fn request(&self) -> httpsig::Request<'_> {
        httpsig::Request {
            method: &self.method,
            target_uri: &self.target_uri,
            headers: &self.headers,
            body: &self.body,
        }
    }

    /// The `Authorization: GNAP <token>` value, if the header has exactly that shape.
    pub fn gnap_token(&self) -> Option<&str> {
        gnap_token(&self.headers)
    }
}

/// `Authorization: GNAP <token>`: the scheme is case-sensitive and the token has no spaces.
pub fn gnap_token(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let t = v.strip_prefix("GNAP ")?;
    (!t.is_empty() && !t.contains(' ')).then_some(t)
}

/// Checks signatures against client keys; owns the replay cache.
pub struct Verifier {
    pub policy: Policy,
    pub keys: KeyResolver,
    replay: ReplayCache,
    clock: SharedClock,
}

impl Verifier {
    pub fn new(policy: Policy, keys: KeyResolver, clock: SharedClock) -> Self {
        Self {
            policy,
            keys,
            replay: ReplayCache::default(),
            clock,
        }
    }

    async fn key_for(&self, client: &Client, keyid: &str) -> Result<VerifyingKey, httpsig::Error> {
        match client {
            Client::Jwk(j) if j.kid == keyid => j.verifying_key(),
            Client::Jwk(_) => Err(httpsig::Error::UnknownKey(keyid.to_owned())),
            Client::Wallet(url) => self.keys.key(url, keyid).await.map_err(|e| {
                tracing::info!(client = %url, keyid, error = %e, "client key not usable");
                httpsig::Error::UnknownKey(format!("{keyid} ({e})"))
            }),
        }
    }

    /// Verifies the signature with `client`'s key, then records it against replay.
    pub async fn verify(&self, signed: &Signed, client: &Client) -> Result<(), httpsig::Error> {
        signed.notes.client(&match client {
            Client::Wallet(u) => u.clone(),
            Client::Jwk(j) => format!("jwk {}", j.kid),
        });
        let result = self.check(signed, client).await;
        signed.notes.verdict(match &result {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("refused: {e}"),
        });
        result
    }

    async fn check(&self, signed: &Signed, client: &Client) -> Result<(), httpsig::Error> {
        let keyid = signed
            .sig
            .keyid
            .as_deref()
            .ok_or(httpsig::Error::MissingParam("keyid"))?;
        let key = self.key_for(client, keyid).await?;
        httpsig::verify(&signed.request(), &signed.sig, &key)?;
        if signed.method == Method::POST {
            let now = self.clock.now().unix_timestamp();
            let created = signed.sig.created.unwrap_or(now);
            let until = created
                .saturating_add(self.policy.max_skew_secs)
                .max(now.saturating_add(1));
            if !self.replay.check_and_insert(&signed.sig.signature, now, until) {
                return Err(httpsig::Error::Replayed);
            }
        }
        Ok(())
    }
}

/// The status a signature failure maps to.
pub fn status_of(e: &SignedError) -> StatusCode {
    match e {
        SignedError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        SignedError::Body(_) => StatusCode::BAD_REQUEST,
        SignedError::Signature(_) => StatusCode::UNAUTHORIZED,
    }
}
