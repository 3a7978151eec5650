//! The legacy signature form: what the official Rust SDK sends verifies, each covered part changed is refused,
//! and every shape the strict parser refuses for another reason is still refused.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, SigningKey};
use http::Method;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use proptest::prelude::*;

use super::super::{Form, Policy, Request, SignatureParams, parse_signature, verify_request};
use crate::httpsig::{Error, content_digest_sha512, sign_request};

const NOW: i64 = 1_700_000_000;
const TARGET: &str = "http://127.0.0.1:3000/alice/incoming-payments";
const BODY: &[u8] = br#"{"walletAddress":"http://127.0.0.1:3000/alice","incomingAmount":{"value":"100","assetCode":"USD","assetScale":2}}"#;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

struct Signed {
    method: Method,
    target: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Signed {
    fn req(&self) -> Request<'_> {
        Request {
            method: &self.method,
            target_uri: &self.target,
            headers: &self.headers,
            body: &self.body,
        }
    }

    fn check(&self) -> Result<SignatureParams, Error> {
        let k = key().verifying_key();
        verify_request(&self.req(), NOW, &Policy::default(), |kid| (kid == "k1").then_some(k))
    }

    fn set(&mut self, name: &'static str, value: &str) {
        self.headers
            .insert(name, HeaderValue::from_str(value).expect("header value"));
    }

    fn input(&self) -> String {
        self.headers["signature-input"].to_str().expect("ascii").to_owned()
    }
}

/// Signs the way the official Rust SDK does: components in its order, unquoted; `created` then `keyid`;
/// `"@signature-params"` the text after `sig1=`; the signature bare base64.
fn sdk_sign(method: Method, target: &str, body: Option<&[u8]>, token: Option<&str>, params: &str) -> Signed {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut components = vec!["@method", "@target-uri", "content-type"];
    if let Some(t) = token {
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_str(&format!("GNAP {t}")).expect("token"),
        );
        components.push("authorization");
    }
    if let Some(b) = body {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(b.len()));
        headers.insert(
            "content-digest",
            HeaderValue::from_str(&content_digest_sha512(b)).expect("digest"),
        );
        components.extend(["content-digest", "content-length"]);
    }
    let mut signed = Signed {
        method,
        target: target.to_owned(),
        headers,
        body: body.unwrap_or_default().to_vec(),
    };
    let raw = format!("({}){params}", components.join(" "));
    sdk_resign(&mut signed, &raw);
    signed
}

/// Signs `signed` over the SDK's own base for the legacy `raw` (the text after `sig1=`).
fn sdk_resign(signed: &mut Signed, raw: &str) {
    let components = raw
        .strip_prefix('(')
        .and_then(|r| r.split_once(')'))
        .map(|(inner, _)| inner)
        .unwrap_or_default();
    let mut base = String::new();
    for c in components.split(' ').filter(|c| !c.is_empty()) {
        let value = match c {
            "@method" => signed.method.as_str().to_owned(),
            "@target-uri" => signed.target.clone(),
            header => signed
                .headers
                .get(header)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
        };
        base.push_str(&format!("\"{c}\": {value}\n"));
    }
    base.push_str(&format!("\"@signature-params\": {raw}"));
    let signature = STANDARD.encode(key().sign(base.as_bytes()).to_bytes());
    signed.set("signature-input", &format!("sig1={raw}"));
    signed.set("signature", &signature);
}

/// A change made to a signed request.
type Change = Box<dyn Fn(&mut Signed)>;
/// What a refusal must look like.
type Expect = fn(&Error) -> bool;

const PARAMS: &str = r#";created=1700000000;keyid="k1""#;

fn sdk_post() -> Signed {
    sdk_sign(Method::POST, TARGET, Some(BODY), Some("tok-123"), PARAMS)
}

