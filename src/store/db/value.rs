//! The values that cross [`super`]'s interface: what a statement binds ([`Value`], [`ToSql`], [`Params`]) and
//! what a row gives back ([`ValueRef`], [`FromSql`]), as SQLite's storage classes whatever the backend.

use std::borrow::Cow;

use super::{Error, Result};

/// A value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(Cow<'a, str>),
    Blob(Cow<'a, [u8]>),
}

/// A value read from a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl ValueRef<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Integer(_) => "integer",
            Self::Real(_) => "real",
            Self::Text(_) => "text",
            Self::Blob(_) => "blob",
        }
    }

    /// The text of a text value.
    pub fn as_str(&self) -> Result<&str, String> {
        match self {
            Self::Text(s) => Ok(s),
            other => Err(format!("expected text, found {}", other.kind())),
        }
    }

    /// The integer of an integer value.
    pub fn as_i64(&self) -> Result<i64, String> {
        match self {
            Self::Integer(i) => Ok(*i),
            other => Err(format!("expected an integer, found {}", other.kind())),
        }
    }
}

/// A Rust value that binds as a statement parameter.
pub trait ToSql {
    fn to_sql(&self) -> Result<Value<'_>, String>;
}

/// A Rust value read from a column.
pub trait FromSql: Sized {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String>;
}

impl<T: ToSql + ?Sized> ToSql for &T {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        (**self).to_sql()
    }
}

impl<T: ToSql> ToSql for Option<T> {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        match self {
            Some(v) => v.to_sql(),
            None => Ok(Value::Null),
        }
    }
}

impl ToSql for str {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Text(Cow::Borrowed(self)))
    }
}

impl ToSql for String {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Text(Cow::Borrowed(self)))
    }
}

impl ToSql for [u8] {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Blob(Cow::Borrowed(self)))
    }
}

impl ToSql for Vec<u8> {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Blob(Cow::Borrowed(self)))
    }
}

impl<const N: usize> ToSql for [u8; N] {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Blob(Cow::Borrowed(self)))
    }
}

impl ToSql for bool {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Integer(i64::from(*self)))
    }
}

impl ToSql for f64 {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Real(*self))
    }
}

impl ToSql for Value<'_> {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(self.clone())
    }
}

macro_rules! integer_to_sql {
    ($($t:ty),+) => {$(
        impl ToSql for $t {
            fn to_sql(&self) -> Result<Value<'_>, String> {
                i64::try_from(*self).map(Value::Integer).map_err(|_| format!("{} does not fit a 64-bit integer", self))
            }
        }

        impl FromSql for $t {
            fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
                let i = v.as_i64()?;
                <$t>::try_from(i).map_err(|_| format!("{i} is out of range for {}", stringify!($t)))
            }
        }
    )+};
}

integer_to_sql!(i8, i16, i32, i64, u8, u16, u32, u64, usize, isize);

impl<T: FromSql> FromSql for Option<T> {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
        match v {
            ValueRef::Null => Ok(None),
            v => T::from_sql(v).map(Some),
        }
    }
}

impl FromSql for String {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
        v.as_str().map(str::to_owned)
    }
}

impl FromSql for Vec<u8> {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
        match v {
            ValueRef::Blob(b) => Ok(b.to_vec()),
            other => Err(format!("expected a blob, found {}", other.kind())),
        }
    }
}

impl FromSql for bool {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
        Ok(v.as_i64()? != 0)
    }
}

impl FromSql for f64 {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
        match v {
            ValueRef::Real(f) => Ok(f),
            #[allow(clippy::cast_precision_loss)]
            ValueRef::Integer(i) => Ok(i as f64),
            other => Err(format!("expected a number, found {}", other.kind())),
        }
    }
}

/// A timestamp binds as the one stored text ([`crate::clock::format_ts`]: fixed width, so its text sorts in time
/// order) on every backend.
impl ToSql for time::OffsetDateTime {
    fn to_sql(&self) -> Result<Value<'_>, String> {
        Ok(Value::Text(Cow::Owned(crate::clock::format_ts(*self))))
    }
}

impl FromSql for time::OffsetDateTime {
    fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
        let s = v.as_str()?;
        crate::clock::parse_ts(s).map_err(|e| format!("timestamp {s:?}: {e}"))
    }
}

/// The ids of the main resources bind and read as their text.
macro_rules! id_sql {
    ($($t:ty),+) => {$(
        impl ToSql for $t {
            fn to_sql(&self) -> Result<Value<'_>, String> {
                Ok(Value::Text(Cow::Borrowed(self.as_str())))
            }
        }

        impl FromSql for $t {
            fn from_sql(v: ValueRef<'_>) -> Result<Self, String> {
                v.as_str().map(Self::from)
            }
        }
    )+};
}

id_sql!(
    crate::ids::WalletId,
    crate::ids::GrantId,
    crate::ids::IncomingPaymentId,
    crate::ids::OutgoingPaymentId,
    crate::ids::QuoteId
);

/// A statement's parameters: `params![a, b]`, `[a, b]`, `()` or a slice of `&dyn ToSql`.
pub trait Params {
    fn values(&self) -> Result<Vec<Value<'_>>>;
}

fn bind_all<'a>(ps: impl Iterator<Item = &'a dyn ToSql>) -> Result<Vec<Value<'a>>> {
    ps.enumerate()
        .map(|(i, p)| {
            p.to_sql()
                .map_err(|m| Error::convert(i, format!("parameter {}: {m}", i + 1)))
        })
        .collect()
}

impl Params for () {
    fn values(&self) -> Result<Vec<Value<'_>>> {
        Ok(Vec::new())
    }
}

impl Params for &[&dyn ToSql] {
    fn values(&self) -> Result<Vec<Value<'_>>> {
        bind_all(self.iter().copied())
    }
}

impl Params for Vec<&dyn ToSql> {
    fn values(&self) -> Result<Vec<Value<'_>>> {
        bind_all(self.iter().copied())
    }
}

impl Params for [&dyn ToSql; 0] {
    fn values(&self) -> Result<Vec<Value<'_>>> {
        Ok(Vec::new())
    }
}

macro_rules! array_params {
    ($($n:literal),+) => {$(
        impl<T: ToSql> Params for [T; $n] {
            fn values(&self) -> Result<Vec<Value<'_>>> {
                bind_all(self.iter().map(|t| t as &dyn ToSql))
            }
        }

        impl<T: ToSql> Params for &[T; $n] {
            fn values(&self) -> Result<Vec<Value<'_>>> {
                bind_all(self.iter().map(|t| t as &dyn ToSql))
            }
        }
    )+};
}

array_params!(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);

#[cfg(test)]
mod tests {
    use super::super::{Connection, params};
    use crate::ids::QuoteId;

    /// A timestamp is stored as its fixed-width text (so text order is time order) and reads back equal; an id
    /// as its text.
    #[test]
    fn timestamps_and_ids_cross_as_their_text() {
        let c = Connection::open_in_memory().unwrap();
        let t = crate::clock::ts("2026-11-21T10:00:00.5+01:00");
        let id = QuoteId::from("q-1");
        let (text, back, same, id_text): (String, time::OffsetDateTime, QuoteId, String) = c
            .query_row("SELECT ?1, ?1, ?2, ?2", params![t, id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        assert_eq!(text, "2026-11-21T09:00:00.500Z");
        assert_eq!((back, same, id_text.as_str()), (t, id, "q-1"));
        assert!(
            c.query_row("SELECT ?1", params!["not a time"], |r| r
                .get::<_, time::OffsetDateTime>(0))
                .is_err()
        );
    }
}
