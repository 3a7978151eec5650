//! The control task: carries out the console's effects on its [`Desk`] (the embedded services or an
//! attached server's admin API), off the UI task, and answers with replies worded the same in both modes.
//! Loads page with keyset cursors.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{
    app::{Effect, HttpRow, Load, PAGE, Reply, short_id},
    desk::{Answer, Desk, DeskError},
    pane::Pane,
};
use crate::{
    ase::liquidity::Direction,
    control::{
        Command, Found, Outcome, Query, Services,
        dto::{PaymentFilter, PeerView},
    },
    money::format_minor,
    states::{DeliveryState, IncomingState, OutgoingState},
    text::sanitize,
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

/// What re-driving every dead delivery came to, in words for the flash line.
fn redriven(n: usize) -> String {
    match n {
        0 => "no dead webhook deliveries to re-drive".to_owned(),
        1 => "1 dead webhook delivery will be sent again".to_owned(),
        n => format!("{n} dead webhook deliveries will be sent again"),
    }
}

/// A liquidity change, in words for the flash line: what moved and where the peer stands now.
fn liquidity_moved(deposit: bool, amount: u64, p: &PeerView) -> String {
    let m = |v: i128| format!("{} {}", format_minor(v, p.asset_scale), sanitize(&p.asset_code));
    let available = p.available_to_send.map_or_else(
        || "sending not limited".to_owned(),
        |a| format!("{} available to send", m(a.into())),
    );
    format!(
        "{} {} {} {}'s liquidity: now {}, {available}",
        if deposit { "deposited" } else { "withdrew" },
        m(amount.into()),
        if deposit { "into" } else { "from" },
        sanitize(&p.name),
        m(p.liquidity.into()),
    )
}

/// A recorded settlement, in words for the flash line: who paid and where the peer stands now.
fn settled(paid: bool, amount: u64, p: &PeerView) -> String {
    let m = |v: i128| format!("{} {}", format_minor(v, p.asset_scale), sanitize(&p.asset_code));
    let name = sanitize(&p.name);
    let who = if paid {
        format!("we paid {name} {}", m(amount.into()))
    } else {
        format!("{name} paid us {}", m(amount.into()))
    };
    let now = match p.position {
        0 => "nobody owes anything".to_owned(),
        v if v > 0 => format!("we owe {name} {}", m(v.unsigned_abs().into())),
        v => format!("{name} owes us {}", m(v.unsigned_abs().into())),
    };
    format!("settlement recorded: {who}; now {now}")
}

/// What a command came to, in words for the flash line (or the generated key, which the console shows once).
fn done(cmd: &Command, o: Outcome) -> Reply {
    Reply::Done(match (cmd, o) {
        (Command::ApproveGrant { id }, _) => format!("grant {} approved", short_id(id)),
        (Command::RejectGrant { id, .. }, _) => format!("grant {} rejected", short_id(id)),
        (Command::RevokeGrant { id }, _) => format!("grant {} revoked", short_id(id)),
        (Command::CompleteIncoming { id }, _) => format!("incoming payment {} completed", short_id(id)),
        (Command::RetryOutgoing { id }, _) => format!("outgoing payment {} retried", short_id(id)),
        (Command::CancelOutgoing { id }, _) => format!("outgoing payment {} cancelled", short_id(id)),
        (Command::CreateWallet(_), Outcome::Wallet(w)) => format!("wallet {} created", w.url),
        (Command::SetPublicName { wallet, .. }, Outcome::Wallet(w)) => match &w.public_name {
            Some(p) => format!("{wallet} now shows the public name {}", sanitize(p)),
            None => format!("{wallet} shows no public name now"),
        },
        (Command::Deposit { wallet, .. }, Outcome::Moved(m)) => {
            format!(
                "deposited into {wallet}: balance {}",
                format_minor(m.balance.balance.into(), m.balance.asset_scale)
            )
        }
        (Command::Withdraw { wallet, .. }, Outcome::Moved(m)) => {
            format!(
                "withdrew from {wallet}: balance {}",
                format_minor(m.balance.balance.into(), m.balance.asset_scale)
            )
        }
        (Command::AddKey { wallet, key }, Outcome::KeyAdded(k)) if key.generate => {
            return Reply::KeyGenerated {
                wallet: wallet.clone(),
                kid: k.jwk.kid,
                pem: k.private_key_pem.unwrap_or_default(),
            };
        }
        (Command::SetOwnerPassphrase { wallet, .. }, Outcome::Passphrase(p)) => match p.generated {
            Some(passphrase) => {
                return Reply::PassphraseGenerated {
                    wallet: wallet.clone(),
                    passphrase,
                };
            }
            None if p.has_passphrase => format!("{wallet}'s owner now decides its grants on the interaction page"),
            None => format!("{wallet} has no owner passphrase: you decide its grants"),
        },
        (Command::AddKey { wallet, .. }, Outcome::KeyAdded(k)) => {
            format!("added key {} to {wallet}", sanitize(&k.jwk.kid))
        }
        (Command::MovePeerLiquidity { liquidity, .. }, Outcome::PeerMoved(m)) => {
            let (deposit, v) = match (&liquidity.deposit, &liquidity.withdraw) {
                (Some(v), _) => (true, v),
                (None, Some(v)) => (false, v),
                (None, None) => return Reply::Done(String::new()),
            };
            liquidity_moved(deposit, v.get(), &m.peer)
        }
        (Command::SettlePeer { settlement, .. }, Outcome::PeerMoved(m)) => settled(
            settlement.direction == Direction::Paid,
            settlement.amount.get(),
            &m.peer,
        ),
        (Command::SetThreshold { .. }, Outcome::Threshold(t)) => t.words(),
        (Command::SetThreshold { measure, subject, .. }, _) => {
            format!("{}: {} threshold removed", sanitize(subject), measure.words())
        }
        (Command::RetryWebhook { seq }, _) => format!("the webhook for event {seq} will be sent again"),
        (_, Outcome::Retried(n)) => redriven(n),
        (_, Outcome::Unlocked(u)) => u.words(),
        (_, Outcome::Peer(p)) => format!("peer {} saved", sanitize(&p.name)),
        (Command::RemoveKey { wallet, kid }, _) => format!("removed key {} from {wallet}", sanitize(kid)),
        (Command::RemovePeer { name }, _) => format!("removed peer {}", sanitize(name)),
        _ => "done".to_owned(),
    })
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
