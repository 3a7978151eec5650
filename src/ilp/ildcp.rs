//! IL-DCP (RFC 31), the peer configuration protocol: building and recognising the request (a
//! zero-amount Prepare to `peer.config` with condition `SHA-256(0³²)`) and encoding/decoding the
//! response (a Fulfill with fulfillment `0³²` whose data is
//! `VarOctetString(clientAddress) ‖ UInt8 assetScale ‖ VarOctetString(assetCode)`). It does not
//! decide which address/asset a peer gets, nor read the clock: callers pass `now`/`expires_at`.

use super::Error;
use super::oer::{Reader, Writer};
use super::packet::{Address, Fulfill, Prepare, Timestamp};

/// Destination of every IL-DCP request.
pub const DESTINATION: &str = "peer.config";

/// Fulfillment of every IL-DCP (peer protocol) response: 32 zero bytes.
pub const PEER_PROTOCOL_FULFILLMENT: [u8; 32] = [0; 32];

/// `SHA-256(PEER_PROTOCOL_FULFILLMENT)`.
pub const PEER_PROTOCOL_CONDITION: [u8; 32] = [
    0x66, 0x68, 0x7a, 0xad, 0xf8, 0x62, 0xbd, 0x77, 0x6c, 0x8f, 0xc1, 0x8b, 0x8e, 0x9f, 0x8e, 0x20, 0x08, 0x97, 0x14,
    0x85, 0x6e, 0xe2, 0x33, 0xb3, 0x90, 0x2a, 0x59, 0x1d, 0x0d, 0x5f, 0x29, 0x25,
];

/// Expiry the JS client uses for requests (60 s).
pub const DEFAULT_EXPIRY_MILLIS: i64 = 60_000;

/// Configuration handed to a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IldcpResponse {
    /// The peer's ILP address.
    pub client_address: Address,
    /// Asset scale of the link.
    pub asset_scale: u8,
    /// Asset code of the link (decoded lossily from UTF-8).
    pub asset_code: String,
}

/// The IL-DCP request Prepare, expiring at `expires_at`.
pub fn request(expires_at: Timestamp) -> Result<Prepare, Error> {
    Ok(Prepare {
        amount: 0,
        expires_at,
        execution_condition: PEER_PROTOCOL_CONDITION,
        destination: Address::new(DESTINATION)?,
        data: Vec::new(),
    })
}

/// True if `prepare` is addressed to `peer.config` (route it here before anything else).
pub fn is_request(prepare: &Prepare) -> bool {
    prepare.destination.as_str() == DESTINATION
}

/// Checks an IL-DCP request as `ilp-protocol-ildcp` does: destination, condition and expiry
/// (`expires_at >= now`). Failures map to `F00`.
pub fn validate_request(prepare: &Prepare, now: Timestamp) -> Result<(), Error> {
    if !is_request(prepare) {
        return Err(Error::NotIldcpRequest);
    }
    if prepare.execution_condition != PEER_PROTOCOL_CONDITION {
        return Err(Error::IldcpWrongCondition);
    }
    if prepare.expires_at < now {
        return Err(Error::Expired);
    }
    Ok(())
}

impl IldcpResponse {
    /// The Fulfill `data` bytes.
    pub fn encode_data(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.write_var_octet_string(self.client_address.as_str().as_bytes());
        w.write_u8(self.asset_scale);
        w.write_var_octet_string(self.asset_code.as_bytes());
        w.into_vec()
    }

    /// Parses Fulfill `data` (trailing bytes are ignored for forward compatibility).
    pub fn decode_data(data: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(data);
        let client_address = Address::from_bytes(r.read_var_octet_string()?)?;
        let asset_scale = r.read_u8()?;
        let asset_code = String::from_utf8_lossy(r.read_var_octet_string()?).into_owned();
        Ok(Self {
            client_address,
            asset_scale,
            asset_code,
        })
    }

