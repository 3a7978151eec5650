//! ISO 8601 durations (`PnYnMnWnDTnHnMnS`): parsing, printing, and adding them to a moment the way
//! luxon (and so Rafiki) does.

use super::*;

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
    pub(super) fn every_phrase(&self) -> String {
        match self.single_unit() {
            Some((1, one, _)) => one.to_owned(),
            _ => self.describe(),
        }
    }

    pub(super) fn single_unit(&self) -> Option<(u32, &'static str, &'static str)> {
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

    pub(super) fn components(&self) -> [u32; 7] {
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

    pub(super) fn total_months(&self) -> i64 {
        i64::from(self.years) * 12 + i64::from(self.months)
    }

    pub(super) fn total_days(&self) -> i64 {
        i64::from(self.weeks) * 7 + i64::from(self.days)
    }

    pub(super) fn clock_seconds(&self) -> i64 {
        i64::from(self.hours) * 3_600 + i64::from(self.minutes) * 60 + i64::from(self.seconds)
    }

    /// Days and time as exact seconds (UTC days are always 86 400 s).
    pub(super) fn exact_seconds(&self) -> i64 {
        // Bounded by ~3.4e10 days * 86 400 + ~1.6e13 s: far below i64::MAX.
        self.total_days() * SECONDS_PER_DAY + self.clock_seconds()
    }

    pub(super) fn period(&self) -> Period {
        if !self.is_calendar() {
            Period::Fixed(i128::from(self.exact_seconds()) * NANOS_PER_SECOND)
        } else if self.exact_seconds() == 0 {
            Period::Months(self.total_months())
        } else {
            Period::Calendar(*self)
        }
    }

    pub(super) fn shift(&self, t: OffsetDateTime, sign: i64) -> Result<OffsetDateTime> {
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
