//! The signature debugger: a [`SignatureReport`] saying, for one request, what its signature covers, with
//! which parameters and key, how its `Content-Digest` compares with the body, the exact signature base the
//! verifier builds, and — when it is refused — every reason in words.
//!
//! It reuses the verifier's own pieces ([`parse_signature`], [`signature_base`], [`verify`],
//! [`check_policy`], [`verify_content_digest`]): the base shown is the base checked. It does no I/O and is
//! meant to run when a report is asked for, not on every request.

use ed25519_dalek::VerifyingKey;

use super::{
    CONTENT_DIGEST, Error, SIGNATURE, SIGNATURE_INPUT, content_digest_sha256, content_digest_sha512,
    verify::{Form, Policy, Request, check_policy, parse_signature, signature_base, verify},
    verify_content_digest,
};
pub use crate::events::requests::{DigestReport, KeyReport, Outcome, SignatureParamsReport, SignatureReport, Verdict};

/// Which key the signature was (or could not be) checked with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyOutcome {
    /// No key source was given: the signature itself is not checked.
    NotChecked,
    /// The key named by `keyid`, found at `source`.
    Found {
        client: Option<String>,
        source: Option<String>,
        key: VerifyingKey,
    },
    /// `source` has no key with the signature's `keyid`.
    Missing { client: Option<String>, source: String },
    /// The client's keys could not be had.
    Unavailable { client: Option<String>, reason: String },
}

