//! The Overview pane: server facts, wallet balances, activity (requests/s and money moved per asset as
//! sparklines, work waiting), what needs attention (each with the key of the pane that goes there), and the
//! most recent domain events beside the most recent failures.

use std::collections::VecDeque;

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::Style,
    text::{Line, Span},
    widgets::{Cell, Paragraph, Row, Table},
};
use time::OffsetDateTime;

use super::{Cx, List, Out, View, requests::HttpRow};
use crate::{
    control::{Found, Query, dto::AttentionKind},
    money::format_minor,
    states::{DeliveryState, OutgoingState},
    text::sanitize,
    tui::{
        desk::OverviewData,
        pane::{Pace, Pane},
        theme::Theme,
        widgets::{short_id, table::pane_block},
    },
};

/// Seconds per bar of the requests/s sparkline, and bars.
pub const REQUEST_BUCKET_SECS: i64 = 10;
pub const REQUEST_BUCKETS: usize = 30;
/// Refused requests kept for the failures box.
const REFUSED: usize = 100;

const PACE: Pace = Pace {
    after_events: time::Duration::seconds(2),
    poll: None,
    give_up: time::Duration::seconds(10),
};

/// How often the Overview reloads with `data` loaded: while grants wait, every five seconds too (a grant whose
/// window passed leaves the pending count, the header's badge, without an event).
fn pace_of(data: &OverviewData) -> Pace {
    let poll = (data.pending_grants > 0).then_some(time::Duration::seconds(5));
    Pace { poll, ..PACE }
}

/// The Overview's state: the counters loaded from the store, and what the console saw go by.
#[derive(Debug, Clone, Default)]
pub struct Overview {
    pub data: OverviewData,
    pub loading: bool,
    /// Recent domain events (when, what), newest first.
    pub recent: VecDeque<(String, String)>,
    /// Requests told of per second (unix seconds when told, count) over the last ten seconds: the rate.
    pub request_times: VecDeque<(i64, u32)>,
    /// Requests per ten seconds over the last five minutes (bucket start in unix seconds, count), by
    /// arrival time, oldest first: the requests/s sparkline.
    pub request_buckets: VecDeque<(i64, u32)>,
    /// Refused requests (status 400 and up), newest by arrival first.
    pub refused: VecDeque<HttpRow>,
}

impl Overview {
    /// An event in a few words, at `at`.
    pub fn remember(&mut self, at: String, what: String) {
        self.recent.push_front((at, what));
        self.recent.truncate(100);
    }

    /// Requests were served: `arrivals` (unix second of arrival, count), counted at `now`; `refused` those
    /// of them answered 400 or up.
    pub fn on_served(&mut self, now: OffsetDateTime, arrivals: &[(i64, u32)], refused: Vec<HttpRow>) {
        let told: u32 = arrivals.iter().fold(0, |n, (_, c)| n.saturating_add(*c));
        let second = now.unix_timestamp();
        match self.request_times.back_mut() {
            Some((s, n)) if *s == second => *n = n.saturating_add(told),
            _ => self.request_times.push_back((second, told)),
        }
        for &(at, count) in arrivals {
            let bucket = at - at.rem_euclid(REQUEST_BUCKET_SECS);
            match self.request_buckets.iter_mut().rev().find(|(b, _)| *b <= bucket) {
                Some((b, n)) if *b == bucket => *n = n.saturating_add(count),
                _ => {
                    let i = self.request_buckets.partition_point(|(b, _)| *b < bucket);
                    self.request_buckets.insert(i, (bucket, count));
                }
            }
        }
        while self.request_buckets.len() > REQUEST_BUCKETS + 1 {
            self.request_buckets.pop_front();
        }
        for r in refused {
            let pos = self
                .refused
                .iter()
                .position(|x| x.at < r.at)
                .unwrap_or(self.refused.len());
            self.refused.insert(pos, r);
        }
        self.refused.truncate(REFUSED);
    }

