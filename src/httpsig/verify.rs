//! RFC 9421 verification: parsing `Signature-Input` / `Signature`, building the
//! signature base, checking the Ed25519 signature, and the Open Payments policy
//! (required components, digest over the raw body, `created` window).
//!
//! The `@signature-params` line uses the member text exactly as received, so a
//! signer's parameter order is never changed. This module does no I/O: the
//! caller supplies `@target-uri` (rebuilt from the configured public URL plus the
//! raw request-target), the clock and the key lookup.

use ed25519_dalek::{Signature, VerifyingKey};
use http::header::{AUTHORIZATION, HeaderMap, HeaderName};
use sfv::{BareItem, Dictionary, ListEntry, Parser};

pub mod legacy;

use super::digest::verify_content_digest;
use super::{CONTENT_DIGEST, Error, SIGNATURE, SIGNATURE_INPUT};

/// The parts of a received request that a signature can cover.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The request method.
    pub method: &'a http::Method,
    /// Absolute URL the client requested: `scheme://host[:port]/path?query`,
    /// rebuilt from the server's configured public URL and the raw request-target.
    pub target_uri: &'a str,
    /// All request headers.
    pub headers: &'a HeaderMap,
    /// The raw body bytes, as received.
    pub body: &'a [u8],
}

/// One signature chosen from `Signature-Input` and `Signature`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureParams {
    /// The dictionary label (`sig1` from Open Payments clients).
    pub label: String,
    /// Covered component identifiers, in order (lowercase, no parameters).
    pub components: Vec<String>,
    /// `keyid` parameter.
    pub keyid: Option<String>,
    /// `created` parameter (unix seconds).
    pub created: Option<i64>,
    /// `expires` parameter (unix seconds).
    pub expires: Option<i64>,
    /// `alg` parameter; if present it is `ed25519`.
    pub alg: Option<String>,
    /// `nonce` parameter.
    pub nonce: Option<String>,
    /// `tag` parameter.
    pub tag: Option<String>,
    /// The member value exactly as received after `label=`: the inner list and its
    /// parameters. This is the `@signature-params` value.
    pub raw_params: String,
    /// The decoded signature bytes (64 for Ed25519). Unique per signed request, so
    /// usable as a replay-cache key.
    pub signature: Vec<u8>,
    /// How the two headers were written.
    pub form: Form,
}

/// How a request's `Signature-Input` and `Signature` were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// RFC 8941 structured fields, as RFC 9421 defines them.
    #[default]
    Structured,
    /// The legacy form the reference ASE also reads (see [`legacy`]).
    Legacy {
        /// `Signature-Input` lists its components unquoted.
        bare_components: bool,
        /// `Signature` is bare base64 rather than `sig1=:…:`.
        bare_signature: bool,
    },
}

impl SignatureParams {
    /// Whether `component` is covered.
    pub fn covers(&self, component: &str) -> bool {
        self.components.iter().any(|c| c == component)
    }
}

/// Server-side checks beyond the cryptography.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Largest allowed distance, in seconds, between `created` and the server clock.
    pub max_skew_secs: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Self { max_skew_secs: 300 }
    }
}

/// Parses `Signature-Input` and `Signature` and picks one signature: label `sig1`
/// if present, otherwise the only label.
///
/// The headers are read as RFC 8941 structured fields. Only when that fails is the
/// legacy form tried ([`legacy`]: unquoted component names, a bare base64 signature for
/// the one label `sig1`, as the official Rust SDK writes and the reference ASE reads);
/// the result then says so in [`SignatureParams::form`], and the policy, the signature
/// base and the key check are the same for both.
pub fn parse_signature(headers: &HeaderMap) -> Result<SignatureParams, Error> {
    let input = combined(headers, SIGNATURE_INPUT)?;
    let sigs = combined(headers, SIGNATURE)?;
    match parse_fields(&input, &sigs) {
        Ok((params, _)) => Ok(params),
        Err(strict) => legacy::parse(&input, &sigs).unwrap_or(Err(strict)),
    }
}

