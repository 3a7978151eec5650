//! Ledger throughput on a file database through the store thread: one reserve (pending transfer) plus one
//! post, each its own `BEGIN IMMEDIATE` transaction, as the payment engine does it.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use opdesk::{
    ledger::{self, AccountKind, LedgerError, NewTransfer},
    money::{Asset, Value},
    store::{self, Options, Store},
};

/// The allocator the `opdesk` binary runs with, so that the bench measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NOW: time::OffsetDateTime = time::macros::datetime!(2026-01-01 00:00:00 UTC);

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(&dir.path().join("bench.sqlite3"), &Options::default()).expect("open");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let usd = Asset::new("USD", 2).expect("asset");
    let (from, to) = rt
        .block_on(store.call(move |conn| {
            let tx = store::immediate(conn)?;
            let a = ledger::ops::create_account(&tx, AccountKind::Wallet, &usd, NOW)?;
            let b = ledger::ops::create_account(&tx, AccountKind::Wallet, &usd, NOW)?;
            let s = ledger::ops::settlement_account(&tx, &usd, NOW)?;
            let t = NewTransfer {
                id: opdesk::ids::new_id(),
                debit: s,
                credit: a.clone(),
                amount: Value::new(i64::MAX as u64 / 2).map_err(LedgerError::from)?,
                pending: false,
                kind: "deposit".into(),
                memo: None,
            };
            ledger::ops::create_transfer(&tx, &t, NOW)?;
            tx.commit()?;
            Ok::<_, LedgerError>((a, b))
        }))
        .expect("setup");

    let mut group = c.benchmark_group("ledger");
    group.throughput(Throughput::Elements(1));
    group.bench_function("reserve+post (2 transactions, file DB, synchronous=NORMAL)", |b| {
        b.iter(|| {
            let (from, to) = (from.clone(), to.clone());
            rt.block_on(async {
                let id = opdesk::ids::new_id();
                let reserve_id = id.clone();
                store
                    .call(move |conn| {
                        let tx = store::immediate(conn)?;
                        let t = NewTransfer {
                            id: reserve_id.clone(),
                            debit: from.clone(),
                            credit: to.clone(),
                            amount: Value::new(1).map_err(LedgerError::from)?,
                            pending: true,
                            kind: "payment".into(),
                            memo: None,
                        };
                        ledger::ops::create_transfer(&tx, &t, NOW)?;
                        tx.commit()?;
                        Ok::<_, LedgerError>(())
                    })
                    .await
                    .expect("reserve");
                store
                    .call(move |conn| {
                        let tx = store::immediate(conn)?;
                        ledger::ops::post(&tx, &id, None, NOW)?;
                        tx.commit()?;
                        Ok::<_, LedgerError>(())
                    })
                    .await
                    .expect("post");
            })
        })
    });
    group.finish();
    store.close();
}

criterion_group!(benches, bench);
criterion_main!(benches);
