//! Request and response bodies of the admin API, shared by the server handlers and the CLI client.

use serde::{Deserialize, Serialize};

use crate::{
    httpsig::jwk::Jwk,
    ledger::{Balance, Transfer},
    money::Value,
    wallet::Wallet,
};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWallet {
    pub name: String,
    pub asset_code: String,
    pub asset_scale: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_name: Option<String>,
}

/// Register a given public key, or generate a key pair.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddKey {
    /// The public key: a JWK object, or a string holding its JSON or that JSON in base64 (the Web
    /// Monetization extension's form); an Ed25519 key without `alg` is stored with `alg: EdDSA`
    /// (see [`crate::httpsig::jwk::parse_input`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwk: Option<serde_json::Value>,
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
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

impl Move {
    /// `value` minor units of the wallet's asset, not idempotent.
    pub fn of(value: Value) -> Self {
        Self {
            value,
            asset_code: None,
            asset_scale: None,
            transfer_id: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Moved {
    pub transfer: Transfer,
    pub balance: Balance,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletDetail {
    pub wallet: Wallet,
    pub keys: Vec<Jwk>,
    pub balance: Balance,
}

/// `GET /admin/grants?state=…`: the grants in `state`, or every one (`all`), else the open ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Closed grants (revoked, rejected, expired) too; without it and without `state` they are hidden.
    #[serde(default)]
    pub all: bool,
}

/// `GET /admin/webhooks?state=…&before=SEQ&first=N`: webhook deliveries newest first, optionally in one state,
/// before sequence number `before`, `first` of them (default 50).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookPage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
    #[serde(default = "WebhookPage::first")]
    pub first: usize,
}

impl WebhookPage {
    /// How many deliveries a page has when the reader does not say.
    pub const FIRST: usize = 50;

    fn first() -> usize {
        Self::FIRST
    }
}

/// `GET /admin/requests?cursor=ID&limit=N`: the server's recent requests, newest first, after request
/// `cursor`, `limit` of them (default 100, at most 1,000).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestPage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default = "RequestPage::limit")]
    pub limit: usize,
}

impl RequestPage {
    fn limit() -> usize {
        100
    }
}

/// `PUT /admin/thresholds`: `{"measure", "subject", "threshold"?}` (no threshold: remove it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewThreshold {
    pub measure: crate::thresholds::Measure,
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<crate::money::Value>,
}

/// `POST /admin/grants/{id}/reject` (body optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `GET /admin/{incoming-payments,outgoing-payments,quotes}?wallet=&state=&cursor=&first=&q=`
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Only rows whose id or wallet name (incoming: client, metadata; outgoing: state, receiver, failure
    /// reason, grant; quotes: receiver) contain this text, case-insensitively (the console's `/` filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Incoming payments only: `false` lists them without their `methods` (fresh STREAM credentials, a
    /// token encrypted per row). The console asks for that: it shows no credentials in a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<bool>,
}

/// A page of an admin list, newest first; `next_cursor` fetches the following page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed<T> {
    pub items: Vec<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `POST /admin/peers`: an ILP peer (see `[[ilp.peers]]` in `docs/CONFIGURATION.md` for what each field does).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPeer {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ilp_address: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    /// Tokens the peer presents at `POST /ilp`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incoming_tokens: Vec<String>,
    /// Generate an incoming token (returned once in `generatedIncomingTokens`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generate_incoming_token: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outgoing_token: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_packet_amount: Option<u64>,
}

impl NewPeer {
    pub fn into_settings(self) -> (crate::settings::PeerSettings, bool) {
        let def = crate::settings::PeerSettings {
            name: self.name,
            ilp_address: self.ilp_address,
            incoming_tokens: self.incoming_tokens,
            outgoing_endpoint: self.outgoing_endpoint,
            outgoing_token: self.outgoing_token,
            routes: self.routes,
            max_packet_amount: self.max_packet_amount,
            asset_code: self.asset_code,
            asset_scale: self.asset_scale,
            ..Default::default()
        };
        (def, self.generate_incoming_token)
    }
}

