//! Drawing: the screen anatomy (header, tabs, content, breadcrumbs, hint bar, flash line) and the
//! overlays (help, detail, raw JSON, confirm, prompt). Rendering reads the view model only; tables format
//! just the rows that fit, so a table of 100,000 rows costs the same per frame as one of 100.

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::{Modifier, Style},
    text::{Line, Span},
    widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap},
};
use time::OffsetDateTime;

use super::{
    app::{App, Level, Overlay, PromptKind, short_id, tab_label},
    keymap::Scope,
    pane::Pane,
    theme::Theme,
};
use crate::{
    clock::parse_ts,
    states::OutgoingState,
    text::{sanitize, sanitize_lines},
};

/// `in 4m 10s`, `3s ago`.
pub fn relative(to: &str, now: OffsetDateTime) -> String {
    let Ok(t) = parse_ts(to) else { return String::new() };
    let secs = (t - now).whole_seconds();
    let span = |s: i64| {
        let s = s.abs();
        if s >= 86_400 {
            format!("{}d {}h", s / 86_400, (s % 86_400) / 3600)
        } else if s >= 3600 {
            format!("{}h {}m", s / 3600, (s % 3600) / 60)
        } else if s >= 60 {
            format!("{}m {}s", s / 60, s % 60)
        } else {
            format!("{s}s")
        }
    };
    if secs >= 0 {
        format!("in {}", span(secs))
    } else {
        format!("{} ago", span(secs))
    }
}

/// A one-line pipe gauge: `███████░░░ 70%`.
pub fn gauge(received: u64, expected: u64, width: usize) -> String {
    if expected == 0 {
        return String::new();
    }
    let ratio = (received as f64 / expected as f64).clamp(0.0, 1.0);
    let filled = (ratio * width as f64).round() as usize;
    format!(
        "{}{} {:>3}%",
        "█".repeat(filled),
        "░".repeat(width - filled.min(width)),
        (ratio * 100.0).round() as u64
    )
}

/// Draws the whole screen.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame) {
    let area = f.area();
    let [header, tabs, content, crumbs, hints, flash] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(app, theme, f, header);
    draw_tabs(app, theme, f, tabs);
    super::panes::draw(app, theme, f, content);
    draw_crumbs(app, theme, f, crumbs);
    draw_hints(app, theme, f, hints);
    draw_flash(app, theme, f, flash);
    match &app.overlay {
        Some(Overlay::Help) => draw_help(app, theme, f, area),
        Some(Overlay::Detail) => super::panes::draw_detail(app, theme, f, centered(area, 90, 85)),
        Some(Overlay::Json(j)) => {
            let r = centered(area, 90, 85);
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(sanitize_lines(j))
                    .block(Block::bordered().title(" raw JSON (Esc) "))
                    .wrap(Wrap { trim: false }),
                r,
            );
        }
        Some(Overlay::Confirm(c)) => {
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
        Some(Overlay::Prompt(p)) => {
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
        None => {}
    }
}

