//! The Wallets pane: wallet addresses with balances and key counts; creating a wallet, depositing,
//! withdrawing and generating a key (each behind a prompt and/or a confirm), and `:wallet NAME`.

use ratatui::{
    Frame,
    layout::{Constraint, Rect},
    widgets::Cell,
};

use super::{Cx, Out, Row, Table, View, warn};
use crate::{
    control::{
        Command, Found, Query,
        command::OwnerPassphrase,
        dto::{AddKey, CreateWallet, Move},
    },
    money::{Value, format_minor},
    text::sanitize,
    thresholds::Measure,
    tui::{
        action::Action,
        desk::WalletRow,
        effect::Effect,
        key::{Key, PaneKey},
        pane::Pane,
        theme::Theme,
        widgets::{prompt::PromptKind, table::table},
    },
};

/// The pane's own keys (the keymap adds the global ones and applies `[keys]` overrides).
pub const KEYS: &[PaneKey] = &[
    PaneKey {
        keys: &[Key::ch('n')],
        action: Action::NewWallet,
        description: "create a wallet address (name, asset, scale)",
        dangerous: false,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('+')],
        action: Action::Deposit,
        description: "deposit into the wallet from the ASE",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('-')],
        action: Action::Withdraw,
        description: "withdraw from the wallet to the ASE",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('K')],
        action: Action::GenerateKey,
        description: "generate a key pair and publish its public key",
        dangerous: true,
        hint: true,
    },
    PaneKey {
        keys: &[Key::ch('P')],
        action: Action::AddKey,
        description: "add a client's public key (JWK JSON or the extension's base64)",
        dangerous: true,
        hint: false,
    },
];

/// The Wallets pane's state.
#[derive(Debug, Clone, Default)]
pub struct Wallets {
    pub table: Table<WalletRow>,
}

impl Row for WalletRow {
    fn haystack(&self) -> String {
        format!(
            "{} {} {}",
            self.wallet.name,
            self.wallet.asset_code,
            self.wallet.public_name.clone().unwrap_or_default()
        )
    }
    fn key(&self) -> String {
        self.wallet.name.clone()
    }
}

impl Wallets {
    /// A balance changed: the wallet's row updated in place.
    pub fn on_balance_changed(&mut self, account_id: &str, balance: i64, pending_debits: i64) {
        for w in self
            .table
            .items
            .iter_mut()
            .filter(|w| w.balance.account_id == account_id)
        {
            w.balance.balance = balance;
            w.balance.pending_debits = pending_debits;
            w.balance.available = balance - pending_debits;
        }
    }

    /// `:wallet [NAME]`: this pane, with `NAME` selected.
    pub fn show(&mut self, name: Option<&str>) -> Vec<Out> {
        let mut out = vec![Out::Show];
        if let Some(name) = name {
            match self.table.items.iter().position(|w| w.wallet.name == name) {
                Some(i) => {
                    self.table.filter = None;
                    self.table.selected = i;
                }
                None => out.extend(warn(format!("no wallet {name:?}"))),
            }
        }
        out
    }

    fn selected_name(&self) -> Option<String> {
        self.table.selection().map(|w| w.wallet.name.clone())
    }
}

/// The public key typed or pasted for `wallet`: checked here (the reason is flashed), then confirmed.
fn submit_key(wallet: String, text: &str) -> Vec<Out> {
    match crate::httpsig::jwk::parse_input(text) {
        Ok(jwk) => vec![Out::Confirm(
            format!("Add key {} to {wallet}?", sanitize(&jwk.kid)),
            Effect::Run(Command::AddKey {
                wallet,
                key: AddKey {
                    jwk: Some(serde_json::Value::String(text.trim().to_owned())),
                    generate: false,
                },
            }),
        )],
        Err(e) => warn(sanitize(&e.to_string())),
    }
}

