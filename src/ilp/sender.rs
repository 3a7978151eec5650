//! The STREAM sender (STREAM.md §2.2): pays an ILP address and shared secret (an Open Payments
//! `methods[ilp]`) through one ILP-over-HTTP peer. A [`Connection`] sends its packets through an
//! injectable [`Transport`] ([`HttpTransport`] in production): a hello (`ConnectionNewAddress("")`) to learn
//! the receiver's asset, unfulfillable probes to learn the exchange rate (shrinking on `F08`), money packets
//! with a minimum destination amount (one at a time, or built with [`Connection::money_packet`] and several
//! in flight at once through its [`Pipe`], each with its own sequence number), and a closing
//! `ConnectionClose`. The decisions are pure functions: [`Rate`] arithmetic (exact rationals, no floats),
//! [`next_packet`] (how much to send and to demand) and [`judge`] (what a reply means, with the receiver's
//! total for the connection when a fulfillment carries it). A final reject other than `F08` that carries an
//! authentic STREAM reply is the receiver's answer, whatever its code: `F99` from ilp-protocol-stream and
//! Rafiki's older receivers, `F05` (not accepted, probes included) and `F04` (too little arrived) from
//! `@interledger/stream-receiver` 0.3. Progress is not kept here: the engine commits it per window of packets.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use http::{HeaderMap, HeaderValue, Method, header};

use super::{
    Address, AmountTooLarge, ErrorClass, ErrorCode, Frame, Packet, PacketType, Prepare, StreamErrorCode, StreamPacket,
    Timestamp,
    crypto::{StreamKeys, condition_for, random_condition},
};
use crate::egress::{self, Egress, EgressError};

/// A boxed future, for the object-safe [`Transport`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Carries one OER Prepare to the peer and brings back its OER reply.
pub trait Transport: Send + Sync {
    /// The reply bytes, or a description of why there was none (the sender treats that like `T00`).
    fn send(&self, prepare: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>>;
}

/// ILP-over-HTTP, synchronous mode (RFC 35 as Rafiki speaks it): `POST` with `Authorization: Bearer`,
/// `Content-Type: application/octet-stream`; the `200` body is the reply. Requests go through an
/// [`Egress`] client with the operator's policy (the peer's URL is configured by the operator, so private
/// addresses are allowed) and a body cap no ILP reply comes near.
pub struct HttpTransport {
    http: Result<Egress, EgressError>,
    endpoint: String,
    /// The request headers, built once: content type, accept and the bearer token (`None`: the token is
    /// not a valid header value).
    headers: Option<HeaderMap>,
}

/// Largest ILP-over-HTTP reply read (an ILP packet is at most ~32 KiB of data plus its envelope).
const MAX_REPLY_BYTES: usize = 64 * 1024;

impl HttpTransport {
    pub fn new(endpoint: &str, token: &str, timeout: Duration) -> Self {
        let headers = HeaderValue::from_str(&format!("Bearer {token}")).ok().map(|bearer| {
            let octets = HeaderValue::from_static("application/octet-stream");
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, octets.clone());
            h.insert(header::ACCEPT, octets);
            h.insert(header::AUTHORIZATION, bearer);
            h
        });
        Self {
            http: Egress::new(egress::Policy::operator(timeout, MAX_REPLY_BYTES)),
            endpoint: endpoint.to_owned(),
            headers,
        }
    }
}

