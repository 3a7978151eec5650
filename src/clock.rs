//! Time source. Services read "now" from an injected [`Clock`] so expiry logic and tests are deterministic.
//!
//! Also owns the one timestamp text format (fixed-width RFC 3339 UTC, millisecond precision, which sorts lexically
//! in time order): the core carries `OffsetDateTime`, and text is made only where bytes leave — the database
//! (`store::db::value`), the wire ([`wire`], for `#[serde(with = …)]`) and the screen. "Now" comes to the
//! millisecond, the precision stored and sent, so that a time in memory equals the same time read back.

use std::sync::{Arc, Mutex};

use time::{OffsetDateTime, UtcOffset, format_description::well_known::Rfc3339};

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        to_millis(OffsetDateTime::now_utc())
    }
}

/// A clock that only moves when told to (tests, snapshots).
#[derive(Debug, Clone)]
pub struct FixedClock(Arc<Mutex<OffsetDateTime>>);

impl FixedClock {
    pub fn new(at: OffsetDateTime) -> Self {
        Self(Arc::new(Mutex::new(at)))
    }

    pub fn advance(&self, by: time::Duration) {
        if let Ok(mut t) = self.0.lock() {
            *t += by;
        }
    }
}

impl Clock for FixedClock {
    fn now(&self) -> OffsetDateTime {
        self.0
            .lock()
            .map(|t| to_millis(*t))
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
}

/// Shared handle to the clock in use.
pub type SharedClock = Arc<dyn Clock>;

/// `t` to the millisecond (the precision timestamps are stored and sent with).
pub fn to_millis(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(t.nanosecond() / 1_000_000 * 1_000_000)
        .unwrap_or(t)
}

/// Formats a timestamp as stored and sent: `2026-11-21T10:00:00.123Z`.
pub fn format_ts(t: OffsetDateTime) -> String {
    stamp(t, format!("{:03}", t.millisecond()))
}

/// Formats a timestamp with microseconds: `2026-11-21T10:00:00.123456Z` (request arrival times).
pub fn format_ts_micros(t: OffsetDateTime) -> String {
    stamp(t, format!("{:06}", t.microsecond()))
}

/// `t` in UTC to the second, then `.fraction` and `Z`.
fn stamp(t: OffsetDateTime, fraction: String) -> String {
    let t = t.to_offset(UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{fraction}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
    )
}

/// Parses an RFC 3339 timestamp (any offset) into UTC.
pub fn parse_ts(s: &str) -> Result<OffsetDateTime, time::error::Parse> {
    OffsetDateTime::parse(s, &Rfc3339).map(|t| t.to_offset(UtcOffset::UTC))
}

/// A timestamp written in a test (`ts("2026-11-21T10:00:00Z")`).
#[cfg(test)]
pub fn ts(s: &str) -> OffsetDateTime {
    parse_ts(s).expect("a test timestamp")
}

/// Serde for timestamps on the wire (`#[serde(with = "crate::clock::wire")]`): written exactly as
/// [`format_ts`] (milliseconds, UTC), read as any RFC 3339 timestamp.
pub mod wire {
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};
    use time::OffsetDateTime;

    pub fn serialize<S: Serializer>(t: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_ts(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_ts(&text).map_err(|e| D::Error::custom(format!("timestamp {text:?}: {e}")))
    }

    /// The same for an optional timestamp (`null` or absent: `None`).
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use time::OffsetDateTime;

        pub fn serialize<S: Serializer>(t: &Option<OffsetDateTime>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => super::serialize(t, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OffsetDateTime>, D::Error> {
            #[derive(Deserialize)]
            struct Wrap(#[serde(with = "super")] OffsetDateTime);
            Ok(Option::<Wrap>::deserialize(d)?.map(|Wrap(t)| t))
        }
    }

    /// Timestamps written with microseconds ([`super::format_ts_micros`]: request arrival times).
    pub mod micros {
        use serde::{Deserializer, Serializer};
        use time::OffsetDateTime;

        pub fn serialize<S: Serializer>(t: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(&super::super::format_ts_micros(*t))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
            super::deserialize(d)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_round_trip() {
        let t = parse_ts("2026-01-02T03:04:05.6+01:00").unwrap();
        assert_eq!(format_ts(t), "2026-01-02T02:04:05.600Z");
        assert_eq!(parse_ts(&format_ts(t)).unwrap(), t);
    }

    #[test]
    fn wire_writes_the_stored_format_and_reads_any_offset() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct W {
            #[serde(with = "wire")]
            at: OffsetDateTime,
            #[serde(default, with = "wire::option", skip_serializing_if = "Option::is_none")]
            until: Option<OffsetDateTime>,
            #[serde(with = "wire::micros")]
            arrived: OffsetDateTime,
        }
        let w: W =
            serde_json::from_str(r#"{"at":"2026-01-02T03:04:05+01:00","arrived":"2026-01-02T03:04:05.123456Z"}"#)
                .unwrap();
        assert_eq!(w.until, None);
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            r#"{"at":"2026-01-02T02:04:05.000Z","arrived":"2026-01-02T03:04:05.123456Z"}"#
        );
        let w: W = serde_json::from_str(
            r#"{"at":"2026-01-02T03:04:05Z","until":"2026-01-03T00:00:00.5Z","arrived":"2026-01-02T03:04:05Z"}"#,
        )
        .unwrap();
        assert_eq!(format_ts(w.until.unwrap()), "2026-01-03T00:00:00.500Z");
        assert!(serde_json::from_str::<W>(r#"{"at":"yesterday","arrived":"2026-01-02T03:04:05Z"}"#).is_err());
    }

    #[test]
    fn fixed_clock_moves_only_when_told() {
        let c = FixedClock::new(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(c.now(), OffsetDateTime::UNIX_EPOCH);
        c.advance(time::Duration::seconds(5));
        assert_eq!(c.now().unix_timestamp(), 5);
    }
}
