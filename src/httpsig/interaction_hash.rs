//! GNAP interaction-finish hash (RFC 9635 §4.2.3): SHA-256 over
//! `client_nonce \n as_nonce \n interact_ref \n grant_endpoint_url`.
//!
//! Two encodings exist in the wild: standard base64 with padding (what Rafiki
//! emits) and base64url without padding (the RFC). This module produces both and
//! accepts either; it does not choose which one the AS sends.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use sha2::{Digest as _, Sha256};

use subtle::ConstantTimeEq as _;

fn hash(client_nonce: &str, as_nonce: &str, interact_ref: &str, grant_endpoint_url: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    for (i, part) in [client_nonce, as_nonce, interact_ref, grant_endpoint_url]
        .iter()
        .enumerate()
    {
        if i > 0 {
            h.update(b"\n");
        }
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// The hash in standard base64 with padding (Rafiki's `digest('base64')`).
pub fn interaction_hash_std(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
) -> String {
    STANDARD.encode(hash(client_nonce, as_nonce, interact_ref, grant_endpoint_url))
}

/// The hash in base64url without padding (RFC 9635).
pub fn interaction_hash_url(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
) -> String {
    URL_SAFE_NO_PAD.encode(hash(client_nonce, as_nonce, interact_ref, grant_endpoint_url))
}

/// Whether `received` is the hash of these inputs in either encoding (standard or
/// URL-safe alphabet, padded or not, but not a mix of alphabets).
pub fn verify_interaction_hash(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint_url: &str,
    received: &str,
) -> bool {
    let expected = hash(client_nonce, as_nonce, interact_ref, grant_endpoint_url);
    [STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD, URL_SAFE]
        .iter()
        .find_map(|engine| engine.decode(received).ok())
        .is_some_and(|bytes| bool::from(bytes.as_slice().ct_eq(expected.as_slice())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const FILE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/vectors/httpsig/gnap-rfc9635-interaction-hash.json"
    );

    fn vector() -> Value {
        serde_json::from_str(&std::fs::read_to_string(FILE).expect("read")).expect("json")
    }

    fn inputs(v: &Value) -> [String; 4] {
        let i = &v["inputs"];
        [
            "client_nonce",
            "server_finish_nonce",
            "interact_ref",
            "grant_endpoint_uri",
        ]
        .map(|k| i[k].as_str().expect("input").to_owned())
    }

    #[test]
    fn rfc9635_vector_both_encodings() {
        let v = vector();
        let [c, s, r, g] = inputs(&v);
        assert_eq!(
            [c.as_str(), &s, &r, &g].join("\n"),
            v["hash_base"].as_str().expect("base")
        );
        let url = v["sha-256_base64url_nopad"].as_str().expect("url");
        let std = v["rafiki_style_sha-256_base64_std_padded"].as_str().expect("std");
        assert_eq!(interaction_hash_url(&c, &s, &r, &g), url);
        assert_eq!(interaction_hash_std(&c, &s, &r, &g), std);
        assert!(verify_interaction_hash(&c, &s, &r, &g, url));
        assert!(verify_interaction_hash(&c, &s, &r, &g, std));
        assert!(verify_interaction_hash(&c, &s, &r, &g, std.trim_end_matches('=')));
    }

    #[test]
    fn mismatches_are_refused() {
        let v = vector();
        let [c, s, r, g] = inputs(&v);
        let url = v["sha-256_base64url_nopad"].as_str().expect("url");
        // The RFC's callback URL typo (extra C in interact_ref).
        assert!(!verify_interaction_hash(&c, &s, "4IFWWIKYBC2PQ6U56NL1", &g, url));
        // A trailing slash on the grant endpoint changes the hash.
        assert!(!verify_interaction_hash(&c, &s, &r, &format!("{g}/"), url));
        // Swapped nonces.
        assert!(!verify_interaction_hash(&s, &c, &r, &g, url));
        // The sha3-512 value is not accepted as the sha-256 hash.
        let sha3 = v["sha3-512_base64url_nopad"].as_str().expect("sha3");
        assert!(!verify_interaction_hash(&c, &s, &r, &g, sha3));
        // Mixed alphabets, garbage, empty, truncation.
        let mixed = "x-gguKWTj8rQf7d7i3w3UhzvuJ5bpOlKyAlVpLxBff+";
        for bad in [mixed, "", "not base64!", &url[..url.len() - 1]] {
            assert!(!verify_interaction_hash(&c, &s, &r, &g, bad), "{bad}");
        }
    }
}
