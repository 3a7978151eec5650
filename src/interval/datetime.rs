//! Checked calendar arithmetic (month indices, clamping to the month's end) and the date-time grammar
//! intervals accept, with the two ways moments are printed (RFC 3339, and for people).

use super::*;

pub(super) fn non_zero(d: Duration) -> Result<Duration> {
    if d.is_zero() {
        Err(IntervalError::ZeroDuration)
    } else {
        Ok(d)
    }
}

pub(super) fn to_utc(t: OffsetDateTime) -> Result<OffsetDateTime> {
    t.checked_to_offset(UtcOffset::UTC).ok_or(IntervalError::OutOfRange)
}

pub(super) fn checked_add(t: OffsetDateTime, d: time::Duration) -> Result<OffsetDateTime> {
    t.checked_add(d).ok_or(IntervalError::OutOfRange)
}

pub(super) fn nanos_to_duration(nanos: i128) -> Result<time::Duration> {
    let secs = i64::try_from(nanos.div_euclid(NANOS_PER_SECOND)).map_err(|_| IntervalError::OutOfRange)?;
    let sub = i64::try_from(nanos.rem_euclid(NANOS_PER_SECOND)).map_err(|_| IntervalError::OutOfRange)?;
    time::Duration::seconds(secs)
        .checked_add(time::Duration::nanoseconds(sub))
        .ok_or(IntervalError::OutOfRange)
}

pub(super) fn ceil_div(a: i64, b: i64) -> i64 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 { q } else { q + 1 }
}

/// Months since year 0 (astronomical numbering), January = 0.
pub(super) fn month_index(date: Date) -> i64 {
    i64::from(date.year()) * 12 + i64::from(u8::from(date.month())) - 1
}

pub(super) fn is_leap_year(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

pub(super) fn days_in_month_index(index: i64) -> u8 {
    match index.rem_euclid(12) + 1 {
        2 if is_leap_year(index.div_euclid(12)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The date in month `index` on `day`, clamped to the month's last day.
pub(super) fn date_from_month_index(index: i64, day: u8) -> Result<Date> {
    let year = i32::try_from(index.div_euclid(12)).map_err(|_| IntervalError::OutOfRange)?;
    let month = u8::try_from(index.rem_euclid(12) + 1)
        .ok()
        .and_then(|m| Month::try_from(m).ok())
        .ok_or(IntervalError::OutOfRange)?;
    Date::from_calendar_date(year, month, day.min(days_in_month_index(index))).map_err(|_| IntervalError::OutOfRange)
}

pub(super) fn add_months_clamped(date: Date, months: i64) -> Result<Date> {
    if months == 0 {
        return Ok(date);
    }
    let index = month_index(date).checked_add(months).ok_or(IntervalError::OutOfRange)?;
    date_from_month_index(index, date.day())
}

/// Converts to UTC and checks the year is printable in the canonical form.
pub(super) fn checked_timestamp(t: OffsetDateTime) -> Result<OffsetDateTime> {
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
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    pub(super) fn eat(&mut self, c: u8) -> bool {
        if self.bytes.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn eat_any(&mut self, options: &[u8]) -> Option<u8> {
        let c = *self.bytes.get(self.pos)?;
        if options.contains(&c) {
            self.pos += 1;
            Some(c)
        } else {
            None
        }
    }

    /// Exactly `n` ASCII digits (`n` <= 9).
    pub(super) fn digits(&mut self, n: usize) -> Option<u32> {
        let slice = self.bytes.get(self.pos..self.pos + n)?;
        if !slice.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.pos += n;
        Some(slice.iter().fold(0, |acc, b| acc * 10 + u32::from(b - b'0')))
    }

    pub(super) fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }
}

pub(super) fn parse_date_time(s: &str) -> Result<OffsetDateTime> {
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
pub(super) struct Rfc3339(pub(super) OffsetDateTime);

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
pub(super) struct HumanTime(pub(super) OffsetDateTime);

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
