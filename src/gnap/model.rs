//! GNAP wire types as Open Payments v1.3 defines them (`auth-server.yaml`), and the validation that the schema
//! alone cannot express: per-type action sets, unique items, at most three access items, one amount limit,
//! a parsable repeating interval, and receivers shaped like incoming-payment URLs.
//!
//! Members the spec does not define are ignored (GNAP requests may carry extensions), except where the spec
//! closes the object (the `client` forms) and in access items and their limits: there an ignored member —
//! a misspelt limit, say — would silently widen what the grant allows, so it is refused. Known members of the
//! wrong type are always refused.

use serde::{Deserialize, Serialize};

use super::GnapError;
use crate::{httpsig::jwk::Jwk, interval::RepeatingInterval, money::Amount};

/// An action an access item grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Create,
    Complete,
    Read,
    ReadAll,
    List,
    ListAll,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Complete => "complete",
            Self::Read => "read",
            Self::ReadAll => "read-all",
            Self::List => "list",
            Self::ListAll => "list-all",
        }
    }
}

/// Which `-all` actions need the resource owner's consent (`gnap.list_all_interaction`,
/// `gnap.read_all_interaction`). Outgoing-payment access needs it regardless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsentPolicy {
    pub list_all: bool,
    pub read_all: bool,
}

/// Limits of an outgoing-payment grant.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debit_amount: Option<Amount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_amount: Option<Amount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// One access item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum AccessItem {
    IncomingPayment {
        actions: Vec<Action>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        identifier: Option<String>,
    },
    OutgoingPayment {
        actions: Vec<Action>,
        identifier: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limits: Option<Limits>,
    },
    Quote {
        actions: Vec<Action>,
    },
}

impl AccessItem {
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::IncomingPayment { .. } => "incoming-payment",
            Self::OutgoingPayment { .. } => "outgoing-payment",
            Self::Quote { .. } => "quote",
        }
    }

    pub fn actions(&self) -> &[Action] {
        match self {
            Self::IncomingPayment { actions, .. } | Self::OutgoingPayment { actions, .. } | Self::Quote { actions } => {
                actions
            }
        }
    }

    pub fn identifier(&self) -> Option<&str> {
        match self {
            Self::IncomingPayment { identifier, .. } => identifier.as_deref(),
            Self::OutgoingPayment { identifier, .. } => Some(identifier),
            Self::Quote { .. } => None,
        }
    }

    /// Whether the resource owner must consent: outgoing-payment items always; `list-all`/`read-all` as
    /// `policy` says.
    pub fn needs_interaction(&self, policy: ConsentPolicy) -> bool {
        matches!(self, Self::OutgoingPayment { .. }) || self.consent_action(policy).is_some()
    }

    /// The first `-all` action of this item that `policy` puts under the resource owner's consent.
    pub fn consent_action(&self, policy: ConsentPolicy) -> Option<Action> {
        self.actions()
            .iter()
            .copied()
            .find(|a| (*a == Action::ListAll && policy.list_all) || (*a == Action::ReadAll && policy.read_all))
    }

    /// Whether this item grants `action` (`read` is satisfied by `read-all`, `list` by `list-all`).
    pub fn allows(&self, action: Action) -> bool {
        let a = self.actions();
        a.contains(&action)
            || (action == Action::Read && a.contains(&Action::ReadAll))
            || (action == Action::List && a.contains(&Action::ListAll))
    }

    /// Checks the rules the schema cannot express.
    pub fn validate(&self) -> Result<(), GnapError> {
        let allowed: &[Action] = match self {
            Self::IncomingPayment { .. } => &[
                Action::Create,
                Action::Complete,
                Action::Read,
                Action::ReadAll,
                Action::List,
                Action::ListAll,
            ],
            Self::OutgoingPayment { .. } => &[
                Action::Create,
                Action::Read,
                Action::ReadAll,
                Action::List,
                Action::ListAll,
            ],
            Self::Quote { .. } => &[Action::Create, Action::Read, Action::ReadAll],
        };
        let actions = self.actions();
        if actions.is_empty() {
            return Err(GnapError::invalid_request(format!(
                "{} access needs at least one action",
                self.type_name()
            )));
        }
        for (i, a) in actions.iter().enumerate() {
            if !allowed.contains(a) {
                return Err(GnapError::invalid_request(format!(
                    "action {:?} is not allowed for {} access",
                    a.as_str(),
                    self.type_name()
                )));
            }
            if actions[..i].contains(a) {
                return Err(GnapError::invalid_request(format!(
                    "action {:?} is listed twice",
                    a.as_str()
                )));
            }
        }
        if let Some(id) = self.identifier() {
            check_uri("identifier", id)?;
        }
        if let Self::OutgoingPayment { limits: Some(l), .. } = self {
            if l.debit_amount.is_some() && l.receive_amount.is_some() {
                return Err(GnapError::invalid_request(
                    "limits may set debitAmount or receiveAmount, not both",
                ));
            }
            for amount in [&l.debit_amount, &l.receive_amount].into_iter().flatten() {
                if amount.value.is_zero() {
                    return Err(GnapError::invalid_request("a limit amount must be greater than zero"));
                }
                if amount.asset_code.is_empty() {
                    return Err(GnapError::invalid_request("a limit amount needs an assetCode"));
                }
            }
            if let Some(r) = &l.receiver {
                check_receiver(r)?;
            }
            if let Some(i) = &l.interval {
                i.parse::<RepeatingInterval>()
                    .map_err(|e| GnapError::invalid_request(format!("limits.interval {i:?}: {e}")))?;
            }
        }
        Ok(())
    }
}

