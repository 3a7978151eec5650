//! Receivers on other ASEs: resolving their incoming payments as an Open Payments client, routing their ILP
//! addresses to a configured peer, and quoting a STREAM payment by probing the rate through that peer.
//!
//! The ASE's client identity is the local wallet `[ilp] client_wallet` (default `opdesk`) with the key in
//! `ase-client.pem` (the wallet is ensured when a peer has an `outgoing_endpoint`, at start or when one is
//! added). Resolution follows Rafiki
//! (REFERENCE-RAFIKI.md §2.8): an unauthenticated GET of the incoming payment gives `authServer`; a
//! non-interactive grant for `incoming-payment` `read-all` there (cached per auth server, re-requested once
//! on 401/403) lets a signed GET return the payment with `methods[ilp]`. Nothing here writes to the store.
//!
//! Every request goes through the [`Egress`] client for client-named URLs (address policy, timeouts, body
//! caps): the receiver URL and the `authServer` it names are chosen by whoever asked for the quote. What
//! went wrong is logged and kept for the operator ([`RemoteError::detail`]); the client is told only that
//! the receiver could not be resolved or reached.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use base64::{
    Engine as _,
    engine::general_purpose::{URL_SAFE_NO_PAD, URL_SAFE_NO_PAD_INDIFFERENT},
};
use http::Method;
use serde_json::{Value as Json, json};

use super::peers::{Peer, Peers};
use crate::{
    client::SignedClient,
    egress::Egress,
    httpsig::jwk::{self, Jwk},
    ilp::{
        Address,
        sender::{Connection, Rate, SendError},
    },
    money::Asset,
    settings::IlpSettings,
};

use super::exchange::Exchange;

/// An incoming payment on another ASE, as its authenticated GET returned it.
#[derive(Debug, Clone)]
pub struct RemoteIncoming {
    pub url: String,
    pub asset: Asset,
    pub incoming_amount: Option<u64>,
    pub received_amount: u64,
    pub completed: bool,
    pub expires_at: Option<time::OffsetDateTime>,
    pub ilp_address: Address,
    pub shared_secret: Vec<u8>,
    /// The wallet address it pays into, as it names it (for the consent words: the payee).
    pub wallet_address: Option<String>,
}

impl RemoteIncoming {
    pub fn shared_secret_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.shared_secret)
    }
}

/// What a remote quote learned: stored as a `stream_plans` row.
#[derive(Debug, Clone)]
pub struct RemotePlan {
    pub peer: String,
    pub ilp_address: String,
    pub shared_secret: String,
    pub estimated: Rate,
    pub minimum: Rate,
    pub max_packet_amount: Option<u64>,
    /// What STREAM may send in all, in the peer's asset.
    pub source_amount: u64,
    /// When the peer's asset is not the sending wallet's: the rate the ASE converts at (peer units per
    /// debit unit, the operator's rate, exact), and the debit units the source stands for.
    pub link: Option<Link>,
    /// Quoted fixed-send (the debit amount given): the payment sends its whole source and the receiver gets
    /// what it buys, at least the quoted receive amount.
    pub fixed_send: bool,
}

/// A cross-currency link: the sending wallet's asset converted into the peer's by the ASE itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub peer_asset: Asset,
    pub rate: Rate,
    /// The debit-asset units `source_amount` stands for (the debit amount less the fee).
    pub debit_source: u64,
}

/// What probing a receiver through its peer learned.
#[derive(Debug, Clone)]
pub struct Probed {
    pub peer: Arc<Peer>,
    /// Receiver units per peer unit: as probed, and the floor (the operator's rate less slippage).
    pub estimated: Rate,
    pub minimum: Rate,
    pub max_packet: Option<u64>,
    /// Peer units per debit unit when the peer's asset is not the sending wallet's.
    pub link: Option<Rate>,
}

