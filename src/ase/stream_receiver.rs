//! The STREAM receiver as a service: what `POST /ilp` answers to each ILP Prepare a peer sends, with the
//! money credited to what the packet's connection pays into: an incoming payment, or a wallet address itself
//! (SPSP credentials, credited by [`Spsp`], with RFC 39 receipts when the credentials carry a receipt setup).
//!
//! The wire work and the pure per-packet decisions live in `ilp::receiver` (resolving the destination,
//! decrypting, [`decide`], the reply frames); this module adds what needs the ASE: the peer's link limits
//! ([`check_link`]), IL-DCP answers from the peer's settings, the [`PaymentSnapshot`] of a stored payment,
//! and [`Receiver`], which credits a packet through the incoming-payment service in its one `BEGIN
//! IMMEDIATE` transaction ([`IncomingPayments::credit_stream_packet`], which runs
//! [`crate::ilp::receiver::money_check`] again on the fresh row). It never logs secrets, tokens or shared
//! secrets. A packet that would take the peer past its credit limit is refused `T04` by that same
//! transaction, before any Fulfill is made.

use std::sync::Arc;

use super::traffic::Outcome;

use time::OffsetDateTime;

use super::{
    exchange::{Exchange, Inflow},
    incoming::{IncomingPayments, StreamCredit, state_of},
    peers::{Peer, Peers},
    spsp::{Spsp, WalletCredit},
};
use crate::{
    clock::SharedClock,
    ilp::{
        Address, ErrorCode, Frame, Fulfill, Packet, PacketType, Prepare, Reject, Timestamp, crypto,
        ildcp::{self, IldcpResponse},
        receiver::{
            Decision, MAX_RECEIVABLE, Opened, PaymentSnapshot, PaymentState, Refusal, StreamServer, Target, decide,
            encrypt_reply, open, receipt_frames, refusal_frames, reject, reply_frames,
        },
    },
    ledger::LedgerError,
    money::Asset,
    rates::RateError,
    states::IncomingState,
    store::payments::IncomingRow,
};

/// Built here, not in `ilp::receiver`, which knows no stored rows.
impl PaymentSnapshot {
    /// The asset the payment (or wallet) is denominated in.
    pub fn asset(&self) -> Asset {
        Asset {
            code: self.asset_code.clone(),
            scale: self.asset_scale,
        }
    }

    /// The snapshot of a stored payment at `now` (expired exactly from `expiresAt` on), to which the
    /// connection at hand has paid `connection_received`.
    pub fn of(row: &IncomingRow, now: OffsetDateTime, connection_received: u64) -> Self {
        let state = match state_of(row, now) {
            IncomingState::Completed => PaymentState::Completed,
            IncomingState::Expired => PaymentState::Expired,
            IncomingState::Pending => PaymentState::Pending,
        };
        Self {
            asset_code: row.asset_code.clone(),
            asset_scale: row.asset_scale,
            state,
            received: u64::try_from(row.received_amount).unwrap_or(0),
            receive_max: row
                .incoming_amount
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(MAX_RECEIVABLE),
            connection_received,
        }
    }

    /// A wallet address as SPSP connections see it: always open, taking what its totals can hold; `paid` is
    /// what the connection at hand has paid into it.
    pub fn of_wallet(asset: &Asset, paid: u64) -> Self {
        Self {
            asset_code: asset.code.clone(),
            asset_scale: asset.scale,
            state: PaymentState::Pending,
            received: paid,
            receive_max: MAX_RECEIVABLE,
            connection_received: paid,
        }
    }
}

/// What crediting a packet did, whatever it paid into.
enum Credit {
    Credited(PaymentSnapshot),
    Refused(PaymentSnapshot, Refusal),
    OverCreditLimit(String),
    NoRate(String),
    Unknown,
}

/// `F02` for a connection whose payment or wallet does not exist (or SPSP is off).
fn unknown(by: &Address, target: &Target) -> Reject {
    let what = match target {
        Target::Incoming(_) => "unknown incoming payment",
        Target::Wallet(_) => "unknown wallet address",
    };
    reject(by, ErrorCode::F02_UNREACHABLE, what, Vec::new())
}

