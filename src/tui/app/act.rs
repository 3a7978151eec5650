//! What the operator's actions do to the view model (`App::act`), and the overlays they open and scroll: the
//! help, the raw JSON of the selection, the detail views.

use super::*;
use crate::tui::widgets::table::TableView;

impl App {
    /// What `pane`'s table shows: its title (with its filters), whether the store has more rows past the loaded
    /// page, what it says when empty, the rows the filter keeps and the one selected.
    pub fn table_view(&self, pane: Pane) -> TableView {
        let mut title = format!(" {} ", pane.title());
        if pane == Pane::Outgoing && self.failed_only {
            title.push_str("[failed] ");
        }
        if pane == Pane::Webhooks && self.dead_only {
            title.push_str(&format!("[{}] ", crate::states::DeliveryState::Dead));
        }
        if pane == Pane::Grants && self.all_grants {
            title.push_str("[all] ");
        }
        if pane == Pane::Webhooks && !self.info.webhooks_enabled {
            title.push_str("[no webhook URL] ");
        }
        if let Some(f) = self.filters.get(&pane) {
            title.push_str(&format!("[/{}{}] ", if f.invert { "!" } else { "" }, f.text));
        }
        let more = match pane {
            Pane::Incoming => self.incoming.next_cursor.is_some(),
            Pane::Outgoing => self.outgoing.next_cursor.is_some(),
            Pane::Quotes => self.quotes.next_cursor.is_some(),
            Pane::Webhooks => self.webhooks.next_cursor.is_some(),
            _ => false,
        };
        let empty = if self.filters.contains_key(&pane) {
            "nothing matches the filter (Esc clears it)"
        } else if pane == Pane::Webhooks && !self.info.webhooks_enabled {
            "no webhook URL is configured: set [webhooks] url in config.toml"
        } else if pane == Pane::Grants && !self.all_grants {
            "no open grants (F shows revoked, rejected and expired ones too)"
        } else if pane == Pane::Webhooks && self.dead_only {
            "no dead deliveries (F shows them all)"
        } else if pane == Pane::Webhooks {
            "no deliveries yet: each durable event is delivered to the webhook URL"
        } else {
            "nothing here yet"
        };
        TableView {
            title,
            more,
            empty,
            visible: self.visible_indices(pane),
            selected: self.selected(pane),
        }
    }

    /// What this session saw happen to resource `id`: (when, what), oldest first.
    pub fn history_of(&self, id: &str) -> &[(String, String)] {
        self.history.get(&short_id(id)).map_or(&[], Vec::as_slice)
    }

    /// Opens the confirm dialog: `effect` runs only after a yes.
    pub(in crate::tui) fn ask(&mut self, question: String, effect: Effect) -> Vec<Effect> {
        self.overlay = Some(Overlay::Confirm(Confirm::new(question, effect)));
        Vec::new()
    }

    /// Opens an empty prompt of `kind`.
    pub(in crate::tui) fn open_prompt(&mut self, kind: PromptKind) -> Vec<Effect> {
        self.overlay = Some(Overlay::Prompt(Prompt::new(kind, "")));
        Vec::new()
    }

    /// Text pasted into the terminal: into the open prompt at its cursor (as one clean line), else ignored.
    pub(in crate::tui) fn on_paste(&mut self, text: &str) -> Vec<Effect> {
        if let Some(Overlay::Prompt(p)) = &mut self.overlay {
            p.line.insert_str(text);
        }
        Vec::new()
    }

