//! The typed HTTP client for the admin API (`crate::server::admin`), which the CLI and attached consoles
//! drive: `run(Command)` and `ask(Query)` (`POST /admin/commands`, `/admin/queries`), and its event stream
//! (`GET /admin/events`, server-sent events parsed by `sse_stream`). Errors keep the server's envelope so callers
//! can show the server's own words; an unreachable server is its own variant so the CLI can fall back to the
//! data dir. [`find_holder`] says who serves a data dir: the one way the CLI
//! and the console decide between attaching to a server and opening the data dir themselves.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use futures_util::{Stream, StreamExt as _};
use reqwest::StatusCode;
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    control::{Command, Found, Outcome, Query},
    events::EventRecord,
    owner::{self, DirLock, Record},
};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no opdesk server answers at {0}")]
    Unreachable(String),
    #[error("{description} ({code}, HTTP {status})")]
    Api {
        status: u16,
        code: String,
        description: String,
    },
    #[error("unexpected response: {0}")]
    Protocol(String),
}

pub struct AdminClient {
    http: reqwest::Client,
    /// For the event stream: no overall timeout, but a read timeout (the server sends keep-alives).
    stream: reqwest::Client,
    root: String,
    base: String,
    token: String,
    /// Sent as `opdesk-actor` so the server knows which tool gave a command (a grant's timeline says so).
    actor: Option<crate::gnap::timeline::Actor>,
}

/// What the event stream delivers.
// Events are the common case and are moved once each; boxing them would allocate per event for nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminEvent {
    /// A domain event (with its outbox sequence number when durable).
    Record(Box<EventRecord>),
    /// The server could not give every event since the position asked for (or the subscriber fell
    /// behind): reload everything; the stream continues live.
    Resync(String),
}

/// How long the event stream may stay silent (the server sends a keep-alive every 15 s).
const STREAM_SILENCE: Duration = Duration::from_secs(45);

impl AdminClient {
    /// `base` is the server root, e.g. `http://127.0.0.1:4000`.
    pub fn new(base: &str, token: &str) -> Result<Self, ClientError> {
        let client = |b: reqwest::ClientBuilder| {
            let b = b.redirect(reqwest::redirect::Policy::none());
            b.connect_timeout(Duration::from_secs(2))
                .build()
                .map_err(|e| ClientError::Protocol(e.to_string()))
        };
        let http = client(reqwest::Client::builder().timeout(Duration::from_secs(30)))?;
        let stream = client(reqwest::Client::builder().read_timeout(STREAM_SILENCE))?;
        let root = crate::names::base_url(base);
        Ok(Self {
            http,
            stream,
            base: format!("{root}/admin"),
            root,
            token: token.to_owned(),
            actor: None,
        })
    }

    /// This client speaks for `actor` (the CLI or a console): decisions made through it are recorded so.
    pub fn acting_as(mut self, actor: crate::gnap::timeline::Actor) -> Self {
        self.actor = Some(actor);
        self
    }

    /// The server's base URL, as given.
    pub fn url(&self) -> &str {
        &self.root
    }

    fn unreachable(&self, e: &reqwest::Error) -> ClientError {
        if e.is_connect() {
            ClientError::Unreachable(self.base.clone())
        } else {
            ClientError::Protocol(e.to_string())
        }
    }

    /// The admin event stream: durable events after `after` first (from the outbox), then live ones; `live`
    /// says which live-only ones come too (the request log coalesced, payment progress, balances; or every
    /// request's exchange). Ends when the server stops.
    pub async fn events(
        &self,
        after: Option<i64>,
        live: crate::control::events::Live,
    ) -> Result<impl Stream<Item = Result<AdminEvent, ClientError>> + Send + 'static, ClientError> {
        let res = self
            .stream
            .get(format!("{}/events", self.base))
            .query(&crate::control::events::Follow { after, live })
            .bearer_auth(&self.token)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        if !res.status().is_success() {
            let status = res.status();
            let bytes = res.bytes().await.unwrap_or_default();
            return Err(api_error(status, &bytes));
        }
        let messages = sse_stream::SseStream::new(http::Response::from(res).into_body());
        Ok(messages.filter_map(|m| {
            std::future::ready(match m {
                Ok(m) => admin_event(m),
                Err(e) => Some(Err(ClientError::Protocol(format!("the event stream broke: {e}")))),
            })
        }))
    }

    /// Whether the server answers the admin API within `within` (a stopped or hung one does not: its
    /// kernel still accepts the connection).
    pub async fn answers(&self, within: Duration) -> Result<(), ClientError> {
        match tokio::time::timeout(within, self.ask(&Query::Server)).await {
            Ok(r) => r.map(|_| ()),
            Err(_) => Err(ClientError::Unreachable(self.base.clone())),
        }
    }

    async fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, ClientError> {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body);
        if let Some(a) = self.actor {
            req = req.header(crate::gnap::timeline::ACTOR_HEADER, a.as_str());
        }
        let res = req.send().await.map_err(|e| self.unreachable(&e))?;
        let status = res.status();
        let bytes = res.bytes().await.map_err(|e| ClientError::Protocol(e.to_string()))?;
        if !status.is_success() {
            return Err(api_error(status, &bytes));
        }
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// Runs an operator command on the server (`POST /admin/commands`).
    pub async fn run(&self, cmd: &Command) -> Result<Outcome, ClientError> {
        self.post("/commands", cmd).await
    }

    /// Reads a view from the server (`POST /admin/queries`).
    pub async fn ask(&self, q: &Query) -> Result<Found, ClientError> {
        self.post("/queries", q).await
    }
}

