//! Ed25519 JSON Web Keys as Open Payments publishes them (`kty=OKP`, `crv=Ed25519`, `alg=EdDSA`), plus
//! key generation and the PKCS#8 PEM form the official SDKs load private keys from.

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Error;

/// A public Ed25519 JWK.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kid: String,
    pub alg: String,
    pub kty: String,
    pub crv: String,
    pub x: String,
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
}

/// A key set: `{"keys": [...]}` and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwk {
    pub fn from_verifying_key(kid: &str, key: &VerifyingKey) -> Self {
        Self {
            kid: kid.to_owned(),
            alg: "EdDSA".into(),
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            x: URL_SAFE_NO_PAD.encode(key.as_bytes()),
            use_: None,
        }
    }

    /// Validates the JWK fields exactly and decodes the public key.
    pub fn verifying_key(&self) -> Result<VerifyingKey, Error> {
        if self.kty != "OKP" || self.crv != "Ed25519" || self.alg != "EdDSA" {
            return Err(Error::BadKey(format!(
                "expected kty=OKP crv=Ed25519 alg=EdDSA, got kty={} crv={} alg={}",
                self.kty, self.crv, self.alg
            )));
        }
        if self.kid.is_empty() || self.kid.len() > 256 {
            return Err(Error::BadKey("kid must be 1 to 256 characters".into()));
        }
        if let Some(u) = &self.use_
            && u != "sig"
        {
            return Err(Error::BadKey(format!("use must be \"sig\", got {u:?}")));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(&self.x)
            .map_err(|_| Error::BadKey("x is not base64url without padding".into()))?;
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|_| Error::BadKey("x must encode 32 bytes".into()))?;
        VerifyingKey::from_bytes(&arr)
            .map_err(|_| Error::BadKey("x is not a valid Ed25519 point".into()))
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

const PKCS8_ED25519_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The private key as a PKCS#8 PEM document (what `openssl genpkey -algorithm ed25519` writes).
pub fn to_pkcs8_pem(key: &SigningKey) -> String {
    let mut der = PKCS8_ED25519_PREFIX.to_vec();
    der.extend_from_slice(&key.to_bytes());
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der)
    )
}

/// Reads a PKCS#8 PEM Ed25519 private key.
pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, Error> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----") && !l.is_empty())
        .collect();
    let der = STANDARD
        .decode(body)
        .map_err(|_| Error::BadKey("PEM body is not base64".into()))?;
    let seed = der
        .strip_prefix(&PKCS8_ED25519_PREFIX[..])
        .ok_or_else(|| Error::BadKey("not a PKCS#8 Ed25519 private key".into()))?;
    let arr: [u8; 32] = seed
        .try_into()
        .map_err(|_| Error::BadKey("wrong private key length".into()))?;
    Ok(SigningKey::from_bytes(&arr))
}

#[cfg(test)]
mod tests {
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
        assert!(
            from_pkcs8_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----").is_err()
        );
    }

    #[test]
    fn thumbprint_matches_rfc8037_example() {
        // RFC 8037 appendix A.3: thumbprint of the example Ed25519 key.
        let x = URL_SAFE_NO_PAD
            .decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
            .unwrap();
        let key = VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap();
        assert_eq!(
            thumbprint(&key),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }
}
