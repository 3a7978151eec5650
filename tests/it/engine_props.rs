//! A property test of the payment engine as a state machine: random sequences of deposits, incoming
//! payments, outgoing payments, completes, cancels, retries, engine steps, clock jumps (an injected clock)
//! and restarts on the same data dir. After every step: per-asset conservation, no negative balance outside
//! the ASE's settlement accounts, cached balances equal to the journal, `sentAmount ≤ debitAmount`,
//! `receivedAmount ≤ incomingAmount`, every reservation pending only while its payment is unsent, and no
//! money left in the account of a finished payment. At the end of each case, with partly paid receivers and
//! payments across currencies: each wallet holds exactly what it started with, plus its deposits, plus what
//! payments delivered to it, less what its payments sent; and no payer was charged more than what its
//! receiver got costs at the payment's own price (a rounding of one unit a packet at most). Each case has its
//! own market: fees (fixed and basis points) on USD and EUR sends, and a rate table listing USD→EUR and, or
//! not, EUR→USD with a spread; conservation is per asset and scale.

use std::sync::Arc;

use opdesk::{
    app::AppCore,
    ase::{
        incoming::CreateIncoming,
        outgoing::{GrantContext, Source},
    },
    clock::{FixedClock, SharedClock},
    ledger::{self, Movement},
    money::{Amount, Value},
    settings::Settings,
    store::{ledger as ledger_repo, payments},
};
use proptest::prelude::*;

const WALLETS: [&str; 3] = ["alice", "bob", "carol"];

#[derive(Debug, Clone)]
enum Op {
    Deposit {
        wallet: usize,
        amount: u64,
    },
    Incoming {
        wallet: usize,
        amount: Option<u64>,
        lifetime_secs: i64,
    },
    Pay {
        from: usize,
        to: usize,
        debit: u64,
    },
    Complete {
        incoming: usize,
    },
    Cancel {
        payment: usize,
    },
    Retry {
        payment: usize,
    },
    Advance {
        ms: i64,
    },
    Step,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..3usize, 1..50_000u64).prop_map(|(wallet, amount)| Op::Deposit { wallet, amount }),
        3 => (0..3usize, proptest::option::of(1..5_000u64), 1..20i64)
            .prop_map(|(wallet, amount, lifetime_secs)| Op::Incoming { wallet, amount, lifetime_secs }),
        2 => (0..3usize, 0..8usize, 1..80_000u64).prop_map(|(from, to, debit)| Op::Pay { from, to, debit }),
        // payments that fit their receivers, so that several share (and overrun) one receiver's room
        4 => (0..3usize, 0..8usize, 1..3_000u64).prop_map(|(from, to, debit)| Op::Pay { from, to, debit }),
        1 => (0..8usize).prop_map(|incoming| Op::Complete { incoming }),
        1 => (0..8usize).prop_map(|payment| Op::Cancel { payment }),
        1 => (0..8usize).prop_map(|payment| Op::Retry { payment }),
        2 => (0..4_000i64).prop_map(|ms| Op::Advance { ms }),
        4 => Just(Op::Step),
        1 => Just(Op::Restart),
    ]
}

struct World {
    dir: tempfile::TempDir,
    market: Market,
    clock: FixedClock,
    core: AppCore,
    incoming: Vec<String>,
    payments: Vec<String>,
    /// per wallet: its balance at the start, plus its deposits
    owed: [i64; 3],
    /// per incoming payment, the wallet it pays; per payment, its sender and its receiver's wallet
    incoming_wallet: Vec<usize>,
    parties: Vec<(usize, usize)>,
}

/// What a case's ASE charges and converts at: fees on USD and EUR sends (a fixed part in major units and
/// basis points, or none) and a rate table listing both directions of USD↔EUR with a spread (or one).
#[derive(Debug, Clone)]
struct Market {
    fixed_cents: [u64; 2],
    basis_points: [u64; 2],
    /// thousandths: what one USD buys of EUR, and (when listed) what one EUR buys of USD
    usd_eur: u64,
    eur_usd: Option<u64>,
}

fn market() -> impl Strategy<Value = Market> {
    (
        [0..40u64, 0..40u64],
        [0..300u64, 0..300u64],
        500..1500u64,
        proptest::option::of(500..1500u64),
    )
        .prop_map(|(fixed_cents, basis_points, usd_eur, eur_usd)| Market {
            fixed_cents,
            basis_points,
            usd_eur,
            eur_usd,
        })
}

