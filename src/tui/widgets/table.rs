//! The pane table: a bordered table of just the visible window of rows (so 100,000 rows cost what 100 do),
//! with the filter in its title, the loading state on the right, the selection highlighted and a hint when
//! it is empty. Also the pane block and the window maths other views share.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::{Block, Borders, Cell, Paragraph, Row, Table},
};

use crate::tui::theme::Theme;

/// What a pane's table shows of its state (`Table::view`): its title, whether more rows wait past
/// the loaded page, what it says when empty, the rows the filter keeps and the one selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableView {
    pub title: String,
    pub more: bool,
    pub empty: &'static str,
    pub visible: Vec<usize>,
    pub selected: usize,
}

fn right_title(more: bool, loaded: bool, loading: bool, shown: usize, total: usize) -> String {
    let state = if loading {
        "loading…".to_owned()
    } else if !loaded {
        "…".to_owned()
    } else if shown == total {
        format!("{total} rows")
    } else {
        format!("{shown} of {total} rows")
    };
    format!(" {state}{} ", if more { " (more)" } else { "" })
}

/// A table of the visible window: `cells(i)` formats row `i` of the pane's items.
#[allow(clippy::too_many_arguments)]
pub fn table<'a>(
    view: &TableView,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
    header: &[&'a str],
    widths: &[Constraint],
    (loaded, loading, total): (bool, bool, usize),
    cells: impl Fn(usize) -> Vec<Cell<'a>>,
) {
    let visible = &view.visible;
    let height = usize::from(area.height.saturating_sub(3));
    let selected = view.selected.min(visible.len().saturating_sub(1));
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
        view.title.clone(),
        right_title(view.more, loaded, loading, visible.len(), total),
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
        let msg = view.empty;
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