/// Explains `req`'s signature as the verifier sees it at `now_unix` (the request's arrival) under `policy`,
/// checking it with `key`.
pub fn explain(req: &Request<'_>, now_unix: i64, policy: &Policy, key: &KeyOutcome) -> SignatureReport {
    let mut reasons = Vec::new();
    let digest = digest_report(req);
    let mut report = SignatureReport {
        label: None,
        components: Vec::new(),
        form: None,
        params: None,
        key: None,
        digest: digest.clone(),
        base: None,
        verdict: Verdict {
            outcome: Outcome::Refused,
            reasons: Vec::new(),
        },
    };
    let sig = match parse_signature(req.headers) {
        Ok(sig) => sig,
        Err(e) => {
            reasons.push(match e {
                Error::MissingHeader(SIGNATURE_INPUT) => {
                    "no `Signature-Input` header: the request is not signed".to_owned()
                }
                Error::MissingHeader(SIGNATURE) => "no `Signature` header: the request carries no signature".to_owned(),
                other => format!("the signature headers cannot be read: {other}"),
            });
            report.verdict.reasons = reasons;
            return report;
        }
    };
    report.label = Some(sig.label.clone());
    report.components = sig.components.clone();
    report.form = form_note(sig.form);
    report.params = Some(SignatureParamsReport {
        keyid: sig.keyid.clone(),
        alg: sig.alg.clone(),
        created: sig.created,
        created_age_secs: sig.created.map(|c| now_unix.saturating_sub(c)),
        expires: sig.expires,
        nonce: sig.nonce.clone(),
        tag: sig.tag.clone(),
        raw: sig.raw_params.clone(),
    });
    match signature_base(req, &sig) {
        Ok(base) => report.base = Some(base),
        Err(e) => reasons.push(format!("the signature base cannot be built: {e}")),
    }

    // The policy, every failure in words.
    for required in ["@method", "@target-uri"] {
        if !sig.covers(required) {
            reasons.push(format!("`{required}` is not covered"));
        }
    }
    if req.headers.contains_key(http::header::AUTHORIZATION) && !sig.covers("authorization") {
        reasons.push("`authorization` is not covered".to_owned());
    }
    if !req.body.is_empty() {
        for required in ["content-digest", "content-length", "content-type"] {
            if !sig.covers(required) {
                reasons.push(format!("`{required}` is not covered (the request has a body)"));
            }
        }
    }
    if let Some(DigestReport {
        sent: Some(sent),
        computed,
        ..
    }) = &digest
        && !req.body.is_empty()
    {
        match verify_content_digest(sent, req.body) {
            Ok(()) => {}
            Err(Error::DigestMismatch(_)) => {
                reasons.push(format!(
                    "content-digest differs: sent {sent}, body hashes to {computed}"
                ));
            }
            Err(e) => reasons.push(format!("content-digest: {e}")),
        }
    }
    if sig.keyid.is_none() {
        reasons.push("`keyid` is missing".to_owned());
    }
    match sig.created {
        None => reasons.push("`created` is missing".to_owned()),
        Some(created) => {
            let age = now_unix.saturating_sub(created);
            let window = policy.max_skew_secs;
            if age > window {
                reasons.push(format!("`created` is {age} s old, window is {window} s"));
            } else if age < -window {
                reasons.push(format!("`created` is {} s in the future, window is {window} s", -age));
            }
        }
    }
    if let Some(expires) = sig.expires
        && expires < now_unix
    {
        reasons.push(format!("`expires` passed {} s ago", now_unix - expires));
    }
    // Whatever else the policy refuses (content-length, a digest over an empty body, …) in its own words.
    if let Err(e) = check_policy(req, &sig, now_unix, policy)
        && !matches!(
            e,
            Error::NotCovered(_)
                | Error::DigestMismatch(_)
                | Error::UnsupportedDigest(_)
                | Error::Stale { .. }
                | Error::Expired { .. }
                | Error::MissingParam(_)
        )
        && !(matches!(e, Error::Malformed(_)) && reasons.iter().any(|r| r.starts_with("content-digest")))
    {
        reasons.push(e.to_string());
    }

    // The key.
    let kid = sig.keyid.clone();
    let kid_text = kid.as_deref().unwrap_or("(none)");
    let mut checked = false;
    report.key = match key {
        KeyOutcome::NotChecked => None,
        KeyOutcome::Found {
            client,
            source,
            key: verifying,
        } => {
            let result = verify(req, &sig, verifying);
            checked = true;
            match &result {
                Ok(()) => {}
                Err(Error::BadSignature) => reasons.push(format!(
                    "signature does not verify with kid `{kid_text}` of {}",
                    client.as_deref().or(source.as_deref()).unwrap_or("the key given")
                )),
                Err(e) => reasons.push(e.to_string()),
            }
            Some(KeyReport {
                client: client.clone(),
                kid: kid.clone(),
                source: source.clone(),
                thumbprint: Some(super::jwk::thumbprint(verifying)),
                verified: Some(result.is_ok()),
            })
        }
        KeyOutcome::Missing { client, source } => {
            reasons.push(format!("no key with kid `{kid_text}` at {source}"));
            Some(KeyReport {
                client: client.clone(),
                kid: kid.clone(),
                source: Some(source.clone()),
                thumbprint: None,
                verified: None,
            })
        }
        KeyOutcome::Unavailable { client, reason } => {
            reasons.push(match client {
                Some(c) => format!("the keys of {c} could not be had: {reason}"),
                None => reason.clone(),
            });
            Some(KeyReport {
                client: client.clone(),
                kid: kid.clone(),
                source: None,
                thumbprint: None,
                verified: None,
            })
        }
    };
    report.verdict = Verdict {
        outcome: match (reasons.is_empty(), checked) {
            (false, _) => Outcome::Refused,
            (true, true) => Outcome::Ok,
            (true, false) => Outcome::NotChecked,
        },
        reasons,
    };
    report
}

/// What the debugger says of a signature in the legacy form, so that a developer learns what their client
/// sends.
fn form_note(form: Form) -> Option<String> {
    let Form::Legacy {
        bare_components,
        bare_signature,
    } = form
    else {
        return None;
    };
    let what = match (bare_components, bare_signature) {
        (true, true) => "unquoted component names and a bare base64 `Signature`",
        (true, false) => "unquoted component names",
        _ => "a bare base64 `Signature`",
    };
    Some(format!(
        "{LEGACY_FORM}: {what}; RFC 9421 writes `(\"@method\" …)` and `sig1=:…:`"
    ))
}

/// The words the debugger opens a legacy-form note with.
pub const LEGACY_FORM: &str = "legacy Signature-Input form (accepted as the reference ASE does)";

