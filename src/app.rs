//! AppCore: opens the data dir and the store (migrations run here, before any listener binds), creates the
//! admin token, seeds demo data once, and wires the services into the [`AppState`] the server and the
//! operator commands share. [`serve`] runs the server until shutdown and closes the store cleanly; with
//! `[tls]` it serves HTTPS on the public listener and the admin API in plain HTTP on a loopback one ([`Tls`]).

use std::{path::Path, sync::Arc, time::Duration};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use color_eyre::eyre::{Context, Result};
use tokio::{net::TcpListener, sync::Notify};
use tokio_util::sync::CancellationToken;

use crate::{
    ase::{
        engine::Engine, incoming::IncomingPayments, liquidity::PeerLiquidity, outgoing::OutgoingPayments, peers::Peers,
        quotes::Quotes, remote::Remote, spsp::Spsp, stream_receiver::Receiver,
    },
    clock::{SharedClock, SystemClock},
    control::{self, Services},
    egress::Egress,
    events::EventBus,
    files::{self, write_private},
    gnap::Gnap,
    httpsig::{
        Policy, jwk,
        keys::{FetchPolicy, KeyResolver, LocalKeys},
    },
    ilp::{Address, receiver::StreamServer},
    ledger::Ledger,
    owner::DirLock,
    seed,
    server::signed::Verifier,
    server::{self, AppState, tls::Certs},
    settings::{Settings, decode_secret},
    store::{self, Store},
    wallet::{WalletError, Wallets},
    webhooks::Webhooks,
};

/// The embedded ASE without its listener, holding its data dir.
pub struct AppCore {
    pub state: AppState,
    pub store: Store,
    /// The exclusive hold on the data dir, until the core is closed or dropped.
    lock: std::sync::Mutex<Option<DirLock>>,
    /// On PostgreSQL: what the other nodes' notifications wake (the outbox follower, the peers).
    wakers: Option<store::notify::Wakers>,
}

impl AppCore {
    /// Takes the settings' data dir and opens everything under it with the system clock. A data dir another
    /// opdesk process holds is an [`crate::owner::Error::Held`], naming that process.
    pub async fn open(settings: Settings) -> Result<Self> {
        Self::open_with_clock(settings, Arc::new(SystemClock)).await
    }

    pub async fn open_with_clock(settings: Settings, clock: SharedClock) -> Result<Self> {
        let lock = DirLock::acquire_within(&settings.paths.data_dir, Duration::from_millis(500)).await?;
        Self::open_locked(settings, clock, lock).await
    }