/// Link-level checks before anything else: the Prepare's own expiry (`R00`, exactly at `expiresAt`) and the
/// peer's maximum packet amount (`F08` with `receivedAmount ‖ maximumAmount`).
pub fn check_link(prepare: &Prepare, peer: &Peer, now_millis: i64, by: &Address) -> Result<(), Reject> {
    if prepare.expires_at.unix_millis() <= now_millis {
        return Err(reject(
            by,
            ErrorCode::R00_TRANSFER_TIMED_OUT,
            "packet expired",
            Vec::new(),
        ));
    }
    if let Some(max) = peer.max_packet_amount
        && prepare.amount > max
    {
        return Err(Reject {
            message: format!("amount {} exceeds the maximum packet amount {max}", prepare.amount),
            ..Reject::amount_too_large(Some(by.clone()), prepare.amount, max)
        });
    }
    Ok(())
}

/// The receiver: peers, server credentials and the services money is credited through. Cheap to clone.
#[derive(Clone)]
pub struct Receiver {
    server: Arc<StreamServer>,
    peers: Peers,
    incoming: IncomingPayments,
    spsp: Spsp,
    exchange: Exchange,
    clock: SharedClock,
}

impl Receiver {
    pub fn new(
        server: Arc<StreamServer>,
        peers: Peers,
        incoming: IncomingPayments,
        spsp: Spsp,
        exchange: Exchange,
        clock: SharedClock,
    ) -> Self {
        Self {
            server,
            peers,
            incoming,
            spsp,
            exchange,
            clock,
        }
    }

    /// What the connection pays into as it stands, with what this connection has paid (`None`: nothing by
    /// that id, or SPSP is off).
    async fn lookup(
        &self,
        opened: &Opened,
        now: OffsetDateTime,
    ) -> Result<Option<PaymentSnapshot>, crate::store::Error> {
        Ok(match &opened.target {
            Target::Incoming(id) => self
                .incoming
                .find_for_stream(id, &opened.connection_id)
                .await?
                .map(|(row, paid)| PaymentSnapshot::of(&row, now, paid)),
            Target::Wallet(_) if !self.spsp.enabled() => None,
            Target::Wallet(id) => self
                .spsp
                .find(id, &opened.connection_id)
                .await?
                .map(|(asset, paid)| PaymentSnapshot::of_wallet(&asset, paid)),
        })
    }

    /// Credits `inflow` (at least `min` in the receiver's asset) to what the connection pays into, in that
    /// service's one transaction.
    async fn credit(
        &self,
        opened: &Opened,
        peer: &Peer,
        inflow: Inflow,
        min: u64,
        memo: String,
        now: OffsetDateTime,
    ) -> Result<Credit, LedgerError> {
        let conn = &opened.connection_id;
        Ok(match &opened.target {
            Target::Incoming(id) => {
                match self
                    .incoming
                    .credit_stream_packet(id, conn, &peer.name, inflow, min, memo)
                    .await?
                {
                    StreamCredit::Credited(row, paid) => Credit::Credited(PaymentSnapshot::of(&row, now, paid)),
                    StreamCredit::Refused(row, paid, refusal) => {
                        Credit::Refused(PaymentSnapshot::of(&row, now, paid), refusal)
                    }
                    StreamCredit::OverCreditLimit(why) => Credit::OverCreditLimit(why),
                    StreamCredit::NoRate(why) => Credit::NoRate(why),
                    StreamCredit::Unknown => Credit::Unknown,
                }
            }
            Target::Wallet(_) if !self.spsp.enabled() => Credit::Unknown,
            Target::Wallet(id) => match self.spsp.credit(id, conn, &peer.name, inflow, min, memo).await? {
                WalletCredit::Credited(paid, asset) => Credit::Credited(PaymentSnapshot::of_wallet(&asset, paid)),
                WalletCredit::Overflow(paid, asset) => {
                    Credit::Refused(PaymentSnapshot::of_wallet(&asset, paid), Refusal::Overflow)
                }
                WalletCredit::BelowMinimum(paid, asset) => {
                    Credit::Refused(PaymentSnapshot::of_wallet(&asset, paid), Refusal::BelowMinimum)
                }
                WalletCredit::OverCreditLimit(why) => Credit::OverCreditLimit(why),
                WalletCredit::NoRate(why) => Credit::NoRate(why),
                WalletCredit::Unknown => Credit::Unknown,
            },
        })
    }

