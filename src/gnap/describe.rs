//! A grant request in plain words, for the person who decides on it: the interaction page, the CLI and the
//! console all show these lines. Amounts are formatted with their asset's scale; intervals in words.
//! Client-supplied text is stripped of control characters so it cannot drive a terminal. [`consent`] says what
//! approving means in four facts a non-engineer reads: who asks, to whom the money goes, the most that can
//! leave and why, and until when it can be decided.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::model::{AccessItem, Action, Subject};
use crate::{interval::RepeatingInterval, money::Amount, states::GrantState, text::sanitize};

/// One fact of what approving a grant means: a label (`Who asks`), the words, and a URL shown small beside
/// them. Every part is sanitized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub label: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Fact {
    fn new(label: &str, text: String, url: Option<&str>) -> Self {
        Self {
            label: label.to_owned(),
            text,
            url: url.map(sanitize),
        }
    }

    /// `Who asks: Seat 05's app (http://…/seat05-app)`: the fact on one line (CLI, console).
    pub fn line(&self) -> String {
        match &self.url {
            Some(u) => format!("{}: {} ({u})", self.label, self.text),
            None => format!("{}: {}", self.label, self.text),
        }
    }
}

/// The quote an outgoing-payment grant is for: what it debits, what the payee receives and who the payee is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quoted {
    pub receiver: String,
    pub debit: Amount,
    pub receive: Amount,
    /// The payee's public name (or wallet name) when the incoming payment is on this ASE.
    pub payee: Option<String>,
}

/// Where the decision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// Open until `by` (it is `now`).
    Open { by: OffsetDateTime, now: OffsetDateTime },
    /// Decided, expired or ended: the state it is in.
    Closed(GrantState),
}

/// What the consent words are made of.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub client: &'a str,
    pub client_name: Option<&'a str>,
    pub access: &'a [AccessItem],
    pub quote: Option<&'a Quoted>,
    pub deadline: Deadline,
    /// The wallet whose owner decides on the interaction page (`None`: the operator decides).
    pub owner: Option<&'a str>,
}

/// `seat05-app` for `http://host/seat05-app`: the last part of a client's URL, as a name of last resort.
fn last_segment(url: &str) -> &str {
    url.trim_end_matches('/').rsplit('/').next().unwrap_or(url)
}

/// The host of a URL, for "a payee at HOST".
fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| u.port().map_or(h.to_owned(), |p| format!("{h}:{p}")))
        })
        .unwrap_or_else(|| url.to_owned())
}

/// `22:41:03 UTC on 2026-12-01`
fn clock_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:02}:{:02}:{:02} UTC on {:04}-{:02}-{:02}",
        t.hour(),
        t.minute(),
        t.second(),
        t.year(),
        u8::from(t.month()),
        t.day()
    )
}

