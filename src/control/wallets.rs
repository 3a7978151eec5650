//! Wallet addresses and balances: list, create, show (with keys and balance).

use super::{
    Error, Services,
    dto::{CreateWallet, WalletDetail},
};
use crate::{
    ledger::Balance,
    money::Asset,
    wallet::{NewWallet, Wallet},
};

pub async fn list_wallets(s: &Services) -> Result<Vec<Wallet>, Error> {
    Ok(s.wallets.list().await?)
}

pub async fn create_wallet(s: &Services, body: CreateWallet) -> Result<Wallet, Error> {
    let asset = Asset::defined(&body.asset_code, body.asset_scale)?;
    let new = NewWallet {
        name: body.name,
        asset,
        public_name: body.public_name,
        demo: false,
    };
    Ok(s.wallets.create(new).await?)
}

pub async fn show_wallet(s: &Services, name: &str) -> Result<WalletDetail, Error> {
    let wallet = s.wallets.get(name).await?;
    let keys = s.wallets.keys(name).await?.keys;
    let balance = s.ledger.balance(&wallet.account_id).await?;
    Ok(WalletDetail { wallet, keys, balance })
}

pub async fn balances(s: &Services) -> Result<Vec<Balance>, Error> {
    Ok(s.ledger.balances().await?)
}
