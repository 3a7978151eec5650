//! TLS on the public listener: loads and checks the PEM certificate chain and private key that `[tls]` names,
//! hands the current pair to rustls through a resolver that [`Certs::reload`] swaps (on SIGHUP), and turns a
//! TCP listener into one that gives axum finished TLS connections with their peer address (handshakes run
//! side by side, each bounded in time, so a slow client never holds up the others).
//!
//! Owns no routes and no signals: `app` decides when to reload and what to serve.

use std::{
    fmt, io,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use rustls::{
    InconsistentKeys, ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use sha2::{Digest as _, Sha256};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::mpsc,
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};
use tokio_util::sync::CancellationToken;

use crate::settings::TlsSettings;

/// A client that has not finished its handshake within this long is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the certificate or key cannot be used; each names the setting and the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("tls.{setting} {}: no such file", .path.display())]
    Missing { setting: &'static str, path: PathBuf },
    #[error("tls.{setting} {}: cannot read it: {source}", .path.display())]
    Unreadable {
        setting: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("tls.cert {}: no PEM certificate in it{}", .path.display(), in_parens(.detail))]
    CertNotPem { path: PathBuf, detail: String },
    #[error(
        "tls.key {}: no PEM private key in it (PKCS#8, PKCS#1 or SEC1){}",
        .path.display(),
        in_parens(.detail)
    )]
    KeyNotPem { path: PathBuf, detail: String },
    #[error("tls.cert {}: not a usable certificate: {source}", .path.display())]
    BadCert { path: PathBuf, source: rustls::Error },
    #[error("tls.key {}: not a usable private key: {source}", .path.display())]
    BadKey { path: PathBuf, source: rustls::Error },
    #[error("tls.key {} does not match the certificate in {}", .key.display(), .cert.display())]
    Mismatch { cert: PathBuf, key: PathBuf },
    #[error("TLS setup: {0}")]
    Setup(rustls::Error),
}

fn in_parens(d: &str) -> String {
    if d.is_empty() { String::new() } else { format!(" ({d})") }
}

fn read(setting: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => TlsError::Missing {
            setting,
            path: path.to_owned(),
        },
        _ => TlsError::Unreadable {
            setting,
            path: path.to_owned(),
            source,
        },
    })
}

/// The crypto provider the process installed (`egress::install_default_crypto_provider`), else ring's.
fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// Reads the certificate chain (end-entity first) and the private key, and checks that they belong together.
pub fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let cert_pem = read("cert", cert)?;
    let key_pem = read("key", key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::CertNotPem {
            path: cert.to_owned(),
            detail: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::CertNotPem {
            path: cert.to_owned(),
            detail: String::new(),
        });
    }
    let der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::KeyNotPem {
        path: key.to_owned(),
        detail: match e {
            rustls::pki_types::pem::Error::NoItemsFound => String::new(),
            e => e.to_string(),
        },
    })?;
    let signing = provider()
        .key_provider
        .load_private_key(der)
        .map_err(|source| TlsError::BadKey {
            path: key.to_owned(),
            source,
        })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(certified),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => Err(TlsError::Mismatch {
            cert: cert.to_owned(),
            key: key.to_owned(),
        }),
        Err(source) => Err(TlsError::BadCert {
            path: cert.to_owned(),
            source,
        }),
    }
}

/// The certificate the server presents, as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// The subject's common name, when it has one.
    pub subject: Option<String>,
    /// `notAfter`, as `YYYY-MM-DDTHH:MM:SSZ`.
    pub expires: Option<String>,
    /// SHA-256 of the end-entity certificate (DER), lower-case hex.
    pub sha256: String,
}

impl CertInfo {
    pub fn of(cert: &CertificateDer<'_>) -> Self {
        let (subject, expires) = der::subject_and_expiry(cert.as_ref()).unwrap_or((None, None));
        Self {
            subject,
            expires,
            sha256: Sha256::digest(cert.as_ref())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        }
    }
}

impl fmt::Display for CertInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "subject CN={}, expires {}, sha256 {}",
            self.subject.as_deref().unwrap_or("(none)"),
            self.expires.as_deref().unwrap_or("(unknown)"),
            self.sha256
        )
    }
}

