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

// ---------------------------------------------------------------------------------------------
// Duration
// ---------------------------------------------------------------------------------------------

/// An ISO 8601 duration `PnYnMnWnDTnHnMnS` with whole-number components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Duration {
    pub years: u32,
    pub months: u32,
    pub weeks: u32,
    pub days: u32,
    pub hours: u32,
    pub minutes: u32,
    pub seconds: u32,
}

const UNIT_NAMES: [(&str, &str); 7] = [
    ("year", "years"),
    ("month", "months"),
    ("week", "weeks"),
    ("day", "days"),
    ("hour", "hours"),
    ("minute", "minutes"),
    ("second", "seconds"),
];

impl Duration {
    /// Parses an ISO 8601 duration such as `P1M`, `P2W` or `P1Y2M10DT2H30M`.
    ///
    /// # Errors
    /// [`IntervalError::InvalidDuration`] for malformed, fractional or negative input,
    /// [`IntervalError::ZeroDuration`] when every component is zero.
    pub fn parse(s: &str) -> Result<Self> {
        s.parse()
    }

    /// True when every component is zero.
    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.components().iter().all(|&v| v == 0)
    }

    /// True when the duration has years or months, i.e. its length depends on the calendar.
    #[must_use]
    pub fn is_calendar(&self) -> bool {
        self.years != 0 || self.months != 0
    }

    /// `self` added to `t`, calendar-aware, in UTC (see the module docs for the order).
    ///
    /// # Errors
    /// [`IntervalError::OutOfRange`] when the result is outside years -9999 to 9999.
    pub fn add_to(&self, t: OffsetDateTime) -> Result<OffsetDateTime> {
        self.shift(t, 1)
    }

    /// `self` subtracted from `t`, calendar-aware, in UTC (months first, clamped, then days,
    /// then time, as luxon's `minus`).
    ///
    /// # Errors
    /// [`IntervalError::OutOfRange`] when the result is outside years -9999 to 9999.
    pub fn sub_from(&self, t: OffsetDateTime) -> Result<OffsetDateTime> {
        self.shift(t, -1)
    }

    /// Plain English, e.g. `1 month`, `2 weeks`, `1 year and 2 months`,
    /// `1 year, 2 months, 10 days, 2 hours and 30 minutes`.
    #[must_use]
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .components()
            .iter()
            .zip(UNIT_NAMES)
            .filter(|(v, _)| **v != 0)
            .map(|(&v, (one, many))| {
                if v == 1 {
                    format!("1 {one}")
                } else {
                    format!("{v} {many}")
                }
            })
            .collect();
        match parts.as_slice() {
            [] => "0 seconds".to_owned(),
            [only] => only.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        }
    }

    /// `per month`, `per 2 weeks`, … for single-unit durations; `None` when several units are
    /// combined (say "every 1 year and 2 months" with [`describe`](Self::describe) instead).
    #[must_use]
    pub fn describe_per(&self) -> Option<String> {
        self.single_unit().map(|(v, one, many)| {
            if v == 1 {
                format!("per {one}")
            } else {
                format!("per {v} {many}")
            }
        })
    }

    /// The phrase after "every": `month` for `P1M`, else [`describe`](Self::describe).
    fn every_phrase(&self) -> String {
        match self.single_unit() {
            Some((1, one, _)) => one.to_owned(),
            _ => self.describe(),
        }
    }

    fn single_unit(&self) -> Option<(u32, &'static str, &'static str)> {
        let mut found = None;
        for (&v, (one, many)) in self.components().iter().zip(UNIT_NAMES) {
            if v != 0 {
                if found.is_some() {
                    return None;
                }
                found = Some((v, one, many));
            }
        }
        found
    }

    fn components(&self) -> [u32; 7] {
        [
            self.years,
            self.months,
            self.weeks,
            self.days,
            self.hours,
            self.minutes,
            self.seconds,
        ]
    }

    fn total_months(&self) -> i64 {
        i64::from(self.years) * 12 + i64::from(self.months)
    }

    fn total_days(&self) -> i64 {
        i64::from(self.weeks) * 7 + i64::from(self.days)
    }

    fn clock_seconds(&self) -> i64 {
        i64::from(self.hours) * 3_600 + i64::from(self.minutes) * 60 + i64::from(self.seconds)
    }

    /// Days and time as exact seconds (UTC days are always 86 400 s).
    fn exact_seconds(&self) -> i64 {
        // Bounded by ~3.4e10 days * 86 400 + ~1.6e13 s: far below i64::MAX.
        self.total_days() * SECONDS_PER_DAY + self.clock_seconds()
    }

    fn period(&self) -> Period {
        if !self.is_calendar() {
            Period::Fixed(i128::from(self.exact_seconds()) * NANOS_PER_SECOND)
        } else if self.exact_seconds() == 0 {
            Period::Months(self.total_months())
        } else {
            Period::Calendar(*self)
        }
    }

    fn shift(&self, t: OffsetDateTime, sign: i64) -> Result<OffsetDateTime> {
        let t = to_utc(t)?;
        let date = add_months_clamped(t.date(), sign * self.total_months())?;
        let date = date
            .checked_add(time::Duration::seconds(sign * self.total_days() * SECONDS_PER_DAY))
            .ok_or(IntervalError::OutOfRange)?;
        PrimitiveDateTime::new(date, t.time())
            .assume_utc()
            .checked_add(time::Duration::seconds(sign * self.clock_seconds()))
            .ok_or(IntervalError::OutOfRange)
    }
}