    /// The help or raw JSON overlay's extent at the current size: (lines of content, lines its box shows).
    pub fn overlay_extent(&self) -> Option<(usize, usize)> {
        let area = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        match &self.overlay {
            Some(Overlay::Help) => Some((help::len(&self.keymap, self.readonly), help::visible(area))),
            Some(Overlay::Json(j)) => Some((json::lines(j, area).len(), json::visible(area))),
            Some(Overlay::Detail) => {
                // styles do not change how lines wrap
                let theme = crate::tui::theme::Theme::monochrome();
                let (_, p) = crate::tui::panes::detail_paragraph(self, &theme);
                // the box as render draws it, inside its border
                let r = crate::tui::widgets::centered(area, 90, 85);
                Some(crate::tui::panes::detail_extent(&p, r))
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
            Action::Command => self.open_prompt(PromptKind::Command),
            Action::Filter => {
                let text = self
                    .filters
                    .get(&self.pane)
                    .map(|f| format!("{}{}", if f.invert { "!" } else { "" }, f.text));
                self.overlay = Some(Overlay::Prompt(Prompt::new(
                    PromptKind::Filter,
                    &text.unwrap_or_default(),
                )));
                Vec::new()
            }
            Action::NextPane => self.act(Action::Goto(self.pane.next())),
            Action::PrevPane => self.act(Action::Goto(self.pane.prev())),
            Action::Goto(p) => {
                self.pane = p;
                self.overlay = None;
                if p == Pane::Webhooks {
                    return webhooks::reload(self).into_iter().collect();
                }
                if self.stale.contains(&p) && !self.frozen && !matches!(p, Pane::Requests | Pane::Log) {
                    return vec![self.load(p)];
                }
                Vec::new()
            }
            Action::Up => self.move_selection(|s, _| s.saturating_sub(1)),
            Action::Down => self.move_selection(|s, _| s + 1),
            Action::Top => self.move_selection(|_, _| 0),
            Action::Bottom => self.move_selection(|_, len| len.saturating_sub(1)),
            Action::PageUp => self.move_selection(|s, _| s.saturating_sub(page)),
            Action::PageDown => self.move_selection(|s, _| s + page),
            Action::HalfPageUp => self.move_selection(|s, _| s.saturating_sub(page / 2)),
            Action::HalfPageDown => self.move_selection(|s, _| s + page / 2),
            Action::Open => {
                if self.selected_index().is_some() && !matches!(self.pane, Pane::Overview | Pane::Log) {
                    self.open_overlay(Overlay::Detail);
                }
                self.timeline_effect(true).into_iter().collect()
            }
            Action::Back => {
                if self.overlay.take().is_some() {
                    return Vec::new();
                }
                if self.filters.contains_key(&self.pane) {
                    let searched = self.store_query(self.pane).is_some();
                    self.filters.remove(&self.pane);
                    if searched {
                        return vec![self.load(self.pane)];
                    }
                } else {
                    if self.pane == Pane::Outgoing && self.failed_only {
                        self.failed_only = false;
                        return vec![self.load(Pane::Outgoing)];
                    }
                    if self.pane == Pane::Grants && self.all_grants {
                        self.all_grants = false;
                        return vec![self.load(Pane::Grants)];
                    }
                    if self.pane == Pane::Webhooks && self.dead_only {
                        self.dead_only = false;
                        return vec![self.load(Pane::Webhooks)];
                    }
                }
                Vec::new()
            }
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
                if let Some(json) = self.selection_json() {
                    self.open_overlay(Overlay::Json(json));
                }
                Vec::new()
            }
            Action::NewWallet | Action::Deposit | Action::Withdraw | Action::GenerateKey | Action::AddKey => {
                wallets::act(self, a)
            }
            Action::Reveal | Action::Complete => incoming::act(self, a),
            Action::Approve | Action::Reject | Action::Revoke | Action::AllGrants => grants::act(self, a),
            Action::FailedOnly | Action::Retry | Action::Cancel => outgoing::act(self, a),
            Action::DeadOnly | Action::Redrive | Action::RedriveDead => webhooks::act(self, a),
            Action::PeerDeposit | Action::PeerWithdraw | Action::Settle => peers::act(self, a),
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
        }
    }

    fn selection_json(&self) -> Option<String> {
        let i = self.selected_index()?;
        let v = match self.pane {
            Pane::Wallets => serde_json::to_value(self.wallets.items.get(i)?),
            Pane::Incoming => serde_json::to_value(self.incoming.items.get(i)?),
            Pane::Grants => serde_json::to_value(self.grants.items.get(i)?),
            Pane::Outgoing => serde_json::to_value(self.outgoing.items.get(i)?),
            Pane::Quotes => serde_json::to_value(self.quotes.items.get(i)?),
            Pane::Requests => serde_json::to_value(self.requests.items.get(i)?),
            Pane::Webhooks => serde_json::to_value(self.webhooks.items.get(i)?),
            Pane::Peers => serde_json::to_value(self.peers.items.get(i)?),
            _ => return None,
        };
        v.ok().and_then(|v| serde_json::to_string_pretty(&v).ok())
    }
}
