//! A grant's timeline: the steps of its life (request, interaction page, decision, finish redirect, continue,
//! tokens issued, rotated and revoked, expiry), who caused each and the HTTP request behind it. The service
//! writes a step in the transaction of the change it describes; this module holds the types, the words a step
//! reads as (shared by the CLI and the console) and nothing that writes.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::states::GrantState;

/// Who caused a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The GNAP client, by a signed request.
    Client,
    /// The resource owner's browser, on the interaction page.
    Browser,
    /// The wallet's owner, signed in on the interaction page.
    Owner,
    /// An operator in the console (embedded or attached).
    Console,
    /// An operator with the `opdesk` CLI.
    Cli,
    /// A direct call of the admin API.
    AdminApi,
    /// The `auto_approve` setting.
    Policy,
    /// The server itself, e.g. noticing an expiry.
    Server,
}

impl Actor {
    pub const ALL: &'static [Self] = &[
        Self::Client,
        Self::Browser,
        Self::Owner,
        Self::Console,
        Self::Cli,
        Self::AdminApi,
        Self::Policy,
        Self::Server,
    ];

    /// The stored (and JSON) name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Browser => "browser",
            Self::Owner => "owner",
            Self::Console => "console",
            Self::Cli => "cli",
            Self::AdminApi => "admin_api",
            Self::Policy => "policy",
            Self::Server => "server",
        }
    }

    /// In words, for people.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Browser => "browser",
            Self::Owner => "owner on the page",
            Self::Console => "console",
            Self::Cli => "CLI",
            Self::AdminApi => "admin API",
            Self::Policy => "auto_approve",
            Self::Server => "server",
        }
    }

    /// The operator tool named by an admin API request's [`ACTOR_HEADER`]; anything else is a direct call.
    pub fn of_admin_header(value: Option<&str>) -> Self {
        match value {
            Some("cli") => Self::Cli,
            Some("console") => Self::Console,
            _ => Self::AdminApi,
        }
    }
}

/// The header the CLI and attached consoles send with admin API calls, so a decision says where it was made.
pub const ACTOR_HEADER: &str = "opdesk-actor";

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for Actor {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| format!("unknown actor {s:?}"))
    }
}

/// Who caused a change, and through which HTTP request (its id), when one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub actor: Actor,
    pub request_id: Option<String>,
}

impl Cause {
    pub fn new(actor: Actor, request_id: Option<String>) -> Self {
        Self { actor, request_id }
    }

    /// The GNAP client, by the request `request_id`.
    pub fn client(request_id: Option<String>) -> Self {
        Self::new(Actor::Client, request_id)
    }

    /// An operator in this process's console.
    pub fn console() -> Self {
        Self::new(Actor::Console, None)
    }

    /// An operator with the CLI working on the data dir directly.
    pub fn cli() -> Self {
        Self::new(Actor::Cli, None)
    }
}

/// What a step was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The grant request (access with limits, client, interaction, the raw JSON).
    Requested,
    /// The interaction page was served while the grant waited (reloads repeat it).
    InteractionOpened,
    /// The resource owner's decision: approved or rejected.
    Decided,
    /// The interaction page sent the browser to the client's finish URI.
    FinishRedirect,
    /// A continue request while the grant waited (repeats count polls).
    Polled,
    /// A continue request that finalized the grant.
    Continued,
    /// A continue request the server refused (too fast, wrong `interact_ref`, a dead grant, …): its error.
    ContinueRefused,
    TokenIssued,
    TokenRotated,
    TokenRevoked,
    GrantRevoked,
    /// The interaction window passed without a decision.
    Expired,
    /// The grant's live access token passed its lifetime (derived when shown).
    TokenExpired,
    /// A wrong passphrase on the interaction page (repeats count them).
    SignInFailed,
    /// A sign-in refused without checking the passphrase: too many failures on this grant or for the wallet.
    LockedOut,
    /// The operator forgot the failed sign-ins (`opdesk grants unlock`).
    Unlocked,
}