impl FromStr for Duration {
    type Err = IntervalError;

    fn from_str(s: &str) -> Result<Self> {
        let err = |reason| IntervalError::InvalidDuration {
            input: s.to_owned(),
            reason,
        };
        if s.starts_with('-') {
            return Err(err("negative durations are not supported"));
        }
        let rest = s
            .strip_prefix('P')
            .ok_or_else(|| err("a duration starts with 'P', e.g. P1M or PT12H"))?;
        if rest.is_empty() {
            return Err(err("'P' must be followed by at least one component, e.g. P1D"));
        }
        let bytes = rest.as_bytes();
        let mut d = Duration::default();
        let mut in_time = false;
        let mut time_components = 0;
        let mut last_rank = 0;
        let mut i = 0;
        while let Some(&c) = bytes.get(i) {
            if c == b'T' {
                if in_time {
                    return Err(err("'T' may appear only once"));
                }
                in_time = true;
                i += 1;
                continue;
            }
            match c {
                b'-' => return Err(err("negative values are not supported")),
                b'+' => return Err(err("signs are not allowed")),
                b'.' | b',' => return Err(err("fractional values are not supported")),
                _ if !c.is_ascii_digit() => {
                    return Err(err(
                        "expected a number followed by Y, M, W or D (or H, M or S after 'T')",
                    ));
                }
                _ => {}
            }
            let start = i;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let digits = &rest[start..i];
            let designator = match bytes.get(i) {
                Some(b'.' | b',') => {
                    return Err(err(
                        "fractional values are not supported; use a smaller unit, e.g. PT36H instead of P1.5D",
                    ));
                }
                Some(&b) => b,
                None => {
                    return Err(err("a number must be followed by a unit (Y, M, W, D, H, M or S)"));
                }
            };
            i += 1;
            let (rank, slot) = match (in_time, designator) {
                (false, b'Y') => (1, &mut d.years),
                (false, b'M') => (2, &mut d.months),
                (false, b'W') => (3, &mut d.weeks),
                (false, b'D') => (4, &mut d.days),
                (true, b'H') => (5, &mut d.hours),
                (true, b'M') => (6, &mut d.minutes),
                (true, b'S') => (7, &mut d.seconds),
                (false, b'H' | b'S') => {
                    return Err(err("hours and seconds must come after 'T', e.g. PT12H"));
                }
                (true, b'Y' | b'W' | b'D') => {
                    return Err(err("years, weeks and days must come before 'T'"));
                }
                _ => return Err(err("unknown unit; use Y, M, W, D, or H, M, S after 'T'")),
            };
            if rank <= last_rank {
                return Err(err(
                    "each component may appear once, in the order Y, M, W, D, T, H, M, S",
                ));
            }
            last_rank = rank;
            *slot = digits
                .parse()
                .map_err(|_| err("number too large (at most 4294967295)"))?;
            if in_time {
                time_components += 1;
            }
        }
        if in_time && time_components == 0 {
            return Err(err("'T' must be followed by hours, minutes or seconds, e.g. PT12H"));
        }
        if d.is_zero() {
            return Err(IntervalError::ZeroDuration);
        }
        Ok(d)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("P")?;
        for (v, unit) in [
            (self.years, 'Y'),
            (self.months, 'M'),
            (self.weeks, 'W'),
            (self.days, 'D'),
        ] {
            if v != 0 {
                write!(f, "{v}{unit}")?;
            }
        }
        if self.hours != 0 || self.minutes != 0 || self.seconds != 0 {
            f.write_str("T")?;
            for (v, unit) in [(self.hours, 'H'), (self.minutes, 'M'), (self.seconds, 'S')] {
                if v != 0 {
                    write!(f, "{v}{unit}")?;
                }
            }
        } else if self.is_zero() {
            f.write_str("T0S")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Repeating interval
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Window search
// ---------------------------------------------------------------------------------------------

fn exceeds(k: u64, last: Option<u64>) -> bool {
    last.is_some_and(|last| k > last)
}

/// Fixed-length windows: the index is computed arithmetically.
fn fixed_window(
    anchor: OffsetDateTime,
    len: i128,
    direction: Direction,
    t: OffsetDateTime,
    last: Option<u64>,
) -> Result<Option<Window>> {
    if len <= 0 {
        return Err(IntervalError::ZeroDuration);
    }
    let len_duration = nanos_to_duration(len)?;
    match direction {
        Direction::Forward => {
            // t >= anchor here.
            let k = (t - anchor).whole_nanoseconds() / len;
            if exceeds(u64::try_from(k).map_err(|_| IntervalError::OutOfRange)?, last) {
                return Ok(None);
            }
            let start = checked_add(anchor, nanos_to_duration(k * len)?)?;
            Ok(Some((start, checked_add(start, len_duration)?)))
        }
        Direction::Backward => {
            // t < anchor here, so the distance is at least 1 ns.
            let k = ((anchor - t).whole_nanoseconds() - 1) / len;
            if exceeds(u64::try_from(k).map_err(|_| IntervalError::OutOfRange)?, last) {
                return Ok(None);
            }
            let end = checked_add(anchor, nanos_to_duration(-(k * len))?)?;
            Ok(Some((checked_add(end, -len_duration)?, end)))
        }
    }
}

/// Pure year/month periods in closed form. The chained boundary `k` (each step adds or
/// subtracts `n` months, clamping the day to the month's length) lies `k * n` months from the
/// anchor, on day `min(anchor day, lengths of every month visited in steps 1..=k)`, at the
/// anchor's time of day. Month lengths repeat every 4800 months, so at most 4800 visited
/// months need checking.
fn months_window(
    anchor: OffsetDateTime,
    n: i64,
    direction: Direction,
    t: OffsetDateTime,
    last: Option<u64>,
) -> Result<Option<Window>> {
    if n <= 0 {
        return Err(IntervalError::ZeroDuration);
    }
    let sign = match direction {
        Direction::Forward => 1,
        Direction::Backward => -1,
    };
    let boundary = |k: i64| month_boundary(anchor, sign * n, k);
    let m_anchor = month_index(anchor.date());
    let m_t = month_index(t.date());
    let (k, start, end) = match direction {
        Direction::Forward => {
            // Largest k with boundary(k) <= t; boundary(k) is in month m_anchor + k*n.
            let mut k = (m_t - m_anchor).div_euclid(n);
            let mut start = boundary(k)?;
            if start > t {
                k -= 1;
                if k < 0 {
                    return Ok(None);
                }
                start = boundary(k)?;
            }
            (k, start, None)
        }
        Direction::Backward => {
            // Smallest j >= 1 with boundary(j) <= t; window k = j - 1 is [boundary(j), boundary(j-1)).
            let mut j = ceil_div(m_anchor - m_t, n).max(1);
            let mut start = boundary(j)?;
            if start > t {
                j += 1;
                start = boundary(j)?;
            }
            (j - 1, start, Some(boundary(j - 1)?))
        }
    };
    if exceeds(u64::try_from(k).map_err(|_| IntervalError::OutOfRange)?, last) {
        return Ok(None);
    }
    let end = match end {
        Some(end) => end,
        None => boundary(k + 1)?,
    };
    Ok(Some((start, end)))
}

fn month_boundary(anchor: OffsetDateTime, step_months: i64, k: i64) -> Result<OffsetDateTime> {
    let overflow = || IntervalError::OutOfRange;
    let m0 = month_index(anchor.date());
    let mut day = anchor.day();
    let mut j = 1;
    while j <= k.min(GREGORIAN_CYCLE_MONTHS) && day > 28 {
        let m = step_months
            .checked_mul(j)
            .and_then(|s| m0.checked_add(s))
            .ok_or_else(overflow)?;
        day = day.min(days_in_month_index(m));
        j += 1;
    }
    let m = step_months
        .checked_mul(k)
        .and_then(|s| m0.checked_add(s))
        .ok_or_else(overflow)?;
    let date = date_from_month_index(m, day)?;
    Ok(PrimitiveDateTime::new(date, anchor.time()).assume_utc())
}

/// Months mixed with days/time: step window by window. Each step moves at least 28 days, so
/// this is at most ~12 steps per year between the anchor and `t`.
fn stepped_window(
    anchor: OffsetDateTime,
    d: &Duration,
    direction: Direction,
    t: OffsetDateTime,
    last: Option<u64>,
) -> Result<Option<Window>> {
    if d.is_zero() {
        return Err(IntervalError::ZeroDuration);
    }
    let mut k: u64 = 0;
    let mut bound = anchor;
    loop {
        if exceeds(k, last) {
            return Ok(None);
        }
        match direction {
            Direction::Forward => {
                let next = d.add_to(bound)?;
                if t < next {
                    return Ok(Some((bound, next)));
                }
                bound = next;
            }
            Direction::Backward => {
                let prev = d.sub_from(bound)?;
                if prev <= t {
                    return Ok(Some((prev, bound)));
                }
                bound = prev;
            }
        }
        k += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Date helpers
// ---------------------------------------------------------------------------------------------

fn non_zero(d: Duration) -> Result<Duration> {
    if d.is_zero() {
        Err(IntervalError::ZeroDuration)
    } else {
        Ok(d)
    }
}

fn to_utc(t: OffsetDateTime) -> Result<OffsetDateTime> {
    t.checked_to_offset(UtcOffset::UTC).ok_or(IntervalError::OutOfRange)
}

fn checked_add(t: OffsetDateTime, d: time::Duration) -> Result<OffsetDateTime> {
    t.checked_add(d).ok_or(IntervalError::OutOfRange)
}

fn nanos_to_duration(nanos: i128) -> Result<time::Duration> {
    let secs = i64::try_from(nanos.div_euclid(NANOS_PER_SECOND)).map_err(|_| IntervalError::OutOfRange)?;
    let sub = i64::try_from(nanos.rem_euclid(NANOS_PER_SECOND)).map_err(|_| IntervalError::OutOfRange)?;
    time::Duration::seconds(secs)
        .checked_add(time::Duration::nanoseconds(sub))
        .ok_or(IntervalError::OutOfRange)
}

fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 { q } else { q + 1 }
}

/// Months since year 0 (astronomical numbering), January = 0.
fn month_index(date: Date) -> i64 {
    i64::from(date.year()) * 12 + i64::from(u8::from(date.month())) - 1
}

fn is_leap_year(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

fn days_in_month_index(index: i64) -> u8 {
    match index.rem_euclid(12) + 1 {
        2 if is_leap_year(index.div_euclid(12)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The date in month `index` on `day`, clamped to the month's last day.
fn date_from_month_index(index: i64, day: u8) -> Result<Date> {
    let year = i32::try_from(index.div_euclid(12)).map_err(|_| IntervalError::OutOfRange)?;
    let month = u8::try_from(index.rem_euclid(12) + 1)
        .ok()
        .and_then(|m| Month::try_from(m).ok())
        .ok_or(IntervalError::OutOfRange)?;
    Date::from_calendar_date(year, month, day.min(days_in_month_index(index))).map_err(|_| IntervalError::OutOfRange)
}

fn add_months_clamped(date: Date, months: i64) -> Result<Date> {
    if months == 0 {
        return Ok(date);
    }
    let index = month_index(date).checked_add(months).ok_or(IntervalError::OutOfRange)?;
    date_from_month_index(index, date.day())
}

/// Converts to UTC and checks the year is printable in the canonical form.
fn checked_timestamp(t: OffsetDateTime) -> Result<OffsetDateTime> {
    let t = to_utc(t)?;
    if (MIN_YEAR..=MAX_YEAR).contains(&t.year()) {
        Ok(t)
    } else {
        Err(IntervalError::InvalidDateTime {
            input: Rfc3339(t).to_string(),
            reason: "must fall between years 0000 and 9999 in UTC",
        })
    }
}

/// A tiny byte cursor for the date-time grammar.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn eat(&mut self, c: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_any(&mut self, options: &[u8]) -> Option<u8> {
        let c = *self.bytes.get(self.pos)?;
        if options.contains(&c) {
            self.pos += 1;
            Some(c)
        } else {
            None
        }
    }

    /// Exactly `n` ASCII digits (`n` <= 9).
    fn digits(&mut self, n: usize) -> Option<u32> {
        let slice = self.bytes.get(self.pos..self.pos + n)?;
        if !slice.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.pos += n;
        Some(slice.iter().fold(0, |acc, b| acc * 10 + u32::from(b - b'0')))
    }

    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }
}

fn parse_date_time(s: &str) -> Result<OffsetDateTime> {
    const SHAPE: &str = "expected a date-time such as 2019-08-24T14:15:22Z (or a duration starting with 'P')";
    let err = |reason| IntervalError::InvalidDateTime {
        input: s.to_owned(),
        reason,
    };
    let mut c = Cursor {
        bytes: s.as_bytes(),
        pos: 0,
    };
    let (Some(year), true, Some(month), true, Some(day)) =
        (c.digits(4), c.eat(b'-'), c.digits(2), c.eat(b'-'), c.digits(2))
    else {
        return Err(err(SHAPE));
    };
    let month = u8::try_from(month)
        .ok()
        .and_then(|m| Month::try_from(m).ok())
        .ok_or_else(|| err("month must be 01 to 12"))?;
    let year = i32::try_from(year).map_err(|_| err(SHAPE))?;
    let day = u8::try_from(day).map_err(|_| err(SHAPE))?;
    let date = Date::from_calendar_date(year, month, day).map_err(|_| err("that day does not exist in that month"))?;
    if c.done() {
        return Ok(PrimitiveDateTime::new(date, Time::MIDNIGHT).assume_utc());
    }
    if c.eat_any(b"Tt").is_none() {
        return Err(err("expected 'T' between the date and the time"));
    }
    let (Some(hour), true, Some(minute)) = (c.digits(2), c.eat(b':'), c.digits(2)) else {
        return Err(err("expected the time as hh:mm or hh:mm:ss"));
    };
    let mut second = 0;
    let mut nanos = 0;
    if c.eat(b':') {
        second = c.digits(2).ok_or_else(|| err("expected two digits of seconds"))?;
        if c.eat(b'.') {
            let mut count = 0;
            while let Some(d) = c.digits(1) {
                count += 1;
                if count > 9 {
                    return Err(err("at most 9 fractional digits of seconds are supported"));
                }
                nanos = nanos * 10 + d;
            }
            if count == 0 {
                return Err(err("expected digits after the decimal point"));
            }
            nanos *= 10u32.pow(9 - count);
        }
    }
    let offset = match c.eat_any(b"Zz+-") {
        None | Some(b'Z' | b'z') => UtcOffset::UTC,
        Some(sign) => {
            let hours = c.digits(2).ok_or_else(|| err("expected an offset such as +02:00"))?;
            let colon = c.eat(b':');
            let minutes = match c.digits(2) {
                Some(m) => m,
                None if colon => return Err(err("expected an offset such as +02:00")),
                None => 0,
            };
            if hours > 23 || minutes > 59 {
                return Err(err("the offset must be between -23:59 and +23:59"));
            }
            let sign: i8 = if sign == b'-' { -1 } else { 1 };
            let hours = i8::try_from(hours).map_err(|_| err(SHAPE))?;
            let minutes = i8::try_from(minutes).map_err(|_| err(SHAPE))?;
            UtcOffset::from_hms(sign * hours, sign * minutes, 0)
                .map_err(|_| err("the offset must be between -23:59 and +23:59"))?
        }
    };
    if !c.done() {
        return Err(err("unexpected characters after the time"));
    }
    let time = u8::try_from(hour)
        .ok()
        .zip(u8::try_from(minute).ok())
        .zip(u8::try_from(second).ok())
        .and_then(|((h, m), s)| Time::from_hms_nano(h, m, s, nanos).ok())
        .ok_or_else(|| err("hours must be 00-23 and minutes and seconds 00-59"))?;
    let utc = PrimitiveDateTime::new(date, time)
        .assume_offset(offset)
        .checked_to_offset(UtcOffset::UTC)
        .ok_or_else(|| err("must fall between years 0000 and 9999 in UTC"))?;
    if !(MIN_YEAR..=MAX_YEAR).contains(&utc.year()) {
        return Err(err("must fall between years 0000 and 9999 in UTC"));
    }
    Ok(utc)
}

/// RFC 3339 in UTC: `2019-08-24T14:15:22Z`, with a fraction only when non-zero.
struct Rfc3339(OffsetDateTime);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )?;
        if t.nanosecond() != 0 {
            let frac = format!("{:09}", t.nanosecond());
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

/// `2019-08-24 14:15 UTC`, for people.
struct HumanTime(OffsetDateTime);

impl fmt::Display for HumanTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute()
        )
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
