//! The Requests pane: the live HTTP log (method, path, status, latency, client, signature verdict) and a
//! request's captured headers and bodies, with the operator-only reason of a refusal and, for a signed
//! request, the signature debugger's report (verdict and reasons, components, parameters, key, digest, the
//! signature base).

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};
use serde::Serialize;

use super::{Cx, Row, Table, View};
use crate::{
    events::requests::SignatureReport,
    text::sanitize,
    tui::{
        pane::Pane,
        theme::Theme,
        widgets::{kv::kv, table::table},
    },
};

/// Requests kept.
pub const RING: usize = 2000;

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
    pub exchange: Option<crate::events::Exchange>,
}

impl Row for HttpRow {
    fn haystack(&self) -> String {
        format!("{} {} {}", self.method, self.path, self.status)
    }
    fn key(&self) -> String {
        self.id.clone()
    }
}

/// The Requests pane's state: the requests, newest by arrival first.
#[derive(Debug, Clone)]
pub struct Requests {
    pub table: Table<HttpRow>,
}

impl Default for Requests {
    fn default() -> Self {
        Self { table: Table::live() }
    }
}

impl Requests {
    /// A request was served: it goes on top of the log (by arrival), and the cursor stays on the row it was
    /// on while the pane is `in_view`.
    pub fn on_request(&mut self, row: HttpRow, in_view: bool) {
        // newest first by arrival (requests finish, and are told of, in another order than they arrive)
        let pos = self
            .table
            .items
            .iter()
            .position(|r| r.at < row.at)
            .unwrap_or(self.table.items.len());
        self.table.items.insert(pos, row);
        self.table.items.truncate(RING);
        if in_view && self.table.selected > 0 && pos <= self.table.selected {
            self.table.selected = (self.table.selected + 1).min(self.table.items.len() - 1);
        }
    }
}

impl View for Requests {
    listed_by_table!();

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
        match &r.exchange {
            None => lines.push(Line::from(Span::styled(
                "headers and bodies were not captured for this request",
                theme.dim,
            ))),
            Some(x) => {
                if let Some(report) = &x.signature_report {
                    lines.extend(report_lines(theme, report));
                }
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