impl Transport for HttpTransport {
    fn send(&self, prepare: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let http = self.http.as_ref().map_err(|e| format!("peer client: {e}"))?;
            let headers = self
                .headers
                .clone()
                .ok_or_else(|| "peer token is not a valid header".to_owned())?;
            let res = http
                .send(Method::POST, &self.endpoint, headers, prepare)
                .await
                .map_err(|e| format!("peer request failed: {e}"))?;
            if !(200..300).contains(&res.status) {
                return Err(format!("peer answered HTTP {}", res.status));
            }
            Ok(res.body)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Rates

/// An exchange rate: `num` destination units per `den` source units, kept reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub num: u128,
    pub den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rate {
    /// `None` when `den` is zero.
    pub fn new(num: u128, den: u128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Self {
            num: num / g,
            den: den / g,
        })
    }

    /// Parses `num/den` (as [`std::fmt::Display`] writes it).
    pub fn parse(s: &str) -> Option<Self> {
        let (n, d) = s.split_once('/')?;
        Self::new(n.parse().ok()?, d.parse().ok()?)
    }

    fn apply(&self, amount: u64, num: u128, den: u128, round_up: bool) -> Option<u64> {
        if den == 0 {
            return None;
        }
        let x = u128::from(amount).checked_mul(num)?;
        let v = if round_up { x.div_ceil(den) } else { x / den };
        u64::try_from(v).ok()
    }

    /// Destination units `source` buys, rounded down.
    pub fn dest_floor(&self, source: u64) -> Option<u64> {
        self.apply(source, self.num, self.den, false)
    }

    /// Source units needed to deliver `dest`, rounded up (`None` for a zero rate).
    pub fn source_ceil(&self, dest: u64) -> Option<u64> {
        self.apply(dest, self.den, self.num, true)
    }

    /// Source units that deliver at most `dest`, rounded down (`None` for a zero rate).
    pub fn source_floor(&self, dest: u64) -> Option<u64> {
        self.apply(dest, self.den, self.num, false)
    }

    /// `self ≥ other`.
    pub fn at_least(&self, other: &Rate) -> bool {
        match (self.num.checked_mul(other.den), other.num.checked_mul(self.den)) {
            (Some(a), Some(b)) => a >= b,
            // only for astronomically unbalanced rates; a comparison, not money
            _ => (self.num as f64 / self.den as f64) >= (other.num as f64 / other.den as f64),
        }
    }

    /// The rate times `1 − ppm/10⁶`.
    pub fn less_slippage(&self, ppm: u64) -> Option<Rate> {
        let keep = 1_000_000u128.checked_sub(u128::from(ppm))?;
        Self::new(self.num.checked_mul(keep)?, self.den.checked_mul(1_000_000)?)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// The next money packet: `(source amount, minimum destination amount)`, or `None` when nothing is left to
/// send. `max_source` bounds what the payment may send in all, `target` what it must deliver; `cap` is the
/// largest packet (peer maximum, pacing); `room` what the receiver said it still takes (`StreamMaxMoney`).
/// The source amount aims at the remaining delivery at the estimated rate; the minimum destination is
/// the source at the minimum rate, never more than what is left to deliver.
#[allow(clippy::too_many_arguments)]
pub fn next_packet(
    max_source: u64,
    target: u64,
    sent: u64,
    delivered: u64,
    estimated: &Rate,
    minimum: &Rate,
    cap: u64,
    room: Option<u64>,
) -> Option<(u64, u64)> {
    let remaining_source = max_source.checked_sub(sent).filter(|r| *r > 0)?;
    let mut want = target.checked_sub(delivered).filter(|r| *r > 0)?;
    if let Some(room) = room {
        want = want.min(room);
        if want == 0 {
            return None;
        }
    }
    let for_rest = if room.is_some() {
        estimated.source_floor(want)
    } else {
        estimated.source_ceil(want)
    }
    .unwrap_or(remaining_source)
    .max(1);
    let source = remaining_source.min(cap.max(1)).min(for_rest);
    let min_dest = minimum.dest_floor(source).unwrap_or(0).min(want);
    Some((source, min_dest))
}

// ---------------------------------------------------------------------------------------------
// Replies

/// A reply with its decrypted, authentic STREAM packet (if any: it must decrypt and echo our sequence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Fulfill {
        fulfillment: [u8; 32],
        stream: Option<StreamPacket>,
    },
    Reject {
        code: ErrorCode,
        message: String,
        data: Vec<u8>,
        stream: Option<StreamPacket>,
    },
}

/// What a reply to a money packet means for the payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Fulfilled: `delivered` destination units arrived; `closed` if the receiver closes too; `total` what
    /// the receiver says this connection delivered in all, with this packet (`StreamMaxMoney.totalReceived` of
    /// stream 1), when it says so.
    Fulfilled {
        delivered: u64,
        closed: bool,
        total: Option<u64>,
    },
    /// `F08`: packets must be at most `max` source units.
    TooLarge { max: u64 },
    /// A temporary failure (`T..`, `R..`, transport): try again later.
    Temporary(String),
    /// A STREAM refusal (`F99`, `F05`, `F04`) with `StreamMaxMoney`: the receiver takes at most `room` more.
    ReceiverRoom { room: u64 },
    /// A STREAM refusal: less than the minimum destination amount arrived.
    RateTooLow { received: u64 },
    /// The receiver closed the connection or the stream.
    Closed(String),
    /// A final rejection.
    Failed(String),
}

/// What a reply says the connection delivered in all on stream 1 (`StreamMaxMoney.totalReceived`).
fn stream_total(s: &StreamPacket) -> Option<u64> {
    s.frames.iter().find_map(|f| match f {
        Frame::StreamMaxMoney {
            stream_id: 1,
            total_received,
            ..
        } => Some(*total_received),
        _ => None,
    })
}

fn close_reason(s: &StreamPacket) -> Option<String> {
    s.frames.iter().find_map(|f| match f {
        Frame::ConnectionClose { code, message } | Frame::StreamClose { code, message, .. } => {
            Some(format!("{} {}", code.name().unwrap_or("closed"), message))
        }
        _ => None,
    })
}

