//! What the operator's actions do to the view model (`App::act`), and the overlays they open and scroll: the
//! help, the raw JSON of the selection, the detail views. Actions meant for one pane go to that pane.

use super::{App, Effect, Filter, Level, Overlay};
use crate::tui::{
    action::Action,
    pane::Pane,
    panes,
    widgets::{
        help, json,
        prompt::{Prompt, PromptKind},
    },
};

impl App {
    /// Text pasted into the terminal: into the open prompt at its cursor (as one clean line), else ignored.
    pub(in crate::tui) fn on_paste(&mut self, text: &str) -> Vec<Effect> {
        if let Some(Overlay::Prompt(p)) = &mut self.overlay {
            p.line.insert_str(text);
        }
        Vec::new()
    }

    /// The help, detail or raw JSON overlay's extent at the current size: (lines of content, lines its box
    /// shows).
    pub fn overlay_extent(&self) -> Option<(usize, usize)> {
        let area = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        match &self.overlay {
            Some(Overlay::Help) => Some((
                help::len(
                    &self.keymap.bindings,
                    self.readonly,
                    (self.pane, self.view().commands()),
                ),
                help::visible(area),
            )),
            Some(Overlay::Json(j)) => Some((json::lines(j, area).len(), json::visible(area))),
            Some(Overlay::Detail) => {
                // styles do not change how lines wrap
                let theme = crate::tui::theme::Theme::monochrome();
                let (_, p) = panes::detail_paragraph(self.view(), &self.cx(self.pane), &theme);
                // the box as render draws it, inside its border
                let r = crate::tui::widgets::centered(area, 90, 85);
                Some(panes::detail_extent(&p, r))
            }
            _ => None,
        }
    }

    /// Keeps the overlay's scroll within its content (after a resize).
    pub(super) fn clamp_overlay_scroll(&mut self) {
        let max = self
            .overlay_extent()
            .map_or(0, |(total, shown)| total.saturating_sub(shown));
        self.overlay_scroll = self.overlay_scroll.min(max);
    }

    /// A movement while the help or raw JSON overlay is open scrolls it; false for other actions and
    /// overlays.
    pub(super) fn scroll_overlay(&mut self, a: Action) -> bool {
        if matches!(self.overlay, Some(Overlay::Detail))
            && matches!(a, Action::Up | Action::Down | Action::Top | Action::Bottom)
        {
            // a detail follows the selection: these move it, and the next one opens at its top
            self.overlay_scroll = 0;
            return false;
        }
        let Some((total, shown)) = self.overlay_extent() else {
            return false;
        };
        let max = total.saturating_sub(shown);
        let page = shown.max(1);
        let s = self.overlay_scroll;
        self.overlay_scroll = match a {
            Action::Up => s.saturating_sub(1),
            Action::Down => s + 1,
            Action::Top => 0,
            Action::Bottom => max,
            Action::PageUp => s.saturating_sub(page),
            Action::PageDown => s + page,
            Action::HalfPageUp => s.saturating_sub(page / 2),
            Action::HalfPageDown => s + page / 2,
            _ => return false,
        }
        .min(max);
        true
    }

    /// Opens `o`, scrolled to its top.
    pub(in crate::tui) fn open_overlay(&mut self, o: Overlay) {
        self.overlay = Some(o);
        self.overlay_scroll = 0;
    }

    /// Shows pane `p`: it loads when events made it stale (the Webhooks pane when its pace says so).
    fn goto(&mut self, p: Pane) -> Vec<Effect> {
        self.pane = p;
        self.overlay = None;
        if self.frozen || p == Pane::Log {
            return Vec::new();
        }
        if matches!(p, Pane::Webhooks | Pane::Requests) {
            return self.reload_if_due(p).into_iter().collect();
        }
        if self.stale.contains(&p) {
            return self.load(p).into_iter().collect();
        }
        Vec::new()
    }

    /// Esc: closes the overlay, else clears the pane's filter, else drops its narrowing.
    fn back(&mut self) -> Vec<Effect> {
        if self.overlay.take().is_some() {
            return Vec::new();
        }
        let p = self.pane;
        let searched = self.store_query(p).is_some();
        let view = self.panes.view_mut(p);
        if let Some(list) = view.list_mut().filter(|l| l.filter().is_some()) {
            list.set_filter(None);
            return if searched {
                self.load(p).into_iter().collect()
            } else {
                Vec::new()
            };
        }
        if view.widen() {
            return self.load(p).into_iter().collect();
        }
        Vec::new()
    }

