//! Ed25519 JSON Web Keys as Open Payments publishes them (`{walletAddress}/jwks.json`)
//! and as clients present them: `kty=OKP`, `crv=Ed25519`, `alg=EdDSA`, `x` in
//! base64url without padding.
//!
//! Also owns key material for our own keys: generation, RFC 7638 thumbprints (used as `kid`) and the
//! PKCS#8 PEM form the official SDKs load private keys from.
//!
//! Deserialisation is lenient (a JWKS may hold keys of other types); turning a
//! JWK into a verifying key is strict.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Error;

/// One public key. Field order follows the Open Payments schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    /// Key id; the `keyid` signature parameter refers to it.
    pub kid: String,
    /// Must be `EdDSA` (empty when absent).
    #[serde(default)]
    pub alg: String,
    /// Must be `OKP` (empty when absent).
    #[serde(default)]
    pub kty: String,
    /// Must be `Ed25519` (empty when absent).
    #[serde(default)]
    pub crv: String,
    /// The 32-byte public key, base64url without padding (empty when absent).
    #[serde(default)]
    pub x: String,
    /// Optional `use` (`sig`).
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
}

impl Jwk {
    /// The JWK for `key` under `kid`, without `use` (as the Node SDK's `generateJwk`).
    pub fn from_verifying_key(kid: impl Into<String>, key: &VerifyingKey) -> Self {
        Self {
            kid: kid.into(),
            alg: "EdDSA".to_owned(),
            kty: "OKP".to_owned(),
            crv: "Ed25519".to_owned(),
            x: URL_SAFE_NO_PAD.encode(key.as_bytes()),
            use_: None,
        }
    }

    /// The Ed25519 key, after checking `kty`, `crv`, `alg` (and `use`, if present)
    /// exactly and that `x` is 32 bytes of unpadded base64url. Weak keys are refused.
    pub fn verifying_key(&self) -> Result<VerifyingKey, Error> {
        for (field, got, want) in [
            ("kty", &self.kty, "OKP"),
            ("crv", &self.crv, "Ed25519"),
            ("alg", &self.alg, "EdDSA"),
        ] {
            if got != want {
                return Err(Error::BadKey(format!("{field} must be {want:?}, got {got:?}")));
            }
        }
        if let Some(u) = &self.use_
            && u != "sig"
        {
            return Err(Error::BadKey(format!("use must be \"sig\", got {u:?}")));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(&self.x)
            .map_err(|e| Error::BadKey(format!("x is not unpadded base64url: {e}")))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| Error::BadKey(format!("x has {} bytes, expected 32", b.len())))?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| Error::BadKey("x is not an Ed25519 point".into()))?;
        if key.is_weak() {
            return Err(Error::BadKey("weak Ed25519 key".into()));
        }
        Ok(key)
    }
}

/// A public key as an operator gives it (CLI `keys add --jwk`, admin API `AddKey.jwk`): the JWK's JSON, or
/// that JSON in base64 (standard or URL-safe alphabet, padded or not, whitespace ignored) as the Web
/// Monetization extension shows its key. An Ed25519 `OKP` key without `alg` is taken as `EdDSA`; the
/// result is checked as [`Jwk::verifying_key`] does, so other key types are refused with the reason.
pub fn parse_input(text: &str) -> Result<Jwk, Error> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::BadKey("no key given".into()));
    }
    if text.starts_with('{') {
        let jwk: Jwk = serde_json::from_str(text).map_err(|e| Error::BadKey(format!("not a JWK: {e}")))?;
        return normalize_input(jwk);
    }
    let compact: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let decoded = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(compact.trim_end_matches('='))
        .map_err(|_| Error::BadKey("neither a JWK's JSON nor base64 of it".into()))?;
    let jwk: Jwk = serde_json::from_slice(&decoded)
        .map_err(|e| Error::BadKey(format!("the base64 text does not decode to a JWK: {e}")))?;
    normalize_input(jwk)
}

