//! Demo data, seeded once per data dir when `demo.seed` is on: wallets alice (USD/2), bob (USD/2) and
//! carol (EUR/2) with opening balances, and the client wallet `demo-client` whose generated private key is
//! written to `demo-client.pem` in the data dir. Every demo wallet is marked `demo`.
//!
//! Seeding is idempotent (fixed transfer ids, existing wallets skipped) and recorded in `meta`, so a crash
//! half-way finishes on the next start and a restart never seeds twice. The caller (`app`, while it wires the
//! services) passes in the store and the services seeding writes through.

use color_eyre::eyre::{Context, Result, eyre};

use crate::{
    clock::format_ts,
    files::write_private,
    httpsig::jwk,
    ledger::{Ledger, Movement},
    money::{Asset, Value},
    settings::Settings,
    store::{self, Store, meta},
    wallet::{NewWallet, WalletError, Wallets},
};

/// (name, public name, asset code, scale, opening balance in minor units)
pub const DEMO_WALLETS: &[(&str, &str, &str, u8, u64)] = &[
    ("alice", "Alice (demo)", "USD", 2, 100_000),
    ("bob", "Bob (demo)", "USD", 2, 50_000),
    ("carol", "Carol (demo)", "EUR", 2, 50_000),
    ("demo-client", "Demo client (demo)", "USD", 2, 0),
];

const WANTED: &str = "demo_seed_wanted";
const DONE: &str = "demo_seeded_at";

/// Seeds the demo data if `demo.seed` was on when the data dir was created (`fresh`) and it is not seeded yet.
pub async fn run(store: &Store, wallets: &Wallets, ledger: &Ledger, settings: &Settings, fresh: bool) -> Result<()> {
    let want = settings.demo.seed;
    let now = format_ts(time::OffsetDateTime::now_utc());
    let (wanted, done) = store
        .call(move |c| {
            if fresh {
                meta::set_once(c, WANTED, if want { "true" } else { "false" })?;
            }
            Ok::<_, store::Error>((meta::get(c, WANTED)?, meta::get(c, DONE)?))
        })
        .await?;
    if wanted.as_deref() != Some("true") || done.is_some() {
        return Ok(());
    }
    seed(wallets, ledger, settings).await?;
    store.call(move |c| meta::set_once(c, DONE, &now).map(|_| ())).await?;
    tracing::info!("seeded demo wallets alice, bob, carol and demo-client");
    Ok(())
}

async fn seed(wallets: &Wallets, ledger: &Ledger, settings: &Settings) -> Result<()> {
    for &(name, public, code, scale, opening) in DEMO_WALLETS {
        let wallet = match wallets.get(name).await {
            Ok(w) => w,
            Err(WalletError::NotFound(_)) => {
                let asset = Asset::new(code, scale)?;
                wallets
                    .create(NewWallet {
                        name: name.into(),
                        asset,
                        public_name: Some(public.into()),
                        demo: true,
                    })
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        if opening > 0 {
            ledger
                .move_funds(
                    wallet.account_id.clone(),
                    Movement::Deposit,
                    Value::new(opening)?,
                    None,
                    Some(format!("demo-seed-{name}")),
                )
                .await?;
        }
    }
    let pem_path = settings.paths.demo_client_key();
    if wallets.keys("demo-client").await?.keys.is_empty() || !pem_path.exists() {
        let secret = jwk::generate()?;
        write_private(&pem_path, jwk::to_pkcs8_pem(&secret).as_bytes())
            .wrap_err_with(|| format!("cannot write {}", pem_path.display()))?;
        let kid = jwk::thumbprint(&secret.verifying_key());
        wallets
            .add_key(
                "demo-client",
                jwk::Jwk::from_verifying_key(&kid, &secret.verifying_key()),
            )
            .await
            .map_err(|e| eyre!("registering the demo-client key: {e}"))?;
    }
    Ok(())
}