impl StepKind {
    pub const ALL: &'static [Self] = &[
        Self::Requested,
        Self::InteractionOpened,
        Self::Decided,
        Self::FinishRedirect,
        Self::Polled,
        Self::Continued,
        Self::ContinueRefused,
        Self::TokenIssued,
        Self::TokenRotated,
        Self::TokenRevoked,
        Self::GrantRevoked,
        Self::Expired,
        Self::TokenExpired,
        Self::SignInFailed,
        Self::LockedOut,
        Self::Unlocked,
    ];

    /// The stored (and JSON) name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::InteractionOpened => "interaction_opened",
            Self::Decided => "decided",
            Self::FinishRedirect => "finish_redirect",
            Self::Polled => "polled",
            Self::Continued => "continued",
            Self::ContinueRefused => "continue_refused",
            Self::TokenIssued => "token_issued",
            Self::TokenRotated => "token_rotated",
            Self::TokenRevoked => "token_revoked",
            Self::GrantRevoked => "grant_revoked",
            Self::Expired => GrantState::Expired.as_str(),
            Self::TokenExpired => "token_expired",
            Self::SignInFailed => "sign_in_failed",
            Self::LockedOut => "locked_out",
            Self::Unlocked => "unlocked",
        }
    }

    /// In words, for the step column.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Requested => "request",
            Self::InteractionOpened => "interaction page",
            Self::Decided => "decision",
            Self::FinishRedirect => "finish redirect",
            Self::Polled => "poll",
            Self::Continued => "continue",
            Self::ContinueRefused => "continue refused",
            Self::TokenIssued => "token issued",
            Self::TokenRotated => "token rotated",
            Self::TokenRevoked => "token revoked",
            Self::GrantRevoked => "grant revoked",
            Self::Expired => GrantState::Expired.as_str(),
            Self::TokenExpired => "token expired",
            Self::SignInFailed => "sign-in failed",
            Self::LockedOut => "locked out",
            Self::Unlocked => "unlocked",
        }
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StepKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown grant step {s:?}"))
    }
}

