//! The content of each pane: the overview, the tables (only the visible window is formatted) and the
//! detail views. Client-supplied text is sanitised so it cannot drive the terminal.

use ratatui::{
    Frame,
    layout::{Constraint, Layout, Rect},
    style::Style,
    text::{Line, Span},
    widgets::{Block, Cell, Clear, Paragraph, Row, Table, Wrap},
};

use super::{
    app::{App, short_id},
    pane::Pane,
    render::{gauge, pane_block, relative, window},
    theme::Theme,
};
use crate::{
    money::format_minor,
    states::{GrantState, IncomingState, TokenState},
    text::sanitize,
};

fn right_title(app: &App, pane: Pane, loaded: bool, loading: bool, shown: usize, total: usize) -> String {
    let state = if loading {
        "loading…".to_owned()
    } else if !loaded {
        "…".to_owned()
    } else if shown == total {
        format!("{total} rows")
    } else {
        format!("{shown} of {total} rows")
    };
    let more = match pane {
        Pane::Incoming if app.incoming.next_cursor.is_some() => " (more)",
        Pane::Outgoing if app.outgoing.next_cursor.is_some() => " (more)",
        Pane::Quotes if app.quotes.next_cursor.is_some() => " (more)",
        _ => "",
    };
    format!(" {state}{more} ")
}

fn title(app: &App, pane: Pane) -> String {
    let mut t = format!(" {} ", pane.title());
    if pane == Pane::Outgoing && app.failed_only {
        t.push_str("[failed] ");
    }
    if let Some(f) = app.filters.get(&pane) {
        t.push_str(&format!("[/{}{}] ", if f.invert { "!" } else { "" }, f.text));
    }
    t
}

/// A table of the visible window: `cells(i)` formats row `i` of the pane's items.
#[allow(clippy::too_many_arguments)]
fn table<'a>(
    app: &App,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
    pane: Pane,
    header: &[&'a str],
    widths: &[Constraint],
    (loaded, loading, total): (bool, bool, usize),
    cells: impl Fn(usize) -> Vec<Cell<'a>>,
) {
    let visible = app.visible_indices(pane);
    let height = usize::from(area.height.saturating_sub(3));
    let selected = app.selected(pane).min(visible.len().saturating_sub(1));
    let (from, to) = window(visible.len(), selected, height);
    let rows: Vec<Row> = visible[from..to]
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let row = Row::new(cells(i));
            if from + k == selected {
                row.style(theme.selected)
            } else {
                row
            }
        })
        .collect();
    let block = pane_block(
        title(app, pane),
        right_title(app, pane, loaded, loading, visible.len(), total),
        theme,
    );
    let empty = rows.is_empty();
    f.render_widget(
        Table::new(rows, widths.to_vec())
            .header(Row::new(header.to_vec()).style(theme.header))
            .block(block),
        area,
    );
    if empty && loaded && area.height > 4 {
        let msg = if app.filters.contains_key(&pane) {
            "nothing matches the filter (Esc clears it)"
        } else {
            "nothing here yet"
        };
        let r = Rect {
            x: area.x + 2,
            y: area.y + 2,
            width: area.width.saturating_sub(4),
            height: 1,
        };
        f.render_widget(Paragraph::new(Span::styled(msg, theme.dim)), r);
    }
}

pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    match app.pane {
        Pane::Overview => overview(app, theme, f, area),
        Pane::Wallets => {
            let w = &app.wallets;
            table(
                app,
                theme,
                f,
                area,
                Pane::Wallets,
                &[
                    "NAME",
                    "ASSET",
                    "BALANCE",
                    "RESERVED",
                    "AVAILABLE",
                    "KEYS",
                    "PUBLIC NAME",
                ],
                &[
                    Constraint::Length(14),
                    Constraint::Length(7),
                    Constraint::Length(14),
                    Constraint::Length(12),
                    Constraint::Length(14),
                    Constraint::Length(5),
                    Constraint::Min(10),
                ],
                (w.loaded, w.loading, w.items.len()),
                |i| {
                    let r = &w.items[i];
                    let s = r.wallet.asset_scale;
                    vec![
                        Cell::from(sanitize(&r.wallet.name)),
                        Cell::from(format!("{}/{}", r.wallet.asset_code, s)),
                        Cell::from(format_minor(r.balance.balance.into(), s)),
                        Cell::from(format_minor(r.balance.pending_debits.into(), s)).style(theme.dim),
                        Cell::from(format_minor(r.balance.available.into(), s)),
                        Cell::from(r.keys.to_string()),
                        Cell::from(sanitize(&r.wallet.public_name.clone().unwrap_or_default())).style(theme.dim),
                    ]
                },
            );
        }
        Pane::Incoming => {
            let w = &app.incoming;
            let gauge_width = if area.width >= 110 { 20 } else { 10 };
            table(
                app,
                theme,
                f,
                area,
                Pane::Incoming,
                &["ID", "WALLET", "STATE", "RECEIVED", "PROGRESS", "EXPIRES"],
                &[
                    Constraint::Length(9),
                    Constraint::Length(12),
                    Constraint::Length(10),
                    Constraint::Length(14),
                    Constraint::Min(u16::try_from(gauge_width + 5).unwrap_or(15)),
                    Constraint::Length(12),
                ],
                (w.loaded, w.loading, w.items.len()),
                |i| {
                    let p = &w.items[i];
                    let progress = match &p.payment.incoming_amount {
                        Some(total) => gauge(p.payment.received_amount.value.get(), total.value.get(), gauge_width),
                        None => "open amount".to_owned(),
                    };
                    let expires = match (p.state, &p.payment.expires_at) {
                        (IncomingState::Pending, Some(e)) => relative(e, app.now),
                        _ => String::new(),
                    };
                    vec![
                        Cell::from(short_id(&p.payment.id)),
                        Cell::from(sanitize(&p.wallet)),
                        Cell::from(p.state.as_str()).style(theme.state(p.state)),
                        Cell::from(p.payment.received_amount.to_string()),
                        Cell::from(progress).style(theme.state(p.state)),
                        Cell::from(expires).style(theme.dim),
                    ]
                },
            );
        }
        Pane::Grants => {
            let w = &app.grants;
            table(
                app,
                theme,
                f,
                area,
                Pane::Grants,
                &["ID", "STATE", "CLIENT", "ACCESS", "TOKENS", "CREATED"],
                &[
                    Constraint::Length(9),
                    Constraint::Length(10),
                    Constraint::Min(16),
                    Constraint::Length(22),
                    Constraint::Length(7),
                    Constraint::Length(10),
                ],
                (w.loaded, w.loading, w.items.len()),
                |i| {
                    let g = &w.items[i];
                    let live = g.tokens.iter().filter(|t| t.revoked_at.is_none()).count();
                    let state_style = if g.state == GrantState::Pending {
                        theme.danger
                    } else {
                        theme.state(g.state)
                    };
                    vec![
                        Cell::from(short_id(&g.id)),
                        Cell::from(g.state.as_str()).style(state_style),
                        Cell::from(sanitize(&g.client_name.clone().unwrap_or_else(|| g.client.clone()))),
                        Cell::from(g.access.iter().map(|a| a.type_name()).collect::<Vec<_>>().join(",")),
                        Cell::from(live.to_string()),
                        Cell::from(relative(&g.created_at, app.now)).style(theme.dim),
                    ]
                },
            );
        }
        Pane::Outgoing => {
            let w = &app.outgoing;
            let gauge_width = if area.width >= 110 { 16 } else { 8 };
            table(
                app,
                theme,
                f,
                area,
                Pane::Outgoing,
                &["ID", "FROM", "STATE", "SENT", "PROGRESS", "FAILURE"],
                &[
                    Constraint::Length(9),
                    Constraint::Length(10),
                    Constraint::Length(10),
                    Constraint::Length(14),
                    Constraint::Length(u16::try_from(gauge_width + 5).unwrap_or(13)),
                    Constraint::Min(10),
                ],
                (w.loaded, w.loading, w.items.len()),
                |i| {
                    let p = &w.items[i];
                    vec![
                        Cell::from(short_id(&p.payment.id)),
                        Cell::from(sanitize(&p.wallet)),
                        Cell::from(p.state.as_str()).style(theme.state(p.state)),
                        Cell::from(p.payment.sent_amount.to_string()),
                        Cell::from(gauge(
                            p.payment.sent_amount.value.get(),
                            p.payment.debit_amount.value.get(),
                            gauge_width,
                        ))
                        .style(theme.state(p.state)),
                        Cell::from(p.failure_reason.clone().unwrap_or_default()).style(theme.failed),
                    ]
                },
            );
        }
        Pane::Quotes => {
            let w = &app.quotes;
            table(
                app,
                theme,
                f,
                area,
                Pane::Quotes,
                &["ID", "FROM", "DEBIT", "RECEIVE", "EXPIRES"],
                &[
                    Constraint::Length(9),
                    Constraint::Length(12),
                    Constraint::Length(16),
                    Constraint::Length(16),
                    Constraint::Min(12),
                ],
                (w.loaded, w.loading, w.items.len()),
                |i| {
                    let q = &w.items[i];
                    let exp = relative(&q.expires_at, app.now);
                    let style = if exp.ends_with("ago") {
                        theme.failed
                    } else {
                        theme.pending
                    };
                    vec![
                        Cell::from(short_id(&q.id)),
                        Cell::from(short_id(&q.wallet_address)),
                        Cell::from(q.debit_amount.to_string()),
                        Cell::from(q.receive_amount.to_string()),
                        Cell::from(exp).style(style),
                    ]
                },
            );
        }
        Pane::Requests => {
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
        Pane::Log => {
            let w = &app.log;
            table(
                app,
                theme,
                f,
                area,
                Pane::Log,
                &["LINE"],
                &[Constraint::Min(10)],
                (true, false, w.items.len()),
                |i| vec![Cell::from(sanitize(&w.items[i]))],
            );
        }
    }
}

