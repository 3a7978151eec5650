//! Semantic styles. Panes name roles (ok, pending, failed, dim, header, selected, danger, accent), never
//! colours. Defaults are plain ANSI colours; `NO_COLOR` leaves only bold, dim and reverse; `[theme]` in
//! `config.toml` maps roles to ANSI colour names, and bad entries become warnings.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};

use crate::states::{DeliveryState, GrantState, IncomingState, OutgoingState, TokenState};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub ok: Style,
    pub pending: Style,
    pub failed: Style,
    pub dim: Style,
    pub header: Style,
    pub selected: Style,
    pub danger: Style,
    pub accent: Style,
}

fn color(name: &str) -> Option<Color> {
    Some(match name {
        "red" => Color::Red,
        "green" => Color::Green,
        "blue" => Color::Blue,
        "cyan" => Color::Cyan,
        "magenta" => Color::Magenta,
        "gray" | "grey" => Color::Gray,
        "dark-gray" | "dark-grey" => Color::DarkGray,
        "light-red" => Color::LightRed,
        "light-green" => Color::LightGreen,
        "light-blue" => Color::LightBlue,
        "light-cyan" => Color::LightCyan,
        "light-magenta" => Color::LightMagenta,
        "reset" => Color::Reset,
        _ => return None,
    })
}

impl Theme {
    /// ANSI defaults.
    pub fn ansi() -> Self {
        Self {
            ok: Style::new().fg(Color::Green),
            pending: Style::new().fg(Color::Cyan),
            failed: Style::new().fg(Color::Red),
            dim: Style::new().add_modifier(Modifier::DIM),
            header: Style::new().add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            danger: Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            accent: Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD),
        }
    }

    /// Without colour (`NO_COLOR`).
    pub fn monochrome() -> Self {
        Self {
            ok: Style::new(),
            pending: Style::new(),
            failed: Style::new().add_modifier(Modifier::BOLD),
            dim: Style::new().add_modifier(Modifier::DIM),
            header: Style::new().add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            danger: Style::new().add_modifier(Modifier::BOLD),
            accent: Style::new().add_modifier(Modifier::BOLD),
        }
    }

    /// The theme for this environment: `no_color` wins, then `[theme]` overrides.
    pub fn load(no_color: bool, overrides: &BTreeMap<String, String>) -> (Self, Vec<String>) {
        if no_color {
            return (Self::monochrome(), Vec::new());
        }
        let mut t = Self::ansi();
        let mut warnings = Vec::new();
        for (role, name) in overrides {
            let Some(c) = color(name) else {
                warnings.push(format!("[theme] {role} = {name:?} is not an ANSI colour name; ignored"));
                continue;
            };
            let slot = match role.as_str() {
                "ok" => &mut t.ok,
                "pending" => &mut t.pending,
                "failed" => &mut t.failed,
                "danger" => &mut t.danger,
                "accent" => &mut t.accent,
                _ => {
                    warnings.push(format!("[theme] {role:?} is not a role; ignored"));
                    continue;
                }
            };
            *slot = slot.fg(c);
        }
        (t, warnings)
    }

    /// The style of a lifecycle state word.
    pub fn state(&self, state: impl Toned) -> Style {
        match state.tone() {
            Tone::Ok => self.ok,
            Tone::Failed => self.failed,
            Tone::Pending => self.pending,
        }
    }
}

/// How a lifecycle state looks: ended well, ended badly (or refused), or still under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Ok,
    Failed,
    Pending,
}

/// A lifecycle state the console shows in colour.
pub trait Toned {
    fn tone(self) -> Tone;
}

impl Toned for OutgoingState {
    fn tone(self) -> Tone {
        match self {
            Self::Completed => Tone::Ok,
            Self::Failed | Self::Cancelled => Tone::Failed,
            Self::Sending => Tone::Pending,
        }
    }
}

impl Toned for IncomingState {
    fn tone(self) -> Tone {
        match self {
            Self::Completed => Tone::Ok,
            Self::Expired => Tone::Failed,
            Self::Pending => Tone::Pending,
        }
    }
}

impl Toned for GrantState {
    fn tone(self) -> Tone {
        match self {
            Self::Approved | Self::Finalized => Tone::Ok,
            Self::Rejected | Self::Revoked | Self::Expired => Tone::Failed,
            Self::Pending => Tone::Pending,
        }
    }
}

impl Toned for DeliveryState {
    fn tone(self) -> Tone {
        match self {
            Self::Delivered => Tone::Ok,
            Self::Dead => Tone::Failed,
            Self::Pending => Tone::Pending,
        }
    }
}

impl Toned for TokenState {
    fn tone(self) -> Tone {
        match self {
            Self::Live => Tone::Ok,
            Self::Revoked => Tone::Failed,
        }
    }
}
