//! The SQL interface every repo function speaks, over either backend: a connection shaped like rusqlite's
//! (`prepare_cached`, `query_row`, `params!`, `optional()`) that runs the same statements on SQLite or on
//! PostgreSQL.
//!
//! Values cross it as SQLite's storage classes — integer (`i64`), real, text, blob, null — whatever the
//! backend: the PostgreSQL schema (`migrations/pg/`) stores every integer and flag as `BIGINT`, text as `TEXT`
//! and blobs as `BYTEA`, so a value reads back as what was bound. The statements are written once, with
//! SQLite's `?N` placeholders; on PostgreSQL they are rewritten to `$N` on first use and the prepared
//! statement is cached per connection. One dialect rule is applied there too: `LIKE` becomes `ILIKE` (SQLite's
//! `LIKE` ignores ASCII case). Every other statement must mean the same on both, which the test suite checks
//! by running on both; in particular a parameter PostgreSQL cannot type from where it stands (`?1 IS NULL`
//! alone) says its type (`CAST(?1 AS TEXT) IS NULL`), and an upsert names the column it adds to
//! (`SET n = t.n + excluded.n`).

use std::{
    borrow::Cow,
    cell::{Cell, RefCell},
    collections::HashMap,
    fmt,
};

use postgres::types::{FromSql as PgFromSql, IsNull, ToSql as PgToSql, Type};

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A statement that failed, on either backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", pg_message(.0))]
    Pg(#[from] postgres::Error),
    /// `query_row` found no row (see [`OptionalExtension::optional`]).
    #[error("query returned no rows")]
    NoRows,
    /// A column's value does not convert to the type asked for, or a parameter does not bind.
    #[error("column {column}: {message}")]
    Convert { column: usize, message: String },
}

/// PostgreSQL's errors print as "db error" alone; the server's message and code say what happened.
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("postgres: {} ({})", db.message(), db.code().code()),
        None => format!("postgres: {e}"),
    }
}

impl Error {
    /// The database or the disk is full: retryable once there is room.
    pub fn is_full(&self) -> bool {
        match self {
            Self::Sqlite(e) => e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
            // class 53: disk full, out of memory, too many connections; or the server went away
            Self::Pg(e) => e.is_closed() || e.code().is_some_and(|c| c.code().starts_with("53")),
            Self::NoRows | Self::Convert { .. } => false,
        }
    }

    /// The transaction lost a race with a concurrent one (PostgreSQL's serialization failure or deadlock):
    /// it was rolled back and running it again is correct.
    pub fn is_conflict(&self) -> bool {
        match self {
            Self::Pg(e) => e.code().is_some_and(|c| {
                *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
                    || *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
            }),
            Self::Sqlite(_) | Self::NoRows | Self::Convert { .. } => false,
        }
    }

    /// A value of `column` that does not convert.
    pub fn convert(column: usize, message: impl fmt::Display) -> Self {
        Self::Convert {
            column,
            message: message.to_string(),
        }
    }
}

/// `query_row`'s "no row" as `None`.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

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

/// Parameters of mixed types, as a slice of `&dyn ToSql`.
#[macro_export]
macro_rules! sql_params {
    () => {
        &[] as &[&dyn $crate::store::db::ToSql]
    };
    ($($p:expr),+ $(,)?) => {
        &[$(&$p as &dyn $crate::store::db::ToSql),+] as &[&dyn $crate::store::db::ToSql]
    };
}

pub use sql_params as params;

/// A column index (rusqlite's shape: `row.get(0)`, `row.get::<_, String>(1)`).
pub trait RowIndex: Copy {
    fn index(self) -> usize;
}

impl RowIndex for usize {
    fn index(self) -> usize {
        self
    }
}

/// One row of a result.
#[derive(Clone, Copy)]
pub enum Row<'a> {
    Sqlite(&'a rusqlite::Row<'a>),
    Pg(&'a postgres::Row),
}

