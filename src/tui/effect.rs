//! What the console asks of its control task: the effects `App::update` emits (loads, operator commands, desk
//! switches) — data only, so the popups that hold one (a confirmation) need nothing of the App.

use super::pane::Pane;
use crate::control::Command;

/// What the control task should load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    pub pane: Pane,
    /// Only failed payments (Outgoing), dead deliveries (Webhooks), open grants (Grants: closed ones hidden).
    pub failed_only: bool,
    /// Continue after this id (appends to the loaded rows).
    pub cursor: Option<String>,
    /// The pane's `/` filter, matched by the store (panes paged from the store; none for inverted filters).
    pub q: Option<String>,
}

/// A command for the control task. `update` only emits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Load(Load),
    /// Fetch one grant's timeline (the Grants detail shows it).
    LoadTimeline(String),
    /// Fetch one request's exchange and signature report from the server's ring (the Requests detail).
    LoadRequest(String),
    /// An operator command, confirmed where it needs it.
    Run(Command),
    Demo,
    /// A console over several desks: show the one with this name.
    SwitchDesk(String),
    /// Give the terminal back to the shell and stop until resumed (the run loop's business, not the control
    /// task's).
    Suspend,
    Quit,
}
