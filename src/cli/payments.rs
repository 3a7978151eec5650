//! Operator commands on payments: `incoming`, `outgoing` and `quotes` (list a page, show one, act on one), and
//! how payments and quotes read for people. Prints only through [`super::print`].

use clap::{Args, Subcommand};
use color_eyre::eyre::Result;

use super::{
    Backend,
    print::{self, Columns, Human},
};
use crate::{
    ase::{incoming::IncomingView, metadata::Metadata, outgoing::OutgoingView, quotes::QuoteDto},
    control::{Command, Found, Query, dto::PaymentFilter},
};

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Only this wallet's.
    #[arg(long)]
    pub wallet: Option<String>,
    /// Continue after this id (the previous page's next cursor).
    #[arg(long)]
    pub cursor: Option<String>,
    /// How many (default 50).
    #[arg(long)]
    pub first: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum IncomingCmd {
    /// List incoming payments, newest first. Shared secrets are masked; --reveal prints them.
    List {
        #[command(flatten)]
        list: ListArgs,
        /// pending, completed or expired.
        #[arg(long)]
        state: Option<String>,
        /// Print the ILP shared secrets (`sharedSecret`) instead of masking them.
        #[arg(long)]
        reveal: bool,
    },
    /// Show one (id or URL). Its shared secret is masked; --reveal prints it.
    Show {
        id: String,
        /// Print the ILP shared secret (`sharedSecret`) instead of masking it.
        #[arg(long)]
        reveal: bool,
    },
    /// Complete a pending incoming payment: it accepts no more money.
    Complete { id: String },
}

#[derive(Debug, Subcommand)]
pub enum OutgoingCmd {
    /// List outgoing payments, newest first.
    List {
        #[command(flatten)]
        list: ListArgs,
        /// sending, completed, failed or cancelled.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show one (id or URL), with its failure reason if it failed.
    Show { id: String },
    /// Cancel a payment that has not sent anything yet; its reservation is released.
    Cancel { id: String },
    /// Retry a failed payment (a new attempt) when its quote and receiver still allow it.
    Retry { id: String },
}

#[derive(Debug, Subcommand)]
pub enum QuotesCmd {
    /// List quotes, newest first.
    List {
        #[command(flatten)]
        list: ListArgs,
    },
    /// Show one (id or URL).
    Show { id: String },
}

/// An id from an id or a resource URL.
fn id_of(s: &str) -> String {
    s.trim_end_matches('/').rsplit('/').next().unwrap_or(s).to_owned()
}

/// The list filter from the list flags.
fn filter(list: ListArgs, state: Option<String>) -> PaymentFilter {
    PaymentFilter {
        wallet: list.wallet,
        state,
        cursor: list.cursor,
        first: list.first,
        ..PaymentFilter::default()
    }
}

/// `incoming list|show|complete`.
pub(super) async fn incoming(b: &Backend, cmd: IncomingCmd, json: bool) -> Result<()> {
    let (query, reveal) = match cmd {
        IncomingCmd::List { list, state, reveal } => (
            Query::Incoming {
                filter: filter(list, state),
            },
            reveal,
        ),
        IncomingCmd::Show { id, reveal } => (Query::IncomingPayment { id: id_of(&id) }, reveal),
        IncomingCmd::Complete { id } => {
            let id = id_of(&id);
            return b.report::<IncomingView>(Command::CompleteIncoming { id }, json).await;
        }
    };
    let mut found = b.ask(query).await?;
    if !reveal {
        match &mut found {
            Found::Incoming(l) => l.items.iter_mut().for_each(mask_secrets),
            Found::IncomingPayment(p) => mask_secrets(p),
            _ => {}
        }
    }
    print::found(json, &found)
}

/// Replaces every `sharedSecret` in the payment's `methods` with the request log's masked form (the JSON
/// keeps its shape; `--reveal` skips this).
fn mask_secrets(p: &mut IncomingView) {
    for m in p.payment.methods.iter_mut().flatten() {
        if let Some(secret) = m.get_mut("sharedSecret").filter(|s| s.is_string()) {
            *secret = serde_json::Value::String(crate::server::request_log::MASKED.to_owned());
        }
    }
}

/// The client's metadata as one line of JSON (control characters escaped), if there is any.
fn metadata_line(label: &str, m: Option<&Metadata>) -> String {
    m.map(|m| format!("  {label}{m}\n")).unwrap_or_default()
}

impl Human for IncomingView {
    const COLUMNS: Columns<Self> = &[
        ("ID", |p| id_of(&p.payment.id)),
        ("WALLET", |p| p.wallet.clone()),
        ("STATE", |p| p.state.to_string()),
        ("RECEIVED", |p| p.payment.received_amount.to_string()),
        ("EXPECTED", |p| {
            let expected = p.payment.incoming_amount.as_ref();
            expected.map_or_else(|| "open".into(), ToString::to_string)
        }),
        ("EXPIRES", |p| {
            p.payment.expires_at.map(crate::clock::format_ts).unwrap_or_default()
        }),
    ];

