//! `[ilp]` and `[[ilp.peers]]`: this node on the Interledger network, the peers that may send it packets and
//! carry its own, and how their secrets and addresses are checked.

use serde::Deserialize;

/// `[ilp]`: this node on the Interledger network and the peers that may send it packets at `POST /ilp`.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IlpSettings {
    /// The node's ILP address; incoming payments get `{address}.{token}`.
    pub address: String,
    /// The STREAM server secret (32 bytes, base64 or base64url). Empty: generated into `ilp.secret`.
    pub secret: String,
    /// Peers: those with `incoming_tokens` may send ILP Prepares to `POST /ilp`; those with an
    /// `outgoing_endpoint` carry STREAM payments to the ILP addresses under their `routes`.
    pub peers: Vec<PeerSettings>,
    /// Tolerated exchange-rate slippage when paying by STREAM, as a fraction (0.01 = 1 %): the probed rate
    /// must be at least the operator's rate times `1 − slippage`, and every packet must deliver that much.
    pub slippage: f64,
    /// The local wallet the ASE signs as when it acts as an Open Payments client of other ASEs (to read
    /// their incoming payments). Created when a peer has an `outgoing_endpoint`; its key is `ase-client.pem`.
    pub client_wallet: String,
    /// Prepare expiry for STREAM packets sent through peers, in milliseconds.
    pub packet_expiry_ms: u64,
    /// SPSP receive: wallet addresses answer `Accept: application/spsp4+json` with STREAM credentials paying
    /// into the wallet itself, and take money over them.
    pub spsp: bool,
}

impl IlpSettings {
    /// The slippage in parts per million (validated to lie in 0..1).
    pub fn slippage_ppm(&self) -> u64 {
        // validated finite and in [0, 1): the cast cannot overflow
        (self.slippage * 1_000_000.0).round().clamp(0.0, 999_999.0) as u64
    }
}

impl std::fmt::Debug for IlpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IlpSettings")
            .field("address", &self.address)
            .field("secret", &if self.secret.is_empty() { "" } else { "<set>" })
            .field("peers", &self.peers)
            .field("slippage", &self.slippage)
            .field("client_wallet", &self.client_wallet)
            .field("packet_expiry_ms", &self.packet_expiry_ms)
            .field("spsp", &self.spsp)
            .finish()
    }
}

/// One `[[ilp.peers]]` entry.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerSettings {
    /// A short name for logs and ledger memos (`A-Z a-z 0-9 _ ~ -`).
    pub name: String,
    /// The peer's own ILP address: what IL-DCP tells it (default `{our address}.{name}`), and its route
    /// when `routes` is empty.
    #[serde(default)]
    pub ilp_address: Option<String>,
    /// Bearer tokens this peer presents at `POST /ilp` (any one of them authenticates it). May be empty
    /// for a peer we only send to.
    #[serde(default)]
    pub incoming_tokens: Vec<String>,
    /// The peer's ILP-over-HTTP endpoint (its `/ilp` URL) for STREAM packets we send. None: receive only.
    #[serde(default)]
    pub outgoing_endpoint: Option<String>,
    /// `Authorization: Bearer …` we present at `outgoing_endpoint`.
    #[serde(default)]
    pub outgoing_token: Option<String>,
    /// ILP address prefixes this peer reaches (longest prefix wins among peers).
    #[serde(default)]
    pub routes: Vec<String>,
    /// Largest Prepare amount accepted from this peer (larger ones are rejected `F08`). None: no limit.
    #[serde(default)]
    pub max_packet_amount: Option<u64>,
    /// The asset of the link with this peer.
    pub asset_code: String,
    pub asset_scale: u8,
    /// Alert threshold on what may still be sent through this peer (its liquidity less what we owe it), in
    /// minor units of its asset: `peerLiquidityLow` when it goes under (see `crate::thresholds`). Applied at
    /// start; the command line and the console can change it meanwhile.
    #[serde(default)]
    pub liquidity_threshold: Option<u64>,
    /// Alert threshold on what this peer owes us, in minor units of its asset: `peerCreditHigh` when it goes
    /// over. Applied at start.
    #[serde(default)]
    pub credit_threshold: Option<u64>,
}

impl std::fmt::Debug for PeerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerSettings")
            .field("name", &self.name)
            .field("ilp_address", &self.ilp_address)
            .field("incoming_tokens", &self.incoming_tokens.len())
            .field("outgoing_endpoint", &self.outgoing_endpoint)
            .field("outgoing_token", &self.outgoing_token.as_ref().map(|_| "<set>"))
            .field("routes", &self.routes)
            .field("max_packet_amount", &self.max_packet_amount)
            .field("asset_code", &self.asset_code)
            .field("asset_scale", &self.asset_scale)
            .field("liquidity_threshold", &self.liquidity_threshold)
            .field("credit_threshold", &self.credit_threshold)
            .finish()
    }
}