/// The digest check: present when a `Content-Digest` was sent or the request has a body.
fn digest_report(req: &Request<'_>) -> Option<DigestReport> {
    let mut sent = req.headers.get_all(CONTENT_DIGEST).iter();
    let first = sent.next().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if first.is_none() && req.body.is_empty() {
        return None;
    }
    let sha256 = first.as_deref().is_some_and(|s| s.trim_start().starts_with("sha-256="));
    let (algorithm, computed) = if sha256 {
        ("sha-256", content_digest_sha256(req.body))
    } else {
        ("sha-512", content_digest_sha512(req.body))
    };
    let matches = sent.next().is_none()
        && first
            .as_deref()
            .is_some_and(|s| verify_content_digest(s, req.body).is_ok());
    Some(DigestReport {
        sent: first,
        algorithm: algorithm.to_owned(),
        computed,
        matches,
        body_len: req.body.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpsig::sign::sign_request;
    use ed25519_dalek::SigningKey;
    use http::{HeaderMap, HeaderValue, Method};

    const NOW: i64 = 1_700_000_000;
    const URI: &str = "https://ase.example/alice/outgoing-payments";
    const BODY: &[u8] = br#"{"walletAddress":"https://ase.example/alice","quoteId":"q1"}"#;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn signed(body: &[u8], created: i64, authorization: bool, kid: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("content-length", HeaderValue::from(body.len()));
        headers.insert(
            "content-digest",
            HeaderValue::from_str(&content_digest_sha512(body)).expect("digest"),
        );
        if authorization {
            headers.insert("authorization", HeaderValue::from_static("GNAP token123"));
        }
        sign_request(&Method::POST, URI, &mut headers, body, &key(1), kid, created).expect("sign");
        headers
    }

    fn found() -> KeyOutcome {
        KeyOutcome::Found {
            client: Some("https://ase.example/alice".into()),
            source: Some("https://ase.example/alice/jwks.json".into()),
            key: key(1).verifying_key(),
        }
    }

    fn run(headers: &HeaderMap, body: &[u8], now: i64, k: &KeyOutcome) -> SignatureReport {
        let req = Request {
            method: &Method::POST,
            target_uri: URI,
            headers,
            body,
        };
        explain(&req, now, &Policy::default(), k)
    }

    #[test]
    fn a_good_signature_is_ok_with_its_base_and_key() {
        let h = signed(BODY, NOW - 3, true, "k1");
        let r = run(&h, BODY, NOW, &found());
        assert_eq!(r.verdict.outcome, Outcome::Ok, "{:?}", r.verdict.reasons);
        assert!(r.verdict.reasons.is_empty());
        assert_eq!(r.label.as_deref(), Some("sig1"));
        let p = r.params.as_ref().expect("params");
        assert_eq!(
            (p.keyid.as_deref(), p.created, p.created_age_secs),
            (Some("k1"), Some(NOW - 3), Some(3))
        );
        let k = r.key.as_ref().expect("key");
        assert_eq!(k.verified, Some(true));
        assert!(r.digest.as_ref().expect("digest").matches);
        let base = r.base.as_deref().expect("base");
        assert!(base.starts_with("\"@method\": POST\n\"@target-uri\": https://ase.example/alice/outgoing-payments\n"));
        assert!(base.contains("\"authorization\": GNAP token123\n"));
        // One source of truth: the base is the verifier's.
        let req = Request {
            method: &Method::POST,
            target_uri: URI,
            headers: &h,
            body: BODY,
        };
        let sig = parse_signature(&h).expect("parse");
        assert_eq!(signature_base(&req, &sig).expect("base"), base);
        // Without a key the base is shown and the signature is not checked.
        let r = run(&h, BODY, NOW, &KeyOutcome::NotChecked);
        assert_eq!(r.verdict.outcome, Outcome::NotChecked);
        assert!(r.key.is_none());
    }

    #[test]
    fn a_tampered_body_names_both_digests() {
        let h = signed(BODY, NOW, true, "k1");
        let tampered = br#"{"walletAddress":"https://ase.example/alice","quoteId":"q2"}"#;
        let r = run(&h, tampered, NOW, &found());
        assert_eq!(r.verdict.outcome, Outcome::Refused);
        let d = r.digest.as_ref().expect("digest");
        assert!(!d.matches);
        assert_eq!(
            r.verdict.reasons,
            vec![format!(
                "content-digest differs: sent {}, body hashes to {}",
                content_digest_sha512(BODY),
                content_digest_sha512(tampered)
            )]
        );
    }

    #[test]
    fn a_stale_or_future_created_gives_its_age_and_the_window() {
        let h = signed(BODY, NOW - 412, true, "k1");
        let r = run(&h, BODY, NOW, &found());
        assert_eq!(
            r.verdict.reasons,
            vec!["`created` is 412 s old, window is 300 s".to_owned()]
        );
        let h = signed(BODY, NOW + 400, true, "k1");
        let r = run(&h, BODY, NOW, &found());
        assert_eq!(
            r.verdict.reasons,
            vec!["`created` is 400 s in the future, window is 300 s".to_owned()]
        );
    }

    #[test]
    fn an_uncovered_component_is_named() {
        // Signed without Authorization, then the header added: it is not covered.
        let mut h = signed(BODY, NOW, false, "k1");
        h.insert("authorization", HeaderValue::from_static("GNAP token123"));
        let r = run(&h, BODY, NOW, &found());
        assert_eq!(r.verdict.reasons, vec!["`authorization` is not covered".to_owned()]);
        assert_eq!(r.key.as_ref().and_then(|k| k.verified), Some(true));
    }

    #[test]
    fn an_unknown_kid_names_the_key_set() {
        let h = signed(BODY, NOW, true, "nope");
        let r = run(
            &h,
            BODY,
            NOW,
            &KeyOutcome::Missing {
                client: Some("https://ase.example/alice".into()),
                source: "https://ase.example/alice/jwks.json".into(),
            },
        );
        assert_eq!(
            r.verdict.reasons,
            vec!["no key with kid `nope` at https://ase.example/alice/jwks.json".to_owned()]
        );
        let r = run(
            &h,
            BODY,
            NOW,
            &KeyOutcome::Unavailable {
                client: Some("https://x.example/bob".into()),
                reason: "key set fetch answered HTTP 500".into(),
            },
        );
        assert_eq!(
            r.verdict.reasons,
            vec!["the keys of https://x.example/bob could not be had: key set fetch answered HTTP 500".to_owned()]
        );
    }

    #[test]
    fn a_wrong_key_is_named_with_its_kid_and_client() {
        let h = signed(BODY, NOW, true, "k1");
        let wrong = KeyOutcome::Found {
            client: Some("https://ase.example/alice".into()),
            source: None,
            key: key(2).verifying_key(),
        };
        let r = run(&h, BODY, NOW, &wrong);
        assert_eq!(
            r.verdict.reasons,
            vec!["signature does not verify with kid `k1` of https://ase.example/alice".to_owned()]
        );
        assert_eq!(r.key.as_ref().and_then(|k| k.verified), Some(false));
    }

    #[test]
    fn unsigned_and_malformed_requests_say_so() {
        let r = run(&HeaderMap::new(), b"", NOW, &found());
        assert_eq!(
            r.verdict.reasons,
            vec!["no `Signature-Input` header: the request is not signed".to_owned()]
        );
        assert!(r.digest.is_none());
        let mut h = signed(BODY, NOW, true, "k1");
        h.insert("signature-input", HeaderValue::from_static("sig1=(\"@method\""));
        let r = run(&h, BODY, NOW, &found());
        assert_eq!(r.verdict.outcome, Outcome::Refused);
        assert!(
            r.verdict.reasons[0].starts_with("the signature headers cannot be read: malformed: signature-input"),
            "{:?}",
            r.verdict.reasons
        );
        // Several failures are all listed; a content-length the body does not have too.
        let h = signed(BODY, NOW - 1000, false, "k1");
        let r = run(&h, &BODY[1..], NOW, &found());
        assert_eq!(r.verdict.reasons.len(), 3, "{:?}", r.verdict.reasons);
        assert!(r.verdict.reasons[0].starts_with("content-digest differs"));
        assert_eq!(r.verdict.reasons[1], "`created` is 1000 s old, window is 300 s");
        assert!(r.verdict.reasons[2].starts_with("content-length"));
    }

    #[test]
    fn reports_round_trip_through_json() {
        let h = signed(BODY, NOW, true, "k1");
        let r = run(&h, BODY, NOW, &found());
        let json = serde_json::to_string(&r).expect("json");
        assert!(json.contains("\"outcome\":\"ok\""));
        let back: SignatureReport = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, r);
    }
}
