//! Property tests of the ledger rules on an in-memory store: random sequences of deposits, withdrawals,
//! transfers, reservations, posts, voids and replays keep every invariant after every step —
//! conservation per asset, no wallet overdraft, cached balances equal to the journal, every reservation
//! resolved at most once, idempotent transfer ids — and match a tiny reference model.

use std::collections::HashMap;

use opdesk::store::Connection;
use opdesk::{
    ledger::{self, AccountKind, LedgerError, NewTransfer},
    money::{Asset, Value},
    store,
};
use proptest::prelude::*;

const NOW: time::OffsetDateTime = time::macros::datetime!(2026-01-01 00:00:00 UTC);

#[derive(Debug, Clone)]
enum Op {
    Deposit {
        wallet: usize,
        amount: u64,
    },
    Withdraw {
        wallet: usize,
        amount: u64,
    },
    Transfer {
        from: usize,
        to: usize,
        amount: u64,
    },
    Reserve {
        from: usize,
        to: usize,
        amount: u64,
    },
    Post {
        reservation: usize,
        part: Option<u64>,
    },
    Void {
        reservation: usize,
    },
    /// Re-submit an earlier transfer id, same details or changed amount.
    Replay {
        transfer: usize,
        change: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let w = 0usize..4;
    let amt = prop_oneof![1u64..50, 1u64..5_000, Just(i64::MAX as u64)];
    prop_oneof![
        (w.clone(), amt.clone()).prop_map(|(wallet, amount)| Op::Deposit { wallet, amount }),
        (w.clone(), amt.clone()).prop_map(|(wallet, amount)| Op::Withdraw { wallet, amount }),
        (w.clone(), w.clone(), amt.clone()).prop_map(|(from, to, amount)| Op::Transfer { from, to, amount }),
        (w.clone(), w.clone(), amt).prop_map(|(from, to, amount)| Op::Reserve { from, to, amount }),
        (0usize..8, proptest::option::of(1u64..3_000)).prop_map(|(reservation, part)| Op::Post { reservation, part }),
        (0usize..8).prop_map(|reservation| Op::Void { reservation }),
        (0usize..16, any::<bool>()).prop_map(|(transfer, change)| Op::Replay { transfer, change }),
    ]
}

struct World {
    /// wallets 0..=2 are USD, 3 is EUR
    wallets: Vec<String>,
    assets: Vec<Asset>,
    settlement: HashMap<String, String>,
    reservations: Vec<(String, u64)>,
    transfers: Vec<NewTransfer>,
    /// model: (balance, pending_debits) per account id
    model: HashMap<String, (i128, i128)>,
    resolved: HashMap<String, bool>,
}

fn tx<T>(conn: &mut Connection, f: impl FnOnce(&Connection) -> Result<T, LedgerError>) -> Result<T, LedgerError> {
    let t = store::immediate(conn)?;
    let r = f(&t)?;
    t.commit()?;
    Ok(r)
}

/// An in-memory database with every migration applied.
fn schema() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    for sql in [
        include_str!("../../migrations/0001_init.sql"),
        include_str!("../../migrations/0002_gnap.sql"),
        include_str!("../../migrations/0003_payments.sql"),
        include_str!("../../migrations/0004_stream_plans.sql"),
        include_str!("../../migrations/0005_peers.sql"),
        include_str!("../../migrations/0006_stream_receipts.sql"),
        // every transfer looks for a threshold on the accounts it moved
        include_str!("../../migrations/0026_thresholds.sql"),
    ] {
        conn.execute_batch(sql).unwrap();
    }
    conn
}

fn setup(conn: &mut Connection) -> World {
    let usd = Asset::new("USD", 2).unwrap();
    let eur = Asset::new("EUR", 2).unwrap();
    let assets = vec![usd.clone(), usd.clone(), usd.clone(), eur.clone()];
    let mut wallets = vec![];
    let mut settlement = HashMap::new();
    let mut model = HashMap::new();
    for a in &assets {
        let id = tx(conn, |c| ledger::ops::create_account(c, AccountKind::Wallet, a, NOW)).unwrap();
        model.insert(id.clone(), (0, 0));
        wallets.push(id);
    }
    for a in [&usd, &eur] {
        let id = tx(conn, |c| ledger::ops::settlement_account(c, a, NOW)).unwrap();
        model.insert(id.clone(), (0, 0));
        settlement.insert(a.code.clone(), id);
    }
    World {
        wallets,
        assets,
        settlement,
        reservations: vec![],
        transfers: vec![],
        model,
        resolved: HashMap::new(),
    }
}