    /// Opens everything under the data dir `lock` holds.
    pub async fn open_locked(settings: Settings, clock: SharedClock, lock: DirLock) -> Result<Self> {
        crate::egress::install_default_crypto_provider();
        let paths = settings.paths.clone();
        files::private_dir(&paths.data_dir)
            .wrap_err_with(|| format!("cannot create the data dir {}", paths.data_dir.display()))?;
        for p in paths.private_files() {
            files::tighten(&p).wrap_err_with(|| format!("cannot make {} private", p.display()))?;
        }
        if settings.store.url.is_empty() {
            // 0600 before SQLite opens it: SQLite gives new -wal and -shm files the database file's mode.
            files::create_private(&paths.database())
                .wrap_err_with(|| format!("cannot create the database {}", paths.database().display()))?;
        }
        let opts = store::Options {
            busy_timeout: Duration::from_millis(settings.store.busy_timeout_ms),
            synchronous: settings.store.synchronous.clone(),
            max_pages: settings.store.max_db_pages,
            connections: settings.store.connections,
            wal_max_bytes: settings.store.wal_max_bytes,
        };
        let (store, opened) = if settings.store.url.is_empty() {
            Store::open(&paths.database(), &opts)
                .wrap_err_with(|| format!("cannot open the database {}", paths.database().display()))?
        } else {
            Store::open_postgres(&settings.store.url, &opts).wrap_err_with(|| {
                format!(
                    "cannot open the PostgreSQL store {}",
                    store::redact_url(&settings.store.url)
                )
            })?
        };
        if !store.shared_by_nodes() {
            // one process holds the data dir: packets the previous one had in flight are no longer in flight
            // (they expired with it; the books say what was fulfilled)
            store
                .call(|c| store::peers::drop_claims(c))
                .await
                .wrap_err("cannot clear the previous process's peer claims")?;
        }
        let token = admin_token(&paths.admin_token())?;
        let wakers = store.shared_by_nodes().then(store::notify::Wakers::default);
        let bus = match &wakers {
            Some(w) => EventBus::following_outbox(w.events.clone()),
            None => EventBus::default(),
        };
        let wallets = Wallets::new(store.clone(), bus.clone(), clock.clone(), &settings.public_url);
        let ledger = Ledger::new(store.clone(), bus.clone(), clock.clone());
        let gnap = Gnap::new(
            store.clone(),
            bus.clone(),
            clock.clone(),
            wallets.clone(),
            settings.gnap.clone(),
            settings.consent.clone(),
            &settings.public_url,
        )
        .with_public_names(public_names(&settings)?);
        let verifier = Arc::new(Verifier::new(
            Policy {
                max_skew_secs: i64::from(settings.gnap.signature_window_secs),
            },
            key_resolver(&settings, &wallets)?,
        ));
        let stream_server = Arc::new(StreamServer::new(
            Address::new(settings.ilp.address.as_str()).wrap_err("ilp.address")?,
            ilp_secret(&settings, &store).await?,
        ));
        let rs = &settings.resource_server;
        let incoming = IncomingPayments::new(
            store.clone(),
            bus.clone(),
            clock.clone(),
            &settings.public_url,
            rs.incoming_max_lifetime_secs,
            stream_server.clone(),
        );
        let peers = Peers::load(store.clone(), clock.clone(), &settings.ilp)
            .await
            .wrap_err("cannot load the ILP peers")?;
        let spsp = Spsp::new(
            store.clone(),
            bus.clone(),
            clock.clone(),
            stream_server.clone(),
            settings.ilp.spsp,
        );
        let exchange = crate::ase::exchange::Exchange::new(settings.rates.clone(), &settings.exchange_rates)
            .map_err(|e| color_eyre::eyre::eyre!("exchange rates HTTP client: {e}"))?;
        let ilp = Receiver::new(
            stream_server,
            peers.clone(),
            incoming.clone(),
            spsp.clone(),
            exchange.clone(),
            clock.clone(),
        );
        let client_key = ase_client_key(&settings.paths.ase_client_key(), &store).await?;
        let client_url = format!("{}/{}", settings.public_url, settings.ilp.client_wallet);
        let egress = Egress::new(settings.egress.policy(settings.local_development()))
            .map_err(|e| color_eyre::eyre::eyre!("outbound HTTP client: {e}"))?;
        let remote = Remote::new(
            &settings.ilp,
            exchange.clone(),
            peers.clone(),
            Some(&client_key),
            &client_url,
            egress,
        );
        let quotes = Quotes::new(
            store.clone(),
            bus.clone(),
            clock.clone(),
            exchange,
            incoming.clone(),
            &settings.public_url,
            rs.quote_lifetime_secs,
        )
        .with_remote(remote.clone());
        let wake = Arc::new(Notify::new());
        let outgoing = OutgoingPayments::new(
            store.clone(),
            bus.clone(),
            clock.clone(),
            quotes.clone(),
            &settings.public_url,
            wake.clone(),
        );
        // a claim outlives its packet: the packet's expiry, the transport's timeouts and a margin
        let claim_ttl =
            time::Duration::milliseconds(i64::try_from(settings.ilp.packet_expiry_ms).unwrap_or(i64::MAX / 2))
                + time::Duration::seconds(30);
        let liquidity = PeerLiquidity::new(store.clone(), bus.clone(), clock.clone(), wake.clone(), claim_ttl);
        let engine = Engine::new(store.clone(), bus.clone(), clock.clone(), settings.engine.clone(), wake)
            .with_remote(remote.clone())
            .with_liquidity(liquidity.clone());
        let webhooks = Webhooks::new(store.clone(), clock.clone(), settings.webhooks.clone());
        let services = Arc::new(Services {
            settings: Arc::new(settings),
            bus,
            wallets,
            ledger,
            gnap,
            incoming,
            quotes,
            outgoing,
            engine,
            ilp,
            spsp,
            peers,
            liquidity,
            remote,
            webhooks,
            clock,
            capture: Arc::default(),
            consoles: Arc::default(),
            requests: std::sync::OnceLock::new(),
            store: store.clone(),
            stopping: CancellationToken::new(),
            room: Default::default(),
        });
        let state = AppState::new(services, verifier, token.into());
        let core = Self {
            state,
            store,
            lock: std::sync::Mutex::new(Some(lock)),
            wakers,
        };
        let s = &core.state;
        seed::run(&core.store, &s.wallets, &s.ledger, &s.settings, opened.fresh)
            .await
            .wrap_err("seeding demo data failed")?;
        let sender = core
            .state
            .peers
            .current()
            .all()
            .iter()
            .find(|p| p.outgoing().is_some())
            .cloned();
        if let Some(peer) = sender {
            control::ensure_client_wallet(&core.state, &peer.asset)
                .await
                .wrap_err("setting up the ASE's client wallet failed")?;
        }
        apply_config_thresholds(&core.state)
            .await
            .wrap_err("applying the peers' thresholds from config.toml failed")?;
        Ok(core)
    }

