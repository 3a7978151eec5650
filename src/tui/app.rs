//! The console's chrome and its one state transition, `update`: keys, domain events, command replies and
//! ticks go in; state changes and effects (commands for the control task) come out. No I/O, no locks, no
//! awaiting — so every behaviour is testable without a terminal. The chrome keeps what every pane shares
//! (the desk, the pane in view, the overlay, the flash line) and reaches each pane's own state through
//! [`View`].

use std::collections::{BTreeMap, HashMap, HashSet};

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use time::OffsetDateTime;

use super::{
    action::Action,
    desk::DeskList,
    keymap::{Key, Keymap},
    pane::Pane,
    panes::{Cx, History, Out, Panes, View},
    widgets::{
        confirm::{Answer, Confirm},
        prompt::{Prompt, Typed},
    },
};
use crate::{control::Found, events::DomainEvent};

mod act;
mod command;
mod events;
mod replies;

pub use super::{
    desk::{OverviewData, ServerInfo, WalletRow},
    effect::{Effect, Load},
    panes::{Filter, Level, PAGE, requests::HttpRow},
    widgets::short_id,
};

/// A reply from the control task.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// What the query pane `pane` asked for found (`append`: a further page).
    Found {
        pane: Pane,
        found: Box<Found>,
        append: bool,
    },
    /// Another desk is in view: its header, and the desks.
    Switched(ServerInfo, DeskList),
    Done(String),
    Failed(String),
    /// A generated key: show the private key once.
    KeyGenerated {
        wallet: String,
        kid: String,
        pem: String,
    },
    /// A generated owner passphrase: show it once.
    PassphraseGenerated {
        wallet: String,
        passphrase: String,
    },
}

#[cfg(test)]
impl Reply {
    /// What `pane`'s first page found.
    pub fn found(pane: Pane, found: Found) -> Self {
        Self::page(pane, found, false)
    }

    /// What a query of `pane` found, a further page with `append`.
    pub fn page(pane: Pane, found: Found, append: bool) -> Self {
        Self::Found {
            pane,
            found: Box::new(found),
            append,
        }
    }
}

/// Everything the loop feeds into `update`.
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    /// A left click at (column, row).
    Click(u16, u16),
    Scroll(bool),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    Resize(u16, u16),
    Event(DomainEvent),
    /// The bus dropped events: resync everything.
    Lagged,
    /// An attached console lost its server (why): it reconnects.
    Disconnected(String),
    /// Connected (again) to the server, which may have moved: resync everything.
    Connected(ServerInfo),
    Reply(Reply),
    Tick(OffsetDateTime),
    Log(String),
    /// An event on a desk not in view (its name), worth a flash line.
    Elsewhere(String, DomainEvent),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub level: Level,
    pub text: String,
    pub until: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Detail,
    Json(String),
    Confirm(Confirm),
    Prompt(Prompt),
}

/// The view model: the chrome, and every pane's own state in [`Panes`].
#[derive(Debug, Clone)]
pub struct App {
    pub info: ServerInfo,
    pub keymap: Keymap,
    pub readonly: bool,
    pub now: OffsetDateTime,
    pub started_at: OffsetDateTime,
    pub pane: Pane,
    pub overlay: Option<Overlay>,
    /// The first line the help, detail or raw JSON overlay shows (set back to 0 when one opens).
    pub overlay_scroll: usize,
    pub frozen: bool,
    /// Events that arrived while frozen.
    pub missed: u64,
    pub flash: Option<Flash>,
    pub panes: Panes,
    /// What this session saw happen to each resource (the detail views show it).
    pub history: History,
    /// When each pane that paces its reloads last asked for its rows.
    pub load_at: HashMap<Pane, OffsetDateTime>,
    /// The desks a console over several ASEs switches between (none: it shows one).
    pub desks: Option<DeskList>,
    /// A class is watched (`opdesk workshop --seats N`): the Classroom is a tab.
    pub classroom: bool,
    pub stale: HashSet<Pane>,
    pub command_history: Vec<String>,
    /// Terminal size.
    pub size: (u16, u16),
    /// Why an attached console lost its server, while it reconnects.
    pub disconnected: Option<String>,
    pub quit: bool,
}

/// The panes a resync reloads from the store (the Webhooks pane too, when in view).
const SYNCED: [Pane; 7] = [
    Pane::Overview,
    Pane::Wallets,
    Pane::Incoming,
    Pane::Grants,
    Pane::Outgoing,
    Pane::Quotes,
    Pane::Peers,
];

impl App {
    pub fn new(info: ServerInfo, keymap: Keymap, readonly: bool, now: OffsetDateTime) -> Self {
        Self {
            info,
            keymap,
            readonly,
            now,
            started_at: now,
            pane: Pane::Overview,
            overlay: None,
            overlay_scroll: 0,
            frozen: false,
            missed: 0,
            flash: None,
            panes: Panes::default(),
            history: History::default(),
            load_at: HashMap::new(),
            desks: None,
            classroom: false,
            stale: Pane::EVERY.iter().copied().collect(),
            command_history: Vec::new(),
            size: (80, 24),
            disconnected: None,
            quit: false,
        }
    }

    /// Effects to run at start: load every pane.
    pub fn start(&mut self) -> Vec<Effect> {
        self.resync_all()
    }

    pub fn flash(&mut self, level: Level, text: impl Into<String>) {
        self.flash = Some(Flash {
            level,
            text: text.into(),
            until: self.now + time::Duration::seconds(4),
        });
    }

