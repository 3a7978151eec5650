//! ILPv4 packets (RFC 27): [`Prepare`] (type 12), [`Fulfill`] (13) and [`Reject`] (14), the
//! [`Packet`] envelope that dispatches on the type byte, and the validated value types they are
//! made of: [`Address`] (RFC 15), [`Timestamp`] (the 17-character `YYYYMMDDHHmmssfff` UTC
//! time), [`ErrorCode`] (three ASCII characters with the RFC 27 constants) and the F08
//! [`AmountTooLarge`] error data. Decoding is strict (canonical lengths, no trailing bytes, data
//! ≤ 32767 bytes, valid addresses); it does not decide what to do with a packet, which is the
//! receiver's job.

use super::Error;
use super::oer::{Reader, Writer, var_octet_string_len};
use std::fmt;
use std::str::FromStr;

/// Maximum length of the `data` field of every ILP packet.
pub const MAX_DATA_LEN: usize = 32767;

/// Maximum length of an ILP address.
pub const MAX_ADDRESS_LEN: usize = 1023;

/// Allocation schemes accepted as the first address segment.
pub const ADDRESS_SCHEMES: [&str; 10] = [
    "g", "private", "example", "peer", "self", "test", "test1", "test2", "test3", "local",
];

// ---------------------------------------------------------------------------------------------
// Address

/// A valid ILP address: `^(g|private|example|peer|self|test[1-3]?|local)([.][a-zA-Z0-9_~-]+)+$`,
/// at most 1023 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address(String);

impl Address {
    /// Validates and wraps an address.
    pub fn new(address: impl Into<String>) -> Result<Self, Error> {
        let address = address.into();
        if is_valid_address(&address) {
            Ok(Self(address))
        } else {
            Err(Error::InvalidAddress)
        }
    }

    /// Validates raw ASCII bytes as an address.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let s = std::str::from_utf8(bytes).map_err(|_| Error::InvalidAddress)?;
        Self::new(s)
    }

    /// The address text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The allocation scheme (first segment), e.g. `test`.
    pub fn scheme(&self) -> &str {
        self.0.split('.').next().unwrap_or_default()
    }

    /// The dot-separated segments, scheme included.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('.')
    }

    /// This address with one more segment appended (`self + "." + segment`).
    pub fn with_segment(&self, segment: &str) -> Result<Self, Error> {
        Self::new(format!("{}.{}", self.0, segment))
    }

    /// True if `self` equals `prefix` or lies under it (`prefix + "."` is a prefix of `self`).
    pub fn has_prefix(&self, prefix: &Address) -> bool {
        self.0 == prefix.0 || self.child_part(prefix).is_some()
    }

    /// The part of `self` after `prefix + "."`, if `self` lies strictly under `prefix`.
    pub fn child_part(&self, prefix: &Address) -> Option<&str> {
        self.0
            .strip_prefix(prefix.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
    }

    /// The first segment of `self` after `prefix` (e.g. the STREAM connection token).
    pub fn segment_after(&self, prefix: &Address) -> Option<&str> {
        self.child_part(prefix).and_then(|rest| rest.split('.').next())
    }
}

