//! The one-line prompt at the bottom: the `:` command line (Tab completion, history), the `/` filter and the
//! prompts pane actions open (a rejection reason, a new wallet, an amount). It owns the prompt's state, its
//! keys (line editing is [`LineEdit`]'s) and its drawing, with the terminal cursor where the next character
//! goes; what Enter does with the text is `App::submit_prompt`'s business.

use ratatui::{
    Frame,
    crossterm::event::{KeyCode, KeyEvent},
    layout::Position,
    layout::Rect,
    text::{Line, Span},
    widgets::{Clear, Paragraph},
};

use super::line_edit::LineEdit;
use crate::text::sanitize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKind {
    Command,
    Filter,
    /// The reason for rejecting this grant.
    Reason(String),
    /// `name ASSET scale` of a new wallet.
    NewWallet,
    /// A public key (JWK JSON or its base64) to register for this wallet.
    PublicKey(String),
    /// An amount (in major units, e.g. 10.50) to deposit into (or withdraw from) this wallet.
    Amount {
        wallet: String,
        deposit: bool,
        scale: u8,
        code: String,
    },
    /// An amount (major units) of liquidity to deposit for (or withdraw from) this peer.
    PeerAmount {
        peer: String,
        deposit: bool,
        scale: u8,
        code: String,
    },
    /// `paid AMOUNT` or `received AMOUNT` (major units): a settlement with this peer.
    Settlement {
        peer: String,
        scale: u8,
        code: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub line: LineEdit,
}

impl Prompt {
    /// A prompt of `kind` holding `text` (cursor at its end).
    pub fn new(kind: PromptKind, text: &str) -> Self {
        Self {
            kind,
            line: LineEdit::new(text),
        }
    }

    pub fn text(&self) -> &str {
        self.line.text()
    }
}

/// Commands the `:` prompt completes.
pub const COMMANDS: &[&str] = &[
    "overview",
    "wallets",
    "wallet",
    "incoming",
    "grants",
    "grants all",
    "outgoing",
    "outgoing failed",
    "quotes",
    "requests",
    "log",
    "webhooks",
    "webhooks dead",
    "peers",
    "desk",
    "demo",
    "help",
    "quit",
];

/// What a key did to the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    /// Enter: the text is given.
    Submit(Prompt),
    /// Esc: closed, nothing given.
    Cancel,
    /// Still open, as it is now.
    Open(Prompt),
}

impl Prompt {
    /// A key while the prompt is open; `last_command` is what Up brings back in a `:` prompt.
    pub fn on_key(mut self, k: KeyEvent, last_command: Option<&str>) -> Typed {
        match k.code {
            KeyCode::Esc => return Typed::Cancel,
            KeyCode::Enter => return Typed::Submit(self),
            KeyCode::Tab if self.kind == PromptKind::Command => {
                let matches: Vec<&str> = COMMANDS
                    .iter()
                    .copied()
                    .filter(|c| c.starts_with(self.text()))
                    .collect();
                if let [only] = matches.as_slice() {
                    self.line.set(only);
                }
            }
            KeyCode::Up if self.kind == PromptKind::Command => {
                if let Some(last) = last_command {
                    self.line.set(last);
                }
            }
            _ => {
                self.line.on_key(&k);
            }
        }
        Typed::Open(self)
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
        PromptKind::PublicKey(wallet) => format!("public key for {wallet} (JWK JSON or base64): "),
        PromptKind::Amount {
            wallet, deposit, code, ..
        } => {
            format!(
                "{} {wallet} ({code}, e.g. 10.50): ",
                if *deposit { "deposit into" } else { "withdraw from" }
            )
        }
        PromptKind::PeerAmount {
            peer, deposit, code, ..
        } => {
            format!(
                "{} {} ({}, e.g. 10.50): ",
                if *deposit {
                    "deposit liquidity for"
                } else {
                    "withdraw liquidity of"
                },
                sanitize(peer),
                sanitize(code)
            )
        }
        PromptKind::Settlement { peer, code, .. } => format!(
            "settlement with {} ({}) — paid 25.00 or received 25.00: ",
            sanitize(peer),
            sanitize(code)
        ),
    };
    // the text scrolls left when it would push the cursor past the right edge
    let label_w = Span::raw(label.as_str()).width();
    let room = usize::from(r.width).saturating_sub(label_w + 1).max(1);
    let chars: Vec<char> = p.text().chars().collect();
    let cursor = p.line.cursor();
    let mut skip = 0;
    while skip < cursor && Span::raw(chars[skip..cursor].iter().collect::<String>()).width() > room {
        skip += 1;
    }
    let shown: String = chars[skip..].iter().collect();
    let before: String = chars[skip..cursor].iter().collect();
    f.render_widget(Paragraph::new(Line::from(vec![Span::raw(label), Span::raw(shown)])), r);
    let x = u16::try_from(label_w + Span::raw(before).width()).unwrap_or(u16::MAX);
    if r.width > 0 {
        f.set_cursor_position(Position {
            x: r.x + x.min(r.width - 1),
            y: r.y,
        });
    }
}
