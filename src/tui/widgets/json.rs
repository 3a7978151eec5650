//! The raw JSON overlay (`y`): the selection's JSON (or a one-time secret), sanitised, in a bordered box.

use ratatui::{
    Frame,
    layout::Rect,
    widgets::{Block, Clear, Paragraph, Wrap},
};

use super::centered;
use crate::text::sanitize_lines;

/// Draws `json` over the middle of `area`.
pub fn draw(json: &str, f: &mut Frame, area: Rect) {
    let r = centered(area, 90, 85);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(sanitize_lines(json))
            .block(Block::bordered().title(" raw JSON (Esc) "))
            .wrap(Wrap { trim: false }),
        r,
    );
}
