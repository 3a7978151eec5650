//! Snapshot tests of every pane on ratatui's `TestBackend` at 80×24 and 120×40 — empty, loaded, filtered,
//! detail, confirm dialog and error states — with a fixed clock and fixed ids. CI fails on a changed snapshot.

use ratatui::{Terminal, backend::TestBackend};

use super::{
    app::{App, Level, Msg, OverviewData, Reply, ServerInfo, WalletRow, fixtures::*},
    keymap::Keymap,
    pane::Pane,
    render,
    theme::Theme,
};
use crate::{
    ase::quotes::QuoteDto,
    control::{Found, Query, dto::Listed},
    events::{
        DomainEvent,
        requests::{RequestDetail, RequestSummary},
    },
    ledger::Balance,
    tui::app::Effect,
    wallet::Wallet,
};

fn info() -> ServerInfo {
    ServerInfo {
        server: crate::control::dto::ServerView {
            version: "0.1.0".into(),
            pid: 123,
            listen: "127.0.0.1:4000".into(),
            public_url: "http://127.0.0.1:4000".into(),
            ilp_address: Some("test.opdesk".into()),
            database: "/data/ase.sqlite3".into(),
            webhooks_enabled: true,
        },
        attached: None,
    }
}

fn balance(wallet: &str, code: &str, v: i64) -> Balance {
    Balance {
        account_id: format!("acct-{wallet}"),
        kind: "wallet".into(),
        wallet: Some(wallet.into()),
        peer: None,
        asset_code: code.into(),
        asset_scale: 2,
        balance: v,
        pending_debits: 0,
        pending_credits: 0,
        available: v,
    }
}

fn wallet_row(name: &str, code: &str, v: i64) -> WalletRow {
    WalletRow {
        wallet: Wallet {
            id: format!("w-{name}").into(),
            name: name.into(),
            url: format!("http://127.0.0.1:4000/{name}"),
            public_name: Some(format!("{name} (demo)")),
            asset_code: code.into(),
            asset_scale: 2,
            account_id: format!("acct-{name}"),
            demo: true,
            created_at: crate::clock::ts("2026-11-21T10:00:00.000Z"),
        },
        balance: balance(name, code, v),
        keys: usize::from(name == "demo-client"),
    }
}

/// A peer as the admin API shows it (built from JSON, so fields added to the view later keep their defaults).
fn peer(name: &str, source: &str, balance: i64) -> crate::control::dto::PeerView {
    serde_json::from_value(serde_json::json!({
        "name": name,
        "source": source,
        "ilpAddress": format!("test.{name}"),
        "assetCode": "USD",
        "assetScale": 2,
        "incomingTokens": 1,
        "receives": true,
        "outgoingEndpoint": format!("http://127.0.0.1:4100/ilp"),
        "routes": [format!("test.{name}")],
        "maxPacketAmount": 1000,
        "peerAccountBalance": balance,
        "position": balance,
        "owed": balance.max(0),
        "creditUsed": (-balance).max(0),
        "createdAt": "2026-11-21T10:00:00.000Z",
        "updatedAt": "2026-11-21T10:00:00.000Z",
    }))
    .map(|mut p: crate::control::dto::PeerView| {
        // the peer we owe has liquidity (sending limited); the one that owes us, a credit limit
        if balance > 0 {
            p.liquidity = 100_000;
            p.in_flight = 500;
            p.send_limited = true;
            p.available_to_send = Some(97_000);
            p.packets_out.total = 12;
            p.packets_out.fulfilled = 11;
            p.packets_out.rejected = 1;
            p.last_reject = Some(crate::ase::traffic::LastReject {
                code: "F99".into(),
                message: "receiver closed the connection".into(),
                at: "2026-11-21T11:59:58.000Z".into(),
                direction: "out".into(),
            });
        } else {
            p.credit_limit = Some(50_000);
        }
        p
    })
    .unwrap()
}

fn quote(id: &str) -> QuoteDto {
    QuoteDto {
        id: format!("http://127.0.0.1:4000/quotes/{id}"),
        wallet_address: "http://127.0.0.1:4000/alice".into(),
        receiver: "http://127.0.0.1:4000/incoming-payments/0000-ip-1".into(),
        receive_amount: usd(900),
        debit_amount: usd(1000),
        method: "ilp".into(),
        expires_at: crate::clock::ts("2026-11-21T12:04:10.000Z"),
        created_at: crate::clock::ts("2026-11-21T11:59:10.000Z"),
    }
}

/// Money moving in two assets over the last minutes, work waiting and one failed payment.
fn activity() -> crate::control::dto::Activity {
    use crate::control::dto::{Activity, AssetMoved, FailedPayment};
    Activity {
        until: "2026-11-21T12:00".into(),
        moved: vec![
            AssetMoved {
                asset_code: "EUR".into(),
                asset_scale: 2,
                per_minute: vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1800, 0, 0, 0, 0],
            },
            AssetMoved {
                asset_code: "USD".into(),
                asset_scale: 2,
                per_minute: vec![0, 0, 100, 250, 0, 0, 1250, 500, 0, 0, 0, 700, 2500, 300, 50],
            },
        ],
        sending: 1,
        webhooks_pending: 2,
        webhooks_dead: 1,
        recent_failures: vec![FailedPayment {
            id: "0000-op-0001".into(),
            wallet: "alice".into(),
            reason: Some("insufficient_balance".into()),
            at: "2026-11-21T11:58:30.000Z".into(),
        }],
        rejected_packets: vec![crate::control::dto::RejectedPacket {
            peer: "eurpeer".into(),
            reject: crate::ase::traffic::LastReject {
                code: "F07".into(),
                message: "no exchange rate from GBP (the link's asset) to USD".into(),
                at: "2026-11-21T11:59:10.000Z".into(),
                direction: "in".into(),
            },
        }],
    }
}