/// A JWK given as a JSON value: an object, or a string holding any form [`parse_input`] reads.
pub fn from_input_value(value: &serde_json::Value) -> Result<Jwk, Error> {
    match value {
        serde_json::Value::String(text) => parse_input(text),
        v @ serde_json::Value::Object(_) => {
            let jwk: Jwk = serde_json::from_value(v.clone()).map_err(|e| Error::BadKey(format!("not a JWK: {e}")))?;
            normalize_input(jwk)
        }
        _ => Err(Error::BadKey("a JWK is a JSON object or a string".into())),
    }
}

/// Fills in `alg: EdDSA` for an Ed25519 `OKP` key given without `alg` (the Web Monetization extension's
/// form), then checks the key; any other `alg`, `kty` or `crv` is refused.
pub fn normalize_input(mut jwk: Jwk) -> Result<Jwk, Error> {
    if jwk.alg.is_empty() && jwk.kty == "OKP" && jwk.crv == "Ed25519" {
        jwk.alg = "EdDSA".to_owned();
    }
    if jwk.kty != "OKP" || jwk.crv != "Ed25519" {
        return Err(Error::BadKey(format!(
            "only Ed25519 keys (kty \"OKP\", crv \"Ed25519\") are accepted, got kty {:?} crv {:?}",
            jwk.kty, jwk.crv
        )));
    }
    jwk.verifying_key()?;
    Ok(jwk)
}

/// A key set: `{"keys": [...]}` and nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwks {
    /// The keys.
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// The key with this `kid`, if exactly one has it.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        let mut found = self.keys.iter().filter(|k| k.kid == kid);
        match (found.next(), found.next()) {
            (Some(k), None) => Some(k),
            _ => None,
        }
    }
}

/// RFC 7638 thumbprint of an Ed25519 public key (base64url SHA-256 of the canonical JWK members).
pub fn thumbprint(key: &VerifyingKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(key.as_bytes());
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// A fresh Ed25519 signing key from the operating system's randomness.
pub fn generate() -> Result<SigningKey, Error> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| Error::BadKey(format!("no randomness: {e}")))?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The private key as a PKCS#8 PEM document (v1, without the public key: what
/// `openssl genpkey -algorithm ed25519` writes and the official SDKs load).
pub fn to_pkcs8_pem(key: &SigningKey) -> String {
    use ed25519_dalek::pkcs8::{EncodePrivateKey as _, KeypairBytes, spki::der::pem::LineEnding};
    KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    }
    .to_pkcs8_pem(LineEnding::LF)
    .map(|pem| pem.to_string())
    .unwrap_or_default()
}

