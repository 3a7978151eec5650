//! Wallet address names and URLs: the one rule for what a wallet may be called (1 to 64 of `a-z 0-9 - _ .`,
//! starting with a letter or digit, not a path the server owns), and the one way a wallet address URL is
//! compared ([`wallet_url`]). A leaf: `settings` checks `[ilp] client_wallet` with it and the wallet service
//! checks every new wallet.

/// Path prefixes the server owns; a wallet may not be named after one.
pub const RESERVED_NAMES: &[&str] = &[
    "incoming-payments",
    "outgoing-payments",
    "outgoing-payment-grant",
    "quotes",
    "auth",
    "ilp",
    "admin",
    "healthz",
    "metrics",
    ".well-known",
    "jwks.json",
    "did.json",
];

/// A wallet name that breaks the rule, and which part of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid wallet name {name:?}: {reason}")]
pub struct BadName {
    pub name: String,
    pub reason: &'static str,
}

/// A wallet address URL as it is compared and stored: without trailing slashes (clients write
/// `https://ase.example/alice/` and `https://ase.example/alice` for the same wallet).
pub fn wallet_url(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// A base URL (the public URL, a resource or authorization server's, the admin API's) as opdesk keeps it: without
/// trailing slashes, so `{base}/path` is always one slash.
pub fn base_url(url: &str) -> String {
    url.trim_end_matches('/').to_owned()
}

/// Checks a wallet name: 1..=64 of `a-z 0-9 - _ .`, starting with a letter or digit, not reserved.
pub fn validate_name(name: &str) -> Result<(), BadName> {
    let bad = |reason| {
        Err(BadName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() || name.len() > 64 {
        return bad("must be 1 to 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
    {
        return bad("may contain only a-z, 0-9, '-', '_' and '.'");
    }
    if !name.as_bytes()[0].is_ascii_alphanumeric() {
        return bad("must start with a letter or digit");
    }
    if RESERVED_NAMES.contains(&name) {
        return bad("is reserved for a server route");
    }
    Ok(())
}
