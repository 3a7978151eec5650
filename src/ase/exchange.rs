//! Exchange rates as the quoting services see them: the operator's `[rates]` table, with the rates service
//! at `[exchange_rates] url` laid over it when one is set (the reference ASE's shape: `GET {url}?base=USD` →
//! `{"base":"USD","rates":{"EUR":0.9}}`). Each base currency's answer is reused for `cache_secs`; a failed
//! fetch is logged, remembered for a few seconds (the service is not hammered) and the table is used.
//! [`Inflow`] values a packet that arrived through a peer in a receiver's asset at those rates.
//! Reads only: writes nothing, and the URL is the operator's (private addresses are fine).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::{
    egress::{self, Egress},
    money::Asset,
    rates::{Fee, RateError, Rates},
    settings::ExchangeRateSettings,
};

/// How long a failed fetch is remembered before the service is asked again.
const FAILURE_TTL: Duration = Duration::from_secs(5);
/// The largest answer read from the rates service.
const MAX_BODY: usize = 256 * 1024;

/// The rates in force. Cheap to clone.
#[derive(Clone)]
pub struct Exchange(Arc<Inner>);

struct Inner {
    table: Rates,
    service: Option<Service>,
}

struct Service {
    url: String,
    ttl: Duration,
    http: Egress,
    /// Per base currency: when fetched, and what (the overlaid rates, or why not).
    cache: Mutex<HashMap<String, Fetched>>,
}

/// When the rates for one base were fetched, and what came of it.
type Fetched = (Instant, Result<Rates, String>);

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("service", &self.0.service.as_ref().map(|s| &s.url))
            .finish_non_exhaustive()
    }
}

impl Exchange {
    /// The table alone.
    pub fn table(table: Rates) -> Self {
        Self(Arc::new(Inner { table, service: None }))
    }

    /// The table, with the rates service of `settings` over it when a URL is set.
    pub fn new(table: Rates, settings: &ExchangeRateSettings) -> Result<Self, egress::EgressError> {
        if settings.url.is_empty() {
            return Ok(Self::table(table));
        }
        let timeout = Duration::from_millis(settings.timeout_ms.max(100));
        let http = Egress::new(egress::Policy::operator(timeout, MAX_BODY))?;
        Ok(Self(Arc::new(Inner {
            table,
            service: Some(Service {
                url: settings.url.clone(),
                ttl: Duration::from_secs(settings.cache_secs),
                http,
                cache: Mutex::new(HashMap::new()),
            }),
        })))
    }

    /// The sending fee rule for `asset` (fees come from the table only).
    pub fn fee(&self, asset: &Asset) -> Fee {
        self.0.table.fee(asset)
    }

    /// The rates to convert from `base` with: the service's for `base` over the table, or the table alone
    /// (no service, or it failed: the failure is logged).
    pub async fn rates(&self, base: &Asset) -> Rates {
        let Some(s) = &self.0.service else {
            return self.0.table.clone();
        };
        let cached = s.cache.lock().ok().and_then(|c| {
            c.get(&base.code).and_then(|(at, r)| {
                let ttl = if r.is_ok() { s.ttl } else { FAILURE_TTL };
                (at.elapsed() < ttl).then(|| r.clone())
            })
        });
        let got = match cached {
            Some(r) => r,
            None => {
                let r = self.fetch(s, &base.code).await;
                if let Err(why) = &r {
                    tracing::warn!(url = %s.url, base = %base.code, error = %why, "the rates service failed; using [rates]");
                }
                if let Ok(mut c) = s.cache.lock() {
                    c.insert(base.code.clone(), (Instant::now(), r.clone()));
                }
                r
            }
        };
        got.unwrap_or_else(|_| self.0.table.clone())
    }

    async fn fetch(&self, s: &Service, base: &str) -> Result<Rates, String> {
        let mut url = url::Url::parse(&s.url).map_err(|e| e.to_string())?;
        url.query_pairs_mut().append_pair("base", base);
        let reply = s.http.get_json(url.as_str()).await.map_err(|e| e.to_string())?;
        if reply.status != 200 {
            return Err(format!("it answered {}", reply.status));
        }
        let body: Answer = serde_json::from_slice(&reply.body).map_err(|e| format!("its answer is not rates: {e}"))?;
        if body.base != base {
            return Err(format!("it answered for base {:?}, not {base:?}", body.base));
        }
        self.0.table.overlay(base, &body.rates).map_err(|e| e.to_string())
    }
}

