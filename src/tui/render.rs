//! Drawing: the frame chrome (header, tabs, breadcrumbs, hint bar, flash line) around the pane in view, and
//! the overlay on top (help, detail, raw JSON, confirm, prompt). The content comes from `panes`, the overlays
//! from `widgets`; rendering reads the view model only.

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::Modifier,
    text::{Line, Span},
    widgets::Paragraph,
};

use super::{
    action::Action,
    app::{App, Level, Overlay, tab_labels},
    pane::Pane,
    panes,
    theme::Theme,
    widgets::{self, centered},
};
use crate::text::sanitize;

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
    let cx = app.cx(app.pane);
    app.view().draw(&cx, theme, f, content);
    draw_crumbs(app, theme, f, crumbs);
    draw_hints(app, theme, f, hints);
    draw_flash(app, theme, f, flash);
    match &app.overlay {
        Some(Overlay::Help) => widgets::help::draw(
            &app.keymap.bindings,
            app.readonly,
            (app.pane, app.view().commands()),
            app.overlay_scroll,
            theme,
            f,
            area,
        ),
        Some(Overlay::Detail) => {
            panes::draw_detail(app.view(), &cx, app.overlay_scroll, theme, f, centered(area, 90, 85))
        }
        Some(Overlay::Json(j)) => widgets::json::draw(j, app.overlay_scroll, f, area),
        Some(Overlay::Confirm(c)) => widgets::confirm::draw(c, theme, f, area),
        Some(Overlay::Prompt(p)) => widgets::prompt::draw(p, f, area),
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
        Span::styled(format!("opdesk {} ", app.info.server.version), theme.header),
        mode,
        Span::raw(" "),
    ];
    spans.extend(desk_spans(app, theme));
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
    let attention = app.panes.overview.data.attention.len();
    if attention > 0 {
        spans.push(Span::styled(
            format!(" {attention} need attention "),
            theme.failed.add_modifier(Modifier::REVERSED),
        ));
        spans.push(Span::raw(" "));
    }
    if app.disconnected.is_some() {
        spans.push(Span::styled(
            " disconnected — reconnecting ",
            theme.failed.add_modifier(Modifier::REVERSED),
        ));
        spans.push(Span::raw(" "));
    } else {
        spans.push(Span::styled(where_line(app), theme.dim));
    }
    spans.push(Span::styled(app.info.server.public_url.clone(), theme.accent));
    spans.push(Span::styled(format!("  db {}", app.info.server.database), theme.dim));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// A console over several desks: the one in view, and the others (the switch key, `:desk NAME`).
fn desk_spans(app: &App, theme: &Theme) -> Vec<Span<'static>> {
    let Some(d) = app.desks.as_ref().filter(|d| d.names.len() > 1) else {
        return Vec::new();
    };
    let others: Vec<String> = d
        .names
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != d.active)
        .map(|(_, n)| sanitize(n))
        .collect();
    let key = app
        .keymap
        .bindings
        .iter()
        .find(|b| b.action == Action::NextDesk)
        .and_then(|b| b.keys.first())
        .map(|k| k.label())
        .unwrap_or_default();
    vec![
        Span::styled(
            format!(" {} ", sanitize(d.current())),
            theme.accent.add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ),
        Span::styled(format!(" {key}: {}  ", others.join(", ")), theme.dim),
    ]
}

/// Which server the console shows: `embedded`, or `attached to URL (pid N)`.
pub fn where_line(app: &App) -> String {
    match &app.info.attached {
        None => "embedded  ".to_owned(),
        Some(url) => format!("attached to {url} (pid {})  ", app.info.server.pid),
    }
}

fn draw_tabs(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut spans = Vec::new();
    for (p, label) in tab_labels(app, area.width) {
        let style = if p == app.pane {
            theme.selected.patch(theme.header)
        } else {
            theme.dim
        };
        let style = if p == Pane::Grants && app.pending_grants() > 0 && p != app.pane {
            theme.danger
        } else {
            style
        };
        spans.push(Span::styled(label, style));
        spans.push(Span::raw("│"));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_crumbs(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let mut parts = vec!["opdesk".to_owned(), app.pane.title().to_owned()];
    let view = app.view();
    parts.extend(view.narrowed());
    if let Some(filter) = view.list().and_then(|l| l.filter()) {
        parts.push(format!("/{}", filter.typed()));
    }
    if matches!(app.overlay, Some(Overlay::Detail | Overlay::Json(_))) {
        parts.push(view.crumb().unwrap_or_else(|| "detail".into()));
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
