//! Quoting arithmetic for local receivers: the operator's exchange-rate table (exact decimals, no floats),
//! per-asset sending fees, and the fixed-send / fixed-receive quote computations. Pure; no I/O. A leaf (it
//! imports only `money`): `settings` parses the table, `ase` quotes with it.
//!
//! Conversions round in the ASE's favour: what the receiver gets rounds down, what the sender pays rounds up.

use std::collections::BTreeMap;

use crate::money::Asset;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    #[error("no exchange rate from {0} to {1} is configured")]
    NoRate(String, String),
    #[error("invalid rate {key:?} = {value:?}: {reason}")]
    BadRate {
        key: String,
        value: String,
        reason: &'static str,
    },
    #[error("the amount is too small to deliver anything after fees and conversion")]
    TooSmall,
    #[error("the amount is too large")]
    TooLarge,
}

/// The smallest `d` ≥ 1 for which `delivers(d)` is `Some(true)`, given that it is monotone (false then true);
/// `None` when no such `d` ≤ `i64::MAX` exists or `delivers` answers `None` (cannot price) before one is found.
pub fn smallest(mut delivers: impl FnMut(u64) -> Option<bool>) -> Option<u64> {
    let max = i64::MAX as u64;
    let mut hi = 1u64;
    loop {
        if delivers(hi)? {
            break;
        }
        if hi == max {
            return None;
        }
        hi = hi.saturating_mul(2).min(max);
    }
    // delivers(hi); not delivers(lo) (or lo == 0)
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if delivers(mid).unwrap_or(true) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// A sending fee for one wallet: `fixed + ceil(amount × basis_points / 10000)`, in that wallet's minor units
/// ([`Rates::fee`] resolves a [`FeeRule`] for the wallet's scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fee {
    pub fixed: u64,
    pub basis_points: u32,
}

/// A sending fee as `[fees]` writes it for an asset code: `fixed` is a decimal string in major units
/// (`"0.03"`: three cents whatever a wallet's scale, rounded up to its minor unit) or, as before, an integer of
/// minor units at each wallet's own scale (`3` costs a USD/2 wallet 0.03 and a USD/0 wallet 3).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeRule {
    #[serde(default)]
    pub fixed: FixedFee,
    #[serde(default)]
    pub basis_points: u32,
}

/// The fixed part of a [`FeeRule`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub enum FixedFee {
    /// Minor units of the paying wallet's own scale.
    Minor(u64),
    /// Major units, an exact decimal.
    Major(String),
}

impl Default for FixedFee {
    fn default() -> Self {
        Self::Minor(0)
    }
}

impl From<Fee> for FeeRule {
    fn from(f: Fee) -> Self {
        Self {
            fixed: FixedFee::Minor(f.fixed),
            basis_points: f.basis_points,
        }
    }
}

/// A [`FeeRule`] with its decimal parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fixed {
    Minor(u64),
    Major(Ratio),
}

impl Fee {
    pub fn on(&self, amount: u64) -> Result<u64, RateError> {
        let variable = (u128::from(amount) * u128::from(self.basis_points)).div_ceil(10_000);
        let total = variable + u128::from(self.fixed);
        u64::try_from(total).map_err(|_| RateError::TooLarge)
    }
}

/// A rate as an exact fraction `num / den` of major units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ratio {
    num: u128,
    den: u128,
}

fn parse_decimal(key: &str, value: &str) -> Result<Ratio, RateError> {
    let bad = |reason| RateError::BadRate {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    };
    let (int, frac) = value.split_once('.').unwrap_or((value, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("must be a positive decimal such as 0.90"));
    }
    if int.len() > 12 || frac.len() > 18 {
        return Err(bad("at most 12 integer and 18 decimal digits"));
    }
    let den = 10u128.pow(u32::try_from(frac.len()).map_err(|_| bad("too many digits"))?);
    let num: u128 = format!("{int}{frac}").parse().map_err(|_| bad("not a number"))?;
    if num == 0 {
        return Err(bad("must be greater than zero"));
    }
    Ok(Ratio { num, den })
}