    /// Closes the store (queued work finishes first) and gives up the data dir.
    pub fn close(&self) {
        self.store.close();
        if let Ok(mut lock) = self.lock.lock() {
            lock.take();
        }
    }

    /// Records in the data dir how to reach the server whose admin API listens on `addr`.
    fn record(&self, addr: std::net::SocketAddr) -> std::io::Result<()> {
        let started = self.state.clock.now();
        match self.lock.lock().as_deref_mut() {
            Ok(Some(lock)) => lock.record(addr, &self.state.settings.public_url, started),
            _ => Err(std::io::Error::other("the data dir was given up")),
        }
    }
}

/// Sets the alert thresholds config.toml gives its peers (`liquidity_threshold`, `credit_threshold`); one
/// already set to the same value is left as it is, crossed or not.
async fn apply_config_thresholds(s: &Services) -> Result<()> {
    use crate::{money::Value, thresholds::Measure};
    for def in &s.settings.ilp.peers {
        let Some(peer) = s.peers.current().get(&def.name) else {
            continue;
        };
        for (measure, t) in [
            (Measure::PeerLiquidity, def.liquidity_threshold),
            (Measure::PeerCredit, def.credit_threshold),
        ] {
            if let Some(t) = t {
                s.liquidity.set_threshold(&peer, measure, Some(Value::new(t)?)).await?;
            }
        }
    }
    Ok(())
}

/// How the authorization server reads the public name of a client wallet on another ASE: its document, over
/// the egress client for client-named URLs.
fn public_names(settings: &Settings) -> Result<crate::gnap::service::PublicNames> {
    let http = Egress::new(settings.egress.policy(settings.local_development()))
        .map_err(|e| color_eyre::eyre::eyre!("outbound HTTP client: {e}"))?;
    Ok(Arc::new(move |url: String| {
        let http = http.clone();
        Box::pin(async move { crate::ase::remote::public_name(&http, &url).await })
    }))
}

