//! What the prompt's text does once Enter is pressed: a `/` filter is set, a `:` command runs, and a pane's
//! own prompt (a rejection reason, a new wallet, an amount) is handed to that pane.

use super::{App, Effect, Filter, Level};
use crate::{
    states::{DeliveryState, OutgoingState},
    tui::{
        action::Action,
        pane::Pane,
        panes::{grants, outgoing, wallets, webhooks},
        widgets::prompt::{Prompt, PromptKind},
    },
};

impl App {
    /// Enter in the prompt: a filter, a `:` command, or the answer to a pane's prompt.
    pub(in crate::tui) fn submit_prompt(&mut self, p: Prompt) -> Vec<Effect> {
        match p.kind {
            PromptKind::Filter => {
                match Filter::parse(p.text.trim()) {
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
                Vec::new()
            }
            PromptKind::Reason(grant) => grants::submit_reason(self, grant, &p.text),
            PromptKind::Command => self.command(p.text.trim()),
            PromptKind::NewWallet => wallets::submit_new(self, &p.text),
            PromptKind::Amount {
                wallet,
                deposit,
                scale,
                code,
            } => wallets::submit_amount(self, wallet, deposit, scale, code, &p.text),
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
        match head {
            "" => Vec::new(),
            "q" | "quit" => self.act(Action::Quit),
            "help" => self.act(Action::Help),
            "demo" => self.act(Action::Demo),
            "outgoing" if arg == Some(OutgoingState::Failed.as_str()) => outgoing::show_failed(self),
            "webhooks" if arg == Some(DeliveryState::Dead.as_str()) => webhooks::show_dead(self),
            "wallet" => wallets::command(self, arg),
            other => match Pane::from_name(other) {
                Some(p) => self.act(Action::Goto(p)),
                None => {
                    self.flash(Level::Warn, format!("unknown command {other:?}; try :help"));
                    Vec::new()
                }
            },
        }
    }
}