fn overview(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let [top, bottom] = Layout::vertical([Constraint::Length(9), Constraint::Min(3)]).areas(area);
    let [left, right] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let uptime = (app.now - app.started_at).whole_seconds().max(0);
    let o = &app.overview;
    let counters = vec![
        Line::from(vec![
            Span::styled("server   ", theme.dim),
            Span::styled(app.info.public_url.clone(), theme.accent),
        ]),
        Line::from(vec![
            Span::styled("listen   ", theme.dim),
            Span::raw(app.info.listen.clone()),
        ]),
        Line::from(vec![
            Span::styled("ILP      ", theme.dim),
            Span::raw(
                app.info
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
            Span::styled("   requests ", theme.dim),
            Span::raw(format!("{:.1}/s", app.request_rate())),
        ]),
        Line::from(vec![
            Span::styled("pending grants ", theme.dim),
            Span::styled(
                o.pending_grants.to_string(),
                if o.pending_grants > 0 {
                    theme.danger
                } else {
                    Style::new()
                },
            ),
            Span::styled("   open incoming ", theme.dim),
            Span::raw(o.open_incoming.to_string()),
            Span::styled("   failed outgoing ", theme.dim),
            Span::styled(
                o.failed_outgoing.to_string(),
                if o.failed_outgoing > 0 {
                    theme.failed
                } else {
                    Style::new()
                },
            ),
        ]),
    ];
    f.render_widget(
        Paragraph::new(counters).block(pane_block(" Overview ".into(), String::new(), theme)),
        left,
    );
    let balances: Vec<Row> = o
        .balances
        .iter()
        .filter(|b| b.kind == "wallet")
        .map(|b| {
            Row::new(vec![
                Cell::from(sanitize(&b.wallet.clone().unwrap_or_default())),
                Cell::from(format!(
                    "{} {}",
                    format_minor(b.balance.into(), b.asset_scale),
                    b.asset_code
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
        right,
    );
    let height = usize::from(bottom.height.saturating_sub(2));
    let events: Vec<Line> = app
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
        bottom,
    );
}

fn kv<'a>(theme: &Theme, k: &'a str, v: String) -> Line<'a> {
    Line::from(vec![Span::styled(format!("{k:<14}"), theme.dim), Span::raw(v)])
}

/// The detail view of the selection in the current pane.
pub fn draw_detail(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    f.render_widget(Clear, area);
    let mut lines: Vec<Line> = Vec::new();
    let mut title = " detail ".to_owned();
    let history_of = |id: &str| app.history.get(&short_id(id)).cloned().unwrap_or_default();
    match app.pane {
        Pane::Incoming => {
            if let Some(p) = app.selected_incoming() {
                title = format!(" incoming payment {} ", short_id(&p.payment.id));
                lines.push(kv(theme, "id", p.payment.id.clone()));
                lines.push(kv(theme, "wallet", p.payment.wallet_address.clone()));
                lines.push(Line::from(vec![
                    Span::styled(format!("{:<14}", "state"), theme.dim),
                    Span::styled(p.state.as_str(), theme.state(p.state)),
                ]));
                lines.push(kv(theme, "received", p.payment.received_amount.to_string()));
                lines.push(kv(
                    theme,
                    "expected",
                    p.payment
                        .incoming_amount
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_else(|| "an open amount".into()),
                ));
                if let Some(total) = &p.payment.incoming_amount {
                    lines.push(kv(
                        theme,
                        "progress",
                        gauge(p.payment.received_amount.value.get(), total.value.get(), 30),
                    ));
                }
                lines.push(kv(
                    theme,
                    "expires",
                    p.payment
                        .expires_at
                        .clone()
                        .map(|e| format!("{e} ({})", relative(&e, app.now)))
                        .unwrap_or_default(),
                ));
                lines.push(kv(theme, "created", p.payment.created_at.clone()));
                lines.push(kv(
                    theme,
                    "client",
                    p.client.clone().unwrap_or_else(|| "(operator)".into()),
                ));
                if let Some(m) = &p.payment.metadata {
                    lines.push(kv(theme, "metadata", sanitize(&m.to_string())));
                }
                lines.push(kv(
                    theme,
                    "methods",
                    if app.reveal_secret {
                        "ilp (secret shown: s hides)".into()
                    } else {
                        "ilp secrets masked (s reveals)".into()
                    },
                ));
                lines.push(Line::from(""));
                lines.push(Line::from(Span::styled("history", theme.header)));
                for (at, what) in history_of(&p.payment.id) {
                    lines.push(Line::from(vec![
                        Span::styled(format!("{} ", at.get(11..23).unwrap_or("")), theme.dim),
                        Span::raw(what),
                    ]));
                }
            }
        }
        Pane::Grants => {
            if let Some(g) = app.selected_grant() {
                title = format!(" grant {} ", short_id(&g.id));
                lines.push(Line::from(vec![
                    Span::styled(format!("{:<14}", "state"), theme.dim),
                    Span::styled(g.state.as_str(), theme.state(g.state)),
                ]));
                for d in &g.description {
                    lines.push(Line::from(sanitize(d)));
                }
                lines.push(Line::from(""));
                lines.push(kv(theme, "id", g.id.clone()));
                lines.push(kv(theme, "created", g.created_at.clone()));
                if let Some(e) = &g.interaction_expires_at {
                    lines.push(kv(theme, "decide by", format!("{e} ({})", relative(e, app.now))));
                }
                if let Some(fu) = &g.finish_uri {
                    lines.push(kv(theme, "finish", sanitize(fu)));
                }
                if let Some(r) = &g.decision_reason {
                    lines.push(kv(theme, "reason", sanitize(r)));
                }
                if let Some(sp) = app.grant_spent.get(&g.id) {
                    let amount = |a: &Option<crate::money::Amount>| {
                        a.as_ref().map(ToString::to_string).unwrap_or_else(|| "nothing".into())
                    };
                    lines.push(kv(
                        theme,
                        "spent",
                        format!(
                            "{} debited, {} received (this interval)",
                            amount(&sp.spent_debit_amount),
                            amount(&sp.spent_receive_amount)
                        ),
                    ));
                }
                for t in &g.tokens {
                    let state = TokenState::of(t.revoked_at.is_some());
                    lines.push(Line::from(vec![
                        Span::styled(format!("{:<14}", "token"), theme.dim),
                        Span::raw(format!("{} ", t.hint)),
                        Span::styled(state.as_str(), theme.state(state)),
                        Span::styled(format!(" expires {}", relative(&t.expires_at, app.now)), theme.dim),
                    ]));
                }
                if g.state.can_decide() && !app.readonly {
                    lines.push(Line::from(""));
                    lines.push(Line::from(Span::styled("a approve · x reject", theme.danger)));
                }
            }
        }
        Pane::Outgoing => {
            if let Some(p) = app.selected_outgoing() {
                title = format!(" outgoing payment {} ", short_id(&p.payment.id));
                lines.push(Line::from(vec![
                    Span::styled(format!("{:<14}", "state"), theme.dim),
                    Span::styled(p.state.as_str(), theme.state(p.state)),
                ]));
                if let Some(reason) = &p.failure_reason {
                    lines.push(Line::from(vec![
                        Span::styled(format!("{:<14}", "failure"), theme.dim),
                        Span::styled(reason.clone(), theme.failed),
                    ]));
                    lines.push(Line::from(Span::styled(
                        sanitize(&p.failure_message.clone().unwrap_or_default()),
                        theme.failed,
                    )));
                }
                lines.push(kv(theme, "from", p.payment.wallet_address.clone()));
                lines.push(kv(theme, "to", sanitize(&p.payment.receiver)));
                lines.push(kv(theme, "debit", p.payment.debit_amount.to_string()));
                lines.push(kv(theme, "receive", p.payment.receive_amount.to_string()));
                lines.push(kv(theme, "sent", p.payment.sent_amount.to_string()));
                lines.push(kv(theme, "delivered", p.delivered_amount.to_string()));
                lines.push(kv(
                    theme,
                    "progress",
                    gauge(
                        p.payment.sent_amount.value.get(),
                        p.payment.debit_amount.value.get(),
                        30,
                    ),
                ));
                lines.push(kv(theme, "attempts", p.attempts.to_string()));
                lines.push(kv(
                    theme,
                    "quote",
                    p.payment.quote_id.clone().unwrap_or_else(|| "(none)".into()),
                ));
                lines.push(kv(
                    theme,
                    "grant",
                    p.grant_id.clone().unwrap_or_else(|| "(none)".into()),
                ));
                lines.push(kv(theme, "created", p.payment.created_at.clone()));
                lines.push(kv(theme, "updated", p.updated_at.clone()));
                lines.push(Line::from(""));
                lines.push(Line::from(Span::styled("history", theme.header)));
                for (at, what) in history_of(&p.payment.id) {
                    lines.push(Line::from(vec![
                        Span::styled(format!("{} ", at.get(11..23).unwrap_or("")), theme.dim),
                        Span::raw(what),
                    ]));
                }
            }
        }
        Pane::Requests => {
            if let Some(r) = app
                .visible_indices(Pane::Requests)
                .get(app.selected(Pane::Requests))
                .and_then(|&i| app.requests.items.get(i))
            {
                title = format!(" {} {} → {} ", r.method, sanitize(&r.path), r.status);
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
            }
        }
        _ => {
            lines.push(Line::from("press y for the raw JSON of the selection"));
        }
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(title))
            .wrap(Wrap { trim: false }),
        area,
    );
}
