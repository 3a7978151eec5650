//! ISO 8601 repeating intervals, as carried by outgoing-payment grants in `limits.interval`
//! (for example `R12/2019-08-24T14:15:22Z/P1M`).
//!
//! This module owns parsing, validating and printing those strings, finding the window
//! (`[start, end)`) that contains a given moment, and describing an interval in plain English
//! for the consent screen. It is pure: no I/O, no clock (callers pass the time in), and it knows
//! nothing about amounts, grants or storage. It must never panic, whatever the input: all date
//! arithmetic is checked and overflow comes back as [`IntervalError::OutOfRange`].
//!
//! # Semantics (those of the reference ASE, Rafiki's `getInterval` on luxon, in UTC)
//!
//! - Three `/`-separated parts. `R` and `R-1` mean unbounded; `Rn` means the first interval
//!   plus `n` repetitions, so `n + 1` windows (`R0` is the first window only).
//! - `Rn/start/duration` runs forward from `start`; `Rn/duration/end` runs backwards from
//!   `end`; `Rn/start/end` repeats the *fixed* length `end - start` (e.g. 31 days, not
//!   "one calendar month").
//! - Windows are chained, as in Rafiki: each one starts where the previous ended and is
//!   `end = start + duration` (backwards: `start = end - duration`). With month-end clamping this
//!   means `R/2024-01-31T00:00:00Z/P1M` yields Jan 31 → Feb 29 → Mar 29 → Apr 29 …, not
//!   Mar 31, Apr 30 … The windows are computed directly rather than by stepping one at a
//!   time: arithmetically for fixed-length durations (no `Y`/`M`), in closed form for pure
//!   year/month durations, and by stepping (at least 28 days per step) only for durations mixing
//!   months with days or time.
//! - Durations are added the way luxon adds them: years and months together, clamped to the
//!   end of the target month (Jan 31 + `P1M` = Feb 28/29; Feb 29 + `P1Y1M` = Mar 29), then weeks
//!   and days, then hours, minutes and seconds as an exact number of seconds. All in UTC.
//! - A moment before the first window (forward forms), at or after `end` (backward form) or
//!   beyond the last repetition has no window.
//!
//! # Leniency
//!
//! - Durations: integers only (`u32` each), `PnYnMnWnDTnHnMnS`, components in that order, each at
//!   most once. Weeks may be combined with other components, as luxon (and so Rafiki) allows.
//!   Rejected: `P`, `PT`, zero durations (`P0D`), fractions (`P1.5D`), signs (`P-1D`, `-P1D`).
//! - Date-times: `YYYY-MM-DDThh:mm[:ss[.fffffffff]]` followed by `Z`, `±hh:mm`, `±hhmm`, `±hh`,
//!   or nothing (then UTC, as Rafiki's luxon is configured). A bare date `YYYY-MM-DD` is
//!   midnight UTC. Lowercase `t`/`z` are accepted. Not accepted (though luxon takes some of them):
//!   basic format (`20240101T000000Z`), week or ordinal dates, hour-only times, `24:00`, leap
//!   seconds, expanded years. Values are converted to UTC and must fall in years 0000–9999.
//! - Repetitions: `R`, `R-1` or `R` + decimal digits fitting in `u32` (leading zeros allowed).
//!   Rafiki silently treats malformed repetitions as "no interval" (every payment forbidden);
//!   here they are parse errors, so they can be rejected when the grant is requested.
//! - Inputs longer than [`MAX_INPUT_LEN`] bytes are rejected. No surrounding whitespace.
//! - [`Display`](fmt::Display) prints the canonical form: `R` for unbounded (also for `R-1`), UTC
//!   with `Z`, no zero components. Keep the client's original string if it must be echoed back
//!   byte for byte.

use std::fmt;
use std::str::FromStr;

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// Longest accepted interval string, in bytes.
pub const MAX_INPUT_LEN: usize = 100;

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;
/// The Gregorian calendar repeats every 400 years = 4800 months.
const GREGORIAN_CYCLE_MONTHS: i64 = 4_800;
const MIN_YEAR: i32 = 0;
const MAX_YEAR: i32 = 9_999;

/// Result type of this module.
pub type Result<T, E = IntervalError> = std::result::Result<T, E>;

/// A half-open window `[start, end)`, in UTC.
pub type Window = (OffsetDateTime, OffsetDateTime);

/// Why an interval or duration was rejected, or why a window could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntervalError {
    #[error("the interval is empty; expected an ISO 8601 repeating interval such as R12/2019-08-24T14:15:22Z/P1M")]
    Empty,
    #[error("the interval is {len} characters long; at most {max} are allowed")]
    TooLong { len: usize, max: usize },
    #[error(
        "expected three parts separated by '/' (Rn/start/duration, Rn/duration/end or Rn/start/end), found {found}"
    )]
    WrongPartCount { found: usize },
    #[error(
        "invalid repetitions {0:?}: expected R or R-1 (unbounded) or R followed by a whole number up to 4294967295, e.g. R12"
    )]
    InvalidRepetitions(String),
    #[error("invalid duration {input:?}: {reason}")]
    InvalidDuration { input: String, reason: &'static str },
    #[error("invalid date-time {input:?}: {reason}")]
    InvalidDateTime { input: String, reason: &'static str },
    #[error("both {first:?} and {second:?} are durations; one of them must be a date-time")]
    TwoDurations { first: String, second: String },
    #[error("the duration must be longer than zero")]
    ZeroDuration,
    #[error("the end ({end}) must be after the start ({start})")]
    EndNotAfterStart { start: String, end: String },
    #[error("the interval reaches dates outside the supported range (years -9999 to 9999)")]
    OutOfRange,
}

mod datetime;
mod duration;
mod window;

use datetime::*;
pub use duration::Duration;
use window::*;

/// How many times the interval repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repetitions {
    /// `R` or `R-1`.
    Unbounded,
    /// `Rn`: the first interval plus `n` repetitions.
    Count(u32),
}

impl Repetitions {
    /// Total number of windows (`n + 1`), or `None` when unbounded.
    #[must_use]
    pub fn windows(self) -> Option<u64> {
        match self {
            Repetitions::Unbounded => None,
            Repetitions::Count(n) => Some(u64::from(n) + 1),
        }
    }

    fn parse(s: &str) -> Result<Self> {
        let err = || IntervalError::InvalidRepetitions(s.to_owned());
        let rest = s.strip_prefix('R').ok_or_else(err)?;
        match rest {
            "" | "-1" => Ok(Repetitions::Unbounded),
            _ if rest.bytes().all(|b| b.is_ascii_digit()) => rest.parse().map(Repetitions::Count).map_err(|_| err()),
            _ => Err(err()),
        }
    }
}

impl fmt::Display for Repetitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repetitions::Unbounded => f.write_str("R"),
            Repetitions::Count(n) => write!(f, "R{n}"),
        }
    }
}

