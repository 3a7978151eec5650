//! RFC 9530 `Content-Digest`: producing the `sha-512` value the Node SDK sends and
//! checking a received header against the raw body bytes.
//!
//! Only `sha-256` and `sha-512` are known. Every listed digest must be known and
//! must match; an unknown algorithm is refused (as the reference verifier does).
//! The digest is always over the exact bytes received, never re-serialised JSON.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sfv::{BareItem, Dictionary, ListEntry, Parser};
use sha2::{Digest as _, Sha256, Sha512};
use subtle::ConstantTimeEq as _;

use super::Error;

/// `Content-Digest` value with a SHA-512 digest of `body`: `sha-512=:<base64>:`.
pub fn content_digest_sha512(body: &[u8]) -> String {
    format!("sha-512=:{}:", STANDARD.encode(Sha512::digest(body)))
}

/// `Content-Digest` value with a SHA-256 digest of `body`: `sha-256=:<base64>:`.
pub fn content_digest_sha256(body: &[u8]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(Sha256::digest(body)))
}

/// Checks a `Content-Digest` header value against `body`.
///
/// The value is parsed as a structured-field Dictionary whose members are byte
/// sequences. Every member must be `sha-256` or `sha-512` and must match.
pub fn verify_content_digest(header_value: &str, body: &[u8]) -> Result<(), Error> {
    let dict: Dictionary = Parser::new(header_value)
        .parse()
        .map_err(|e| Error::Malformed(format!("content-digest: {e}")))?;
    if dict.is_empty() {
        return Err(Error::Malformed("content-digest: no digest listed".into()));
    }
    // Check every algorithm is known before hashing anything.
    for key in dict.keys() {
        if !matches!(key.as_str(), "sha-256" | "sha-512") {
            return Err(Error::UnsupportedDigest(key.as_str().to_owned()));
        }
    }
    for (key, entry) in &dict {
        let given = match entry {
            ListEntry::Item(item) => match &item.bare_item {
                BareItem::ByteSequence(bytes) => bytes.as_slice(),
                _ => {
                    return Err(Error::Malformed(format!(
                        "content-digest: `{}` is not a byte sequence",
                        key.as_str()
                    )));
                }
            },
            ListEntry::InnerList(_) => {
                return Err(Error::Malformed(format!(
                    "content-digest: `{}` is an inner list",
                    key.as_str()
                )));
            }
        };
        let (name, ok) = if key.as_str() == "sha-256" {
            ("sha-256", bool::from(Sha256::digest(body).as_slice().ct_eq(given)))
        } else {
            ("sha-512", bool::from(Sha512::digest(body).as_slice().ct_eq(given)))
        };
        if !ok {
            return Err(Error::DigestMismatch(name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const VECTORS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/vectors/httpsig/rfc9530-content-digest.json"
    );

    fn cases() -> Vec<Value> {
        let text = std::fs::read_to_string(VECTORS).expect("read rfc9530 vectors");
        let v: Value = serde_json::from_str(&text).expect("parse rfc9530 vectors");
        v["cases"].as_array().expect("cases").clone()
    }

    #[test]
    fn rfc9530_vectors_produce_and_verify() {
        let cases = cases();
        assert!(cases.len() >= 4);
        for case in &cases {
            let body = case["body_utf8"].as_str().expect("body").as_bytes();
            assert_eq!(case["body_len"].as_u64(), Some(body.len() as u64));
            if let Some(v) = case["sha-512"].as_str() {
                assert_eq!(content_digest_sha512(body), format!("sha-512={v}"));
                verify_content_digest(&format!("sha-512={v}"), body).expect("sha-512 verifies");
            }
            if let Some(v) = case["sha-256"].as_str() {
                assert_eq!(content_digest_sha256(body), format!("sha-256={v}"));
                verify_content_digest(&format!("sha-256={v}"), body).expect("sha-256 verifies");
            }
            if let (Some(a), Some(b)) = (case["sha-256"].as_str(), case["sha-512"].as_str()) {
                verify_content_digest(&format!("sha-256={a}, sha-512={b}"), body).expect("both verify");
            }
            for key in ["content_digest_header_sha256", "content_digest_header_sha512"] {
                if let Some(h) = case[key].as_str() {
                    verify_content_digest(h, body).expect("header form verifies");
                }
            }
            // Any other body is refused.
            let mut other = body.to_vec();
            other.push(b' ');
            if let Some(v) = case["sha-512"].as_str() {
                assert_eq!(
                    verify_content_digest(&format!("sha-512={v}"), &other),
                    Err(Error::DigestMismatch("sha-512"))
                );
            }
        }
    }

    #[test]
    fn rfc9530_errata_are_rejected() {
        let with_lf = b"{\"hello\": \"world\"}\n";
        // Section 2 multi-value example: sha-256 is over brotli bytes, so "all must
        // match" rejects it.
        let mixed = "sha-256=:d435Qo+nKZ+gLcUHn7GQtQ72hiBVAgqoLsZnZPiTGPk=:, \
                     sha-512=:YMAam51Jz/jOATT6/zvHrLVgOYTGFy1d6GJiOHTohq4yP+pgk4vf2aCsyRZOtw8MjkM7iw7yZ/WkppmM44T3qg==:";
        assert_eq!(
            verify_content_digest(mixed, with_lf),
            Err(Error::DigestMismatch("sha-256"))
        );
        // Section 6 double padding on a 32-byte value.
        let double = "sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg==:";
        assert!(matches!(
            verify_content_digest(double, with_lf),
            Err(Error::Malformed(_))
        ));
        // RFC 9421 test-response header that does not match its body.
        let wrong =
            "sha-512=:JlEy2bfUz7WrWIjc1qV6KVLpdr/7L5/L4h7Sxvh6sNHpDQWDCL+GauFQWcZBvVDhiyOnAQsxzZFYwi0wDH+1pw==:";
        assert_eq!(
            verify_content_digest(wrong, b"{\"message\": \"good dog\"}"),
            Err(Error::DigestMismatch("sha-512"))
        );
    }

    #[test]
    fn unknown_and_malformed_are_rejected() {
        let body = b"{\"hello\": \"world\"}";
        let good512 = content_digest_sha512(body);
        for (value, want) in [
            ("md5=:XrY7u+Ae7tCTyyK7j1rNww==:", Error::UnsupportedDigest("md5".into())),
            (
                "sha=:Dm2pNcFaBjjqz6S3mK7VH0ZqTUE=:",
                Error::UnsupportedDigest("sha".into()),
            ),
            (
                &format!("{good512}, unixsum=:AAAA:"),
                Error::UnsupportedDigest("unixsum".into()),
            ),
        ] {
            assert_eq!(verify_content_digest(value, body), Err(want), "{value}");
        }
        for value in [
            "",
            "sha-512",
            "sha-512=\"abc\"",
            "sha-512=(:AAAA:)",
            "sha-512=:not base64!:",
            "SHA-512=:AAAA:",
            "sha-512=:WZDPaVn_7XgHaAy8pmojAkGWoRx2UFChF41A2svX-TaPm-AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
        ] {
            assert!(
                matches!(verify_content_digest(value, body), Err(Error::Malformed(_))),
                "{value}"
            );
        }
        // Two digests, one wrong.
        let wrong256 = content_digest_sha256(b"other");
        assert_eq!(
            verify_content_digest(&format!("{wrong256}, {good512}"), body),
            Err(Error::DigestMismatch("sha-256"))
        );
        // Truncated digest.
        assert_eq!(
            verify_content_digest("sha-512=:AAAA:", body),
            Err(Error::DigestMismatch("sha-512"))
        );
    }
}