    /// What pane `p` reads of the chrome.
    /// The panes the tab bar shows.
    pub fn tabs(&self) -> &'static [Pane] {
        Pane::tabs(self.classroom)
    }

    pub fn cx(&self, p: Pane) -> Cx<'_> {
        Cx {
            now: self.now,
            started_at: self.started_at,
            readonly: self.readonly,
            in_view: p == self.pane,
            detail_open: self.overlay == Some(Overlay::Detail),
            info: &self.info,
            history: &self.history,
        }
    }

    /// Runs `f` on pane `p` with what it reads of the chrome.
    pub(in crate::tui) fn with_pane<R>(&mut self, p: Pane, f: impl FnOnce(&mut dyn View, &Cx<'_>) -> R) -> R {
        let Self {
            panes,
            info,
            history,
            now,
            started_at,
            readonly,
            pane,
            overlay,
            ..
        } = self;
        let cx = Cx {
            now: *now,
            started_at: *started_at,
            readonly: *readonly,
            in_view: p == *pane,
            detail_open: *overlay == Some(Overlay::Detail),
            info,
            history,
        };
        f(panes.view_mut(p), &cx)
    }

    /// The pane in view.
    pub fn view(&self) -> &dyn View {
        self.panes.view(self.pane)
    }

    /// Rows a table shows at the current size (used for paging).
    pub fn page_rows(&self) -> usize {
        usize::from(self.size.1.saturating_sub(9)).max(1)
    }

    /// Pending grants (the header badge).
    pub fn pending_grants(&self) -> usize {
        self.panes.overview.data.pending_grants
    }

    /// The number of rows in `pane` after its filter.
    pub fn visible_len(&self, pane: Pane) -> usize {
        self.panes.view(pane).list().map_or(0, |l| l.len())
    }

    /// The selection of `pane` as a position among its visible rows.
    pub fn selected(&self, pane: Pane) -> usize {
        self.panes.view(pane).list().map_or(0, |l| l.selected())
    }

    /// What pane `p` asked for, carried out: effects out, the rest on the chrome.
    pub(in crate::tui) fn apply(&mut self, p: Pane, outs: Vec<Out>) -> Vec<Effect> {
        let mut effects = Vec::new();
        for o in outs {
            match o {
                Out::Run(e) => effects.push(e),
                Out::Confirm(question, e) => {
                    self.overlay = Some(Overlay::Confirm(Confirm::new(question, e)));
                }
                Out::Prompt(kind) => self.overlay = Some(Overlay::Prompt(Prompt::new(kind, ""))),
                Out::Flash(level, text) => self.flash(level, text),
                Out::Reload => effects.extend(self.load(p)),
                Out::Show => self.pane = p,
            }
        }
        effects
    }

    /// The fetch the open detail of the pane in view needs (a grant's timeline), if any.
    pub(in crate::tui) fn detail_effect(&self, fresh: bool) -> Option<Effect> {
        if self.overlay != Some(Overlay::Detail) {
            return None;
        }
        self.view().detail_needs(fresh)
    }

    fn move_selection(&mut self, to: impl FnOnce(usize, usize) -> usize) -> Vec<Effect> {
        let Some(list) = self.panes.view_mut(self.pane).list_mut() else {
            return Vec::new();
        };
        let len = list.len();
        let sel = if len == 0 {
            0
        } else {
            to(list.selected(), len).min(len - 1)
        };
        list.select(sel);
        let at_end = len > 0 && sel + 1 == len;
        let more = list.next_cursor();
        if let Some(e) = self.detail_effect(false) {
            return vec![e];
        }
        // scrolled to the end of what is loaded: fetch the next page from the store
        let view = self.view();
        let next = more
            .filter(|_| at_end)
            .and_then(|cursor| view.query(Some(cursor), self.store_query(self.pane)));
        next.map(|query| {
            Effect::Load(Load {
                pane: self.pane,
                query,
                append: true,
            })
        })
        .into_iter()
        .collect()
    }

    /// The load of `pane`'s first page: the query it names (none: the pane is filled by the console).
    pub(in crate::tui) fn load(&mut self, pane: Pane) -> Option<Effect> {
        self.stale.remove(&pane);
        if self.panes.view(pane).pace(&self.cx(pane)).is_some() {
            self.load_at.insert(pane, self.now);
        }
        let load = self.panes.first_page(pane, self.store_query(pane))?;
        self.panes.view_mut(pane).start_loading();
        Some(load)
    }

    /// The `/` filter of `pane` as the store matches it: panes paged from the store, filters not inverted.
    pub fn store_query(&self, pane: Pane) -> Option<String> {
        let view = self.panes.view(pane);
        view.list()
            .and_then(|l| l.filter())
            .filter(|f| view.searches_store() && !f.invert)
            .map(|f| f.text.clone())
    }

    /// Reloads every pane from the store ([`SYNCED`]); the Webhooks pane only when in view (it is marked stale
    /// otherwise, and loads when it is shown).
    fn resync_all(&mut self) -> Vec<Effect> {
        let mut out: Vec<Effect> = SYNCED.into_iter().filter_map(|p| self.load(p)).collect();
        if self.pane == Pane::Webhooks {
            out.extend(self.load(Pane::Webhooks));
        } else {
            self.stale.insert(Pane::Webhooks);
        }
        out
    }

    /// Events were dropped (the server's stream fell behind a flood): every pane is stale. The pane in view
    /// reloads now unless its last load is still unanswered, the others when shown or at their pace: a
    /// server too busy to keep the stream up is not asked for everything again at every drop.
    fn resync_stale(&mut self) -> Vec<Effect> {
        self.stale.extend(SYNCED);
        self.stale.insert(Pane::Webhooks);
        let p = self.pane;
        if p == Pane::Log || self.view().loading() {
            return Vec::new();
        }
        self.load(p).into_iter().collect()
    }

    /// The one state transition.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(k) => self.on_key(k),
            Msg::Click(col, row) => self.on_click(col, row),
            Msg::Scroll(up) => self.act(if up { Action::Up } else { Action::Down }),
            Msg::Paste(text) => self.on_paste(&text),
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.clamp_overlay_scroll();
                Vec::new()
            }
            Msg::Event(e) => self.on_event(e),
            Msg::Lagged => {
                self.flash(Level::Warn, "events were dropped; resyncing from the store");
                self.resync_stale()
            }
            Msg::Disconnected(why) => {
                if self.disconnected.is_none() {
                    self.flash(Level::Warn, format!("disconnected — reconnecting ({why})"));
                }
                self.disconnected = Some(why);
                Vec::new()
            }
            Msg::Connected(info) => {
                if self.disconnected.take().is_some() {
                    self.flash(Level::Info, "connected again; resyncing");
                }
                self.info = info;
                self.resync_all()
            }
            Msg::Reply(r) => self.on_reply(r),
            Msg::Tick(now) => self.on_tick(now),
            Msg::Log(line) => {
                self.panes.log.on_line(line);
                Vec::new()
            }
            Msg::Elsewhere(desk, e) => {
                // a class spans the desks
                self.stale.insert(Pane::Classroom);
                let text = format!("{}: {}", desk, events::describe_event(&e));
                let level = match e {
                    DomainEvent::OutgoingPaymentFailed { .. } => Level::Warn,
                    _ => Level::Info,
                };
                self.flash(level, text);
                Vec::new()
            }
        }
    }

    fn on_click(&mut self, col: u16, row: u16) -> Vec<Effect> {
        if row == 1 {
            let mut x = 0u16;
            for (p, label) in tab_labels(self, self.size.0) {
                let w = u16::try_from(label.chars().count()).unwrap_or(0) + 1;
                if col >= x && col < x + w {
                    return self.act(Action::Goto(p));
                }
                x += w;
            }
        }
        Vec::new()
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        let key = Key::from_event(&k);
        if key == Key::ctrl('c') {
            self.quit = true;
            return vec![Effect::Quit];
        }
        match self.overlay.clone() {
            Some(Overlay::Prompt(p)) => {
                return match p.on_key(k, self.command_history.last().map(String::as_str)) {
                    Typed::Submit(p) => {
                        self.overlay = None;
                        self.submit_prompt(p)
                    }
                    Typed::Cancel => {
                        self.overlay = None;
                        Vec::new()
                    }
                    Typed::Open(p) => {
                        self.overlay = Some(Overlay::Prompt(p));
                        Vec::new()
                    }
                };
            }
            Some(Overlay::Confirm(c)) => {
                return match c.on_key(k) {
                    Answer::Yes(e) => {
                        self.overlay = None;
                        vec![e]
                    }
                    Answer::No => {
                        self.overlay = None;
                        Vec::new()
                    }
                    Answer::Open(c) => {
                        self.overlay = Some(Overlay::Confirm(c));
                        Vec::new()
                    }
                };
            }
            Some(Overlay::Help) => {
                if matches!(k.code, KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q')) {
                    self.overlay = None;
                } else if let Some(a) = self.keymap.lookup(key, self.pane, self.readonly) {
                    self.scroll_overlay(a);
                }
                return Vec::new();
            }
            Some(Overlay::Json(_)) | Some(Overlay::Detail) => {
                if matches!(k.code, KeyCode::Esc | KeyCode::Char('q')) {
                    self.overlay = None;
                    return Vec::new();
                }
            }
            None => {}
        }
        match self.keymap.lookup(key, self.pane, self.readonly) {
            Some(a) => self.act(a),
            None => Vec::new(),
        }
    }
}