impl PeerSettings {
    /// Checks this peer on its own: name, ILP address, tokens, outgoing endpoint, routes, packet limit and
    /// asset. `kept_tokens`: incoming tokens it has besides `incoming_tokens` (digests an update keeps).
    pub fn validate(&self, kept_tokens: usize) -> Result<(), (&'static str, String)> {
        let name = &self.name;
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'-'));
        if !valid_name {
            return Err(("ilp.peers.name", format!("{name:?}: 1 to 64 of A-Z a-z 0-9 _ ~ -")));
        }
        if let Some(a) = &self.ilp_address
            && crate::ilp::Address::new(a.as_str()).is_err()
        {
            return Err((
                "ilp.peers.ilp_address",
                format!("peer {name:?}: {a:?} is not an ILP address like test.rafiki"),
            ));
        }
        if self.incoming_tokens.is_empty() && kept_tokens == 0 && self.outgoing_endpoint.is_none() {
            return Err((
                "ilp.peers.incoming_tokens",
                format!("peer {name:?} needs at least one incoming token (or an outgoing_endpoint)"),
            ));
        }
        for t in &self.incoming_tokens {
            if t.trim().is_empty() || t.trim() != t || t.len() > 256 {
                return Err((
                    "ilp.peers.incoming_tokens",
                    format!("peer {name:?}: tokens must be 1 to 256 characters without surrounding spaces"),
                ));
            }
        }
        match (&self.outgoing_endpoint, &self.outgoing_token) {
            (None, None) => {}
            (Some(e), Some(t)) => {
                let ok = url::Url::parse(e).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
                if !ok {
                    return Err((
                        "ilp.peers.outgoing_endpoint",
                        format!("peer {name:?}: {e:?} is not an http(s) URL"),
                    ));
                }
                if t.trim().is_empty() || t.trim() != t {
                    return Err((
                        "ilp.peers.outgoing_token",
                        format!("peer {name:?}: must be non-empty without surrounding spaces"),
                    ));
                }
            }
            _ => {
                return Err((
                    "ilp.peers.outgoing_token",
                    format!("peer {name:?}: outgoing_endpoint and outgoing_token go together"),
                ));
            }
        }
        if !self.routes.is_empty() && self.outgoing_endpoint.is_none() {
            return Err((
                "ilp.peers.routes",
                format!("peer {name:?}: routes need an outgoing_endpoint"),
            ));
        }
        for r in &self.routes {
            if crate::ilp::Address::new(r.as_str()).is_err()
                && !crate::ilp::packet::ADDRESS_SCHEMES.contains(&r.as_str())
            {
                return Err((
                    "ilp.peers.routes",
                    format!("peer {name:?}: {r:?} is not an ILP address prefix like test.rafiki"),
                ));
            }
        }
        if self.max_packet_amount == Some(0) {
            return Err((
                "ilp.peers.max_packet_amount",
                format!("peer {name:?}: must be at least 1 (leave it out for no limit)"),
            ));
        }
        if let Err(e) = crate::money::Asset::of_peer(&self.asset_code, self.asset_scale) {
            return Err(("ilp.peers.asset_code", format!("peer {name:?}: {e}")));
        }
        for (key, t) in [
            ("ilp.peers.liquidity_threshold", self.liquidity_threshold),
            ("ilp.peers.credit_threshold", self.credit_threshold),
        ] {
            if t.is_some_and(|t| crate::money::Value::new(t).is_err()) {
                return Err((key, format!("peer {name:?}: must be at most {}", i64::MAX)));
            }
        }
        Ok(())
    }
}

/// Decodes a 32-byte secret written in base64 or base64url (padding optional).
pub fn decode_secret(text: &str) -> Option<[u8; 32]> {
    use base64::{
        Engine as _,
        engine::general_purpose::{STANDARD_NO_PAD_INDIFFERENT, URL_SAFE_NO_PAD_INDIFFERENT},
    };
    let text = text.trim();
    URL_SAFE_NO_PAD_INDIFFERENT
        .decode(text)
        .or_else(|_| STANDARD_NO_PAD_INDIFFERENT.decode(text))
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
}

/// Longest accepted node address: `{address}.{token}` must stay within an ILP address's 1023 characters.
const MAX_NODE_ADDRESS_LEN: usize = 800;

impl IlpSettings {
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        if crate::ilp::Address::new(self.address.as_str()).is_err() {
            return Err((
                "ilp.address",
                format!("{:?} is not an ILP address like test.opdesk", self.address),
            ));
        }
        if self.address.len() > MAX_NODE_ADDRESS_LEN {
            return Err((
                "ilp.address",
                format!("must be at most {MAX_NODE_ADDRESS_LEN} characters"),
            ));
        }
        if !self.secret.is_empty() && decode_secret(&self.secret).is_none() {
            return Err((
                "ilp.secret",
                "must be 32 bytes in base64 or base64url (e.g. `openssl rand -base64 32`), or empty".into(),
            ));
        }
        if !(self.slippage.is_finite() && (0.0..1.0).contains(&self.slippage)) {
            return Err(("ilp.slippage", "must be a fraction from 0 to below 1, like 0.01".into()));
        }
        if crate::names::validate_name(&self.client_wallet).is_err() {
            return Err((
                "ilp.client_wallet",
                format!("{:?} is not a wallet name", self.client_wallet),
            ));
        }
        if !(1000..=120_000).contains(&self.packet_expiry_ms) {
            return Err(("ilp.packet_expiry_ms", "must be from 1000 to 120000".into()));
        }
        let mut names = std::collections::BTreeSet::new();
        let mut tokens = std::collections::BTreeSet::new();
        for p in &self.peers {
            p.validate(0)?;
            if !names.insert(p.name.as_str()) {
                return Err(("ilp.peers.name", format!("{:?} is configured twice", p.name)));
            }
            for t in &p.incoming_tokens {
                if !tokens.insert(t.as_str()) {
                    return Err((
                        "ilp.peers.incoming_tokens",
                        format!("peer {:?}: a token is used more than once", p.name),
                    ));
                }
            }
        }
        Ok(())
    }
}
