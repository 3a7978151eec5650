//! The STREAM receiver's wire side (STREAM.md §1.5–1.6): the pure decisions on each ILP Prepare a peer sends
//! to `POST /ilp`.
//!
//! It is stateless per connection: the destination `{node address}.{token}` carries an encrypted token naming
//! what the connection pays into — an incoming payment (Open Payments `methods[ilp]`) or a wallet address
//! itself (SPSP, RFC 9), a [`Target`] — and the connection's shared secret is derived from that token
//! ([`StreamServer`]). SPSP tokens may carry an RFC 39 receipt nonce and secret: fulfilled packets then carry
//! [`receipt_frames`].
//! The decisions are pure functions of the packet and a [`PaymentSnapshot`] ([`open`], [`decide`],
//! [`money_check`]) so they are unit-tested without a server. The service that answers `POST /ilp` with them
//! and credits the incoming payment (checking [`money_check`] again on the fresh row inside its transaction)
//! is `ase::stream_receiver`, above this module; nothing here reads the store or a clock.
//!
//! Refusals always carry an authentic STREAM reply that real senders act on: room left is advertised with
//! `StreamMaxMoney`; a completed or expired payment answers `ConnectionClose(ApplicationError)` — never
//! `ConnectionClose(NoError)`, which makes ilp-protocol-stream retry forever (STREAM.md §0.3). It never
//! logs secrets, tokens or shared secrets.

use super::{
    Address, ErrorCode, Frame, PacketType, Prepare, Reject, StreamErrorCode, StreamPacket,
    crypto::{self, ConnectionDetails, ReceiptSetup, StreamCredentials, StreamKeys, TokenAsset},
};

/// The most an incoming payment can hold: received amounts are stored as SQLite integers.
pub const MAX_RECEIVABLE: u64 = i64::MAX as u64;

/// The payment tag of SPSP credentials is the wallet's id after this prefix; an incoming payment's is its id.
const WALLET_TAG: &str = "wallet:";

/// What a STREAM connection pays into, as its token names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An incoming payment, by id (credentials from its `methods[ilp]`).
    Incoming(String),
    /// A wallet address, by id (credentials from an SPSP query).
    Wallet(String),
}

impl Target {
    fn tag(&self) -> String {
        match self {
            Self::Incoming(id) => id.clone(),
            Self::Wallet(id) => format!("{WALLET_TAG}{id}"),
        }
    }