/// RFC 15 address validation (as `ilp-packet`'s `isValidIlpAddress`).
pub fn is_valid_address(address: &str) -> bool {
    if address.len() > MAX_ADDRESS_LEN {
        return false;
    }
    let mut segments = address.split('.');
    let Some(scheme) = segments.next() else {
        return false;
    };
    if !ADDRESS_SCHEMES.contains(&scheme) {
        return false;
    }
    let mut count = 0usize;
    for segment in segments {
        if segment.is_empty()
            || !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'-'))
        {
            return false;
        }
        count += 1;
    }
    count > 0
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Address {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl TryFrom<&str> for Address {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl TryFrom<String> for Address {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        Self::new(s)
    }
}

impl AsRef<str> for Address {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

// ---------------------------------------------------------------------------------------------
// Timestamp

/// Length of an ILP timestamp on the wire.
pub const TIMESTAMP_LEN: usize = 17;

const MILLIS_PER_DAY: i64 = 86_400_000;

/// An ILP `expiresAt`: 17 ASCII digits `YYYYMMDDHHmmssfff`, UTC, years 0000–9999. Ordering of
/// the bytes is chronological, so `Ord` compares instants.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp([u8; TIMESTAMP_LEN]);

impl Timestamp {
    /// Validates 17 wire bytes (digits and calendar ranges; no leap seconds).
    pub fn from_bytes(bytes: [u8; TIMESTAMP_LEN]) -> Result<Self, Error> {
        if !bytes.iter().all(u8::is_ascii_digit) {
            return Err(Error::InvalidTimestamp);
        }
        let t = Self(bytes);
        let (year, month, day) = (t.field(0, 4), t.field(4, 2), t.field(6, 2));
        let valid = (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && t.field(8, 2) <= 23
            && t.field(10, 2) <= 59
            && t.field(12, 2) <= 59;
        if valid { Ok(t) } else { Err(Error::InvalidTimestamp) }
    }

    /// Parses the 17-character text form.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let bytes: [u8; TIMESTAMP_LEN] = s.as_bytes().try_into().map_err(|_| Error::InvalidTimestamp)?;
        Self::from_bytes(bytes)
    }

    /// The instant `millis` after the Unix epoch (negative = before); years must stay in 0..=9999.
    pub fn from_unix_millis(millis: i64) -> Result<Self, Error> {
        let days = millis.div_euclid(MILLIS_PER_DAY);
        let ms_of_day = millis.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return Err(Error::InvalidTimestamp);
        }
        let hour = ms_of_day / 3_600_000;
        let minute = ms_of_day / 60_000 % 60;
        let second = ms_of_day / 1000 % 60;
        let milli = ms_of_day % 1000;
        let text = format!("{year:04}{month:02}{day:02}{hour:02}{minute:02}{second:02}{milli:03}");
        Self::parse(&text)
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(&self) -> i64 {
        let days = days_from_civil(self.field(0, 4), self.field(4, 2), self.field(6, 2));
        days * MILLIS_PER_DAY
            + self.field(8, 2) * 3_600_000
            + self.field(10, 2) * 60_000
            + self.field(12, 2) * 1000
            + self.field(14, 3)
    }

    /// The text form (always ASCII digits).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The wire bytes.
    pub fn as_bytes(&self) -> &[u8; TIMESTAMP_LEN] {
        &self.0
    }

    fn field(&self, start: usize, len: usize) -> i64 {
        self.0
            .get(start..start.saturating_add(len))
            .unwrap_or_default()
            .iter()
            .fold(0i64, |acc, &b| acc * 10 + i64::from(b.saturating_sub(b'0')))
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm). Inputs here
/// are validated calendar fields or day counts derived from an `i64` of milliseconds
/// (|days| < 2^37), so no intermediate can overflow an `i64`.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.as_str())
    }
}

impl FromStr for Timestamp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

// ---------------------------------------------------------------------------------------------
// Error codes

/// Class of a reject code, from its first letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// `F..`: do not retry.
    Final,
    /// `T..`: retry later.
    Temporary,
    /// `R..`: retry with different parameters.
    Relative,
    /// Anything else.
    Unknown,
}

/// An ILP reject code: three ASCII alphanumeric characters, e.g. `F02`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode([u8; 3]);

impl ErrorCode {
    /// F00 Bad Request.
    pub const F00_BAD_REQUEST: Self = Self(*b"F00");
    /// F01 Invalid Packet.
    pub const F01_INVALID_PACKET: Self = Self(*b"F01");
    /// F02 Unreachable.
    pub const F02_UNREACHABLE: Self = Self(*b"F02");
    /// F03 Invalid Amount.
    pub const F03_INVALID_AMOUNT: Self = Self(*b"F03");
    /// F04 Insufficient Destination Amount.
    pub const F04_INSUFFICIENT_DESTINATION_AMOUNT: Self = Self(*b"F04");
    /// F05 Wrong Condition.
    pub const F05_WRONG_CONDITION: Self = Self(*b"F05");
    /// F06 Unexpected Payment.
    pub const F06_UNEXPECTED_PAYMENT: Self = Self(*b"F06");
    /// F07 Cannot Receive.
    pub const F07_CANNOT_RECEIVE: Self = Self(*b"F07");
    /// F08 Amount Too Large (data: [`AmountTooLarge`]).
    pub const F08_AMOUNT_TOO_LARGE: Self = Self(*b"F08");
    /// F99 Application Error (STREAM replies).
    pub const F99_APPLICATION_ERROR: Self = Self(*b"F99");
    /// T00 Internal Error.
    pub const T00_INTERNAL_ERROR: Self = Self(*b"T00");
    /// T01 Peer Unreachable.
    pub const T01_PEER_UNREACHABLE: Self = Self(*b"T01");
    /// T02 Peer Busy.
    pub const T02_PEER_BUSY: Self = Self(*b"T02");
    /// T03 Connector Busy.
    pub const T03_CONNECTOR_BUSY: Self = Self(*b"T03");
    /// T04 Insufficient Liquidity.
    pub const T04_INSUFFICIENT_LIQUIDITY: Self = Self(*b"T04");
    /// T05 Rate Limited.
    pub const T05_RATE_LIMITED: Self = Self(*b"T05");
    /// T99 Application Error.
    pub const T99_APPLICATION_ERROR: Self = Self(*b"T99");
    /// R00 Transfer Timed Out.
    pub const R00_TRANSFER_TIMED_OUT: Self = Self(*b"R00");
    /// R01 Insufficient Source Amount.
    pub const R01_INSUFFICIENT_SOURCE_AMOUNT: Self = Self(*b"R01");
    /// R02 Insufficient Timeout.
    pub const R02_INSUFFICIENT_TIMEOUT: Self = Self(*b"R02");
    /// R99 Application Error.
    pub const R99_APPLICATION_ERROR: Self = Self(*b"R99");

