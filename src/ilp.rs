//! Interledger for the ASE. The wire formats: OER primitives ([`oer`]), ILPv4 packets ([`packet`]),
//! IL-DCP ([`ildcp`]), STREAM packets and frames ([`stream`]) and STREAM cryptography plus the
//! stateless receiver credentials ([`crypto`]); they own encoding, decoding and validation and the
//! single [`Error`] type whose [`Error::reject_code`] picks the ILP reject code for a failure, and
//! they do no I/O, hold no state, read no clock and never panic on any input. On top of them, the
//! STREAM receiver's pure per-packet decisions ([`receiver`]) and the STREAM sender ([`sender`]: connect,
//! rate probe, packetized money through a peer's ILP-over-HTTP endpoint). See `shared/docs/STREAM.md`.
//!
//! Nothing here imports the rest of the crate but the `egress` HTTP client: the peers, the receiver service
//! that credits incoming payments and the `POST /ilp` route sit above it, in `ase` and `server`.

pub mod crypto;
pub mod ildcp;
pub mod oer;
pub mod packet;
pub mod receiver;
pub mod sender;
pub mod stream;

pub use crypto::{
    ConnectionDetails, ResolvedConnection, StreamCredentials, StreamKeys, TokenAsset, condition_for, fulfillment_for,
    generate_credentials, resolve_destination,
};
pub use ildcp::IldcpResponse;
pub use packet::{
    Address, AmountTooLarge, ErrorClass, ErrorCode, Fulfill, MAX_DATA_LEN, Packet, PacketType, Prepare, Reject,
    Timestamp,
};
pub use stream::{Frame, FrameType, StreamErrorCode, StreamPacket};

/// Every failure of this module. [`Error::reject_code`] maps it to the ILP reject code a
/// receiver should answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The input ended early.
    #[error("truncated input: needed {needed} bytes, {remaining} remaining")]
    Truncated {
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A long-form length prefix that is not canonical (0x80, leading zero, or value < 128).
    #[error("non-canonical length prefix")]
    NonCanonicalLength,
    /// A length prefix longer than 8 bytes or not representable as `usize`.
    #[error("length prefix too large")]
    LengthTooLarge,
    /// A VarUInt with zero bytes.
    #[error("VarUInt of length 0")]
    EmptyVarUInt,
    /// A VarUInt longer than 8 bytes where saturation is not allowed.
    #[error("VarUInt of {0} bytes does not fit in u64")]
    VarUIntTooLarge(usize),
    /// Bytes left after a complete structure that must fill its input.
    #[error("{0} trailing bytes")]
    TrailingBytes(usize),
    /// An ILP packet type byte other than 12, 13 or 14.
    #[error("unknown ILP packet type {0}")]
    UnknownPacketType(u8),
    /// A valid ILP packet of another type than the one asked for.
    #[error("expected ILP packet type {expected}, got {actual}")]
    WrongPacketType {
        /// Type asked for.
        expected: u8,
        /// Type found.
        actual: u8,
    },
    /// Not a valid `YYYYMMDDHHmmssfff` UTC time.
    #[error("invalid ILP timestamp")]
    InvalidTimestamp,
    /// Not a valid ILP address (RFC 15), or too long.
    #[error("invalid ILP address")]
    InvalidAddress,
    /// Reject code not made of three ASCII letters/digits.
    #[error("invalid ILP error code")]
    InvalidErrorCode,
    /// ILP `data` longer than 32767 bytes.
    #[error("data field of {0} bytes exceeds 32767")]
    DataTooLong(usize),
    /// STREAM version byte other than 1.
    #[error("unsupported STREAM version {0}")]
    UnsupportedStreamVersion(u8),
    /// Declared STREAM frame count larger than the remaining bytes can hold.
    #[error("STREAM frame count {0} exceeds the packet size")]
    TooManyFrames(u64),
    /// The decrypted STREAM packet is malformed (the inner error says how).
    #[error("invalid STREAM packet: {0}")]
    InvalidStreamPacket(Box<Error>),
    /// AES-GCM authentication failed or the ciphertext is shorter than IV + tag.
    #[error("STREAM data could not be decrypted")]
    DecryptionFailed,
    /// The OS random source failed.
    #[error("random number generator unavailable")]
    RandomUnavailable,
    /// Destination is not `peer.config`.
    #[error("not an IL-DCP request")]
    NotIldcpRequest,
    /// IL-DCP request without the peer-protocol condition.
    #[error("IL-DCP request has the wrong condition")]
    IldcpWrongCondition,
    /// IL-DCP response without the all-zero fulfillment.
    #[error("IL-DCP response has the wrong fulfillment")]
    IldcpWrongFulfillment,
    /// The packet's `expiresAt` has passed.
    #[error("packet expired")]
    Expired,
    /// Destination is not under our STREAM server address.
    #[error("destination is not under the server address")]
    NotOurAddress,
    /// Connection token missing, not base64url, not authentic or malformed.
    #[error("invalid STREAM connection token")]
    InvalidToken,
    /// Payment tags must be ASCII.
    #[error("payment tag must be ASCII")]
    InvalidPaymentTag,
}

