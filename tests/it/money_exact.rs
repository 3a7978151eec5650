//! Money is exact where assets, scales and receivers differ: each party gets exactly what it is owed, not
//! only balanced books.
//!
//! - A peer whose link is in another asset or scale: its packets are valued in the receiver's asset through
//!   the ASE's exchange (two transfers through the settlement accounts), the STREAM reply reports that value,
//!   the peer's account, position and credit limit are in the link's asset (no peer account in another one),
//!   a pair without a rate is refused with a final `F07` and nothing credited — for SPSP into a wallet and
//!   for an incoming payment, and across two desks (the sender's rate probe sees the real rate).
//! - A local payment whose receiver has less room than it buys debits only what it delivers and ends
//!   `receiver_completed` (fixed-send, fixed-receive and cross-currency).
//! - A payment planned through a peer that was re-created in another asset fails `peer_changed` and refunds.

use reqwest::Method;
use serde_json::{Value as Json, json};

use crate::{
    common::TestAse,
    engine::{assert_conserved, payer, usd},
    ilp_receiver::{CONFIG, Reply, Sender},
    ilp_sender::assert_balanced,
};

const SPSP: &str = "application/spsp4+json";

/// The one-desk config of `ilp_receiver` with the peer `sender` in `code`/`scale`, and `extra` appended.
fn desk(code: &str, scale: u8, extra: &str) -> String {
    CONFIG
        .replace("asset_code = \"USD\"", &format!("asset_code = \"{code}\""))
        .replace("asset_scale = 2", &format!("asset_scale = {scale}"))
        .replace("max_packet_amount = 5000", "max_packet_amount = 100000000000")
        + extra
}

/// SPSP credentials for `wallet`, and a sender to them valuing packets at `rate`.
async fn spsp_sender(ase: &TestAse, wallet: &str, rate: (u128, u128)) -> Sender {
    let creds: Json = ase
        .http
        .get(ase.url(&format!("/{wallet}")))
        .header("accept", SPSP)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut s = Sender::to(
        &ase.base,
        creds["destination_account"].as_str().unwrap(),
        creds["shared_secret"].as_str().unwrap(),
    );
    s.rate = rate;
    s
}

/// One fulfillable money packet of `amount` (link units) asking at least `min` (receiver units).
async fn money(s: &mut Sender, amount: u64, min: u64) -> Reply {
    s.send(
        amount,
        min,
        vec![opdesk::ilp::Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }],
        true,
    )
    .await
}