/// `name ASSET [scale]` from the new-wallet prompt.
fn submit_new(text: &str) -> Vec<Out> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    match parts.as_slice() {
        [name, code] | [name, code, _] => match parts.get(2).map_or(Ok(2), |s| s.parse::<u8>()) {
            Ok(scale) => vec![Out::Run(Effect::Run(Command::CreateWallet(CreateWallet {
                name: (*name).to_owned(),
                asset_code: code.to_uppercase(),
                asset_scale: scale,
                public_name: None,
            })))],
            Err(_) => warn("the scale must be a number from 0 to 255"),
        },
        _ => warn("give a name, an asset code and optionally a scale: dave USD 2"),
    }
}

/// An amount from the deposit/withdraw prompt: confirm before moving money.
fn submit_amount(wallet: String, deposit: bool, scale: u8, code: String, text: &str) -> Vec<Out> {
    match crate::money::parse_major(text.trim(), scale).and_then(|a| Value::new(a).ok()) {
        Some(value) if value.get() > 0 => {
            let verb = if deposit { "Deposit" } else { "Withdraw" };
            let prep = if deposit { "into" } else { "from" };
            let shown = format_minor(i128::from(value.get()), scale);
            let funds = Move::of(value);
            vec![Out::Confirm(
                format!("{verb} {shown} {code} {prep} {wallet}?"),
                Effect::Run(if deposit {
                    Command::Deposit { wallet, funds }
                } else {
                    Command::Withdraw { wallet, funds }
                }),
            )]
        }
        _ => warn(format!(
            "not an amount with at most {scale} decimals: {:?}",
            text.trim()
        )),
    }
}

impl View for Wallets {
    listed_by_table!();
    fn query(&self, _cursor: Option<String>, _q: Option<String>) -> Option<Query> {
        Some(Query::Wallets)
    }
    fn found(&mut self, found: Found, _append: bool, _cx: &Cx<'_>) -> Vec<Out> {
        if let Found::Wallets(w) = found {
            self.table.set(w, None, false);
        }
        Vec::new()
    }

    /// Draws the wallets table into `area`.
    fn draw(&self, _cx: &Cx<'_>, theme: &Theme, f: &mut Frame, area: Rect) {
        let w = &self.table;
        table(
            &w.view(Pane::Wallets, &[], "nothing here yet"),
            theme,
            f,
            area,
            &[
                "NAME",
                "ASSET",
                "BALANCE",
                "RESERVED",
                "AVAILABLE",
                "KEYS",
                "PUBLIC NAME",
            ],
            &[
                Constraint::Length(14),
                Constraint::Length(7),
                Constraint::Length(14),
                Constraint::Length(12),
                Constraint::Length(14),
                Constraint::Length(5),
                Constraint::Min(10),
            ],
            (w.loaded, w.loading, w.items.len()),
            |i| {
                let r = &w.items[i];
                let s = r.wallet.asset_scale;
                vec![
                    Cell::from(sanitize(&r.wallet.name)),
                    Cell::from(format!("{}/{}", r.wallet.asset_code, s)),
                    Cell::from(format_minor(r.balance.balance.into(), s)),
                    Cell::from(format_minor(r.balance.pending_debits.into(), s)).style(theme.dim),
                    Cell::from(format_minor(r.balance.available.into(), s)),
                    Cell::from(r.keys.to_string()),
                    Cell::from(sanitize(&r.wallet.public_name.clone().unwrap_or_default())).style(theme.dim),
                ]
            },
        );
    }

