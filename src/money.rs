//! Money: asset identity (code + scale) and amounts as checked integers in minor units.
//!
//! Owns parsing of wire amounts (canonical decimal strings only) and formatting for people.
//! Never uses floats; every value fits `i64` so it can be stored in SQLite as an INTEGER.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an amount or asset was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("amount value must be a string of decimal digits without sign or leading zeros, got {0:?}")]
    NotCanonical(String),
    #[error("amount value {0} is larger than the maximum {max}", max = i64::MAX)]
    TooLarge(String),
    #[error("amount must be greater than zero")]
    Zero,
    #[error("asset code must be 1 to 16 letters or digits, got {0:?}")]
    BadAssetCode(String),
    #[error("asset codes are upper case (ISO 4217 style): {0:?} would be another asset than {upper:?}", upper = .0.to_ascii_uppercase())]
    LowerCaseAssetCode(String),
    #[error("an asset code is 3 to 12 letters A-Z (ISO 4217 style, e.g. USD), got {0:?}")]
    AssetCodeShape(String),
    #[error("asset {found} does not match the wallet's asset {expected}")]
    AssetMismatch { expected: Asset, found: Asset },
    #[error("arithmetic overflow")]
    Overflow,
}

/// An asset: ISO 4217-like code plus the number of decimal places of its minor unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asset {
    pub code: String,
    pub scale: u8,
}

impl Asset {
    /// An asset an operator issues (a new wallet address): the code has the ISO 4217 shape, 3 to 12 upper-case
    /// letters, so `usd` is not silently a different asset from `USD`. Stored and wire codes (which other ASEs
    /// chose) are read with [`Asset::new`], a peer's with [`Asset::of_peer`].
    pub fn defined(code: &str, scale: u8) -> Result<Self, MoneyError> {
        let asset = Self::new(code, scale)?;
        if (3..=12).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_alphabetic()) {
            if code.bytes().any(|b| b.is_ascii_lowercase()) {
                return Err(MoneyError::LowerCaseAssetCode(code.to_owned()));
            }
            return Ok(asset);
        }
        Err(MoneyError::AssetCodeShape(code.to_owned()))
    }

    /// A peer's asset as the operator configures it: the code the peer uses (as [`Asset::new`]), in upper case.
    pub fn of_peer(code: &str, scale: u8) -> Result<Self, MoneyError> {
        let asset = Self::new(code, scale)?;
        if code.bytes().any(|b| b.is_ascii_lowercase()) {
            return Err(MoneyError::LowerCaseAssetCode(code.to_owned()));
        }
        Ok(asset)
    }

    /// Validates a code as stored or sent: 1..=16 ASCII letters or digits, kept as given.
    pub fn new(code: &str, scale: u8) -> Result<Self, MoneyError> {
        if code.is_empty() || code.len() > 16 || !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(MoneyError::BadAssetCode(code.to_owned()));
        }
        Ok(Self {
            code: code.to_owned(),
            scale,
        })
    }

    /// Formats `value` minor units as a decimal with this asset's scale, e.g. `1234` → `12.34 USD`.
    pub fn format(&self, value: i128) -> String {
        format!("{} {}", format_minor(value, self.scale), self.code)
    }
}

impl fmt::Display for Asset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.code, self.scale)
    }
}

/// Formats minor units with `scale` decimal places (no asset code), e.g. `-5`, 2 → `-0.05`.
pub fn format_minor(value: i128, scale: u8) -> String {
    let negative = value < 0;
    let digits = value.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let body = if scale == 0 {
        digits
    } else if digits.len() > scale {
        let (int, frac) = digits.split_at(digits.len() - scale);
        format!("{int}.{frac}")
    } else {
        format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
    };
    if negative { format!("-{body}") } else { body }
}

/// A non-negative amount in minor units that fits in `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Value(u64);

impl Value {
    pub const ZERO: Value = Value(0);

    /// A value from an integer; refuses anything above `i64::MAX`.
    pub fn new(v: u64) -> Result<Self, MoneyError> {
        if v > i64::MAX as u64 {
            return Err(MoneyError::TooLarge(v.to_string()));
        }
        Ok(Self(v))
    }

    /// Parses the wire form: `0` or a non-zero digit followed by digits; nothing else.
    pub fn parse(s: &str) -> Result<Self, MoneyError> {
        let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
        if !canonical {
            return Err(MoneyError::NotCanonical(s.to_owned()));
        }
        let v: u64 = s.parse().map_err(|_| MoneyError::TooLarge(s.to_owned()))?;
        Self::new(v).map_err(|_| MoneyError::TooLarge(s.to_owned()))
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// The value as stored in SQLite.
    pub fn as_i64(self) -> i64 {
        // Invariant: constructed values never exceed i64::MAX.
        i64::try_from(self.0).unwrap_or(i64::MAX)
    }

    /// Reads a stored value; negative or out-of-range values are refused.
    pub fn from_i64(v: i64) -> Result<Self, MoneyError> {
        u64::try_from(v).map(Self).map_err(|_| MoneyError::Overflow)
    }

    pub fn checked_add(self, other: Value) -> Result<Value, MoneyError> {
        self.0
            .checked_add(other.0)
            .ok_or(MoneyError::Overflow)
            .and_then(|v| Value::new(v).map_err(|_| MoneyError::Overflow))
    }

    pub fn checked_sub(self, other: Value) -> Result<Value, MoneyError> {
        self.0.checked_sub(other.0).map(Value).ok_or(MoneyError::Overflow)
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(itoa::Buffer::new().format(self.0))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an unsigned integer amount as a string of decimal digits")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
                Value::parse(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// The Open Payments `amount` object: `{value, assetCode, assetScale}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Amount {
    pub value: Value,
    pub asset_code: String,
    pub asset_scale: u8,
}

/// `12.34 USD`: the one way amounts are shown to people (CLI, console, interaction page). The asset code
/// came from a client and is shown without control characters.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}",
            format_minor(i128::from(self.value.get()), self.asset_scale),
            crate::text::sanitize(&self.asset_code)
        )
    }
}