    /// The slow tick: the rate forgets what is older than ten seconds.
    pub fn on_tick(&mut self, now: OffsetDateTime) {
        let cutoff = now.unix_timestamp() - 10;
        while self.request_times.front().is_some_and(|(t, _)| *t < cutoff) {
            self.request_times.pop_front();
        }
    }

    /// Requests per second in each ten-second bucket of the last five minutes (oldest first, ending with the
    /// bucket of `now`).
    pub fn request_history(&self, now: OffsetDateTime) -> Vec<f64> {
        let now = now.unix_timestamp();
        let last = now - now.rem_euclid(REQUEST_BUCKET_SECS);
        let n = i64::try_from(REQUEST_BUCKETS).unwrap_or(30);
        (0..n)
            .map(|i| {
                let b = last - (n - 1 - i) * REQUEST_BUCKET_SECS;
                let count = self
                    .request_buckets
                    .iter()
                    .find(|(s, _)| *s == b)
                    .map_or(0, |(_, c)| *c);
                f64::from(count) / REQUEST_BUCKET_SECS as f64
            })
            .collect()
    }

    /// Requests per second over the last ten seconds.
    pub fn request_rate(&self) -> f64 {
        f64::from(self.request_times.iter().fold(0u32, |n, (_, c)| n.saturating_add(*c))) / 10.0
    }

    pub fn on_balance_changed(&mut self, account_id: &str, balance: i64, pending_debits: i64) {
        for b in self.data.balances.iter_mut().filter(|b| b.account_id == account_id) {
            b.balance = balance;
            b.pending_debits = pending_debits;
            b.available = balance - pending_debits;
        }
    }

    fn draw_server(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let uptime = (cx.now - cx.started_at).whole_seconds().max(0);
        let lines = vec![
            Line::from(vec![
                Span::styled("server   ", theme.dim),
                Span::styled(cx.info.server.public_url.clone(), theme.accent),
            ]),
            Line::from(vec![
                Span::styled("listen   ", theme.dim),
                Span::raw(cx.info.server.listen.clone()),
            ]),
            Line::from(vec![
                Span::styled("ILP      ", theme.dim),
                Span::raw(
                    cx.info
                        .server
                        .ilp_address
                        .clone()
                        .unwrap_or_else(|| "(not configured)".into()),
                ),
            ]),
            Line::from(vec![
                Span::styled("uptime   ", theme.dim),
                Span::raw(format!(
                    "{}h {:02}m {:02}s",
                    uptime / 3600,
                    (uptime % 3600) / 60,
                    uptime % 60
                )),
            ]),
        ];
        f.render_widget(
            Paragraph::new(lines).block(pane_block(" Overview ".into(), String::new(), theme)),
            area,
        );
    }

    fn draw_balances(&self, theme: &Theme, f: &mut Frame, area: Rect) {
        let balances: Vec<Row> = self
            .data
            .balances
            .iter()
            .filter(|b| b.kind == "wallet")
            .map(|b| {
                Row::new(vec![
                    Cell::from(sanitize(&b.wallet.clone().unwrap_or_default())),
                    Cell::from(format!(
                        "{} {}",
                        format_minor(b.balance.into(), b.asset_scale),
                        sanitize(&b.asset_code)
                    )),
                    Cell::from(format_minor(b.pending_debits.into(), b.asset_scale)).style(theme.dim),
                ])
            })
            .collect();
        f.render_widget(
            Table::new(
                balances,
                [Constraint::Length(14), Constraint::Length(18), Constraint::Min(8)],
            )
            .header(Row::new(vec!["WALLET", "BALANCE", "RESERVED"]).style(theme.header))
            .block(pane_block(" Balances ".into(), String::new(), theme)),
            area,
        );
    }