/// The ledger's accounts of `kind`, as (asset code, scale, balance).
async fn accounts(ase: &TestAse, kind: &str) -> Vec<(String, u64, i64)> {
    let (_, balances) = ase.admin(Method::GET, "/balances", None).await;
    balances
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["kind"] == kind)
        .map(|b| {
            (
                b["assetCode"].as_str().unwrap().to_owned(),
                b["assetScale"].as_u64().unwrap(),
                b["balance"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn peer(ase: &TestAse, name: &str) -> Json {
    let (s, p) = ase.admin(Method::GET, &format!("/peers/{name}"), None).await;
    assert_eq!(s, 200, "{p}");
    p
}

#[tokio::test]
async fn a_eur_peer_pays_a_usd_wallet_at_the_rate_and_its_credit_limit_holds_in_eur() {
    let ase = TestAse::spawn_with(&desk("EUR", 2, "\n[rates]\n\"EUR:USD\" = \"1.25\"\n")).await;
    let (s, p) = ase
        .admin(Method::PATCH, "/peers/sender", Some(r#"{"creditLimit":"100"}"#))
        .await;
    assert_eq!(s, 200, "{p}");
    let bob = ase.balance("bob").await;
    let settled = accounts(&ase, "settlement").await;

    // 0.60 EUR is worth 0.75 USD: bob gets that, the reply says so, the peer owes 0.60 EUR
    let mut s = spsp_sender(&ase, "bob", (125, 100)).await;
    s.connect().await;
    let r = money(&mut s, 60, 0).await;
    assert!(matches!(r, Reply::Fulfill(_)), "{r:?}");
    assert_eq!(ase.balance("bob").await, bob + 75);
    // a sender's minimum is in the receiver's asset: 0.76 USD is more than 0.60 EUR buys
    let r = money(&mut s, 60, 76).await;
    assert!(matches!(r, Reply::Reject(..)), "{r:?}");
    assert_eq!(ase.balance("bob").await, bob + 75, "nothing credited below the minimum");
    // another 0.60 EUR would take the peer to 1.20 EUR owed, past its limit of 1.00 EUR: T04, nothing moves
    let r = money(&mut s, 60, 0).await;
    assert_eq!(
        r.code(),
        Some(opdesk::ilp::ErrorCode::T04_INSUFFICIENT_LIQUIDITY),
        "{r:?}"
    );
    assert_eq!(ase.balance("bob").await, bob + 75);
    let p = peer(&ase, "sender").await;
    assert_eq!(p["creditUsed"], 60, "{p}");

    // an incoming payment in USD through the same link: 0.40 EUR → 0.50 USD, the payment's total in USD
    let payer = payer(&ase).await;
    let ip = payer.incoming(&ase, "bob", Some(usd("50")), json!({})).await;
    let mut s = Sender::to(
        &ase.base,
        ip["methods"][0]["ilpAddress"].as_str().unwrap(),
        ip["methods"][0]["sharedSecret"].as_str().unwrap(),
    );
    s.rate = (125, 100);
    let r = money(&mut s, 40, 50).await;
    assert!(matches!(r, Reply::Fulfill(_)), "{r:?}");
    let got = payer.get(ip["id"].as_str().unwrap(), &payer.incoming).await;
    assert_eq!(got["receivedAmount"], usd("50"), "{got}");
    assert_eq!(got["completed"], true, "{got}");
    assert_eq!(ase.balance("bob").await, bob + 125);

    // the books: the peer's account only in EUR (−1.00), the exchange on the settlement accounts
    assert_eq!(accounts(&ase, "peer").await, vec![("EUR".to_owned(), 2, -100)]);
    let moved = |code: &str, now: &[(String, u64, i64)]| {
        let of = |v: &[(String, u64, i64)]| v.iter().filter(|a| a.0 == code).map(|a| a.2).sum::<i64>();
        of(now) - of(&settled)
    };
    let settlement = accounts(&ase, "settlement").await;
    assert_eq!(moved("EUR", &settlement), 100, "{settlement:?}");
    assert_eq!(moved("USD", &settlement), -125, "{settlement:?}");
    assert_eq!(peer(&ase, "sender").await["creditUsed"], 100);
    assert_balanced(&ase).await;
}

#[tokio::test]
async fn a_usd_peer_at_scale_9_pays_nano_dollars_as_nano_dollars() {
    let ase = TestAse::spawn_with(&desk("USD", 9, "")).await;
    let bob = ase.balance("bob").await;
    let mut s = spsp_sender(&ase, "bob", (1, 10_000_000)).await;
    s.connect().await;
    // 1000 nano-dollars are worth nothing in cents: refused, never fulfilled for nothing
    let r = money(&mut s, 1000, 0).await;
    assert!(matches!(r, Reply::Reject(..)), "{r:?}");
    assert_eq!(ase.balance("bob").await, bob);
    // 0.105 USD in nano-dollars: 10 cents credited, the half cent stays with the ASE
    let r = money(&mut s, 105_000_000, 10).await;
    assert!(matches!(r, Reply::Fulfill(_)), "{r:?}");
    assert_eq!(ase.balance("bob").await, bob + 10);
    assert_eq!(accounts(&ase, "peer").await, vec![("USD".to_owned(), 9, -105_000_000)]);
    assert_balanced(&ase).await;
}

#[tokio::test]
async fn a_pair_without_a_rate_is_refused_for_good_and_says_why() {
    let ase = TestAse::spawn_with(&desk("GBP", 2, "")).await;
    let bob = ase.balance("bob").await;
    let mut s = spsp_sender(&ase, "bob", (1, 1)).await;
    let r = money(&mut s, 100, 0).await;
    assert_eq!(r.code(), Some(opdesk::ilp::ErrorCode::F07_CANNOT_RECEIVE), "{r:?}");
    if let Reply::Reject(reject, _) = &r {
        assert!(reject.message.contains("no exchange rate from GBP"), "{reject:?}");
    }
    assert_eq!(ase.balance("bob").await, bob);
    assert!(accounts(&ase, "peer").await.iter().all(|(_, _, b)| *b == 0));
    let p = peer(&ase, "sender").await;
    assert!(p.to_string().contains("F07"), "the peer's last reject says why: {p}");
    // the Overview's recent failures (what a console reads) and a metric say it too
    let (status, o) = ase
        .admin(Method::POST, "/queries", Some(r#"{"query":"overview"}"#))
        .await;
    assert_eq!(status, 200, "{o}");
    let rejected = &o["value"]["activity"]["rejectedPackets"][0];
    assert_eq!(
        (rejected["peer"].as_str(), rejected["code"].as_str()),
        (Some("sender"), Some("F07")),
        "{o}"
    );
    assert!(
        rejected["message"]
            .as_str()
            .unwrap()
            .contains("no exchange rate from GBP"),
        "{o}"
    );
    let metrics = ase
        .http
        .get(ase.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = r#"opdesk_ilp_rejects_total{direction="in",code="F07"} 1"#;
    assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    assert_balanced(&ase).await;
}

/// bob's incoming payment of 10.00 (USD, or EUR for carol) is paid by two quotes of 6.00 each: the second
/// delivers the 4.00 left and debits only what 4.00 costs at its own price, then fails `receiver_completed`.
async fn two_quotes_into_ten(wallet: &str, amount: fn(&str) -> Json, by: &str) {
    let ase = TestAse::spawn().await;
    let p = payer(&ase).await;
    let ip = p.incoming(&ase, wallet, Some(amount("1000")), json!({})).await;
    let id = ip["id"].as_str().unwrap();
    let six = |a: &str| if by == "debitAmount" { usd(a) } else { amount(a) };
    let q1 = p.quote(&ase, id, json!({ by: six("600") })).await;
    let q2 = p.quote(&ase, id, json!({ by: six("600") })).await;
    let alice = ase.balance("alice").await;
    let receiver = ase.balance(wallet).await;
    let first = p.pay(&ase, &q1).await;
    assert_eq!(first["state"], "completed", "{first}");
    let d1: i64 = q1["debitAmount"]["value"].as_str().unwrap().parse().unwrap();
    let r1: i64 = q1["receiveAmount"]["value"].as_str().unwrap().parse().unwrap();
    let second = p.pay(&ase, &q2).await;
    assert_eq!(second["state"], "failed", "{second}");
    assert_eq!(second["failureReason"], "receiver_completed", "{second}");
    let d2: i64 = q2["debitAmount"]["value"].as_str().unwrap().parse().unwrap();
    let r2: i64 = q2["receiveAmount"]["value"].as_str().unwrap().parse().unwrap();
    let left = 1000 - r1;
    assert!(left < r2, "the second quote buys more than is left");
    // what the delivered part costs at the second quote's price, rounded up
    let costs = (left * d2 + r2 - 1) / r2;
    assert_eq!(second["sentAmount"]["value"], costs.to_string(), "{second}");
    assert_eq!(ase.balance(wallet).await, receiver + 1000);
    assert_eq!(
        ase.balance("alice").await,
        alice - d1 - costs,
        "alice paid for what bob got, no more"
    );
    let inc = p.get(id, &p.incoming).await;
    assert_eq!(inc["receivedAmount"], amount("1000"));
    assert_conserved(&ase).await;
}

fn eur(v: &str) -> Json {
    json!({"value": v, "assetCode": "EUR", "assetScale": 2})
}

#[tokio::test]
async fn a_fixed_send_payment_into_a_partly_paid_receiver_debits_only_what_it_delivers() {
    two_quotes_into_ten("bob", usd, "debitAmount").await;
}

#[tokio::test]
async fn a_fixed_receive_payment_into_a_partly_paid_receiver_debits_only_what_it_delivers() {
    two_quotes_into_ten("bob", usd, "receiveAmount").await;
}

#[tokio::test]
async fn a_cross_currency_payment_into_a_partly_paid_receiver_debits_only_what_it_delivers() {
    two_quotes_into_ten("carol", eur, "receiveAmount").await;
}

/// Two desks peered over a EUR link: alice@A (USD) pays bob@B's incoming payment of 10.00 USD. A converts
/// USD → EUR itself; B values the EUR packets in USD at its own rate and says so in its replies, so A's
/// probe sees the real rate. bob gets exactly 10.00, alice pays exactly what was sent, the EUR that left A
/// is the EUR that reached B, and B's peer account moves only in EUR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_desks_over_a_eur_link_pay_exactly_what_the_receiver_is_owed() {
    use crate::ilp_sender::{bob_receiver, config, dir, free, pay_quote, quote_receiver};
    let (a_addr, b_addr) = (free(), free());
    let eur = |cfg: String| cfg.replace("asset_code = \"USD\"", "asset_code = \"EUR\"");
    let a_cfg = eur(config("desk-a", "desk-b", b_addr.port(), "b-to-a", "a-to-b", 100_000));
    let b_cfg = eur(config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000))
        + "\n[rates]\n\"EUR:USD\" = \"1.25\"\n";
    let a = TestAse::spawn_in(dir(&a_cfg), Some(a_addr)).await;
    let b = TestAse::spawn_in(dir(&b_cfg), Some(b_addr)).await;
    let a_client = a.demo_client().await;
    let b_client = b.demo_client().await;
    let b_settled = accounts(&b, "settlement").await;

    let receiver = bob_receiver(&b, &b_client, Some(1000)).await;
    let q = quote_receiver(&a, &a_client, &receiver).await;
    assert_eq!(q["receiveAmount"], usd("1000"), "{q}");
    let alice = a.balance("alice").await;
    let bob = b.balance("bob").await;
    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    let sent: i64 = done["sentAmount"]["value"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        a.balance("alice").await,
        alice - sent,
        "alice paid what was sent: {done}"
    );
    assert_eq!(b.balance("bob").await, bob + 1000, "bob got exactly 10.00");

    let a_peer = accounts(&a, "peer").await;
    let b_peer = accounts(&b, "peer").await;
    assert!(
        b_peer.iter().all(|(code, scale, _)| code == "EUR" && *scale == 2),
        "{b_peer:?}"
    );
    assert!(
        a_peer.iter().all(|(code, scale, _)| code == "EUR" && *scale == 2),
        "{a_peer:?}"
    );
    let carried: i64 = a_peer.iter().map(|x| x.2).sum();
    assert_eq!(
        b_peer.iter().map(|x| x.2).sum::<i64>(),
        -carried,
        "the EUR that left A reached B"
    );
    // B's exchange: the EUR in bought the 10.00 USD out at 1.25 (rounded down per packet, for B)
    let moved = |code: &str, now: &[(String, u64, i64)]| {
        let of = |v: &[(String, u64, i64)]| v.iter().filter(|x| x.0 == code).map(|x| x.2).sum::<i64>();
        of(now) - of(&b_settled)
    };
    let b_settlement = accounts(&b, "settlement").await;
    assert_eq!(moved("USD", &b_settlement), -1000, "{b_settlement:?}");
    assert_eq!(moved("EUR", &b_settlement), carried, "{b_settlement:?}");
    assert!(carried * 125 >= 100_000, "{carried} EUR cents buy 10.00 USD at 1.25");
    assert!(
        carried <= 810,
        "the sender saw the real rate and sent about 8.00 EUR, not 10: {carried}"
    );
    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

/// A quote planned through a USD/9 peer, the peer removed: adding it back as USD/2 is refused while the quote
/// may still be paid; added back as USD/9, the quote pays as planned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_cannot_come_back_in_another_scale_while_a_quote_plans_through_it() {
    use crate::ilp_sender::{bob_receiver, config, dir, free, pay_quote, quote_receiver};
    let (a_addr, b_addr) = (free(), free());
    let a = TestAse::spawn_in(dir("[ilp]\naddress = \"test.desk-a\"\n"), Some(a_addr)).await;
    let b_cfg = config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000_000_000)
        .replace("asset_scale = 2", "asset_scale = 9");
    let b = TestAse::spawn_in(dir(&b_cfg), Some(b_addr)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let add = |scale: u8| {
        format!(
            r#"{{"name":"desk-b","assetCode":"USD","assetScale":{scale},"ilpAddress":"test.desk-b","incomingTokens":["b-to-a"],"outgoingEndpoint":"http://{b_addr}/ilp","outgoingToken":"a-to-b"}}"#
        )
    };
    let (s, p) = a.admin(Method::POST, "/peers", Some(&add(9))).await;
    assert_eq!(s, 201, "{p}");
    let receiver = bob_receiver(&b, &b_client, Some(100)).await;
    let q = quote_receiver(&a, &a_client, &receiver).await;

    let (s, _) = a.admin(Method::DELETE, "/peers/desk-b", None).await;
    assert_eq!(s, 204);
    let (s, p) = a.admin(Method::POST, "/peers", Some(&add(2))).await;
    assert_eq!(s, 409, "{p}");
    assert!(p.to_string().contains("plan to pay through peer"), "{p}");
    let (s, p) = a.admin(Method::POST, "/peers", Some(&add(9))).await;
    assert_eq!(s, 201, "{p}");
    let bob = b.balance("bob").await;
    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(b.balance("bob").await, bob + 100);
    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

/// A quote planned through a config peer at USD/9, the peer's `[[ilp.peers]]` edited to USD/2 and the desk
/// restarted: paying the old quote sends nothing through the changed link, fails `peer_changed` and gives
/// alice everything back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_planned_through_a_peer_since_edited_to_another_scale_fails_peer_changed() {
    use crate::ilp_sender::{bob_receiver, config, dir, free, pay_quote, quote_receiver};
    let (a_addr, b_addr) = (free(), free());
    let nano = |cfg: String| cfg.replace("asset_scale = 2", "asset_scale = 9");
    let a_cfg = config("desk-a", "desk-b", b_addr.port(), "b-to-a", "a-to-b", 100_000_000_000);
    let a = TestAse::spawn_in(dir(&nano(a_cfg.clone())), Some(a_addr)).await;
    let b_cfg = config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000_000_000);
    let b = TestAse::spawn_in(dir(&nano(b_cfg)), Some(b_addr)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let receiver = bob_receiver(&b, &b_client, Some(100)).await;
    let q = quote_receiver(&a, &a_client, &receiver).await;

    let (a_dir, a_addr) = a.stop().await;
    // (the same database on PostgreSQL: the store table the suite wrote stays)
    let edited = format!("{a_cfg}\n{}", crate::common::store_config(a_dir.path()));
    std::fs::write(a_dir.path().join("config.toml"), edited).unwrap();
    let a = TestAse::spawn_in(a_dir, Some(a_addr)).await;
    let a_client = a.demo_client().await;
    let alice = a.balance("alice").await;
    let bob = b.balance("bob").await;
    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(done["failureReason"], "peer_changed", "{done}");
    assert_eq!(a.balance("alice").await, alice, "everything went back to alice");
    assert_eq!(b.balance("bob").await, bob, "nothing went out");
    assert!(accounts(&a, "peer").await.iter().all(|x| x.2 == 0));
    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

/// Fixed-send over ILP spends its debit amount: alice@A sends 10.00 USD to bob@B's open incoming payment; the
/// quote promises what 10.00 buys at the minimum rate, the payment sends all of it, bob gets what it bought
/// at the real (1:1) rate, and the completed payment shows `sentAmount` = `debitAmount`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_send_over_ilp_sends_its_whole_debit_amount() {
    use crate::ilp_sender::{bob_receiver, pair, pay_quote, quote};
    let (a, b) = pair(300).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let receiver = bob_receiver(&b, &b_client, None).await;
    let body =
        json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp", "debitAmount": usd("1000")});
    let q = quote(&a, &a_client, &body).await;
    assert_eq!(q["receiveAmount"], usd("990"), "the minimum rate 0.99: {q}");
    let (alice, bob) = (a.balance("alice").await, b.balance("bob").await);
    let done = pay_quote(&a, &a_client, &q).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["sentAmount"], usd("1000"), "{done}");
    assert_eq!(done["debitAmount"], usd("1000"), "{done}");
    assert_eq!(a.balance("alice").await, alice - 1000);
    assert_eq!(
        b.balance("bob").await,
        bob + 1000,
        "bob got what 10.00 buys on a 1:1 path"
    );
    let public: Json = b.http.get(&receiver).send().await.unwrap().json().await.unwrap();
    assert_eq!(public["receivedAmount"], usd("1000"), "{public}");
    assert_balanced(&a).await;
    assert_balanced(&b).await;
}

/// `[rates]` listing both directions of a pair (a spread): a fixed-receive quote prices through the pair the
/// money moves through, never cheaper than a fixed-send quote, so round trips move nothing out of the ASE.
#[tokio::test]
async fn a_rates_table_with_both_directions_quotes_each_way_through_its_own_pair() {
    let ase = TestAse::spawn_with("[rates]\n\"USD:EUR\" = \"0.90\"\n\"EUR:USD\" = \"1.05\"\n").await;
    let p = payer(&ase).await;
    let ip = p.incoming(&ase, "carol", None, json!({})).await;
    let id = ip["id"].as_str().unwrap();
    let send = p.quote(&ase, id, json!({"debitAmount": usd("1050")})).await;
    assert_eq!(send["receiveAmount"], eur("945"), "{send}");
    // 10.00 EUR bought with USD at 0.90 costs 11.12 USD (it cost 10.50 by the reverse entry before)
    let receive = p.quote(&ase, id, json!({"receiveAmount": eur("1000")})).await;
    assert_eq!(receive["debitAmount"], usd("1112"), "{receive}");
    let alice = ase.balance("alice").await;
    let carol = ase.balance("carol").await;
    let done = p.pay(&ase, &receive).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(ase.balance("alice").await, alice - 1112);
    assert_eq!(ase.balance("carol").await, carol + 1000);
    assert_balanced(&ase).await;
}

/// A removed peer that still holds money in its old link (here its liquidity, USD/9) cannot come back in
/// another scale: its position there would be read in the new link's units. Added back in USD/9 and emptied,
/// it may leave and come back as USD/2, without the credit limit it had in nano-dollars; no peer account in
/// another asset holds anything.
#[tokio::test]
async fn a_peer_holding_money_in_its_old_link_cannot_come_back_in_another_asset() {
    let ase = TestAse::spawn().await;
    let add = |scale: u8| {
        format!(
            r#"{{"name":"old","assetCode":"USD","assetScale":{scale},"ilpAddress":"test.old","incomingTokens":["old-token"]}}"#
        )
    };
    let ase = &ase;
    let liquidity = |body: Json| async move {
        let (s, p) = ase
            .admin(Method::POST, "/peers/old/liquidity", Some(&body.to_string()))
            .await;
        assert_eq!(s, 200, "{p}");
    };
    let (s, p) = ase.admin(Method::POST, "/peers", Some(&add(9))).await;
    assert_eq!(s, 201, "{p}");
    liquidity(json!({"deposit": "5000000000", "transferId": "old-in"})).await;
    let (s, p) = ase
        .admin(Method::PATCH, "/peers/old", Some(r#"{"creditLimit":"100000000000"}"#))
        .await;
    assert_eq!(s, 200, "{p}");
    let (s, _) = ase.admin(Method::DELETE, "/peers/old", None).await;
    assert_eq!(s, 204);

    let (s, p) = ase.admin(Method::POST, "/peers", Some(&add(2))).await;
    assert_eq!(s, 409, "{p}");
    assert!(p.to_string().contains("still holds 5.000000000 USD"), "{p}");
    assert_eq!(peer_status(ase, "old").await, 404, "nothing was added");

    let (s, p) = ase.admin(Method::POST, "/peers", Some(&add(9))).await;
    assert_eq!(s, 201, "{p}");
    liquidity(json!({"withdraw": "5000000000", "transferId": "old-out"})).await;
    let (s, _) = ase.admin(Method::DELETE, "/peers/old", None).await;
    assert_eq!(s, 204);
    let (s, p) = ase.admin(Method::POST, "/peers", Some(&add(2))).await;
    assert_eq!(s, 201, "{p}");
    let p = peer(ase, "old").await;
    assert!(p["creditLimit"].is_null(), "the nano-dollar limit is gone: {p}");
    assert_eq!(
        (p["assetScale"].as_u64(), p["liquidity"].as_i64()),
        (Some(2), Some(0)),
        "{p}"
    );
    for kind in ["peer", "liquidity"] {
        let held: Vec<_> = accounts(ase, kind).await.into_iter().filter(|a| a.2 != 0).collect();
        assert!(held.is_empty(), "{kind}: {held:?}");
    }
}

async fn peer_status(ase: &TestAse, name: &str) -> u16 {
    ase.admin(Method::GET, &format!("/peers/{name}"), None).await.0
}

/// A config peer whose `[[ilp.peers]]` asset is edited while its old link still holds money, or while its
/// credit limit counts in the old link's units: the desk refuses to start, saying which and what to do.
#[tokio::test]
async fn a_config_peer_edited_to_another_asset_while_it_holds_money_there_is_refused_at_start() {
    let ase = TestAse::spawn_with(&desk("USD", 9, "")).await;
    let (s, p) = ase
        .admin(
            Method::POST,
            "/peers/sender/liquidity",
            Some(r#"{"deposit":"7000000000","transferId":"cfg-in"}"#),
        )
        .await;
    assert_eq!(s, 200, "{p}");
    let (dir, addr) = ase.stop().await;
    let edited = |dir: &std::path::Path| {
        let cfg = format!("{}\n{}", desk("USD", 2, ""), crate::common::store_config(dir));
        std::fs::write(dir.join("config.toml"), cfg).unwrap();
    };
    let refused = |dir: std::path::PathBuf| async move {
        let settings = opdesk::settings::Settings::for_data_dir(&dir, addr).unwrap();
        match opdesk::app::AppCore::open(settings).await {
            Ok(_) => panic!("the desk started with the peer's old money read in new units"),
            Err(e) => format!("{e:#}"),
        }
    };
    edited(dir.path());
    let why = refused(dir.path().to_owned()).await;
    assert!(why.contains("still holds 7.000000000 USD"), "{why}");

    // back in USD/9, withdrawn, with a credit limit in nano-dollars: the edit is refused for the limit
    std::fs::write(
        dir.path().join("config.toml"),
        format!("{}\n{}", desk("USD", 9, ""), crate::common::store_config(dir.path())),
    )
    .unwrap();
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    let (s, p) = ase
        .admin(
            Method::POST,
            "/peers/sender/liquidity",
            Some(r#"{"withdraw":"7000000000","transferId":"cfg-out"}"#),
        )
        .await;
    assert_eq!(s, 200, "{p}");
    let (s, p) = ase
        .admin(Method::PATCH, "/peers/sender", Some(r#"{"creditLimit":"100"}"#))
        .await;
    assert_eq!(s, 200, "{p}");
    let (dir, _) = ase.stop().await;
    edited(dir.path());
    let why = refused(dir.path().to_owned()).await;
    assert!(why.contains("--no-credit-limit"), "{why}");
}

/// A remote fixed-send debit whose conversion into the link's units does not fit (USD/2 into a USD/9 link) is
/// refused as too large; it was called too small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_debit_too_large_for_the_link_is_refused_as_too_large() {
    use crate::ilp_sender::{bob_receiver, config, dir, free, grant};
    let (a_addr, b_addr) = (free(), free());
    let nano = |cfg: String| cfg.replace("asset_scale = 2", "asset_scale = 9");
    let a_cfg = config("desk-a", "desk-b", b_addr.port(), "b-to-a", "a-to-b", 100_000_000_000);
    let a = TestAse::spawn_in(dir(&nano(a_cfg)), Some(a_addr)).await;
    let b_cfg = config("desk-b", "desk-a", a_addr.port(), "a-to-b", "b-to-a", 100_000_000_000);
    let b = TestAse::spawn_in(dir(&nano(b_cfg)), Some(b_addr)).await;
    let (a_client, b_client) = (a.demo_client().await, b.demo_client().await);
    let receiver = bob_receiver(&b, &b_client, None).await;
    let token = grant(&a, &a_client, json!([{"type": "quote", "actions": ["create"]}])).await;
    let body = json!({"walletAddress": a.url("/alice"), "receiver": receiver, "method": "ilp",
        "debitAmount": usd("9223372036854775807")});
    let r = a_client
        .send(Method::POST, &a.url("/quotes"), Some(&token), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.to_string().contains("too large"), "{}", r.body);
    assert!(!r.body.to_string().contains("too small"), "{}", r.body);
}