fn draw_header(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mode = if app.frozen {
        Span::styled(" FROZEN ", theme.pending.add_modifier(Modifier::REVERSED))
    } else {
        Span::styled(" LIVE ", theme.ok.add_modifier(Modifier::REVERSED))
    };
    let mut spans = vec![
        Span::styled(format!("opdesk {} ", app.info.version), theme.header),
        mode,
        Span::raw(" "),
    ];
    if app.readonly {
        spans.push(Span::styled(
            " READONLY ",
            theme.danger.add_modifier(Modifier::REVERSED),
        ));
        spans.push(Span::raw(" "));
    }
    if app.pending_grants() > 0 {
        spans.push(Span::styled(
            format!(" {} grant(s) pending ", app.pending_grants()),
            theme.danger.add_modifier(Modifier::REVERSED),
        ));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled(app.info.public_url.clone(), theme.accent));
    spans.push(Span::styled(format!("  db {}", app.info.database), theme.dim));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_tabs(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut spans = Vec::new();
    for (i, p) in Pane::ALL.iter().enumerate() {
        let style = if *p == app.pane {
            theme.selected.patch(theme.header)
        } else {
            theme.dim
        };
        let style = if *p == Pane::Grants && app.pending_grants() > 0 && *p != app.pane {
            theme.danger
        } else {
            style
        };
        spans.push(Span::styled(tab_label(i, *p, app), style));
        spans.push(Span::raw("│"));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_crumbs(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut parts = vec!["opdesk".to_owned(), app.pane.title().to_owned()];
    if app.pane == Pane::Outgoing && app.failed_only {
        parts.push(OutgoingState::Failed.to_string());
    }
    if let Some(filter) = app.filters.get(&app.pane) {
        parts.push(format!("/{}{}", if filter.invert { "!" } else { "" }, filter.text));
    }
    if matches!(app.overlay, Some(Overlay::Detail | Overlay::Json(_))) {
        let id = match app.pane {
            Pane::Incoming => app.selected_incoming().map(|p| short_id(&p.payment.id)),
            Pane::Grants => app.selected_grant().map(|g| short_id(&g.id)),
            Pane::Outgoing => app.selected_outgoing().map(|p| short_id(&p.payment.id)),
            _ => None,
        };
        parts.push(id.unwrap_or_else(|| "detail".into()));
    }
    let missed = if app.frozen && app.missed > 0 {
        format!("   ({} events while frozen)", app.missed)
    } else {
        String::new()
    };
    f.render_widget(
        Paragraph::new(Span::styled(format!("{}{missed}", parts.join(" › ")), theme.dim)),
        area,
    );
}

fn draw_hints(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut spans = Vec::new();
    for (key, desc, dangerous) in app.keymap.hints(app.pane, app.readonly) {
        spans.push(Span::styled(
            format!(" {key} "),
            if dangerous {
                theme.danger.add_modifier(Modifier::REVERSED)
            } else {
                theme.selected
            },
        ));
        spans.push(Span::styled(
            format!(" {desc}  "),
            if dangerous { theme.danger } else { theme.dim },
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_flash(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    if let Some(fl) = &app.flash {
        let style = match fl.level {
            Level::Info => theme.pending,
            Level::Warn => theme.danger,
            Level::Error => theme.failed.add_modifier(Modifier::BOLD),
        };
        f.render_widget(Paragraph::new(Span::styled(sanitize(&fl.text), style)), area);
    }
}

fn draw_help(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let r = centered(area, 90, 90);
    f.render_widget(Clear, r);
    let mut rows = Vec::new();
    for b in &app.keymap.bindings {
        if app.readonly && b.dangerous {
            continue;
        }
        let scope = match b.scope {
            Scope::Global => "global".to_owned(),
            Scope::Pane(p) => p.name().to_owned(),
        };
        let keys = b.keys.iter().map(|k| k.label()).collect::<Vec<_>>().join(" ");
        let style = if b.dangerous { theme.danger } else { Style::new() };
        rows.push(Row::new(vec![
            Cell::from(keys),
            Cell::from(scope).style(theme.dim),
            Cell::from(b.description).style(style),
        ]));
    }
    let table = Table::new(
        rows,
        [Constraint::Length(12), Constraint::Length(10), Constraint::Min(10)],
    )
    .header(Row::new(vec!["KEYS", "WHERE", "WHAT"]).style(theme.header))
    .block(Block::bordered().title(" help — Esc, ? or q closes "));
    f.render_widget(table, r);
}

/// A rectangle of `pct_x`×`pct_y` percent centred in `area`.
pub fn centered(area: Rect, pct_x: u16, pct_y: u16) -> Rect {
    let w = area.width * pct_x / 100;
    let h = area.height * pct_y / 100;
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn centered_fixed(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The visible slice of `len` rows for a viewport of `height` rows keeping `selected` in view.
pub fn window(len: usize, selected: usize, height: usize) -> (usize, usize) {
    if len == 0 || height == 0 {
        return (0, 0);
    }
    let offset = if selected < height { 0 } else { selected + 1 - height };
    (offset, (offset + height).min(len))
}

/// A bordered block for a pane.
pub fn pane_block<'a>(title: String, right: String, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .title(Line::from(Span::styled(title, theme.header)))
        .title(Line::from(Span::styled(right, theme.dim)).right_aligned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_the_selection() {
        assert_eq!(window(100, 0, 10), (0, 10));
        assert_eq!(window(100, 15, 10), (6, 16));
        assert_eq!(window(5, 4, 10), (0, 5));
        assert_eq!(window(0, 0, 10), (0, 0));
    }

    #[test]
    fn gauges_and_times() {
        assert_eq!(gauge(50, 100, 10), "█████░░░░░  50%");
        assert_eq!(gauge(150, 100, 4), "████ 100%");
        assert_eq!(gauge(1, 0, 4), "");
        let now = parse_ts("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(relative("2026-01-01T00:04:10Z", now), "in 4m 10s");
        assert_eq!(relative("2025-12-31T23:59:57Z", now), "3s ago");
    }
}
