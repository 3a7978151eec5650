//! The Peers pane: the ASE's ILP peers and what the operator manages about each — our position with it
//! (positive when we owe it), its liquidity, what may still be sent through it, its credit limit and what of it
//! is used, the prefixes routed to it — and a peer's detail (where it is defined, its directions, its largest
//! packet, what is in flight, whether sending is limited, in words). Columns are rows of one table
//! ([`COLUMNS`]). Depositing (`+`) or withdrawing (`-`) liquidity and recording a settlement (`S`) each ask
//! for an amount and then for a confirmation, like the Wallets pane's deposit; `:threshold` sets an alert
//! threshold on its liquidity or credit. Peers change without events (added through the CLI): the pane reloads
//! every few seconds while in view, and sooner after balance and peer events.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    text::Line,
    widgets::Cell,
};
use time::Duration;

use std::collections::HashMap;

use super::{Cx, Out, Row, Table, View, warn};
use crate::{
    ase::liquidity::Direction,
    control::{
        Command, Found, Query,
        dto::{LiquidityMove, NewSettlement, PeerView},
    },
    money::{Value, format_minor},
    text::sanitize,
    thresholds::Measure,
    tui::{
        action::Action,
        effect::Effect,
        key::{Key, PaneKey},
        pane::{Pace, Pane},
        theme::Theme,
        widgets::{kv::kv, prompt::PromptKind, table::table},
    },
};

/// The pane's own keys (the keymap adds the global ones and applies `[keys]` overrides).
pub const KEYS: &[PaneKey] = &[
    PaneKey {
        keys: &[Key::ch('+')],
        action: Action::PeerDeposit,
        description: "deposit liquidity (what this peer lets us owe it)",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('-')],
        action: Action::PeerWithdraw,
        description: "withdraw liquidity (refused beyond what we do not owe this peer)",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('S')],
        action: Action::Settle,
        description: "record a settlement (paid or received outside ILP)",
        dangerous: true,
        hint: true,
    },
];

/// While in view: after balance changes at most once a second, every five seconds anyway.
const PACE: Pace = Pace {
    after_events: Duration::seconds(1),
    poll: Some(Duration::seconds(5)),
    give_up: Duration::seconds(10),
};

/// One column of the table: its heading, its width, and its cell for a peer.
struct Column {
    title: &'static str,
    width: Constraint,
    cell: fn(&PeerView, &Peers, &Theme) -> Cell<'static>,
}

/// The table's columns, left to right: at 80 columns every one shows and ROUTES takes what is left. Where
/// a peer is defined, its directions and its largest packet are in the detail view.
const COLUMNS: &[Column] = &[
    Column {
        title: "NAME",
        width: Constraint::Length(11),
        cell: |p, _, _| Cell::from(sanitize(&p.name)),
    },
    Column {
        title: "ASSET",
        width: Constraint::Length(6),
        cell: |p, _, _| Cell::from(asset(p)),
    },
    Column {
        title: "POSITION",
        width: Constraint::Length(9),
        cell: |p, _, t| {
            let style = if p.position > 0 { t.pending } else { t.ok };
            Cell::from(position(p)).style(style)
        },
    },
    Column {
        title: "LIQUIDITY",
        width: Constraint::Length(9),
        cell: |p, _, _| Cell::from(minor(p, p.liquidity)),
    },
    Column {
        title: "AVAILABLE",
        width: Constraint::Length(9),
        cell: |p, _, t| match p.available_to_send {
            Some(0) => Cell::from(minor(p, 0)).style(t.failed),
            Some(a) => Cell::from(minor(p, a)),
            None => Cell::from("-").style(t.dim),
        },
    },
    Column {
        title: "CREDIT",
        width: Constraint::Length(14),
        cell: |p, _, t| match p.credit_limit {
            Some(_) => Cell::from(credit(p)),
            None => Cell::from("-").style(t.dim),
        },
    },
    Column {
        title: "PKT/S",
        width: Constraint::Length(5),
        cell: |p, a, t| match a.rates.get(&p.name) {
            Some(r) => Cell::from(rate(*r)),
            None => Cell::from("-").style(t.dim),
        },
    },
    Column {
        title: "ROUTES",
        width: Constraint::Min(8),
        cell: |p, _, _| Cell::from(sanitize(&p.routes.join(" "))),
    },
];

fn asset(p: &PeerView) -> String {
    format!("{}/{}", sanitize(&p.asset_code), p.asset_scale)
}

