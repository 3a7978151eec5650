//! Replies from the control task and the slow tick into the view model: what a pane's query found goes to
//! that pane, outcomes go to the flash line and resync, and the tick ages the flash line and reloads what
//! events made stale, each pane at its own pace.

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
            out.extend(self.load(p));
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
            .flatten()
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
        match r {
            Reply::Found { pane, found, append } => {
                let outs = self.with_pane(pane, |view, cx| view.found(*found, append, cx));
                return self.apply(pane, outs);
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
