//! A key as the console reads it (with Ctrl and Alt), parsed from `[keys]` and labelled for the help; a key a
//! pane declares for itself ([`PaneKey`]); and a binding, a row of the keymap, as the help lists it.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{action::Action, pane::Pane};

/// A key with modifiers (only Ctrl and Alt matter; Shift is in the character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub const fn plain(code: KeyCode) -> Self {
        Self {
            code,
            ctrl: false,
            alt: false,
        }
    }
    pub const fn ch(c: char) -> Self {
        Self::plain(KeyCode::Char(c))
    }
    pub const fn ctrl(c: char) -> Self {
        Self {
            code: KeyCode::Char(c),
            ctrl: true,
            alt: false,
        }
    }

    pub fn from_event(e: &KeyEvent) -> Self {
        Self {
            code: e.code,
            ctrl: e.modifiers.contains(KeyModifiers::CONTROL),
            alt: e.modifiers.contains(KeyModifiers::ALT),
        }
    }

    /// Parses `a`, `A`, `ctrl-u`, `alt-x`, `enter`, `esc`, `tab`, `backtab`, `pgup`, `pgdn`, `home`, `end`,
    /// `up`, `down`, `left`, `right`, `f1`…`f12`, `space`.
    pub fn parse(s: &str) -> Option<Self> {
        let (ctrl, alt, rest) = if let Some(r) = s.strip_prefix("ctrl-") {
            (true, false, r)
        } else if let Some(r) = s.strip_prefix("alt-") {
            (false, true, r)
        } else {
            (false, false, s)
        };
        let code = match rest {
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "pgup" => KeyCode::PageUp,
            "pgdn" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "space" => KeyCode::Char(' '),
            f if f.starts_with('f') && f.len() > 1 => KeyCode::F(f[1..].parse().ok().filter(|n| (1..=12).contains(n))?),
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next()?),
            _ => return None,
        };
        Some(Self { code, ctrl, alt })
    }

    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Enter => "Enter".to_owned(),
            KeyCode::Esc => "Esc".to_owned(),
            KeyCode::Tab => "Tab".to_owned(),
            KeyCode::BackTab => "S-Tab".to_owned(),
            KeyCode::PageUp => "PgUp".to_owned(),
            KeyCode::PageDown => "PgDn".to_owned(),
            KeyCode::Home => "Home".to_owned(),
            KeyCode::End => "End".to_owned(),
            KeyCode::Up => "↑".to_owned(),
            KeyCode::Down => "↓".to_owned(),
            KeyCode::Left => "←".to_owned(),
            KeyCode::Right => "→".to_owned(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Char(' ') => "Space".to_owned(),
            KeyCode::Char(c) => c.to_string(),
            _ => "?".to_owned(),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("C-{base}"),
            (_, true) => format!("M-{base}"),
            _ => base,
        }
    }
}

/// A key a pane declares for itself: its keys, the action, what it does (the help and the hint bar say it),
/// whether it changes money or grants (it then asks first and is hidden under `--readonly`), and whether
/// the hint bar shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneKey {
    pub keys: &'static [Key],
    pub action: Action,
    pub description: &'static str,
    pub dangerous: bool,
    pub hint: bool,
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Pane(Pane),
}

/// One row of the keymap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub keys: Vec<Key>,
    pub scope: Scope,
    pub action: Action,
    pub description: &'static str,
    /// Asks for confirmation and is hidden under `--readonly`.
    pub dangerous: bool,
    /// Shown in the hint bar.
    pub hint: bool,
}
