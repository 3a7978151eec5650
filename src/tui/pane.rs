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
}

impl Pane {
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
        }
    }

    pub fn index(self) -> usize {
        Self::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    /// The number key that shows it: `1`…`9`, then `0` for the tenth.
    pub fn digit(self) -> char {
        let n = u32::try_from((self.index() + 1) % 10).unwrap_or(0);
        char::from_digit(n, 10).unwrap_or('0')
    }

    pub fn next(self) -> Pane {
        Self::ALL[(self.index() + 1) % Self::ALL.len()]
    }

    pub fn prev(self) -> Pane {
        Self::ALL[(self.index() + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    pub fn from_name(name: &str) -> Option<Pane> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name() == name || p.name().starts_with(name) && !name.is_empty())
    }
}