    /// The response Fulfill.
    pub fn to_fulfill(&self) -> Fulfill {
        Fulfill {
            fulfillment: PEER_PROTOCOL_FULFILLMENT,
            data: self.encode_data(),
        }
    }

    /// Parses a response Fulfill, checking the peer-protocol fulfillment.
    pub fn from_fulfill(fulfill: &Fulfill) -> Result<Self, Error> {
        if fulfill.fulfillment != PEER_PROTOCOL_FULFILLMENT {
            return Err(Error::IldcpWrongFulfillment);
        }
        Self::decode_data(&fulfill.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::crypto::condition_for;
    use crate::ilp::packet::{ErrorCode, Packet, Reject};

    // Vectors from interledgerjs `packages/ilp-protocol-ildcp/test/index.spec.ts`.
    const REQUEST_HEX: &str = "0c460000000000000000323031353036313630303031303030303066687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f29250b706565722e636f6e66696700";
    const RESPONSE_HEX: &str = "0d350000000000000000000000000000000000000000000000000000000000000000140e6578616d706c652e636c69656e740d0358414d";
    const REJECT_HEX: &str = "0e254630300e6578616d706c652e73657276657211756e6578706563746564206572726f722e00";
    const START_DATE: i64 = 1_434_412_800_000;

    #[test]
    fn condition_constant() {
        assert_eq!(condition_for(&PEER_PROTOCOL_FULFILLMENT), PEER_PROTOCOL_CONDITION);
    }

    #[test]
    fn request_vector() {
        let expires = Timestamp::from_unix_millis(START_DATE + DEFAULT_EXPIRY_MILLIS).unwrap();
        let req = request(expires).unwrap();
        assert_eq!(hex::encode(req.encode().unwrap()), REQUEST_HEX);
        let decoded = Prepare::decode(&hex::decode(REQUEST_HEX).unwrap()).unwrap();
        assert_eq!(decoded, req);
        let now = Timestamp::from_unix_millis(START_DATE).unwrap();
        validate_request(&decoded, now).unwrap();

        let late = Timestamp::from_unix_millis(START_DATE + 60_001).unwrap();
        assert_eq!(validate_request(&decoded, late), Err(Error::Expired));
        let mut wrong = decoded.clone();
        wrong.execution_condition[0] ^= 1;
        assert_eq!(validate_request(&wrong, now), Err(Error::IldcpWrongCondition));
        assert_eq!(Error::IldcpWrongCondition.reject_code(), ErrorCode::F00_BAD_REQUEST);
        wrong = decoded;
        wrong.destination = Address::new("peer.bonfig").unwrap();
        assert!(!is_request(&wrong));
        assert_eq!(validate_request(&wrong, now), Err(Error::NotIldcpRequest));
    }

    #[test]
    fn response_vector() {
        let resp = IldcpResponse {
            client_address: Address::new("example.client").unwrap(),
            asset_scale: 13,
            asset_code: "XAM".into(),
        };
        let bytes = hex::decode(RESPONSE_HEX).unwrap();
        assert_eq!(resp.to_fulfill().encode().unwrap(), bytes);
        let Packet::Fulfill(f) = Packet::decode(&bytes).unwrap() else {
            panic!("not a fulfill")
        };
        assert_eq!(IldcpResponse::from_fulfill(&f).unwrap(), resp);

        let mut bad = bytes.clone();
        bad[16] = 0x10;
        let f = Fulfill::decode(&bad).unwrap();
        assert_eq!(IldcpResponse::from_fulfill(&f), Err(Error::IldcpWrongFulfillment));
        for cut in 0..resp.encode_data().len() {
            assert!(IldcpResponse::decode_data(&resp.encode_data()[..cut]).is_err());
        }
    }

    #[test]
    fn serve_error_reject_vector() {
        let reject = Reject {
            code: ErrorCode::F00_BAD_REQUEST,
            triggered_by: Some(Address::new("example.server").unwrap()),
            message: "unexpected error.".into(),
            data: vec![],
        };
        assert_eq!(hex::encode(reject.encode().unwrap()), REJECT_HEX);
    }
}