/// The strict RFC 8941 parse of both fields; also answers how many labels
/// `Signature-Input` has.
fn parse_fields(input: &str, sigs: &str) -> Result<(SignatureParams, usize), Error> {
    let input_dict: Dictionary = Parser::new(input)
        .parse()
        .map_err(|e| Error::Malformed(format!("signature-input: {e}")))?;
    let label = if input_dict.contains_key("sig1") {
        "sig1".to_owned()
    } else {
        let mut keys = input_dict.keys();
        match (keys.next(), keys.next()) {
            (Some(only), None) => only.as_str().to_owned(),
            (None, _) => return Err(Error::Malformed("signature-input: empty".into())),
            (Some(_), Some(_)) => return Err(Error::AmbiguousLabel),
        }
    };
    let Some(ListEntry::InnerList(list)) = input_dict.get(label.as_str()) else {
        return Err(Error::Malformed(format!(
            "signature-input: `{label}` is not an inner list"
        )));
    };

    let mut components: Vec<String> = Vec::with_capacity(list.items.len());
    for item in &list.items {
        let Some(name) = item.bare_item.as_string() else {
            return Err(Error::Malformed(
                "signature-input: component identifier is not a string".into(),
            ));
        };
        let name = name.as_str();
        if let Some((param, _)) = item.params.first() {
            return Err(Error::UnsupportedComponent(format!("{name};{}", param.as_str())));
        }
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(Error::Malformed(format!(
                "signature-input: component `{name}` is not lowercase"
            )));
        }
        if components.iter().any(|c| c == name) {
            return Err(Error::Malformed(format!(
                "signature-input: component `{name}` listed twice"
            )));
        }
        components.push(name.to_owned());
    }

    let mut params = SignatureParams {
        label: label.clone(),
        components,
        keyid: None,
        created: None,
        expires: None,
        alg: None,
        nonce: None,
        tag: None,
        raw_params: String::new(),
        signature: Vec::new(),
        form: Form::Structured,
    };
    for (key, value) in &list.params {
        let key = key.as_str();
        match key {
            "keyid" => params.keyid = Some(string_param(key, value)?),
            "alg" => params.alg = Some(string_param(key, value)?),
            "nonce" => params.nonce = Some(string_param(key, value)?),
            "tag" => params.tag = Some(string_param(key, value)?),
            "created" => params.created = Some(int_param(key, value)?),
            "expires" => params.expires = Some(int_param(key, value)?),
            // Unknown parameters are covered through `raw_params` and otherwise ignored.
            _ => {}
        }
    }
    if let Some(alg) = &params.alg
        && alg != "ed25519"
    {
        return Err(Error::UnsupportedAlgorithm(alg.clone()));
    }

    // The received text of the member, cross-checked against the parser's view so
    // that the scanner can never disagree with what was parsed.
    let raw = raw_member(input, &label)
        .ok_or_else(|| Error::Malformed(format!("signature-input: cannot locate member `{label}`")))?;
    let reparsed: Dictionary = Parser::new(&format!("{label}={raw}"))
        .parse()
        .map_err(|e| Error::Malformed(format!("signature-input: {e}")))?;
    if reparsed.len() != 1 || reparsed.get(label.as_str()) != input_dict.get(label.as_str()) {
        return Err(Error::Malformed(format!(
            "signature-input: member `{label}` text does not match its parsed value"
        )));
    }
    params.raw_params = raw.to_owned();

    let sig_dict: Dictionary = Parser::new(sigs)
        .parse()
        .map_err(|e| Error::Malformed(format!("signature: {e}")))?;
    let Some(entry) = sig_dict.get(label.as_str()) else {
        return Err(Error::MissingSignature(label));
    };
    let ListEntry::Item(item) = entry else {
        return Err(Error::Malformed(format!("signature: `{label}` is an inner list")));
    };
    let Some(bytes) = item.bare_item.as_byte_sequence() else {
        return Err(Error::Malformed(format!("signature: `{label}` is not a byte sequence")));
    };
    if bytes.len() != Signature::BYTE_SIZE {
        return Err(Error::Malformed(format!(
            "signature: `{label}` has {} bytes, expected {}",
            bytes.len(),
            Signature::BYTE_SIZE
        )));
    }
    params.signature = bytes.to_vec();
    Ok((params, input_dict.len()))
}

/// Builds the RFC 9421 signature base for `sig` over `req`: one
/// `"<component>": <value>` line per covered component, then the
/// `"@signature-params"` line, joined by LF with no trailing newline.
pub fn signature_base(req: &Request<'_>, sig: &SignatureParams) -> Result<String, Error> {
    let mut base = String::new();
    let mut uri: Option<http::Uri> = None;
    for name in &sig.components {
        let value = component_value(req, name, &mut uri)?;
        base.push('"');
        base.push_str(name);
        base.push_str("\": ");
        base.push_str(&value);
        base.push('\n');
    }
    base.push_str("\"@signature-params\": ");
    base.push_str(&sig.raw_params);
    Ok(base)
}

/// Checks the Ed25519 signature of `sig` over `req` with `key` (`verify_strict`,
/// weak keys refused). Policy is checked separately by [`check_policy`].
pub fn verify(req: &Request<'_>, sig: &SignatureParams, key: &VerifyingKey) -> Result<(), Error> {
    if let Some(alg) = &sig.alg
        && alg != "ed25519"
    {
        return Err(Error::UnsupportedAlgorithm(alg.clone()));
    }
    if key.is_weak() {
        return Err(Error::BadKey("weak Ed25519 public key".into()));
    }
    let signature = Signature::from_slice(&sig.signature).map_err(|_| Error::BadSignature)?;
    let base = signature_base(req, sig)?;
    key.verify_strict(base.as_bytes(), &signature)
        .map_err(|_| Error::BadSignature)
}

/// The Open Payments policy: `@method` and `@target-uri` covered; `authorization`
/// covered when present; with a body, `content-digest`, `content-length` and
/// `content-type` covered and the digest valid over the raw bytes; `content-digest`
/// never over an empty body; `Content-Length` equal to the body length; `keyid`
/// and `created` present, `created` within the skew window, `expires` not past.
pub fn check_policy(req: &Request<'_>, sig: &SignatureParams, now_unix: i64, policy: &Policy) -> Result<(), Error> {
    for required in ["@method", "@target-uri"] {
        if !sig.covers(required) {
            return Err(Error::NotCovered(required));
        }
    }
    if req.headers.contains_key(AUTHORIZATION) && !sig.covers("authorization") {
        return Err(Error::NotCovered("authorization"));
    }
    if !req.body.is_empty() {
        for required in ["content-digest", "content-length", "content-type"] {
            if !sig.covers(required) {
                return Err(Error::NotCovered(required));
            }
        }
    }
    if let Some(length) = single_value(req.headers, "content-length")? {
        let matches = length.trim().parse::<u64>().ok() == u64::try_from(req.body.len()).ok()
            && length.trim().bytes().all(|b| b.is_ascii_digit());
        if !matches {
            return Err(Error::ContentLengthMismatch {
                header: length.to_owned(),
                actual: req.body.len(),
            });
        }
    }
    let digest = single_value(req.headers, CONTENT_DIGEST)?;
    if sig.covers("content-digest") || digest.is_some() {
        if req.body.is_empty() {
            return Err(Error::DigestWithoutBody);
        }
        let value = digest.ok_or_else(|| Error::MissingComponent("content-digest".into()))?;
        verify_content_digest(value, req.body)?;
    }
    if sig.keyid.is_none() {
        return Err(Error::MissingParam("keyid"));
    }
    let created = sig.created.ok_or(Error::MissingParam("created"))?;
    if created.abs_diff(now_unix) > policy.max_skew_secs.unsigned_abs() {
        return Err(Error::Stale { created, now: now_unix });
    }
    if let Some(expires) = sig.expires
        && expires < now_unix
    {
        return Err(Error::Expired { expires, now: now_unix });
    }
    Ok(())
}