    fn card(&self) -> String {
        let p = &self.payment;
        let mut out = format!(
            "{}  [{}]\n  wallet:   {}\n  received: {} of {}\n  expires:  {}\n  client:   {}\n",
            p.id,
            self.state,
            p.wallet_address,
            p.received_amount,
            p.incoming_amount
                .as_ref()
                .map_or_else(|| "an open amount".into(), ToString::to_string),
            p.expires_at.map_or_else(|| "never".into(), crate::clock::format_ts),
            self.client.clone().unwrap_or_else(|| "(operator)".into()),
        );
        out.push_str(&metadata_line("metadata: ", p.metadata.as_ref()));
        out
    }
}

/// `outgoing list|show|cancel|retry`.
pub(super) async fn outgoing(b: &Backend, cmd: OutgoingCmd, json: bool) -> Result<()> {
    let cmd = match cmd {
        OutgoingCmd::List { list, state } => {
            return b
                .show(
                    Query::Outgoing {
                        filter: filter(list, state),
                    },
                    json,
                )
                .await;
        }
        OutgoingCmd::Show { id } => return b.show(Query::OutgoingPayment { id: id_of(&id) }, json).await,
        OutgoingCmd::Cancel { id } => Command::CancelOutgoing { id: id_of(&id) },
        OutgoingCmd::Retry { id } => Command::RetryOutgoing { id: id_of(&id) },
    };
    b.report::<OutgoingView>(cmd, json).await
}

impl Human for OutgoingView {
    const COLUMNS: Columns<Self> = &[
        ("ID", |p| id_of(&p.payment.id)),
        ("WALLET", |p| p.wallet.clone()),
        ("STATE", |p| p.state.to_string()),
        ("SENT", |p| p.payment.sent_amount.to_string()),
        ("DEBIT", |p| p.payment.debit_amount.to_string()),
        ("FAILURE", |p| p.failure_reason.clone().unwrap_or_default()),
    ];

    fn card(&self) -> String {
        let p = &self.payment;
        let mut out = format!(
            "{}  [{}]\n  from:      {}\n  to:        {}\n  debit:     {}\n  receive:   {}\n  sent:      {}\n  delivered: {}\n  attempts:  {}\n  created:   {}\n  updated:   {}\n",
            p.id,
            self.state,
            p.wallet_address,
            p.receiver,
            p.debit_amount,
            p.receive_amount,
            p.sent_amount,
            self.delivered_amount,
            self.attempts,
            crate::clock::format_ts(p.created_at),
            crate::clock::format_ts(self.updated_at),
        );
        if let Some(r) = &self.failure_reason {
            let label = if self.state.is_sending() {
                "waiting:  "
            } else {
                "failure:  "
            };
            let message = self.failure_message.as_deref().unwrap_or_default();
            out.push_str(&format!("  {label} {r}: {message}\n"));
        }
        out.push_str(&metadata_line("metadata:  ", p.metadata.as_ref()));
        out
    }
}

/// `quotes list|show`.
pub(super) async fn quotes(b: &Backend, cmd: QuotesCmd, json: bool) -> Result<()> {
    let query = match cmd {
        QuotesCmd::List { list } => Query::Quotes {
            filter: filter(list, None),
        },
        QuotesCmd::Show { id } => Query::Quote { id: id_of(&id) },
    };
    b.show(query, json).await
}

impl Human for QuoteDto {
    const COLUMNS: Columns<Self> = &[
        ("ID", |q| id_of(&q.id)),
        ("WALLET", |q| id_of(&q.wallet_address)),
        ("DEBIT", |q| q.debit_amount.to_string()),
        ("RECEIVE", |q| q.receive_amount.to_string()),
        ("EXPIRES", |q| crate::clock::format_ts(q.expires_at)),
    ];

    fn card(&self) -> String {
        format!(
            "{}\n  from:    {}\n  to:      {}\n  debit:   {}\n  receive: {}\n  expires: {}\n",
            self.id,
            self.wallet_address,
            self.receiver,
            self.debit_amount,
            self.receive_amount,
            crate::clock::format_ts(self.expires_at)
        )
    }
}