/// The label of a pane's tab (shared by rendering and mouse hit-testing).
pub fn tab_label(p: Pane, app: &App) -> String {
    let badge = if p == Pane::Grants && app.pending_grants() > 0 {
        format!(" ({})", app.pending_grants())
    } else {
        String::new()
    };
    match p.digit() {
        Some(d) => format!(" {d} {}{badge} ", p.title()),
        None => format!(" {}{badge} ", p.title()),
    }
}

/// The tab bar's labels for a bar `width` columns wide: every title when they fit; else the pane in view in
/// full and the others shortened to their digit and three letters; else the others by digit alone (the Grants badge stays).
pub fn tab_labels(app: &App, width: u16) -> Vec<(Pane, String)> {
    let fits = |labels: &[(Pane, String)]| {
        labels.iter().map(|(_, l)| l.chars().count() + 1).sum::<usize>() <= usize::from(width)
    };
    let tabs = app.tabs();
    let full: Vec<_> = tabs.iter().map(|p| (*p, tab_label(*p, app))).collect();
    if fits(&full) {
        return full;
    }
    let short = |letters: usize| -> Vec<(Pane, String)> {
        tabs.iter()
            .map(|p| {
                if *p == app.pane {
                    return (*p, tab_label(*p, app));
                }
                let badge = if *p == Pane::Grants && app.pending_grants() > 0 {
                    format!(" ({})", app.pending_grants())
                } else {
                    String::new()
                };
                let title: String = p.title().chars().take(letters.max(3)).collect();
                let label = match p.digit() {
                    Some(d) if letters == 0 => format!("{d}{badge}"),
                    Some(d) => format!("{d} {title}{badge}"),
                    None => title,
                };
                (*p, label)
            })
            .collect()
    };
    let three = short(3);
    if fits(&three) { three } else { short(0) }
}

/// `[keys]` and `[theme]` tables from `config.toml`.
pub type Overrides = BTreeMap<String, String>;

/// Deterministic rows for tests and snapshots.
#[cfg(test)]
pub mod fixtures {
    use super::*;
    use crate::{
        ase::{
            incoming::{IncomingPaymentDto, IncomingView},
            outgoing::{OutgoingPaymentDto, OutgoingView},
        },
        gnap::service::GrantView,
        money::{Amount, Asset, Value as Money},
        webhooks::DeliveryRow,
    };

    pub fn now() -> OffsetDateTime {
        crate::clock::parse_ts("2026-11-21T12:00:00Z").unwrap()
    }

    pub fn usd(v: u64) -> Amount {
        Amount::new(Money::new(v).unwrap(), &Asset::new("USD", 2).unwrap())
    }

    pub fn grant(id: &str, state: &str) -> GrantView {
        GrantView {
            id: id.into(),
            state: state.parse().unwrap(),
            client: "http://x/demo-client".into(),
            client_name: Some("Demo".into()),
            access: vec![],
            subject: None,
            interactive: true,
            finish_uri: None,
            decision_reason: None,
            created_at: crate::clock::ts("2026-11-21T11:59:00.000Z"),
            interaction_expires_at: None,
            description: vec!["Demo asks for:".into()],
            summary: vec![],
            tokens: vec![],
            timeline: vec![],
        }
    }

    pub fn incoming(id: &str, wallet: &str, received: u64, expected: Option<u64>) -> IncomingView {
        IncomingView {
            payment: IncomingPaymentDto {
                id: format!("http://x/incoming-payments/{id}"),
                wallet_address: format!("http://x/{wallet}"),
                completed: false,
                incoming_amount: expected.map(usd),
                received_amount: usd(received),
                expires_at: Some(crate::clock::ts("2026-11-21T13:00:00.000Z")),
                metadata: None,
                created_at: crate::clock::ts("2026-11-21T11:00:00.000Z"),
                methods: None,
            },
            state: crate::states::IncomingState::Pending,
            wallet: wallet.into(),
            client: None,
        }
    }