    /// Carries out an action.
    pub fn act(&mut self, a: Action) -> Vec<Effect> {
        if self.scroll_overlay(a) {
            return Vec::new();
        }
        if self.readonly && self.keymap.is_dangerous(a) {
            self.flash(Level::Warn, "read-only mode");
            return Vec::new();
        }
        let page = self.page_rows();
        match a {
            Action::Quit => {
                if self.overlay.take().is_some() {
                    return Vec::new();
                }
                self.quit = true;
                vec![Effect::Quit]
            }
            Action::Help => {
                if self.overlay == Some(Overlay::Help) {
                    self.overlay = None;
                } else {
                    self.open_overlay(Overlay::Help);
                }
                Vec::new()
            }
            Action::Command => {
                self.overlay = Some(Overlay::Prompt(Prompt::new(PromptKind::Command, "")));
                Vec::new()
            }
            Action::Filter => {
                let text = self.view().list().and_then(|l| l.filter()).map(Filter::typed);
                self.overlay = Some(Overlay::Prompt(Prompt::new(
                    PromptKind::Filter,
                    &text.unwrap_or_default(),
                )));
                Vec::new()
            }
            Action::NextPane => self.act(Action::Goto(self.pane.next(self.tabs()))),
            Action::PrevPane => self.act(Action::Goto(self.pane.prev(self.tabs()))),
            Action::Goto(p) => self.goto(p),
            Action::Up => self.move_selection(|s, _| s.saturating_sub(1)),
            Action::Down => self.move_selection(|s, _| s + 1),
            Action::Top => self.move_selection(|_, _| 0),
            Action::Bottom => self.move_selection(|_, len| len.saturating_sub(1)),
            Action::PageUp => self.move_selection(|s, _| s.saturating_sub(page)),
            Action::PageDown => self.move_selection(|s, _| s + page),
            Action::HalfPageUp => self.move_selection(|s, _| s.saturating_sub(page / 2)),
            Action::HalfPageDown => self.move_selection(|s, _| s + page / 2),
            Action::Open => {
                let selected = self.view().list().is_some_and(|l| l.has_selection());
                if selected && !matches!(self.pane, Pane::Overview | Pane::Log) {
                    self.open_overlay(Overlay::Detail);
                }
                self.detail_effect(true).into_iter().collect()
            }
            Action::Back => self.back(),
            Action::Freeze => {
                self.frozen = !self.frozen;
                if self.frozen {
                    self.flash(Level::Info, "frozen: the view stays still; events are counted");
                    Vec::new()
                } else {
                    let missed = std::mem::take(&mut self.missed);
                    self.flash(Level::Info, format!("live again ({missed} events while frozen)"));
                    self.resync_all()
                }
            }
            Action::Resync => {
                self.flash(Level::Info, "resyncing from the store");
                self.resync_all()
            }
            Action::RawJson => {
                let json = self
                    .view()
                    .list()
                    .and_then(|l| l.selection_json())
                    .and_then(|v| serde_json::to_string_pretty(&v).ok());
                if let Some(json) = json {
                    self.open_overlay(Overlay::Json(json));
                }
                Vec::new()
            }
            Action::NextDesk => match &self.desks {
                Some(d) if d.names.len() > 1 => vec![Effect::SwitchDesk(d.next().to_owned())],
                _ => {
                    self.flash(Level::Info, "this console shows one desk (opdesk workshop shows two)");
                    Vec::new()
                }
            },
            Action::Suspend => {
                if !cfg!(unix) {
                    self.flash(Level::Info, "suspending is for Unix terminals");
                    Vec::new()
                } else if self.info.attached.is_none() {
                    // a stopped process serves nothing: payments in flight and clients would wait on it
                    self.flash(
                        Level::Info,
                        "the ASE runs in this console: suspending would stop it too (`opdesk serve` + an attached console can)",
                    );
                    Vec::new()
                } else {
                    vec![Effect::Suspend]
                }
            }
            Action::Demo => {
                self.flash(
                    Level::Info,
                    "demo scenario started: watch Grants (4), Incoming (3) and Outgoing (5)",
                );
                vec![Effect::Demo]
            }
            // the pane in view's own actions (the keymap offers each only where it applies)
            _ => {
                let p = self.pane;
                let outs = self.with_pane(p, |v, cx| v.act(a, cx));
                self.apply(p, outs)
            }
        }
    }
}
