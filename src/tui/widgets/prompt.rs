//! The one-line prompt at the bottom: the `:` command line (Tab completion, history), the `/` filter and the
//! prompts pane actions open (a rejection reason, a new wallet, an amount). It owns the prompt's state, its
//! keys and its drawing; what a submitted pane prompt does is up to that pane.

use ratatui::{
    Frame,
    crossterm::event::{KeyCode, KeyEvent},
    layout::Rect,
    widgets::{Clear, Paragraph},
};

use crate::{
    states::OutgoingState,
    tui::{
        action::Action,
        app::{App, Effect, Filter, Level, Overlay},
        pane::Pane,
        panes::{grants, outgoing, wallets},
    },
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKind {
    Command,
    Filter,
    /// The reason for rejecting this grant.
    Reason(String),
    /// `name ASSET scale` of a new wallet.
    NewWallet,
    /// An amount (in major units, e.g. 10.50) to deposit into (or withdraw from) this wallet.
    Amount {
        wallet: String,
        deposit: bool,
        scale: u8,
        code: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
}

/// Commands the `:` prompt completes.
pub const COMMANDS: &[&str] = &[
    "overview",
    "wallets",
    "wallet",
    "incoming",
    "grants",
    "outgoing",
    "outgoing failed",
    "quotes",
    "requests",
    "log",
    "demo",
    "help",
    "quit",
];

impl App {
    /// Opens an empty prompt of `kind`.
    pub(in crate::tui) fn open_prompt(&mut self, kind: PromptKind) -> Vec<Effect> {
        self.overlay = Some(Overlay::Prompt(Prompt {
            kind,
            text: String::new(),
        }));
        Vec::new()
    }

    /// A key while the prompt is open.
    pub(in crate::tui) fn on_prompt_key(&mut self, mut p: Prompt, k: KeyEvent) -> Vec<Effect> {
        match k.code {
            KeyCode::Esc => {
                self.overlay = None;
                return Vec::new();
            }
            KeyCode::Enter => {
                self.overlay = None;
                return self.submit_prompt(p);
            }
            KeyCode::Backspace => {
                p.text.pop();
            }
            KeyCode::Tab if p.kind == PromptKind::Command => {
                let matches: Vec<&str> = COMMANDS
                    .iter()
                    .copied()
                    .filter(|c| c.starts_with(p.text.as_str()))
                    .collect();
                if let [only] = matches.as_slice() {
                    p.text = (*only).to_owned();
                }
            }
            KeyCode::Up if p.kind == PromptKind::Command => {
                if let Some(last) = self.command_history.last() {
                    p.text = last.clone();
                }
            }
            KeyCode::Char(c) if !c.is_control() && p.text.chars().count() < 200 => p.text.push(c),
            _ => {}
        }
        self.overlay = Some(Overlay::Prompt(p));
        Vec::new()
    }

    fn submit_prompt(&mut self, p: Prompt) -> Vec<Effect> {
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

/// Draws the prompt over the last line of `area`.
pub fn draw(p: &Prompt, f: &mut Frame, area: Rect) {
    let r = Rect {
        x: area.x,
        y: area.bottom().saturating_sub(1),
        width: area.width,
        height: 1.min(area.height),
    };
    f.render_widget(Clear, r);
    let label = match &p.kind {
        PromptKind::Command => ":".to_owned(),
        PromptKind::Filter => "/".to_owned(),
        PromptKind::Reason(_) => "reason (optional, Enter): ".to_owned(),
        PromptKind::NewWallet => "new wallet — name ASSET [scale], e.g. dave USD 2: ".to_owned(),
        PromptKind::Amount {
            wallet, deposit, code, ..
        } => {
            format!(
                "{} {wallet} ({code}, e.g. 10.50): ",
                if *deposit { "deposit into" } else { "withdraw from" }
            )
        }
    };
    f.render_widget(Paragraph::new(format!("{label}{}▏", p.text)), r);
}
