//! HTTP message signatures (RFC 9421) and the Ed25519 JWKs that carry client keys.
//!
//! Owns key formats only; it does no I/O and knows nothing of wallets or grants.

pub mod jwk;

/// Signature and key failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("bad key: {0}")]
    BadKey(String),
}
