//! STREAM cryptography (RFC 29 §5.1, §6) and the stateless receiver credentials used by
//! `@interledger/stream-receiver` / Rafiki (STREAM.md §1.5). It owns HMAC-SHA256 / SHA-256,
//! key derivation from a shared secret, the AES-256-GCM envelope `iv(12) ‖ tag(16) ‖ ciphertext`
//! (no AAD), fulfillments and conditions, and the connection token carried in the destination
//! address (`serverAddress.base64url(token)`, `sharedSecret = HMAC(HMAC(serverSecret,
//! "ilp_stream_shared_secret"), token)`). Everything is a pure function of its explicit inputs;
//! the only side effect is reading OS randomness in the functions that say so. Secrets are
//! never logged or printed here.

use super::Error;
use super::oer::{Reader, Writer};
use super::packet::Address;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE_NO_PAD, URL_SAFE_NO_PAD_INDIFFERENT};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// AES-GCM IV length.
pub const IV_LEN: usize = 12;
/// AES-GCM tag length.
pub const TAG_LEN: usize = 16;
/// Bytes added by [`encrypt`].
pub const ENCRYPTION_OVERHEAD: usize = IV_LEN + TAG_LEN;

/// HMAC label for the packet encryption key.
pub const ENCRYPTION_KEY_STRING: &[u8] = b"ilp_stream_encryption";
/// HMAC label for the fulfillment key.
pub const FULFILLMENT_KEY_STRING: &[u8] = b"ilp_stream_fulfillment";
/// HMAC label for the connection-token encryption key (derived from the server secret).
pub const TOKEN_KEY_STRING: &[u8] = b"ilp_stream_connection_token";
/// HMAC label for the shared-secret generator key (derived from the server secret).
pub const SHARED_SECRET_KEY_STRING: &[u8] = b"ilp_stream_shared_secret";

/// SHA-256 block size, the HMAC key block.
const HMAC_BLOCK: usize = 64;

/// `HMAC-SHA256(key, message)`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC pads keys up to the block size with zeros and hashes longer ones; doing it here lets
    // us use the infallible fixed-size constructor.
    let mut block = [0u8; HMAC_BLOCK];
    let hashed;
    let key = if key.len() > HMAC_BLOCK {
        hashed = sha256(key);
        &hashed[..]
    } else {
        key
    };
    for (dst, src) in block.iter_mut().zip(key) {
        *dst = *src;
    }
    let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// `SHA-256(data)`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// `HMAC(shared_secret, "ilp_stream_encryption")`.
pub fn encryption_key(shared_secret: &[u8]) -> [u8; 32] {
    hmac_sha256(shared_secret, ENCRYPTION_KEY_STRING)
}

/// `HMAC(shared_secret, "ilp_stream_fulfillment")`.
pub fn fulfillment_key(shared_secret: &[u8]) -> [u8; 32] {
    hmac_sha256(shared_secret, FULFILLMENT_KEY_STRING)
}

/// The fulfillment for a Prepare whose (encrypted) `data` is given:
/// `HMAC(fulfillment_key(shared_secret), data)`.
pub fn fulfillment_for(shared_secret: &[u8], data: &[u8]) -> [u8; 32] {
    hmac_sha256(&fulfillment_key(shared_secret), data)
}

/// The execution condition for a fulfillment: `SHA-256(fulfillment)`.
pub fn condition_for(fulfillment: &[u8; 32]) -> [u8; 32] {
    sha256(fulfillment)
}

/// Both per-connection keys, derived once from the shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct StreamKeys {
    /// AES-256-GCM key for STREAM packets.
    pub encryption_key: [u8; 32],
    /// HMAC key for fulfillments.
    pub fulfillment_key: [u8; 32],
}

impl StreamKeys {
    /// Derives both keys.
    pub fn derive(shared_secret: &[u8]) -> Self {
        Self {
            encryption_key: encryption_key(shared_secret),
            fulfillment_key: fulfillment_key(shared_secret),
        }
    }

    /// `HMAC(fulfillment_key, data)`.
    pub fn fulfillment(&self, data: &[u8]) -> [u8; 32] {
        hmac_sha256(&self.fulfillment_key, data)
    }

    /// The condition a sender puts on a Prepare carrying `data`.
    pub fn condition(&self, data: &[u8]) -> [u8; 32] {
        condition_for(&self.fulfillment(data))
    }
}

impl std::fmt::Debug for StreamKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamKeys(..)")
    }
}