#[test]
fn the_sdk_form_verifies_with_the_raw_text_as_signature_params() {
    let s = sdk_post();
    let p = s.check().expect("the SDK's request verifies");
    assert_eq!(
        p.form,
        Form::Legacy {
            bare_components: true,
            bare_signature: true
        }
    );
    assert_eq!(
        p.components,
        [
            "@method",
            "@target-uri",
            "content-type",
            "authorization",
            "content-digest",
            "content-length"
        ]
    );
    assert_eq!((p.keyid.as_deref(), p.created), (Some("k1"), Some(NOW)));
    assert_eq!(
        p.raw_params,
        s.input().strip_prefix("sig1=").expect("label"),
        "the base's last line is the text received"
    );

    // A GET without a body, and a grant request without a token.
    sdk_sign(Method::GET, TARGET, None, Some("tok-123"), PARAMS)
        .check()
        .expect("GET");
    sdk_sign(Method::POST, "http://127.0.0.1:3000/", Some(b"{\"a\":1}"), None, PARAMS)
        .check()
        .expect("grant request");

    // `sig1=` before the bare signature, as the reference verifier also strips it.
    let mut s = sdk_post();
    let bare = s.headers["signature"].to_str().expect("ascii").to_owned();
    s.set("signature", &format!("sig1={bare}"));
    s.check().expect("sig1= and bare base64");

    // Unquoted components with a strict signature, and quoted components with a bare signature.
    let mut s = sdk_post();
    let bare = s.headers["signature"].to_str().expect("ascii").to_owned();
    s.set("signature", &format!("sig1=:{bare}:"));
    let p = s.check().expect("strict Signature");
    assert_eq!(
        p.form,
        Form::Legacy {
            bare_components: true,
            bare_signature: false
        }
    );
    let mut h = HeaderMap::new();
    h.insert(AUTHORIZATION, HeaderValue::from_static("GNAP tok"));
    sign_request(&Method::POST, TARGET, &mut h, BODY, &key(), "k1", NOW).expect("sign");
    let strict_sig = h["signature"].to_str().expect("ascii").to_owned();
    let mut s = Signed {
        method: Method::POST,
        target: TARGET.to_owned(),
        headers: h,
        body: BODY.to_vec(),
    };
    assert_eq!(s.check().expect("strict").form, Form::Structured);
    let bare = strict_sig
        .strip_prefix("sig1=:")
        .and_then(|r| r.strip_suffix(':'))
        .expect("strict shape")
        .to_owned();
    s.set("signature", &bare);
    let p = s.check().expect("bare Signature");
    assert_eq!(
        p.form,
        Form::Legacy {
            bare_components: false,
            bare_signature: true
        }
    );
}

#[test]
fn each_covered_part_changed_is_refused() {
    let cases: Vec<(&str, Change)> = vec![
        ("method", Box::new(|s| s.method = Method::PUT)),
        ("target", Box::new(|s| s.target.push_str("?x=1"))),
        ("content-type", Box::new(|s| s.set("content-type", "text/plain"))),
        ("authorization", Box::new(|s| s.set("authorization", "GNAP other"))),
        (
            "body and digest",
            Box::new(|s| {
                s.body = br#"{"walletAddress":"http://127.0.0.1:3000/mallory"}"#.to_vec();
                let d = content_digest_sha512(&s.body);
                s.set("content-digest", &d);
                let n = s.body.len().to_string();
                s.set("content-length", &n);
            }),
        ),
        ("body alone", Box::new(|s| s.body[2] ^= 1)),
        ("content-length", Box::new(|s| s.set("content-length", "1"))),
        (
            "created",
            Box::new(|s| {
                let i = s.input().replace("created=1700000000", "created=1700000001");
                s.set("signature-input", &i);
            }),
        ),
        (
            "keyid",
            Box::new(|s| {
                let i = s.input().replace("keyid=\"k1\"", "keyid=\"k2\"");
                s.set("signature-input", &i);
            }),
        ),
        (
            "a parameter added",
            Box::new(|s| {
                let i = format!("{};nonce=\"n\"", s.input());
                s.set("signature-input", &i);
            }),
        ),
        (
            "a component dropped",
            Box::new(|s| {
                let i = s.input().replace(" content-type", "");
                s.set("signature-input", &i);
            }),
        ),
        (
            "signature bit",
            Box::new(|s| {
                let mut bytes = STANDARD.decode(s.headers["signature"].as_bytes()).expect("base64");
                bytes[0] ^= 1;
                s.set("signature", &STANDARD.encode(bytes));
            }),
        ),
    ];
    for (what, change) in cases {
        let mut s = sdk_post();
        s.check().expect("before");
        change(&mut s);
        assert!(s.check().is_err(), "{what} changed must be refused");
    }
}

