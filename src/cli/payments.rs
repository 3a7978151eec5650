//! Operator commands on payments: `incoming`, `outgoing` and `quotes` (list a page, show one, act on one).
//! Prints only through [`super::print`].

use color_eyre::eyre::Result;

use super::{
    Backend, IncomingCmd, ListArgs, OutgoingCmd, QuotesCmd, dispatch,
    print::{emit, page},
};
use crate::control::{self, dto::PaymentFilter};

/// An id from an id or a resource URL.
fn id_of(s: &str) -> String {
    s.trim_end_matches('/').rsplit('/').next().unwrap_or(s).to_owned()
}

/// The admin API's list filter from the list flags.
fn filter(list: ListArgs, state: Option<String>) -> PaymentFilter {
    PaymentFilter {
        wallet: list.wallet,
        state,
        cursor: list.cursor,
        first: list.first,
        q: None,
        methods: None,
    }
}

/// `incoming list|show|complete`.
pub(super) async fn incoming(b: &Backend, cmd: IncomingCmd, json: bool) -> Result<()> {
    let one = match cmd {
        IncomingCmd::List { list, state, reveal } => {
            let f = filter(list, state);
            let mut l = dispatch!(b, c => c.list_incoming(&f), l => control::list_incoming(&l.state, f.clone()))?;
            if !reveal {
                l.items.iter_mut().for_each(mask_secrets);
            }
            return page(
                json,
                &l,
                &["ID", "WALLET", "STATE", "RECEIVED", "EXPECTED", "EXPIRES"],
                |p| {
                    vec![
                        id_of(&p.payment.id),
                        p.wallet.clone(),
                        p.state.to_string(),
                        p.payment.received_amount.to_string(),
                        p.payment
                            .incoming_amount
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_else(|| "open".into()),
                        p.payment.expires_at.map(crate::clock::format_ts).unwrap_or_default(),
                    ]
                },
            );
        }
        IncomingCmd::Show { id, reveal } => {
            let id = id_of(&id);
            let mut one = dispatch!(b, c => c.show_incoming(&id), l => control::show_incoming(&l.state, &id))?;
            if !reveal {
                mask_secrets(&mut one);
            }
            one
        }
        IncomingCmd::Complete { id } => {
            let id = id_of(&id);
            b.run(control::Command::CompleteIncoming { id }).await?
        }
    };
    emit(json, &one, || {
        let mut out = format!(
            "{}  [{}]\n  wallet:   {}\n  received: {} of {}\n  expires:  {}\n  client:   {}\n",
            one.payment.id,
            one.state,
            one.payment.wallet_address,
            one.payment.received_amount,
            one.payment
                .incoming_amount
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_else(|| "an open amount".into()),
            one.payment
                .expires_at
                .map_or_else(|| "never".into(), crate::clock::format_ts),
            one.client.clone().unwrap_or_else(|| "(operator)".into()),
        );
        out.push_str(&metadata_line("metadata: ", one.payment.metadata.as_ref()));
        out
    })
}

/// Replaces every `sharedSecret` in the payment's `methods` with the request log's masked form (the JSON
/// keeps its shape; `--reveal` skips this).
fn mask_secrets(p: &mut crate::ase::incoming::IncomingView) {
    for m in p.payment.methods.iter_mut().flatten() {
        if let Some(secret) = m.get_mut("sharedSecret").filter(|s| s.is_string()) {
            *secret = serde_json::Value::String(crate::server::request_log::MASKED.to_owned());
        }
    }
}

/// The client's metadata as one line of JSON (control characters escaped), if there is any.
fn metadata_line(label: &str, m: Option<&crate::ase::metadata::Metadata>) -> String {
    m.map(|m| format!("  {label}{m}\n")).unwrap_or_default()
}

/// `outgoing list|show|cancel|retry`.
pub(super) async fn outgoing(b: &Backend, cmd: OutgoingCmd, json: bool) -> Result<()> {
    let one = match cmd {
        OutgoingCmd::List { list, state } => {
            let f = filter(list, state);
            let l = dispatch!(b, c => c.list_outgoing(&f), l => control::list_outgoing(&l.state, f.clone()))?;
            return page(json, &l, &["ID", "WALLET", "STATE", "SENT", "DEBIT", "FAILURE"], |p| {
                vec![
                    id_of(&p.payment.id),
                    p.wallet.clone(),
                    p.state.to_string(),
                    p.payment.sent_amount.to_string(),
                    p.payment.debit_amount.to_string(),
                    p.failure_reason.clone().unwrap_or_default(),
                ]
            });
        }
        OutgoingCmd::Show { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.show_outgoing(&id), l => control::show_outgoing(&l.state, &id))?
        }
        OutgoingCmd::Cancel { id } => {
            let id = id_of(&id);
            b.run(control::Command::CancelOutgoing { id }).await?
        }
        OutgoingCmd::Retry { id } => {
            let id = id_of(&id);
            b.run(control::Command::RetryOutgoing { id }).await?
        }
    };
    emit(json, &one, || {
        let mut out = format!(
            "{}  [{}]\n  from:      {}\n  to:        {}\n  debit:     {}\n  receive:   {}\n  sent:      {}\n  delivered: {}\n  attempts:  {}\n  created:   {}\n  updated:   {}\n",
            one.payment.id,
            one.state,
            one.payment.wallet_address,
            one.payment.receiver,
            one.payment.debit_amount,
            one.payment.receive_amount,
            one.payment.sent_amount,
            one.delivered_amount,
            one.attempts,
            crate::clock::format_ts(one.payment.created_at),
            crate::clock::format_ts(one.updated_at),
        );
        if let Some(r) = &one.failure_reason {
            let label = if one.state.is_sending() {
                "waiting:  "
            } else {
                "failure:  "
            };
            out.push_str(&format!(
                "  {label} {r}: {}\n",
                one.failure_message.clone().unwrap_or_default()
            ));
        }
        out.push_str(&metadata_line("metadata:  ", one.payment.metadata.as_ref()));
        out
    })
}

/// `quotes list|show`.
pub(super) async fn quotes(b: &Backend, cmd: QuotesCmd, json: bool) -> Result<()> {
    let one = match cmd {
        QuotesCmd::List { list } => {
            let f = filter(list, None);
            let l = dispatch!(b, c => c.list_quotes(&f), l => control::list_quotes(&l.state, f.clone()))?;
            return page(json, &l, &["ID", "WALLET", "DEBIT", "RECEIVE", "EXPIRES"], |q| {
                vec![
                    id_of(&q.id),
                    id_of(&q.wallet_address),
                    q.debit_amount.to_string(),
                    q.receive_amount.to_string(),
                    crate::clock::format_ts(q.expires_at),
                ]
            });
        }
        QuotesCmd::Show { id } => {
            let id = id_of(&id);
            dispatch!(b, c => c.show_quote(&id), l => control::show_quote(&l.state, &id))?
        }
    };
    emit(json, &one, || {
        format!(
            "{}\n  from:    {}\n  to:      {}\n  debit:   {}\n  receive: {}\n  expires: {}\n",
            one.id, one.wallet_address, one.receiver, one.debit_amount, one.receive_amount, one.expires_at
        )
    })
}