/// Why a remote receiver cannot be used. The `Display` text is for the API caller; [`RemoteError::detail`]
/// for the log and the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// Resolving the receiver over Open Payments failed; the detail names hosts and statuses.
    #[error("the receiver could not be resolved")]
    Unresolvable(String),
    /// Reaching the receiver over Interledger failed; the detail carries what the peer or receiver said.
    #[error("the receiver could not be reached over Interledger")]
    Unreachable(String),
    /// No peer can carry payments to other ASEs at all.
    #[error("the receiver is not an incoming payment of this ASE, and no ILP peer is configured to pay other ASEs")]
    NoSendingPeer,
    /// The receiver cannot be paid from the sending wallet's asset (no rate, or no peer in that asset).
    #[error("the receiver cannot be paid from this wallet's asset")]
    Unpayable(String),
    /// The probed exchange rate is below the operator's minimum.
    #[error("the exchange rate to the receiver is below the minimum this ASE accepts")]
    RateTooLow(String),
}

impl RemoteError {
    /// The full story, for the log and the operator's request detail.
    pub fn detail(&self) -> String {
        match self {
            Self::Unresolvable(d) | Self::Unreachable(d) | Self::Unpayable(d) | Self::RateTooLow(d) => d.clone(),
            Self::NoSendingPeer => self.to_string(),
        }
    }
}

struct Inner {
    peers: Peers,
    client: Option<SignedClient>,
    client_jwk: Option<Jwk>,
    client_url: String,
    http: Egress,
    exchange: Exchange,
    slippage_ppm: u64,
    expiry: Duration,
    grants: Mutex<HashMap<String, String>>,
}

/// The remote-receiver service. Cheap to clone.
#[derive(Clone)]
pub struct Remote(Arc<Inner>);

/// Most remote grants kept (one per authorization server).
const MAX_CACHED_GRANTS: usize = 256;

/// Source units the rate probe sends (capped by the path's maximum packet).
pub const PROBE_AMOUNT: u64 = 1_000_000_000;

impl Remote {
    /// `client_key` signs as `client_url` (None: resolving remote receivers is refused); every request goes
    /// through `http`, the egress client for client-named URLs.
    pub fn new(
        settings: &IlpSettings,
        exchange: Exchange,
        peers: Peers,
        client_key: Option<&ed25519_dalek::SigningKey>,
        client_url: &str,
        http: Egress,
    ) -> Self {
        let kid = client_key.map(|k| jwk::thumbprint(&k.verifying_key()));
        Self(Arc::new(Inner {
            peers,
            client: client_key
                .zip(kid.as_deref())
                .map(|(k, kid)| SignedClient::with_egress(k.clone(), kid, http.clone())),
            client_jwk: client_key
                .zip(kid.as_deref())
                .map(|(k, kid)| Jwk::from_verifying_key(kid, &k.verifying_key())),
            client_url: client_url.to_owned(),
            http,
            exchange,
            slippage_ppm: settings.slippage_ppm(),
            expiry: Duration::from_millis(settings.packet_expiry_ms),
            grants: Mutex::new(HashMap::new()),
        }))
    }

    /// The public key other ASEs verify the ASE's requests with (published on the client wallet).
    pub fn client_jwk(&self) -> Option<&Jwk> {
        self.0.client_jwk.as_ref()
    }

    /// The sending peer `name`, if it (still) exists.
    pub fn peer(&self, name: &str) -> Option<Arc<Peer>> {
        self.0.peers.current().get(name).filter(|p| p.outgoing().is_some())
    }

    /// The sending peer whose route is the longest prefix of `address`.
    pub fn route(&self, address: &Address) -> Option<Arc<Peer>> {
        self.0.peers.current().route(address)
    }

    /// A fresh STREAM connection to `address` through `peer` (None: the peer does not send).
    pub fn connection(&self, peer: &Peer, address: Address, secret: &[u8], max: Option<u64>) -> Option<Connection> {
        let out = peer.outgoing()?;
        Some(Connection::new(
            self.0.peers.counted(&peer.name, out.transport.clone()),
            address,
            secret,
            max.or(peer.max_packet_amount),
            self.0.expiry,
        ))
    }