/// What approving `r` means, as facts: who asks; for a payment, to whom the money goes, the most that can
/// leave and why it is above the price; and until when it can be decided and what happens after.
pub fn consent(r: &Request<'_>) -> Vec<Fact> {
    let name = match r.client_name {
        Some(n) => sanitize(n),
        None => sanitize(last_segment(r.client)),
    };
    let mut facts = vec![Fact::new("Who asks", name, Some(r.client))];
    for item in r.access {
        let AccessItem::OutgoingPayment { identifier, limits, .. } = item else {
            continue;
        };
        let from = sanitize(last_segment(identifier));
        let receiver = limits.as_ref().and_then(|l| l.receiver.as_deref());
        let to_whom = match (r.quote, receiver) {
            (Some(q), _) => {
                let payee = q
                    .payee
                    .as_deref()
                    .map(sanitize)
                    .unwrap_or_else(|| format!("The payee at {}", sanitize(&host_of(&q.receiver))));
                Fact::new("To whom", format!("{payee} receives {}", q.receive), Some(&q.receiver))
            }
            (None, Some(url)) => Fact::new(
                "To whom",
                format!(
                    "The payee at {} (the amount it receives is not known here)",
                    sanitize(&host_of(url))
                ),
                Some(url),
            ),
            (None, None) => Fact::new("To whom", "Anyone the app chooses: no receiver is named".into(), None),
        };
        facts.push(to_whom);
        let per = limits
            .as_ref()
            .and_then(|l| l.interval.as_deref())
            .and_then(|i| i.parse::<RepeatingInterval>().ok())
            .map(|iv| iv.describe_per().unwrap_or_else(|| iv.describe()));
        let per = per.map(|p| format!(" {p}")).unwrap_or_default();
        let most = match (limits.as_ref().and_then(|l| l.debit_amount.as_ref()), r.quote) {
            (Some(d), Some(q)) if q.receive.asset() == d.asset() && d.value > q.receive.value => {
                let extra = Amount::new(
                    crate::money::Value::new(d.value.get() - q.receive.value.get()).unwrap_or_default(),
                    &d.asset(),
                );
                format!(
                    "{d} from {from}{per}. That is {extra} more than the price of {}: the quote's margin for the \
                     exchange rate and the fees of sending the payment.",
                    q.receive
                )
            }
            (Some(d), Some(q)) if q.receive.asset() == d.asset() => {
                format!("{d} from {from}{per}: exactly the price the payee receives.")
            }
            (Some(d), Some(q)) => format!(
                "{d} from {from}{per}: the price of {} converted into {} at the quoted rate, with a margin for \
                 the exchange rate and fees.",
                q.receive, d.asset_code
            ),
            (Some(d), None) => format!("{d} from {from}{per}."),
            (None, _) => match limits.as_ref().and_then(|l| l.receive_amount.as_ref()) {
                Some(rcv) => format!(
                    "Whatever it takes from {from} to deliver {rcv}{per}: what leaves depends on the exchange rate."
                ),
                None => format!("No limit: the app may send any amount from {from}."),
            },
        };
        facts.push(Fact::new("The most that can leave", most, None));
    }
    if let Deadline::Open { .. } = r.deadline {
        let who = match r.owner {
            Some(w) => format!(
                "The owner of {}, on the interaction page, with their passphrase.",
                sanitize(w)
            ),
            None => "The operator of this ASE, in opdesk.".to_owned(),
        };
        facts.push(Fact::new("Who decides", who, None));
    }
    let deadline = match r.deadline {
        Deadline::Open { by, now } => {
            let minutes = ((by - now).whole_seconds().max(0) + 59) / 60;
            Fact::new(
                "Decide by",
                format!(
                    "{} (in {minutes} min). After that the request expires, nothing is paid, and the app has to \
                     ask again.",
                    clock_time(by)
                ),
                None,
            )
        }
        Deadline::Closed(state) => Fact::new(
            "Decided",
            match state {
                GrantState::Approved | GrantState::Finalized => "Approved.",
                GrantState::Rejected => "Rejected: nothing is paid.",
                GrantState::Expired => "It expired before anyone decided: nothing is paid; the app has to ask again.",
                GrantState::Revoked => "Approved, then revoked: nothing more can be paid with it.",
                GrantState::Pending => "Waiting for a decision.",
            }
            .to_owned(),
            None,
        ),
    };
    facts.push(deadline);
    facts
}

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

    #[test]
    fn consent_says_who_asks_to_whom_the_most_and_why_and_until_when() {
        let usd = |v: u64| Amount {
            value: crate::money::Value::new(v).unwrap(),
            asset_code: "USD".into(),
            asset_scale: 2,
        };
        let item: AccessItem = serde_json::from_value(serde_json::json!({
            "type":"outgoing-payment","actions":["create","read"],"identifier":"http://a.test/seat05",
            "limits":{"debitAmount":{"value":"1247","assetCode":"USD","assetScale":2},
                      "receiver":"http://b.test/incoming-payments/01a2"}}))
        .unwrap();
        let q = Quoted {
            receiver: "http://b.test/incoming-payments/01a2".into(),
            debit: usd(1247),
            receive: usd(1234),
            payee: Some("Seat 05's shop\u{1b}[2J".into()),
        };
        let now = crate::clock::ts("2026-12-01T22:31:00Z");
        let by = crate::clock::ts("2026-12-01T22:41:00Z");
        let facts = consent(&Request {
            client: "http://b.test/seat05-app",
            client_name: None,
            access: std::slice::from_ref(&item),
            quote: Some(&q),
            deadline: Deadline::Open { by, now },
            owner: Some("seat05"),
        });
        let lines: Vec<String> = facts.iter().map(Fact::line).collect();
        assert_eq!(lines[0], "Who asks: seat05-app (http://b.test/seat05-app)");
        assert_eq!(
            lines[1],
            "To whom: Seat 05's shop[2J receives 12.34 USD (http://b.test/incoming-payments/01a2)"
        );
        assert!(
            lines[2].starts_with("The most that can leave: 12.47 USD from seat05. That is 0.13 USD more than the price of 12.34 USD: the quote's margin"),
            "{}",
            lines[2]
        );
        assert!(
            lines[3] == "Who decides: The owner of seat05, on the interaction page, with their passphrase.",
            "{}",
            lines[3]
        );
        assert!(
            lines[4].starts_with("Decide by: 22:41:00 UTC on 2026-12-01 (in 10 min). After that the request expires"),
            "{}",
            lines[4]
        );
        // decided: no deadline any more; without a quote, the receiver by its host
        let decided = consent(&Request {
            client: "http://b.test/seat05-app",
            client_name: Some("Seat 05's app"),
            access: std::slice::from_ref(&item),
            quote: None,
            deadline: Deadline::Closed(GrantState::Expired),
            owner: None,
        });
        assert_eq!(decided[0].text, "Seat 05's app");
        assert!(decided[1].text.starts_with("The payee at b.test"), "{:?}", decided[1]);
        assert_eq!(decided[2].text, "12.47 USD from seat05.");
        assert_eq!(decided[3].label, "Decided");
        assert!(decided[3].text.contains("expired"), "{:?}", decided[3]);
    }
}