impl Error {
    /// The ILP reject code for this failure: malformed ILP packets → `F01`; not our address →
    /// `F02`; undecryptable or malformed STREAM data and bad tokens → `F06` (STREAM.md §1.6);
    /// bad IL-DCP requests → `F00`; expired → `R00`; local failures → `T00`.
    pub fn reject_code(&self) -> ErrorCode {
        match self {
            Self::Truncated { .. }
            | Self::NonCanonicalLength
            | Self::LengthTooLarge
            | Self::EmptyVarUInt
            | Self::VarUIntTooLarge(_)
            | Self::TrailingBytes(_)
            | Self::UnknownPacketType(_)
            | Self::WrongPacketType { .. }
            | Self::InvalidTimestamp
            | Self::InvalidAddress
            | Self::InvalidErrorCode
            | Self::DataTooLong(_) => ErrorCode::F01_INVALID_PACKET,
            Self::NotOurAddress => ErrorCode::F02_UNREACHABLE,
            Self::UnsupportedStreamVersion(_)
            | Self::TooManyFrames(_)
            | Self::InvalidStreamPacket(_)
            | Self::DecryptionFailed
            | Self::InvalidToken => ErrorCode::F06_UNEXPECTED_PAYMENT,
            Self::NotIldcpRequest | Self::IldcpWrongCondition | Self::IldcpWrongFulfillment => {
                ErrorCode::F00_BAD_REQUEST
            }
            Self::Expired => ErrorCode::R00_TRANSFER_TIMED_OUT,
            Self::RandomUnavailable | Self::InvalidPaymentTag => ErrorCode::T00_INTERNAL_ERROR,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic; see clippy.toml
mod tests {
    use super::*;

    #[test]
    fn reject_codes() {
        assert_eq!(
            Packet::decode(&[12]).unwrap_err().reject_code(),
            ErrorCode::F01_INVALID_PACKET
        );
        assert_eq!(
            Error::InvalidStreamPacket(Box::new(Error::EmptyVarUInt)).reject_code(),
            ErrorCode::F06_UNEXPECTED_PAYMENT
        );
        assert_eq!(Error::DecryptionFailed.reject_code(), ErrorCode::F06_UNEXPECTED_PAYMENT);
        assert_eq!(Error::NotOurAddress.reject_code(), ErrorCode::F02_UNREACHABLE);
        assert_eq!(Error::RandomUnavailable.reject_code(), ErrorCode::T00_INTERNAL_ERROR);
        assert_eq!(
            Error::InvalidStreamPacket(Box::new(Error::UnsupportedStreamVersion(2))).to_string(),
            "invalid STREAM packet: unsupported STREAM version 2"
        );
    }

    /// Deterministic garbage (xorshift) through every decoder: errors are fine, panics are not.
    #[test]
    fn random_inputs_never_panic() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let len = usize::try_from(next() % 96).unwrap();
            let mut buf: Vec<u8> = (0..len).map(|_| next().to_le_bytes()[0]).collect();
            // Bias some inputs towards valid headers so decoders get past the first byte.
            match (round % 4, buf.len()) {
                (1, 2..) => {
                    buf[0] = 12 + u8::try_from(round % 3).unwrap();
                    buf[1] = u8::try_from(len - 2).unwrap();
                }
                (2, 2..) => {
                    buf[0] = 1;
                    buf[1] = 12;
                }
                _ => {}
            }
            let _ = Packet::decode(&buf);
            let _ = StreamPacket::decode(&buf);
            let _ = ConnectionDetails::decode(&buf);
            let _ = IldcpResponse::decode_data(&buf);
            let _ = Address::from_bytes(&buf);
            let _ = AmountTooLarge::decode(&buf);
            let _ = crypto::decrypt(&[0; 32], &buf);
            let mut r = oer::Reader::new(&buf);
            let _ = r.read_var_uint_saturating();
        }
    }

    /// A full receive round trip using only this module: credentials → sender builds a Prepare →
    /// receiver resolves, decrypts, fulfills with an authentic STREAM reply.
    #[test]
    fn receive_round_trip() {
        let server_secret = [0x11; 32];
        let server = Address::new("test.console-a").unwrap();
        let details = ConnectionDetails {
            payment_tag: Some("ip_123".into()),
            receipt: None,
            asset: Some(TokenAsset {
                code: "USD".into(),
                scale: 2,
            }),
        };
        let creds = generate_credentials(&server_secret, &server, &details).unwrap();

        // Sender.
        let keys = StreamKeys::derive(&creds.shared_secret);
        let request = StreamPacket {
            sequence: 1,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount: 90,
            frames: vec![
                Frame::ConnectionNewAddress {
                    source_account: String::new(),
                },
                Frame::StreamMoney {
                    stream_id: 1,
                    shares: 1,
                },
            ],
        };
        let data = request.encrypt(&keys.encryption_key).unwrap();
        let prepare = Prepare {
            amount: 100,
            expires_at: Timestamp::from_unix_millis(1_900_000_000_000).unwrap(),
            execution_condition: keys.condition(&data),
            destination: creds.ilp_address.clone(),
            data,
        };
        let wire = prepare.encode().unwrap();
        assert!(wire.len() > 127);
        assert!(matches!(wire[1], 0x81 | 0x82), "long-form envelope length");

        // Receiver.
        let Packet::Prepare(got) = Packet::decode(&wire).unwrap() else {
            panic!("not a prepare")
        };
        let conn = resolve_destination(&server_secret, &server, &got.destination).unwrap();
        assert_eq!(conn.details.payment_tag.as_deref(), Some("ip_123"));
        let req = StreamPacket::decrypt(&conn.keys.encryption_key, &got.data).unwrap();
        assert_eq!(req, request);
        let fulfillment = conn.keys.fulfillment(&got.data);
        assert_eq!(condition_for(&fulfillment), got.execution_condition);
        let reply = StreamPacket {
            sequence: req.sequence,
            ilp_packet_type: PacketType::Fulfill,
            prepare_amount: got.amount,
            frames: vec![Frame::ConnectionAssetDetails {
                source_asset_code: "USD".into(),
                source_asset_scale: 2,
            }],
        };
        let fulfill = Fulfill {
            fulfillment,
            data: reply.encrypt(&conn.keys.encryption_key).unwrap(),
        };
        let reply_wire = Packet::Fulfill(fulfill).encode().unwrap();

        // Sender reads the reply.
        let Packet::Fulfill(f) = Packet::decode(&reply_wire).unwrap() else {
            panic!("not a fulfill")
        };
        assert_eq!(condition_for(&f.fulfillment), prepare.execution_condition);
        let back = StreamPacket::decrypt(&keys.encryption_key, &f.data).unwrap();
        assert_eq!(back, reply);
    }
}
