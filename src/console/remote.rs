//! The attached console's desk: every operation through the admin API client, events from the admin event
//! stream. When the stream ends or breaks (the server stopped or restarted) it says so, retries with a
//! bounded backoff, re-reads the data dir's `server.json` (a restarted server may listen elsewhere) when it
//! attached through the data dir, and once connected (first or again) tells the console to resync. Through
//! the data dir, durable events missed meanwhile are also replayed from the outbox (`after` the last
//! sequence number seen).

use std::{
    path::PathBuf,
    sync::{Arc, RwLock},
    time::Duration,
};

use futures_util::StreamExt;
use time::OffsetDateTime;
use tokio::sync::mpsc;

use crate::{
    admin::{AdminClient, AdminEvent, ClientError},
    control::{Command, Found, Outcome, Query},
    gnap::timeline::Actor,
    owner::{self, Record},
    tui::{
        app::ServerInfo,
        desk::{Answer, Desk, DeskError, FEED_CAPACITY, Feed},
    },
};

/// How the console found its server, and so how it finds it again.
#[derive(Debug, Clone)]
pub enum Source {
    /// `--connect URL`: always that URL and token.
    Fixed,
    /// The server holding a data dir: its record there says where it listens now.
    DataDir {
        dir: PathBuf,
        token_file: PathBuf,
        record: Record,
    },
}

/// The first wait before reconnecting, and the longest.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(5));

/// An attached server (a handle: clones share the connection).
#[derive(Clone)]
pub struct Remote {
    inner: Arc<Inner>,
}

struct Inner {
    client: RwLock<Arc<AdminClient>>,
    source: Source,
    /// A request found the server gone: retry the stream now rather than after the backoff.
    kick: tokio::sync::Notify,
}

