//! Operator commands on ILP peers (`peers list|show|add|update|remove|liquidity|settle|set-threshold`) and how a peer reads
//! for people.
//! Prints only through [`super::print`].

use clap::{Args, Subcommand};
use color_eyre::eyre::Result;

use super::{
    Backend,
    print::{Columns, Human, emit},
    thresholds::PeerMeasure,
};
use crate::{
    ase::{liquidity::Direction, peers::PeerPatch},
    control::{
        Command, Query,
        dto::{LiquidityMove, NewPeer, NewSettlement, PeerMoved, PeerView},
    },
    money::{Value, format_minor},
};

#[derive(Debug, Subcommand)]
pub enum PeersCmd {
    /// List the peers (tokens are never shown) with their account balances.
    List,
    /// Show one peer.
    Show { name: String },
    /// Add a peer (stored in the database; `[[ilp.peers]]` in config.toml is the other way).
    Add {
        name: String,
        /// The link's asset code, e.g. USD.
        #[arg(long)]
        asset: String,
        /// The link's asset scale.
        #[arg(long, default_value_t = 2)]
        scale: u8,
        #[command(flatten)]
        fields: PeerFields,
    },
    /// Change a peer added with `peers add` (flags not given stay as they are).
    Update {
        name: String,
        #[command(flatten)]
        fields: PeerFields,
        /// Forget the peer's ILP address.
        #[arg(long, conflicts_with = "ilp_address")]
        no_ilp_address: bool,
        /// Stop sending through the peer (forget its outgoing endpoint and token).
        #[arg(long, conflicts_with_all = ["outgoing_endpoint", "outgoing_token", "route"])]
        no_outgoing: bool,
        /// Remove the packet limit.
        #[arg(long, conflicts_with = "max_packet_amount")]
        no_max_packet_amount: bool,
        /// What the peer may owe us unsettled, in the link's minor units (config peers too); past it, its
        /// packets are refused T04.
        #[arg(long, value_name = "AMOUNT")]
        credit_limit: Option<String>,
        /// Remove the credit limit.
        #[arg(long, conflicts_with = "credit_limit")]
        no_credit_limit: bool,
    },
    /// Deposit or withdraw a peer's liquidity: what the peer lets us owe it (amount in the link's minor
    /// units). After the first deposit nothing is sent through the peer beyond it.
    Liquidity {
        name: String,
        action: LiquidityAction,
        amount: String,
        /// Idempotency id: the same id is applied once.
        #[arg(long)]
        id: Option<String>,
    },
    /// Record a settlement with a peer made outside ILP: `paid` (we paid the peer) or `received` (the peer
    /// paid us), amount in the link's minor units.
    Settle {
        name: String,
        direction: SettleDirection,
        amount: String,
        /// Idempotency id: the same id is applied once.
        #[arg(long)]
        id: Option<String>,
    },
    /// Remove a peer added with `peers add` (refused while payments are sending through it).
    Remove { name: String },
    /// Set an alert threshold on the peer, in the link's minor units: `liquidity` warns when what may still
    /// be sent through it drops under it, `credit` when what it owes us rises over it (config peers too;
    /// `opdesk thresholds` lists them).
    SetThreshold {
        name: String,
        measure: PeerMeasure,
        #[arg(required_unless_present = "remove")]
        amount: Option<String>,
        /// Remove the threshold.
        #[arg(long, conflicts_with = "amount")]
        remove: bool,
    },
}

/// `peers liquidity NAME deposit|withdraw AMOUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LiquidityAction {
    Deposit,
    Withdraw,
}

/// `peers settle NAME paid|received AMOUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SettleDirection {
    /// We paid the peer.
    Paid,
    /// The peer paid us.
    Received,
}