/// A receiver is an incoming payment URL: an absolute http(s) URL (as [`check_uri`]) whose *path* ends in
/// `/incoming-payments/{id}` (one non-empty segment), with no query and no fragment.
pub fn check_receiver(r: &str) -> Result<(), GnapError> {
    let u = check_uri("receiver", r)?;
    let not_incoming = || GnapError::invalid_request(format!("receiver {r:?} is not an incoming payment URL"));
    if u.query().is_some() || r.contains('?') || r.contains('#') {
        return Err(not_incoming());
    }
    let mut segments = u.path_segments().ok_or_else(not_incoming)?.rev();
    let id = segments.next().unwrap_or_default();
    if id.is_empty() || segments.next() != Some("incoming-payments") {
        return Err(not_incoming());
    }
    Ok(())
}

/// An absolute http(s) URL without userinfo or fragment, at most 2048 characters.
pub fn check_uri(what: &str, s: &str) -> Result<url::Url, GnapError> {
    let bad = |why: &str| GnapError::invalid_request(format!("{what} {s:?}: {why}"));
    if s.len() > 2048 {
        return Err(bad("longer than 2048 characters"));
    }
    let u = url::Url::parse(s).map_err(|e| bad(&e.to_string()))?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(bad("must be an absolute http(s) URL"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad("must not contain userinfo"));
    }
    if u.fragment().is_some() {
        return Err(bad("must not contain a fragment"));
    }
    Ok(u)
}

/// `client`: a wallet address URL (deprecated string form), `{walletAddress}` or `{jwk}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ClientRef {
    Url(String),
    Wallet(WalletClient),
    Jwk(JwkClient),
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalletClient {
    #[serde(rename = "walletAddress")]
    pub wallet_address: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwkClient {
    pub jwk: Jwk,
}

/// Who the client is, once resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    Wallet(String),
    /// Directed identity: the key given in the request.
    Jwk(Jwk),
}

