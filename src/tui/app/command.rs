//! What the prompt's text does once Enter is pressed: a `/` filter is set, a `:` command runs, and a pane's
//! own prompt (a rejection reason, a new wallet, an amount) is handed to that pane.

use super::{App, Effect, Filter, Level};
use crate::{
    states::{DeliveryState, OutgoingState},
    tui::{
        action::Action,
        pane::Pane,
        panes::{grants, outgoing, peers, wallets, webhooks},
        widgets::prompt::{Prompt, PromptKind},
    },
};

impl App {
    /// Enter in the prompt: a filter, a `:` command, or the answer to a pane's prompt.
    pub(in crate::tui) fn submit_prompt(&mut self, p: Prompt) -> Vec<Effect> {
        let text = p.text().to_owned();
        let text = text.as_str();
        match p.kind {
            PromptKind::Filter => {
                let searched = self.store_query(self.pane);
                match Filter::parse(text.trim()) {
                    Some(f) => {
                        self.filters.insert(self.pane, f);
                    }
                    None => {
                        self.filters.remove(&self.pane);
                    }
                }
                if let Some(s) = self.selected_mut() {
                    *s = 0;
                }
                // a pane paged from the store asks the store (a match may be beyond the loaded page)
                if App::searches_store(self.pane) && self.store_query(self.pane) != searched {
                    return vec![self.load(self.pane)];
                }
                Vec::new()
            }
            PromptKind::Reason(grant) => grants::submit_reason(self, grant, text),
            PromptKind::Command => self.command(text.trim()),
            PromptKind::NewWallet => wallets::submit_new(self, text),
            PromptKind::PublicKey(wallet) => wallets::submit_key(self, wallet, text),
            PromptKind::Amount {
                wallet,
                deposit,
                scale,
                code,
            } => wallets::submit_amount(self, wallet, deposit, scale, code, text),
            PromptKind::PeerAmount {
                peer,
                deposit,
                scale,
                code,
            } => peers::submit_amount(self, peer, deposit, scale, code, text),
            PromptKind::Settlement { peer, scale, code } => peers::submit_settlement(self, peer, scale, code, text),
        }
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
        match head {
            "" => Vec::new(),
            "q" | "quit" => self.act(Action::Quit),
            "help" => self.act(Action::Help),
            "demo" => self.act(Action::Demo),
            "outgoing" if arg == Some(OutgoingState::Failed.as_str()) => outgoing::show_failed(self),
            "webhooks" if arg == Some(DeliveryState::Dead.as_str()) => webhooks::show_dead(self),
            "grants" if arg == Some("all") => grants::show_all(self),
            "wallet" => wallets::command(self, arg),
            "desk" => self.desk_command(arg),
            other => match Pane::from_name(other) {
                Some(p) => self.act(Action::Goto(p)),
                // the pane in view's own commands
                None => match self.pane {
                    Pane::Wallets => wallets::pane_command(self, other, rest),
                    _ => None,
                }
                .unwrap_or_else(|| {
                    self.flash(Level::Warn, format!("unknown command {other:?}; try :help"));
                    Vec::new()
                }),
            },
        }
    }
}