/// The certificate and key in use, re-read from their files on [`Certs::reload`]; new connections get the
/// pair current when their handshake starts.
#[derive(Debug)]
pub struct Certs {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl Certs {
    /// Loads the pair `settings` names.
    pub fn load(settings: &TlsSettings) -> Result<Arc<Self>, TlsError> {
        let pair = load(&settings.cert, &settings.key)?;
        Ok(Arc::new(Self {
            cert: settings.cert.clone(),
            key: settings.key.clone(),
            current: RwLock::new(Arc::new(pair)),
        }))
    }

    /// Re-reads both files; on success the new pair serves new connections, on failure the old one stays.
    pub fn reload(&self) -> Result<CertInfo, TlsError> {
        let pair = Arc::new(load(&self.cert, &self.key)?);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = pair;
        Ok(self.info())
    }

    fn current(&self) -> Arc<CertifiedKey> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// What the end-entity certificate in use is.
    pub fn info(&self) -> CertInfo {
        let pair = self.current();
        // load() refuses an empty chain
        pair.cert.first().map(CertInfo::of).unwrap_or(CertInfo {
            subject: None,
            expires: None,
            sha256: String::new(),
        })
    }

    /// A rustls server configuration serving whatever pair is current (HTTP/1.1 over ALPN).
    pub fn server_config(self: &Arc<Self>) -> Result<ServerConfig, TlsError> {
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Setup)?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

impl ResolvesServerCert for Certs {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// A listener whose connections have finished their TLS handshake: a task accepts TCP connections and runs
/// each handshake in its own task until `stop`; [`axum::serve`] takes the results with the peer address.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, certs: &Arc<Certs>, stop: CancellationToken) -> Result<Self, TlsError> {
        let local = tcp
            .local_addr()
            .map_err(|e| TlsError::Setup(rustls::Error::General(e.to_string())))?;
        let acceptor = TlsAcceptor::from(Arc::new(certs.server_config()?));
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tx.closed() => return,
                    a = tcp.accept() => a,
                };
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // out of file descriptors and the like: wait a moment rather than spin
                        tracing::warn!(error = %e, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // the accepting task stopped (shutdown): no more connections
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// Just enough DER to name a certificate in a log line: the subject's CN and `notAfter`.
mod der {
    /// One TLV: (tag, contents, what follows).
    fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let len = rest[..n].iter().fold(0usize, |a, b| (a << 8) | usize::from(*b));
            (len, &rest[n..])
        };
        (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
    }

    const SEQUENCE: u8 = 0x30;
    const CN: &[u8] = &[0x55, 0x04, 0x03];

    pub fn subject_and_expiry(cert: &[u8]) -> Option<(Option<String>, Option<String>)> {
        let (SEQUENCE, cert, _) = tlv(cert)? else { return None };
        let (SEQUENCE, tbs, _) = tlv(cert)? else { return None };
        let mut rest = tbs;
        let (tag, _, r) = tlv(rest)?;
        if tag == 0xa0 {
            rest = r; // version
        }
        let (_, _, r) = tlv(rest)?; // serial
        let (_, _, r) = tlv(r)?; // signature algorithm
        let (_, _, r) = tlv(r)?; // issuer
        let (SEQUENCE, validity, r) = tlv(r)? else { return None };
        let (SEQUENCE, subject, _) = tlv(r)? else { return None };
        let (_, _, after) = tlv(validity)?;
        let expires = tlv(after).and_then(|(tag, t, _)| time(tag, t));
        Some((common_name(subject), expires))
    }

    /// UTCTime (`YYMMDDHHMMSSZ`) or GeneralizedTime (`YYYYMMDDHHMMSSZ`) as `YYYY-MM-DDTHH:MM:SSZ`.
    fn time(tag: u8, t: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(t).ok()?;
        let full = match (tag, s.len()) {
            (0x17, 13) => {
                let yy: u32 = s.get(..2)?.parse().ok()?;
                format!("{}{s}", if yy >= 50 { "19" } else { "20" })
            }
            (0x18, 15) => s.to_owned(),
            _ => return None,
        };
        if !full.get(..14)?.bytes().all(|b| b.is_ascii_digit()) || !full.ends_with('Z') {
            return None;
        }
        Some(format!(
            "{}-{}-{}T{}:{}:{}Z",
            &full[0..4],
            &full[4..6],
            &full[6..8],
            &full[8..10],
            &full[10..12],
            &full[12..14]
        ))
    }

    /// The first CN in a Name (SEQUENCE OF SET OF SEQUENCE {OID, value}).
    fn common_name(mut name: &[u8]) -> Option<String> {
        while !name.is_empty() {
            let (_, set, r) = tlv(name)?;
            name = r;
            let mut set = set;
            while !set.is_empty() {
                let (_, atv, r) = tlv(set)?;
                set = r;
                let (0x06, oid, value) = tlv(atv)? else { continue };
                if oid == CN {
                    let (_, v, _) = tlv(value)?;
                    return Some(String::from_utf8_lossy(v).chars().filter(|c| !c.is_control()).collect());
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(cn: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        params.not_after = rcgen::date_time_ymd(2031, 5, 6);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn files(dir: &Path, cert: &str, key: &str) -> TlsSettings {
        let s = TlsSettings {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
            admin_listen: "127.0.0.1:0".parse().unwrap(),
        };
        std::fs::write(&s.cert, cert).unwrap();
        std::fs::write(&s.key, key).unwrap();
        s
    }

    #[test]
    fn a_good_pair_loads_and_names_its_certificate() {
        crate::egress::install_default_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("desk.test");
        let certs = Certs::load(&files(dir.path(), &cert, &key)).unwrap();
        let info = certs.info();
        assert_eq!(info.subject.as_deref(), Some("desk.test"));
        assert_eq!(info.expires.as_deref(), Some("2031-05-06T00:00:00Z"));
        assert_eq!(info.sha256.len(), 64);
        assert!(
            info.to_string()
                .starts_with("subject CN=desk.test, expires 2031-05-06T00:00:00Z, sha256 ")
        );
    }

    #[test]
    fn each_problem_is_one_line_naming_the_file() {
        crate::egress::install_default_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("a");
        let (_, other_key) = pair("b");
        let s = files(dir.path(), &cert, &key);
        let line = |s: &TlsSettings| Certs::load(s).unwrap_err().to_string();

        let missing = TlsSettings {
            cert: dir.path().join("nope.pem"),
            ..s.clone()
        };
        assert_eq!(
            line(&missing),
            format!("tls.cert {}: no such file", missing.cert.display())
        );
        let unreadable = TlsSettings {
            key: dir.path().to_owned(),
            ..s.clone()
        };
        assert!(line(&unreadable).starts_with(&format!("tls.key {}: cannot read it", dir.path().display())));

        std::fs::write(&s.cert, "hello").unwrap();
        assert_eq!(
            line(&s),
            format!("tls.cert {}: no PEM certificate in it", s.cert.display())
        );
        std::fs::write(&s.cert, &cert).unwrap();
        std::fs::write(&s.key, &cert).unwrap();
        assert!(line(&s).starts_with(&format!("tls.key {}: no PEM private key in it", s.key.display())));
        std::fs::write(&s.key, &other_key).unwrap();
        assert_eq!(
            line(&s),
            format!(
                "tls.key {} does not match the certificate in {}",
                s.key.display(),
                s.cert.display()
            )
        );
        std::fs::write(
            &s.cert,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        std::fs::write(&s.key, &key).unwrap();
        assert!(line(&s).starts_with(&format!("tls.cert {}: not a usable certificate", s.cert.display())));
        assert!(line(&s).lines().count() == 1);
    }

    #[test]
    fn a_failed_reload_keeps_the_pair_in_use() {
        crate::egress::install_default_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = pair("first");
        let s = files(dir.path(), &cert, &key);
        let certs = Certs::load(&s).unwrap();
        std::fs::write(&s.key, "broken").unwrap();
        assert!(certs.reload().is_err());
        assert_eq!(certs.info().subject.as_deref(), Some("first"));
        let (cert2, key2) = pair("second");
        std::fs::write(&s.cert, cert2).unwrap();
        std::fs::write(&s.key, key2).unwrap();
        assert_eq!(certs.reload().unwrap().subject.as_deref(), Some("second"));
        assert_eq!(certs.info().subject.as_deref(), Some("second"));
    }
}