impl Row<'_> {
    /// Column `idx` as `T`.
    pub fn get<I: RowIndex, T: FromSql>(&self, idx: I) -> Result<T> {
        let i = idx.index();
        let v = self.get_ref(i)?;
        T::from_sql(v).map_err(|m| Error::convert(i, m))
    }

    /// Column `idx` as it is stored.
    pub fn get_ref(&self, i: usize) -> Result<ValueRef<'_>> {
        match self {
            Self::Sqlite(r) => Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Null => ValueRef::Null,
                rusqlite::types::ValueRef::Integer(n) => ValueRef::Integer(n),
                rusqlite::types::ValueRef::Real(f) => ValueRef::Real(f),
                rusqlite::types::ValueRef::Text(t) => {
                    ValueRef::Text(std::str::from_utf8(t).map_err(|e| Error::convert(i, e))?)
                }
                rusqlite::types::ValueRef::Blob(b) => ValueRef::Blob(b),
            }),
            Self::Pg(r) => pg_value(r, i),
        }
    }
}

/// Reads PostgreSQL column `i` as the storage class it maps to.
fn pg_value(r: &postgres::Row, i: usize) -> Result<ValueRef<'_>> {
    let col = r.columns().get(i).ok_or_else(|| Error::convert(i, "no such column"))?;
    let ty = col.type_().clone();
    let int = |v: Option<i64>| v.map_or(ValueRef::Null, ValueRef::Integer);
    Ok(match ty {
        Type::INT8 => int(r.try_get::<_, Option<i64>>(i)?),
        Type::INT4 => int(r.try_get::<_, Option<i32>>(i)?.map(i64::from)),
        Type::INT2 => int(r.try_get::<_, Option<i16>>(i)?.map(i64::from)),
        Type::BOOL => int(r.try_get::<_, Option<bool>>(i)?.map(i64::from)),
        Type::FLOAT8 => r.try_get::<_, Option<f64>>(i)?.map_or(ValueRef::Null, ValueRef::Real),
        Type::FLOAT4 => r
            .try_get::<_, Option<f32>>(i)?
            .map_or(ValueRef::Null, |f| ValueRef::Real(f64::from(f))),
        Type::NUMERIC => match r.try_get::<_, Option<Numeric>>(i)? {
            None => ValueRef::Null,
            Some(Numeric::Integer(n)) => ValueRef::Integer(n),
            Some(Numeric::Real(f)) => ValueRef::Real(f),
        },
        Type::BYTEA => r.try_get::<_, Option<&[u8]>>(i)?.map_or(ValueRef::Null, ValueRef::Blob),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            r.try_get::<_, Option<&str>>(i)?.map_or(ValueRef::Null, ValueRef::Text)
        }
        other => return Err(Error::convert(i, format!("unsupported PostgreSQL type {other}"))),
    })
}

/// A PostgreSQL `numeric` (what `SUM` of a `BIGINT` gives): an integer when it has no fraction and fits.
enum Numeric {
    Integer(i64),
    Real(f64),
}

