//! STREAM packets and frames (RFC 29 §5, `asn1/Stream.asn`) in plaintext form:
//! `version(=1) ‖ ilpPacketType ‖ sequence:VarUInt ‖ prepareAmount:VarUInt ‖
//! frameCount:VarUInt ‖ frames ‖ junk`, each frame being `type:UInt8 ‖ VarOctetString(contents)`.
//! It owns all 15 frame types, STREAM close error codes, the saturating decode of
//! `StreamMaxMoney.receiveMax` / `StreamMoneyBlocked.sendMax`, skipping of unknown frames (kept as
//! [`Frame::Unknown`] so re-encoding is lossless) and the encrypt/decrypt convenience wrappers.
//! Encryption itself lives in [`super::crypto`]; receiver decisions live with the caller.

use super::Error;
use super::crypto;
use super::oer::{Reader, Writer};
use super::packet::PacketType;
use std::fmt;

/// The only STREAM version.
pub const VERSION: u8 = 1;

/// Smallest possible encoded frame (`type ‖ 00`), used to bound the declared frame count.
const MIN_FRAME_LEN: usize = 2;

/// A STREAM close error code (RFC 29 §5.3). Any byte is accepted on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamErrorCode(pub u8);

impl StreamErrorCode {
    /// 0x01 NoError.
    pub const NO_ERROR: Self = Self(0x01);
    /// 0x02 InternalError.
    pub const INTERNAL_ERROR: Self = Self(0x02);
    /// 0x03 EndpointBusy.
    pub const ENDPOINT_BUSY: Self = Self(0x03);
    /// 0x04 FlowControlError.
    pub const FLOW_CONTROL_ERROR: Self = Self(0x04);
    /// 0x05 StreamIdError.
    pub const STREAM_ID_ERROR: Self = Self(0x05);
    /// 0x06 StreamStateError.
    pub const STREAM_STATE_ERROR: Self = Self(0x06);
    /// 0x07 FrameFormatError.
    pub const FRAME_FORMAT_ERROR: Self = Self(0x07);
    /// 0x08 ProtocolViolation.
    pub const PROTOCOL_VIOLATION: Self = Self(0x08);
    /// 0x09 ApplicationError (use this, not NoError, to refuse money: STREAM.md §0.3).
    pub const APPLICATION_ERROR: Self = Self(0x09);

    /// The RFC name of a known code.
    pub fn name(&self) -> Option<&'static str> {
        Some(match self.0 {
            0x01 => "NoError",
            0x02 => "InternalError",
            0x03 => "EndpointBusy",
            0x04 => "FlowControlError",
            0x05 => "StreamIdError",
            0x06 => "StreamStateError",
            0x07 => "FrameFormatError",
            0x08 => "ProtocolViolation",
            0x09 => "ApplicationError",
            _ => return None,
        })
    }
}

impl fmt::Debug for StreamErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}"),
            None => write!(f, "StreamErrorCode({:#04x})", self.0),
        }
    }
}

/// Frame type numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameType {
    /// 0x01.
    ConnectionClose = 0x01,
    /// 0x02.
    ConnectionNewAddress = 0x02,
    /// 0x03.
    ConnectionMaxData = 0x03,
    /// 0x04.
    ConnectionDataBlocked = 0x04,
    /// 0x05.
    ConnectionMaxStreamId = 0x05,
    /// 0x06.
    ConnectionStreamIdBlocked = 0x06,
    /// 0x07.
    ConnectionAssetDetails = 0x07,
    /// 0x10.
    StreamClose = 0x10,
    /// 0x11.
    StreamMoney = 0x11,
    /// 0x12.
    StreamMaxMoney = 0x12,
    /// 0x13.
    StreamMoneyBlocked = 0x13,
    /// 0x14.
    StreamData = 0x14,
    /// 0x15.
    StreamMaxData = 0x15,
    /// 0x16.
    StreamDataBlocked = 0x16,
    /// 0x17.
    StreamReceipt = 0x17,
}