    /// Validates three wire bytes (ASCII letters and digits).
    pub fn from_bytes(bytes: [u8; 3]) -> Result<Self, Error> {
        if bytes.iter().all(u8::is_ascii_alphanumeric) {
            Ok(Self(bytes))
        } else {
            Err(Error::InvalidErrorCode)
        }
    }

    /// Parses the text form.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let bytes: [u8; 3] = s.as_bytes().try_into().map_err(|_| Error::InvalidErrorCode)?;
        Self::from_bytes(bytes)
    }

    /// The code text, e.g. `"F02"`.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The wire bytes.
    pub fn as_bytes(&self) -> &[u8; 3] {
        &self.0
    }

    /// Final / temporary / relative.
    pub fn class(&self) -> ErrorClass {
        match self.0[0] {
            b'F' => ErrorClass::Final,
            b'T' => ErrorClass::Temporary,
            b'R' => ErrorClass::Relative,
            _ => ErrorClass::Unknown,
        }
    }

    /// The RFC 27 name of a standard code (`"Unreachable"` for F02), usable as a default message.
    pub fn name(&self) -> Option<&'static str> {
        Some(match &self.0 {
            b"F00" => "Bad Request",
            b"F01" => "Invalid Packet",
            b"F02" => "Unreachable",
            b"F03" => "Invalid Amount",
            b"F04" => "Insufficient Destination Amount",
            b"F05" => "Wrong Condition",
            b"F06" => "Unexpected Payment",
            b"F07" => "Cannot Receive",
            b"F08" => "Amount Too Large",
            b"F99" => "Application Error",
            b"T00" => "Internal Error",
            b"T01" => "Peer Unreachable",
            b"T02" => "Peer Busy",
            b"T03" => "Connector Busy",
            b"T04" => "Insufficient Liquidity",
            b"T05" => "Rate Limited",
            b"T99" => "Application Error",
            b"R00" => "Transfer Timed Out",
            b"R01" => "Insufficient Source Amount",
            b"R02" => "Insufficient Timeout",
            b"R99" => "Application Error",
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorCode({})", self.as_str())
    }
}

/// Data of an `F08 Amount Too Large` reject: `receivedAmount:UInt64 ‖ maximumAmount:UInt64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmountTooLarge {
    /// The amount the rejecting node received (in its units).
    pub received_amount: u64,
    /// The largest amount it would have accepted.
    pub maximum_amount: u64,
}

