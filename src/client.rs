//! The signed Open Payments client: requests signed exactly as the official Node SDK signs them (label `sig1`,
//! `keyid` then `created`, `Content-Digest: sha-512`), for the ASE's own calls to other servers and for tests.

use ed25519_dalek::SigningKey;
use http::{HeaderMap, HeaderValue, Method, header};
use serde_json::Value;

use crate::{
    egress::{self, Egress, EgressError},
    httpsig,
};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("signing failed: {0}")]
    Sign(#[from] httpsig::Error),
    #[error("request failed: {0}")]
    Http(#[from] EgressError),
    #[error("bad header value")]
    Header,
}

/// A response: status, headers and the body (JSON when it says so and parses, else `Null`).
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: Vec<u8>,
}

/// Signs requests as one client key, sending them through an [`Egress`] client.
#[derive(Clone)]
pub struct SignedClient {
    http: Result<Egress, EgressError>,
    key: SigningKey,
    keyid: String,
}

impl SignedClient {
    /// A client for tools and tests that talk to servers they chose: any address, plain http, 30 s, bodies up
    /// to 16 MiB. The ASE itself uses [`SignedClient::with_egress`] with its address policy.
    pub fn new(key: SigningKey, keyid: &str) -> Self {
        let policy = egress::Policy::operator(std::time::Duration::from_secs(30), 16 << 20);
        Self {
            http: Egress::new(policy),
            key,
            keyid: keyid.to_owned(),
        }
    }

    /// A client whose requests go through `http` (and so obey its policy).
    pub fn with_egress(key: SigningKey, keyid: &str, http: Egress) -> Self {
        Self {
            http: Ok(http),
            key,
            keyid: keyid.to_owned(),
        }
    }

    pub fn keyid(&self) -> &str {
        &self.keyid
    }

    /// Builds the headers a signed request carries (exposed so tests can tamper with them).
    pub fn sign(
        &self,
        method: &Method,
        url: &str,
        token: Option<&str>,
        body: &[u8],
        created: i64,
    ) -> Result<HeaderMap, ClientError> {
        let mut headers = HeaderMap::new();
        if let Some(t) = token {
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(&format!("GNAP {t}")).map_err(|_| ClientError::Header)?,
            );
        }
        httpsig::sign_request(method, url, &mut headers, body, &self.key, &self.keyid, created)?;
        Ok(headers)
    }

    /// Sends `body` (serialized compactly, as the SDK does) signed now.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Response, ClientError> {
        let bytes = match body {
            Some(v) => serde_json::to_vec(v).unwrap_or_default(),
            None => Vec::new(),
        };
        let created = time::OffsetDateTime::now_utc().unix_timestamp();
        let headers = self.sign(&method, url, token, &bytes, created)?;
        self.send_raw(method, url, headers, bytes).await
    }

    /// Sends pre-built headers and body as they are.
    pub async fn send_raw(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<Response, ClientError> {
        let reply = self.send_unparsed(method, url, headers, body).await?;
        let body = reply.json().unwrap_or(Value::Null);
        let status = reply.status;
        let headers = reply.headers;
        let raw = reply.body;
        Ok(Response {
            status,
            headers,
            body,
            raw,
        })
    }

    /// [`SignedClient::send_raw`] without reading the answer's JSON: its status, headers and bytes (for a
    /// load generator, whose CPU is taken from the server it measures).
    pub async fn send_unparsed(
        &self,
        method: Method,
        url: &str,
        mut headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<egress::Reply, ClientError> {
        let http = self.http.as_ref().map_err(|e| ClientError::Http(e.clone()))?;
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        Ok(http.send(method, url, headers, body).await?)
    }
}