    pub fn outgoing(id: &str, state: &str) -> OutgoingView {
        OutgoingView {
            payment: OutgoingPaymentDto {
                id: format!("http://x/outgoing-payments/{id}"),
                wallet_address: "http://x/alice".into(),
                quote_id: None,
                failed: state == "failed",
                receiver: "http://x/incoming-payments/r".into(),
                receive_amount: usd(100),
                debit_amount: usd(100),
                sent_amount: usd(0),
                metadata: None,
                created_at: crate::clock::ts("2026-11-21T11:00:00.000Z"),
                grant_spent_debit_amount: None,
                grant_spent_receive_amount: None,
            },
            state: state.parse().unwrap(),
            wallet: "alice".into(),
            grant_id: None,
            delivered_amount: usd(0),
            failure_reason: (state == "failed").then(|| "insufficient_balance".into()),
            failure_message: None,
            attempts: 0,
            updated_at: crate::clock::ts("2026-11-21T11:00:00.000Z"),
        }
    }

    /// The delivery of event `seq` (`kind`) in `state`: a dead one spent its attempts on a refused
    /// connection, a delivered one got a 204, a pending one is due in 30 s.
    pub fn delivery(seq: i64, kind: &str, state: &str) -> DeliveryRow {
        use crate::states::DeliveryState as S;
        let state: S = state.parse().unwrap();
        DeliveryRow {
            event_seq: seq,
            event_id: format!("0000-event-{seq:04}"),
            kind: kind.into(),
            body: String::new(),
            state,
            attempts: match state {
                S::Pending => 0,
                S::Delivered => 1,
                S::Dead => 8,
            },
            next_attempt_at: crate::clock::ts("2026-11-21T12:00:30.000Z"),
            last_status: (state == S::Delivered).then_some(204),
            last_error: (state == S::Dead).then(|| "connection refused".into()),
            created_at: crate::clock::ts("2026-11-21T11:58:00.000Z"),
            updated_at: crate::clock::ts("2026-11-21T11:59:00.000Z"),
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::{fixtures::*, *};
    use crate::control::{
        Command, Query,
        dto::{Listed, PaymentFilter},
    };

    fn app() -> App {
        App::new(ServerInfo::default(), Keymap::default(), false, now())
    }

    #[test]
    fn losing_the_server_waits_and_finding_it_again_resyncs_with_its_new_address() {
        let mut a = app();
        assert!(
            a.update(Msg::Disconnected("stream ended".into())).is_empty(),
            "nothing to load meanwhile"
        );
        assert_eq!(a.disconnected.as_deref(), Some("stream ended"));
        assert!(
            a.flash
                .as_ref()
                .is_some_and(|f| f.text.contains("disconnected — reconnecting"))
        );
        a.flash = None;
        a.update(Msg::Disconnected("connection refused".into()));
        assert!(a.flash.is_none(), "said once while it retries");
        let moved = ServerInfo {
            attached: Some("http://127.0.0.1:4661".into()),
            ..ServerInfo::default()
        };
        let effects = a.update(Msg::Connected(moved.clone()));
        assert_eq!(a.disconnected, None);
        assert_eq!(a.info, moved);
        let loads: Vec<Pane> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Load(l) => Some(l.pane),
                _ => None,
            })
            .collect();
        assert_eq!(
            loads,
            [
                Pane::Overview,
                Pane::Wallets,
                Pane::Incoming,
                Pane::Grants,
                Pane::Outgoing,
                Pane::Quotes,
                Pane::Peers
            ],
            "every pane reloads"
        );
        assert!(a.flash.as_ref().is_some_and(|f| f.text.contains("connected again")));
    }

