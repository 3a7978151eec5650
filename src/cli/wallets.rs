//! Operator commands on wallet addresses and their money: `wallets`, `keys`, `deposit`, `withdraw` and
//! `balances` (which is a query: `super::operate` asks it), and how wallets, keys and balances read for people.
//! Prints only through [`super::print`].

use std::path::PathBuf;

use clap::{Args, Subcommand};
use color_eyre::eyre::{Result, WrapErr, eyre};

use super::{
    Backend, OneLine,
    print::{Columns, Human, emit, table},
};
use crate::{
    control::{
        self, Query,
        command::{OwnerPassphrase, PassphraseSet},
        dto::{AddKey, CreateWallet, KeyAdded, Move, Moved, WalletDetail},
    },
    httpsig::jwk::{Jwk, Jwks},
    ledger::{Balance, Movement},
    money::{Asset, format_minor},
    wallet::Wallet,
};

#[derive(Debug, Args)]
pub struct MoveArgs {
    pub wallet: String,
    /// Amount in the wallet's minor units (digits only).
    pub amount: String,
    /// Idempotency id: the same id is applied once.
    #[arg(long)]
    pub id: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum WalletsCmd {
    /// List wallet addresses.
    List,
    /// Create a wallet address.
    Create {
        name: String,
        /// Asset code, e.g. USD.
        #[arg(long)]
        asset: String,
        /// Asset scale (decimal places of the minor unit).
        #[arg(long, default_value_t = 2)]
        scale: u8,
        /// Name shown to payers.
        #[arg(long)]
        public_name: Option<String>,
    },
    /// Show a wallet address with its keys and balance.
    Show { name: String },
    /// Set the public name a wallet address shows payers; without a name, clear it.
    PublicName { name: String, public_name: Option<String> },
    /// Set the owner passphrase of a wallet address: its owner then signs in on the interaction page and
    /// decides its grants ([consent] decide). Asked for (twice) on a terminal, else read as one line of stdin.
    Passphrase {
        name: String,
        /// Generate a passphrase and print it (this once).
        #[arg(long, conflicts_with = "remove")]
        generate: bool,
        /// Remove the passphrase: the operator decides the wallet's grants again.
        #[arg(long)]
        remove: bool,
    },
    /// Set an alert threshold on the wallet's balance (less what is reserved), in its minor units: a payment
    /// that takes it under the threshold raises `walletBalanceLow` (`opdesk thresholds` lists them).
    SetThreshold {
        name: String,
        #[arg(required_unless_present = "remove")]
        amount: Option<String>,
        /// Remove the threshold.
        #[arg(long, conflicts_with = "amount")]
        remove: bool,
    },
}

/// The passphrase a person gives for `wallet`: typed twice, unseen, on a terminal; one line of stdin otherwise.
fn read_passphrase(wallet: &str) -> Result<String> {
    use std::io::IsTerminal as _;
    if !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).wrap_err("cannot read stdin")?;
        return Ok(line.trim_end_matches(['\n', '\r']).to_owned());
    }
    let first = rpassword::prompt_password(format!("new passphrase for {wallet}'s owner: ")).wrap_err("cannot read")?;
    let again = rpassword::prompt_password("the same again: ").wrap_err("cannot read")?;
    if first != again {
        return Err(OneLine::new("the two passphrases differ; nothing was changed").into());
    }
    Ok(first)
}

