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