impl Market {
    fn config(&self) -> String {
        let rate = |m: u64| format!("{}.{:03}", m / 1000, m % 1000);
        let fee = |i: usize| {
            format!(
                "{{ fixed = \"0.{:02}\", basis_points = {} }}",
                self.fixed_cents[i], self.basis_points[i]
            )
        };
        let mut c = format!(
            "[engine]\npreset = \"custom\"\npackets_per_payment = 3\npacket_interval_ms = 1000\n\
             [fees]\nUSD = {}\nEUR = {}\n[rates]\n\"USD:EUR\" = \"{}\"\n",
            fee(0),
            fee(1),
            rate(self.usd_eur)
        );
        if let Some(r) = self.eur_usd {
            c.push_str(&format!("\"EUR:USD\" = \"{}\"\n", rate(r)));
        }
        c
    }
}

async fn open(dir: &std::path::Path, clock: &FixedClock, market: &Market) -> AppCore {
    std::fs::write(dir.join("config.toml"), market.config()).unwrap();
    let settings = Settings::for_data_dir(dir, "127.0.0.1:0".parse().unwrap()).unwrap();
    let shared: SharedClock = Arc::new(clock.clone());
    AppCore::open_with_clock(settings, shared).await.unwrap()
}

async fn apply(w: &mut World, op: Op) {
    let s = w.core.state.clone();
    match op {
        Op::Deposit { wallet, amount } => {
            let wl = s.wallets.get(WALLETS[wallet]).await.unwrap();
            s.ledger
                .move_funds(
                    wl.account_id,
                    Movement::Deposit,
                    Value::new(amount).unwrap(),
                    None,
                    None,
                )
                .await
                .unwrap();
            w.owed[wallet] += i64::try_from(amount).unwrap();
        }
        Op::Incoming {
            wallet,
            amount,
            lifetime_secs,
        } => {
            let wl = s.wallets.get(WALLETS[wallet]).await.unwrap();
            let expires = opdesk::clock::format_ts(w.clock_now() + time::Duration::seconds(lifetime_secs));
            let req = CreateIncoming {
                wallet_address: wl.url.clone(),
                incoming_amount: amount.map(|a| Amount::new(Value::new(a).unwrap(), &wl.asset())),
                expires_at: Some(expires),
                metadata: None,
            };
            let row = s.incoming.create(&wl, None, req).await.unwrap();
            w.incoming.push(row.id.into());
            w.incoming_wallet.push(wallet);
        }
        Op::Pay { from, to, debit } => {
            let Some(target) = w.incoming.get(to % w.incoming.len().max(1)).cloned() else {
                return;
            };
            let to_wallet = w.incoming_wallet[to % w.incoming.len()];
            let wl = s.wallets.get(WALLETS[from]).await.unwrap();
            let source = Source::Incoming {
                receiver: s.incoming.url_of(&target),
                debit: Amount::new(Value::new(debit).unwrap(), &wl.asset()),
            };
            // refusals (receiver closed, amount too large, no rate) are fine: nothing may be written
            if let Ok(dto) = s
                .outgoing
                .create(&wl, None, None::<GrantContext>, source, None, None)
                .await
            {
                w.payments.push(dto.id.rsplit('/').next().unwrap().to_owned());
                w.parties.push((from, to_wallet));
            }
        }
        Op::Complete { incoming } => {
            if let Some(id) = w.incoming.get(incoming % w.incoming.len().max(1)) {
                let _ = s.incoming.complete(id).await;
            }
        }
        Op::Cancel { payment } => {
            if let Some(id) = w.payments.get(payment % w.payments.len().max(1)) {
                let _ = s.engine.cancel(id).await;
            }
        }
        Op::Retry { payment } => {
            if let Some(id) = w.payments.get(payment % w.payments.len().max(1)) {
                let _ = s.engine.retry(id).await;
            }
        }
        Op::Advance { ms } => w.clock.advance(time::Duration::milliseconds(ms)),
        Op::Step => {
            s.engine.step().await.unwrap();
            s.engine.announce_expiries().await;
        }
        Op::Restart => {
            w.core.close();
            w.core = open(w.dir.path(), &w.clock, &w.market).await;
        }
    }
}

impl World {
    fn clock_now(&self) -> time::OffsetDateTime {
        use opdesk::clock::Clock;
        self.clock.now()
    }
}

