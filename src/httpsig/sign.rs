//! Signing outgoing requests exactly as the official Node SDK
//! (`@interledger/http-signature-utils` 2.0.3 `createHeaders`) does: label `sig1`,
//! parameters `keyid` then `created`, covering `@method`, `@target-uri`,
//! `authorization` when present and, with a body, `content-digest`,
//! `content-length` and `content-type`.
//!
//! The digest is over the body bytes given; callers send compact JSON, which is
//! what the Node SDK's re-serialisation produces.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, SigningKey};
use http::Method;
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use sfv::{DictSerializer, KeyRef, StringRef};

use super::digest::content_digest_sha512;
use super::verify::{Form, Request, SignatureParams, signature_base};
use super::{CONTENT_DIGEST, Error, SIGNATURE, SIGNATURE_INPUT};

/// The label every Open Payments client uses.
pub const LABEL: &str = "sig1";

/// Signs a request in place: with a non-empty `body` sets `Content-Digest`
/// (sha-512), `Content-Length` and `Content-Type: application/json`; then sets
/// `Signature-Input` and `Signature`. `target_uri` is the absolute URL requested.
pub fn sign_request(
    method: &Method,
    target_uri: &str,
    headers: &mut HeaderMap,
    body: &[u8],
    key: &SigningKey,
    keyid: &str,
    created: i64,
) -> Result<(), Error> {
    let keyid_sf =
        StringRef::from_str(keyid).map_err(|e| Error::Malformed(format!("keyid cannot be sent as a string: {e}")))?;

    let mut components = vec!["@method", "@target-uri"];
    if headers.contains_key(AUTHORIZATION) {
        components.push("authorization");
    }
    if !body.is_empty() {
        headers.insert(CONTENT_DIGEST, header_value(&content_digest_sha512(body))?);
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        components.extend(["content-digest", "content-length", "content-type"]);
    }

    let input = signature_input(&components, keyid_sf, created)?;
    let raw_params = input
        .strip_prefix(LABEL)
        .and_then(|rest| rest.strip_prefix('='))
        .ok_or_else(|| Error::Malformed("signature-input serialisation".into()))?
        .to_owned();
    let params = SignatureParams {
        label: LABEL.to_owned(),
        components: components.iter().map(|c| (*c).to_owned()).collect(),
        keyid: Some(keyid.to_owned()),
        created: Some(created),
        expires: None,
        alg: None,
        nonce: None,
        tag: None,
        raw_params,
        signature: Vec::new(),
        form: Form::Structured,
    };
    let base = signature_base(
        &Request {
            method,
            target_uri,
            headers,
            body,
        },
        &params,
    )?;
    let signature = key.sign(base.as_bytes());
    headers.insert(SIGNATURE_INPUT, header_value(&input)?);
    headers.insert(
        SIGNATURE,
        header_value(&format!("{LABEL}=:{}:", STANDARD.encode(signature.to_bytes())))?,
    );
    Ok(())
}

/// `sig1=("c1" "c2" …);keyid="<kid>";created=<unix>`.
fn signature_input(components: &[&str], keyid: &StringRef, created: i64) -> Result<String, Error> {
    let label = KeyRef::from_str(LABEL).map_err(|e| Error::Malformed(e.to_string()))?;
    let keyid_key = KeyRef::from_str("keyid").map_err(|e| Error::Malformed(e.to_string()))?;
    let created_key = KeyRef::from_str("created").map_err(|e| Error::Malformed(e.to_string()))?;
    let created =
        sfv::Integer::try_from(created).map_err(|_| Error::Malformed(format!("created {created} is out of range")))?;
    let mut dict = DictSerializer::new();
    {
        let mut list = dict.inner_list(label);
        for c in components {
            let c = StringRef::from_str(c).map_err(|e| Error::Malformed(e.to_string()))?;
            list.bare_item(c);
        }
        list.finish()
            .parameter(keyid_key, keyid)
            .parameter(created_key, created);
    }
    dict.finish()
        .ok_or_else(|| Error::Malformed("empty signature-input".into()))
}