/// Judges the reply to a money packet of `source` units that demanded `min_dest` with `condition`.
pub fn judge(reply: &Reply, condition: &[u8; 32], source: u64, min_dest: u64) -> Verdict {
    match reply {
        Reply::Fulfill { fulfillment, stream } => {
            if condition_for(fulfillment) != *condition {
                return Verdict::Failed("the fulfillment does not match the condition".into());
            }
            let arrived = stream.as_ref().map_or(min_dest, |s| s.prepare_amount);
            Verdict::Fulfilled {
                delivered: arrived.max(min_dest),
                closed: stream.as_ref().is_some_and(|s| s.has_connection_close()),
                total: stream.as_ref().and_then(stream_total),
            }
        }
        Reply::Reject {
            code,
            message,
            data,
            stream,
        } => {
            let described = || format!("{} {}", code.as_str(), message).trim_end().to_owned();
            if *code == ErrorCode::F08_AMOUNT_TOO_LARGE {
                let max = match AmountTooLarge::decode(data) {
                    Ok(d) if d.received_amount > 0 => {
                        let m = u128::from(source) * u128::from(d.maximum_amount) / u128::from(d.received_amount);
                        u64::try_from(m).unwrap_or(u64::MAX)
                    }
                    _ => source / 2,
                };
                let max = max.min(source.saturating_sub(1));
                return if max == 0 {
                    Verdict::Failed(format!("{}: the path takes no packet of any size", described()))
                } else {
                    Verdict::TooLarge { max }
                };
            }
            // Any other final reject that carries an authentic STREAM reply is the receiver's answer: F99 from
            // most receivers, F05 (not accepted) and F04 (too little arrived) from stream-receiver 0.3.
            if code.class() == ErrorClass::Final
                && let Some(s) = stream
            {
                if let Some(reason) = close_reason(s) {
                    return Verdict::Closed(reason);
                }
                let room = s.frames.iter().find_map(|f| match f {
                    Frame::StreamMaxMoney {
                        receive_max,
                        total_received,
                        ..
                    } => Some(receive_max.saturating_sub(*total_received)),
                    _ => None,
                });
                if let Some(room) = room {
                    return Verdict::ReceiverRoom { room };
                }
                if s.prepare_amount < min_dest {
                    return Verdict::RateTooLow {
                        received: s.prepare_amount,
                    };
                }
                return Verdict::Temporary(format!("{}: the receiver refused the packet", described()));
            }
            if *code == ErrorCode::F99_APPLICATION_ERROR {
                return Verdict::Failed(format!("{} without an authentic STREAM reply", described()));
            }
            match code.class() {
                ErrorClass::Temporary | ErrorClass::Relative => Verdict::Temporary(described()),
                _ => Verdict::Failed(described()),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The connection

/// Why a connection could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The receiver or the path answered with a final error, or temporary ones past the retry budget.
    #[error("the receiver is unreachable: {0}")]
    Unreachable(String),
    /// The receiver closed the connection.
    #[error("the receiver closed the connection: {0}")]
    Closed(String),
    /// Building a packet failed (random source, encoding).
    #[error("cannot build a packet: {0}")]
    Local(String),
}

/// One STREAM connection to a receiver through a peer. Not `Clone`: it owns the sequence counter.
pub struct Connection {
    transport: Arc<dyn Transport>,
    destination: Address,
    keys: Arc<StreamKeys>,
    sequence: u64,
    expiry: Duration,
    /// Largest source amount per packet (configured for the peer, or learned from `F08`).
    pub max_packet: Option<u64>,
    /// The receiver's asset, from `ConnectionAssetDetails`.
    pub asset: Option<(String, u8)>,
    /// How many times temporary failures are retried within one operation.
    pub retries: u32,
    /// First backoff between retries (doubled each time, at most one second).
    pub backoff: Duration,
}

impl Connection {
    pub fn new(
        transport: Arc<dyn Transport>,
        destination: Address,
        shared_secret: &[u8],
        max_packet: Option<u64>,
        expiry: Duration,
    ) -> Self {
        Self {
            transport,
            destination,
            keys: Arc::new(StreamKeys::derive(shared_secret)),
            sequence: 0,
            expiry,
            max_packet,
            asset: None,
            retries: 5,
            backoff: Duration::from_millis(50),
        }
    }

    pub fn destination(&self) -> &Address {
        &self.destination
    }

    /// Sends one Prepare; returns the reply and the condition used. Transport failures become `T00`.
    async fn exchange(
        &mut self,
        amount: u64,
        min_dest: u64,
        frames: Vec<Frame>,
        fulfillable: bool,
    ) -> Result<(Reply, [u8; 32]), SendError> {
        let (bytes, condition) = self.build(amount, min_dest, frames, fulfillable)?;
        let reply = self.pipe().carry(bytes, self.sequence).await;
        Ok((reply, condition))
    }

    /// Builds the next Prepare (taking the next sequence number): its OER bytes and its condition.
    fn build(
        &mut self,
        amount: u64,
        min_dest: u64,
        frames: Vec<Frame>,
        fulfillable: bool,
    ) -> Result<(Vec<u8>, [u8; 32]), SendError> {
        let local = |e: super::Error| SendError::Local(e.to_string());
        self.sequence += 1;
        let request = StreamPacket {
            sequence: self.sequence,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount: min_dest,
            frames,
        };
        let data = request.encrypt(&self.keys.encryption_key).map_err(local)?;
        let condition = if fulfillable {
            self.keys.condition(&data)
        } else {
            random_condition().map_err(local)?
        };
        let now_ms = i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        let expiry_ms = i64::try_from(self.expiry.as_millis()).unwrap_or(30_000);
        let prepare = Prepare {
            amount,
            expires_at: Timestamp::from_unix_millis(now_ms + expiry_ms).map_err(local)?,
            execution_condition: condition,
            destination: self.destination.clone(),
            data,
        };
        let bytes = prepare.encode().map_err(local)?;
        Ok((bytes, condition))
    }

    /// What carries this connection's packets without borrowing it, so several can be in flight at once.
    pub fn pipe(&self) -> Pipe {
        Pipe {
            transport: self.transport.clone(),
            keys: self.keys.clone(),
        }
    }

    /// Builds the next money packet (`StreamMoney(1)`, fulfillable) without sending it: several built
    /// packets may be in flight at once through [`Connection::pipe`], each with its own sequence number.
    pub fn money_packet(&mut self, source: u64, min_dest: u64) -> Result<MoneyPacket, SendError> {
        let frames = vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }];
        let (bytes, condition) = self.build(source, min_dest, frames, true)?;
        Ok(MoneyPacket {
            bytes,
            condition,
            sequence: self.sequence,
            source,
            min_dest,
        })
    }

    /// How long its Prepares live: each expires this long after it was built.
    pub fn expiry(&self) -> Duration {
        self.expiry
    }

    /// Takes in what a money packet sent through [`Connection::pipe`] taught about the path: an `F08`
    /// lowers [`Connection::max_packet`].
    pub fn learn(&mut self, verdict: &Verdict) {
        if let Verdict::TooLarge { max } = verdict {
            self.max_packet = Some(self.max_packet.map_or(*max, |m| m.min(*max)));
        }
    }
}

/// A money packet built by [`Connection::money_packet`], ready to be sent.
#[derive(Debug, Clone)]
pub struct MoneyPacket {
    bytes: Vec<u8>,
    condition: [u8; 32],
    sequence: u64,
    /// Source units it carries.
    pub source: u64,
    /// The destination units it demands.
    pub min_dest: u64,
}

/// Carries a connection's packets (the transport and the keys, shared): see [`Connection::pipe`].
#[derive(Clone)]
pub struct Pipe {
    transport: Arc<dyn Transport>,
    keys: Arc<StreamKeys>,
}

impl Pipe {
    /// Sends one built money packet and judges its reply.
    pub async fn send_money(&self, packet: &MoneyPacket) -> Verdict {
        let reply = self.carry(packet.bytes.clone(), packet.sequence).await;
        judge(&reply, &packet.condition, packet.source, packet.min_dest)
    }

    /// Sends one Prepare's bytes and reads the reply to the packet of `sequence`. Transport failures
    /// become `T00`.
    async fn carry(&self, bytes: Vec<u8>, sequence: u64) -> Reply {
        match self.transport.send(bytes).await {
            Err(message) => Reply::Reject {
                code: ErrorCode::T00_INTERNAL_ERROR,
                message,
                data: Vec::new(),
                stream: None,
            },
            Ok(bytes) => self.read_reply(&bytes, sequence),
        }
    }

    fn read_reply(&self, bytes: &[u8], sequence: u64) -> Reply {
        let authentic = |data: &[u8], expected: PacketType| {
            StreamPacket::decrypt(&self.keys.encryption_key, data)
                .ok()
                .filter(|s| s.sequence == sequence && s.ilp_packet_type == expected)
        };
        match Packet::decode(bytes) {
            Ok(Packet::Fulfill(f)) => Reply::Fulfill {
                stream: authentic(&f.data, PacketType::Fulfill),
                fulfillment: f.fulfillment,
            },
            Ok(Packet::Reject(r)) => Reply::Reject {
                stream: authentic(&r.data, PacketType::Reject),
                code: r.code,
                message: r.message,
                data: r.data,
            },
            Ok(Packet::Prepare(_)) => Reply::Reject {
                code: ErrorCode::F01_INVALID_PACKET,
                message: "the peer answered with a Prepare".into(),
                data: Vec::new(),
                stream: None,
            },
            Err(e) => Reply::Reject {
                code: ErrorCode::T00_INTERNAL_ERROR,
                message: format!("unreadable reply from the peer: {e}"),
                data: Vec::new(),
                stream: None,
            },
        }
    }
}

impl Connection {
    async fn pause(&self, attempt: u32) {
        let d = self
            .backoff
            .saturating_mul(1u32 << attempt.min(10))
            .min(Duration::from_secs(1));
        tokio::time::sleep(d).await;
    }

    /// Opens the connection: `ConnectionNewAddress("")` on an unfulfillable zero-amount packet; learns the
    /// receiver's asset (`None` if it sent none).
    pub async fn connect(&mut self) -> Result<Option<(String, u8)>, SendError> {
        for attempt in 0..=self.retries {
            let frames = vec![
                Frame::ConnectionNewAddress {
                    source_account: String::new(),
                },
                Frame::ConnectionMaxStreamId { max_stream_id: 1 },
                Frame::ConnectionMaxData { max_offset: 0 },
            ];
            let (reply, _) = self.exchange(0, 0, frames, false).await?;
            let (code, message, stream) = match reply {
                Reply::Fulfill { stream, .. } => (None, String::new(), stream),
                Reply::Reject {
                    code, message, stream, ..
                } => (Some(code), message, stream),
            };
            if let Some(s) = &stream {
                if let Some(reason) = close_reason(s)
                    && s.frames
                        .iter()
                        .any(|f| matches!(f, Frame::ConnectionClose { code, .. } if *code != StreamErrorCode::NO_ERROR))
                {
                    return Err(SendError::Closed(reason));
                }
                self.asset = s.frames.iter().find_map(|f| match f {
                    Frame::ConnectionAssetDetails {
                        source_asset_code,
                        source_asset_scale,
                    } => Some((source_asset_code.clone(), *source_asset_scale)),
                    _ => None,
                });
                return Ok(self.asset.clone());
            }
            let code = code.unwrap_or(ErrorCode::F99_APPLICATION_ERROR);
            let temporary = matches!(code.class(), ErrorClass::Temporary | ErrorClass::Relative);
            if !temporary || attempt == self.retries {
                return Err(SendError::Unreachable(
                    format!("{} {message}", code.as_str()).trim_end().into(),
                ));
            }
            self.pause(attempt).await;
        }
        Err(SendError::Unreachable("no answer".into()))
    }

    /// Probes the exchange rate with an unfulfillable packet of (at most) `amount` source units, shrinking
    /// on `F08`. The rate is what arrived over what was sent.
    pub async fn probe(&mut self, amount: u64) -> Result<Rate, SendError> {
        let mut amount = amount.max(1);
        let mut temporary = 0;
        for _ in 0..(self.retries + 64) {
            if let Some(max) = self.max_packet {
                amount = amount.min(max).max(1);
            }
            let frames = vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }];
            let (reply, condition) = self.exchange(amount, 0, frames, false).await?;
            // the receiver's STREAM answer to the unfulfillable probe (F99, or F05/F04 from newer receivers)
            if let Reply::Reject {
                code, stream: Some(s), ..
            } = &reply
                && code.class() == ErrorClass::Final
                && *code != ErrorCode::F08_AMOUNT_TOO_LARGE
                && close_reason(s).is_none()
            {
                return Rate::new(u128::from(s.prepare_amount), u128::from(amount))
                    .ok_or_else(|| SendError::Local("zero probe amount".into()));
            }
            match judge(&reply, &condition, amount, 0) {
                Verdict::TooLarge { max } => {
                    self.max_packet = Some(max);
                    amount = max;
                }
                Verdict::Temporary(m) => {
                    if temporary >= self.retries {
                        return Err(SendError::Unreachable(m));
                    }
                    self.pause(temporary).await;
                    temporary += 1;
                }
                Verdict::Closed(m) => return Err(SendError::Closed(m)),
                Verdict::Fulfilled { .. } => return Err(SendError::Unreachable("a probe was fulfilled".into())),
                Verdict::Failed(m) => return Err(SendError::Unreachable(m)),
                other => return Err(SendError::Unreachable(format!("{other:?}"))),
            }
        }
        Err(SendError::Unreachable("the probe did not settle".into()))
    }

    /// Sends one money packet (`StreamMoney(1)`, fulfillable) and judges the reply. An `F08` also lowers
    /// [`Connection::max_packet`].
    pub async fn send_money(&mut self, source: u64, min_dest: u64) -> Result<Verdict, SendError> {
        let frames = vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }];
        let (reply, condition) = self.exchange(source, min_dest, frames, true).await?;
        let verdict = judge(&reply, &condition, source, min_dest);
        if let Verdict::TooLarge { max } = verdict {
            self.max_packet = Some(max);
        }
        Ok(verdict)
    }

    /// What the receiver says this connection has delivered in all (`StreamMaxMoney.totalReceived` of
    /// stream 1), asked with a zero-amount money packet; `None` when its answer carries no total.
    pub async fn totals(&mut self) -> Result<Option<u64>, SendError> {
        let mut temporary = 0;
        loop {
            let frames = vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }];
            let (reply, _) = self.exchange(0, 0, frames, true).await?;
            let (stream, code) = match reply {
                Reply::Fulfill { stream, .. } => (stream, None),
                Reply::Reject { stream, code, .. } => (stream, Some(code)),
            };
            if let Some(s) = stream {
                return Ok(stream_total(&s));
            }
            let temporary_code =
                code.is_some_and(|c| matches!(c.class(), ErrorClass::Temporary | ErrorClass::Relative));
            if !temporary_code {
                return Ok(None);
            }
            if temporary >= self.retries {
                return Err(SendError::Unreachable("no total from the receiver".into()));
            }
            self.pause(temporary).await;
            temporary += 1;
        }
    }

    /// Closes the connection (`ConnectionClose(NoError)` on a zero-amount packet); the answer does not matter.
    pub async fn close(&mut self) {
        let frames = vec![Frame::ConnectionClose {
            code: StreamErrorCode::NO_ERROR,
            message: String::new(),
        }];
        if let Err(e) = self.exchange(0, 0, frames, false).await {
            tracing::debug!(error = %e, "closing a STREAM connection failed");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic; see clippy.toml
mod tests {
    use std::sync::{
        Mutex,
        atomic::{AtomicU32, Ordering},
    };

    use super::*;
    use crate::ilp::{Fulfill, Reject};

    fn rate(n: u128, d: u128) -> Rate {
        Rate::new(n, d).unwrap()
    }

    #[test]
    fn rates_reduce_round_and_compare() {
        assert_eq!(rate(10, 4), rate(5, 2));
        assert_eq!(rate(5, 2).to_string(), "5/2");
        assert_eq!(Rate::parse("5/2"), Some(rate(5, 2)));
        assert_eq!(Rate::parse("5/0"), None);
        assert_eq!(rate(9, 10).dest_floor(15), Some(13));
        assert_eq!(rate(9, 10).source_ceil(13), Some(15));
        assert_eq!(rate(9, 10).source_floor(13), Some(14));
        assert_eq!(rate(0, 1).source_ceil(1), None);
        assert!(rate(99, 100).at_least(&rate(98, 100)));
        assert!(!rate(97, 100).at_least(&rate(98, 100)));
        assert_eq!(rate(1, 1).less_slippage(10_000), Some(rate(99, 100)));
        assert!(rate(1, 1).less_slippage(2_000_000).is_none());
        assert_eq!(rate(u128::from(u64::MAX), 1).dest_floor(2), None, "overflow is refused");
    }

    #[test]
    fn packets_aim_at_the_remaining_delivery_within_caps() {
        let one = rate(1, 1);
        let min = rate(99, 100);
        // fixed delivery of 1000 at 1:1, cap 300: 300, 300, 300, 100
        assert_eq!(next_packet(1010, 1000, 0, 0, &one, &min, 300, None), Some((300, 297)));
        assert_eq!(
            next_packet(1010, 1000, 900, 900, &one, &min, 300, None),
            Some((100, 99))
        );
        assert_eq!(next_packet(1010, 1000, 1000, 1000, &one, &min, 300, None), None);
        assert_eq!(
            next_packet(1000, 1000, 1000, 990, &one, &min, 300, None),
            None,
            "source spent"
        );
        // 2:1 rate: 100 to deliver needs 50 source
        assert_eq!(
            next_packet(1000, 100, 0, 0, &rate(2, 1), &rate(198, 100), 300, None),
            Some((50, 99))
        );
        // the receiver's room caps both and rounds the source down
        assert_eq!(
            next_packet(1000, 1000, 0, 0, &rate(3, 2), &min, 1000, Some(10)),
            Some((6, 5))
        );
        assert_eq!(next_packet(1000, 1000, 0, 0, &one, &min, 1000, Some(0)), None);
        // the minimum destination never exceeds what is left to deliver
        assert_eq!(
            next_packet(1000, 5, 0, 0, &rate(1, 2), &rate(1, 1), 1000, None),
            Some((10, 5))
        );
    }

    fn stream(sequence: u64, t: PacketType, amount: u64, frames: Vec<Frame>) -> Option<StreamPacket> {
        Some(StreamPacket {
            sequence,
            ilp_packet_type: t,
            prepare_amount: amount,
            frames,
        })
    }

    fn reject(code: ErrorCode, data: Vec<u8>, s: Option<StreamPacket>) -> Reply {
        Reply::Reject {
            code,
            message: "m".into(),
            data,
            stream: s,
        }
    }

    #[test]
    fn replies_are_judged() {
        let f = [3u8; 32];
        let c = condition_for(&f);
        let fulfill = |s| Reply::Fulfill {
            fulfillment: f,
            stream: s,
        };
        assert_eq!(
            judge(&fulfill(stream(1, PacketType::Fulfill, 120, vec![])), &c, 100, 99),
            Verdict::Fulfilled {
                delivered: 120,
                closed: false,
                total: None
            }
        );
        assert_eq!(
            judge(&fulfill(None), &c, 100, 99),
            Verdict::Fulfilled {
                delivered: 99,
                closed: false,
                total: None
            }
        );
        // the connection's total rides with a fulfillment only as stream 1's `StreamMaxMoney`
        let max_money = |stream_id| Frame::StreamMaxMoney {
            stream_id,
            receive_max: 900,
            total_received: 620,
        };
        let totals = |frames| match judge(&fulfill(stream(1, PacketType::Fulfill, 120, frames)), &c, 100, 99) {
            Verdict::Fulfilled { total, .. } => total,
            other => panic!("{other:?}"),
        };
        assert_eq!(totals(vec![max_money(1)]), Some(620));
        assert_eq!(totals(vec![max_money(3)]), None);
        assert!(matches!(judge(&fulfill(None), &[0; 32], 100, 99), Verdict::Failed(_)));
        let f08 = AmountTooLarge {
            received_amount: 200,
            maximum_amount: 50,
        }
        .encode()
        .to_vec();
        assert_eq!(
            judge(&reject(ErrorCode::F08_AMOUNT_TOO_LARGE, f08, None), &c, 100, 0),
            Verdict::TooLarge { max: 25 }
        );
        assert_eq!(
            judge(&reject(ErrorCode::F08_AMOUNT_TOO_LARGE, vec![], None), &c, 100, 0),
            Verdict::TooLarge { max: 50 }
        );
        assert!(matches!(
            judge(&reject(ErrorCode::F08_AMOUNT_TOO_LARGE, vec![], None), &c, 1, 0),
            Verdict::Failed(_)
        ));
        assert!(matches!(
            judge(&reject(ErrorCode::T04_INSUFFICIENT_LIQUIDITY, vec![], None), &c, 1, 0),
            Verdict::Temporary(_)
        ));
        assert!(matches!(
            judge(&reject(ErrorCode::F02_UNREACHABLE, vec![], None), &c, 1, 0),
            Verdict::Failed(_)
        ));
        let max_money = Frame::StreamMaxMoney {
            stream_id: 1,
            receive_max: 500,
            total_received: 420,
        };
        assert_eq!(
            judge(
                &reject(
                    ErrorCode::F99_APPLICATION_ERROR,
                    vec![],
                    stream(1, PacketType::Reject, 100, vec![max_money])
                ),
                &c,
                100,
                99
            ),
            Verdict::ReceiverRoom { room: 80 }
        );
        assert_eq!(
            judge(
                &reject(
                    ErrorCode::F99_APPLICATION_ERROR,
                    vec![],
                    stream(1, PacketType::Reject, 90, vec![])
                ),
                &c,
                100,
                99
            ),
            Verdict::RateTooLow { received: 90 }
        );
        let close = Frame::ConnectionClose {
            code: StreamErrorCode::APPLICATION_ERROR,
            message: "done".into(),
        };
        assert!(matches!(
            judge(
                &reject(
                    ErrorCode::F99_APPLICATION_ERROR,
                    vec![],
                    stream(1, PacketType::Reject, 100, vec![close])
                ),
                &c,
                100,
                99
            ),
            Verdict::Closed(_)
        ));
        assert!(matches!(
            judge(&reject(ErrorCode::F99_APPLICATION_ERROR, vec![], None), &c, 100, 99),
            Verdict::Failed(_)
        ));
        // newer receivers refuse with F04 (too little arrived) and F05 (not accepted), with the same reply
        for code in [
            ErrorCode::F04_INSUFFICIENT_DESTINATION_AMOUNT,
            ErrorCode::F05_WRONG_CONDITION,
        ] {
            assert_eq!(
                judge(
                    &reject(code, vec![], stream(1, PacketType::Reject, 90, vec![])),
                    &c,
                    100,
                    99
                ),
                Verdict::RateTooLow { received: 90 },
                "{code:?}"
            );
            let room = Frame::StreamMaxMoney {
                stream_id: 1,
                receive_max: 500,
                total_received: 480,
            };
            assert_eq!(
                judge(
                    &reject(code, vec![], stream(1, PacketType::Reject, 100, vec![room])),
                    &c,
                    100,
                    99
                ),
                Verdict::ReceiverRoom { room: 20 }
            );
            // without an authentic STREAM reply they are what they say: final
            assert!(matches!(
                judge(&reject(code, vec![], None), &c, 100, 99),
                Verdict::Failed(_)
            ));
        }
        // a code of no known class fails the payment, in words
        let odd = ErrorCode::parse("X42").unwrap();
        assert!(matches!(judge(&reject(odd, vec![], None), &c, 1, 0), Verdict::Failed(m) if m.starts_with("X42")));
    }

    /// An in-process path: a connector that converts at `num/den` and takes packets up to `max`, and a
    /// receiver that fulfils authentic packets up to `room` in all. Every `fail_every`-th packet gets a T00.
    struct FakePath {
        keys: StreamKeys,
        num: u64,
        den: u64,
        max: u64,
        room: Mutex<u64>,
        received: Mutex<u64>,
        calls: AtomicU32,
        fail_every: u32,
        /// Refuse as `@interledger/stream-receiver` 0.3 does: F04 when too little arrived, F05 otherwise
        /// (probes included); else F99 for both, as ilp-protocol-stream does.
        newer: bool,
    }

    impl FakePath {
        fn answer(&self, bytes: &[u8]) -> Vec<u8> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            let by = Some(Address::new("test.fake").unwrap());
            let Ok(Packet::Prepare(p)) = Packet::decode(bytes) else {
                panic!("not a prepare")
            };
            if self.fail_every > 0 && n.is_multiple_of(self.fail_every) {
                return Packet::Reject(Reject::new(ErrorCode::T00_INTERNAL_ERROR, by, vec![]))
                    .encode()
                    .unwrap();
            }
            if p.amount > self.max {
                return Packet::Reject(Reject::amount_too_large(by, p.amount, self.max))
                    .encode()
                    .unwrap();
            }
            let arrived = p.amount * self.num / self.den;
            let req = StreamPacket::decrypt(&self.keys.encryption_key, &p.data).unwrap();
            let mut frames = vec![Frame::ConnectionAssetDetails {
                source_asset_code: "EUR".into(),
                source_asset_scale: 2,
            }];
            let fulfillment = self.keys.fulfillment(&p.data);
            let fulfillable = condition_for(&fulfillment) == p.execution_condition;
            let mut room = self.room.lock().unwrap();
            let ok = fulfillable && arrived >= req.prepare_amount && arrived <= *room && !req.has_connection_close();
            if fulfillable && arrived > *room {
                let received = *self.received.lock().unwrap();
                frames.push(Frame::StreamMaxMoney {
                    stream_id: 1,
                    receive_max: *room + received,
                    total_received: received,
                });
            }
            let t = if ok { PacketType::Fulfill } else { PacketType::Reject };
            let reply = StreamPacket {
                sequence: req.sequence,
                ilp_packet_type: t,
                prepare_amount: arrived,
                frames,
            };
            let data = reply.encrypt(&self.keys.encryption_key).unwrap();
            if ok {
                *room -= arrived;
                *self.received.lock().unwrap() += arrived;
                Packet::Fulfill(Fulfill { fulfillment, data }).encode().unwrap()
            } else {
                let code = match (self.newer, fulfillable && arrived < req.prepare_amount) {
                    (false, _) => ErrorCode::F99_APPLICATION_ERROR,
                    (true, true) => ErrorCode::F04_INSUFFICIENT_DESTINATION_AMOUNT,
                    (true, false) => ErrorCode::F05_WRONG_CONDITION,
                };
                let mut r = Reject::new(code, by, data);
                r.message = String::new();
                Packet::Reject(r).encode().unwrap()
            }
        }
    }

    impl Transport for FakePath {
        fn send(&self, prepare: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
            Box::pin(async move { Ok(self.answer(&prepare)) })
        }
    }

    fn path(num: u64, den: u64, max: u64, room: u64, fail_every: u32) -> (Arc<FakePath>, Connection) {
        path_refusing(num, den, max, room, fail_every, false)
    }

    /// [`path`] with a receiver that refuses with F04/F05 (`newer`) or F99.
    fn path_refusing(
        num: u64,
        den: u64,
        max: u64,
        room: u64,
        fail_every: u32,
        newer: bool,
    ) -> (Arc<FakePath>, Connection) {
        let secret = [9u8; 32];
        let fake = Arc::new(FakePath {
            keys: StreamKeys::derive(&secret),
            num,
            den,
            max,
            room: Mutex::new(room),
            received: Mutex::new(0),
            calls: AtomicU32::new(0),
            fail_every,
            newer,
        });
        let mut conn = Connection::new(
            fake.clone(),
            Address::new("test.fake.receiver").unwrap(),
            &secret,
            None,
            Duration::from_secs(30),
        );
        conn.backoff = Duration::from_millis(1);
        (fake, conn)
    }

    /// Pays `target` with at most `max_source` the way the engine does; returns (sent, delivered).
    async fn pay(conn: &mut Connection, max_source: u64, target: u64, est: Rate, min: Rate) -> (u64, u64, String) {
        let (mut sent, mut delivered, mut room, mut temporary) = (0, 0, None, 0);
        for _ in 0..1000 {
            let cap = conn.max_packet.unwrap_or(u64::MAX);
            let Some((source, min_dest)) = next_packet(max_source, target, sent, delivered, &est, &min, cap, room)
            else {
                return (sent, delivered, "done".into());
            };
            match conn.send_money(source, min_dest).await.unwrap() {
                Verdict::Fulfilled { delivered: d, .. } => {
                    sent += source;
                    delivered += d;
                    room = room.map(|r: u64| r.saturating_sub(d));
                }
                Verdict::TooLarge { .. } => {}
                Verdict::ReceiverRoom { room: r } => room = Some(r),
                Verdict::Temporary(_) if temporary < 10 => temporary += 1,
                other => return (sent, delivered, format!("{other:?}")),
            }
        }
        panic!("did not finish")
    }

    #[tokio::test]
    async fn connect_probe_and_pay_through_a_converting_path_with_a_small_max_packet() {
        let (fake, mut conn) = path(9, 10, 1000, u64::MAX, 7);
        assert_eq!(conn.connect().await.unwrap(), Some(("EUR".into(), 2)));
        let est = conn.probe(1_000_000).await.unwrap();
        assert_eq!(est, rate(9, 10));
        assert_eq!(conn.max_packet, Some(1000), "F08 taught the path's maximum");
        let min = rate(9, 10).less_slippage(10_000).unwrap();
        let (sent, delivered, end) = pay(&mut conn, 12_000, 10_000, est, min).await;
        assert_eq!(end, "done");
        assert_eq!(delivered, 10_000);
        assert_eq!(sent, 11_112, "ceil(10000 / 0.9)");
        assert_eq!(*fake.received.lock().unwrap(), 10_000);
        conn.close().await;
    }

    #[tokio::test]
    async fn a_receiver_answering_f05_and_f04_is_probed_and_paid_like_one_answering_f99() {
        let (fake, mut conn) = path_refusing(9, 10, 1000, u64::MAX, 0, true);
        assert_eq!(conn.connect().await.unwrap(), Some(("EUR".into(), 2)));
        // the probe's F05 carries what arrived
        let est = conn.probe(1_000_000).await.unwrap();
        assert_eq!(est, rate(9, 10));
        let min = rate(9, 10).less_slippage(10_000).unwrap();
        let (sent, delivered, end) = pay(&mut conn, 12_000, 10_000, est, min).await;
        assert_eq!((end.as_str(), sent, delivered), ("done", 11_112, 10_000));
        assert_eq!(*fake.received.lock().unwrap(), 10_000);
        // too little arriving is F04: the rate is too low, not a broken receiver
        let (sent, delivered, end) = pay(&mut conn, 1000, 1000, rate(1, 1), rate(99, 100)).await;
        assert_eq!((sent, delivered), (0, 0));
        assert!(end.contains("RateTooLow"), "{end}");
    }

    #[test]
    fn only_an_authentic_stream_reply_makes_a_refusal_an_answer() {
        let (fake, conn) = path_refusing(1, 1, 1000, 1000, 0, true);
        let c = condition_for(&[3u8; 32]);
        let reply = |key: &[u8; 32], sequence: u64, t: PacketType| {
            let data = StreamPacket {
                sequence,
                ilp_packet_type: t,
                prepare_amount: 90,
                frames: vec![],
            }
            .encrypt(key)
            .unwrap();
            let mut r = Reject::new(ErrorCode::F05_WRONG_CONDITION, None, data);
            r.message = String::new();
            conn.pipe()
                .read_reply(&Packet::Reject(r).encode().unwrap(), conn.sequence)
        };
        let ours = fake.keys.encryption_key;
        let judged = |r: Reply| judge(&r, &c, 100, 99);
        assert_eq!(
            judged(reply(&ours, conn.sequence, PacketType::Reject)),
            Verdict::RateTooLow { received: 90 },
            "authentic: the receiver says 90 arrived"
        );
        for (why, r) in [
            ("another key", reply(&[1u8; 32], conn.sequence, PacketType::Reject)),
            ("another sequence", reply(&ours, conn.sequence + 1, PacketType::Reject)),
            (
                "a Fulfill's reply in a Reject",
                reply(&ours, conn.sequence, PacketType::Fulfill),
            ),
        ] {
            assert!(
                matches!(judged(r), Verdict::Failed(_)),
                "{why}: an F05 without an authentic reply is final"
            );
        }
    }

    #[tokio::test]
    async fn the_receivers_room_is_respected() {
        let (fake, mut conn) = path(1, 1, 10_000, 2_500, 0);
        conn.connect().await.unwrap();
        let est = conn.probe(1000).await.unwrap();
        let (sent, delivered, end) = pay(&mut conn, 10_000, 10_000, est, est).await;
        assert_eq!((sent, delivered), (2_500, 2_500), "{end}");
        assert_eq!(*fake.received.lock().unwrap(), 2_500);
    }

    #[tokio::test]
    async fn a_rate_below_the_minimum_stops_the_payment() {
        let (_, mut conn) = path(1, 2, 10_000, u64::MAX, 0);
        conn.connect().await.unwrap();
        let (sent, delivered, end) = pay(&mut conn, 1000, 1000, rate(1, 1), rate(99, 100)).await;
        assert_eq!((sent, delivered), (0, 0));
        assert!(end.contains("RateTooLow"), "{end}");
    }

    #[tokio::test]
    async fn transport_failures_are_temporary_and_bounded() {
        struct Down;
        impl Transport for Down {
            fn send(&self, _: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
                Box::pin(async { Err("connection refused".to_owned()) })
            }
        }
        let mut conn = Connection::new(
            Arc::new(Down),
            Address::new("test.x.y").unwrap(),
            &[1; 32],
            None,
            Duration::from_secs(1),
        );
        conn.backoff = Duration::from_millis(1);
        let e = conn.connect().await.unwrap_err();
        assert!(
            matches!(&e, SendError::Unreachable(m) if m.contains("connection refused")),
            "{e}"
        );
        assert!(matches!(conn.send_money(10, 9).await.unwrap(), Verdict::Temporary(_)));
    }
}