/// Packets per second, short: `0`, `0.4`, `12`, `1.2k`.
fn rate(r: f64) -> String {
    if r <= 0.0 {
        "0".to_owned()
    } else if r < 10.0 {
        format!("{r:.1}")
    } else if r < 1000.0 {
        format!("{r:.0}")
    } else {
        format!("{:.1}k", r / 1000.0)
    }
}

/// Packets through the peer, in words.
fn packets_words(p: &PeerView, out: bool) -> String {
    let k = if out { &p.packets_out } else { &p.packets_in };
    format!(
        "{} ({} fulfilled, {} rejected; {})",
        k.total,
        k.fulfilled,
        k.rejected,
        if out {
            "sent through it"
        } else {
            "it brought us at POST /ilp"
        }
    )
}

/// The last reject either way, in words.
fn last_reject_words(p: &PeerView) -> String {
    match &p.last_reject {
        None => "none (since this server started)".to_owned(),
        Some(r) => format!(
            "{} {} ({}, {})",
            sanitize(&r.code),
            sanitize(&r.message),
            if r.direction == "out" {
                "to a packet we sent"
            } else {
                "we answered its packet"
            },
            sanitize(&r.at)
        ),
    }
}

/// The Peers pane's state.
#[derive(Debug, Clone, Default)]
pub struct Peers {
    pub table: Table<PeerView>,
    /// Each peer's packets (both ways) at the last load, and when: the next load gives its packets per second.
    pub counts: HashMap<String, (u64, time::OffsetDateTime)>,
    /// Packets per second through each peer between the last two loads.
    pub rates: HashMap<String, f64>,
}

impl Row for PeerView {
    /// The text a `/` filter matches a row against.
    fn haystack(&self) -> String {
        let p = self;
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
    fn key(&self) -> String {
        self.name.clone()
    }
}

impl Peers {
    /// Records a load's packet counts at `now` and computes each peer's packets per second since the load
    /// before (a peer seen once has no rate yet).
    pub fn on_loaded(&mut self, now: time::OffsetDateTime) {
        let mut rates = std::collections::HashMap::new();
        let mut seen = std::collections::HashMap::new();
        for p in &self.table.items {
            let total = p.packets_in.total + p.packets_out.total;
            if let Some((before, at)) = self.counts.get(&p.name) {
                let secs = (now - *at).as_seconds_f64();
                if secs <= 0.0 {
                    // reloaded within the same instant: keep the reading and the last rate
                    if let Some(r) = self.rates.get(&p.name) {
                        rates.insert(p.name.clone(), *r);
                    }
                    seen.insert(p.name.clone(), (*before, *at));
                    continue;
                }
                // fewer than before: the server restarted (counters start again); no rate until the next load
                if total >= *before {
                    rates.insert(p.name.clone(), (total - before) as f64 / secs);
                }
            }
            seen.insert(p.name.clone(), (total, now));
        }
        self.rates = rates;
        self.counts = seen;
    }
}

impl View for Peers {
    listed_by_table!();
    fn query(&self, _cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        Some(Query::Peers)
    }
    fn found(&mut self, found: Found, _append: bool, cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Peers(rows) = found {
            self.table.set(rows, None, false);
            self.on_loaded(cx.now);
        }
        Vec::new()
    }
    /// Only while in view: after balance changes at most once a second, every five seconds anyway, never
    /// while a recent load is unanswered.
    fn pace(&self, _cx: &Cx<'_>) -> Option<(Pace, bool)> {
        Some((PACE, true))
    }

    /// Draws the peers table into `area`.
    fn draw(&self, _cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let p = &self.table;
        let titles: Vec<&str> = COLUMNS.iter().map(|c| c.title).collect();
        let widths: Vec<Constraint> = COLUMNS.iter().map(|c| c.width).collect();
        table(
            &p.view(Pane::Peers, &[], "nothing here yet"),
            theme,
            f,
            area,
            &titles,
            &widths,
            (p.loaded, p.loading, p.items.len()),
            |i| {
                let peer = &p.items[i];
                COLUMNS.iter().map(|c| (c.cell)(peer, self, theme)).collect()
            },
        );
    }

    fn crumb(&self) -> Option<String> {
        self.table.selection().map(|p| sanitize(&p.name))
    }

