//! What the request log tells about one request over the admin API and the event stream: its summary, its
//! captured exchange and, for a signed request, the signature debugger's report (built by
//! `crate::httpsig::explain`). Plain data, serialised in camelCase.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Exchange;

/// Refused requests one [`super::DomainEvent::RequestsServed`] carries at most (the rest are counted).
pub const REFUSED_PER_UPDATE: usize = 20;

/// One request in `GET /admin/requests`: newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestSummary {
    pub id: String,
    /// When it arrived (microseconds).
    #[serde(with = "crate::clock::wire::micros")]
    pub received_at: time::OffsetDateTime,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub latency_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// `ok`, or why the signature was refused; none for unsigned requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `GET /admin/requests/{id}`: the summary, the exchange when it was captured, and the signature report of
/// a signed request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestDetail {
    #[serde(flatten)]
    pub summary: RequestSummary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Exchange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<SignatureReport>,
}

/// What the debugger found out about one signed request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureReport {
    /// The signature's label (`sig1`), when `Signature-Input` could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Covered components, in order.
    #[serde(default)]
    pub components: Vec<String>,
    /// How the signature headers were written, when not as RFC 8941 structured fields: a sentence for people
    /// (the legacy form the reference ASE also reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<SignatureParamsReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<DigestReport>,
    /// The signature base exactly as the verifier builds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    pub verdict: Verdict,
}

/// The signature parameters, with `created`'s age when the request arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureParamsReport {
    pub keyid: Option<String>,
    pub alg: Option<String>,
    pub created: Option<i64>,
    /// Seconds between `created` and the request's arrival (negative: `created` is in the future).
    pub created_age_secs: Option<i64>,
    pub expires: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The `@signature-params` value as received.
    pub raw: String,
}

/// The key the signature was checked with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyReport {
    pub client: Option<String>,
    pub kid: Option<String>,
    /// Where the key was looked up (a JWKS URL or file, the grant's JWK).
    pub source: Option<String>,
    /// RFC 7638 thumbprint of the key found.
    pub thumbprint: Option<String>,
    /// Whether the signature verifies with it (none: not checked).
    pub verified: Option<bool>,
}

/// The `Content-Digest` sent against the digest of the body received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DigestReport {
    /// The header as sent (none: not sent).
    pub sent: Option<String>,
    /// `sha-512` or `sha-256`: the algorithm of the sent digest (`sha-512` when none was sent).
    pub algorithm: String,
    /// The header value the body's bytes give.
    pub computed: String,
    /// Whether the sent header checks against the body.
    pub matches: bool,
    pub body_len: usize,
}

/// Accepted, refused (with every reason found), or not checked (no key given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub outcome: Outcome,
    #[serde(default)]
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Ok,
    Refused,
    NotChecked,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Refused => "refused",
            Self::NotChecked => "not checked",
        }
    }
}

impl SignatureReport {
    /// Whether the signature was accepted.
    pub fn is_ok(&self) -> bool {
        self.verdict.outcome == Outcome::Ok
    }
}

impl SignatureReport {
    /// The report with the credential in a covered `authorization` line shortened (`GNAP 4F1A2B…`), as the
    /// request log shows headers: what leaves the server's memory never carries a whole token.
    pub fn masked(mut self) -> Self {
        if let Some(base) = &self.base {
            let masked: Vec<String> = base
                .split('\n')
                .map(|line| match line.strip_prefix("\"authorization\": ") {
                    Some(value) => {
                        let shown = match value.split_once(' ') {
                            Some((scheme, token)) => {
                                format!("{scheme} {}…", token.chars().take(6).collect::<String>())
                            }
                            None => "…".to_owned(),
                        };
                        format!("\"authorization\": {shown}")
                    }
                    None => line.to_owned(),
                })
                .collect();
            self.base = Some(masked.join("\n"));
        }
        self
    }
}

impl SignatureReport {
    /// The report for people: Components, Parameters, Key, Digest, Signature base (verbatim), Verdict (the
    /// CLI prints it).
    pub fn text(&self) -> String {
        let r = self;
        let mut out = String::new();
        if let Some(label) = &r.label {
            let _ = writeln!(out, "Components (label {label})");
            for c in &r.components {
                let _ = writeln!(out, "  \"{c}\"");
            }
        }
        if let Some(form) = &r.form {
            let _ = writeln!(out, "Form\n  {form}");
        }
        if let Some(p) = &r.params {
            out.push_str("Parameters\n");
            let _ = writeln!(out, "  keyid    {}", p.keyid.as_deref().unwrap_or("(none)"));
            if let Some(alg) = &p.alg {
                let _ = writeln!(out, "  alg      {alg}");
            }
            match (p.created, p.created_age_secs) {
                (Some(c), Some(age)) => {
                    let _ = writeln!(out, "  created  {c} ({age} s before arrival)");
                }
                _ => out.push_str("  created  (none)\n"),
            }
            if let Some(e) = p.expires {
                let _ = writeln!(out, "  expires  {e}");
            }
            if let Some(n) = &p.nonce {
                let _ = writeln!(out, "  nonce    {n}");
            }
            if let Some(t) = &p.tag {
                let _ = writeln!(out, "  tag      {t}");
            }
        }
        out.push_str("Key\n");
        match &r.key {
            None => out.push_str("  not checked\n"),
            Some(k) => {
                let verified = match k.verified {
                    Some(true) => "verifies",
                    Some(false) => "does not verify",
                    None => "no usable key",
                };
                let of = k.client.as_deref().map(|c| format!(" of {c}")).unwrap_or_default();
                let _ = writeln!(out, "  kid {}{of}: {verified}", k.kid.as_deref().unwrap_or("(none)"));
                if let Some(src) = &k.source {
                    let _ = writeln!(out, "  from {src}");
                }
                if let Some(t) = &k.thumbprint {
                    let _ = writeln!(out, "  thumbprint {t}");
                }
            }
        }
        if let Some(d) = &r.digest {
            out.push_str("Digest\n");
            let _ = writeln!(out, "  sent      {}", d.sent.as_deref().unwrap_or("(none)"));
            let _ = writeln!(
                out,
                "  computed  {} over {} bytes: {}",
                d.computed,
                d.body_len,
                if d.matches { "matches" } else { "differs" }
            );
        }
        if let Some(base) = &r.base {
            out.push_str("Signature base\n");
            out.push_str(base);
            out.push('\n');
        }
        let _ = writeln!(out, "Verdict: {}", r.verdict.outcome.as_str());
        for reason in &r.verdict.reasons {
            let _ = writeln!(out, "  ✗ {reason}");
        }
        out
    }
}
