//! The Requests pane: the live HTTP log (method, path, status, latency, client, signature verdict) and a
//! request's captured headers and bodies, with the operator-only reason of a refusal and, for a signed
//! request, the signature debugger's report (verdict and reasons, components, parameters, key, digest, the
//! signature base).
//!
//! Nothing per request is pushed to it: while in view it reads the server's ring a page at a time, after the
//! server said requests were served (at most four times a second) and every two seconds anyway, and it asks
//! for a request's exchange when its detail opens.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};
use serde::Serialize;

use super::{Cx, Out, PAGE, Row, Table, View};
use crate::{
    control::{Found, Query},
    events::requests::{RequestDetail, RequestSummary, SignatureReport},
    text::sanitize,
    tui::{
        effect::Effect,
        pane::{Pace, Pane},
        theme::Theme,
        widgets::{kv::kv, table::table},
    },
};

/// In view: a page after the server said requests were served, at most every 250 ms, and one every two
/// seconds anyway.
const PACE: Pace = Pace {
    after_events: time::Duration::milliseconds(250),
    poll: Some(time::Duration::seconds(2)),
    give_up: time::Duration::seconds(5),
};

/// One HTTP exchange in the request log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRow {
    /// The request's id (what a grant's timeline links to).
    pub id: String,
    /// When it arrived (microseconds).
    pub at: String,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub latency_us: u64,
    pub client: Option<String>,
    pub signature: Option<String>,
}

impl From<RequestSummary> for HttpRow {
    fn from(s: RequestSummary) -> Self {
        Self {
            at: crate::clock::format_ts_micros(s.received_at),
            id: s.id,
            method: s.method,
            path: s.path,
            status: s.status,
            latency_us: s.latency_us,
            client: s.client,
            signature: s.signature,
        }
    }
}

impl Row for HttpRow {
    fn haystack(&self) -> String {
        format!("{} {} {}", self.method, self.path, self.status)
    }
    fn key(&self) -> String {
        self.id.clone()
    }
}

/// The Requests pane's state: a page of the server's requests, newest by arrival first, and the one
/// request whose exchange was asked for.
#[derive(Debug, Clone, Default)]
pub struct Requests {
    pub table: Table<HttpRow>,
    pub detail: Option<RequestDetail>,
}

impl Requests {
    /// A page of the ring: a cursor on the newest request stays on the newest (the log is followed live)
    /// unless `detail_open`; anywhere else it stays on its request.
    pub fn on_page(&mut self, rows: Vec<HttpRow>, next: Option<String>, append: bool, detail_open: bool) {
        let following = !append && !detail_open && self.table.selected == 0;
        self.table.set(rows, next, append);
        if following {
            self.table.selected = 0;
        }
    }
}

impl View for Requests {
    listed_by_table!();
    fn query(&self, cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        let limit = usize::try_from(PAGE).unwrap_or(200);
        Some(Query::Requests(crate::control::dto::RequestPage { cursor, limit }))
    }
    fn found(&mut self, found: Found, append: bool, cx: &Cx<'_>) -> Vec<Out> {
        match found {
            Found::Requests(l) => {
                let rows = l.items.into_iter().map(HttpRow::from).collect();
                self.on_page(rows, l.next_cursor, append, cx.detail_open);
            }
            Found::Request(r) => self.detail = Some(*r),
            _ => {}
        }
        Vec::new()
    }

    fn pace(&self, _cx: &Cx<'_>) -> Option<(Pace, bool)> {
        Some((PACE, true))
    }

    /// The open detail needs the selected request's exchange, once (a served request never changes).
    fn detail_needs(&self, _fresh: bool) -> Option<Effect> {
        let r = self.table.selection()?;
        let shown = self.detail.as_ref().is_some_and(|d| d.summary.id == r.id);
        (!shown).then(|| Effect::ask(Pane::Requests, Query::Request { id: r.id.clone() }))
    }

    /// Draws the request log into `area`.
    fn draw(&self, _cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        table(
            &w.view(Pane::Requests, &[], "nothing here yet"),
            theme,
            f,
            area,
            &["AT", "METHOD", "PATH", "STATUS", "LATENCY", "CLIENT", "SIG"],
            &[
                Constraint::Length(13),
                Constraint::Length(7),
                Constraint::Min(20),
                Constraint::Length(6),
                Constraint::Length(9),
                Constraint::Length(12),
                Constraint::Length(4),
            ],
            (true, false, w.items.len()),
            |i| {
                let r = &w.items[i];
                let style = match r.status {
                    200..=299 | 303 => theme.ok,
                    400..=499 => theme.pending,
                    _ => theme.failed,
                };
                let (sig, sig_style) = match r.signature.as_deref() {
                    None => ("", theme.dim),
                    Some("ok") => ("ok", theme.ok),
                    Some(_) => ("✗", theme.failed),
                };
                vec![
                    Cell::from(r.at.get(11..23).unwrap_or("").to_owned()).style(theme.dim),
                    Cell::from(r.method.clone()),
                    Cell::from(sanitize(&r.path)),
                    Cell::from(r.status.to_string()).style(style),
                    Cell::from(format!("{:.1} ms", r.latency_us as f64 / 1000.0)),
                    Cell::from(sanitize(
                        r.client
                            .as_deref()
                            .map(|c| c.rsplit('/').next().unwrap_or(c))
                            .unwrap_or(""),
                    )),
                    Cell::from(sig).style(sig_style),
                ]
            },
        );
    }