/// Which two of start, duration and end the interval was given with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntervalKind {
    /// `Rn/start/duration`: windows run forward from `start`.
    Start { start: OffsetDateTime, duration: Duration },
    /// `Rn/start/end`: windows of the fixed length `end - start`, forward from `start`.
    StartEnd { start: OffsetDateTime, end: OffsetDateTime },
    /// `Rn/duration/end`: windows run backwards from `end`.
    DurationEnd { duration: Duration, end: OffsetDateTime },
}

/// A validated ISO 8601 repeating interval. Timestamps are stored in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepeatingInterval {
    repetitions: Repetitions,
    kind: IntervalKind,
    first: Window,
}

/// How one window's bounds follow from the previous one's.
#[derive(Debug, Clone, Copy)]
enum Period {
    /// An exact length in nanoseconds (> 0).
    Fixed(i128),
    /// Only years/months, as a number of months (> 0).
    Months(i64),
    /// Months mixed with days and/or time.
    Calendar(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

impl RepeatingInterval {
    /// Parses and validates an interval string (see the module docs for what is accepted).
    ///
    /// # Errors
    /// Any [`IntervalError`] but `OutOfRange` for malformed input; `OutOfRange` when the first
    /// window falls outside the supported dates.
    pub fn parse(s: &str) -> Result<Self> {
        if s.is_empty() {
            return Err(IntervalError::Empty);
        }
        if s.len() > MAX_INPUT_LEN {
            return Err(IntervalError::TooLong {
                len: s.len(),
                max: MAX_INPUT_LEN,
            });
        }
        let parts: Vec<&str> = s.split('/').collect();
        let [reps, first, second] = parts.as_slice() else {
            return Err(IntervalError::WrongPartCount { found: parts.len() });
        };
        let repetitions = Repetitions::parse(reps)?;
        let kind = match (first.starts_with('P'), second.starts_with('P')) {
            (true, true) => {
                return Err(IntervalError::TwoDurations {
                    first: (*first).to_owned(),
                    second: (*second).to_owned(),
                });
            }
            (true, false) => IntervalKind::DurationEnd {
                duration: first.parse()?,
                end: parse_date_time(second)?,
            },
            (false, true) => IntervalKind::Start {
                start: parse_date_time(first)?,
                duration: second.parse()?,
            },
            (false, false) => IntervalKind::StartEnd {
                start: parse_date_time(first)?,
                end: parse_date_time(second)?,
            },
        };
        Self::new(repetitions, kind)
    }

    /// Builds an interval from its parts, with the same validation as [`parse`](Self::parse):
    /// timestamps are converted to UTC and must lie in years 0000–9999, durations must be
    /// non-zero, `end` must be after `start`, and the first window must be computable.
    ///
    /// # Errors
    /// [`IntervalError::InvalidDateTime`], [`IntervalError::ZeroDuration`],
    /// [`IntervalError::EndNotAfterStart`] or [`IntervalError::OutOfRange`].
    pub fn new(repetitions: Repetitions, kind: IntervalKind) -> Result<Self> {
        let (kind, first) = match kind {
            IntervalKind::Start { start, duration } => {
                let start = checked_timestamp(start)?;
                let duration = non_zero(duration)?;
                let end = duration.add_to(start)?;
                (IntervalKind::Start { start, duration }, (start, end))
            }
            IntervalKind::StartEnd { start, end } => {
                let start = checked_timestamp(start)?;
                let end = checked_timestamp(end)?;
                if end <= start {
                    return Err(IntervalError::EndNotAfterStart {
                        start: Rfc3339(start).to_string(),
                        end: Rfc3339(end).to_string(),
                    });
                }
                (IntervalKind::StartEnd { start, end }, (start, end))
            }
            IntervalKind::DurationEnd { duration, end } => {
                let end = checked_timestamp(end)?;
                let duration = non_zero(duration)?;
                let start = duration.sub_from(end)?;
                (IntervalKind::DurationEnd { duration, end }, (start, end))
            }
        };
        Ok(Self {
            repetitions,
            kind,
            first,
        })
    }

    #[must_use]
    pub fn repetitions(&self) -> Repetitions {
        self.repetitions
    }

    #[must_use]
    pub fn kind(&self) -> IntervalKind {
        self.kind
    }

    /// The first window (for the backward form: the one ending at `end`).
    #[must_use]
    pub fn first_window(&self) -> Window {
        self.first
    }

    /// The window `[start, end)` of the repetition containing `t`, or `None` when `t` is before
    /// the first window (forward forms), at or after `end` (backward form) or beyond the last
    /// repetition.
    ///
    /// # Errors
    /// [`IntervalError::OutOfRange`] when the window would reach beyond the supported dates
    /// (years -9999 to 9999), e.g. a `PT1S` interval asked about 9999-12-31T23:59:59.5Z.
    pub fn window_at(&self, t: OffsetDateTime) -> Result<Option<Window>> {
        let t = to_utc(t)?;
        let (first_start, first_end) = self.first;
        if first_start <= t && t < first_end {
            return Ok(Some(self.first));
        }
        let (anchor, direction) = self.anchor();
        match direction {
            Direction::Forward if t < anchor => return Ok(None),
            Direction::Backward if t >= anchor => return Ok(None),
            _ => {}
        }
        let last = match self.repetitions {
            Repetitions::Unbounded => None,
            Repetitions::Count(n) => Some(u64::from(n)),
        };
        if last == Some(0) {
            return Ok(None);
        }
        match self.period() {
            Period::Fixed(len) => fixed_window(anchor, len, direction, t, last),
            Period::Months(n) => months_window(anchor, n, direction, t, last),
            Period::Calendar(d) => stepped_window(anchor, &d, direction, t, last),
        }
    }

    /// Plain English for a consent screen, e.g. "every month, 13 times, starting
    /// 2019-08-24 14:15 UTC".
    #[must_use]
    pub fn describe(&self) -> String {
        let times = |n: u32| u64::from(n) + 1;
        match (self.kind, self.repetitions) {
            (IntervalKind::StartEnd { start, end }, Repetitions::Count(0)) => {
                format!("once, from {} to {}", HumanTime(start), HumanTime(end))
            }
            (IntervalKind::Start { start, duration }, Repetitions::Count(0)) => {
                format!("once, for {}, starting {}", duration.describe(), HumanTime(start))
            }
            (IntervalKind::DurationEnd { duration, end }, Repetitions::Count(0)) => {
                format!("once, for {}, ending {}", duration.describe(), HumanTime(end))
            }
            (IntervalKind::Start { start, .. } | IntervalKind::StartEnd { start, .. }, reps) => {
                let every = self.every_phrase();
                match reps {
                    Repetitions::Count(n) => {
                        format!("every {every}, {} times, starting {}", times(n), HumanTime(start))
                    }
                    Repetitions::Unbounded => {
                        format!("every {every}, starting {}", HumanTime(start))
                    }
                }
            }
            (IntervalKind::DurationEnd { duration, end }, reps) => {
                let every = duration.every_phrase();
                match reps {
                    Repetitions::Count(n) => {
                        format!("every {every}, {} times, ending {}", times(n), HumanTime(end))
                    }
                    Repetitions::Unbounded => {
                        format!("every {every}, counting back from {}", HumanTime(end))
                    }
                }
            }
        }
    }

    /// `per month`-style phrase when each window is a single unit (`P1M`, `P2W`; for the
    /// start/end form a whole number of days, hours, minutes or seconds), else `None`.
    #[must_use]
    pub fn describe_per(&self) -> Option<String> {
        self.window_duration()?.describe_per()
    }

    /// The period as a [`Duration`]; for the start/end form, the fixed length in
    /// days/hours/minutes/seconds, or `None` if it is not a whole number of seconds.
    fn window_duration(&self) -> Option<Duration> {
        match self.kind {
            IntervalKind::Start { duration, .. } | IntervalKind::DurationEnd { duration, .. } => Some(duration),
            IntervalKind::StartEnd { start, end } => {
                let nanos = (end - start).whole_nanoseconds();
                if nanos % NANOS_PER_SECOND != 0 {
                    return None;
                }
                let secs = nanos / NANOS_PER_SECOND;
                let part = |v: i128| u32::try_from(v).ok();
                Some(Duration {
                    days: part(secs / i128::from(SECONDS_PER_DAY))?,
                    hours: part(secs % i128::from(SECONDS_PER_DAY) / 3_600)?,
                    minutes: part(secs % 3_600 / 60)?,
                    seconds: part(secs % 60)?,
                    ..Duration::default()
                })
            }
        }
    }

    fn every_phrase(&self) -> String {
        match (self.window_duration(), self.kind) {
            (Some(d), _) => d.every_phrase(),
            (None, IntervalKind::StartEnd { start, end }) => {
                let nanos = (end - start).whole_nanoseconds();
                let frac = format!("{:09}", nanos % NANOS_PER_SECOND);
                format!("{}.{} seconds", nanos / NANOS_PER_SECOND, frac.trim_end_matches('0'))
            }
            (None, _) => String::new(),
        }
    }

    fn anchor(&self) -> (OffsetDateTime, Direction) {
        match self.kind {
            IntervalKind::Start { start, .. } | IntervalKind::StartEnd { start, .. } => (start, Direction::Forward),
            IntervalKind::DurationEnd { end, .. } => (end, Direction::Backward),
        }
    }

    fn period(&self) -> Period {
        match self.kind {
            IntervalKind::Start { duration, .. } | IntervalKind::DurationEnd { duration, .. } => duration.period(),
            IntervalKind::StartEnd { start, end } => Period::Fixed((end - start).whole_nanoseconds()),
        }
    }
}

impl FromStr for RepeatingInterval {
    type Err = IntervalError;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for RepeatingInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reps = self.repetitions;
        match self.kind {
            IntervalKind::Start { start, duration } => {
                write!(f, "{reps}/{}/{duration}", Rfc3339(start))
            }
            IntervalKind::StartEnd { start, end } => {
                write!(f, "{reps}/{}/{}", Rfc3339(start), Rfc3339(end))
            }
            IntervalKind::DurationEnd { duration, end } => {
                write!(f, "{reps}/{duration}/{}", Rfc3339(end))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use time::macros::datetime;

    fn ri(s: &str) -> RepeatingInterval {
        RepeatingInterval::parse(s).unwrap()
    }

    fn dur(s: &str) -> Duration {
        Duration::parse(s).unwrap()
    }

    fn win(s: &str, t: OffsetDateTime) -> Option<Window> {
        ri(s).window_at(t).unwrap()
    }

    // --- parsing and printing -------------------------------------------------------------

    #[test]
    fn contract_examples_parse_and_print() {
        let a = ri("R12/2019-08-24T14:15:22Z/P1M");
        assert_eq!(a.repetitions(), Repetitions::Count(12));
        assert_eq!(
            a.kind(),
            IntervalKind::Start {
                start: datetime!(2019-08-24 14:15:22 UTC),
                duration: Duration {
                    months: 1,
                    ..Duration::default()
                },
            }
        );
        assert_eq!(a.to_string(), "R12/2019-08-24T14:15:22Z/P1M");

        let b = ri("R/2017-03-01T13:00:00Z/2018-05-11T15:30:00Z");
        assert_eq!(b.repetitions(), Repetitions::Unbounded);
        assert!(matches!(b.kind(), IntervalKind::StartEnd { .. }));
        assert_eq!(b.to_string(), "R/2017-03-01T13:00:00Z/2018-05-11T15:30:00Z");

        let c = ri("R-1/P1Y2M10DT2H30M/2022-05-11T15:30:00Z");
        assert_eq!(c.repetitions(), Repetitions::Unbounded);
        assert_eq!(
            c.kind(),
            IntervalKind::DurationEnd {
                duration: Duration {
                    years: 1,
                    months: 2,
                    days: 10,
                    hours: 2,
                    minutes: 30,
                    ..Duration::default()
                },
                end: datetime!(2022-05-11 15:30 UTC),
            }
        );
        // R-1 prints as the canonical R.
        assert_eq!(c.to_string(), "R/P1Y2M10DT2H30M/2022-05-11T15:30:00Z");
        // 15:30 - 14 months = 2021-03-11, - 10 days = 03-01, - 2h30 = 13:00.
        assert_eq!(
            c.first_window(),
            (datetime!(2021-03-01 13:00 UTC), datetime!(2022-05-11 15:30 UTC))
        );

        let d = ri("R0/2024-01-01T00:00:00Z/P1D");
        assert_eq!(d.repetitions(), Repetitions::Count(0));
        assert_eq!(d.to_string(), "R0/2024-01-01T00:00:00Z/P1D");
        assert_eq!(Repetitions::Count(12).windows(), Some(13));
        assert_eq!(Repetitions::Unbounded.windows(), None);
    }

    #[test]
    fn canonical_forms_round_trip() {
        for s in [
            "R5/2024-01-01T00:00:00Z/P2W",
            "R/2024-01-01T00:00:00.123Z/PT36H",
            "R4294967295/2024-01-01T00:00:00Z/P1W2D",
            "R3/P1Y/2024-02-29T12:00:00Z",
            "R0/2024-01-01T00:00:00.000000001Z/2024-01-01T00:00:01Z",
        ] {
            assert_eq!(ri(s).to_string(), s);
            assert_eq!(ri(&ri(s).to_string()), ri(s));
        }
        for s in ["P1Y2M10DT2H30M", "P2W", "P1W2D", "PT36H", "PT1S", "P1YT1S"] {
            assert_eq!(dur(s).to_string(), s);
        }
        assert_eq!(dur("P0Y1M").to_string(), "P1M");
        assert_eq!(dur("P01D").to_string(), "P1D");
        assert_eq!(
            ri("R012/2024-01-01T00:00:00Z/P1M").repetitions(),
            Repetitions::Count(12)
        );
    }

    #[test]
    fn timestamp_forms() {
        let utc = datetime!(2019-08-24 14:15:22 UTC);
        for s in [
            "2019-08-24T14:15:22Z",
            "2019-08-24t14:15:22z",
            "2019-08-24T16:15:22+02:00",
            "2019-08-24T16:15:22+0200",
            "2019-08-24T16:15:22+02",
            "2019-08-24T09:15:22-05:00",
            "2019-08-24T14:15:22",
            "2019-08-24T14:15:22-00:00",
        ] {
            assert_eq!(parse_date_time(s).unwrap(), utc, "{s}");
        }
        assert_eq!(
            parse_date_time("2019-08-24T14:15Z").unwrap(),
            datetime!(2019-08-24 14:15 UTC)
        );
        assert_eq!(parse_date_time("2024-01-01").unwrap(), datetime!(2024-01-01 0:00 UTC));
        assert_eq!(
            parse_date_time("2024-01-01T00:00:00.5Z").unwrap(),
            datetime!(2024-01-01 0:00:00.5 UTC)
        );
        // Offsets are converted; printing gives UTC.
        assert_eq!(
            ri("R1/2019-08-24T16:15:22+02:00/P1D").to_string(),
            "R1/2019-08-24T14:15:22Z/P1D"
        );
        for bad in [
            "",
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T23:60:00Z",
            "2024-01-01T23:59:60Z",
            "2024-01-01T10Z",
            "20240101T000000Z",
            "2024-W01-1",
            "2024-001",
            "2024-01-01Z",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00+01:",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00.1234567891Z",
            "2024-01-01T00:00:00Z ",
            " 2024-01-01T00:00:00Z",
            "+12024-01-01T00:00:00Z",
            "2024-1-01T00:00:00Z",
            "9999-12-31T23:00:00-05:00",
            "0000-01-01T00:00:00+01:00",
            "2024-01-01T00:00:00ZZ",
            "２０２４-01-01",
        ] {
            assert!(
                matches!(parse_date_time(bad), Err(IntervalError::InvalidDateTime { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rejections() {
        use IntervalError as E;
        let parse = RepeatingInterval::parse;
        assert_eq!(parse(""), Err(E::Empty));
        assert_eq!(parse("R12/P1M"), Err(E::WrongPartCount { found: 2 }));
        assert_eq!(parse("R12/2019-08-24T14:15:22Z"), Err(E::WrongPartCount { found: 2 }));
        assert_eq!(parse("garbage"), Err(E::WrongPartCount { found: 1 }));
        assert_eq!(
            parse("R1/2024-01-01T00:00:00Z/P1D/P1D"),
            Err(E::WrongPartCount { found: 4 })
        );
        for reps in [
            "Rx",
            "R-2",
            "R-0",
            "R+5",
            "R1.5",
            "R 1",
            "r1",
            "X5",
            "",
            "R99999999999",
            "R4294967296",
        ] {
            assert_eq!(
                parse(&format!("{reps}/2024-01-01T00:00:00Z/P1M")),
                Err(E::InvalidRepetitions(reps.to_owned())),
                "{reps}"
            );
        }
        for d in [
            "P",
            "PT",
            "P1.5D",
            "P1,5D",
            "P-1D",
            "-P1D",
            "P+1D",
            "PT1.5S",
            "p1d",
            "P1",
            "P1X",
            "PT1D",
            "P1H",
            "P1M1Y",
            "P1D1D",
            "P1DT",
            "PT1HT1M",
            "P1 D",
            "P99999999999D",
            "1D",
        ] {
            assert!(matches!(Duration::parse(d), Err(E::InvalidDuration { .. })), "{d}");
            let s = format!("R1/2024-01-01T00:00:00Z/{d}");
            assert!(parse(&s).is_err(), "{s}");
        }
        assert_eq!(Duration::parse("P0D"), Err(E::ZeroDuration));
        assert_eq!(Duration::parse("PT0H0M0S"), Err(E::ZeroDuration));
        assert_eq!(
            parse("R1/P1D/P1M"),
            Err(E::TwoDurations {
                first: "P1D".into(),
                second: "P1M".into()
            })
        );
        assert!(matches!(
            parse("R/2024-01-02T00:00:00Z/2024-01-01T00:00:00Z"),
            Err(E::EndNotAfterStart { .. })
        ));
        assert!(matches!(
            parse("R/2024-01-01T00:00:00Z/2024-01-01T00:00:00Z"),
            Err(E::EndNotAfterStart { .. })
        ));
        assert!(matches!(parse("R1//P1M"), Err(E::InvalidDateTime { .. })));
        assert!(matches!(
            parse("R1/2024-01-01T00:00:00Z/"),
            Err(E::InvalidDateTime { .. })
        ));
    }

    #[test]
    fn absurd_sizes_are_errors_not_panics() {
        use IntervalError as E;
        let parse = RepeatingInterval::parse;
        assert_eq!(parse("R/2024-01-01T00:00:00Z/P99999999Y"), Err(E::OutOfRange));
        assert_eq!(parse("R/P99999999Y/2024-01-01T00:00:00Z"), Err(E::OutOfRange));
        assert_eq!(
            parse("R/2024-01-01T00:00:00Z/P4294967295Y4294967295M4294967295W4294967295D"),
            Err(E::OutOfRange)
        );
        assert_eq!(
            parse("R/2024-01-01T00:00:00Z/P4294967295DT4294967295H4294967295M4294967295S"),
            Err(E::OutOfRange)
        );
        assert_eq!(parse("R0/9999-12-31T00:00:00Z/P1M"), Err(E::OutOfRange));
        assert_eq!(
            parse("R0/P1D/0000-01-01T00:00:00Z").map(|r| r.first_window().0.year()),
            Ok(-1)
        );
        let long = format!("R1/2024-01-01T00:00:00Z/P{}D", "1".repeat(200));
        assert_eq!(
            parse(&long),
            Err(E::TooLong {
                len: long.len(),
                max: MAX_INPUT_LEN
            })
        );
        assert_eq!(
            RepeatingInterval::new(
                Repetitions::Unbounded,
                IntervalKind::Start {
                    start: datetime!(2024-01-01 0:00 UTC),
                    duration: Duration::default()
                }
            ),
            Err(E::ZeroDuration)
        );
        // Messages name the problem.
        let msg = Duration::parse("P1.5D").unwrap_err().to_string();
        assert!(msg.contains("fractional"), "{msg}");
        let msg = Duration::parse("P-1D").unwrap_err().to_string();
        assert!(msg.contains("negative"), "{msg}");
    }

    // --- duration arithmetic ---------------------------------------------------------------

    #[test]
    fn month_end_clamping_and_leap_years() {
        let add = |d: &str, t| dur(d).add_to(t).unwrap();
        let sub = |d: &str, t| dur(d).sub_from(t).unwrap();
        assert_eq!(
            add("P1M", datetime!(2024-01-31 0:00 UTC)),
            datetime!(2024-02-29 0:00 UTC)
        );
        assert_eq!(
            add("P1M", datetime!(2023-01-31 0:00 UTC)),
            datetime!(2023-02-28 0:00 UTC)
        );
        assert_eq!(
            add("P1M", datetime!(2024-03-31 10:20:30.5 UTC)),
            datetime!(2024-04-30 10:20:30.5 UTC)
        );
        assert_eq!(
            add("P1Y", datetime!(2024-02-29 0:00 UTC)),
            datetime!(2025-02-28 0:00 UTC)
        );
        assert_eq!(
            add("P4Y", datetime!(2024-02-29 0:00 UTC)),
            datetime!(2028-02-29 0:00 UTC)
        );
        assert_eq!(
            add("P76Y", datetime!(2024-02-29 0:00 UTC)),
            datetime!(2100-02-28 0:00 UTC)
        );
        assert_eq!(
            add("P12M", datetime!(2024-02-29 0:00 UTC)),
            datetime!(2025-02-28 0:00 UTC)
        );
        // Years and months are added together and clamped once (luxon).
        assert_eq!(
            add("P1Y1M", datetime!(2024-02-29 0:00 UTC)),
            datetime!(2025-03-29 0:00 UTC)
        );
        // Then days, then time.
        assert_eq!(
            add("P1M1D", datetime!(2024-01-31 0:00 UTC)),
            datetime!(2024-03-01 0:00 UTC)
        );
        assert_eq!(
            add("PT2H", datetime!(2024-01-31 23:00 UTC)),
            datetime!(2024-02-01 1:00 UTC)
        );
        assert_eq!(
            add("P1W2D", datetime!(2024-01-01 0:00 UTC)),
            datetime!(2024-01-10 0:00 UTC)
        );
        assert_eq!(
            add("P1DT24H", datetime!(2024-02-28 0:00 UTC)),
            datetime!(2024-03-01 0:00 UTC)
        );
        assert_eq!(
            sub("P1M", datetime!(2024-03-31 0:00 UTC)),
            datetime!(2024-02-29 0:00 UTC)
        );
        assert_eq!(
            sub("P1M", datetime!(2023-03-31 0:00 UTC)),
            datetime!(2023-02-28 0:00 UTC)
        );
        assert_eq!(
            sub("P1Y", datetime!(2024-02-29 0:00 UTC)),
            datetime!(2023-02-28 0:00 UTC)
        );
        assert_eq!(
            sub("P1M1D", datetime!(2024-03-31 0:00 UTC)),
            datetime!(2024-02-28 0:00 UTC)
        );
        // Inputs in other offsets are handled in UTC.
        assert_eq!(
            add("P1M", datetime!(2024-02-01 0:30 +01:00)),
            datetime!(2024-02-29 23:30 UTC)
        );
    }

    #[test]
    fn arithmetic_overflow_is_an_error() {
        assert_eq!(
            dur("P1M").add_to(datetime!(+9999-12-01 0:00 UTC)),
            Err(IntervalError::OutOfRange)
        );
        assert_eq!(
            dur("P1D").sub_from(datetime!(-9999-01-01 0:00 UTC)),
            Err(IntervalError::OutOfRange)
        );
        assert_eq!(
            dur("PT1S").add_to(datetime!(+9999-12-31 23:59:59 UTC)),
            Err(IntervalError::OutOfRange)
        );
        assert_eq!(
            dur("P99999999Y").add_to(datetime!(2024-01-01 0:00 UTC)),
            Err(IntervalError::OutOfRange)
        );
        let max = Duration {
            years: u32::MAX,
            months: u32::MAX,
            weeks: u32::MAX,
            days: u32::MAX,
            hours: u32::MAX,
            minutes: u32::MAX,
            seconds: u32::MAX,
        };
        assert_eq!(
            max.add_to(datetime!(2024-01-01 0:00 UTC)),
            Err(IntervalError::OutOfRange)
        );
        assert_eq!(
            max.sub_from(datetime!(2024-01-01 0:00 UTC)),
            Err(IntervalError::OutOfRange)
        );
    }

    // --- windows ---------------------------------------------------------------------------

    #[test]
    fn monthly_windows_chain_like_rafiki() {
        let s = "R/2024-01-31T00:00:00Z/P1M";
        assert_eq!(
            win(s, datetime!(2024-02-15 0:00 UTC)),
            Some((datetime!(2024-01-31 0:00 UTC), datetime!(2024-02-29 0:00 UTC)))
        );
        assert_eq!(
            win(s, datetime!(2024-03-01 0:00 UTC)),
            Some((datetime!(2024-02-29 0:00 UTC), datetime!(2024-03-29 0:00 UTC)))
        );
        assert_eq!(
            win(s, datetime!(2024-03-30 0:00 UTC)),
            Some((datetime!(2024-03-29 0:00 UTC), datetime!(2024-04-29 0:00 UTC)))
        );
        assert_eq!(
            win(s, datetime!(2024-05-01 0:00 UTC)),
            Some((datetime!(2024-04-29 0:00 UTC), datetime!(2024-05-29 0:00 UTC)))
        );
        // Feb 2025 has 28 days, so from then on the boundary is the 28th.
        assert_eq!(
            win(s, datetime!(2030-07-30 0:00 UTC)),
            Some((datetime!(2030-07-28 0:00 UTC), datetime!(2030-08-28 0:00 UTC)))
        );
        // From the 30th, February pulls every later boundary to the 28th/29th.
        let s = "R/2023-01-30T00:00:00Z/P1M";
        assert_eq!(
            win(s, datetime!(2023-03-29 0:00 UTC)),
            Some((datetime!(2023-03-28 0:00 UTC), datetime!(2023-04-28 0:00 UTC)))
        );
        // Two-monthly from Jan 31 never visits February: Sep clamps to 30, and that stays.
        let s = "R/2023-01-31T00:00:00Z/P2M";
        assert_eq!(
            win(s, datetime!(2024-04-01 0:00 UTC)),
            Some((datetime!(2024-03-30 0:00 UTC), datetime!(2024-05-30 0:00 UTC)))
        );
        // Yearly from Feb 29.
        let s = "R/2024-02-29T12:00:00Z/P1Y";
        assert_eq!(
            win(s, datetime!(2028-03-01 0:00 UTC)),
            Some((datetime!(2028-02-28 12:00 UTC), datetime!(2029-02-28 12:00 UTC)))
        );
        let s = "R/2024-02-29T12:00:00Z/P4Y";
        assert_eq!(
            win(s, datetime!(2028-03-01 0:00 UTC)),
            Some((datetime!(2028-02-29 12:00 UTC), datetime!(2032-02-29 12:00 UTC)))
        );
    }

    #[test]
    fn counted_windows() {
        let s = "R12/2019-08-24T14:15:22Z/P1M";
        assert_eq!(win(s, datetime!(2019-08-24 14:15:21 UTC)), None);
        assert_eq!(
            win(s, datetime!(2019-08-24 14:15:22 UTC)),
            Some((datetime!(2019-08-24 14:15:22 UTC), datetime!(2019-09-24 14:15:22 UTC)))
        );
        // Window 12 is the last.
        assert_eq!(
            win(s, datetime!(2020-09-24 14:15:21 UTC)),
            Some((datetime!(2020-08-24 14:15:22 UTC), datetime!(2020-09-24 14:15:22 UTC)))
        );
        assert_eq!(win(s, datetime!(2020-09-24 14:15:22 UTC)), None);
        assert_eq!(win(s, datetime!(2100-01-01 0:00 UTC)), None);

        let s = "R0/2024-01-01T00:00:00Z/P1D";
        assert_eq!(
            win(s, datetime!(2024-01-01 23:59:59.999999999 UTC)),
            Some((datetime!(2024-01-01 0:00 UTC), datetime!(2024-01-02 0:00 UTC)))
        );
        assert_eq!(win(s, datetime!(2024-01-02 0:00 UTC)), None);
        assert_eq!(win(s, datetime!(2023-12-31 23:59 UTC)), None);

        let s = "R2/2024-01-01T00:00:00Z/PT1H";
        assert_eq!(
            win(s, datetime!(2024-01-01 2:59 UTC)),
            Some((datetime!(2024-01-01 2:00 UTC), datetime!(2024-01-01 3:00 UTC)))
        );
        assert_eq!(win(s, datetime!(2024-01-01 3:00 UTC)), None);
        // Count(u32::MAX) does not overflow.
        let s = "R4294967295/2024-01-01T00:00:00Z/PT1S";
        assert_eq!(
            win(s, datetime!(2030-01-01 0:00:00.5 UTC)),
            Some((datetime!(2030-01-01 0:00 UTC), datetime!(2030-01-01 0:00:01 UTC)))
        );
        assert_eq!(win(s, datetime!(2200-01-01 0:00 UTC)), None);
    }

    #[test]
    fn unbounded_r_and_r_minus_1_agree() {
        for t in [
            datetime!(2024-01-01 0:00 UTC),
            datetime!(2031-06-17 3:04:05 UTC),
            datetime!(2999-12-31 23:59:59 UTC),
        ] {
            assert_eq!(
                win("R/2024-01-01T00:00:00Z/P1W", t),
                win("R-1/2024-01-01T00:00:00Z/P1W", t)
            );
            assert!(win("R/2024-01-01T00:00:00Z/P1W", t).is_some());
        }
        assert_eq!(win("R/2024-01-01T00:00:00Z/P1W", datetime!(2023-12-31 23:59 UTC)), None);
    }

    #[test]
    fn boundary_belongs_to_the_later_window() {
        let s = "R/2024-01-01T00:00:00Z/P1D";
        assert_eq!(
            win(s, datetime!(2024-01-02 0:00 UTC)),
            Some((datetime!(2024-01-02 0:00 UTC), datetime!(2024-01-03 0:00 UTC)))
        );
        let s = "R/2024-01-31T00:00:00Z/P1M";
        assert_eq!(
            win(s, datetime!(2024-02-29 0:00 UTC)),
            Some((datetime!(2024-02-29 0:00 UTC), datetime!(2024-03-29 0:00 UTC)))
        );
        let s = "R/P1M/2024-03-31T00:00:00Z";
        assert_eq!(
            win(s, datetime!(2024-02-29 0:00 UTC)),
            Some((datetime!(2024-02-29 0:00 UTC), datetime!(2024-03-31 0:00 UTC)))
        );
        assert_eq!(win(s, datetime!(2024-03-31 0:00 UTC)), None);
    }

    #[test]
    fn duration_end_runs_backwards() {
        let s = "R-1/P1Y2M10DT2H30M/2022-05-11T15:30:00Z";
        assert_eq!(win(s, datetime!(2022-05-11 15:30 UTC)), None);
        assert_eq!(
            win(s, datetime!(2021-03-01 13:00 UTC)),
            Some((datetime!(2021-03-01 13:00 UTC), datetime!(2022-05-11 15:30 UTC)))
        );
        // 2021-03-01T13:00 - 14 months = 2020-01-01, - 10 days = 2019-12-22, - 2h30 = 10:30.
        assert_eq!(
            win(s, datetime!(2021-03-01 12:59:59 UTC)),
            Some((datetime!(2019-12-22 10:30 UTC), datetime!(2021-03-01 13:00 UTC)))
        );
        assert!(win(s, datetime!(1900-01-01 0:00 UTC)).is_some());

        let s = "R1/P1D/2024-01-10T00:00:00Z";
        assert_eq!(
            win(s, datetime!(2024-01-09 12:00 UTC)),
            Some((datetime!(2024-01-09 0:00 UTC), datetime!(2024-01-10 0:00 UTC)))
        );
        assert_eq!(
            win(s, datetime!(2024-01-08 0:00 UTC)),
            Some((datetime!(2024-01-08 0:00 UTC), datetime!(2024-01-09 0:00 UTC)))
        );
        assert_eq!(win(s, datetime!(2024-01-07 23:59:59 UTC)), None);
        assert_eq!(win(s, datetime!(2024-01-10 0:00 UTC)), None);

        // Monthly backwards from Mar 31 (chained: Feb 29, then Jan 29, Dec 29, ...).
        let s = "R/P1M/2024-03-31T00:00:00Z";
        assert_eq!(
            win(s, datetime!(2024-01-15 0:00 UTC)),
            Some((datetime!(2023-12-29 0:00 UTC), datetime!(2024-01-29 0:00 UTC)))
        );
        let s = "R2/P1M/2024-03-31T00:00:00Z";
        assert_eq!(
            win(s, datetime!(2024-01-29 0:00 UTC)),
            Some((datetime!(2024-01-29 0:00 UTC), datetime!(2024-02-29 0:00 UTC)))
        );
        assert_eq!(
            win(s, datetime!(2024-01-28 23:59 UTC)),
            Some((datetime!(2023-12-29 0:00 UTC), datetime!(2024-01-29 0:00 UTC)))
        );
        assert_eq!(win(s, datetime!(2023-12-28 23:59 UTC)), None);
    }

    #[test]
    fn start_end_repeats_the_fixed_length() {
        // January is 31 days; the repeats are 31 days too, not calendar months.
        let s = "R2/2024-01-01T00:00:00Z/2024-02-01T00:00:00Z";
        assert_eq!(
            win(s, datetime!(2024-02-15 0:00 UTC)),
            Some((datetime!(2024-02-01 0:00 UTC), datetime!(2024-03-03 0:00 UTC)))
        );
        assert_eq!(
            win(s, datetime!(2024-04-02 23:59 UTC)),
            Some((datetime!(2024-03-03 0:00 UTC), datetime!(2024-04-03 0:00 UTC)))
        );
        assert_eq!(win(s, datetime!(2024-04-03 0:00 UTC)), None);
        assert_eq!(win(s, datetime!(2023-12-31 0:00 UTC)), None);
        let s = "R/2017-03-01T13:00:00Z/2018-05-11T15:30:00Z";
        let (a, b) = win(s, datetime!(2026-01-01 0:00 UTC)).unwrap();
        assert_eq!(b - a, datetime!(2018-05-11 15:30 UTC) - datetime!(2017-03-01 13:00 UTC));
        assert!(a <= datetime!(2026-01-01 0:00 UTC) && datetime!(2026-01-01 0:00 UTC) < b);
    }

    #[test]
    fn far_future_unbounded_windows_are_fast() {
        let started = std::time::Instant::now();
        let s = "R/2024-01-01T00:00:00Z/PT1S";
        assert_eq!(
            win(s, datetime!(+9999-12-31 23:59:58.5 UTC)),
            Some((datetime!(+9999-12-31 23:59:58 UTC), datetime!(+9999-12-31 23:59:59 UTC)))
        );
        // The window's end is beyond the supported range: an error, not a panic.
        assert_eq!(
            ri(s).window_at(datetime!(+9999-12-31 23:59:59.5 UTC)),
            Err(IntervalError::OutOfRange)
        );
        assert_eq!(
            win("R/P1M/2024-01-01T00:00:00Z", datetime!(-9999-06-15 0:00 UTC)),
            Some((datetime!(-9999-06-01 0:00 UTC), datetime!(-9999-07-01 0:00 UTC)))
        );
        assert_eq!(
            win("R/P1M/2024-01-01T00:00:00Z", datetime!(-9999-01-15 0:00 UTC)),
            Some((datetime!(-9999-01-01 0:00 UTC), datetime!(-9999-02-01 0:00 UTC)))
        );
        assert_eq!(
            ri("R/P1M/2024-01-15T00:00:00Z").window_at(datetime!(-9999-01-10 0:00 UTC)),
            Err(IntervalError::OutOfRange)
        );
        assert_eq!(
            win("R/P1D/2024-01-01T00:00:00Z", datetime!(-9999-01-01 0:00 UTC)),
            Some((datetime!(-9999-01-01 0:00 UTC), datetime!(-9999-01-02 0:00 UTC)))
        );
        assert_eq!(
            win("R/0000-01-31T00:00:00Z/P1M", datetime!(+9999-03-30 0:00 UTC)),
            Some((datetime!(+9999-03-28 0:00 UTC), datetime!(+9999-04-28 0:00 UTC)))
        );
        // Months mixed with days are stepped: ~120 000 steps across the whole range.
        let (a, b) = win("R/0000-01-01T00:00:00Z/P1M1D", datetime!(+9999-06-01 0:00 UTC)).unwrap();
        assert!(a <= datetime!(+9999-06-01 0:00 UTC) && datetime!(+9999-06-01 0:00 UTC) < b);
        assert_eq!(dur("P1M1D").add_to(a), Ok(b));
        // t in another offset, near the end of the range.
        assert_eq!(
            ri(s).window_at(datetime!(+9999-12-31 23:00 -05:00)),
            Err(IntervalError::OutOfRange)
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    // --- descriptions ----------------------------------------------------------------------

    #[test]
    fn descriptions() {
        let d = |s: &str| ri(s).describe();
        assert_eq!(
            d("R12/2019-08-24T14:15:22Z/P1M"),
            "every month, 13 times, starting 2019-08-24 14:15 UTC"
        );
        assert_eq!(
            d("R/2019-08-24T14:15:22Z/P1M"),
            "every month, starting 2019-08-24 14:15 UTC"
        );
        assert_eq!(
            d("R-1/2024-01-01T00:00:00Z/P2W"),
            "every 2 weeks, starting 2024-01-01 00:00 UTC"
        );
        assert_eq!(
            d("R1/2024-01-01T00:00:00Z/P1Y2M"),
            "every 1 year and 2 months, 2 times, starting 2024-01-01 00:00 UTC"
        );
        assert_eq!(
            d("R0/2024-01-01T00:00:00Z/P1D"),
            "once, for 1 day, starting 2024-01-01 00:00 UTC"
        );
        assert_eq!(
            d("R-1/P1Y2M10DT2H30M/2022-05-11T15:30:00Z"),
            "every 1 year, 2 months, 10 days, 2 hours and 30 minutes, counting back from 2022-05-11 15:30 UTC"
        );
        assert_eq!(
            d("R3/P1D/2022-05-11T00:00:00Z"),
            "every day, 4 times, ending 2022-05-11 00:00 UTC"
        );
        assert_eq!(
            d("R0/P1D/2022-05-11T00:00:00Z"),
            "once, for 1 day, ending 2022-05-11 00:00 UTC"
        );
        assert_eq!(
            d("R/2017-03-01T13:00:00Z/2018-05-11T15:30:00Z"),
            "every 436 days, 2 hours and 30 minutes, starting 2017-03-01 13:00 UTC"
        );
        assert_eq!(
            d("R5/2024-01-01T00:00:00Z/2024-02-01T00:00:00Z"),
            "every 31 days, 6 times, starting 2024-01-01 00:00 UTC"
        );
        assert_eq!(
            d("R0/2024-01-01T00:00:00Z/2024-02-01T00:00:00Z"),
            "once, from 2024-01-01 00:00 UTC to 2024-02-01 00:00 UTC"
        );
        assert_eq!(
            d("R/2024-01-01T00:00:00Z/2024-01-01T00:00:01.5Z"),
            "every 1.5 seconds, starting 2024-01-01 00:00 UTC"
        );

        assert_eq!(dur("P1M").describe(), "1 month");
        assert_eq!(dur("P2W").describe(), "2 weeks");
        assert_eq!(dur("P1Y2M").describe(), "1 year and 2 months");
        assert_eq!(dur("PT1H1M1S").describe(), "1 hour, 1 minute and 1 second");
        assert_eq!(dur("P1M").describe_per().as_deref(), Some("per month"));
        assert_eq!(dur("P2W").describe_per().as_deref(), Some("per 2 weeks"));
        assert_eq!(dur("PT1H").describe_per().as_deref(), Some("per hour"));
        assert_eq!(dur("P1Y2M").describe_per(), None);

        let per = |s: &str| ri(s).describe_per();
        assert_eq!(per("R11/2024-01-01T00:00:00Z/P1M").as_deref(), Some("per month"));
        assert_eq!(per("R/P1Y/2024-01-01T00:00:00Z").as_deref(), Some("per year"));
        assert_eq!(
            per("R/2024-01-01T00:00:00Z/2024-02-01T00:00:00Z").as_deref(),
            Some("per 31 days")
        );
        assert_eq!(per("R/2024-01-01T00:00:00Z/2024-01-01T01:30:00Z"), None);
        assert_eq!(per("R/2024-01-01T00:00:00Z/P1DT1H"), None);
    }

    // --- closed form vs stepping -----------------------------------------------------------

    /// Reference: step window by window from the anchor (Rafiki's loop).
    fn stepped(r: &RepeatingInterval, t: OffsetDateTime) -> Result<Option<Window>> {
        let (anchor, direction) = r.anchor();
        if direction == Direction::Forward && t < anchor || direction == Direction::Backward && t >= anchor {
            return Ok(None);
        }
        let last = match r.repetitions() {
            Repetitions::Unbounded => None,
            Repetitions::Count(n) => Some(u64::from(n)),
        };
        match r.kind() {
            IntervalKind::Start { duration, .. } | IntervalKind::DurationEnd { duration, .. } => {
                stepped_window(anchor, &duration, direction, t, last)
            }
            IntervalKind::StartEnd { start, end } => {
                let mut k = 0;
                let mut bound = start;
                let len = end - start;
                loop {
                    if exceeds(k, last) {
                        return Ok(None);
                    }
                    let next = bound + len;
                    if t < next {
                        return Ok(Some((bound, next)));
                    }
                    bound = next;
                    k += 1;
                }
            }
        }
    }

    #[test]
    fn closed_form_months_match_stepping() {
        for day in [1, 28, 29, 30, 31] {
            for month in [1, 2, 3, 8, 12] {
                for n in ["P1M", "P2M", "P5M", "P1Y", "P13M", "P4Y", "P1Y1M"] {
                    let Ok(date) = Date::from_calendar_date(2000, Month::try_from(month).unwrap(), day) else {
                        continue;
                    };
                    let anchor = PrimitiveDateTime::new(date, Time::from_hms(6, 0, 0).unwrap()).assume_utc();
                    for (form, count) in [("start", "R"), ("end", "R"), ("start", "R7"), ("end", "R7")] {
                        let s = if form == "start" {
                            format!("{count}/{}/{n}", Rfc3339(anchor))
                        } else {
                            format!("{count}/{n}/{}", Rfc3339(anchor))
                        };
                        let r = ri(&s);
                        for days in (-3_000..3_000).step_by(23) {
                            let t = anchor + time::Duration::hours(days * 24 + days % 13);
                            assert_eq!(r.window_at(t), stepped(&r, t), "{s} at {t}");
                        }
                    }
                }
            }
        }
    }

    // --- property tests --------------------------------------------------------------------

    fn arb_duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            (0u32..3, 0u32..15).prop_map(|(years, months)| Duration {
                years,
                months,
                ..Duration::default()
            }),
            (0u32..3, 0u32..40, 0u32..50, 0u32..120, 0u32..120).prop_map(|(weeks, days, hours, minutes, seconds)| {
                Duration {
                    weeks,
                    days,
                    hours,
                    minutes,
                    seconds,
                    ..Duration::default()
                }
            }),
            (0u32..2, 0u32..4, 0u32..2, 0u32..10, 0u32..30, 0u32..3, 0u32..3).prop_map(
                |(years, months, weeks, days, hours, minutes, seconds)| {
                    Duration {
                        years,
                        months,
                        weeks,
                        days,
                        hours,
                        minutes,
                        seconds,
                    }
                }
            ),
        ]
        .prop_filter("non-zero", |d| !d.is_zero())
    }

    fn arb_start() -> impl Strategy<Value = OffsetDateTime> {
        prop_oneof![
            (-2_000_000_000i64..4_000_000_000).prop_map(|s| { OffsetDateTime::from_unix_timestamp(s).unwrap() }),
            // Month ends, where clamping happens.
            (1900i32..2100, 1u8..=12, 0u8..4, 0u32..86_400).prop_map(|(y, m, back, secs)| {
                let month = Month::try_from(m).unwrap();
                let day = month.length(y) - back;
                let date = Date::from_calendar_date(y, month, day).unwrap();
                PrimitiveDateTime::new(date, Time::MIDNIGHT).assume_utc() + time::Duration::seconds(i64::from(secs))
            }),
        ]
    }

    fn arb_repetitions() -> impl Strategy<Value = Repetitions> {
        prop_oneof![Just(Repetitions::Unbounded), (0u32..40).prop_map(Repetitions::Count)]
    }

    /// A rough length in seconds, to pick moments within ~50 windows.
    fn approx_seconds(d: &Duration) -> i64 {
        d.total_months() * 31 * SECONDS_PER_DAY + d.exact_seconds()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn forward_windows_contain_t_and_chain(
            start in arb_start(),
            duration in arb_duration(),
            repetitions in arb_repetitions(),
            permille in -100i64..50_000,
        ) {
            let r = RepeatingInterval::new(repetitions, IntervalKind::Start { start, duration }).unwrap();
            let offset = approx_seconds(&duration) * permille / 1_000;
            let t = start + time::Duration::seconds(offset) + time::Duration::nanoseconds(offset % 1_000);
            let got = r.window_at(t).unwrap();
            prop_assert_eq!(got, stepped(&r, t).unwrap());
            if t < start {
                prop_assert_eq!(got, None);
            }
            if repetitions == Repetitions::Unbounded && t >= start {
                prop_assert!(got.is_some());
            }
            if let Some((s, e)) = got {
                prop_assert!(s <= t && t < e);
                prop_assert_eq!(duration.add_to(s).unwrap(), e);
                prop_assert_eq!(r.window_at(s).unwrap(), Some((s, e)));
                match r.window_at(e).unwrap() {
                    Some((next_start, _)) => prop_assert_eq!(next_start, e),
                    // Only past the last repetition.
                    None => prop_assert!(repetitions != Repetitions::Unbounded),
                }
            }
        }

        #[test]
        fn backward_windows_contain_t_and_chain(
            end in arb_start(),
            duration in arb_duration(),
            repetitions in arb_repetitions(),
            permille in -50_000i64..100,
        ) {
            let r = RepeatingInterval::new(repetitions, IntervalKind::DurationEnd { duration, end }).unwrap();
            let offset = approx_seconds(&duration) * permille / 1_000;
            let t = end + time::Duration::seconds(offset);
            let got = r.window_at(t).unwrap();
            prop_assert_eq!(got, stepped(&r, t).unwrap());
            if t >= end {
                prop_assert_eq!(got, None);
            }
            if repetitions == Repetitions::Unbounded && t < end {
                prop_assert!(got.is_some());
            }
            if let Some((s, e)) = got {
                prop_assert!(s <= t && t < e);
                prop_assert_eq!(duration.sub_from(e).unwrap(), s);
                let before = s - time::Duration::nanoseconds(1);
                match r.window_at(before).unwrap() {
                    Some((_, prev_end)) => prop_assert_eq!(prev_end, s),
                    None => prop_assert!(repetitions != Repetitions::Unbounded),
                }
            }
        }

        #[test]
        fn start_end_windows_have_the_first_length(
            start in arb_start(),
            len in 1i64..100_000_000,
            repetitions in arb_repetitions(),
            permille in -100i64..50_000,
        ) {
            let end = start + time::Duration::seconds(len);
            let r = RepeatingInterval::new(repetitions, IntervalKind::StartEnd { start, end }).unwrap();
            let t = start + time::Duration::seconds(len * permille / 1_000);
            let got = r.window_at(t).unwrap();
            prop_assert_eq!(got, stepped(&r, t).unwrap());
            if let Some((s, e)) = got {
                prop_assert!(s <= t && t < e);
                prop_assert_eq!(e - s, end - start);
            }
        }

        #[test]
        fn parse_never_panics_and_round_trips(s in "[R0-9PTYMWDHS:.+Zz/-]{0,60}") {
            if let Ok(r) = RepeatingInterval::parse(&s) {
                prop_assert_eq!(RepeatingInterval::parse(&r.to_string()).unwrap(), r);
                let _ = r.describe();
                let _ = r.window_at(OffsetDateTime::UNIX_EPOCH);
            }
        }

        #[test]
        fn display_round_trips(
            start in arb_start(),
            duration in arb_duration(),
            repetitions in arb_repetitions(),
            backward in any::<bool>(),
        ) {
            let kind = if backward {
                IntervalKind::DurationEnd { duration, end: start }
            } else {
                IntervalKind::Start { start, duration }
            };
            let r = RepeatingInterval::new(repetitions, kind).unwrap();
            prop_assert_eq!(RepeatingInterval::parse(&r.to_string()).unwrap(), r);
            prop_assert_eq!(Duration::parse(&duration.to_string()).unwrap(), duration);
        }
    }
}
