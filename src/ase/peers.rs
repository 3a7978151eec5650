//! The ILP peers (STREAM.md §3.2): those in `[[ilp.peers]]` and those added through the admin API, kept in
//! the `peers` table, which this service alone writes. Everyone else reads the current [`PeerSet`]: `POST /ilp`
//! authenticates by it, the STREAM sender routes by it. Incoming tokens are kept only as SHA-256 digests; a
//! config peer can be changed only in config.toml.

use std::{
    sync::{Arc, RwLock},
    time::Duration,
};

use serde::{Deserialize, Deserializer, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{
    clock::SharedClock,
    ilp::{
        Address, crypto,
        sender::{HttpTransport, Transport},
    },
    money::Asset,
    settings::{IlpSettings, PeerSettings},
    store::{self, Store, peers as repo, peers::PeerRow},
};

/// Where a peer is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerSource {
    /// `[[ilp.peers]]` in config.toml: read-only here.
    Config,
    /// Added through the admin API or `opdesk peers add`.
    Admin,
}

impl PeerSource {
    /// `config` or `admin`, as the admin API shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Admin => "admin",
        }
    }
}

/// Where and how we send ILP Prepares to a peer.
pub struct Outgoing {
    pub endpoint: String,
    pub transport: Arc<dyn Transport>,
}

/// One peer, as the receiver and the sender use it.
pub struct Peer {
    pub name: String,
    pub ilp_address: Option<Address>,
    pub asset: Asset,
    /// Largest Prepare amount accepted from (and sent to) this peer.
    pub max_packet_amount: Option<u64>,
    /// ILP address prefixes reached through this peer, as defined (see [`Peer::routes`]).
    pub defined_routes: Vec<String>,
    pub source: PeerSource,
    pub created_at: Option<time::OffsetDateTime>,
    pub updated_at: Option<time::OffsetDateTime>,
    /// SHA-256 of each incoming token (compared in constant time).
    token_hashes: Vec<[u8; 32]>,
    outgoing: Option<Outgoing>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("name", &self.name)
            .field("source", &self.source)
            .field("max_packet_amount", &self.max_packet_amount)
            .field("routes", &self.defined_routes)
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// A peer from its definition; `timeout` bounds each HTTP round trip to its endpoint.
    pub fn from_settings(p: &PeerSettings, source: PeerSource, timeout: Duration) -> Self {
        Self {
            name: p.name.clone(),
            ilp_address: p.ilp_address.as_deref().and_then(|a| Address::new(a).ok()),
            asset: Asset {
                code: p.asset_code.clone(),
                scale: p.asset_scale,
            },
            max_packet_amount: p.max_packet_amount,
            defined_routes: p.routes.clone(),
            source,
            created_at: None,
            updated_at: None,
            token_hashes: p.incoming_tokens.iter().map(|t| crypto::sha256(t.as_bytes())).collect(),
            outgoing: outgoing(p.outgoing_endpoint.as_deref(), p.outgoing_token.as_deref(), timeout),
        }
    }

    fn from_row(r: &PeerRow, timeout: Duration) -> Self {
        Self {
            name: r.name.clone(),
            ilp_address: r.ilp_address.as_deref().and_then(|a| Address::new(a).ok()),
            asset: Asset {
                code: r.asset_code.clone(),
                scale: r.asset_scale,
            },
            max_packet_amount: r.max_packet_amount.and_then(|m| u64::try_from(m).ok()),
            defined_routes: r.routes.clone(),
            source: PeerSource::Admin,
            created_at: Some(r.created_at),
            updated_at: Some(r.updated_at),
            token_hashes: r
                .incoming_token_hashes
                .iter()
                .filter_map(|h| digest_from_text(h))
                .collect(),
            outgoing: outgoing(r.outgoing_endpoint.as_deref(), r.outgoing_token.as_deref(), timeout),
        }
    }

    /// How many incoming tokens authenticate it at `POST /ilp`.
    pub fn incoming_tokens(&self) -> usize {
        self.token_hashes.len()
    }

    pub fn outgoing(&self) -> Option<&Outgoing> {
        self.outgoing.as_ref()
    }

    /// The prefixes routed to it: its routes, or its own ILP address when it has none. Only a peer with an
    /// outgoing endpoint has routes.
    pub fn routes(&self) -> Vec<&str> {
        if self.outgoing.is_none() {
            Vec::new()
        } else if self.defined_routes.is_empty() {
            self.ilp_address.iter().map(Address::as_str).collect()
        } else {
            self.defined_routes.iter().map(String::as_str).collect()
        }
    }
}

