//! Every outbound HTTP request the server makes goes through here: client JWKS, remote receivers and their
//! authorization servers, webhooks and ILP peer endpoints. One client builder (rustls with the *ring*
//! provider and the platform's roots, no redirects, proxies, retries or compression), one address policy
//! (IP literals and `localhost` judged before connecting, every resolved address judged again before
//! connecting, which defeats DNS rebinding; IPv4-mapped, NAT64 and 6to4 forms judged by the IPv4 address they
//! embed), connect and total timeouts, and bodies read chunk by chunk and abandoned at a byte cap.
//!
//! [`EgressError`] text is for the log and the operator's request detail only: it names addresses, ports and
//! statuses of hosts an attacker may have chosen. Callers answer clients with a generic sentence.

use std::{
    collections::HashMap,
    error::Error as StdError,
    fmt, io,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    pin::Pin,
    sync::Arc,
    time::Duration,
};

use http::{HeaderMap, Method, header};
use rustls_platform_verifier::BuilderVerifierExt as _;
use url::{Host, Url};

/// Where requests may go and how much they may cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Loopback hosts (`127.0.0.0/8`, `::1`, `localhost`) may be reached.
    pub allow_loopback: bool,
    /// Private, link-local, CGNAT, ULA, documentation and benchmarking ranges may be reached.
    pub allow_private: bool,
    /// Plain `http` to any host (otherwise only to allowed loopback hosts).
    pub allow_http: bool,
    /// Limit for establishing the TCP (and TLS) connection, DNS included.
    pub connect_timeout: Duration,
    /// Limit for the whole exchange, from sending the request to the last body byte.
    pub total_timeout: Duration,
    /// Largest response body read; the exchange is abandoned as soon as it is exceeded.
    pub max_body_bytes: usize,
}

/// The body cap for JSON documents (key sets, incoming payments, grant responses).
pub const JSON_BODY_CAP: usize = 64 * 1024;

impl Policy {
    /// For URLs that clients name (their key sets, quote receivers): loopback and private ranges only in a
    /// local development setup (the public URL on loopback); plain `http` only to loopback.
    pub fn for_client_urls(local_development: bool) -> Self {
        Self {
            allow_loopback: local_development,
            allow_private: local_development,
            allow_http: false,
            connect_timeout: Duration::from_secs(2),
            total_timeout: Duration::from_secs(5),
            max_body_bytes: JSON_BODY_CAP,
        }
    }

    /// For URLs the operator configured (ILP peers, webhooks): loopback, private ranges and plain `http` are
    /// allowed — the operator chose the host — but bodies are still capped and time is still bounded.
    pub fn operator(total_timeout: Duration, max_body_bytes: usize) -> Self {
        Self {
            allow_loopback: true,
            allow_private: true,
            allow_http: true,
            connect_timeout: total_timeout.min(Duration::from_secs(5)),
            total_timeout,
            max_body_bytes,
        }
    }
}

/// How an address is treated by [`is_forbidden`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AddrClass {
    /// Globally routable as far as we know.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// Private, link-local, CGNAT, ULA, documentation, benchmarking and similar.
    Private,
    /// Never a unicast HTTP server: unspecified (which reaches this host), broadcast, multicast, reserved and
    /// deprecated embeddings.
    Never,
}

fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => classify_v4(v4),
            None => classify_v6(v6),
        },
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        // 0.0.0.0/8 ("this network"; connecting to 0.0.0.0 reaches this host),
        // 224.0.0.0/4 multicast, 240.0.0.0/4 reserved and the broadcast address.
        (0, _, _) | (224..=255, _, _) => AddrClass::Never,
        (127, _, _) => AddrClass::Loopback,
        (10, _, _)
        | (172, 16..=31, _)
        | (192, 168, _)
        | (169, 254, _)     // link-local, cloud metadata
        | (100, 64..=127, _) // CGNAT
        | (192, 0, 0)       // IETF protocol assignments
        | (192, 0, 2)       // documentation
        | (198, 51, 100)
        | (203, 0, 113)
        | (198, 18..=19, _) // benchmarking
        | (192, 88, 99) => AddrClass::Private, // deprecated 6to4 relay anycast
        _ => AddrClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    let s = ip.segments();
    if ip.is_unspecified() || ip.is_multicast() {
        return AddrClass::Never;
    }
    if ip.is_loopback() {
        return AddrClass::Loopback;
    }
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    match s {
        // ::/96 IPv4-compatible (deprecated) and ::ffff:0:0:0/96 IPv4-translated.
        [0, 0, 0, 0, 0, 0, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] => AddrClass::Never,
        // 100::/64 discard-only.
        [0x100, 0, 0, 0, ..] => AddrClass::Never,
        // 64:ff9b::/96 NAT64: judged by the IPv4 address a gateway would reach.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => classify_v4(embedded(hi, lo)),
        // 6to4 2002::/16 embeds an IPv4 address too.
        [0x2002, hi, lo, ..] => classify_v4(embedded(hi, lo)),
        // 64:ff9b:1::/48 local-use NAT64.
        [0x64, 0xff9b, 1, ..] => AddrClass::Private,
        // fc00::/7 ULA, fe80::/10 link-local, fec0::/10 site-local (deprecated).
        [x, ..] if x & 0xfe00 == 0xfc00 || x & 0xffc0 == 0xfe80 || x & 0xffc0 == 0xfec0 => AddrClass::Private,
        // 2001::/23 IETF protocol assignments (Teredo, benchmarking, ORCHID, ...),
        // 2001:db8::/32 and 3fff::/20 documentation.
        [0x2001, y, ..] if y < 0x0200 || y == 0x0db8 => AddrClass::Private,
        [0x3fff, y, ..] if y < 0x1000 => AddrClass::Private,
        _ => AddrClass::Public,
    }
}

/// Whether `policy` refuses to connect to `ip`. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are judged as
/// their IPv4 address; NAT64 and 6to4 addresses by the IPv4 address they embed. Unspecified, broadcast,
/// multicast and reserved addresses are always refused.
pub fn is_forbidden(ip: IpAddr, policy: &Policy) -> bool {
    match classify(ip) {
        AddrClass::Public => false,
        AddrClass::Loopback => !policy.allow_loopback,
        AddrClass::Private => !policy.allow_private,
        AddrClass::Never => true,
    }
}

/// Whether `ip` is a loopback address, IPv4-mapped forms included.
pub fn is_loopback(ip: IpAddr) -> bool {
    classify(ip) == AddrClass::Loopback
}

/// Whether `url`'s host is a loopback address or a `localhost` name.
pub fn is_loopback_url(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => is_loopback(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => is_loopback(IpAddr::V6(ip)),
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

/// Why an outbound request failed. The text is for logs and the operator, never for clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// The URL is not an acceptable absolute URL.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// The address policy refuses the host, address or scheme.
    #[error("refused by the address policy: {0}")]
    Forbidden(String),
    /// Connecting or reading took too long.
    #[error("timed out")]
    Timeout,
    /// The response is larger than the byte cap.
    #[error("response exceeds the size limit")]
    TooLarge,
    /// The response is not `application/json`, or not JSON at all.
    #[error("response is not JSON")]
    NotJson,
    /// The host could not be resolved or connected to, or the exchange failed.
    #[error("unreachable: {0}")]
    Unreachable(String),
}

/// A boxed, sendable future (what [`HostResolver`] returns).
pub type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Name resolution. The answer is filtered by the [`Policy`] afterwards, so an implementation need not (and
/// must not be trusted to) apply it.
pub trait HostResolver: Send + Sync + 'static {
    /// All addresses of `host` (a domain name, never an IP literal).
    fn lookup(&self, host: String) -> BoxFuture<io::Result<Vec<IpAddr>>>;
}

/// The production resolver: the system's, through `tokio::net::lookup_host`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(&self, host: String) -> BoxFuture<io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A fixed name → addresses table, for tests: every other name fails to resolve, so nothing leaves the
/// machine.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    names: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `ip` to the addresses of `host` (matched case-insensitively).
    pub fn with(mut self, host: &str, ip: IpAddr) -> Self {
        self.names.entry(host.to_ascii_lowercase()).or_default().push(ip);
        self
    }
}