/// Client keys: local wallets straight from the store, remote ones over hardened HTTP per the settings.
fn key_resolver(settings: &Settings, wallets: &Wallets) -> Result<KeyResolver> {
    let k = &settings.client_keys;
    let policy = FetchPolicy {
        egress: settings.egress.policy(settings.local_development()),
        cache_ttl: Duration::from_secs(k.cache_ttl_secs),
        failure_ttl: Duration::from_secs(k.failure_cache_secs),
        refetch_interval: Duration::from_secs(k.refetch_interval_secs),
        ..FetchPolicy::for_listen_addr(settings.local_development())
    };
    let w = wallets.clone();
    let local: LocalKeys = Arc::new(move |name: String| {
        let w = w.clone();
        Box::pin(async move {
            match w.keys_shared(&name).await {
                Ok(jwks) => Ok(Some(jwks)),
                Err(WalletError::NotFound(_)) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        })
    });
    KeyResolver::new(policy, &settings.public_url, local)
        .map_err(|e| color_eyre::eyre::eyre!("client key resolver: {e}"))
}

/// Binds the configured listen address.
pub async fn bind(settings: &Settings) -> Result<TcpListener> {
    TcpListener::bind(settings.listen)
        .await
        .wrap_err_with(|| format!("cannot listen on {}", settings.listen))
}

/// What serving HTTPS takes: the checked certificate and key, and the plain-HTTP loopback listener the admin
/// API moves to. The CLI and consoles on this host reach the admin API at the address `server.json` records;
/// with TLS that is this listener, so they need no certificate (nor trust in a self-signed one), and the
/// public listener speaks nothing but TLS.
pub struct Tls {
    pub certs: Arc<Certs>,
    pub admin: TcpListener,
}

impl Tls {
    /// Loads the certificate and key `[tls]` names and binds `tls.admin_listen`; None without `[tls]`. A
    /// certificate or key that cannot be used is a [`crate::server::tls::TlsError`]: one line naming the file.
    pub async fn prepare(settings: &Settings) -> Result<Option<Self>> {
        let certs = Self::check(settings)?;
        Self::bind(settings, certs).await
    }

    /// The certificate and key `[tls]` names, loaded and checked; None without `[tls]`.
    pub fn check(settings: &Settings) -> Result<Option<Arc<Certs>>> {
        Ok(settings.tls.as_ref().map(Certs::load).transpose()?)
    }

    /// Binds `tls.admin_listen` for `certs` (from [`Self::check`]).
    pub async fn bind(settings: &Settings, certs: Option<Arc<Certs>>) -> Result<Option<Self>> {
        let (Some(t), Some(certs)) = (&settings.tls, certs) else {
            return Ok(None);
        };
        let admin = TcpListener::bind(t.admin_listen)
            .await
            .wrap_err_with(|| format!("cannot listen on {} (tls.admin_listen)", t.admin_listen))?;
        Ok(Some(Self { certs, admin }))
    }
}

/// Re-reads the TLS certificate and key on every SIGHUP until `shutdown`: new connections get the new pair;
/// a broken one is logged and the pair in use stays. Without TLS a SIGHUP is logged and otherwise ignored (a
/// service manager's reload never stops the server). The handler is installed before this returns.
pub fn reload_on_sighup(certs: Option<Arc<Certs>>, shutdown: CancellationToken) -> Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hup = signal(SignalKind::hangup()).wrap_err("cannot listen for SIGHUP")?;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    got = hup.recv() => if got.is_none() { return },
                }
                match certs.as_deref().map(Certs::reload) {
                    None => tracing::info!("SIGHUP: nothing to reload (no [tls])"),
                    Some(Ok(info)) => tracing::info!(certificate = %info, "TLS certificate reloaded"),
                    Some(Err(e)) => tracing::error!("TLS certificate not reloaded, the one in use stays: {e}"),
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (certs, shutdown);
    Ok(())
}

/// Records how to reach the server in the data dir, serves until `shutdown` is cancelled, then closes the
/// store (and, as the core drops, removes the record and frees the data dir). Serves HTTPS when the settings
/// have `[tls]` (see [`serve_with`]).
pub async fn serve(core: AppCore, listener: TcpListener, shutdown: CancellationToken) -> Result<()> {
    let tls = Tls::prepare(&core.state.settings).await?;
    serve_with(core, listener, tls, shutdown).await
}

