//! Canonical OER primitives used by ILPv4, IL-DCP and STREAM: a bounds-checked [`Reader`] over a
//! byte slice and an append-only [`Writer`] over a `Vec<u8>`. It owns fixed-width big-endian
//! integers, length prefixes (short form `< 128`, long form `0x80 | n` with canonical checks),
//! variable-length octet strings and VarUInts (including STREAM's saturating variant). It knows
//! nothing about packet layouts and never panics: every read returns a [`Result`] and no
//! allocation is sized from an untrusted length before that length has been checked against the
//! remaining input.

use super::Error;

/// Largest number of bytes a (non-saturating) VarUInt may occupy.
pub const MAX_VAR_UINT_LEN: usize = 8;

/// A cursor over borrowed bytes. Reads consume from the front; on error the reader's position is
/// unspecified and the reader should be discarded.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// Bytes not consumed yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The unconsumed bytes (without consuming them).
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Fails with [`Error::TrailingBytes`] unless the input has been consumed completely.
    pub fn expect_end(&self) -> Result<(), Error> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Error::TrailingBytes(self.buf.len()))
        }
    }

    /// Consumes exactly `n` bytes.
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.buf.len() {
            return Err(Error::Truncated {
                needed: n,
                remaining: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Consumes a fixed-size octet string.
    pub fn read_array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let bytes = self.read_bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// Reads one byte.
    pub fn read_u8(&mut self) -> Result<u8, Error> {
        Ok(self.read_array::<1>()?[0])
    }

    /// Reads a big-endian `u16`.
    pub fn read_u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_be_bytes(self.read_array()?))
    }

    /// Reads a big-endian `u32`.
    pub fn read_u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_be_bytes(self.read_array()?))
    }

    /// Reads a big-endian `u64` (the fixed 8-byte ILP amount).
    pub fn read_u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_be_bytes(self.read_array()?))
    }

    /// Reads an OER length determinant. The long form must be canonical: at least one length
    /// byte, no leading zero byte, and a value of at least 128 (as oer-utils enforces).
    pub fn read_length_prefix(&mut self) -> Result<usize, Error> {
        let first = self.read_u8()?;
        if first & 0x80 == 0 {
            return Ok(usize::from(first));
        }
        let n = usize::from(first & 0x7f);
        if n == 0 {
            return Err(Error::NonCanonicalLength);
        }
        if n > 8 {
            return Err(Error::LengthTooLarge);
        }
        let bytes = self.read_bytes(n)?;
        if bytes.first() == Some(&0) {
            return Err(Error::NonCanonicalLength);
        }
        let value = be_to_u64(bytes);
        if value < 128 {
            return Err(Error::NonCanonicalLength);
        }
        usize::try_from(value).map_err(|_| Error::LengthTooLarge)
    }

    /// Reads a length-prefixed octet string, borrowing it from the input.
    pub fn read_var_octet_string(&mut self) -> Result<&'a [u8], Error> {
        let len = self.read_length_prefix()?;
        self.read_bytes(len)
    }

    /// Reads a VarUInt: a var-octet-string of 1..=8 big-endian bytes. Non-minimal encodings
    /// (leading zero bytes) are accepted; an empty or longer-than-8-byte value is an error.
    pub fn read_var_uint(&mut self) -> Result<u64, Error> {
        let bytes = self.read_var_octet_string()?;
        if bytes.is_empty() {
            return Err(Error::EmptyVarUInt);
        }
        if bytes.len() > MAX_VAR_UINT_LEN {
            return Err(Error::VarUIntTooLarge(bytes.len()));
        }
        Ok(be_to_u64(bytes))
    }

    /// Reads a VarUInt of any length, saturating values above `u64::MAX` to `u64::MAX`
    /// (RFC 29 `StreamMaxMoney.receiveMax` / `StreamMoneyBlocked.sendMax`). Leading zero bytes are
    /// ignored, so a long but small value decodes exactly.
    pub fn read_var_uint_saturating(&mut self) -> Result<u64, Error> {
        let bytes = self.read_var_octet_string()?;
        if bytes.is_empty() {
            return Err(Error::EmptyVarUInt);
        }
        let mut significant = bytes;
        while let [0, rest @ ..] = significant {
            significant = rest;
        }
        if significant.len() > MAX_VAR_UINT_LEN {
            Ok(u64::MAX)
        } else {
            Ok(be_to_u64(significant))
        }
    }
}