impl HostResolver for StaticResolver {
    fn lookup(&self, host: String) -> BoxFuture<io::Result<Vec<IpAddr>>> {
        let found = self.names.get(&host.to_ascii_lowercase()).cloned();
        Box::pin(async move { found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown host")) })
    }
}

/// Every address of a name was refused by the policy (the DNS-level check).
#[derive(Debug)]
struct ForbiddenAddress {
    host: String,
    addrs: Vec<IpAddr>,
}

impl fmt::Display for ForbiddenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} resolves only to refused addresses {:?}", self.host, self.addrs)
    }
}

impl StdError for ForbiddenAddress {}

/// reqwest's resolver: resolve with the inner [`HostResolver`], then drop every address the policy refuses.
/// The addresses returned here are the ones connected to.
struct PolicyResolver {
    inner: Arc<dyn HostResolver>,
    policy: Policy,
}

impl PolicyResolver {
    async fn resolve_allowed(
        inner: Arc<dyn HostResolver>,
        policy: Policy,
        host: String,
    ) -> Result<Vec<SocketAddr>, Box<dyn StdError + Send + Sync>> {
        let addrs = inner.lookup(host.clone()).await?;
        if addrs.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no addresses").into());
        }
        let allowed: Vec<SocketAddr> = addrs
            .iter()
            .filter(|ip| !is_forbidden(**ip, &policy))
            .map(|ip| SocketAddr::new(*ip, 0))
            .collect();
        if allowed.is_empty() {
            return Err(Box::new(ForbiddenAddress { host, addrs }));
        }
        Ok(allowed)
    }
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let fut = Self::resolve_allowed(self.inner.clone(), self.policy.clone(), name.as_str().to_owned());
        Box::pin(async move {
            let addrs = fut.await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Applies the address and scheme policy to what can be judged before any connection: the scheme, IP-literal
/// hosts (which are connected to without asking the resolver) and `localhost` names. Domain names are
/// judged again after resolution.
pub fn check_url(url: &Url, policy: &Policy) -> Result<(), EgressError> {
    if !matches!(url.scheme(), "https" | "http") {
        return Err(EgressError::InvalidUrl("scheme must be https or http".into()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EgressError::InvalidUrl("userinfo is not allowed".into()));
    }
    let loopback = match url.host() {
        Some(Host::Ipv4(ip)) => check_ip(IpAddr::V4(ip), policy)?,
        Some(Host::Ipv6(ip)) => check_ip(IpAddr::V6(ip), policy)?,
        Some(Host::Domain(name)) => {
            let loopback = is_loopback_url(url);
            if loopback && !policy.allow_loopback {
                return Err(EgressError::Forbidden(format!("loopback host {name}")));
            }
            loopback
        }
        None => return Err(EgressError::InvalidUrl("no host".to_owned())),
    };
    if url.scheme() == "http" && !policy.allow_http && !(loopback && policy.allow_loopback) {
        return Err(EgressError::Forbidden(format!(
            "plain http to {}",
            url.host_str().unwrap_or_default()
        )));
    }
    Ok(())
}

/// Refuses a forbidden IP literal; says whether it is a loopback address.
fn check_ip(ip: IpAddr, policy: &Policy) -> Result<bool, EgressError> {
    if is_forbidden(ip, policy) {
        return Err(EgressError::Forbidden(format!("address {ip}")));
    }
    Ok(classify(ip) == AddrClass::Loopback)
}

/// Installs rustls' *ring* provider as the process default, unless one is installed already. With reqwest's
/// `rustls-no-provider` feature every `reqwest::Client` built without a preconfigured TLS config panics until
/// a default exists (the admin client and tests build such clients); [`Egress`] does not depend on it.
pub fn install_default_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err only if another thread won the race, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

fn map_reqwest(e: reqwest::Error) -> EgressError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(&e);
    while let Some(s) = source {
        if let Some(f) = s.downcast_ref::<ForbiddenAddress>() {
            return EgressError::Forbidden(f.to_string());
        }
        source = s.source();
    }
    if e.is_timeout() {
        return EgressError::Timeout;
    }
    EgressError::Unreachable(error_chain(&e))
}

/// An answer: status, headers and the (capped) body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    /// Whether the answer says `application/json` (or `application/…+json`).
    pub fn is_json(&self) -> bool {
        let content_type = self
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
    }

    /// The body as JSON, if the answer says it is JSON and it parses.
    pub fn json(&self) -> Result<serde_json::Value, EgressError> {
        if !self.is_json() {
            return Err(EgressError::NotJson);
        }
        serde_json::from_slice(&self.body).map_err(|_| EgressError::NotJson)
    }
}

/// The one HTTP client for outbound requests under one [`Policy`]. Cheap to clone.
#[derive(Clone)]
pub struct Egress {
    http: reqwest::Client,
    policy: Arc<Policy>,
}

impl fmt::Debug for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Egress")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// A client resolving names with the system's resolver.
    pub fn new(policy: Policy) -> Result<Self, EgressError> {
        Self::with_host_resolver(policy, Arc::new(SystemResolver))
    }

    /// As [`Egress::new`], resolving names with `resolver`; the policy still filters what it returns.
    pub fn with_host_resolver(policy: Policy, resolver: Arc<dyn HostResolver>) -> Result<Self, EgressError> {
        let tls_error = |e: rustls::Error| EgressError::Unreachable(format!("TLS setup: {e}"));
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?
            .with_platform_verifier()
            .map_err(tls_error)?
            .with_no_client_auth();
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .dns_resolver(Arc::new(PolicyResolver {
                inner: resolver,
                policy: policy.clone(),
            }))
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .no_proxy()
            .referer(false)
            .http1_only()
            .connect_timeout(policy.connect_timeout)
            .timeout(policy.total_timeout)
            .user_agent(concat!("opdesk/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EgressError::Unreachable(format!("HTTP client setup: {}", error_chain(&e))))?;
        Ok(Self {
            http,
            policy: Arc::new(policy),
        })
    }

    /// Parses `url` as an absolute http(s) URL and checks it against the policy.
    pub fn url(&self, url: &str) -> Result<Url, EgressError> {
        let u = Url::parse(url).map_err(|e| EgressError::InvalidUrl(e.to_string()))?;
        check_url(&u, &self.policy)?;
        Ok(u)
    }

    /// Sends one request and reads the answer, within the policy's total timeout and body cap.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<Reply, EgressError> {
        let url = self.url(url)?;
        tokio::time::timeout(self.policy.total_timeout, self.exchange(method, url, headers, body))
            .await
            .map_err(|_| EgressError::Timeout)?
    }

    /// A GET asking for JSON.
    pub async fn get_json(&self, url: &str) -> Result<Reply, EgressError> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, header::HeaderValue::from_static("application/json"));
        self.send(Method::GET, url, headers, Vec::new()).await
    }

    async fn exchange(
        &self,
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<Reply, EgressError> {
        let max = self.policy.max_body_bytes;
        let mut response = self
            .http
            .request(method, url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(map_reqwest)?;
        let declared = response.content_length().unwrap_or(0);
        if declared > max as u64 {
            return Err(EgressError::TooLarge);
        }
        let mut body = Vec::with_capacity(usize::try_from(declared).unwrap_or(max).min(max));
        while let Some(chunk) = response.chunk().await.map_err(map_reqwest)? {
            if body.len() + chunk.len() > max {
                return Err(EgressError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Reply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn is_forbidden_table() {
        let open = Policy {
            allow_loopback: true,
            allow_private: true,
            ..Policy::for_client_urls(true)
        };
        let prod = Policy::for_client_urls(false);
        let loop_only = Policy {
            allow_private: false,
            ..open.clone()
        };
        // (address, refused in production, refused with everything allowed, refused with loopback only)
        let table: &[(&str, bool, bool, bool)] = &[
            ("8.8.8.8", false, false, false),
            ("1.1.1.1", false, false, false),
            ("2606:4700:4700::1111", false, false, false),
            ("::ffff:8.8.8.8", false, false, false),
            ("64:ff9b::808:808", false, false, false),
            ("2002:808:808::1", false, false, false),
            ("127.0.0.1", true, false, false),
            ("127.255.255.254", true, false, false),
            ("::1", true, false, false),
            ("::ffff:127.0.0.1", true, false, false),
            ("64:ff9b::7f00:1", true, false, false),
            ("2002:7f00:1::", true, false, false),
            ("10.0.0.1", true, false, true),
            ("172.16.0.1", true, false, true),
            ("172.31.255.255", true, false, true),
            ("172.32.0.1", false, false, false),
            ("192.168.1.1", true, false, true),
            ("::ffff:192.168.1.1", true, false, true),
            ("169.254.169.254", true, false, true),
            ("::ffff:169.254.169.254", true, false, true),
            ("100.64.0.1", true, false, true),
            ("100.127.255.255", true, false, true),
            ("100.128.0.1", false, false, false),
            ("192.0.0.1", true, false, true),
            ("192.0.2.1", true, false, true),
            ("198.51.100.7", true, false, true),
            ("203.0.113.9", true, false, true),
            ("198.18.0.1", true, false, true),
            ("fc00::1", true, false, true),
            ("fd12:3456::1", true, false, true),
            ("fe80::1", true, false, true),
            ("febf::1", true, false, true),
            ("fec0::1", true, false, true),
            ("2001:db8::1", true, false, true),
            ("2001:0:4136:e378::1", true, false, true),
            ("3fff::1", true, false, true),
            ("64:ff9b:1::1", true, false, true),
            ("0.0.0.0", true, true, true),
            ("0.1.2.3", true, true, true),
            ("::", true, true, true),
            ("::ffff:0.0.0.0", true, true, true),
            ("255.255.255.255", true, true, true),
            ("224.0.0.1", true, true, true),
            ("239.255.255.250", true, true, true),
            ("240.0.0.1", true, true, true),
            ("ff02::1", true, true, true),
            ("::7f00:1", true, true, true),
            ("::ffff:0:7f00:1", true, true, true),
            ("100::1", true, true, true),
        ];
        for (addr, in_prod, in_open, in_loop_only) in table {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(is_forbidden(ip, &prod), *in_prod, "{addr} production");
            assert_eq!(is_forbidden(ip, &open), *in_open, "{addr} open");
            assert_eq!(is_forbidden(ip, &loop_only), *in_loop_only, "{addr} loopback only");
        }
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn default_policies() {
        let dev = Policy::for_client_urls(true);
        assert!(dev.allow_loopback && dev.allow_private && !dev.allow_http);
        let prod = Policy::for_client_urls(false);
        assert!(!prod.allow_loopback && !prod.allow_private && !prod.allow_http);
        assert_eq!(prod.max_body_bytes, 64 * 1024);
        assert!(prod.connect_timeout <= prod.total_timeout);
        let op = Policy::operator(Duration::from_secs(30), 4096);
        assert!(op.allow_loopback && op.allow_private && op.allow_http);
        assert!(
            is_forbidden("0.0.0.0".parse().unwrap(), &op),
            "never-addresses stay refused"
        );
    }

    #[test]
    fn url_policy_table() {
        let prod = Policy::for_client_urls(false);
        let dev = Policy::for_client_urls(true);
        let check = |input: &str, policy: &Policy| check_url(&Url::parse(input).unwrap(), policy);
        for input in [
            "https://127.0.0.1/alice",
            "https://0x7f.1/alice",
            "https://2130706433/alice",
            "https://0177.0.0.1/alice",
            "https://[::1]/alice",
            "https://[::ffff:127.0.0.1]/alice",
            "https://localhost/alice",
            "https://LOCALHOST./alice",
            "https://api.localhost/alice",
            "https://169.254.169.254/latest/meta-data",
            "https://10.1.2.3/alice",
            "https://[fe80::1]/alice",
            "https://[fd00::1]/alice",
            "https://0.0.0.0/alice",
            "http://example.com/alice",
            "http://8.8.8.8/alice",
        ] {
            assert!(matches!(check(input, &prod), Err(EgressError::Forbidden(_))), "{input}");
        }
        for input in ["https://example.com/alice", "https://8.8.8.8/alice"] {
            check(input, &prod).unwrap();
        }
        // Development: loopback over plain http is fine; other hosts still need https.
        for input in [
            "http://127.0.0.1:3000/alice",
            "http://localhost:3000/alice",
            "http://[::1]:3000/alice",
            "https://10.1.2.3/alice",
        ] {
            check(input, &dev).unwrap();
        }
        for input in ["http://10.1.2.3/alice", "http://example.com/alice"] {
            assert!(matches!(check(input, &dev), Err(EgressError::Forbidden(_))));
        }
        let http_ok = Policy {
            allow_http: true,
            ..prod.clone()
        };
        check("http://example.com/alice", &http_ok).unwrap();
        assert!(check("http://127.0.0.1/alice", &http_ok).is_err());
        for input in ["ftp://example.com/x", "https://u:p@example.com/x", "file:///etc/passwd"] {
            assert!(matches!(check(input, &dev), Err(EgressError::InvalidUrl(_))), "{input}");
        }
    }

    #[tokio::test]
    async fn resolver_drops_forbidden_addresses() {
        let stub: Arc<dyn HostResolver> = Arc::new(
            StaticResolver::new()
                .with("mixed.test", "127.0.0.1".parse().unwrap())
                .with("mixed.test", "8.8.8.8".parse().unwrap())
                .with("inside.test", "10.0.0.7".parse().unwrap()),
        );
        let prod = Policy::for_client_urls(false);
        let got = PolicyResolver::resolve_allowed(stub.clone(), prod.clone(), "mixed.test".into())
            .await
            .unwrap();
        assert_eq!(got, vec![SocketAddr::new("8.8.8.8".parse().unwrap(), 0)]);
        let err = PolicyResolver::resolve_allowed(stub.clone(), prod, "inside.test".into())
            .await
            .unwrap_err();
        assert!(err.downcast_ref::<ForbiddenAddress>().is_some());
        let dev = Policy::for_client_urls(true);
        let got = PolicyResolver::resolve_allowed(stub.clone(), dev, "inside.test".into())
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert!(
            PolicyResolver::resolve_allowed(stub, Policy::for_client_urls(true), "nowhere.test".into())
                .await
                .is_err()
        );
    }

    /// A name that resolves to loopback (DNS rebinding) is refused after resolution, before any connection;
    /// the same name under a policy that allows loopback connects.
    #[tokio::test]
    async fn names_resolving_to_refused_addresses_never_connect() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = connections.clone();
        tokio::spawn(async move {
            for _ in 0..10 {
                let Ok((mut sock, _)) = listener.accept().await else {
                    break;
                };
                seen.fetch_add(1, Ordering::SeqCst);
                let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
                let mut head = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut sock, &mut head).await;
                let _ = tokio::io::AsyncWriteExt::write_all(&mut sock, reply).await;
            }
        });
        let stub: Arc<dyn HostResolver> =
            Arc::new(StaticResolver::new().with("rebind.test", "127.0.0.1".parse().unwrap()));
        let prod = Policy {
            allow_http: true,
            ..Policy::for_client_urls(false)
        };
        let egress = Egress::with_host_resolver(prod, stub.clone()).unwrap();
        let err = egress
            .get_json(&format!("http://rebind.test:{port}/incoming-payments/1"))
            .await
            .unwrap_err();
        assert!(matches!(err, EgressError::Forbidden(_)), "{err}");
        assert_eq!(connections.load(Ordering::SeqCst), 0);
        let dev = Egress::with_host_resolver(Policy::for_client_urls(true), stub).unwrap();
        let reply = dev.get_json(&format!("http://rebind.test:{port}/x")).await;
        // plain http to a name is refused even in development unless it is a loopback name
        assert!(matches!(reply, Err(EgressError::Forbidden(_))), "{reply:?}");
        let open = Egress::with_host_resolver(
            Policy {
                allow_http: true,
                ..Policy::for_client_urls(true)
            },
            Arc::new(StaticResolver::new().with("rebind.test", "127.0.0.1".parse().unwrap())),
        )
        .unwrap();
        let reply = open.get_json(&format!("http://rebind.test:{port}/x")).await.unwrap();
        assert_eq!(reply.json().unwrap(), serde_json::json!({}));
        assert_eq!(connections.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn json_needs_a_json_content_type() {
        let reply = |ct: &str, body: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, ct.parse().unwrap());
            Reply {
                status: 200,
                headers,
                body: body.as_bytes().to_vec(),
            }
        };
        assert!(reply("application/json; charset=utf-8", "{}").json().is_ok());
        assert!(reply("application/problem+json", "{}").json().is_ok());
        assert_eq!(reply("text/html", "{}").json(), Err(EgressError::NotJson));
        assert_eq!(reply("application/json", "<html>").json(), Err(EgressError::NotJson));
    }
}
