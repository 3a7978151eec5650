//! The console's one interface to the ASE, with two implementations: the embedded server's [`Services`] in
//! this process (here), and an attached server's admin API plus event stream (`crate::console`, at the
//! edge: the console itself speaks no HTTP). The control task maps effects onto these operations and the
//! loop reads the [`Feed`], so every pane and action behaves the same in both modes.

use std::{future::Future, sync::Arc};

use time::OffsetDateTime;
use tokio::sync::mpsc;

use crate::{
    control::{self, Command, Found, Outcome, Query, Services},
    events::DomainEvent,
};

/// What the header shows about the server the console shows: what it says of itself (whether it has a webhook
/// URL configured, for one: the Webhooks pane says so when not), and the admin API's base URL an attached
/// console reaches it at (none: embedded in this process).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerInfo {
    pub server: crate::control::dto::ServerView,
    pub attached: Option<String>,
}

/// A wallet with its balance and key count.
pub type WalletRow = crate::control::dto::WalletSummary;

/// Counters and balances for the overview.
pub type OverviewData = crate::control::dto::Overview;

/// Why an operation did not happen, in words for the flash line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeskError {
    /// The ASE refused or failed it (its own words).
    #[error("{0}")]
    Refused(String),
    /// The server did not answer (an attached console reconnects).
    #[error("{0}")]
    Unreachable(String),
}

/// An operation's answer.
pub type Answer<T> = Result<T, DeskError>;

/// What the event source tells the console.
#[derive(Debug, Clone, PartialEq)]
pub enum Feed {
    Event(DomainEvent),
    /// Events were missed: reload everything.
    Resync,
    /// The server stopped answering (why); the source keeps trying.
    Down(String),
    /// Connected (again), possibly to a server on another address: reload everything.
    Up(ServerInfo),
    /// Something happened on another desk of a console over several (`desks`): the desk's name and the event.
    Elsewhere(String, DomainEvent),
}

/// The desks a console over several ASEs switches between, and which one it shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeskList {
    pub names: Vec<String>,
    pub active: usize,
}

impl DeskList {
    /// The name of the desk shown.
    pub fn current(&self) -> &str {
        self.names.get(self.active).map_or("", String::as_str)
    }

    /// The desk after the one shown (wrapping around).
    pub fn next(&self) -> &str {
        let n = self.names.len().max(1);
        self.names.get((self.active + 1) % n).map_or("", String::as_str)
    }

    /// The desk named `name`, or the only one whose name starts with it.
    pub fn find(&self, name: &str) -> Option<&str> {
        if let Some(n) = self.names.iter().find(|n| *n == name) {
            return Some(n);
        }
        let mut starts = self.names.iter().filter(|n| !name.is_empty() && n.starts_with(name));
        match (starts.next(), starts.next()) {
            (Some(n), None) => Some(n),
            _ => None,
        }
    }
}

/// How many feed messages may wait for the console before the source falls behind (and resyncs).
pub const FEED_CAPACITY: usize = 4096;

/// The operations the console runs on the ASE, and its events. Cheap to clone (a handle).
pub trait Desk: Clone + Send + Sync + 'static {
    /// What the header shows.
    fn info(&self) -> impl Future<Output = Answer<ServerInfo>> + Send;
    /// The time (the embedded ASE's clock; the system clock when attached).
    fn now(&self) -> OffsetDateTime;
    /// Starts the event source; it stops when the receiver is dropped.
    fn feed(&self) -> mpsc::Receiver<Feed>;
    /// Reads a view.
    fn ask(&self, q: Query) -> impl Future<Output = Answer<Found>> + Send;
    /// Runs an operator command.
    fn run(&self, cmd: Command) -> impl Future<Output = Answer<Outcome>> + Send;
    /// Starts the demo scenario in the background, or says why it cannot run here.
    fn demo(&self) -> Answer<()>;
    /// The desks this console switches between (none: it shows one ASE).
    fn desks(&self) -> Option<DeskList> {
        None
    }
    /// Shows the desk named `name` from now on; answers its header and the desks.
    fn switch(&self, name: &str) -> impl Future<Output = Answer<(ServerInfo, DeskList)>> + Send {
        let _ = name;
        std::future::ready(Err(DeskError::Refused("this console shows one desk".into())))
    }
}

/// A refusal in the words the admin API would answer with, so both modes say the same.
fn refused(e: control::Error) -> DeskError {
    DeskError::Refused(match e {
        control::Error::Grant(g) => g.description,
        e => e.to_string(),
    })
}

/// The header of the embedded server.
pub fn embedded_info(s: &Services) -> ServerInfo {
    ServerInfo {
        server: control::server_view(s),
        attached: None,
    }
}

/// The embedded server: the command layer in this process, and the event stream the admin API serves
/// (`control::events`), read in-process.
impl Desk for Arc<Services> {
    async fn info(&self) -> Answer<ServerInfo> {
        Ok(embedded_info(self))
    }

    fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    fn feed(&self) -> mpsc::Receiver<Feed> {
        // live: the coalesced request log, progress, balances (a request's exchange is asked for when shown)
        let (tx, rx) = mpsc::channel(FEED_CAPACITY);
        let services = self.clone();
        tokio::spawn(async move {
            let mut events = control::events::stream(services, None, control::events::Live::Summary).await;
            while let Some(item) = events.recv().await {
                let f = match item {
                    control::events::Item::Event(r) => Feed::Event(r.event),
                    control::events::Item::Resync(_) => Feed::Resync,
                };
                if tx.send(f).await.is_err() {
                    return;
                }
            }
        });
        rx
    }

    async fn ask(&self, q: Query) -> Answer<Found> {
        control::answer(self, q).await.map_err(refused)
    }

    async fn run(&self, cmd: Command) -> Answer<Outcome> {
        control::execute(self, cmd, control::Cause::console())
            .await
            .map_err(refused)
    }

    fn demo(&self) -> Answer<()> {
        let settings = self.settings.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::demo::run(&settings).await {
                tracing::warn!(error = %e, "demo scenario failed");
            }
        });
        Ok(())
    }
}