impl<'a> PgFromSql<'a> for Numeric {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        // binary numeric: ndigits, weight, sign, dscale (each 16 bits), then base-10000 digits
        let word = |at: usize| -> Result<u16, Box<dyn std::error::Error + Sync + Send>> {
            let b = raw.get(at..at + 2).ok_or("a short numeric")?;
            Ok(u16::from_be_bytes([b[0], b[1]]))
        };
        let ndigits = usize::from(word(0)?);
        let weight = i32::from(word(2)? as i16);
        let sign = word(4)?;
        if sign == 0xC000 {
            return Ok(Self::Real(f64::NAN));
        }
        let mut int: i128 = 0;
        let mut real = 0f64;
        let mut fraction = false;
        for d in 0..ndigits {
            let digit = word(8 + 2 * d)?;
            let power = weight - i32::try_from(d)?;
            real += f64::from(digit) * 10_000f64.powi(power);
            if power < 0 {
                fraction |= digit != 0;
            } else {
                let scale = 10_000i128
                    .checked_pow(u32::try_from(power)?)
                    .ok_or("numeric overflow")?;
                int = int
                    .checked_add(i128::from(digit).checked_mul(scale).ok_or("numeric overflow")?)
                    .ok_or("numeric overflow")?;
            }
        }
        let negative = sign == 0x4000;
        if !fraction && let Ok(n) = i64::try_from(if negative { -int } else { int }) {
            return Ok(Self::Integer(n));
        }
        Ok(Self::Real(if negative { -real } else { real }))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// A bound value, as PostgreSQL takes it for the parameter type the server inferred.
#[derive(Debug)]
struct PgParam<'a>(&'a Value<'a>);

impl PgToSql for PgParam<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self.0, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Integer(n), &Type::INT8) => PgToSql::to_sql(n, ty, out),
            (Value::Integer(n), &Type::INT4) => PgToSql::to_sql(&i32::try_from(*n)?, ty, out),
            (Value::Integer(n), &Type::INT2) => PgToSql::to_sql(&i16::try_from(*n)?, ty, out),
            (Value::Integer(n), &Type::BOOL) => PgToSql::to_sql(&(*n != 0), ty, out),
            #[allow(clippy::cast_precision_loss)]
            (Value::Integer(n), &Type::FLOAT8) => PgToSql::to_sql(&(*n as f64), ty, out),
            (Value::Integer(n), &Type::NUMERIC) => Ok(numeric(*n, out)),
            (Value::Integer(n), &Type::TEXT | &Type::VARCHAR | &Type::UNKNOWN) => {
                PgToSql::to_sql(&n.to_string().as_str(), &Type::TEXT, out)
            }
            (Value::Real(f), &Type::FLOAT8) => PgToSql::to_sql(f, ty, out),
            #[allow(clippy::cast_possible_truncation)]
            (Value::Real(f), &Type::FLOAT4) => PgToSql::to_sql(&(*f as f32), ty, out),
            (Value::Text(s), &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME | &Type::UNKNOWN) => {
                PgToSql::to_sql(&s.as_ref(), &Type::TEXT, out)
            }
            (Value::Blob(b), &Type::BYTEA) => PgToSql::to_sql(&b.as_ref(), ty, out),
            (v, ty) => Err(format!("cannot bind {v:?} to a parameter of type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// Writes `n` as a binary `numeric` (for a parameter PostgreSQL typed as one, e.g. `SUM(x) > ?1`).
fn numeric(n: i64, out: &mut bytes::BytesMut) -> IsNull {
    use bytes::BufMut;
    let negative = n < 0;
    let mut rest = n.unsigned_abs();
    let mut digits = Vec::new();
    while rest > 0 {
        digits.push(u16::try_from(rest % 10_000).unwrap_or(0));
        rest /= 10_000;
    }
    digits.reverse();
    let count = u16::try_from(digits.len()).unwrap_or(0);
    out.put_u16(count);
    out.put_i16(i16::try_from(digits.len()).unwrap_or(1) - 1);
    out.put_u16(if negative { 0x4000 } else { 0 });
    out.put_u16(0);
    for d in digits {
        out.put_u16(d);
    }
    IsNull::No
}

/// Rewrites SQLite's placeholders (`?N`, bare `?`) as PostgreSQL's (`$N`) and `LIKE` as `ILIKE`, outside
/// quoted text.
pub fn to_postgres(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 0u32;
    let mut chars = sql.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((at, c)) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(&(_, d)) = chars.peek() {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    digits.push(d);
                    chars.next();
                }
                out.push('$');
                if digits.is_empty() {
                    next += 1;
                    out.push_str(&next.to_string());
                } else {
                    if let Ok(n) = digits.parse::<u32>() {
                        next = next.max(n);
                    }
                    out.push_str(&digits);
                }
            }
            'L' | 'l'
                if sql[at..].len() >= 4
                    && sql[at..at + 4].eq_ignore_ascii_case("like")
                    && !sql[..at].ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_')
                    && !sql[at + 4..].starts_with(|p: char| p.is_ascii_alphanumeric() || p == '_') =>
            {
                out.push_str("ILIKE");
                chars.next();
                chars.next();
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// A PostgreSQL connection that only listens: it waits for the notifications of the channels it listens on.
pub struct Listener(postgres::Client);

impl Listener {
    /// Connects to `url` and listens on `channels` (names PostgreSQL takes as identifiers).
    pub fn connect(url: &str, channels: &[&str]) -> Result<Self> {
        let mut client = postgres::Client::connect(url, postgres::NoTls)?;
        for c in channels {
            client.batch_execute(&format!("LISTEN {c}"))?;
        }
        Ok(Self(client))
    }

    /// The channels notified within `timeout` (none when it passed), each once, gathered from the
    /// notifications that arrived together.
    pub fn wait(&mut self, timeout: std::time::Duration) -> Result<Vec<String>> {
        use postgres::fallible_iterator::FallibleIterator as _;
        let mut out: Vec<String> = Vec::new();
        let mut got = self.0.notifications();
        let mut iter = got.timeout_iter(timeout);
        while let Some(n) = iter.next()? {
            if !out.iter().any(|c| c == n.channel()) {
                out.push(n.channel().to_owned());
            }
            // take what else has arrived already, without waiting again
            if iter.size_hint().0 == 0 {
                break;
            }
        }
        Ok(out)
    }

    /// Whether the connection is gone ([`Listener::wait`] then returns at once, with nothing).
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// A PostgreSQL connection with its statement cache and the state of its transaction.
pub struct Pg {
    client: RefCell<postgres::Client>,
    cache: RefCell<HashMap<String, postgres::Statement>>,
    /// A transaction is open.
    in_tx: Cell<bool>,
    /// A statement of the current job lost a serialization race: the job must run again.
    conflicted: Cell<bool>,
}

impl Pg {
    /// The prepared statement for `sql`, from the cache or prepared now. PostgreSQL infers each parameter's
    /// type from where it stands; where it cannot (`?5 IS NOT NULL` alone), the statement is prepared with
    /// the types of the values bound this first time (a null as text).
    fn statement(&self, sql: &str, values: &[Value<'_>]) -> Result<postgres::Statement> {
        if let Some(s) = self.cache.borrow().get(sql) {
            return Ok(s.clone());
        }
        let text = to_postgres(sql);
        // a statement PostgreSQL refuses to prepare aborts the transaction it is in: try it in a savepoint
        let guarded = self.in_tx.get();
        if guarded {
            self.batch("SAVEPOINT opdesk_prepare")?;
        }
        let prepared = self.client.borrow_mut().prepare(&text);
        if guarded {
            self.batch(if prepared.is_ok() {
                "RELEASE opdesk_prepare"
            } else {
                "ROLLBACK TO opdesk_prepare; RELEASE opdesk_prepare"
            })?;
        }
        let stmt = match prepared {
            Err(e)
                if e.code().is_some_and(|c| {
                    *c == postgres::error::SqlState::INDETERMINATE_DATATYPE
                        || *c == postgres::error::SqlState::AMBIGUOUS_PARAMETER
                }) =>
            {
                tracing::debug!(
                    sql,
                    "PostgreSQL cannot type a parameter here: typed by the values bound"
                );
                let types: Vec<Type> = values
                    .iter()
                    .map(|v| match v {
                        Value::Integer(_) => Type::INT8,
                        Value::Real(_) => Type::FLOAT8,
                        Value::Blob(_) => Type::BYTEA,
                        Value::Null | Value::Text(_) => Type::TEXT,
                    })
                    .collect();
                self.note(self.client.borrow_mut().prepare_typed(&text, &types))?
            }
            other => self.note(other)?,
        };
        self.cache.borrow_mut().insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }

    /// Records a serialization failure of the running job.
    fn note<T>(&self, r: Result<T, postgres::Error>) -> Result<T> {
        r.map_err(|e| {
            let e = Error::Pg(e);
            if e.is_conflict() {
                self.conflicted.set(true);
            }
            e
        })
    }

    fn query(&self, sql: &str, values: &[Value<'_>]) -> Result<Vec<postgres::Row>> {
        let stmt = self.statement(sql, values)?;
        let binds: Vec<PgParam<'_>> = values.iter().map(PgParam).collect();
        let refs: Vec<&(dyn PgToSql + Sync)> = binds.iter().map(|b| b as &(dyn PgToSql + Sync)).collect();
        self.note(self.client.borrow_mut().query(&stmt, &refs))
    }

    fn execute(&self, sql: &str, values: &[Value<'_>]) -> Result<usize> {
        let stmt = self.statement(sql, values)?;
        let binds: Vec<PgParam<'_>> = values.iter().map(PgParam).collect();
        let refs: Vec<&(dyn PgToSql + Sync)> = binds.iter().map(|b| b as &(dyn PgToSql + Sync)).collect();
        let n = self.note(self.client.borrow_mut().execute(&stmt, &refs))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn batch(&self, sql: &str) -> Result<()> {
        self.note(self.client.borrow_mut().batch_execute(sql))
    }
}

enum Backend {
    Sqlite(rusqlite::Connection),
    Pg(Box<Pg>),
}

/// A connection to the store's database: SQLite or PostgreSQL.
pub struct Connection {
    backend: Backend,
    /// Savepoints open, for their names.
    depth: Cell<u32>,
}

/// Statements kept prepared per SQLite connection. rusqlite keeps 16 by default, fewer than the store runs:
/// each evicted statement was parsed and planned again on its next use.
const STATEMENT_CACHE: usize = 512;

impl From<rusqlite::Connection> for Connection {
    fn from(c: rusqlite::Connection) -> Self {
        c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // One plan per statement whatever its parameters. Without it a statement whose parameter is a LIKE
        // pattern (the lists' search, `?6 IS NULL OR … LIKE ?6`) is parsed and planned again on every run,
        // since binding that parameter expires the plan.
        if let Err(e) = c.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true) {
            tracing::warn!(error = %e, "SQLite: cannot keep query plans stable");
        }
        Self {
            backend: Backend::Sqlite(c),
            depth: Cell::new(0),
        }
    }
}

impl Connection {
    /// Connects to PostgreSQL at `url` (`postgres://…`).
    pub fn connect_postgres(url: &str) -> Result<Self> {
        let client = postgres::Client::connect(url, postgres::NoTls)?;
        Ok(Self {
            backend: Backend::Pg(Box::new(Pg {
                client: RefCell::new(client),
                cache: RefCell::new(HashMap::new()),
                in_tx: Cell::new(false),
                conflicted: Cell::new(false),
            })),
            depth: Cell::new(0),
        })
    }

    /// Closes the connection, reporting what closing it found.
    pub fn close(self) -> Result<()> {
        match self.backend {
            Backend::Sqlite(c) => c.close().map_err(|(_, e)| Error::Sqlite(e)),
            Backend::Pg(p) => Ok(p.client.into_inner().close()?),
        }
    }

    /// An in-memory SQLite database (tests).
    pub fn open_in_memory() -> Result<Self> {
        Ok(rusqlite::Connection::open_in_memory()?.into())
    }

    /// The SQLite connection underneath, when this is SQLite (pragmas, backup, migrations).
    pub fn sqlite(&self) -> Option<&rusqlite::Connection> {
        match &self.backend {
            Backend::Sqlite(c) => Some(c),
            Backend::Pg(_) => None,
        }
    }

    /// The SQLite connection underneath, mutably.
    pub fn sqlite_mut(&mut self) -> Option<&mut rusqlite::Connection> {
        match &mut self.backend {
            Backend::Sqlite(c) => Some(c),
            Backend::Pg(_) => None,
        }
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Pg(_))
    }

    /// Whether the PostgreSQL connection is gone (the server restarted or the network broke).
    pub fn is_broken(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Pg(p) => p.client.borrow().is_closed(),
        }
    }

    /// Whether a statement since the last call lost a serialization race (PostgreSQL); clears the mark.
    pub fn take_conflict(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(_) => false,
            Backend::Pg(p) => p.conflicted.replace(false),
        }
    }

    /// Whether no transaction is open.
    pub fn is_autocommit(&self) -> bool {
        match &self.backend {
            Backend::Sqlite(c) => c.is_autocommit(),
            Backend::Pg(p) => !p.in_tx.get(),
        }
    }

    /// Runs statements without parameters (schema, transaction control).
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Backend::Pg(p) => p.batch(sql),
        }
    }

    /// A statement, prepared once per connection and kept.
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement {
            inner: match &self.backend {
                Backend::Sqlite(c) => Inner::SqliteCached(c.prepare_cached(sql)?),
                Backend::Pg(p) => Inner::Pg(p, sql.to_owned()),
            },
        })
    }

    /// A statement for one use.
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement {
            inner: match &self.backend {
                Backend::Sqlite(c) => Inner::Sqlite(c.prepare(sql)?),
                Backend::Pg(p) => Inner::Pg(p, sql.to_owned()),
            },
        })
    }

    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    pub fn query_row<T, P: Params, F>(&self, sql: &str, params: P, f: F) -> Result<T>
    where
        F: FnOnce(&Row<'_>) -> Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }

    /// Begins a transaction that holds its writes against every concurrent writer: SQLite's `BEGIN
    /// IMMEDIATE` (the write lock first), PostgreSQL's `SERIALIZABLE` (conflicts abort and are retried).
    pub fn begin(&self) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => self.control("BEGIN IMMEDIATE"),
            Backend::Pg(p) => {
                p.batch("BEGIN ISOLATION LEVEL SERIALIZABLE")?;
                p.in_tx.set(true);
                Ok(())
            }
        }
    }

    /// [`Connection::begin`], then `first` as the transaction's first statements, in one round trip.
    pub fn begin_with(&self, first: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(c) => {
                c.execute_batch("BEGIN IMMEDIATE")?;
                Ok(c.execute_batch(first)?)
            }
            Backend::Pg(p) => {
                let r = p.batch(&format!("BEGIN ISOLATION LEVEL SERIALIZABLE; {first}"));
                p.in_tx.set(true);
                r
            }
        }
    }

    /// Ends the open transaction with `end` (`COMMIT` or `ROLLBACK`), then runs `then` outside it, in one round
    /// trip. An error is the end's (or the connection's): `then` has not run.
    pub fn end_then(&self, end: &str, then: &str) -> Result<()> {
        self.depth.set(0);
        match &self.backend {
            Backend::Sqlite(c) => {
                c.execute_batch(end)?;
                Ok(c.execute_batch(then)?)
            }
            Backend::Pg(p) => {
                let r = p.batch(&format!("{end}; {then}"));
                p.in_tx.set(false);
                r
            }
        }
    }

    /// [`Connection::begin`] as a guard: `commit` keeps the work, dropping it uncommitted rolls back.
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        self.begin()?;
        Ok(Transaction {
            conn: self,
            done: false,
        })
    }

    /// Commits the open transaction.
    pub fn commit(&self) -> Result<()> {
        self.end("COMMIT")
    }

    /// Rolls back the open transaction.
    pub fn rollback(&self) -> Result<()> {
        self.end("ROLLBACK")
    }

    fn end(&self, sql: &str) -> Result<()> {
        self.depth.set(0);
        match &self.backend {
            Backend::Sqlite(_) => self.control(sql),
            Backend::Pg(p) => {
                let r = p.batch(sql);
                p.in_tx.set(false);
                r
            }
        }
    }

    /// Runs one transaction-control statement (`BEGIN`, `COMMIT`, `SAVEPOINT x`, …). SQLite keeps it
    /// prepared, as every other statement: a commit group runs several of them per job, and parsing them
    /// anew each time was a visible part of the store thread's work.
    fn control(&self, sql: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(c) => {
                c.prepare_cached(sql)?.execute([])?;
                Ok(())
            }
            Backend::Pg(p) => p.batch(sql),
        }
    }

    /// A savepoint: work inside it that fails can roll back alone. On SQLite, one outside any transaction
    /// opens one (a read snapshot until it ends); on PostgreSQL every job runs inside a transaction already.
    pub fn savepoint(&self) -> Result<Savepoint<'_>> {
        let depth = self.depth.get() + 1;
        let name = format!("opdesk_sp{depth}");
        self.control(&format!("SAVEPOINT {name}"))?;
        self.depth.set(depth);
        Ok(Savepoint {
            conn: self,
            name,
            done: false,
        })
    }
}

