//! Client key discovery for the GNAP authorization server: turns a client's
//! wallet address into its Ed25519 verifying keys, by fetching
//! `{walletAddress}/jwks.json` (SECURITY.md §2.7) or, for wallets this ASE hosts,
//! by asking the store through a closure without any HTTP. Owns wallet URL
//! validation and the key cache with its refetch throttle and its short memory of
//! failed fetches; the requests themselves go through [`crate::egress`] (address
//! policy, timeouts, body cap). It verifies no signatures and never sends key
//! material or fetch errors to clients: `KeyError` text is for logs only.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ed25519_dalek::VerifyingKey;
use serde::Deserialize;
use tokio::sync::OnceCell;
use tokio::time::Instant;
use url::Url;

use crate::egress::{self, Egress, EgressError};

// In opdesk this module is `crate::httpsig::keys`: import these as `super::jwk::{Jwk, Jwks}`.
use super::jwk::{Jwk, Jwks};

/// Longest wallet address URL accepted, before and after normalisation.
pub const MAX_URL_LEN: usize = 2048;

/// How client key sets are fetched and cached. Build it with [`FetchPolicy::for_listen_addr`] and adjust the
/// fields if needed; where requests may go is the [`egress::Policy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Addresses, schemes, timeouts and the body cap.
    pub egress: egress::Policy,
    /// Most entries a JWKS may list (usable or not).
    pub max_keys: usize,
    /// How long a fetched key set is used before it is fetched again.
    pub cache_ttl: Duration,
    /// How long a failed fetch is remembered: requests naming the wallet meanwhile fail at once, without a
    /// new outbound request.
    pub failure_ttl: Duration,
    /// An unknown `kid` triggers a refetch only if the wallet's keys were last
    /// fetched (or refetched) at least this long ago.
    pub refetch_interval: Duration,
    /// Most wallets kept in the cache; the oldest entry is evicted beyond it.
    pub max_cached_wallets: usize,
}

impl FetchPolicy {
    /// The default rule: loopback (and private ranges) may be fetched only while
    /// opdesk itself listens on loopback, that is in a local development setup.
    /// Plain `http` is allowed for loopback hosts only.
    pub fn for_listen_addr(listen_is_loopback: bool) -> Self {
        Self {
            egress: egress::Policy::for_client_urls(listen_is_loopback),
            max_keys: 16,
            cache_ttl: Duration::from_secs(300),
            failure_ttl: Duration::from_secs(10),
            refetch_interval: Duration::from_secs(30),
            max_cached_wallets: 1024,
        }
    }
}

/// Why a client's keys could not be had. The text is for logs; callers answer
/// the client with a generic 400/401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The wallet address is not an acceptable absolute URL (the reason says why).
    #[error("invalid wallet address URL: {0}")]
    InvalidUrl(String),
    /// The fetch policy refuses the host, address or scheme.
    #[error("refused by the key fetch policy: {0}")]
    Forbidden(String),
    /// Connecting or reading the key set took too long.
    #[error("key set fetch timed out")]
    Timeout,
    /// The key set response is larger than the byte cap.
    #[error("key set response exceeds the size limit")]
    TooLarge,
    /// The response is not `application/json`, or not JSON at all.
    #[error("key set response is not JSON")]
    NotJson,
    /// The key set answered with a status other than 200 (redirects included).
    #[error("key set fetch answered HTTP {0}")]
    BadStatus(u16),
    /// The JSON is not an acceptable JWKS, or the requested key is not a valid Ed25519 JWK.
    #[error("malformed key set: {0}")]
    Malformed(String),
    /// A wallet address under this ASE's public URL that does not exist.
    #[error("unknown wallet address")]
    UnknownWallet,
    /// The wallet's key set has no usable key with this `kid`.
    #[error("no key with kid {0:?}")]
    UnknownKey(String),
    /// The host could not be resolved or connected to, or the exchange failed.
    #[error("wallet address unreachable: {0}")]
    Unreachable(String),
    /// The local key lookup for a wallet hosted here failed.
    #[error("local key lookup failed: {0}")]
    Local(String),
}

/// A boxed, sendable future (what [`LocalKeys`] returns).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Key sets of wallets hosted by this ASE, by wallet name (the one path segment
/// after the public URL, as it appears in the normalised URL, percent-encoding
/// kept). `Ok(None)` means no such wallet.
/// The same `Arc` comes back for as long as the wallet's keys are unchanged, so the resolver keeps the
/// decoded keys of that set and decodes again only when the pointer changes.
pub type LocalKeys = Arc<dyn Fn(String) -> BoxFuture<Result<Option<Arc<Jwks>>, String>> + Send + Sync>;

use crate::egress::{HostResolver, SystemResolver};

