//! The content area: the panes, each a [`View`] that owns its state (its list, cursor, filter, toggles and
//! whatever it alone shows), draws itself, builds its detail view and turns the actions, prompt answers and
//! `:` commands meant for it into [`Out`]s for the chrome. The chrome (`App`) keeps what all panes share —
//! the pane in view, overlays, the flash line — and reads panes only through this trait. Each pane lives in
//! its own file under `panes/` and draws with the shared widgets.

/// `View::list` and `View::list_mut` of a pane whose list is its `table` field.
macro_rules! listed_by_table {
    () => {
        fn list(&self) -> Option<&dyn super::List> {
            Some(&self.table)
        }
        fn list_mut(&mut self) -> Option<&mut dyn super::List> {
            Some(&mut self.table)
        }
    };
}

pub mod classroom;
pub mod grants;
pub mod incoming;
pub mod list;
pub mod log;
pub mod outgoing;
pub mod overview;
pub mod peers;
pub mod quotes;
pub mod requests;
pub mod threshold;
pub mod wallets;
pub mod webhooks;

use std::collections::{HashMap, VecDeque};

use ratatui::{
    Frame,
    layout::Rect,
    text::Line,
    widgets::{Block, Clear, Paragraph, Wrap},
};
use time::OffsetDateTime;

pub use self::list::{Filter, List, PAGE, Row, Table};
use super::{
    action::Action,
    desk::ServerInfo,
    effect::Effect,
    pane::{Pace, Pane},
    theme::Theme,
    widgets::{prompt::PromptKind, short_id},
};
use crate::control::{Found, Query};

/// How loud a flash line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What a pane asks of the chrome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// An effect for the control task, now.
    Run(Effect),
    /// Ask first; the effect runs only after a yes.
    Confirm(String, Effect),
    /// Ask for text; the answer comes back to the pane's [`View::submit`].
    Prompt(PromptKind),
    Flash(Level, String),
    /// Load this pane's first page again.
    Reload,
    /// Show this pane.
    Show,
}

/// A warning on the flash line, as a pane's only answer.
pub fn warn(text: impl Into<String>) -> Vec<Out> {
    vec![Out::Flash(Level::Warn, text.into())]
}

/// What the panes read of the chrome.
#[derive(Debug, Clone, Copy)]
pub struct Cx<'a> {
    pub now: OffsetDateTime,
    /// When the console started (the Overview's uptime).
    pub started_at: OffsetDateTime,
    pub readonly: bool,
    /// The pane is the one in view.
    pub in_view: bool,
    /// The detail view (of the pane in view) is open.
    pub detail_open: bool,
    pub info: &'a ServerInfo,
    pub history: &'a History,
}

/// What this session saw happen to each resource (the detail views show it), for the [`History::IDS`]
/// resources last seen: a console left open under load would otherwise keep every id.
#[derive(Debug, Clone, Default)]
pub struct History {
    seen: HashMap<String, Vec<(String, String)>>,
    order: VecDeque<String>,
}

impl History {
    pub const IDS: usize = 5_000;
    /// Entries kept per resource.
    const PER_ID: usize = 50;

    /// Resource `id` had `what` happen `at`.
    pub fn remember(&mut self, id: &str, at: String, what: String) {
        let key = short_id(id);
        if !self.seen.contains_key(&key) {
            self.order.push_back(key.clone());
            while self.order.len() > Self::IDS {
                if let Some(old) = self.order.pop_front() {
                    self.seen.remove(&old);
                }
            }
        }
        let h = self.seen.entry(key).or_default();
        h.push((at, what));
        if h.len() > Self::PER_ID {
            h.remove(0);
        }
    }

