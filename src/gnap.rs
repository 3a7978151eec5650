//! The GNAP authorization server (RFC 9635 as profiled by Open Payments): grant requests, the resource
//! owner's consent (given by the operator in the console, the admin API or the CLI — never by the client),
//! the interaction page and its finish redirect, continuation, token rotation and revocation, and the token
//! check the resource server calls in-process.
//!
//! `model` holds the wire types and their validation, `service` the only writer of grants and tokens,
//! `describe` the plain-words rendering of a request shared by the page, the CLI and the console, `timeline`
//! the steps of a grant's life the service records. The `/auth`
//! handlers and the interaction page are HTTP, in `crate::server::routes::{gnap, interaction}`.

pub mod describe;
pub mod error;
pub mod model;
pub mod service;
pub mod timeline;

pub use error::GnapError;
pub use service::Gnap;
