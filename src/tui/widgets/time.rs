//! Relative times for display (`in 4m 10s`, `3s ago`), measured against the console's clock.

use time::OffsetDateTime;

use crate::clock::parse_ts;

/// A moment shown relative to now: a timestamp, or its text (nothing shown when unreadable).
pub trait When {
    fn when(&self) -> Option<OffsetDateTime>;
}

impl When for OffsetDateTime {
    fn when(&self) -> Option<OffsetDateTime> {
        Some(*self)
    }
}

impl When for str {
    fn when(&self) -> Option<OffsetDateTime> {
        parse_ts(self).ok()
    }
}

impl When for String {
    fn when(&self) -> Option<OffsetDateTime> {
        self.as_str().when()
    }
}

/// `in 4m 10s`, `3s ago`.
pub fn relative<T: When + ?Sized>(to: &T, now: OffsetDateTime) -> String {
    let Some(t) = to.when() else { return String::new() };
    let secs = (t - now).whole_seconds();
    let span = |s: i64| {
        let s = s.abs();
        if s >= 86_400 {
            format!("{}d {}h", s / 86_400, (s % 86_400) / 3600)
        } else if s >= 3600 {
            format!("{}h {}m", s / 3600, (s % 3600) / 60)
        } else if s >= 60 {
            format!("{}m {}s", s / 60, s % 60)
        } else {
            format!("{s}s")
        }
    };
    if secs >= 0 {
        format!("in {}", span(secs))
    } else {
        format!("{} ago", span(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        let now = parse_ts("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(relative("2026-01-01T00:04:10Z", now), "in 4m 10s");
        assert_eq!(relative("2025-12-31T23:59:57Z", now), "3s ago");
    }
}
