//! Semantic styles. Panes name roles (ok, pending, failed, dim, header, selected, danger, accent), never
//! colours. Defaults are plain ANSI colours; `NO_COLOR` leaves only bold, dim and reverse; `[theme]` in
//! `config.toml` maps roles to ANSI colour names, and bad entries become warnings.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};

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
    pub fn state(&self, state: &str) -> Style {
        match state {
            "completed" | "finalized" | "approved" | "live" => self.ok,
            "failed" | "expired" | "rejected" | "revoked" | "cancelled" => self.failed,
            _ => self.pending,
        }
    }
}
