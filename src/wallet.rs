//! Wallet addresses: creation (with a ledger account), the public wallet address document, and the keys
//! published in its JWKS. The service is the only writer of `wallet_addresses` and `wallet_keys`; the routes
//! (`crate::server::routes::wallet`) serve them per the wallet address server spec. Both the authorization
//! server (`gnap`) and the resource server (`ase`) stand on it, so it sits below both.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};

use crate::{
    clock::SharedClock,
    events::{DomainEvent, EventBus},
    httpsig::{
        self,
        jwk::{self, Jwk, Jwks},
    },
    ids,
    ledger::{self, AccountKind, LedgerError},
    money::{Asset, MoneyError},
    names::{BadName, validate_name},
    store::{
        self, Store,
        notify::{self, Forget},
        outbox, wallets as repo,
    },
};

#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    #[error("unknown wallet address {0:?}")]
    NotFound(String),
    #[error("wallet address {0:?} already exists")]
    Exists(String),
    #[error(transparent)]
    BadName(#[from] BadName),
    #[error("public name must be at most 256 printable characters")]
    BadPublicName,
    #[error("wallet {wallet:?} already has a key with kid {kid:?}")]
    KeyExists { wallet: String, kid: String },
    #[error("wallet {wallet:?} has no key with kid {kid:?}")]
    KeyNotFound { wallet: String, kid: String },
    #[error(transparent)]
    Key(#[from] httpsig::Error),
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Passphrase(#[from] crate::passphrase::PassphraseError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl From<crate::store::db::Error> for WalletError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::Store(e.into())
    }
}

/// A wallet address as operators see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wallet {
    pub id: crate::ids::WalletId,
    pub name: String,
    /// The public URL that identifies this wallet address.
    pub url: String,
    pub public_name: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    pub account_id: String,
    pub demo: bool,
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
}

impl Wallet {
    pub fn asset(&self) -> Asset {
        Asset {
            code: self.asset_code.clone(),
            scale: self.asset_scale,
        }
    }
}

/// A request to create a wallet address.
#[derive(Debug, Clone)]
pub struct NewWallet {
    pub name: String,
    pub asset: Asset,
    pub public_name: Option<String>,
    pub demo: bool,
}

/// The Open Payments wallet address document.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletAddressDoc {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_name: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    pub auth_server: String,
    pub resource_server: String,
}

/// The wallet address service.
#[derive(Clone)]
pub struct Wallets {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    /// Public base URL without a trailing slash.
    public_url: Arc<str>,
    /// Wallets and their keys as last read, while the store's [`Coherence`](store::notify::Coherence) trusts
    /// caches. This service is their only writer: it forgets what it changes, and on PostgreSQL tells every
    /// other node to forget it too (in the change's transaction). Reads on the request path (every signed
    /// request) skip the store.
    cache: Arc<RwLock<Cache>>,
    /// When each wallet's address document was first fetched since this server started (the Classroom
    /// pane's "wallet read"): one entry per existing wallet at most. Not money, not kept across restarts.
    first_reads: Arc<RwLock<HashMap<String, (time::OffsetDateTime, std::sync::atomic::AtomicU32)>>>,
}

#[derive(Debug, Default)]
struct Cache {
    wallets: HashMap<String, Wallet>,
    /// Shared, so that a reader can tell an unchanged key set by its pointer ([`Wallets::keys_shared`]).
    keys: HashMap<String, Arc<Jwks>>,
    /// Bumped by every change: a read that began before a change never fills the cache after it.
    generation: u64,
}

impl Cache {
    /// Forgets wallet `name` (every wallet: `None`); a read that began before does not fill the cache after.
    fn forget(lock: &RwLock<Self>, name: Option<&str>) {
        if let Ok(mut c) = lock.write() {
            c.generation += 1;
            match name {
                Some(n) => {
                    c.wallets.remove(n);
                    c.keys.remove(n);
                }
                None => {
                    c.wallets.clear();
                    c.keys.clear();
                }
            }
        }
    }

    /// Remembers what a read that began at `generation` found, unless a change came in between.
    fn fill<T>(
        map: impl FnOnce(&mut Self) -> &mut HashMap<String, T>,
        lock: &RwLock<Self>,
        generation: u64,
        name: &str,
        v: T,
    ) {
        if let Ok(mut c) = lock.write()
            && c.generation == generation
        {
            let m = map(&mut c);
            if m.len() > 10_000 {
                m.clear();
            }
            m.insert(name.to_owned(), v);
        }
    }
}

/// A public name is at most 256 printable characters.
fn check_public_name(p: Option<&str>) -> Result<(), WalletError> {
    match p {
        Some(p) if p.chars().count() > 256 || p.chars().any(char::is_control) => Err(WalletError::BadPublicName),
        _ => Ok(()),
    }
}