/// Reads a PKCS#8 PEM Ed25519 private key (v1, or v2 with the public key, which must then match).
pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, Error> {
    use ed25519_dalek::pkcs8::DecodePrivateKey as _;
    SigningKey::from_pkcs8_pem(pem.trim()).map_err(|e| Error::BadKey(format!("not a PKCS#8 Ed25519 private key: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const KEY_FILE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/vectors/httpsig/rfc9421-B.1.4-test-key-ed25519.json"
    );

    fn rfc() -> Value {
        serde_json::from_str(&std::fs::read_to_string(KEY_FILE).expect("read")).expect("json")
    }

    fn rfc_jwk() -> Jwk {
        let v = rfc();
        let mut jwk: Jwk = serde_json::from_value(v["jwk"].clone()).expect("jwk");
        jwk.alg = "EdDSA".into();
        jwk
    }

    #[test]
    fn rfc_key_round_trips() {
        let jwk = rfc_jwk();
        let key = jwk.verifying_key().expect("valid");
        let hex: String = key.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, rfc()["public_key_hex"].as_str().expect("hex"));
        let again = Jwk::from_verifying_key("test-key-ed25519", &key);
        assert_eq!(again, jwk);
        assert_eq!(
            serde_json::to_value(&again).expect("ser"),
            json!({"kid":"test-key-ed25519","alg":"EdDSA","kty":"OKP","crv":"Ed25519",
                   "x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"})
        );
        let set = Jwks { keys: vec![again] };
        let text = serde_json::to_string(&set).expect("ser");
        assert!(text.starts_with(r#"{"keys":[{"#));
        let back: Jwks = serde_json::from_str(&text).expect("de");
        assert_eq!(back, set);
        assert!(back.find("test-key-ed25519").is_some());
        assert!(back.find("other").is_none());
    }

    #[test]
    fn use_field() {
        let mut jwk = rfc_jwk();
        jwk.use_ = Some("sig".into());
        let v = serde_json::to_value(&jwk).expect("ser");
        assert_eq!(v["use"], "sig");
        jwk.verifying_key().expect("sig is fine");
        jwk.use_ = Some("enc".into());
        assert!(matches!(jwk.verifying_key(), Err(Error::BadKey(_))));
    }

    #[test]
    fn strict_checks() {
        // The RFC JWK has no alg: parsed, but refused.
        let no_alg: Jwk = serde_json::from_value(rfc()["jwk"].clone()).expect("jwk");
        assert!(matches!(no_alg.verifying_key(), Err(Error::BadKey(_))));

        let good = rfc_jwk();
        let x = good.x.clone();
        type Mutation = Box<dyn Fn(&mut Jwk)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|j| j.kty = "oct".into()),
            Box::new(|j| j.kty = "okp".into()),
            Box::new(|j| j.crv = "X25519".into()),
            Box::new(|j| j.crv = "ed25519".into()),
            Box::new(|j| j.alg = "ES256".into()),
            Box::new(|j| j.alg = "Ed25519".into()),
            Box::new(move |j| j.x = format!("{x}=")),
            Box::new(|j| j.x = "JrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs".into()),
            Box::new(|j| j.x = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0b".into()),
            Box::new(|j| j.x = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bsA".into()),
            Box::new(|j| j.x = String::new()),
            // The identity point: a small-order (weak) key.
            Box::new(|j| {
                j.x = URL_SAFE_NO_PAD.encode({
                    let mut b = [0u8; 32];
                    b[0] = 1;
                    b
                })
            }),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut jwk = good.clone();
            mutate(&mut jwk);
            assert!(matches!(jwk.verifying_key(), Err(Error::BadKey(_))), "case {i}");
        }
    }

    #[test]
    fn lenient_set_parsing() {
        // An HMAC key and an RSA key beside an Ed25519 one: the set parses, the
        // foreign keys are refused when used.
        let set: Jwks = serde_json::from_value(json!({"keys":[
            {"kid":"hmac","kty":"oct","k":"uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBtbmHhIDi6pcl8jsasjlTMtDQ"},
            {"kid":"rsa","kty":"RSA","alg":"RS256","n":"AQAB","e":"AQAB"},
            {"kid":"ed","kty":"OKP","crv":"Ed25519","alg":"EdDSA","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}
        ]}))
        .expect("set");
        assert!(matches!(
            set.find("hmac").expect("hmac").verifying_key(),
            Err(Error::BadKey(_))
        ));
        assert!(set.find("rsa").expect("rsa").verifying_key().is_err());
        set.find("ed").expect("ed").verifying_key().expect("ed ok");
        // Duplicate kids are ambiguous.
        let mut dup = set.clone();
        dup.keys.push(set.keys[2].clone());
        assert!(dup.find("ed").is_none());
        // A key without kid is not a JWK we can use.
        assert!(serde_json::from_value::<Jwk>(json!({"kty":"OKP"})).is_err());
    }
}

#[cfg(test)]
mod input_tests {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    use super::*;

    /// The extension's key: `btoa(JSON.stringify({kty, crv, x, kid}))`.
    fn extension_form(key: &VerifyingKey, kid: &str) -> (String, String) {
        let x = URL_SAFE_NO_PAD.encode(key.as_bytes());
        let json = format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"{kid}"}}"#);
        let b64 = STANDARD.encode(json.as_bytes());
        (json, b64)
    }

    #[test]
    fn every_form_gives_the_same_eddsa_key() {
        let kid = "0b7c2d6e-3f4a-4c1b-9d8e-5a6f7b8c9d0e";
        // kids of other lengths make padding and the url-safe alphabet show up in the base64
        for kid in [kid, "k", "kk", "kid?>>"] {
            let sk = generate().unwrap();
            let want = Jwk::from_verifying_key(kid, &sk.verifying_key());
            let (json, b64) = extension_form(&sk.verifying_key(), kid);
            let full = serde_json::to_string(&want).unwrap();
            let url = URL_SAFE.encode(json.as_bytes());
            let forms = [
                json.clone(),
                full.clone(),
                format!("  {json}\n"),
                b64.clone(),
                b64.trim_end_matches('=').to_owned(),
                url.clone(),
                url.trim_end_matches('=').to_owned(),
                format!("\n{}\n{}\n", &b64[..40], &b64[40..]),
                STANDARD.encode(full.as_bytes()),
            ];
            for form in forms {
                let got = parse_input(&form).unwrap_or_else(|e| panic!("{form:?}: {e}"));
                assert_eq!(got, want, "{form:?}");
                assert_eq!(got.alg, "EdDSA");
            }
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(from_input_value(&value).unwrap(), want);
            assert_eq!(from_input_value(&serde_json::Value::String(b64)).unwrap(), want);
        }
    }

    #[test]
    fn other_keys_are_refused_with_the_reason() {
        let sk = generate().unwrap();
        let x = URL_SAFE_NO_PAD.encode(sk.verifying_key().as_bytes());
        let cases = [
            (
                format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"k","alg":"ES256"}}"#),
                "alg must be",
            ),
            (
                format!(r#"{{"kty":"OKP","crv":"X25519","x":"{x}","kid":"k"}}"#),
                "only Ed25519",
            ),
            (
                format!(r#"{{"kty":"EC","crv":"P-256","x":"{x}","kid":"k"}}"#),
                "only Ed25519",
            ),
            (format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}"#), "not a JWK"),
            (r#"{"kty":"OKP","crv":"Ed25519","x":"AA","kid":"k"}"#.to_owned(), "32"),
            ("not a key at all!".to_owned(), "neither"),
            (STANDARD.encode("hello"), "does not decode to a JWK"),
            ("   ".to_owned(), "no key"),
        ];
        for (text, why) in cases {
            let e = parse_input(&text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            let e = parse_input(&STANDARD.encode(text.as_bytes())).unwrap_err();
            assert!(matches!(e, Error::BadKey(_)), "{text}");
        }
        assert!(from_input_value(&serde_json::json!(42)).is_err());
    }
}

#[cfg(test)]
mod key_material_tests {
    use super::*;

    #[test]
    fn jwk_round_trip_and_validation() {
        let sk = generate().unwrap();
        let jwk = Jwk::from_verifying_key("k1", &sk.verifying_key());
        assert_eq!(jwk.verifying_key().unwrap(), sk.verifying_key());
        let mut bad = jwk.clone();
        bad.alg = "Ed25519".into();
        assert!(bad.verifying_key().is_err());
        let mut bad = jwk.clone();
        bad.x.push('=');
        assert!(bad.verifying_key().is_err());
        let mut bad = jwk;
        bad.x = URL_SAFE_NO_PAD.encode([1u8; 31]);
        assert!(bad.verifying_key().is_err());
    }

    #[test]
    fn pem_round_trip() {
        let sk = generate().unwrap();
        let pem = to_pkcs8_pem(&sk);
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI"));
        assert_eq!(from_pkcs8_pem(&pem).unwrap().to_bytes(), sk.to_bytes());
        assert!(from_pkcs8_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----").is_err());
        // v2 (with the public key) reads too, and a public key that does not match is refused
        use ed25519_dalek::pkcs8::{EncodePrivateKey as _, KeypairBytes, PublicKeyBytes, spki::der::pem::LineEnding};
        let v2 = |public: [u8; 32]| {
            KeypairBytes {
                secret_key: sk.to_bytes(),
                public_key: Some(PublicKeyBytes(public)),
            }
            .to_pkcs8_pem(LineEnding::LF)
            .unwrap()
            .to_string()
        };
        assert_eq!(
            from_pkcs8_pem(&v2(sk.verifying_key().to_bytes())).unwrap().to_bytes(),
            sk.to_bytes()
        );
        assert!(from_pkcs8_pem(&v2(generate().unwrap().verifying_key().to_bytes())).is_err());
    }

    #[test]
    fn thumbprint_matches_rfc8037_example() {
        // RFC 8037 appendix A.3: thumbprint of the example Ed25519 key.
        let x = URL_SAFE_NO_PAD
            .decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
            .unwrap();
        let key = VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
        assert_eq!(thumbprint(&key), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }
}
