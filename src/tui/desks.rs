//! The desk switcher: one console over several ASEs (`opdesk workshop`'s two). [`Desks`] is itself a
//! [`Desk`] that runs every operation on the desk in view, generic over the desks' own implementation (in
//! process or attached), so nothing else in the console knows there is more than one — except the classroom
//! query, which every desk answers for its part of the class. Its feed follows every desk: the one in view
//! passes through; of the others only the events an operator would want to hear about (payments finishing,
//! grants waiting) come through as [`Feed::Elsewhere`], for the flash line.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use time::OffsetDateTime;
use tokio::sync::mpsc;

use super::{
    app::ServerInfo,
    desk::{Answer, Desk, DeskError, DeskList, FEED_CAPACITY, Feed},
};
use crate::{
    control::{Command, Found, Outcome, Query},
    events::DomainEvent,
};

/// Several named desks, one in view (a handle: clones share which one).
pub struct Desks<D> {
    inner: Arc<Inner<D>>,
}

impl<D> Clone for Desks<D> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<D> {
    desks: Vec<(String, D)>,
    active: AtomicUsize,
}

/// Why a set of desks cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesksError {
    #[error("a console needs at least one desk")]
    Empty,
    #[error("two desks are named {0:?}")]
    Duplicate(String),
}

impl<D: Desk> Desks<D> {
    /// The desks in switching order; the first is in view.
    pub fn new(desks: Vec<(String, D)>) -> Result<Self, DesksError> {
        if desks.is_empty() {
            return Err(DesksError::Empty);
        }
        for (i, (name, _)) in desks.iter().enumerate() {
            if desks[..i].iter().any(|(n, _)| n == name) {
                return Err(DesksError::Duplicate(name.clone()));
            }
        }
        Ok(Self {
            inner: Arc::new(Inner {
                desks,
                active: AtomicUsize::new(0),
            }),
        })
    }

    fn active(&self) -> &D {
        let i = self.inner.active.load(Ordering::Acquire);
        // `new` refuses an empty list and `switch` only stores valid positions
        &self.inner.desks[i.min(self.inner.desks.len() - 1)].1
    }

    fn list(&self) -> DeskList {
        DeskList {
            names: self.inner.desks.iter().map(|(n, _)| n.clone()).collect(),
            active: self.inner.active.load(Ordering::Acquire),
        }
    }
}

/// Whether an event on a desk not in view is worth a flash line.
fn worth_telling(e: &DomainEvent) -> bool {
    matches!(
        e,
        DomainEvent::GrantPending { .. }
            | DomainEvent::IncomingPaymentCompleted { .. }
            | DomainEvent::OutgoingPaymentCompleted { .. }
            | DomainEvent::OutgoingPaymentFailed { .. }
    )
}

/// Forwards desk `i`'s feed into `tx`: as it is while the desk is in view, else only what is worth telling.
async fn follow<D: Desk>(desks: Desks<D>, i: usize, mut rx: mpsc::Receiver<Feed>, tx: mpsc::Sender<Feed>) {
    let name = &desks.inner.desks[i].0;
    while let Some(f) = rx.recv().await {
        let shown = desks.inner.active.load(Ordering::Acquire) == i;
        let f = match f {
            f if shown => f,
            Feed::Event(e) if worth_telling(&e) => Feed::Elsewhere(name.clone(), e),
            _ => continue,
        };
        if tx.send(f).await.is_err() {
            return;
        }
    }
}

impl<D: Desk> Desk for Desks<D> {
    async fn info(&self) -> Answer<ServerInfo> {
        self.active().info().await
    }

    fn now(&self) -> OffsetDateTime {
        self.active().now()
    }

    fn feed(&self) -> mpsc::Receiver<Feed> {
        let (tx, rx) = mpsc::channel(FEED_CAPACITY);
        // every desk's source starts now (not when its task first runs): nothing after this call is missed
        for (i, (_, desk)) in self.inner.desks.iter().enumerate() {
            tokio::spawn(follow(self.clone(), i, desk.feed(), tx.clone()));
        }
        rx
    }

    /// On the desk in view, except the class: a class spans every desk, so each answers for its part.
    async fn ask(&self, q: Query) -> Answer<Found> {
        if !matches!(q, Query::Classroom | Query::Class) {
            return self.active().ask(q).await;
        }
        let mut parts = Vec::new();
        for (_, desk) in &self.inner.desks {
            match desk.ask(Query::Classroom).await? {
                Found::Classroom(p) => parts.push(p),
                _ => return Err(DeskError::Refused("an unexpected answer".into())),
            }
        }
        Ok(Found::Classroom(crate::control::classroom::merge(parts)))
    }

    async fn run(&self, cmd: Command) -> Answer<Outcome> {
        self.active().run(cmd).await
    }

    fn demo(&self) -> Answer<()> {
        self.active().demo()
    }

    fn desks(&self) -> Option<DeskList> {
        Some(self.list())
    }

    async fn switch(&self, name: &str) -> Answer<(ServerInfo, DeskList)> {
        let i = self
            .inner
            .desks
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| DeskError::Refused(format!("no desk named {name:?}")))?;
        let info = self.inner.desks[i].1.info().await?;
        self.inner.active.store(i, Ordering::Release);
        Ok((info, self.list()))
    }
}