/// A refusal in the server's own words (its error envelope).
fn api_error(status: StatusCode, body: &[u8]) -> ClientError {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let field = |k: &str| v["error"][k].as_str().unwrap_or("").to_owned();
    // where the description is the reference ASE's terse string, opdesk's own wording is in details.reason
    let description = match v["error"]["details"]["reason"].as_str() {
        Some(reason) => format!("{}: {reason}", field("description")),
        None => field("description"),
    };
    ClientError::Api {
        status: status.as_u16(),
        code: field("code"),
        description,
    }
}

/// One stream message as an event: `resync`, or an [`EventRecord`] (an event this build does not know is
/// skipped, so a newer server does not break an older console); a block without data is none.
fn admin_event(m: sse_stream::Sse) -> Option<Result<AdminEvent, ClientError>> {
    let data = m.data?;
    if m.event.as_deref() == Some("resync") {
        let v: serde_json::Value = serde_json::from_str(&data).unwrap_or_default();
        let reason = v["reason"]
            .as_str()
            .unwrap_or("the server asked for a resync")
            .to_owned();
        return Some(Ok(AdminEvent::Resync(reason)));
    }
    match serde_json::from_str::<EventRecord>(&data) {
        Ok(r) => Some(Ok(AdminEvent::Record(Box::new(r)))),
        Err(e) => {
            tracing::debug!(event = ?m.event, error = %e, "skipped an event this build does not know");
            None
        }
    }
}

/// Who serves a data dir, as a client finds out.
pub enum Holder {
    /// No process held it: the caller holds it now (and may open it).
    Free(DirLock),
    /// A running server holds it and answers its admin API.
    Server(AdminClient, Record),
}

/// Who serves the data dir `dir`: nobody (then the caller takes it), or a server whose record there says
/// where it listens and which answers with the admin token in `token_file`. A holder that does not answer
/// yet (a server starting or stopping, an offline command finishing) is waited for, up to `wait`; then the
/// error names it.
pub async fn find_holder(dir: &Path, token_file: &Path, wait: Duration) -> color_eyre::Result<Holder> {
    let deadline = Instant::now() + wait;
    loop {
        let held = match DirLock::acquire(dir) {
            Ok(lock) => return Ok(Holder::Free(lock)),
            Err(held @ owner::Error::Held { .. }) => held,
            Err(e) => return Err(e.into()),
        };
        if let owner::Error::Held { record: Some(r), .. } = &held
            && let Some(token) = crate::app::read_admin_token(token_file)
        {
            let client = AdminClient::new(&r.admin, &token)?;
            match client.answers(Duration::from_secs(2)).await {
                Ok(()) => return Ok(Holder::Server(client, (**r).clone())),
                // a server starting or stopping: wait for it, or for the data dir
                Err(ClientError::Unreachable(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if Instant::now() >= deadline {
            return Err(held.into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_the_servers_own_reason_next_to_the_terse_description() {
        let body = br#"{"error":{"code":"invalid_receiver","description":"invalid receiver","details":{"reason":"the receiver has expired"}}}"#;
        let ClientError::Api {
            status,
            code,
            description,
        } = api_error(StatusCode::BAD_REQUEST, body)
        else {
            panic!("an API error")
        };
        assert_eq!((status, code.as_str()), (400, "invalid_receiver"));
        assert_eq!(description, "invalid receiver: the receiver has expired");
        let ClientError::Api { description, .. } = api_error(
            StatusCode::NOT_FOUND,
            br#"{"error":{"code":"not_found","description":"no such wallet"}}"#,
        ) else {
            panic!("an API error")
        };
        assert_eq!(description, "no such wallet");
    }
}
