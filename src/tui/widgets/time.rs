//! Relative times for display (`in 4m 10s`, `3s ago`), measured against the console's clock.

use time::OffsetDateTime;

use crate::clock::parse_ts;

/// `in 4m 10s`, `3s ago`.
pub fn relative(to: &str, now: OffsetDateTime) -> String {
    let Ok(t) = parse_ts(to) else { return String::new() };
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