impl FrameType {
    /// The known frame type for `byte`, if any.
    pub fn from_u8(byte: u8) -> Option<Self> {
        Some(match byte {
            0x01 => Self::ConnectionClose,
            0x02 => Self::ConnectionNewAddress,
            0x03 => Self::ConnectionMaxData,
            0x04 => Self::ConnectionDataBlocked,
            0x05 => Self::ConnectionMaxStreamId,
            0x06 => Self::ConnectionStreamIdBlocked,
            0x07 => Self::ConnectionAssetDetails,
            0x10 => Self::StreamClose,
            0x11 => Self::StreamMoney,
            0x12 => Self::StreamMaxMoney,
            0x13 => Self::StreamMoneyBlocked,
            0x14 => Self::StreamData,
            0x15 => Self::StreamMaxData,
            0x16 => Self::StreamDataBlocked,
            0x17 => Self::StreamReceipt,
            _ => return None,
        })
    }
}

/// A STREAM frame. Strings are decoded lossily from UTF-8 (as the JS implementation does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// 0x01: the connection is closing.
    ConnectionClose {
        /// Why.
        code: StreamErrorCode,
        /// Free text.
        message: String,
    },
    /// 0x02: the sender's address; may be empty (send-only client).
    ConnectionNewAddress {
        /// Not validated: `""` is legal here.
        source_account: String,
    },
    /// 0x03.
    ConnectionMaxData {
        /// Largest connection-level data offset the endpoint accepts.
        max_offset: u64,
    },
    /// 0x04.
    ConnectionDataBlocked {
        /// Offset the sender is blocked at.
        max_offset: u64,
    },
    /// 0x05.
    ConnectionMaxStreamId {
        /// Largest stream id the endpoint accepts.
        max_stream_id: u64,
    },
    /// 0x06.
    ConnectionStreamIdBlocked {
        /// Stream id the sender is blocked at.
        max_stream_id: u64,
    },
    /// 0x07: the endpoint's asset.
    ConnectionAssetDetails {
        /// Asset code.
        source_asset_code: String,
        /// Asset scale.
        source_asset_scale: u8,
    },
    /// 0x10.
    StreamClose {
        /// Stream.
        stream_id: u64,
        /// Why.
        code: StreamErrorCode,
        /// Free text.
        message: String,
    },
    /// 0x11: share of the Prepare amount for this stream.
    StreamMoney {
        /// Stream.
        stream_id: u64,
        /// Shares.
        shares: u64,
    },
    /// 0x12: `receive_max` saturates to `u64::MAX` on decode.
    StreamMaxMoney {
        /// Stream.
        stream_id: u64,
        /// Most the receiver will accept in total on this stream.
        receive_max: u64,
        /// Received so far.
        total_received: u64,
    },
    /// 0x13: `send_max` saturates to `u64::MAX` on decode.
    StreamMoneyBlocked {
        /// Stream.
        stream_id: u64,
        /// Most the sender wants to send.
        send_max: u64,
        /// Sent so far.
        total_sent: u64,
    },
    /// 0x14.
    StreamData {
        /// Stream.
        stream_id: u64,
        /// Offset of `data` in the stream.
        offset: u64,
        /// Payload.
        data: Vec<u8>,
    },
    /// 0x15.
    StreamMaxData {
        /// Stream.
        stream_id: u64,
        /// Largest offset accepted.
        max_offset: u64,
    },
    /// 0x16.
    StreamDataBlocked {
        /// Stream.
        stream_id: u64,
        /// Offset blocked at.
        max_offset: u64,
    },
    /// 0x17.
    StreamReceipt {
        /// Stream.
        stream_id: u64,
        /// Opaque receipt (RFC 39).
        receipt: Vec<u8>,
    },
    /// A frame type this implementation does not know; skipped by receivers, kept for lossless
    /// re-encoding.
    Unknown {
        /// Type byte.
        frame_type: u8,
        /// Raw contents.
        contents: Vec<u8>,
    },
}