    fn draw_activity(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let a = &self.data.activity;
        let o = &self.data;
        let inner = usize::from(area.width.saturating_sub(2));
        // 30 ten-second bars for requests and 15 one-minute bars for money: 30 cells each, 60 when wide
        let req = self.request_history(cx.now);
        let wide = inner >= 110;
        let money_w = if wide { 4 } else { 2 };
        let mut lines = vec![Line::from(vec![
            Span::styled(format!("{:<11}", "requests/s"), theme.dim),
            Span::styled(sparkline(&req, if wide { 2 } else { 1 }), theme.accent),
            Span::raw(format!("  {:.1}/s now", self.request_rate())),
            Span::styled(", last 5 min", theme.dim),
        ])];
        if a.moved.is_empty() {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<11}", "moved"), theme.dim),
                Span::styled("nothing in the last 15 min", theme.dim),
            ]));
        }
        let room = usize::from(area.height.saturating_sub(4 + u16::from(o.wal.is_some())));
        for m in a.moved.iter().take(room.max(1)) {
            let values: Vec<f64> = m.per_minute.iter().map(|v| *v as f64).collect();
            let total: i64 = m.per_minute.iter().sum();
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{:<11}", format!("{} moved", sanitize(&m.asset_code))),
                    theme.dim,
                ),
                Span::styled(sparkline(&values, money_w), theme.ok),
                Span::raw(format!("  {}", format_minor(total.into(), m.asset_scale))),
                Span::styled(" in 15 min", theme.dim),
            ]));
        }
        let count = |label: &str, n: usize, hot: Style| -> Vec<Span<'static>> {
            vec![
                Span::styled(format!("{label} "), theme.dim),
                Span::styled(n.to_string(), if n > 0 { hot } else { Style::new() }),
                Span::raw("  "),
            ]
        };
        let mut waiting = vec![Span::styled(format!("{:<11}", "waiting"), theme.dim)];
        waiting.extend(count("grants", o.pending_grants, theme.danger));
        waiting.extend(count(OutgoingState::Sending.as_str(), a.sending, theme.pending));
        waiting.extend(count("webhooks", a.webhooks_pending, theme.pending));
        waiting.extend(count(DeliveryState::Dead.as_str(), a.webhooks_dead, theme.failed));
        waiting.extend(count("open incoming", o.open_incoming, Style::new()));
        waiting.extend(count(OutgoingState::Failed.as_str(), o.failed_outgoing, theme.failed));
        lines.push(Line::from(waiting));
        if let Some(w) = &o.wal {
            lines.push(wal_line(w, theme));
        }
        f.render_widget(
            Paragraph::new(lines).block(pane_block(" Activity ".into(), String::new(), theme)),
            area,
        );
    }

    fn draw_recent(&self, theme: &Theme, f: &mut Frame, area: Rect) {
        let height = usize::from(area.height.saturating_sub(2));
        let events: Vec<Line> = self
            .recent
            .iter()
            .take(height)
            .map(|(at, what)| {
                Line::from(vec![
                    Span::styled(format!("{} ", at.get(11..19).unwrap_or("")), theme.dim),
                    Span::raw(sanitize(what)),
                ])
            })
            .collect();
        f.render_widget(
            Paragraph::new(events).block(pane_block(" Recent events ".into(), String::new(), theme)),
            area,
        );
    }

    /// What needs attention, each with the key of the pane that goes there (drawn only when something does).
    fn draw_attention(&self, theme: &Theme, f: &mut Frame, area: Rect) {
        let lines: Vec<Line> = self
            .data
            .attention
            .iter()
            .map(|a| {
                let pane = pane_of(a.kind);
                let key = pane.digit().map_or_else(String::new, |d| d.to_string());
                Line::from(vec![
                    Span::styled(format!("[{key}] "), theme.accent),
                    Span::styled(format!("{:<9}", pane.title()), theme.dim),
                    Span::styled(sanitize(&a.what), theme.failed),
                ])
            })
            .collect();
        let title = format!(" Attention ({}): its key goes there ", lines.len());
        f.render_widget(
            Paragraph::new(lines).block(pane_block(title, String::new(), theme)),
            area,
        );
    }

    /// The latest failed outgoing payments (from the store), the peers' last rejected packets and refused
    /// requests (seen live), newest first.
    fn draw_failures(&self, theme: &Theme, f: &mut Frame, area: Rect) {
        let height = usize::from(area.height.saturating_sub(2));
        let mut rows: Vec<(String, Line)> = Vec::new();
        for p in &self.data.activity.recent_failures {
            rows.push((
                p.at.clone(),
                Line::from(vec![
                    Span::styled(format!("{} ", p.at.get(11..19).unwrap_or("")), theme.dim),
                    Span::styled("payment ", theme.failed),
                    Span::raw(format!(
                        "{} {} {}",
                        short_id(&p.id),
                        sanitize(&p.wallet),
                        sanitize(p.reason.as_deref().unwrap_or(""))
                    )),
                ]),
            ));
        }
        for p in &self.data.activity.rejected_packets {
            let r = &p.reject;
            rows.push((
                r.at.clone(),
                Line::from(vec![
                    Span::styled(format!("{} ", r.at.get(11..19).unwrap_or("")), theme.dim),
                    Span::styled(format!("packet {} ", sanitize(&r.code)), theme.failed),
                    Span::raw(format!(
                        "{} {} {}",
                        sanitize(&p.peer),
                        sanitize(&r.direction),
                        sanitize(&r.message)
                    )),
                ]),
            ));
        }
        for r in self.refused.iter().take(height) {
            rows.push((
                r.at.clone(),
                Line::from(vec![
                    Span::styled(format!("{} ", r.at.get(11..19).unwrap_or("")), theme.dim),
                    Span::styled(format!("{} ", r.status), theme.failed),
                    Span::raw(format!("{} {}", sanitize(&r.method), sanitize(&r.path))),
                ]),
            ));
        }
        rows.sort_by(|a, b| b.0.cmp(&a.0));
        let lines: Vec<Line> = rows.into_iter().take(height).map(|(_, l)| l).collect();
        let lines = if lines.is_empty() {
            vec![Line::styled("no failed payments or refused requests", theme.dim)]
        } else {
            lines
        };
        f.render_widget(
            Paragraph::new(lines).block(pane_block(" Recent failures ".into(), String::new(), theme)),
            area,
        );
    }
}