async fn check(w: &World) {
    let ids = w.payments.clone();
    let incoming = w.incoming.clone();
    w.core
        .store
        .call(move |c| {
            let accounts = ledger_repo::accounts(c)?;
            // per asset and scale: every payer's loss is a receiver's gain, a fee or the exchange's position
            let mut sums = std::collections::HashMap::<(String, u8), i128>::new();
            for a in &accounts {
                *sums.entry((a.asset_code.clone(), a.asset_scale)).or_default() += i128::from(a.balance);
                if a.kind != "settlement" {
                    assert!(a.balance - a.pending_debits >= 0, "negative: {a:?}");
                }
            }
            assert!(sums.values().all(|v| *v == 0), "not conserved: {sums:?}");
            assert!(ledger::audit(c).unwrap().is_empty(), "cache differs from journal");
            for id in &ids {
                let p = payments::outgoing(c, id)?.expect("payment");
                assert!(
                    p.sent_amount <= p.debit_amount && p.delivered_amount <= p.receive_amount,
                    "{p:?}"
                );
                let reservation = match &p.reservation_id {
                    Some(r) => ledger_repo::transfer(c, r)?,
                    None => None,
                };
                if reservation.as_ref().is_some_and(|t| t.state == "pending") {
                    assert_eq!(p.state, "sending", "a pending reservation outlived its payment: {p:?}");
                    assert_eq!(p.sent_amount, 0);
                }
                if p.state != "sending"
                    && let Some(acct) = &p.payment_account_id
                {
                    let a = ledger_repo::account(c, acct)?.expect("account");
                    assert_eq!((a.balance, a.pending_credits), (0, 0), "money left behind: {p:?}");
                }
            }
            for id in &incoming {
                let r = payments::incoming(c, id)?.expect("incoming");
                if let Some(i) = r.incoming_amount {
                    assert!(r.received_amount <= i, "{r:?}");
                }
            }
            Ok::<_, opdesk::store::Error>(())
        })
        .await
        .unwrap();
}

async fn balance_of(core: &AppCore, account: &str) -> i64 {
    let a = account.to_owned();
    core.store
        .call(move |c| ledger_repo::account(c, &a))
        .await
        .unwrap()
        .unwrap()
        .balance
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn engine_invariants_hold_after_every_step(ops in proptest::collection::vec(op(), 1..50), market in market()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let clock = FixedClock::new(time::OffsetDateTime::now_utc());
            let core = open(dir.path(), &clock, &market).await;
            let mut owed = [0i64; 3];
            for (i, name) in WALLETS.iter().enumerate() {
                let wl = core.state.wallets.get(name).await.unwrap();
                owed[i] = balance_of(&core, &wl.account_id).await;
            }
            let mut w = World {
                dir, market, clock, core, incoming: vec![], payments: vec![], owed,
                incoming_wallet: vec![], parties: vec![],
            };
            check(&w).await;
            for op in ops {
                apply(&mut w, op).await;
                check(&w).await;
            }
            // drive everything to the end: every payment finishes
            for _ in 0..20 {
                w.clock.advance(time::Duration::seconds(2));
                w.core.state.engine.drain().await.unwrap();
            }
            check(&w).await;
            let mut owed = w.owed;
            for (id, (from, to)) in w.payments.iter().zip(&w.parties) {
                let p = w.core.state.outgoing.get(id).await.unwrap();
                assert!(matches!(p.state.as_str(), "completed" | "failed" | "cancelled"), "{p:?}");
                let row = {
                    let id = id.clone();
                    w.core.store.call(move |c| payments::outgoing(c, &id)).await.unwrap().unwrap()
                };
                owed[*from] -= row.sent_amount;
                owed[*to] += row.delivered_amount;
                // what the receiver got, at the payment's own price, rounded up; one unit a packet of rounding
                let (num, den) = (
                    i128::from(row.delivered_amount) * i128::from(row.debit_amount),
                    i128::from(row.receive_amount),
                );
                let costs = (num + den - 1) / den;
                assert!(i128::from(row.sent_amount) <= costs + 3, "charged for more than was delivered: {row:?}");
            }
            for (i, name) in WALLETS.iter().enumerate() {
                let wl = w.core.state.wallets.get(name).await.unwrap();
                assert_eq!(balance_of(&w.core, &wl.account_id).await, owed[i], "{name} holds what it is owed");
            }
            w.core.close();
        });
    }
}