fn loaded(readonly: bool) -> App {
    let mut a = App::new(info(), Keymap::default(), readonly, now());
    a.started_at = now() - time::Duration::seconds(3723);
    let mut pending = grant("0000-grant-01", "pending");
    pending.description = vec![
        "Demo client (demo) (http://127.0.0.1:4000/demo-client) asks for:".into(),
        "  - send payments from http://127.0.0.1:4000/alice (create, read): up to 5.00 USD debited per month".into(),
    ];
    pending.interaction_expires_at = Some(crate::clock::ts("2026-11-21T12:09:00.000Z"));
    let msgs = vec![
        Reply::found(
            Pane::Overview,
            Found::Overview(Box::new(OverviewData {
                pending_grants: 1,
                open_incoming: 2,
                failed_outgoing: 1,
                balances: vec![
                    balance("alice", "USD", 100_000),
                    balance("bob", "USD", 50_000),
                    balance("carol", "EUR", 50_000),
                ],
                activity: activity(),
                wal: Some(crate::store::wal::WalState {
                    file_bytes: 12_897_280,
                    ceiling_bytes: 64 << 20,
                    checkpoints: 1234,
                    pinned: 0,
                    last_micros: 3100,
                    last_pages: 812,
                    writer_pause_max_micros: 1800,
                }),
                attention: Vec::new(),
            })),
        ),
        Reply::found(
            Pane::Wallets,
            Found::Wallets(vec![
                wallet_row("alice", "USD", 100_000),
                wallet_row("bob", "USD", 50_000),
                wallet_row("carol", "EUR", 50_000),
                wallet_row("demo-client", "USD", 0),
            ]),
        ),
        Reply::page(
            Pane::Incoming,
            Found::Incoming(Listed {
                items: vec![
                    incoming("0000-ip-0001", "bob", 1250, Some(2500)),
                    incoming("0000-ip-0002", "bob", 500, None),
                    {
                        let mut done = incoming("0000-ip-0003", "carol", 1800, Some(1800));
                        done.state = crate::states::IncomingState::Completed;
                        done.payment.completed = true;
                        done
                    },
                ],
                next_cursor: None,
            }),
            false,
        ),
        Reply::found(
            Pane::Grants,
            Found::Grants(vec![
                pending,
                grant("0000-grant-02", "finalized"),
                grant("0000-grant-03", "rejected"),
            ]),
        ),
        Reply::page(
            Pane::Outgoing,
            Found::Outgoing(Listed {
                items: vec![
                    outgoing("0000-op-0001", "failed"),
                    outgoing("0000-op-0002", "completed"),
                    outgoing("0000-op-0003", "sending"),
                ],
                next_cursor: Some("cursor".into()),
            }),
            false,
        ),
        Reply::page(
            Pane::Quotes,
            Found::Quotes(Listed {
                items: vec![quote("0000-q-0001"), quote("0000-q-0002")],
                next_cursor: None,
            }),
            false,
        ),
        Reply::page(
            Pane::Webhooks,
            Found::Webhooks(vec![
                delivery(104, "grantPending", "pending"),
                {
                    let mut retrying = delivery(103, "outgoingPaymentFailed", "pending");
                    retrying.attempts = 2;
                    retrying.last_status = Some(500);
                    retrying.last_error = Some("HTTP 500".into());
                    retrying
                },
                delivery(102, "walletCreated", "delivered"),
                {
                    let mut dead = delivery(101, "incomingPaymentCreated", "dead");
                    dead.last_error = Some("error sending request: connection refused\u{1b}[2J".into());
                    dead
                },
            ]),
            false,
        ),
        Reply::found(
            Pane::Peers,
            Found::Peers(vec![
                peer("happy-life", "admin", 2500),
                peer("rafiki\u{1b}[2J", "config", -700),
            ]),
        ),
    ];
    for m in msgs {
        a.update(Msg::Reply(m));
    }
    // the Requests pane's page as the server's ring answers it, newest first
    let rows = (0..4).rev().map(served).collect();
    a.update(Msg::Reply(Reply::page(
        Pane::Requests,
        Found::Requests(Listed {
            items: rows,
            next_cursor: None,
        }),
        false,
    )));
    // and what the server told of them (the Overview counts them and keeps the refused one)
    a.update(Msg::Event(DomainEvent::RequestsServed {
        total: 4,
        arrivals: vec![(served(0).received_at.unix_timestamp(), 4)],
        refused: vec![served(3)],
    }));
    a.update(Msg::Event(DomainEvent::GrantPending {
        id: "0000-grant-01".into(),
        client: "demo-client".into(),
        owner: None,
    }));
    a.flash = None;
    a.update(Msg::Log("INFO opdesk: opdesk console serving on 127.0.0.1:4000".into()));
    // requests over the last five minutes (ten-second buckets), for the Overview's sparkline
    let end = now().unix_timestamp();
    for (ago, n) in [(0, 3), (10, 5), (20, 1), (60, 8), (120, 2), (200, 6), (290, 1)] {
        a.panes.overview.request_buckets.push_front((end - ago, n));
    }
    a
}

/// The `i`th request of [`loaded`]'s page.
fn served(i: usize) -> RequestSummary {
    let path = ["/alice", "/auth", "/incoming-payments", "/auth/continue/abc"][i];
    RequestSummary {
        id: format!("01900000-0000-7000-8000-00000000000{i}"),
        received_at: crate::clock::ts(&format!("2026-11-21T10:00:00.{:06}Z", 120_000 + i * 3_517)),
        method: if i.is_multiple_of(2) {
            "GET".into()
        } else {
            "POST".into()
        },
        path: path.into(),
        status: [200, 200, 201, 400][i],
        latency_us: 850 + i as u64 * 100,
        client: (i == 1).then(|| "http://127.0.0.1:4000/demo-client".into()),
        signature: match i {
            1 => Some("ok".into()),
            3 => Some("refused: signature does not verify".into()),
            _ => None,
        },
    }
}