/// An ILP peer as the operator sees it: tokens are never shown, only counted (a generated one once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerView {
    pub name: String,
    /// `config` (config.toml, read-only here) or `admin` (added through the admin API).
    pub source: String,
    pub ilp_address: Option<String>,
    pub asset_code: String,
    pub asset_scale: u8,
    /// How many incoming tokens authenticate it at `POST /ilp`.
    pub incoming_tokens: usize,
    pub receives: bool,
    pub outgoing_endpoint: Option<String>,
    /// The prefixes routed to it (its routes, or its ILP address when it has none).
    pub routes: Vec<String>,
    pub max_packet_amount: Option<u64>,
    /// Its ledger account: positive when we owe it (we sent more through it than it brought us).
    pub peer_account_balance: i64,
    /// Its liquidity account: what it lets us owe it (minor units of its asset).
    #[serde(default)]
    pub liquidity: i64,
    /// Our position with it (the peer account): positive when we owe it, negative when it owes us.
    #[serde(default)]
    pub position: i64,
    /// What we owe it now: the positive part of the position.
    #[serde(default)]
    pub owed: i64,
    /// Sent through it and not yet recorded (this server process only).
    #[serde(default)]
    pub in_flight: u64,
    /// Whether sending through it is limited by its liquidity (since the first deposit).
    #[serde(default)]
    pub send_limited: bool,
    /// What may still be sent through it (`liquidity - position - inFlight`); none while not limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_to_send: Option<u64>,
    /// What it may owe us unsettled; none: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_limit: Option<i64>,
    /// What it owes us now: the negative part of the position.
    #[serde(default)]
    pub credit_used: u64,
    #[serde(
        with = "crate::clock::wire::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub created_at: Option<time::OffsetDateTime>,
    #[serde(
        with = "crate::clock::wire::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_at: Option<time::OffsetDateTime>,
    /// Packets it brought us at `POST /ilp` in this server process, and how they ended.
    #[serde(default)]
    pub packets_in: crate::ase::traffic::Packets,
    /// Packets we sent through it in this server process, and how they ended.
    #[serde(default)]
    pub packets_out: crate::ase::traffic::Packets,
    /// The last reject either way (this server process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reject: Option<crate::ase::traffic::LastReject>,
    /// Incoming tokens generated by this request: shown once, stored only as digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generated_incoming_tokens: Vec<String>,
    /// Its alert threshold on liquidity (minor units of its asset): warned when what may still be sent
    /// through it drops under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liquidity_threshold: Option<i64>,
    /// Its alert threshold on credit used: warned when what it owes us rises over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_threshold: Option<i64>,
}

impl PeerView {
    pub fn of(p: &crate::ase::peers::Peer, balances: &[Balance]) -> Self {
        let balance = balances
            .iter()
            .find(|b| {
                b.kind == "peer"
                    && b.peer.as_deref() == Some(p.name.as_str())
                    && b.asset_code == p.asset.code
                    && b.asset_scale == p.asset.scale
            })
            .map_or(0, |b| b.balance);
        let liquidity = balances
            .iter()
            .find(|b| {
                b.kind == "liquidity"
                    && b.peer.as_deref() == Some(p.name.as_str())
                    && b.asset_code == p.asset.code
                    && b.asset_scale == p.asset.scale
            })
            .map_or(0, |b| b.balance);
        Self {
            name: p.name.clone(),
            source: p.source.as_str().into(),
            ilp_address: p.ilp_address.as_ref().map(|a| a.as_str().to_owned()),
            asset_code: p.asset.code.clone(),
            asset_scale: p.asset.scale,
            incoming_tokens: p.incoming_tokens(),
            receives: p.incoming_tokens() > 0,
            outgoing_endpoint: p.outgoing().map(|o| o.endpoint.clone()),
            routes: p.routes().into_iter().map(str::to_owned).collect(),
            max_packet_amount: p.max_packet_amount,
            peer_account_balance: balance,
            liquidity,
            position: balance,
            owed: balance.max(0),
            in_flight: 0,
            send_limited: false,
            available_to_send: None,
            credit_limit: None,
            credit_used: crate::ase::liquidity::credit_used(balance),
            created_at: p.created_at,
            updated_at: p.updated_at,
            packets_in: Default::default(),
            packets_out: Default::default(),
            last_reject: None,
            generated_incoming_tokens: Vec::new(),
            liquidity_threshold: None,
            credit_threshold: None,
        }
    }
}

