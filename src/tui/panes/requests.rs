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

use crate::{
    events::{DomainEvent, requests::SignatureReport},
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
        &app.table_view(Pane::Requests),
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
    let received_at = crate::clock::format_ts_micros(*received_at);
    // newest first by arrival (requests finish, and are told of, in another order than they arrive)
    let pos = app
        .requests
        .items
        .iter()
        .position(|r| r.at < received_at)
        .unwrap_or(app.requests.items.len());
    app.requests.items.insert(
        pos,
        HttpRow {
            id: id.clone(),
            at: received_at,
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
    if app.pane == Pane::Requests && app.requests.selected > 0 && pos <= app.requests.selected {
        app.requests.selected = (app.requests.selected + 1).min(app.requests.items.len() - 1);
    }
}