    fn key(c: char) -> Msg {
        Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    fn code(c: KeyCode) -> Msg {
        Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
    }

    #[test]
    fn approving_asks_first_and_defaults_to_no() {
        let mut a = app();
        a.update(Msg::Reply(Reply::found(
            Pane::Grants,
            Found::Grants(vec![grant("g-1", "pending")]),
        )));
        a.update(key('4'));
        assert_eq!(a.pane, Pane::Grants);
        assert!(a.update(key('a')).is_empty());
        assert!(matches!(a.overlay, Some(Overlay::Confirm(Confirm { yes: false, .. }))));
        assert!(
            a.update(code(KeyCode::Enter)).is_empty(),
            "Enter on the default No does nothing"
        );
        assert!(a.overlay.is_none());
        a.update(key('a'));
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::ApproveGrant { id: "g-1".into() })]
        );
        a.update(key('a'));
        a.update(code(KeyCode::Right));
        assert_eq!(
            a.update(code(KeyCode::Enter)),
            vec![Effect::Run(Command::ApproveGrant { id: "g-1".into() })]
        );
    }

    #[test]
    fn rejecting_asks_for_a_reason_then_confirms() {
        let mut a = app();
        a.update(Msg::Reply(Reply::found(
            Pane::Grants,
            Found::Grants(vec![grant("g-1", "pending")]),
        )));
        a.update(key('4'));
        a.update(key('x'));
        for c in "not today".chars() {
            a.update(key(c));
        }
        a.update(code(KeyCode::Enter));
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::RejectGrant {
                id: "g-1".into(),
                reason: Some("not today".into())
            })]
        );
    }

    #[test]
    fn readonly_hides_dangerous_actions() {
        let mut a = App::new(ServerInfo::default(), Keymap::default(), true, now());
        a.update(Msg::Reply(Reply::found(
            Pane::Grants,
            Found::Grants(vec![grant("g-1", "pending")]),
        )));
        a.update(key('4'));
        assert!(a.update(key('a')).is_empty());
        assert!(a.overlay.is_none());
        assert!(a.act(Action::Approve).is_empty());
        assert!(a.overlay.is_none());
    }

    #[test]
    fn money_arriving_at_a_wallet_is_a_recent_event() {
        let mut a = app();
        a.update(Msg::Event(DomainEvent::WalletReceived {
            wallet: "bob".into(),
            connection: "9f86d081884c7d659a2feaa0c55ad015".into(),
            amount: 1234,
            received: 3702,
            asset_code: "USD".into(),
            asset_scale: 2,
        }));
        let (_, what) = a.panes.overview.recent.front().expect("a recent event");
        assert!(what.starts_with("bob received 12.34 USD (SPSP)"), "{what}");
        assert!(what.contains("37.02 USD in all on connection c55ad015"), "{what}");
        assert!(a.stale.contains(&Pane::Wallets));
    }

    #[test]
    fn events_update_rows_in_place_or_mark_panes_stale() {
        let mut a = app();
        a.update(Msg::Reply(Reply::page(
            Pane::Incoming,
            Found::Incoming(Listed {
                items: vec![incoming("i-1", "bob", 0, Some(1000))],
                next_cursor: None,
            }),
            false,
        )));
        a.stale.clear();
        a.update(Msg::Event(DomainEvent::IncomingPaymentReceived {
            id: "i-1".into(),
            received: 400,
        }));
        assert_eq!(a.panes.incoming.table.items[0].payment.received_amount.value.get(), 400);
        a.update(Msg::Event(DomainEvent::GrantPending {
            id: "g".into(),
            client: "c".into(),
            owner: None,
        }));
        assert!(a.stale.contains(&Pane::Grants));
        assert!(a.flash.is_some());
        let effects = a.update(key('4'));
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(Load { pane: Pane::Grants, .. }))),
            "{effects:?}"
        );
        // while looking at Grants, a new grant reloads it on the next tick
        a.update(Msg::Event(DomainEvent::GrantApproved {
            id: "g".into(),
            by: None,
        }));
        let effects = a.update(Msg::Tick(now()));
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(Load { pane: Pane::Grants, .. }))),
            "{effects:?}"
        );
    }

    /// A drop reloads the pane in view, marks the others stale, and asks nothing again while that load is
    /// unanswered: a flood that keeps the stream behind does not turn into a flood of queries.
    #[test]
    fn lag_reloads_the_pane_in_view_once_and_marks_the_rest_stale() {
        let mut a = app();
        let effects = a.update(Msg::Lagged);
        assert_eq!(effects.len(), 1, "{effects:?}");
        assert!(matches!(
            &effects[0],
            Effect::Load(Load {
                pane: Pane::Overview,
                ..
            })
        ));
        for p in [Pane::Wallets, Pane::Incoming, Pane::Grants, Pane::Outgoing, Pane::Peers] {
            assert!(a.stale.contains(&p), "{p:?}");
        }
        assert!(
            a.update(Msg::Lagged).is_empty(),
            "the Overview's load is still unanswered"
        );
    }

    #[test]
    fn ctrl_z_suspends_an_attached_console_but_not_one_that_runs_the_ase() {
        let ctrl_z = || Msg::Key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL));
        let mut a = app();
        assert!(a.update(ctrl_z()).is_empty(), "embedded: nothing stops");
        assert!(a.flash.as_ref().is_some_and(|f| f.text.contains("would stop it too")));
        a.info.attached = Some("http://127.0.0.1:4001".into());
        assert_eq!(a.update(ctrl_z()), vec![Effect::Suspend]);
    }

    /// What was served, as the server tells it a few times a second.
    fn served(n: u32, refused: Vec<crate::events::requests::RequestSummary>) -> Msg {
        Msg::Event(DomainEvent::RequestsServed {
            total: u64::from(n),
            arrivals: vec![(crate::clock::ts("2026-11-21T10:00:00Z").unix_timestamp(), n)],
            refused,
        })
    }

    #[test]
    fn requests_served_are_counted_and_the_requests_pane_reads_its_page_at_its_pace() {
        let mut a = app();
        let refused = crate::events::requests::RequestSummary {
            id: "01900000-0000-7000-8000-000000000001".into(),
            received_at: crate::clock::ts("2026-11-21T10:00:00.000001Z"),
            method: "POST".into(),
            path: "/quotes".into(),
            status: 400,
            latency_us: 5,
            client: None,
            signature: None,
        };
        // not in view: counted, nothing asked of the server
        assert!(a.update(served(40, vec![refused])).is_empty());
        assert_eq!(a.panes.overview.request_rate(), 4.0);
        assert_eq!(a.panes.overview.refused.len(), 1);
        // in view: the first page, then no more than one per pace however many updates come
        let effects = a.update(key('7'));
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(l) if l.pane == Pane::Requests)),
            "{effects:?}"
        );
        a.update(Msg::Reply(Reply::page(
            Pane::Requests,
            Found::Requests(Listed {
                items: Vec::new(),
                next_cursor: None,
            }),
            false,
        )));
        for _ in 0..10 {
            let effects = a.update(served(3, Vec::new()));
            assert!(
                !effects
                    .iter()
                    .any(|e| matches!(e, Effect::Load(l) if l.pane == Pane::Requests)),
                "{effects:?}"
            );
        }
        let later = a.now + time::Duration::milliseconds(300);
        let effects = a.update(Msg::Tick(later));
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(l) if l.pane == Pane::Requests)),
            "{effects:?}"
        );
    }

    #[test]
    fn freeze_counts_but_does_not_apply() {
        let mut a = app();
        a.update(key('f'));
        a.update(served(3, Vec::new()));
        assert_eq!(a.panes.overview.request_rate(), 0.0);
        assert_eq!(a.missed, 3);
        let effects = a.update(key('f'));
        assert!(!a.frozen);
        assert!(!effects.is_empty(), "unfreezing resyncs");
    }

    #[test]
    fn filters_and_commands() {
        let mut a = app();
        a.update(Msg::Reply(Reply::page(
            Pane::Incoming,
            Found::Incoming(Listed {
                items: vec![incoming("i-1", "bob", 0, None), incoming("i-2", "carol", 0, None)],
                next_cursor: None,
            }),
            false,
        )));
        a.update(key('3'));
        a.update(key('/'));
        for c in "carol".chars() {
            a.update(key(c));
        }
        a.update(code(KeyCode::Enter));
        assert_eq!(a.visible_len(Pane::Incoming), 1);
        a.update(key('/'));
        a.update(code(KeyCode::Backspace));
        for _ in 0..5 {
            a.update(code(KeyCode::Backspace));
        }
        for c in "!carol".chars() {
            a.update(key(c));
        }
        a.update(code(KeyCode::Enter));
        assert_eq!(a.panes.incoming.table.visible(), vec![0]);
        a.update(code(KeyCode::Esc));
        assert_eq!(a.visible_len(Pane::Incoming), 2);
        a.update(key(':'));
        for c in "outgoing failed".chars() {
            a.update(key(c));
        }
        let e = a.update(code(KeyCode::Enter));
        assert_eq!(a.pane, Pane::Outgoing);
        assert!(a.panes.outgoing.failed_only);
        assert_eq!(e, vec![outgoing_load(true, None, None)]);
        a.update(key(':'));
        for c in "q".chars() {
            a.update(key(c));
        }
        assert_eq!(a.update(code(KeyCode::Enter)), vec![Effect::Quit]);
    }

    #[test]
    fn a_filter_on_a_pane_paged_from_the_store_asks_the_store() {
        let mut a = app();
        let rows: Vec<_> = (0..3).map(|i| outgoing(&format!("o-{i}"), "completed")).collect();
        a.update(Msg::Reply(Reply::page(
            Pane::Outgoing,
            Found::Outgoing(Listed {
                items: rows,
                next_cursor: Some("cursor-1".into()),
            }),
            false,
        )));
        a.update(key('5'));
        let filter = |a: &mut App, text: &str| {
            a.update(key('/'));
            a.update(Msg::Key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)));
            for c in text.chars() {
                a.update(key(c));
            }
            a.update(code(KeyCode::Enter))
        };
        let loads = |e: Vec<Effect>| -> Vec<Option<String>> {
            e.into_iter()
                .filter_map(|e| match e {
                    Effect::Load(Load {
                        query: Query::Outgoing { filter },
                        ..
                    }) => Some(filter.q),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(loads(filter(&mut a, "Needle")), vec![Some("needle".to_owned())]);
        assert!(loads(filter(&mut a, "needle")).is_empty(), "the same search: no reload");
        // the next page carries the search
        a.update(Msg::Reply(Reply::page(
            Pane::Outgoing,
            Found::Outgoing(Listed {
                items: vec![outgoing("needle-9", "failed"), outgoing("needle-8", "failed")],
                next_cursor: Some("o-8".into()),
            }),
            false,
        )));
        assert_eq!(a.panes.outgoing.table.next_cursor.as_deref(), Some("o-8"));
        let e = a.update(key('j'));
        assert_eq!(e, vec![outgoing_load(false, Some("o-8".into()), Some("needle".into()))]);
        // an inverted filter stays on the loaded rows; Esc after a search reloads everything
        assert_eq!(loads(filter(&mut a, "!needle")), vec![None]);
        assert!(loads(a.update(code(KeyCode::Esc))).is_empty());
        filter(&mut a, "needle");
        assert_eq!(loads(a.update(code(KeyCode::Esc))), vec![None]);
        assert!(a.panes.outgoing.table.filter.is_none());
        // live-only panes filter in memory
        a.update(key('7'));
        assert!(filter(&mut a, "alice").iter().all(|e| !matches!(e, Effect::Load(_))));
    }

    #[test]
    fn scrolling_to_the_end_pages_from_the_store() {
        let mut a = app();
        let rows: Vec<_> = (0..3).map(|i| outgoing(&format!("o-{i}"), "completed")).collect();
        a.update(Msg::Reply(Reply::page(
            Pane::Outgoing,
            Found::Outgoing(Listed {
                items: rows,
                next_cursor: Some("cursor-1".into()),
            }),
            false,
        )));
        a.update(key('5'));
        a.update(key('j'));
        let e = a.update(key('j'));
        assert_eq!(e, vec![outgoing_load(false, Some("cursor-1".into()), None)]);
        a.update(Msg::Reply(Reply::page(
            Pane::Outgoing,
            Found::Outgoing(Listed {
                items: vec![outgoing("o-3", "failed")],
                next_cursor: None,
            }),
            true,
        )));
        assert_eq!(a.panes.outgoing.table.items.len(), 4);
    }

    #[test]
    fn retry_and_cancel_only_where_the_engine_allows() {
        let mut a = app();
        a.update(Msg::Reply(Reply::page(
            Pane::Outgoing,
            Found::Outgoing(Listed {
                items: vec![outgoing("o-1", "failed"), outgoing("o-2", "completed")],
                next_cursor: None,
            }),
            false,
        )));
        a.update(key('5'));
        a.update(key('R'));
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::RetryOutgoing { id: "o-1".into() })]
        );
        a.update(key('j'));
        assert!(a.update(key('R')).is_empty());
        assert!(a.overlay.is_none());
        assert!(a.update(key('C')).is_empty());
        assert!(a.flash.is_some());
    }

    /// The Outgoing pane's load: only failed payments, after `cursor`, matching `q`.
    fn outgoing_load(failed: bool, cursor: Option<String>, q: Option<String>) -> Effect {
        let append = cursor.is_some();
        let filter = PaymentFilter {
            state: failed.then(|| "failed".to_owned()),
            ..crate::tui::panes::list::page_of(cursor, q)
        };
        Effect::Load(Load {
            pane: Pane::Outgoing,
            query: Query::Outgoing { filter },
            append,
        })
    }

    /// `:revoke-token` on the Grants pane asks first, for the selected grant's newest live token.
    #[test]
    fn revoke_token_asks_for_the_newest_live_token() {
        let mut a = app();
        let token = |id: &str, minute: i64, revoked: bool| crate::gnap::service::TokenView {
            id: id.into(),
            hint: format!("{id}-value"),
            manage: String::new(),
            created_at: now() + time::Duration::minutes(minute),
            expires_at: now() + time::Duration::hours(1),
            revoked_at: revoked.then(now),
        };
        let mut g = grant("g-1", "approved");
        g.tokens = vec![token("t-1", 0, false), token("t-3", 2, true), token("t-2", 1, false)];
        a.update(Msg::Reply(Reply::found(Pane::Grants, Found::Grants(vec![g]))));
        a.pane = Pane::Grants;
        a.update(key(':'));
        for c in "revoke-token".chars() {
            a.update(key(c));
        }
        assert!(a.update(code(KeyCode::Enter)).is_empty(), "nothing runs before a yes");
        let Some(Overlay::Confirm(c)) = &a.overlay else {
            panic!("{:?}", a.overlay)
        };
        assert_eq!(c.effect, Effect::Run(Command::RevokeToken { id: "t-2".into() }));
    }

    fn webhooks_loaded(a: &mut App) {
        a.update(Msg::Reply(Reply::page(
            Pane::Webhooks,
            Found::Webhooks(vec![
                delivery(3, "walletCreated", "pending"),
                delivery(2, "grantPending", "delivered"),
                delivery(1, "walletCreated", "dead"),
            ]),
            false,
        )));
    }

    fn webhook_loads(effects: &[Effect]) -> Vec<bool> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Load(Load {
                    query: Query::Webhooks(crate::control::dto::WebhookPage { state, .. }),
                    ..
                }) => Some(state.is_some()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn redriving_a_webhook_asks_first_and_a_delivered_one_is_refused() {
        let mut a = app();
        webhooks_loaded(&mut a);
        a.update(key('9'));
        assert_eq!(a.pane, Pane::Webhooks);
        assert!(a.update(key('R')).is_empty());
        assert!(matches!(a.overlay, Some(Overlay::Confirm(Confirm { yes: false, .. }))));
        assert_eq!(a.update(key('y')), vec![Effect::Run(Command::RetryWebhook { seq: 3 })]);
        a.update(key('j'));
        assert!(a.update(key('R')).is_empty());
        assert!(a.overlay.is_none(), "no confirm for a delivered one");
        assert!(
            a.flash.as_ref().is_some_and(|f| f.text.contains("already delivered")),
            "{:?}",
            a.flash
        );
        a.update(key('j'));
        a.update(key('R'));
        assert_eq!(a.update(key('y')), vec![Effect::Run(Command::RetryWebhook { seq: 1 })]);
        a.update(key('A'));
        assert!(a.update(code(KeyCode::Enter)).is_empty(), "defaults to No");
        a.update(key('A'));
        assert_eq!(a.update(key('y')), vec![Effect::Run(Command::RetryDeadWebhooks)]);
        a.update(code(KeyCode::Enter));
        assert!(matches!(a.overlay, Some(Overlay::Detail)));
    }

    #[test]
    fn readonly_hides_redriving() {
        let mut a = App::new(ServerInfo::default(), Keymap::default(), true, now());
        webhooks_loaded(&mut a);
        a.update(key('9'));
        for k in ['R', 'A'] {
            assert!(a.update(key(k)).is_empty());
            assert!(a.overlay.is_none());
        }
        assert!(a.act(Action::Redrive).is_empty());
        assert!(a.act(Action::RedriveDead).is_empty());
        assert!(a.overlay.is_none());
        assert!(a.keymap.hints(Pane::Webhooks, true).iter().all(|h| !h.2));
    }

    #[test]
    fn closed_grants_are_hidden_until_f_or_the_command() {
        let grant_loads = |effects: &[Effect]| -> Vec<bool> {
            effects
                .iter()
                .filter_map(|e| match e {
                    Effect::Load(Load {
                        query: Query::Grants(crate::control::dto::GrantFilter { all, .. }),
                        ..
                    }) => Some(!all),
                    _ => None,
                })
                .collect()
        };
        let mut a = app();
        assert_eq!(
            grant_loads(&a.load(Pane::Grants).into_iter().collect::<Vec<_>>()),
            vec![true],
            "open grants only by default"
        );
        a.pane = Pane::Grants;
        assert_eq!(
            grant_loads(&a.update(key('F'))),
            vec![false],
            "F shows closed grants too"
        );
        assert!(
            a.panes.grants.all && !a.panes.outgoing.failed_only && !a.panes.webhooks.dead_only,
            "the Grants filter is its own"
        );
        assert_eq!(grant_loads(&a.update(key('F'))), vec![true], "F hides them again");
        a.update(key('F'));
        assert_eq!(
            grant_loads(&a.update(code(KeyCode::Esc))),
            vec![true],
            "Esc hides them again"
        );
        assert!(!a.panes.grants.all);
        a.update(key('1'));
        a.update(key(':'));
        for c in "grants all".chars() {
            a.update(key(c));
        }
        assert_eq!(grant_loads(&a.update(code(KeyCode::Enter))), vec![false]);
        assert_eq!((a.pane, a.panes.grants.all), (Pane::Grants, true));
    }

    #[test]
    fn the_dead_filter_and_its_command() {
        let mut a = app();
        webhooks_loaded(&mut a);
        a.update(key('9'));
        assert_eq!(webhook_loads(&a.update(key('F'))), vec![true]);
        assert!(
            a.panes.webhooks.dead_only && !a.panes.outgoing.failed_only,
            "the Outgoing filter is its own"
        );
        assert_eq!(
            webhook_loads(&a.update(code(KeyCode::Esc))),
            vec![false],
            "Esc shows all again"
        );
        assert!(!a.panes.webhooks.dead_only);
        a.update(key('1'));
        a.update(key(':'));
        for c in "webhooks d".chars() {
            a.update(key(c));
        }
        a.update(code(KeyCode::Tab));
        assert_eq!(webhook_loads(&a.update(code(KeyCode::Enter))), vec![true]);
        assert_eq!(a.pane, Pane::Webhooks);
        a.update(key('1'));
        a.update(key(':'));
        for c in "webhooks".chars() {
            a.update(key(c));
        }
        a.update(code(KeyCode::Enter));
        assert_eq!(
            (a.pane, a.panes.webhooks.dead_only),
            (Pane::Webhooks, true),
            "the filter stays until F or Esc"
        );
        a.update(Msg::Reply(Reply::page(Pane::Webhooks, Found::Webhooks(vec![]), false)));
        assert!(a.update(key('A')).is_empty());
        assert!(a.overlay.is_none(), "nothing dead: nothing to ask");
        assert!(a.flash.as_ref().is_some_and(|f| f.text.contains("no dead")));
    }

    #[test]
    fn the_webhooks_pane_reloads_at_its_own_pace_and_only_in_view() {
        let mut info = ServerInfo::default();
        info.server.webhooks_enabled = true;
        let mut a = App::new(info, Keymap::default(), false, now());
        let at = |s: i64| now() + time::Duration::milliseconds(s);
        let wallet = || {
            Msg::Event(DomainEvent::WalletCreated {
                id: "w".into(),
                name: "w".into(),
            })
        };
        // out of view: events and ticks load nothing for it
        a.update(wallet());
        assert!(webhook_loads(&a.update(Msg::Tick(at(10_000)))).is_empty());
        // shown: it loads (it was stale), then not again while that load is unanswered
        assert_eq!(webhook_loads(&a.update(key('9'))), vec![false]);
        a.update(wallet());
        assert!(webhook_loads(&a.update(Msg::Tick(at(10_250)))).is_empty());
        webhooks_loaded(&mut a);
        // answered: an event reloads it, but not within a second of the last load
        a.update(wallet());
        assert!(webhook_loads(&a.update(Msg::Tick(at(10_750)))).is_empty());
        assert_eq!(webhook_loads(&a.update(Msg::Tick(at(11_000)))), vec![false]);
        webhooks_loaded(&mut a);
        // live-only events queue no deliveries
        a.update(Msg::Event(DomainEvent::IncomingPaymentReceived {
            id: "i".into(),
            received: 1,
        }));
        assert!(webhook_loads(&a.update(Msg::Tick(at(12_500)))).is_empty());
        // without events, every five seconds while in view
        assert_eq!(webhook_loads(&a.update(Msg::Tick(at(16_000)))), vec![false]);
        webhooks_loaded(&mut a);
        // frozen: nothing
        a.update(key('f'));
        a.update(wallet());
        assert!(webhook_loads(&a.update(Msg::Tick(at(30_000)))).is_empty());
        // a load never answered is given up on after ten seconds
        a.update(key('f'));
        let mut b = a.clone();
        b.panes.webhooks.table.loading = true;
        b.load_at.insert(Pane::Webhooks, at(40_000));
        assert!(webhook_loads(&b.update(Msg::Tick(at(45_000)))).is_empty());
        assert_eq!(webhook_loads(&b.update(Msg::Tick(at(50_000)))), vec![false]);
        // webhooks off: only events reload it
        let mut c = App::new(ServerInfo::default(), Keymap::default(), false, now());
        c.update(key('9'));
        webhooks_loaded(&mut c);
        assert!(webhook_loads(&c.update(Msg::Tick(at(60_000)))).is_empty());
        c.update(wallet());
        assert_eq!(webhook_loads(&c.update(Msg::Tick(at(60_250)))), vec![false]);
    }

    #[test]
    fn desks_switch_by_key_and_by_name_and_other_desks_flash() {
        let mut a = app();
        assert!(a.act(Action::NextDesk).is_empty(), "one desk: nothing to switch to");
        assert!(a.flash.as_ref().is_some_and(|f| f.text.contains("one desk")));
        a.desks = Some(DeskList {
            names: vec!["cloud-nine".into(), "happy-life".into()],
            active: 0,
        });
        assert_eq!(
            a.update(code(KeyCode::F(2))),
            vec![Effect::SwitchDesk("happy-life".into())]
        );
        let desk = |a: &mut App, text: &str| {
            a.update(key(':'));
            for c in text.chars() {
                a.update(key(c));
            }
            a.update(code(KeyCode::Enter))
        };
        assert_eq!(
            desk(&mut a, "desk happy"),
            vec![Effect::SwitchDesk("happy-life".into())]
        );
        assert!(desk(&mut a, "desk cloud-nine").is_empty(), "already in view");
        assert!(desk(&mut a, "desk nowhere").is_empty());
        assert!(
            a.flash
                .as_ref()
                .is_some_and(|f| f.text.contains("cloud-nine, happy-life"))
        );
        let effects = a.update(Msg::Reply(Reply::Switched(
            ServerInfo::default(),
            DeskList {
                names: vec!["cloud-nine".into(), "happy-life".into()],
                active: 1,
            },
        )));
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(Load { pane: Pane::Peers, .. }))),
            "every pane reloads from the new desk: {effects:?}"
        );
        assert_eq!(
            desk(&mut a, "desk cloud"),
            vec![Effect::SwitchDesk("cloud-nine".into())]
        );
        a.update(Msg::Elsewhere(
            "cloud-nine".into(),
            DomainEvent::OutgoingPaymentCompleted { id: "x/op-1".into() },
        ));
        assert_eq!(
            a.flash.as_ref().map(|f| f.text.as_str()),
            Some("cloud-nine: outgoing payment op-1 completed")
        );
    }

    #[test]
    fn the_peers_pane_is_key_0_and_reloads_while_in_view() {
        let mut a = app();
        let effects = a.update(key('0'));
        assert_eq!(a.pane, Pane::Peers);
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(Load { pane: Pane::Peers, .. }))),
            "{effects:?}"
        );
        a.update(Msg::Reply(Reply::found(Pane::Peers, Found::Peers(vec![]))));
        let at = |s: i64| now() + time::Duration::seconds(s);
        let peer_loads = |e: Vec<Effect>| {
            e.iter()
                .filter(|e| matches!(e, Effect::Load(Load { pane: Pane::Peers, .. })))
                .count()
        };
        assert_eq!(peer_loads(a.update(Msg::Tick(at(2)))), 0);
        assert_eq!(peer_loads(a.update(Msg::Tick(at(6)))), 1, "every few seconds");
        a.update(Msg::Reply(Reply::found(Pane::Peers, Found::Peers(vec![]))));
        a.update(key('1'));
        assert_eq!(peer_loads(a.update(Msg::Tick(at(30)))), 0, "not out of view");
    }

    #[test]
    fn tab_clicks_switch_panes() {
        let mut a = app();
        a.update(Msg::Resize(200, 40));
        let x = u16::try_from(tab_label(Pane::Overview, &a).chars().count() + 2).unwrap();
        a.update(Msg::Click(x, 1));
        assert_eq!(a.pane, Pane::Wallets);
    }

    #[test]
    fn every_tab_shows_at_80_columns_and_clicks_follow_the_short_labels() {
        let mut a = app();
        a.update(Msg::Resize(80, 24));
        let labels = tab_labels(&a, 80);
        let width: usize = labels.iter().map(|(_, l)| l.chars().count() + 1).sum();
        assert!(width <= 80, "{labels:?}");
        assert_eq!(labels.len(), Pane::ALL.len());
        assert!(
            labels[0].1.contains("Overview"),
            "the pane in view keeps its title: {labels:?}"
        );
        assert_eq!(labels[9].1, "0 Pee");
        let x: usize = labels[..9].iter().map(|(_, l)| l.chars().count() + 1).sum();
        a.update(Msg::Click(u16::try_from(x + 1).unwrap(), 1));
        assert_eq!(a.pane, Pane::Peers);
        assert!(
            tab_labels(&a, 30)
                .iter()
                .all(|(p, l)| *p == Pane::Peers || l.trim().len() == 1)
        );
    }
}
