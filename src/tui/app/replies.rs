//! Replies from the control task and the slow tick into the view model: loaded pages replace (or extend)
//! a pane's rows with the selection kept on its row, outcomes go to the flash line and resync, and the tick
//! ages the flash line and reloads what events made stale, each pane at its own pace.

use time::OffsetDateTime;

use super::{App, Effect, Level, Overlay, Reply, ServerInfo};
use crate::tui::{desk::DeskList, pane::Pane};

impl App {
    pub(super) fn on_tick(&mut self, now: OffsetDateTime) -> Vec<Effect> {
        self.now = now;
        if self.flash.as_ref().is_some_and(|f| f.until <= now) {
            self.flash = None;
        }
        self.panes.overview.on_tick(now);
        if self.frozen {
            return Vec::new();
        }
        // reload what changed, at most once per tick: the pane in view; the panes with a pace of their own
        // (the overview counters, Webhooks, Peers) when it says so
        let mut out = Vec::new();
        let p = self.pane;
        let paced = self.view().pace(&self.cx(p)).is_some();
        if self.stale.contains(&p) && !paced && p != Pane::Log {
            out.push(self.load(p));
        }
        for p in Pane::EVERY {
            out.extend(self.reload_if_due(p));
        }
        out
    }

    /// The reload of a pane that paces its own, if one is due now.
    pub(super) fn reload_if_due(&mut self, p: Pane) -> Option<Effect> {
        if self.frozen {
            return None;
        }
        let view = self.panes.view(p);
        let (pace, in_view_only) = view.pace(&self.cx(p))?;
        if in_view_only && p != self.pane {
            return None;
        }
        let stale = self.stale.contains(&p);
        pace.due(self.now, self.load_at.get(&p).copied(), view.loading(), stale)
            .then(|| self.load(p))
    }

    /// Another desk is in view: nothing of the last one stays on screen; every pane reloads from the new one.
    fn switched(&mut self, info: ServerInfo, desks: DeskList) -> Vec<Effect> {
        self.info = info;
        self.flash(Level::Info, format!("desk {}", desks.current()));
        self.desks = Some(desks);
        self.disconnected = None;
        self.panes.clear();
        self.history = Default::default();
        if matches!(
            self.overlay,
            Some(Overlay::Detail | Overlay::Json(_) | Overlay::Confirm(_))
        ) {
            self.overlay = None;
        }
        self.resync_all()
    }

    pub(super) fn on_reply(&mut self, r: Reply) -> Vec<Effect> {
        let detail_open = self.overlay == Some(Overlay::Detail);
        let p = &mut self.panes;
        match r {
            Reply::Overview(o) => {
                p.overview.data = o;
                p.overview.loading = false;
            }
            Reply::Wallets(w) => p.wallets.table.set(w, None, false),
            Reply::Incoming { rows, next, append } => p.incoming.table.set(rows, next, append),
            Reply::Grants(g, spent) => {
                p.grants.table.set(g, None, false);
                p.grants.spent = spent;
                return self.detail_effect(true).into_iter().collect();
            }
            Reply::Timeline(id, steps) => p.grants.timeline = Some((id, steps)),
            Reply::Outgoing { rows, next, append } => p.outgoing.table.set(rows, next, append),
            Reply::Quotes { rows, next, append } => p.quotes.table.set(rows, next, append),
            Reply::Webhooks { rows, next, append } => p.webhooks.table.set(rows, next, append),
            Reply::Requests { rows, next, append } => p.requests.on_page(rows, next, append, detail_open),
            Reply::Request(r) => p.requests.detail = Some(*r),
            Reply::Peers(rows) => {
                p.peers.table.set(rows, None, false);
                p.peers.on_loaded(self.now);
            }
            Reply::Classroom(rows) => {
                if let Some(text) = p.classroom.on_loaded(rows) {
                    self.flash(Level::Info, text);
                }
            }
            Reply::Switched(info, desks) => return self.switched(info, desks),
            Reply::Done(text) => {
                self.flash(Level::Info, text);
                return self.resync_all();
            }
            Reply::Failed(text) => self.flash(Level::Error, text),
            Reply::KeyGenerated { wallet, kid, pem } => {
                self.open_overlay(Overlay::Json(format!(
                    "Key {kid} is now published in {wallet}'s JWKS.\nIts private key is shown this once — copy it now:\n\n{pem}"
                )));
                return self.resync_all();
            }
            Reply::PassphraseGenerated { wallet, passphrase } => {
                self.open_overlay(Overlay::Json(format!(
                    "The owner of {wallet} now signs in on the interaction page to decide its grants, with \
                     this passphrase. It is shown this once — hand it over now:\n\n{passphrase}"
                )));
            }
        }
        Vec::new()
    }
}
