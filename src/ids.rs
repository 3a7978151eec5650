//! Identifiers: time-ordered UUIDv7 for every row, so inserts append to the B-tree and keyset pagination
//! follows creation order.

/// A new time-ordered id in its canonical hyphenated text form.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Checks that `s` is a canonical lower-case hyphenated UUID (what [`new_id`] produces).
pub fn is_id(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok_and(|u| u.hyphenated().to_string() == s)
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
}