/// `N` bytes from the OS random source.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], Error> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|_| Error::RandomUnavailable)?;
    Ok(out)
}

/// A random (hence unfulfillable) execution condition, for probes.
pub fn random_condition() -> Result<[u8; 32], Error> {
    random_bytes()
}

/// AES-256-GCM with a random IV → `iv ‖ tag ‖ ciphertext`.
pub fn encrypt(key: &[u8; 32], plaintext: &[u8]) -> Result<Vec<u8>, Error> {
    Ok(encrypt_with_iv(key, &random_bytes()?, plaintext))
}

/// AES-256-GCM with an explicit IV → `iv ‖ tag ‖ ciphertext`. Never reuse an IV with one key
/// outside tests.
pub fn encrypt_with_iv(key: &[u8; 32], iv: &[u8; IV_LEN], plaintext: &[u8]) -> Vec<u8> {
    let cipher = Aes256Gcm::new(&(*key).into());
    let mut ciphertext = plaintext.to_vec();
    // GCM only fails for plaintexts beyond 2^36 bytes, far above any ILP packet; in that case
    // the output carries a zero tag and fails authentication on the other side.
    let tag = cipher
        .encrypt_inout_detached(&Nonce::from(*iv), b"", ciphertext.as_mut_slice().into())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(ENCRYPTION_OVERHEAD.saturating_add(ciphertext.len()));
    out.extend_from_slice(iv);
    out.extend_from_slice(&tag);
    out.extend_from_slice(&ciphertext);
    out
}

/// Opens `iv ‖ tag ‖ ciphertext`. Fails with [`Error::DecryptionFailed`] if the input is too
/// short or not authentic.
pub fn decrypt(key: &[u8; 32], data: &[u8]) -> Result<Vec<u8>, Error> {
    if data.len() < ENCRYPTION_OVERHEAD {
        return Err(Error::DecryptionFailed);
    }
    let (iv, rest) = data.split_at(IV_LEN);
    let (tag, ciphertext) = rest.split_at(TAG_LEN);
    let nonce = Nonce::try_from(iv).map_err(|_| Error::DecryptionFailed)?;
    let tag = Tag::try_from(tag).map_err(|_| Error::DecryptionFailed)?;
    let cipher = Aes256Gcm::new(&(*key).into());
    let mut buf = ciphertext.to_vec();
    cipher
        .decrypt_inout_detached(&nonce, b"", buf.as_mut_slice().into(), &tag)
        .map_err(|_| Error::DecryptionFailed)?;
    Ok(buf)
}

/// Lower-case hex.
fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len().saturating_mul(2));
    for &b in bytes {
        for nibble in [b >> 4, b & 0x0f] {
            s.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Stateless receiver credentials (Rafiki / @interledger/stream-receiver token format)

const FLAG_PAYMENT_TAG: u8 = 1;
const FLAG_RECEIPTS: u8 = 2;
const FLAG_ASSET: u8 = 4;

/// Receipt parameters embedded in a token (RFC 39). Rafiki does not enable them for Open
/// Payments credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct ReceiptSetup {
    /// 16-byte receipt nonce.
    pub nonce: [u8; 16],
    /// 32-byte receipt secret.
    pub secret: [u8; 32],
}

impl std::fmt::Debug for ReceiptSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptSetup(..)")
    }
}

/// Asset details embedded in a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAsset {
    /// Asset code (UTF-8).
    pub code: String,
    /// Asset scale.
    pub scale: u8,
}

/// What a connection token names: plaintext `flags:UInt8 ‖ [VarOctetString paymentTag] ‖
/// [nonce(16) ‖ secret(32)] ‖ [VarOctetString assetCode ‖ UInt8 scale]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionDetails {
    /// Application tag, e.g. the incoming-payment id (ASCII).
    pub payment_tag: Option<String>,
    /// Receipt setup, if receipts are enabled.
    pub receipt: Option<ReceiptSetup>,
    /// The receiving asset, answered in `ConnectionAssetDetails`.
    pub asset: Option<TokenAsset>,
}