/// Big-endian bytes (at most 8) to `u64`.
fn be_to_u64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// The minimal big-endian representation of `value`: 1..=8 bytes.
fn minimal_be(value: u64) -> ([u8; 8], usize) {
    let bytes = value.to_be_bytes();
    // leading_zeros() <= 64, so this is 0..=8 bytes of zeros; keep at least one byte.
    let skip = usize::try_from(value.leading_zeros() / 8).map_or(7, |s| s.min(7));
    (bytes, skip)
}

/// The minimal big-endian bytes of `value` (at least one byte).
fn minimal_be_bytes(value: &([u8; 8], usize)) -> &[u8] {
    value.0.get(value.1..).unwrap_or(&value.0)
}

/// Number of bytes [`Writer::write_length_prefix`] emits for `len`.
pub fn length_prefix_len(len: usize) -> usize {
    if len < 128 {
        1
    } else {
        1 + minimal_be_bytes(&minimal_be(len as u64)).len()
    }
}

/// Number of bytes [`Writer::write_var_octet_string`] emits for a payload of `len` bytes.
pub fn var_octet_string_len(len: usize) -> usize {
    length_prefix_len(len).saturating_add(len)
}

/// Number of bytes [`Writer::write_var_uint`] emits for `value`.
pub fn var_uint_len(value: u64) -> usize {
    1 + minimal_be_bytes(&minimal_be(value)).len()
}

