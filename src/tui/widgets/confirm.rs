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
use crate::tui::{
    app::{App, Effect, Overlay},
    theme::Theme,
};

/// A dangerous action waiting for a yes. Defaults to No.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub question: String,
    pub effect: Effect,
    pub yes: bool,
}

impl App {
    /// A key while the confirm dialog is open.
    pub(in crate::tui) fn on_confirm_key(&mut self, mut c: Confirm, k: KeyEvent) -> Vec<Effect> {
        match k.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                self.overlay = None;
                return vec![c.effect];
            }
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => {
                self.overlay = None;
                return Vec::new();
            }
            KeyCode::Left | KeyCode::Right | KeyCode::Tab | KeyCode::Char('h') | KeyCode::Char('l') => c.yes = !c.yes,
            KeyCode::Enter => {
                self.overlay = None;
                return if c.yes { vec![c.effect] } else { Vec::new() };
            }
            _ => {}
        }
        self.overlay = Some(Overlay::Confirm(c));
        Vec::new()
    }

    /// Opens the confirm dialog: `effect` runs only after a yes.
    pub(in crate::tui) fn ask(&mut self, question: String, effect: Effect) -> Vec<Effect> {
        self.overlay = Some(Overlay::Confirm(Confirm {
            question,
            effect,
            yes: false,
        }));
        Vec::new()
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
