//! Thresholds against the ledger: crossings append one event in the transaction that crossed, recoveries
//! re-arm, and a value hovering around a threshold fires once per downward crossing after a recovery.

use super::*;
use crate::{
    ledger::{AccountKind, NewTransfer, ops},
    money::Value,
    store::{Connection, outbox},
};

fn now() -> OffsetDateTime {
    crate::clock::ts("2026-12-01T00:00:00.000Z")
}

fn usd() -> Asset {
    Asset {
        code: "USD".into(),
        scale: 2,
    }
}

fn db() -> Connection {
    let mut c = Connection::open_in_memory().unwrap();
    crate::store::migrations::migrate(&mut c).unwrap();
    c
}

/// A wallet `name` in USD; its account id.
fn wallet(c: &Connection, name: &str) -> String {
    let account = ops::create_account(c, AccountKind::Wallet, &usd(), now()).unwrap();
    c.execute(
        "INSERT INTO wallet_addresses (id, name, account_id, created_at) VALUES (?1, ?2, ?3, 't')",
        crate::store::db::params![format!("wa-{name}"), name, account],
    )
    .unwrap();
    account
}

fn settlement(c: &Connection) -> String {
    ops::settlement_account(c, &usd(), now()).unwrap()
}

fn transfer(c: &Connection, debit: &str, credit: &str, amount: u64, pending: bool) -> String {
    let id = crate::ids::new_id();
    let t = NewTransfer {
        id: id.clone(),
        debit: debit.into(),
        credit: credit.into(),
        amount: Value::new(amount).unwrap(),
        pending,
        kind: "payment".into(),
        memo: None,
    };
    ops::create_transfer(c, &t, now()).unwrap();
    id
}

/// The threshold events in the outbox: (type, value, threshold).
fn alerts(c: &Connection) -> Vec<(String, i64, i64)> {
    outbox::after(c, 0, 100_000)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r.event {
            DomainEvent::WalletBalanceLow { balance, threshold, .. } => {
                Some(("walletBalanceLow".into(), balance, threshold))
            }
            DomainEvent::PeerLiquidityLow {
                liquidity, threshold, ..
            } => Some(("peerLiquidityLow".into(), liquidity, threshold)),
            DomainEvent::PeerCreditHigh {
                credit_used, threshold, ..
            } => Some(("peerCreditHigh".into(), credit_used, threshold)),
            _ => None,
        })
        .collect()
}

fn set_threshold(c: &Connection, measure: Measure, subject: &str, t: Option<i64>) -> Option<ThresholdView> {
    set(c, measure, subject, &usd(), t, now()).unwrap().0
}

#[test]
fn a_payment_that_crosses_emits_one_event_and_a_top_up_rearms_it() {
    let c = db();
    let (w, s) = (wallet(&c, "alice"), settlement(&c));
    transfer(&c, &s, &w, 1000, false);
    assert_eq!(
        set_threshold(&c, Measure::WalletBalance, "alice", Some(500))
            .unwrap()
            .value,
        Some(1000)
    );
    for _ in 0..9 {
        transfer(&c, &w, &s, 100, false);
    }
    // 1000 → 100: crossed once, at 400
    assert_eq!(alerts(&c), vec![("walletBalanceLow".into(), 400, 500)]);
    // topped up over it (no event), drained again: one more
    transfer(&c, &s, &w, 900, false);
    assert!(!all(&c).unwrap()[0].crossed);
    assert_eq!(alerts(&c).len(), 1);
    transfer(&c, &w, &s, 600, false);
    assert_eq!(alerts(&c).len(), 2);
    assert_eq!(alerts(&c)[1], ("walletBalanceLow".into(), 400, 500));
    // exactly at the threshold is back over it (no event); a cent less is under it again
    transfer(&c, &s, &w, 100, false);
    assert!(!all(&c).unwrap()[0].crossed);
    assert_eq!(alerts(&c).len(), 2);
    transfer(&c, &w, &s, 1, false);
    assert_eq!(alerts(&c)[2], ("walletBalanceLow".into(), 499, 500));
}

#[test]
fn a_reservation_counts_and_its_void_recovers() {
    let c = db();
    let (w, s) = (wallet(&c, "alice"), settlement(&c));
    transfer(&c, &s, &w, 1000, false);
    set_threshold(&c, Measure::WalletBalance, "alice", Some(500));
    let res = transfer(&c, &w, &s, 700, true);
    assert_eq!(alerts(&c), vec![("walletBalanceLow".into(), 300, 500)]);
    ops::void(&c, &res, now()).unwrap();
    assert!(!all(&c).unwrap()[0].crossed);
    let res = transfer(&c, &w, &s, 700, true);
    ops::post(&c, &res, None, now()).unwrap();
    assert_eq!(alerts(&c).len(), 2);
}