/// The operator's rates and fees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rates {
    rates: BTreeMap<(String, String), Ratio>,
    fees: BTreeMap<String, (Fixed, u32)>,
}

impl Rates {
    /// From `"FROM:TO" = "rate"` entries and fees per asset code.
    pub fn new(rates: &BTreeMap<String, String>, fees: &BTreeMap<String, FeeRule>) -> Result<Self, RateError> {
        let mut out = BTreeMap::new();
        for (k, v) in rates {
            let (from, to) = k
                .split_once(':')
                .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
                .ok_or(RateError::BadRate {
                    key: k.clone(),
                    value: v.clone(),
                    reason: "the key must be FROM:TO, e.g. USD:EUR",
                })?;
            out.insert((from.to_owned(), to.to_owned()), parse_decimal(k, v)?);
        }
        let mut parsed = BTreeMap::new();
        for (code, f) in fees {
            let fixed = match &f.fixed {
                FixedFee::Minor(n) => Fixed::Minor(*n),
                FixedFee::Major(text) => {
                    let key = format!("fees.{code}.fixed");
                    if text.trim_start_matches(['0', '.']).is_empty() && !text.is_empty() {
                        Fixed::Minor(0)
                    } else {
                        Fixed::Major(parse_decimal(&key, text)?)
                    }
                }
            };
            parsed.insert(code.clone(), (fixed, f.basis_points));
        }
        Ok(Self {
            rates: out,
            fees: parsed,
        })
    }

    /// These rates with `quotes` from a rates service laid over them: `quotes[to]` is what one `base` buys of
    /// `to`, in major units (the reference ASE's `{"base":"USD","rates":{"EUR":0.9}}`). A quote that is not a
    /// usable rate is an error naming it; the service's rates win over the table's for the same pair.
    pub fn overlay(&self, base: &str, quotes: &BTreeMap<String, f64>) -> Result<Self, RateError> {
        let mut out = self.clone();
        for (to, v) in quotes {
            if to == base {
                continue;
            }
            let key = format!("{base}:{to}");
            if !v.is_finite() || *v <= 0.0 {
                return Err(RateError::BadRate {
                    key,
                    value: v.to_string(),
                    reason: "must be a positive number",
                });
            }
            let text = format!("{v:.12}");
            let text = text.trim_end_matches('0').trim_end_matches('.');
            let r = parse_decimal(&key, text)?;
            out.rates.remove(&(to.clone(), base.to_owned()));
            out.rates.insert((base.to_owned(), to.clone()), r);
        }
        Ok(out)
    }

    /// The exact rate from `from` to `to` in minor units, as `(num, den)`: `amount × num / den` of `to` per
    /// `amount` of `from`.
    pub fn minor_ratio(&self, from: &Asset, to: &Asset) -> Result<(u128, u128), RateError> {
        let r = self.ratio(&from.code, &to.code)?;
        let scale = |s: u8| 10u128.checked_pow(u32::from(s)).ok_or(RateError::TooLarge);
        let num = r.num.checked_mul(scale(to.scale)?).ok_or(RateError::TooLarge)?;
        let den = r.den.checked_mul(scale(from.scale)?).ok_or(RateError::TooLarge)?;
        Ok((num, den))
    }

    /// The rate money moving from `from` to `to` is converted at: the `FROM:TO` entry, else the inverse of
    /// `TO:FROM`. A quote in either direction uses this one pair (never the reverse entry), so a table that
    /// lists both directions (a buy/sell spread) prices fixed-send and fixed-receive alike.
    fn ratio(&self, from: &str, to: &str) -> Result<Ratio, RateError> {
        if from == to {
            return Ok(Ratio { num: 1, den: 1 });
        }
        if let Some(r) = self.rates.get(&(from.to_owned(), to.to_owned())) {
            return Ok(*r);
        }
        if let Some(r) = self.rates.get(&(to.to_owned(), from.to_owned())) {
            return Ok(Ratio { num: r.den, den: r.num });
        }
        Err(RateError::NoRate(from.to_owned(), to.to_owned()))
    }