    /// The detail view's title and lines, if a peer is selected.
    fn detail(&self, _cx: &Cx<'_>, theme: &Theme) -> Option<(String, Vec<Line<'_>>)> {
        let p = self.table.selection()?;
        let none = || "(none)".to_owned();
        let title = format!(" peer {} ", sanitize(&p.name));
        // what the operator manages first (the detail is cut at the bottom on small terminals), then the
        // traffic, then how the peer is defined
        let lines = vec![
            kv(
                theme,
                "name",
                format!("{} (defined in {})", sanitize(&p.name), sanitize(&p.source)),
            ),
            kv(theme, "asset", asset(p)),
            kv(
                theme,
                "position",
                format!("{}: {}", money(p, p.position), p.position_words()),
            ),
            kv(theme, "owed", format!("{} (what we owe it now)", money(p, p.owed))),
            kv(
                theme,
                "liquidity",
                format!("{} (what it lets us owe it)", money(p, p.liquidity)),
            ),
            kv(
                theme,
                "in flight",
                format!("{} (sent, outcome not recorded yet)", money(p, p.in_flight)),
            ),
            kv(theme, "send limit", sending_words(p)),
            kv(theme, "credit", credit_words(p)),
            kv(theme, "thresholds", p.thresholds_words()),
            kv(
                theme,
                "packets/s",
                self.rates.get(&p.name).map_or_else(
                    || "- (known after the next reload)".to_owned(),
                    |r| format!("{} (both ways, between the last two reloads)", rate(*r)),
                ),
            ),
            kv(theme, "packets in", packets_words(p, false)),
            kv(theme, "packets out", packets_words(p, true)),
            kv(theme, "last reject", last_reject_words(p)),
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
                "created",
                format!(
                    "{} (updated {})",
                    p.created_at.map_or_else(none, crate::clock::format_ts),
                    p.updated_at.map_or_else(none, crate::clock::format_ts)
                ),
            ),
        ];
        Some((title, lines))
    }

    /// Deposit or withdraw liquidity, record a settlement: each asks for an amount (major units, like the Wallets
    /// pane's deposit), then for a confirmation.
    fn act(&mut self, a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        let Some(p) = self.table.selection() else {
            return Vec::new();
        };
        let (peer, scale, code) = (p.name.clone(), p.asset_scale, p.asset_code.clone());
        let kind = match a {
            Action::PeerDeposit | Action::PeerWithdraw => PromptKind::PeerAmount {
                peer,
                deposit: a == Action::PeerDeposit,
                scale,
                code,
            },
            Action::Settle => PromptKind::Settlement { peer, scale, code },
            _ => return Vec::new(),
        };
        vec![Out::Prompt(kind)]
    }

    fn submit(&mut self, kind: PromptKind, text: &str, _cx: &Cx<'_>) -> Vec<Out> {
        match kind {
            PromptKind::PeerAmount {
                peer,
                deposit,
                scale,
                code,
            } => submit_amount(peer, deposit, scale, code, text),
            PromptKind::Settlement { peer, scale, code } => submit_settlement(peer, scale, code, text),
            _ => Vec::new(),
        }
    }

    /// `:threshold liquidity AMOUNT` alerts when what may still be sent through the selected peer drops under
    /// the amount, `:threshold credit AMOUNT` when what it owes us rises over it; `… remove` stops that.
    fn command(&mut self, head: &str, rest: &str, cx: &Cx<'_>) -> Option<Vec<Out>> {
        if head != "threshold" {
            return None;
        }
        if cx.readonly {
            return Some(warn("read-only mode"));
        }
        let Some(p) = self.table.selection() else {
            return Some(warn("select a peer first"));
        };
        let (which, amount) = rest.trim().split_once(' ').unwrap_or((rest.trim(), ""));
        let measure = match which {
            "liquidity" => Measure::PeerLiquidity,
            "credit" => Measure::PeerCredit,
            _ => {
                return Some(warn(
                    "`:threshold liquidity|credit AMOUNT` (or `remove` for the amount)",
                ));
            }
        };
        Some(super::threshold::command(
            measure,
            p.name.clone(),
            p.asset_scale,
            amount,
        ))
    }

    fn commands(&self) -> &'static [(&'static str, &'static str)] {
        &[(
            "threshold liquidity|credit AMOUNT|remove",
            "alert when the selected peer's liquidity drops under AMOUNT, or what it owes rises over it",
        )]
    }
}

