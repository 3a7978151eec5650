//! What one node tells the others through PostgreSQL's `LISTEN`/`NOTIFY`: the channels, the statement a
//! transaction runs to notify one at its commit, and the listener thread that wakes this node's followers and
//! keeps its caches coherent ([`Coherence`]: what to forget, and whether the caches may be trusted at all).
//! On SQLite there is one process, and nothing to tell.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{
    Error,
    db::{Connection, Listener},
};

/// Something every node follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Events were appended to the outbox.
    Events,
    /// Peers were added, changed or removed.
    Peers,
    /// What a node changed that other nodes may hold in a cache (the payload: a [`Forget`]).
    Caches,
    /// Each node's heartbeat to its own listener (the payload: the listener's token): a listener that stops
    /// hearing it is cut off, though its connection may look open.
    Beat,
}

impl Channel {
    const ALL: [Self; 4] = [Self::Events, Self::Peers, Self::Caches, Self::Beat];

    /// The PostgreSQL channel's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Events => "opdesk_events",
            Self::Peers => "opdesk_peers",
            Self::Caches => "opdesk_caches",
            Self::Beat => "opdesk_beat",
        }
    }
}

/// What a cache must forget because a node changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forget {
    /// A wallet address (its document or its keys), by name.
    Wallet(String),
    /// The tokens of a grant, by grant id (revoked, rotated, or the grant revoked).
    Grant(String),
    /// Everything (notifications may have been missed).
    All,
}

impl Forget {
    fn payload(&self) -> String {
        match self {
            Self::Wallet(n) => format!("wallet:{n}"),
            Self::Grant(id) => format!("grant:{id}"),
            Self::All => "all".to_owned(),
        }
    }

    /// A notification's payload; anything unknown forgets everything.
    fn parse(payload: &str) -> Self {
        match payload.split_once(':') {
            Some(("wallet", n)) => Self::Wallet(n.to_owned()),
            Some(("grant", id)) => Self::Grant(id.to_owned()),
            _ => Self::All,
        }
    }
}

/// Tells every node (this one included) to forget `what` once the caller's transaction commits. Nothing on
/// SQLite, where the one process forgets what it changes itself.
pub fn tell_forget(conn: &Connection, what: &Forget) -> Result<(), Error> {
    if conn.is_postgres() {
        conn.query_row(
            "SELECT pg_notify(CAST(?1 AS TEXT), CAST(?2 AS TEXT))",
            [Channel::Caches.name(), &what.payload()],
            |_| Ok(()),
        )?;
    }
    Ok(())
}

type Forgetter = Box<dyn Fn(&Forget) + Send + Sync>;

/// Whether this node's caches of what other nodes may change (wallets, keys, tokens) can be trusted, and
/// who forgets what when told. A single process (SQLite) always can. A node of several (PostgreSQL) can only
/// while its listener hears the others: until it first connects, and from the moment its connection breaks
/// until it is back — when every cache forgets everything, since changes may have been missed — the caches
/// are neither read nor filled, and every read goes to the database.
#[derive(Clone)]
pub struct Coherence {
    inner: Arc<CoherenceInner>,
}

struct CoherenceInner {
    hearing: AtomicBool,
    forgetters: Mutex<Vec<Forgetter>>,
    /// `hearing` for the metrics.
    gauge: Gauge,
}

impl std::fmt::Debug for Coherence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coherence")
            .field("trusted", &self.trusted())
            .finish_non_exhaustive()
    }
}

impl Coherence {
    /// One process alone: caches are always trusted (`gauge` says 1).
    pub fn single(gauge: Gauge) -> Self {
        Self::new(true, gauge)
    }

    /// One node of several: caches are trusted only while the listener hears the others (`gauge` says so).
    pub fn cluster(gauge: Gauge) -> Self {
        Self::new(false, gauge)
    }

    fn new(hearing: bool, gauge: Gauge) -> Self {
        gauge.set(i64::from(hearing));
        Self {
            inner: Arc::new(CoherenceInner {
                hearing: AtomicBool::new(hearing),
                forgetters: Mutex::new(Vec::new()),
                gauge,
            }),
        }
    }

    /// Whether caches may be read and filled now.
    pub fn trusted(&self) -> bool {
        self.inner.hearing.load(Ordering::Acquire)
    }

    /// `f` forgets what it is told to (it must not block: the listener calls it).
    pub fn on_forget(&self, f: impl Fn(&Forget) + Send + Sync + 'static) {
        if let Ok(mut v) = self.inner.forgetters.lock() {
            v.push(Box::new(f));
        }
    }

    /// Makes every cache forget `what`.
    pub fn forget(&self, what: &Forget) {
        if let Ok(v) = self.inner.forgetters.lock() {
            for f in v.iter() {
                f(what);
            }
        }
    }

    /// The listener hears the others (again): forget everything from before, then trust.
    fn hearing(&self) {
        self.forget(&Forget::All);
        self.inner.hearing.store(true, Ordering::Release);
        self.inner.gauge.set(1);
    }

    /// The listener lost the others: stop trusting at once.
    fn deaf(&self) {
        self.inner.hearing.store(false, Ordering::Release);
        self.inner.gauge.set(0);
    }
}

/// Notifies every node listening on `channel` once the caller's transaction commits (nothing if it rolls
/// back). Nothing on SQLite.
pub fn tell(conn: &Connection, channel: Channel) -> Result<(), Error> {
    if conn.is_postgres() {
        conn.query_row("SELECT pg_notify(CAST(?1 AS TEXT), '')", [channel.name()], |_| Ok(()))?;
    }
    Ok(())
}