/// What `peers add` and `peers update` set.
#[derive(Debug, Clone, Args)]
pub struct PeerFields {
    /// The peer's own ILP address (told to it by IL-DCP; its route when no --route is given).
    #[arg(long)]
    pub ilp_address: Option<String>,
    /// A token the peer presents at POST /ilp (repeat for several; on update, replaces them all).
    #[arg(long = "incoming-token", value_name = "TOKEN")]
    pub incoming_tokens: Vec<String>,
    /// Generate an incoming token and print it once (give it to the peer).
    #[arg(long)]
    pub generate_incoming_token: bool,
    /// The peer's ILP-over-HTTP endpoint, for payments we send through it.
    #[arg(long)]
    pub outgoing_endpoint: Option<String>,
    /// The bearer token we present at the outgoing endpoint.
    #[arg(long)]
    pub outgoing_token: Option<String>,
    /// An ILP address prefix reached through the peer (repeat for several; on update, replaces them all).
    #[arg(long)]
    pub route: Vec<String>,
    /// The largest packet amount, in the link's minor units.
    #[arg(long)]
    pub max_packet_amount: Option<u64>,
}

/// `peers list|show|add|update|remove`.
pub(super) async fn peers(b: &Backend, cmd: PeersCmd, json: bool) -> Result<()> {
    match cmd {
        PeersCmd::List => b.show(Query::Peers, json).await,
        PeersCmd::Show { name } => b.show(Query::Peer { name }, json).await,
        PeersCmd::Add {
            name,
            asset,
            scale,
            fields,
        } => {
            let body = NewPeer {
                name,
                ilp_address: fields.ilp_address,
                asset_code: asset,
                asset_scale: scale,
                incoming_tokens: fields.incoming_tokens,
                generate_incoming_token: fields.generate_incoming_token,
                outgoing_endpoint: fields.outgoing_endpoint,
                outgoing_token: fields.outgoing_token,
                routes: fields.route,
                max_packet_amount: fields.max_packet_amount,
            };
            b.report::<PeerView>(Command::CreatePeer(body), json).await
        }
        PeersCmd::Update {
            name,
            fields,
            no_ilp_address,
            no_outgoing,
            no_max_packet_amount,
            credit_limit,
            no_credit_limit,
        } => {
            let patch = PeerPatch {
                credit_limit: set_or_clear(no_credit_limit, credit_limit.as_deref().map(minor).transpose()?),
                ilp_address: set_or_clear(no_ilp_address, fields.ilp_address),
                incoming_tokens: (!fields.incoming_tokens.is_empty()).then_some(fields.incoming_tokens),
                generate_incoming_token: fields.generate_incoming_token,
                outgoing_endpoint: set_or_clear(no_outgoing, fields.outgoing_endpoint),
                outgoing_token: set_or_clear(no_outgoing, fields.outgoing_token),
                routes: if no_outgoing {
                    Some(Vec::new())
                } else {
                    (!fields.route.is_empty()).then_some(fields.route)
                },
                max_packet_amount: set_or_clear(no_max_packet_amount, fields.max_packet_amount),
            };
            b.report::<PeerView>(Command::UpdatePeer { name, patch }, json).await
        }
        PeersCmd::Liquidity {
            name,
            action,
            amount,
            id,
        } => {
            let value = minor(&amount)?;
            let deposit = action == LiquidityAction::Deposit;
            let body = LiquidityMove {
                deposit: deposit.then_some(value),
                withdraw: (!deposit).then_some(value),
                transfer_id: id,
            };
            let cmd = Command::MovePeerLiquidity {
                peer: name,
                liquidity: body,
            };
            b.tell::<PeerMoved>(cmd, json).await
        }
        PeersCmd::Settle {
            name,
            direction,
            amount,
            id,
        } => {
            let body = NewSettlement {
                direction: match direction {
                    SettleDirection::Paid => Direction::Paid,
                    SettleDirection::Received => Direction::Received,
                },
                amount: minor(&amount)?,
                id,
            };
            let cmd = Command::SettlePeer {
                peer: name,
                settlement: body,
            };
            b.tell::<PeerMoved>(cmd, json).await
        }
        PeersCmd::Remove { name } => {
            let ((), said) = b.said(Command::RemovePeer { name: name.clone() }).await?;
            emit(json, &serde_json::json!({ "removed": name }), || format!("{said}\n"))
        }
        PeersCmd::SetThreshold {
            name, measure, amount, ..
        } => super::thresholds::set(b, measure.into(), name, amount, json).await,
    }
}