impl Frame {
    /// The frame's type byte.
    pub fn frame_type(&self) -> u8 {
        let known = match self {
            Self::ConnectionClose { .. } => FrameType::ConnectionClose,
            Self::ConnectionNewAddress { .. } => FrameType::ConnectionNewAddress,
            Self::ConnectionMaxData { .. } => FrameType::ConnectionMaxData,
            Self::ConnectionDataBlocked { .. } => FrameType::ConnectionDataBlocked,
            Self::ConnectionMaxStreamId { .. } => FrameType::ConnectionMaxStreamId,
            Self::ConnectionStreamIdBlocked { .. } => FrameType::ConnectionStreamIdBlocked,
            Self::ConnectionAssetDetails { .. } => FrameType::ConnectionAssetDetails,
            Self::StreamClose { .. } => FrameType::StreamClose,
            Self::StreamMoney { .. } => FrameType::StreamMoney,
            Self::StreamMaxMoney { .. } => FrameType::StreamMaxMoney,
            Self::StreamMoneyBlocked { .. } => FrameType::StreamMoneyBlocked,
            Self::StreamData { .. } => FrameType::StreamData,
            Self::StreamMaxData { .. } => FrameType::StreamMaxData,
            Self::StreamDataBlocked { .. } => FrameType::StreamDataBlocked,
            Self::StreamReceipt { .. } => FrameType::StreamReceipt,
            Self::Unknown { frame_type, .. } => return *frame_type,
        };
        known as u8
    }

    /// Reads one frame (type + contents). Extra bytes at the end of a known frame's contents are
    /// ignored, as in `ilp-protocol-stream`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, Error> {
        let frame_type = r.read_u8()?;
        let contents = r.read_var_octet_string()?;
        let mut c = Reader::new(contents);
        let c = &mut c;
        let Some(known) = FrameType::from_u8(frame_type) else {
            return Ok(Self::Unknown {
                frame_type,
                contents: contents.to_vec(),
            });
        };
        Ok(match known {
            FrameType::ConnectionClose => Self::ConnectionClose {
                code: StreamErrorCode(c.read_u8()?),
                message: read_string(c)?,
            },
            FrameType::ConnectionNewAddress => Self::ConnectionNewAddress {
                source_account: read_string(c)?,
            },
            FrameType::ConnectionMaxData => Self::ConnectionMaxData {
                max_offset: c.read_var_uint()?,
            },
            FrameType::ConnectionDataBlocked => Self::ConnectionDataBlocked {
                max_offset: c.read_var_uint()?,
            },
            FrameType::ConnectionMaxStreamId => Self::ConnectionMaxStreamId {
                max_stream_id: c.read_var_uint()?,
            },
            FrameType::ConnectionStreamIdBlocked => Self::ConnectionStreamIdBlocked {
                max_stream_id: c.read_var_uint()?,
            },
            FrameType::ConnectionAssetDetails => Self::ConnectionAssetDetails {
                source_asset_code: read_string(c)?,
                source_asset_scale: c.read_u8()?,
            },
            FrameType::StreamClose => Self::StreamClose {
                stream_id: c.read_var_uint()?,
                code: StreamErrorCode(c.read_u8()?),
                message: read_string(c)?,
            },
            FrameType::StreamMoney => Self::StreamMoney {
                stream_id: c.read_var_uint()?,
                shares: c.read_var_uint()?,
            },
            FrameType::StreamMaxMoney => Self::StreamMaxMoney {
                stream_id: c.read_var_uint()?,
                receive_max: c.read_var_uint_saturating()?,
                total_received: c.read_var_uint()?,
            },
            FrameType::StreamMoneyBlocked => Self::StreamMoneyBlocked {
                stream_id: c.read_var_uint()?,
                send_max: c.read_var_uint_saturating()?,
                total_sent: c.read_var_uint()?,
            },
            FrameType::StreamData => Self::StreamData {
                stream_id: c.read_var_uint()?,
                offset: c.read_var_uint()?,
                data: c.read_var_octet_string()?.to_vec(),
            },
            FrameType::StreamMaxData => Self::StreamMaxData {
                stream_id: c.read_var_uint()?,
                max_offset: c.read_var_uint()?,
            },
            FrameType::StreamDataBlocked => Self::StreamDataBlocked {
                stream_id: c.read_var_uint()?,
                max_offset: c.read_var_uint()?,
            },
            FrameType::StreamReceipt => Self::StreamReceipt {
                stream_id: c.read_var_uint()?,
                receipt: c.read_var_octet_string()?.to_vec(),
            },
        })
    }

    /// Appends the frame (type + length-prefixed contents).
    pub fn write(&self, w: &mut Writer) {
        let mut c = Writer::new();
        match self {
            Self::ConnectionClose { code, message } => {
                c.write_u8(code.0);
                c.write_var_octet_string(message.as_bytes());
            }
            Self::ConnectionNewAddress { source_account } => {
                c.write_var_octet_string(source_account.as_bytes());
            }
            Self::ConnectionMaxData { max_offset } | Self::ConnectionDataBlocked { max_offset } => {
                c.write_var_uint(*max_offset);
            }
            Self::ConnectionMaxStreamId { max_stream_id } | Self::ConnectionStreamIdBlocked { max_stream_id } => {
                c.write_var_uint(*max_stream_id);
            }
            Self::ConnectionAssetDetails {
                source_asset_code,
                source_asset_scale,
            } => {
                c.write_var_octet_string(source_asset_code.as_bytes());
                c.write_u8(*source_asset_scale);
            }
            Self::StreamClose {
                stream_id,
                code,
                message,
            } => {
                c.write_var_uint(*stream_id);
                c.write_u8(code.0);
                c.write_var_octet_string(message.as_bytes());
            }
            Self::StreamMoney { stream_id, shares } => {
                c.write_var_uint(*stream_id);
                c.write_var_uint(*shares);
            }
            Self::StreamMaxMoney {
                stream_id,
                receive_max: a,
                total_received: b,
            }
            | Self::StreamMoneyBlocked {
                stream_id,
                send_max: a,
                total_sent: b,
            } => {
                c.write_var_uint(*stream_id);
                c.write_var_uint(*a);
                c.write_var_uint(*b);
            }
            Self::StreamData {
                stream_id,
                offset,
                data,
            } => {
                c.write_var_uint(*stream_id);
                c.write_var_uint(*offset);
                c.write_var_octet_string(data);
            }
            Self::StreamMaxData { stream_id, max_offset } | Self::StreamDataBlocked { stream_id, max_offset } => {
                c.write_var_uint(*stream_id);
                c.write_var_uint(*max_offset);
            }
            Self::StreamReceipt { stream_id, receipt } => {
                c.write_var_uint(*stream_id);
                c.write_var_octet_string(receipt);
            }
            Self::Unknown { contents, .. } => c.write_bytes(contents),
        }
        w.write_u8(self.frame_type());
        w.write_var_octet_string(c.as_slice());
    }
}