    /// Converts minor units of `from` into minor units of `to`, rounding down or up.
    pub fn convert(&self, amount: u64, from: &Asset, to: &Asset, round_up: bool) -> Result<u64, RateError> {
        let r = self.ratio(&from.code, &to.code)?;
        let scale = |s: u8| 10u128.checked_pow(u32::from(s)).ok_or(RateError::TooLarge);
        let num = u128::from(amount)
            .checked_mul(r.num)
            .and_then(|v| v.checked_mul(scale(to.scale).ok()?))
            .ok_or(RateError::TooLarge)?;
        let den = r.den.checked_mul(scale(from.scale)?).ok_or(RateError::TooLarge)?;
        let v = if round_up { num.div_ceil(den) } else { num / den };
        let v = u64::try_from(v).map_err(|_| RateError::TooLarge)?;
        if v > i64::MAX as u64 {
            return Err(RateError::TooLarge);
        }
        Ok(v)
    }

    /// The fee a wallet in `asset` pays, in its minor units (a decimal fixed part rounded up to them).
    pub fn fee(&self, asset: &Asset) -> Fee {
        let Some((fixed, basis_points)) = self.fees.get(&asset.code).copied() else {
            return Fee::default();
        };
        let fixed = match fixed {
            Fixed::Minor(n) => n,
            Fixed::Major(r) => 10u128
                .checked_pow(u32::from(asset.scale))
                .and_then(|s| r.num.checked_mul(s))
                .and_then(|v| u64::try_from(v.div_ceil(r.den)).ok())
                .unwrap_or(u64::MAX),
        };
        Fee { fixed, basis_points }
    }

    /// Fixed-send: the sender pays `debit`; the fee comes out of it; returns (receive, fee).
    pub fn fixed_send(&self, debit: u64, from: &Asset, to: &Asset) -> Result<(u64, u64), RateError> {
        let fee = self.fee(from).on(debit)?;
        let net = debit.checked_sub(fee).filter(|n| *n > 0).ok_or(RateError::TooSmall)?;
        let receive = self.convert(net, from, to, false)?;
        if receive == 0 {
            return Err(RateError::TooSmall);
        }
        Ok((receive, fee))
    }

    /// The smallest debit in `from` that [`Rates::fixed_send`] prices (delivers at least one unit of `to`).
    pub fn min_send(&self, from: &Asset, to: &Asset) -> Option<u64> {
        smallest(|d| match self.fixed_send(d, from, to) {
            Ok(_) => Some(true),
            Err(RateError::TooSmall) => Some(false),
            Err(_) => None,
        })
    }