/// A patch field: cleared (`--no-…`), set to the flag's value, or left as it is (no flag).
fn set_or_clear<T>(clear: bool, value: Option<T>) -> Option<Option<T>> {
    if clear { Some(None) } else { value.map(Some) }
}

/// An amount argument: whole minor units of the link's asset.
fn minor(text: &str) -> Result<Value> {
    super::minor(text, "amount", "the peer's")
}

/// What may still be sent through the peer, for people.
fn available(p: &PeerView) -> String {
    match p.available_to_send {
        Some(a) => format!("{} {}", format_minor(a.into(), p.asset_scale), p.asset_code),
        None => "not limited".into(),
    }
}

impl Human for PeerView {
    const COLUMNS: Columns<Self> = &[
        ("NAME", |p| p.name.clone()),
        ("ASSET", |p| format!("{}/{}", p.asset_code, p.asset_scale)),
        ("SOURCE", |p| p.source.clone()),
        ("RECEIVES", |p| {
            let s = if p.incoming_tokens == 1 { "" } else { "s" };
            if p.receives {
                format!("yes ({} token{s})", p.incoming_tokens)
            } else {
                "no".into()
            }
        }),
        ("SENDS TO", |p| p.outgoing_endpoint.clone().unwrap_or_default()),
        ("ROUTES", |p| p.routes.join(",")),
        ("BALANCE", |p| {
            format_minor(p.peer_account_balance.into(), p.asset_scale)
        }),
        ("LIQUIDITY", |p| format_minor(p.liquidity.into(), p.asset_scale)),
        ("AVAILABLE", |p| {
            let available = p.available_to_send.map(|a| format_minor(a.into(), p.asset_scale));
            available.unwrap_or_else(|| "-".into())
        }),
        ("CREDIT", |p| {
            let limit = p.credit_limit.map(|l| format_minor(l.into(), p.asset_scale));
            let used = format_minor(p.credit_used.into(), p.asset_scale);
            format!("{used}/{}", limit.unwrap_or_else(|| "-".into()))
        }),
    ];

    /// One peer; a generated token is printed once, with what to do with it.
    fn card(&self) -> String {
        let p = self;
        let mut out = format!(
            "{} ({})\n  asset:           {}/{}\n  ILP address:     {}\n  incoming tokens: {}\n  sends to:        {}\n  routes:          {}\n  max packet:      {}\n  balance:         {}\n",
            p.name,
            p.source,
            p.asset_code,
            p.asset_scale,
            p.ilp_address.as_deref().unwrap_or("-"),
            p.incoming_tokens,
            p.outgoing_endpoint.as_deref().unwrap_or("-"),
            if p.routes.is_empty() {
                "-".into()
            } else {
                p.routes.join(", ")
            },
            p.max_packet_amount.map_or_else(|| "no limit".into(), |m| m.to_string()),
            format_minor(p.peer_account_balance.into(), p.asset_scale),
        );
        out.push_str(&format!(
            "  position:        {} ({})\n  liquidity:       {}\n  in flight:       {}\n  available:       {}\n  credit limit:    {}\n  credit used:     {}\n  thresholds:      {}\n",
            format_minor(p.position.into(), p.asset_scale),
            p.position_words(),
            format_minor(p.liquidity.into(), p.asset_scale),
            format_minor(p.in_flight.into(), p.asset_scale),
            available(p),
            p.credit_limit
                .map_or_else(|| "no limit".into(), |l| format_minor(l.into(), p.asset_scale)),
            format_minor(p.credit_used.into(), p.asset_scale),
            p.thresholds_words(),
        ));
        for t in &p.generated_incoming_tokens {
            out.push_str(&format!(
                "  generated incoming token (shown once; the peer sends it as its bearer token to our /ilp):\n    {t}\n"
            ));
        }
        out
    }
}