/// An amount from the liquidity prompt: confirm before moving the peer's liquidity.
fn submit_amount(peer: String, deposit: bool, scale: u8, code: String, text: &str) -> Vec<Out> {
    let Some(value) = crate::money::parse_major(text.trim(), scale)
        .filter(|a| *a > 0)
        .and_then(|a| Value::new(a).ok())
    else {
        return warn(format!(
            "not an amount with at most {scale} decimals: {:?}",
            text.trim()
        ));
    };
    let shown = format!("{} {}", format_minor(i128::from(value.get()), scale), sanitize(&code));
    let name = sanitize(&peer);
    let question = if deposit {
        format!("Deposit {shown} of liquidity for peer {name}?")
    } else {
        format!("Withdraw {shown} of peer {name}'s liquidity?")
    };
    let liquidity = LiquidityMove::of(deposit, value);
    vec![Out::Confirm(
        question,
        Effect::Run(Command::MovePeerLiquidity { peer, liquidity }),
    )]
}

/// `paid AMOUNT` or `received AMOUNT` from the settlement prompt: confirm before recording it.
fn submit_settlement(peer: String, scale: u8, code: String, text: &str) -> Vec<Out> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let parsed = match words.as_slice() {
        [dir, amount] => {
            let paid = match dir.to_lowercase().as_str() {
                "paid" | "p" => Some(true),
                "received" | "r" => Some(false),
                _ => None,
            };
            paid.zip(
                crate::money::parse_major(amount, scale)
                    .filter(|a| *a > 0)
                    .and_then(|a| Value::new(a).ok()),
            )
        }
        _ => None,
    };
    let Some((paid, value)) = parsed else {
        return warn(format!(
            "say who paid and how much, e.g. paid 25.00 or received 25.00 (got {:?})",
            text.trim()
        ));
    };
    let shown = format!("{} {}", format_minor(i128::from(value.get()), scale), sanitize(&code));
    let name = sanitize(&peer);
    let question = if paid {
        format!("Record that we paid peer {name} {shown} outside ILP?")
    } else {
        format!("Record that peer {name} paid us {shown} outside ILP?")
    };
    let settlement = NewSettlement {
        direction: if paid { Direction::Paid } else { Direction::Received },
        amount: value,
        id: None,
    };
    vec![Out::Confirm(
        question,
        Effect::Run(Command::SettlePeer { peer, settlement }),
    )]
}

/// An amount in minor units of the peer's asset, in major units.
fn minor(p: &PeerView, v: impl Into<i128>) -> String {
    format_minor(v.into(), p.asset_scale)
}

/// The position (its peer account) in the link's asset: positive when we owe the peer.
fn position(p: &PeerView) -> String {
    minor(p, p.position)
}

/// What the peer owes us of what it may owe: `12.00/100.00`, or `-` without a limit.
fn credit(p: &PeerView) -> String {
    p.credit_limit.map_or_else(
        || "-".to_owned(),
        |l| format!("{}/{}", minor(p, p.credit_used), minor(p, l)),
    )
}

/// An amount with the peer's asset code.
fn money(p: &PeerView, v: impl Into<i128>) -> String {
    format!("{} {}", minor(p, v), sanitize(&p.asset_code))
}

/// Whether sending through the peer is limited, in words.
fn sending_words(p: &PeerView) -> String {
    match p.available_to_send {
        Some(a) if p.send_limited => format!("sending is limited to the liquidity: {} available", minor(p, a)),
        _ => "sending is not limited (no liquidity was ever deposited)".to_owned(),
    }
}

/// The credit limit and what of it is used, in words.
fn credit_words(p: &PeerView) -> String {
    match p.credit_limit {
        Some(l) => format!(
            "{} of {} used (it may owe us up to that unsettled)",
            money(p, p.credit_used),
            money(p, l)
        ),
        None => format!("no limit ({} owed to us now)", money(p, p.credit_used)),
    }
}