impl Wallets {
    pub fn new(store: Store, bus: EventBus, clock: SharedClock, public_url: &str) -> Self {
        let cache: Arc<RwLock<Cache>> = Arc::default();
        let told = cache.clone();
        store.coherence().on_forget(move |what| match what {
            Forget::Wallet(name) => Cache::forget(&told, Some(name)),
            Forget::All => Cache::forget(&told, None),
            Forget::Grant(_) => {}
        });
        Self {
            store,
            bus,
            clock,
            public_url: crate::names::base_url(public_url).into(),
            cache,
            first_reads: Arc::default(),
        }
    }

    /// Someone fetched `w`'s wallet address document (`GET /{name}`).
    pub fn note_read(&self, w: &Wallet) {
        use std::sync::atomic::Ordering;
        // a shared look first: every GET of a wallet already read (nearly all of them) takes no write lock
        if let Ok(reads) = self.first_reads.read()
            && let Some((_, count)) = reads.get(&w.name)
        {
            count.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Ok(mut reads) = self.first_reads.write() {
            let (_, count) = reads
                .entry(w.name.clone())
                .or_insert_with(|| (self.clock.now(), std::sync::atomic::AtomicU32::new(0)));
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Every wallet whose document was fetched since this server started: when it first was, and how often.
    pub fn first_reads(&self) -> Vec<(String, time::OffsetDateTime, u32)> {
        use std::sync::atomic::Ordering;
        self.first_reads
            .read()
            .map(|r| {
                r.iter()
                    .map(|(n, (t, c))| (n.clone(), *t, c.load(Ordering::Relaxed)))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn forget(&self, name: &str) {
        Cache::forget(&self.cache, Some(name));
    }

    /// Whether reads may be kept and served from memory: always in one process (SQLite); on PostgreSQL while
    /// this node hears the others' changes, so that a key removed on one node is refused on every node as
    /// soon as the removal commits.
    fn cached(&self) -> bool {
        self.store.coherence().trusted()
    }

    fn generation(&self) -> u64 {
        self.cache.read().map(|c| c.generation).unwrap_or(u64::MAX)
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    fn to_wallet(&self, r: repo::WalletRow) -> Wallet {
        Wallet {
            url: format!("{}/{}", self.public_url, r.name),
            id: r.id,
            name: r.name,
            public_name: r.public_name,
            asset_code: r.asset_code,
            asset_scale: r.asset_scale,
            account_id: r.account_id,
            demo: r.demo,
            created_at: r.created_at,
        }
    }

    /// The Open Payments document for a wallet.
    pub fn document(&self, w: &Wallet) -> WalletAddressDoc {
        WalletAddressDoc {
            id: w.url.clone(),
            public_name: w.public_name.clone(),
            asset_code: w.asset_code.clone(),
            asset_scale: w.asset_scale,
            auth_server: format!("{}/auth", self.public_url),
            resource_server: self.public_url.to_string(),
        }
    }

    /// Creates a wallet address and its ledger account in one transaction.
    pub async fn create(&self, new: NewWallet) -> Result<Wallet, WalletError> {
        validate_name(&new.name)?;
        check_public_name(new.public_name.as_deref())?;
        let now = self.clock.now();
        let row = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                if repo::by_name(&tx, &new.name)?.is_some() {
                    return Err(WalletError::Exists(new.name.clone()));
                }
                let account_id = ledger::ops::create_account(&tx, AccountKind::Wallet, &new.asset, now)?;
                ledger::ops::settlement_account(&tx, &new.asset, now)?;
                let row = repo::WalletRow {
                    id: ids::WalletId::generate(),
                    name: new.name.clone(),
                    public_name: new.public_name.clone(),
                    account_id,
                    asset_code: new.asset.code.clone(),
                    asset_scale: new.asset.scale,
                    demo: new.demo,
                    created_at: now,
                };
                repo::insert(&tx, &row)?;
                let event = DomainEvent::WalletCreated {
                    id: row.id.to_string(),
                    name: row.name.clone(),
                };
                let recorded = outbox::append(&tx, row.created_at, event)?;
                tx.commit()?;
                Ok((row, recorded))
            })
            .await?;
        let (row, recorded) = row;
        let w = self.to_wallet(row);
        self.forget(&w.name);
        self.bus.publish_recorded([recorded]);
        Ok(w)
    }

    /// Sets (or with `None` clears) the `publicName` wallet `name` shows.
    pub async fn set_public_name(&self, name: &str, public_name: Option<String>) -> Result<Wallet, WalletError> {
        check_public_name(public_name.as_deref())?;
        let n = name.to_owned();
        let row = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                if !repo::set_public_name(&tx, &n, public_name.as_deref())? {
                    return Err(WalletError::NotFound(n.clone()));
                }
                notify::tell_forget(&tx, &Forget::Wallet(n.clone()))?;
                let row = repo::by_name(&tx, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                tx.commit()?;
                Ok(row)
            })
            .await?;
        self.forget(name);
        Ok(self.to_wallet(row))
    }

    /// Sets (`Some`) or removes (`None`) the alert threshold on wallet `name`'s balance (less its
    /// reservations), in minor units of its asset; one set above the balance now fires its
    /// `walletBalanceLow` at once (see [`crate::thresholds`]).
    pub async fn set_balance_threshold(
        &self,
        name: &str,
        threshold: Option<crate::money::Value>,
    ) -> Result<Option<crate::thresholds::ThresholdView>, WalletError> {
        let (n, now) = (name.to_owned(), self.clock.now());
        let (view, recorded) = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let (_, code, scale) =
                    store::thresholds::wallet_available(&tx, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                let asset = crate::money::Asset { code, scale };
                let (view, recorded) = crate::thresholds::set(
                    &tx,
                    crate::thresholds::Measure::WalletBalance,
                    &n,
                    &asset,
                    threshold.map(crate::money::Value::as_i64),
                    now,
                )?;
                tx.commit()?;
                Ok::<_, WalletError>((view, recorded))
            })
            .await?;
        self.bus.publish_recorded(recorded);
        Ok(view)
    }

    /// Sets (`Some`) or removes (`None`) the owner passphrase of wallet `name`: its owner then decides its
    /// grants on the interaction page (`[consent] decide`). Only the Argon2id hash is kept. True when the
    /// wallet had or now has one.
    pub async fn set_owner_passphrase(
        &self,
        name: &str,
        passphrase: Option<(String, crate::passphrase::Origin)>,
    ) -> Result<bool, WalletError> {
        let hash = match passphrase {
            Some((p, origin)) => {
                crate::passphrase::check_shape(&p)?;
                let h = tokio::task::spawn_blocking(move || crate::passphrase::hash(&p, origin))
                    .await
                    .map_err(|e| crate::passphrase::PassphraseError::Hash(e.to_string()))??;
                Some(h)
            }
            None => None,
        };
        let (n, now) = (name.to_owned(), crate::clock::to_millis(self.clock.now()));
        self.store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let row = repo::by_name(&tx, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                let changed = store::consent::set_passphrase(&tx, &row.id, hash.as_deref(), now)?;
                tx.commit()?;
                Ok::<_, WalletError>(changed)
            })
            .await
    }

    /// Whether wallet `name`'s owner has a passphrase.
    pub async fn has_owner_passphrase(&self, name: &str) -> Result<bool, WalletError> {
        let n = name.to_owned();
        self.store
            .call(move |conn| {
                let row = repo::by_name(conn, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                Ok::<_, WalletError>(store::consent::passphrase(conn, &row.id)?.is_some())
            })
            .await
    }

    pub async fn get(&self, name: &str) -> Result<Wallet, WalletError> {
        if self.cached()
            && let Some(w) = self.cache.read().ok().and_then(|c| c.wallets.get(name).cloned())
        {
            return Ok(w);
        }
        let generation = self.generation();
        let n = name.to_owned();
        let row = self
            .store
            .call(move |c| Ok::<_, WalletError>(repo::by_name(c, &n)?))
            .await?;
        let w = row
            .map(|r| self.to_wallet(r))
            .ok_or_else(|| WalletError::NotFound(name.to_owned()))?;
        if self.cached() {
            Cache::fill(|c| &mut c.wallets, &self.cache, generation, name, w.clone());
        }
        Ok(w)
    }

    /// The wallet a URL names, if it is one of ours (`{public}/{name}`, trailing slash tolerated).
    pub async fn by_url(&self, url: &str) -> Result<Option<Wallet>, WalletError> {
        let Some(name) = crate::names::wallet_url(url)
            .strip_prefix(&*self.public_url)
            .and_then(|r| r.strip_prefix('/'))
            .filter(|n| !n.is_empty() && !n.contains('/'))
        else {
            return Ok(None);
        };
        match self.get(name).await {
            Ok(w) => Ok(Some(w)),
            Err(WalletError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn list(&self) -> Result<Vec<Wallet>, WalletError> {
        let rows = self.store.call(|c| Ok::<_, WalletError>(repo::list(c)?)).await?;
        Ok(rows.into_iter().map(|r| self.to_wallet(r)).collect())
    }

    /// The wallet's published keys.
    pub async fn keys(&self, name: &str) -> Result<Jwks, WalletError> {
        Ok(self.keys_shared(name).await?.as_ref().clone())
    }

    /// The wallet's published keys as cached: the same `Arc` until they change (every signed request asks).
    pub async fn keys_shared(&self, name: &str) -> Result<Arc<Jwks>, WalletError> {
        if self.cached()
            && let Some(k) = self.cache.read().ok().and_then(|c| c.keys.get(name).cloned())
        {
            return Ok(k);
        }
        let generation = self.generation();
        let n = name.to_owned();
        let keys: Jwks = self
            .store
            .call(move |c| {
                let w = repo::by_name(c, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                let keys = repo::keys(c, &w.id)?;
                Ok::<_, WalletError>(Jwks {
                    keys: keys
                        .into_iter()
                        .map(|k| Jwk {
                            kid: k.kid,
                            alg: "EdDSA".into(),
                            kty: "OKP".into(),
                            crv: "Ed25519".into(),
                            x: k.x,
                            use_: Some("sig".into()),
                        })
                        .collect(),
                })
            })
            .await?;
        let keys = Arc::new(keys);
        if self.cached() {
            Cache::fill(|c| &mut c.keys, &self.cache, generation, name, keys.clone());
        }
        Ok(keys)
    }

    /// Registers a public key (validated) for the wallet.
    pub async fn add_key(&self, name: &str, jwk: Jwk) -> Result<Jwk, WalletError> {
        let key = jwk.verifying_key()?;
        let public = Jwk::from_verifying_key(&jwk.kid, &key);
        let now = self.clock.now();
        let n = name.to_owned();
        let stored = public.clone();
        let recorded = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let w = repo::by_name(&tx, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                if repo::key_exists(&tx, &w.id, &stored.kid)? {
                    return Err(WalletError::KeyExists {
                        wallet: n.clone(),
                        kid: stored.kid.clone(),
                    });
                }
                let event = DomainEvent::KeyAdded {
                    wallet: n.clone(),
                    kid: stored.kid.clone(),
                };
                let recorded = outbox::append(&tx, now, event)?;
                notify::tell_forget(&tx, &Forget::Wallet(n.clone()))?;
                repo::insert_key(
                    &tx,
                    &repo::KeyRow {
                        id: ids::new_id(),
                        wallet_id: w.id,
                        kid: stored.kid.clone(),
                        x: stored.x.clone(),
                        created_at: now,
                    },
                )?;
                tx.commit()?;
                Ok(recorded)
            })
            .await?;
        self.forget(name);
        self.bus.publish_recorded([recorded]);
        Ok(public)
    }

    /// Generates a key pair, registers the public half (kid = RFC 7638 thumbprint) and returns both.
    pub async fn generate_key(&self, name: &str) -> Result<(Jwk, SigningKey), WalletError> {
        let sk = jwk::generate()?;
        let kid = jwk::thumbprint(&sk.verifying_key());
        let public = self
            .add_key(name, Jwk::from_verifying_key(&kid, &sk.verifying_key()))
            .await?;
        Ok((public, sk))
    }

    pub async fn remove_key(&self, name: &str, kid: &str) -> Result<(), WalletError> {
        let (n, k) = (name.to_owned(), kid.to_owned());
        let now = self.clock.now();
        let recorded = self
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let w = repo::by_name(&tx, &n)?.ok_or_else(|| WalletError::NotFound(n.clone()))?;
                if !repo::delete_key(&tx, &w.id, &k)? {
                    return Err(WalletError::KeyNotFound {
                        wallet: n.clone(),
                        kid: k.clone(),
                    });
                }
                notify::tell_forget(&tx, &Forget::Wallet(n.clone()))?;
                let recorded = outbox::append(
                    &tx,
                    now,
                    DomainEvent::KeyRemoved {
                        wallet: n.clone(),
                        kid: k.clone(),
                    },
                )?;
                tx.commit()?;
                Ok(recorded)
            })
            .await?;
        self.forget(name);
        self.bus.publish_recorded([recorded]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_began_before_a_change_does_not_fill_the_cache() {
        let lock = RwLock::new(Cache::default());
        let began = lock.read().unwrap().generation;
        // a change (a key revoked) lands while the read is at the store
        lock.write().unwrap().generation += 1;
        Cache::fill(|c| &mut c.keys, &lock, began, "alice", Arc::new(Jwks { keys: vec![] }));
        assert!(lock.read().unwrap().keys.is_empty(), "stale keys stayed out");
        let now = lock.read().unwrap().generation;
        Cache::fill(|c| &mut c.keys, &lock, now, "alice", Arc::new(Jwks { keys: vec![] }));
        assert_eq!(lock.read().unwrap().keys.len(), 1);
    }

    #[test]
    fn names() {
        for ok in ["alice", "demo-client", "a.b_c", "0x"] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Alice",
            "-a",
            ".x",
            "a/b",
            "auth",
            "incoming-payments",
            "admin",
            "a b",
            &"x".repeat(65),
        ] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