fn outgoing(endpoint: Option<&str>, token: Option<&str>, timeout: Duration) -> Option<Outgoing> {
    let (endpoint, token) = (endpoint?, token?);
    Some(Outgoing {
        endpoint: endpoint.to_owned(),
        transport: Arc::new(HttpTransport::new(endpoint, token, timeout)),
    })
}

/// A token digest as stored: base64url.
fn digest_text(d: &[u8; 32]) -> String {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    URL_SAFE_NO_PAD.encode(d)
}

fn digest_from_text(text: &str) -> Option<[u8; 32]> {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    URL_SAFE_NO_PAD.decode(text).ok()?.try_into().ok()
}

/// The peers at one moment: config peers first, then admin ones by name.
#[derive(Debug, Default)]
pub struct PeerSet(Vec<Arc<Peer>>);

impl PeerSet {
    pub fn new(peers: Vec<Peer>) -> Self {
        Self(peers.into_iter().map(Arc::new).collect())
    }

    pub fn all(&self) -> &[Arc<Peer>] {
        &self.0
    }

    pub fn get(&self, name: &str) -> Option<Arc<Peer>> {
        self.0.iter().find(|p| p.name == name).cloned()
    }

    /// The peer presenting `token`. Every token is compared (digest against digest, without early exit), so
    /// the time taken says nothing about which prefix matched.
    pub fn authenticate(&self, token: &str) -> Option<Arc<Peer>> {
        let presented = crypto::sha256(token.as_bytes());
        let mut found = None;
        for peer in &self.0 {
            for hash in &peer.token_hashes {
                if bool::from(subtle::ConstantTimeEq::ct_eq(&presented[..], &hash[..])) && found.is_none() {
                    found = Some(peer.clone());
                }
            }
        }
        found
    }

    /// Whether any peer can carry payments to other ASEs.
    pub fn can_send(&self) -> bool {
        self.0.iter().any(|p| p.outgoing.is_some())
    }

    /// The sending peer whose route is the longest prefix of `address` (a route matches itself and its
    /// children).
    pub fn route(&self, address: &Address) -> Option<Arc<Peer>> {
        let a = address.as_str();
        self.0
            .iter()
            .flat_map(|p| p.routes().into_iter().map(move |r| (r, p)))
            .filter(|(r, _)| a == *r || a.strip_prefix(r).is_some_and(|rest| rest.starts_with('.')))
            .max_by_key(|(r, _)| r.len())
            .map(|(_, p)| p.clone())
    }

    fn token_taken(&self, hashes: &[[u8; 32]], except: &str) -> bool {
        self.0
            .iter()
            .filter(|p| p.name != except)
            .any(|p| p.token_hashes.iter().any(|h| hashes.contains(h)))
    }

    fn replaced(&self, name: &str, with: Option<Peer>) -> Self {
        let mut peers: Vec<Arc<Peer>> = self.0.iter().filter(|p| p.name != name).cloned().collect();
        if let Some(p) = with {
            peers.push(Arc::new(p));
        }
        peers.sort_by(|a, b| (a.source != PeerSource::Config, &a.name).cmp(&(b.source != PeerSource::Config, &b.name)));
        Self(peers)
    }
}

/// Why a peer cannot be added, changed or removed.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{0}")]
    Invalid(String),
    #[error("no peer named {0:?}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Deserializes a present field (even `null`) as `Some`, so an absent one stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A change to an admin peer: absent fields stay as they are; `null` clears an optional one.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeerPatch {
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub ilp_address: Option<Option<String>>,
    /// Replaces every incoming token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming_tokens: Option<Vec<String>>,
    /// Adds a generated incoming token (returned once).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generate_incoming_token: bool,
    /// `outgoingEndpoint` and `outgoingToken`: both, or both `null` to stop sending through the peer.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub outgoing_endpoint: Option<Option<String>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub outgoing_token: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub max_packet_amount: Option<Option<u64>>,
    /// What the peer may owe us unsettled (minor units of its asset); `null` removes the limit. Config peers
    /// take it too: it is kept apart from their definition (see `ase::liquidity`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub credit_limit: Option<Option<crate::money::Value>>,
}