fn check_invariants(conn: &Connection, w: &World) {
    let accounts = store::ledger::accounts(conn).unwrap();
    let mut per_asset: HashMap<String, (i128, i128, i128)> = HashMap::new();
    for a in &accounts {
        let e = per_asset.entry(a.asset_code.clone()).or_default();
        e.0 += i128::from(a.balance);
        e.1 += i128::from(a.pending_debits);
        e.2 += i128::from(a.pending_credits);
        if a.kind == "wallet" {
            assert!(a.balance - a.pending_debits >= 0, "wallet overdrawn: {a:?}");
        }
        let (mb, mp) = w.model[&a.id];
        assert_eq!(
            (i128::from(a.balance), i128::from(a.pending_debits)),
            (mb, mp),
            "model mismatch for {a:?}"
        );
    }
    for (asset, (bal, pd, pc)) in per_asset {
        assert_eq!(bal, 0, "posted balances of {asset} do not sum to zero");
        assert_eq!(pd, pc, "pending debits and credits of {asset} differ");
    }
    assert!(
        ledger::audit(conn).unwrap().is_empty(),
        "cached balances differ from the journal"
    );
}

fn apply(conn: &mut Connection, w: &mut World, op: Op) {
    let new_id = || opdesk::ids::new_id();
    match op {
        Op::Deposit { wallet, amount } | Op::Withdraw { wallet, amount } => {
            let deposit = matches!(op, Op::Deposit { .. });
            let acct = w.wallets[wallet].clone();
            let settle = w.settlement[&w.assets[wallet].code].clone();
            let (debit, credit) = if deposit { (settle, acct) } else { (acct, settle) };
            transfer(conn, w, debit, credit, amount, false, new_id());
        }
        Op::Transfer { from, to, amount } | Op::Reserve { from, to, amount } => {
            let pending = matches!(op, Op::Reserve { .. });
            let id = new_id();
            let (debit, credit) = (w.wallets[from].clone(), w.wallets[to].clone());
            if transfer(conn, w, debit, credit, amount, pending, id.clone()) && pending {
                w.reservations.push((id, amount));
            }
        }
        Op::Post { reservation, .. } | Op::Void { reservation } if !w.reservations.is_empty() => {
            let (post, part) = match op {
                Op::Post { part, .. } => (true, part),
                _ => (false, None),
            };
            let (id, amount) = w.reservations[reservation % w.reservations.len()].clone();
            let r = tx(conn, |c| {
                if post {
                    ledger::ops::post(c, &id, part.map(|p| Value::new(p).unwrap()), NOW)
                } else {
                    ledger::ops::void(c, &id, NOW)
                }
            });
            let already = w.resolved.contains_key(&id);
            match r {
                Ok(row) => {
                    assert!(!already, "a reservation resolved twice");
                    w.resolved.insert(id.clone(), post);
                    let moved = i128::from(row.posted_amount.unwrap_or(0));
                    assert!(moved <= i128::from(amount as i64));
                    let (d, c) = (row.debit_account.clone(), row.credit_account.clone());
                    let amt = i128::from(amount);
                    w.model.get_mut(&d).unwrap().0 -= moved;
                    w.model.get_mut(&d).unwrap().1 -= amt;
                    w.model.get_mut(&c).unwrap().0 += moved;
                }
                Err(LedgerError::AlreadyResolved { .. }) => assert!(already),
                Err(LedgerError::PostExceedsReserved { .. }) => assert!(part.unwrap() > amount),
                // posting would take the credited balance past i64::MAX: refused, nothing written, still
                // pending (the invariants below check the books)
                Err(LedgerError::Money(_)) => assert!(
                    post && !already
                        && w.model
                            .values()
                            .any(|(balance, ..)| balance + i128::from(amount) > i128::from(i64::MAX)),
                    "an overflow refused a post that fits"
                ),
                Err(e) => panic!("unexpected {e}"),
            }
        }
        Op::Post { .. } | Op::Void { .. } => {}
        Op::Replay { transfer: i, change } if !w.transfers.is_empty() => {
            let mut t = w.transfers[i % w.transfers.len()].clone();
            if change {
                t.amount = Value::new(t.amount.get() % 1000 + 1).unwrap();
                if t.amount == w.transfers[i % w.transfers.len()].amount {
                    t.amount = Value::new(t.amount.get() + 1).unwrap();
                }
            }
            match tx(conn, |c| ledger::ops::create_transfer(c, &t, NOW)) {
                Ok((_, new)) => assert!(!new && !change, "a replay created money"),
                Err(LedgerError::Conflict(_)) => assert!(change),
                Err(e) => panic!("unexpected {e}"),
            }
        }
        Op::Replay { .. } => {}
    }
}

