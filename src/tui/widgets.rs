//! Shared widgets and overlays of the console: the pane table, gauges, relative times, key/value lines, and
//! the help, raw JSON, confirm and prompt overlays. Widgets read the view model and draw; they never decide
//! what a pane shows and never call back into `render` or the panes.

pub mod confirm;
pub mod gauge;
pub mod help;
pub mod json;
pub mod kv;
pub mod line_edit;
pub mod prompt;
pub mod table;
pub mod time;

pub use crate::ids::short_id;
use ratatui::layout::Rect;

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

/// A rectangle of `w`×`h` cells (at most `area`) centred in `area`.
pub fn centered_fixed(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}