impl PeerView {
    /// `v` minor units of the link's asset, for people: `12.50 USD`.
    pub fn amount(&self, v: i128) -> String {
        format!(
            "{} {}",
            crate::money::format_minor(v, self.asset_scale),
            crate::text::sanitize(&self.asset_code)
        )
    }

    /// Its alert thresholds, in words: `liquidity under 50.00 USD, credit used over 200.00 USD`, or `none`.
    pub fn thresholds_words(&self) -> String {
        let words: Vec<String> = [
            self.liquidity_threshold
                .map(|t| format!("liquidity under {}", self.amount(t.into()))),
            self.credit_threshold
                .map(|t| format!("credit used over {}", self.amount(t.into()))),
        ]
        .into_iter()
        .flatten()
        .collect();
        if words.is_empty() {
            "none".to_owned()
        } else {
            words.join(", ")
        }
    }

    /// Who owes whom, in words: `we owe bank 2.50 USD`, `bank owes us 1.00 USD`, `nobody owes anything`.
    pub fn position_words(&self) -> String {
        let (name, amount) = (
            crate::text::sanitize(&self.name),
            self.amount(self.position.unsigned_abs().into()),
        );
        match self.position {
            0 => "nobody owes anything".to_owned(),
            v if v > 0 => format!("we owe {name} {amount}"),
            _ => format!("{name} owes us {amount}"),
        }
    }

    /// The view with the thresholds set on the peer.
    pub fn with_thresholds(mut self, set: &[(crate::thresholds::Measure, i64)]) -> Self {
        for (measure, threshold) in set {
            match measure {
                crate::thresholds::Measure::PeerLiquidity => self.liquidity_threshold = Some(*threshold),
                crate::thresholds::Measure::PeerCredit => self.credit_threshold = Some(*threshold),
                crate::thresholds::Measure::WalletBalance => {}
            }
        }
        self
    }

    /// The view with the peer's traffic in this process.
    pub fn with_traffic(mut self, t: crate::ase::traffic::PeerTraffic) -> Self {
        self.packets_in = t.packets_in;
        self.packets_out = t.packets_out;
        self.last_reject = t.last_reject;
        self
    }

    /// The view with the peer's liquidity status (limits, balances and what is in flight).
    pub fn with_status(mut self, st: &crate::ase::liquidity::LiquidityStatus) -> Self {
        self.liquidity = st.liquidity;
        self.position = st.position;
        self.peer_account_balance = st.position;
        self.owed = st.position.max(0);
        self.in_flight = st.in_flight;
        self.send_limited = st.send_limited;
        self.available_to_send = st.available_to_send;
        self.credit_limit = st.credit_limit;
        self.credit_used = st.credit_used;
        self
    }
}

/// `POST /admin/peers/{name}/liquidity`: `{"deposit": "1000"}` or `{"withdraw": "1000"}` (minor units of the
/// peer's asset), with an optional `transferId` that makes it idempotent.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiquidityMove {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deposit: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdraw: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_id: Option<String>,
}

impl LiquidityMove {
    /// A deposit (or a withdrawal) of `value`, not idempotent.
    pub fn of(deposit: bool, value: Value) -> Self {
        Self {
            deposit: deposit.then_some(value),
            withdraw: (!deposit).then_some(value),
            transfer_id: None,
        }
    }
}

/// `POST /admin/peers/{name}/settlements`: who paid whom outside ILP, how much (minor units of the peer's
/// asset), and an optional id that makes it idempotent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewSettlement {
    pub direction: crate::ase::liquidity::Direction,
    pub amount: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The answer to a liquidity change or a settlement: the ledger transfer and the peer as it is now.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerMoved {
    pub transfer: Transfer,
    pub peer: PeerView,
}