fn max_packet(p: &PeerView) -> String {
    p.max_packet_amount
        .map_or_else(|| "-".to_owned(), |m| format_minor(i128::from(m), p.asset_scale))
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::{
        events::DomainEvent,
        tui::{
            app::{App, Load, Msg, Overlay, Reply, ServerInfo, fixtures::now},
            keymap::Keymap,
        },
    };

    fn key(c: char) -> Msg {
        Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    fn typed(a: &mut App, text: &str) -> Vec<Effect> {
        for c in text.chars() {
            a.update(key(c));
        }
        a.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    fn peer(name: &str) -> PeerView {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "source": "admin",
            "assetCode": "USD",
            "assetScale": 2,
            "incomingTokens": 1,
            "receives": true,
            "routes": [format!("test.{name}")],
            "peerAccountBalance": 0,
            "liquidity": 100_000,
            "sendLimited": true,
            "availableToSend": 100_000,
        }))
        .unwrap()
    }

    fn on_peers(readonly: bool) -> App {
        let mut a = App::new(ServerInfo::default(), Keymap::default(), readonly, now());
        a.update(key('0'));
        a.update(Msg::Reply(Reply::found(
            Pane::Peers,
            Found::Peers(vec![peer("happy-life")]),
        )));
        assert_eq!(a.pane, Pane::Peers);
        a
    }

    fn question(a: &App) -> String {
        match &a.overlay {
            Some(Overlay::Confirm(c)) => c.question.clone(),
            o => panic!("no confirm dialog: {o:?}"),
        }
    }

    #[test]
    fn depositing_and_withdrawing_liquidity_ask_for_an_amount_then_confirm() {
        let mut a = on_peers(false);
        a.update(key('+'));
        assert!(
            matches!(&a.overlay, Some(Overlay::Prompt(p)) if matches!(p.kind, PromptKind::PeerAmount { deposit: true, .. }))
        );
        assert!(typed(&mut a, "25").is_empty(), "asks first");
        assert_eq!(question(&a), "Deposit 25.00 USD of liquidity for peer happy-life?");
        assert!(a.update(key('n')).is_empty() && a.overlay.is_none(), "no moves nothing");
        a.update(key('+'));
        typed(&mut a, "25");
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::MovePeerLiquidity {
                peer: "happy-life".into(),
                liquidity: LiquidityMove::of(true, Value::new(2500).unwrap())
            })]
        );
        a.update(key('-'));
        typed(&mut a, "10.5");
        assert_eq!(question(&a), "Withdraw 10.50 USD of peer happy-life's liquidity?");
        // Enter on the default (No) does nothing; Yes moves it
        a.update(Msg::Key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE)));
        assert_eq!(
            a.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))),
            vec![Effect::Run(Command::MovePeerLiquidity {
                peer: "happy-life".into(),
                liquidity: LiquidityMove::of(false, Value::new(1050).unwrap())
            })]
        );
        a.update(key('-'));
        assert!(typed(&mut a, "1.234").is_empty());
        assert!(a.overlay.is_none() && a.flash.is_some(), "a bad amount is a warning");
    }

    #[test]
    fn a_settlement_says_who_paid_and_how_much() {
        let mut a = on_peers(false);
        a.update(key('S'));
        assert!(typed(&mut a, "paid 25").is_empty());
        assert_eq!(
            question(&a),
            "Record that we paid peer happy-life 25.00 USD outside ILP?"
        );
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::SettlePeer {
                peer: "happy-life".into(),
                settlement: NewSettlement {
                    direction: Direction::Paid,
                    amount: Value::new(2500).unwrap(),
                    id: None
                }
            })]
        );
        a.update(key('S'));
        typed(&mut a, "Received 0.75");
        assert_eq!(
            question(&a),
            "Record that peer happy-life paid us 0.75 USD outside ILP?"
        );
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::SettlePeer {
                peer: "happy-life".into(),
                settlement: NewSettlement {
                    direction: Direction::Received,
                    amount: Value::new(75).unwrap(),
                    id: None
                }
            })]
        );
        for bad in ["25", "gave 25", "paid", "paid 0", "paid 1.234"] {
            a.update(key('S'));
            assert!(typed(&mut a, bad).is_empty(), "{bad}");
            assert!(a.overlay.is_none(), "{bad}");
            assert!(a.flash.as_ref().is_some_and(|f| f.text.contains("paid 25.00")), "{bad}");
        }
    }

    #[test]
    fn outcomes_flash_and_reload_the_pane_refusals_in_the_ases_words() {
        let mut a = on_peers(false);
        let effects = a.update(Msg::Reply(Reply::Done("deposited 25.00 USD".into())));
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Load(Load { pane: Pane::Peers, .. })))
        );
        let refusal = "cannot withdraw 2000.00 USD from peer happy-life's liquidity: only 1000.00 USD can be withdrawn";
        a.update(Msg::Reply(Reply::Failed(refusal.into())));
        assert_eq!(a.flash.as_ref().map(|f| f.text.as_str()), Some(refusal));
    }

    #[test]
    fn readonly_hides_the_peer_actions() {
        let mut a = on_peers(true);
        for c in ['+', '-', 'S'] {
            a.update(key(c));
            assert!(a.overlay.is_none(), "{c}");
        }
        assert!(a.keymap.hints(Pane::Peers, true).iter().all(|h| !h.2));
        let hints = a.keymap.hints(Pane::Peers, false);
        for k in ["+", "-", "S"] {
            assert!(hints.iter().any(|h| h.0 == k && h.2), "{k} is a dangerous hint");
        }
    }

    #[test]
    fn peer_events_make_the_pane_stale() {
        let mut a = on_peers(false);
        for e in [
            DomainEvent::PeerLiquidityChanged {
                peer: "happy-life".into(),
                change: "deposit".into(),
                amount: 2500,
                liquidity: 102_500,
                asset_code: "USD".into(),
                asset_scale: 2,
            },
            DomainEvent::PeerSettled {
                peer: "happy-life".into(),
                direction: "paid".into(),
                amount: 2500,
                position: 0,
                asset_code: "USD".into(),
                asset_scale: 2,
            },
            DomainEvent::PeerCreditLimitChanged {
                peer: "happy-life".into(),
                credit_limit: Some(10_000),
            },
            DomainEvent::BalanceChanged {
                account_id: "acc".into(),
                wallet: None,
                balance: 1,
                pending_debits: 0,
            },
        ] {
            a.stale.clear();
            a.update(Msg::Event(e.clone()));
            assert!(a.stale.contains(&Pane::Peers), "{e:?}");
        }
        a.stale.clear();
        a.update(Msg::Event(DomainEvent::BalanceChanged {
            account_id: "acc".into(),
            wallet: Some("alice".into()),
            balance: 1,
            pending_debits: 0,
        }));
        assert!(!a.stale.contains(&Pane::Peers), "a wallet's balance is not a peer's");
    }

    #[test]
    fn packets_per_second_come_from_two_loads() {
        let mut a = on_peers(false);
        assert!(a.panes.peers.rates.is_empty(), "one load: no rate yet");
        let mut p = peer("happy-life");
        p.packets_in.total = 30;
        p.packets_out.total = 20;
        a.update(Msg::Tick(now() + time::Duration::seconds(5)));
        a.update(Msg::Reply(Reply::found(Pane::Peers, Found::Peers(vec![p.clone()]))));
        assert_eq!(a.panes.peers.rates.get("happy-life"), Some(&10.0));
        a.update(Msg::Reply(Reply::found(Pane::Peers, Found::Peers(vec![p.clone()]))));
        assert_eq!(
            a.panes.peers.rates.get("happy-life"),
            Some(&10.0),
            "the same instant keeps it"
        );
        let mut restarted = p.clone();
        restarted.packets_in.total = 1;
        restarted.packets_out.total = 0;
        a.update(Msg::Tick(now() + time::Duration::seconds(10)));
        a.update(Msg::Reply(Reply::found(Pane::Peers, Found::Peers(vec![restarted]))));
        assert!(
            a.panes.peers.rates.is_empty(),
            "a restarted server: no rate until the next load"
        );
        assert_eq!(a.panes.peers.counts.get("happy-life").map(|c| c.0), Some(1));
        assert_eq!(rate(10.0), "10");
        assert_eq!(rate(0.4), "0.4");
        assert_eq!(rate(1234.0), "1.2k");
        p.last_reject = Some(crate::ase::traffic::LastReject {
            code: "T04".into(),
            message: "peer happy-life\u{1b}[2J may owe us no more".into(),
            at: "2026-11-21T12:00:05.000Z".into(),
            direction: "in".into(),
        });
        let words = last_reject_words(&p);
        assert!(
            words.starts_with("T04 peer happy-life") && !words.contains('\u{1b}'),
            "{words}"
        );
    }

    #[test]
    fn the_detail_says_whether_sending_is_limited_in_words() {
        let mut p = peer("happy-life");
        p.in_flight = 2500;
        p.available_to_send = Some(97_500);
        assert_eq!(
            sending_words(&p),
            "sending is limited to the liquidity: 975.00 available"
        );
        p.send_limited = false;
        p.available_to_send = None;
        assert!(sending_words(&p).starts_with("sending is not limited"));
        assert_eq!(credit(&p), "-");
        p.credit_limit = Some(10_000);
        p.credit_used = 1200;
        assert_eq!(credit(&p), "12.00/100.00");
    }
}