    /// The detail view's title and lines, if a request is selected.
    fn detail(&self, _cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let r = self.table.selection()?;
        let mut lines: Vec<Line> = Vec::new();
        let title = format!(" {} {} → {} ", r.method, sanitize(&r.path), r.status);
        lines.push(kv(theme, "at", r.at.clone()));
        lines.push(kv(theme, "latency", format!("{:.2} ms", r.latency_us as f64 / 1000.0)));
        lines.push(kv(
            theme,
            "client",
            sanitize(r.client.as_deref().unwrap_or("(unsigned)")),
        ));
        lines.push(kv(
            theme,
            "signature",
            sanitize(r.signature.as_deref().unwrap_or("(none)")),
        ));
        let Some(detail) = self.detail.as_ref().filter(|d| d.summary.id == r.id) else {
            lines.push(Line::from(Span::styled(
                "asking the server for the exchange…",
                theme.dim,
            )));
            return Some((title, lines));
        };
        if let Some(report) = &detail.report {
            lines.extend(report_lines(theme, report));
        }
        match &detail.exchange {
            None => lines.push(Line::from(Span::styled(
                "headers and bodies were not captured for this request (the server keeps them while a console \
                 watches)",
                theme.dim,
            ))),
            Some(x) => {
                lines.push(Line::from(""));
                lines.push(Line::from(Span::styled(
                    format!("request  {} {}", r.method, sanitize(&x.target)),
                    theme.header,
                )));
                for (k, v) in &x.request_headers {
                    lines.push(Line::from(vec![
                        Span::styled(format!("{k}: "), theme.dim),
                        Span::raw(sanitize(v)),
                    ]));
                }
                for l in x.request_body.lines() {
                    lines.push(Line::from(sanitize(l)));
                }
                lines.push(Line::from(""));
                lines.push(Line::from(Span::styled(format!("response {}", r.status), theme.header)));
                for (k, v) in &x.response_headers {
                    lines.push(Line::from(vec![
                        Span::styled(format!("{k}: "), theme.dim),
                        Span::raw(sanitize(v)),
                    ]));
                }
                for l in x.response_body.lines() {
                    lines.push(Line::from(sanitize(l)));
                }
                if let Some(d) = &x.detail {
                    lines.push(Line::from(""));
                    lines.push(kv(theme, "why (operator only)", sanitize(d)));
                }
            }
        }
        Some((title, lines))
    }
}

/// The signature debugger's report: the verdict and every reason first, then what was checked.
pub fn report_lines<'a>(theme: &Theme, r: &SignatureReport) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from("")];
    let outcome = r.verdict.outcome;
    let style = match outcome {
        crate::events::requests::Outcome::Ok => theme.ok,
        crate::events::requests::Outcome::Refused => theme.failed,
        crate::events::requests::Outcome::NotChecked => theme.dim,
    };
    lines.push(Line::from(vec![
        Span::styled(format!("{:<14}", "verdict"), theme.header),
        Span::styled(outcome.as_str().to_owned(), style),
    ]));
    for reason in &r.verdict.reasons {
        lines.push(Line::from(vec![
            Span::styled("  ✗ ", theme.failed),
            Span::raw(sanitize(reason)),
        ]));
    }
    let opt = |v: &Option<String>| v.as_deref().map(sanitize).unwrap_or_else(|| "(none)".to_owned());
    if let Some(label) = &r.label {
        lines.push(kv(theme, "label", sanitize(label)));
    }
    if !r.components.is_empty() {
        lines.push(kv(theme, "components", sanitize(&r.components.join(" "))));
    }
    if let Some(form) = &r.form {
        lines.push(kv(theme, "form", sanitize(form)));
    }
    if let Some(p) = &r.params {
        lines.push(kv(theme, "keyid", opt(&p.keyid)));
        if let Some(alg) = &p.alg {
            lines.push(kv(theme, "alg", sanitize(alg)));
        }
        lines.push(kv(
            theme,
            "created",
            match (p.created, p.created_age_secs) {
                (Some(c), Some(age)) => format!("{c} ({age} s before arrival)"),
                (Some(c), None) => c.to_string(),
                _ => "(none)".to_owned(),
            },
        ));
        if let Some(e) = p.expires {
            lines.push(kv(theme, "expires", e.to_string()));
        }
        if let Some(n) = &p.nonce {
            lines.push(kv(theme, "nonce", sanitize(n)));
        }
        if let Some(t) = &p.tag {
            lines.push(kv(theme, "tag", sanitize(t)));
        }
    }
    if let Some(k) = &r.key {
        let verified = match k.verified {
            Some(true) => " — verifies",
            Some(false) => " — does not verify",
            None => "",
        };
        lines.push(kv(
            theme,
            "key",
            format!("{} of {}{verified}", opt(&k.kid), opt(&k.client)),
        ));
        if let Some(src) = &k.source {
            lines.push(kv(theme, "  from", sanitize(src)));
        }
    }
    if let Some(d) = &r.digest {
        lines.push(kv(
            theme,
            "digest sent",
            d.sent.as_deref().map(sanitize).unwrap_or_else(|| "(none)".to_owned()),
        ));
        lines.push(kv(
            theme,
            "body hashes",
            format!(
                "{} ({} bytes){}",
                d.computed,
                d.body_len,
                if d.matches { " — matches" } else { "" }
            ),
        ));
    }
    if let Some(base) = &r.base {
        lines.push(Line::from(Span::styled("signature base", theme.header)));
        for l in base.lines() {
            lines.push(Line::from(format!("  {}", sanitize(l))));
        }
    }
    lines
}