    fn cached_grant(&self, auth_server: &str) -> Option<String> {
        self.0.grants.lock().ok()?.get(auth_server).cloned()
    }

    fn forget_grant(&self, auth_server: &str) {
        if let Ok(mut g) = self.0.grants.lock() {
            g.remove(auth_server);
        }
    }

    async fn grant(&self, client: &SignedClient, auth_server: &str) -> Result<String, RemoteError> {
        if let Some(t) = self.cached_grant(auth_server) {
            return Ok(t);
        }
        let body = json!({
            "access_token": {"access": [{"type": "incoming-payment", "actions": ["read-all"]}]},
            "client": self.0.client_url,
        });
        let r = client
            .send(Method::POST, auth_server, None, Some(&body))
            .await
            .map_err(|e| unresolvable(format!("the receiver's authorization server {auth_server}: {e}")))?;
        let token = r.body["access_token"]["value"].as_str().filter(|_| r.status == 200);
        let Some(token) = token else {
            return Err(unresolvable(format!(
                "the receiver's authorization server {auth_server} refused a read grant (HTTP {})",
                r.status,
            )));
        };
        if let Ok(mut g) = self.0.grants.lock() {
            // auth servers are named by receivers, that is by clients: keep the cache bounded
            if g.len() >= MAX_CACHED_GRANTS {
                g.clear();
            }
            g.insert(auth_server.to_owned(), token.to_owned());
        }
        Ok(token.to_owned())
    }

    /// Resolves an incoming payment URL on another ASE (public GET → grant → signed GET).
    pub async fn resolve(&self, url: &str) -> Result<RemoteIncoming, RemoteError> {
        crate::gnap::model::check_receiver(url).map_err(|e| unresolvable(e.description))?;
        let client = self
            .0
            .client
            .as_ref()
            .filter(|_| self.0.peers.current().can_send())
            .ok_or(RemoteError::NoSendingPeer)?;
        let public = self
            .0
            .http
            .get_json(url)
            .await
            .map_err(|e| unresolvable(format!("public GET {url}: {e}")))?;
        if public.status != 200 {
            return Err(unresolvable(format!("public GET {url}: HTTP {}", public.status)));
        }
        let public = public
            .json()
            .map_err(|e| unresolvable(format!("public GET {url}: {e}")))?;
        let Some(auth_server) = public["authServer"].as_str() else {
            return Err(unresolvable(format!("{url} names no authServer")));
        };
        crate::gnap::model::check_uri("authServer", auth_server).map_err(|e| unresolvable(e.description))?;
        let mut body = None;
        for attempt in 0..2 {
            let token = self.grant(client, auth_server).await?;
            let r = client
                .send(Method::GET, url, Some(&token), None)
                .await
                .map_err(|e| unresolvable(format!("signed GET {url}: {e}")))?;
            if matches!(r.status, 401 | 403) && attempt == 0 {
                self.forget_grant(auth_server);
                continue;
            }
            if r.status != 200 {
                return Err(unresolvable(format!("signed GET {url}: HTTP {}", r.status)));
            }
            body = Some(r.body);
            break;
        }
        let body = body.ok_or_else(|| unresolvable(format!("reading {url} was refused")))?;
        parse_incoming(url, &body).map_err(unresolvable)
    }

    /// The `publicName` of the wallet address at `url` on another ASE (an unauthenticated GET of its
    /// document), without control characters and at most 256 characters; `None` when it has none or cannot be
    /// read. Only for people's eyes (the consent words): nothing is decided by it.
    pub async fn public_name(&self, url: &str) -> Option<String> {
        public_name(&self.0.http, url).await
    }

