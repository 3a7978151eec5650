//! Where an operator command goes: [`Backend`] runs it on the server that holds the data dir (or the one
//! `--connect` names) through the admin API, or, when no server holds it, on the data dir itself — the same
//! `control::Command`s and `control::Query`s either way, with errors worded alike. The first command that
//! changes something says on stderr which way it went.

use std::{
    io::Write as _,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use color_eyre::eyre::Result;

use super::{Global, OneLine, print};
use crate::{
    admin::{self, AdminClient, Holder},
    app::{self, AppCore},
    clock::SystemClock,
    control,
    server::error::ApiError,
    settings::Settings,
};

/// Where operator commands go, and which way that is, for the operator.
pub(super) struct Backend {
    to: To,
    way: String,
    said: AtomicBool,
}

enum To {
    Remote(AdminClient),
    Local(Box<AppCore>),
}

/// How long a command (or a console) waits for a data dir held by a process that does not answer (a server
/// starting or stopping, another offline command finishing) before it gives up.
pub const HELD_WAIT: Duration = Duration::from_secs(10);

impl Backend {
    /// The server `--connect` names; else the server that holds the data dir (found from its record there);
    /// else the data dir itself, held for the length of the command so that no server starts meanwhile.
    pub(super) async fn connect(settings: &Settings, global: &Global) -> Result<Self> {
        let (to, way) = if let Some(url) = &global.connect {
            let client = AdminClient::new(url, &remote_token(global)?)?;
            client.answers(Duration::from_secs(10)).await.map_err(remote)?;
            let client = client.acting_as(crate::gnap::timeline::Actor::Cli);
            (To::Remote(client), format!("via the server at {url}"))
        } else {
            let dir = &settings.paths.data_dir;
            match admin::find_holder(dir, &settings.paths.admin_token(), HELD_WAIT).await? {
                Holder::Free(lock) => {
                    let core = AppCore::open_locked(settings.clone(), Arc::new(SystemClock), lock).await?;
                    let way = format!("offline: no server holds {}", dir.display());
                    (To::Local(Box::new(core)), way)
                }
                Holder::Server(client, r) => (
                    To::Remote(client.acting_as(crate::gnap::timeline::Actor::Cli)),
                    format!("via the server at {} (pid {})", r.admin, r.pid),
                ),
            }
        };
        Ok(Self {
            to,
            way,
            said: AtomicBool::new(false),
        })
    }

    /// Whether commands run on the data dir itself (no server holds it).
    pub(super) fn is_offline(&self) -> bool {
        matches!(self.to, To::Local(_))
    }

    /// Runs an operator command and prints what it came to: its value as JSON, or the sentence that words it
    /// (the console's flash line says the same) over the value's card.
    pub(super) async fn report<T>(&self, cmd: control::Command, json: bool) -> Result<()>
    where
        T: TryFrom<control::Outcome, Error = control::command::UnexpectedOutcome> + print::Human,
    {
        let (value, sentence) = self.said::<T>(cmd).await?;
        print::emit(json, &value, || format!("{sentence}\n{}", value.card()))
    }

    /// Runs an operator command on the server or on the data dir, whichever this is (errors worded alike), and
    /// takes the value of the kind `T` it answers with the sentence that words what it came to. The first one
    /// says which way it went.
    pub(super) async fn said<T>(&self, cmd: control::Command) -> Result<(T, String)>
    where
        T: TryFrom<control::Outcome, Error = control::command::UnexpectedOutcome>,
    {
        let outcome = self.outcome(cmd.clone()).await?;
        let sentence = outcome.sentence(&cmd);
        Ok((T::try_from(outcome)?, sentence))
    }

    /// Runs an operator command and prints what it came to: its value as JSON, or the sentence that words it.
    pub(super) async fn tell<T>(&self, cmd: control::Command, json: bool) -> Result<()>
    where
        T: TryFrom<control::Outcome, Error = control::command::UnexpectedOutcome> + serde::Serialize,
    {
        let (value, sentence) = self.said::<T>(cmd).await?;
        print::emit(json, &value, || format!("{sentence}\n"))
    }

    /// Runs an operator command and takes what it came to.
    async fn outcome(&self, cmd: control::Command) -> Result<control::Outcome> {
        if !self.said.swap(true, Ordering::Relaxed) {
            let _ = writeln!(std::io::stderr(), "{}", self.way);
        }
        Ok(match &self.to {
            To::Remote(c) => c.run(&cmd).await.map_err(remote)?,
            To::Local(l) => control::execute(&l.state, cmd, control::Cause::cli())
                .await
                .map_err(api)?,
        })
    }

    /// Reads a view from the server or the data dir, whichever this is (errors worded alike).
    pub(super) async fn ask(&self, q: control::Query) -> Result<control::Found> {
        Ok(match &self.to {
            To::Remote(c) => c.ask(&q).await.map_err(remote)?,
            To::Local(l) => control::answer(&l.state, q).await.map_err(api)?,
        })
    }

    /// Reads a view and prints what it found.
    pub(super) async fn show(&self, q: control::Query, json: bool) -> Result<()> {
        print::found(json, &self.ask(q).await?)
    }

    /// Lets go of the data dir, when this held it.
    pub(super) fn close(&self) {
        if let To::Local(core) = &self.to {
            core.close();
        }
    }
}

/// The admin token for `--connect`: from `--token-file`, else `OPDESK_ADMIN_TOKEN`.
pub fn remote_token(global: &Global) -> Result<String> {
    if let Some(path) = &global.token_file {
        return app::read_admin_token(path)
            .ok_or_else(|| OneLine::new(format!("no admin token in {}", path.display())).into());
    }
    std::env::var("OPDESK_ADMIN_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            OneLine::new("--connect needs the server's admin token")
                .hint("give --token-file FILE (the admin.token in the server's data dir) or set OPDESK_ADMIN_TOKEN")
                .into()
        })
}

/// An offline command's error, worded as the admin API would answer it: a refusal (4xx) is the description
/// alone, a failure names its code and status too.
fn api(e: control::Error) -> color_eyre::Report {
    let e = ApiError::from(e);
    let status = e.status.as_u16();
    if e.status.is_client_error() {
        OneLine::refusal(status, e.description).into()
    } else {
        OneLine::refusal(status, format!("{} ({}, HTTP {status})", e.description, e.code)).into()
    }
}

/// A command's error through the admin API, worded as [`api`] words it offline.
fn remote(e: admin::ClientError) -> color_eyre::Report {
    match e {
        admin::ClientError::Api {
            status, description, ..
        } if status < 500 => OneLine::refusal(status, description).into(),
        admin::ClientError::Unreachable(_) => OneLine::new(e.to_string())
            .hint("is the server still running? `opdesk serve` starts it; --connect names another")
            .into(),
        e => OneLine::new(e.to_string()).into(),
    }
}
