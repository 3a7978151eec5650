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
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(title))
            .wrap(Wrap { trim: false }),
        area,
    );
}