impl Inner {
    fn client(&self) -> Arc<AdminClient> {
        match self.client.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Through the data dir: the server's current record and token, if it is (back) up.
    fn refind(&self) {
        let Source::DataDir { dir, token_file, .. } = &self.source else {
            return;
        };
        let (Some(record), Some(token)) = (owner::read_record(dir), crate::app::read_admin_token(token_file)) else {
            return;
        };
        if !owner::process_alive(record.pid) {
            return;
        }
        match AdminClient::new(&record.admin, &token).map(|c| c.acting_as(Actor::Console)) {
            Ok(c) => {
                if let Ok(mut slot) = self.client.write() {
                    *slot = Arc::new(c);
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot reach the server named in server.json"),
        }
    }
}

impl Remote {
    pub fn new(client: AdminClient, source: Source) -> Self {
        Self {
            inner: Arc::new(Inner {
                client: RwLock::new(Arc::new(client.acting_as(Actor::Console))),
                source,
                kick: tokio::sync::Notify::new(),
            }),
        }
    }

    /// The server's base URL.
    pub fn url(&self) -> String {
        self.inner.client().url().to_owned()
    }

    /// A failed request in the console's words; one that found no server wakes the reconnect loop.
    fn failed(&self, e: ClientError) -> DeskError {
        let e = desk_error(e);
        if matches!(e, DeskError::Unreachable(_)) {
            self.inner.kick.notify_one();
        }
        e
    }
}

/// A client error in the console's words: the server's own description when it refused.
fn desk_error(e: ClientError) -> DeskError {
    match e {
        ClientError::Api { description, .. } if !description.is_empty() => DeskError::Refused(description),
        ClientError::Unreachable(_) => DeskError::Unreachable(e.to_string()),
        e => DeskError::Refused(e.to_string()),
    }
}

async fn server_info(client: &AdminClient) -> Answer<ServerInfo> {
    let Found::Server(v) = client.ask(&Query::Server).await.map_err(desk_error)? else {
        return Err(DeskError::Refused("an unexpected answer".into()));
    };
    Ok(ServerInfo {
        server: v,
        attached: Some(client.url().to_owned()),
    })
}

/// Follows the event stream into `tx` for as long as the console listens, reconnecting as needed.
async fn follow(inner: Arc<Inner>, tx: mpsc::Sender<Feed>) {
    let mut after: Option<i64> = None;
    let mut down = false;
    let mut connected_once = false;
    let mut backoff = BACKOFF.0;
    while !tx.is_closed() {
        let client = inner.client();
        let why = match client.events(after, crate::control::events::Live::Summary).await {
            Ok(stream) => {
                // connected (first or again): the console reloads what it shows, so nothing that happened
                // before the stream started (or while it was down) is missed
                if down || !connected_once {
                    match server_info(&client).await {
                        Ok(info) => {
                            tracing::info!(server = %client.url(), "reconnected to the server");
                            if tx.send(Feed::Up(info)).await.is_err() {
                                return;
                            }
                            down = false;
                            connected_once = true;
                        }
                        Err(e) => tracing::debug!(error = %e, "the server answers events but not its view"),
                    }
                }
                backoff = BACKOFF.0;
                let mut stream = std::pin::pin!(stream);
                let mut why = "the server closed the event stream".to_owned();
                while let Some(item) = stream.next().await {
                    let feed = match item {
                        Ok(AdminEvent::Record(r)) => {
                            // through the data dir the outbox is the same one after a restart: replay what
                            // was missed (the recent-activity list shows it); a server named by URL may be
                            // another one, whose numbers mean nothing here (the resync covers it)
                            if r.seq.is_some() && matches!(inner.source, Source::DataDir { .. }) {
                                after = r.seq;
                            }
                            Feed::Event(r.event)
                        }
                        Ok(AdminEvent::Resync(reason)) => {
                            tracing::info!(%reason, "the server asked for a resync");
                            Feed::Resync
                        }
                        Err(e) => {
                            why = e.to_string();
                            break;
                        }
                    };
                    if tx.send(feed).await.is_err() {
                        return;
                    }
                }
                why
            }
            Err(e) => e.to_string(),
        };
        if !down {
            tracing::warn!(reason = %why, "lost the server; reconnecting");
            if tx.send(Feed::Down(why)).await.is_err() {
                return;
            }
            down = true;
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = inner.kick.notified() => {}
        }
        backoff = (backoff * 2).min(BACKOFF.1);
        inner.refind();
    }
}

impl Desk for Remote {
    async fn info(&self) -> Answer<ServerInfo> {
        server_info(&self.inner.client()).await
    }

    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }

    fn feed(&self) -> mpsc::Receiver<Feed> {
        let (tx, rx) = mpsc::channel(FEED_CAPACITY);
        tokio::spawn(follow(self.inner.clone(), tx));
        rx
    }

    async fn ask(&self, q: Query) -> Answer<Found> {
        self.inner.client().ask(&q).await.map_err(|e| self.failed(e))
    }

    async fn run(&self, cmd: Command) -> Answer<Outcome> {
        self.inner.client().run(&cmd).await.map_err(|e| self.failed(e))
    }

    fn demo(&self) -> Answer<()> {
        let Source::DataDir { dir, record, .. } = &self.inner.source else {
            return Err(DeskError::Refused(
                "the demo scenario signs with the data dir's demo-client key: not available with --connect".into(),
            ));
        };
        let pem = std::fs::read_to_string(dir.join("demo-client.pem")).map_err(|e| {
            DeskError::Refused(format!(
                "the demo needs demo-client.pem in the data dir (seeded on first run): {e}"
            ))
        })?;
        let dir = dir.clone();
        let public_url = record.public_url.clone();
        tokio::spawn(async move {
            // a restarted server may have another public URL: its record says
            let url = owner::read_record(&dir).map_or(public_url, |r| r.public_url);
            if let Err(e) = crate::demo::run_against(&url, &pem).await {
                tracing::warn!(error = %e, "demo scenario failed");
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_the_servers_words_and_unreachable_stays_unreachable() {
        let api = ClientError::Api {
            status: 409,
            code: "already_decided".into(),
            description: "grant g1 is already approved".into(),
        };
        assert_eq!(
            desk_error(api),
            DeskError::Refused("grant g1 is already approved".into())
        );
        let bare = ClientError::Api {
            status: 502,
            code: String::new(),
            description: String::new(),
        };
        assert!(matches!(desk_error(bare), DeskError::Refused(t) if t.contains("HTTP 502")));
        let gone = ClientError::Unreachable("http://127.0.0.1:1/admin".into());
        assert_eq!(
            desk_error(gone),
            DeskError::Unreachable("no opdesk server answers at http://127.0.0.1:1/admin".into())
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_reports_down_once_and_the_demo_needs_the_data_dir() {
        crate::egress::install_default_crypto_provider();
        // a port nothing listens on
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(1);
        let client = AdminClient::new(&format!("http://127.0.0.1:{port}"), "t").unwrap_or_else(|e| panic!("{e}"));
        let remote = Remote::new(client, Source::Fixed);
        let mut feed = remote.feed();
        let first = tokio::time::timeout(Duration::from_secs(5), feed.recv()).await;
        assert!(matches!(first, Ok(Some(Feed::Down(_)))), "{first:?}");
        let more = tokio::time::timeout(Duration::from_millis(800), feed.recv()).await;
        assert!(more.is_err(), "retries quietly: {more:?}");
        assert!(matches!(remote.demo(), Err(DeskError::Refused(t)) if t.contains("--connect")));
    }
}