    /// Fixed-receive: the smallest debit whose [`Rates::fixed_send`] delivers at least `receive` (the same
    /// pair, rate and fee rule, so a fixed-receive quote is never cheaper than a fixed-send one); returns
    /// (debit, fee).
    pub fn fixed_receive(&self, receive: u64, from: &Asset, to: &Asset) -> Result<(u64, u64), RateError> {
        // the net that buys `receive` at the `from → to` rate, rounded up, is where the search starts: the
        // fee only adds to it
        let (num, den) = self.minor_ratio(from, to)?;
        let net = u128::from(receive)
            .checked_mul(den)
            .map(|v| v.div_ceil(num))
            .and_then(|v| u64::try_from(v).ok())
            .filter(|v| *v <= i64::MAX as u64)
            .ok_or(RateError::TooLarge)?
            .max(1);
        let delivers = |d: u64| match self.fixed_send(d, from, to) {
            Ok((got, _)) => Some(got >= receive),
            Err(RateError::TooSmall) => Some(false),
            Err(_) => None,
        };
        let debit = match delivers(net) {
            Some(true) => net,
            _ => {
                // above `net`: double from it, then halve back (fixed_send is monotone in the debit)
                let mut hi = net;
                loop {
                    if hi >= i64::MAX as u64 {
                        return Err(RateError::TooLarge);
                    }
                    hi = hi.saturating_mul(2).min(i64::MAX as u64);
                    match delivers(hi) {
                        Some(true) => break,
                        Some(false) => {}
                        None => return Err(RateError::TooLarge),
                    }
                }
                let mut lo = net;
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if delivers(mid) == Some(true) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                hi
            }
        };
        let fee = self.fee(from).on(debit)?;
        Ok((debit, fee))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_finds_the_first_delivering_debit_or_none() {
        for want in [1u64, 2, 3, 7, 8, 9, 1000, 123_457, i64::MAX as u64] {
            assert_eq!(smallest(|d| Some(d >= want)), Some(want), "{want}");
        }
        assert_eq!(smallest(|_| Some(false)), None);
        assert_eq!(smallest(|d| if d > 4 { None } else { Some(false) }), None);
    }

    #[test]
    fn min_send_is_exact_across_currencies_and_fees() {
        let cases = [
            (None, 2u8, 2u8),
            (
                Some(Fee {
                    fixed: 3,
                    basis_points: 125,
                }),
                2,
                2,
            ),
            (None, 2, 0),
            (
                Some(Fee {
                    fixed: 0,
                    basis_points: 9_999,
                }),
                9,
                2,
            ),
        ];
        for (fee, from_scale, to_scale) in cases {
            let r = rates(fee);
            let from = Asset {
                code: "USD".into(),
                scale: from_scale,
            };
            let to = Asset {
                code: "EUR".into(),
                scale: to_scale,
            };
            let min = r.min_send(&from, &to).unwrap();
            assert!(r.fixed_send(min, &from, &to).is_ok(), "{fee:?} {from_scale} {to_scale}");
            assert_eq!(r.fixed_send(min - 1, &from, &to), Err(RateError::TooSmall), "{fee:?}");
        }
        let all_fee = rates(Some(Fee {
            fixed: 0,
            basis_points: 10_000,
        }));
        assert_eq!(all_fee.min_send(&usd(), &eur()), None);
    }

    fn rates(fee: Option<Fee>) -> Rates {
        let r = BTreeMap::from([("USD:EUR".to_owned(), "0.90".to_owned())]);
        let f = fee
            .map(|f| BTreeMap::from([("USD".to_owned(), f.into())]))
            .unwrap_or_default();
        Rates::new(&r, &f).unwrap()
    }

    fn usd() -> Asset {
        Asset::new("USD", 2).unwrap()
    }
    fn eur() -> Asset {
        Asset::new("EUR", 2).unwrap()
    }

    #[test]
    fn conversions_are_exact_and_round_for_the_ase() {
        let r = rates(None);
        assert_eq!(r.convert(1000, &usd(), &eur(), false).unwrap(), 900);
        assert_eq!(r.convert(1001, &usd(), &eur(), false).unwrap(), 900);
        assert_eq!(r.convert(1001, &usd(), &eur(), true).unwrap(), 901);
        assert_eq!(r.convert(900, &eur(), &usd(), true).unwrap(), 1000);
        assert_eq!(
            r.convert(901, &eur(), &usd(), true).unwrap(),
            1002,
            "901/0.9 = 1001.1 → 1002"
        );
        assert_eq!(
            r.convert(5, &usd(), &Asset::new("USD", 4).unwrap(), false).unwrap(),
            500
        );
        assert!(matches!(
            r.convert(5, &usd(), &Asset::new("JPY", 0).unwrap(), false),
            Err(RateError::NoRate(..))
        ));
        assert!(
            r.convert(u64::MAX / 2, &usd(), &Asset::new("USD", 18).unwrap(), false)
                .is_err()
        );
    }

    #[test]
    fn fees_come_out_of_fixed_send_and_are_added_to_fixed_receive() {
        let r = rates(Some(Fee {
            fixed: 10,
            basis_points: 100,
        }));
        // 1000 debit: fee 10 + 1% = 20; 980 USD → 882 EUR
        assert_eq!(r.fixed_send(1000, &usd(), &eur()).unwrap(), (882, 20));
        // 900 EUR needs a net 1000 USD; the fee is on the debit (as fixed-send takes it): 1021 - (10 + 11)
        assert_eq!(r.fixed_receive(900, &usd(), &eur()).unwrap(), (1021, 21));
        assert_eq!(r.fixed_send(1021, &usd(), &eur()).unwrap(), (900, 21));
        assert_eq!(
            r.fixed_send(1020, &usd(), &eur()).unwrap().0,
            899,
            "one less does not buy it"
        );
        assert_eq!(r.fixed_send(10, &usd(), &eur()), Err(RateError::TooSmall));
        let min = r.min_send(&usd(), &eur()).unwrap();
        assert!(r.fixed_send(min, &usd(), &eur()).is_ok());
        assert_eq!(r.fixed_send(min - 1, &usd(), &eur()), Err(RateError::TooSmall));
        let same = rates(None);
        assert_eq!(same.fixed_send(250, &usd(), &usd()).unwrap(), (250, 0));
        assert_eq!(same.fixed_receive(250, &usd(), &usd()).unwrap(), (250, 0));
    }

    #[test]
    fn a_rates_service_overlays_the_table() {
        let table = rates(None);
        let quotes = BTreeMap::from([
            ("EUR".to_owned(), 0.8),
            ("GBP".to_owned(), 0.75),
            ("USD".to_owned(), 1.0),
        ]);
        let r = table.overlay("USD", &quotes).unwrap();
        assert_eq!(r.convert(1000, &usd(), &eur(), false).unwrap(), 800, "the service wins");
        assert_eq!(r.convert(800, &eur(), &usd(), false).unwrap(), 1000, "and its inverse");
        let gbp = Asset::new("GBP", 2).unwrap();
        assert_eq!(r.convert(1000, &usd(), &gbp, false).unwrap(), 750);
        assert_eq!(r.minor_ratio(&usd(), &gbp).unwrap(), (7500, 10_000), "0.75, unreduced");
        assert_eq!(
            r.minor_ratio(&usd(), &Asset::new("GBP", 4).unwrap()).unwrap(),
            (750_000, 10_000)
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                table
                    .overlay("USD", &BTreeMap::from([("EUR".to_owned(), bad)]))
                    .is_err()
            );
        }
        let tiny = table
            .overlay("USD", &BTreeMap::from([("JPY".to_owned(), 1e-5)]))
            .unwrap();
        let jpy = Asset::new("JPY", 0).unwrap();
        assert_eq!(tiny.convert(100_000_000, &usd(), &jpy, false).unwrap(), 10);
    }