#[derive(Debug, Subcommand)]
pub enum KeysCmd {
    /// List a wallet's published keys.
    List { wallet: String },
    /// Register a public Ed25519 JWK: its JSON, or that JSON in base64 as the Web Monetization
    /// extension shows its key (a key without `alg` is stored as EdDSA).
    Add {
        wallet: String,
        /// The key as JSON or base64 text, @FILE to read it from a file, or - to read it from stdin.
        #[arg(long, value_name = "JSON|BASE64|@FILE|-")]
        jwk: String,
    },
    /// Generate a key pair, publish the public key and write the private key (PKCS#8 PEM).
    Generate {
        wallet: String,
        /// File for the private key (default: print it).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Remove a key by its kid.
    Remove { wallet: String, kid: String },
}

/// `wallets list|create|show|public-name|passphrase|set-threshold`.
pub(super) async fn wallets(b: &Backend, cmd: WalletsCmd, json: bool) -> Result<()> {
    match cmd {
        WalletsCmd::List => b.show(Query::WalletAddresses, json).await,
        WalletsCmd::Show { name } => b.show(Query::Wallet { name }, json).await,
        WalletsCmd::Create {
            name,
            asset,
            scale,
            public_name,
        } => {
            // checked here too, for the hint
            Asset::defined(&asset, scale).map_err(|e| {
                let upper = asset.to_ascii_uppercase();
                match Asset::defined(&upper, scale) {
                    Ok(_) => OneLine::new(e.to_string()).hint(format!("--asset {upper}")),
                    Err(_) => OneLine::new(e.to_string()),
                }
            })?;
            let body = CreateWallet {
                name,
                asset_code: asset,
                asset_scale: scale,
                public_name,
            };
            b.tell::<Wallet>(control::Command::CreateWallet(body), json).await
        }
        WalletsCmd::PublicName { name, public_name } => {
            let cmd = control::Command::SetPublicName {
                wallet: name,
                public_name,
            };
            b.tell::<Wallet>(cmd, json).await
        }
        WalletsCmd::Passphrase { name, generate, remove } => {
            let passphrase = if remove {
                OwnerPassphrase::Remove
            } else if generate {
                OwnerPassphrase::Generate
            } else {
                OwnerPassphrase::Set {
                    passphrase: read_passphrase(&name)?,
                }
            };
            let cmd = control::Command::SetOwnerPassphrase {
                wallet: name,
                passphrase,
            };
            let (set, said): (PassphraseSet, _) = b.said(cmd).await?;
            emit(json, &set, || match &set.generated {
                Some(p) => format!("passphrase for {}'s owner: {p}\n(shown this once)\n", set.wallet),
                None => format!("{said}\n"),
            })
        }
        WalletsCmd::SetThreshold { name, amount, .. } => {
            super::thresholds::set(b, crate::thresholds::Measure::WalletBalance, name, amount, json).await
        }
    }
}

/// `keys list|add|generate|remove`.
pub(super) async fn keys(b: &Backend, cmd: KeysCmd, json: bool) -> Result<()> {
    match cmd {
        KeysCmd::List { wallet } => b.show(Query::Keys { wallet }, json).await,
        KeysCmd::Add { wallet, jwk } => {
            let text = if jwk == "-" {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).wrap_err("cannot read stdin")?;
                text
            } else {
                match jwk.strip_prefix('@') {
                    Some(path) => std::fs::read_to_string(path).wrap_err_with(|| format!("cannot read {path}"))?,
                    None => jwk,
                }
            };
            let jwk = crate::httpsig::jwk::parse_input(&text).wrap_err("--jwk is not a usable Ed25519 key")?;
            let body = AddKey {
                jwk: Some(serde_json::to_value(&jwk).wrap_err("cannot encode the key")?),
                generate: false,
            };
            b.tell::<KeyAdded>(control::Command::AddKey { wallet, key: body }, json)
                .await
        }
        KeysCmd::Generate { wallet, out } => {
            let body = AddKey {
                jwk: None,
                generate: true,
            };
            let (k, said): (KeyAdded, _) = b.said(control::Command::AddKey { wallet, key: body }).await?;
            let pem = k
                .private_key_pem
                .clone()
                .ok_or_else(|| eyre!("the server returned no private key"))?;
            match out {
                Some(path) => {
                    crate::files::write_private(&path, pem.as_bytes())
                        .wrap_err_with(|| format!("cannot write {}", path.display()))?;
                    emit(json, &k.jwk, || format!("{said}; private key in {}\n", path.display()))
                }
                None => emit(json, &k, || format!("{said}; private key (shown once):\n{pem}")),
            }
        }
        KeysCmd::Remove { wallet, kid } => {
            let cmd = control::Command::RemoveKey {
                wallet,
                kid: kid.clone(),
            };
            let ((), said) = b.said(cmd).await?;
            emit(json, &serde_json::json!({"removed": kid}), || format!("{said}\n"))
        }
    }
}

/// `deposit` and `withdraw`: money between a wallet and the settlement account.
pub(super) async fn move_funds(b: &Backend, m: MoveArgs, movement: Movement, json: bool) -> Result<()> {
    let body = Move {
        value: super::minor(&m.amount, "amount", "the wallet's")?,
        asset_code: None,
        asset_scale: None,
        transfer_id: m.id,
    };
    let (wallet, funds) = (m.wallet, body);
    let cmd = match movement {
        Movement::Deposit => control::Command::Deposit { wallet, funds },
        Movement::Withdrawal => control::Command::Withdraw { wallet, funds },
    };
    b.tell::<Moved>(cmd, json).await
}

impl Human for Wallet {
    const COLUMNS: Columns<Self> = &[
        ("NAME", |w| w.name.clone()),
        ("ASSET", |w| format!("{}/{}", w.asset_code, w.asset_scale)),
        ("URL", |w| w.url.clone()),
        ("PUBLIC NAME", |w| w.public_name.clone().unwrap_or_default()),
        ("DEMO", |w| if w.demo { "demo".into() } else { String::new() }),
    ];
}

impl Human for WalletDetail {
    fn card(&self) -> String {
        let (w, b) = (&self.wallet, &self.balance);
        let mut out = format!(
            "{}\n  asset:     {}/{}\n  balance:   {}\n  available: {}\n  keys:\n",
            w.url,
            w.asset_code,
            w.asset_scale,
            money(b.balance, b),
            money(b.available, b),
        );
        for k in &self.keys {
            out.push_str(&format!("    {}\n", k.kid));
        }
        out
    }
}

impl Human for Jwk {
    const COLUMNS: Columns<Self> = &[
        ("KID", |k| k.kid.clone()),
        ("ALG", |k| k.alg.clone()),
        ("X", |k| k.x.clone()),
    ];
}

impl Human for Jwks {
    fn card(&self) -> String {
        table(&self.keys)
    }
}

impl Human for Balance {
    const COLUMNS: Columns<Self> = &[
        ("ACCOUNT", |x| {
            x.wallet.clone().unwrap_or_else(|| match &x.peer {
                Some(peer) => format!("(peer {peer})"),
                None => format!("({})", x.kind),
            })
        }),
        ("KIND", |x| x.kind.clone()),
        ("ASSET", |x| format!("{}/{}", x.asset_code, x.asset_scale)),
        ("BALANCE", |x| format_minor(x.balance.into(), x.asset_scale)),
        ("RESERVED", |x| format_minor(x.pending_debits.into(), x.asset_scale)),
        ("AVAILABLE", |x| format_minor(x.available.into(), x.asset_scale)),
    ];
}

/// `v` minor units in the balance's asset, for people.
fn money(v: i64, b: &Balance) -> String {
    let asset = crate::money::Asset {
        code: b.asset_code.clone(),
        scale: b.asset_scale,
    };
    asset.format(v.into())
}
