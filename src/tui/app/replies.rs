//! Replies from the control task and the slow tick into the view model: loaded pages replace (or extend)
//! a pane's rows with the selection kept on its row, outcomes go to the flash line and resync, and the tick
//! ages the flash line and the request rate and reloads what events made stale.

use time::OffsetDateTime;

use super::{App, Effect, Level, Overlay, Reply, Rows, ServerInfo};
use crate::tui::{
    desk::DeskList,
    pane::Pane,
    panes::{overview, peers, webhooks},
};

impl App {
    pub(super) fn on_tick(&mut self, now: OffsetDateTime) -> Vec<Effect> {
        self.now = now;
        if self.flash.as_ref().is_some_and(|f| f.until <= now) {
            self.flash = None;
        }
        let cutoff = now.unix_timestamp() - 10;
        while self.request_times.front().is_some_and(|t| *t < cutoff) {
            self.request_times.pop_front();
        }
        if self.frozen {
            return Vec::new();
        }
        // reload what changed, at most once per tick: the pane in view; the overview counters, the Webhooks
        // and the Peers pane pace themselves
        let mut out = Vec::new();
        let p = self.pane;
        if self.stale.contains(&p)
            && !matches!(
                p,
                Pane::Overview | Pane::Requests | Pane::Log | Pane::Webhooks | Pane::Peers
            )
        {
            out.push(self.load(p));
        }
        out.extend(overview::reload(self));
        out.extend(webhooks::reload(self));
        out.extend(peers::reload(self));
        out
    }

    /// Another desk is in view: nothing of the last one stays on screen; every pane reloads from the new one.
    fn switched(&mut self, info: ServerInfo, desks: DeskList) -> Vec<Effect> {
        self.info = info;
        self.flash(Level::Info, format!("desk {}", desks.current()));
        self.desks = Some(desks);
        self.disconnected = None;
        self.overview = Default::default();
        self.wallets = Rows::default();
        self.incoming = Rows::default();
        self.grants = Rows::default();
        self.grant_spent.clear();
        self.outgoing = Rows::default();
        self.quotes = Rows::default();
        self.webhooks = Rows::default();
        self.peers = Rows::default();
        self.peer_counts.clear();
        self.peer_rates.clear();
        self.requests = Rows {
            loaded: true,
            ..Rows::default()
        };
        self.recent.clear();
        self.history.clear();
        self.history_order.clear();
        self.request_times.clear();
        self.request_buckets.clear();
        if matches!(
            self.overlay,
            Some(Overlay::Detail | Overlay::Json(_) | Overlay::Confirm(_))
        ) {
            self.overlay = None;
        }
        self.resync_all()
    }

    /// Requests per second in each ten-second bucket of the last five minutes (oldest first, ending with the
    /// bucket of now).
    pub fn request_history(&self) -> Vec<f64> {
        let now = self.now.unix_timestamp();
        let last = now - now.rem_euclid(super::REQUEST_BUCKET_SECS);
        let n = i64::try_from(super::REQUEST_BUCKETS).unwrap_or(30);
        (0..n)
            .map(|i| {
                let b = last - (n - 1 - i) * super::REQUEST_BUCKET_SECS;
                let count = self
                    .request_buckets
                    .iter()
                    .find(|(s, _)| *s == b)
                    .map_or(0, |(_, c)| *c);
                f64::from(count) / super::REQUEST_BUCKET_SECS as f64
            })
            .collect()
    }

    /// Requests per second over the last ten seconds.
    pub fn request_rate(&self) -> f64 {
        self.request_times.len() as f64 / 10.0
    }

    pub(super) fn on_reply(&mut self, r: Reply) -> Vec<Effect> {
        fn set<T: Clone>(
            rows: &mut Rows<T>,
            items: Vec<T>,
            next: Option<String>,
            append: bool,
            id: impl Fn(&T) -> String,
        ) {
            let keep = rows.items.get(rows.selected).map(&id);
            if append {
                rows.items.extend(items);
            } else {
                rows.items = items;
                if let Some(k) = keep {
                    rows.selected = rows.items.iter().position(|x| id(x) == k).unwrap_or(rows.selected);
                }
            }
            rows.selected = rows.selected.min(rows.items.len().saturating_sub(1));
            rows.next_cursor = next;
            rows.loading = false;
            rows.loaded = true;
        }
        match r {
            Reply::Overview(o) => {
                self.overview = o;
                self.overview_loading = false;
            }
            Reply::Wallets(w) => set(&mut self.wallets, w, None, false, |x| x.wallet.name.clone()),
            Reply::Incoming { rows, next, append } => {
                set(&mut self.incoming, rows, next, append, |x| x.payment.id.clone())
            }
            Reply::Grants(g, spent) => {
                set(&mut self.grants, g, None, false, |x| x.id.clone());
                self.grant_spent = spent;
                return self.timeline_effect(true).into_iter().collect();
            }
            Reply::Timeline(id, steps) => self.grant_timeline = Some((id, steps)),
            Reply::Outgoing { rows, next, append } => {
                set(&mut self.outgoing, rows, next, append, |x| x.payment.id.clone())
            }
            Reply::Quotes { rows, next, append } => set(&mut self.quotes, rows, next, append, |x| x.id.clone()),
            Reply::Webhooks { rows, next, append } => {
                set(&mut self.webhooks, rows, next, append, |x| x.event_seq.to_string())
            }
            Reply::Peers(p) => {
                set(&mut self.peers, p, None, false, |x| x.name.clone());
                peers::on_loaded(self);
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
        }
        Vec::new()
    }
}