impl ConnectionDetails {
    /// The token plaintext. Fails if the payment tag is not ASCII (the JS encoder would mangle
    /// it) or longer than an address could carry.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        let mut flags = 0u8;
        let mut w = Writer::new();
        w.write_u8(0); // flags, patched below
        if let Some(tag) = &self.payment_tag {
            if !tag.is_ascii() {
                return Err(Error::InvalidPaymentTag);
            }
            flags |= FLAG_PAYMENT_TAG;
            w.write_var_octet_string(tag.as_bytes());
        }
        if let Some(receipt) = &self.receipt {
            flags |= FLAG_RECEIPTS;
            w.write_bytes(&receipt.nonce);
            w.write_bytes(&receipt.secret);
        }
        if let Some(asset) = &self.asset {
            flags |= FLAG_ASSET;
            w.write_var_octet_string(asset.code.as_bytes());
            w.write_u8(asset.scale);
        }
        let mut bytes = w.into_vec();
        if let Some(first) = bytes.first_mut() {
            *first = flags;
        }
        Ok(bytes)
    }

    /// Parses token plaintext (unknown flag bits and trailing bytes are ignored, as in JS).
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let mut r = Reader::new(bytes);
        let flags = r.read_u8()?;
        let payment_tag = if flags & FLAG_PAYMENT_TAG != 0 {
            Some(String::from_utf8_lossy(r.read_var_octet_string()?).into_owned())
        } else {
            None
        };
        let receipt = if flags & FLAG_RECEIPTS != 0 {
            Some(ReceiptSetup {
                nonce: r.read_array()?,
                secret: r.read_array()?,
            })
        } else {
            None
        };
        let asset = if flags & FLAG_ASSET != 0 {
            Some(TokenAsset {
                code: String::from_utf8_lossy(r.read_var_octet_string()?).into_owned(),
                scale: r.read_u8()?,
            })
        } else {
            None
        };
        Ok(Self {
            payment_tag,
            receipt,
            asset,
        })
    }
}

/// `HMAC(server_secret, "ilp_stream_connection_token")`: encrypts tokens.
pub fn token_key(server_secret: &[u8; 32]) -> [u8; 32] {
    hmac_sha256(server_secret, TOKEN_KEY_STRING)
}

/// `HMAC(HMAC(server_secret, "ilp_stream_shared_secret"), token)`.
pub fn shared_secret_for_token(server_secret: &[u8; 32], token: &[u8]) -> [u8; 32] {
    hmac_sha256(&hmac_sha256(server_secret, SHARED_SECRET_KEY_STRING), token)
}

/// Credentials handed to a sender (Open Payments `methods[ilp]`).
#[derive(Clone, PartialEq, Eq)]
pub struct StreamCredentials {
    /// `server_address.base64url(token)`.
    pub ilp_address: Address,
    /// 32-byte shared secret.
    pub shared_secret: [u8; 32],
}

impl StreamCredentials {
    /// The shared secret as unpadded base64url, as Open Payments returns it.
    pub fn shared_secret_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.shared_secret)
    }
}

impl std::fmt::Debug for StreamCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamCredentials")
            .field("ilp_address", &self.ilp_address)
            .finish_non_exhaustive()
    }
}

/// Generates credentials with a random token IV (every call gives a different address).
pub fn generate_credentials(
    server_secret: &[u8; 32],
    server_address: &Address,
    details: &ConnectionDetails,
) -> Result<StreamCredentials, Error> {
    generate_credentials_with_iv(server_secret, server_address, details, &random_bytes()?)
}

/// Generates credentials with an explicit token IV (deterministic; tests and vectors).
pub fn generate_credentials_with_iv(
    server_secret: &[u8; 32],
    server_address: &Address,
    details: &ConnectionDetails,
    iv: &[u8; IV_LEN],
) -> Result<StreamCredentials, Error> {
    let token = encrypt_with_iv(&token_key(server_secret), iv, &details.encode()?);
    let ilp_address = server_address.with_segment(&URL_SAFE_NO_PAD.encode(&token))?;
    Ok(StreamCredentials {
        ilp_address,
        shared_secret: shared_secret_for_token(server_secret, &token),
    })
}

/// A destination address resolved by the receiver.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedConnection {
    /// What the token names.
    pub details: ConnectionDetails,
    /// The connection's shared secret.
    pub shared_secret: [u8; 32],
    /// Keys derived from it.
    pub keys: StreamKeys,
    /// `hex(SHA-256(destination))`, the connection id used for receipts/logs.
    pub connection_id: String,
}

impl std::fmt::Debug for ResolvedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedConnection")
            .field("details", &self.details)
            .field("connection_id", &self.connection_id)
            .finish_non_exhaustive()
    }
}

/// `hex(SHA-256(destination))`.
pub fn connection_id(destination: &Address) -> String {
    to_hex(&sha256(destination.as_str().as_bytes()))
}