    /// The operator's rate from `from` to `to` less the slippage (the floor every packet must reach).
    pub async fn minimum_rate(&self, from: &Asset, to: &Asset) -> Result<Rate, RemoteError> {
        minimum_rate(&self.0.exchange.rates(from).await, self.0.slippage_ppm, from, to)
    }

    /// The sending fee rule for `asset`.
    pub fn fee(&self, asset: &Asset) -> crate::rates::Fee {
        self.0.exchange.fee(asset)
    }

    /// Connects to the receiver through its peer and probes the rate; checks the asset and the minimum rate.
    /// A peer in another asset than the sending wallet's is a cross-currency link: the ASE converts at the
    /// operator's rate (exact, no slippage: it is the ASE's own conversion) and the STREAM leg starts in the
    /// peer's asset.
    pub async fn probe(&self, r: &RemoteIncoming, sender_asset: &Asset) -> Result<Probed, RemoteError> {
        let unreachable = |m: String| RemoteError::Unreachable(m);
        let peer = self
            .route(&r.ilp_address)
            .ok_or_else(|| unreachable(format!("no ILP peer routes to {}", r.ilp_address.as_str())))?;
        let link = if &peer.asset == sender_asset {
            None
        } else {
            let rates = self.0.exchange.rates(sender_asset).await;
            let (num, den) = rates.minor_ratio(sender_asset, &peer.asset).map_err(|e| {
                RemoteError::Unpayable(format!(
                    "the ILP peer {} settles in {}/{}, the sending wallet holds {}/{}: {e}",
                    peer.name, peer.asset.code, peer.asset.scale, sender_asset.code, sender_asset.scale
                ))
            })?;
            Some(Rate::new(num, den).ok_or_else(|| RemoteError::Unpayable("no usable exchange rate".into()))?)
        };
        let minimum = self.minimum_rate(&peer.asset, &r.asset).await?;
        let mut conn = self
            .connection(&peer, r.ilp_address.clone(), &r.shared_secret, None)
            .ok_or_else(|| unreachable(format!("the ILP peer {} does not send", peer.name)))?;
        let result = async {
            let asset = conn.connect().await.map_err(send_error)?;
            if let Some((code, scale)) = asset
                && (code != r.asset.code || scale != r.asset.scale)
            {
                return Err(RemoteError::Unreachable(format!(
                    "the receiver's STREAM asset {code:?}/{scale} differs from its incoming payment's"
                )));
            }
            conn.probe(PROBE_AMOUNT).await.map_err(send_error)
        }
        .await;
        conn.close().await;
        let estimated = result?;
        if !estimated.at_least(&minimum) {
            return Err(RemoteError::RateTooLow(format!(
                "the exchange rate through peer {} ({}) is below the minimum of {} (the operator's rate less {} ppm slippage)",
                peer.name, estimated, minimum, self.0.slippage_ppm
            )));
        }
        Ok(Probed {
            max_packet: conn.max_packet,
            peer,
            estimated,
            minimum,
            link,
        })
    }
}

/// The operator's rate from `from` to `to` less `slippage_ppm`.
fn minimum_rate(rates: &crate::rates::Rates, slippage_ppm: u64, from: &Asset, to: &Asset) -> Result<Rate, RemoteError> {
    const REF: u64 = 1_000_000_000;
    let dest = rates
        .convert(REF, from, to, false)
        .map_err(|e| RemoteError::Unpayable(e.to_string()))?;
    Rate::new(u128::from(dest), u128::from(REF))
        .and_then(|r| r.less_slippage(slippage_ppm))
        .ok_or_else(|| RemoteError::Unpayable("no usable exchange rate".into()))
}

fn send_error(e: SendError) -> RemoteError {
    RemoteError::Unreachable(e.to_string())
}

fn unresolvable(detail: String) -> RemoteError {
    tracing::info!(%detail, "remote receiver not resolved");
    RemoteError::Unresolvable(detail)
}