#[test]
fn what_the_strict_parser_refuses_for_another_reason_stays_refused() {
    let body_components = "@method @target-uri content-type authorization content-digest content-length";
    let cases: Vec<(String, Expect)> = vec![
        // Two labels, in one line or two.
        (
            format!(r#"({body_components}){PARAMS}, sig2=(@method);keyid="k1""#),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!(r#"({body_components}){PARAMS}, sig2=("@method");keyid="k1""#),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!(r#"({body_components}){PARAMS}, sig1=("@method");keyid="k1""#),
            |e| matches!(e, Error::Malformed(_)),
        ),
        // keyid or created missing; keyid not a string.
        (format!("({body_components});created=1700000000"), |e| {
            *e == Error::MissingParam("keyid")
        }),
        (format!(r#"({body_components});keyid="k1""#), |e| {
            *e == Error::MissingParam("created")
        }),
        (format!("({body_components});created=1700000000;keyid=k1"), |e| {
            matches!(e, Error::Malformed(_))
        }),
        // A wrong algorithm, quoted or not.
        (format!(r#"({body_components}){PARAMS};alg="rsa-pss-sha512""#), |e| {
            *e == Error::UnsupportedAlgorithm("rsa-pss-sha512".into())
        }),
        (format!("({body_components}){PARAMS};alg=ed25519"), |e| {
            matches!(e, Error::Malformed(_))
        }),
        // A body whose digest (or length, or type) is not covered.
        (
            format!("(@method @target-uri content-type authorization content-length){PARAMS}"),
            |e| *e == Error::NotCovered("content-digest"),
        ),
        (
            format!("(@method @target-uri authorization content-digest content-length){PARAMS}"),
            |e| *e == Error::NotCovered("content-type"),
        ),
        // authorization sent but not covered; @method or @target-uri not covered.
        (
            format!("(@method @target-uri content-type content-digest content-length){PARAMS}"),
            |e| *e == Error::NotCovered("authorization"),
        ),
        (
            format!("(@target-uri content-type authorization content-digest content-length){PARAMS}"),
            |e| *e == Error::NotCovered("@method"),
        ),
        (format!("(){PARAMS}"), |e| *e == Error::NotCovered("@method")),
        // Shapes: upper case, twice, component parameters, mixed quoting, spacing, no list.
        (
            format!("(@Method @target-uri content-type authorization content-digest content-length){PARAMS}"),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!("(@method @method @target-uri content-type authorization content-digest content-length){PARAMS}"),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!("(@method;sf @target-uri content-type authorization content-digest content-length){PARAMS}"),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!(r#"(@method "@target-uri" content-type authorization content-digest content-length){PARAMS}"#),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!("(@method  @target-uri content-type authorization content-digest content-length){PARAMS}"),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (
            format!("( @method @target-uri content-type authorization content-digest content-length){PARAMS}"),
            |e| matches!(e, Error::Malformed(_)),
        ),
        (format!("@method{PARAMS}"), |e| matches!(e, Error::Malformed(_))),
        (format!("({body_components}){PARAMS} trailing"), |e| {
            matches!(e, Error::Malformed(_))
        }),
        (format!("({body_components}){PARAMS};"), |e| {
            matches!(e, Error::Malformed(_))
        }),
        (format!("({body_components}) {PARAMS}"), |e| {
            matches!(e, Error::Malformed(_))
        }),
    ];
    for (raw, want) in cases {
        let mut s = sdk_post();
        // Signed over exactly this text, so only the rule can refuse it.
        sdk_resign(&mut s, &raw);
        let got = s.check();
        assert!(got.as_ref().is_err_and(want), "{raw}: {got:?}");
    }

    // A label other than sig1 is not the legacy form.
    let mut s = sdk_post();
    let i = s.input().replacen("sig1=", "mine=", 1);
    s.set("signature-input", &i);
    assert!(matches!(s.check(), Err(Error::Malformed(_))));

    // A second Signature-Input line.
    let mut s = sdk_post();
    s.headers.append(
        "signature-input",
        HeaderValue::from_static(r#"sig2=("@method");keyid="k1""#),
    );
    assert!(matches!(s.check(), Err(Error::Malformed(_))));

    // A bare signature of the wrong length, not base64, or for two labels.
    for sig in [
        "AAAA",
        "AAAA====",
        "not base64!",
        "",
        "sig1=",
        "sig2=AAAA",
        "QUFB, QUFB",
    ] {
        let mut s = sdk_post();
        s.set("signature", sig);
        assert!(
            matches!(s.check(), Err(Error::Malformed(_) | Error::MissingSignature(_))),
            "{sig:?}"
        );
    }
    let mut s = sdk_post();
    let bare = s.headers["signature"].to_str().expect("ascii").to_owned();
    s.set("signature", &format!("{bare}, {bare}"));
    assert!(matches!(s.check(), Err(Error::Malformed(_))));

    // A covered content-digest over an empty body.
    let mut s = sdk_sign(Method::GET, TARGET, None, Some("t"), PARAMS);
    s.set("content-digest", &content_digest_sha512(b"x"));
    sdk_resign(
        &mut s,
        &format!("(@method @target-uri content-type authorization content-digest){PARAMS}"),
    );
    assert_eq!(s.check().map(|_| ()), Err(Error::DigestWithoutBody));

    // Stale, as in the strict form.
    let mut s = sdk_post();
    sdk_resign(&mut s, &format!(r#"({body_components});created=1600000000;keyid="k1""#));
    assert!(matches!(s.check(), Err(Error::Stale { .. })));
}

#[test]
fn the_strict_form_is_read_as_before() {
    // A strict header that fails the strict parse keeps the strict parser's error.
    let mut s = sdk_post();
    s.set(
        "signature-input",
        r#"sig1=("@method" "@target-uri";keyid="k1";created=1700000000"#,
    );
    s.set("signature", "sig1=:AAAA:");
    let e = parse_signature(&s.headers).expect_err("refused");
    assert!(
        matches!(e, Error::Malformed(ref m) if m.starts_with("signature-input:")),
        "{e}"
    );
    // The SDK's input with a strict, wrongly sized signature: the legacy path reports the size.
    let mut s = sdk_post();
    s.set("signature", "sig1=:AAAA:");
    assert!(matches!(parse_signature(&s.headers), Err(Error::Malformed(m)) if m.contains("bytes")));
}

fn header_text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "sig1=",
        "sig2=",
        "(",
        ")",
        " ",
        "@method",
        "@target-uri",
        "content-type",
        "\"",
        ";",
        "=",
        ",",
        "keyid",
        "created",
        "alg",
        "1700000000",
        "\"k1\"",
        "ed25519",
        ":",
        "AAAA",
        "==",
        "-",
        "\t",
        "a",
        "Z",
        "9",
        "/",
        "+",
    ]);
    prop::collection::vec(pieces, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// No header text makes either path panic, and whatever parses carries a 64-byte signature, lower-case
    /// unique components and a base that ends with the received parameters.
    #[test]
    fn any_header_text_is_read_or_refused(input in header_text(), sig in header_text(), bare in any::<bool>()) {
        let mut s = sdk_post();
        if let Ok(v) = HeaderValue::from_str(&input) {
            s.headers.insert("signature-input", v);
        }
        let sig = if bare { STANDARD.encode(sig.as_bytes()) } else { sig };
        if let Ok(v) = HeaderValue::from_str(&sig) {
            s.headers.insert("signature", v);
        }
        if let Ok(p) = parse_signature(&s.headers) {
            prop_assert_eq!(p.signature.len(), 64);
            for (i, c) in p.components.iter().enumerate() {
                prop_assert!(!c.is_empty() && !c.bytes().any(|b| b.is_ascii_uppercase()));
                prop_assert!(!p.components[..i].contains(c));
            }
            if let Ok(base) = super::super::signature_base(&s.req(), &p) {
                let last = format!("\"@signature-params\": {}", p.raw_params);
                prop_assert!(base.ends_with(&last));
            }
        }
        let _ = s.check();
    }

    /// The SDK's form over any body, token and time verifies, and one byte of its Signature-Input changed
    /// never does.
    #[test]
    fn the_sdk_form_round_trips(body in prop::collection::vec(any::<u8>(), 0..64), token in "[A-Za-z0-9]{0,12}", at in 0usize..200) {
        let token = (!token.is_empty()).then_some(token.as_str());
        let body = (!body.is_empty()).then_some(body.as_slice());
        let mut s = sdk_sign(Method::POST, TARGET, body, token, PARAMS);
        prop_assert!(s.check().is_ok());
        let input = s.input();
        let at = at % input.len();
        let mut bytes = input.into_bytes();
        bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
        if let Ok(v) = HeaderValue::from_bytes(&bytes) {
            s.headers.insert("signature-input", v);
            prop_assert!(s.check().is_err());
        }
    }
}