fn header_value(s: &str) -> Result<HeaderValue, Error> {
    HeaderValue::from_str(s).map_err(|_| Error::Malformed(format!("invalid header value {s:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpsig::verify::{Policy, verify_request};

    const KID: &str = "https://ase.example/alice/keys/1";

    // Captured from `@interledger/http-signature-utils` 2.0.3 `createHeaders` with
    // the private key whose seed is 32 bytes of 0x01, the clock fixed at
    // 1700000000.123 s, and the inputs used in the tests below.
    const NODE_DIGEST: &str =
        "sha-512=:KRDmS/FUf+qKdhPC6X1xzhGIfoUt0Vdp979O0W/R/zZP+WujL5VsVVNJw81bmBUJoxZpRGIz72WSvypsuxHHng==:";
    const NODE_SIG_BODY: &str =
        "sig1=:M07pl8tMHr8YSSdDqwsuUeuHRVT52QkJj4MuOWkH9k8Yom75O73Vrqe31VzqZm/33tO+ajZr7QIQ1rBs4r7oDw==:";
    const NODE_SIG_NO_BODY: &str =
        "sig1=:qeorLO2mX9jFdocq0/PO/ACFMWizOx/DKaUCEs6EtRDRY5VZ6oi//Rk8h5z+5lc5+V5CkiFsQJ6jawEgHrCPBA==:";
    const NODE_SIG_GET_AUTH: &str =
        "sig1=:4+rN05KGvOkbjq3Uq/MDGLe3xFz9OMq8KJbZ6UZRfyODYNNVTYqQ7EVDnuBD8cpRCtKTl8Uf9chczU1IhwbGDQ==:";

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[1u8; 32])
    }

    #[test]
    fn node_sdk_format_with_body_and_authorization() {
        let body = br#"{"receiver":"https://ase.example/bob/incoming-payments/1","method":"ilp"}"#;
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("GNAP 123"));
        sign_request(
            &Method::POST,
            "https://ase.example/quotes",
            &mut headers,
            body,
            &key(),
            KID,
            1_700_000_000,
        )
        .expect("sign");
        assert_eq!(
            headers["signature-input"],
            "sig1=(\"@method\" \"@target-uri\" \"authorization\" \"content-digest\" \
             \"content-length\" \"content-type\");keyid=\"https://ase.example/alice/keys/1\";\
             created=1700000000"
        );
        assert_eq!(headers[CONTENT_DIGEST], content_digest_sha512(body));
        assert_eq!(headers[CONTENT_LENGTH], body.len().to_string());
        assert_eq!(headers[CONTENT_TYPE], "application/json");
        assert_eq!(headers[CONTENT_LENGTH], "73");
        // Byte-identical to what the Node SDK emitted for the same key and inputs.
        assert_eq!(headers[CONTENT_DIGEST], NODE_DIGEST);
        assert_eq!(headers[SIGNATURE], NODE_SIG_BODY);

        // The signature base, spelled out.
        let base = format!(
            "\"@method\": POST\n\"@target-uri\": https://ase.example/quotes\n\
             \"authorization\": GNAP 123\n\"content-digest\": {NODE_DIGEST}\n\
             \"content-length\": 73\n\"content-type\": application/json\n\
             \"@signature-params\": (\"@method\" \"@target-uri\" \"authorization\" \
             \"content-digest\" \"content-length\" \"content-type\");\
             keyid=\"https://ase.example/alice/keys/1\";created=1700000000"
        );
        assert_eq!(
            NODE_SIG_BODY,
            format!("sig1=:{}:", STANDARD.encode(key().sign(base.as_bytes()).to_bytes()))
        );

        // And the verifier accepts the Node-signed request.
        let vk = key().verifying_key();
        let req = Request {
            method: &Method::POST,
            target_uri: "https://ase.example/quotes",
            headers: &headers,
            body,
        };
        verify_request(&req, 1_700_000_000, &Policy::default(), |kid| {
            (kid == KID).then_some(vk)
        })
        .expect("Node-format request verifies");
    }

    #[test]
    fn node_sdk_format_without_body() {
        let mut headers = HeaderMap::new();
        sign_request(
            &Method::POST,
            "https://ase.example/",
            &mut headers,
            b"",
            &key(),
            "k1",
            1_700_000_000,
        )
        .expect("sign");
        assert_eq!(
            headers["signature-input"],
            r#"sig1=("@method" "@target-uri");keyid="k1";created=1700000000"#
        );
        assert_eq!(headers[SIGNATURE], NODE_SIG_NO_BODY);
        assert!(!headers.contains_key(CONTENT_DIGEST));
        assert!(!headers.contains_key(CONTENT_LENGTH));

        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("GNAP tok"));
        sign_request(
            &Method::GET,
            "https://ase.example/incoming-payments/1",
            &mut headers,
            b"",
            &key(),
            "k1",
            1_700_000_000,
        )
        .expect("sign");
        assert_eq!(
            headers["signature-input"],
            r#"sig1=("@method" "@target-uri" "authorization");keyid="k1";created=1700000000"#
        );
        assert_eq!(headers[SIGNATURE], NODE_SIG_GET_AUTH);
        let vk = key().verifying_key();
        let req = Request {
            method: &Method::GET,
            target_uri: "https://ase.example/incoming-payments/1",
            headers: &headers,
            body: b"",
        };
        verify_request(&req, 1_700_000_000, &Policy::default(), |_| Some(vk)).expect("verifies");
    }

    #[test]
    fn keyid_is_escaped_and_content_type_overwritten() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        sign_request(
            &Method::POST,
            "https://ase.example/",
            &mut headers,
            b"{}",
            &key(),
            r#"a"b\c"#,
            -5,
        )
        .expect("sign");
        assert_eq!(headers[CONTENT_TYPE], "application/json");
        assert!(
            headers["signature-input"]
                .to_str()
                .expect("ascii")
                .ends_with(r#";keyid="a\"b\\c";created=-5"#)
        );
    }
}
