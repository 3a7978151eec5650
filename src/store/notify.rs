//! What one node tells the others through PostgreSQL's `LISTEN`/`NOTIFY`: the channels, the statement a
//! transaction runs to notify one at its commit, and the listener thread that wakes this node's followers.
//! On SQLite there is one process, and nothing to tell.

use std::{sync::Arc, thread, time::Duration};

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
}

impl Channel {
    const ALL: [Self; 2] = [Self::Events, Self::Peers];

    /// The PostgreSQL channel's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Events => "opdesk_events",
            Self::Peers => "opdesk_peers",
        }
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
            Channel::Events => &self.events,
            Channel::Peers => &self.peers,
        }
    }

    fn wake_all(&self) {
        for c in Channel::ALL {
            self.of(c).notify_one();
        }
    }
}

/// How long a wait for notifications lasts before the listener looks whether it should stop.
const TICK: Duration = Duration::from_secs(1);
/// The longest pause between attempts to connect again.
const RECONNECT_MAX: Duration = Duration::from_secs(30);

/// Listens on every [`Channel`] with a connection of its own, on a thread of its own, and wakes `wakers`
/// until `stop` is cancelled. A broken connection is made again with backoff; everything is woken then,
/// since notifications may have been missed meanwhile (followers read what they missed from the database).
pub fn listen(url: String, wakers: Wakers, stop: CancellationToken) -> std::io::Result<thread::JoinHandle<()>> {
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
            wakers.wake_all();
            while !stop.is_cancelled() {
                match listener.wait(TICK) {
                    Ok(channels) if channels.is_empty() && listener.is_closed() => break,
                    Ok(channels) => {
                        for c in Channel::ALL
                            .into_iter()
                            .filter(|c| channels.iter().any(|n| n == c.name()))
                        {
                            wakers.of(c).notify_one();
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "listening for other nodes' changes failed; connecting again");
                        break;
                    }
                }
            }
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