/// `GET /admin/overview`: the console's counters and the balances of the accounts that stand (wallets,
/// settlement, peers, liquidity; each outgoing payment's own account is left out).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub pending_grants: usize,
    pub open_incoming: usize,
    pub failed_outgoing: usize,
    pub balances: Vec<Balance>,
    /// What is moving and waiting (absent from older servers: empty).
    #[serde(default)]
    pub activity: Activity,
    /// SQLite's write-ahead log against its ceiling (absent on PostgreSQL and from older servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal: Option<crate::store::wal::WalState>,
    /// What needs the operator's attention now, most pressing kinds first (empty when all is well).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attention: Vec<Attention>,
}

/// Something that needs the operator's attention: the Overview's Attention box and the header's badge (and an
/// alert in `contrib/prometheus/alerts.yml` for each kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attention {
    pub kind: AttentionKind,
    /// What, in words (`peer happy-life: liquidity 12.00 USD, under its threshold of 50.00 USD`).
    pub what: String,
}

/// The kinds of [`Attention`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AttentionKind {
    /// A peer's liquidity under its threshold.
    PeerLiquidityLow,
    /// What a peer owes us over its threshold.
    PeerCreditHigh,
    /// A wallet's balance under its threshold.
    WalletBalanceLow,
    /// Webhook deliveries that spent their retry budget.
    DeadWebhooks,
    /// Grants waiting for a decision past half their interaction window.
    GrantsWaiting,
    /// Outgoing payments that failed in the last hour.
    FailedPayments,
    /// SQLite's write-ahead log over 80 % of its ceiling.
    WalNearCeiling,
    /// A PostgreSQL node that does not hear the others (it reads from the database instead of its caches).
    CachesNotTrusted,
}

/// Minutes of money movement the overview shows.
pub const ACTIVITY_MINUTES: usize = 15;

/// The overview's activity: money moved per asset over the last minutes, work waiting, recent failures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Activity {
    /// The last (current) minute of `moved`, `YYYY-MM-DDTHH:MM` (UTC).
    pub until: String,
    /// Per asset, minor units of posted transfers in each of the last [`ACTIVITY_MINUTES`] minutes (oldest
    /// first).
    pub moved: Vec<AssetMoved>,
    /// Outgoing payments being sent.
    pub sending: usize,
    /// Webhook deliveries waiting (pending) and given up on (dead).
    pub webhooks_pending: usize,
    pub webhooks_dead: usize,
    /// The latest failed outgoing payments, newest first.
    pub recent_failures: Vec<FailedPayment>,
    /// Each peer's last rejected packet in this server process (a pair without a rate, a credit limit), newest
    /// first.
    #[serde(default)]
    pub rejected_packets: Vec<RejectedPacket>,
}

/// A peer's last rejected packet, as the Overview's recent failures show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RejectedPacket {
    pub peer: String,
    #[serde(flatten)]
    pub reject: crate::ase::traffic::LastReject,
}

/// Money moved in one asset, per minute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetMoved {
    pub asset_code: String,
    pub asset_scale: u8,
    pub per_minute: Vec<i64>,
}

/// A failed outgoing payment, briefly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedPayment {
    pub id: String,
    pub wallet: String,
    pub reason: Option<String>,
    pub at: String,
}

/// `GET /admin/wallet-summaries`: a wallet address with its balance and how many keys it publishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletSummary {
    pub wallet: Wallet,
    pub balance: Balance,
    pub keys: usize,
}

/// `GET /admin/server`: what the server is, for an attached console's header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub version: String,
    pub pid: u32,
    pub listen: String,
    pub public_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ilp_address: Option<String>,
    pub database: String,
    /// Whether a webhook URL is configured (deliveries are made); absent from older servers.
    #[serde(default)]
    pub webhooks_enabled: bool,
}

/// What lifting a lockout on the interaction page did: how many failed owner sign-ins were forgotten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unlocked {
    pub forgotten: usize,
}

impl Unlocked {
    /// The outcome in words, for the console and the CLI alike.
    pub fn words(&self) -> String {
        format!(
            "{} failed sign-in(s) forgotten: the owner may sign in again",
            self.forgotten
        )
    }
}
