//! The event stream consoles and `GET /admin/events` read: durable events replayed from the outbox after a
//! sequence number, then live ones from the bus, in sequence order without a hole (a durable event the bus
//! skipped or brought late is read from the outbox). A reader that falls behind never slows the server: its
//! bus receiver lags, it gets a [`Item::Resync`] and the durable events it missed from the outbox. On
//! PostgreSQL the bus's durable events come from the outbox follower ([`follow_outbox`]).

use std::sync::{Arc, atomic::Ordering};
use std::time::Duration;

use tokio::sync::{Notify, broadcast::error::RecvError, mpsc};
use tokio_util::sync::CancellationToken;

use super::Services;
use crate::{
    events::{EventBus, EventRecord},
    store::{Store, outbox},
};

/// Outbox events read per store call while replaying.
const REPLAY_BATCH: usize = 500;
/// Items buffered between the stream task and its reader.
const BUFFER: usize = 256;

/// One item of the stream.
// Events are the common case and are moved once each; boxing them would allocate per event for nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Event(Box<EventRecord>),
    /// Events were missed (the reader fell behind, or asked for events no longer kept): reload what you show.
    Resync(String),
}

/// Which live-only events a stream carries besides the durable ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Live {
    /// None: durable events only.
    #[default]
    #[serde(rename = "false")]
    No,
    /// The coalesced ones a console shows: the request log's `RequestsServed`, progress, balances. What
    /// consoles read; while any such reader lives, the request log keeps each request's headers and bodies
    /// as they came (shared, not copied; masked and formatted only when someone opens the request).
    Summary,
    /// Those and an `HttpRequest` event per request with its exchange: while any such reader lives, the
    /// server captures and serialises every request for it (the admin API's `live=true`).
    #[serde(rename = "true")]
    Every,
}

/// `GET /admin/events?after=SEQ&live=…`: where a reader starts and which live-only events it takes.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Follow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    #[serde(default)]
    pub live: Live,
}

/// Counts a live reader for as long as it lives (in `Services::capture` for [`Live::Every`], else in
/// `Services::consoles`).
struct Watching(Arc<Services>, Live);

impl Watching {
    fn new(s: &Arc<Services>, live: Live) -> Option<Self> {
        let count = Self::counter(s, live)?;
        count.fetch_add(1, Ordering::Relaxed);
        Some(Self(s.clone(), live))
    }

