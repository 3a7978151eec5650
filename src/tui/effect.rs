//! What the console asks of its control task: the effects `App::update` emits (the queries panes load,
//! operator commands, desk switches) — data only, so the popups that hold one (a confirmation) need nothing of the App.

use super::pane::Pane;
use crate::control::{Command, Query};

/// A query a pane asked for, to ask the desk; what it finds goes back to that pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    pub pane: Pane,
    pub query: Query,
    /// A further page: what it finds extends the pane's rows.
    pub append: bool,
}

/// A command for the control task. `update` only emits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Load(Load),
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

impl Effect {
    /// Pane `pane` asks for `query`.
    pub fn ask(pane: Pane, query: Query) -> Self {
        Self::Load(Load {
            pane,
            query,
            append: false,
        })
    }
}
