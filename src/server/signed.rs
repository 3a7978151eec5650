//! Signed requests (RFC 9421 + RFC 9530) as Open Payments uses them. [`Signed`] buffers the body and checks
//! everything that needs no key — coverage, `Content-Digest` over the raw bytes, `created` window — with
//! `@target-uri` rebuilt from the configured public URL plus the raw path and query. [`Verifier::verify`] then
//! checks the signature with the key of the client the handler names (wallet JWKS or directed-identity JWK).
//!
//! Replays: Ed25519 is deterministic and the official SDK signs with a one-second `created` and no nonce, so
//! two honest identical requests in one second carry the same signature. Requests are therefore not refused
//! for repeating a signature; where a repeat could move money twice (`POST /outgoing-payments`) the service
//! records [`Signed::signature_digest`] with the payment and answers a repeat with the original payment.

use axum::{
    body::Bytes,
    extract::{FromRequest, Request},
    http::{HeaderMap, Method, StatusCode},
};
use ed25519_dalek::VerifyingKey;

use super::{
    AppState,
    request_log::{Notes, SignedPieces},
};
use crate::{
    gnap::model::Client,
    httpsig::{
        self, KeyOutcome, Policy, SignatureParams,
        keys::{KeyError, KeyResolver},
    },
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
        let now = state.clock.now().unix_timestamp();
        // Kept for the signature debugger (reference-counted body, one header map copy).
        notes.signed(SignedPieces {
            method: parts.method.clone(),
            target_uri: target_uri.clone(),
            headers: parts.headers.clone(),
            body: body.clone(),
            now_unix: now,
            policy: state.verifier.policy,
        });
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

    /// SHA-256 of the signature bytes: the same for byte-identical signed requests and only for them.
    pub fn signature_digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(&self.sig.signature).into()
    }
}

/// `Authorization: GNAP <token>`: the scheme is case-sensitive and the token has no spaces.
pub fn gnap_token(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let t = v.strip_prefix("GNAP ")?;
    (!t.is_empty() && !t.contains(' ')).then_some(t)
}

/// Checks signatures against client keys.
pub struct Verifier {
    pub policy: Policy,
    pub keys: KeyResolver,
}

impl Verifier {
    pub fn new(policy: Policy, keys: KeyResolver) -> Self {
        Self { policy, keys }
    }

    /// The client's key `keyid`. Why a wallet's keys could not be had is logged and noted for the operator;
    /// the client only learns that its keys could not be fetched (or that the key id is unknown).
    /// What was found is noted for the signature debugger.
    async fn key_for(&self, signed: &Signed, client: &Client, keyid: &str) -> Result<VerifyingKey, httpsig::Error> {
        let name = Some(client_name(client));
        match client {
            Client::Jwk(j) if j.kid == keyid => {
                let key = j.verifying_key();
                signed.notes.key(match &key {
                    Ok(k) => KeyOutcome::Found {
                        client: name,
                        source: Some("the grant's client JWK".into()),
                        key: *k,
                    },
                    Err(e) => KeyOutcome::Unavailable {
                        client: name,
                        reason: e.to_string(),
                    },
                });
                key
            }
            Client::Jwk(j) => {
                signed.notes.key(KeyOutcome::Missing {
                    client: name,
                    source: format!("the grant's client JWK (kid `{}`)", j.kid),
                });
                Err(httpsig::Error::UnknownKey(keyid.to_owned()))
            }
            Client::Wallet(url) => {
                let jwks = format!("{}/jwks.json", crate::names::wallet_url(url));
                let found = self.keys.key(url, keyid).await;
                signed.notes.key(match &found {
                    Ok(k) => KeyOutcome::Found {
                        client: name,
                        source: Some(jwks),
                        key: *k,
                    },
                    Err(KeyError::UnknownKey(_)) => KeyOutcome::Missing {
                        client: name,
                        source: jwks,
                    },
                    Err(e) => KeyOutcome::Unavailable {
                        client: name,
                        reason: e.to_string(),
                    },
                });
                found.map_err(|e| {
                    tracing::info!(client = ?url, keyid = ?keyid, error = %e, "client key not usable");
                    signed.notes.detail(format!("client keys: {e}"));
                    // One answer whether the wallet's keys could not be fetched or lack this kid: the
                    // difference would tell anyone whether a URL of their choosing serves a key set.
                    httpsig::Error::KeysUnavailable(keyid.to_owned())
                })
            }
        }
    }

    /// Verifies the signature with `client`'s key, then records it against replay.
    pub async fn verify(&self, signed: &Signed, client: &Client) -> Result<(), httpsig::Error> {
        signed.notes.client(&client_name(client));
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
        let key = self.key_for(signed, client, keyid).await?;
        httpsig::verify(&signed.request(), &signed.sig, &key)
    }
}

/// The client as the request log names it.
fn client_name(client: &Client) -> String {
    match client {
        Client::Wallet(u) => u.clone(),
        Client::Jwk(j) => format!("jwk {}", j.kid),
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
