//! The confirm dialog every dangerous action goes through: its state (defaults to No), its keys and its
//! drawing. A yes hands back the effect it was opened with; anything else drops it.

use ratatui::{
    Frame,
    crossterm::event::{KeyCode, KeyEvent},
    layout::Rect,
    style::Style,
    text::{Line, Span},
    widgets::{Block, Clear, Paragraph, Wrap},
};

use super::centered_fixed;
use crate::tui::{effect::Effect, theme::Theme};

/// A dangerous action waiting for a yes. Defaults to No.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub question: String,
    pub effect: Effect,
    pub yes: bool,
}

/// What a key did to the dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Yes: run the effect.
    Yes(Effect),
    /// No, or closed.
    No,
    /// Still open, as it is now.
    Open(Confirm),
}

impl Confirm {
    /// A dialog asking `question` before `effect`, defaulting to No.
    pub fn new(question: String, effect: Effect) -> Self {
        Self {
            question,
            effect,
            yes: false,
        }
    }

    /// A key while the dialog is open: the answer, or the dialog as it stands.
    pub fn on_key(mut self, k: KeyEvent) -> Answer {
        match k.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Answer::Yes(self.effect),
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => Answer::No,
            KeyCode::Enter if self.yes => Answer::Yes(self.effect),
            KeyCode::Enter => Answer::No,
            KeyCode::Left | KeyCode::Right | KeyCode::Tab | KeyCode::Char('h') | KeyCode::Char('l') => {
                self.yes = !self.yes;
                Answer::Open(self)
            }
            _ => Answer::Open(self),
        }
    }
}

/// Draws the dialog in the middle of `area`.
pub fn draw(c: &Confirm, theme: &Theme, f: &mut Frame, area: Rect) {
    let r = centered_fixed(area, 60, 7);
    f.render_widget(Clear, r);
    let (no, yes) = if c.yes {
        (Style::new(), theme.selected.patch(theme.danger))
    } else {
        (theme.selected, theme.danger)
    };
    let text = vec![
        Line::from(c.question.clone()),
        Line::from(""),
        Line::from(vec![
            Span::styled(" No ", no),
            Span::raw("   "),
            Span::styled(" Yes ", yes),
        ]),
        Line::from(Span::styled("y yes · n/Esc no · ←/→ choose · Enter", theme.dim)),
    ];
    f.render_widget(
        Paragraph::new(text)
            .block(Block::bordered().title(" confirm ").border_style(theme.danger))
            .wrap(Wrap { trim: true }),
        r,
    );
}
