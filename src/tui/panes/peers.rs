//! The Peers pane: the ASE's ILP peers (name, asset, where each is defined, whether it receives from and
//! sends to us, the prefixes routed to it, its largest packet, and its account balance — positive when we owe
//! it), and a peer's detail. Columns are rows of one table ([`COLUMNS`]), so adding one (say a liquidity
//! figure once peers carry it) is one entry. Peers change without events (added through the CLI): the pane
//! reloads every few seconds while in view, and sooner after balance changes.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::Line,
    widgets::Cell,
};
use time::Duration;

use crate::{
    control::dto::PeerView,
    money::format_minor,
    text::sanitize,
    tui::{
        app::{App, Effect},
        pane::Pane,
        theme::Theme,
        widgets::{kv::kv, table::table},
    },
};

/// While in view, the pane reloads this often.
const POLL: Duration = Duration::seconds(5);
/// After balance changes, at most this often.
const AFTER_EVENTS: Duration = Duration::seconds(1);
/// A load still unanswered after this long is given up on (another may go out).
const GIVE_UP: Duration = Duration::seconds(10);

/// One column of the table: its heading, its width, and its cell for a peer.
struct Column {
    title: &'static str,
    width: Constraint,
    cell: fn(&PeerView, &Theme) -> Cell<'static>,
}

/// The table's columns, left to right.
const COLUMNS: &[Column] = &[
    Column {
        title: "NAME",
        width: Constraint::Length(14),
        cell: |p, _| Cell::from(sanitize(&p.name)),
    },
    Column {
        title: "ASSET",
        width: Constraint::Length(7),
        cell: |p, _| Cell::from(asset(p)),
    },
    Column {
        title: "SOURCE",
        width: Constraint::Length(7),
        cell: |p, t| Cell::from(sanitize(&p.source)).style(t.dim),
    },
    Column {
        title: "RECV/SEND",
        width: Constraint::Length(9),
        cell: |p, _| Cell::from(directions(p)),
    },
    Column {
        title: "BALANCE",
        width: Constraint::Length(12),
        cell: |p, t| {
            let style = if p.peer_account_balance > 0 { t.pending } else { t.ok };
            Cell::from(balance(p)).style(style)
        },
    },
    Column {
        title: "MAX PACKET",
        width: Constraint::Length(11),
        cell: |p, _| Cell::from(max_packet(p)),
    },
    Column {
        title: "ROUTES",
        width: Constraint::Min(10),
        cell: |p, _| Cell::from(sanitize(&p.routes.join(" "))),
    },
];

/// Draws the peers table into `area`.
pub fn draw(app: &App, theme: &Theme, f: &mut Frame, area: Rect) {
    let p = &app.peers;
    let titles: Vec<&str> = COLUMNS.iter().map(|c| c.title).collect();
    let widths: Vec<Constraint> = COLUMNS.iter().map(|c| c.width).collect();
    table(
        app,
        theme,
        f,
        area,
        Pane::Peers,
        &titles,
        &widths,
        (p.loaded, p.loading, p.items.len()),
        |i| {
            let peer = &p.items[i];
            COLUMNS.iter().map(|c| (c.cell)(peer, theme)).collect()
        },
    );
}

fn asset(p: &PeerView) -> String {
    format!("{}/{}", sanitize(&p.asset_code), p.asset_scale)
}

/// `recv`, `send`, both or neither (`-`).
fn directions(p: &PeerView) -> String {
    match (p.receives, p.outgoing_endpoint.is_some()) {
        (true, true) => "recv+send".to_owned(),
        (true, false) => "recv".to_owned(),
        (false, true) => "send".to_owned(),
        (false, false) => "-".to_owned(),
    }
}

/// The peer account's balance in the link's asset: positive when we owe the peer.
fn balance(p: &PeerView) -> String {
    format_minor(i128::from(p.peer_account_balance), p.asset_scale)
}

fn max_packet(p: &PeerView) -> String {
    p.max_packet_amount
        .map_or_else(|| "-".to_owned(), |m| format_minor(i128::from(m), p.asset_scale))
}

/// The text a `/` filter matches a row against.
pub fn haystack(p: &PeerView) -> String {
    format!(
        "{} {} {} {} {} {}",
        p.name,
        p.source,
        p.asset_code,
        p.ilp_address.as_deref().unwrap_or_default(),
        p.outgoing_endpoint.as_deref().unwrap_or_default(),
        p.routes.join(" ")
    )
}

/// The detail view's title and lines, if a peer is selected.
pub fn detail<'a>(app: &'a App, theme: &Theme) -> Option<(String, Vec<Line<'a>>)> {
    let p = app.selected_peer()?;
    let none = || "(none)".to_owned();
    let title = format!(" peer {} ", sanitize(&p.name));
    let lines = vec![
        kv(theme, "name", sanitize(&p.name)),
        kv(theme, "defined in", sanitize(&p.source)),
        kv(theme, "asset", asset(p)),
        kv(
            theme,
            "ILP address",
            p.ilp_address.as_deref().map_or_else(none, sanitize),
        ),
        kv(
            theme,
            "receives",
            if p.receives {
                format!("yes ({} incoming token(s) at POST /ilp)", p.incoming_tokens)
            } else {
                "no (no incoming token)".to_owned()
            },
        ),
        kv(
            theme,
            "sends to",
            p.outgoing_endpoint.as_deref().map_or_else(none, sanitize),
        ),
        kv(
            theme,
            "routes",
            if p.routes.is_empty() {
                none()
            } else {
                sanitize(&p.routes.join(", "))
            },
        ),
        kv(theme, "max packet", max_packet(p)),
        kv(
            theme,
            "balance",
            format!("{} {} (positive: we owe it)", balance(p), sanitize(&p.asset_code)),
        ),
        kv(theme, "created", p.created_at.as_deref().map_or_else(none, sanitize)),
        kv(theme, "updated", p.updated_at.as_deref().map_or_else(none, sanitize)),
    ];
    Some((title, lines))
}

/// The pane's reload, if one is due: only while it is in view and live, after balance changes (stale) at
/// most once a second, every few seconds anyway, never while a recent load is unanswered.
pub fn reload(app: &mut App) -> Option<Effect> {
    if app.pane != Pane::Peers || app.frozen {
        return None;
    }
    let since = app.peers_load_at.map(|t| app.now - t);
    let waited = |d: Duration| since.is_none_or(|s| s >= d);
    if app.peers.loading && !waited(GIVE_UP) {
        return None;
    }
    let stale = app.stale.contains(&Pane::Peers);
    let due = (stale && waited(AFTER_EVENTS)) || waited(POLL);
    due.then(|| app.load(Pane::Peers))
}