/// Opens the selected request's detail: the console asks the server for it, and `detail` is the answer.
fn open_request(a: &mut App, detail: RequestDetail) {
    let effects = a.act(super::action::Action::Open);
    let id = detail.summary.id.clone();
    assert_eq!(effects, vec![Effect::ask(Pane::Requests, Query::Request { id })]);
    a.update(Msg::Reply(Reply::found(
        Pane::Requests,
        Found::Request(Box::new(detail)),
    )));
    // it is asked for once
    assert!(a.detail_effect(false).is_none());
}

fn draw(a: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut a = a.clone();
    a.size = (w, h);
    t.draw(|f| render::draw(&a, &Theme::ansi(), f)).unwrap();
    format!("{}", t.backend())
}

fn goto(a: &mut App, p: Pane) {
    a.pane = p;
}

#[test]
fn every_pane_empty_and_loaded_at_both_sizes() {
    for p in Pane::ALL {
        let mut empty = App::new(info(), Keymap::default(), false, now());
        goto(&mut empty, p);
        insta::assert_snapshot!(format!("{}_empty_80x24", p.name()), draw(&empty, 80, 24));
        let mut a = loaded(false);
        goto(&mut a, p);
        insta::assert_snapshot!(format!("{}_loaded_80x24", p.name()), draw(&a, 80, 24));
        insta::assert_snapshot!(format!("{}_loaded_120x40", p.name()), draw(&a, 120, 40));
    }
}

#[test]
fn filtered_detail_confirm_help_and_error_states() {
    let mut a = loaded(false);
    goto(&mut a, Pane::Incoming);
    a.panes.incoming.table.filter = super::app::Filter::parse("carol");
    insta::assert_snapshot!("incoming_filtered_80x24", draw(&a, 80, 24));

    let mut a = loaded(false);
    goto(&mut a, Pane::Incoming);
    a.act(super::action::Action::Open);
    insta::assert_snapshot!("incoming_detail_120x40", draw(&a, 120, 40));

    let mut a = loaded(false);
    goto(&mut a, Pane::Grants);
    a.act(super::action::Action::Open);
    insta::assert_snapshot!("grants_detail_120x40", draw(&a, 120, 40));
    a.act(super::action::Action::Approve);
    insta::assert_snapshot!("grants_confirm_80x24", draw(&a, 80, 24));
    insta::assert_snapshot!("grants_confirm_120x40", draw(&a, 120, 40));

    let mut a = loaded(false);
    goto(&mut a, Pane::Outgoing);
    a.act(super::action::Action::Open);
    insta::assert_snapshot!("outgoing_detail_120x40", draw(&a, 120, 40));

    let mut a = loaded(false);
    goto(&mut a, Pane::Outgoing);
    a.flash(Level::Error, "only failed payments can be retried");
    insta::assert_snapshot!("outgoing_error_80x24", draw(&a, 80, 24));

    let mut a = loaded(false);
    a.act(super::action::Action::Help);
    insta::assert_snapshot!("help_120x40", draw(&a, 120, 40));

    let mut a = loaded(true);
    goto(&mut a, Pane::Grants);
    insta::assert_snapshot!("grants_readonly_80x24", draw(&a, 80, 24));

    let mut a = loaded(false);
    goto(&mut a, Pane::Requests);
    a.act(super::action::Action::Down);
    a.act(super::action::Action::Down);
    let waiting = {
        let mut a = a.clone();
        a.act(super::action::Action::Open);
        draw(&a, 120, 40)
    };
    assert!(waiting.contains("asking the server for the exchange"), "{waiting}");
    open_request(
        &mut a,
        RequestDetail {
            summary: served(1),
            exchange: Some(crate::events::Exchange {
                target: "/auth".into(),
                request_headers: vec![("content-type".into(), "application/json".into())],
                request_body: "{\n  \"client\": \"http://127.0.0.1:4000/demo-client\"\n}".into(),
                response_headers: vec![("content-type".into(), "application/json".into())],
                response_body: "{\n  \"access_token\": {\n    \"value\": \"ABCDEF…\"\n  }\n}".into(),
                detail: None,
                signature_report: None,
            }),
            report: None,
        },
    );
    insta::assert_snapshot!("requests_detail_120x40", draw(&a, 120, 40));
}

#[test]
fn the_webhooks_pane_empty_off_dead_detail_and_confirm() {
    use super::action::Action;
    let mut empty = App::new(info(), Keymap::default(), false, now());
    goto(&mut empty, Pane::Webhooks);
    empty.update(Msg::Reply(Reply::page(Pane::Webhooks, Found::Webhooks(vec![]), false)));
    insta::assert_snapshot!("webhooks_empty_120x40", draw(&empty, 120, 40));
    empty.info.server.webhooks_enabled = false;
    let off = draw(&empty, 80, 24);
    assert!(off.contains("no webhook URL is configured"), "{off}");
    insta::assert_snapshot!("webhooks_off_80x24", off);

    let mut a = loaded(false);
    goto(&mut a, Pane::Webhooks);
    a.panes.webhooks.dead_only = true;
    a.update(Msg::Reply(Reply::page(
        Pane::Webhooks,
        Found::Webhooks(vec![delivery(101, "incomingPaymentCreated", "dead")]),
        false,
    )));
    insta::assert_snapshot!("webhooks_dead_80x24", draw(&a, 80, 24));

    let mut a = loaded(false);
    goto(&mut a, Pane::Webhooks);
    a.act(Action::Bottom);
    a.act(Action::Open);
    let detail = draw(&a, 120, 40);
    assert!(detail.contains("connection refused"), "{detail}");
    assert!(!detail.contains('\u{1b}'), "hostile text is sanitised");
    insta::assert_snapshot!("webhooks_detail_120x40", detail);
    a.overlay = None;
    a.act(Action::Redrive);
    insta::assert_snapshot!("webhooks_confirm_80x24", draw(&a, 80, 24));
}