fn read_string(r: &mut Reader<'_>) -> Result<String, Error> {
    Ok(String::from_utf8_lossy(r.read_var_octet_string()?).into_owned())
}

/// A plaintext STREAM packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPacket {
    /// Per-connection sequence number (a reply echoes the request's).
    pub sequence: u64,
    /// The ILP packet type this STREAM packet claims to travel in (12/13/14).
    pub ilp_packet_type: PacketType,
    /// Request: minimum the receiver must get; reply: amount the receiver got.
    pub prepare_amount: u64,
    /// Frames, in order (unknown ones included as [`Frame::Unknown`]).
    pub frames: Vec<Frame>,
}

impl StreamPacket {
    /// Decodes a plaintext packet. Bytes after the declared frames (padding) are ignored. Every
    /// failure is reported as [`Error::InvalidStreamPacket`] (reject code `F06`).
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        Self::decode_inner(bytes).map_err(|e| Error::InvalidStreamPacket(Box::new(e)))
    }

    fn decode_inner(bytes: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(bytes);
        let version = r.read_u8()?;
        if version != VERSION {
            return Err(Error::UnsupportedStreamVersion(version));
        }
        let ilp_packet_type = PacketType::try_from(r.read_u8()?)?;
        let sequence = r.read_var_uint()?;
        let prepare_amount = r.read_var_uint()?;
        let count = r.read_var_uint()?;
        let max_frames = r.remaining() / MIN_FRAME_LEN;
        let count = usize::try_from(count)
            .ok()
            .filter(|&n| n <= max_frames)
            .ok_or(Error::TooManyFrames(count))?;
        let mut frames = Vec::with_capacity(count);
        for _ in 0..count {
            frames.push(Frame::read(&mut r)?);
        }
        Ok(Self {
            sequence,
            ilp_packet_type,
            prepare_amount,
            frames,
        })
    }

    /// Encodes the packet (no padding).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.write_u8(VERSION);
        w.write_u8(self.ilp_packet_type.as_u8());
        w.write_var_uint(self.sequence);
        w.write_var_uint(self.prepare_amount);
        w.write_var_uint(self.frames.len() as u64);
        for frame in &self.frames {
            frame.write(&mut w);
        }
        w.into_vec()
    }

    /// Decrypts ILP `data` with the connection's encryption key and decodes it. Authentication
    /// failures are [`Error::DecryptionFailed`], format errors [`Error::InvalidStreamPacket`];
    /// both map to `F06`.
    pub fn decrypt(encryption_key: &[u8; 32], data: &[u8]) -> Result<Self, Error> {
        Self::decode(&crypto::decrypt(encryption_key, data)?)
    }

    /// Encodes and encrypts with a random IV, giving ILP `data`.
    pub fn encrypt(&self, encryption_key: &[u8; 32]) -> Result<Vec<u8>, Error> {
        crypto::encrypt(encryption_key, &self.encode())
    }

    /// Encodes and encrypts with an explicit IV (deterministic; tests and vectors).
    pub fn encrypt_with_iv(&self, encryption_key: &[u8; 32], iv: &[u8; crypto::IV_LEN]) -> Vec<u8> {
        crypto::encrypt_with_iv(encryption_key, iv, &self.encode())
    }

    /// True if any frame is a `ConnectionClose`.
    pub fn has_connection_close(&self) -> bool {
        self.frames.iter().any(|f| matches!(f, Frame::ConnectionClose { .. }))
    }

    /// True if any frame is a `ConnectionNewAddress` (the sender wants our asset details).
    pub fn has_connection_new_address(&self) -> bool {
        self.frames
            .iter()
            .any(|f| matches!(f, Frame::ConnectionNewAddress { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::Value;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/vectors/stream/StreamPacketFixtures.json"
    );

    #[derive(serde::Deserialize)]
    struct Fixture {
        name: String,
        packet: PacketJson,
        buffer: String,
        #[serde(default)]
        decode_only: bool,
    }

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct PacketJson {
        sequence: String,
        packet_type: u8,
        amount: String,
        frames: Vec<serde_json::Map<String, Value>>,
    }

    fn load() -> Vec<Fixture> {
        let text = std::fs::read_to_string(FIXTURES).expect(FIXTURES);
        serde_json::from_str(&text).unwrap()
    }

    fn num(m: &serde_json::Map<String, Value>, key: &str) -> u64 {
        match &m[key] {
            Value::String(s) => s.parse().unwrap(),
            Value::Number(n) => n.as_u64().unwrap(),
            other => panic!("{key}: {other}"),
        }
    }

    fn text(m: &serde_json::Map<String, Value>, key: &str) -> String {
        m[key].as_str().unwrap().to_owned()
    }

    fn code(m: &serde_json::Map<String, Value>) -> StreamErrorCode {
        StreamErrorCode(u8::try_from(num(m, "errorCode")).unwrap())
    }

    /// Builds the expected frame from the fixture's JSON.
    fn frame_from_json(m: &serde_json::Map<String, Value>) -> Frame {
        let ty = u8::try_from(num(m, "type")).unwrap();
        let frame = match m["name"].as_str().unwrap() {
            "ConnectionClose" => Frame::ConnectionClose {
                code: code(m),
                message: text(m, "errorMessage"),
            },
            "ConnectionNewAddress" => Frame::ConnectionNewAddress {
                source_account: text(m, "sourceAccount"),
            },
            "ConnectionAssetDetails" => Frame::ConnectionAssetDetails {
                source_asset_code: text(m, "sourceAssetCode"),
                source_asset_scale: u8::try_from(num(m, "sourceAssetScale")).unwrap(),
            },
            "ConnectionMaxData" => Frame::ConnectionMaxData {
                max_offset: num(m, "maxOffset"),
            },
            "ConnectionDataBlocked" => Frame::ConnectionDataBlocked {
                max_offset: num(m, "maxOffset"),
            },
            "ConnectionMaxStreamId" => Frame::ConnectionMaxStreamId {
                max_stream_id: num(m, "maxStreamId"),
            },
            "ConnectionStreamIdBlocked" => Frame::ConnectionStreamIdBlocked {
                max_stream_id: num(m, "maxStreamId"),
            },
            "StreamClose" => Frame::StreamClose {
                stream_id: num(m, "streamId"),
                code: code(m),
                message: text(m, "errorMessage"),
            },
            "StreamMoney" => Frame::StreamMoney {
                stream_id: num(m, "streamId"),
                shares: num(m, "shares"),
            },
            "StreamMaxMoney" => Frame::StreamMaxMoney {
                stream_id: num(m, "streamId"),
                receive_max: num(m, "receiveMax"),
                total_received: num(m, "totalReceived"),
            },
            "StreamMoneyBlocked" => Frame::StreamMoneyBlocked {
                stream_id: num(m, "streamId"),
                send_max: num(m, "sendMax"),
                total_sent: num(m, "totalSent"),
            },
            "StreamData" => Frame::StreamData {
                stream_id: num(m, "streamId"),
                offset: num(m, "offset"),
                data: STANDARD.decode(text(m, "data")).unwrap(),
            },
            "StreamMaxData" => Frame::StreamMaxData {
                stream_id: num(m, "streamId"),
                max_offset: num(m, "maxOffset"),
            },
            "StreamDataBlocked" => Frame::StreamDataBlocked {
                stream_id: num(m, "streamId"),
                max_offset: num(m, "maxOffset"),
            },
            "StreamReceipt" => Frame::StreamReceipt {
                stream_id: num(m, "streamId"),
                receipt: STANDARD.decode(text(m, "receipt")).unwrap(),
            },
            other => panic!("unknown frame name {other}"),
        };
        assert_eq!(frame.frame_type(), ty);
        frame
    }

    #[test]
    fn all_fixtures() {
        let fixtures = load();
        assert_eq!(fixtures.len(), 53);
        let mut seen_types = std::collections::BTreeSet::new();
        let mut decode_only = 0;
        for fx in &fixtures {
            let bytes = STANDARD.decode(&fx.buffer).unwrap();
            let expected = StreamPacket {
                sequence: fx.packet.sequence.parse().unwrap(),
                ilp_packet_type: PacketType::try_from(fx.packet.packet_type).unwrap(),
                prepare_amount: fx.packet.amount.parse().unwrap(),
                frames: fx.packet.frames.iter().map(frame_from_json).collect(),
            };
            let decoded = StreamPacket::decode(&bytes).unwrap_or_else(|e| panic!("{}: decode failed: {e}", fx.name));
            assert_eq!(decoded, expected, "{}", fx.name);
            seen_types.extend(decoded.frames.iter().map(Frame::frame_type));
            if fx.decode_only {
                decode_only += 1;
                // The saturated value re-encodes canonically (8 bytes), not as the 9-byte input.
                assert_ne!(decoded.encode(), bytes, "{}", fx.name);
                assert_eq!(StreamPacket::decode(&decoded.encode()).unwrap(), decoded);
            } else {
                assert_eq!(expected.encode(), bytes, "{}: re-encode", fx.name);
            }
        }
        assert_eq!(decode_only, 2);
        // Every frame type 0x01..=0x07 and 0x10..=0x17 is covered by the fixtures.
        let all: std::collections::BTreeSet<u8> = (0x01..=0x07).chain(0x10..=0x17).collect();
        assert_eq!(seen_types, all);
    }

    #[test]
    fn fixtures_survive_truncation_and_bit_flips() {
        for fx in load() {
            let bytes = STANDARD.decode(&fx.buffer).unwrap();
            for cut in 0..bytes.len() {
                assert!(StreamPacket::decode(&bytes[..cut]).is_err(), "{} cut at {cut}", fx.name);
            }
            for i in 0..bytes.len() {
                for bit in 0..8 {
                    let mut m = bytes.clone();
                    m[i] ^= 1 << bit;
                    let _ = StreamPacket::decode(&m);
                }
            }
        }
    }

    #[test]
    fn padding_and_unknown_frames() {
        let packet = StreamPacket {
            sequence: 7,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount: 100,
            frames: vec![
                Frame::Unknown {
                    frame_type: 0x42,
                    contents: vec![1, 2, 3],
                },
                Frame::StreamMoney {
                    stream_id: 1,
                    shares: 1,
                },
            ],
        };
        let mut bytes = packet.encode();
        assert_eq!(StreamPacket::decode(&bytes).unwrap(), packet);
        bytes.extend_from_slice(&[0u8; 300]);
        assert_eq!(StreamPacket::decode(&bytes).unwrap(), packet);
    }

    #[test]
    fn extra_bytes_inside_known_frame_are_ignored() {
        // StreamMoney(1, 1) with one extra byte in its contents.
        let bytes = [1, 12, 1, 0, 1, 0, 1, 1, 0x11, 5, 1, 1, 1, 1, 0xee];
        let p = StreamPacket::decode(&bytes).unwrap();
        assert_eq!(
            p.frames,
            [Frame::StreamMoney {
                stream_id: 1,
                shares: 1
            }]
        );
    }

    #[test]
    fn malformed_headers() {
        let inner = |bytes: &[u8]| match StreamPacket::decode(bytes) {
            Err(Error::InvalidStreamPacket(e)) => *e,
            other => panic!("expected InvalidStreamPacket, got {other:?}"),
        };
        assert_eq!(inner(&[2, 12, 1, 0, 1, 0, 1, 0]), Error::UnsupportedStreamVersion(2));
        assert_eq!(inner(&[1, 15, 1, 0, 1, 0, 1, 0]), Error::UnknownPacketType(15));
        assert_eq!(inner(&[1, 12, 0, 1, 0, 1, 0]), Error::EmptyVarUInt);
        // Frame count larger than what the remaining bytes could hold.
        assert_eq!(inner(&[1, 12, 1, 0, 1, 0, 1, 2, 1, 0]), Error::TooManyFrames(2));
        assert_eq!(
            inner(&[1, 12, 1, 0, 1, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Error::TooManyFrames(u64::MAX)
        );
        // Bare length byte instead of a VarUInt frame count (`00` = empty VarUInt).
        assert_eq!(inner(&[1, 12, 1, 0, 1, 0, 0]), Error::EmptyVarUInt);
        // Non-canonical frame length.
        assert_eq!(
            inner(&[1, 12, 1, 0, 1, 0, 1, 1, 0x11, 0x81, 0x04, 1, 1, 1, 1]),
            Error::NonCanonicalLength
        );
        // Oversized non-saturating VarUInt (9-byte stream id).
        assert_eq!(
            inner(&[1, 12, 1, 0, 1, 0, 1, 1, 0x11, 12, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]),
            Error::VarUIntTooLarge(9)
        );
        assert_eq!(
            StreamPacket::decode(&[2]).unwrap_err().reject_code(),
            crate::ilp::ErrorCode::F06_UNEXPECTED_PAYMENT
        );
    }

    #[test]
    fn encrypt_round_trip() {
        let key = [9u8; 32];
        let packet = StreamPacket {
            sequence: 1,
            ilp_packet_type: PacketType::Fulfill,
            prepare_amount: 5,
            frames: vec![Frame::ConnectionAssetDetails {
                source_asset_code: "USD".into(),
                source_asset_scale: 2,
            }],
        };
        let data = packet.encrypt(&key).unwrap();
        assert_eq!(StreamPacket::decrypt(&key, &data).unwrap(), packet);
        assert_eq!(StreamPacket::decrypt(&[8u8; 32], &data), Err(Error::DecryptionFailed));
        assert!(!packet.has_connection_close());
        assert!(!packet.has_connection_new_address());
    }
}
