//! The `?` help overlay: every keymap row (dangerous ones hidden in read-only mode) with where it applies,
//! then the `:` commands of the pane in view, scrolled by the movement keys while open, with a scrollbar
//! when the rows outrun the box.

use ratatui::{
    Frame,
    layout::{Constraint, Margin, Rect},
    style::Style,
    widgets::{Block, Cell, Clear, Row, Scrollbar, ScrollbarOrientation, ScrollbarState, Table},
};

use super::centered;
use crate::tui::{
    key::{Binding, Scope},
    pane::Pane,
    theme::Theme,
};

/// The pane in view and its own `:` commands (command, what it does).
pub type Commands<'a> = (Pane, &'a [(&'static str, &'static str)]);

/// The box the help takes in `area`.
pub fn boxed(area: Rect) -> Rect {
    centered(area, 90, 90)
}

/// Rows the box shows at once (inside the border, under the header).
pub fn visible(area: Rect) -> usize {
    usize::from(boxed(area).height.saturating_sub(3))
}

/// The number of rows the help lists (dangerous bindings hidden from a `readonly` console).
pub fn len(bindings: &[Binding], readonly: bool, commands: Commands<'_>) -> usize {
    bindings.iter().filter(|b| !(readonly && b.dangerous)).count() + commands.1.len()
}

/// Draws the help table over the middle of `area`, from row `scroll` (clamped).
pub fn draw(
    bindings: &[Binding],
    readonly: bool,
    commands: Commands<'_>,
    scroll: usize,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
) {
    let r = boxed(area);
    f.render_widget(Clear, r);
    let (total, shown) = (len(bindings, readonly, commands), visible(area));
    let scroll = scroll.min(total.saturating_sub(shown));
    let keys = bindings.iter().filter(|b| !(readonly && b.dangerous)).map(|b| {
        let scope = match b.scope {
            Scope::Global => "global".to_owned(),
            Scope::Pane(p) => p.name().to_owned(),
        };
        let keys = b.keys.iter().map(|k| k.label()).collect::<Vec<_>>().join(" ");
        let style = if b.dangerous { theme.danger } else { Style::new() };
        Row::new(vec![
            Cell::from(keys),
            Cell::from(scope).style(theme.dim),
            Cell::from(b.description).style(style),
        ])
    });
    let (pane, own) = commands;
    let own = own.iter().map(|(c, what)| {
        Row::new(vec![
            Cell::from(format!(":{c}")),
            Cell::from(pane.name()).style(theme.dim),
            Cell::from(*what),
        ])
    });
    let rows: Vec<Row> = keys.chain(own).skip(scroll).collect();
    let title = if total > shown {
        format!(
            " help {}–{} of {total} — j/k PgUp/PgDn g/G scroll, Esc closes ",
            scroll + 1,
            (scroll + shown).min(total)
        )
    } else {
        " help — Esc, ? or q closes ".to_owned()
    };
    let table = Table::new(
        rows,
        [Constraint::Length(12), Constraint::Length(10), Constraint::Min(10)],
    )
    .header(Row::new(vec!["KEYS", "WHERE", "WHAT"]).style(theme.header))
    .block(Block::bordered().title(title));
    f.render_widget(table, r);
    scrollbar(f, r, total, shown, scroll);
}

/// A vertical scrollbar on the right border of `r` when `total` lines outrun the `shown` ones.
pub fn scrollbar(f: &mut Frame, r: Rect, total: usize, shown: usize, scroll: usize) {
    if total <= shown {
        return;
    }
    let mut state = ScrollbarState::new(total.saturating_sub(shown))
        .position(scroll)
        .viewport_content_length(shown);
    f.render_stateful_widget(
        Scrollbar::new(ScrollbarOrientation::VerticalRight),
        r.inner(Margin {
            vertical: 1,
            horizontal: 0,
        }),
        &mut state,
    );
}
