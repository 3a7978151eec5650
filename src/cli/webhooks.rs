//! Operator commands on webhook deliveries (`webhooks list|retry`). Prints only through [`super::print`].

use color_eyre::eyre::Result;

use super::{
    Backend, WebhooksCmd, dispatch,
    print::{emit, list},
};
use crate::{control, states::DeliveryState, webhooks::DeliveryRow};

fn delivery_text(d: &DeliveryRow) -> String {
    let mut out = format!(
        "event {} ({}, id {})  [{}]\n  attempts: {}, next: {}\n",
        d.event_seq, d.kind, d.event_id, d.state, d.attempts, d.next_attempt_at
    );
    if let Some(e) = &d.last_error {
        out.push_str(&format!("  last error: {e}\n"));
    }
    out
}

/// `webhooks list|retry`.
pub(super) async fn webhooks(b: &Backend, cmd: WebhooksCmd, json: bool) -> Result<()> {
    match cmd {
        WebhooksCmd::List { state, first } => {
            let ds = dispatch!(
                b,
                c => c.list_webhooks(state.as_deref(), None, first),
                l => control::list_webhooks(&l.state, state.clone(), None, first)
            )?;
            list(
                json,
                &ds,
                &["EVENT", "TYPE", "STATE", "ATTEMPTS", "NEXT ATTEMPT", "LAST ERROR"],
                |d| {
                    vec![
                        d.event_seq.to_string(),
                        d.kind.clone(),
                        d.state.to_string(),
                        d.attempts.to_string(),
                        if d.state == DeliveryState::Pending {
                            crate::clock::format_ts(d.next_attempt_at)
                        } else {
                            "-".into()
                        },
                        d.last_error.clone().unwrap_or_else(|| "-".into()),
                    ]
                },
            )
        }
        WebhooksCmd::Retry { dead: true, .. } => {
            let n: usize = b.run(control::Command::RetryDeadWebhooks).await?;
            emit(json, &serde_json::json!({ "retried": n }), || {
                format!("{n} dead deliveries will be sent again\n")
            })
        }
        WebhooksCmd::Retry { seq, .. } => {
            let seq = seq.unwrap_or_default();
            let d: DeliveryRow = b.run(control::Command::RetryWebhook { seq }).await?;
            emit(json, &d, || delivery_text(&d))
        }
    }
}
