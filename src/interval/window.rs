//! Finding the window of a repeating interval that holds a moment: arithmetically for fixed lengths, in
//! closed form for whole months and years, by bounded stepping for mixed durations.

use super::*;

pub(super) fn exceeds(k: u64, last: Option<u64>) -> bool {
    last.is_some_and(|last| k > last)
}

/// Fixed-length windows: the index is computed arithmetically.
pub(super) fn fixed_window(
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
pub(super) fn months_window(
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

pub(super) fn month_boundary(anchor: OffsetDateTime, step_months: i64, k: i64) -> Result<OffsetDateTime> {
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
pub(super) fn stepped_window(
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
