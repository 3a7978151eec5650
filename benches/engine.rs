//! Local payments settled end to end, in process on a file database: create an outgoing payment (quote by
//! fixed-send, grant-less, reservation) and let the engine settle it (post the reservation, move the money,
//! credit the receiver, complete). Reported per payment; `iter_custom` creates a batch, then drains it: one
//! create at a time, and up to 32 in flight (as concurrent clients would).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use opdesk::{
    app::AppCore,
    ase::{
        incoming::CreateIncoming,
        outgoing::{GrantContext, OutgoingError, OutgoingPaymentDto, Source},
    },
    money::{Amount, Asset, Value},
    server::AppState,
    settings::Settings,
    wallet::Wallet,
};

/// The allocator the `opdesk` binary runs with, so that the bench measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One local payment of one minor unit from `alice` to `receiver`, created as a client would (no grant).
async fn pay(s: &AppState, alice: &Wallet, receiver: &str, usd: &Asset) -> Result<OutgoingPaymentDto, OutgoingError> {
    let source = Source::Incoming {
        receiver: receiver.to_owned(),
        debit: Amount::new(Value::new(1).expect("v"), usd),
    };
    s.outgoing
        .create(alice, None, None::<GrantContext>, source, None, None)
        .await
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let settings = Settings::for_data_dir(dir.path(), "127.0.0.1:0".parse().expect("addr")).expect("settings");
    let core = rt.block_on(AppCore::open(settings)).expect("open");
    let s = core.state.clone();
    let (alice, receiver) = rt.block_on(async {
        let alice = s.wallets.get("alice").await.expect("alice");
        let bob = s.wallets.get("bob").await.expect("bob");
        s.ledger
            .move_funds(
                alice.account_id.clone(),
                opdesk::ledger::Movement::Deposit,
                Value::new(1 << 40).expect("v"),
                None,
                None,
            )
            .await
            .expect("deposit");
        let ip = s
            .incoming
            .create(
                &bob,
                None,
                CreateIncoming {
                    wallet_address: bob.url.clone(),
                    incoming_amount: None,
                    expires_at: None,
                    metadata: None,
                },
            )
            .await
            .expect("incoming");
        (alice, s.incoming.url_of(&ip.id))
    });
    let usd = Asset::new("USD", 2).expect("asset");
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.bench_function("local payment create→completed (file DB, one packet)", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    pay(&s, &alice, &receiver, &usd).await.expect("create");
                }
                s.engine.drain().await.expect("drain");
                let elapsed = started.elapsed();
                elapsed.max(Duration::from_nanos(1))
            })
        })
    });
    // the same payments created as many clients would send them: up to 32 creates in flight at once, so
    // the store commits them in groups; then the engine settles them
    group.bench_function("local payments create→completed, 32 creates in flight", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                let mut flying = tokio::task::JoinSet::<Result<OutgoingPaymentDto, OutgoingError>>::new();
                for _ in 0..iters {
                    if flying.len() >= 32 {
                        flying
                            .join_next()
                            .await
                            .expect("a create")
                            .expect("joined")
                            .expect("create");
                    }
                    let (s, alice, receiver, usd) = (s.clone(), alice.clone(), receiver.clone(), usd.clone());
                    flying.spawn(async move { pay(&s, &alice, &receiver, &usd).await });
                }
                while let Some(done) = flying.join_next().await {
                    done.expect("joined").expect("create");
                }
                s.engine.drain().await.expect("drain");
                started.elapsed().max(Duration::from_nanos(1))
            })
        })
    });
    group.finish();
    core.close();
}

criterion_group!(benches, bench);
criterion_main!(benches);