/// A packet arriving through a peer: `amount` of the link's asset, and the rates in force when it arrived
/// (the link's asset as the base). What it is worth to a receiver is [`Inflow::value_in`] its asset.
#[derive(Debug, Clone)]
pub struct Inflow {
    pub link: Asset,
    pub amount: u64,
    rates: Rates,
}

impl Inflow {
    pub fn new(link: Asset, amount: u64, rates: Rates) -> Self {
        Self { link, amount, rates }
    }

    /// The packet's value in `to`, rounded down (the ASE keeps the fraction): the amount itself within one
    /// asset and scale, else converted through the `link → to` pair; `NoRate` when the pair has no rate.
    pub fn value_in(&self, to: &Asset) -> Result<u64, RateError> {
        if &self.link == to {
            return Ok(self.amount);
        }
        self.rates.convert(self.amount, &self.link, to, false)
    }

    /// What to credit a receiver in `to`: the packet's value, refused when the pair has no rate, when it does
    /// not fit, or when it is nothing or less than the sender's minimum `min`.
    pub fn credit(&self, to: &Asset, min: u64) -> Result<u64, Unvalued> {
        match self.value_in(to) {
            Ok(v) if v > 0 && v >= min => Ok(v),
            Ok(_) => Err(Unvalued::BelowMinimum),
            Err(RateError::NoRate(..)) => Err(Unvalued::NoRate(format!(
                "no exchange rate from {} (the link's asset) to {}",
                self.link.code, to.code
            ))),
            Err(_) => Err(Unvalued::TooLarge),
        }
    }
}

/// Why a packet credits nothing ([`Inflow::credit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unvalued {
    /// No rate for the pair, said in words.
    NoRate(String),
    TooLarge,
    BelowMinimum,
}

/// What the rates service answers.
#[derive(serde::Deserialize)]
struct Answer {
    base: String,
    rates: BTreeMap<String, f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A rates service on loopback answering `body` (or 500 when `None`) and counting requests.
    async fn service(body: Option<&'static str>) -> (String, Arc<AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                assert!(head.starts_with("GET /rates?base=USD "), "{head}");
                let answer = match body {
                    Some(b) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                        b.len()
                    ),
                    None => "HTTP/1.1 500 Oops\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                };
                let _ = sock.write_all(answer.as_bytes()).await;
            }
        });
        (format!("http://{addr}/rates"), hits)
    }

    fn table() -> Rates {
        Rates::new(
            &BTreeMap::from([("USD:EUR".to_owned(), "0.90".to_owned())]),
            &BTreeMap::new(),
        )
        .unwrap()
    }

    fn settings(url: String) -> ExchangeRateSettings {
        ExchangeRateSettings {
            url,
            cache_secs: 60,
            timeout_ms: 2000,
        }
    }

    #[tokio::test]
    async fn the_service_wins_and_is_asked_once_per_base_while_fresh() {
        let (url, hits) = service(Some(r#"{"base":"USD","rates":{"EUR":0.8,"GBP":0.75}}"#)).await;
        let x = Exchange::new(table(), &settings(url)).unwrap();
        let (usd, eur) = (Asset::new("USD", 2).unwrap(), Asset::new("EUR", 2).unwrap());
        for _ in 0..3 {
            let r = x.rates(&usd).await;
            assert_eq!(r.convert(1000, &usd, &eur, false).unwrap(), 800);
        }
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failing_service_falls_back_on_the_table() {
        let (url, hits) = service(None).await;
        let x = Exchange::new(table(), &settings(url)).unwrap();
        let (usd, eur) = (Asset::new("USD", 2).unwrap(), Asset::new("EUR", 2).unwrap());
        assert_eq!(x.rates(&usd).await.convert(1000, &usd, &eur, false).unwrap(), 900);
        assert_eq!(x.rates(&usd).await.convert(1000, &usd, &eur, false).unwrap(), 900);
        assert_eq!(hits.load(Ordering::SeqCst), 1, "a failure is remembered for a moment");
        let (url, _) = service(Some(r#"{"base":"EUR","rates":{"USD":1.2}}"#)).await;
        let wrong_base = Exchange::new(table(), &settings(url)).unwrap();
        assert_eq!(
            wrong_base.rates(&usd).await.convert(1000, &usd, &eur, false).unwrap(),
            900
        );
    }
}