/// Parses the signature, checks the policy, looks the key up by `keyid` and
/// verifies. Returns the accepted signature's parameters.
pub fn verify_request<F>(
    req: &Request<'_>,
    now_unix: i64,
    policy: &Policy,
    key_lookup: F,
) -> Result<SignatureParams, Error>
where
    F: FnOnce(&str) -> Option<VerifyingKey>,
{
    let sig = parse_signature(req.headers)?;
    check_policy(req, &sig, now_unix, policy)?;
    let keyid = sig.keyid.as_deref().ok_or(Error::MissingParam("keyid"))?;
    let key = key_lookup(keyid).ok_or_else(|| Error::UnknownKey(keyid.to_owned()))?;
    verify(req, &sig, &key)?;
    Ok(sig)
}

/// All values of header `name`, each checked as visible ASCII, joined by `", "`.
fn combined(headers: &HeaderMap, name: &'static str) -> Result<String, Error> {
    let mut out = String::new();
    for (i, value) in headers.get_all(name).iter().enumerate() {
        let value = value
            .to_str()
            .map_err(|_| Error::Malformed(format!("{name}: not visible ASCII")))?;
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(value);
    }
    if headers.contains_key(name) {
        Ok(out)
    } else {
        Err(Error::MissingHeader(name))
    }
}

/// The only value of a header, if present; several values are refused.
fn single_value<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<Option<&'h str>, Error> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Error::Malformed(format!("{name}: sent more than once")));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| Error::Malformed(format!("{name}: not visible ASCII")))
}

fn string_param(key: &str, value: &BareItem) -> Result<String, Error> {
    value
        .as_string()
        .map(|s| s.as_str().to_owned())
        .ok_or_else(|| Error::Malformed(format!("signature-input: `{key}` is not a string")))
}

fn int_param(key: &str, value: &BareItem) -> Result<i64, Error> {
    value
        .as_integer()
        .map(i64::from)
        .ok_or_else(|| Error::Malformed(format!("signature-input: `{key}` is not an integer")))
}

/// The value of one covered component.
fn component_value(req: &Request<'_>, name: &str, uri: &mut Option<http::Uri>) -> Result<String, Error> {
    if let Some(derived) = name.strip_prefix('@') {
        let target = || -> Result<http::Uri, Error> {
            req.target_uri
                .parse::<http::Uri>()
                .map_err(|e| Error::Malformed(format!("target URI: {e}")))
        };
        let parsed = match derived {
            "method" | "target-uri" => None,
            "authority" | "scheme" | "path" | "query" | "request-target" => {
                if uri.is_none() {
                    *uri = Some(target()?);
                }
                uri.as_ref()
            }
            _ => return Err(Error::UnsupportedComponent(name.to_owned())),
        };
        return Ok(match (derived, parsed) {
            ("method", _) => req.method.as_str().to_owned(),
            ("target-uri", _) => req.target_uri.to_owned(),
            ("authority", Some(u)) => authority(u)?,
            ("scheme", Some(u)) => u
                .scheme_str()
                .map(str::to_ascii_lowercase)
                .ok_or_else(|| Error::Malformed("target URI has no scheme".into()))?,
            ("path", Some(u)) => path(u).to_owned(),
            ("query", Some(u)) => format!("?{}", u.query().unwrap_or("")),
            ("request-target", Some(u)) => match u.query() {
                Some(q) => format!("{}?{q}", path(u)),
                None => path(u).to_owned(),
            },
            _ => return Err(Error::UnsupportedComponent(name.to_owned())),
        });
    }
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| Error::Malformed(format!("component `{name}` is not a field name")))?;
    let mut values = req.headers.get_all(&header).iter().peekable();
    if values.peek().is_none() {
        return Err(Error::MissingComponent(name.to_owned()));
    }
    let mut out = String::new();
    for (i, value) in values.enumerate() {
        let value = value
            .to_str()
            .map_err(|_| Error::Malformed(format!("{name}: not visible ASCII")))?;
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(value.trim_matches([' ', '\t']));
    }
    Ok(out)
}

fn path(uri: &http::Uri) -> &str {
    match uri.path() {
        "" => "/",
        p => p,
    }
}

/// `@authority`: host lowercased, default port for the scheme removed.
fn authority(uri: &http::Uri) -> Result<String, Error> {
    let auth = uri
        .authority()
        .ok_or_else(|| Error::Malformed("target URI has no authority".into()))?;
    let host = auth.host().to_ascii_lowercase();
    let default_port = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    };
    Ok(match auth.port_u16() {
        Some(port) if Some(port) != default_port => format!("{host}:{port}"),
        _ => host,
    })
}

/// The text after `label=` of the last top-level dictionary member named `label`
/// (a later duplicate overrides an earlier one, as in RFC 9651), without
/// surrounding whitespace. Commas inside strings and inner lists are not member
/// separators.
fn raw_member<'a>(field: &'a str, label: &str) -> Option<&'a str> {
    let bytes = field.as_bytes();
    let mut found = None;
    let mut start = 0;
    let mut in_string = false;
    let mut escaped = false;
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                if let Some(v) = member_value(&field[start..i], label) {
                    found = Some(v);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if let Some(v) = member_value(&field[start..], label) {
        found = Some(v);
    }
    found
}

