//! HTTP message signatures for Open Payments: RFC 9421 signing and verification
//! with Ed25519, RFC 9530 `Content-Digest`, Ed25519 JWKs, and the GNAP
//! interaction-finish hash.
//!
//! This module owns the wire format of signed requests (what the official Node SDK
//! emits) and the verification policy the server applies. It does no I/O: key
//! lookup, clocks and the public base URL (for `@target-uri`) are
//! supplied by the caller.

pub mod digest;
pub mod explain;
pub mod interaction_hash;
pub mod jwk;
pub mod keys;
pub mod raw;
pub mod sign;
pub mod verify;

pub use digest::{content_digest_sha256, content_digest_sha512, verify_content_digest};
pub use explain::{KeyOutcome, SignatureReport, explain};
pub use interaction_hash::{interaction_hash_std, interaction_hash_url, verify_interaction_hash};
pub use jwk::{Jwk, Jwks};
pub use sign::sign_request;
pub use verify::{
    Form, Policy, Request, SignatureParams, check_policy, parse_signature, signature_base, verify, verify_request,
};

/// `Content-Digest` field name (RFC 9530).
pub const CONTENT_DIGEST: &str = "content-digest";
/// `Signature-Input` field name (RFC 9421).
pub const SIGNATURE_INPUT: &str = "signature-input";
/// `Signature` field name (RFC 9421).
pub const SIGNATURE: &str = "signature";

/// Why a signature, digest or key was refused. Every variant says enough for the
/// server to log a clear reason; none of it is meant for the HTTP response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A header the check needs is absent (lowercase field name).
    #[error("missing header `{0}`")]
    MissingHeader(&'static str),
    /// A header or parameter could not be parsed, or has the wrong shape.
    #[error("malformed: {0}")]
    Malformed(String),
    /// `Signature-Input` has several labels and none of them is `sig1`.
    #[error("ambiguous signature label: several labels and no `sig1`")]
    AmbiguousLabel,
    /// The chosen label is missing from the `Signature` header.
    #[error("`Signature` has no member `{0}`")]
    MissingSignature(String),
    /// A covered component is not present in the request.
    #[error("covered component `{0}` is absent from the request")]
    MissingComponent(String),
    /// A component the policy requires is not covered by the signature.
    #[error("component `{0}` must be covered by the signature")]
    NotCovered(&'static str),
    /// A covered component (or a component parameter) this verifier does not implement.
    #[error("unsupported component `{0}`")]
    UnsupportedComponent(String),
    /// The `alg` signature parameter names something other than `ed25519`.
    #[error("unsupported signature algorithm `{0}`")]
    UnsupportedAlgorithm(String),
    /// A required signature parameter (`keyid`, `created`) is missing.
    #[error("missing signature parameter `{0}`")]
    MissingParam(&'static str),
    /// `Content-Digest` names an algorithm other than `sha-256` / `sha-512`.
    #[error("unsupported digest algorithm `{0}`")]
    UnsupportedDigest(String),
    /// A listed digest does not match the body.
    #[error("content digest `{0}` does not match the body")]
    DigestMismatch(&'static str),
    /// `content-digest` is covered (or sent) but the body is empty.
    #[error("content digest given for an empty body")]
    DigestWithoutBody,
    /// `Content-Length` disagrees with the number of body bytes received.
    #[error("content-length {header} but the body has {actual} bytes")]
    ContentLengthMismatch {
        /// The header value as received.
        header: String,
        /// The body length.
        actual: usize,
    },
    /// `created` is too far from the server clock.
    #[error("signature created at {created} is outside the allowed window (now {now})")]
    Stale {
        /// The `created` parameter.
        created: i64,
        /// The server clock.
        now: i64,
    },
    /// `expires` is in the past.
    #[error("signature expired at {expires} (now {now})")]
    Expired {
        /// The `expires` parameter.
        expires: i64,
        /// The server clock.
        now: i64,
    },
    /// No key is known for this `keyid`.
    #[error("unknown key id `{0}`")]
    UnknownKey(String),
    /// A key (JWK or raw) is unusable.
    #[error("bad key: {0}")]
    BadKey(String),
    /// The Ed25519 signature does not verify over the signature base.
    #[error("signature does not verify")]
    BadSignature,
    /// The client's key `kid` could not be had: its key set could not be fetched or does not list it (which
    /// of the two is logged, never told to the client).
    #[error("no usable key `{0}`: the client's keys could not be fetched or do not include it")]
    KeysUnavailable(String),
}
