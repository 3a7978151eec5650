//! The raw JSON overlay (`y`): the selection's JSON (or a one-time secret), sanitised and wrapped to the box,
//! scrolled by the movement keys while open, with a scrollbar when it outruns the box.

use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Clear, Paragraph},
};

use super::{centered, help::scrollbar};
use crate::text::sanitize_lines;

/// The box the JSON takes in `area`.
pub fn boxed(area: Rect) -> Rect {
    centered(area, 90, 85)
}

/// Lines the box shows at once (inside the border).
pub fn visible(area: Rect) -> usize {
    usize::from(boxed(area).height.saturating_sub(2))
}

/// `json`, sanitised and wrapped to the inside of the box in `area` (by display width, at any character).
pub fn lines(json: &str, area: Rect) -> Vec<String> {
    let width = usize::from(boxed(area).width.saturating_sub(2)).max(1);
    let mut out = Vec::new();
    for line in sanitize_lines(json).split('\n') {
        let mut cur = String::new();
        let mut w = 0;
        for c in line.chars() {
            let cw = Span::raw(c.to_string()).width();
            if w + cw > width && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
                w = 0;
            }
            cur.push(c);
            w += cw;
        }
        out.push(cur);
    }
    out
}

/// Draws `json` over the middle of `area` from line `scroll` (clamped).
pub fn draw(json: &str, scroll: usize, f: &mut Frame, area: Rect) {
    let r = boxed(area);
    f.render_widget(Clear, r);
    let all = lines(json, area);
    let (total, shown) = (all.len(), visible(area));
    let scroll = scroll.min(total.saturating_sub(shown));
    let title = if total > shown {
        format!(
            " raw JSON {}–{} of {total} (j/k PgUp/PgDn g/G, Esc) ",
            scroll + 1,
            (scroll + shown).min(total)
        )
    } else {
        " raw JSON (Esc) ".to_owned()
    };
    let text: Vec<Line> = all.into_iter().skip(scroll).take(shown).map(Line::from).collect();
    f.render_widget(Paragraph::new(text).block(Block::bordered().title(title)), r);
    scrollbar(f, r, total, shown, scroll);
}
