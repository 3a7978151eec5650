//! Request and response bodies of the admin API, shared by the server handlers and the CLI client.

use serde::{Deserialize, Serialize};

use crate::{
    ase::wallet::Wallet,
    httpsig::jwk::Jwk,
    ledger::{Balance, Transfer},
    money::Value,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWallet {
    pub name: String,
    pub asset_code: String,
    pub asset_scale: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_name: Option<String>,
}

/// Register a given public key, or generate a key pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwk: Option<Jwk>,
    #[serde(default)]
    pub generate: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyAdded {
    pub jwk: Jwk,
    /// PKCS#8 PEM of a generated private key; returned once, never stored by opdesk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_pem: Option<String>,
}

/// A deposit or withdrawal in the wallet's minor units.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Move {
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset_scale: Option<u8>,
    /// Makes the movement idempotent: the same id is applied once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Moved {
    pub transfer: Transfer,
    pub balance: Balance,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletDetail {
    pub wallet: Wallet,
    pub keys: Vec<Jwk>,
    pub balance: Balance,
}

/// `GET /admin/grants?state=…`
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantFilter {
    #[serde(default)]
    pub state: Option<String>,
}

/// `POST /admin/grants/{id}/reject` (body optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `GET /admin/{incoming-payments,outgoing-payments,quotes}?wallet=&state=&cursor=&first=`
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wallet: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<u32>,
}

/// A page of an admin list, newest first; `next_cursor` fetches the following page.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed<T> {
    pub items: Vec<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
