//! The Requests pane: the live HTTP log (method, path, status, latency, client, signature verdict) and a
//! request's captured headers and bodies, with the operator-only reason of a refusal.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::{Line, Span},
    widgets::Cell,
};

use crate::{
    events::DomainEvent,
    text::sanitize,
    tui::{
        app::{App, HttpRow, RING},
        pane::Pane,
        theme::Theme,
        widgets::{kv::kv, table::table},
    },
};

/// Draws the request log into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let w = &app.requests;
    table(
        app,
        theme,
        f,
        area,
        Pane::Requests,
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

/// The text a `/` filter matches a row against.
pub fn haystack(r: &HttpRow) -> String {
    format!("{} {} {}", r.method, r.path, r.status)
}

/// The detail view's title and lines, if a request is selected.
pub fn detail<'a>(app: &'a App, theme: &Theme) -> Option<(String, Vec<Line<'a>>)> {
    let r = app
        .visible_indices(Pane::Requests)
        .get(app.selected(Pane::Requests))
        .and_then(|&i| app.requests.items.get(i))?;
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

/// A request was served: it goes on top of the log, and the selection stays on the row it was on.
pub fn on_request(app: &mut App, e: &DomainEvent) {
    let DomainEvent::HttpRequest {
        id,
        received_at,
        method,
        path,
        status,
        latency_us,
        client,
        signature,
        exchange,
    } = e
    else {
        return;
    };
    app.requests.items.insert(
        0,
        HttpRow {
            id: id.clone(),
            at: received_at.clone(),
            method: method.clone(),
            path: path.clone(),
            status: *status,
            latency_us: *latency_us,
            client: client.clone(),
            signature: signature.clone(),
            exchange: exchange.as_deref().cloned(),
        },
    );
    app.requests.items.truncate(RING);
    if app.pane == Pane::Requests && app.requests.selected > 0 {
        app.requests.selected = (app.requests.selected + 1).min(app.requests.items.len() - 1);
    }
}
