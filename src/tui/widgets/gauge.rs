//! The one-line pipe gauge (`███████░░░ 70%`) used by the Incoming and Outgoing tables and details.

/// A one-line pipe gauge: `███████░░░ 70%`.
pub fn gauge(received: u64, expected: u64, width: usize) -> String {
    if expected == 0 {
        return String::new();
    }
    let ratio = (received as f64 / expected as f64).clamp(0.0, 1.0);
    let filled = (ratio * width as f64).round() as usize;
    format!(
        "{}{} {:>3}%",
        "█".repeat(filled),
        "░".repeat(width - filled.min(width)),
        (ratio * 100.0).round() as u64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges() {
        assert_eq!(gauge(50, 100, 10), "█████░░░░░  50%");
        assert_eq!(gauge(150, 100, 4), "████ 100%");
        assert_eq!(gauge(1, 0, 4), "");
    }
}