impl AmountTooLarge {
    /// The 16 data bytes.
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.received_amount.to_be_bytes());
        out[8..].copy_from_slice(&self.maximum_amount.to_be_bytes());
        out
    }

    /// Parses F08 data (trailing bytes are ignored, as senders do).
    pub fn decode(data: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(data);
        Ok(Self {
            received_amount: r.read_u64()?,
            maximum_amount: r.read_u64()?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Packets

/// ILP packet type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    /// 12.
    Prepare = 12,
    /// 13.
    Fulfill = 13,
    /// 14.
    Reject = 14,
}

impl PacketType {
    /// The wire byte.
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

impl TryFrom<u8> for PacketType {
    type Error = Error;
    fn try_from(value: u8) -> Result<Self, Error> {
        match value {
            12 => Ok(Self::Prepare),
            13 => Ok(Self::Fulfill),
            14 => Ok(Self::Reject),
            other => Err(Error::UnknownPacketType(other)),
        }
    }
}

/// An ILP Prepare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    /// Amount in the receiving link's units.
    pub amount: u64,
    /// Expiry.
    pub expires_at: Timestamp,
    /// SHA-256 of the fulfillment.
    pub execution_condition: [u8; 32],
    /// Destination address.
    pub destination: Address,
    /// End-to-end data (≤ [`MAX_DATA_LEN`]).
    pub data: Vec<u8>,
}

/// An ILP Fulfill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fulfill {
    /// Preimage of the Prepare's condition.
    pub fulfillment: [u8; 32],
    /// End-to-end data (≤ [`MAX_DATA_LEN`]).
    pub data: Vec<u8>,
}

/// An ILP Reject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// Error code.
    pub code: ErrorCode,
    /// Address of the node that rejected; `None` encodes as the empty string.
    pub triggered_by: Option<Address>,
    /// Human-readable message (decoded lossily: invalid UTF-8 becomes U+FFFD).
    pub message: String,
    /// Error data (≤ [`MAX_DATA_LEN`]).
    pub data: Vec<u8>,
}

/// Any ILP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    /// Type 12.
    Prepare(Prepare),
    /// Type 13.
    Fulfill(Fulfill),
    /// Type 14.
    Reject(Reject),
}

fn check_data_len(data: &[u8]) -> Result<(), Error> {
    if data.len() > MAX_DATA_LEN {
        Err(Error::DataTooLong(data.len()))
    } else {
        Ok(())
    }
}

fn read_data(r: &mut Reader<'_>) -> Result<Vec<u8>, Error> {
    let data = r.read_var_octet_string()?;
    check_data_len(data)?;
    Ok(data.to_vec())
}

/// Splits `type ‖ VarOctetString(contents)` and rejects trailing bytes after the envelope.
fn read_envelope(bytes: &[u8]) -> Result<(PacketType, &[u8]), Error> {
    let mut r = Reader::new(bytes);
    let packet_type = PacketType::try_from(r.read_u8()?)?;
    let contents = r.read_var_octet_string()?;
    r.expect_end()?;
    Ok((packet_type, contents))
}

fn expect_type(bytes: &[u8], expected: PacketType) -> Result<&[u8], Error> {
    let (actual, contents) = read_envelope(bytes)?;
    if actual == expected {
        Ok(contents)
    } else {
        Err(Error::WrongPacketType {
            expected: expected.as_u8(),
            actual: actual.as_u8(),
        })
    }
}

/// Saturating sum of encoded part sizes (a capacity hint only).
fn capacity(parts: &[usize]) -> usize {
    parts.iter().fold(0, |acc, &n| acc.saturating_add(n))
}

fn write_envelope(packet_type: PacketType, contents: &[u8]) -> Vec<u8> {
    let mut w = Writer::with_capacity(capacity(&[1, var_octet_string_len(contents.len())]));
    w.write_u8(packet_type.as_u8());
    w.write_var_octet_string(contents);
    w.into_vec()
}

impl Prepare {
    /// Decodes a complete Prepare packet (envelope included).
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        Self::decode_contents(expect_type(bytes, PacketType::Prepare)?)
    }

    fn decode_contents(contents: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(contents);
        let amount = r.read_u64()?;
        let expires_at = Timestamp::from_bytes(r.read_array()?)?;
        let execution_condition = r.read_array()?;
        let destination = Address::from_bytes(r.read_var_octet_string()?)?;
        let data = read_data(&mut r)?;
        r.expect_end()?;
        Ok(Self {
            amount,
            expires_at,
            execution_condition,
            destination,
            data,
        })
    }

    /// Encodes the packet (envelope included). Fails only if `data` is too long.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        check_data_len(&self.data)?;
        let dest = self.destination.as_str().as_bytes();
        let mut w = Writer::with_capacity(capacity(&[
            8 + TIMESTAMP_LEN + 32,
            var_octet_string_len(dest.len()),
            var_octet_string_len(self.data.len()),
        ]));
        w.write_u64(self.amount);
        w.write_bytes(self.expires_at.as_bytes());
        w.write_bytes(&self.execution_condition);
        w.write_var_octet_string(dest);
        w.write_var_octet_string(&self.data);
        Ok(write_envelope(PacketType::Prepare, w.as_slice()))
    }
}