fn member_value<'a>(member: &'a str, label: &str) -> Option<&'a str> {
    let member = member.trim_matches([' ', '\t']);
    member
        .strip_prefix(label)?
        .strip_prefix('=')
        .map(|v| v.trim_matches([' ', '\t']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpsig::sign::sign_request;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use ed25519_dalek::{Signer as _, SigningKey};
    use http::header::CONTENT_LENGTH;
    use http::{HeaderValue, Method};
    use serde_json::Value;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vectors/httpsig/");

    fn read(name: &str) -> String {
        std::fs::read_to_string(format!("{DIR}{name}")).expect("read vector file")
    }

    fn json(name: &str) -> Value {
        serde_json::from_str(&read(name)).expect("parse vector json")
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn rfc_key() -> SigningKey {
        let v = json("rfc9421-B.1.4-test-key-ed25519.json");
        let seed: [u8; 32] = hex(v["private_seed_hex"].as_str().expect("seed"))
            .try_into()
            .expect("32 bytes");
        let key = SigningKey::from_bytes(&seed);
        let public = hex(v["public_key_hex"].as_str().expect("pub"));
        assert_eq!(key.verifying_key().as_bytes().as_slice(), public.as_slice());
        let x = URL_SAFE_NO_PAD
            .decode(v["jwk"]["x"].as_str().expect("x"))
            .expect("b64url");
        assert_eq!(x, public);
        key
    }

    struct Owned {
        method: Method,
        target_uri: String,
        headers: HeaderMap,
        body: Vec<u8>,
    }

    impl Owned {
        fn req(&self) -> Request<'_> {
            Request {
                method: &self.method,
                target_uri: &self.target_uri,
                headers: &self.headers,
                body: &self.body,
            }
        }
    }

    fn b26_request() -> (Owned, Value) {
        let v = json("rfc9421-B.2.6-ed25519-request.json");
        let r = &v["request"];
        let mut headers = HeaderMap::new();
        for h in r["headers"].as_array().expect("headers") {
            let name = HeaderName::from_bytes(h[0].as_str().expect("name").as_bytes()).expect("header name");
            headers.append(
                name,
                HeaderValue::from_str(h[1].as_str().expect("value")).expect("value"),
            );
        }
        headers.insert(
            "signature-input",
            HeaderValue::from_str(v["signature_input_header"].as_str().expect("si")).expect("si value"),
        );
        headers.insert(
            "signature",
            HeaderValue::from_str(v["signature_header"].as_str().expect("sig")).expect("sig"),
        );
        let owned = Owned {
            method: Method::from_bytes(r["method"].as_str().expect("method").as_bytes()).expect("method"),
            target_uri: r["target_uri"].as_str().expect("uri").to_owned(),
            headers,
            body: r["body"].as_str().expect("body").as_bytes().to_vec(),
        };
        (owned, v)
    }

    #[test]
    fn rfc9421_b26_base_signature_and_resign() {
        let (owned, v) = b26_request();
        let req = owned.req();
        let sig = parse_signature(req.headers).expect("parse");
        assert_eq!(sig.label, "sig-b26");
        let want: Vec<String> = v["covered_components"]
            .as_array()
            .expect("components")
            .iter()
            .map(|c| c.as_str().expect("str").to_owned())
            .collect();
        assert_eq!(sig.components, want);
        assert_eq!(sig.keyid.as_deref(), Some("test-key-ed25519"));
        assert_eq!(sig.created, Some(1_618_884_473));
        assert_eq!(sig.signature, hex(v["signature_hex"].as_str().expect("signature hex")));

        let base = signature_base(&req, &sig).expect("base");
        let file = read("rfc9421-B.2.6-signature-base.txt");
        assert_eq!(base.as_bytes(), file.as_bytes());
        assert_eq!(base.len(), 284);
        assert_eq!(base, v["signature_base"].as_str().expect("base json"));

        let key = rfc_key();
        verify(&req, &sig, &key.verifying_key()).expect("RFC signature verifies");

        // Ed25519 is deterministic: re-signing gives the RFC signature.
        let resigned = key.sign(file.as_bytes());
        assert_eq!(resigned.to_bytes().as_slice(), sig.signature.as_slice());
        assert_eq!(
            STANDARD.encode(resigned.to_bytes()),
            v["signature_b64"].as_str().expect("b64")
        );

        // The digest header in the test request matches its body.
        let cd = owned.headers.get("content-digest").expect("cd");
        verify_content_digest(cd.to_str().expect("ascii"), &owned.body).expect("digest");
    }

    #[test]
    fn rfc9421_b26_negatives() {
        let (owned, _) = b26_request();
        let key = rfc_key().verifying_key();
        let sig = parse_signature(&owned.headers).expect("parse");

        // Base + trailing LF / CRLF endings do not verify.
        let base = read("rfc9421-B.2.6-signature-base.txt");
        let s = Signature::from_slice(&sig.signature).expect("sig");
        assert!(key.verify_strict(format!("{base}\n").as_bytes(), &s).is_err());
        assert!(key.verify_strict(base.replace('\n', "\r\n").as_bytes(), &s).is_err());

        // Date changed by one second.
        let mut changed = Owned { ..owned };
        changed
            .headers
            .insert("date", HeaderValue::from_static("Tue, 20 Apr 2021 02:07:56 GMT"));
        assert_eq!(verify(&changed.req(), &sig, &key), Err(Error::BadSignature));
        let (owned, _) = b26_request();

        // One bit of the signature flipped.
        let mut flipped = sig.clone();
        flipped.signature[10] ^= 1;
        assert_eq!(verify(&owned.req(), &flipped, &key), Err(Error::BadSignature));

        // Wrong public key.
        let other = SigningKey::from_bytes(&[7u8; 32]).verifying_key();
        assert_eq!(verify(&owned.req(), &sig, &other), Err(Error::BadSignature));

        // Crypto verifies, but the Open Payments policy refuses it.
        assert_eq!(
            check_policy(&owned.req(), &sig, 1_618_884_473, &Policy::default()),
            Err(Error::NotCovered("@target-uri"))
        );
        assert_eq!(
            verify_request(&owned.req(), 1_618_884_473, &Policy::default(), |_| Some(key)),
            Err(Error::NotCovered("@target-uri"))
        );
    }

    #[test]
    fn rfc9421_b25_hmac_is_refused() {
        let v = json("rfc9421-B.2.5-hmac-sha256.json");
        let mut headers = HeaderMap::new();
        headers.insert(
            "signature-input",
            HeaderValue::from_str(v["signature_input_header"].as_str().expect("si")).expect("si"),
        );
        headers.insert(
            "signature",
            HeaderValue::from_str(v["signature_header"].as_str().expect("sig")).expect("sig"),
        );
        // A 32-byte HMAC value is not an Ed25519 signature.
        assert!(matches!(parse_signature(&headers), Err(Error::Malformed(_))));
        let mut alg = headers.clone();
        alg.insert(
            "signature-input",
            HeaderValue::from_static(
                "sig-b25=(\"date\" \"@authority\" \"content-type\");created=1618884473;keyid=\"test-shared-secret\";alg=\"hmac-sha256\"",
            ),
        );
        assert_eq!(
            parse_signature(&alg),
            Err(Error::UnsupportedAlgorithm("hmac-sha256".into()))
        );
    }

    const NOW: i64 = 1_700_000_000;
    const TARGET: &str = "https://ase.example/alice/incoming-payments?x=1";
    const BODY: &[u8] = br#"{"walletAddress":"https://ase.example/alice","incomingAmount":{"value":"100","assetCode":"USD","assetScale":2}}"#;

    fn client_key() -> SigningKey {
        SigningKey::from_bytes(&[42u8; 32])
    }

    fn signed(body: &[u8], authorization: Option<&str>, keyid: &str) -> Owned {
        let mut headers = HeaderMap::new();
        if let Some(a) = authorization {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(a).expect("auth"));
        }
        headers.insert("accept", HeaderValue::from_static("application/json"));
        sign_request(&Method::POST, TARGET, &mut headers, body, &client_key(), keyid, NOW).expect("sign");
        Owned {
            method: Method::POST,
            target_uri: TARGET.to_owned(),
            headers,
            body: body.to_vec(),
        }
    }

    fn check(owned: &Owned) -> Result<SignatureParams, Error> {
        let key = client_key().verifying_key();
        verify_request(&owned.req(), NOW, &Policy::default(), |kid| {
            (kid == "key-1").then_some(key)
        })
    }

    /// Re-signs `owned` after a mutation, keeping the given Signature-Input.
    fn resign_with_input(owned: &mut Owned, input: &str) {
        owned.headers.insert(
            "signature-input",
            HeaderValue::from_str(&format!("sig1={input}")).expect("input"),
        );
        let sig = parse_signature(&owned.headers).expect("parse");
        let base = signature_base(&owned.req(), &sig).expect("base");
        let s = client_key().sign(base.as_bytes());
        owned.headers.insert(
            "signature",
            HeaderValue::from_str(&format!("sig1=:{}:", STANDARD.encode(s.to_bytes()))).expect("sig"),
        );
    }

    #[test]
    fn round_trip_passes() {
        let owned = signed(BODY, Some("GNAP token-123"), "key-1");
        let sig = check(&owned).expect("verifies");
        assert_eq!(sig.label, "sig1");
        assert_eq!(sig.keyid.as_deref(), Some("key-1"));
        assert_eq!(sig.created, Some(NOW));
        assert_eq!(
            sig.components,
            [
                "@method",
                "@target-uri",
                "authorization",
                "content-digest",
                "content-length",
                "content-type"
            ]
        );
        // No body, no authorization.
        let owned = signed(b"", None, "key-1");
        check(&owned).expect("empty body verifies");
        // Window edges.
        let key = client_key().verifying_key();
        for now in [NOW - 300, NOW + 300] {
            verify_request(&owned.req(), now, &Policy::default(), |_| Some(key)).expect("inside window");
        }
        // A header outside the covered set may change.
        let mut owned = signed(BODY, None, "key-1");
        owned.headers.insert("accept", HeaderValue::from_static("text/plain"));
        check(&owned).expect("uncovered header change is fine");
    }

    #[test]
    fn tampered_body_is_rejected() {
        let mut owned = signed(BODY, None, "key-1");
        owned.body[5] ^= 0x20;
        assert_eq!(check(&owned), Err(Error::DigestMismatch("sha-512")));
        // Same length, re-digested but not re-signed.
        let d = crate::httpsig::content_digest_sha512(&owned.body);
        owned
            .headers
            .insert(CONTENT_DIGEST, HeaderValue::from_str(&d).expect("d"));
        assert_eq!(check(&owned), Err(Error::BadSignature));
        // Different length.
        let mut owned = signed(BODY, None, "key-1");
        owned.body.push(b' ');
        assert!(matches!(
            check(&owned),
            Err(Error::ContentLengthMismatch { actual, .. }) if actual == BODY.len() + 1
        ));
    }

    #[test]
    fn wrong_key_and_unknown_key_are_rejected() {
        let owned = signed(BODY, None, "key-1");
        let other = SigningKey::from_bytes(&[9u8; 32]).verifying_key();
        assert_eq!(
            verify_request(&owned.req(), NOW, &Policy::default(), |_| Some(other)),
            Err(Error::BadSignature)
        );
        let owned = signed(BODY, None, "key-2");
        assert_eq!(check(&owned), Err(Error::UnknownKey("key-2".into())));
    }

    #[test]
    fn covered_header_change_is_rejected() {
        let mut owned = signed(BODY, Some("GNAP token-123"), "key-1");
        owned
            .headers
            .insert(AUTHORIZATION, HeaderValue::from_static("GNAP token-456"));
        assert_eq!(check(&owned), Err(Error::BadSignature));
        let mut owned = signed(BODY, None, "key-1");
        owned
            .headers
            .insert("content-type", HeaderValue::from_static("text/plain"));
        assert_eq!(check(&owned), Err(Error::BadSignature));
        // Method and target URI are covered too.
        let mut owned = signed(BODY, None, "key-1");
        owned.method = Method::PUT;
        assert_eq!(check(&owned), Err(Error::BadSignature));
        let mut owned = signed(BODY, None, "key-1");
        owned.target_uri = "https://other.example/alice/incoming-payments?x=1".into();
        assert_eq!(check(&owned), Err(Error::BadSignature));
    }

    #[test]
    fn authorization_must_be_covered() {
        // Signed without Authorization, then a token added.
        let mut owned = signed(BODY, None, "key-1");
        owned
            .headers
            .insert(AUTHORIZATION, HeaderValue::from_static("GNAP token-123"));
        assert_eq!(check(&owned), Err(Error::NotCovered("authorization")));
        // Validly signed, but the signer left authorization out.
        resign_with_input(
            &mut owned,
            r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="key-1";created=1700000000"#,
        );
        assert_eq!(check(&owned), Err(Error::NotCovered("authorization")));
    }

    #[test]
    fn body_needs_content_headers_covered() {
        for (input, missing) in [
            (
                r#"("@method" "@target-uri" "content-length" "content-type");keyid="key-1";created=1700000000"#,
                "content-digest",
            ),
            (
                r#"("@method" "@target-uri" "content-digest" "content-type");keyid="key-1";created=1700000000"#,
                "content-length",
            ),
            (
                r#"("@method" "@target-uri" "content-digest" "content-length");keyid="key-1";created=1700000000"#,
                "content-type",
            ),
            (
                r#"("@target-uri" "content-digest" "content-length" "content-type");keyid="key-1";created=1700000000"#,
                "@method",
            ),
        ] {
            let mut owned = signed(BODY, None, "key-1");
            resign_with_input(&mut owned, input);
            assert_eq!(check(&owned), Err(Error::NotCovered(missing)), "{input}");
        }
        // A body with no Content-Digest header at all, signed over method/uri only.
        let mut owned = signed(b"", None, "key-1");
        owned.body = BODY.to_vec();
        assert_eq!(check(&owned), Err(Error::NotCovered("content-digest")));
    }

    #[test]
    fn digest_on_empty_body_is_rejected() {
        let mut owned = signed(BODY, None, "key-1");
        owned.body.clear();
        owned.headers.insert(CONTENT_LENGTH, HeaderValue::from_static("0"));
        resign_with_input(
            &mut owned,
            r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="key-1";created=1700000000"#,
        );
        assert_eq!(check(&owned), Err(Error::DigestWithoutBody));
    }

    #[test]
    fn stale_future_and_expired_are_rejected() {
        let owned = signed(BODY, None, "key-1");
        let key = client_key().verifying_key();
        for now in [NOW + 301, NOW - 301, i64::MAX, i64::MIN] {
            assert_eq!(
                verify_request(&owned.req(), now, &Policy::default(), |_| Some(key)),
                Err(Error::Stale { created: NOW, now })
            );
        }
        let mut owned = signed(BODY, None, "key-1");
        resign_with_input(
            &mut owned,
            r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="key-1";created=1700000000;expires=1699999999"#,
        );
        assert_eq!(
            check(&owned),
            Err(Error::Expired {
                expires: NOW - 1,
                now: NOW
            })
        );
        resign_with_input(
            &mut owned,
            r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="key-1""#,
        );
        assert_eq!(check(&owned), Err(Error::MissingParam("created")));
        resign_with_input(
            &mut owned,
            r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");created=1700000000"#,
        );
        assert_eq!(check(&owned), Err(Error::MissingParam("keyid")));
    }

    #[test]
    fn digest_algorithm_cases_are_rejected() {
        use crate::httpsig::{content_digest_sha256, content_digest_sha512};
        let cases = [
            (
                "md5=:XrY7u+Ae7tCTyyK7j1rNww==:".to_owned(),
                Error::UnsupportedDigest("md5".into()),
            ),
            (
                format!(
                    "{}, {}",
                    content_digest_sha256(b"something else"),
                    content_digest_sha512(BODY)
                ),
                Error::DigestMismatch("sha-256"),
            ),
            (
                format!(
                    "{}, {}",
                    content_digest_sha256(BODY),
                    content_digest_sha512(b"something else")
                ),
                Error::DigestMismatch("sha-512"),
            ),
        ];
        for (digest, want) in cases {
            let mut owned = signed(BODY, None, "key-1");
            owned
                .headers
                .insert(CONTENT_DIGEST, HeaderValue::from_str(&digest).expect("d"));
            resign_with_input(
                &mut owned,
                r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="key-1";created=1700000000"#,
            );
            assert_eq!(check(&owned), Err(want), "{digest}");
        }
        // Both correct: accepted.
        let mut owned = signed(BODY, None, "key-1");
        let both = format!("{}, {}", content_digest_sha256(BODY), content_digest_sha512(BODY));
        owned
            .headers
            .insert(CONTENT_DIGEST, HeaderValue::from_str(&both).expect("d"));
        resign_with_input(
            &mut owned,
            r#"("@method" "@target-uri" "content-digest" "content-length" "content-type");keyid="key-1";created=1700000000"#,
        );
        check(&owned).expect("both digests good");
    }

    #[test]
    fn odd_keyids() {
        // Quotes, semicolons and backslashes survive as one sf-string and reach the
        // lookup verbatim; they never split into extra parameters.
        for kid in [r#"k"1"#, "k;created=1", r"k\1", r#"key-1";keyid="key-1"#] {
            let owned = signed(BODY, None, kid);
            let sig = parse_signature(&owned.headers).expect("parse");
            assert_eq!(sig.keyid.as_deref(), Some(kid));
            assert_eq!(sig.created, Some(NOW));
            assert_eq!(check(&owned), Err(Error::UnknownKey(kid.to_owned())));
        }
        // Characters an sf-string cannot carry: refused at signing time.
        for kid in ["k\n1", "k\u{e9}", "k\t1"] {
            let mut headers = HeaderMap::new();
            let r = sign_request(&Method::POST, TARGET, &mut headers, BODY, &client_key(), kid, NOW);
            assert!(matches!(r, Err(Error::Malformed(_))), "{kid:?}");
        }
        // ... and at parse time when a client sends them.
        let mut owned = signed(BODY, None, "key-1");
        for input in [
            "sig1=(\"@method\" \"@target-uri\");keyid=\"k\u{7f}\";created=1700000000",
            "sig1=(\"@method\" \"@target-uri\");keyid=key-1;created=1700000000",
            "sig1=(\"@method\" \"@target-uri\");keyid=\"key-1;created=1700000000",
            "sig1=(\"@method\" \"@target-uri\");keyid=\"key\\-1\";created=1700000000",
            "sig1=(\"@method\" \"@target-uri\");keyid=\"key-1\";created=\"1700000000\"",
        ] {
            if let Ok(v) = HeaderValue::from_bytes(input.as_bytes()) {
                owned.headers.insert("signature-input", v);
                assert!(
                    matches!(parse_signature(&owned.headers), Err(Error::Malformed(_))),
                    "{input}"
                );
            }
        }
        let mut headers = owned.headers.clone();
        headers.insert(
            "signature-input",
            HeaderValue::from_bytes("sig1=(\"@method\");keyid=\"k\u{e9}\"".as_bytes())
                .expect("obs-text is a valid header value"),
        );
        assert!(matches!(parse_signature(&headers), Err(Error::Malformed(_))));
    }

    #[test]
    fn labels_and_shapes() {
        let owned = signed(BODY, None, "key-1");
        let input = owned.headers["signature-input"].to_str().expect("ascii").to_owned();
        let sig_header = owned.headers["signature"].to_str().expect("ascii").to_owned();
        let raw = input.strip_prefix("sig1=").expect("sig1").to_owned();

        // sig1 preferred among several labels, in any order or header line.
        let mut h = owned.headers.clone();
        h.insert(
            "signature-input",
            HeaderValue::from_str(&format!(r#"other=("@method");keyid="x", {input}"#)).expect("v"),
        );
        h.insert(
            "signature",
            HeaderValue::from_str(&format!("other=:{}:, {sig_header}", STANDARD.encode([0u8; 64]))).expect("v"),
        );
        let parsed = parse_signature(&h).expect("sig1 picked");
        assert_eq!(parsed.raw_params, raw);
        let req = Request {
            headers: &h,
            ..owned.req()
        };
        check_policy(&req, &parsed, NOW, &Policy::default()).expect("policy");
        verify(&req, &parsed, &client_key().verifying_key()).expect("verify");

        let mut h = owned.headers.clone();
        h.append(
            "signature-input",
            HeaderValue::from_static(r#"other=("@method");keyid="x""#),
        );
        assert_eq!(parse_signature(&h).expect("multi-line").raw_params, raw);

        // A single non-sig1 label is used.
        let mut h = owned.headers.clone();
        h.insert(
            "signature-input",
            HeaderValue::from_str(&format!("mine={raw}")).expect("v"),
        );
        h.insert(
            "signature",
            HeaderValue::from_str(&sig_header.replacen("sig1=", "mine=", 1)).expect("v"),
        );
        let parsed = parse_signature(&h).expect("only label");
        assert_eq!(parsed.label, "mine");
        verify(
            &Request {
                headers: &h,
                ..owned.req()
            },
            &parsed,
            &client_key().verifying_key(),
        )
        .expect("verify");

        // Several labels without sig1.
        let mut h = owned.headers.clone();
        h.insert(
            "signature-input",
            HeaderValue::from_str(&format!("a={raw}, b={raw}")).expect("v"),
        );
        assert_eq!(parse_signature(&h), Err(Error::AmbiguousLabel));

        // Signature header missing the label / missing headers.
        let mut h = owned.headers.clone();
        h.insert(
            "signature",
            HeaderValue::from_str(&sig_header.replacen("sig1=", "sig2=", 1)).expect("v"),
        );
        assert_eq!(parse_signature(&h), Err(Error::MissingSignature("sig1".into())));
        let mut h = owned.headers.clone();
        h.remove("signature");
        assert_eq!(parse_signature(&h), Err(Error::MissingHeader("signature")));
        let mut h = owned.headers.clone();
        h.remove("signature-input");
        assert_eq!(parse_signature(&h), Err(Error::MissingHeader("signature-input")));

        // Raw params are used as received: extra whitespace is kept, so a signer
        // that signed the canonical form fails, one that signed the raw text passes.
        let mut spaced = signed(BODY, None, "key-1");
        let spaced_raw = raw.replace(";keyid", "; keyid");
        spaced.headers.insert(
            "signature-input",
            HeaderValue::from_str(&format!("sig1={spaced_raw}")).expect("v"),
        );
        let p = parse_signature(&spaced.headers).expect("parse");
        assert_eq!(p.raw_params, spaced_raw);
        assert_eq!(check(&spaced), Err(Error::BadSignature));
        resign_with_input(&mut spaced, &spaced_raw);
        check(&spaced).expect("raw text signed");

        // Bad component shapes.
        for (input, want) in [
            (
                r#"sig1=("@method" "@target-uri" "@query-param";name="x");keyid="key-1";created=1700000000"#,
                Error::UnsupportedComponent("@query-param;name".into()),
            ),
            (
                r#"sig1=("@method" "@target-uri" "content-digest";sf);keyid="key-1";created=1700000000"#,
                Error::UnsupportedComponent("content-digest;sf".into()),
            ),
            (
                r#"sig1=("@method" "@target-uri" "content-digest";key="sha-512");keyid="key-1";created=1700000000"#,
                Error::UnsupportedComponent("content-digest;key".into()),
            ),
        ] {
            let mut h = owned.headers.clone();
            h.insert("signature-input", HeaderValue::from_static(input));
            assert_eq!(parse_signature(&h), Err(want), "{input}");
        }
        for input in [
            r#"sig1=("@Method" "@target-uri");keyid="key-1";created=1700000000"#,
            r#"sig1=("@method" "Content-Type");keyid="key-1";created=1700000000"#,
            r#"sig1=("@method" "@method");keyid="key-1";created=1700000000"#,
            r#"sig1=(@method "@target-uri");keyid="key-1";created=1700000000"#,
            r#"sig1="@method";keyid="key-1";created=1700000000"#,
            r#"sig1=("@method" "@target-uri");keyid="key-1";created=1700000000,"#,
            r#"sig1=("@method" "@target-uri";keyid="key-1";created=1700000000"#,
        ] {
            let mut h = owned.headers.clone();
            h.insert("signature-input", HeaderValue::from_static(input));
            assert!(matches!(parse_signature(&h), Err(Error::Malformed(_))), "{input}");
        }
        for sig in ["sig1=:AAAA:", "sig1=\"abc\"", "sig1=(:AAAA:)", "sig1=:not base64:"] {
            let mut h = owned.headers.clone();
            h.insert("signature", HeaderValue::from_static(sig));
            assert!(matches!(parse_signature(&h), Err(Error::Malformed(_))), "{sig}");
        }

        // Unknown derived components and absent headers fail at base building.
        let mut h = owned.headers.clone();
        h.insert(
            "signature-input",
            HeaderValue::from_static(r#"sig1=("@method" "@status");keyid="key-1";created=1"#),
        );
        let p = parse_signature(&h).expect("parse");
        assert_eq!(
            signature_base(&owned.req(), &p),
            Err(Error::UnsupportedComponent("@status".into()))
        );
        h.insert(
            "signature-input",
            HeaderValue::from_static(r#"sig1=("@method" "x-missing");keyid="key-1";created=1"#),
        );
        let p = parse_signature(&h).expect("parse");
        assert_eq!(
            signature_base(&owned.req(), &p),
            Err(Error::MissingComponent("x-missing".into()))
        );
    }

    #[test]
    fn derived_components_and_header_values() {
        let mut headers = HeaderMap::new();
        headers.append("x-multi", HeaderValue::from_static("  a "));
        headers.append("x-multi", HeaderValue::from_static("\tb, c"));
        headers.append("x-empty", HeaderValue::from_static(""));
        let method = Method::GET;
        for (uri, authority, path, query, rt) in [
            (
                "https://Example.COM:443/a/b?x=1&y=%20",
                "example.com",
                "/a/b",
                "?x=1&y=%20",
                "/a/b?x=1&y=%20",
            ),
            ("http://h:8080", "h:8080", "/", "?", "/"),
            ("http://h:80/p", "h", "/p", "?", "/p"),
        ] {
            let req = Request {
                method: &method,
                target_uri: uri,
                headers: &headers,
                body: b"",
            };
            let sig = SignatureParams {
                label: "sig1".into(),
                components: [
                    "@method",
                    "@target-uri",
                    "@authority",
                    "@scheme",
                    "@path",
                    "@query",
                    "@request-target",
                    "x-multi",
                    "x-empty",
                ]
                .map(String::from)
                .to_vec(),
                keyid: None,
                created: None,
                expires: None,
                alg: None,
                nonce: None,
                tag: None,
                raw_params: "()".into(),
                signature: vec![],
                form: Form::Structured,
            };
            let scheme = if uri.starts_with("https") { "https" } else { "http" };
            let want = format!(
                "\"@method\": GET\n\"@target-uri\": {uri}\n\"@authority\": {authority}\n\
                 \"@scheme\": {scheme}\n\"@path\": {path}\n\"@query\": {query}\n\
                 \"@request-target\": {rt}\n\"x-multi\": a, b, c\n\"x-empty\": \n\
                 \"@signature-params\": ()"
            );
            assert_eq!(signature_base(&req, &sig).expect("base"), want);
        }
    }

    #[test]
    fn raw_member_scanner() {
        let f = r#"a=("x,y" "z");k="q\"),(", sig1=("@method");keyid="a,b";created=1 , c=1"#;
        assert_eq!(raw_member(f, "sig1"), Some(r#"("@method");keyid="a,b";created=1"#));
        assert_eq!(raw_member(f, "a"), Some(r#"("x,y" "z");k="q\"),(""#));
        assert_eq!(raw_member(f, "sig"), None);
        assert_eq!(raw_member("s=1, s=2", "s"), Some("2"));
        assert_eq!(raw_member("sig1", "sig1"), None);
    }
}