impl ClientRef {
    pub fn resolve(self) -> Result<Client, GnapError> {
        match self {
            Self::Url(u) | Self::Wallet(WalletClient { wallet_address: u }) => {
                let parsed = check_uri("client", &u).map_err(|e| GnapError::invalid_client(e.description))?;
                if parsed.query().is_some() {
                    return Err(GnapError::invalid_client("client wallet address must not have a query"));
                }
                Ok(Client::Wallet(crate::names::wallet_url(&u).to_owned()))
            }
            Self::Jwk(JwkClient { jwk }) => {
                jwk.verifying_key()
                    .map_err(|e| GnapError::invalid_client(format!("client jwk: {e}")))?;
                Ok(Client::Jwk(jwk))
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenRequest {
    pub access: Vec<AccessItem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubId {
    pub id: String,
    pub format: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub sub_ids: Vec<SubId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Finish {
    pub method: String,
    pub uri: String,
    pub nonce: String,
    #[serde(default)]
    pub hash_method: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct InteractRequest {
    pub start: Vec<String>,
    /// `"finish": null` (sent by the Rust SDK) means no finish.
    #[serde(default)]
    pub finish: Option<Finish>,
}

/// `POST /auth` body.
#[derive(Debug, Clone, Deserialize)]
pub struct GrantRequest {
    #[serde(default)]
    pub access_token: Option<AccessTokenRequest>,
    pub client: ClientRef,
    #[serde(default)]
    pub interact: Option<InteractRequest>,
    #[serde(default)]
    pub subject: Option<Subject>,
}

impl GrantRequest {
    /// Structural validation; wallet existence is checked by the service.
    pub fn validate(&self) -> Result<(), GnapError> {
        if self.access_token.is_none() && self.subject.is_none() {
            return Err(GnapError::invalid_request("subject or access_token required"));
        }
        if let Some(at) = &self.access_token {
            if at.access.is_empty() {
                return Err(GnapError::invalid_request("access_token.access must not be empty"));
            }
            if at.access.len() > 3 {
                return Err(GnapError::invalid_request("access_token.access has at most 3 items"));
            }
            for (i, item) in at.access.iter().enumerate() {
                item.validate()?;
                if at.access[..i].contains(item) {
                    return Err(GnapError::invalid_request("access items must be unique"));
                }
            }
        }
        if let Some(s) = &self.subject {
            if s.sub_ids.len() != 1 {
                return Err(GnapError::invalid_request("subject.sub_ids must have exactly one item"));
            }
            for id in &s.sub_ids {
                if id.format != "uri" {
                    return Err(GnapError::invalid_request("subject.sub_ids format must be \"uri\""));
                }
                check_uri("subject id", &id.id)?;
            }
        }
        if let Some(i) = &self.interact {
            if i.start.is_empty() || i.start.iter().any(|s| s != "redirect") {
                return Err(GnapError::invalid_request("interact.start must be [\"redirect\"]"));
            }
            if let Some(f) = &i.finish {
                if f.method != "redirect" {
                    return Err(GnapError::invalid_request(
                        "interact.finish.method must be \"redirect\"",
                    ));
                }
                if f.nonce.is_empty() || f.nonce.len() > 256 {
                    return Err(GnapError::invalid_request(
                        "interact.finish.nonce must be 1 to 256 characters",
                    ));
                }
                if let Some(h) = &f.hash_method
                    && h != "sha-256"
                {
                    return Err(GnapError::invalid_request(
                        "interact.finish.hash_method must be sha-256",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Subject requests, outgoing-payment access and the `-all` actions `policy` names need the resource
    /// owner's consent.
    pub fn needs_interaction(&self, policy: ConsentPolicy) -> bool {
        self.subject.is_some()
            || self
                .access_token
                .as_ref()
                .is_some_and(|a| a.access.iter().any(|i| i.needs_interaction(policy)))
    }

    /// An incoming-payment item whose `-all` action needs consent must name the wallet the owner decides
    /// on in `identifier` (the owner cannot consent to "every wallet of this ASE").
    pub fn check_consent_identifiers(&self, policy: ConsentPolicy) -> Result<(), GnapError> {
        for item in self.access_token.iter().flat_map(|a| a.access.iter()) {
            if let AccessItem::IncomingPayment { identifier: None, .. } = item
                && let Some(a) = item.consent_action(policy)
            {
                return Err(GnapError::invalid_request(format!(
                    "access identifier required: {} {} needs the resource owner's consent for one wallet address",
                    item.type_name(),
                    a.as_str()
                )));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContinueToken {
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continue {
    pub access_token: ContinueToken,
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenResponse {
    pub value: String,
    pub manage: String,
    pub expires_in: i64,
    pub access: Vec<AccessItem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractResponse {
    pub redirect: String,
    pub finish: String,
}

/// The body of a grant or continue response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interact: Option<InteractResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<AccessTokenResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    #[serde(rename = "continue")]
    pub continue_: Continue,
}

/// `POST /auth/token/{id}` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotateResponse {
    pub access_token: AccessTokenResponse,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(v: serde_json::Value) -> Result<AccessItem, String> {
        let i: AccessItem = serde_json::from_value(v).map_err(|e| e.to_string())?;
        i.validate().map_err(|e| e.description)?;
        Ok(i)
    }

    #[test]
    fn access_items_follow_the_spec() {
        assert!(item(json!({"type":"incoming-payment","actions":["create","read","complete"]})).is_ok());
        assert!(item(json!({"type":"quote","actions":["create","read"]})).is_ok());
        let out = item(json!({"type":"outgoing-payment","actions":["create"],"identifier":"https://a.test/alice",
            "limits":{"debitAmount":{"value":"500","assetCode":"USD","assetScale":2},"interval":"R12/2019-08-24T14:15:22Z/P1M",
            "receiver":"https://b.test/incoming-payments/123"}}))
        .unwrap();
        assert!(out.needs_interaction(ConsentPolicy::default()));
        for bad in [
            json!({"type":"outgoing-payment","actions":["create"]}),
            json!({"type":"outgoing-payment","actions":["complete"],"identifier":"https://a.test/x"}),
            json!({"type":"quote","actions":["list"]}),
            json!({"type":"quote","actions":["create"],"identifier":"https://a.test/x"}),
            json!({"type":"incoming-payment","actions":["read","read"]}),
            json!({"type":"incoming-payment","actions":[]}),
            json!({"type":"incoming-payment","actions":["create"],"extra":1}),
            json!({"type":"payment","actions":["create"]}),
            json!({"type":"incoming-payment","actions":["create"],"identifier":"not a url"}),
            json!({"type":"outgoing-payment","actions":["create"],"identifier":"https://a.test/x",
                "limits":{"debitAmount":{"value":"1","assetCode":"USD","assetScale":2},"receiveAmount":{"value":"1","assetCode":"USD","assetScale":2}}}),
            json!({"type":"outgoing-payment","actions":["create"],"identifier":"https://a.test/x","limits":{"interval":"P1M"}}),
            json!({"type":"outgoing-payment","actions":["create"],"identifier":"https://a.test/x","limits":{"receiver":"https://b.test/alice"}}),
            json!({"type":"outgoing-payment","actions":["create"],"identifier":"https://a.test/x","limits":{"debitAmount":{"value":"01","assetCode":"USD","assetScale":2}}}),
            json!({"type":"outgoing-payment","actions":["create"],"identifier":"https://a.test/x","limits":{"debitAmmount":{"value":"1","assetCode":"USD","assetScale":2}}}),
        ] {
            assert!(item(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn list_all_and_read_all_need_consent_as_configured() {
        let list_all =
            item(json!({"type":"incoming-payment","actions":["read","list-all"],"identifier":"https://a.test/bob"}))
                .unwrap();
        let read_all = item(json!({"type":"incoming-payment","actions":["read-all"]})).unwrap();
        let quote_all = item(json!({"type":"quote","actions":["read-all"]})).unwrap();
        let plain = item(json!({"type":"incoming-payment","actions":["create","read","list","complete"]})).unwrap();
        let default = ConsentPolicy {
            list_all: true,
            read_all: false,
        };
        assert!(list_all.needs_interaction(default));
        assert!(!read_all.needs_interaction(default) && !quote_all.needs_interaction(default));
        assert!(!plain.needs_interaction(default));
        let all = ConsentPolicy {
            list_all: true,
            read_all: true,
        };
        assert!(read_all.needs_interaction(all) && quote_all.needs_interaction(all));
        assert!(!plain.needs_interaction(all));
        assert!(!list_all.needs_interaction(ConsentPolicy::default()));

        let req = |access: serde_json::Value| -> GrantRequest {
            serde_json::from_value(json!({"access_token": {"access": access}, "client": "https://c.test/app"})).unwrap()
        };
        let bare = req(json!([{"type":"incoming-payment","actions":["list-all"]}]));
        let e = bare.check_consent_identifiers(default).unwrap_err();
        assert!(e.description.contains("access identifier required"), "{e}");
        assert!(bare.check_consent_identifiers(ConsentPolicy::default()).is_ok());
        assert!(
            req(json!([{"type":"incoming-payment","actions":["read-all"]}]))
                .check_consent_identifiers(default)
                .is_ok()
        );
        assert!(
            req(json!([{"type":"quote","actions":["read-all"]}]))
                .check_consent_identifiers(all)
                .is_ok()
        );
    }

    #[test]
    fn allows_read_via_read_all() {
        let i = item(json!({"type":"incoming-payment","actions":["read-all","list-all"]})).unwrap();
        assert!(i.allows(Action::Read) && i.allows(Action::List) && !i.allows(Action::Create));
    }

    #[test]
    fn grant_requests() {
        let r: GrantRequest = serde_json::from_value(json!({
            "access_token":{"access":[{"type":"quote","actions":["create"]}]},
            "client":"https://a.test/client",
            "interact":{"start":["redirect"],"finish":null}
        }))
        .unwrap();
        r.validate().unwrap();
        assert!(r.interact.unwrap().finish.is_none());
        let r: GrantRequest = serde_json::from_value(json!({"client":{"walletAddress":"https://a.test/c"}})).unwrap();
        assert!(r.validate().is_err(), "needs access or subject");
        assert!(
            serde_json::from_value::<GrantRequest>(json!({"client":{"walletAddress":"https://a.test/c","x":1},
                "access_token":{"access":[]}}))
            .is_err()
        );
        let too_many = json!({"client":"https://a.test/c","access_token":{"access":[
            {"type":"quote","actions":["create"]},{"type":"quote","actions":["read"]},
            {"type":"quote","actions":["read-all"]},{"type":"incoming-payment","actions":["read"]}]}});
        let r: GrantRequest = serde_json::from_value(too_many).unwrap();
        assert!(r.validate().is_err());
    }

    #[test]
    fn receivers_and_uris() {
        assert!(check_receiver("https://b.test/incoming-payments/1").is_ok());
        assert!(check_receiver("http://b.test:4000/bob/incoming-payments/x").is_ok());
        assert!(check_receiver("https://b.test/incoming-payments/").is_err());
        assert!(check_receiver("ftp://b.test/incoming-payments/1").is_err());
        for bad in [
            "http://b.test/x?next=/incoming-payments/1",
            "http://b.test/incoming-payments/1?x=1",
            "http://b.test/incoming-payments/1?",
            "http://b.test/incoming-payments/1#frag",
            "http://b.test/incoming-payments/1/",
            "http://b.test/incoming-payments/1/complete",
            "http://b.test/incoming-payments",
            "http://u:p@b.test/incoming-payments/1",
        ] {
            assert!(check_receiver(bad).is_err(), "{bad}");
        }
        assert!(check_uri("u", "https://good@evil.test/").is_err());
        assert!(check_uri("u", "https://evil.test#@good").is_err());
        assert!(check_uri("u", "javascript:alert(1)").is_err());
        assert!(check_uri("u", &format!("https://a.test/{}", "x".repeat(2100))).is_err());
    }
}