fn amount_of(v: &Json) -> Option<(u64, Asset)> {
    let value = v["value"].as_str()?.parse().ok()?;
    let asset = Asset::new(v["assetCode"].as_str()?, u8::try_from(v["assetScale"].as_u64()?).ok()?).ok()?;
    Some((value, asset))
}

/// The `publicName` of the wallet address document at `url`, read through `http` (see
/// [`Remote::public_name`]).
pub async fn public_name(http: &Egress, url: &str) -> Option<String> {
    let reply = http.get_json(url).await.ok().filter(|r| r.status == 200)?;
    let doc = reply.json().ok()?;
    let name = crate::text::sanitize(doc["publicName"].as_str()?);
    Some(name.chars().take(256).collect()).filter(|n: &String| !n.trim().is_empty())
}

/// Reads an `incoming-payment-with-methods`.
pub fn parse_incoming(url: &str, body: &Json) -> Result<RemoteIncoming, String> {
    let (received, asset) =
        amount_of(&body["receivedAmount"]).ok_or_else(|| format!("{url}: no valid receivedAmount"))?;
    let incoming_amount = match &body["incomingAmount"] {
        Json::Null => None,
        v => Some(amount_of(v).ok_or_else(|| format!("{url}: invalid incomingAmount"))?.0),
    };
    let method = body["methods"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["type"] == "ilp"))
        .ok_or_else(|| format!("{url} offers no ilp payment method"))?;
    let ilp_address = method["ilpAddress"]
        .as_str()
        .and_then(|a| Address::new(a).ok())
        .ok_or_else(|| format!("{url}: invalid ilpAddress"))?;
    let shared_secret = method["sharedSecret"]
        .as_str()
        .and_then(|s| {
            URL_SAFE_NO_PAD_INDIFFERENT
                .decode(s)
                .or_else(|_| base64::engine::general_purpose::STANDARD.decode(s))
                .ok()
        })
        .filter(|s| s.len() == 32)
        .ok_or_else(|| format!("{url}: invalid sharedSecret"))?;
    Ok(RemoteIncoming {
        url: url.to_owned(),
        asset,
        incoming_amount,
        received_amount: received,
        completed: body["completed"].as_bool().unwrap_or(false),
        expires_at: body["expiresAt"]
            .as_str()
            .and_then(|s| crate::clock::parse_ts(s).ok())
            .map(crate::clock::to_millis),
        ilp_address,
        shared_secret,
        wallet_address: body["walletAddress"]
            .as_str()
            .filter(|w| crate::gnap::model::check_uri("walletAddress", w).is_ok())
            .map(str::to_owned),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn minimum_rate_is_the_operators_less_slippage() {
        let usd = Asset::new("USD", 2).unwrap();
        let rates = crate::rates::Rates::default();
        assert_eq!(
            minimum_rate(&rates, 10_000, &usd, &usd).unwrap(),
            Rate::new(99, 100).unwrap()
        );
        assert!(minimum_rate(&rates, 10_000, &usd, &Asset::new("EUR", 2).unwrap()).is_err());
    }

    #[test]
    fn incoming_payments_with_methods_parse() {
        let body = json!({
            "id": "http://b.test/incoming-payments/1",
            "receivedAmount": {"value": "10", "assetCode": "USD", "assetScale": 2},
            "incomingAmount": {"value": "500", "assetCode": "USD", "assetScale": 2},
            "completed": false,
            "methods": [{"type": "ilp", "ilpAddress": "test.b.tok", "sharedSecret": URL_SAFE_NO_PAD.encode([7u8; 32])}],
        });
        let r = parse_incoming("u", &body).unwrap();
        assert_eq!((r.incoming_amount, r.received_amount), (Some(500), 10));
        assert_eq!(r.shared_secret, vec![7u8; 32]);
        let mut no_method = body.clone();
        no_method["methods"] = json!([]);
        assert!(parse_incoming("u", &no_method).unwrap_err().contains("no ilp"));
    }
}