/// Parses and normalises a wallet address URL, refusing anything that is not a
/// plain absolute `http(s)` URL: userinfo, fragment, query, control characters
/// or spaces, a trailing slash after a path, or more than [`MAX_URL_LEN`] bytes.
/// The normalised form (lowercase scheme and host, default port dropped, `..`
/// resolved, IDNs punycoded, IP literals canonical) is the wallet's identity.
fn parse_wallet_url(input: &str) -> Result<Url, KeyError> {
    let invalid = |why: &str| Err(KeyError::InvalidUrl(why.to_owned()));
    if input.len() > MAX_URL_LEN {
        return invalid("longer than 2048 bytes");
    }
    // `url` silently strips tabs and newlines; refuse them (and spaces) instead.
    if input.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return invalid("contains control characters or spaces");
    }
    let url = Url::parse(input).map_err(|e| KeyError::InvalidUrl(format!("not absolute: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return invalid("scheme must be https or http");
    }
    if url.host().is_none() {
        return invalid("no host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return invalid("userinfo is not allowed");
    }
    if url.fragment().is_some() {
        return invalid("fragment is not allowed");
    }
    if url.query().is_some() {
        return invalid("query is not allowed");
    }
    if url.path() != "/" && url.path().ends_with('/') {
        return invalid("trailing slash is not allowed");
    }
    if url.as_str().len() > MAX_URL_LEN {
        return invalid("longer than 2048 bytes once normalised");
    }
    Ok(url)
}

/// `{wallet}/jwks.json`; a wallet address without a path keeps its document
/// under `/.well-known/pay` (CONTRACT.md §1, §3).
fn jwks_url(wallet: &Url) -> Url {
    let mut url = wallet.clone();
    if wallet.path() == "/" {
        url.set_path("/.well-known/pay/jwks.json");
    } else {
        url.set_path(&format!("{}/jwks.json", wallet.path()));
    }
    url
}

/// This ASE's public base URL, for recognising wallets it hosts.
#[derive(Debug, Clone)]
struct PublicBase {
    origin: url::Origin,
    /// The path without its trailing slash (empty at the root).
    path: String,
}

impl PublicBase {
    fn parse(public_url: &str) -> Result<Self, KeyError> {
        let url = parse_wallet_url(&crate::names::base_url(public_url))
            .map_err(|e| KeyError::InvalidUrl(format!("public URL: {e}")))?;
        Ok(Self {
            origin: url.origin(),
            path: url.path().trim_end_matches('/').to_owned(),
        })
    }

    /// The wallet name if `url` is `{public_url}/{name}` with exactly one segment.
    fn local_name(&self, url: &Url) -> Option<String> {
        if url.origin() != self.origin {
            return None;
        }
        let name = url.path().strip_prefix(&self.path)?.strip_prefix('/')?;
        (!name.is_empty() && !name.contains('/')).then(|| name.to_owned())
    }
}

/// A local wallet's key set as handed out, and its keys decoded.
type DecodedSet = (Arc<Jwks>, Arc<KeySet>);

/// A wallet's keys, checked once when fetched.
#[derive(Debug, Default)]
struct KeySet {
    /// The usable keys, as served.
    jwks: Jwks,
    usable: HashMap<String, VerifyingKey>,
    /// Keys present under a `kid` but refused, with the reason (for logs).
    rejected: HashMap<String, String>,
}

impl KeySet {
    /// Keeps the valid Ed25519 keys; refuses the set if it is too long or has a
    /// duplicate `kid`. Entries without a string `kid` cannot be referred to and are dropped.
    fn build(
        entries: impl ExactSizeIterator<Item = (Option<String>, Result<Jwk, String>)>,
        max_keys: usize,
    ) -> Result<Self, KeyError> {
        if entries.len() > max_keys {
            return Err(KeyError::Malformed(format!(
                "{} keys, at most {max_keys} allowed",
                entries.len()
            )));
        }
        let mut seen = HashSet::new();
        let mut set = Self::default();
        for (kid, jwk) in entries {
            let Some(kid) = kid else { continue };
            if !seen.insert(kid.clone()) {
                return Err(KeyError::Malformed(format!("duplicate kid {kid:?}")));
            }
            match jwk.and_then(|j| j.verifying_key().map(|k| (j, k)).map_err(|e| e.to_string())) {
                Ok((jwk, key)) => {
                    set.usable.insert(kid, key);
                    set.jwks.keys.push(jwk);
                }
                Err(why) => {
                    set.rejected.insert(kid, why);
                }
            }
        }
        Ok(set)
    }

    fn from_json(body: &[u8], max_keys: usize) -> Result<Self, KeyError> {
        #[derive(Deserialize)]
        struct Raw {
            keys: Vec<serde_json::Value>,
        }
        let raw: Raw = serde_json::from_slice(body).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => KeyError::Malformed(format!("not a JWKS: {e}")),
            _ => KeyError::NotJson,
        })?;
        let entries = raw.keys.into_iter().map(|v| {
            let kid = v.get("kid").and_then(|k| k.as_str()).map(str::to_owned);
            let jwk = serde_json::from_value::<Jwk>(v).map_err(|e| format!("not a JWK: {e}"));
            (kid, jwk)
        });
        Self::build(entries, max_keys)
    }

    fn from_jwks(jwks: Jwks, max_keys: usize) -> Result<Self, KeyError> {
        let entries = jwks.keys.into_iter().map(|j| (Some(j.kid.clone()), Ok(j)));
        Self::build(entries, max_keys)
    }

    /// `Ok(None)` when no key has this `kid`.
    fn get(&self, kid: &str) -> Result<Option<VerifyingKey>, KeyError> {
        if let Some(why) = self.rejected.get(kid) {
            return Err(KeyError::Malformed(format!("key {kid:?}: {why}")));
        }
        Ok(self.usable.get(kid).copied())
    }
}

struct CacheEntry {
    /// The key set, or why the last fetch failed (kept only for the policy's `failure_ttl`).
    set: Result<Arc<KeySet>, KeyError>,
    fetched_at: Instant,
    /// Last fetch or unknown-`kid` refetch claim: the throttle's clock.
    last_attempt: Instant,
}

type Fetch = Arc<OnceCell<Result<Arc<KeySet>, KeyError>>>;

struct Inner {
    policy: FetchPolicy,
    public: PublicBase,
    local: LocalKeys,
    http: Egress,
    cache: Mutex<HashMap<String, CacheEntry>>,
    /// Local wallets' decoded keys, with the key set they were decoded from ([`LocalKeys`]).
    local_sets: Mutex<HashMap<String, DecodedSet>>,
    /// Fetches under way, so that concurrent misses for one wallet share one request.
    inflight: Mutex<HashMap<String, Fetch>>,
}

/// Resolves a client's wallet address to its keys. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct KeyResolver {
    inner: Arc<Inner>,
}