/// One step of a grant's life, as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantStep {
    /// 1, 2, … in order; 0 for a step derived when shown (not stored).
    pub seq: i64,
    /// When it happened (the first time, for a repeated step).
    #[serde(with = "crate::clock::wire")]
    pub at: time::OffsetDateTime,
    /// How many times (polls, page reloads); 1 for most steps.
    pub count: i64,
    /// The last repeat's time, when `count` > 1.
    #[serde(
        with = "crate::clock::wire::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_at: Option<time::OffsetDateTime>,
    pub kind: StepKind,
    pub actor: Actor,
    /// The id of the HTTP request that caused it (`HttpRequest` events carry the same id).
    pub request_id: Option<String>,
    /// The id of the last repeat's request, when `count` > 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_request_id: Option<String>,
    /// What the step did; its members depend on `kind` (secrets masked).
    pub detail: Value,
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The last 8 characters of an id, as the console shows ids (a UUIDv7 starts with its time, which requests
/// close together share; it ends in random bits).
pub fn short(id: &str) -> &str {
    let n = id.chars().count();
    let start = id.char_indices().nth(n.saturating_sub(8)).map_or(0, |(i, _)| i);
    &id[start..]
}

/// An amount of the wire (`{"value","assetCode","assetScale"}`) in words: `5.00 USD`.
fn amount(a: &Value) -> String {
    let value = s(a, "value");
    let scale = a.get("assetScale").and_then(Value::as_u64).unwrap_or(0);
    let scale = usize::try_from(scale).unwrap_or(0);
    let shown = if scale == 0 || !value.bytes().all(|b| b.is_ascii_digit()) {
        value.to_owned()
    } else {
        let padded = format!("{value:0>width$}", width = scale + 1);
        let (int, frac) = padded.split_at(padded.len() - scale);
        format!("{int}.{frac}")
    };
    format!("{shown} {}", s(a, "assetCode"))
}

/// Outgoing-payment limits in one phrase: `debit ≤ 5.00 USD, interval R12/…, receiver …`.
fn limits(l: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(d) = l.get("debitAmount") {
        parts.push(format!("debit ≤ {}", amount(d)));
    }
    if let Some(r) = l.get("receiveAmount") {
        parts.push(format!("receive ≤ {}", amount(r)));
    }
    if let Some(i) = l.get("interval").and_then(Value::as_str) {
        parts.push(format!("interval {i}"));
    }
    if let Some(r) = l.get("receiver").and_then(Value::as_str) {
        parts.push(format!("receiver {r}"));
    }
    parts.join(", ")
}

impl GrantStep {
    /// The step's details in one line, then any further lines (the raw request, the hash inputs). Client
    /// text is included as sent: callers that draw on a terminal sanitize.
    pub fn lines(&self) -> (String, Vec<String>) {
        let d = &self.detail;
        let by = format!("by {}", self.actor.label());
        let mut more = Vec::new();
        let head = match self.kind {
            StepKind::Requested => {
                let access: Vec<String> = d
                    .get("access")
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .map(|a| {
                                let actions: Vec<&str> = a
                                    .get("actions")
                                    .and_then(Value::as_array)
                                    .map(|x| x.iter().filter_map(Value::as_str).collect())
                                    .unwrap_or_default();
                                let mut t = format!("{} ({})", s(a, "type"), actions.join(","));
                                if let Some(l) = a.get("limits") {
                                    t.push_str(&format!(" limits: {}", limits(l)));
                                }
                                t
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let access = if access.is_empty() {
                    "subject only".to_owned()
                } else {
                    access.join(", ")
                };
                if let Some(raw) = d.get("raw") {
                    more.push(format!("raw: {raw}"));
                }
                format!("{access} · client {} · {}", s(d, "client"), s(d, "interact"))
            }
            StepKind::InteractionOpened => format!("page served ({})", s(d, "showed")),
            StepKind::Decided => {
                let mut t = format!("{} {by}", s(d, "outcome"));
                if let Some(r) = d.get("reason").and_then(Value::as_str) {
                    t.push_str(&format!(": {r}"));
                }
                t
            }
            StepKind::FinishRedirect => {
                if let Some(result) = d.get("result").and_then(Value::as_str) {
                    format!("result={result} sent to the finish URI")
                } else {
                    let inputs = d.get("hashInputs").cloned().unwrap_or(Value::Null);
                    more.push(format!(
                        "hash = base64(sha-256(\"{}\\n{}\\n{}\\n{}\"))",
                        s(&inputs, "clientNonce"),
                        s(&inputs, "serverNonce"),
                        s(&inputs, "interactRef"),
                        s(&inputs, "grantEndpoint"),
                    ));
                    more.push("       client nonce \\n server nonce \\n interact_ref \\n grant endpoint".to_owned());
                    format!("interact_ref={} hash={}", s(d, "interactRef"), s(d, "hash"))
                }
            }
            StepKind::Polled => format!(
                "still {}, wait {}s",
                s(d, "state"),
                d.get("wait").unwrap_or(&Value::Null)
            ),
            StepKind::Continued => {
                let how = if d.get("interactRef").and_then(Value::as_bool) == Some(true) {
                    "with interact_ref"
                } else {
                    "polled"
                };
                format!("{how}; grant {}", s(d, "state"))
            }
            StepKind::ContinueRefused => format!("{}: {}", s(d, "error"), s(d, "description")),
            StepKind::TokenIssued => format!(
                "token {} expires in {}s",
                s(d, "hint"),
                d.get("expiresIn").unwrap_or(&Value::Null)
            ),
            StepKind::TokenRotated => format!("token {} → {}", s(d, "fromHint"), s(d, "hint")),
            StepKind::TokenRevoked => format!("token {} {by}", s(d, "hint")),
            StepKind::GrantRevoked => format!(
                "{by}; {} live token(s) revoked",
                d.get("tokens").unwrap_or(&Value::Null)
            ),
            StepKind::Expired => "interaction window passed without a decision".to_owned(),
            StepKind::TokenExpired => format!("token {} expired", s(d, "hint")),
            StepKind::SignInFailed => format!(
                "a wrong passphrase for {} ({} of {} allowed on this grant)",
                s(d, "wallet"),
                d.get("failures").unwrap_or(&Value::Null),
                d.get("limit").unwrap_or(&Value::Null)
            ),
            StepKind::LockedOut => format!("no passphrase checked: {}", s(d, "why")),
            StepKind::Unlocked => format!(
                "{} failed sign-in(s) forgotten {by}",
                d.get("forgotten").unwrap_or(&Value::Null)
            ),
        };
        (head, more)
    }

    /// The time of day, `HH:MM:SS.mmm` (UTC), of `at`.
    pub fn clock(at: &time::OffsetDateTime) -> String {
        let at = at.to_offset(time::UtcOffset::UTC);
        format!(
            "{:02}:{:02}:{:02}.{:03}",
            at.hour(),
            at.minute(),
            at.second(),
            at.millisecond()
        )
    }

    /// The line of text `opdesk grants show ID --timeline` prints for this step (and its further lines).
    pub fn text(&self) -> Vec<String> {
        let (head, more) = self.lines();
        let mut line = format!("{}  {:<16}  {head}", Self::clock(&self.at), self.kind.label());
        if self.count > 1 {
            line.push_str(&format!(
                "  ×{} until {}",
                self.count,
                Self::clock(self.last_at.as_ref().unwrap_or(&self.at))
            ));
        }
        if let Some(r) = &self.request_id {
            line.push_str(&format!("  [request {}]", short(r)));
        }
        let mut out = vec![line];
        out.extend(more.into_iter().map(|m| format!("{:14}{m}", "")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for k in StepKind::ALL {
            assert_eq!(k.as_str().parse::<StepKind>().unwrap(), *k);
            assert_eq!(serde_json::to_value(k).unwrap(), Value::String(k.as_str().into()));
        }
        for a in Actor::ALL {
            assert_eq!(a.as_str().parse::<Actor>().unwrap(), *a);
            assert_eq!(serde_json::to_value(a).unwrap(), Value::String(a.as_str().into()));
        }
        assert_eq!(Actor::of_admin_header(Some("cli")), Actor::Cli);
        assert_eq!(Actor::of_admin_header(Some("console")), Actor::Console);
        assert_eq!(Actor::of_admin_header(Some("policy")), Actor::AdminApi);
        assert_eq!(Actor::of_admin_header(None), Actor::AdminApi);
    }

    #[test]
    fn a_polled_step_reads_with_its_count_and_request() {
        let step = GrantStep {
            seq: 2,
            at: crate::clock::ts("2026-11-25T10:00:01.250Z"),
            count: 3,
            last_at: Some(crate::clock::ts("2026-11-25T10:00:03.500Z")),
            kind: StepKind::Polled,
            actor: Actor::Client,
            request_id: Some("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into()),
            last_request_id: None,
            detail: serde_json::json!({"state": "pending", "wait": 1}),
        };
        assert_eq!(
            step.text(),
            vec!["10:00:01.250  poll              still pending, wait 1s  ×3 until 10:00:03.500  [request 2e3f4a5b]"]
        );
    }

    #[test]
    fn limits_read_in_words() {
        let l = serde_json::json!({"debitAmount": {"value": "5", "assetCode": "USD", "assetScale": 2}, "interval": "R/2026-01-01T00:00:00Z/P1M"});
        assert_eq!(limits(&l), "debit ≤ 0.05 USD, interval R/2026-01-01T00:00:00Z/P1M");
        let r = serde_json::json!({"receiveAmount": {"value": "1234", "assetCode": "EUR", "assetScale": 2}});
        assert_eq!(limits(&r), "receive ≤ 12.34 EUR");
        assert_eq!(short("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), "2e3f4a5b");
        assert_eq!(short("abc"), "abc");
    }
}