impl View for Overview {
    fn list(&self) -> Option<&dyn List> {
        None
    }
    fn list_mut(&mut self) -> Option<&mut dyn List> {
        None
    }
    /// Whether in view or not (the header's badge reads it): after events at most every two seconds; while
    /// grants wait, every five seconds too, so one whose window passed leaves the count without an event.
    fn pace(&self, _cx: &Cx<'_>) -> Option<(Pace, bool)> {
        Some((pace_of(&self.data), false))
    }
    fn loading(&self) -> bool {
        self.loading
    }
    fn start_loading(&mut self) {
        self.loading = true;
    }
    fn query(&self, _cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        Some(Query::Overview)
    }
    fn found(&mut self, found: Found, _append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Overview(o) = found {
            self.data = *o;
            self.loading = false;
        }
        Vec::new()
    }

    /// Draws the overview into `area`: the server and balances, then activity (requests/s and money moved per
    /// asset as sparklines, work waiting), then what needs attention (when anything does), then recent events
    /// beside recent failures. Taller terminals give the balances and the lists more rows; a short one with
    /// something to attend to shows that first, in place of the server and balances.
    fn draw(&self, cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let o = &self.data;
        let wallets = o.balances.iter().filter(|b| b.kind == "wallet").count();
        let top_h = u16::try_from(wallets + 3)
            .unwrap_or(u16::MAX)
            .clamp(6, if area.height >= 30 { 12 } else { 6 });
        let assets = o.activity.moved.len().max(1);
        let act_h = u16::try_from(assets + 4 + usize::from(o.wal.is_some()))
            .unwrap_or(u16::MAX)
            .min(if area.height >= 30 { 12 } else { 7 });
        let attention_h = u16::try_from(o.attention.len() + 2).unwrap_or(u16::MAX);
        if !o.attention.is_empty() && area.height < 30 {
            // a short terminal with something to attend to: that first, in place of the server and balances
            let [attention, activity, rest] = Layout::vertical([
                Constraint::Length(attention_h.min(area.height.saturating_sub(act_h))),
                Constraint::Length(act_h),
                Constraint::Min(0),
            ])
            .areas(area);
            self.draw_attention(theme, f, attention);
            self.draw_activity(cx, theme, f, activity);
            if rest.height >= 3 {
                let [events, failures] =
                    Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(rest);
                self.draw_recent(theme, f, events);
                self.draw_failures(theme, f, failures);
            }
            return;
        }
        let [top, activity, bottom] =
            Layout::vertical([Constraint::Length(top_h), Constraint::Length(act_h), Constraint::Min(3)]).areas(area);
        let [left, right] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
        self.draw_server(cx, theme, f, left);
        self.draw_balances(theme, f, right);
        self.draw_activity(cx, theme, f, activity);
        // what needs attention, above the events, when anything does
        let bottom = if o.attention.is_empty() {
            bottom
        } else {
            let [attention, rest] =
                Layout::vertical([Constraint::Length(attention_h.min(12)), Constraint::Min(0)]).areas(bottom);
            self.draw_attention(theme, f, attention);
            rest
        };
        let [events, failures] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom);
        self.draw_recent(theme, f, events);
        self.draw_failures(theme, f, failures);
    }
}

