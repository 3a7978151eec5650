//! The pane table: a bordered table of just the visible window of rows (so 100,000 rows cost what 100 do),
//! with the filter in its title, the loading state on the right, the selection highlighted and a hint when
//! it is empty. Also the pane block and the window maths other views share.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::{Block, Borders, Cell, Paragraph, Row, Table},
};

use crate::{
    states::DeliveryState,
    tui::{app::App, pane::Pane, theme::Theme},
};

fn right_title(app: &App, pane: Pane, loaded: bool, loading: bool, shown: usize, total: usize) -> String {
    let state = if loading {
        "loading…".to_owned()
    } else if !loaded {
        "…".to_owned()
    } else if shown == total {
        format!("{total} rows")
    } else {
        format!("{shown} of {total} rows")
    };
    let more = match pane {
        Pane::Incoming if app.incoming.next_cursor.is_some() => " (more)",
        Pane::Outgoing if app.outgoing.next_cursor.is_some() => " (more)",
        Pane::Quotes if app.quotes.next_cursor.is_some() => " (more)",
        Pane::Webhooks if app.webhooks.next_cursor.is_some() => " (more)",
        _ => "",
    };
    format!(" {state}{more} ")
}

fn title(app: &App, pane: Pane) -> String {
    let mut t = format!(" {} ", pane.title());
    if pane == Pane::Outgoing && app.failed_only {
        t.push_str("[failed] ");
    }
    if pane == Pane::Webhooks && app.dead_only {
        t.push_str(&format!("[{}] ", DeliveryState::Dead));
    }
    if pane == Pane::Grants && app.all_grants {
        t.push_str("[all] ");
    }
    if pane == Pane::Webhooks && !app.info.webhooks_enabled {
        t.push_str("[no webhook URL] ");
    }
    if let Some(f) = app.filters.get(&pane) {
        t.push_str(&format!("[/{}{}] ", if f.invert { "!" } else { "" }, f.text));
    }
    t
}

/// A table of the visible window: `cells(i)` formats row `i` of the pane's items.
#[allow(clippy::too_many_arguments)]
pub fn table<'a>(
    app: &App,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
    pane: Pane,
    header: &[&'a str],
    widths: &[Constraint],
    (loaded, loading, total): (bool, bool, usize),
    cells: impl Fn(usize) -> Vec<Cell<'a>>,
) {
    let visible = app.visible_indices(pane);
    let height = usize::from(area.height.saturating_sub(3));
    let selected = app.selected(pane).min(visible.len().saturating_sub(1));
    let (from, to) = window(visible.len(), selected, height);
    let rows: Vec<Row> = visible[from..to]
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let row = Row::new(cells(i));
            if from + k == selected {
                row.style(theme.selected)
            } else {
                row
            }
        })
        .collect();
    let block = pane_block(
        title(app, pane),
        right_title(app, pane, loaded, loading, visible.len(), total),
        theme,
    );
    let empty = rows.is_empty();
    f.render_widget(
        Table::new(rows, widths.to_vec())
            .header(Row::new(header.to_vec()).style(theme.header))
            .block(block),
        area,
    );
    if empty && loaded && area.height > 4 {
        let msg = if app.filters.contains_key(&pane) {
            "nothing matches the filter (Esc clears it)"
        } else if pane == Pane::Webhooks && !app.info.webhooks_enabled {
            "no webhook URL is configured: set [webhooks] url in config.toml"
        } else if pane == Pane::Grants && !app.all_grants {
            "no open grants (F shows revoked, rejected and expired ones too)"
        } else if pane == Pane::Webhooks && app.dead_only {
            "no dead deliveries (F shows them all)"
        } else if pane == Pane::Webhooks {
            "no deliveries yet: each durable event is delivered to the webhook URL"
        } else {
            "nothing here yet"
        };
        let r = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: 1,
        };
        f.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), r);
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
}
