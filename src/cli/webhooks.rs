//! Operator commands on webhook deliveries (`webhooks list|retry`) and how a delivery reads for people. Prints
//! only through [`super::print`].

use clap::Subcommand;
use color_eyre::eyre::Result;

use super::{
    Backend,
    print::{Columns, Human, emit},
};
use crate::{
    control::{Command, Query, dto::WebhookPage},
    states::DeliveryState,
    webhooks::DeliveryRow,
};

#[derive(Debug, Subcommand)]
pub enum WebhooksCmd {
    /// List deliveries, newest first.
    List {
        /// pending, delivered or dead.
        #[arg(long)]
        state: Option<String>,
        /// How many (default 50).
        #[arg(long)]
        first: Option<usize>,
    },
    /// Re-drive a dead (or pending) delivery by its event's sequence number, or every dead one.
    Retry {
        #[arg(required_unless_present = "dead", conflicts_with = "dead")]
        seq: Option<i64>,
        /// Every dead delivery.
        #[arg(long)]
        dead: bool,
    },
}

impl Human for DeliveryRow {
    const COLUMNS: Columns<Self> = &[
        ("EVENT", |d| d.event_seq.to_string()),
        ("TYPE", |d| d.kind.clone()),
        ("STATE", |d| d.state.to_string()),
        ("ATTEMPTS", |d| d.attempts.to_string()),
        ("NEXT ATTEMPT", |d| {
            if d.state == DeliveryState::Pending {
                crate::clock::format_ts(d.next_attempt_at)
            } else {
                "-".into()
            }
        }),
        ("LAST ERROR", |d| d.last_error.clone().unwrap_or_else(|| "-".into())),
    ];

    fn card(&self) -> String {
        let mut out = format!(
            "event {} ({}, id {})  [{}]\n  attempts: {}, next: {}\n",
            self.event_seq,
            self.kind,
            self.event_id,
            self.state,
            self.attempts,
            crate::clock::format_ts(self.next_attempt_at)
        );
        if let Some(e) = &self.last_error {
            out.push_str(&format!("  last error: {e}\n"));
        }
        out
    }
}

/// `webhooks list|retry`.
pub(super) async fn webhooks(b: &Backend, cmd: WebhooksCmd, json: bool) -> Result<()> {
    match cmd {
        WebhooksCmd::List { state, first } => {
            let first = first.unwrap_or(WebhookPage::FIRST);
            b.show(
                Query::Webhooks(WebhookPage {
                    state,
                    before: None,
                    first,
                }),
                json,
            )
            .await
        }
        WebhooksCmd::Retry { dead: true, .. } => {
            let (n, said): (usize, _) = b.said(Command::RetryDeadWebhooks).await?;
            emit(json, &serde_json::json!({ "retried": n }), || format!("{said}\n"))
        }
        WebhooksCmd::Retry { seq, .. } => {
            let seq = seq.unwrap_or_default();
            b.report::<DeliveryRow>(Command::RetryWebhook { seq }, json).await
        }
    }
}