/// The pane an attention item's key goes to.
pub fn pane_of(kind: AttentionKind) -> Pane {
    match kind {
        AttentionKind::PeerLiquidityLow | AttentionKind::PeerCreditHigh => Pane::Peers,
        AttentionKind::WalletBalanceLow => Pane::Wallets,
        AttentionKind::DeadWebhooks => Pane::Webhooks,
        AttentionKind::GrantsWaiting => Pane::Grants,
        AttentionKind::FailedPayments => Pane::Outgoing,
        // the WAL line is on the Overview; a node's connection to the others is in its log
        AttentionKind::WalNearCeiling => Pane::Overview,
        AttentionKind::CachesNotTrusted => Pane::Log,
    }
}

/// Bars for `values`, each scaled to the largest (`·` for nothing), each `width` cells wide.
pub fn sparkline(values: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let mut out = String::new();
    for v in values {
        let c = if *v <= 0.0 || max <= 0.0 {
            '·'
        } else {
            let level = ((v / max) * 7.0).round() as usize;
            BARS[level.min(7)]
        };
        for _ in 0..width.max(1) {
            out.push(c);
        }
    }
    out
}

/// The SQLite WAL against its ceiling (past it: the danger style), its checkpoints and the last one's time.
fn wal_line(w: &crate::store::wal::WalState, theme: &Theme) -> Line<'static> {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20));
    let size = if w.file_bytes > w.ceiling_bytes {
        theme.danger
    } else {
        Style::new()
    };
    let mut spans = vec![
        Span::styled(format!("{:<11}", "WAL"), theme.dim),
        Span::styled(mib(w.file_bytes), size),
        Span::styled(format!(" of {}", mib(w.ceiling_bytes)), theme.dim),
        Span::raw(format!("  {} checkpoints", w.checkpoints)),
        Span::styled(format!(", last {:.1} ms", w.last_micros as f64 / 1000.0), theme.dim),
    ];
    if w.pinned > 0 {
        spans.push(Span::styled(format!("  {} pinned", w.pinned), theme.pending));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_grants_keep_the_count_reloading_so_an_expired_one_drops_out() {
        let mut data = OverviewData::default();
        assert_eq!(pace_of(&data).poll, None, "nothing waits: reloads after events only");
        data.pending_grants = 1;
        let pace = pace_of(&data);
        assert_eq!(pace.poll, Some(time::Duration::seconds(5)));
        let now = crate::clock::ts("2026-12-01T10:00:00Z");
        assert!(pace.due(now, Some(now - time::Duration::seconds(6)), false, false));
        assert!(!pace.due(now, Some(now - time::Duration::seconds(1)), false, false));
    }
}