/// [`serve`] with TLS already prepared: `listener` speaks HTTPS with `tls`'s certificate and the admin API
/// (plain HTTP, loopback) is on `tls.admin`, which `server.json` records; without `tls`, everything is plain
/// HTTP on `listener`.
pub async fn serve_with(
    core: AppCore,
    listener: TcpListener,
    tls: Option<Tls>,
    shutdown: CancellationToken,
) -> Result<()> {
    let admin_addr = match &tls {
        Some(t) => t.admin.local_addr()?,
        None => listener.local_addr()?,
    };
    core.record(admin_addr)
        .wrap_err("cannot write server.json in the data dir")?;
    let router = server::router(core.state.clone());
    let engine = tokio::spawn(core.state.engine.clone().run(shutdown.clone()));
    if core.state.webhooks.enabled() {
        core.state
            .webhooks
            .start()
            .await
            .wrap_err("cannot start webhook deliveries")?;
    }
    let secret = match core.state.webhooks.enabled() {
        true => Some(webhook_secret(&core.state.settings, &core.state.store).await),
        false => None,
    };
    let hooks = secret.map(|secret| {
        Ok::<_, color_eyre::Report>(tokio::spawn(core.state.webhooks.clone().run(
            secret?,
            core.state.bus.clone(),
            shutdown.clone(),
        )))
    });
    let hooks = hooks.transpose()?;
    tokio::spawn(prune_events(core.state.services.clone(), shutdown.clone()));
    let spsp_reports = tokio::spawn(report_spsp(core.state.spsp.clone(), shutdown.clone()));
    if let Some(w) = &core.wakers {
        // several nodes on one database: every node's events and peer changes reach this one, and what
        // they change that this one caches is forgotten here
        let coherence = core.store.coherence().clone();
        store::notify::listen(
            core.state.settings.store.url.clone(),
            w.clone(),
            coherence,
            shutdown.clone(),
        )
        .wrap_err("cannot start listening for other nodes' changes")?;
        // what committed before this node serves (its demo seeds, a CLI's changes) is numbered before any
        // reader starts "from now" (another node numbering at this moment numbers it too)
        core.store
            .call_alone(|c| store::outbox::sequence(c))
            .await
            .wrap_err("cannot number the events waiting in the outbox")?;
        let (bus, store) = (core.state.bus.clone(), core.store.clone());
        tokio::spawn(crate::control::events::follow_outbox(
            bus,
            store,
            w.events.clone(),
            shutdown.clone(),
        ));
        tokio::spawn(core.state.peers.clone().follow(w.peers.clone(), shutdown.clone()));
        tokio::spawn(fold_counts(core.store.clone(), shutdown.clone()));
    }
    let stopping = core.state.stopping.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        stop.cancelled().await;
        stopping.cancel();
    });
    let result = match tls {
        None => server::serve(listener, router, shutdown.clone()).await,
        Some(Tls { certs, admin }) => {
            tracing::info!(certificate = %certs.info(), admin = %admin_addr, "serving HTTPS; the admin API on loopback");
            let public = server::serve_tls(listener, router, &certs, shutdown.clone());
            let admin = server::serve(admin, server::admin_router(core.state.clone()), shutdown.clone());
            tokio::try_join!(public, admin).map(|_| ())
        }
    };
    shutdown.cancel();
    if tokio::time::timeout(Duration::from_secs(10), engine).await.is_err() {
        tracing::warn!("the payment engine did not stop within 10 s");
    }
    if tokio::time::timeout(Duration::from_secs(5), spsp_reports)
        .await
        .is_err()
    {
        tracing::warn!("the SPSP reporter did not stop within 5 s");
    }
    if let Some(hooks) = hooks
        && tokio::time::timeout(Duration::from_secs(5), hooks).await.is_err()
    {
        tracing::warn!("the webhook deliverer did not stop within 5 s");
    }
    core.close();
    result.wrap_err("the server failed")
}

/// Rows one pruning transaction deletes at most.
const PRUNE_BATCH: u32 = 2_000;
/// Batches one pruning round runs at most (the next round goes on).
const PRUNE_BATCHES: usize = 1_000;

/// Prunes the event outbox by age and count every 10 s (never events the webhook deliverer has not taken yet),
/// delivered webhook deliveries as old as the oldest events kept, expired interaction-page sessions and failed
/// sign-ins older than a day: in transactions of at most
/// [`PRUNE_BATCH`] rows, so that a busy server's backlog never becomes one transaction that holds the writer,
/// the memory and the WAL (see `store::wal`).
async fn prune_events(s: Arc<Services>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(10));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let keep = &s.settings.store;
        let now = s.clock.now();
        let before = now - time::Duration::days(i64::from(keep.events_retain_days));
        let (count, hooks) = (keep.events_retain_count, s.webhooks.enabled());
        let mut total = 0;
        for _ in 0..PRUNE_BATCHES {
            let pruned = s
                .store
                .call(move |c| {
                    let tx = store::immediate(c)?;
                    let floor = if hooks { store::webhooks::cursor(&tx)? } else { None };
                    let n = store::outbox::prune(&tx, before, count, floor, PRUNE_BATCH)?
                        .max(store::webhooks::prune_delivered(&tx, before, PRUNE_BATCH)?)
                        .max(store::spsp::prune(&tx, before, PRUNE_BATCH)?)
                        .max(store::consent::prune(
                            &tx,
                            now,
                            now - time::Duration::days(1),
                            PRUNE_BATCH,
                        )?);
                    tx.commit()?;
                    Ok::<_, store::Error>(n)
                })
                .await;
            match pruned {
                Ok(n) => {
                    total += n;
                    if n < PRUNE_BATCH as usize || shutdown.is_cancelled() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot prune old events");
                    break;
                }
            }
        }
        if total > 0 {
            tracing::debug!(rows = total, "pruned old events");
        }
    }
}

/// Announces the money SPSP connections paid ([`Spsp::report`]) every second, and once more on the way out
/// (what is left after a crash is announced on the next start).
async fn report_spsp(spsp: Spsp, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let stop = tokio::select! {
            _ = shutdown.cancelled() => true,
            _ = every.tick() => false,
        };
        if let Err(e) = spsp.report().await {
            tracing::warn!(error = %e, "cannot announce money received over SPSP");
        }
        if stop {
            return;
        }
    }
}