    fn counter(s: &Services, live: Live) -> Option<&std::sync::atomic::AtomicUsize> {
        match live {
            Live::No => None,
            Live::Summary => Some(&s.consoles),
            Live::Every => Some(&s.capture),
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(count) = Self::counter(&self.0, self.1) {
            count.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Streams events after `after` (none: from now on) until the reader goes away or the server stops.
/// `live` adds the live-only events ([`Live`]). "Now" is read before this returns: whatever the reader does
/// once it has the stream (create a wallet, say) comes after it.
pub async fn stream(s: Arc<Services>, after: Option<i64>, live: Live) -> mpsc::Receiver<Item> {
    let (tx, rx) = mpsc::channel(BUFFER);
    // subscribe before reading the outbox: nothing committed in between is missed
    let mut bus = s.bus.subscribe();
    // from now on: what is already in the outbox is not sent, but is the place to resume from (on
    // PostgreSQL, an event that committed but waits for its number comes after it: the reader subscribed
    // first, and numbering it here could put it behind the place the reader starts from)
    let now = match after {
        Some(_) => None,
        None => Some(s.store.call(|c| outbox::bounds(c)).await),
    };
    tokio::spawn(async move {
        let _watching = Watching::new(&s, live);
        let mut last = match (after, now) {
            (Some(after), _) => match replay(&s, &tx, after, true).await {
                Some(last) => last,
                None => return,
            },
            (None, Some(Ok((_, newest)))) => newest,
            (None, Some(Err(e))) => {
                tracing::warn!(error = %e, "cannot read the event outbox");
                let _ = tx.send(Item::Resync("the event outbox cannot be read".into())).await;
                return;
            }
            (None, None) => return,
        };
        loop {
            let received = tokio::select! {
                _ = s.stopping.cancelled() => return,
                _ = tx.closed() => return,
                r = bus.recv() => r,
            };
            let item = match received {
                Ok(r) => match r.seq {
                    Some(seq) if seq <= last => continue,
                    // a durable event numbered before this one has not come by the bus: one committed in the
                    // same transaction without being published (a threshold crossed by a transfer), or
                    // published after this one; the outbox has both, in order
                    Some(seq) if seq > last + 1 => match replay(&s, &tx, last, false).await {
                        Some(l) if l >= seq => {
                            last = l;
                            continue;
                        }
                        Some(_) => {
                            last = seq;
                            Item::Event(Box::new(r))
                        }
                        None => return,
                    },
                    Some(seq) => {
                        last = seq;
                        Item::Event(Box::new(r))
                    }
                    None if wanted(live, &r) => Item::Event(Box::new(r)),
                    None => continue,
                },
                Err(RecvError::Lagged(n)) => {
                    let reason = format!("{n} events were skipped: the reader fell behind");
                    if tx.send(Item::Resync(reason)).await.is_err() {
                        return;
                    }
                    match replay(&s, &tx, last, false).await {
                        Some(l) => {
                            last = l;
                            continue;
                        }
                        None => return,
                    }
                }
                Err(RecvError::Closed) => return,
            };
            if tx.send(item).await.is_err() {
                return;
            }
        }
    });
    rx
}

/// Whether a live-only event goes to a `live` reader: per-request events only to those who asked for them,
/// and never the admin API's own (consoles polling, this stream: noise).
fn wanted(live: Live, r: &EventRecord) -> bool {
    match (&r.event, live) {
        (_, Live::No) => false,
        (crate::events::DomainEvent::HttpRequest { path, .. }, Live::Every) => !crate::events::is_operator_path(path),
        (crate::events::DomainEvent::HttpRequest { .. }, Live::Summary) => false,
        _ => true,
    }
}

/// Sends the outbox's events after `after`; `check_gap` first says resync when some were pruned already.
/// Returns the last sequence number sent (or `after`), none when the reader went away or the store failed.
async fn replay(s: &Services, tx: &mpsc::Sender<Item>, after: i64, check_gap: bool) -> Option<i64> {
    let mut last = after;
    if check_gap {
        let bounds = s.store.call(|c| outbox::bounds(c)).await;
        let gap = match bounds {
            Ok((Some(oldest), _)) => oldest > after + 1,
            Ok((None, newest)) => newest > after,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the event outbox");
                let _ = tx.send(Item::Resync("the event outbox cannot be read".into())).await;
                return None;
            }
        };
        if gap {
            let reason = format!("events after {after} are no longer kept");
            tx.send(Item::Resync(reason)).await.ok()?;
        }
    }
    loop {
        let from = last;
        let batch = match s.store.call(move |c| outbox::after(c, from, REPLAY_BATCH)).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the event outbox");
                return None;
            }
        };
        let full = batch.len() == REPLAY_BATCH;
        for r in batch {
            last = r.seq.unwrap_or(last);
            tx.send(Item::Event(Box::new(r))).await.ok()?;
        }
        if !full {
            return Some(last);
        }
    }
}

/// The newest sequence number, once what has committed is numbered (PostgreSQL: [`outbox::sequence`]).
fn newest_numbered(c: &mut crate::store::db::Connection) -> Result<i64, crate::store::Error> {
    outbox::sequence(c)?;
    Ok(outbox::bounds(c)?.1)
}

/// How often the follower tries to number events while another node holds the sequencer's lock, and how long
/// it waits between tries (past them, the next wake-up or look numbers them).
const SEQUENCE_TRIES: usize = 50;
const SEQUENCE_AGAIN: Duration = Duration::from_millis(5);

/// The longest the follower waits without a wake-up before it looks anyway.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// On PostgreSQL, where several nodes append to one outbox: follows the outbox from its newest event now until
/// `stop`, publishing on `bus` every event appended after, whichever node appended it, in sequence order.
/// Woken by this node's commits and the other nodes' notifications (`store::notify`); it also looks on its own
/// every few seconds, in case a notification was lost.
pub async fn follow_outbox(bus: EventBus, store: Store, wake: Arc<Notify>, stop: CancellationToken) {
    let mut last = loop {
        match store.call_alone(newest_numbered).await {
            Ok(newest) => break newest,
            Err(e) => {
                tracing::warn!(error = %e, "the event follower cannot read the outbox; trying again");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(LOOK_EVERY) => {}
                }
            }
        }
    };
    loop {
        // what committed since is numbered first: by this node, or, while another holds the sequencer's lock,
        // by that one (for what had committed when it began) and then by this one, trying again shortly
        for _ in 0..SEQUENCE_TRIES {
            match store.call_alone(|c| outbox::sequence(c)).await {
                Ok(Some(_)) => break,
                Ok(None) => tokio::time::sleep(SEQUENCE_AGAIN).await,
                Err(e) => {
                    tracing::warn!(error = %e, "the event follower cannot number new events; trying again");
                    break;
                }
            }
        }
        loop {
            let from = last;
            match store.call(move |c| outbox::after(c, from, REPLAY_BATCH)).await {
                Ok(batch) => {
                    let full = batch.len() == REPLAY_BATCH;
                    last = batch.iter().filter_map(|r| r.seq).max().unwrap_or(last);
                    bus.send_recorded(batch);
                    if !full {
                        break;
                    }
                }
                Err(_) if stop.is_cancelled() => return,
                Err(e) => {
                    tracing::warn!(error = %e, "the event follower cannot read the outbox; trying again");
                    break;
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = wake.notified() => {}
            _ = tokio::time::sleep(LOOK_EVERY) => {}
        }
    }
}