/// An append-only OER encoder. Encoding cannot fail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes written so far.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// Consumes the writer, returning its bytes.
    pub fn into_vec(self) -> Vec<u8> {
        self.buf
    }

    /// Appends raw bytes (a fixed-size octet string).
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Appends one byte.
    pub fn write_u8(&mut self, value: u8) {
        self.buf.push(value);
    }

    /// Appends a big-endian `u16`.
    pub fn write_u16(&mut self, value: u16) {
        self.write_bytes(&value.to_be_bytes());
    }

    /// Appends a big-endian `u32`.
    pub fn write_u32(&mut self, value: u32) {
        self.write_bytes(&value.to_be_bytes());
    }

    /// Appends a big-endian `u64`.
    pub fn write_u64(&mut self, value: u64) {
        self.write_bytes(&value.to_be_bytes());
    }

    /// Appends a canonical length determinant.
    pub fn write_length_prefix(&mut self, len: usize) {
        if let Ok(short) = u8::try_from(len)
            && short < 0x80
        {
            self.write_u8(short);
        } else {
            let be = minimal_be(len as u64);
            let bytes = minimal_be_bytes(&be);
            // 1..=8 length bytes, so the count always fits in the low seven bits.
            let count = u8::try_from(bytes.len()).unwrap_or(8);
            self.write_u8(0x80 | count);
            self.write_bytes(bytes);
        }
    }

    /// Appends a length-prefixed octet string.
    pub fn write_var_octet_string(&mut self, bytes: &[u8]) {
        self.write_length_prefix(bytes.len());
        self.write_bytes(bytes);
    }

    /// Appends a VarUInt in its minimal form (`0` → `01 00`).
    pub fn write_var_uint(&mut self, value: u64) {
        self.write_var_octet_string(minimal_be_bytes(&minimal_be(value)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_len(len: usize) -> Vec<u8> {
        let mut w = Writer::new();
        w.write_length_prefix(len);
        w.into_vec()
    }

    fn encode_var_uint(v: u64) -> Vec<u8> {
        let mut w = Writer::new();
        w.write_var_uint(v);
        w.into_vec()
    }

    #[test]
    fn length_prefix_forms() {
        assert_eq!(encode_len(0), [0x00]);
        assert_eq!(encode_len(127), [0x7f]);
        assert_eq!(encode_len(128), [0x81, 0x80]);
        assert_eq!(encode_len(255), [0x81, 0xff]);
        assert_eq!(encode_len(256), [0x82, 0x01, 0x00]);
        assert_eq!(encode_len(300), [0x82, 0x01, 0x2c]);
        assert_eq!(encode_len(32767), [0x82, 0x7f, 0xff]);
        assert_eq!(encode_len(65536), [0x83, 0x01, 0x00, 0x00]);
        for len in [0usize, 1, 127, 128, 255, 256, 300, 32767, 65535, 65536, 1 << 24] {
            let enc = encode_len(len);
            assert_eq!(enc.len(), length_prefix_len(len));
            let mut r = Reader::new(&enc);
            assert_eq!(r.read_length_prefix().unwrap(), len);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn length_prefix_rejects_non_canonical() {
        // 0x80: long form with zero length bytes.
        assert_eq!(
            Reader::new(&[0x80]).read_length_prefix(),
            Err(Error::NonCanonicalLength)
        );
        // 5 in long form.
        assert_eq!(
            Reader::new(&[0x81, 0x05]).read_length_prefix(),
            Err(Error::NonCanonicalLength)
        );
        // 127 in long form.
        assert_eq!(
            Reader::new(&[0x81, 0x7f]).read_length_prefix(),
            Err(Error::NonCanonicalLength)
        );
        // 200 with a leading zero byte.
        assert_eq!(
            Reader::new(&[0x82, 0x00, 0xc8]).read_length_prefix(),
            Err(Error::NonCanonicalLength)
        );
        // Nine length bytes.
        assert_eq!(
            Reader::new(&[0x89, 1, 0, 0, 0, 0, 0, 0, 0, 0]).read_length_prefix(),
            Err(Error::LengthTooLarge)
        );
        // Truncated long form.
        assert!(matches!(
            Reader::new(&[0x82, 0x01]).read_length_prefix(),
            Err(Error::Truncated { .. })
        ));
    }

    #[test]
    fn huge_length_does_not_allocate_or_panic() {
        let input = [0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00];
        assert!(matches!(
            Reader::new(&input).read_var_octet_string(),
            Err(Error::Truncated { .. }) | Err(Error::LengthTooLarge)
        ));
    }

    #[test]
    fn var_uint_vectors() {
        // oer-utils writer.spec.ts values.
        let cases: &[(u64, &[u8])] = &[
            (0, &[0x01, 0x00]),
            (16, &[0x01, 0x10]),
            (255, &[0x01, 0xff]),
            (256, &[0x02, 0x01, 0x00]),
            (259, &[0x02, 0x01, 0x03]),
            (0x0102_0305, &[0x04, 0x01, 0x02, 0x03, 0x05]),
            (9_007_199_254_740_991, &[0x07, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            (1 << 56, &[0x08, 0x01, 0, 0, 0, 0, 0, 0, 0]),
            (u64::MAX, &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        ];
        for &(value, bytes) in cases {
            assert_eq!(encode_var_uint(value), bytes, "encode {value}");
            assert_eq!(var_uint_len(value), bytes.len());
            let mut r = Reader::new(bytes);
            assert_eq!(r.read_var_uint().unwrap(), value);
            assert!(r.is_empty());
            assert_eq!(Reader::new(bytes).read_var_uint_saturating().unwrap(), value);
        }
    }

    #[test]
    fn var_uint_edge_cases() {
        // Non-minimal is accepted.
        assert_eq!(Reader::new(&[0x02, 0x00, 0x05]).read_var_uint(), Ok(5));
        // Empty is rejected.
        assert_eq!(Reader::new(&[0x00]).read_var_uint(), Err(Error::EmptyVarUInt));
        assert_eq!(
            Reader::new(&[0x00]).read_var_uint_saturating(),
            Err(Error::EmptyVarUInt)
        );
        // Nine bytes: error, or saturate.
        let nine = [0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(Reader::new(&nine).read_var_uint(), Err(Error::VarUIntTooLarge(9)));
        assert_eq!(Reader::new(&nine).read_var_uint_saturating(), Ok(u64::MAX));
        // Nine bytes with a leading zero still fits.
        let small = [0x09, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x2a];
        assert_eq!(Reader::new(&small).read_var_uint_saturating(), Ok(42));
        assert_eq!(Reader::new(&[0x03, 0, 0, 0]).read_var_uint_saturating(), Ok(0));
    }

    #[test]
    fn fixed_width_round_trip() {
        let mut w = Writer::with_capacity(15);
        w.write_u8(0xab);
        w.write_u16(0x0102);
        w.write_u32(0x0304_0506);
        w.write_u64(0x0708_090a_0b0c_0d0e);
        let bytes = w.into_vec();
        assert_eq!(bytes.len(), 15);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.read_u8().unwrap(), 0xab);
        assert_eq!(r.read_u16().unwrap(), 0x0102);
        assert_eq!(r.read_u32().unwrap(), 0x0304_0506);
        assert_eq!(r.read_u64().unwrap(), 0x0708_090a_0b0c_0d0e);
        r.expect_end().unwrap();
        assert!(matches!(r.read_u8(), Err(Error::Truncated { .. })));
    }

    #[test]
    fn expect_end_reports_trailing() {
        let r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.expect_end(), Err(Error::TrailingBytes(3)));
    }
}