    /// What happened to resource `id`: (when, what), oldest first.
    pub fn of(&self, id: &str) -> &[(String, String)] {
        self.seen.get(&short_id(id)).map_or(&[], Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// The keys `pane` declares for itself (its file's `KEYS`): the keymap builds its pane bindings from them.
pub fn keys_of(pane: Pane) -> &'static [crate::tui::key::PaneKey] {
    match pane {
        Pane::Wallets => wallets::KEYS,
        Pane::Incoming => incoming::KEYS,
        Pane::Grants => grants::KEYS,
        Pane::Outgoing => outgoing::KEYS,
        Pane::Webhooks => webhooks::KEYS,
        Pane::Peers => peers::KEYS,
        Pane::Overview | Pane::Quotes | Pane::Requests | Pane::Log | Pane::Classroom => &[],
    }
}

/// A pane: its state, how it draws, and what it does with what is meant for it.
pub trait View {
    /// Its list, when it has one (the chrome moves the cursor, filters and pages through it).
    fn list(&self) -> Option<&dyn List>;
    fn list_mut(&mut self) -> Option<&mut dyn List>;
    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect);
    /// The detail view of the selection: its title and lines (`None`: nothing selected).
    fn detail(&self, _cx: &Cx<'_>, _theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        Some((
            " detail ".to_owned(),
            vec![Line::from("press y for the raw JSON of the selection")],
        ))
    }
    /// The selection's name in the breadcrumbs while its detail is open.
    fn crumb(&self) -> Option<String> {
        None
    }
    /// A key's action meant for this pane.
    fn act(&mut self, _a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        Vec::new()
    }
    /// The answer to a prompt this pane opened.
    fn submit(&mut self, _kind: PromptKind, _text: &str, _cx: &Cx<'_>) -> Vec<Out> {
        Vec::new()
    }
    /// Its own `:` command `head` (with the rest of the line); `None`: not one of them.
    fn command(&mut self, _head: &str, _rest: &str, _cx: &Cx<'_>) -> Option<Vec<Out>> {
        None
    }
    /// Its own `:` commands and what they do (the help lists them).
    fn commands(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The narrowing it shows (`failed`, `dead`, `all`), for the breadcrumbs.
    fn narrowed(&self) -> Option<String> {
        None
    }
    /// Esc with no filter: drop the narrowing; true when there was one (the pane then reloads).
    fn widen(&mut self) -> bool {
        false
    }
    /// The query that loads its first page, or the page after `cursor`, with `q` its `/` filter as the store
    /// matches it. `None`: nothing to load (the console fills it itself).
    fn query(&self, cursor: Option<String>, q: Option<String>) -> Option<Query>;
    /// What a query it asked for found: `append` when it was a further page.
    fn found(&mut self, found: Found, append: bool, cx: &Cx<'_>) -> Vec<Out>;
    /// Whether the store matches its `/` filter (it pages from the store, so a match may be past the page).
    fn searches_store(&self) -> bool {
        false
    }
    /// When it reloads on its own: its pace, and whether only while in view. `None`: after events, in view.
    fn pace(&self, _cx: &Cx<'_>) -> Option<(Pace, bool)> {
        None
    }
    /// Whether its last load is unanswered.
    fn loading(&self) -> bool {
        self.list().is_some_and(List::loading)
    }
    fn start_loading(&mut self) {
        if let Some(l) = self.list_mut() {
            l.start_loading();
        }
    }
    /// What its open detail needs fetched: always with `fresh` (it opened, the rows changed), else only
    /// when the selection moved to another row.
    fn detail_needs(&self, _fresh: bool) -> Option<Effect> {
        None
    }
}

/// Every pane's state.
#[derive(Debug, Clone, Default)]
pub struct Panes {
    pub overview: overview::Overview,
    pub wallets: wallets::Wallets,
    pub incoming: incoming::Incoming,
    pub grants: grants::Grants,
    pub outgoing: outgoing::Outgoing,
    pub quotes: quotes::Quotes,
    pub requests: requests::Requests,
    pub log: log::Log,
    pub webhooks: webhooks::Webhooks,
    pub peers: peers::Peers,
    pub classroom: classroom::Classroom,
}

impl Panes {
    pub fn view(&self, p: Pane) -> &dyn View {
        match p {
            Pane::Overview => &self.overview,
            Pane::Wallets => &self.wallets,
            Pane::Incoming => &self.incoming,
            Pane::Grants => &self.grants,
            Pane::Outgoing => &self.outgoing,
            Pane::Quotes => &self.quotes,
            Pane::Requests => &self.requests,
            Pane::Log => &self.log,
            Pane::Webhooks => &self.webhooks,
            Pane::Peers => &self.peers,
            Pane::Classroom => &self.classroom,
        }
    }

    pub fn view_mut(&mut self, p: Pane) -> &mut dyn View {
        match p {
            Pane::Overview => &mut self.overview,
            Pane::Wallets => &mut self.wallets,
            Pane::Incoming => &mut self.incoming,
            Pane::Grants => &mut self.grants,
            Pane::Outgoing => &mut self.outgoing,
            Pane::Quotes => &mut self.quotes,
            Pane::Requests => &mut self.requests,
            Pane::Log => &mut self.log,
            Pane::Webhooks => &mut self.webhooks,
            Pane::Peers => &mut self.peers,
            Pane::Classroom => &mut self.classroom,
        }
    }

    /// The load of `pane`'s first page, with `q` its `/` filter as the store matches it: the query the pane
    /// names (none: the console fills it itself).
    pub fn first_page(&self, pane: Pane, q: Option<String>) -> Option<Effect> {
        let query = self.view(pane).query(None, q)?;
        Some(Effect::ask(pane, query))
    }

    /// Another desk is in view: nothing of the last one stays; the log is this console's own and stays.
    pub fn clear(&mut self) {
        let log = std::mem::take(&mut self.log);
        *self = Self { log, ..Self::default() };
    }
}

/// The detail view of `view`'s selection, drawn into `area` scrolled by `scroll`.
pub fn draw_detail(view: &dyn View, cx: &Cx<'_>, scroll: usize, theme: &Theme, f: &mut Frame, area: Rect) {
    f.render_widget(Clear, area);
    let (title, p) = detail_paragraph(view, cx, theme);
    let (total, shown) = detail_extent(&p, area);
    let scroll = scroll.min(total.saturating_sub(shown));
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

/// The detail view of `view`'s selection: its title, and its lines wrapped as drawn.
pub fn detail_paragraph<'a>(view: &'a dyn View, cx: &Cx<'_>, theme: &Theme) -> (String, Paragraph<'a>) {
    let (title, lines) = view
        .detail(cx, theme)
        .unwrap_or_else(|| (" detail ".to_owned(), Vec::new()));
    (title, Paragraph::new(lines).wrap(Wrap { trim: false }))
}