#[test]
fn the_grants_pane_hides_closed_grants_until_asked() {
    let mut a = App::new(info(), Keymap::default(), false, now());
    goto(&mut a, Pane::Grants);
    a.update(Msg::Reply(Reply::found(Pane::Grants, Found::Grants(vec![]))));
    let empty = draw(&a, 80, 24);
    assert!(empty.contains("no open grants (F shows"), "{empty}");
    insta::assert_snapshot!("grants_none_open_80x24", empty);

    let mut a = loaded(false);
    goto(&mut a, Pane::Grants);
    a.act(super::action::Action::AllGrants);
    let all = draw(&a, 80, 24);
    assert!(all.contains("Grants [all]"), "{all}");
    insta::assert_snapshot!("grants_all_80x24", all);
}

#[test]
fn a_refused_request_shows_the_operator_why() {
    let mut a = loaded(false);
    let summary = RequestSummary {
        id: "01900000-0000-7000-8000-000000000010".into(),
        received_at: crate::clock::ts("2026-11-21T10:00:00.250125Z"),
        method: "POST".into(),
        path: "/quotes".into(),
        status: 400,
        latency_us: 2100,
        client: Some("http://127.0.0.1:4000/demo-client".into()),
        signature: Some("ok".into()),
    };
    a.update(Msg::Reply(Reply::page(
        Pane::Requests,
        Found::Requests(Listed {
            items: vec![summary.clone()],
            next_cursor: None,
        }),
        false,
    )));
    goto(&mut a, Pane::Requests);
    open_request(
        &mut a,
        RequestDetail {
            summary,
            exchange: Some(crate::events::Exchange {
                target: "/quotes".into(),
                request_headers: vec![("content-type".into(), "application/json".into())],
                request_body: "{\n  \"receiver\": \"http://10.0.0.7/incoming-payments/1\"\n}".into(),
                response_headers: vec![("content-type".into(), "application/json".into())],
                response_body: "{\n  \"error\": {\n    \"code\": \"invalid_receiver\",\n    \"description\": \"the receiver could not be resolved\"\n  }\n}".into(),
                detail: Some("public GET http://10.0.0.7/incoming-payments/1: refused by the address policy: address 10.0.0.7\u{1b}[2J".into()),
                signature_report: None,
            }),
            report: None,
        },
    );
    let screen = draw(&a, 120, 40);
    assert!(screen.contains("why (operator only)"), "{screen}");
    assert!(screen.contains("refused by the address policy"), "{screen}");
    assert!(!screen.contains('\u{1b}'), "hostile text is sanitised");
}

#[test]
fn every_bound_action_is_in_the_help_overlay_with_a_description() {
    let mut a = loaded(false);
    a.act(super::action::Action::Help);
    let screen = draw(&a, 220, 80);
    for b in &a.keymap.bindings {
        assert!(!b.description.is_empty(), "{:?}", b.action);
        assert!(
            screen.contains(b.description),
            "help lacks {:?}: {}",
            b.action,
            b.description
        );
        assert!(
            screen.contains(&b.keys[0].label()),
            "help lacks the key of {:?}",
            b.action
        );
    }
}

#[test]
fn tiny_terminals_do_not_panic() {
    let a = loaded(false);
    for (w, h) in [(1, 1), (10, 3), (20, 8), (40, 10)] {
        draw(&a, w, h);
    }
}

/// The console guide's key table (docs/CONSOLE.md) as the keymap produces it.
fn key_table() -> String {
    let mut out = String::from("| keys | where | what |\n|---|---|---|\n");
    for b in &Keymap::default().bindings {
        let keys = b
            .keys
            .iter()
            .map(|k| format!("`{}`", k.label()))
            .collect::<Vec<_>>()
            .join(" ");
        let scope = match b.scope {
            super::keymap::Scope::Global => "anywhere".to_owned(),
            super::keymap::Scope::Pane(p) => p.title().to_owned(),
        };
        let danger = if b.dangerous { " ⚠" } else { "" };
        out.push_str(&format!("| {keys} | {scope} | {}{danger} |\n", b.description));
    }
    out
}

#[test]
fn the_readme_key_table_matches_the_keymap() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/CONSOLE.md")).unwrap();
    let table = key_table();
    assert!(
        readme.contains(&table),
        "docs/CONSOLE.md's key table is stale; it should read:\n{table}"
    );
}

#[test]
fn the_header_says_embedded_attached_or_disconnected() {
    let header = |a: &App| draw(a, 120, 40).lines().next().unwrap_or_default().to_owned();
    let embedded = loaded(false);
    assert!(header(&embedded).contains("embedded  http://127.0.0.1:4000"));
    let mut attached = loaded(false);
    attached.info.attached = Some("http://127.0.0.1:4660".into());
    assert!(
        header(&attached).contains("attached to http://127.0.0.1:4660 (pid 123)"),
        "{}",
        header(&attached)
    );
    attached.update(Msg::Disconnected("the server closed the event stream".into()));
    let h = header(&attached);
    assert!(
        h.contains("disconnected — reconnecting") && !h.contains("attached to"),
        "{h}"
    );
    assert!(
        draw(&attached, 120, 40).contains("disconnected — reconnecting (the server closed the event stream)"),
        "the flash line says why"
    );
}