impl Fulfill {
    /// Decodes a complete Fulfill packet.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        Self::decode_contents(expect_type(bytes, PacketType::Fulfill)?)
    }

    fn decode_contents(contents: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(contents);
        let fulfillment = r.read_array()?;
        let data = read_data(&mut r)?;
        r.expect_end()?;
        Ok(Self { fulfillment, data })
    }

    /// Encodes the packet. Fails only if `data` is too long.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        check_data_len(&self.data)?;
        let mut w = Writer::with_capacity(capacity(&[32, var_octet_string_len(self.data.len())]));
        w.write_bytes(&self.fulfillment);
        w.write_var_octet_string(&self.data);
        Ok(write_envelope(PacketType::Fulfill, w.as_slice()))
    }
}

impl Reject {
    /// A reject with the code's standard name as message.
    pub fn new(code: ErrorCode, triggered_by: Option<Address>, data: Vec<u8>) -> Self {
        Self {
            code,
            triggered_by,
            message: code.name().unwrap_or_default().to_owned(),
            data,
        }
    }

    /// An `F08 Amount Too Large` reject carrying [`AmountTooLarge`] data.
    pub fn amount_too_large(triggered_by: Option<Address>, received_amount: u64, maximum_amount: u64) -> Self {
        let data = AmountTooLarge {
            received_amount,
            maximum_amount,
        };
        Self::new(ErrorCode::F08_AMOUNT_TOO_LARGE, triggered_by, data.encode().to_vec())
    }

    /// The F08 data, if this is an F08 reject carrying it.
    pub fn amount_too_large_data(&self) -> Option<AmountTooLarge> {
        if self.code == ErrorCode::F08_AMOUNT_TOO_LARGE {
            AmountTooLarge::decode(&self.data).ok()
        } else {
            None
        }
    }

    /// Decodes a complete Reject packet.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        Self::decode_contents(expect_type(bytes, PacketType::Reject)?)
    }

    fn decode_contents(contents: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(contents);
        let code = ErrorCode::from_bytes(r.read_array()?)?;
        let triggered_by = match r.read_var_octet_string()? {
            [] => None,
            bytes => Some(Address::from_bytes(bytes)?),
        };
        let message = String::from_utf8_lossy(r.read_var_octet_string()?).into_owned();
        let data = read_data(&mut r)?;
        r.expect_end()?;
        Ok(Self {
            code,
            triggered_by,
            message,
            data,
        })
    }

    /// Encodes the packet. Fails only if `data` is too long.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        check_data_len(&self.data)?;
        let by = self
            .triggered_by
            .as_ref()
            .map(|a| a.as_str().as_bytes())
            .unwrap_or_default();
        let mut w = Writer::with_capacity(capacity(&[
            3,
            var_octet_string_len(by.len()),
            var_octet_string_len(self.message.len()),
            var_octet_string_len(self.data.len()),
        ]));
        w.write_bytes(self.code.as_bytes());
        w.write_var_octet_string(by);
        w.write_var_octet_string(self.message.as_bytes());
        w.write_var_octet_string(&self.data);
        Ok(write_envelope(PacketType::Reject, w.as_slice()))
    }
}

impl Packet {
    /// Decodes any ILP packet.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let (packet_type, contents) = read_envelope(bytes)?;
        Ok(match packet_type {
            PacketType::Prepare => Self::Prepare(Prepare::decode_contents(contents)?),
            PacketType::Fulfill => Self::Fulfill(Fulfill::decode_contents(contents)?),
            PacketType::Reject => Self::Reject(Reject::decode_contents(contents)?),
        })
    }

    /// Encodes the packet. Fails only if `data` is too long.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        match self {
            Self::Prepare(p) => p.encode(),
            Self::Fulfill(f) => f.encode(),
            Self::Reject(r) => r.encode(),
        }
    }

    /// The type byte.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Self::Prepare(_) => PacketType::Prepare,
            Self::Fulfill(_) => PacketType::Fulfill,
            Self::Reject(_) => PacketType::Reject,
        }
    }
}

impl From<Prepare> for Packet {
    fn from(p: Prepare) -> Self {
        Self::Prepare(p)
    }
}

impl From<Fulfill> for Packet {
    fn from(f: Fulfill) -> Self {
        Self::Fulfill(f)
    }
}

