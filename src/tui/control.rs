//! The control task: carries out the console's effects on its [`Desk`] (the embedded services or an
//! attached server's admin API), off the UI task, and answers with replies worded the same in both modes.
//! Loads page with keyset cursors.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{
    app::{Effect, HttpRow, Load, PAGE, Reply},
    desk::{Answer, Desk, DeskError},
    pane::Pane,
};
use crate::{
    control::{Command, Found, Outcome, Query, Services, dto::PaymentFilter},
    states::{DeliveryState, IncomingState, OutgoingState},
};

async fn load<D: Desk>(d: &D, l: Load) -> Answer<Reply> {
    let filter = |state: Option<String>| PaymentFilter {
        wallet: None,
        state,
        cursor: l.cursor.clone(),
        first: Some(PAGE),
        q: l.q.clone(),
        // no list shows credentials, and generating them was most of a page's cost
        methods: Some(false),
    };
    let append = l.cursor.is_some();
    let page = usize::try_from(PAGE).unwrap_or(200);
    let query = match l.pane {
        Pane::Overview => Query::Overview,
        Pane::Wallets => Query::Wallets,
        Pane::Incoming => {
            // an incoming payment's state is worked out, not stored: a filter naming one asks for that state
            let mut f = filter(None);
            if let Some(q) = f.q.take() {
                match q.parse::<IncomingState>() {
                    Ok(st) => f.state = Some(st.to_string()),
                    Err(_) => f.q = Some(q),
                }
            }
            Query::Incoming { filter: f }
        }
        // for Grants, `failed_only` is "open grants only" (the default; `F` shows closed ones too)
        Pane::Grants => Query::Grants {
            all: !l.failed_only,
            state: None,
        },
        Pane::Outgoing => Query::Outgoing {
            filter: filter(l.failed_only.then(|| OutgoingState::Failed.to_string())),
        },
        Pane::Quotes => Query::Quotes { filter: filter(None) },
        Pane::Webhooks => Query::Webhooks {
            state: l.failed_only.then(|| DeliveryState::Dead.to_string()),
            before: l.cursor.as_deref().and_then(|c| c.parse::<i64>().ok()),
            first: page,
        },
        Pane::Peers => Query::Peers,
        Pane::Classroom => Query::Class,
        Pane::Requests => Query::Requests {
            cursor: l.cursor.clone(),
            limit: page,
        },
        Pane::Log => return Ok(Reply::Done(String::new())),
    };
    Ok(match d.ask(query).await? {
        Found::Overview(o) => Reply::Overview(*o),
        Found::Wallets(w) => Reply::Wallets(w),
        Found::Grants(grants) => match d.ask(Query::GrantSpending).await? {
            Found::GrantSpending(spent) => Reply::Grants(grants, spent.into_iter().collect()),
            _ => return Err(unexpected()),
        },
        Found::Incoming(l) => Reply::Incoming {
            rows: l.items,
            next: l.next_cursor,
            append,
        },
        Found::Outgoing(l) => Reply::Outgoing {
            rows: l.items,
            next: l.next_cursor,
            append,
        },
        Found::Quotes(l) => Reply::Quotes {
            rows: l.items,
            next: l.next_cursor,
            append,
        },
        Found::Webhooks(rows) => {
            // a full page: the next one starts before the oldest shown
            let next = (rows.len() == page)
                .then(|| rows.last().map(|r| r.event_seq.to_string()))
                .flatten();
            Reply::Webhooks { rows, next, append }
        }
        Found::Peers(p) => Reply::Peers(p),
        Found::Classroom(c) => Reply::Classroom(c),
        Found::Requests(l) => Reply::Requests {
            rows: l.items.into_iter().map(HttpRow::from).collect(),
            next: l.next_cursor,
            append,
        },
        _ => return Err(unexpected()),
    })
}

fn unexpected() -> DeskError {
    DeskError::Refused("an unexpected answer".into())
}

/// What a command came to, for the flash line in the outcome's own words (or a generated secret, which the
/// console shows once).
fn done(cmd: &Command, o: Outcome) -> Reply {
    match (cmd, o) {
        (Command::AddKey { wallet, key }, Outcome::KeyAdded(k)) if key.generate => Reply::KeyGenerated {
            wallet: wallet.clone(),
            kid: k.jwk.kid,
            pem: k.private_key_pem.unwrap_or_default(),
        },
        (Command::SetOwnerPassphrase { wallet, .. }, Outcome::Passphrase(p)) if p.generated.is_some() => {
            Reply::PassphraseGenerated {
                wallet: wallet.clone(),
                passphrase: p.generated.unwrap_or_default(),
            }
        }
        (cmd, o) => Reply::Done(o.sentence(cmd)),
    }
}

/// Runs one effect on the embedded services and returns the reply (none for `Quit`).
pub async fn run_effect(s: &Arc<Services>, e: Effect) -> Option<Reply> {
    run(s, e).await
}

/// Runs one effect on `d` and returns the reply (none for `Quit`, or a demo that started).
pub async fn run<D: Desk>(d: &D, e: Effect) -> Option<Reply> {
    let r = match e {
        Effect::Load(l) => load(d, l).await,
        Effect::LoadTimeline(id) => match d.ask(Query::Grant { id: id.clone() }).await {
            Ok(Found::Grant(g)) => Ok(Reply::Timeline(id, g.timeline)),
            Ok(_) => Err(unexpected()),
            Err(e) => Err(e),
        },
        Effect::LoadRequest(id) => match d.ask(Query::Request { id }).await {
            Ok(Found::Request(r)) => Ok(Reply::Request(r)),
            Ok(_) => Err(unexpected()),
            Err(e) => Err(e),
        },
        Effect::Run(cmd) => d.run(cmd.clone()).await.map(|o| done(&cmd, o)),
        Effect::Demo => match d.demo() {
            Ok(()) => return None,
            Err(e) => Err(e),
        },
        Effect::SwitchDesk(name) => d.switch(&name).await.map(|(info, desks)| Reply::Switched(info, desks)),
        Effect::Quit | Effect::Suspend => return None,
    };
    Some(r.unwrap_or_else(|e| Reply::Failed(e.to_string())))
}

/// Serves effects from `rx` on `d`, sending replies to `tx`, until `rx` closes. Effects run concurrently.
pub async fn serve<D: Desk>(d: D, mut rx: mpsc::UnboundedReceiver<Effect>, tx: mpsc::UnboundedSender<Reply>) {
    while let Some(e) = rx.recv().await {
        let (d, tx) = (d.clone(), tx.clone());
        tokio::spawn(async move {
            if let Some(r) = run(&d, e).await {
                let _ = tx.send(r);
            }
        });
    }
}