#[test]
fn the_peers_pane_detail_sanitises_peer_names() {
    let mut a = loaded(false);
    goto(&mut a, Pane::Peers);
    a.act(super::action::Action::Open);
    let detail = draw(&a, 120, 40);
    assert!(detail.contains("test.happy-life") && detail.contains("25.00 USD: we owe happy-life 25.00 USD"));
    insta::assert_snapshot!("peers_detail_120x40", detail);
    insta::assert_snapshot!("peers_detail_80x24", draw(&a, 80, 24));
    a.act(super::action::Action::Back);
    a.act(super::action::Action::Down);
    let table = draw(&a, 80, 24);
    assert!(!table.contains('\u{1b}'), "hostile text is sanitised");
}

#[test]
fn the_peers_pane_prompts_and_confirms_at_80x24() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut a = loaded(false);
    goto(&mut a, Pane::Peers);
    a.act(super::action::Action::Settle);
    for c in "received 7".chars() {
        a.update(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    insta::assert_snapshot!("peers_prompt_80x24", draw(&a, 80, 24));
    a.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    insta::assert_snapshot!("peers_confirm_80x24", draw(&a, 80, 24));
    let mut ro = loaded(true);
    goto(&mut ro, Pane::Peers);
    let screen = draw(&ro, 80, 24);
    assert!(
        !screen.contains("deposit liquidity"),
        "read-only: no liquidity keys\n{screen}"
    );
}

#[test]
fn the_header_shows_the_desk_in_view_and_the_other() {
    use super::desk::DeskList;
    let header = |a: &App, w: u16| draw(a, w, 24).lines().next().unwrap_or_default().to_owned();
    let mut a = loaded(false);
    assert!(!header(&a, 120).contains("F2"), "one desk: no switcher");
    a.desks = Some(DeskList {
        names: vec!["cloud-nine".into(), "happy-life".into()],
        active: 0,
    });
    let h = header(&a, 80);
    assert!(h.contains("cloud-nine") && h.contains("F2: happy-life"), "{h}");
    insta::assert_snapshot!("workshop_overview_80x24", draw(&a, 80, 24));
    let effects = a.act(super::action::Action::NextDesk);
    assert_eq!(effects, vec![super::app::Effect::SwitchDesk("happy-life".into())]);
    let switched = DeskList {
        names: vec!["cloud-nine".into(), "happy-life".into()],
        active: 1,
    };
    let mut other = info();
    other.server.public_url = "http://127.0.0.1:4100".into();
    a.update(Msg::Reply(Reply::Switched(other, switched)));
    assert!(
        a.panes.wallets.table.items.is_empty() && a.panes.peers.table.items.is_empty(),
        "nothing of the last desk stays"
    );
    let h = header(&a, 120);
    assert!(
        h.contains("happy-life") && h.contains("F2: cloud-nine") && h.contains(":4100"),
        "{h}"
    );
    insta::assert_snapshot!("workshop_switched_120x40", draw(&a, 120, 40));
}

/// The signature debugger in the Requests pane: a good signature and each failure kind, built by the
/// verifier's own explain over really signed requests.
#[test]
fn the_signature_debugger_shows_the_verdict_and_what_was_checked() {
    use crate::httpsig::{self, KeyOutcome, Policy, sign_request};
    use ed25519_dalek::SigningKey;
    use http::{HeaderMap, HeaderValue, Method};

    const NOW: i64 = 1_795_000_000;
    const URI: &str = "http://127.0.0.1:4000/alice/incoming-payments";
    const CLIENT: &str = "http://127.0.0.1:4000/demo-client";
    let body: &[u8] = br#"{"walletAddress":"http://127.0.0.1:4000/alice","incomingAmount":{"value":"500"}}"#;
    let key = SigningKey::from_bytes(&[7; 32]);
    let other = SigningKey::from_bytes(&[8; 32]);
    let sign = |created: i64, kid: &str, authorization: bool| {
        let mut h = HeaderMap::new();
        if authorization {
            h.insert("authorization", HeaderValue::from_static("GNAP 4F1A2B3C"));
        }
        sign_request(&Method::POST, URI, &mut h, body, &key, kid, created).expect("sign");
        h
    };
    let found = |k: &SigningKey| KeyOutcome::Found {
        client: Some(CLIENT.into()),
        source: Some(format!("{CLIENT}/jwks.json")),
        key: k.verifying_key(),
    };
    let mut uncovered = sign(NOW - 2, "demo-key", false);
    uncovered.insert("authorization", HeaderValue::from_static("GNAP 4F1A2B3C"));
    let tampered: &[u8] = br#"{"walletAddress":"http://127.0.0.1:4000/alice","incomingAmount":{"value":"900"}}"#;
    // The official Rust SDK's form: unquoted components, a bare base64 signature over the raw text.
    let mut legacy = sign(NOW - 2, "demo-key", true);
    {
        use base64::Engine as _;
        use ed25519_dalek::Signer as _;
        let strict = httpsig::parse_signature(&legacy).expect("strict");
        let close = strict.raw_params.find(')').expect("inner list");
        let raw = format!("({}){}", strict.components.join(" "), &strict.raw_params[close + 1..]);
        let req = httpsig::Request {
            method: &Method::POST,
            target_uri: URI,
            headers: &legacy,
            body,
        };
        let sig = httpsig::SignatureParams {
            raw_params: raw.clone(),
            ..strict
        };
        let base = httpsig::signature_base(&req, &sig).expect("base");
        let bare = base64::engine::general_purpose::STANDARD.encode(key.sign(base.as_bytes()).to_bytes());
        legacy.insert(
            "signature-input",
            HeaderValue::from_str(&format!("sig1={raw}")).expect("ascii"),
        );
        legacy.insert("signature", HeaderValue::from_str(&bare).expect("ascii"));
    }
    let cases: Vec<(&str, HeaderMap, &[u8], KeyOutcome)> = vec![
        ("ok", sign(NOW - 2, "demo-key", true), body, found(&key)),
        ("legacy_form", legacy, body, found(&key)),
        ("tampered_body", sign(NOW - 2, "demo-key", true), tampered, found(&key)),
        ("stale_created", sign(NOW - 412, "demo-key", true), body, found(&key)),
        ("uncovered_component", uncovered, body, found(&key)),
        (
            "unknown_kid",
            sign(NOW - 2, "old-key", true),
            body,
            KeyOutcome::Missing {
                client: Some(CLIENT.into()),
                source: format!("{CLIENT}/jwks.json"),
            },
        ),
        ("wrong_key", sign(NOW - 2, "demo-key", true), body, found(&other)),
    ];
    for (name, headers, sent_body, outcome) in cases {
        let req = httpsig::Request {
            method: &Method::POST,
            target_uri: URI,
            headers: &headers,
            body: sent_body,
        };
        let report = httpsig::explain(&req, NOW, &Policy::default(), &outcome).masked();
        let ok = matches!(name, "ok" | "legacy_form");
        assert_eq!(report.is_ok(), ok, "{name}: {:?}", report.verdict);
        let mut a = loaded(false);
        let summary = RequestSummary {
            id: "01900000-0000-7000-8000-000000000020".into(),
            received_at: crate::clock::ts("2026-11-21T10:00:00.250125Z"),
            method: "POST".into(),
            path: "/alice/incoming-payments".into(),
            status: if ok { 201 } else { 401 },
            latency_us: 1900,
            client: Some(CLIENT.into()),
            signature: Some(if ok { "ok".into() } else { "refused".into() }),
        };
        // the newest on top of the page
        let rows = std::iter::once(summary.clone()).chain((0..4).rev().map(served));
        a.update(Msg::Reply(Reply::page(
            Pane::Requests,
            Found::Requests(Listed {
                items: rows.collect(),
                next_cursor: None,
            }),
            false,
        )));
        goto(&mut a, Pane::Requests);
        a.act(super::action::Action::Top);
        open_request(
            &mut a,
            RequestDetail {
                summary,
                exchange: Some(crate::events::Exchange {
                    target: "/alice/incoming-payments".into(),
                    request_headers: vec![("content-type".into(), "application/json".into())],
                    request_body: String::from_utf8_lossy(sent_body).into_owned(),
                    response_headers: vec![],
                    response_body: String::new(),
                    detail: None,
                    signature_report: None,
                }),
                report: Some(report),
            },
        );
        let screen = draw(&a, 120, 40);
        assert!(screen.contains("signature base"), "{name}: {screen}");
        assert!(!screen.contains("4F1A2B3C"), "{name}: {screen}");
        assert_eq!(
            screen.contains("legacy Signature-Input form (accepted as the reference ASE does)"),
            name == "legacy_form",
            "{name}: {screen}"
        );
        insta::assert_snapshot!(format!("requests_signature_{name}_120x40"), screen);
    }
}

/// The Grants detail with the grant's timeline: opening the detail asks for it (and moving to another grant,
/// or the grants changing, asks again); client text in it is sanitized; polls show their count and the steps
/// their request's short id.
#[test]
fn grants_detail_shows_the_timeline() {
    use super::app::Effect;
    use crate::gnap::timeline::{Actor, GrantStep, StepKind};
    let mut a = loaded(false);
    goto(&mut a, Pane::Grants);
    let id = a.panes.grants.table.selection().map(|g| g.id.clone()).unwrap();
    let effects = a.act(super::action::Action::Open);
    let timeline = |id: &str| Effect::ask(Pane::Grants, Query::Grant { id: id.to_owned() });
    assert_eq!(effects, vec![timeline(&id)]);
    let step =
        |seq: i64, at: &str, kind: StepKind, actor: Actor, rid: Option<&str>, detail: serde_json::Value| GrantStep {
            seq,
            at: crate::clock::ts(&format!("2026-11-21T11:{at}Z")),
            count: 1,
            last_at: None,
            kind,
            actor,
            request_id: rid.map(str::to_owned),
            last_request_id: None,
            detail,
        };
    let mut polled = step(
        3,
        "59:02.100",
        StepKind::Polled,
        Actor::Client,
        Some("01a2b3c4-0000-7000-8000-00000000ca11"),
        serde_json::json!({"state": crate::states::GrantState::Pending, "wait": 5}),
    );
    polled.count = 12;
    polled.last_at = Some(crate::clock::ts("2026-11-21T11:59:57.300Z"));
    let steps = vec![
        step(
            1,
            "59:00.000",
            StepKind::Requested,
            Actor::Client,
            Some("01a2b3c4-0000-7000-8000-0000000a11ce"),
            serde_json::json!({
                "client": "http://127.0.0.1:4000/demo-client\u{1b}[2J",
                "access": [{"type": "outgoing-payment", "actions": ["create", "read"],
                    "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}}}],
                "interact": "interactive, no finish (the client polls)",
                "raw": {"client": "http://127.0.0.1:4000/demo-client"},
            }),
        ),
        step(
            2,
            "59:01.500",
            StepKind::InteractionOpened,
            Actor::Browser,
            Some("01a2b3c4-0000-7000-8000-0000000b0b00"),
            serde_json::json!({"showed": "waiting for the decision"}),
        ),
        polled,
    ];
    let mut with_steps = a.panes.grants.table.selection().cloned().unwrap();
    with_steps.timeline = steps;
    a.update(Msg::Reply(Reply::found(
        Pane::Grants,
        Found::Grant(Box::new(with_steps)),
    )));
    let screen = draw(&a, 120, 40);
    assert!(!screen.contains('\u{1b}'), "client text is sanitized");
    assert!(
        screen.contains("×12 until 11:59:57.300") && screen.contains("[request 0000ca11]"),
        "{screen}"
    );
    insta::assert_snapshot!("grants_detail_timeline_120x40", screen);
    // at 80x24 the detail outruns its box: PgDn scrolls it (the title says where, a scrollbar shows it)
    a.size = (80, 24);
    let top = draw(&a, 80, 24);
    assert!(top.contains("(PgUp/PgDn)"), "{top}");
    a.act(super::action::Action::PageDown);
    let scrolled = draw(&a, 80, 24);
    assert_ne!(top, scrolled);
    insta::assert_snapshot!("grants_detail_timeline_scrolled_80x24", scrolled);
    a.act(super::action::Action::PageUp);
    assert_eq!(draw(&a, 80, 24), top);
    a.size = (120, 40);
    // the grants changing while the detail is open fetches the timeline again
    let grants = a.panes.grants.table.items.clone();
    let effects = a.update(Msg::Reply(Reply::found(Pane::Grants, Found::Grants(grants))));
    assert_eq!(
        effects,
        vec![Effect::ask(Pane::Grants, Query::GrantSpending), timeline(&id)]
    );
    // another grant selected: its timeline, not this one's
    let effects = a.act(super::action::Action::Down);
    let other = a.panes.grants.table.selection().map(|g| g.id.clone()).unwrap();
    assert_ne!(other, id);
    assert_eq!(effects, vec![timeline(&other)]);
    assert!(draw(&a, 120, 40).contains("loading…"));
}

/// The screen and where the terminal cursor is (prompts put it where the next character goes).
fn draw_with_cursor(a: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut a = a.clone();
    a.size = (w, h);
    t.draw(|f| render::draw(&a, &Theme::ansi(), f)).unwrap();
    let c = t.get_cursor_position().unwrap();
    format!("{}cursor at column {}, row {}\n", t.backend(), c.x, c.y)
}

#[test]
fn the_overview_shows_activity_waiting_work_and_failures() {
    let a = loaded(false);
    for (w, h) in [(80, 24), (120, 40)] {
        let screen = draw(&a, w, h);
        for text in [
            "requests/s",
            "USD moved",
            "EUR moved",
            "56.50 in 15 min",
            "sending 1",
            "dead 1",
            "Recent failures",
        ] {
            assert!(screen.contains(text), "{w}x{h} lacks {text}: {screen}");
        }
        assert!(screen.contains("payment -op-0001"), "{screen}");
        assert!(
            screen.contains("400 POST /auth/continue/abc") || screen.contains("400 GET"),
            "{screen}"
        );
    }
    let spark = super::panes::overview::sparkline(&[0.0, 1.0, 4.0, 8.0], 1);
    assert_eq!(spark, "·▂▅█");
    assert_eq!(super::panes::overview::sparkline(&[0.0, 0.0], 2), "····");
}

/// One item of each kind, as `views::attention` words them.
fn every_attention() -> Vec<crate::control::dto::Attention> {
    use crate::control::dto::{Attention, AttentionKind as K};
    [
        (
            K::PeerLiquidityLow,
            "peer happy-life: liquidity 12.00 USD, under threshold 50.00 USD",
        ),
        (
            K::PeerCreditHigh,
            "peer happy-life: credit used 250.00 USD, over threshold 200.00 USD",
        ),
        (
            K::WalletBalanceLow,
            "wallet alice: balance 3.00 USD, under threshold 10.00 USD",
        ),
        (
            K::DeadWebhooks,
            "2 webhook deliveries dead: retry once the receiver is fixed",
        ),
        (
            K::GrantsWaiting,
            "1 grant waiting past half their window (oldest 6 min)",
        ),
        (K::FailedPayments, "3 outgoing payments failed in the last hour"),
        (
            K::WalNearCeiling,
            "WAL at 85 % of its ceiling: a reader holds an old snapshot",
        ),
        (
            K::CachesNotTrusted,
            "not hearing the other nodes: reading everything from the database",
        ),
    ]
    .into_iter()
    .map(|(kind, what)| Attention {
        kind,
        what: what.into(),
    })
    .collect()
}

#[test]
fn the_attention_box_lists_each_kind_with_its_key_and_the_header_counts_them() {
    let mut a = loaded(false);
    a.panes.overview.data.attention = every_attention();
    insta::assert_snapshot!("overview_attention_80x24", draw(&a, 80, 24));
    insta::assert_snapshot!("overview_attention_120x40", draw(&a, 120, 40));
    let wide = draw(&a, 120, 40);
    assert!(wide.contains("8 need attention"), "{wide}");
    for (key, pane) in [
        ("[0]", "Peers"),
        ("[2]", "Wallets"),
        ("[9]", "Webhooks"),
        ("[4]", "Grants"),
    ] {
        assert!(wide.contains(&format!("{key} {pane}")), "{key} {pane}: {wide}");
    }
    // all is well: no box, no badge
    let calm = draw(&loaded(false), 120, 40);
    assert!(
        !calm.contains("Attention") && !calm.contains("need attention"),
        "{calm}"
    );
}

#[test]
fn the_help_and_raw_json_overlays_scroll_at_80x24() {
    use super::action::Action;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let key = |c: KeyCode| Msg::Key(KeyEvent::new(c, KeyModifiers::NONE));
    let mut a = loaded(false);
    a.update(Msg::Resize(80, 24));
    a.act(Action::Help);
    let top = draw(&a, 80, 24);
    assert!(top.contains("help 1–18 of"), "{top}");
    a.update(key(KeyCode::Char('G')));
    let end = draw(&a, 80, 24);
    let last: String = a.keymap.bindings.last().unwrap().description.chars().take(24).collect();
    assert!(!top.contains(&last) && end.contains(&last), "{end}");
    insta::assert_snapshot!("help_scrolled_to_the_end_80x24", end);
    a.update(key(KeyCode::Char('k')));
    a.update(key(KeyCode::PageUp));
    a.update(key(KeyCode::Home));
    assert_eq!(a.overlay_scroll, 0);
    a.update(key(KeyCode::Down));
    a.update(key(KeyCode::Char('j')));
    assert_eq!(a.overlay_scroll, 2);

    // raw JSON of an outgoing payment, scrolled two pages down (and clamped at its end)
    let mut a = loaded(false);
    a.update(Msg::Resize(80, 24));
    goto(&mut a, Pane::Outgoing);
    a.act(Action::RawJson);
    let (total, shown) = a.overlay_extent().unwrap();
    assert!(total > shown, "{total} lines fit in {shown}");
    a.update(key(KeyCode::PageDown));
    a.update(key(KeyCode::PageDown));
    assert_eq!(a.overlay_scroll, (2 * shown).min(total - shown));
    a.update(Msg::Scroll(true));
    insta::assert_snapshot!("raw_json_scrolled_80x24", draw(&a, 80, 24));
    a.update(key(KeyCode::End));
    assert_eq!(a.overlay_scroll, total - shown);
    a.update(Msg::Resize(120, 40));
    let (total, shown) = a.overlay_extent().unwrap();
    assert_eq!(a.overlay_scroll, total.saturating_sub(shown), "clamped on resize");
    assert_eq!(a.panes.outgoing.table.selected, 0, "the rows underneath stay put");
}

#[test]
fn the_prompt_edits_like_a_line_editor_at_80x24() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let k = |c: KeyCode, m: KeyModifiers| Msg::Key(KeyEvent::new(c, m));
    let none = KeyModifiers::NONE;
    let ctrl = KeyModifiers::CONTROL;
    let mut a = loaded(false);
    a.update(k(KeyCode::Char(':'), none));
    for c in "outgoing failed".chars() {
        a.update(k(KeyCode::Char(c), none));
    }
    a.update(k(KeyCode::Char('w'), ctrl));
    a.update(Msg::Paste("grants\n\u{1b}[2J".into()));
    a.update(k(KeyCode::Home, none));
    a.update(k(KeyCode::Right, none));
    a.update(k(KeyCode::Right, none));
    let screen = draw_with_cursor(&a, 80, 24);
    assert!(screen.contains(":outgoing grants [2J"), "{screen}");
    assert!(screen.ends_with("cursor at column 3, row 23\n"), "{screen}");
    insta::assert_snapshot!("prompt_mid_edit_80x24", screen);
    a.update(k(KeyCode::End, none));
    a.update(k(KeyCode::Char('u'), ctrl));
    for c in "quotes".chars() {
        a.update(k(KeyCode::Char(c), none));
    }
    a.update(k(KeyCode::Enter, none));
    assert_eq!(a.pane, Pane::Quotes);
    assert!(
        a.update(Msg::Paste("ignored".into())).is_empty(),
        "no prompt: paste does nothing"
    );
}

/// A class of 30 in mid-flow: each seat a step further than the one before it (in fives), seat 1 paid twice.
fn class_of_thirty() -> Vec<crate::control::classroom::SeatProgress> {
    use crate::control::classroom::{Done, SeatProgress};
    let start = crate::clock::ts("2026-11-21T11:40:00Z");
    (1..=30u8)
        .map(|n| {
            let mut p = SeatProgress {
                seat: n,
                steps: [None; 6],
                approved_by_owner: 0,
                decide_by: Some(start + time::Duration::hours(1)),
                failed_sign_ins: 0,
                locked_out: false,
            };
            let taken = usize::from(n.div_ceil(5)).min(6);
            for (i, slot) in p.steps.iter_mut().enumerate().take(taken) {
                let secs = i64::from(n) * 11 + i64::try_from(i).unwrap() * 97;
                *slot = Some(Done {
                    first_at: start + time::Duration::seconds(secs),
                    count: if n == 1 && i == 5 { 2 } else { 1 },
                });
            }
            if taken >= 5 {
                p.approved_by_owner = 1;
            }
            p
        })
        .collect()
}

#[test]
fn the_classroom_of_thirty_at_both_sizes() {
    let mut a = App::new(info(), Keymap::default(), false, now());
    a.classroom = true;
    goto(&mut a, Pane::Classroom);
    insta::assert_snapshot!("classroom_empty_80x24", draw(&a, 80, 24));
    a.update(Msg::Reply(Reply::found(
        Pane::Classroom,
        Found::Classroom(class_of_thirty()),
    )));
    let small = draw(&a, 80, 24);
    assert!(
        small.contains("Classroom [5/30 paid] [5 waiting for their owner]"),
        "{small}"
    );
    insta::assert_snapshot!("classroom_loaded_80x24", small);
    insta::assert_snapshot!("classroom_loaded_120x40", draw(&a, 120, 40));
    // the cursor scrolls the seats below the fold into view, and the detail says who approved
    for _ in 0..27 {
        a.act(super::action::Action::Down);
    }
    insta::assert_snapshot!("classroom_scrolled_80x24", draw(&a, 80, 24));
    a.act(super::action::Action::Open);
    let detail = draw(&a, 120, 40);
    assert!(detail.contains("by the owner on the interaction page"), "{detail}");
    insta::assert_snapshot!("classroom_detail_120x40", detail);
}
