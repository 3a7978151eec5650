//! The console's panes: their order (number keys, Tab), names (`:` commands) and titles, and the pace of
//! the panes that reload on their own schedule ([`Pace`]).

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

/// When a pane that paces its reloads is due: after events (stale) at most every `after_events`, every
/// `poll` anyway (when set), and never while its last load is unanswered (given up after `give_up`). Under
/// load, events come thousands a second: a pane reloaded on each would keep the store busy answering it.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub after_events: Duration,
    pub poll: Option<Duration>,
    pub give_up: Duration,
}

impl Pace {
    /// Whether a reload is due `now`, the last having gone out at `last`.
    pub fn due(&self, now: OffsetDateTime, last: Option<OffsetDateTime>, loading: bool, stale: bool) -> bool {
        let since = last.map(|t| now - t);
        let waited = |d: Duration| since.is_none_or(|s| s >= d);
        if loading && !waited(self.give_up) {
            return false;
        }
        (stale && waited(self.after_events)) || self.poll.is_some_and(waited)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pane {
    Overview,
    Wallets,
    Incoming,
    Grants,
    Outgoing,
    Quotes,
    Requests,
    Log,
    Webhooks,
    Peers,
    /// A class's seats (`opdesk workshop --seats N`): not a numbered pane; a tab while a class is watched.
    Classroom,
}

impl Pane {
    /// The numbered panes, in tab order.
    pub const ALL: [Pane; 10] = [
        Pane::Overview,
        Pane::Wallets,
        Pane::Incoming,
        Pane::Grants,
        Pane::Outgoing,
        Pane::Quotes,
        Pane::Requests,
        Pane::Log,
        Pane::Webhooks,
        Pane::Peers,
    ];

    /// Every pane: the numbered ones, then the Classroom.
    pub const EVERY: [Pane; 11] = {
        let mut every = [Pane::Classroom; 11];
        let mut i = 0;
        while i < Self::ALL.len() {
            every[i] = Self::ALL[i];
            i += 1;
        }
        every
    };

    /// The panes the tab bar shows, in order: the numbered ones, and the Classroom while a class is watched.
    pub fn tabs(classroom: bool) -> &'static [Pane] {
        if classroom { &Self::EVERY } else { &Self::ALL }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Overview => "overview",
            Self::Wallets => "wallets",
            Self::Incoming => "incoming",
            Self::Grants => "grants",
            Self::Outgoing => "outgoing",
            Self::Quotes => "quotes",
            Self::Requests => "requests",
            Self::Log => "log",
            Self::Webhooks => "webhooks",
            Self::Peers => "peers",
            Self::Classroom => "classroom",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Self::Overview => "Overview",
            Self::Wallets => "Wallets",
            Self::Incoming => "Incoming",
            Self::Grants => "Grants",
            Self::Outgoing => "Outgoing",
            Self::Quotes => "Quotes",
            Self::Requests => "Requests",
            Self::Log => "Log",
            Self::Webhooks => "Webhooks",
            Self::Peers => "Peers",
            Self::Classroom => "Classroom",
        }
    }

    /// The number key that shows it: `1`…`9`, then `0` for the tenth; none for the Classroom.
    pub fn digit(self) -> Option<char> {
        let i = Self::ALL.iter().position(|p| *p == self)?;
        char::from_digit(u32::try_from((i + 1) % 10).ok()?, 10)
    }

    /// The tab after it among `tabs` (the first after the last).
    pub fn next(self, tabs: &[Pane]) -> Pane {
        let i = tabs.iter().position(|p| *p == self).unwrap_or(0);
        tabs[(i + 1) % tabs.len().max(1)]
    }

    /// The tab before it among `tabs`.
    pub fn prev(self, tabs: &[Pane]) -> Pane {
        let n = tabs.len().max(1);
        let i = tabs.iter().position(|p| *p == self).unwrap_or(0);
        tabs[(i + n - 1) % n]
    }

    pub fn from_name(name: &str) -> Option<Pane> {
        Self::EVERY
            .iter()
            .copied()
            .find(|p| p.name() == name || p.name().starts_with(name) && !name.is_empty())
    }
}
