//! A replay cache: a signature accepted once is refused again until it leaves the `created` window (after
//! which the window check refuses it anyway). Keyed by the signature bytes; pruned as it grows.

use std::{collections::HashMap, sync::Mutex};

/// Remembers accepted signatures until they expire.
#[derive(Debug, Default)]
pub struct ReplayCache {
    seen: Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    entries: HashMap<Vec<u8>, i64>,
    /// Size at which expired entries are swept next (doubles with the live set, so sweeps stay amortised).
    sweep_at: usize,
}

impl ReplayCache {
    /// Records `signature` as used until `expires_at` (unix seconds); false if it was already used.
    pub fn check_and_insert(&self, signature: &[u8], now: i64, expires_at: i64) -> bool {
        let Ok(mut seen) = self.seen.lock() else {
            return false;
        };
        if seen.entries.len() >= seen.sweep_at.max(4096) {
            seen.entries.retain(|_, exp| *exp > now);
            seen.sweep_at = seen.entries.len().saturating_mul(2);
        }
        match seen.entries.get(signature) {
            Some(exp) if *exp > now => false,
            _ => {
                seen.entries.insert(signature.to_vec(), expires_at);
                true
            }
        }
    }

    pub fn len(&self) -> usize {
        self.seen.lock().map(|s| s.entries.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_second_use_until_expiry() {
        let c = ReplayCache::default();
        assert!(c.check_and_insert(b"sig", 100, 400));
        assert!(!c.check_and_insert(b"sig", 101, 401));
        assert!(c.check_and_insert(b"other", 101, 401));
        assert!(c.check_and_insert(b"sig", 400, 700), "expired entries may be reused");
    }

    #[test]
    fn prunes_expired_entries() {
        let c = ReplayCache::default();
        for i in 0..5000u32 {
            c.check_and_insert(&i.to_be_bytes(), 0, 10);
        }
        for i in 0..20_000u32 {
            c.check_and_insert(&(i + 100_000).to_be_bytes(), 20, 30);
        }
        assert!(c.len() <= 20_000, "the first, expired batch was swept: {}", c.len());
    }
}