impl PeerPatch {
    /// Whether it changes the peer's definition (anything but the credit limit).
    pub fn changes_definition(&self) -> bool {
        self.ilp_address.is_some()
            || self.incoming_tokens.is_some()
            || self.generate_incoming_token
            || self.outgoing_endpoint.is_some()
            || self.outgoing_token.is_some()
            || self.routes.is_some()
            || self.max_packet_amount.is_some()
    }
}

/// A saved peer, with the incoming tokens generated for it (shown once, never stored).
#[derive(Debug)]
pub struct Saved {
    pub peer: Arc<Peer>,
    pub generated_tokens: Vec<String>,
}

/// A fresh incoming token: 32 random bytes in base64url.
/// Why peer `name` cannot take a link in another asset: what it still holds in an old one (`held`, from
/// `repo::held_in_another_asset`), in words; none when it holds nothing there.
fn held_in_old_link(name: &str, held: &[(String, u8, i64)]) -> Option<String> {
    let (code, scale, balance) = held.first()?;
    let amount = crate::money::format_minor((*balance).into(), *scale);
    Some(format!(
        "peer {name:?} still holds {amount} {code} (at scale {scale}) from a link in that asset: its position or \
         liquidity there is not settled to zero"
    ))
}

fn generate_token() -> Result<String, PeerError> {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    let bytes = crypto::random_bytes::<32>().map_err(|e| PeerError::Invalid(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

struct Inner {
    store: Store,
    clock: SharedClock,
    timeout: Duration,
    /// The peers of config.toml, which win over stored ones.
    config: Vec<PeerSettings>,
    current: RwLock<Arc<PeerSet>>,
    writes: tokio::sync::Mutex<()>,
    /// Packets through each peer in this process (`ase::traffic`).
    traffic: super::traffic::Traffic,
}

/// Config peers plus the stored ones, as [`Peers::load`] describes; `warn` logs the stored ones left out.
async fn read_set(store: &Store, config: &[PeerSettings], timeout: Duration, warn: bool) -> Result<PeerSet, PeerError> {
    let rows = store.call(|c| repo::peers(c)).await?;
    let mut set = PeerSet::new(
        config
            .iter()
            .map(|p| Peer::from_settings(p, PeerSource::Config, timeout))
            .collect(),
    );
    for row in &rows {
        let peer = Peer::from_row(row, timeout);
        if set.get(&peer.name).is_some() || set.token_taken(&peer.token_hashes, &peer.name) {
            if warn {
                tracing::warn!(peer = %peer.name, "a peer added through the admin API clashes with config.toml (same name or token); the config peer is used");
            }
            continue;
        }
        set = set.replaced(&row.name, Some(peer));
    }
    Ok(set)
}

/// The peer service. Cheap to clone.
#[derive(Clone)]
pub struct Peers(Arc<Inner>);

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Peers").field(&self.current()).finish()
    }
}

impl Peers {
    /// Config peers plus the stored ones. A stored peer whose name or token a config peer already uses is
    /// left out, with a warning (config.toml wins). A config peer given another asset or scale than the link
    /// it still holds money in, or whose credit limit counts in, is refused: its old position and limit would
    /// be read in the new link's units.
    pub async fn load(store: Store, clock: SharedClock, settings: &IlpSettings) -> Result<Self, PeerError> {
        let timeout = Duration::from_millis(settings.packet_expiry_ms) + Duration::from_secs(5);
        for def in &settings.peers {
            let (name, code, scale) = (def.name.clone(), def.asset_code.clone(), def.asset_scale);
            let (held, limit) = store
                .call(move |c| {
                    Ok::<_, store::Error>((
                        repo::held_in_another_asset(c, &name, &code, scale)?,
                        repo::limits_in_another_asset(c, &name, &code, scale)?,
                    ))
                })
                .await?;
            if let Some(refusal) = held_in_old_link(&def.name, &held) {
                return Err(PeerError::Conflict(format!(
                    "config.toml gives {refusal}; put its asset back, settle it, then change the asset"
                )));
            }
            if limit {
                return Err(PeerError::Conflict(format!(
                    "config.toml gives peer {:?} another asset than the one its credit limit counts in; put its \
                     asset back and clear the limit (opdesk peers update {} --no-credit-limit), then change the asset",
                    def.name, def.name
                )));
            }
        }
        let set = read_set(&store, &settings.peers, timeout, true).await?;
        Ok(Self(Arc::new(Inner {
            store,
            clock,
            timeout,
            config: settings.peers.clone(),
            current: RwLock::new(Arc::new(set)),
            writes: tokio::sync::Mutex::new(()),
            traffic: super::traffic::Traffic::default(),
        })))
    }

    /// Reads the stored peers again: another node changed them (PostgreSQL, `store::notify`).
    pub async fn reload(&self) -> Result<(), PeerError> {
        let _write = self.0.writes.lock().await;
        let set = read_set(&self.0.store, &self.0.config, self.0.timeout, false).await?;
        self.publish(set);
        Ok(())
    }

    /// Reloads the peers whenever `wake` is notified, until `stop`.
    pub async fn follow(self, wake: Arc<tokio::sync::Notify>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = wake.notified() => {}
            }
            if let Err(e) = self.reload().await {
                tracing::warn!(error = %e, "cannot reload the ILP peers another node changed");
            }
        }
    }

    /// The peers now.
    /// The packets through each peer in this process.
    pub fn traffic(&self) -> super::traffic::Traffic {
        self.0.traffic.clone()
    }

    /// `transport`, counting what it sends as packets through `peer`.
    pub fn counted(
        &self,
        peer: &str,
        transport: Arc<dyn crate::ilp::sender::Transport>,
    ) -> Arc<dyn crate::ilp::sender::Transport> {
        Arc::new(super::traffic::Counted {
            inner: transport,
            traffic: self.0.traffic.clone(),
            peer: peer.to_owned(),
            clock: self.0.clock.clone(),
        })
    }

    pub fn current(&self) -> Arc<PeerSet> {
        match self.0.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn publish(&self, set: PeerSet) {
        let set = Arc::new(set);
        match self.0.current.write() {
            Ok(mut g) => *g = set,
            Err(poisoned) => *poisoned.into_inner() = set,
        }
    }

    /// Adds a peer (the admin API's `POST /admin/peers`), with a generated incoming token if `generate`.
    pub async fn create(&self, def: PeerSettings, generate: bool) -> Result<Saved, PeerError> {
        let _write = self.0.writes.lock().await;
        let set = self.current();
        if let Some(p) = set.get(&def.name) {
            let place = match p.source {
                PeerSource::Config => "in config.toml",
                PeerSource::Admin => "already",
            };
            return Err(PeerError::Conflict(format!(
                "a peer named {:?} is {place} defined",
                def.name
            )));
        }
        // a peer added back under a name that quotes or payments still plan through, in another asset or
        // scale: they would send in the wrong unit (they fail `peer_changed` if it happens behind our back)
        let (name, code, scale, now) = (
            def.name.clone(),
            def.asset_code.clone(),
            def.asset_scale,
            self.0.clock.now(),
        );
        let (planned, held) = self
            .0
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let planned = repo::planned_in_another_asset(&tx, &name, &code, scale, now)?;
                let held = repo::held_in_another_asset(&tx, &name, &code, scale)?;
                // limits set for an old link are in its units: a peer added back in another asset starts
                // without them, as a new peer does
                if planned == 0 && held.is_empty() && repo::limits_in_another_asset(&tx, &name, &code, scale)? {
                    repo::forget_limits(&tx, &name)?;
                }
                tx.commit()?;
                Ok::<_, store::Error>((planned, held))
            })
            .await?;
        if let Some(refusal) = held_in_old_link(&def.name, &held) {
            return Err(PeerError::Conflict(format!(
                "{refusal}; add it back in that asset and settle or withdraw it first"
            )));
        }
        if planned > 0 {
            return Err(PeerError::Conflict(format!(
                "{planned} quote(s) or payment(s) still plan to pay through peer {:?} in another asset or scale than \
                 {}/{}; add it back in that one, or wait until they expire or finish",
                def.name, def.asset_code, def.asset_scale
            )));
        }
        self.store_and_publish(&set, def, Vec::new(), None, generate).await
    }

    /// Changes an admin peer (`PATCH /admin/peers/{name}`).
    pub async fn update(&self, name: &str, patch: PeerPatch) -> Result<Saved, PeerError> {
        let _write = self.0.writes.lock().await;
        let set = self.current();
        let existing = self.admin_peer(&set, name)?;
        let stored = {
            let n = name.to_owned();
            self.0.store.call(move |c| repo::peer(c, &n)).await?
        }
        .ok_or_else(|| PeerError::NotFound(name.to_owned()))?;
        let mut def = PeerSettings {
            name: existing.name.clone(),
            ilp_address: stored.ilp_address.clone(),
            incoming_tokens: Vec::new(),
            outgoing_endpoint: stored.outgoing_endpoint.clone(),
            outgoing_token: stored.outgoing_token.clone(),
            routes: stored.routes.clone(),
            max_packet_amount: existing.max_packet_amount,
            asset_code: stored.asset_code.clone(),
            asset_scale: stored.asset_scale,
            ..Default::default()
        };
        let mut kept = stored.incoming_token_hashes;
        if let Some(a) = patch.ilp_address {
            def.ilp_address = a;
        }
        if let Some(t) = patch.incoming_tokens {
            def.incoming_tokens = t;
            kept.clear();
        }
        match (patch.outgoing_endpoint, patch.outgoing_token) {
            (None, None) => {}
            (Some(e), Some(t)) => (def.outgoing_endpoint, def.outgoing_token) = (e, t),
            (Some(Some(e)), None) => def.outgoing_endpoint = Some(e),
            (None, Some(Some(t))) => def.outgoing_token = Some(t),
            _ => {
                return Err(PeerError::Invalid(
                    "clear outgoingEndpoint and outgoingToken together (both null)".into(),
                ));
            }
        }
        if let Some(r) = patch.routes {
            def.routes = r;
        }
        if let Some(m) = patch.max_packet_amount {
            def.max_packet_amount = m;
        }
        self.store_and_publish(&set, def, kept, Some(stored.created_at), patch.generate_incoming_token)
            .await
    }

    /// Removes an admin peer (`DELETE /admin/peers/{name}`). Refused while payments are sending through it.
    /// Its ledger accounts stay, with their history; its limits go with it when those accounts are at zero.
    pub async fn remove(&self, name: &str) -> Result<(), PeerError> {
        let _write = self.0.writes.lock().await;
        let set = self.current();
        self.admin_peer(&set, name)?;
        let n = name.to_owned();
        let in_flight = self
            .0
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let in_flight = repo::payments_in_flight(&tx, &n)?;
                if in_flight == 0 {
                    repo::delete(&tx, &n)?;
                    // a peer that owes nothing and is owed nothing leaves no limits behind (a peer added
                    // back under its name starts afresh); one that does keeps them, with its accounts
                    if repo::held_in_another_asset(&tx, &n, "", 0)?.is_empty() {
                        repo::forget_limits(&tx, &n)?;
                    }
                    tx.commit()?;
                }
                Ok::<_, store::Error>(in_flight)
            })
            .await?;
        if in_flight > 0 {
            return Err(PeerError::Conflict(format!(
                "{in_flight} outgoing payment(s) are sending through peer {name:?}; cancel them or let them finish first"
            )));
        }
        self.publish(set.replaced(name, None));
        tracing::info!(peer = name, "ILP peer removed");
        Ok(())
    }

    fn admin_peer(&self, set: &PeerSet, name: &str) -> Result<Arc<Peer>, PeerError> {
        match set.get(name) {
            None => Err(PeerError::NotFound(name.to_owned())),
            Some(p) if p.source == PeerSource::Config => Err(PeerError::Conflict(format!(
                "peer {name:?} is defined in config.toml; change it there and restart"
            ))),
            Some(p) => Ok(p),
        }
    }

    /// Validates `def` (with `kept` token digests it already had, and a generated token if `generate`),
    /// stores it and publishes the new set.
    async fn store_and_publish(
        &self,
        set: &PeerSet,
        mut def: PeerSettings,
        kept: Vec<String>,
        created_at: Option<time::OffsetDateTime>,
        generate: bool,
    ) -> Result<Saved, PeerError> {
        let generated_tokens = if generate { vec![generate_token()?] } else { Vec::new() };
        def.incoming_tokens.extend(generated_tokens.iter().cloned());
        def.validate(kept.len()).map_err(|(_, m)| PeerError::Invalid(m))?;
        let max_packet_amount = def
            .max_packet_amount
            .map(|m| i64::try_from(m).map_err(|_| PeerError::Invalid("maxPacketAmount is too large".into())))
            .transpose()?;
        let mut hashes: Vec<String> = kept;
        for t in &def.incoming_tokens {
            let h = digest_text(&crypto::sha256(t.as_bytes()));
            if hashes.contains(&h) {
                return Err(PeerError::Invalid("an incoming token is given twice".into()));
            }
            hashes.push(h);
        }
        let digests: Vec<[u8; 32]> = hashes.iter().filter_map(|h| digest_from_text(h)).collect();
        if set.token_taken(&digests, &def.name) {
            return Err(PeerError::Conflict(
                "another peer already uses that incoming token".into(),
            ));
        }
        let now = self.0.clock.now();
        let row = PeerRow {
            name: def.name.clone(),
            ilp_address: def.ilp_address.clone(),
            asset_code: def.asset_code.clone(),
            asset_scale: def.asset_scale,
            incoming_token_hashes: hashes,
            outgoing_endpoint: def.outgoing_endpoint.clone(),
            outgoing_token: def.outgoing_token.clone(),
            routes: def.routes.clone(),
            max_packet_amount,
            created_at: created_at.unwrap_or(now),
            updated_at: now,
        };
        let stored = row.clone();
        self.0.store.call(move |c| repo::upsert(c, &stored)).await?;
        let peer = Peer::from_row(&row, self.0.timeout);
        let name = peer.name.clone();
        let next = set.replaced(&name, Some(peer));
        let peer = next.get(&name).ok_or_else(|| PeerError::NotFound(name.clone()))?;
        self.publish(next);
        tracing::info!(peer = %name, "ILP peer saved");
        Ok(Saved { peer, generated_tokens })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn def(name: &str, tokens: &[&str], routes: &[&str]) -> PeerSettings {
        PeerSettings {
            name: name.into(),
            incoming_tokens: tokens.iter().map(|t| (*t).to_owned()).collect(),
            outgoing_endpoint: (!routes.is_empty()).then(|| format!("http://127.0.0.1:1/{name}")),
            outgoing_token: (!routes.is_empty()).then(|| "t".to_owned()),
            routes: routes.iter().map(|r| (*r).to_owned()).collect(),
            asset_code: "USD".into(),
            asset_scale: 2,
            ..Default::default()
        }
    }

    fn set(defs: &[PeerSettings]) -> PeerSet {
        PeerSet::new(
            defs.iter()
                .map(|d| Peer::from_settings(d, PeerSource::Config, Duration::from_secs(1)))
                .collect(),
        )
    }

    #[test]
    fn peers_authenticate_by_any_of_their_tokens() {
        let s = set(&[def("a", &["alpha-1", "alpha-2"], &[]), def("b", &["beta"], &[])]);
        assert_eq!(s.authenticate("alpha-2").unwrap().name, "a");
        assert_eq!(s.authenticate("beta").unwrap().name, "b");
        for wrong in ["", "alpha", "alpha-3", "Beta", "beta "] {
            assert!(s.authenticate(wrong).is_none(), "{wrong:?}");
        }
        assert!(!format!("{s:?}").contains("alpha-1"), "tokens stay out of logs");
    }

    #[test]
    fn longest_route_wins_and_receive_only_peers_are_no_routes() {
        let s = set(&[
            def("wide", &[], &["test"]),
            def("narrow", &[], &["test.bank"]),
            def("in-only", &["x"], &[]),
        ]);
        let at = |a: &str| s.route(&Address::new(a).unwrap()).map(|p| p.name.clone());
        assert_eq!(at("test.bank.alice").as_deref(), Some("narrow"));
        assert_eq!(at("test.bank").as_deref(), Some("narrow"));
        assert_eq!(at("test.banker").as_deref(), Some("wide"));
        assert_eq!(at("g.elsewhere"), None);
        assert!(s.can_send());
        assert!(!set(&[def("in-only", &["x"], &[])]).can_send());
    }

    #[test]
    fn a_sending_peer_without_routes_is_reached_at_its_own_address() {
        let mut d = def("own", &[], &["test.x"]);
        d.routes.clear();
        d.ilp_address = Some("test.own".into());
        let s = set(&[d]);
        let at = |a: &str| s.route(&Address::new(a).unwrap()).map(|p| p.name.clone());
        assert_eq!(at("test.own.bob").as_deref(), Some("own"));
        assert_eq!(at("test.x"), None);
    }

    #[test]
    fn patch_tells_absent_from_null() {
        let p: PeerPatch = serde_json::from_str(r#"{"ilpAddress":null,"routes":["test.a"]}"#).unwrap();
        assert_eq!(p.ilp_address, Some(None));
        assert_eq!(p.max_packet_amount, None);
        assert_eq!(p.routes.unwrap(), ["test.a"]);
        assert!(serde_json::from_str::<PeerPatch>(r#"{"assetCode":"EUR"}"#).is_err());
    }
}