/// A model of the rule: an event per step that takes the value past the threshold while not crossed.
fn model(values: &[i64], threshold: i64, start_crossed: bool) -> usize {
    let mut crossed = start_crossed;
    let mut events = 0;
    for &v in values {
        let past = v < threshold;
        if past && !crossed {
            events += 1;
        }
        crossed = past;
    }
    events
}

#[test]
fn two_hundred_payments_hovering_around_a_threshold_fire_once_per_crossing_after_a_recovery() {
    let c = db();
    let (w, s) = (wallet(&c, "alice"), settlement(&c));
    transfer(&c, &s, &w, 10_000, false);
    set_threshold(&c, Measure::WalletBalance, "alice", Some(10_000));
    let mut balance = 10_000_i64;
    let mut values = Vec::new();
    // a deterministic walk: 200 payments in and out of 1 to 7 cents around the threshold
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let amount = 1 + (x % 7);
        let amount_i = i64::try_from(amount).unwrap();
        // over the threshold: always down; under it: down one time in three, else up
        if balance >= 10_000 || x.is_multiple_of(3) {
            transfer(&c, &w, &s, amount, false);
            balance -= amount_i;
        } else {
            transfer(&c, &s, &w, amount, false);
            balance += amount_i;
        }
        values.push(balance);
    }
    let want = model(&values, 10_000, false);
    let got = alerts(&c).len();
    assert_eq!(got, want, "one event per downward crossing after a recovery");
    // the bound: never more than one per recovery, so at most half the payments
    assert!(got <= 100 && got > 5, "{got}");
}

/// A peer with sending limited (as after its first liquidity deposit) and `liquidity` deposited.
fn peer(c: &Connection, name: &str, liquidity: u64) -> (String, String) {
    let s = settlement(c);
    let l = ops::liquidity_account(c, name, &usd(), now()).unwrap();
    let p = ops::peer_account(c, name, &usd(), now()).unwrap();
    crate::store::peers::set_send_limited(c, name, now()).unwrap();
    transfer(c, &s, &l, liquidity, false);
    (p, s)
}

#[test]
fn a_peers_liquidity_and_credit_fire_in_the_payments_transaction() {
    let c = db();
    let (p, s) = peer(&c, "happy-life", 1000);
    set_threshold(&c, Measure::PeerLiquidity, "happy-life", Some(300));
    set_threshold(&c, Measure::PeerCredit, "happy-life", Some(200));
    // sending through it: we owe it more, less room
    for _ in 0..8 {
        transfer(&c, &s, &p, 100, false);
    }
    assert_eq!(alerts(&c), vec![("peerLiquidityLow".into(), 200, 300)]);
    // a settlement we paid: room again; spent again: one more
    transfer(&c, &p, &s, 800, false);
    transfer(&c, &s, &p, 800, false);
    assert_eq!(alerts(&c).len(), 2);
    // it brings us money: it owes us; past 200 once
    transfer(&c, &p, &s, 800, false);
    for _ in 0..5 {
        transfer(&c, &p, &s, 100, false);
    }
    assert_eq!(alerts(&c)[2], ("peerCreditHigh".into(), 300, 200));
    assert_eq!(alerts(&c).len(), 3);
}

#[test]
fn setting_a_threshold_past_the_value_fires_once_and_setting_it_again_does_not() {
    let c = db();
    let (w, s) = (wallet(&c, "alice"), settlement(&c));
    transfer(&c, &s, &w, 100, false);
    let v = set_threshold(&c, Measure::WalletBalance, "alice", Some(500)).unwrap();
    assert!(v.crossed);
    assert_eq!(alerts(&c).len(), 1);
    // config.toml applies the same threshold at every start: nothing fires again
    set_threshold(&c, Measure::WalletBalance, "alice", Some(500));
    assert_eq!(alerts(&c).len(), 1);
    // removed: gone, with its thresholdChanged
    assert!(set_threshold(&c, Measure::WalletBalance, "alice", None).is_none());
    assert!(all(&c).unwrap().is_empty());
    let changed = outbox::after(&c, 0, 100)
        .unwrap()
        .into_iter()
        .filter(|r| r.event.kind() == "thresholdChanged")
        .count();
    assert_eq!(changed, 2);
}

#[test]
fn a_peer_that_is_not_liquidity_limited_has_no_liquidity_to_run_low() {
    let c = db();
    let s = settlement(&c);
    let p = ops::peer_account(&c, "open", &usd(), now()).unwrap();
    let v = set_threshold(&c, Measure::PeerLiquidity, "open", Some(300)).unwrap();
    assert_eq!(v.value, None);
    transfer(&c, &s, &p, 1000, false);
    assert!(alerts(&c).is_empty());
}