    fn from_tag(tag: &str) -> Self {
        match tag.strip_prefix(WALLET_TAG) {
            Some(id) => Self::Wallet(id.to_owned()),
            None => Self::Incoming(tag.to_owned()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Server credentials

/// The node's ILP address and STREAM server secret: generates the `methods[ilp]` credentials of incoming
/// payments and resolves the destinations of arriving packets.
#[derive(Clone)]
pub struct StreamServer {
    address: Address,
    secret: [u8; 32],
}

impl std::fmt::Debug for StreamServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl StreamServer {
    pub fn new(address: Address, secret: [u8; 32]) -> Self {
        Self { address, secret }
    }

    /// The node's ILP address.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Fresh credentials (random token IV) for the incoming payment `payment_id` in `asset`.
    pub fn credentials(
        &self,
        payment_id: &str,
        asset_code: &str,
        asset_scale: u8,
    ) -> Result<StreamCredentials, super::Error> {
        self.credentials_for(&Target::Incoming(payment_id.to_owned()), asset_code, asset_scale, None)
    }

    /// Fresh credentials (random token IV) for a connection paying into `target` in `asset`, with RFC 39
    /// receipts when `receipt` is given.
    pub fn credentials_for(
        &self,
        target: &Target,
        asset_code: &str,
        asset_scale: u8,
        receipt: Option<ReceiptSetup>,
    ) -> Result<StreamCredentials, super::Error> {
        let details = ConnectionDetails {
            payment_tag: Some(target.tag()),
            receipt,
            asset: Some(TokenAsset {
                code: asset_code.to_owned(),
                scale: asset_scale,
            }),
        };
        crypto::generate_credentials(&self.secret, &self.address, &details)
    }
}

// ---------------------------------------------------------------------------------------------
// Receipts (RFC 39)

/// A receipt's length: version, nonce, stream id, total, HMAC.
pub const RECEIPT_LEN: usize = 1 + 16 + 1 + 8 + 32;

/// The RFC 39 receipt for `total_received` on `stream_id`: `version (1) ‖ nonce (16) ‖ streamId (UInt8) ‖
/// totalReceived (UInt64) ‖ HMAC-SHA256(secret, the fields before it)` — the stream id one byte, as the RFC's
/// table and ilp-protocol-stream 2.7.2 encode it.
pub fn receipt(setup: &ReceiptSetup, stream_id: u8, total_received: u64) -> [u8; RECEIPT_LEN] {
    let mut out = [0u8; RECEIPT_LEN];
    out[0] = 1;
    out[1..17].copy_from_slice(&setup.nonce);
    out[17] = stream_id;
    out[18..26].copy_from_slice(&total_received.to_be_bytes());
    let mac = crypto::hmac_sha256(&setup.secret, &out[..26]);
    out[26..].copy_from_slice(&mac);
    out
}

/// The receipts a fulfilled money packet carries: one per stream it pays (a packet without `StreamMoney` frames
/// pays stream 1), each with `total_received`, what the connection has received so far. That is the stream's own
/// total whenever one stream carries the connection's money, as every known sender does; the reference ASE's
/// receiver always answers stream 1 with the connection total. Streams past 255 get none (a receipt's stream
/// id is one byte).
pub fn receipt_frames(req: &StreamPacket, amount: u64, setup: &ReceiptSetup, total_received: u64) -> Vec<Frame> {
    money_streams(req, amount)
        .into_iter()
        .filter_map(|stream_id| u8::try_from(stream_id).ok())
        .map(|stream_id| Frame::StreamReceipt {
            stream_id: u64::from(stream_id),
            receipt: receipt(setup, stream_id, total_received).to_vec(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Pure decisions

/// Where an incoming payment stands for the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentState {
    Pending,
    Completed,
    Expired,
}

/// What the receiver needs to know about the incoming payment a packet names. (`ase::stream_receiver` adds
/// `PaymentSnapshot::of`, the snapshot of a stored row.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentSnapshot {
    pub asset_code: String,
    pub asset_scale: u8,
    pub state: PaymentState,
    /// Received so far.
    pub received: u64,
    /// `incomingAmount`, or [`MAX_RECEIVABLE`] when the payment has none.
    pub receive_max: u64,
    /// What the packet's STREAM connection has paid into it so far.
    pub connection_received: u64,
}

impl PaymentSnapshot {
    /// What may still arrive.
    pub fn room(&self) -> u64 {
        self.receive_max.saturating_sub(self.received)
    }
}

/// Why money is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The payment takes no more money.
    Closed(PaymentState),
    /// The packet would take the payment past its `incomingAmount`.
    Overshoot,
    /// The amount does not fit the totals it would be added to (the payment's, the connection's or an
    /// account balance): final, like an overshoot, never the retryable `T00` of a failed write.
    Overflow,
    /// Converted into the payment's asset the packet delivers nothing, or less than the sender's minimum
    /// (its `prepare_amount`): answered as a rate probe is, nothing credited.
    BelowMinimum,
}

/// Whether `amount` may be credited to the payment now. Checked before the transaction (to spare a write for
/// doomed packets) and again inside it on the fresh row.
pub fn money_check(p: &PaymentSnapshot, amount: u64) -> Result<(), Refusal> {
    match p.state {
        PaymentState::Pending => {}
        closed => return Err(Refusal::Closed(closed)),
    }
    if amount > p.room() {
        return Err(Refusal::Overshoot);
    }
    Ok(())
}

/// What to answer to an authentic STREAM request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `F99` carrying a STREAM reply with these frames.
    Refuse(Vec<Frame>),
    /// Fulfill without moving money (a zero-amount packet whose condition we can fulfil, e.g. a
    /// `StreamClose`; rejecting it makes ilp-protocol-stream resend it forever), with these frames.
    Acknowledge(Vec<Frame>),
    /// Credit the amount (one transaction that runs [`money_check`] again), then fulfil.
    Credit,
}

/// The stream ids a request sends money on; a money packet without `StreamMoney` frames counts as stream 1.
fn money_streams(req: &StreamPacket, amount: u64) -> Vec<u64> {
    let mut ids: Vec<u64> = req
        .frames
        .iter()
        .filter_map(|f| match f {
            Frame::StreamMoney { stream_id, .. } => Some(*stream_id),
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() && amount > 0 {
        ids.push(1);
    }
    ids
}

fn asset_details(req: &StreamPacket, p: &PaymentSnapshot) -> Option<Frame> {
    req.has_connection_new_address().then(|| Frame::ConnectionAssetDetails {
        source_asset_code: p.asset_code.clone(),
        source_asset_scale: p.asset_scale,
    })
}

/// The frames every reply on an open payment carries: our asset when the sender asks for it
/// (`ConnectionNewAddress`), and for each stream sending money the payment's room as RFC 29 counts it, per
/// connection: `StreamMaxMoney(receiveMax = paid on this connection + room, totalReceived = paid on this
/// connection)`. (Counting the whole payment instead makes `@interledger/pay` on a second connection to a
/// partly paid payment retry until it times out: it compares `receiveMax` alone with its own target.)
pub fn reply_frames(req: &StreamPacket, amount: u64, p: &PaymentSnapshot) -> Vec<Frame> {
    let mut frames: Vec<Frame> = asset_details(req, p).into_iter().collect();
    frames.extend(
        money_streams(req, amount)
            .into_iter()
            .map(|stream_id| Frame::StreamMaxMoney {
                stream_id,
                receive_max: p.connection_received.saturating_add(p.room()),
                total_received: p.connection_received,
            }),
    );
    frames
}

/// The reply frames of a refused packet.
pub fn refusal_frames(req: &StreamPacket, amount: u64, p: &PaymentSnapshot, refusal: Refusal) -> Vec<Frame> {
    match refusal {
        Refusal::Overshoot | Refusal::Overflow | Refusal::BelowMinimum => reply_frames(req, amount, p),
        Refusal::Closed(state) => {
            let mut frames: Vec<Frame> = asset_details(req, p).into_iter().collect();
            let message = match state {
                PaymentState::Expired => "the incoming payment has expired",
                _ => "the incoming payment is completed",
            };
            // what this connection paid in all, so a sender resuming after a crash can reconcile
            frames.extend(
                money_streams(req, amount)
                    .into_iter()
                    .map(|stream_id| Frame::StreamMaxMoney {
                        stream_id,
                        receive_max: p.connection_received,
                        total_received: p.connection_received,
                    }),
            );
            frames.push(Frame::ConnectionClose {
                code: StreamErrorCode::APPLICATION_ERROR,
                message: message.to_owned(),
            });
            frames
        }
    }
}

/// True if the request shows the sender means to pay: money, a money stream, blocked money or a new
/// connection. A closed payment refuses these (and only these: a bare `StreamClose` is acknowledged).
fn wants_to_pay(req: &StreamPacket, amount: u64) -> bool {
    amount > 0
        || req.frames.iter().any(|f| {
            matches!(
                f,
                Frame::StreamMoney { .. } | Frame::StreamMoneyBlocked { .. } | Frame::ConnectionNewAddress { .. }
            )
        })
}

/// The decision for an authentic STREAM request carrying `amount` (receive-asset minor units), given
/// whether its condition is ours to fulfil and the payment it names:
///
/// 1. the sender closes (`ConnectionClose`) → F99 echoing `ConnectionClose(NoError)`;
/// 2. the payment is completed or expired and the sender means to pay → F99 + `ConnectionClose(ApplicationError)`;
/// 3. `amount` below the sender's minimum (`prepareAmount`) → F99;
/// 4. unfulfillable condition (a rate probe) → F99, from which the sender reads `prepareAmount`;
/// 5. zero amount → fulfilled, no money moves;
/// 6. past `incomingAmount` → F99 advertising the room with `StreamMaxMoney`;
/// 7. otherwise credit.
pub fn decide(req: &StreamPacket, amount: u64, fulfillable: bool, p: &PaymentSnapshot) -> Decision {
    if req.has_connection_close() {
        let mut frames: Vec<Frame> = asset_details(req, p).into_iter().collect();
        frames.push(Frame::ConnectionClose {
            code: StreamErrorCode::NO_ERROR,
            message: String::new(),
        });
        return Decision::Refuse(frames);
    }
    if p.state != PaymentState::Pending && wants_to_pay(req, amount) {
        return Decision::Refuse(refusal_frames(req, amount, p, Refusal::Closed(p.state)));
    }
    if amount < req.prepare_amount || !fulfillable {
        return Decision::Refuse(reply_frames(req, amount, p));
    }
    if amount == 0 {
        return Decision::Acknowledge(reply_frames(req, amount, p));
    }
    match money_check(p, amount) {
        Ok(()) => Decision::Credit,
        Err(refusal) => Decision::Refuse(refusal_frames(req, amount, p, refusal)),
    }
}

/// A reject triggered by this node.
pub fn reject(by: &Address, code: ErrorCode, message: &str, data: Vec<u8>) -> Reject {
    Reject {
        code,
        triggered_by: Some(by.clone()),
        message: message.to_owned(),
        data,
    }
}

/// An authentic STREAM request and what it is for.
#[derive(Debug)]
pub struct Opened {
    /// What the token names.
    pub target: Target,
    /// The receipt nonce and secret the token carries (SPSP credentials asked for with receipts).
    pub receipt: Option<ReceiptSetup>,
    pub keys: StreamKeys,
    /// `hex(SHA-256(destination))`, for logs and ledger memos.
    pub connection_id: String,
    pub request: StreamPacket,
}

/// Resolves the destination and decrypts the STREAM request: not under our address → `F02`; a token that
/// does not decrypt, names no payment, or data that does not decrypt or parse → `F06`; a request claiming
/// another ILP packet type → `F00`. None of these carry data (we cannot or need not encrypt a reply).
pub fn open(server: &StreamServer, prepare: &Prepare) -> Result<Opened, Reject> {
    let by = &server.address;
    let fail = |e: super::Error| reject(by, e.reject_code(), &e.to_string(), Vec::new());
    let conn = crypto::resolve_destination(&server.secret, &server.address, &prepare.destination).map_err(fail)?;
    let target = conn
        .details
        .payment_tag
        .as_deref()
        .map(Target::from_tag)
        .ok_or_else(|| fail(super::Error::InvalidToken))?;
    let request = StreamPacket::decrypt(&conn.keys.encryption_key, &prepare.data).map_err(fail)?;
    if request.ilp_packet_type != PacketType::Prepare {
        return Err(reject(
            by,
            ErrorCode::F00_BAD_REQUEST,
            "STREAM packet is not for a Prepare",
            Vec::new(),
        ));
    }
    Ok(Opened {
        target,
        receipt: conn.details.receipt,
        keys: conn.keys,
        connection_id: conn.connection_id,
        request,
    })
}

/// The encrypted STREAM reply to `req`: sequence echoed, `prepareAmount` = what arrived.
pub fn encrypt_reply(
    keys: &StreamKeys,
    req: &StreamPacket,
    ilp_packet_type: PacketType,
    amount: u64,
    frames: Vec<Frame>,
) -> Result<Vec<u8>, super::Error> {
    StreamPacket {
        sequence: req.sequence,
        ilp_packet_type,
        prepare_amount: amount,
        frames,
    }
    .encrypt(&keys.encryption_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payment whose whole `received` came over the connection at hand.
    fn snapshot(state: PaymentState, received: u64, receive_max: u64) -> PaymentSnapshot {
        PaymentSnapshot {
            asset_code: "USD".into(),
            asset_scale: 2,
            state,
            received,
            receive_max,
            connection_received: received,
        }
    }

    #[test]
    fn stream_max_money_counts_the_connection_not_the_whole_payment() {
        // incomingAmount 1000, 300 paid earlier over another connection, 50 over this one
        let p = PaymentSnapshot {
            connection_received: 50,
            ..snapshot(PaymentState::Pending, 300, 1000)
        };
        let req = request(
            900,
            vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }],
        );
        assert_eq!(
            reply_frames(&req, 900, &p),
            [Frame::StreamMaxMoney {
                stream_id: 1,
                receive_max: 750,
                total_received: 50
            }]
        );
        assert_eq!(
            decide(&req, 900, true, &p),
            Decision::Refuse(reply_frames(&req, 900, &p)),
            "more than the room is refused"
        );
    }

    fn request(prepare_amount: u64, frames: Vec<Frame>) -> StreamPacket {
        StreamPacket {
            sequence: 7,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount,
            frames,
        }
    }

    fn money(stream_id: u64) -> Frame {
        Frame::StreamMoney { stream_id, shares: 1 }
    }

    fn new_address() -> Frame {
        Frame::ConnectionNewAddress {
            source_account: String::new(),
        }
    }

    fn usd() -> Frame {
        Frame::ConnectionAssetDetails {
            source_asset_code: "USD".into(),
            source_asset_scale: 2,
        }
    }

    fn max_money(stream_id: u64, receive_max: u64, total_received: u64) -> Frame {
        Frame::StreamMaxMoney {
            stream_id,
            receive_max,
            total_received,
        }
    }

    fn close(code: StreamErrorCode) -> Frame {
        match code {
            StreamErrorCode::NO_ERROR => Frame::ConnectionClose {
                code,
                message: String::new(),
            },
            _ => Frame::ConnectionClose {
                code,
                message: "the incoming payment is completed".into(),
            },
        }
    }

    #[test]
    fn money_is_credited_within_the_room() {
        let p = snapshot(PaymentState::Pending, 400, 1000);
        assert_eq!(decide(&request(590, vec![money(1)]), 600, true, &p), Decision::Credit);
        assert_eq!(money_check(&p, 600), Ok(()));
        assert_eq!(money_check(&p, 601), Err(Refusal::Overshoot));
        // No incomingAmount: anything up to what SQLite can hold.
        let open_ended = snapshot(PaymentState::Pending, 5, MAX_RECEIVABLE);
        assert_eq!(money_check(&open_ended, MAX_RECEIVABLE - 5), Ok(()));
        assert_eq!(money_check(&open_ended, MAX_RECEIVABLE - 4), Err(Refusal::Overshoot));
        assert_eq!(money_check(&open_ended, u64::MAX), Err(Refusal::Overshoot));
    }

    #[test]
    fn overshoot_advertises_the_room_on_every_money_stream() {
        let p = snapshot(PaymentState::Pending, 400, 1000);
        let req = request(0, vec![new_address(), money(3), money(1), money(3)]);
        assert_eq!(
            decide(&req, 601, true, &p),
            Decision::Refuse(vec![usd(), max_money(1, 1000, 400), max_money(3, 1000, 400)])
        );
        // A money packet without StreamMoney frames counts as stream 1.
        assert_eq!(
            decide(&request(0, vec![]), 601, true, &p),
            Decision::Refuse(vec![max_money(1, 1000, 400)])
        );
    }

    #[test]
    fn closed_payments_close_the_connection_with_an_application_error() {
        for state in [PaymentState::Completed, PaymentState::Expired] {
            let p = snapshot(state, 1000, 1000);
            for (req, amount, fulfillable) in [
                (request(0, vec![money(1)]), 10, true),
                (request(0, vec![]), 10, false),
                (request(0, vec![new_address()]), 0, false),
                (
                    request(
                        0,
                        vec![Frame::StreamMoneyBlocked {
                            stream_id: 1,
                            send_max: 1500,
                            total_sent: 1000,
                        }],
                    ),
                    0,
                    true,
                ),
            ] {
                let Decision::Refuse(frames) = decide(&req, amount, fulfillable, &p) else {
                    panic!("{state:?} {req:?} not refused");
                };
                let last = frames.last().unwrap();
                assert!(
                    matches!(last, Frame::ConnectionClose { code, .. } if *code == StreamErrorCode::APPLICATION_ERROR),
                    "{frames:?}"
                );
                assert!(
                    !frames.iter().any(
                        |f| matches!(f, Frame::ConnectionClose { code, .. } if *code == StreamErrorCode::NO_ERROR)
                    ),
                    "never NoError when refusing money"
                );
            }
            // The asset is still answered to a new connection.
            let Decision::Refuse(frames) = decide(&request(0, vec![new_address()]), 0, false, &p) else {
                panic!()
            };
            assert_eq!(frames[0], usd());
            // A bare StreamClose (the sender finishing) is acknowledged, not refused.
            let bye = request(
                0,
                vec![Frame::StreamClose {
                    stream_id: 1,
                    code: StreamErrorCode::NO_ERROR,
                    message: String::new(),
                }],
            );
            assert_eq!(decide(&bye, 0, true, &p), Decision::Acknowledge(vec![]));
        }
        assert_eq!(
            money_check(&snapshot(PaymentState::Expired, 0, 1000), 1),
            Err(Refusal::Closed(PaymentState::Expired))
        );
        let expired = refusal_frames(
            &request(0, vec![money(1)]),
            5,
            &snapshot(PaymentState::Expired, 0, 1000),
            Refusal::Closed(PaymentState::Expired),
        );
        // the connection's total rides along (nothing paid over this one), so a resuming sender can reconcile
        assert_eq!(
            expired,
            [
                Frame::StreamMaxMoney {
                    stream_id: 1,
                    receive_max: 0,
                    total_received: 0
                },
                Frame::ConnectionClose {
                    code: StreamErrorCode::APPLICATION_ERROR,
                    message: "the incoming payment has expired".into()
                }
            ]
        );
        assert_eq!(
            refusal_frames(
                &request(0, vec![money(1)]),
                5,
                &snapshot(PaymentState::Completed, 9, 9),
                Refusal::Closed(PaymentState::Completed)
            ),
            [
                Frame::StreamMaxMoney {
                    stream_id: 1,
                    receive_max: 9,
                    total_received: 9
                },
                close(StreamErrorCode::APPLICATION_ERROR)
            ]
        );
    }

    #[test]
    fn the_sender_closing_is_echoed_with_no_error() {
        for state in [PaymentState::Pending, PaymentState::Completed] {
            let p = snapshot(state, 0, 1000);
            let req = request(
                0,
                vec![Frame::ConnectionClose {
                    code: StreamErrorCode::NO_ERROR,
                    message: String::new(),
                }],
            );
            assert_eq!(
                decide(&req, 0, false, &p),
                Decision::Refuse(vec![close(StreamErrorCode::NO_ERROR)])
            );
            // Even with money attached: nothing is credited on a closing connection.
            assert_eq!(
                decide(&req, 10, true, &p),
                Decision::Refuse(vec![close(StreamErrorCode::NO_ERROR)])
            );
        }
    }

    #[test]
    fn probes_and_short_amounts_are_refused_with_the_reply_frames() {
        let p = snapshot(PaymentState::Pending, 0, 1000);
        // Rate probe: random condition, any amount (even one past the room) → F99 with prepareAmount, and
        // the room on stream 1 (what a money packet without StreamMoney frames would pay into).
        let probe = request(0, vec![new_address()]);
        assert_eq!(
            decide(&probe, 1_000_000_000_000, false, &p),
            Decision::Refuse(vec![usd(), max_money(1, 1000, 0)])
        );
        assert_eq!(decide(&probe, 0, false, &p), Decision::Refuse(vec![usd()]));
        // Less arrived than the sender's minimum.
        assert_eq!(
            decide(&request(100, vec![money(1)]), 99, true, &p),
            Decision::Refuse(vec![max_money(1, 1000, 0)])
        );
        // A fulfillable zero-amount packet (establishment, StreamClose) is fulfilled without money.
        assert_eq!(decide(&probe, 0, true, &p), Decision::Acknowledge(vec![usd()]));
    }

    fn server() -> StreamServer {
        StreamServer::new(Address::new("test.opdesk").unwrap(), [7; 32])
    }

    fn prepare_to(destination: &Address, amount: u64, data: Vec<u8>, expires_millis: i64) -> Prepare {
        Prepare {
            amount,
            expires_at: super::super::Timestamp::from_unix_millis(expires_millis).unwrap(),
            execution_condition: [0; 32],
            destination: destination.clone(),
            data,
        }
    }

    #[test]
    fn open_resolves_tokens_and_refuses_strangers() {
        let s = server();
        let creds = s.credentials("0190-id", "USD", 2).unwrap();
        let keys = StreamKeys::derive(&creds.shared_secret);
        let req = request(1, vec![money(1)]);
        let data = req.encrypt(&keys.encryption_key).unwrap();
        let far = 2_000_000_000_000;

        let opened = open(&s, &prepare_to(&creds.ilp_address, 5, data.clone(), far)).unwrap();
        assert_eq!(opened.target, Target::Incoming("0190-id".into()));
        assert_eq!(opened.receipt, None);
        assert_eq!(opened.request, req);
        assert_eq!(opened.connection_id.len(), 64);

        let code = |dest: &Address, data: Vec<u8>| open(&s, &prepare_to(dest, 5, data, far)).unwrap_err().code;
        // Not under our address.
        assert_eq!(
            code(&Address::new("test.elsewhere.x").unwrap(), data.clone()),
            ErrorCode::F02_UNREACHABLE
        );
        // A token of another server secret.
        let other = StreamServer::new(Address::new("test.opdesk").unwrap(), [8; 32]);
        let foreign = other.credentials("0190-id", "USD", 2).unwrap();
        assert_eq!(
            code(&foreign.ilp_address, data.clone()),
            ErrorCode::F06_UNEXPECTED_PAYMENT
        );
        // Data under another key, and garbage data.
        let wrong = req.encrypt(&[1; 32]).unwrap();
        assert_eq!(code(&creds.ilp_address, wrong), ErrorCode::F06_UNEXPECTED_PAYMENT);
        assert_eq!(
            code(&creds.ilp_address, vec![1, 2, 3]),
            ErrorCode::F06_UNEXPECTED_PAYMENT
        );
        // A token without a payment tag.
        let untagged = crypto::generate_credentials(&s.secret, s.address(), &ConnectionDetails::default()).unwrap();
        let data = req
            .encrypt(&StreamKeys::derive(&untagged.shared_secret).encryption_key)
            .unwrap();
        assert_eq!(code(&untagged.ilp_address, data), ErrorCode::F06_UNEXPECTED_PAYMENT);
        // A STREAM packet claiming to be a Fulfill.
        let claim = StreamPacket {
            ilp_packet_type: PacketType::Fulfill,
            ..req
        }
        .encrypt(&keys.encryption_key)
        .unwrap();
        assert_eq!(code(&creds.ilp_address, claim), ErrorCode::F00_BAD_REQUEST);
    }

    #[test]
    fn receipts_match_ilp_protocol_stream() {
        // createReceipt() of ilp-protocol-stream 2.7.2-alpha.3, run once with these inputs
        let setup = ReceiptSetup {
            nonce: [1; 16],
            secret: [2; 32],
        };
        assert_eq!(
            hex(&receipt(&setup, 1, 1000)),
            "01010101010101010101010101010101010100000000000003e82af76417ffcfc327e9b8be92b2f919ff084e6a2dbb006a01a0fada51adc998c2"
        );
        let setup = ReceiptSetup {
            nonce: core::array::from_fn(|i| i as u8),
            secret: [7; 32],
        };
        assert_eq!(
            hex(&receipt(&setup, 255, u64::MAX)),
            "01000102030405060708090a0b0c0d0e0fffffffffffffffffffeb7d85006eac7b8cbda0227588d27f6e4e5634a584209cfa53cea26238951b7e"
        );
        // one per money stream of one byte; a packet without StreamMoney pays stream 1
        let frames = receipt_frames(&request(0, vec![money(3), money(300), money(1)]), 5, &setup, 42);
        let ids: Vec<u64> = frames
            .iter()
            .map(|f| match f {
                Frame::StreamReceipt { stream_id, receipt: r } => {
                    assert_eq!(r[..], receipt(&setup, *stream_id as u8, 42));
                    *stream_id
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, [1, 3]);
        assert_eq!(receipt_frames(&request(0, vec![]), 5, &setup, 42).len(), 1);
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn wallet_credentials_name_the_wallet_and_carry_the_receipt_setup() {
        let s = server();
        let setup = ReceiptSetup {
            nonce: [4; 16],
            secret: [5; 32],
        };
        let wallet = Target::Wallet("0190-w".into());
        let creds = s.credentials_for(&wallet, "USD", 2, Some(setup.clone())).unwrap();
        let keys = StreamKeys::derive(&creds.shared_secret);
        let data = request(1, vec![money(1)]).encrypt(&keys.encryption_key).unwrap();
        let opened = open(&s, &prepare_to(&creds.ilp_address, 5, data, 2_000_000_000_000)).unwrap();
        assert_eq!(opened.target, wallet);
        assert_eq!(opened.receipt, Some(setup));
        // an incoming payment whose id happened to start like a wallet tag cannot exist: ids are UUIDs
        assert_eq!(Target::from_tag("wallet:x"), Target::Wallet("x".into()));
        assert_eq!(Target::from_tag("0190"), Target::Incoming("0190".into()));
    }

    #[test]
    fn credentials_are_valid_open_payments_methods() {
        let s = server();
        let a = s.credentials("0190b2c4-1111-7000-8000-000000000000", "USD", 2).unwrap();
        let b = s.credentials("0190b2c4-1111-7000-8000-000000000000", "USD", 2).unwrap();
        assert_ne!(a.ilp_address, b.ilp_address, "a random IV per call");
        for c in [&a, &b] {
            assert!(c.ilp_address.as_str().starts_with("test.opdesk."));
            assert!(crate::ilp::packet::is_valid_address(c.ilp_address.as_str()));
            let secret = c.shared_secret_base64url();
            assert!(
                secret
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
        }
    }
}
