//! Demo data, seeded once per data dir when `demo.seed` is on: wallets alice (USD/2), bob (USD/2) and
//! carol (EUR/2) with opening balances, and the client wallet `demo-client` whose generated private key is
//! written to `demo-client.pem` in the data dir. Every demo wallet is marked `demo`.
//!
//! Seeding is idempotent (fixed transfer ids, existing wallets skipped) and recorded in `meta`, so a crash
//! half-way finishes on the next start and a restart never seeds twice.

use color_eyre::eyre::{Context, Result, eyre};

use crate::{
    app::AppCore,
    ase::wallet::{NewWallet, WalletError},
    clock::format_ts,
    files::write_private,
    httpsig::jwk,
    ledger::Movement,
    money::{Asset, Value},
    store::{self, meta},
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

pub async fn run(core: &AppCore, fresh: bool) -> Result<()> {
    let want = core.state.settings.demo.seed;
    let now = format_ts(time::OffsetDateTime::now_utc());
    let (wanted, done) = core
        .store
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
    seed(core).await?;
    core.store
        .call(move |c| meta::set_once(c, DONE, &now).map(|_| ()))
        .await?;
    tracing::info!("seeded demo wallets alice, bob, carol and demo-client");
    Ok(())
}

async fn seed(core: &AppCore) -> Result<()> {
    let s = &core.state;
    for &(name, public, code, scale, opening) in DEMO_WALLETS {
        let wallet = match s.wallets.get(name).await {
            Ok(w) => w,
            Err(WalletError::NotFound(_)) => {
                let asset = Asset::new(code, scale)?;
                s.wallets
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
            s.ledger
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
    let pem_path = s.settings.paths.demo_client_key();
    if s.wallets.keys("demo-client").await?.keys.is_empty() || !pem_path.exists() {
        let secret = jwk::generate()?;
        write_private(&pem_path, jwk::to_pkcs8_pem(&secret).as_bytes())
            .wrap_err_with(|| format!("cannot write {}", pem_path.display()))?;
        let kid = jwk::thumbprint(&secret.verifying_key());
        s.wallets
            .add_key(
                "demo-client",
                jwk::Jwk::from_verifying_key(&kid, &secret.verifying_key()),
            )
            .await
            .map_err(|e| eyre!("registering the demo-client key: {e}"))?;
    }
    Ok(())
}
