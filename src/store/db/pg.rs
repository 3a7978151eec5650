//! The PostgreSQL side of [`super`]: reading a column as the storage class it maps to, binding a value as the
//! parameter type the server inferred, rewriting SQLite's placeholders, the statement cache per connection, and
//! the listening connection for notifications.

use std::{
    cell::{Cell, RefCell},
    collections::HashMap,
};

use postgres::types::{FromSql as PgFromSql, IsNull, ToSql as PgToSql, Type};

use super::{Error, Result, Value, ValueRef};

/// Reads PostgreSQL column `i` as the storage class it maps to.
pub(super) fn pg_value(r: &postgres::Row, i: usize) -> Result<ValueRef<'_>> {
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
pub(super) struct PgParam<'a>(pub(super) &'a Value<'a>);

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
        let mut config: postgres::Config = url.parse()?;
        // named, so that an operator (or a test) can tell the listener from the store's connections
        config.application_name(&format!("opdesk-listen-{}", std::process::id()));
        let mut client = config.connect(postgres::NoTls)?;
        for c in channels {
            client.batch_execute(&format!("LISTEN {c}"))?;
        }
        Ok(Self(client))
    }

    /// The notifications that arrived within `timeout` (none when it passed), with what had arrived with
    /// them: each channel once with an empty payload (a wake-up), and every one with a payload (the caches'
    /// channel names what to forget).
    pub fn wait(&mut self, timeout: std::time::Duration) -> Result<Vec<(String, String)>> {
        use postgres::fallible_iterator::FallibleIterator as _;
        let mut out: Vec<(String, String)> = Vec::new();
        let mut got = self.0.notifications();
        let mut iter = got.timeout_iter(timeout);
        while let Some(n) = iter.next()? {
            let heard = (n.channel().to_owned(), n.payload().to_owned());
            if !heard.1.is_empty() || !out.contains(&heard) {
                out.push(heard);
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
    pub(super) client: RefCell<postgres::Client>,
    pub(super) cache: RefCell<HashMap<String, postgres::Statement>>,
    /// A transaction is open.
    pub(super) in_tx: Cell<bool>,
    /// A statement of the current job lost a serialization race: the job must run again.
    pub(super) conflicted: Cell<bool>,
    /// The open transaction is one job's own ([`super::Connection::begin_job`]) and its first write
    /// transaction has not begun: that one needs no savepoint.
    pub(super) job_own: Cell<bool>,
    /// The job's own write transaction ended without committing: the job's transaction must roll back.
    pub(super) doomed: Cell<bool>,
    /// A statement failed since the mark was last taken: the transaction may be aborted.
    pub(super) failed: Cell<bool>,
}

impl Pg {
    /// The prepared statement for `sql`, from the cache or prepared now. PostgreSQL infers each parameter's
    /// type from where it stands; where it cannot (`?5 IS NOT NULL` alone), the statement is prepared with
    /// the types of the values bound this first time (a null as text).
    pub(super) fn statement(&self, sql: &str, values: &[Value<'_>]) -> Result<postgres::Statement> {
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

    /// Records a failed statement, and a serialization failure of the running job.
    pub(super) fn note<T>(&self, r: Result<T, postgres::Error>) -> Result<T> {
        r.map_err(|e| {
            let e = Error::Pg(e);
            self.failed.set(true);
            if e.is_conflict() {
                self.conflicted.set(true);
            }
            e
        })
    }

    pub(super) fn query(&self, sql: &str, values: &[Value<'_>]) -> Result<Vec<postgres::Row>> {
        let stmt = self.statement(sql, values)?;
        let binds: Vec<PgParam<'_>> = values.iter().map(PgParam).collect();
        let refs: Vec<&(dyn PgToSql + Sync)> = binds.iter().map(|b| b as &(dyn PgToSql + Sync)).collect();
        self.note(self.client.borrow_mut().query(&stmt, &refs))
    }

    pub(super) fn execute(&self, sql: &str, values: &[Value<'_>]) -> Result<usize> {
        let stmt = self.statement(sql, values)?;
        let binds: Vec<PgParam<'_>> = values.iter().map(PgParam).collect();
        let refs: Vec<&(dyn PgToSql + Sync)> = binds.iter().map(|b| b as &(dyn PgToSql + Sync)).collect();
        let n = self.note(self.client.borrow_mut().execute(&stmt, &refs))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub(super) fn batch(&self, sql: &str) -> Result<()> {
        self.note(self.client.borrow_mut().batch_execute(sql))
    }
}