    /// The peer presenting `token`, if any.
    pub fn authenticate(&self, token: &str) -> Option<Arc<Peer>> {
        self.peers.current().authenticate(token)
    }

    /// Answers one OER-encoded packet from `peer` with an OER-encoded Fulfill or Reject.
    pub async fn handle(&self, peer: &Peer, bytes: &[u8]) -> Vec<u8> {
        let reply = match Prepare::decode(bytes) {
            Err(e) => Packet::Reject(reject(
                self.server.address(),
                ErrorCode::F01_INVALID_PACKET,
                &e.to_string(),
                Vec::new(),
            )),
            Ok(prepare) => self.prepare(peer, &prepare).await,
        };
        let outcome = match &reply {
            Packet::Reject(r) => {
                tracing::debug!(peer = %peer.name, code = %r.code, message = %r.message, "ILP packet rejected");
                Outcome::Rejected(r.code.as_str().to_owned(), r.message.clone())
            }
            Packet::Fulfill(_) => Outcome::Fulfilled,
            Packet::Prepare(_) => Outcome::None,
        };
        let at = crate::clock::format_ts(self.clock.now());
        self.peers.traffic().count(&peer.name, false, outcome, at);
        reply.encode().unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot encode an ILP reply");
            let fallback = reject(self.server.address(), ErrorCode::T00_INTERNAL_ERROR, "", Vec::new());
            Packet::Reject(fallback).encode().unwrap_or_default()
        })
    }

    async fn prepare(&self, peer: &Peer, prepare: &Prepare) -> Packet {
        let by = self.server.address();
        let now = self.clock.now();
        let now_millis = i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX);
        if let Err(r) = check_link(prepare, peer, now_millis, by) {
            return r.into();
        }
        if ildcp::is_request(prepare) {
            return self.ildcp(peer, prepare, now_millis);
        }
        let opened = match open(&self.server, prepare) {
            Ok(o) => o,
            Err(r) => return r.into(),
        };
        let req = &opened.request;
        let t00_with = |frames: Vec<Frame>, message: &str| -> Packet {
            let data = encrypt_reply(&opened.keys, req, PacketType::Reject, prepare.amount, frames).unwrap_or_default();
            reject(by, ErrorCode::T00_INTERNAL_ERROR, message, data).into()
        };
        let t00 = |frames: Vec<Frame>| t00_with(frames, "internal error");
        let fulfillment = opened.keys.fulfillment(&prepare.data);
        let fulfillable = crypto::condition_for(&fulfillment) == prepare.execution_condition;
        // The packet carries the link's asset; what it is worth to the receiver is its value in the receiver's
        // asset, and that is what the reply reports (a sender's rate probe sees the rate it really gets).
        let inflow = Inflow::new(
            peer.asset.clone(),
            prepare.amount,
            self.exchange.rates(&peer.asset).await,
        );
        let no_rate = |why: &str| -> Packet {
            tracing::info!(peer = %peer.name, "ILP packet refused: {why}");
            reject(by, ErrorCode::F07_CANNOT_RECEIVE, why, Vec::new()).into()
        };
        // A money packet the payment's state alone decides goes straight to the crediting transaction, which
        // reads the payment, values the packet in its asset and makes the same decision on the fresh row
        // ([`decide`] would answer `Credit` for a pending payment, and the same refusals otherwise): one store
        // hand-off per packet.
        let straight_to_credit = fulfillable && prepare.amount > 0 && !req.has_connection_close();
        let snapshot = if straight_to_credit {
            None
        } else {
            match self.lookup(&opened, now).await {
                Ok(Some(snapshot)) => Some(snapshot),
                Ok(None) => return unknown(by, &opened.target).into(),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read an incoming payment for an ILP packet");
                    return t00(Vec::new());
                }
            }
        };
        let value_for = |s: &PaymentSnapshot| inflow.value_in(&s.asset());
        let mut value = prepare.amount;
        let decision = match &snapshot {
            Some(snapshot) => match value_for(snapshot) {
                Err(RateError::NoRate(from, to)) => {
                    return no_rate(&format!("no exchange rate from {from} (the link's asset) to {to}"));
                }
                Err(_) => {
                    value = 0;
                    Decision::Refuse(refusal_frames(req, prepare.amount, snapshot, Refusal::Overflow))
                }
                Ok(v) => {
                    value = v;
                    match decide(req, v, fulfillable, snapshot) {
                        // money that is worth nothing here is refused, never fulfilled for nothing
                        Decision::Acknowledge(frames) if prepare.amount > 0 => Decision::Refuse(frames),
                        d => d,
                    }
                }
            },
            None => Decision::Credit,
        };
        let (fulfil, frames) = match decision {
            Decision::Refuse(frames) => (false, frames),
            Decision::Acknowledge(frames) => (true, frames),
            Decision::Credit => {
                let memo = format!(
                    "STREAM from peer {} (connection {}, sequence {})",
                    peer.name,
                    opened.connection_id.get(..16).unwrap_or_default(),
                    req.sequence
                );
                let credited = self
                    .credit(&opened, peer, inflow.clone(), req.prepare_amount, memo, now)
                    .await;
                // the frames of a temporary refusal: the payment as it stands, if it can be read
                let standing = || async {
                    match &snapshot {
                        Some(s) => reply_frames(req, prepare.amount, s),
                        None => match self.lookup(&opened, now).await {
                            Ok(Some(s)) => reply_frames(req, prepare.amount, &s),
                            _ => Vec::new(),
                        },
                    }
                };
                match credited {
                    Ok(Credit::Credited(s)) => {
                        value = value_for(&s).unwrap_or(0);
                        let mut frames = reply_frames(req, prepare.amount, &s);
                        if let Some(setup) = &opened.receipt {
                            frames.extend(receipt_frames(req, prepare.amount, setup, s.connection_received));
                        }
                        (true, frames)
                    }
                    Ok(Credit::Refused(s, refusal)) => {
                        value = value_for(&s).unwrap_or(0);
                        (false, refusal_frames(req, prepare.amount, &s, refusal))
                    }
                    Ok(Credit::NoRate(why)) => return no_rate(&why),
                    // nothing was written; T04 is temporary: the sender retries after a settlement or a
                    // higher credit limit
                    Ok(Credit::OverCreditLimit(why)) => {
                        return reject(by, ErrorCode::T04_INSUFFICIENT_LIQUIDITY, &why, Vec::new()).into();
                    }
                    Ok(Credit::Unknown) => return unknown(by, &opened.target).into(),
                    // nothing was written; T00 is temporary, so the sender retries once there is room
                    Err(LedgerError::Store(e)) if e.is_full() => {
                        tracing::warn!(error = %e, target = ?opened.target, "ILP packet refused: the database or the disk is full");
                        return t00_with(standing().await, "the receiver's storage is full; retry later");
                    }
                    Err(e) => {
                        tracing::error!(error = %e, target = ?opened.target, "crediting an ILP packet failed");
                        return t00(standing().await);
                    }
                }
            }
        };
        let ilp_type = if fulfil {
            PacketType::Fulfill
        } else {
            PacketType::Reject
        };
        let data = match encrypt_reply(&opened.keys, req, ilp_type, value, frames) {
            Ok(d) => d,
            // Only the OS random source can fail here; a credit already committed stands (the sender
            // learns of it from the receiver's totals later), which the log records.
            Err(e) => {
                tracing::error!(error = %e, fulfil, "cannot encrypt a STREAM reply");
                return reject(by, ErrorCode::T00_INTERNAL_ERROR, "internal error", Vec::new()).into();
            }
        };
        if fulfil {
            Fulfill { fulfillment, data }.into()
        } else {
            reject(by, ErrorCode::F99_APPLICATION_ERROR, "", data).into()
        }
    }

    /// IL-DCP (RFC 31): the peer learns its ILP address (as configured, else `{node address}.{peer name}`)
    /// and the link's asset.
    fn ildcp(&self, peer: &Peer, prepare: &Prepare, now_millis: i64) -> Packet {
        let by = self.server.address();
        let answer = Timestamp::from_unix_millis(now_millis)
            .and_then(|now| ildcp::validate_request(prepare, now))
            .and_then(|()| match &peer.ilp_address {
                Some(a) => Ok(a.clone()),
                None => by.with_segment(&peer.name),
            });
        match answer {
            Ok(client_address) => IldcpResponse {
                client_address,
                asset_scale: peer.asset.scale,
                asset_code: peer.asset.code.clone(),
            }
            .to_fulfill()
            .into(),
            Err(e) => reject(by, ErrorCode::F00_BAD_REQUEST, &e.to_string(), Vec::new()).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_of_a_row_applies_expiry_exactly_at_expires_at() {
        let at = crate::clock::ts("2030-01-01T00:00:00.000Z");
        let row = IncomingRow {
            id: "x".into(),
            wallet_id: "w".into(),
            wallet_name: "bob".into(),
            account_id: "a".into(),
            asset_code: "EUR".into(),
            asset_scale: 2,
            client: None,
            incoming_amount: None,
            received_amount: 12,
            completed: false,
            expires_at: Some(crate::clock::ts("2030-01-01T00:00:00.000Z")),
            metadata: None,
            created_at: at,
            updated_at: at,
        };
        let before = PaymentSnapshot::of(&row, at - time::Duration::milliseconds(1), 0);
        assert_eq!(before.state, PaymentState::Pending);
        assert_eq!(before.receive_max, MAX_RECEIVABLE);
        assert_eq!(before.received, 12);
        assert_eq!(before.asset_code, "EUR");
        assert_eq!(PaymentSnapshot::of(&row, at, 0).state, PaymentState::Expired);
        let done = IncomingRow {
            completed: true,
            incoming_amount: Some(12),
            ..row
        };
        let s = PaymentSnapshot::of(&done, at, 0);
        assert_eq!((s.state, s.room()), (PaymentState::Completed, 0));
    }

    fn server() -> StreamServer {
        StreamServer::new(Address::new("test.opdesk").unwrap(), [7; 32])
    }

    fn peer(max: Option<u64>) -> Peer {
        let def = crate::settings::PeerSettings {
            name: "node-js".into(),
            incoming_tokens: vec!["tok-1".into(), "tok-2".into()],
            max_packet_amount: max,
            asset_code: "USD".into(),
            asset_scale: 2,
            ..Default::default()
        };
        Peer::from_settings(
            &def,
            super::super::peers::PeerSource::Config,
            std::time::Duration::from_secs(1),
        )
    }

    fn prepare_to(destination: &Address, amount: u64, data: Vec<u8>, expires_millis: i64) -> Prepare {
        Prepare {
            amount,
            expires_at: Timestamp::from_unix_millis(expires_millis).unwrap(),
            execution_condition: [0; 32],
            destination: destination.clone(),
            data,
        }
    }

    #[test]
    fn link_checks_expiry_and_max_packet_amount() {
        let s = server();
        let now = 1_900_000_000_000;
        let p = prepare_to(s.address(), 1000, vec![], now + 1);
        assert_eq!(check_link(&p, &peer(Some(1000)), now, s.address()), Ok(()));
        let r = check_link(&p, &peer(Some(999)), now, s.address()).unwrap_err();
        assert_eq!(r.code, ErrorCode::F08_AMOUNT_TOO_LARGE);
        assert_eq!(
            r.amount_too_large_data(),
            Some(crate::ilp::AmountTooLarge {
                received_amount: 1000,
                maximum_amount: 999
            })
        );
        assert_eq!(r.triggered_by.as_ref(), Some(s.address()));
        // Exactly at expiresAt the packet is expired.
        let r = check_link(&p, &peer(None), now + 1, s.address()).unwrap_err();
        assert_eq!(r.code, ErrorCode::R00_TRANSFER_TIMED_OUT);
    }
}