    /// New wallet, deposit, withdraw and generate key.
    fn act(&mut self, a: Action, _cx: &Cx<'_>) -> Vec<Out> {
        match a {
            Action::NewWallet => vec![Out::Prompt(PromptKind::NewWallet)],
            Action::Deposit | Action::Withdraw => match self.table.selection() {
                Some(w) => vec![Out::Prompt(PromptKind::Amount {
                    wallet: w.wallet.name.clone(),
                    deposit: a == Action::Deposit,
                    scale: w.wallet.asset_scale,
                    code: w.wallet.asset_code.clone(),
                })],
                None => Vec::new(),
            },
            Action::AddKey => self
                .selected_name()
                .map(|name| vec![Out::Prompt(PromptKind::PublicKey(name))])
                .unwrap_or_default(),
            Action::GenerateKey => match self.selected_name() {
                Some(name) => vec![Out::Confirm(
                    format!("Generate a key pair for {name} and publish its public key?"),
                    Effect::Run(Command::AddKey {
                        wallet: name,
                        key: AddKey {
                            jwk: None,
                            generate: true,
                        },
                    }),
                )],
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    fn submit(&mut self, kind: PromptKind, text: &str, _cx: &Cx<'_>) -> Vec<Out> {
        match kind {
            PromptKind::NewWallet => submit_new(text),
            PromptKind::PublicKey(wallet) => submit_key(wallet, text),
            PromptKind::Amount {
                wallet,
                deposit,
                scale,
                code,
            } => submit_amount(wallet, deposit, scale, code, text),
            _ => Vec::new(),
        }
    }

    /// `:public-name TEXT` sets the name the selected wallet shows payers (`:public-name` alone clears it);
    /// `:passphrase` gives its owner a new passphrase (shown once), `:passphrase remove` takes it away;
    /// `:threshold AMOUNT` alerts when its balance drops under the amount, `:threshold remove` stops that.
    fn command(&mut self, head: &str, rest: &str, cx: &Cx<'_>) -> Option<Vec<Out>> {
        if !matches!(head, "public-name" | "passphrase" | "threshold") {
            return None;
        }
        if cx.readonly {
            return Some(warn("read-only mode"));
        }
        let Some(selected) = self.table.selection() else {
            return Some(warn("select a wallet first"));
        };
        let (wallet, scale) = (selected.wallet.name.clone(), selected.wallet.asset_scale);
        Some(match (head, rest) {
            ("threshold", _) => super::threshold::command(Measure::WalletBalance, wallet, scale, rest),
            ("public-name", _) => {
                let public_name = (!rest.is_empty()).then(|| rest.to_owned());
                vec![Out::Run(Effect::Run(Command::SetPublicName { wallet, public_name }))]
            }
            (_, "") => vec![Out::Confirm(
                format!("Give {wallet}'s owner a new passphrase? They then decide its grants on the interaction page."),
                Effect::Run(Command::SetOwnerPassphrase {
                    wallet,
                    passphrase: OwnerPassphrase::Generate,
                }),
            )],
            (_, "remove") => vec![Out::Confirm(
                format!("Remove the owner passphrase of {wallet}? You then decide its grants."),
                Effect::Run(Command::SetOwnerPassphrase {
                    wallet,
                    passphrase: OwnerPassphrase::Remove,
                }),
            )],
            _ => warn("`:passphrase` generates one, `:passphrase remove` removes it"),
        })
    }

    fn commands(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "public-name TEXT",
                "the name the selected wallet shows payers (alone: clears it)",
            ),
            (
                "passphrase [remove]",
                "a new owner passphrase for the selected wallet (shown once), or none",
            ),
            (
                "threshold AMOUNT|remove",
                "alert when the selected wallet's balance drops under AMOUNT (walletBalanceLow)",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::tui::{
        app::{App, Msg, Overlay, Reply, ServerInfo, fixtures::now},
        keymap::Keymap,
    };

    fn key(c: char) -> Msg {
        Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    fn typed(a: &mut App, text: &str) -> Vec<Effect> {
        for c in text.chars() {
            a.update(key(c));
        }
        a.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
    }

    #[test]
    fn create_a_wallet_and_deposit_with_confirmation() {
        let mut a = App::new(ServerInfo::default(), Keymap::default(), false, now());
        a.update(key('2'));
        a.update(key('n'));
        assert!(
            matches!(a.overlay, Some(Overlay::Prompt(_))),
            "{:?} {:?}",
            a.pane,
            a.overlay
        );
        assert_eq!(
            typed(&mut a, "dave usd 2"),
            vec![Effect::Run(Command::CreateWallet(CreateWallet {
                name: "dave".into(),
                asset_code: "USD".into(),
                asset_scale: 2,
                public_name: None
            }))]
        );
        let wallet = {
            let w = crate::wallet::Wallet {
                id: "w".into(),
                name: "dave".into(),
                url: "http://x/dave".into(),
                public_name: None,
                asset_code: "USD".into(),
                asset_scale: 2,
                account_id: "a".into(),
                demo: false,
                created_at: crate::clock::ts("2026-11-21T11:00:00.000Z"),
            };
            WalletRow {
                wallet: w,
                balance: crate::ledger::Balance {
                    account_id: "a".into(),
                    kind: "wallet".into(),
                    wallet: Some("dave".into()),
                    peer: None,
                    asset_code: "USD".into(),
                    asset_scale: 2,
                    balance: 0,
                    pending_debits: 0,
                    pending_credits: 0,
                    available: 0,
                },
                keys: 0,
            }
        };
        a.update(Msg::Reply(Reply::found(Pane::Wallets, Found::Wallets(vec![wallet]))));
        // the pane's own `:` command names the selected wallet for payers, or clears the name
        a.update(key(':'));
        assert_eq!(
            typed(&mut a, "public-name Dave's Donuts"),
            vec![Effect::Run(Command::SetPublicName {
                wallet: "dave".into(),
                public_name: Some("Dave's Donuts".into())
            })]
        );
        a.update(key(':'));
        assert_eq!(
            typed(&mut a, "public-name"),
            vec![Effect::Run(Command::SetPublicName {
                wallet: "dave".into(),
                public_name: None
            })]
        );
        // a read-only console changes nothing
        a.readonly = true;
        a.update(key(':'));
        assert!(typed(&mut a, "public-name Mallory").is_empty());
        assert!(a.flash.as_ref().is_some_and(|f| f.text.contains("read-only")));
        a.readonly = false;
        a.update(key('+'));
        assert!(typed(&mut a, "12.5").is_empty(), "asks first");
        assert!(matches!(&a.overlay, Some(Overlay::Confirm(c)) if c.question.contains("12.50 USD")));
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::Deposit {
                wallet: "dave".into(),
                funds: Move::of(Value::new(1250).unwrap())
            })]
        );
        a.update(key('-'));
        assert!(typed(&mut a, "1.234").is_empty());
        assert!(a.overlay.is_none() && a.flash.is_some(), "a bad amount is a warning");
        a.update(key('K'));
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::AddKey {
                wallet: "dave".into(),
                key: AddKey {
                    jwk: None,
                    generate: true
                }
            })]
        );
        a.update(Msg::Reply(Reply::KeyGenerated {
            wallet: "dave".into(),
            kid: "k".into(),
            pem: "PEM".into(),
        }));
        assert!(matches!(&a.overlay, Some(Overlay::Json(t)) if t.contains("PEM")));

        // a client's public key, pasted as the Web Monetization extension shows it
        a.overlay = None;
        a.update(key('P'));
        assert!(typed(&mut a, "not a key").is_empty());
        assert!(
            a.flash.as_ref().is_some_and(|f| f.text.contains("neither")),
            "{:?}",
            a.flash
        );
        use base64::Engine as _;
        let sk = crate::httpsig::jwk::generate().unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sk.verifying_key().as_bytes());
        let shown = base64::engine::general_purpose::STANDARD
            .encode(format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"ext-1"}}"#));
        a.update(key('P'));
        a.update(Msg::Paste(shown.clone()));
        a.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert!(
            matches!(&a.overlay, Some(Overlay::Confirm(c)) if c.question.contains("ext-1")),
            "{:?}",
            a.overlay
        );
        assert_eq!(
            a.update(key('y')),
            vec![Effect::Run(Command::AddKey {
                wallet: "dave".into(),
                key: AddKey {
                    jwk: Some(serde_json::Value::String(shown)),
                    generate: false
                }
            })]
        );
    }
}
