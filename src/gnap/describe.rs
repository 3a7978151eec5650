//! A grant request in plain words, for the person who decides on it: the interaction page, the CLI and the
//! console all show these lines. Amounts are formatted with their asset's scale; intervals in words.
//! Client-supplied text is stripped of control characters so it cannot drive a terminal.

use super::model::{AccessItem, Action, Subject};
use crate::{interval::RepeatingInterval, text::sanitize};

fn actions(a: &[Action]) -> String {
    a.iter()
        .map(|x| x.as_str().replace('-', " "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per access item (and subject), e.g.
/// `send payments from http://…/alice (create, read): up to 5.00 USD per month, 12 times, to http://…`.
/// Powers over other clients' resources (`list-all`, `read-all`, and `complete` on a wallet in an
/// `interactive` grant, which the owner's approval extends to every payment of it) are spelled out.
pub fn grant(
    client: &str,
    client_name: Option<&str>,
    access: &[AccessItem],
    subject: Option<&Subject>,
    interactive: bool,
) -> Vec<String> {
    let who = match client_name {
        Some(n) => format!("{} ({})", sanitize(n), sanitize(client)),
        None => sanitize(client),
    };
    let mut lines = vec![format!("{who} asks for:")];
    for item in access {
        let line = match item {
            AccessItem::IncomingPayment { actions: a, identifier } => {
                let wallet = identifier
                    .as_deref()
                    .map(sanitize)
                    .unwrap_or_else(|| "any wallet of this ASE".into());
                let mut powers = Vec::new();
                if a.contains(&Action::ListAll) {
                    powers.push("list EVERY incoming payment of it, whoever created it, with amounts and metadata");
                }
                if a.contains(&Action::ReadAll) {
                    powers.push("read ANY of its incoming payments, with amounts, metadata and payment details");
                }
                if a.contains(&Action::Complete) && identifier.is_some() && interactive {
                    powers.push("complete ANY of its incoming payments, which stops their senders");
                }
                let mut s = format!("receive payments into {wallet} ({})", actions(a));
                if !powers.is_empty() {
                    s.push_str(": may ");
                    s.push_str(&powers.join("; "));
                }
                s
            }
            AccessItem::Quote { actions: a } => {
                let mut s = format!("quotes ({})", actions(a));
                if a.contains(&Action::ReadAll) {
                    s.push_str(": may read ANY quote of this ASE's wallets, whoever created it");
                }
                s
            }
            AccessItem::OutgoingPayment {
                actions: a,
                identifier,
                limits,
            } => {
                let mut s = format!("send payments from {} ({})", sanitize(identifier), actions(a));
                match limits {
                    None => s.push_str(": no limit"),
                    Some(l) => {
                        let amount = match (&l.debit_amount, &l.receive_amount) {
                            (Some(d), _) => format!("up to {d} debited"),
                            (None, Some(r)) => format!("up to {r} received"),
                            (None, None) => "no amount limit".into(),
                        };
                        s.push_str(": ");
                        s.push_str(&amount);
                        if let Some(i) = &l.interval {
                            match i.parse::<RepeatingInterval>() {
                                Ok(iv) => match iv.describe_per() {
                                    Some(per) => s.push_str(&format!(" {per} ({})", iv.describe())),
                                    None => s.push_str(&format!(", {}", iv.describe())),
                                },
                                Err(_) => s.push_str(&format!(", interval {}", sanitize(i))),
                            }
                        }
                        if let Some(r) = &l.receiver {
                            s.push_str(&format!(", only to {}", sanitize(r)));
                        }
                    }
                }
                s
            }
        };
        lines.push(format!("  - {line}"));
    }
    if let Some(sub) = subject {
        for id in &sub.sub_ids {
            lines.push(format!("  - confirm that you own {}", sanitize(&id.id)));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outgoing_limits_in_words() {
        let item: AccessItem = serde_json::from_value(serde_json::json!({
            "type":"outgoing-payment","actions":["create","read"],"identifier":"https://a.test/alice",
            "limits":{"debitAmount":{"value":"500","assetCode":"USD","assetScale":2},
                      "interval":"R11/2026-01-01T00:00:00Z/P1M","receiver":"https://b.test/incoming-payments/1"}}))
        .unwrap();
        let lines = grant("https://c.test/app", Some("Shop\u{1b}[31m"), &[item], None, true);
        assert_eq!(lines[0], "Shop[31m (https://c.test/app) asks for:");
        assert!(
            lines[1].contains("send payments from https://a.test/alice (create, read): up to 5.00 USD debited"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("month"), "{}", lines[1]);
        assert!(lines[1].contains("only to https://b.test/incoming-payments/1"));
    }

    #[test]
    fn all_actions_in_plain_words() {
        let item = |v: serde_json::Value| -> AccessItem { serde_json::from_value(v).unwrap() };
        let lines = grant(
            "https://c.test/app",
            None,
            &[
                item(
                    serde_json::json!({"type":"incoming-payment","actions":["list-all","read-all","complete"],
                    "identifier":"https://a.test/bob"}),
                ),
                item(serde_json::json!({"type":"quote","actions":["create","read-all"]})),
            ],
            None,
            true,
        );
        assert!(
            lines[1].contains("receive payments into https://a.test/bob (list all, read all, complete)"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains("list EVERY incoming payment of it, whoever created it"),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("read ANY of its incoming payments"), "{}", lines[1]);
        assert!(
            lines[1].contains("complete ANY of its incoming payments"),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains("read ANY quote"), "{}", lines[2]);
        let plain = grant(
            "https://c.test/app",
            None,
            &[item(
                serde_json::json!({"type":"incoming-payment","actions":["create","complete"]}),
            )],
            None,
            false,
        );
        assert_eq!(
            plain[1],
            "  - receive payments into any wallet of this ASE (create, complete)"
        );
    }
}