/// The raw token bytes in `destination`: the first segment after `server_address.`,
/// base64url-decoded (padding tolerated). Not under the server address → [`Error::NotOurAddress`]
/// (`F02`); undecodable → [`Error::InvalidToken`] (`F06`).
pub fn token_from_address(server_address: &Address, destination: &Address) -> Result<Vec<u8>, Error> {
    let segment = destination.segment_after(server_address).ok_or(Error::NotOurAddress)?;
    URL_SAFE_NO_PAD_INDIFFERENT
        .decode(segment)
        .map_err(|_| Error::InvalidToken)
}

/// Decrypts and parses a token. Any failure is [`Error::InvalidToken`] (`F06`).
pub fn decrypt_token(server_secret: &[u8; 32], token: &[u8]) -> Result<ConnectionDetails, Error> {
    let plaintext = decrypt(&token_key(server_secret), token).map_err(|_| Error::InvalidToken)?;
    ConnectionDetails::decode(&plaintext).map_err(|_| Error::InvalidToken)
}

/// Receiver side of [`generate_credentials`]: from an incoming Prepare's destination to the
/// payment it names and the connection keys, with no stored state.
pub fn resolve_destination(
    server_secret: &[u8; 32],
    server_address: &Address,
    destination: &Address,
) -> Result<ResolvedConnection, Error> {
    let token = token_from_address(server_address, destination)?;
    let details = decrypt_token(server_secret, &token)?;
    let shared_secret = shared_secret_for_token(server_secret, &token);
    Ok(ResolvedConnection {
        details,
        keys: StreamKeys::derive(&shared_secret),
        shared_secret,
        connection_id: connection_id(destination),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ilp::packet::{ErrorCode, Prepare, Timestamp};
    use crate::ilp::stream::{Frame, StreamPacket};
    use base64::engine::general_purpose::STANDARD;

    const E2E: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vectors/stream/e2e-vectors.json");

    fn e2e() -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(E2E).expect(E2E)).unwrap()
    }

    fn hex_field<const N: usize>(v: &serde_json::Value, key: &str) -> [u8; N] {
        hex::decode(v[key].as_str().unwrap()).unwrap().try_into().unwrap()
    }

    fn hex_vec(v: &serde_json::Value, key: &str) -> Vec<u8> {
        hex::decode(v[key].as_str().unwrap()).unwrap()
    }

    #[test]
    fn e2e_stream_crypto() {
        let all = e2e();
        let v = &all["streamCrypto"];
        let secret: [u8; 32] = hex_field(v, "sharedSecretHex");
        let keys = StreamKeys::derive(&secret);
        assert_eq!(keys.encryption_key, hex_field::<32>(v, "encryptionKeyHex"));
        assert_eq!(keys.fulfillment_key, hex_field::<32>(v, "fulfillmentKeyHex"));
        assert_eq!(encryption_key(&secret), keys.encryption_key);
        assert_eq!(fulfillment_key(&secret), keys.fulfillment_key);

        let plain = hex_vec(v, "streamPacketPlainHex");
        let iv: [u8; 12] = hex_field(v, "ivHex");
        let encrypted = encrypt_with_iv(&keys.encryption_key, &iv, &plain);
        assert_eq!(encrypted, hex_vec(v, "encryptedDataHex"));
        assert_eq!(decrypt(&keys.encryption_key, &encrypted).unwrap(), plain);

        // The plaintext is a STREAM Prepare packet: seq 1, min amount 99, StreamMoney(1, 1).
        let packet = StreamPacket::decode(&plain).unwrap();
        assert_eq!(packet.sequence, 1);
        assert_eq!(packet.prepare_amount, 99);
        assert_eq!(
            packet.frames,
            [Frame::StreamMoney {
                stream_id: 1,
                shares: 1
            }]
        );
        assert_eq!(packet.encode(), plain);
        assert_eq!(packet.encrypt_with_iv(&keys.encryption_key, &iv), encrypted);

        let fulfillment = fulfillment_for(&secret, &encrypted);
        assert_eq!(fulfillment, hex_field::<32>(v, "fulfillmentHex"));
        assert_eq!(keys.fulfillment(&encrypted), fulfillment);
        let condition = condition_for(&fulfillment);
        assert_eq!(condition, hex_field::<32>(v, "conditionHex"));
        assert_eq!(keys.condition(&encrypted), condition);

        let prepare_bytes = hex_vec(v, "ilpPrepareHex");
        let prepare = Prepare::decode(&prepare_bytes).unwrap();
        assert_eq!(prepare.amount, 100);
        assert_eq!(prepare.execution_condition, condition);
        assert_eq!(prepare.data, encrypted);
        let rebuilt = Prepare {
            amount: 100,
            expires_at: Timestamp::parse("20300101000000000").unwrap(),
            execution_condition: condition,
            destination: Address::new("test.ase.conn").unwrap(),
            data: encrypted,
        };
        assert_eq!(rebuilt, prepare);
        assert_eq!(rebuilt.encode().unwrap(), prepare_bytes);
        for cut in 0..prepare_bytes.len() {
            assert!(Prepare::decode(&prepare_bytes[..cut]).is_err());
        }
    }

    #[test]
    fn e2e_connection_token() {
        let all = e2e();
        let v = &all["connectionToken"];
        let server_secret: [u8; 32] = hex_field(v, "serverSecretHex");
        let server_address = Address::new(v["serverAddress"].as_str().unwrap()).unwrap();
        let tag = v["paymentTag"].as_str().unwrap();
        let details = ConnectionDetails {
            payment_tag: Some(tag.to_owned()),
            receipt: None,
            asset: Some(TokenAsset {
                code: v["asset"]["code"].as_str().unwrap().to_owned(),
                scale: u8::try_from(v["asset"]["scale"].as_u64().unwrap()).unwrap(),
            }),
        };
        let iv: [u8; 12] = hex_field(v, "tokenIvHex");
        let creds = generate_credentials_with_iv(&server_secret, &server_address, &details, &iv).unwrap();
        assert_eq!(creds.ilp_address.as_str(), v["ilpAddress"].as_str().unwrap());
        assert_eq!(
            creds.shared_secret_base64url(),
            v["sharedSecretBase64Url"].as_str().unwrap()
        );

        let resolved = resolve_destination(&server_secret, &server_address, &creds.ilp_address).unwrap();
        assert_eq!(resolved.details, details);
        assert_eq!(resolved.shared_secret, creds.shared_secret);
        assert_eq!(resolved.keys, StreamKeys::derive(&creds.shared_secret));
        assert_eq!(resolved.connection_id, connection_id(&creds.ilp_address));
        assert_eq!(resolved.connection_id.len(), 64);

        // Extra segments after the token are allowed (first segment is the token).
        let deeper = creds.ilp_address.with_segment("child").unwrap();
        assert_eq!(
            resolve_destination(&server_secret, &server_address, &deeper)
                .unwrap()
                .details,
            details
        );

        // A random IV gives a different address for the same payment.
        let other = generate_credentials(&server_secret, &server_address, &details).unwrap();
        assert_ne!(other.ilp_address, creds.ilp_address);
        assert_eq!(
            resolve_destination(&server_secret, &server_address, &other.ilp_address)
                .unwrap()
                .details,
            details
        );
    }

    #[test]
    fn token_failures_map_to_reject_codes() {
        let secret = [1u8; 32];
        let server = Address::new("test.ase").unwrap();
        let creds = generate_credentials(&secret, &server, &ConnectionDetails::default()).unwrap();
        assert_eq!(
            resolve_destination(&secret, &server, &creds.ilp_address)
                .unwrap()
                .details,
            ConnectionDetails::default()
        );

        let elsewhere = Address::new("test.other.abc").unwrap();
        let err = resolve_destination(&secret, &server, &elsewhere).unwrap_err();
        assert_eq!(err, Error::NotOurAddress);
        assert_eq!(err.reject_code(), ErrorCode::F02_UNREACHABLE);
        assert_eq!(
            resolve_destination(&secret, &server, &server).unwrap_err(),
            Error::NotOurAddress
        );

        // Wrong server secret, tampered token, garbage base64, too short.
        let err = resolve_destination(&[2u8; 32], &server, &creds.ilp_address).unwrap_err();
        assert_eq!(err, Error::InvalidToken);
        assert_eq!(err.reject_code(), ErrorCode::F06_UNEXPECTED_PAYMENT);
        let mut tampered = creds.ilp_address.as_str().to_owned();
        let last = tampered.pop().unwrap();
        tampered.push(if last == 'A' { 'B' } else { 'A' });
        let tampered = Address::new(tampered).unwrap();
        assert_eq!(
            resolve_destination(&secret, &server, &tampered).unwrap_err(),
            Error::InvalidToken
        );
        for seg in ["a", "AAAA", "not_base64~"] {
            let addr = server.with_segment(seg).unwrap();
            assert_eq!(
                resolve_destination(&secret, &server, &addr).unwrap_err(),
                Error::InvalidToken,
                "{seg}"
            );
        }

        // Non-ASCII payment tags are refused at generation.
        let bad = ConnectionDetails {
            payment_tag: Some("é".into()),
            ..ConnectionDetails::default()
        };
        assert_eq!(
            generate_credentials(&secret, &server, &bad).unwrap_err(),
            Error::InvalidPaymentTag
        );
        // A tag too long for a 1023-char address.
        let huge = ConnectionDetails {
            payment_tag: Some("x".repeat(800)),
            ..ConnectionDetails::default()
        };
        assert_eq!(
            generate_credentials(&secret, &server, &huge).unwrap_err(),
            Error::InvalidAddress
        );
    }

    #[test]
    fn token_plaintext_round_trip_and_truncation() {
        let details = ConnectionDetails {
            payment_tag: Some("abc".into()),
            receipt: Some(ReceiptSetup {
                nonce: [3; 16],
                secret: [4; 32],
            }),
            asset: Some(TokenAsset {
                code: "EUR".into(),
                scale: 9,
            }),
        };
        let bytes = details.encode().unwrap();
        assert_eq!(bytes[0], 7);
        assert_eq!(ConnectionDetails::decode(&bytes).unwrap(), details);
        for cut in 0..bytes.len() {
            assert!(ConnectionDetails::decode(&bytes[..cut]).is_err());
        }
        assert_eq!(ConnectionDetails::default().encode().unwrap(), [0]);
    }

    #[test]
    fn ilp_protocol_stream_crypto_vectors() {
        // From interledgerjs `packages/ilp-protocol-stream/test/crypto.test.ts`.
        let b64 = |s: &str| STANDARD.decode(s).unwrap();
        assert_eq!(
            encryption_key(b"foo").to_vec(),
            b64("zfOGMU/uY+EOUCE6tN3WhE77bF/N6pS0wSOmMgEAMEA=")
        );
        assert_eq!(
            fulfillment_key(b"foo").to_vec(),
            b64("lh8nGJCJosvfUePaU0uxxXK3jNvV2Y+5ivt1GH1Muhs=")
        );
        assert_eq!(
            hmac_sha256(&[0; 32], b"foo").to_vec(),
            b64("DA2Y9+PZ1F5y6Id7wbEEMn77nAexjy/+ztdtgTB/H/8=")
        );
        assert_eq!(
            condition_for(&[0; 32]).to_vec(),
            b64("Zmh6rfhivXdsj8GLjp+OIAiXFIVu4jOzkCpZHQ1fKSU=")
        );
        let key: [u8; 32] = b64("AOStyoBvoK9/OFhdmf2TzQRrJsCkxH/cj49Ya7RFOEc=").try_into().unwrap();
        let ciphertext = b64("Y1UiXpDA1GwAv+h95CEv67O49MOAJQrnYEQMrOFsbv6rrlE=");
        assert_eq!(decrypt(&key, &ciphertext).unwrap(), b"foo bar");
        let sealed = encrypt(&key, b"foo bar").unwrap();
        assert_eq!(sealed.len(), ENCRYPTION_OVERHEAD + 7);
        assert_eq!(decrypt(&key, &sealed).unwrap(), b"foo bar");
    }

    #[test]
    fn hmac_long_keys_and_decrypt_failures() {
        // RFC 4231 test case 6: 131-byte key.
        let key = [0xaa; 131];
        assert_eq!(
            to_hex(&hmac_sha256(
                &key,
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        // RFC 4231 test case 2.
        assert_eq!(
            to_hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let key = [5u8; 32];
        let sealed = encrypt(&key, b"hello").unwrap();
        for cut in 0..sealed.len() {
            assert_eq!(decrypt(&key, &sealed[..cut]), Err(Error::DecryptionFailed));
        }
        for i in 0..sealed.len() {
            let mut m = sealed.clone();
            m[i] ^= 0x80;
            assert_eq!(decrypt(&key, &m), Err(Error::DecryptionFailed));
        }
        // Empty plaintext is fine.
        let empty = encrypt(&key, b"").unwrap();
        assert_eq!(decrypt(&key, &empty).unwrap(), b"");
        assert_ne!(random_condition().unwrap(), random_condition().unwrap());
    }
}