impl Amount {
    pub fn new(value: Value, asset: &Asset) -> Self {
        Self {
            value,
            asset_code: asset.code.clone(),
            asset_scale: asset.scale,
        }
    }

    pub fn asset(&self) -> Asset {
        Asset {
            code: self.asset_code.clone(),
            scale: self.asset_scale,
        }
    }

    /// Checks the amount is denominated in `expected`.
    pub fn expect_asset(&self, expected: &Asset) -> Result<Value, MoneyError> {
        let found = self.asset();
        if &found != expected {
            return Err(MoneyError::AssetMismatch {
                expected: expected.clone(),
                found,
            });
        }
        Ok(self.value)
    }
}

/// Parses `10`, `10.5` or `10.50` as minor units of an asset with `scale` decimals.
pub fn parse_major(s: &str, scale: u8) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if frac.len() > usize::from(scale) {
        return None;
    }
    let digits = format!("{int}{frac:0<width$}", width = usize::from(scale));
    let v: u64 = digits.trim_start_matches('0').parse().unwrap_or(0);
    (v <= i64::MAX as u64 && digits.len() <= 19).then_some(v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn operators_define_assets_in_upper_case() {
        assert_eq!(Asset::defined("USD", 2).unwrap(), Asset::new("USD", 2).unwrap());
        assert!(Asset::defined("USDC", 6).is_ok() && Asset::defined("ABCDEFGHIJKL", 0).is_ok());
        for shape in ["US", "USDC1", "ABCDEFGHIJKLM", "U$D"] {
            assert!(
                matches!(
                    Asset::defined(shape, 2),
                    Err(MoneyError::AssetCodeShape(_) | MoneyError::BadAssetCode(_))
                ),
                "{shape}"
            );
        }
        assert!(Asset::new("USDC1", 6).is_ok(), "another ASE's code is read as it is");
        let e = Asset::defined("usd", 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "asset codes are upper case (ISO 4217 style): \"usd\" would be another asset than \"USD\""
        );
        assert!(matches!(Asset::defined("U-D", 2), Err(MoneyError::BadAssetCode(_))));
        assert!(
            Asset::new("usd", 2).is_ok(),
            "stored and wire codes are still read as they are"
        );
    }

    use super::*;

    #[test]
    fn canonical_values_only() {
        for ok in ["0", "1", "10", "9223372036854775807"] {
            assert!(Value::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            " 1",
            "1 ",
            "1e3",
            "0x10",
            "１",
            "1.0",
            "00",
            "9223372036854775808",
            "18446744073709551616",
            "99999999999999999999999",
        ] {
            assert!(Value::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn json_value_must_be_a_string() {
        assert!(serde_json::from_str::<Value>("1").is_err());
        assert!(serde_json::from_str::<Value>("null").is_err());
        assert_eq!(serde_json::from_str::<Value>("\"12\"").unwrap(), Value(12));
        assert_eq!(serde_json::to_string(&Value(12)).unwrap(), "\"12\"");
    }

    #[test]
    fn amount_rejects_unknown_fields_and_big_scale() {
        assert!(serde_json::from_str::<Amount>(r#"{"value":"1","assetCode":"USD","assetScale":256}"#).is_err());
        assert!(serde_json::from_str::<Amount>(r#"{"value":"1","assetCode":"USD","assetScale":2,"x":1}"#).is_err());
    }

    #[test]
    fn formats_minor_units() {
        assert_eq!(format_minor(1234, 2), "12.34");
        assert_eq!(format_minor(5, 2), "0.05");
        assert_eq!(format_minor(-5, 2), "-0.05");
        assert_eq!(format_minor(7, 0), "7");
        assert_eq!(Asset::new("USD", 2).unwrap().format(100), "1.00 USD");
    }

    #[test]
    fn checked_maths() {
        let max = Value::new(i64::MAX as u64).unwrap();
        assert!(max.checked_add(Value(1)).is_err());
        assert!(Value(1).checked_sub(Value(2)).is_err());
        assert!(Value::new(u64::MAX).is_err());
    }
    #[test]
    fn amounts_in_major_units() {
        assert_eq!(parse_major("10.50", 2), Some(1050));
        assert_eq!(parse_major("10", 2), Some(1000));
        assert_eq!(parse_major("0.5", 2), Some(50));
        assert_eq!(parse_major("7", 0), Some(7));
        for bad in ["", "1.234", "-1", "1e3", "abc", ".5", "99999999999999999999"] {
            assert_eq!(parse_major(bad, 2), None, "{bad}");
        }
    }
}