/// PostgreSQL: folds the row counters' pending changes into their rows every few seconds, so that reading a
/// counter sums a few rows (`store::payments::fold_counts`).
async fn fold_counts(store: Store, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        if let Err(e) = store.call(|c| store::payments::fold_counts(c)).await {
            tracing::warn!(error = %e, "cannot fold the row counters' changes");
        }
    }
}

/// Cancels `token` on Ctrl-C or SIGTERM.
pub fn cancel_on_signals(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    let _ = ctrl_c.await;
                    token.cancel();
                    return;
                }
            };
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        token.cancel();
    });
}

/// Reads a secret file (the admin token, the webhook key), creating a random one on first use.
fn admin_token(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).wrap_err_with(|| format!("cannot read {}", path.display())),
    }
    let token = random_token()?;
    write_private(path, token.as_bytes()).wrap_err_with(|| format!("cannot write {}", path.display()))?;
    Ok(token)
}

/// 32 random bytes, base64url.
fn random_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| color_eyre::eyre::eyre!("no randomness: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A secret every node of one ASE must share, on PostgreSQL: kept in the database (`meta`), made by the
/// first node that needs it (`fresh`, used only then); every later node reads that one.
async fn shared_secret(store: &Store, key: &'static str, fresh: String) -> Result<String> {
    let kept = store
        .call(move |c| {
            store::meta::set_once(c, key, &fresh)?;
            store::meta::get(c, key)
        })
        .await
        .wrap_err_with(|| format!("cannot read the shared secret {key}"))?;
    kept.ok_or_else(|| color_eyre::eyre::eyre!("the shared secret {key} vanished"))
}

/// The webhook HMAC key: configured, else generated once into the data dir (SQLite) or the database
/// (PostgreSQL, shared by every node).
async fn webhook_secret(settings: &Settings, store: &Store) -> Result<Vec<u8>> {
    if !settings.webhooks.secret.is_empty() {
        return Ok(settings.webhooks.secret.as_bytes().to_vec());
    }
    if store.shared_by_nodes() {
        return Ok(shared_secret(store, "webhook_secret", random_token()?)
            .await?
            .into_bytes());
    }
    Ok(admin_token(&settings.paths.webhook_secret())?.into_bytes())
}

/// The STREAM server secret: configured, else generated once into the data dir (SQLite) or the database
/// (PostgreSQL: a STREAM connection set up through one node goes on through any other).
async fn ilp_secret(settings: &Settings, store: &Store) -> Result<[u8; 32]> {
    let path = settings.paths.ilp_secret();
    let (text, origin) = if !settings.ilp.secret.is_empty() {
        (settings.ilp.secret.clone(), "ilp.secret".to_owned())
    } else if store.shared_by_nodes() {
        (
            shared_secret(store, "ilp_secret", random_token()?).await?,
            "the database's ilp_secret".to_owned(),
        )
    } else {
        (admin_token(&path)?, path.display().to_string())
    };
    decode_secret(&text).ok_or_else(|| color_eyre::eyre::eyre!("{origin}: not 32 bytes of base64"))
}

/// The ASE's own Open Payments client key: generated on first use into `ase-client.pem` (SQLite) or the
/// database (PostgreSQL, one key for every node).
async fn ase_client_key(path: &Path, store: &Store) -> Result<ed25519_dalek::SigningKey> {
    if store.shared_by_nodes() {
        let fresh = jwk::to_pkcs8_pem(&jwk::generate().wrap_err("cannot generate the ASE client key")?);
        let pem = shared_secret(store, "ase_client_key", fresh).await?;
        return jwk::from_pkcs8_pem(&pem).wrap_err("cannot read the database's ase_client_key");
    }
    if let Ok(pem) = std::fs::read_to_string(path) {
        return jwk::from_pkcs8_pem(&pem).wrap_err_with(|| format!("cannot read the key {}", path.display()));
    }
    let key = jwk::generate().wrap_err("cannot generate the ASE client key")?;
    write_private(path, jwk::to_pkcs8_pem(&key).as_bytes())
        .wrap_err_with(|| format!("cannot write {}", path.display()))?;
    Ok(key)
}

/// Reads the admin token without creating one (CLI).
pub fn read_admin_token(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
}