/// The tasks a notification wakes, one per channel.
#[derive(Debug, Clone, Default)]
pub struct Wakers {
    pub events: Arc<Notify>,
    pub peers: Arc<Notify>,
}

impl Wakers {
    fn of(&self, channel: Channel) -> &Notify {
        match channel {
            Channel::Events | Channel::Caches | Channel::Beat => &self.events,
            Channel::Peers => &self.peers,
        }
    }

    fn wake_all(&self) {
        self.events.notify_one();
        self.peers.notify_one();
    }
}

/// How long a wait for notifications lasts before the listener looks whether it should stop.
const TICK: Duration = Duration::from_secs(1);
/// The longest pause between attempts to connect again.
const RECONNECT_MAX: Duration = Duration::from_secs(30);
/// How often a node sends its listener a heartbeat, through a connection of its own.
const BEAT: Duration = Duration::from_secs(1);
/// How long a listener goes without hearing its heartbeat before it stops trusting what it (does not) hear
/// and connects again: a connection that died silently (a host gone, a network cut, a frozen server process)
/// looks open and delivers nothing, and on it a revocation on another node would go unheard.
const BEAT_DEADLINE: Duration = Duration::from_secs(4);

/// Listens on every [`Channel`] with a connection of its own, on a thread of its own, and wakes `wakers`
/// until `stop` is cancelled. A broken connection is made again with backoff; everything is woken then,
/// since notifications may have been missed meanwhile (followers read what they missed from the database).
/// Another thread sends the listener a heartbeat every [`BEAT`] through a third connection; a listener that
/// has not heard it for [`BEAT_DEADLINE`] counts as cut off (its caches untrusted) and connects again.
pub fn listen(
    url: String,
    wakers: Wakers,
    coherence: Coherence,
    stop: CancellationToken,
) -> std::io::Result<thread::JoinHandle<()>> {
    let token = crate::ids::new_id();
    beat(url.clone(), token.clone(), stop.clone())?;
    thread::Builder::new().name("opdesk-pg-listen".into()).spawn(move || {
        let names: Vec<&str> = Channel::ALL.iter().map(|c| c.name()).collect();
        let mut pause = Duration::from_millis(250);
        while !stop.is_cancelled() {
            let mut listener = match Listener::connect(&url, &names) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?pause, "cannot listen for other nodes' changes");
                    sleep_unless(&stop, pause);
                    pause = (pause * 2).min(RECONNECT_MAX);
                    continue;
                }
            };
            pause = Duration::from_millis(250);
            coherence.hearing();
            wakers.wake_all();
            let mut beat_heard = std::time::Instant::now();
            while !stop.is_cancelled() {
                match listener.wait(TICK) {
                    Ok(heard) if heard.is_empty() && listener.is_closed() => break,
                    Ok(heard) => {
                        for (_, payload) in heard.iter().filter(|(c, _)| c == Channel::Caches.name()) {
                            coherence.forget(&Forget::parse(payload));
                        }
                        for c in Channel::ALL.into_iter().filter(|c| {
                            !matches!(c, Channel::Caches | Channel::Beat) && heard.iter().any(|(n, _)| n == c.name())
                        }) {
                            wakers.of(c).notify_one();
                        }
                        if heard.iter().any(|(c, p)| c == Channel::Beat.name() && *p == token) {
                            beat_heard = std::time::Instant::now();
                        } else if beat_heard.elapsed() > BEAT_DEADLINE {
                            tracing::warn!(
                                silent_for = ?beat_heard.elapsed(),
                                "the listener stopped hearing its heartbeat; no longer trusting caches, connecting again"
                            );
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "listening for other nodes' changes failed; connecting again");
                        break;
                    }
                }
            }
            coherence.deaf();
        }
        coherence.deaf();
    })
}

/// Sends `token` on [`Channel::Beat`] every [`BEAT`] until `stop` is cancelled, on a thread and a connection
/// of their own (made again with backoff when it breaks).
fn beat(url: String, token: String, stop: CancellationToken) -> std::io::Result<thread::JoinHandle<()>> {
    thread::Builder::new().name("opdesk-pg-beat".into()).spawn(move || {
        let mut conn: Option<Connection> = None;
        let mut pause = BEAT;
        while !stop.is_cancelled() {
            let sent = match conn.take() {
                Some(c) => Ok(c),
                None => Connection::connect_postgres(&url),
            }
            .and_then(|c| {
                c.query_row(
                    "SELECT pg_notify(CAST(?1 AS TEXT), CAST(?2 AS TEXT))",
                    [Channel::Beat.name(), &token],
                    |_| Ok(()),
                )
                .map(|()| c)
            });
            match sent {
                Ok(c) => {
                    conn = Some(c);
                    pause = BEAT;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "cannot send the listener its heartbeat; connecting again");
                    pause = (pause * 2).min(RECONNECT_MAX);
                }
            }
            sleep_unless(&stop, pause);
        }
    })
}

/// Sleeps `d` in short steps, returning early once `stop` is cancelled.
fn sleep_unless(stop: &CancellationToken, d: Duration) {
    let step = Duration::from_millis(100);
    let mut left = d;
    while !stop.is_cancelled() && !left.is_zero() {
        let s = left.min(step);
        thread::sleep(s);
        left -= s;
    }
}