    #[test]
    fn bad_rates_are_named() {
        for (k, v) in [
            ("USD:EUR", "-1"),
            ("USD:EUR", "0"),
            ("USD:EUR", "1e3"),
            ("USDEUR", "1"),
            ("USD:USD", "1"),
        ] {
            let r = BTreeMap::from([(k.to_owned(), v.to_owned())]);
            assert!(Rates::new(&r, &BTreeMap::new()).is_err(), "{k}={v}");
        }
    }

    #[test]
    fn both_directions_listed_price_each_quote_through_the_pair_the_money_moves_through() {
        let table = BTreeMap::from([
            ("USD:EUR".to_owned(), "0.90".to_owned()),
            ("EUR:USD".to_owned(), "1.05".to_owned()),
        ]);
        let r = Rates::new(&table, &BTreeMap::new()).unwrap();
        assert_eq!(r.fixed_send(1050, &usd(), &eur()).unwrap(), (945, 0));
        // 10.00 EUR bought with USD costs what USD:EUR asks (11.12), not 10.50 by EUR:USD
        assert_eq!(r.fixed_receive(1000, &usd(), &eur()).unwrap(), (1112, 0));
        // and EUR → USD uses EUR:USD
        assert_eq!(r.fixed_send(1000, &eur(), &usd()).unwrap(), (1050, 0));
        assert_eq!(r.fixed_receive(1050, &eur(), &usd()).unwrap(), (1000, 0));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn rate() -> impl Strategy<Value = String> {
            (1u64..5_000_000, 0u32..7).prop_map(|(n, d)| {
                let s = format!("{n:0>8}");
                let cut = s.len() - d as usize;
                let (i, f) = s.split_at(cut);
                let i = i.trim_start_matches('0');
                let i = if i.is_empty() { "0" } else { i };
                if f.is_empty() { i.to_owned() } else { format!("{i}.{f}") }
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]
            /// A fixed-receive quote is the cheapest debit a fixed-send quote of the same pair would deliver
            /// it with: never cheaper than the fixed-send rate, with or without the reverse entry, any scales
            /// and fees.
            #[test]
            fn fixed_receive_is_the_least_fixed_send_that_delivers(
                fwd in rate(), back in proptest::option::of(rate()),
                fs in 0u8..10, ts in 0u8..10, fixed in 0u64..500, bp in 0u32..3000,
                receive in 1u64..10_000_000_000,
            ) {
                let mut table = BTreeMap::from([("USD:EUR".to_owned(), fwd)]);
                if let Some(b) = back {
                    table.insert("EUR:USD".to_owned(), b);
                }
                let fees = BTreeMap::from([("USD".to_owned(), Fee { fixed, basis_points: bp }.into())]);
                let Ok(r) = Rates::new(&table, &fees) else { return Ok(()) };
                let (from, to) = (Asset::new("USD", fs).unwrap(), Asset::new("EUR", ts).unwrap());
                let Ok((debit, fee)) = r.fixed_receive(receive, &from, &to) else { return Ok(()) };
                let (got, send_fee) = r.fixed_send(debit, &from, &to).unwrap();
                prop_assert!(got >= receive, "{debit} delivers {got} < {receive}");
                prop_assert_eq!(fee, send_fee);
                if debit > 1 {
                    let less = r.fixed_send(debit - 1, &from, &to).map(|(g, _)| g).unwrap_or(0);
                    prop_assert!(less < receive, "{} already delivers {less} >= {receive}", debit - 1);
                }
            }
        }
    }

    #[test]
    fn a_decimal_fixed_fee_is_the_same_money_at_every_scale() {
        let rule = |fixed: FixedFee| {
            let fees = BTreeMap::from([("USD".to_owned(), FeeRule { fixed, basis_points: 0 })]);
            Rates::new(&BTreeMap::new(), &fees).unwrap()
        };
        let usd = |scale| Asset::new("USD", scale).unwrap();
        let r = rule(FixedFee::Major("0.03".into()));
        assert_eq!(r.fee(&usd(2)).fixed, 3);
        assert_eq!(r.fee(&usd(6)).fixed, 30_000);
        assert_eq!(r.fee(&usd(0)).fixed, 1, "rounded up to the wallet's minor unit");
        let legacy = rule(FixedFee::Minor(3));
        assert_eq!((legacy.fee(&usd(0)).fixed, legacy.fee(&usd(6)).fixed), (3, 3));
        assert_eq!(rule(FixedFee::Major("0".into())).fee(&usd(2)).fixed, 0);
        let bad = BTreeMap::from([(
            "USD".to_owned(),
            FeeRule {
                fixed: FixedFee::Major("three".into()),
                basis_points: 0,
            },
        )]);
        assert!(Rates::new(&BTreeMap::new(), &bad).is_err());
        let parsed: FeeRule = toml::from_str("fixed = \"0.25\"\nbasis_points = 10").unwrap();
        assert_eq!(parsed.fixed, FixedFee::Major("0.25".into()));
        let parsed: FeeRule = toml::from_str("fixed = 7").unwrap();
        assert_eq!(parsed.fixed, FixedFee::Minor(7));
    }
}
