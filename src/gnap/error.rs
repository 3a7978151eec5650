//! GNAP errors: the spec's error codes with what kind of failure each is. The HTTP edge
//! (`crate::server::error`) turns the kind into a status and the error into the AS envelope.

use crate::store;

/// What kind of failure a GNAP error is; the edge picks the HTTP status from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The request is malformed or not allowed as made.
    Invalid,
    /// The request body is over the server's limit.
    TooLarge,
    /// The request's signature, key proof or token failed.
    Unauthenticated,
    /// The grant, continuation or token named does not exist (for this client).
    Unknown,
    /// The grant is not in a state that allows this.
    Conflict,
    /// The store is full: nothing was written; try again later.
    Unavailable,
    /// A server fault (logged; answered generically).
    Internal,
}

/// An AS error. The description is for client developers; never internal details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {description}")]
pub struct GnapError {
    pub fault: Fault,
    pub code: &'static str,
    pub description: String,
    /// Extra members of the error (`details` in the envelope; omitted when empty): opdesk's own wording
    /// where `description` is the reference ASE's exact string.
    pub details: Details,
}

/// The `details` object of an error envelope (boxed: errors travel in `Result`s and should stay small).
pub type Details = Option<Box<serde_json::Map<String, serde_json::Value>>>;

/// The description of a request whose key could not be found (the reference ASE's exact string).
pub const CLIENT_UNDETERMINED: &str = "could not determine client";

/// The code of an answer to a full store.
pub const SERVICE_UNAVAILABLE: &str = "service_unavailable";
/// What a client is told when the store is full.
pub const STORAGE_FULL: &str = "the ASE's storage is full; try again later";
/// What a client is told when its write kept conflicting with concurrent ones and was given up.
pub const STORE_BUSY: &str = "the ASE is busy; try again";

impl GnapError {
    fn new(fault: Fault, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            fault,
            code,
            description: description.into(),
            details: None,
        }
    }
    /// Adds `details.reason`.
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.details
            .get_or_insert_default()
            .insert("reason".to_owned(), serde_json::Value::String(reason.into()));
        self
    }
    /// A request signed with a key that cannot be found or fetched: 400 `invalid_client`
    /// `could not determine client`, as the reference ASE answers (clients take it as "key removed").
    pub fn undetermined_client(reason: impl Into<String>) -> Self {
        Self::new(Fault::Invalid, "invalid_client", CLIENT_UNDETERMINED).because(reason)
    }
    /// The same error answered as a failed authentication (401): where the spec lists no 400 for a client it
    /// cannot determine (token rotation and revocation, grant cancellation).
    pub fn unauthenticated(mut self) -> Self {
        if self.fault == Fault::Invalid {
            self.fault = Fault::Unauthenticated;
        }
        self
    }
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(Fault::Invalid, "invalid_request", d)
    }
    /// A body over the server's limit: 413 with the `invalid_request` code.
    pub fn too_large() -> Self {
        Self::new(Fault::TooLarge, "invalid_request", "request body is too large")
    }
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new(Fault::Invalid, "invalid_client", d)
    }
    /// A request whose signature or key proof failed.
    pub fn unauthorized_client(d: impl Into<String>) -> Self {
        Self::new(Fault::Unauthenticated, "invalid_client", d)
    }
    pub fn request_denied(d: impl Into<String>) -> Self {
        Self::new(Fault::Unauthenticated, "request_denied", d)
    }
    pub fn too_fast(wait: i64) -> Self {
        Self::new(
            Fault::Invalid,
            "too_fast",
            format!("continue no sooner than {wait} s after the last request"),
        )
    }
    /// A continuation whose token or grant does not hold.
    pub fn invalid_continuation(d: impl Into<String>) -> Self {
        Self::new(Fault::Unauthenticated, "invalid_continuation", d)
    }
    /// A continuation naming an interaction reference the grant does not have.
    pub fn unknown_interaction(d: impl Into<String>) -> Self {
        Self::new(Fault::Unknown, "invalid_continuation", d)
    }
    pub fn invalid_rotation(d: impl Into<String>) -> Self {
        Self::new(Fault::Unknown, "invalid_rotation", d)
    }
    pub fn not_found(d: impl Into<String>) -> Self {
        Self::new(Fault::Unknown, "invalid_request", d)
    }
    pub fn conflict(d: impl Into<String>) -> Self {
        Self::new(Fault::Conflict, "invalid_request", d)
    }
    /// A server-side failure: logged, answered generically; a full or busy store answers 503
    /// `service_unavailable` (nothing was written; `Retry-After` says when to try again).
    pub fn internal(cause: &(dyn std::error::Error + 'static)) -> Self {
        if store::full_in(cause) {
            tracing::warn!(error = %cause, "authorization server write refused: the database or the disk is full");
            return Self::new(Fault::Unavailable, SERVICE_UNAVAILABLE, STORAGE_FULL);
        }
        if store::busy_in(cause) {
            tracing::warn!(error = %cause, "authorization server write given up under contention");
            return Self::new(Fault::Unavailable, SERVICE_UNAVAILABLE, STORE_BUSY);
        }
        if store::conflict_in(cause) {
            // the store runs the job again (and counts it: opdesk_store_serialization_retries): no failure
            tracing::debug!(error = %cause, "authorization server write lost a serialization race; it runs again");
            return Self::new(Fault::Unavailable, SERVICE_UNAVAILABLE, STORE_BUSY);
        }
        tracing::error!(error = %cause, "authorization server failure");
        Self::new(Fault::Internal, "request_denied", "internal server error")
    }

    /// A server fault that is no error value (stored data that does not read back, say).
    pub fn fault(what: &str) -> Self {
        Self::internal(&store::Error::Corrupt(what.to_owned()))
    }
}

impl From<store::Error> for GnapError {
    fn from(e: store::Error) -> Self {
        Self::internal(&e)
    }
}

impl From<crate::store::db::Error> for GnapError {
    fn from(e: crate::store::db::Error) -> Self {
        Self::internal(&e)
    }
}
