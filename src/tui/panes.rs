//! The content area: routes drawing, the detail overlay, filtering and pane actions to the pane in view.
//! Each pane lives in its own file under `panes/` and owns its table, its detail view and its own actions;
//! panes draw with the shared widgets and never call back into `render`.

pub mod grants;
pub mod incoming;
pub mod log;
pub mod outgoing;
pub mod overview;
pub mod peers;
pub mod quotes;
pub mod requests;
pub mod wallets;
pub mod webhooks;

use ratatui::{
    Frame,
    layout::Rect,
    text::Line,
    widgets::{Block, Clear, Paragraph, Wrap},
};

use super::{app::App, pane::Pane, theme::Theme};

/// Draws the pane in view into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    match app.pane {
        Pane::Overview => overview::draw(app, theme, f, area),
        Pane::Wallets => wallets::draw(app, theme, f, area),
        Pane::Incoming => incoming::draw(app, theme, f, area),
        Pane::Grants => grants::draw(app, theme, f, area),
        Pane::Outgoing => outgoing::draw(app, theme, f, area),
        Pane::Quotes => quotes::draw(app, theme, f, area),
        Pane::Requests => requests::draw(app, theme, f, area),
        Pane::Log => log::draw(app, theme, f, area),
        Pane::Webhooks => webhooks::draw(app, theme, f, area),
        Pane::Peers => peers::draw(app, theme, f, area),
    }
}

/// The detail view of the selection in the current pane.
pub fn draw_detail(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    f.render_widget(Clear, area);
    let (title, p) = detail_paragraph(app, theme);
    let (total, shown) = detail_extent(&p, area);
    let scroll = app.overlay_scroll.min(total.saturating_sub(shown));
    let title = if total > shown {
        format!(
            "{} {}–{} of {total} (PgUp/PgDn) ",
            title.trim_end(),
            scroll + 1,
            (scroll + shown).min(total)
        )
    } else {
        title
    };
    f.render_widget(
        p.block(Block::bordered().title(title))
            .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)),
        area,
    );
    super::widgets::help::scrollbar(f, area, total, shown, scroll);
}

/// The detail view's wrapped lines and the rows its box shows, in `area` (the box).
pub fn detail_extent(p: &Paragraph<'_>, area: Rect) -> (usize, usize) {
    let inner = area.width.saturating_sub(2).max(1);
    (p.line_count(inner), usize::from(area.height.saturating_sub(2)))
}

/// The detail view of the selection in the pane in view: its title, and its lines wrapped as drawn.
pub fn detail_paragraph<'a>(app: &'a App, theme: &Theme) -> (String, Paragraph<'a>) {
    let detail = match app.pane {
        Pane::Incoming => incoming::detail(app, theme),
        Pane::Grants => grants::detail(app, theme),
        Pane::Outgoing => outgoing::detail(app, theme),
        Pane::Requests => requests::detail(app, theme),
        Pane::Webhooks => webhooks::detail(app, theme),
        Pane::Peers => peers::detail(app, theme),
        _ => Some((
            " detail ".to_owned(),
            vec![Line::from("press y for the raw JSON of the selection")],
        )),
    };
    let (title, lines) = detail.unwrap_or_else(|| (" detail ".to_owned(), Vec::new()));
    (title, Paragraph::new(lines).wrap(Wrap { trim: false }))
}
