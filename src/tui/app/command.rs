//! What the prompt's text does once Enter is pressed: a `/` filter is set, a `:` command runs, and a pane's
//! own prompt (a rejection reason, a new wallet, an amount) is handed to that pane.

use super::{App, Effect, Filter, Level};
use crate::{
    states::{DeliveryState, OutgoingState},
    tui::{
        action::Action,
        pane::Pane,
        widgets::prompt::{Prompt, PromptKind},
    },
};

impl App {
    /// Enter in the prompt: a filter, a `:` command, or the answer to a pane's prompt.
    pub(in crate::tui) fn submit_prompt(&mut self, p: Prompt) -> Vec<Effect> {
        let text = p.text().to_owned();
        let pane = match &p.kind {
            PromptKind::Filter => return self.set_filter(text.trim()),
            PromptKind::Command => return self.command(text.trim()),
            PromptKind::Reason(_) => Pane::Grants,
            PromptKind::NewWallet | PromptKind::PublicKey(_) | PromptKind::Amount { .. } => Pane::Wallets,
            PromptKind::PeerAmount { .. } | PromptKind::Settlement { .. } => Pane::Peers,
        };
        let outs = self.with_pane(pane, |v, cx| v.submit(p.kind, &text, cx));
        self.apply(pane, outs)
    }

    /// A `/` filter on the pane in view; a pane paged from the store asks the store (a match may be beyond
    /// the loaded page).
    fn set_filter(&mut self, text: &str) -> Vec<Effect> {
        let p = self.pane;
        let searched = self.store_query(p);
        let Some(list) = self.panes.view_mut(p).list_mut() else {
            return Vec::new();
        };
        list.set_filter(Filter::parse(text));
        if self.view().searches_store() && self.store_query(p) != searched {
            return self.load(p).into_iter().collect();
        }
        Vec::new()
    }

    /// `:desk NAME` shows the desk named (or the only one starting with) NAME; `:desk` the next one.
    fn desk_command(&mut self, name: Option<&str>) -> Vec<Effect> {
        let Some(desks) = self.desks.as_ref().filter(|d| d.names.len() > 1) else {
            self.flash(Level::Info, "this console shows one desk (opdesk workshop shows two)");
            return Vec::new();
        };
        let Some(name) = name else {
            return self.act(Action::NextDesk);
        };
        match desks.find(name) {
            Some(n) if n == desks.current() => {
                let text = format!("desk {n} is in view");
                self.flash(Level::Info, text);
                Vec::new()
            }
            Some(n) => vec![Effect::SwitchDesk(n.to_owned())],
            None => {
                let text = format!(
                    "no desk {:?}; the desks are {}",
                    crate::text::sanitize(name),
                    desks.names.join(", ")
                );
                self.flash(Level::Warn, text);
                Vec::new()
            }
        }
    }

    /// Runs a `:` command.
    fn command(&mut self, text: &str) -> Vec<Effect> {
        if !text.is_empty() {
            self.command_history.push(text.to_owned());
        }
        let mut words = text.split_whitespace();
        let head = words.next().unwrap_or("");
        let arg = words.next();
        let rest = text.get(head.len()..).unwrap_or("").trim();
        let (pane, outs) = match head {
            "" => return Vec::new(),
            "q" | "quit" => return self.act(Action::Quit),
            "help" => return self.act(Action::Help),
            "demo" => return self.act(Action::Demo),
            "desk" => return self.desk_command(arg),
            "outgoing" if arg == Some(OutgoingState::Failed.as_str()) => {
                (Pane::Outgoing, self.panes.outgoing.show_failed())
            }
            "webhooks" if arg == Some(DeliveryState::Dead.as_str()) => {
                (Pane::Webhooks, self.panes.webhooks.show_dead())
            }
            "grants" if arg == Some("all") => (Pane::Grants, self.panes.grants.show_all()),
            "wallet" => (Pane::Wallets, self.panes.wallets.show(arg)),
            other => match Pane::from_name(other) {
                Some(p) => return self.act(Action::Goto(p)),
                // the pane in view's own commands
                None => {
                    let p = self.pane;
                    match self.with_pane(p, |v, cx| v.command(other, rest, cx)) {
                        Some(outs) => (p, outs),
                        None => {
                            self.flash(Level::Warn, format!("unknown command {other:?}; try :help"));
                            return Vec::new();
                        }
                    }
                }
            },
        };
        self.apply(pane, outs)
    }
}