/// A transaction (see [`Connection::transaction`]).
pub struct Transaction<'c> {
    conn: &'c Connection,
    done: bool,
}

impl Transaction<'_> {
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        self.conn.commit()
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Err(e) = self.conn.rollback()
        {
            tracing::warn!(error = %e, "rolling back a transaction failed");
        }
    }
}

/// A savepoint (see [`Connection::savepoint`]): `commit` keeps its work in the enclosing transaction;
/// dropping it uncommitted rolls its work back.
pub struct Savepoint<'c> {
    conn: &'c Connection,
    name: String,
    done: bool,
}

impl Savepoint<'_> {
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        self.conn.depth.set(self.conn.depth.get().saturating_sub(1));
        self.conn.control(&format!("RELEASE {}", self.name))
    }
}

impl std::ops::Deref for Savepoint<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let name = &self.name;
        self.conn.depth.set(self.conn.depth.get().saturating_sub(1));
        let undone = self
            .conn
            .control(&format!("ROLLBACK TO {name}"))
            .and_then(|()| self.conn.control(&format!("RELEASE {name}")));
        if let Err(e) = undone {
            tracing::warn!(error = %e, "rolling back a savepoint failed");
        }
    }
}

enum Inner<'c> {
    SqliteCached(rusqlite::CachedStatement<'c>),
    Sqlite(rusqlite::Statement<'c>),
    /// Prepared on first use (see [`Pg::statement`]), then cached by its text.
    Pg(&'c Pg, String),
}

/// A prepared statement.
pub struct Statement<'c> {
    inner: Inner<'c>,
}

fn sqlite_values<'a>(values: &'a [Value<'a>]) -> Vec<rusqlite::types::ToSqlOutput<'a>> {
    use rusqlite::types::{ToSqlOutput, ValueRef as R};
    values
        .iter()
        .map(|v| {
            ToSqlOutput::Borrowed(match v {
                Value::Null => R::Null,
                Value::Integer(n) => R::Integer(*n),
                Value::Real(f) => R::Real(*f),
                Value::Text(s) => R::Text(s.as_bytes()),
                Value::Blob(b) => R::Blob(b),
            })
        })
        .collect()
}

impl<'c> Statement<'c> {
    fn sqlite(&mut self) -> Option<&mut rusqlite::Statement<'c>> {
        match &mut self.inner {
            Inner::SqliteCached(s) => Some(s),
            Inner::Sqlite(s) => Some(s),
            Inner::Pg(..) => None,
        }
    }

    /// Runs the statement; the number of rows it changed.
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize> {
        let values = params.values()?;
        if let Some(s) = self.sqlite() {
            return Ok(s.execute(rusqlite::params_from_iter(sqlite_values(&values)))?);
        }
        match &self.inner {
            Inner::Pg(p, sql) => p.execute(sql, &values),
            Inner::SqliteCached(_) | Inner::Sqlite(_) => Err(Error::convert(0, "unreachable backend")),
        }
    }

    /// Calls `f` on each row, in order, until one fails.
    pub fn for_each_row<P: Params, F>(&mut self, params: P, mut f: F) -> Result<()>
    where
        F: FnMut(&Row<'_>) -> Result<()>,
    {
        let values = params.values()?;
        if let Some(s) = self.sqlite() {
            let mut rows = s.query(rusqlite::params_from_iter(sqlite_values(&values)))?;
            while let Some(r) = rows.next()? {
                f(&Row::Sqlite(r))?;
            }
            return Ok(());
        }
        if let Inner::Pg(p, sql) = &self.inner {
            for r in p.query(sql, &values)? {
                f(&Row::Pg(&r))?;
            }
        }
        Ok(())
    }

    /// The first row through `f`; [`Error::NoRows`] when there is none.
    pub fn query_row<T, P: Params, F>(&mut self, params: P, f: F) -> Result<T>
    where
        F: FnOnce(&Row<'_>) -> Result<T>,
    {
        let mut f = Some(f);
        let mut out = None;
        self.for_each_row(params, |r| {
            if let Some(f) = f.take() {
                out = Some(f(r)?);
            }
            Ok(())
        })?;
        out.ok_or(Error::NoRows)
    }

    /// Every row through `f`.
    pub fn query_map<T, P: Params, F>(&mut self, params: P, mut f: F) -> Result<std::vec::IntoIter<Result<T>>>
    where
        F: FnMut(&Row<'_>) -> Result<T>,
    {
        let mut out = Vec::new();
        self.for_each_row(params, |r| {
            out.push(f(r));
            Ok(())
        })?;
        Ok(out.into_iter())
    }

    /// Whether the statement returns any row.
    pub fn exists<P: Params>(&mut self, params: P) -> Result<bool> {
        let mut any = false;
        self.for_each_row(params, |_| {
            any = true;
            Ok(())
        })?;
        Ok(any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_like_are_rewritten_outside_quotes() {
        assert_eq!(
            to_postgres("SELECT a FROM t WHERE b = ?1 AND c LIKE ?2 ESCAPE '\\' AND d = '?' AND e = ?"),
            "SELECT a FROM t WHERE b = $1 AND c ILIKE $2 ESCAPE '\\' AND d = '?' AND e = $3"
        );
        assert_eq!(
            to_postgres("SELECT likes, unlike FROM t"),
            "SELECT likes, unlike FROM t"
        );
        assert_eq!(to_postgres("x = ?12"), "x = $12");
    }

    #[test]
    fn sqlite_rows_read_through_the_facade() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER, b TEXT, c BLOB)").unwrap();
        c.execute("INSERT INTO t VALUES (?1, ?2, ?3)", params![7i64, "x", vec![1u8, 2]])
            .unwrap();
        c.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3)",
            params![None::<i64>, true, None::<Vec<u8>>],
        )
        .unwrap();
        let rows: Vec<(Option<i64>, String, Option<Vec<u8>>)> = c
            .prepare("SELECT a, b, c FROM t ORDER BY rowid")
            .unwrap()
            .query_map((), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![(Some(7), "x".into(), Some(vec![1, 2])), (None, "1".into(), None)]
        );
        assert!(matches!(
            c.query_row("SELECT a FROM t WHERE b = ?1", ["none"], |r| r.get::<_, i64>(0)),
            Err(Error::NoRows)
        ));
        assert_eq!(
            c.query_row("SELECT a FROM t WHERE b = ?1", ["none"], |r| r.get::<_, i64>(0))
                .optional()
                .unwrap(),
            None
        );
        let bad = c.query_row("SELECT b FROM t WHERE a = 7", (), |r| r.get::<_, i64>(0));
        assert!(matches!(bad, Err(Error::Convert { column: 0, .. })), "{bad:?}");
        assert!(u64::MAX.to_sql().is_err());
    }

    #[test]
    fn a_savepoint_dropped_uncommitted_rolls_back_alone() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER)").unwrap();
        c.begin().unwrap();
        c.execute("INSERT INTO t VALUES (1)", ()).unwrap();
        {
            let sp = c.savepoint().unwrap();
            sp.execute("INSERT INTO t VALUES (2)", ()).unwrap();
        }
        {
            let sp = c.savepoint().unwrap();
            sp.execute("INSERT INTO t VALUES (3)", ()).unwrap();
            sp.commit().unwrap();
        }
        c.commit().unwrap();
        let n: Vec<i64> = c
            .prepare("SELECT a FROM t ORDER BY a")
            .unwrap()
            .query_map((), |r| r.get(0))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(n, vec![1, 3]);
    }
}
