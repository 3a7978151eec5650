//! Identifiers: time-ordered UUIDv7 for every row, so inserts append to the B-tree and keyset pagination
//! follows creation order; the ids of the main resources as their own types (text on the wire and in the
//! database, the same bytes).

/// The last eight characters of a resource id or URL (UUIDv7 ids share their leading time bits).
pub fn short_id(url: &str) -> String {
    let id = url.rsplit('/').next().unwrap_or(url);
    let n = id.chars().count();
    id.chars().skip(n.saturating_sub(8)).collect()
}

/// An id type for one kind of resource: made by [`new_id`], read back from its text, shown and sent as that
/// text (`serde(transparent)`), and read as a `&str` wherever text is wanted.
macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new time-ordered id.
            pub fn generate() -> Self {
                Self(new_id())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == &other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    )+};
}

id_type!(
    /// A wallet address.
    WalletId,
    /// A GNAP grant.
    GrantId,
    /// An incoming payment.
    IncomingPaymentId,
    /// An outgoing payment.
    OutgoingPaymentId,
    /// A quote.
    QuoteId,
);

/// A new time-ordered id in its canonical hyphenated text form. The random bits come from the thread's
/// CSPRNG (uuid's `fast-rng`), seeded from the OS: no system call per id.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Checks that `s` is a canonical lower-case hyphenated UUID (what [`new_id`] produces).
pub fn is_id(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok_and(|u| u.hyphenated().to_string() == s)
}

/// `n` bytes from the operating system's randomness, base64url without padding (tokens, nonces, refs).
pub fn random_secret(n: usize) -> Result<String, getrandom::Error> {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Lower-case hex SHA-256 of `s` (how token values are stored).
pub fn sha256_hex(s: &str) -> String {
    use sha2::{Digest, Sha256};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(s.as_bytes()) {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_time_ordered_and_canonical() {
        let a = new_id();
        let b = new_id();
        assert!(a < b);
        assert!(is_id(&a));
        assert!(!is_id(&a.to_uppercase()));
        assert!(!is_id("nope"));
    }

    #[test]
    fn secrets_are_random_and_url_safe() {
        let a = random_secret(32).unwrap();
        assert_eq!(a.len(), 43);
        assert_ne!(a, random_secret(32).unwrap());
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
