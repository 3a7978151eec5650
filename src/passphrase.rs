//! Wallet owners' passphrases: new ones generated to be read off a card and typed, stored only as Argon2id
//! PHC strings, and checked against them. A passphrase a person chose is hashed with OWASP's Argon2id
//! parameters (19 MiB, 2 passes: ~13 ms of one core here, on purpose); one this module generated carries ~79
//! random bits, beyond any offline guessing, and is hashed with light parameters (1 MiB, 1 pass) so that a
//! class of 60 signing in at once is not a second of hashing. The parameters travel in the PHC string, so a
//! check needs no telling which. Callers run hashing off the async runtime and off the store's threads.

use argon2::{Algorithm, Argon2, Params, PasswordHasher, PasswordVerifier, Version};

/// Why a passphrase could not be set or checked.
#[derive(Debug, thiserror::Error)]
pub enum PassphraseError {
    #[error("a passphrase has 8 to 128 characters, none of them control characters")]
    Shape,
    #[error("no randomness from the operating system: {0}")]
    Random(String),
    #[error("hashing failed: {0}")]
    Hash(String),
}

/// The characters of a generated passphrase: lower-case letters and digits a person will not confuse
/// (no `0 o 1 l i`).
const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";

/// Groups of four characters in a generated passphrase: 16 characters, about 79 bits.
const GROUPS: usize = 4;

/// A new passphrase: `k7mq-x2pr-9dhe-w4tn`.
pub fn generate() -> Result<String, PassphraseError> {
    let mut bytes = [0u8; GROUPS * 4 * 2];
    getrandom::fill(&mut bytes).map_err(|e| PassphraseError::Random(e.to_string()))?;
    let mut out = String::with_capacity(GROUPS * 5);
    let mut chars = bytes
        .chunks(2)
        // 65,536 mod 31 leaves a bias of at most 1 in 2,114: negligible for a passphrase
        .map(|b| ALPHABET[usize::from(u16::from_le_bytes([b[0], b[1]])) % ALPHABET.len()] as char);
    for g in 0..GROUPS {
        if g > 0 {
            out.push('-');
        }
        out.extend(chars.by_ref().take(4));
    }
    Ok(out)
}

/// Checks what a person chose as a passphrase.
pub fn check_shape(p: &str) -> Result<(), PassphraseError> {
    let n = p.chars().count();
    if !(8..=128).contains(&n) || p.chars().any(char::is_control) {
        return Err(PassphraseError::Shape);
    }
    Ok(())
}

/// Where a passphrase comes from: what its hash must withstand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A person chose it: it may be guessable, so its hash is slow (OWASP's Argon2id parameters).
    Chosen,
    /// [`generate`] made it: ~79 random bits, so its hash need not be slow.
    Generated,
}

/// The Argon2id PHC string of `p` (a random 16-byte salt; parameters by `origin`).
pub fn hash(p: &str, origin: Origin) -> Result<String, PassphraseError> {
    check_shape(p)?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| PassphraseError::Random(e.to_string()))?;
    let hasher = match origin {
        Origin::Chosen => Argon2::default(),
        Origin::Generated => {
            let light = Params::new(1024, 1, 1, None).map_err(|e| PassphraseError::Hash(e.to_string()))?;
            Argon2::new(Algorithm::Argon2id, Version::V0x13, light)
        }
    };
    hasher
        .hash_password_with_salt(p.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| PassphraseError::Hash(e.to_string()))
}

/// Whether `p` is the passphrase `phc` was made from, with the parameters `phc` names (false for a malformed
/// hash too).
pub fn verify(p: &str, phc: &str) -> bool {
    Argon2::default().verify_password(p.as_bytes(), phc).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passphrases_are_readable_and_differ() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 19);
        assert!(
            a.split('-')
                .all(|g| g.len() == 4 && g.bytes().all(|c| ALPHABET.contains(&c))),
            "{a}"
        );
        check_shape(&a).unwrap();
    }

    #[test]
    fn a_hash_verifies_its_passphrase_only() {
        let h = hash("correct horse battery", Origin::Chosen).unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(verify("correct horse battery", &h));
        assert!(!verify("correct horse battery ", &h));
        assert!(!verify("correct horse battery", "not a hash"));
        assert_ne!(h, hash("correct horse battery", Origin::Chosen).unwrap(), "salted");
    }

    #[test]
    fn a_generated_passphrase_is_hashed_lightly_and_checked_by_the_parameters_its_hash_names() {
        let p = generate().unwrap();
        let h = hash(&p, Origin::Generated).unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"), "{h}");
        assert!(verify(&p, &h));
        assert!(!verify("k7mq-x2pr-9dhe-w4tn", &h));
    }

    #[test]
    fn shapes_are_checked() {
        for origin in [Origin::Chosen, Origin::Generated] {
            assert!(hash("short", origin).is_err());
            assert!(hash("has a\nnewline", origin).is_err());
            assert!(hash(&"x".repeat(129), origin).is_err());
        }
    }
}
