//! The typed HTTP client for the admin API (`crate::server::admin`), which the CLI drives. Errors keep the
//! server's envelope so the CLI can show the server's own words; an unreachable server is its own variant so
//! the CLI can fall back to the data dir.

use reqwest::{Method, StatusCode};
use serde::{Serialize, de::DeserializeOwned};

use crate::control::dto::{
    AddKey, CreateWallet, KeyAdded, Listed, Move, Moved, NewPeer, PaymentFilter, PeerView, Reject, WalletDetail,
};
use crate::{
    ase::peers::PeerPatch,
    ase::{incoming::IncomingView, outgoing::OutgoingView, quotes::QuoteDto},
    gnap::service::GrantView,
    httpsig::jwk::Jwks,
    ledger::Balance,
    wallet::Wallet,
    webhooks::DeliveryRow,
};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no opdesk server answers at {0}")]
    Unreachable(String),
    #[error("{description} ({code}, HTTP {status})")]
    Api {
        status: u16,
        code: String,
        description: String,
    },
    #[error("unexpected response: {0}")]
    Protocol(String),
}

pub struct AdminClient {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl AdminClient {
    /// `base` is the server root, e.g. `http://127.0.0.1:4000`.
    pub fn new(base: &str, token: &str) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(2))
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(Self {
            http,
            base: format!("{}/admin", base.trim_end_matches('/')),
            token: token.to_owned(),
        })
    }

    async fn send<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Option<T>, ClientError> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let res = req.send().await.map_err(|e| {
            if e.is_connect() {
                ClientError::Unreachable(self.base.clone())
            } else {
                ClientError::Protocol(e.to_string())
            }
        })?;
        let status = res.status();
        let bytes = res.bytes().await.map_err(|e| ClientError::Protocol(e.to_string()))?;
        if status == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        if !status.is_success() {
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let field = |k: &str| v["error"][k].as_str().unwrap_or("").to_owned();
            return Err(ClientError::Api {
                status: status.as_u16(),
                code: field("code"),
                description: field("description"),
            });
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// Whether the server answers the admin API within `within` (a stopped or hung one does not: its
    /// kernel still accepts the connection).
    pub async fn answers(&self, within: std::time::Duration) -> Result<(), ClientError> {
        match tokio::time::timeout(within, self.balances()).await {
            Ok(r) => r.map(|_| ()),
            Err(_) => Err(ClientError::Unreachable(self.base.clone())),
        }
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send::<(), T>(Method::GET, path, None)
            .await?
            .ok_or_else(|| ClientError::Protocol("empty body".into()))
    }

    async fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, ClientError> {
        self.send(Method::POST, path, Some(body))
            .await?
            .ok_or_else(|| ClientError::Protocol("empty body".into()))
    }

    pub async fn list_wallets(&self) -> Result<Vec<Wallet>, ClientError> {
        self.get("/wallets").await
    }

    pub async fn create_wallet(&self, body: &CreateWallet) -> Result<Wallet, ClientError> {
        self.post("/wallets", body).await
    }

    pub async fn show_wallet(&self, name: &str) -> Result<WalletDetail, ClientError> {
        self.get(&format!("/wallets/{name}")).await
    }

    pub async fn list_keys(&self, name: &str) -> Result<Jwks, ClientError> {
        self.get(&format!("/wallets/{name}/keys")).await
    }

    pub async fn add_key(&self, name: &str, body: &AddKey) -> Result<KeyAdded, ClientError> {
        self.post(&format!("/wallets/{name}/keys"), body).await
    }

    pub async fn remove_key(&self, name: &str, kid: &str) -> Result<(), ClientError> {
        self.send::<(), serde_json::Value>(Method::DELETE, &format!("/wallets/{name}/keys/{kid}"), None)
            .await?;
        Ok(())
    }

    pub async fn deposit(&self, name: &str, body: &Move) -> Result<Moved, ClientError> {
        self.post(&format!("/wallets/{name}/deposit"), body).await
    }

    pub async fn withdraw(&self, name: &str, body: &Move) -> Result<Moved, ClientError> {
        self.post(&format!("/wallets/{name}/withdraw"), body).await
    }

    pub async fn balances(&self) -> Result<Vec<Balance>, ClientError> {
        self.get("/balances").await
    }

    pub async fn list_peers(&self) -> Result<Vec<PeerView>, ClientError> {
        self.get("/peers").await
    }

    pub async fn show_peer(&self, name: &str) -> Result<PeerView, ClientError> {
        self.get(&format!("/peers/{name}")).await
    }

    pub async fn create_peer(&self, body: &NewPeer) -> Result<PeerView, ClientError> {
        self.post("/peers", body).await
    }

    pub async fn update_peer(&self, name: &str, patch: &PeerPatch) -> Result<PeerView, ClientError> {
        self.send(Method::PATCH, &format!("/peers/{name}"), Some(patch))
            .await?
            .ok_or_else(|| ClientError::Protocol("empty body".into()))
    }

    pub async fn remove_peer(&self, name: &str) -> Result<(), ClientError> {
        self.send::<(), serde_json::Value>(Method::DELETE, &format!("/peers/{name}"), None)
            .await?;
        Ok(())
    }

    pub async fn list_grants(&self, state: Option<&str>) -> Result<Vec<GrantView>, ClientError> {
        match state {
            Some(st) => self.get(&format!("/grants?state={st}")).await,
            None => self.get("/grants").await,
        }
    }

    pub async fn show_grant(&self, id: &str) -> Result<GrantView, ClientError> {
        self.get(&format!("/grants/{id}")).await
    }

    pub async fn approve_grant(&self, id: &str) -> Result<GrantView, ClientError> {
        self.post(&format!("/grants/{id}/approve"), &serde_json::json!({}))
            .await
    }

    pub async fn reject_grant(&self, id: &str, body: &Reject) -> Result<GrantView, ClientError> {
        self.post(&format!("/grants/{id}/reject"), body).await
    }

    pub async fn revoke_grant(&self, id: &str) -> Result<GrantView, ClientError> {
        self.post(&format!("/grants/{id}/revoke"), &serde_json::json!({})).await
    }

    fn query(f: &PaymentFilter) -> String {
        let mut parts = Vec::new();
        for (k, v) in [("wallet", &f.wallet), ("state", &f.state), ("cursor", &f.cursor)] {
            if let Some(v) = v {
                parts.push(format!(
                    "{k}={}",
                    url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
                ));
            }
        }
        if let Some(n) = f.first {
            parts.push(format!("first={n}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }

    pub async fn list_incoming(&self, f: &PaymentFilter) -> Result<Listed<IncomingView>, ClientError> {
        self.get(&format!("/incoming-payments{}", Self::query(f))).await
    }

    pub async fn show_incoming(&self, id: &str) -> Result<IncomingView, ClientError> {
        self.get(&format!("/incoming-payments/{id}")).await
    }

    pub async fn complete_incoming(&self, id: &str) -> Result<IncomingView, ClientError> {
        self.post(&format!("/incoming-payments/{id}/complete"), &serde_json::json!({}))
            .await
    }

    pub async fn list_outgoing(&self, f: &PaymentFilter) -> Result<Listed<OutgoingView>, ClientError> {
        self.get(&format!("/outgoing-payments{}", Self::query(f))).await
    }

    pub async fn show_outgoing(&self, id: &str) -> Result<OutgoingView, ClientError> {
        self.get(&format!("/outgoing-payments/{id}")).await
    }

    pub async fn cancel_outgoing(&self, id: &str) -> Result<OutgoingView, ClientError> {
        self.post(&format!("/outgoing-payments/{id}/cancel"), &serde_json::json!({}))
            .await
    }

    pub async fn retry_outgoing(&self, id: &str) -> Result<OutgoingView, ClientError> {
        self.post(&format!("/outgoing-payments/{id}/retry"), &serde_json::json!({}))
            .await
    }

    pub async fn list_quotes(&self, f: &PaymentFilter) -> Result<Listed<QuoteDto>, ClientError> {
        self.get(&format!("/quotes{}", Self::query(f))).await
    }

    pub async fn show_quote(&self, id: &str) -> Result<QuoteDto, ClientError> {
        self.get(&format!("/quotes/{id}")).await
    }

    pub async fn list_webhooks(
        &self,
        state: Option<&str>,
        first: Option<usize>,
    ) -> Result<Vec<DeliveryRow>, ClientError> {
        let mut q = Vec::new();
        if let Some(st) = state {
            q.push(format!(
                "state={}",
                url::form_urlencoded::byte_serialize(st.as_bytes()).collect::<String>()
            ));
        }
        if let Some(n) = first {
            q.push(format!("first={n}"));
        }
        let q = if q.is_empty() {
            String::new()
        } else {
            format!("?{}", q.join("&"))
        };
        self.get(&format!("/webhooks{q}")).await
    }

    pub async fn retry_webhook(&self, seq: i64) -> Result<DeliveryRow, ClientError> {
        self.post(&format!("/webhooks/{seq}/retry"), &serde_json::json!({}))
            .await
    }

    /// Re-drives every dead delivery; returns how many.
    pub async fn retry_dead_webhooks(&self) -> Result<usize, ClientError> {
        let v: serde_json::Value = self.post("/webhooks/retry-dead", &serde_json::json!({})).await?;
        Ok(v["retried"].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(0))
    }
}
