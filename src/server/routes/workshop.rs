//! `POST /workshop/sign`, served only by `opdesk workshop`'s happy-life desk: the signing helper the reference
//! ASE's Bruno collection calls through its `signatureUrl` (`{keyId, base64Key, request: {url, method, headers,
//! body}}` → the `Signature`, `Signature-Input` and, with a body, `Content-Digest` headers), so a class needs
//! nothing but opdesk and Bruno. It signs only with the seats' own client keys: `keyId` must be a key that a
//! seat's app wallet (`seatNN-app`) publishes, and `base64Key` (base64 of its PKCS#8 PEM) its private half —
//! it is no signing oracle for any other key. The class's pages live here too: each seat's handout, opened
//! with the code on its card ([`handout`]), and the class page for the projector ([`class`]).

pub mod class;
pub mod handout;

use std::collections::BTreeMap;

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use base64::Engine as _;
use serde::Deserialize;

use crate::{
    httpsig::{self, jwk::Jwk},
    server::AppState,
};

/// What the collection's pre-request script sends.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignRequest {
    key_id: String,
    base64_key: String,
    request: ToSign,
}

/// The request to sign, as Bruno is about to send it. Header values that are not text (a script's unset
/// variable arrives as `null`) are left out; a body that is not text is signed as its compact JSON.
#[derive(Debug, Deserialize)]
pub struct ToSign {
    url: String,
    method: String,
    #[serde(default)]
    headers: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    body: Option<serde_json::Value>,
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/workshop/sign", post(sign))
        .route("/workshop/handout", get(handout::form).post(handout::open))
        .route("/workshop/handout/file", post(handout::file))
        .route("/workshop/class", get(class::page))
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, why.to_owned()).into_response()
}

/// Whether `key_id` is a key a seat's app wallet on this desk publishes, with public half `x`.
async fn seat_key(state: &AppState, key_id: &str, x: &str) -> bool {
    let Ok(wallets) = state.wallets.list().await else {
        return false;
    };
    for w in wallets.iter().filter(|w| is_seat_app(&w.name)) {
        if let Ok(keys) = state.wallets.keys(&w.name).await
            && keys.keys.iter().any(|k| k.kid == key_id && k.x == x)
        {
            return true;
        }
    }
    false
}

/// `seat07-app`
fn is_seat_app(name: &str) -> bool {
    name.strip_prefix("seat")
        .and_then(|r| r.strip_suffix("-app"))
        .is_some_and(|n| n.len() == 2 && n.bytes().all(|b| b.is_ascii_digit()))
}

async fn sign(State(state): State<AppState>, Json(r): Json<SignRequest>) -> Response {
    let Some(key) = base64::engine::general_purpose::STANDARD
        .decode(r.base64_key.trim())
        .ok()
        .and_then(|pem| String::from_utf8(pem).ok())
        .and_then(|pem| httpsig::jwk::from_pkcs8_pem(&pem).ok())
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "base64Key is not base64 of a PKCS#8 Ed25519 private key",
        );
    };
    let x = Jwk::from_verifying_key("", &key.verifying_key()).x;
    if !seat_key(&state, &r.key_id, &x).await {
        return refuse(
            StatusCode::FORBIDDEN,
            "this helper signs only with the keys of this workshop's seats (seatNN-app)",
        );
    }
    let Ok(method) = Method::from_bytes(r.request.method.to_ascii_uppercase().as_bytes()) else {
        return refuse(StatusCode::BAD_REQUEST, "request.method is not an HTTP method");
    };
    let mut headers = HeaderMap::new();
    for (k, v) in &r.request.headers {
        let Some(v) = v.as_str() else { continue };
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            headers.insert(k, v);
        }
    }
    let body = match r.request.body {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s,
        Some(other) => other.to_string(),
    };
    let created = state.clock.now().unix_timestamp();
    if let Err(e) = httpsig::sign_request(
        &method,
        &r.request.url,
        &mut headers,
        body.as_bytes(),
        &key,
        &r.key_id,
        created,
    ) {
        return refuse(StatusCode::BAD_REQUEST, &e.to_string());
    }
    // the headers to add, as the reference helper answers: not Content-Length and Content-Type (the client
    // sends its own, which are what was signed)
    let mut out = serde_json::Map::new();
    for (name, h) in [
        ("Signature", httpsig::SIGNATURE),
        ("Signature-Input", httpsig::SIGNATURE_INPUT),
        ("Content-Digest", httpsig::CONTENT_DIGEST),
    ] {
        if let Some(v) = headers.get(h).and_then(|v| v.to_str().ok()) {
            out.insert(name.to_owned(), serde_json::Value::String(v.to_owned()));
        }
    }
    Json(out).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_seat_apps_are_seats() {
        assert!(is_seat_app("seat07-app"));
        for n in [
            "seat7-app",
            "seat07",
            "seat07-shop",
            "alice",
            "seatab-app",
            "seat007-app",
        ] {
            assert!(!is_seat_app(n), "{n}");
        }
    }
}