/// Creates a transfer and updates the model when it succeeds; returns success.
fn transfer(
    conn: &mut Connection,
    w: &mut World,
    debit: String,
    credit: String,
    amount: u64,
    pending: bool,
    id: String,
) -> bool {
    let Ok(value) = Value::new(amount) else {
        return false;
    };
    let t = NewTransfer {
        id,
        debit: debit.clone(),
        credit: credit.clone(),
        amount: value,
        pending,
        kind: "test".into(),
        memo: None,
    };
    let (db, dp) = w.model[&debit];
    let wallet_debit = w.wallets.contains(&debit);
    let same_asset = {
        let ai = |id: &String| {
            w.wallets
                .iter()
                .position(|x| x == id)
                .map(|i| w.assets[i].code.clone())
                .or_else(|| w.settlement.iter().find(|(_, v)| *v == id).map(|(k, _)| k.clone()))
        };
        ai(&debit) == ai(&credit)
    };
    let r = tx(conn, |c| ledger::ops::create_transfer(c, &t, NOW));
    let amt = i128::from(amount);
    match r {
        Ok((_, true)) => {
            assert!(debit != credit && same_asset);
            assert!(!wallet_debit || db - dp >= amt, "overdraft allowed");
            if pending {
                w.model.get_mut(&debit).unwrap().1 += amt;
            } else {
                w.model.get_mut(&debit).unwrap().0 -= amt;
                w.model.get_mut(&credit).unwrap().0 += amt;
            }
            w.transfers.push(t);
            true
        }
        Ok((_, false)) => panic!("fresh id reported as existing"),
        Err(LedgerError::SameAccount) => {
            assert_eq!(debit, credit);
            false
        }
        Err(LedgerError::AssetMismatch(..)) => {
            assert!(!same_asset);
            false
        }
        Err(LedgerError::InsufficientBalance { .. }) => {
            assert!(wallet_debit && db - dp < amt);
            false
        }
        Err(LedgerError::Money(_)) => false, // overflow of a settlement balance: refused, nothing written
        Err(e) => panic!("unexpected {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn ledger_invariants_hold_after_every_step(ops in proptest::collection::vec(op(), 1..60)) {
        let mut conn = schema();
        let mut w = setup(&mut conn);
        check_invariants(&conn, &w);
        for op in ops {
            apply(&mut conn, &mut w, op);
            check_invariants(&conn, &w);
        }
    }
}

#[test]
fn posted_and_voided_transfers_are_immutable_in_sql() {
    let mut conn = schema();
    let w = setup(&mut conn);
    let t = NewTransfer {
        id: "t1".into(),
        debit: w.settlement["USD"].clone(),
        credit: w.wallets[0].clone(),
        amount: Value::new(5).unwrap(),
        pending: false,
        kind: "deposit".into(),
        memo: None,
    };
    tx(&mut conn, |c| ledger::ops::create_transfer(c, &t, NOW)).unwrap();
    assert!(
        conn.execute("UPDATE transfers SET amount = 6 WHERE id = 't1'", [])
            .is_err()
    );
    assert!(conn.execute("DELETE FROM transfers WHERE id = 't1'", []).is_err());
    assert!(
        conn.execute("UPDATE accounts SET balance = -1 WHERE id = ?1", [&w.wallets[0]])
            .is_err(),
        "CHECK forbids overdraft"
    );
}

/// What a packet through a peer credits, across link assets and scales, receiver assets and scales, and a
/// rates table that lists both directions of a pair (a spread): every receiver gets exactly the packet's
/// value in its asset at the `link → receiver` rate (rounded down), every peer account moves only in its
/// link's asset by exactly what its packets paid, a pair without a rate writes nothing, and per asset *and
/// scale* the payers' loss equals the receivers' gain plus the ASE's exchange position.
mod peer_credits {
    use super::*;
    use opdesk::{ase::exchange::Inflow, rates::Rates};
    use std::collections::BTreeMap;

    fn assets() -> Vec<Asset> {
        [("USD", 2), ("USD", 9), ("EUR", 2), ("EUR", 0), ("GBP", 2), ("JPY", 0)]
            .iter()
            .map(|(c, s)| Asset::new(c, *s).unwrap())
            .collect()
    }

    fn rates(usd_eur: u32, eur_usd: Option<u32>) -> Rates {
        let mut table = BTreeMap::from([("USD:EUR".to_owned(), format!("0.{usd_eur:04}"))]);
        if let Some(r) = eur_usd {
            table.insert("EUR:USD".to_owned(), format!("1.{r:04}"));
        }
        table.insert("JPY:USD".to_owned(), "0.0067".to_owned());
        Rates::new(&table, &BTreeMap::new()).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn each_receiver_gets_the_value_and_each_peer_pays_in_its_own_asset(
            usd_eur in 5000u32..9999, eur_usd in proptest::option::of(0u32..3000),
            packets in proptest::collection::vec((0usize..3, 0usize..6, 0usize..6, 1u64..10_000_000_000), 1..24),
        ) {
            let rates = rates(usd_eur, eur_usd);
            let all = assets();
            let mut conn = schema();
            // one wallet per asset; three peers, each with its link asset fixed by its first packet
            let wallets: Vec<String> = all
                .iter()
                .map(|a| tx(&mut conn, |c| ledger::ops::create_account(c, AccountKind::Wallet, a, NOW)).unwrap())
                .collect();
            let mut links: HashMap<usize, Asset> = HashMap::new();
            let mut got = vec![0i128; all.len()];
            let mut paid: HashMap<(usize, Asset), i128> = HashMap::new();
            for (peer, link, to, amount) in packets {
                let link = links.entry(peer).or_insert_with(|| all[link].clone()).clone();
                let inflow = Inflow::new(link.clone(), amount, rates.clone());
                let name = format!("peer{peer}");
                let value = inflow.value_in(&all[to]);
                let r = tx(&mut conn, |c| {
                    let v = match &value {
                        Ok(v) if *v > 0 => Value::new(*v)?,
                        _ => return Ok(None),
                    };
                    ledger::ops::credit_from_peer(
                        c, &name, &link, Value::new(amount)?, &all[to], &wallets[to], v, "p".into(), NOW,
                    )
                    .map(Some)
                });
                match (r, &value) {
                    (Ok(Some(_)), Ok(v)) => {
                        got[to] += i128::from(*v);
                        *paid.entry((peer, link.clone())).or_default() += i128::from(amount);
                        if link == all[to] {
                            prop_assert_eq!(*v, amount, "within one asset and scale the packet is its value");
                        }
                    }
                    (Ok(None), Ok(0)) => {}
                    (Ok(None), Err(opdesk::rates::RateError::NoRate(..))) => {
                        prop_assert!(link.code != all[to].code, "a rate is only missing between codes");
                    }
                    (Ok(None), Err(_)) => {}
                    (Err(LedgerError::Money(_)), _) => {}
                    (r, v) => prop_assert!(false, "unexpected {r:?} for {v:?}"),
                }
            }
            let accounts = store::ledger::accounts(&conn).unwrap();
            let mut per_asset: HashMap<(String, u8), i128> = HashMap::new();
            for a in &accounts {
                *per_asset.entry((a.asset_code.clone(), a.asset_scale)).or_default() += i128::from(a.balance);
                if a.kind == "peer" {
                    let peer: usize = a.peer.as_deref().unwrap().trim_start_matches("peer").parse().unwrap();
                    let link = &links[&peer];
                    prop_assert_eq!((&a.asset_code, a.asset_scale), (&link.code, link.scale), "a peer account in its link's asset only");
                    prop_assert_eq!(i128::from(a.balance), -paid.get(&(peer, link.clone())).copied().unwrap_or(0));
                }
            }
            for (i, w) in wallets.iter().enumerate() {
                let a = accounts.iter().find(|a| &a.id == w).unwrap();
                prop_assert_eq!(i128::from(a.balance), got[i], "{} got exactly its packets' value", all[i]);
            }
            for (asset, sum) in per_asset {
                prop_assert_eq!(sum, 0, "{:?} sums to zero: payers' loss = receivers' gain + the exchange position", asset);
            }
        }
    }
}