impl From<Reject> for Packet {
    fn from(r: Reject) -> Self {
        Self::Reject(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vectors/stream/ilp-packet");

    #[derive(serde::Deserialize)]
    struct Vector<T> {
        binary: String,
        json: T,
    }

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct PrepareJson {
        amount: String,
        execution_condition: String,
        /// Text on purpose: the vector's ISO form, compared with the packet's ILP timestamp text.
        expires_at: String,
        destination: String,
        data: String,
    }

    #[derive(serde::Deserialize)]
    struct FulfillJson {
        fulfillment: String,
        data: String,
    }

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct RejectJson {
        code: String,
        triggered_by: String,
        message: String,
        data: String,
    }

    fn load<T: serde::de::DeserializeOwned>(kind: &str) -> (Vec<u8>, T) {
        let path = format!("{VECTORS}/{kind}/valid/example01.json");
        let text = std::fs::read_to_string(&path).expect(&path);
        let v: Vector<T> = serde_json::from_str(&text).unwrap();
        (hex::decode(v.binary).unwrap(), v.json)
    }

    /// `2017-12-23T01:21:40.549Z` → `20171223012140549`.
    fn iso_to_ilp(iso: &str) -> String {
        iso.chars().filter(char::is_ascii_digit).collect()
    }

    #[test]
    fn prepare_vector() {
        let (bin, json) = load::<PrepareJson>("ilp_prepare");
        let p = Prepare::decode(&bin).unwrap();
        assert_eq!(p.amount.to_string(), json.amount);
        assert_eq!(p.expires_at.as_str(), iso_to_ilp(&json.expires_at));
        assert_eq!(
            p.execution_condition.to_vec(),
            STANDARD.decode(&json.execution_condition).unwrap()
        );
        assert_eq!(p.destination.as_str(), json.destination);
        assert_eq!(p.data, STANDARD.decode(&json.data).unwrap());
        assert_eq!(p.encode().unwrap(), bin);
        assert_eq!(Packet::decode(&bin).unwrap(), Packet::Prepare(p.clone()));
        assert_eq!(Packet::Prepare(p).encode().unwrap(), bin);
        // expiresAt as unix time: Date.parse("2017-12-23T01:21:40.549Z").
        let ts = Timestamp::parse(&iso_to_ilp(&json.expires_at)).unwrap();
        assert_eq!(ts.unix_millis(), 1_513_992_100_549);
        assert_eq!(Timestamp::from_unix_millis(1_513_992_100_549).unwrap(), ts);
    }

    #[test]
    fn fulfill_vector() {
        let (bin, json) = load::<FulfillJson>("ilp_fulfill");
        let f = Fulfill::decode(&bin).unwrap();
        assert_eq!(f.fulfillment.to_vec(), STANDARD.decode(&json.fulfillment).unwrap());
        assert_eq!(f.data, STANDARD.decode(&json.data).unwrap());
        assert_eq!(f.encode().unwrap(), bin);
        assert_eq!(Packet::decode(&bin).unwrap().encode().unwrap(), bin);
    }

    #[test]
    fn reject_vector() {
        let (bin, json) = load::<RejectJson>("ilp_reject");
        let r = Reject::decode(&bin).unwrap();
        assert_eq!(r.code.as_str(), json.code);
        assert_eq!(r.code.class(), ErrorClass::Final);
        assert_eq!(
            r.triggered_by.as_ref().map(Address::as_str),
            Some(json.triggered_by.as_str())
        );
        assert_eq!(r.message, json.message);
        assert_eq!(r.data, STANDARD.decode(&json.data).unwrap());
        assert_eq!(r.encode().unwrap(), bin);
        assert_eq!(Packet::decode(&bin).unwrap().encode().unwrap(), bin);
    }

    #[test]
    fn truncations_and_bit_flips_never_panic() {
        for kind in ["ilp_prepare", "ilp_fulfill", "ilp_reject"] {
            let (bin, _) = load::<serde_json::Value>(kind);
            for cut in 0..bin.len() {
                assert!(Packet::decode(&bin[..cut]).is_err(), "{kind} cut at {cut}");
            }
            let mut extended = bin.clone();
            extended.push(0);
            assert_eq!(Packet::decode(&extended), Err(Error::TrailingBytes(1)));
            for i in 0..bin.len() {
                for bit in 0..8 {
                    let mut m = bin.clone();
                    m[i] ^= 1 << bit;
                    let _ = Packet::decode(&m);
                }
            }
        }
    }

    fn sample_prepare(data_len: usize) -> Prepare {
        Prepare {
            amount: 1000,
            expires_at: Timestamp::parse("20300101000000000").unwrap(),
            execution_condition: [7; 32],
            destination: Address::new("test.ase.conn").unwrap(),
            data: vec![0xab; data_len],
        }
    }

    #[test]
    fn long_form_lengths_round_trip() {
        for len in [0, 127, 128, 255, 256, 1000, MAX_DATA_LEN] {
            let p = sample_prepare(len);
            let bytes = p.encode().unwrap();
            assert_eq!(Prepare::decode(&bytes).unwrap(), p);
            for cut in [0, 1, 2, bytes.len() / 2, bytes.len() - 1] {
                assert!(Prepare::decode(&bytes[..cut]).is_err());
            }
        }
        assert_eq!(
            sample_prepare(MAX_DATA_LEN + 1).encode(),
            Err(Error::DataTooLong(MAX_DATA_LEN + 1))
        );
    }

    #[test]
    fn decoding_rejects_oversized_data_and_bad_fields() {
        // Hand-build a Prepare whose data is 32768 bytes.
        let p = sample_prepare(0);
        let mut w = Writer::new();
        w.write_u64(p.amount);
        w.write_bytes(p.expires_at.as_bytes());
        w.write_bytes(&p.execution_condition);
        w.write_var_octet_string(p.destination.as_str().as_bytes());
        w.write_var_octet_string(&vec![0; MAX_DATA_LEN + 1]);
        let bytes = write_envelope(PacketType::Prepare, w.as_slice());
        assert_eq!(Prepare::decode(&bytes), Err(Error::DataTooLong(MAX_DATA_LEN + 1)));

        let good = sample_prepare(4).encode().unwrap();
        // Envelope length prefix in non-canonical long form.
        let mut bad = vec![12, 0x81, good[1]];
        bad.extend_from_slice(&good[2..]);
        assert_eq!(Packet::decode(&bad), Err(Error::NonCanonicalLength));
        // Wrong type byte.
        let mut bad = good.clone();
        bad[0] = 15;
        assert_eq!(Packet::decode(&bad), Err(Error::UnknownPacketType(15)));
        assert_eq!(
            Fulfill::decode(&good),
            Err(Error::WrongPacketType {
                expected: 13,
                actual: 12
            })
        );
        // Bad timestamp digit (offset: type, len, amount(8)).
        let mut bad = good.clone();
        bad[2 + 8] = b'x';
        assert_eq!(Packet::decode(&bad), Err(Error::InvalidTimestamp));
        // Bad address (first char of destination: 2 + 8 + 17 + 32 + 1).
        let mut bad = good.clone();
        bad[2 + 8 + 17 + 32 + 1] = b'x';
        assert_eq!(Packet::decode(&bad), Err(Error::InvalidAddress));
        // Length larger than the input.
        assert!(matches!(
            Packet::decode(&[12, 0x82, 0x7f, 0xff, 0, 0]),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(Packet::decode(&[]), Err(Error::Truncated { .. })));
    }

    #[test]
    fn addresses() {
        for ok in [
            "g.a",
            "test.ase",
            "test1.x.y",
            "test3.a-b_c~d",
            "peer.config",
            "private.SEND_ONLY_CLIENT",
            "local.x",
            "self.x",
            "example.alice",
        ] {
            assert!(Address::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "g", "test", "test4.a", "test.", "test..a", "test.a.", ".test.a", "test.a b", "test.a=", "test.a/b",
            "TEST.a", "test.ä",
        ] {
            assert_eq!(Address::new(bad), Err(Error::InvalidAddress), "{bad}");
        }
        let long = format!("g.{}", "a".repeat(MAX_ADDRESS_LEN - 2));
        assert!(Address::new(long.clone()).is_ok());
        assert!(Address::new(format!("{long}a")).is_err());

        let base = Address::new("test.ase").unwrap();
        let full = Address::new("test.ase.tok.extra").unwrap();
        assert_eq!(full.segment_after(&base), Some("tok"));
        assert_eq!(full.child_part(&base), Some("tok.extra"));
        assert!(full.has_prefix(&base));
        assert!(base.has_prefix(&base));
        assert_eq!(base.segment_after(&base), None);
        let other = Address::new("test.asex.tok").unwrap();
        assert_eq!(other.segment_after(&base), None);
        assert!(!other.has_prefix(&base));
        assert_eq!(full.scheme(), "test");
        assert_eq!(base.with_segment("abc").unwrap().as_str(), "test.ase.abc");
        assert!(base.with_segment("a.").is_err());
    }

    #[test]
    fn timestamps() {
        assert!(Timestamp::parse("20240229235959999").is_ok());
        for bad in [
            "2023022900000000",
            "202302290000000000",
            "20230229000000000",
            "20231301000000000",
            "20230001000000000",
            "20230100000000000",
            "20230101240000000",
            "20230101006000000",
            "20230101000060000",
            "2023010100000000a",
            "19000229000000000",
        ] {
            assert_eq!(Timestamp::parse(bad), Err(Error::InvalidTimestamp), "{bad}");
        }
        assert!(Timestamp::parse("20000229000000000").is_ok());
        let epoch = Timestamp::from_unix_millis(0).unwrap();
        assert_eq!(epoch.as_str(), "19700101000000000");
        assert_eq!(epoch.unix_millis(), 0);
        let before = Timestamp::from_unix_millis(-1).unwrap();
        assert_eq!(before.as_str(), "19691231235959999");
        assert!(before < epoch);
        // IL-DCP test vector time: 1434412860000 = 2015-06-16T00:01:00.000Z.
        assert_eq!(
            Timestamp::from_unix_millis(1_434_412_860_000).unwrap().as_str(),
            "20150616000100000"
        );
        let max = Timestamp::parse("99991231235959999").unwrap();
        assert_eq!(Timestamp::from_unix_millis(max.unix_millis()).unwrap(), max);
        assert!(Timestamp::from_unix_millis(max.unix_millis() + 1).is_err());
        let min = Timestamp::parse("00000101000000000").unwrap();
        assert_eq!(Timestamp::from_unix_millis(min.unix_millis()).unwrap(), min);
        assert!(Timestamp::from_unix_millis(min.unix_millis() - 1).is_err());
        assert!(Timestamp::from_unix_millis(i64::MAX).is_err());
        assert!(Timestamp::from_unix_millis(i64::MIN).is_err());
        // Every day over a few leap cycles round-trips.
        let start = Timestamp::parse("19950101000000000").unwrap().unix_millis();
        for day in 0..(366 * 12) {
            let ms = start + day * MILLIS_PER_DAY + 12_345_678;
            assert_eq!(Timestamp::from_unix_millis(ms).unwrap().unix_millis(), ms);
        }
    }

    #[test]
    fn error_codes_and_f08() {
        assert_eq!(ErrorCode::parse("F08").unwrap(), ErrorCode::F08_AMOUNT_TOO_LARGE);
        assert_eq!(ErrorCode::T04_INSUFFICIENT_LIQUIDITY.class(), ErrorClass::Temporary);
        assert_eq!(ErrorCode::R00_TRANSFER_TIMED_OUT.class(), ErrorClass::Relative);
        assert_eq!(ErrorCode::F02_UNREACHABLE.name(), Some("Unreachable"));
        assert!(ErrorCode::parse("F0").is_err());
        assert!(ErrorCode::parse("F 0").is_err());
        assert_eq!(ErrorCode::parse("X42").unwrap().class(), ErrorClass::Unknown);

        let r = Reject::amount_too_large(Some(Address::new("test.ase").unwrap()), 1500, 1000);
        assert_eq!(r.data, [0, 0, 0, 0, 0, 0, 0x05, 0xdc, 0, 0, 0, 0, 0, 0, 0x03, 0xe8]);
        let back = Reject::decode(&r.encode().unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.message, "Amount Too Large");
        assert_eq!(
            back.amount_too_large_data(),
            Some(AmountTooLarge {
                received_amount: 1500,
                maximum_amount: 1000
            })
        );
        assert!(AmountTooLarge::decode(&[0; 15]).is_err());

        // Empty triggeredBy round-trips as None; invalid UTF-8 message is decoded lossily.
        let anon = Reject {
            code: ErrorCode::T00_INTERNAL_ERROR,
            triggered_by: None,
            message: String::new(),
            data: vec![],
        };
        let bytes = anon.encode().unwrap();
        assert_eq!(bytes, [14, 6, b'T', b'0', b'0', 0, 0, 0]);
        assert_eq!(Reject::decode(&bytes).unwrap(), anon);
        let lossy = [14, 7, b'T', b'0', b'0', 0, 1, 0xff, 0];
        assert_eq!(Reject::decode(&lossy).unwrap().message, "\u{fffd}");
    }
}