impl fmt::Debug for KeyResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyResolver")
            .field("policy", &self.inner.policy)
            .field("public", &self.inner.public)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KeyResolver {
    /// A resolver using the system's name resolution. `public_url` is this ASE's
    /// public base URL; wallets directly under it are looked up with `local`.
    pub fn new(policy: FetchPolicy, public_url: &str, local: LocalKeys) -> Result<Self, KeyError> {
        Self::with_host_resolver(policy, public_url, local, Arc::new(SystemResolver))
    }

    /// As [`KeyResolver::new`], resolving names with `resolver` (tests use a
    /// [`StaticResolver`]). The policy still filters whatever it returns.
    pub fn with_host_resolver(
        policy: FetchPolicy,
        public_url: &str,
        local: LocalKeys,
        resolver: Arc<dyn HostResolver>,
    ) -> Result<Self, KeyError> {
        let public = PublicBase::parse(public_url)?;
        let http = Egress::with_host_resolver(policy.egress.clone(), resolver).map_err(KeyError::from)?;
        Ok(Self {
            inner: Arc::new(Inner {
                policy,
                public,
                local,
                http,
                cache: Mutex::new(HashMap::new()),
                local_sets: Mutex::new(HashMap::new()),
                inflight: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The policy in force.
    pub fn policy(&self) -> &FetchPolicy {
        &self.inner.policy
    }

    /// The usable (valid Ed25519) keys of `wallet_url`: from the local store for
    /// wallets this ASE hosts, else from the cache or `{wallet_url}/jwks.json`.
    pub async fn jwks(&self, wallet_url: &str) -> Result<Jwks, KeyError> {
        let url = parse_wallet_url(wallet_url)?;
        let set = match self.inner.public.local_name(&url) {
            Some(name) => self.local_set(name).await?,
            None => self.remote_set(&url).await?,
        };
        Ok(set.jwks.clone())
    }

    /// The verifying key `kid` of `wallet_url`. For a remote wallet, an unknown
    /// `kid` refetches the key set at most once per `refetch_interval`, so a flood
    /// of bogus kids cannot make the server a request amplifier.
    pub async fn key(&self, wallet_url: &str, kid: &str) -> Result<VerifyingKey, KeyError> {
        let unknown = || KeyError::UnknownKey(kid.to_owned());
        let url = parse_wallet_url(wallet_url)?;
        if let Some(name) = self.inner.public.local_name(&url) {
            return self.local_set(name).await?.get(kid)?.ok_or_else(unknown);
        }
        let set = self.remote_set(&url).await?;
        if let Some(key) = set.get(kid)? {
            return Ok(key);
        }
        if !self.claim_refetch(url.as_str()) {
            return Err(unknown());
        }
        self.fetch_shared(&url).await?.get(kid)?.ok_or_else(unknown)
    }

    /// Forgets the cached keys of `wallet_url` (no effect for an invalid URL).
    pub fn invalidate(&self, wallet_url: &str) {
        if let Ok(url) = parse_wallet_url(wallet_url) {
            lock(&self.inner.cache).remove(url.as_str());
        }
    }

    async fn local_set(&self, name: String) -> Result<Arc<KeySet>, KeyError> {
        let jwks = match (self.inner.local)(name.clone()).await {
            Ok(Some(jwks)) => jwks,
            Ok(None) => return Err(KeyError::UnknownWallet),
            Err(e) => return Err(KeyError::Local(e)),
        };
        if let Some((source, set)) = lock(&self.inner.local_sets).get(&name)
            && Arc::ptr_eq(source, &jwks)
        {
            return Ok(set.clone());
        }
        let set = Arc::new(KeySet::from_jwks(jwks.as_ref().clone(), self.inner.policy.max_keys)?);
        let mut sets = lock(&self.inner.local_sets);
        if sets.len() >= self.inner.policy.max_cached_wallets {
            sets.clear();
        }
        sets.insert(name, (jwks, set.clone()));
        Ok(set)
    }

    async fn remote_set(&self, url: &Url) -> Result<Arc<KeySet>, KeyError> {
        let policy = &self.inner.policy;
        let cached = {
            let cache = lock(&self.inner.cache);
            cache.get(url.as_str()).and_then(|e| {
                let ttl = if e.set.is_ok() {
                    policy.cache_ttl
                } else {
                    policy.failure_ttl
                };
                (e.fetched_at.elapsed() < ttl).then(|| e.set.clone())
            })
        };
        match cached {
            Some(set) => set,
            None => self.fetch_shared(url).await,
        }
    }

    /// Whether an unknown `kid` may refetch now; if so, starts the throttle interval.
    fn claim_refetch(&self, key: &str) -> bool {
        let mut cache = lock(&self.inner.cache);
        match cache.get_mut(key) {
            Some(entry) if entry.last_attempt.elapsed() < self.inner.policy.refetch_interval => false,
            Some(entry) => {
                entry.last_attempt = Instant::now();
                true
            }
            None => true,
        }
    }

    /// Fetches and caches the key set, joining a fetch already under way for this wallet.
    async fn fetch_shared(&self, url: &Url) -> Result<Arc<KeySet>, KeyError> {
        let key = url.as_str();
        let cell = lock(&self.inner.inflight).entry(key.to_owned()).or_default().clone();
        let result = cell.get_or_init(|| self.fetch_and_store(url)).await.clone();
        let mut inflight = lock(&self.inner.inflight);
        if inflight.get(key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            inflight.remove(key);
        }
        result
    }

    /// Fetches the key set and remembers the outcome: a key set for `cache_ttl`, a failure for
    /// `failure_ttl`, so a client naming an unreachable wallet costs one outbound request per interval.
    async fn fetch_and_store(&self, url: &Url) -> Result<Arc<KeySet>, KeyError> {
        let set = self.fetch(url).await.map(Arc::new);
        let now = Instant::now();
        let policy = &self.inner.policy;
        let mut cache = lock(&self.inner.cache);
        if cache.len() >= policy.max_cached_wallets && !cache.contains_key(url.as_str()) {
            cache.retain(|_, e| e.fetched_at.elapsed() < policy.cache_ttl && e.set.is_ok());
            if cache.len() >= policy.max_cached_wallets {
                let oldest = cache.iter().min_by_key(|(_, e)| e.fetched_at).map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    cache.remove(&oldest);
                }
            }
        }
        cache.insert(
            url.as_str().to_owned(),
            CacheEntry {
                set: set.clone(),
                fetched_at: now,
                last_attempt: now,
            },
        );
        set
    }

    /// GETs `{wallet}/jwks.json` through the egress client: a 200 `application/json` answer within the caps.
    async fn fetch(&self, wallet: &Url) -> Result<KeySet, KeyError> {
        let reply = self.inner.http.get_json(jwks_url(wallet).as_str()).await?;
        if reply.status != 200 {
            return Err(KeyError::BadStatus(reply.status));
        }
        if !reply.is_json() {
            return Err(KeyError::NotJson);
        }
        KeySet::from_json(&reply.body, self.inner.policy.max_keys)
    }
}

impl From<EgressError> for KeyError {
    fn from(e: EgressError) -> Self {
        match e {
            EgressError::InvalidUrl(m) => Self::InvalidUrl(m),
            EgressError::Forbidden(m) => Self::Forbidden(m),
            EgressError::Timeout => Self::Timeout,
            EgressError::TooLarge => Self::TooLarge,
            EgressError::NotJson => Self::NotJson,
            EgressError::Unreachable(m) => Self::Unreachable(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::StaticResolver;
    use ed25519_dalek::SigningKey;
    use serde_json::{Value, json};
    use std::io;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    // ---------- pure functions ----------

    #[test]
    fn default_policy_follows_listen_address() {
        let dev = FetchPolicy::for_listen_addr(true);
        assert!(dev.egress.allow_loopback && dev.egress.allow_private && !dev.egress.allow_http);
        let prod = FetchPolicy::for_listen_addr(false);
        assert!(!prod.egress.allow_loopback && !prod.egress.allow_private && !prod.egress.allow_http);
        assert_eq!(prod.egress.max_body_bytes, 64 * 1024);
        assert!(prod.failure_ttl < prod.cache_ttl);
    }

    #[test]
    fn url_shape_table() {
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        let bad = [
            "",
            "alice",
            "/alice",
            "//evil.test/alice",
            "javascript:alert(1)",
            "data:application/json,{}",
            "ftp://example.com/alice",
            "file:///etc/passwd",
            "https://good@evil.test/alice",
            "https://user:pw@evil.test/alice",
            "https://evil.test#@good.test",
            "https://evil.test/alice#x",
            "https://evil.test/alice?x=1",
            "https://evil.test/alice/",
            "https://evil.test/al\r\nice",
            "https://evil.test/al\tice",
            "https://evil.test/al ice",
            "https://",
            long.as_str(),
        ];
        for input in bad {
            assert!(
                matches!(parse_wallet_url(input), Err(KeyError::InvalidUrl(_))),
                "{input:?}"
            );
        }
        let norm = [
            ("HTTPS://EXAMPLE.com:443/alice", "https://example.com/alice"),
            ("https://example.com/x/../alice", "https://example.com/alice"),
            ("https://ex%61mple.com/alice", "https://example.com/alice"),
            ("https://аррӏе.com/alice", "https://xn--80ak6aa92e.com/alice"),
            ("http://0x7f.1:80/alice", "http://127.0.0.1/alice"),
            ("http://2130706433/alice", "http://127.0.0.1/alice"),
            ("http://0177.0.0.1/alice", "http://127.0.0.1/alice"),
            ("https://example.com", "https://example.com/"),
            ("https://[::FFFF:127.0.0.1]/a", "https://[::ffff:7f00:1]/a"),
        ];
        for (input, want) in norm {
            assert_eq!(parse_wallet_url(input).unwrap().as_str(), want, "{input}");
        }
    }

    #[test]
    fn jwks_location() {
        let at = |w: &str| jwks_url(&parse_wallet_url(w).unwrap()).to_string();
        assert_eq!(at("https://example.com/alice"), "https://example.com/alice/jwks.json");
        assert_eq!(at("https://example.com/a/b"), "https://example.com/a/b/jwks.json");
        assert_eq!(
            at("https://example.com"),
            "https://example.com/.well-known/pay/jwks.json"
        );
        assert_eq!(
            at("https://example.com:8443/%61lice"),
            "https://example.com:8443/%61lice/jwks.json"
        );
    }

    #[test]
    fn public_base_matching() {
        let base = PublicBase::parse("https://ase.example/").unwrap();
        let name = |w: &str| base.local_name(&parse_wallet_url(w).unwrap());
        assert_eq!(name("https://ase.example/alice").as_deref(), Some("alice"));
        assert_eq!(name("HTTPS://ASE.example:443/alice").as_deref(), Some("alice"));
        assert_eq!(name("https://ase.example/a/b"), None);
        assert_eq!(name("https://ase.example"), None);
        assert_eq!(name("http://ase.example/alice"), None);
        assert_eq!(name("https://ase.example:8443/alice"), None);
        assert_eq!(name("https://ase.example.evil.test/alice"), None);

        let nested = PublicBase::parse("http://127.0.0.1:9/op").unwrap();
        let name = |w: &str| nested.local_name(&parse_wallet_url(w).unwrap());
        assert_eq!(name("http://127.0.0.1:9/op/bob").as_deref(), Some("bob"));
        assert_eq!(name("http://127.0.0.1:9/opbob"), None);
        assert_eq!(name("http://127.0.0.1:9/op"), None);
        assert_eq!(name("http://127.0.0.1:9/bob"), None);

        for bad in ["not a url", "https://u@ase.example", "ftp://ase.example"] {
            assert!(matches!(PublicBase::parse(bad), Err(KeyError::InvalidUrl(_))));
        }
    }

    // ---------- loopback mock JWKS server ----------

    /// What the mock does with one request.
    #[derive(Clone)]
    enum Reply {
        /// Read the request, then say nothing for 30 s.
        Hang,
        /// Send headers promising 64 bytes, then one byte per second.
        Dribble,
        /// A complete response after `delay`.
        Fixed {
            status: u16,
            content_type: &'static str,
            headers: String,
            body: Vec<u8>,
            delay: Duration,
        },
        /// 10 MB of JSON-ish bytes, with or without `Content-Length`.
        Huge { content_length: bool },
    }

    fn json_reply(body: &Value) -> Reply {
        Reply::Fixed {
            status: 200,
            content_type: "application/json",
            headers: String::new(),
            body: serde_json::to_vec(body).unwrap(),
            delay: Duration::ZERO,
        }
    }

    type Handler = Arc<dyn Fn(usize, &str) -> Reply + Send + Sync>;

    struct Mock {
        addr: SocketAddr,
        connections: Arc<AtomicUsize>,
        requests: Arc<AtomicUsize>,
        heads: Arc<Mutex<Vec<String>>>,
    }

    impl Mock {
        fn url(&self, path: &str) -> String {
            format!("http://{}{path}", self.addr)
        }
        fn connections(&self) -> usize {
            self.connections.load(Ordering::SeqCst)
        }
        fn requests(&self) -> usize {
            self.requests.load(Ordering::SeqCst)
        }
        fn head(&self, i: usize) -> String {
            lock(&self.heads)[i].clone()
        }
    }

    /// A one-request-per-connection HTTP/1.1 server on 127.0.0.1:0. Every loop
    /// in it is bounded in count and time.
    async fn mock(handler: impl Fn(usize, &str) -> Reply + Send + Sync + 'static) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let (c, r, h) = (connections.clone(), requests.clone(), heads.clone());
        tokio::spawn(async move {
            for _ in 0..1000 {
                let Ok((sock, _)) = listener.accept().await else {
                    break;
                };
                c.fetch_add(1, Ordering::SeqCst);
                let (r, h, handler) = (r.clone(), h.clone(), handler.clone());
                tokio::spawn(async move {
                    let _ = serve(sock, r, h, handler).await;
                });
            }
        });
        Mock {
            addr,
            connections,
            requests,
            heads,
        }
    }

    async fn serve(
        mut sock: TcpStream,
        requests: Arc<AtomicUsize>,
        heads: Arc<Mutex<Vec<String>>>,
        handler: Handler,
    ) -> io::Result<()> {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf))
                .await
                .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
            if n == 0 || head.len() > 16 * 1024 {
                return Ok(());
            }
            head.extend_from_slice(&buf[..n]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let path = head.split(' ').nth(1).unwrap_or("").to_owned();
        let n = requests.fetch_add(1, Ordering::SeqCst);
        lock(&heads).push(head);
        match handler(n, &path) {
            Reply::Hang => tokio::time::sleep(Duration::from_secs(30)).await,
            Reply::Dribble => {
                sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\r\n")
                    .await?;
                for _ in 0..64 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    sock.write_all(b" ").await?;
                }
            }
            Reply::Fixed {
                status,
                content_type,
                headers,
                body,
                delay,
            } => {
                tokio::time::sleep(delay).await;
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n",
                    body.len()
                );
                sock.write_all(head.as_bytes()).await?;
                sock.write_all(&body).await?;
                sock.shutdown().await?;
            }
            Reply::Huge { content_length } => {
                const TOTAL: usize = 10 * 1024 * 1024;
                let length = if content_length {
                    format!("content-length: {TOTAL}\r\n")
                } else {
                    String::new()
                };
                let head =
                    format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{length}connection: close\r\n\r\n");
                sock.write_all(head.as_bytes()).await?;
                sock.write_all(b"{\"keys\":[\"").await?;
                let chunk = vec![b'a'; 64 * 1024];
                for _ in 0..TOTAL / chunk.len() {
                    sock.write_all(&chunk).await?;
                }
            }
        }
        Ok(())
    }

    // ---------- resolver fixtures ----------

    fn signing_key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn jwk(kid: &str, seed: u8) -> Jwk {
        Jwk::from_verifying_key(kid, &signing_key(seed).verifying_key())
    }

    fn jwk_json(kid: &str, seed: u8) -> Value {
        serde_json::to_value(jwk(kid, seed)).unwrap()
    }

    /// Short timeouts, loopback allowed (the mocks live there).
    fn test_policy() -> FetchPolicy {
        let base = FetchPolicy::for_listen_addr(true);
        FetchPolicy {
            egress: egress::Policy {
                connect_timeout: Duration::from_millis(500),
                total_timeout: Duration::from_millis(1000),
                ..base.egress
            },
            ..base
        }
    }

    fn with_http(mut policy: FetchPolicy) -> FetchPolicy {
        policy.egress.allow_http = true;
        policy
    }

    fn no_local() -> LocalKeys {
        Arc::new(|_| Box::pin(async { Ok(None) }))
    }

    /// A resolver whose names resolve only through `stub` (nothing leaves the machine).
    fn resolver_with(policy: FetchPolicy, stub: StaticResolver) -> KeyResolver {
        KeyResolver::with_host_resolver(policy, "https://ase.invalid", no_local(), Arc::new(stub)).unwrap()
    }

    fn resolver(policy: FetchPolicy) -> KeyResolver {
        resolver_with(policy, StaticResolver::new())
    }

    /// Runs `fut` and fails the test if it takes more than `secs`.
    async fn bounded<T>(secs: u64, fut: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(secs), fut)
            .await
            .expect("hung")
    }

    // ---------- fetch behaviour ----------

    #[tokio::test]
    async fn good_jwks_is_fetched_filtered_and_cached() {
        let good = jwk_json("k1", 1);
        let body = json!({"keys": [good, {"kid": "hmac", "kty": "oct", "k": "c2VjcmV0"}]});
        let m = mock(move |_, _| json_reply(&body)).await;
        let r = resolver(test_policy());
        let wallet = m.url("/alice");

        let set = bounded(5, r.jwks(&wallet)).await.unwrap();
        assert_eq!(
            set,
            Jwks {
                keys: vec![jwk("k1", 1)]
            }
        );
        let key = bounded(5, r.key(&wallet, "k1")).await.unwrap();
        assert_eq!(key, signing_key(1).verifying_key());
        // A refused key is reported as such, without a refetch.
        assert!(matches!(
            bounded(5, r.key(&wallet, "hmac")).await,
            Err(KeyError::Malformed(_))
        ));
        // The same wallet in another spelling is the same cache entry.
        let other_spelling = format!("HTTP://{}/x/../alice", m.addr);
        bounded(5, r.key(&other_spelling, "k1")).await.unwrap();
        assert_eq!(m.requests(), 1, "cache hits make no request");

        let head = m.head(0).to_ascii_lowercase();
        assert!(head.starts_with("get /alice/jwks.json http/1.1\r\n"), "{head}");
        assert!(head.contains("\r\naccept: application/json\r\n"), "{head}");
        assert!(!head.contains("referer"), "{head}");

        r.invalidate(&wallet);
        bounded(5, r.key(&wallet, "k1")).await.unwrap();
        assert_eq!(m.requests(), 2, "invalidate forgets the keys");
    }

    #[tokio::test]
    async fn wallet_without_path_uses_well_known() {
        let body = json!({"keys": [jwk_json("k1", 1)]});
        let m = mock(move |_, _| json_reply(&body)).await;
        let r = resolver(test_policy());
        bounded(5, r.key(&m.url(""), "k1")).await.unwrap();
        assert!(m.head(0).starts_with("GET /.well-known/pay/jwks.json "));
    }

    #[tokio::test]
    async fn cache_expires_after_ttl() {
        let body = json!({"keys": [jwk_json("k1", 1)]});
        let m = mock(move |_, _| json_reply(&body)).await;
        let r = resolver(FetchPolicy {
            cache_ttl: Duration::from_millis(400),
            ..test_policy()
        });
        let wallet = m.url("/alice");
        bounded(5, r.jwks(&wallet)).await.unwrap();
        bounded(5, r.jwks(&wallet)).await.unwrap();
        assert_eq!(m.requests(), 1);
        tokio::time::sleep(Duration::from_millis(450)).await;
        bounded(5, r.jwks(&wallet)).await.unwrap();
        assert_eq!(m.requests(), 2);
    }

    #[tokio::test]
    async fn concurrent_misses_share_one_fetch() {
        let body = serde_json::to_vec(&json!({"keys": [jwk_json("k1", 1)]})).unwrap();
        let m = mock(move |_, _| Reply::Fixed {
            status: 200,
            content_type: "application/json",
            headers: String::new(),
            body: body.clone(),
            delay: Duration::from_millis(300),
        })
        .await;
        let r = resolver(test_policy());
        let wallet = m.url("/alice");
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (r, w) = (r.clone(), wallet.clone());
                tokio::spawn(async move { r.key(&w, "k1").await })
            })
            .collect();
        for t in tasks {
            bounded(5, t).await.unwrap().unwrap();
        }
        assert_eq!(m.requests(), 1);
        assert!(lock(&r.inner.inflight).is_empty());
    }

    #[tokio::test]
    async fn unknown_kid_refetches_once_per_interval() {
        let rotated = Arc::new(AtomicBool::new(false));
        let flag = rotated.clone();
        let m = mock(move |_, _| {
            let mut keys = vec![jwk_json("k1", 1)];
            if flag.load(Ordering::SeqCst) {
                keys.push(jwk_json("k2", 2));
            }
            json_reply(&json!({ "keys": keys }))
        })
        .await;
        let r = resolver(FetchPolicy {
            refetch_interval: Duration::from_millis(500),
            ..test_policy()
        });
        let wallet = m.url("/alice");
        bounded(5, r.key(&wallet, "k1")).await.unwrap();
        assert_eq!(m.requests(), 1);
        // The set was just fetched: an unknown kid does not refetch it.
        assert_eq!(
            bounded(5, r.key(&wallet, "bogus")).await,
            Err(KeyError::UnknownKey("bogus".into()))
        );
        assert_eq!(m.requests(), 1);

        tokio::time::sleep(Duration::from_millis(600)).await;
        // Once the interval has passed: one refetch, then throttled for a flood of kids.
        assert!(matches!(
            bounded(5, r.key(&wallet, "bogus-0")).await,
            Err(KeyError::UnknownKey(_))
        ));
        assert_eq!(m.requests(), 2);
        for i in 1..50 {
            let kid = format!("bogus-{i}");
            assert!(matches!(
                bounded(5, r.key(&wallet, &kid)).await,
                Err(KeyError::UnknownKey(_))
            ));
        }
        assert_eq!(m.requests(), 2);

        // A rotated-in key is found on the next allowed refetch.
        rotated.store(true, Ordering::SeqCst);
        assert!(bounded(5, r.key(&wallet, "k2")).await.is_err());
        tokio::time::sleep(Duration::from_millis(600)).await;
        let key = bounded(5, r.key(&wallet, "k2")).await.unwrap();
        assert_eq!(key, signing_key(2).verifying_key());
        assert_eq!(m.requests(), 3);
        bounded(5, r.key(&wallet, "k1")).await.unwrap();
        assert_eq!(m.requests(), 3);
    }

    #[tokio::test]
    async fn never_answering_server_times_out() {
        let m = mock(|_, _| Reply::Hang).await;
        let r = resolver(test_policy());
        let started = std::time::Instant::now();
        assert_eq!(bounded(5, r.jwks(&m.url("/alice"))).await, Err(KeyError::Timeout));
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn dribbling_server_times_out() {
        let m = mock(|_, _| Reply::Dribble).await;
        let r = resolver(test_policy());
        let started = std::time::Instant::now();
        assert_eq!(bounded(5, r.jwks(&m.url("/alice"))).await, Err(KeyError::Timeout));
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn huge_bodies_are_cut_off() {
        for content_length in [true, false] {
            let m = mock(move |_, _| Reply::Huge { content_length }).await;
            let r = resolver(test_policy());
            let started = std::time::Instant::now();
            assert_eq!(
                bounded(5, r.jwks(&m.url("/alice"))).await,
                Err(KeyError::TooLarge),
                "content-length: {content_length}"
            );
            assert!(started.elapsed() < Duration::from_secs(2));
        }
    }

    #[tokio::test]
    async fn wrong_content_or_status_is_refused() {
        let fixed = |status: u16, content_type: &'static str, body: &str, headers: &str| Reply::Fixed {
            status,
            content_type,
            headers: headers.to_owned(),
            body: body.as_bytes().to_vec(),
            delay: Duration::ZERO,
        };
        let good = serde_json::to_string(&json!({"keys": [jwk_json("k1", 1)]})).unwrap();
        let cases = [
            (fixed(200, "text/html", &good, ""), Err(KeyError::NotJson)),
            (fixed(200, "application/jsonx", &good, ""), Err(KeyError::NotJson)),
            (
                fixed(200, "application/json", "<html>hi</html>", ""),
                Err(KeyError::NotJson),
            ),
            (fixed(200, "application/json", "", ""), Err(KeyError::NotJson)),
            (
                fixed(200, "application/json", r#"{"keys": 5}"#, ""),
                Err(KeyError::Malformed(String::new())),
            ),
            (
                fixed(200, "application/json", "[]", ""),
                Err(KeyError::Malformed(String::new())),
            ),
            (fixed(404, "application/json", &good, ""), Err(KeyError::BadStatus(404))),
            (fixed(500, "text/plain", "oops", ""), Err(KeyError::BadStatus(500))),
            (
                fixed(302, "text/plain", "", "location: /elsewhere/jwks.json\r\n"),
                Err(KeyError::BadStatus(302)),
            ),
            (fixed(200, "Application/JSON; charset=utf-8", &good, ""), Ok(1)),
        ];
        for (i, (reply, want)) in cases.into_iter().enumerate() {
            let m = mock(move |_, _| reply.clone()).await;
            let r = resolver(test_policy());
            let got = bounded(5, r.jwks(&m.url("/alice"))).await;
            match (&got, &want) {
                (Err(KeyError::Malformed(_)), Err(KeyError::Malformed(_))) => {}
                (Ok(set), Ok(n)) => assert_eq!(set.keys.len(), *n, "case {i}"),
                _ => assert_eq!(got.map(|s| s.keys.len()), want, "case {i}"),
            }
            // Redirects are not followed: one request, to the original path.
            assert_eq!(m.requests(), 1, "case {i}");
        }
    }

    #[tokio::test]
    async fn invalid_keys_are_dropped_and_bad_sets_refused() {
        let good = jwk_json("good", 1);
        let x31 = {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 31])
        };
        let mut oct = jwk_json("oct", 2);
        oct["kty"] = json!("oct");
        let mut none = jwk_json("none", 3);
        none["alg"] = json!("none");
        let mut x25519 = jwk_json("x25519", 4);
        x25519["crv"] = json!("X25519");
        let mut short = jwk_json("short", 5);
        short["x"] = json!(x31);
        let body = json!({"keys": [oct, none, x25519, short, good, {"kty": "OKP"}, {"kid": 7}]});
        let m = mock(move |_, _| json_reply(&body)).await;
        let r = resolver(test_policy());
        let wallet = m.url("/alice");
        let set = bounded(5, r.jwks(&wallet)).await.unwrap();
        assert_eq!(set.keys, vec![jwk("good", 1)]);
        for kid in ["oct", "none", "x25519", "short"] {
            let err = bounded(5, r.key(&wallet, kid)).await.unwrap_err();
            assert!(matches!(err, KeyError::Malformed(_)), "{kid}: {err}");
        }
        assert_eq!(m.requests(), 1);

        let dup = json!({"keys": [jwk_json("k", 1), jwk_json("k", 2)]});
        let m = mock(move |_, _| json_reply(&dup)).await;
        let err = bounded(5, r.key(&m.url("/alice"), "k")).await.unwrap_err();
        assert!(
            matches!(&err, KeyError::Malformed(why) if why.contains("duplicate")),
            "{err}"
        );

        let many: Vec<Value> = (0..17).map(|i| jwk_json(&format!("k{i}"), 1)).collect();
        let many = json!({ "keys": many });
        let m = mock(move |_, _| json_reply(&many)).await;
        let err = bounded(5, r.key(&m.url("/alice"), "k0")).await.unwrap_err();
        assert!(
            matches!(&err, KeyError::Malformed(why) if why.contains("at most")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn https_uses_the_ring_provider() {
        // A plain-TCP listener that answers a TLS ClientHello with HTTP text: the
        // handshake must fail cleanly (the ClientHello itself needs the provider).
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for _ in 0..4 {
                let Ok((mut sock, _)) = listener.accept().await else {
                    break;
                };
                let _ = sock.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
            }
        });
        let r = resolver(test_policy());
        let err = bounded(5, r.jwks(&format!("https://{addr}/alice"))).await.unwrap_err();
        assert!(
            matches!(&err, KeyError::Unreachable(why) if why.contains("corrupt message")),
            "{err}"
        );
    }

    // ---------- SSRF policy ----------

    #[tokio::test]
    async fn no_loopback_policy_never_connects_to_loopback_literals() {
        let m = mock(|_, _| Reply::Hang).await;
        let port = m.addr.port();
        for policy in [
            FetchPolicy::for_listen_addr(false),
            with_http(FetchPolicy::for_listen_addr(false)),
        ] {
            let r = resolver(policy);
            for wallet in [
                format!("http://127.0.0.1:{port}/alice"),
                format!("https://127.0.0.1:{port}/alice"),
                format!("http://[::ffff:127.0.0.1]:{port}/alice"),
                format!("https://[::ffff:7f00:1]:{port}/alice"),
                format!("http://2130706433:{port}/alice"),
                format!("http://localhost:{port}/alice"),
            ] {
                let err = bounded(5, r.key(&wallet, "k1")).await.unwrap_err();
                assert!(matches!(err, KeyError::Forbidden(_)), "{wallet}: {err}");
            }
        }
        assert_eq!(m.connections(), 0);
    }

    #[tokio::test]
    async fn rebinding_name_to_loopback_is_refused_after_resolution() {
        let body = json!({"keys": [jwk_json("k1", 1)]});
        let m = mock(move |_, _| json_reply(&body)).await;
        let port = m.addr.port();
        let stub = StaticResolver::new().with("evil.test", IpAddr::V4(Ipv4Addr::LOCALHOST));

        let prod = FetchPolicy::for_listen_addr(false);
        let r = resolver_with(prod.clone(), stub.clone());
        let err = bounded(5, r.key(&format!("https://evil.test:{port}/alice"), "k1"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, KeyError::Forbidden(why) if why.contains("evil.test resolves only to refused")),
            "{err}"
        );
        let r = resolver_with(with_http(prod), stub.clone());
        let err = bounded(5, r.key(&format!("http://evil.test:{port}/alice"), "k1"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, KeyError::Forbidden(why) if why.contains("resolves only to refused")),
            "{err}"
        );
        assert_eq!(m.connections(), 0, "the refused fetches never connected");

        // Control: the same stub under a policy that allows loopback reaches the mock.
        let r = resolver_with(with_http(test_policy()), stub);
        bounded(5, r.key(&format!("http://evil.test:{port}/alice"), "k1"))
            .await
            .unwrap();
        assert_eq!(m.requests(), 1);
        assert!(
            m.head(0)
                .to_ascii_lowercase()
                .contains(&format!("\r\nhost: evil.test:{port}\r\n"))
        );
    }

    #[tokio::test]
    async fn unresolvable_name_is_unreachable() {
        let r = resolver(FetchPolicy::for_listen_addr(false));
        let err = bounded(5, r.jwks("https://nowhere.test/alice")).await.unwrap_err();
        assert!(matches!(err, KeyError::Unreachable(_)), "{err}");
        assert!(matches!(
            bounded(5, r.jwks("https://good@evil.test/alice")).await,
            Err(KeyError::InvalidUrl(_))
        ));
    }

    // ---------- wallets hosted here ----------

    #[tokio::test]
    async fn local_keys_are_decoded_again_only_when_the_set_changes() {
        let current = Arc::new(Mutex::new(Arc::new(Jwks {
            keys: vec![jwk("k1", 1)],
        })));
        let shared = current.clone();
        let local: LocalKeys = Arc::new(move |_name: String| {
            let set = lock(&shared).clone();
            Box::pin(async move { Ok(Some(set)) })
        });
        let r = KeyResolver::with_host_resolver(
            FetchPolicy::for_listen_addr(false),
            "http://127.0.0.1:9/",
            local,
            Arc::new(StaticResolver::new()),
        )
        .unwrap();
        let url = "http://127.0.0.1:9/alice";
        assert_eq!(
            bounded(5, r.key(url, "k1")).await.unwrap(),
            signing_key(1).verifying_key()
        );
        let first = lock(&r.inner.local_sets).get("alice").map(|(_, s)| s.clone()).unwrap();
        bounded(5, r.key(url, "k1")).await.unwrap();
        let again = lock(&r.inner.local_sets).get("alice").map(|(_, s)| s.clone()).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the same key set is not decoded twice");
        // the wallet's keys change (a rotation): the old key is refused at once, the new one accepted
        *lock(&current) = Arc::new(Jwks {
            keys: vec![jwk("k2", 2)],
        });
        assert_eq!(
            bounded(5, r.key(url, "k1")).await,
            Err(KeyError::UnknownKey("k1".into()))
        );
        assert_eq!(
            bounded(5, r.key(url, "k2")).await.unwrap(),
            signing_key(2).verifying_key()
        );
    }

    #[tokio::test]
    async fn local_wallets_resolve_without_http() {
        let m = mock(|_, _| Reply::Hang).await;
        let calls = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = calls.clone();
        let local: LocalKeys = Arc::new(move |name: String| {
            lock(&seen).push(name.clone());
            Box::pin(async move {
                match name.as_str() {
                    "alice" => Ok(Some(Arc::new(Jwks {
                        keys: vec![jwk("a1", 1), {
                            let mut bad = jwk("bad", 2);
                            bad.alg = "Ed25519".into();
                            bad
                        }],
                    }))),
                    "broken" => Err("database is locked".to_owned()),
                    _ => Ok(None),
                }
            })
        });
        // The public URL points at the loopback mock: any HTTP would show up there.
        let public = format!("http://{}/op/", m.addr);
        let r = KeyResolver::with_host_resolver(
            FetchPolicy::for_listen_addr(false),
            &public,
            local,
            Arc::new(StaticResolver::new()),
        )
        .unwrap();
        let alice = m.url("/op/alice");
        let set = bounded(5, r.jwks(&alice)).await.unwrap();
        assert_eq!(set.keys, vec![jwk("a1", 1)]);
        let key = bounded(5, r.key(&alice, "a1")).await.unwrap();
        assert_eq!(key, signing_key(1).verifying_key());
        let upper = format!("HTTP://{}/op/alice", m.addr);
        bounded(5, r.key(&upper, "a1")).await.unwrap();
        assert!(matches!(
            bounded(5, r.key(&alice, "bad")).await,
            Err(KeyError::Malformed(_))
        ));
        assert_eq!(
            bounded(5, r.key(&alice, "zz")).await,
            Err(KeyError::UnknownKey("zz".into()))
        );
        assert_eq!(
            bounded(5, r.jwks(&m.url("/op/carol"))).await,
            Err(KeyError::UnknownWallet)
        );
        assert_eq!(
            bounded(5, r.jwks(&m.url("/op/broken"))).await,
            Err(KeyError::Local("database is locked".into()))
        );
        // Not exactly one segment under the public URL: treated as remote, and
        // the production policy refuses loopback before connecting.
        assert!(matches!(
            bounded(5, r.jwks(&m.url("/op/alice/x"))).await,
            Err(KeyError::Forbidden(_))
        ));
        assert_eq!(
            *lock(&calls),
            ["alice", "alice", "alice", "alice", "alice", "carol", "broken"]
        );
        // Local lookups bypass the cache; only the refused remote one is remembered (as a failure).
        assert!(lock(&r.inner.cache).values().all(|e| e.set.is_err()));
        assert_eq!(lock(&r.inner.cache).len(), 1);
        assert_eq!(m.connections(), 0);
    }

    #[tokio::test]
    async fn failed_fetches_are_remembered_briefly() {
        let m = mock(|_, _| Reply::Fixed {
            status: 500,
            content_type: "text/plain",
            headers: String::new(),
            body: b"oops".to_vec(),
            delay: Duration::ZERO,
        })
        .await;
        let r = resolver(FetchPolicy {
            failure_ttl: Duration::from_millis(300),
            ..test_policy()
        });
        let url = m.url("/alice");
        for _ in 0..5 {
            assert_eq!(bounded(5, r.key(&url, "k1")).await, Err(KeyError::BadStatus(500)));
        }
        assert_eq!(m.requests(), 1, "one outbound request while the failure is remembered");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(bounded(5, r.jwks(&url)).await, Err(KeyError::BadStatus(500)));
        assert_eq!(m.requests(), 2, "fetched again once the failure is forgotten");
    }

    #[tokio::test]
    async fn cache_is_bounded() {
        let body = json!({"keys": [jwk_json("k1", 1)]});
        let m = mock(move |_, _| json_reply(&body)).await;
        let r = resolver(FetchPolicy {
            max_cached_wallets: 3,
            ..test_policy()
        });
        for i in 0..6 {
            bounded(5, r.jwks(&m.url(&format!("/w{i}")))).await.unwrap();
        }
        assert_eq!(lock(&r.inner.cache).len(), 3);
        assert!(lock(&r.inner.cache).contains_key(&m.url("/w5")));
    }
}
